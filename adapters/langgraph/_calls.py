"""Model and tool calls inside LangGraph nodes, as flowdbg units (through LangChain callbacks).

A node's chat-model and tool calls report to LangChain's callback handlers. The handler below
is added to the config of every attached graph run, so the calls of every node inherit it; it
opens a unit of kind ``llm`` or ``tool`` in the frame of the node's unit (one level deeper, same
run) at the call's start and closes it at its end or error.

A sync handler blocks the thread making the call (under ``ainvoke`` LangChain runs sync handlers
in an executor thread with a copy of the task's context, so only that task waits), and an
exception a handler raises reaches the call when ``raise_error`` is set: a breakpoint holds the
call and ``terminate()`` ends it (checked in langchain-core 1.7 ``callbacks/manager.py``).

What can be edited at those stops: callbacks see the call's arguments as a copy (``BaseTool.run``
passes ``inputs=`` a filtered copy), so tool arguments cannot be changed from here, and neither
can a tool result the tool returns as a plain value. A model's reply arrives as the very message
object the caller receives, so an edit at the ``after`` stop of an ``llm`` unit is copied into it.
Edits that cannot reach LangGraph are refused with :class:`flowdbg.EditRefused`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, CallbackManager

from flowdbg.errors import EditRefused
from flowdbg.runtime import Unit, current_unit

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger

__all__ = ["CallHandler", "with_handler"]


def _refuse_edit(unit: Unit, which: str, payload: Any) -> None:
    if unit.kind == "llm" and which == "output":
        return  # copied into the reply message (see CallHandler.on_llm_end)
    what = "arguments" if which == "input" else "result"
    raise EditRefused(
        f"the {what} of {unit.kind} call {unit.node!r} cannot be edited: LangChain callbacks, "
        "through which flowdbg sees calls a node makes itself, only get a copy of them"
    )


def _message_of(response: Any) -> Any:
    generations = getattr(response, "generations", None) or [[]]
    first = generations[0][0] if generations and generations[0] else None
    return getattr(first, "message", None) if first is not None else None


def _copy_into(message: Any, edited: Any) -> None:
    """Make ``message`` (the reply the caller receives) carry the edit."""
    if isinstance(edited, str):
        message.content = edited
    elif type(edited) is type(message):
        for name in type(message).model_fields:
            setattr(message, name, getattr(edited, name))
    else:
        raise EditRefused(
            f"a model reply can be replaced by text or a {type(message).__name__}, not by "
            f"{type(edited).__name__}"
        )


class CallHandler(BaseCallbackHandler):
    """Reports chat-model and tool calls made inside nodes of one debugger's runs."""

    raise_error = True  # a breakpoint's Terminated must reach the call
    run_inline = False  # under ainvoke: wait in an executor thread, not on the event loop

    def __init__(self, debugger: Debugger) -> None:
        self._ctl = debugger._ctl
        self._open: dict[UUID, Unit] = {}
        self._lock = threading.Lock()

    # Only model and tool events are wanted: LangChain skips the others for this handler.
    # (Tool events are gated by ignore_agent, so that one stays False.)
    @property
    def ignore_chain(self) -> bool:
        return True

    @property
    def ignore_retriever(self) -> bool:
        return True

    @property
    def ignore_custom_event(self) -> bool:
        return True

    def _open_unit(self, run_id: UUID, name: str, kind: str, input: Any) -> None:
        parent = current_unit()
        if parent is None or parent.run.ctl is not self._ctl:
            return
        frame = parent.frame()
        frame.check_edit = _refuse_edit
        unit = frame.unit(name, kind=kind)
        with self._lock:
            self._open[run_id] = unit
        unit.before(state=parent.state_before, input=input)

    def _close(self, run_id: UUID) -> Unit | None:
        with self._lock:
            return self._open.pop(run_id, None)

    # -- models --

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[Any]],
        *,
        run_id: UUID,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        label = name or (serialized or {}).get("name") or "llm"
        self._open_unit(run_id, str(label), "llm", {"messages": messages[0] if messages else []})

    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        label = name or (serialized or {}).get("name") or "llm"
        self._open_unit(run_id, str(label), "llm", {"prompts": list(prompts)})

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is None:
            return
        message = _message_of(response)
        output = message if message is not None else response
        edited = unit.after(output=output, state=unit.state_before)
        if edited is not output and message is not None:
            _copy_into(message, edited)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            unit.error(error, state=unit.state_before)

    # -- tools --

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        inputs: dict[str, Any] | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        label = name or (serialized or {}).get("name") or "tool"
        args = dict(inputs) if isinstance(inputs, dict) else {"input": input_str}
        self._open_unit(run_id, str(label), "tool", args)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            unit.after(output=output, state=unit.state_before)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            unit.error(error, state=unit.state_before)

    def __repr__(self) -> str:
        return "<flowdbg LangGraph call handler>"


def with_handler(config: Any, handler: CallHandler) -> Any:
    """``config`` with ``handler`` among its callbacks (inherited by every call of the run)."""
    config = dict(config or {})
    callbacks = config.get("callbacks")
    if callbacks is None:
        config["callbacks"] = [handler]
    elif isinstance(callbacks, list):
        if handler not in callbacks:
            config["callbacks"] = [*callbacks, handler]
    elif isinstance(callbacks, CallbackManager) and handler not in callbacks.handlers:
        manager = callbacks.copy()
        manager.add_handler(handler, inherit=True)
        config["callbacks"] = manager
    return config
