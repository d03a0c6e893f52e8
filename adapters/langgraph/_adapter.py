"""The LangGraph adapter class (imports nothing of LangGraph until a graph is attached)."""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flowdbg.adapter import Adapter, Capability, Demo, RunOptions
from flowdbg.errors import AdapterError, RunOptionError
from flowdbg.patching import LOCK

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger
    from flowdbg.timetravel import ForkPoint

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
            Capability.FORK,
            Capability.REWIND,
            # model replies served through LangChain's cache (_replay.py), ToolNode calls
            # through their wrapper (Unit.call)
            Capability.CACHED_CALLS,
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

    # -- running a graph (flowdbg run, flowdbg demo) --

    def cli_options(self) -> Sequence[Any]:
        return _cli_options()

    def is_async(self, target: Any) -> bool:
        # invoke() refuses a graph with an async-only node ("No synchronous function
        # provided"): such a graph runs under ainvoke
        return _async_only(target, set())

    def check_run(self, target: Any, options: RunOptions) -> None:
        self.check_own_options(target, options)
        config = _config(options)
        if options.resuming:
            self._check_resume(target, config)

    def _check_resume(self, target: Any, config: dict[str, Any] | None) -> None:
        """Refuse a resume LangGraph would not do: no thread, no checkpointer, nothing
        suspended on the thread (LangGraph would start the graph afresh or fail obscurely)."""
        configurable = (config or {}).get("configurable") or {}
        if not configurable.get("thread_id"):
            raise RunOptionError(
                "resume",
                "it needs the checkpointer thread of the suspended run: give it with --thread ID",
            )
        if getattr(target, "checkpointer", None) is None:
            raise RunOptionError(
                "resume",
                f"graph {_name(target)!r} has no checkpointer, so it keeps no suspended run to "
                "resume",
            )
        try:
            snapshot = target.get_state(config)
        except Exception as exc:  # e.g. an async-only checkpointer under the sync get_state
            log.debug("could not read the thread's state before resuming: %s", exc)
            return
        if not snapshot.next and not getattr(snapshot, "interrupts", ()):
            thread = configurable["thread_id"]
            why = "its last run completed" if snapshot.values else "it has no checkpoint yet"
            raise RunOptionError(
                "resume", f"thread {thread!r} has no suspended run to resume ({why})"
            )

    def invoke(self, target: Any, input: Any, options: RunOptions | None = None) -> Any:
        options = RunOptions() if options is None else options
        self.check_run(target, options)
        target, config, seeded = _apart(target, options, input)
        return target.invoke(None if seeded else _input(input, options), config)

    async def ainvoke(self, target: Any, input: Any, options: RunOptions | None = None) -> Any:
        options = RunOptions() if options is None else options
        self.check_run(target, options)
        target, config, seeded = _apart(target, options, input)
        return await target.ainvoke(None if seeded else _input(input, options), config)

    # -- forks (see _fork.py): a copy of the graph with a checkpointer of its own --

    def check_fork(self, target: Any, point: ForkPoint) -> None:
        from flowdbg.adapters.langgraph import _fork

        _fork.check_fork(target, point)

    def fork(self, target: Any, point: ForkPoint, options: RunOptions | None = None) -> Any:
        from flowdbg.adapters.langgraph import _fork

        _fork.check_fork(target, point)
        return _fork.fork(target, point, options)

    async def afork(self, target: Any, point: ForkPoint, options: RunOptions | None = None) -> Any:
        from flowdbg.adapters.langgraph import _fork

        _fork.check_fork(target, point)
        return await _fork.afork(target, point, options)

    def config_example(self, target: Any) -> str | None:
        return '{"configurable": {"thread_id": "1"}}'

    def failure_hint(self, target: Any, error: BaseException, options: RunOptions) -> str | None:
        # A graph compiled with a checkpointer refuses a run without a thread ("Checkpointer
        # requires one or more of the following 'configurable' keys: thread_id, ...").
        configurable = (_config(options) or {}).get("configurable") or {}
        if "thread_id" in str(error) and not configurable.get("thread_id"):
            return "give the run a checkpointer thread with --thread ID"
        return None

    def demo(self) -> Demo:
        from flowdbg.adapters.langgraph._demo import DEMO

        return DEMO

    def attach(self, target: Any, debugger: Debugger) -> None:
        with LOCK:  # the registries above are the process's (see flowdbg.patching)
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
        hooks.register_values()
        info = hooks.GraphInfo(
            debugger,
            _state_keys(graph),
            self._handler(debugger, tasks=_is_entrypoint(graph)),
            dict(getattr(graph, "channels", None) or {}),
            str(getattr(graph, "name", None) or type(graph).__name__),
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
        with LOCK:  # the registries above are the process's (see flowdbg.patching)
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


# -------------------------------------------------------------- running a graph from the CLI


@functools.cache
def _cli_options() -> tuple[Any, ...]:
    """``--thread``, made once (click is imported only when the command line asks)."""
    import click

    thread = click.Option(
        ["--thread"],
        metavar="ID",
        help="LangGraph checkpointer thread: sets configurable.thread_id in the config",
    )
    return (thread,)


def _config(options: RunOptions) -> dict[str, Any] | None:
    """The graph's config: ``options.config`` with ``--thread`` as ``configurable.thread_id``
    (``None`` when neither is given, as a call without a config)."""
    thread = options.extra.get("thread")
    if options.config is None and thread is None:
        return None
    config = dict(options.config or {})
    if thread is not None:
        configurable = config.get("configurable", {})
        if not isinstance(configurable, dict):
            raise RunOptionError(
                "config",
                "its 'configurable' must be a JSON object for --thread to set thread_id in it",
            )
        config["configurable"] = {**configurable, "thread_id": thread}
    return config


def _apart(
    target: Any, options: RunOptions, input: Any = None
) -> tuple[Any, dict[str, Any] | None, bool]:
    """The graph to run, its config, and whether that graph's thread holds the run's start
    already (run it with no input then).

    A rerun (``options.fresh``) of a graph with a checkpointer runs a copy of it with an
    in-memory checkpointer of its own, on a new thread: on the recorded run's thread LangGraph
    would go on from the state that run left there (merging the input into it) and add the
    rerun's checkpoints to the user's thread. The new thread is seeded with the state the
    recorded run started from (``options.start_state``: the thread's earlier turns with the
    input applied), written as ``__start__`` writes the input, so that its entry nodes run on
    what they ran on; without it, a later turn of a thread would be rerun as a first one. Only
    a run started from an input mapping is seeded (a run resuming an interrupt, ``None`` or a
    ``Command``, started mid-graph: it reruns from its input as before)."""
    if options.fresh:
        from langgraph.checkpoint.base import BaseCheckpointSaver

        from flowdbg.adapters.langgraph import _fork

        if isinstance(getattr(target, "checkpointer", None), BaseCheckpointSaver):
            graph, config = _fork.apart(target, RunOptions(config=_config(options)))
            start = options.start_state
            if (
                isinstance(start, Mapping)
                and start
                and isinstance(input, Mapping)
                and not options.resuming
            ):
                graph.update_state(config, _fork.revived(graph, dict(start)), as_node="__start__")
                return graph, config, True
            return graph, config, False
    return target, _config(options), False


def _input(value: Any, options: RunOptions) -> Any:
    """What the graph is invoked with: the input, or ``Command(resume=...)`` when resuming."""
    if not options.resuming:
        return value
    from langgraph.types import Command

    return Command(resume=options.resume)
