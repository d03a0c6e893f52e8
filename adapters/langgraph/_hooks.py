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
import logging
from collections.abc import AsyncIterator, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph._internal._runnable import RunnableSeq
from langgraph.errors import GraphBubbleUp, GraphInterrupt, ParentCommand
from langgraph.types import Command

from flowdbg.adapters.langgraph._calls import AsyncCallHandler, CallHandler, with_handler
from flowdbg.errors import EditRefused
from flowdbg.runtime import Unit
from flowdbg.store import register_structural

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger
    from flowdbg.runtime import RunScope
    from flowdbg.timetravel import Rewound

__all__ = ["RUN", "Commit", "GraphRun", "Mark", "Traced", "debugged_class", "decision_of"]

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


#: the node whose writers run in this context (from its before to its after point)
_TASK: contextvars.ContextVar[Running | None] = contextvars.ContextVar(
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

    __slots__ = ("acalls", "calls", "channels", "check_state_input", "debugger", "state_keys")

    def __init__(
        self,
        debugger: Debugger,
        state_keys: list[str],
        calls: tuple[CallHandler, AsyncCallHandler],
        channels: dict[str, Any] | None = None,
        name: str = "graph",
    ) -> None:
        self.debugger = debugger
        self.state_keys = state_keys
        #: report the model and tool calls of the graph's nodes in sync and async runs (one
        #: pair per debugger, so a subgraph's run does not add them again)
        self.calls, self.acalls = calls
        #: the graph's state channels by key (how an edit of the state is written back)
        self.channels = {key: (channels or {}).get(key) for key in state_keys}
        #: the ``check_edit`` of the units of pulled tasks, whose input is the state
        self.check_state_input = _state_input_checker(name, self)


def _read(config: RunnableConfig, keys: list[str], fresh: bool) -> Any:
    """The graph state as this task sees it: the channels' values (LangGraph's ``local_read``).

    ``fresh`` applies the task's own writes to copies of the channels first, which runs the
    channels' reducers (``add_messages``, the user's own) on them: LangGraph does that itself
    for a conditional edge's router; flowdbg only when someone looks at an after point (a stop,
    a condition or watch reading the state), never for the record.
    """
    read = config["configurable"].get(_READ)
    if read is None:  # pragma: no cover - every task config has a reader
        return None
    return read(keys, fresh)


def _settle(scope: RunScope, keys: list[str], config: RunnableConfig, superstep: Any) -> None:
    """Give the units of earlier supersteps the state LangGraph committed after them: the
    channels' values, which a task of a later superstep reads (no reducer runs)."""
    try:
        state = _read(config, keys, False)
    except Exception:  # pragma: no cover - the read of a live task does not fail
        return
    scope.settle(state, superstep=superstep if isinstance(superstep, int) else None)


def _wanted(scope: RunScope) -> bool:
    """Whether the state after the run's units is wanted: for the record, or because something
    can look (without either the run log keeps no states, as for values in general)."""
    return scope.recording or not scope.quiet


def _end(scope: RunScope, info: GraphInfo, **outcome: Any) -> None:
    """End the run. Its last units first get the channels' final values, read through the
    reader of one of its tasks (kept in ``scope.adapter_data``: the loop's channels outlive
    the loop)."""
    read = scope.adapter_data
    if read is not None and scope.unsettled and _wanted(scope):
        try:
            scope.settle(read(info.state_keys, False))
        except Exception:  # pragma: no cover - a reader of a finished loop still reads
            pass
    if scope.calls is not None:  # a rerun: stop serving its recorded model replies
        from flowdbg.adapters.langgraph._replay import stop_serving

        stop_serving(scope, info.debugger)
    scope.end(**outcome)


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

    def _start(self, scope: RunScope, input: Any, config: RunnableConfig) -> tuple[Unit, Any, bool]:
        """The node's unit, the state it sees, and whether its input is (part of) the state
        (settling the units before it first).

        A pulled node with the state schema as input reads the whole state; a ``Send`` task's
        input is its packet, and a node with its own input schema reads part of it: those
        read the state from LangGraph (``None`` when nobody is looking, to keep the fast path
        fast). The input of a pulled task is made of state channels: an edit of it at the
        before stop is written back to them (:func:`_keep`)."""
        if scope.unsettled:
            step = (config.get("metadata") or {}).get("langgraph_step")
            if _wanted(scope):
                _settle(scope, self.info.state_keys, config, step)
            else:  # nothing records or looks: no read of the channels (it costs a few µs)
                scope.settle(None, superstep=step if isinstance(step, int) else None)
        unit = self._unit(scope, config)
        path = (config.get("metadata") or {}).get("langgraph_path") or ()
        pulled = not (path and path[0] == _PUSH)
        if pulled:
            unit.check_edit = self.info.check_state_input
            if self.full_input:
                return unit, input, True
        state = None if scope.quiet else _read(config, self.info.state_keys, False)
        return unit, state, pulled

    def _raised(self, unit: Unit, exc: BaseException, config: RunnableConfig, state: Any) -> None:
        """What the unit reports when the node's run raised ``exc`` (then re-raised)."""
        if isinstance(exc, ParentCommand):  # the node handed a Command to a parent graph
            if unit.status == "running":  # (a subgraph's node did): the node is done
                _command_after(unit, exc, unit.after(output=exc.args[0], decision=_goto(exc)))
        elif isinstance(exc, GraphBubbleUp):  # interrupt(): the node runs again on resume
            self._done(config)
            unit.discard(exc, status="suspended")
        elif isinstance(exc, Exception):
            if unit.status == "running":
                unit.error(exc, state=state)
        else:
            unit.discard(exc)

    async def _araised(
        self, unit: Unit, exc: BaseException, config: RunnableConfig, state: Any
    ) -> BaseException:
        """Async form of :meth:`_raised`; returns the exception to raise on: ``exc``, or
        :class:`flowdbg.Terminated` for the cancellation with which ``terminate()`` stopped
        the node."""
        if isinstance(exc, ParentCommand):
            if unit.status == "running":
                edited = await unit.aafter(output=exc.args[0], decision=_goto(exc))
                _command_after(unit, exc, edited)
        elif isinstance(exc, GraphBubbleUp):
            self._done(config)
            unit.discard(exc, status="suspended")
        elif isinstance(exc, Exception):
            if unit.status == "running":
                await unit.aerror(exc, state=state)
        else:
            return unit.discard(exc) or exc
        return exc

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        scope = RUN.get()
        if scope is None or config is None:
            return self.seq.invoke(input, config, **kwargs)
        unit, state, pulled = self._start(scope, input, config)
        input = unit.before(state=state, input=input)
        token = _TASK.set(Running(unit, input if pulled and unit.input_edits else None))
        try:
            result = self.seq.invoke(input, config, **kwargs)
        except BaseException as exc:
            self._raised(unit, exc, config, state)
            raise
        finally:
            _TASK.reset(token)
        self._done(config)
        return result

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        scope = RUN.get()
        if scope is None or config is None:
            return await self.seq.ainvoke(input, config, **kwargs)
        unit, state, pulled = self._start(scope, input, config)
        input = await unit.abefore(state=state, input=input)
        token = _TASK.set(Running(unit, input if pulled and unit.input_edits else None))
        try:
            result = await self.seq.ainvoke(input, config, **kwargs)
        except BaseException as exc:
            raised = await self._araised(unit, exc, config, state)
            if raised is exc:
                raise
            raise raised from exc
        finally:
            _TASK.reset(token)
        self._done(config)
        return result

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        # LangGraph runs a node through astream when a streaming callback handler is present
        # (astream_events, astream_log: pregel/_retry.py, ``if stream: task.proc.astream``).
        # The node's RunnableSeq taps its output there for those handlers (the node's
        # on_chain_stream events, /logs/<node>/streamed_output): iterate it, do not invoke it.
        scope = RUN.get()
        if scope is None or config is None:
            async for chunk in self.seq.astream(input, config, **kwargs):
                yield chunk
            return
        unit, state, pulled = self._start(scope, input, config)
        input = await unit.abefore(state=state, input=input)
        token = _TASK.set(Running(unit, input if pulled and unit.input_edits else None))
        try:
            async for chunk in self.seq.astream(input, config, **kwargs):
                yield chunk
        except BaseException as exc:
            raised = await self._araised(unit, exc, config, state)
            if raised is exc:
                raise
            raise raised from exc
        finally:
            _TASK.reset(token)
        self._done(config)

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


class Running:
    """What the steps of one node's run share: its unit, where its writes begin, and the
    input edited at its before stop when the run's state keeps that edit."""

    __slots__ = ("edited", "mark", "unit")

    def __init__(self, unit: Unit, edited: Any = None) -> None:
        self.unit = unit
        self.mark = 0
        self.edited = edited


def _mark(config: RunnableConfig | None) -> None:
    """Note where the running node's writes begin (before its first writer runs)."""
    running = _TASK.get()
    writes = None if config is None else _writes(config)
    if running is not None and writes is not None:
        running.mark = len(writes)


class Mark(Runnable[Any, Any]):
    """Stands for a node's first writer when it has several: notes where the node's writes
    begin, then runs the writer with the config its step was given."""

    def __init__(self, writer: Runnable[Any, Any]) -> None:
        self.writer = writer
        self.name = writer.name

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        _mark(config)
        return self.writer.invoke(input, config, **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        _mark(config)
        return await self.writer.ainvoke(input, config, **kwargs)


class Commit(Runnable[Any, Any]):
    """Stands for a node's last writer: runs it, then the unit's after point with the decision
    the writers wrote; an edit made there replaces the node's writes by those of the edited
    output.

    Each writer stays its own step of the node's ``RunnableSeq`` (:class:`Mark` and
    :class:`Commit` only stand in for the first and the last), so the callbacks and events of
    the writers (a conditional edge's router, its ``seq:step:N`` tag) are what LangGraph's own
    sequence gives them, and the hook adds no step to what LangGraph runs."""

    def __init__(
        self, writers: Sequence[Runnable[Any, Any]], info: GraphInfo, *, first: bool
    ) -> None:
        #: every writer of the node (all run again for an edited output), the last one this
        #: step's
        self.writers = list(writers)
        self.writer = self.writers[-1]
        self.name = self.writer.name
        #: whether this is also the first writer (the node has one)
        self.first = first
        self.info = info

    def _after(self, unit: Unit, config: RunnableConfig, writes: Any, mark: int) -> Any:
        """``(decision, resolve)`` for the after point: the nodes the writers' writes trigger,
        and how to read the state after the node should someone look while the point is open.
        The run log and the record get the state LangGraph commits at the end of the superstep
        (``settle``); the reader of this task serves to read it at the run's end."""
        made = () if writes is None else list(writes)[mark:]
        decision = decision_of(made)
        scope = unit.run
        scope.adapter_data = config["configurable"].get(_READ)
        if scope.quiet:
            return decision, None
        keys = self.info.state_keys
        return decision, lambda output: (_read(config, keys, True), decision)

    def _rewrite(self, writes: Any, mark: int) -> None:
        """Drop the writes the writers made for the output an edit replaced."""
        kept = list(writes)[:mark]
        writes.clear()
        writes.extend(kept)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if self.first:
            _mark(config)
        result = self.writer.invoke(input, config, **kwargs)
        running = _TASK.get()
        if running is None or config is None or running.unit.status != "running":
            return result
        unit, writes, mark = running.unit, _writes(config), running.mark
        if running.edited is not None and writes is not None:  # so the after stop shows it
            _keep(unit, running.edited, writes, mark, self.info)
        decision, resolve = self._after(unit, config, writes, mark)
        output = unit.after(output=input, decision=decision, resolve=resolve, deferred=True)
        if output is not input and writes is not None:  # edited at the stop: write that instead
            self._rewrite(writes, mark)
            for writer in self.writers:
                result = writer.invoke(output, config)
            # the state after the edited output is the one LangGraph commits (settle)
            unit.decision = decision_of(list(writes)[mark:])
            if running.edited is not None:
                _keep(unit, running.edited, writes, mark, self.info)
        return result

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        if self.first:
            _mark(config)
        result = await self.writer.ainvoke(input, config, **kwargs)
        running = _TASK.get()
        if running is None or config is None or running.unit.status != "running":
            return result
        unit, writes, mark = running.unit, _writes(config), running.mark
        if running.edited is not None and writes is not None:  # so the after stop shows it
            _keep(unit, running.edited, writes, mark, self.info)
        decision, resolve = self._after(unit, config, writes, mark)
        output = await unit.aafter(output=input, decision=decision, resolve=resolve, deferred=True)
        if output is not input and writes is not None:
            self._rewrite(writes, mark)
            for writer in self.writers:
                result = await writer.ainvoke(output, config)
            unit.decision = decision_of(list(writes)[mark:])
            if running.edited is not None:
                _keep(unit, running.edited, writes, mark, self.info)
        return result


# -- edits of the state at a before stop ------------------------------------------------------
#
# A pulled task's input is read from the state channels, so an edit of it at the before stop
# is an edit of the run's state: the node sees it, and the run must keep it. After the node's
# writers ran, the edited keys are written to their channels as part of the task's writes:
# a LastValue channel gets the edited value unless the node wrote the key itself (its write
# comes after the edit); a reducer channel (BinaryOperatorAggregate) gets
# ``Overwrite(reducer(edited, the node's writes))``, which replaces its value (binop.py: an
# Overwrite bypasses the reducer, and the other writes of the superstep are then ignored, so
# such an edit is refused while another node runs in the same superstep). Other channel kinds
# (topics, ephemeral, barrier, delta channels) cannot be given a value: edits are refused.


def _channel_kind(channel: Any) -> str | None:
    """``"value"`` (LastValue, AnyValue), ``"reducer"`` (BinaryOperatorAggregate), or
    ``None`` for a channel whose value LangGraph cannot be told to replace."""
    from langgraph.channels.any_value import AnyValue
    from langgraph.channels.binop import BinaryOperatorAggregate
    from langgraph.channels.last_value import LastValue

    kind = type(channel)
    if kind is LastValue or kind is AnyValue:
        return "value"
    if kind is BinaryOperatorAggregate:
        return "reducer"
    return None


def _field(value: Any, key: Any) -> Any:
    """``value[key]`` of a dict state, ``value.key`` of a model or dataclass state;
    ``_ABSENT`` when it has none."""
    if isinstance(value, dict):
        return value.get(key, _ABSENT)
    return getattr(value, key, _ABSENT) if isinstance(key, str) else _ABSENT


_ABSENT: Any = object()


def _siblings(unit: Unit, debugger: Debugger) -> list[str]:
    """The other nodes of ``unit``'s superstep in its run: finished, running or held."""
    run, step, superstep = unit.run, unit.step, unit.superstep
    path = list(run.path)
    names = [
        other.node
        for other in list(run.units)
        if other.kind == "node" and other.superstep == superstep and other.step != step
    ]
    status = debugger.status()
    names += [
        entry["node"]
        for entry in status.running
        if entry["run_id"] == run.run_id
        and entry["path"] == path
        and entry["kind"] == "node"
        and entry["superstep"] == superstep
        and entry["step"] != step
    ]
    names += [
        stop.location.node
        for stop in status.stops
        if stop.location.run_id == run.run_id
        and list(stop.location.path) == path
        and stop.location.kind == "node"
        and stop.location.superstep == superstep
        and stop.location.step != step
    ]
    return sorted(set(names))


def _state_input_checker(name: str, info: GraphInfo) -> Any:
    """The ``check_edit`` of a pulled task: its output as any node's (see _edit_checker), its
    input edits only where they can be written back to the state channels."""
    check_output = _edit_checker(name, info.state_keys)

    def check_edit(unit: Unit, which: str, payload: Any) -> None:
        if which != "input":
            check_output(unit, which, payload)
            return
        node = unit.node
        for key in unit.input_edits:
            if key not in info.channels:
                known = ", ".join(sorted(info.channels))
                raise EditRefused(
                    f"{node!r} receives the state of graph {name!r}, which has no key {key!r}, "
                    f"so the run could not keep it; its keys are {known}"
                )
            if _field(payload, key) is _ABSENT:
                raise EditRefused(
                    f"LangGraph cannot remove the value of state key {key!r}; set it to another "
                    "value (None, an empty list) instead"
                )
            channel = info.channels[key]
            kind = _channel_kind(channel)
            if kind is None:
                raise EditRefused(
                    f"state key {key!r} is a {type(channel).__name__} channel, whose value "
                    "LangGraph offers no way to replace, so the run could not keep the edit; "
                    f"edit the output of the node that writes it instead"
                )
            if kind == "reducer":
                others = _siblings(unit, info.debugger)
                if others:
                    raise EditRefused(
                        f"state key {key!r} has a reducer, and LangGraph can only replace its "
                        "value by dropping the other writes of the superstep, where "
                        f"{', '.join(map(repr, others))} also "
                        f"{'runs' if len(others) == 1 else 'run'}; edit the output of the node "
                        f"that wrote {key!r} instead"
                    )

    return check_edit


def _keep(unit: Unit, edited: Any, writes: Any, mark: int, info: GraphInfo) -> None:
    """Write the keys of a pulled task's input edited at its before stop to their channels,
    with the task's own writes (see the comment above)."""
    from langgraph.types import Overwrite

    made = list(writes)[mark:]
    extra: list[tuple[str, Any]] = []
    for key in unit.input_edits:
        value = _field(edited, key)
        kind = _channel_kind(info.channels.get(key))
        if value is _ABSENT or kind is None:  # refused at the stop (check_edit)
            continue
        own = [written for channel, written in made if channel == key]
        if kind == "value":
            if not own:
                extra.append((key, value))
            continue
        operator = getattr(info.channels[key], "operator", None)
        if operator is None:  # pragma: no cover - every BinaryOperatorAggregate has one
            continue
        for written in own:
            value = written.value if isinstance(written, Overwrite) else operator(value, written)
        extra.append((key, Overwrite(value)))
    if not extra:
        return
    replaced = {key for key, _ in extra}
    kept = [write for write in made if write[0] not in replaced]
    for _ in range(len(writes) - mark):
        writes.pop()
    writes.extend(kept)
    writes.extend(extra)


def traced_node(name: str, node: Any, info: GraphInfo) -> Traced:
    """The :class:`Traced` runnable for one ``PregelNode``."""
    writers = list(node.flat_writers)
    if len(writers) > 1:
        steps = [node.bound, Mark(writers[0]), *writers[1:-1], Commit(writers, info, first=False)]
    else:
        steps = [node.bound, Commit(writers, info, first=True)]
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


#: the keys of the packet LangGraph's ToolNode receives from an agent (prebuilt/tool_node.py:
#: ToolCallWithContext, a TypedDict tagged ``__type``)
_TOOL_CALL_PACKET = frozenset({"__type", "tool_call", "state"})


def _edit_checker(name: str, keys: list[str]) -> Any:
    allowed = frozenset(keys)

    def check_edit(unit: Unit, which: str, payload: Any) -> None:
        # A node's update can only write the graph's channels: LangGraph drops other keys of
        # a dict update without a word. The input of a Send task is its packet, free-form but
        # for the packet a ToolNode receives from a tool-calling agent (create_react_agent,
        # create_agent): a tool call with its context, whose other keys it never reads.
        if which != "output":
            if isinstance(payload, dict) and payload.get("__type") == "tool_call_with_context":
                extra = [key for key in payload if key not in _TOOL_CALL_PACKET]
                if extra:
                    raise EditRefused(
                        f"{unit.node!r} receives one tool call with its context "
                        f"(tool_call, state), so {extra[0]!r} would be ignored; edit "
                        f"tool_call.args.{extra[0]} (the tool's arguments) instead"
                    )
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
        scope = info.debugger.begin_run(framework="langgraph", name=name, input=input, target=graph)
        scope.check_edit = _edit_checker(name, info.state_keys)
        if scope.calls is not None and scope.parent_unit is None:  # a rerun (see _replay.py)
            from flowdbg.adapters.langgraph._replay import serving

            serving(scope, info.debugger)
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
            _end(scope, info, output=latest, suspended=scope.has_suspended_units())
            raise
        except GraphBubbleUp as exc:  # a subgraph's interrupt() or Command to a parent
            _end(scope, info, output=latest, suspended=isinstance(exc, GraphInterrupt))
            raise
        except BaseException as exc:
            _end(scope, info, error=exc)
            rewound = _rewound(exc, scope)
            if rewound is None:
                raise
            # rewound at a stop: the stream goes on with the run from the rewind's point
            from flowdbg.adapters.langgraph import _fork

            with rewound.lineage():
                yield from _fork.stream(graph, rewound.point, config, kwargs)
            return
        # an interrupt() in a node ends the top-level stream normally, its node suspended
        _end(scope, info, output=latest, suspended=scope.has_suspended_units())

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
            _end(scope, info, output=latest, suspended=scope.has_suspended_units())
            raise
        except GraphBubbleUp as exc:
            _end(scope, info, output=latest, suspended=isinstance(exc, GraphInterrupt))
            raise
        except BaseException as exc:
            _end(scope, info, error=exc)
            rewound = _rewound(exc, scope)
            if rewound is None:
                raise
            from flowdbg.adapters.langgraph import _fork

            with rewound.lineage():
                async for chunk in _fork.astream(graph, rewound.point, config, kwargs):
                    yield chunk
            return
        _end(scope, info, output=latest, suspended=scope.has_suspended_units())


def _rewound(exc: BaseException, scope: RunScope) -> Rewound | None:
    """``exc`` when it is the rewind of this top-level run (a nested run lets it pass)."""
    from flowdbg.timetravel import Rewound

    if not isinstance(exc, Rewound) or exc.run_id != scope.run_id:
        return None
    thread = scope.info.tags.get("thread_id")
    if thread is not None:
        # the run goes on in a copy of the graph with a checkpointer of its own (as a fork):
        # the caller's thread keeps the checkpoints of the rewound run, which a later
        # invoke(None, config) of that thread would resume
        logging.getLogger("flowdbg").warning(
            "run %s of thread %r was rewound: it goes on in a copy of the graph with a "
            "checkpointer of its own, and thread %r keeps the checkpoints of the rewound run "
            "(start the thread's next turn from the result, not from its checkpoint)",
            scope.run_id[:8],
            thread,
            thread,
        )
    return exc


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


def register_values() -> None:
    """Have the store keep LangGraph's values that steer a run (``Send`` packets, ``Command``,
    ``Interrupt``, ``Overwrite``) as typed objects with their fields, not as reprs.
    (``langgraph.constants.Send`` is where LangGraph before 0.3 defined ``Send``.)"""
    for name in (
        "langgraph.types.Send",
        "langgraph.constants.Send",
        "langgraph.types.Command",
        "langgraph.types.Interrupt",
        "langgraph.types.Overwrite",
    ):
        register_structural(name)
