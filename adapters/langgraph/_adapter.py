"""The LangGraph adapter class (imports nothing of LangGraph until a graph is attached)."""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

from flowdbg.adapter import Adapter, Capability
from flowdbg.errors import AdapterError

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger

__all__ = ["LangGraphAdapter"]

#: the ``node`` and ``flat_writers`` cached properties of ``PregelNode`` that attach fills
_CACHED = ("node", "flat_writers")
_MISSING: Any = object()


def _is_pregel(target: Any) -> bool:
    """Whether ``target`` is a LangGraph ``Pregel`` graph, judged by class names only."""
    return any(
        cls.__name__ == "Pregel" and cls.__module__.startswith("langgraph.")
        for cls in type(target).__mro__
    )


class _Attachment:
    """What attach changed on one compiled graph, to undo it exactly."""

    def __init__(self, info: Any, nodes: dict[str, Any], cls: type) -> None:
        self.info = info
        #: the graph's nodes dict (kept alive so its id stays unique while attached)
        self.nodes = nodes
        #: per PregelNode: the cached-property values it had before attach
        self.saved: list[tuple[Any, dict[str, Any]]] = []
        self.owned_subgraphs: list[Any] = []
        self.original_class = cls


class LangGraphAdapter(Adapter):
    """Adapter for compiled LangGraph graphs (``StateGraph(...).compile()``, prebuilt agents,
    ``@entrypoint`` workflows: any ``langgraph.pregel.Pregel``)."""

    name = "langgraph"
    extra = "langgraph"
    requires = ("langgraph>=1.0",)
    capabilities = frozenset(
        {
            Capability.SYNC,
            Capability.ASYNC,
            Capability.STATE_EDITING,
            Capability.PARALLEL_BRANCHES,
            Capability.NESTING,
            Capability.DECISIONS,
            Capability.RETRIES,
            Capability.EXCEPTIONS,
            Capability.TERMINATE,
            Capability.PAUSE,
            Capability.DESCRIBE,
            Capability.TOOL_CALLS,
            Capability.LLM_CALLS,
        }
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handlers: weakref.WeakKeyDictionary[Debugger, Any] = weakref.WeakKeyDictionary()

    def _handler(self, debugger: Debugger) -> Any:
        """The callback handler reporting model and tool calls to ``debugger`` (one each, so a
        subgraph run does not add it a second time)."""
        from flowdbg.adapters.langgraph._calls import CallHandler

        handler = self._handlers.get(debugger)
        if handler is None:
            handler = self._handlers[debugger] = CallHandler(debugger)
        return handler

    def matches(self, target: Any) -> bool:
        return _is_pregel(target)

    def attach(self, target: Any, debugger: Debugger) -> None:
        from flowdbg.adapters.langgraph import _hooks

        with self._lock:
            self._attach(target, debugger, _hooks)

    def _attach(self, target: Any, debugger: Debugger, hooks: Any) -> _Attachment | None:
        existing = hooks.ATTACHED.get(id(target.nodes))
        if existing is not None:
            if existing.info.debugger is debugger:
                return None
            raise AdapterError(
                f"graph {getattr(target, 'name', type(target).__name__)!r} is already attached "
                "to another Debugger; detach it there first (dbg.detach(graph))"
            )
        info = hooks.GraphInfo(debugger, _state_keys(target), self._handler(debugger))
        att = _Attachment(info, target.nodes, type(target))
        for name, node in target.nodes.items():
            if name == "__start__":  # only the input node: __error_handler__<node>s are nodes
                continue
            for sub in getattr(node, "subgraphs", None) or ():
                if _is_pregel(sub):
                    owned = self._attach(sub, debugger, hooks)
                    if owned is not None:
                        att.owned_subgraphs.append(sub)
            saved = {key: node.__dict__.get(key, _MISSING) for key in _CACHED}
            if node.node is None:  # nothing to run (no function, no writers)
                continue
            traced = hooks.traced_node(name, node, info)
            att.saved.append((node, saved))
            node.__dict__["node"] = traced
        target.__class__ = hooks.debugged_class(type(target))
        hooks.ATTACHED[id(target.nodes)] = att
        return att

    def detach(self, target: Any) -> None:
        from flowdbg.adapters.langgraph import _hooks

        with self._lock:
            self._detach(target, _hooks)

    def _detach(self, target: Any, hooks: Any) -> None:
        att: _Attachment | None = hooks.ATTACHED.pop(id(target.nodes), None)
        if att is None:
            return
        for node, saved in att.saved:
            for key, value in saved.items():
                if value is _MISSING:
                    node.__dict__.pop(key, None)
                else:
                    node.__dict__[key] = value
        target.__class__ = att.original_class
        for sub in att.owned_subgraphs:
            self._detach(sub, hooks)

    def describe(self, target: Any) -> dict[str, Any]:
        from flowdbg.adapters.langgraph._describe import describe

        return describe(target)


def _state_keys(graph: Any) -> list[str]:
    """The channels that make up the graph's state (what a stop shows as ``state``)."""
    builder = getattr(graph, "builder", None)
    channels = getattr(builder, "channels", None)
    if isinstance(channels, dict) and channels:
        return [str(key) for key in channels]
    stream = getattr(graph, "stream_channels_list", None)
    if stream:
        return [str(key) for key in stream]
    return [
        str(key)
        for key in getattr(graph, "channels", {})
        if not str(key).startswith(("__", "branch:", "join:"))
    ]
