"""How an attached LlamaIndex workflow reports to flowdbg (imports ``workflows``: loaded by
``attach``).

The hook is a runtime decorator, LlamaIndex's own extension point for wrapping how a workflow
runs (``workflows.runtime.runtime_decorators``, the base of its ``VerboseDecorator``). Attaching
puts a :class:`DebugRuntime` in front of the workflow's runtime; it forwards everything to it
but these:

- ``run_workflow`` (called by ``wf.run()`` in the caller's context, which creates the run's
  task) begins the flowdbg run, a child run when a step of the same debugger calls it; the run's
  task, its control loop and its steps' tasks inherit :data:`RUN` from there. The run ends when
  the handler's ``get_result`` returns or raises (see :func:`_ending`).
- ``register`` wraps every step worker: one flowdbg unit per step invocation. A step worker runs
  in the step's own asyncio task, around the user's step (checked in llama-index-workflows 2.26
  ``runtime/types/step_function.py``: ``as_step_worker_function``), so awaiting a stop there
  holds that invocation only, while the control loop and the other workers go on. While the
  step runs, LlamaIndex's current runtime is this one, so a workflow the step builds and runs
  is debugged too.
- ``get_internal_adapter`` gives the run a clock that stands still while one of its steps is
  held at a stop: the run's ``timeout=``, retry delays and ``wait_for_event`` timeouts are
  measured on ``get_now()`` (``runtime/control_loop/runner.py``), so time held at a stop does
  not count against them.
- ``registering`` yields the decorator, so a workflow built inside it runs debugged too (the
  base class yields the inner runtime's).

LlamaIndex reads ``workflow._runtime`` afresh at each run (``create_workflow_run_function``:
``workflow._runtime.get_or_register(workflow)``), so swapping it between runs takes effect at
the next run; a run already going keeps the step workers it registered.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from workflows.errors import WorkflowCancelledByUser
from workflows.events import Event, StopEvent, WorkflowCancelledEvent
from workflows.runtime.runtime_decorators import (
    BaseExternalRunAdapterDecorator,
    BaseInternalRunAdapterDecorator,
    BaseRuntimeDecorator,
)
from workflows.runtime.types.plugin import RegisteredWorkflow, _current_runtime
from workflows.runtime.types.results import (
    AddCollectedEvent,
    AddWaiter,
    RetryAttempt,
    SentEvent,
    StepWorkerFailed,
    StepWorkerResult,
)

from flowdbg.adapters.llamaindex._adapter import workflow_name
from flowdbg.errors import EditRefused, Terminated, refuse_unknown_arguments, validation_details
from flowdbg.runtime import TERMINATE_MESSAGE
from flowdbg.timetravel import Rewound

try:  # BasicRuntime's internal adapter, whose get_now is time.time()
    from workflows.plugins.basic import InternalAsyncioAdapter

    _WALL_CLOCK: Any = InternalAsyncioAdapter.get_now
except (ImportError, AttributeError):  # moved: every internal adapter is wrapped
    _WALL_CLOCK = None

try:  # what InMemoryStateStore.checkpoint() requires of its serializer (see _committed)
    from workflows.context.serializers import JsonSerializer as _JSON
except ImportError:  # moved: the store is read through checkpoint()
    _JSON = None  # type: ignore[assignment,misc]
#: a store's storage that keeps no ``_record`` (see _committed)
_NO_RECORD: Any = object()

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger
    from flowdbg.runtime import RunScope, Unit

__all__ = ["RUN", "Clock", "DebugRuntime", "event_fields"]

END = "__end__"

#: the flowdbg run of the workflow run executing in this context (its control loop and the
#: tasks of its steps, which copy the context of the loop)
RUN: contextvars.ContextVar[_Run | None] = contextvars.ContextVar(
    "flowdbg_llamaindex_run", default=None
)


# -- values ------------------------------------------------------------------------------------


def _declared(model: Any) -> dict[str, Any]:
    """A pydantic model's field values, read where pydantic keeps them (the instance's
    ``__dict__``) rather than through ``model_fields``, which pydantic 2.11 made a descriptor
    calling a class method at each access (this runs for every event of every recorded step)."""
    values = model.__dict__
    return {
        name: values[name] if name in values else getattr(model, name)
        for name in type(model).__pydantic_fields__
    }


def _private(model: Any, name: str) -> Any:
    """A pydantic model's private attribute, or ``None``: read from ``__pydantic_private__``
    (``getattr`` would go through ``BaseModel.__getattr__``, and ``hasattr`` raise inside it)."""
    private = getattr(model, "__pydantic_private__", None)
    return private.get(name) if private else None


#: event class -> (the names of its declared fields, whether it is a StopEvent)
_SHAPES: dict[type, tuple[frozenset[str], bool]] = {}


def event_fields(event: Any) -> dict[str, Any]:
    """An event as the mapping a stop shows: its declared fields, then its dynamic ones (what
    ``Event(**kwargs)`` keeps in ``_data``). Runs for every event a run log keeps: where the
    instance's ``__dict__`` holds exactly the declared fields (pydantic fills it in their
    order as it validates), it is copied as it is, a C-level copy."""
    kind = type(event)
    shape = _SHAPES.get(kind)
    if shape is None:
        shape = (frozenset(kind.__pydantic_fields__), issubclass(kind, StopEvent))
        if len(_SHAPES) < 4096:  # (classes made in a loop are not all kept alive)
            _SHAPES[kind] = shape
    values = event.__dict__
    fields = dict(values) if values.keys() == shape[0] else _declared(event)
    if shape[1] and (kind is StopEvent or event.result is not None):
        fields["result"] = event.result  # a property over a private attribute; __init__ takes it
    data = _private(event, "_data")
    if data:
        fields.update(data)
    return fields


def _state_fields(state: Any) -> dict[str, Any]:
    """The context store's state as a mapping: a ``DictState``'s keys, or a typed state's
    fields (a shallow copy: later writes to the store do not change it)."""
    if state is None:
        return {}
    if isinstance(state, Event) or _private(state, "_data") is not None:
        return event_fields(state)
    return _declared(state)


def _rebuild(event: Any, fields: Any, node: str, which: str) -> Any:
    """A new event of ``event``'s type with ``fields`` (validated by pydantic)."""
    return _rebuild_as(type(event), fields, node, which)


def _rebuild_as(kind: type, fields: Any, node: str, which: str) -> Any:
    """A new event of type ``kind`` with ``fields`` (validated by pydantic)."""
    if not isinstance(fields, dict):
        raise EditRefused(
            f"the {which} of {node!r} is a {kind.__name__}, whose fields are a mapping; "
            f"set a field of it ({which}:name) rather than replacing it by a "
            f"{type(fields).__name__}"
        )
    try:
        return kind(**fields)
    except Exception as exc:  # pydantic.ValidationError, or the event's own __init__
        details = validation_details(exc)
        raise EditRefused(
            f"the {which} of {node!r} is a {kind.__name__}, which refuses the edit: {details}"
        ) from exc


# -- the virtual clock -------------------------------------------------------------------------


class Clock:
    """Real time minus the time some step of the run tree was held at a stop."""

    __slots__ = ("frozen_since", "held", "lost")

    def __init__(self) -> None:
        self.held = 0
        self.frozen_since = 0.0
        self.lost = 0.0

    def now(self, real: float) -> float:
        if self.held:
            return self.frozen_since - self.lost
        return real - self.lost

    async def get_now(self) -> float:
        """``get_now`` of an internal adapter whose clock is ``time.time()`` (see
        :meth:`DebugRuntime.get_internal_adapter`)."""
        if self.held:
            return self.frozen_since - self.lost
        return time.time() - self.lost

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        if not self.held:
            self.frozen_since = time.time()
        self.held += 1
        try:
            yield
        finally:
            self.held -= 1
            if not self.held:
                self.lost += time.time() - self.frozen_since


class _ClockAdapter(BaseInternalRunAdapterDecorator):
    """The run's internal adapter with the run's virtual clock.

    The control loop calls this adapter a few times per tick: the methods it only forwards
    hand back the inner adapter's awaitable rather than awaiting it in a coroutine of their
    own (one coroutine less per call), and ``get_now`` is the inner one's own as long as the
    clock has neither stood still nor lost time (a run nobody stops: ``now - 0.0`` is
    ``now``).
    """

    def __init__(self, decorated: Any, clock: Clock) -> None:
        self._decorated = decorated  # BaseInternalRunAdapterDecorator.__init__, inlined
        self._clock = clock

    def get_now(self) -> Any:
        clock = self._clock
        if not clock.held and not clock.lost:
            return self._decorated.get_now()
        return self._virtual_now()

    async def _virtual_now(self) -> float:
        return self._clock.now(await self._decorated.get_now())

    # -- forwarded as they are --

    def write_to_event_stream(self, event: Any) -> Any:
        return self._decorated.write_to_event_stream(event)

    def send_event(self, tick: Any) -> Any:
        return self._decorated.send_event(tick)

    def wait_receive(self, timeout_seconds: float | None = None) -> Any:
        return self._decorated.wait_receive(timeout_seconds)

    def close(self) -> Any:
        return self._decorated.close()

    def finalize_step(self) -> Any:
        return self._decorated.finalize_step()

    def on_tick(self, tick: Any) -> Any:
        return self._decorated.on_tick(tick)

    def after_tick(self, tick: Any) -> Any:
        return self._decorated.after_tick(tick)

    def wait_for_next_task(self, running: Any, pending: Any, timeout: float | None = None) -> Any:
        return self._decorated.wait_for_next_task(running, pending, timeout)


# -- runs and steps ----------------------------------------------------------------------------


class _Run:
    """One workflow run as flowdbg sees it."""

    __slots__ = (
        "clock",
        "emitted",
        "external",
        "get_now",
        "note",
        "runtime",
        "scope",
        "state_key",
        "state_shown",
        "storage",
        "store",
        "timeout",
        "workflow",
    )

    def __init__(self, scope: RunScope, clock: Clock, runtime: DebugRuntime, workflow: Any):
        self.scope = scope
        self.clock = clock
        #: the clock's ``get_now``, bound once (LlamaIndex asks for an internal adapter about
        #: once per step: see DebugRuntime.get_internal_adapter)
        self.get_now = clock.get_now
        self.runtime = runtime
        self.workflow = workflow
        self.timeout = getattr(workflow, "_timeout", None)
        #: what a stop at a step of the run says of the timeout
        self.note = (
            None
            if self.timeout is None
            else f"note: the workflow's timeout ({self.timeout:g} s) does not run while flowdbg "
            "holds one of its steps"
        )
        #: the run's context store, once read
        self.store: Any = None
        #: the store's committed state last read (see _committed) and its mapping
        self.state_key: Any = None
        self.state_shown: dict[str, Any] | None = None
        #: the store's in-memory storage, once _committed found the state kept there: the
        #: state is then read again only when its record changed (see _read_state)
        self.storage: Any = None
        #: event type -> the units that emitted events of it lately (for causes)
        self.emitted: dict[type, list[tuple[Any, Unit]]] = {}
        #: the handler's side of the run (its ``cancel`` is LlamaIndex's own), once started: a
        #: weak reference (the adapter leads to the run's tasks, whose context leads here)
        self.external: Callable[[], Any] | None = None

    def cause(self, event: Any) -> Unit | None:
        """The unit that emitted ``event`` (by identity, else by equal value, else the last
        emitter of its type): stepping follows it from the emitter to this step."""
        seen = self.emitted.get(type(event))
        if not seen:
            return None
        for emitted, unit in reversed(seen):
            if emitted is event:
                return unit
        for emitted, unit in reversed(seen):
            try:
                if emitted == event:
                    return unit
            except Exception:
                continue
        return seen[-1][1]

    def note_emitted(self, unit: Unit, events: list[Any]) -> None:
        for event in events:
            seen = self.emitted.setdefault(type(event), [])
            seen.append((event, unit))
            if len(seen) > 32:
                del seen[:16]


#: ``(step, event types it accepts)`` for every step of a workflow
_Table = list[tuple[str, tuple[type, ...]]]


def accepted_events(workflow: Any) -> _Table:
    """``(step, event types it accepts)`` for every step of ``workflow`` (LlamaIndex lists
    the steps with ``inspect.getmembers``: read once per registration, not per step)."""
    table = []
    for name, func in workflow._get_steps().items():
        config = getattr(func, "_step_config", None)
        accepted = getattr(config, "accepted_events", None) or ()
        table.append((name, tuple(kind for kind in accepted if isinstance(kind, type))))
    return table


def _targets(table: _Table, events: list[Any]) -> dict[str, str]:
    """Which steps the emitted events go to: ``{step: event type}``; a stop event ends the run
    (``__end__``)."""
    out: dict[str, str] = {}
    for event in events:
        name = type(event).__name__
        if isinstance(event, StopEvent):
            out[END] = name
            continue
        for step_name, accepted in table:
            if isinstance(event, accepted):
                out[step_name] = name
    return out


def _decider(table: _Table) -> Callable[[Any], dict[str, str]]:
    """``decide(outputs)``: where a step's outputs go, by ``table`` (one per registration, not
    one per step invocation); ``outputs`` is what a unit kept on the fast path: the
    :class:`_Outputs`, or the one event the step returned, or ``None``. Where events go
    depends on their types only: worked out once per sequence of types."""
    known: dict[tuple[type, ...], dict[str, str]] = {}

    def decide(outputs: _Outputs | Event | None) -> dict[str, str]:
        if outputs is None:
            return {}
        if type(outputs) is _Outputs:
            events = outputs.events()
            kinds = tuple(map(type, events))
        else:
            events = [outputs]
            kinds = (type(outputs),)
        found = known.get(kinds)
        if found is None:
            found = _targets(table, events)
            if len(known) < 256:
                known[kinds] = found
        return dict(found)  # each unit its own

    return decide


class _Outputs:
    """A step worker's outputs: what the after point shows and how an edit of it goes back.

    A unit keeps its outputs in the run log while the run is in the history, so they are kept
    in few objects that the garbage collector tracks: every one kept that long is promoted to
    its oldest generation, whose growth sets off full collections (bench/RESULTS.md). A tuple
    of ints is not tracked; no sent events, no list of them."""

    __slots__ = ("at", "collecting", "outputs", "returned", "sent", "waiting")

    def __init__(self, outputs: list[Any]) -> None:
        self.outputs: Sequence[Any] = outputs
        self.waiting = False
        self.collecting = False
        if len(outputs) == 1 and type(outputs[0]) is StepWorkerResult:
            # a step that returned (an event or None) and did nothing else: the commonest case
            result = outputs[0].result
            self.returned: tuple[Any, ...] = () if result is None else (result,)
            self.at: tuple[int, ...] = () if result is None else (0,)
            self.sent: list[Any] | tuple[()] = ()
            return
        returned: list[Any] = []
        at: list[int] = []
        sent: list[Any] | None = None
        for index, item in enumerate(outputs):
            if isinstance(item, StepWorkerResult):
                if item.result is not None:
                    returned.append(item.result)
                    at.append(index)
            elif isinstance(item, SentEvent):
                if sent is None:
                    sent = []
                sent.append(item.event)
            elif isinstance(item, AddWaiter):
                self.waiting = True
            elif isinstance(item, AddCollectedEvent):
                self.collecting = True
        #: the events the step returned, and their indexes in ``outputs``
        self.returned = tuple(returned)
        self.at = tuple(at)
        self.sent = () if sent is None else sent

    def events(self) -> list[Any]:
        return [*self.sent, *self.returned]

    def __repr__(self) -> str:
        # the output a unit keeps on the fast path (nothing looked, nothing recorded)
        return repr(self.view())

    def view(self) -> Any:
        """One returned event: its fields; several: a list of their fields; none: ``None``."""
        if len(self.returned) == 1 and not self.sent:
            return event_fields(self.returned[0])
        events = self.events()
        if not events:
            return None
        return [event_fields(event) for event in events]

    def check(self, node: str, payload: Any) -> None:
        """Refuse an edit the framework would not apply exactly."""
        if self.sent:
            raise EditRefused(
                f"{node!r} sent events with ctx.send_event, which LlamaIndex delivered when they "
                "were sent: they cannot be edited after the step; stop before the step and edit "
                "its input instead"
            )
        if not self.returned:
            why = (
                "it is waiting for an event (ctx.wait_for_event)"
                if self.waiting
                else "it is collecting events (ctx.collect_events)"
                if self.collecting
                else "it returned None"
            )
            raise EditRefused(f"{node!r} emitted no event to edit: {why}")
        if len(self.returned) == 1:
            _rebuild(self.returned[0], payload, node, "output")
            return
        if not isinstance(payload, list) or len(payload) != len(self.returned):
            raise EditRefused(
                f"{node!r} returned {len(self.returned)} events: edit their fields "
                "(output[i].name); the number of events cannot change"
            )
        for event, fields in zip(self.returned, payload, strict=True):
            _rebuild(event, fields, node, "output")

    def apply(self, node: str, payload: Any) -> list[Any]:
        """The outputs with the returned events rebuilt from an edited ``payload``."""
        outputs = list(self.outputs)
        edited = [payload] if len(self.returned) == 1 else list(payload)
        for index, event, fields in zip(self.at, self.returned, edited, strict=True):
            item = outputs[index]
            new_event = _rebuild(event, fields, node, "output")
            outputs[index] = item.model_copy(update={"result": new_event})
        return outputs


_INPUT_CHECKERS: dict[type, Callable[[Unit, str, Any], None]] = {}


def _input_checker(kind: type) -> Callable[[Unit, str, Any], None]:
    """The ``check_edit`` of a step given an event of type ``kind`` (one per type, not one per
    step invocation)."""
    check = _INPUT_CHECKERS.get(kind)
    if check is None:

        def check(unit: Unit, which: str, payload: Any) -> None:
            if which == "input":
                _rebuild_as(kind, payload, unit.node, "input")

        if len(_INPUT_CHECKERS) < 4096:
            _INPUT_CHECKERS[kind] = check
    return check


class _ExternalAdapter(BaseExternalRunAdapterDecorator):
    """The handler's side of a run, for an external adapter whose ``get_result`` cannot be
    wrapped in place (see :func:`_ending`)."""

    def __init__(self, decorated: Any, scope: RunScope) -> None:
        super().__init__(decorated)
        self._scope = scope

    async def get_result(self) -> Any:
        return await _ended(self._scope, self._decorated.get_result())


async def _ended(
    scope: RunScope, result: Any, external: Any = None, going: _GoingOn | None = None
) -> Any:
    """Await the workflow's result, and end the flowdbg run with it. A run the debugger
    terminated ends cancelled for LlamaIndex (see :func:`_cancelled`): its caller gets
    :class:`flowdbg.Terminated`, or, for a top-level run rewound at a stop
    (:meth:`flowdbg.Debugger.rewind`), the result of the run that goes on (:func:`_go_on`)."""
    try:
        value = await result
    except WorkflowCancelledByUser as exc:
        if not scope.root.terminated:
            scope.end(error=exc)
            raise
        raised = scope.root.termination()
        target = scope.target  # (ending the run lets go of it)
        scope.end(error=raised)
        if going is not None and isinstance(raised, Rewound) and raised.run_id == scope.run_id:
            return await _go_on(target, raised, external, going)
        raise raised from exc
    except BaseException as exc:
        scope.end(error=exc)
        raise
    scope.end(output=_result_view(value))
    return value


async def _go_on(target: Any, rewound: Rewound, external: Any, going: _GoingOn) -> Any:
    """The run of ``target`` (the attached workflow) rewound at a stop goes on from the state
    after the step it was rewound to, as its fork would (``_fork.start``), and the caller's
    handler follows it: its result is that run's stop event, its event stream goes on with
    that run's events (:func:`_published`), and its context's store and ``send_event``
    (``handler.ctx``: a ``wait_for_event`` answered) are that run's, as ``external`` (the
    rewound run's side of the handler) hands them on. The new run is top-level (its tasks do
    not take the old run's context) and recorded as the rewind of the old one
    (``rewound.lineage()``)."""
    from flowdbg.adapters.llamaindex import _fork

    token = RUN.set(None)
    handing = _GOING_ON.set(going)
    try:
        with rewound.lineage():
            started = _fork.start(target, rewound.point)
            new = going.external
            if new is not None:
                for name in ("get_state_store", "send_event", "stream_published_events"):
                    setattr(external, name, getattr(new, name))
            going.ready.set()
            if not isinstance(started, Event):  # a handler: the run goes on
                started = await started.stop_event_result()
    finally:
        _GOING_ON.reset(handing)
        RUN.reset(token)
        going.ready.set()  # (also when the run could not go on: the stream ends)
    return started


async def _cancelled(run: _Run) -> None:
    """The debugger terminated ``run`` in one of its steps: have LlamaIndex cancel the run.

    A step worker raising :class:`flowdbg.Terminated` (a ``BaseException``) stops LlamaIndex's
    control loop where it is (``ControlLoopRunner.run`` catches ``Exception`` and cancellations
    only, llama-index-workflows 2.26): the handler's result fails, but the event stream is never
    closed, and ``async for ev in handler.stream_events()`` waits forever. The run's own
    ``cancel()`` (a ``TickCancelRun``) publishes a ``WorkflowCancelledEvent``, which ends the
    stream, and halts the run with ``WorkflowCancelledByUser``, which :func:`_ended` turns back
    into ``Terminated``. The step then leaves as cancelled, which the control loop drops."""
    external = None if run.external is None else run.external()
    if external is None or not run.scope.root.terminated:
        return
    with contextlib.suppress(Exception):  # an adapter that cannot cancel: Terminated goes on
        await external.cancel()
        raise asyncio.CancelledError(TERMINATE_MESSAGE)


def _ending(external: Any, scope: RunScope) -> Any:
    """``external`` (the handler's side of a run) ending the flowdbg run with the workflow's
    result: every ``WorkflowHandler`` awaits ``get_result`` in a task of its own.

    The method is replaced on the adapter object itself rather than by wrapping the object:
    BasicRuntime's adapter is also a ``SnapshottableAdapter`` and a
    ``V2RuntimeCompatibilityShim``, which ``ctx.to_dict()``, ``ctx.is_running`` and
    ``handler.is_done()`` look for with ``isinstance`` (workflows/context/external_context.py),
    and a wrapper would hide. The object lives for this run only.

    Once awaited, the replacement takes itself off the object again: the object refers to it
    and it to the object, a cycle that would keep the run's whole state (its queues, ticks and
    events) alive until the next garbage collection, where a bare run is freed by reference
    counting (those collections were most of the attached overhead: bench/RESULTS.md).
    """
    get_result = external.get_result
    # A recorded top-level run can be rewound at a stop (Debugger.rewind; recording off, it
    # is refused; a nested run's step is rewound with its top-level run): its handler then
    # follows the run that goes on (see _go_on), its event stream too.
    going = _GoingOn() if scope.ctl.on_step is not None and scope.parent_unit is None else None

    async def get_result_and_end() -> Any:
        try:
            return await _ended(scope, get_result(), external, going)
        finally:
            with contextlib.suppress(AttributeError):  # awaited twice
                del external.get_result
            if going is not None and going.external is None:
                with contextlib.suppress(AttributeError):
                    del external.stream_published_events

    try:
        external.get_result = get_result_and_end
    except (AttributeError, TypeError):  # an adapter with __slots__: wrap it instead
        return _ExternalAdapter(external, scope)
    if going is not None:
        stream = external.stream_published_events
        external.stream_published_events = lambda: _published(stream, scope, going)
    return external


class _GoingOn:
    """What a rewound run's handler follows: the handler's side (external adapter) of the run
    that goes on from the rewind (:func:`_go_on`), once it has started (``ready``)."""

    __slots__ = ("external", "ready")

    def __init__(self) -> None:
        self.external: Any = None
        self.ready = asyncio.Event()


#: set while a rewound run's fork starts (:func:`_go_on`): the run started then hands over the
#: handler's side of it (DebugRuntime.run_workflow)
_GOING_ON: contextvars.ContextVar[_GoingOn | None] = contextvars.ContextVar(
    "flowdbg_llamaindex_going_on", default=None
)


async def _published(stream: Callable[[], Any], scope: RunScope, going: _GoingOn) -> Any:
    """A run's published events (``handler.stream_events()``), and, where the run was rewound
    at a stop, those of the run that goes on instead of the ``WorkflowCancelledEvent`` with
    which LlamaIndex ends a cancelled run's stream (the rewind cancels the run: _cancelled)."""
    async for event in stream():
        if not (isinstance(event, WorkflowCancelledEvent) and scope.root.rewound is not None):
            yield event
            continue
        await going.ready.wait()
        if going.external is not None:
            async for later in going.external.stream_published_events():
                yield later
        return


class DebugRuntime(BaseRuntimeDecorator):
    """The runtime of an attached workflow: its own runtime, with each run and step reported to
    a debugger."""

    def __init__(self, decorated: Any, debugger: Debugger, workflow: Any) -> None:
        super().__init__(decorated)
        self.debugger = debugger
        #: the attached workflow (workflows built inside its steps run on this runtime too)
        self.workflow = workflow
        #: whether the workflow is attached (a run that started attached keeps these workers
        #: after a detach; they report nothing then)
        self.active = True
        #: (workflow id, step table version) -> RegisteredWorkflow: LlamaIndex registers twice
        #: per run (``BasicRuntime.run_workflow`` and the run function)
        self._cache: dict[tuple[int, int], RegisteredWorkflow] = {}

    # -- Runtime --

    def register(self, workflow: Any) -> RegisteredWorkflow:
        key = (id(workflow), type(workflow)._step_functions_version)
        cached = self._cache.get(key)
        if cached is not None and cached.workflow is workflow:
            return cached
        registered = self._decorated.register(workflow)
        # The steps of this workflow and the events they accept, for the decisions of its
        # steps: each registration's workers keep their own (a workflow built and run inside a
        # step registers on this runtime too, between two steps of its parent)
        table = accepted_events(workflow)
        decide = _decider(table)
        wrapped = RegisteredWorkflow(
            workflow=registered.workflow,
            workflow_run_fn=registered.workflow_run_fn,
            steps={name: self._wrap_step(fn, decide) for name, fn in registered.steps.items()},
        )
        self._cache = {key: wrapped}
        return wrapped

    def get_internal_adapter(self, workflow: Any) -> Any:
        inner: Any = self._decorated.get_internal_adapter(workflow)
        run = RUN.get()
        if run is None or run.runtime is not self:
            return inner
        if _WALL_CLOCK is not None and type(inner).get_now is _WALL_CLOCK:
            # BasicRuntime's adapter (one per call, for this run): its clock replaced on the
            # object itself, which the control loop then calls directly, a few times per tick,
            # rather than through a wrapper (the clock refers to no adapter: no cycle); a try
            # statement costs nothing where contextlib.suppress costs three calls
            try:
                inner.get_now = run.get_now
            except (AttributeError, TypeError):
                pass
            else:
                return inner
        return _ClockAdapter(inner, run.clock)

    @contextlib.contextmanager
    def registering(self) -> Iterator[Any]:
        # The base class yields the inner runtime's registering(), under which workflows
        # would be built on the inner runtime and bypass this one.
        token = _current_runtime.set(self)
        try:
            yield self
        finally:
            _current_runtime.reset(token)

    # -- runs --

    def run_workflow(
        self,
        run_id: str,
        workflow: Any,
        init_state: Any,
        start_event: Any = None,
        serialized_state: Any = None,
        serializer: Any = None,
    ) -> Any:
        # Called by wf.run() in the caller's context, which creates the run's task: the flowdbg
        # run begins here (a child run when a step of this debugger calls it), and the run's
        # task, its control loop and its steps' tasks inherit RUN from this context. (The run
        # function a runtime registers is not this decorator's to wrap: BasicRuntime.run_workflow
        # registers the workflow on itself.)
        if not self.active:
            return self._decorated.run_workflow(
                run_id, workflow, init_state, start_event, serialized_state, serializer
            )
        parent = RUN.get()
        clock = parent.clock if parent is not None else Clock()
        input = event_fields(start_event) if start_event is not None else None
        scope = self.debugger.begin_run(
            framework="llamaindex",
            name=workflow_name(workflow),
            input=input,
            # detaching the attached workflow lets go of the runs of workflows built in its
            # steps (which run on this runtime) too
            target=self.workflow,
        )
        # A context's store keeps live objects that later steps change in place (an agent's
        # memory and scratchpad), and LlamaIndex's agents change events they emitted (the
        # AgentOutput's tool_calls, at parse_agent_output): record each step as it ended.
        scope.values_change_in_place = True
        scope.present = _present  # the fast path keeps events and outputs as they are
        run = _Run(scope, clock, self, workflow)
        token = RUN.set(run)
        try:
            external = self._decorated.run_workflow(
                run_id, workflow, init_state, start_event, serialized_state, serializer
            )
        except BaseException as exc:
            scope.end(error=exc)
            raise
        finally:
            RUN.reset(token)
        with contextlib.suppress(TypeError):  # an adapter without weak references
            run.external = weakref.ref(external)
        ending = _ending(external, scope)
        going = _GOING_ON.get() if parent is None else None
        if going is not None and going.external is None:  # the run a rewind goes on with
            going.external = ending
        return ending

    # -- step workers --

    def _wrap_step(
        self, inner: Callable[..., Any], decide: Callable[[Any], dict[str, str]]
    ) -> Callable[..., Any]:
        async def worker(
            state: Any,
            step_name: str,
            event: Any,
            workflow: Any,
            bound_events: Any = None,
            retry: Any = RetryAttempt(),  # noqa: B008 - the framework's own default
        ) -> Any:
            run = RUN.get()
            if run is None or run.runtime is not self or not self.active:
                return await inner(
                    state=state,
                    step_name=step_name,
                    event=event,
                    workflow=workflow,
                    bound_events=bound_events,
                    retry=retry,
                )
            try:
                return await _step(
                    run,
                    inner,
                    decide,
                    state,
                    step_name,
                    event,
                    workflow,
                    bound_events,
                    retry,
                )
            except Terminated:
                await _cancelled(run)
                raise

        worker.__name__ = getattr(inner, "__name__", "worker")
        worker.__qualname__ = getattr(inner, "__qualname__", "worker")
        return worker


def _present(value: Any) -> Any:
    """A value a unit kept on the fast path as a stop shows it (``RunScope.present``): a step's
    outputs as their view, its input event (or the events it collected) as their fields."""
    if isinstance(value, _Outputs):
        return value.view()
    if isinstance(value, Event):
        return event_fields(value)
    if type(value) is list and value and all(isinstance(item, Event) for item in value):
        return [event_fields(item) for item in value]
    return value


def _result_view(result: Any) -> Any:
    if type(result) is StopEvent:
        return result.result
    if isinstance(result, Event):
        return event_fields(result)
    return result


async def _read_state(run: _Run) -> dict[str, Any] | None:
    """The context store of the run, as a mapping (``None`` when it cannot be read). Read
    twice per recorded step (before and after it): the mapping made last is given again while
    the store's committed state is the same object (every write commits a new one, see
    :func:`_committed`), so the state before a step and after the one before are one value.
    A mapping given out is never changed (a stop edits a copy)."""
    try:
        storage = run.storage
        if storage is not None:  # the record unchanged since the last read: the same mapping
            record = vars(storage).get("_record")
            if (storage if record is None else record) is run.state_key:
                return run.state_shown
        store = run.store
        if store is None:
            store = run.store = run.runtime.get_internal_adapter(run.workflow).get_state_store()
            if store is None:
                return None
        found = _committed(store)
        if found is None:
            return _state_fields(await store.get_state())
        key, read, run.storage = found
        if key is run.state_key:
            return run.state_shown
        shown = _state_fields(read())
        run.state_key, run.state_shown = key, shown
        return shown
    except Exception:
        return None


def _committed(store: Any) -> tuple[Any, Callable[[], Any], Any] | None:
    """``(key, read, storage)``: the store's committed state without the copies ``get_state()`` and
    ``checkpoint()`` make (a copy of the model, of its record), where the store keeps it as
    ``InMemoryStateStore`` of llama-index-workflows 2.26.1 does: its storage's ``_record``
    holds the live model (``_live_record``), and every write saves a new record
    (``_InMemoryStateStorage.save`` copies it), so ``key`` (that record, or the storage while
    nothing was written) changes with each write; ``read()`` gives the state as
    ``checkpoint().state`` does (the type's default before the first write); ``storage``,
    that storage (a store sets it once, in ``__init__``), or ``None`` for a store of another
    kind, whose ``checkpoint()`` is read each time. ``None`` where neither works (a
    serializer that is not JSON: ``get_state()`` then)."""
    try:  # (read from the storage's __dict__: the name is LlamaIndex's, not flowdbg's)
        storage = store._memory_storage
        record = vars(storage).get("_record", _NO_RECORD)
    except (AttributeError, TypeError):  # another store, or storage with slots
        storage, record = None, _NO_RECORD
    json_serialized = _JSON is not None and isinstance(getattr(store, "_serializer", None), _JSON)
    if record is not _NO_RECORD and json_serialized:
        if record is None:
            return storage, store.state_type, storage
        return record, lambda: record.data, storage
    checkpoint = getattr(store, "checkpoint", None)
    if checkpoint is None:
        return None
    try:
        state = checkpoint().state
    except Exception:  # e.g. a store whose serializer is not JSON
        return None
    return state, lambda: state, None


async def _held(run: _Run, point: Any) -> Any:
    """Await a point of a unit; while it may hold (something can stop), the run's clock stands
    still."""
    if run.scope.quiet:
        return await point
    with run.clock.holding():
        return await point


_TOOL_CALLS: dict[type[Event], bool] = {}


def _is_tool_call(kind: type[Event]) -> bool:
    """Whether events of type ``kind`` ask for a tool call: LlamaIndex agents' ``ToolCall``
    (``tool_name``, ``tool_kwargs``), not its ``ToolCallResult`` (which has a ``tool_output``
    too)."""
    known = _TOOL_CALLS.get(kind)
    if known is None:
        names = kind.model_fields
        known = "tool_name" in names and "tool_kwargs" in names and "tool_output" not in names
        if len(_TOOL_CALLS) < 4096:
            _TOOL_CALLS[kind] = known
    return known


def _check_args(unit: Unit, which: str, payload: Any) -> None:
    if which == "input" and not isinstance(payload, dict):
        raise EditRefused(
            f"the arguments of tool {unit.node!r} are a mapping of argument names to values; "
            f"set one of them (args:name) rather than replacing them by a "
            f"{type(payload).__name__}"
        )


def _args_checker(workflow: Any, name: str) -> Callable[[Unit, str, Any], None]:
    """The ``check_edit`` of a call of the agent tool ``name``: the arguments must fit the
    tool's schema (``metadata.fn_schema``, from the function's signature), as its model would
    send them. LlamaIndex calls the tool with the arguments as they are (``FunctionTool.acall``
    validates nothing), so an edit the schema refuses would fail in the tool, or worse. The
    schema is looked up at the first edit, not at each call (a call nobody edits pays
    nothing); a tool no agent lists (a retrieved one) is checked for a mapping only."""
    return schema_checker(name, lambda: _tool_schema(workflow, name))


def schema_checker(name: str, get_schema: Callable[[], Any]) -> Callable[[Unit, str, Any], None]:
    """The ``check_edit`` of a call of the tool ``name`` whose argument schema (a pydantic
    model, or ``None``: a mapping is all that is checked) ``get_schema()`` gives."""

    def check(unit: Unit, which: str, payload: Any) -> None:
        _check_args(unit, which, payload)
        if which != "input":
            return
        schema = get_schema()
        fields = getattr(schema, "model_fields", None)
        if schema is None or not isinstance(fields, dict):
            return
        refuse_unknown_arguments(f"tool {name!r}", payload, fields)
        try:  # checked as JSON, the way a model's call comes: "40" is no int, "2024-01-02" a date
            text = json.dumps(payload)
        except (TypeError, ValueError):  # a Python object set at the stop: checked as it is
            validate: Callable[[], Any] = lambda: schema.model_validate(payload)  # noqa: E731
        else:
            validate = lambda: schema.model_validate_json(text, strict=True)  # noqa: E731
        try:
            validate()
        except Exception as exc:  # pydantic.ValidationError
            raise EditRefused(
                f"the arguments of tool {name!r} do not fit its signature: "
                f"{validation_details(exc)}"
            ) from exc

    return check


def _tool_schema(workflow: Any, name: str) -> Any:
    """The ``fn_schema`` of the tool ``name`` of the agents ``workflow`` runs, or ``None``."""
    from flowdbg.adapters.llamaindex._describe import _agents

    for agent in _agents(workflow) or ():
        for tool in getattr(agent, "tools", None) or ():
            metadata = getattr(tool, "metadata", None)
            if getattr(metadata, "name", None) == name:
                return getattr(metadata, "fn_schema", None)
    return None


def _tool_result(outputs: list[Any]) -> tuple[int, Any] | None:
    """(index, event) of the ``ToolCallResult`` a ``call_tool`` step returned."""
    for index, item in enumerate(outputs):
        result = getattr(item, "result", None) if isinstance(item, StepWorkerResult) else None
        if result is not None and hasattr(result, "tool_output"):
            return index, result
    return None


def with_result(output: Any, result: Any) -> Any:
    """A copy of the ``ToolOutput`` ``output`` whose result is ``result``: its raw output, and
    the text an agent reads (llama-index-core 0.14: ``content``, a property over the output's
    blocks)."""
    new_output = output.model_copy()
    new_output.raw_output = result
    new_output.content = str(result)
    return new_output


async def _tool_after(run: _Run, tool: Unit, outputs: list[Any], state: Any) -> list[Any]:
    """The tool unit's error or after point, from the result its step returned; an edit of the
    result replaces the tool's output in that event."""
    found = _tool_result(outputs)
    if found is None:  # the step emitted no result (it failed, or waits for an event)
        tool.discard(None)
        return outputs
    index, result = found
    output = result.tool_output
    error = getattr(output, "exception", None)
    if isinstance(error, BaseException):
        # the agent caught the tool's exception (its message becomes the tool's output): an
        # error point, after which the agent goes on as it would
        await _held(run, tool.aerror(error, state=state))
        return outputs
    value = getattr(output, "raw_output", None)
    edited = await _held(run, tool.aafter(output=value, state=state))
    if edited is value:
        return outputs
    new_output = with_result(output, edited)
    outputs = list(outputs)
    outputs[index] = outputs[index].model_copy(
        update={"result": result.model_copy(update={"tool_output": new_output})}
    )
    return outputs


async def _step(
    run: _Run,
    inner: Callable[..., Any],
    decide: Callable[[Any], dict[str, str]],
    state: Any,
    step_name: str,
    event: Any,
    workflow: Any,
    bound_events: Any,
    retry: Any,
) -> Any:
    scope = run.scope
    ctl = scope.ctl
    quiet = ctl.quiet  # scope.quiet (read once: nothing is awaited until the before point)
    # a fan-in step (ctx.collect_events, a list parameter) receives the events it collected
    payload = getattr(state, "collection_release_payload", None)
    collected = None if payload is None else list(payload.events)
    # Causes serve stepping only: a stop (not quiet) records what its unit emits.
    cause = None
    if run.emitted and not quiet:
        cause = run.cause(collected[0] if collected else event)
    unit = scope.unit(
        step_name,
        branch=getattr(state, "invocation_id", None),
        attempt=getattr(retry, "retry_number", 0) + 1,
        cause=cause,
        check_edit=(
            _input_checker(type(event)) if collected is None else _collected_checker(collected)
        ),
    )
    if run.note is not None:
        unit.note = run.note
    wanted = not quiet or ctl.on_step is not None  # scope.recording
    before_state = None
    if not wanted:  # nothing can stop or look: the event as it is
        shown: Any = event if collected is None else collected
        edited = await unit.abefore(input=shown)
    else:
        # Read also when the run is only recorded (nothing can stop yet): a breakpoint or watch
        # set while the step runs stops at its after point, which then shows this state and
        # compares with it, as do the model and tool calls the step makes.
        before_state = await _read_state(run)
        shown = event_fields(event) if collected is None else [event_fields(e) for e in collected]
        edited = await _held(run, unit.abefore(state=before_state, input=shown))
    if edited is not shown:
        if isinstance(edited, Event):  # an event object itself was edited where the stop
            event = edited  # opened on the fast path (by a pause, say)
        elif collected is None:  # edited at the stop: the step receives the edited event(s)
            event = _rebuild(event, edited, step_name, "input")
        else:
            events = [
                _rebuild(e, f, step_name, "input") for e, f in zip(collected, edited, strict=True)
            ]
            payload = state.collection_release_payload
            state = _replace(state, collection_release_payload=_replace(payload, events=events))
    tool = None
    if collected is None:
        tool_call = _TOOL_CALLS.get(type(event))
        if tool_call is None:
            tool_call = _is_tool_call(type(event))
    else:
        tool_call = False
    if tool_call:
        # an agent's tool call: a tool unit inside the step, held before the tool runs
        name = str(event.tool_name)
        tool = unit.frame().unit(
            name, kind="tool", branch=unit.branch, check_edit=_args_checker(workflow, name)
        )
        args = dict(event.tool_kwargs or {})
        edited_args = await _held(run, tool.abefore(state=before_state, input=args))
        if edited_args is not args:
            event = _rebuild(
                event, {**event_fields(event), "tool_kwargs": edited_args}, step_name, "input"
            )
        # a rerun with recorded calls: an agent's call_tool step runs live (its result is an
        # event the agent makes), in its place among the calls; a rerun ending at its first
        # divergence ends the tool and its step here
        try:
            tool.recorded(edited_args, serve=False)
        except BaseException as exc:
            tool.discard(exc)
            unit.discard(exc)
            raise
    # A workflow built while the step runs takes LlamaIndex's current runtime (Workflow.__init__:
    # get_current_runtime()), so one the step builds and runs is debugged as a child run.
    token = _current_runtime.set(run.runtime)
    try:
        outputs = await inner(
            state=state,
            step_name=step_name,
            event=event,
            workflow=workflow,
            bound_events=bound_events,
            retry=retry,
        )
    except BaseException as exc:  # flowdbg.Terminated from a nested run, a cancellation
        if tool is not None:
            tool.discard(exc)
        raised = unit.discard(exc)  # terminate() cancelled the step: Terminated
        if raised is exc or raised is None:
            raise
        raise raised from exc
    finally:
        _current_runtime.reset(token)
    if tool is None and len(outputs) == 1 and ctl.quiet and ctl.on_step is None:
        item = outputs[0]
        if type(item) is StepWorkerResult:
            returned = item.result
            if returned is None or isinstance(returned, Event):
                # the fast path's commonest case, one event returned (or none): the unit keeps
                # that event itself, shown as its fields as _Outputs.view() shows it, and no
                # object around it for the garbage collector to promote (bench/RESULTS.md);
                # its decision made now, from the event's type (the run log has it made anyway)
                await unit.aafter(output=returned, decision=decide(returned))
                return outputs
    failed = None
    for item in outputs:
        if isinstance(item, StepWorkerFailed):
            failed = item
            break
    if tool is not None:
        outputs = await _tool_after(run, tool, outputs, before_state)
    if failed is not None:
        after_state = await _read_state(run) if wanted else None
        await _held(run, unit.aerror(failed.exception, state=after_state))
        return outputs
    parts = _Outputs(outputs)
    if parts.waiting and not parts.returned:
        # wait_for_event: the step runs again from the top when the event arrives
        unit.discard(None, status="suspended")
        return outputs
    if ctl.quiet and ctl.on_step is None:
        # nothing can stop or look, nothing is recorded: the fast path, where the unit keeps
        # (in the run log) only the events the step emitted, not LlamaIndex's results around
        # them, which only an edit at a stop rebuilds
        if parts.sent or len(parts.returned) > 1:
            parts.outputs = ()
            await unit.aafter(output=parts, decide=decide)
        else:  # as above: no _Outputs kept for one event or none
            await unit.aafter(output=parts.returned[0] if parts.returned else None, decide=decide)
        return outputs
    view = parts.view()
    # Decided now, also for a run that is only recorded: a decide function kept with the unit
    # until its record is built would keep the emitted events (and LlamaIndex's results around
    # them) alive as long, for the garbage collector to promote (bench/RESULTS.md).
    decision = decide(parts)
    after_state = await _read_state(run)
    unit.check_edit = lambda unit, which, payload: parts.check(unit.node, payload)
    if scope.quiet:  # recorded only
        edited_out = await unit.aafter(output=view, state=after_state, decision=decision)
    else:
        edited_out = await _held(
            run, unit.aafter(output=view, state=after_state, decision=decision)
        )
    unit.check_edit = None  # no stop at this unit from now on: its outputs need not be kept
    if edited_out is not view:
        outputs = parts.apply(step_name, edited_out)
        parts = _Outputs(outputs)
        # (the record was taken at the after point, with the decision before the edit: the
        # same, as an edit keeps each event's type, see _Outputs.apply)
        unit.decision = decide(parts)
    if (parts.returned or parts.sent) and not scope.quiet:
        run.note_emitted(unit, parts.events())
    return outputs


def _collected_checker(events: list[Any]) -> Callable[[Unit, str, Any], None]:
    def check_edit(unit: Unit, which: str, payload: Any) -> None:
        if which != "input":
            return
        if not isinstance(payload, list) or len(payload) != len(events):
            raise EditRefused(
                f"{unit.node!r} receives {len(events)} collected events: edit their fields "
                "(input[i].name); the number of events cannot change"
            )
        for event, fields in zip(events, payload, strict=True):
            _rebuild(event, fields, unit.node, "input")

    return check_edit


def _replace(obj: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(obj, **changes)
