"""How a compiled LangGraph graph reports to flowdbg (imports LangGraph: loaded by ``attach``).

What LangGraph runs for a node is ``PregelNode.node``, a cached property building
``RunnableSeq(bound, *writers)``: ``bound`` is the user's function (or a subgraph), the writers
commit its update to the channels and run the routers of its conditional edges (checked in
langgraph 1.2 ``pregel/_read.py`` and ``pregel/_algo.py``: the task's ``proc`` is ``node.node``).
Attaching stores a :class:`Traced` runnable in that cached slot instead, for every node but
``__start__``::

    Traced:  before point -> RunnableSeq(bound, Commit)
    Commit:  runs the node's writers, then the after point with the real routing decision
             (the writes the writers just made)

so a breakpoint after a node sees the decision LangGraph itself took, and an edit at that stop
replaces the writes of the node before they are applied at the end of the superstep. Errors of
``bound`` or of the writers are the unit's error point; LangGraph's control-flow exceptions
(``GraphBubbleUp``: ``interrupt()``, ``Command(graph=PARENT)``, drains) pass through untouched.

Runs: the graph's class is swapped for a subclass whose ``stream``/``astream`` open a flowdbg run
around the iteration (``invoke``, ``ainvoke``, ``batch`` and the event streams all go through
them). ``Pregel.copy``/``with_config`` build ``self.__class__(**self.__dict__)``, so nothing may be
added to the graph's ``__dict__``; the class swap keeps copies working and debuggable (they share
the instrumented nodes).
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph._internal._runnable import RunnableSeq
from langgraph.errors import GraphBubbleUp, GraphInterrupt, ParentCommand
from langgraph.types import Command

from flowdbg.adapters.langgraph._calls import AsyncCallHandler, CallHandler, with_handler
from flowdbg.errors import EditRefused
from flowdbg.runtime import Unit

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger
    from flowdbg.runtime import RunScope

__all__ = ["RUN", "Commit", "GraphRun", "Traced", "debugged_class", "decision_of"]

# Keys of LangGraph's per-task config (langgraph._internal._constants; kept as strings so a
# moved module does not break the import).
_SEND = "__pregel_send"
_READ = "__pregel_read"
_TASK_ID = "__pregel_task_id"
_RUNTIME = "__pregel_runtime"
_PUSH = "__pregel_push"
_TASKS = "__pregel_tasks"
END = "__end__"

#: the flowdbg run the graph invocation in this context reports to
RUN: contextvars.ContextVar[RunScope | None] = contextvars.ContextVar(
    "flowdbg_langgraph_run", default=None
)


#: the unit of the node whose writers run in this context (from its before to its after point)
_TASK: contextvars.ContextVar[Unit | None] = contextvars.ContextVar(
    "flowdbg_langgraph_task", default=None
)


_TARGETS: dict[str, str | None] = {}


def _target(channel: str) -> str | None:
    """The node a write to ``channel`` triggers: edges write ``branch:to:<node>``, waiting
    edges ``join:<sources>:<node>``; other channels are state."""
    if channel.startswith("branch:to:"):
        target: str | None = channel[10:]
    elif channel.startswith("join:"):
        target = channel.rsplit(":", 1)[1]
    else:
        target = None
    if len(_TARGETS) < 65536:  # channel names are few per graph; bounded all the same
        _TARGETS[channel] = target
    return target


def decision_of(writes: Sequence[tuple[str, Any]]) -> list[str]:
    """The nodes a task's writes trigger next (``Send`` packets go to ``__pregel_tasks``).
    No target ends the branch (``__end__``)."""
    targets: list[str] = []
    known = _TARGETS
    for channel, value in writes:
        if channel == _TASKS:
            node = getattr(value, "node", None)
            if isinstance(node, str):
                targets.append(node)
            continue
        target = known[channel] if channel in known else _target(channel)
        if target is not None:
            targets.append(target)
    return targets or [END]


class GraphInfo:
    """What the hooks of one attached graph need to know about it."""

    __slots__ = ("acalls", "calls", "debugger", "reducers", "state_keys")

    def __init__(
        self,
        debugger: Debugger,
        state_keys: list[str],
        calls: tuple[CallHandler, AsyncCallHandler],
        channels: dict[str, Any] | None = None,
    ) -> None:
        self.debugger = debugger
        self.state_keys = state_keys
        #: per state key, how an update combines with the value (None: it replaces it), or
        #: None when a channel is of a kind flowdbg does not replay (see merge_writes)
        self.reducers = _reducers(channels or {}, state_keys)
        #: report the model and tool calls of the graph's nodes in sync and async runs (one
        #: pair per debugger, so a subgraph's run does not add them again)
        self.calls, self.acalls = calls


_REPLACING = frozenset(
    {"LastValue", "LastValueAfterFinish", "AnyValue", "UntrackedValue", "EphemeralValue"}
)


def _reducers(channels: dict[str, Any], keys: list[str]) -> dict[str, Any] | None:
    reducers: dict[str, Any] = {}
    for key in keys:
        channel: Any = channels.get(key)
        kind = type(channel).__name__
        if kind == "BinaryOperatorAggregate":
            reducers[key] = channel.operator
        elif kind in _REPLACING:
            reducers[key] = None
        else:  # Topic, managed values, something newer: read the state from LangGraph instead
            return None
    return reducers


def merge_writes(
    state: dict[str, Any], writes: Sequence[tuple[str, Any]], reducers: dict[str, Any]
) -> dict[str, Any]:
    """The state after a task: its writes applied to the state it read, the way LangGraph's
    channels apply them (``BinaryOperatorAggregate``: ``operator(value, update)``, the first
    update of an unset key taken as is, ``Overwrite`` replacing; the others: the update
    replaces the value). Pure, so the recorder's thread can do it after the task."""
    merged = dict(state)
    for channel, value in writes:
        if channel not in reducers:
            continue
        reducer = reducers[channel]
        if type(value).__name__ == "Overwrite":
            merged[channel] = value.value
        elif reducer is None or channel not in merged:
            merged[channel] = value
        else:
            merged[channel] = reducer(merged[channel], value)
    return merged


def _read(config: RunnableConfig, keys: list[str], fresh: bool) -> Any:
    """The graph state as this task sees it; ``fresh`` applies the task's own writes (LangGraph's
    ``local_read``, valid only while the task runs)."""
    read = config["configurable"].get(_READ)
    if read is None:  # pragma: no cover - every task config has a reader
        return None
    return read(keys, fresh)


def _timeout_note(name: str, timeout: Any) -> str | None:
    """LangGraph's watchdog for a node's ``timeout=`` keeps running while a breakpoint holds the
    node (``pregel/_retry.py`` starts it around the task; nothing pauses it), so say so."""
    if timeout is None:
        return None
    seconds = getattr(timeout, "run_timeout", timeout)
    seconds = getattr(seconds, "total_seconds", lambda: seconds)()
    limit = f"{seconds:g} s" if isinstance(seconds, (int, float)) else "a timeout"
    return (
        f"note: LangGraph gives {name!r} {limit} to finish (timeout=), and time held at this "
        "stop counts against it: resume before then or the node fails with NodeTimeoutError"
    )


class Traced(Runnable[Any, Any]):
    """Stands in for ``PregelNode.node``: the node as a flowdbg unit."""

    def __init__(
        self,
        name: str,
        seq: Runnable[Any, Any],
        info: GraphInfo,
        timeout: Any = None,
        full_input: bool = False,
    ) -> None:
        self.name = name
        self.node_name = name
        #: whether the node's input is the whole state (see _state)
        self.full_input = full_input
        #: what stops at this node say about its LangGraph timeout (None: it has none)
        self.note = _timeout_note(name, timeout)
        self.seq = seq
        self.info = info
        #: task id -> attempts made, where LangGraph does not say (see _unit)
        self._failed: dict[Any, int] = {}

    def _unit(self, scope: RunScope, config: RunnableConfig) -> Unit:
        metadata = config.get("metadata") or {}
        conf = config["configurable"]
        task_id = conf.get(_TASK_ID)
        execution = getattr(conf.get(_RUNTIME), "execution_info", None)
        attempt = getattr(execution, "node_attempt", None)
        if attempt is None:  # a LangGraph without ExecutionInfo.node_attempt: count them
            failed = self._failed
            attempt = failed.get(task_id, 0) + 1
            if len(failed) > 4096:  # tasks that failed for good; retries are immediate
                failed.clear()
            failed[task_id] = attempt
        unit = scope.unit(
            self.node_name,
            superstep=metadata.get("langgraph_step"),
            branch=task_id,
            attempt=attempt,
        )
        if self.note is not None:
            unit.note = self.note
        return unit

    def _done(self, config: RunnableConfig) -> None:
        """The task ran to its end (or was suspended): its next run is a first attempt."""
        if self._failed:
            self._failed.pop(config["configurable"].get(_TASK_ID), None)

    def _state(self, input: Any, config: RunnableConfig, quiet: bool) -> Any:
        """The state the node sees. A pulled node with the state schema as input reads the
        whole state; a ``Send`` task's input is its packet, and a node with its own input
        schema reads part of it: those read the state from LangGraph (``None`` when nobody is
        looking, to keep the fast path fast)."""
        path = (config.get("metadata") or {}).get("langgraph_path") or ()
        if self.full_input and not (path and path[0] == _PUSH):
            return input
        return None if quiet else _read(config, self.info.state_keys, False)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        scope = RUN.get()
        if scope is None or config is None:
            return self.seq.invoke(input, config, **kwargs)
        unit = self._unit(scope, config)
        state = self._state(input, config, scope.ctl.quiet)
        input = unit.before(state=state, input=input)
        token = _TASK.set(unit)
        try:
            result = self.seq.invoke(input, config, **kwargs)
            self._done(config)
            return result
        except ParentCommand as exc:  # the node handed a Command to a parent graph
            if unit.status == "running":  # (a subgraph's node did): the node is done
                _command_after(unit, exc, unit.after(output=exc.args[0], decision=_goto(exc)))
            raise
        except GraphBubbleUp as exc:  # interrupt(): the node runs again on resume
            self._done(config)
            unit.discard(exc, status="suspended")
            raise
        except Exception as exc:
            if unit.status == "running":
                unit.error(exc, state=state)
            raise
        except BaseException as exc:
            unit.discard(exc)
            raise
        finally:
            _TASK.reset(token)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        scope = RUN.get()
        if scope is None or config is None:
            return await self.seq.ainvoke(input, config, **kwargs)
        unit = self._unit(scope, config)
        state = self._state(input, config, scope.ctl.quiet)
        input = await unit.abefore(state=state, input=input)
        token = _TASK.set(unit)
        try:
            result = await self.seq.ainvoke(input, config, **kwargs)
            self._done(config)
            return result
        except ParentCommand as exc:
            if unit.status == "running":
                edited = await unit.aafter(output=exc.args[0], decision=_goto(exc))
                _command_after(unit, exc, edited)
            raise
        except GraphBubbleUp as exc:
            self._done(config)
            unit.discard(exc, status="suspended")
            raise
        except Exception as exc:
            if unit.status == "running":
                await unit.aerror(exc, state=state)
            raise
        except BaseException as exc:
            unit.discard(exc)
            raise
        finally:
            _TASK.reset(token)

    def __repr__(self) -> str:
        return f"<flowdbg node hook {self.node_name!r}>"


def _goto(exc: BaseException) -> list[str]:
    """The nodes a ``Command`` carried by a ``ParentCommand`` goes to."""
    goto = getattr(exc.args[0] if exc.args else None, "goto", None)
    items = goto if isinstance(goto, (list, tuple)) else [goto] if goto else []
    names = [item if isinstance(item, str) else getattr(item, "node", None) for item in items]
    return [name for name in names if isinstance(name, str)] or [END]


def _command_after(unit: Unit, exc: BaseException, edited: Any) -> None:
    """An edit at the after stop of a node whose Command goes to a parent graph: the
    ``ParentCommand`` carries the edited Command up (LangGraph applies ``exc.args[0]``)."""
    if edited is not exc.args[0]:
        if not isinstance(edited, Command):
            raise EditRefused(
                f"{unit.node!r} hands a Command to a parent graph; it can only be replaced by "
                f"another Command, not by {type(edited).__name__}"
            )
        exc.args = (edited, *exc.args[1:])


def _writes(config: RunnableConfig) -> Any:
    """The deque the task's writes go to (its ``send`` is that deque's bound ``extend``)."""
    return getattr(config["configurable"].get(_SEND), "__self__", None)


class Commit(Runnable[Any, Any]):
    """After the node: runs its writers, then the unit's after point with the decision they
    wrote. (One step for all writers: every step of a ``RunnableSeq`` costs a child callback
    manager, about 18 µs in langgraph 1.2, so the hook adds no steps to what LangGraph runs.)"""

    def __init__(self, writers: Sequence[Runnable[Any, Any]], info: GraphInfo) -> None:
        self.writers = list(writers)
        self.info = info

    def _after(self, unit: Unit, config: RunnableConfig, writes: Any, mark: int) -> Any:
        """``(state, decision, resolve)`` for the after point, from the writes the writers
        made. A stop or a condition gets the state from LangGraph at once; the recorder alone
        gets a ``resolve`` that replays the writes on its own thread, later."""
        made = () if writes is None else list(writes)[mark:]
        decision = decision_of(made)
        ctl = unit.run.ctl
        if not ctl.quiet:
            return _read(config, self.info.state_keys, True), decision, None
        if ctl.recorder is None:
            return None, decision, None
        before, reducers = unit.state_before, self.info.reducers
        if isinstance(before, dict) and reducers is not None:
            return None, decision, lambda output: (merge_writes(before, made, reducers), decision)
        return _read(config, self.info.state_keys, True), decision, None

    def _rewrite(self, writes: Any, mark: int) -> None:
        """Drop the writes the writers made for the output an edit replaced."""
        kept = list(writes)[:mark]
        writes.clear()
        writes.extend(kept)

    def _rewritten(self, unit: Unit, writes: Any, mark: int, config: RunnableConfig) -> None:
        unit.decision = decision_of(list(writes)[mark:])
        if unit.state is not None:
            unit.state = _read(config, self.info.state_keys, True)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        task = _TASK.get()
        writes = None if config is None else _writes(config)
        mark = 0 if writes is None else len(writes)
        try:
            for writer in self.writers:
                writer.invoke(input, config)
        except ParentCommand as exc:  # a Command(graph=PARENT): after point, then up it goes
            if task is not None and task.status == "running":
                _command_after(task, exc, task.after(output=input, decision=_goto(exc)))
            raise
        unit = task
        if unit is None or config is None or unit.status != "running":
            return input
        state, decision, resolve = self._after(unit, config, writes, mark)
        output = unit.after(output=input, state=state, decision=decision, resolve=resolve)
        if output is not input and writes is not None:  # edited at the stop: write that instead
            self._rewrite(writes, mark)
            for writer in self.writers:
                writer.invoke(output, config)
            self._rewritten(unit, writes, mark, config)
        return output

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        task = _TASK.get()
        writes = None if config is None else _writes(config)
        mark = 0 if writes is None else len(writes)
        try:
            for writer in self.writers:
                await writer.ainvoke(input, config)
        except ParentCommand as exc:
            if task is not None and task.status == "running":
                edited = await task.aafter(output=input, decision=_goto(exc))
                _command_after(task, exc, edited)
            raise
        unit = task
        if unit is None or config is None or unit.status != "running":
            return input
        state, decision, resolve = self._after(unit, config, writes, mark)
        output = await unit.aafter(output=input, state=state, decision=decision, resolve=resolve)
        if output is not input and writes is not None:
            self._rewrite(writes, mark)
            for writer in self.writers:
                await writer.ainvoke(output, config)
            self._rewritten(unit, writes, mark, config)
        return output


def traced_node(name: str, node: Any, info: GraphInfo) -> Traced:
    """The :class:`Traced` runnable for one ``PregelNode``."""
    steps = [node.bound, Commit(node.flat_writers, info)]
    try:
        seq = RunnableSeq(*steps, trace_policy=getattr(node, "trace_policy", None))
    except TypeError:  # pragma: no cover - RunnableSeq before trace_policy
        seq = RunnableSeq(*steps)
    channels = getattr(node, "channels", None)
    # (a mapper turns the state into the schema's model or dataclass: still the whole state)
    full_input = isinstance(channels, list) and set(info.state_keys) <= set(channels)
    return Traced(name, seq, info, getattr(node, "timeout", None), full_input)


# -- runs --------------------------------------------------------------------------------------


def graph_info(graph: Any) -> GraphInfo | None:
    """The attachment of ``graph``, read off its instrumented nodes (a copy made with
    ``with_config`` shares them, so it is debugged too); ``None`` when detached."""
    for node in graph.nodes.values():
        traced = node.__dict__.get("node")
        if type(traced) is Traced:
            return traced.info
    return None


def _values_tracker(kwargs: dict[str, Any]) -> Any:
    """``track(chunk, latest)``: the root graph's latest ``values`` after a stream chunk (the
    run's output). Picked once per run: it runs for every chunk."""
    mode = kwargs.get("stream_mode", "values")
    if (
        isinstance(mode, list)
        and "values" in mode
        and not kwargs.get("subgraphs")
        and kwargs.get("version", "v1") == "v1"
    ):  # what invoke() asks for: ("updates" | "values", payload) pairs
        return lambda chunk, latest: chunk[1] if chunk[0] == "values" else latest
    if mode in (None, "values") and not kwargs.get("subgraphs") and not kwargs.get("version"):
        return lambda chunk, latest: chunk
    return lambda chunk, latest: _latest_values(chunk, latest, kwargs)


def _latest_values(chunk: Any, latest: Any, kwargs: dict[str, Any]) -> Any:
    """Follow the root graph's ``values`` in a stream, whatever its format, for the run's
    output. Other stream modes leave the output unknown."""
    mode = kwargs.get("stream_mode", "values")
    if mode is None:
        mode = "values"
    subgraphs = kwargs.get("subgraphs", False)
    if isinstance(chunk, dict) and kwargs.get("version") == "v2":
        if chunk.get("type") == "values" and not chunk.get("ns"):
            return chunk.get("data")
        return latest
    if isinstance(mode, str):
        if mode != "values":
            return latest
        if subgraphs:
            if isinstance(chunk, tuple) and len(chunk) == 2 and not chunk[0]:
                return chunk[1]
            return latest
        return chunk
    if isinstance(chunk, tuple):
        if subgraphs and len(chunk) == 3:
            ns, kind, data = chunk
            return data if kind == "values" and not ns else latest
        if len(chunk) == 2 and chunk[0] == "values":
            return chunk[1]
    return latest


def _edit_checker(name: str, keys: list[str]) -> Any:
    allowed = frozenset(keys)

    def check_edit(unit: Unit, which: str, payload: Any) -> None:
        # A node's update can only write the graph's channels: LangGraph drops other keys of
        # a dict update without a word. The input a node receives is free-form.
        if which != "output":
            return
        if isinstance(payload, Command):  # its update is written like a node's return value
            payload = payload.update
        if not isinstance(payload, dict):
            return
        unknown = [key for key in payload if key not in allowed]
        if unknown:
            raise EditRefused(
                f"graph {name!r} has no state key {unknown[0]!r}, so LangGraph would drop it "
                f"from the update of {unit.node!r}; its keys are {', '.join(sorted(allowed))} "
                "(add the key to the graph's state schema to write it)"
            )

    return check_edit


class GraphRun:
    """The flowdbg run of one graph invocation."""

    @staticmethod
    def begin(graph: Any, info: GraphInfo, input: Any, config: Any) -> RunScope:
        name = str(getattr(graph, "name", None) or type(graph).__name__)
        if name == "LangGraph" and info.calls.tasks:  # an @entrypoint LangGraph left unnamed:
            name = next(iter(graph.nodes), name)  # its function's name says more
        scope = info.debugger.begin_run(framework="langgraph", name=name, input=input)
        scope.check_edit = _edit_checker(name, info.state_keys)
        configurable = config.get("configurable") if isinstance(config, dict) else None
        thread = configurable.get("thread_id") if isinstance(configurable, dict) else None
        if thread is not None and scope.parent_unit is None:  # the thread to resume it on
            scope.info.tags["thread_id"] = str(thread)
        return scope

    @staticmethod
    def iterate(
        graph: Any,
        info: GraphInfo,
        inner: Generator[Any, None, None],
        input: Any,
        config: Any,
        kwargs: dict[str, Any],
    ) -> Iterator[Any]:
        scope = GraphRun.begin(graph, info, input, config)
        latest = None
        track = _values_tracker(kwargs)
        set_run, reset_run = RUN.set, RUN.reset
        try:
            while True:
                token = set_run(scope)
                try:
                    chunk = next(inner)
                except StopIteration:
                    break
                finally:
                    reset_run(token)
                latest = track(chunk, latest)
                yield chunk
        except GeneratorExit:  # the consumer stopped iterating: the run ends here
            inner.close()
            scope.end(output=latest, suspended=scope.has_suspended_units())
            raise
        except GraphBubbleUp as exc:  # a subgraph's interrupt() or Command to a parent
            scope.end(output=latest, suspended=isinstance(exc, GraphInterrupt))
            raise
        except BaseException as exc:
            scope.end(error=exc)
            raise
        # an interrupt() in a node ends the top-level stream normally, its node suspended
        scope.end(output=latest, suspended=scope.has_suspended_units())

    @staticmethod
    async def aiterate(
        graph: Any,
        info: GraphInfo,
        inner: AsyncIterator[Any],
        input: Any,
        config: Any,
        kwargs: dict[str, Any],
    ) -> AsyncIterator[Any]:
        scope = GraphRun.begin(graph, info, input, config)
        latest = None
        track = _values_tracker(kwargs)
        try:
            while True:
                token = RUN.set(scope)
                try:
                    chunk = await inner.__anext__()
                except StopAsyncIteration:
                    break
                finally:
                    RUN.reset(token)
                latest = track(chunk, latest)
                yield chunk
        except GeneratorExit:
            await _aclose(inner)
            scope.end(output=latest, suspended=scope.has_suspended_units())
            raise
        except GraphBubbleUp as exc:
            scope.end(output=latest, suspended=isinstance(exc, GraphInterrupt))
            raise
        except BaseException as exc:
            scope.end(error=exc)
            raise
        scope.end(output=latest, suspended=scope.has_suspended_units())


async def _aclose(inner: AsyncIterator[Any]) -> None:
    close = getattr(inner, "aclose", None)
    if close is not None:
        await close()


_CLASSES: dict[type, type] = {}


def debugged_class(base: type) -> type:
    """The subclass of a graph class whose ``stream``/``astream`` report runs to flowdbg.

    It only adds behaviour while the graph's nodes are instrumented: a copy made while
    attached and used after ``detach`` behaves exactly like the original class.
    """
    cls = _CLASSES.get(base)
    if cls is not None:
        return cls
    if getattr(base, "__flowdbg_base__", None) is not None:
        return base

    base_stream: Any = getattr(base, "stream")  # noqa: B009 - base is any Pregel subclass
    base_astream: Any = getattr(base, "astream")  # noqa: B009

    def stream(self: Any, input: Any, config: Any = None, **kwargs: Any) -> Iterator[Any]:
        info = graph_info(self)
        if info is None:
            return base_stream(self, input, config, **kwargs)
        inner = base_stream(self, input, with_handler(config, info.calls), **kwargs)
        return GraphRun.iterate(self, info, inner, input, config, kwargs)

    def astream(self: Any, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        info = graph_info(self)
        if info is None:
            return base_astream(self, input, config, **kwargs)
        inner = base_astream(self, input, with_handler(config, info.acalls), **kwargs)
        return GraphRun.aiterate(self, info, inner, input, config, kwargs)

    stream.__doc__ = base_stream.__doc__
    astream.__doc__ = base_astream.__doc__
    cls = type(
        base.__name__,
        (base,),
        {
            "stream": stream,
            "astream": astream,
            "__module__": base.__module__,
            "__qualname__": base.__qualname__,
            "__flowdbg_base__": base,
        },
    )
    _CLASSES[base] = cls
    return cls
