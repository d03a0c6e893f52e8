"""Forks of recorded LlamaIndex workflow runs (imports ``workflows``: loaded by the adapter's
fork methods only).

The state after step N of an event-driven workflow is the context store after the step and
the events the step emitted, on their way to the steps that accept them. A fork of step N is
a new run of the current workflow started from exactly that:

- its context store is the recorded store (edited), rebuilt as the current workflow's state
  type (``DictState``, or the typed state of ``Context[MyState]`` steps);
- the events step N emitted, as recorded (their fields), rebuilt as the current code's event
  classes by type name, are what the run starts with: LlamaIndex routes them, so the first
  steps are those of the current code that accept them.

How a run starts mid-way, in llama-index-workflows (checked in 2.26.0 and 2.26.1): a
serialized context (``Context.to_dict()``'s format, ``SerializedContext`` in
``workflows/context/context_types.py``) holds the store, ``is_running`` and ``deliveries``,
the events emitted but not yet routed. ``Context.from_dict(workflow, data)`` restores it and
``workflow.run(ctx=ctx)`` goes on: ``is_running`` makes ``run()`` send no start event, and the
control loop's first tick (``TickSessionStart`` in ``runtime/control_loop/reduce.py``) routes
the pending deliveries as it routes events a step emits. That is the resume path LlamaIndex
offers for a saved run, so the fork needs nothing of the original run's process. The events
are serialized with a ``JsonSerializer`` that resolves the classes it was given by the names
it writes, so that an event class LlamaIndex could not import again by its module path (one
defined in a function, or in a file loaded by path) comes back as itself.

A fork from step 0 is a run from the recorded input (the start event's fields).

Where the record cannot rebuild such a state, :func:`fork_problems` refuses the step: a step
that ran beside another (concurrent workers), one that ended while events emitted before it
were still on their way to their steps, or while a step held events for ``collect_events`` or
waited in ``wait_for_event``, one that emitted nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flowdbg.adapter import RunOptions

if TYPE_CHECKING:
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.store import Store
    from flowdbg.timetravel import ForkPoint

__all__ = ["afork", "check_fork", "fork_problems", "start"]

END = "__end__"


# -- which steps can be forked from (read from the record) -----------------------------------


def _events_of(output: Any) -> list[Any]:
    """The events a step's output records: one event's fields, or a list of them."""
    if output is None:
        return []
    if isinstance(output, list):
        return output
    return [output]


def _deliveries(step: StepRecord) -> int | None:
    """How many step invocations the events ``step`` emitted started (one per event and step
    that accepts it), or ``None`` when the record cannot tell (several events of several
    types, not one of each)."""
    events = _events_of(step.output)
    decision = step.decision if isinstance(step.decision, Mapping) else {}
    targets = [name for name in decision if name != END]
    if not events or not targets:
        return 0
    kinds = set(decision.values())
    if len(kinds) == 1:  # every event goes to every step that accepts the type
        return len(events) * len(targets)
    if len(kinds) == len(events):  # one event of each type, to the steps accepting it
        return len(targets)
    return None


def _names(steps: Sequence[StepRecord]) -> str:
    return ", ".join(f"{s.step} ({s.node})" for s in steps)


def fork_problems(store: Store, run: RunRecord, steps: Sequence[StepRecord]) -> dict[int, str]:
    """The steps of a recorded LlamaIndex run a fork cannot start after, with the reason.

    Read from the record alone: when each step started and ended, what it emitted and where
    its events went (its decision). A step invocation consumes one event; a step's events
    start one invocation per step accepting them. Walking the steps in time, the events
    emitted and not yet consumed when a step ended are those in flight then.
    """
    own = [s for s in steps if tuple(s.path) == tuple(run.path) and s.kind == "node"]
    if not own:
        return {}
    valued = {s.step: s for s in store.get_steps(run.run_id, kind="node")}
    refused: dict[int, str] = {}

    def end(s: StepRecord) -> float:
        return math.inf if s.ended_at is None else s.ended_at

    for s in own:
        beside = [o for o in own if o is not s and o.started_at < end(s) and s.started_at < end(o)]
        if beside:
            refused[s.step] = (
                f"step {s.step} ({s.node}) ran beside steps {_names(beside)} (concurrent "
                "workers); the context store between them is not one the workflow ever had"
            )
    # the start event went to the steps that started before any step ended
    first_end = min(end(s) for s in own)
    pending = 0  # events emitted and not yet taken by a step invocation
    uncertain: StepRecord | None = None
    waiting: dict[str, StepRecord] = {}
    holding: dict[str, StepRecord] = {}
    points = sorted(
        [(end(s), 0, s.step, s) for s in own] + [(s.started_at, 1, s.step, s) for s in own],
        key=lambda p: p[:3],
    )
    for _, starting, _, s in points:
        if starting:
            # (an invocation given the events ctx.collect_events gathered takes no new one:
            # its input is the list of them)
            collected = isinstance(valued.get(s.step, s).input, list)
            if s.started_at >= first_end and not collected:
                pending -= 1
            waiting.pop(s.node, None)
            if pending < 0 and uncertain is None:
                uncertain = s  # more steps ran than the record has events for
            continue
        record = valued.get(s.step, s)
        emitted = _deliveries(record) if s.status == "completed" else 0
        if s.status in ("failed", "suspended"):
            emitted = 1  # the event goes to the step again (a retry, or once awaited)
        if s.status == "suspended":
            waiting[s.node] = s
        if emitted is None:
            uncertain = uncertain or s
            emitted = 0
        pending += emitted
        if s.status == "completed":
            later = any(o.node == s.node and o.started_at >= end(s) for o in own)
            if _events_of(record.output):
                holding.pop(s.node, None)
            elif later:
                holding[s.node] = s  # it may have kept its event for ctx.collect_events
        if s.step in refused or s.status != "completed":
            continue
        why = None
        decided = record.decision if isinstance(record.decision, Mapping) else {}
        if _events_of(record.output) and not decided:
            why = (
                f"step {s.step} ({s.node}) emitted events no step accepts: a fork after it "
                "would run nothing"
            )
        elif not _events_of(record.output):
            why = (
                f"step {s.step} ({s.node}) emitted no event (it returned None, or kept its "
                "event for ctx.collect_events): a fork after it would run nothing"
            )
        elif uncertain is not None and not _explained_after(s, record, own, valued, end):
            why = (
                f"the record cannot tell how many events reached which step from step "
                f"{uncertain.step} ({uncertain.node}) on, so whether events were still in "
                f"flight after step {s.step} is not known"
            )
        elif pending - emitted > 0:
            why = (
                f"step {s.step} ({s.node}) ended while {pending - emitted} event(s) emitted "
                "before it were still on their way to their steps; the run's state then is "
                "more than its store and this step's events"
            )
        elif waiting:
            w = next(iter(waiting.values()))
            why = (
                f"step {s.step} ({s.node}) ended while step {w.step} ({w.node}) waited for an "
                "event (ctx.wait_for_event)"
            )
        elif any(node != s.node for node in holding):
            h = next(r for node, r in holding.items() if node != s.node)
            why = (
                f"step {s.step} ({s.node}) ended while {h.node!r} may have held events for "
                f"ctx.collect_events (step {h.step} emitted nothing, and {h.node!r} ran again "
                "later)"
            )
        if why is not None:
            refused[s.step] = why
    return refused


def _explained_after(
    step: StepRecord,
    record: StepRecord,
    own: Sequence[StepRecord],
    valued: Mapping[int, StepRecord],
    end: Any,
) -> bool:
    """Whether every step that started after ``step`` ended received what ``step`` emitted, or
    what those steps emitted in turn: then nothing emitted before it was still on its way, even
    where counting events cannot tell (LlamaIndex runs a ``collect_events`` step again for
    events it already buffered, so invocations outnumber events). A step that started later
    for another reason refuses."""
    done = end(step)
    later = sorted((o for o in own if o.started_at >= done), key=lambda o: o.started_at)
    if not later:
        return True
    reached = {name for name in _targets(record)}
    for o in later:
        if o.node not in reached:
            return False
        reached |= _targets(valued.get(o.step, o))
    return True


def _targets(step: StepRecord) -> set[str]:
    decision = step.decision if isinstance(step.decision, Mapping) else {}
    return {name for name in decision if name != END}


# -- starting the fork -------------------------------------------------------------------------


def _event_classes(workflow: Any) -> dict[str, list[type]]:
    """The event classes the current workflow knows, by class name: those its steps accept
    and emit, and ``StopEvent``."""
    from workflows.events import StopEvent

    from flowdbg.adapters.llamaindex._hooks import accepted_events

    found: list[type] = [StopEvent]
    for _, accepted in accepted_events(workflow):
        found.extend(accepted)
    try:
        found.extend(kind for kind in workflow.events if isinstance(kind, type))
    except Exception:  # a workflow that does not validate: its steps' inputs are enough
        pass
    with_stop = getattr(workflow, "_stop_event_class", None)
    if isinstance(with_stop, type):
        found.append(with_stop)
    by_name: dict[str, list[type]] = {}
    for kind in dict.fromkeys(found):
        by_name.setdefault(kind.__name__, []).append(kind)
    return by_name


def _fits(kind: type, fields: Mapping[str, Any]) -> bool:
    """Whether recorded event fields can be an event of type ``kind``: its required fields
    are there, and no field it does not declare (unless it is a plain ``Event``, which keeps
    any)."""
    declared = getattr(kind, "model_fields", {})
    required = {name for name, info in declared.items() if info.is_required()}
    if not required <= set(fields):
        return False
    extra = set(fields) - set(declared) - {"result"}
    return not extra or kind.__name__ == "Event"


def _workflow_name(workflow: Any) -> str:
    from flowdbg.adapters.llamaindex._adapter import workflow_name

    return workflow_name(workflow)


def _store_of(target: Any) -> Store | None:
    """The store of the debugger ``target`` is attached to, if any."""
    from flowdbg.adapters.llamaindex._hooks import DebugRuntime

    runtime = vars(target).get("_runtime")
    if isinstance(runtime, DebugRuntime):
        return runtime.debugger.store
    return None


def _received(target: Any, point: ForkPoint, recorded: list[Any]) -> list[Any]:
    """For step 0 of a fork (or rewind) of another run: the events that run started with, as
    its first steps received them (edits made to the events when it was forked are not in the
    record of the step it started after, which ``recorded`` is); ``recorded`` where the run
    has no such steps."""
    store = _store_of(target)
    decision = point.decision if isinstance(point.decision, Mapping) else {}
    if store is None or not recorded or len(set(decision.values())) != 1:
        return recorded  # (several types: which input is which event is not known)
    targets = [name for name in decision if name != END]
    own = [
        s
        for s in store.get_steps(point.run.run_id, kind="node")
        if tuple(s.path) == tuple(point.run.path)
    ]
    first = [s for s in own if targets and s.node == targets[0]][: len(recorded)]
    if len(first) != len(recorded) or not all(isinstance(s.input, Mapping) for s in first):
        return recorded
    events: Any = [dict(s.input) for s in first]
    view = events if isinstance(point.output, list) else events[0]
    # the edits of this fork that name the events, again
    return _events_of(point.with_output(view).output)


def _received_as(point: ForkPoint, count: int) -> list[str | None]:
    """For each of the ``count`` events step ``point.step`` emitted, the name of its type as
    the steps that received it say, where the record tells: the step that received an event
    has the event's fields as its recorded input, and the step's decision names the type it
    went to that step as. (The record of a step's output keeps the events' fields, not their
    types: events of one shape sent to steps that accept different types are told apart by
    who received them.) ``None`` for an event no later step received with its fields, or
    received as several types."""
    store = point.store
    decision = point.decision if isinstance(point.decision, Mapping) else {}
    found: list[str | None] = [None] * count
    if store is None or not decision:
        return found
    recorded = store.get_steps(point.run.run_id, from_step=point.step, to_step=point.step)
    if not recorded:
        return found
    emitted = _events_of(recorded[0].output)  # as recorded, before this fork's edits
    if len(emitted) != count:
        return found
    later = [
        s
        for s in store.get_steps(point.run.run_id, kind="node", from_step=point.step + 1)
        if tuple(s.path) == tuple(point.run.path) and s.node in decision
    ]
    for index, fields in enumerate(emitted):
        names = {
            str(decision[s.node])
            for s in later
            if s.input == fields or (isinstance(s.input, list) and fields in s.input)
        }
        if len(names) == 1:
            found[index] = names.pop()
    return found


def _events(workflow: Any, point: ForkPoint) -> list[Any]:
    """The events step ``point.step`` emitted, rebuilt as the current code's classes."""
    from flowdbg.errors import validation_details
    from flowdbg.timetravel import ForkError

    recorded = _events_of(point.output)
    if point.step == 0 and point.run.origin in ("fork", "rewind"):
        recorded = _received(workflow, point, recorded)
    decision = point.decision if isinstance(point.decision, Mapping) else {}
    names = list(dict.fromkeys(str(kind) for kind in decision.values()))
    classes = _event_classes(workflow)
    where = f"step {point.step} ({point.node})"
    wf = _workflow_name(workflow)
    if recorded and not names:
        raise ForkError(f"the events {where} emitted went to no step: there is nothing to run")
    events = []
    received: list[str | None] | None = None  # read from the record when needed
    for index, fields in enumerate(recorded):
        if not isinstance(fields, Mapping):
            raise ForkError(
                f"the record of {where} holds an event as a {type(fields).__name__}, not its "
                "fields; fork after another step"
            )
        known = [name for name in names if name in classes]
        missing = [name for name in names if name not in classes]
        if missing and not known:
            raise ForkError(
                f"{where} emitted a {missing[0]}, an event type workflow {wf!r} no longer has "
                f"(its events: {', '.join(sorted(classes))}); fork after another step, or give "
                "the workflow that has it (--target)"
            )
        candidates = [
            kind
            for name in (names if len(names) > 1 else names[:1])
            for kind in classes.get(name, ())
            if len(names) == 1 or _fits(kind, fields)
        ]
        if len(candidates) > 1 and len(names) > 1:
            if received is None:
                received = _received_as(point, len(recorded))
            name = received[index]
            candidates = [kind for kind in candidates if kind.__name__ == name]
        if len(candidates) != 1:
            what = (
                f"several classes named {names[0]}"
                if len(names) == 1
                else f"which of {', '.join(names)} its event {index} is"
            )
            raise ForkError(
                f"cannot tell {what} for the events of {where} in workflow {wf!r}; fork "
                "after another step"
            )
        kind = candidates[0]
        try:
            events.append(kind(**dict(fields)))
        except Exception as exc:  # pydantic.ValidationError, or the event's own __init__
            raise ForkError(
                f"the {kind.__name__} {where} emitted does not fit the current code's "
                f"{kind.__name__}: {validation_details(exc)}; fork after another step, or "
                "give the workflow it was recorded with (--target)"
            ) from exc
    return events


def _state(workflow: Any, point: ForkPoint) -> Any:
    """The recorded (edited) store as the current workflow's state type."""
    from workflows.context.state_store import DictState, infer_state_type

    from flowdbg.errors import validation_details
    from flowdbg.timetravel import ForkError

    values = point.state if point.state is not None else {}
    if not isinstance(values, Mapping):
        raise ForkError(
            f"the store after step {point.step} was recorded as a {type(values).__name__}, "
            "not the mapping of its keys a fork writes back"
        )
    kind = infer_state_type(workflow)
    if kind is DictState or issubclass(kind, DictState):
        return kind(_data=dict(values))
    fields = getattr(kind, "model_fields", None)
    extra = (getattr(kind, "model_config", None) or {}).get("extra")
    if isinstance(fields, Mapping) and extra != "allow":
        # a key the model does not have would be dropped (or refused) by validation: an edit
        # naming one is refused here, saying which keys there are
        for path, first in point.state_keys().items():
            if first not in fields:
                raise ForkError(
                    f"the edit {path!r} sets {first!r}, which the workflow's state "
                    f"{kind.__name__} has no field for (its fields: {', '.join(fields)})"
                )
    try:
        return kind.model_validate(dict(values))
    except Exception as exc:  # pydantic.ValidationError
        raise ForkError(
            f"the store after step {point.step} does not fit the workflow's state "
            f"{kind.__name__}: {validation_details(exc)}"
        ) from exc


def check_fork(target: Any, point: ForkPoint) -> None:
    """Refuse what the current workflow cannot start from (see the module's docstring)."""
    from flowdbg.timetravel import ForkError

    if point.node is None:
        if point.state is not None and not isinstance(point.state, Mapping):
            raise ForkError(
                f"the input of run {point.run.run_id[:8]} is a {type(point.state).__name__}, "
                "not the start event's fields a workflow run takes"
            )
        return
    _events(target, point)
    _state(target, point)


def _serializer(events: list[Any], state: Any) -> Any:
    """A ``JsonSerializer`` that gives back the classes of ``events`` and ``state`` by the
    names it writes for them (see the module's docstring)."""
    from workflows.context.serializers import JsonSerializer
    from workflows.context.utils import get_qualified_name

    own = {get_qualified_name(value): type(value) for value in (*events, state)}

    class ForkSerializer(JsonSerializer):
        def resolve_class(self, qualified_name: str) -> type[Any]:
            found = own.get(qualified_name)
            return found if found is not None else super().resolve_class(qualified_name)

    return ForkSerializer()


def _ended(target: Any, stop: Any) -> Any:
    """The fork of a step that ended the run (it returned a ``StopEvent``): a run that ends
    at once with that stop event. LlamaIndex has no way to start a run from its stop event (a
    delivered ``StopEvent`` is an event no step accepts, and the run would wait for another),
    so the run is recorded here, with no step."""
    from flowdbg.adapters.llamaindex._hooks import DebugRuntime, _result_view

    runtime = vars(target).get("_runtime")
    if isinstance(runtime, DebugRuntime) and runtime.active:
        scope = runtime.debugger.begin_run(
            framework="llamaindex",
            name=_workflow_name(target),
            input=None,
            target=runtime.workflow,
        )
        scope.end(output=_result_view(stop))
    return stop


async def afork(target: Any, point: ForkPoint, options: RunOptions | None) -> Any:
    """Run the fork in the running event loop (see the module's docstring): its result, as
    ``await wf.run()`` gives it."""
    from workflows.events import Event, StopEvent

    stop = start(target, point)
    if not isinstance(stop, Event):  # a handler: the run goes on
        stop = await stop.stop_event_result()
    return stop.result if type(stop) is StopEvent else stop


def start(target: Any, point: ForkPoint) -> Any:
    """Start the fork in the running event loop: the new run's ``WorkflowHandler``, or, for a
    step that ended the run, its ``StopEvent`` (the run has ended already)."""
    from workflows import Context
    from workflows.context.context_types import SerializedContext, SerializedDelivery
    from workflows.context.state_store import InMemoryStateStore
    from workflows.events import StopEvent

    if point.node is None:  # from the run's input: the start event's fields
        return target.run(**dict(point.state or {}))
    events = _events(target, point)
    state = _state(target, point)
    stop = next((event for event in events if isinstance(event, StopEvent)), None)
    if stop is not None:
        return _ended(target, stop)
    serializer = _serializer(events, state)
    snapshot = SerializedContext(
        state=InMemoryStateStore(state).to_dict(serializer),
        is_running=True,
        deliveries=[
            SerializedDelivery(
                invocation_id=f"flowdbg-fork-{point.step}",
                index=index,
                event=serializer.serialize(event),
            )
            for index, event in enumerate(events)
        ],
    )
    ctx = Context.from_dict(target, snapshot.model_dump(), serializer=serializer)
    return target.run(ctx=ctx)
