"""The LangGraph adapter class (imports nothing of LangGraph until a graph is attached)."""

from __future__ import annotations

import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any

from flowdbg.adapter import Adapter, Capability
from flowdbg.errors import AdapterError

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger

__all__ = ["LangGraphAdapter"]

log = logging.getLogger("flowdbg.adapters.langgraph")


#: the ``node`` and ``flat_writers`` cached properties of ``PregelNode`` that attach fills
_CACHED = ("node", "flat_writers")
_MISSING: Any = object()


def _is_pregel(target: Any) -> bool:
    """Whether ``target`` is a LangGraph ``Pregel`` graph, judged by class names only."""
    return any(
        cls.__name__ == "Pregel" and cls.__module__.startswith("langgraph.")
        for cls in type(target).__mro__
    )


class _Graph:
    """An attached graph: who attached it (the user, or the graphs it is a subgraph of)."""

    def __init__(self, graph: Any, debugger: Debugger, cls: type) -> None:
        self.graph = graph  # kept alive while attached, so its id stays its own
        self.debugger = debugger
        self.owners: set[Any] = set()
        self.original_class = cls
        self.nodes: list[Any] = []
        self.subgraphs: list[Any] = []


class _Node:
    """An instrumented ``PregelNode``; graph copies (``with_config``) share them, so several
    attached graphs may hold one: it is restored when the last lets go."""

    def __init__(self, node: Any, debugger: Debugger, saved: dict[str, Any]) -> None:
        self.node = node
        self.debugger = debugger
        self.saved = saved
        self.refs = 0
        #: a ToolNode's own (wrap_tool_call, awrap_tool_call), when the node is one
        self.tool_wrappers: tuple[Any, Any] | None = None


_GRAPHS: dict[int, _Graph] = {}
_NODES: dict[int, _Node] = {}
#: serialises attach and detach: the registries above are the process's, not an adapter's (two
#: Debuggers attaching copies of one graph at once must see each other's nodes)
_LOCK = threading.RLock()
_USER = "user"


def _is_entrypoint(graph: Any) -> bool:
    """Whether ``graph`` was built by ``@entrypoint`` (a bare Pregel of one node, no builder)."""
    return (
        getattr(graph, "builder", None) is None
        and len(_nodes(graph)) == 1
        and ("__start__" not in graph.nodes)
    )


def _name(graph: Any) -> str:
    return str(getattr(graph, "name", None) or type(graph).__name__)


def _nodes(graph: Any) -> list[tuple[str, Any]]:
    """The nodes attach instruments: all but ``__start__`` (``__error_handler__<node>`` too)."""
    return [(name, node) for name, node in graph.nodes.items() if name != "__start__"]


def _async_only(graph: Any, seen: set[int]) -> bool:
    """Whether a node of ``graph`` (or of a subgraph) has only an async function."""
    if id(graph) in seen:
        return False
    seen.add(id(graph))
    for _, node in _nodes(graph):
        bound = getattr(node, "bound", None)
        if getattr(bound, "afunc", None) is not None and getattr(bound, "func", True) is None:
            return True
        if any(_async_only(sub, seen) for sub in _subgraphs(node)):
            return True
    return False


def _subgraphs(node: Any) -> list[Any]:
    return [sub for sub in getattr(node, "subgraphs", None) or () if _is_pregel(sub)]


class LangGraphAdapter(Adapter):
    """Adapter for compiled LangGraph graphs (``StateGraph(...).compile()``, prebuilt agents,
    ``@entrypoint`` workflows: any ``langgraph.pregel.Pregel``)."""

    name = "langgraph"
    extra = "langgraph"
    requires = ("langgraph>=1.1.5",)
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
            Capability.SUPERSTEPS,
            # Not TOOL_ARG_EDITING: the arguments and results of the calls a ToolNode makes (an
            # agent's tools node) can be edited, through its wrap_tool_call hook, but a tool a
            # node calls itself is seen through LangChain callbacks, which get a copy; editing
            # those is refused with EditRefused.
            # Not HANDOFFS yet: a node returning Command(goto=...) is reported as a node whose
            # decision is the goto, not as a unit of kind "handoff".
        }
    )

    def __init__(self) -> None:
        self._handlers: weakref.WeakKeyDictionary[Debugger, Any] = weakref.WeakKeyDictionary()

    def _handler(self, debugger: Debugger, *, tasks: bool = False) -> Any:
        """The callback handlers (sync, async) reporting model and tool calls to ``debugger``
        (one pair each, so a subgraph run does not add them a second time), and with ``tasks``
        the @task calls of an @entrypoint too."""
        from flowdbg.adapters.langgraph import _calls as calls

        pairs = self._handlers.get(debugger)
        if pairs is None:
            pairs = self._handlers[debugger] = {}
        handlers = pairs.get(tasks)
        if handlers is None:
            if tasks:
                handlers = (calls.TaskCallHandler(debugger), calls.AsyncTaskCallHandler(debugger))
            else:
                handlers = (calls.CallHandler(debugger), calls.AsyncCallHandler(debugger))
            pairs[tasks] = handlers
        return handlers

    def matches(self, target: Any) -> bool:
        return _is_pregel(target)

    def run_method(self, target: Any) -> Any:
        # invoke() refuses a graph with an async-only node ("No synchronous function
        # provided"): such a graph runs under ainvoke
        return target.ainvoke if _async_only(target, set()) else target.invoke

    def resume_input(self, target: Any, value: Any, config: Any = None) -> Any:
        from langgraph.types import Command

        configurable = (config or {}).get("configurable") or {}
        if not configurable.get("thread_id"):
            raise ValueError(
                "it needs the checkpointer thread of the suspended run: give it with --thread ID"
            )
        if getattr(target, "checkpointer", None) is None:
            raise ValueError(
                f"graph {_name(target)!r} has no checkpointer, so it keeps no suspended run to "
                "resume"
            )
        try:
            snapshot = target.get_state(config)
        except Exception as exc:  # e.g. an async-only checkpointer under the sync get_state
            log.debug("could not read the thread's state before --resume: %s", exc)
            return Command(resume=value)
        if not snapshot.next and not getattr(snapshot, "interrupts", ()):
            thread = configurable["thread_id"]
            why = "its last run completed" if snapshot.values else "it has no checkpoint yet"
            raise ValueError(f"thread {thread!r} has no suspended run to resume ({why})")
        return Command(resume=value)

    def attach(self, target: Any, debugger: Debugger) -> None:
        with _LOCK:
            # Check the whole tree first, so that a refused attach changes nothing.
            self._check(target, debugger, set())
            self._acquire(target, debugger, _USER)

    def _check(self, graph: Any, debugger: Debugger, seen: set[int]) -> None:
        if id(graph) in seen:
            return
        seen.add(id(graph))
        if not _nodes(graph) and id(graph) not in _GRAPHS:
            # A compiled StateGraph gets its nodes after __init__ (CompiledStateGraph.attach_node,
            # called by compile()); attached before that, nothing would be instrumented and
            # later attaches would be no-ops.
            raise AdapterError(
                f"graph {_name(graph)!r} has no nodes yet, so there is nothing to debug; "
                "attach it once it is built (after StateGraph.compile() returns)"
            )
        held = _GRAPHS.get(id(graph))
        if held is not None and held.debugger is not debugger:
            raise AdapterError(
                f"graph {_name(graph)!r} is already attached to another Debugger; detach it "
                "there first (dbg.detach(graph))"
            )
        for name, node in _nodes(graph):
            record = _NODES.get(id(node))
            if record is not None and record.debugger is not debugger:
                raise AdapterError(
                    f"node {name!r} of graph {_name(graph)!r} is instrumented by another "
                    "Debugger (a copy of this graph is attached there); detach it there first"
                )
            for sub in _subgraphs(node):
                self._check(sub, debugger, seen)

    def _acquire(self, graph: Any, debugger: Debugger, owner: Any) -> None:
        from flowdbg.adapters.langgraph import _calls as calls
        from flowdbg.adapters.langgraph import _hooks as hooks

        held = _GRAPHS.get(id(graph))
        if held is not None:
            held.owners.add(owner)  # attaching twice is a no-op: owners is a set
            return
        held = _GRAPHS[id(graph)] = _Graph(graph, debugger, type(graph))
        held.owners.add(owner)
        info = hooks.GraphInfo(
            debugger,
            _state_keys(graph),
            self._handler(debugger, tasks=_is_entrypoint(graph)),
        )
        for name, node in _nodes(graph):
            for sub in _subgraphs(node):
                self._acquire(sub, debugger, id(held))
                held.subgraphs.append(sub)
            record = _NODES.get(id(node))
            if record is None:
                saved = {key: node.__dict__.get(key, _MISSING) for key in _CACHED}
                if node.node is None:  # nothing to run (no function, no writers)
                    continue
                record = _NODES[id(node)] = _Node(node, debugger, saved)
                if calls.is_tool_node(node.bound):
                    tool_node = node.bound
                    inner, ainner = tool_node._wrap_tool_call, tool_node._awrap_tool_call
                    wrapper = calls.ToolNodeWrapper(debugger, inner, ainner)
                    tool_node._wrap_tool_call = wrapper
                    tool_node._awrap_tool_call = wrapper.acall
                    record.tool_wrappers = (inner, ainner)
                node.__dict__["node"] = hooks.traced_node(name, node, info)
            record.refs += 1
            held.nodes.append(node)
        graph.__class__ = hooks.debugged_class(type(graph))

    def detach(self, target: Any) -> None:
        with _LOCK:
            self._release(target, _USER)

    def _release(self, graph: Any, owner: Any) -> None:
        held = _GRAPHS.get(id(graph))
        if held is None or owner not in held.owners:
            return
        held.owners.discard(owner)
        if held.owners:  # still attached directly, or as a subgraph of another graph
            return
        del _GRAPHS[id(graph)]
        for node in held.nodes:
            record = _NODES[id(node)]
            record.refs -= 1
            if record.refs:
                continue
            del _NODES[id(node)]
            for key, value in record.saved.items():
                if value is _MISSING:
                    node.__dict__.pop(key, None)
                else:
                    node.__dict__[key] = value
            if record.tool_wrappers is not None:
                node.bound._wrap_tool_call, node.bound._awrap_tool_call = record.tool_wrappers
        for sub in held.subgraphs:
            self._release(sub, id(held))
        graph.__class__ = held.original_class

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
