"""What the model and tool hooks share (``_llm.py``, ``_tools.py``): finding the objects of a
llama-index-core kind an attached workflow holds, counting the attached workflows holding each,
patching their classes while any does, and naming a replacement method after the original."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from flowdbg.patching import Patch, patch, unpatch

if TYPE_CHECKING:
    from flowdbg.runtime import Unit

__all__ = ["Holding", "call_branch", "is_core", "like", "objects_of"]


def call_branch(parent: Unit) -> str | None:
    """The branch of a model or tool call a step makes: the step's own when the step's task
    makes it, one of its own when another task does (calls a step makes at once, with
    ``asyncio.gather``, stop and are stepped through independently), named after the step's
    branch and that task."""
    task = asyncio.current_task()
    if task is None or task is parent.task:
        return parent.branch
    return f"{parent.branch}/{task.get_name()}"


def is_core(obj: Any, base: str) -> bool:
    """Whether ``obj`` is an instance of llama-index-core's class ``base`` (``BaseLLM``,
    ``BaseTool``), judged by class names only (llama-index-core need not be installed)."""
    return any(
        cls.__name__ == base and cls.__module__.startswith("llama_index.core")
        for cls in type(obj).__mro__
    )


def _items(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return list(value.values())
    if isinstance(value, (list, tuple)):
        return list(value)
    return []


def objects_of(workflow: Any, kind: Callable[[Any], bool], attribute: str) -> list[Any]:
    """The objects of ``kind`` that ``workflow`` holds: its attributes of that kind, those in a
    list, tuple or mapping it keeps, and, for each object it keeps that way (an
    ``AgentWorkflow``'s agents), that object's ``attribute`` (an agent's ``llm``, its ``tools``),
    or what it lists. Each object once, in the order found. Attributes of the workflow's own
    classes count too (a tool or model set in the class body), those of LlamaIndex's classes
    do not."""
    found: dict[int, Any] = {}

    def add(value: Any) -> None:
        for each in (value, *_items(value)):
            if kind(each):
                found.setdefault(id(each), each)

    own = [
        vars(cls)
        for cls in type(workflow).__mro__
        if not cls.__module__.startswith(("workflows", "llama_index", "builtins", "pydantic"))
    ]
    for namespace in (vars(workflow), *own):
        for value in list(namespace.values()):
            add(value)
            for item in _items(value):
                attributes = getattr(item, "__dict__", None)
                if isinstance(attributes, dict):
                    add(attributes.get(attribute))
    return list(found.values())


class Holding:
    """The objects of one kind that attached workflows hold, each counted by how many hold it
    (the workflows keep them alive, so their ids stay theirs while counted)."""

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}

    def __contains__(self, obj: Any) -> bool:
        return id(obj) in self._counts

    def hold(self, objects: list[Any], methods: Mapping[str, Callable[[Any], Any]]) -> list[Patch]:
        """Count ``objects`` as held by one more attached workflow, with each of ``methods``
        (name -> ``make(original)``) replaced on their classes where the class has it (call
        under :data:`flowdbg.patching.LOCK`). Returns the patches to let go of."""
        patches = []
        for obj in objects:
            self._counts[id(obj)] = self._counts.get(id(obj), 0) + 1
            owner = type(obj)
            for name, make in methods.items():
                if hasattr(owner, name):
                    patches.append(patch(owner, name, make))
        return patches

    def release(self, objects: list[Any], patches: list[Patch]) -> None:
        """Undo :meth:`hold` (under :data:`flowdbg.patching.LOCK`)."""
        for held in patches:
            unpatch(held)
        for obj in objects:
            count = self._counts.get(id(obj), 0) - 1
            if count > 0:
                self._counts[id(obj)] = count
            else:
                self._counts.pop(id(obj), None)


def like(method: Any, original: Any, name: str) -> Any:
    """``method``, a replacement of ``original``, named and documented as it, and wrapping it."""
    function = getattr(original, "__func__", original)
    method.__name__ = getattr(function, "__name__", name)
    method.__qualname__ = getattr(function, "__qualname__", name)
    method.__doc__ = getattr(function, "__doc__", None)
    method.__wrapped__ = function
    return method
