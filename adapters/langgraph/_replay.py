"""Recorded model replies for reruns of LangGraph runs, through LangChain's model cache.

A node calls its chat model itself; flowdbg sees the call through LangChain callbacks, which
cannot give the call a result. What can is LangChain's own cache: a chat model without a cache
of its own (``cache=None``, the default) asks the process-wide one
(``langchain_core.globals.get_llm_cache()``) before calling the provider, after its
``on_chat_model_start`` callbacks (where the ``llm`` unit opened), and a hit is returned as the
reply without calling it (``BaseChatModel._generate_with_cache``).

While a rerun of an attached graph runs, :func:`serving` installs :class:`RecordedReplies` as
that cache: a lookup made inside an ``llm`` unit asks :meth:`flowdbg.Unit.recorded` and, when
served, answers with the recorded reply; anything else goes to the cache that was installed
before (or to none). The last rerun to end puts that cache back.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.caches import BaseCache

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger
    from flowdbg.runtime import RunScope

__all__ = ["RecordedReplies", "serving", "stop_serving"]

_LOCK = threading.Lock()
#: the reruns running, by id of their run scope; the first installed the cache
_ACTIVE: dict[int, RecordedReplies] = {}


def _message(output: Any) -> Any:
    """The recorded reply (a message as the store keeps it) as a LangChain message."""
    from langchain_core.messages import AIMessage, BaseMessage

    if isinstance(output, BaseMessage):
        return output
    if isinstance(output, dict):
        fields = {k: v for k, v in output.items() if k != "type" and v is not None}
        return AIMessage.model_validate(fields)
    return AIMessage(content=str(output))


class RecordedReplies(BaseCache):
    """LangChain's model cache during reruns: serves the recorded replies (see the module)."""

    def __init__(self, fallback: BaseCache | None) -> None:
        self.fallback = fallback
        self.debuggers: list[Debugger] = []

    def _served(self) -> list[Any] | None:
        from langchain_core.outputs import ChatGeneration

        for debugger in list(self.debuggers):
            unit = debugger.current_unit()
            if unit is None or unit.kind != "llm":
                continue
            served, output = unit.recorded(unit.record_value("input"))
            if served:
                return [ChatGeneration(message=_message(output))]
            return None
        return None

    def lookup(self, prompt: str, llm_string: str) -> Sequence[Any] | None:
        """The recorded reply of the model call being made, else the fallback's answer."""
        found = self._served()
        if found is not None:
            return found
        return None if self.fallback is None else self.fallback.lookup(prompt, llm_string)

    async def alookup(self, prompt: str, llm_string: str) -> Sequence[Any] | None:
        # not in an executor (the default): the unit is found in this task's context
        found = self._served()
        if found is not None:
            return found
        return None if self.fallback is None else await self.fallback.alookup(prompt, llm_string)

    def update(self, prompt: str, llm_string: str, return_val: Sequence[Any]) -> None:
        """Pass a live reply on to the fallback cache, if there is one."""
        if self.fallback is not None:
            self.fallback.update(prompt, llm_string, return_val)

    async def aupdate(self, prompt: str, llm_string: str, return_val: Sequence[Any]) -> None:
        """The async form of :meth:`update`."""
        if self.fallback is not None:
            await self.fallback.aupdate(prompt, llm_string, return_val)

    def clear(self, **kwargs: Any) -> None:
        """Clear the fallback cache (this one keeps nothing)."""
        if self.fallback is not None:
            self.fallback.clear(**kwargs)


def serving(scope: RunScope, debugger: Debugger) -> None:
    """Install the recorded replies for the rerun ``scope`` (a no-op for other runs)."""
    if scope.calls is None or scope.parent_unit is not None:
        return
    from langchain_core.globals import get_llm_cache, set_llm_cache

    with _LOCK:
        current = get_llm_cache()
        if isinstance(current, RecordedReplies):
            cache = current
        else:
            cache = RecordedReplies(current)
            set_llm_cache(cache)
        cache.debuggers.append(debugger)
        _ACTIVE[id(scope)] = cache


def stop_serving(scope: RunScope, debugger: Debugger) -> None:
    """Undo :func:`serving` when the rerun ``scope`` ends."""
    if not _ACTIVE:
        return
    from langchain_core.globals import set_llm_cache

    with _LOCK:
        cache = _ACTIVE.pop(id(scope), None)
        if cache is None:
            return
        cache.debuggers.remove(debugger)
        if not _ACTIVE:
            set_llm_cache(cache.fallback)
