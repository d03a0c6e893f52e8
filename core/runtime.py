"""The adapter-facing runtime: runs and units.

An adapter reports its framework's execution through two objects:

- a :class:`RunScope` per invocation, from :meth:`flowdbg.Debugger.begin_run` (a run started
  while a unit of the same debugger is executing becomes its child run automatically);
- a :class:`Unit` per execution of a node, step, tool call, LLM call or handoff, from
  :meth:`RunScope.unit`, on which the adapter calls ``before``, then ``after`` or ``error``
  (or their ``a``-prefixed async forms under an event loop).

``before`` returns the input the unit must use and ``after`` the output it must commit; both may
have been edited while stopped. Each call may block (sync forms block the calling thread, async
forms suspend only the calling task) and may raise :class:`flowdbg.Terminated`, which the
adapter must let through. After ``error`` returns, the adapter re-raises the original exception.

With no breakpoints, stepping, pause or observers, each call costs a few attribute reads.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import inspect
import itertools
import os
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from flowdbg.errors import Terminated
from flowdbg.events import ErrorInfo, Location, Position, RunInfo, RunStatus

if TYPE_CHECKING:
    from flowdbg.controller import Controller
    from flowdbg.records import StepRecord
    from flowdbg.timetravel import RecordedCalls

__all__ = ["Frame", "RunScope", "Unit", "current_unit"]

_CURRENT_UNIT: contextvars.ContextVar[Unit | None] = contextvars.ContextVar(
    "flowdbg_current_unit", default=None
)
_SAME: Any = object()
_now = time.time


def _current_task() -> Any:
    """The asyncio task running now, or ``None`` (another event loop library, such as trio)."""
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


#: the message of the cancellation with which terminate() stops an async unit
TERMINATE_MESSAGE = "flowdbg: the run was terminated by the debugger"
_BEFORE = Position.BEFORE.value
_AFTER = Position.AFTER.value
_ERROR = Position.ERROR.value
_RUNNING = RunStatus.RUNNING
#: the unit kinds a rerun may serve from the record
_CALL_KINDS = frozenset({"llm", "tool"})
# The RunHandle whose worker thread this is (set by Debugger.start); learns its run's id.
_RUN_HANDLE: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "flowdbg_run_handle", default=None
)


# A run restarted by a rewind (see flowdbg.timetravel.Rewound.lineage): a one-item list holding
# its lineage until the next top-level run begins in this context and takes it.
_REWIND: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "flowdbg_rewind", default=None
)


def _note_run_started(run_id: str) -> None:
    handle = _RUN_HANDLE.get()
    if handle is not None and (handle.run_id is None or handle._follow):
        handle.run_id = run_id
        handle._follow = False
        handle._started.set()


def current_unit() -> Unit | None:
    """The unit executing in this context (thread or task), if any."""
    return _CURRENT_UNIT.get()


class RunScope:
    """One run (top-level or nested) as seen by an adapter."""

    __slots__ = (
        "_counter",
        "_ended",
        "_failed",
        "_path",
        "_root",
        "_unsettled",
        "adapter_data",
        "calls",
        "cancelled_by_caller",
        "cannot_rewind",
        "check_edit",
        "children",
        "ctl",
        "entered",
        "info",
        "parent_unit",
        "present",
        "released",
        "rewound",
        "target",
        "terminated",
        "units",
        "values_change_in_place",
    )

    #: whether this is a :class:`Frame` (the calls inside a unit), not a run of its own
    is_frame: ClassVar[bool] = False

    def __init__(self, ctl: Controller, info: RunInfo, parent_unit: Unit | None) -> None:
        self.ctl = ctl
        self.info = info
        self.parent_unit = parent_unit
        self._root: RunScope | None = None if parent_unit is None else parent_unit.run.root
        self.terminated = False
        #: set with :attr:`terminated` by :meth:`flowdbg.Debugger.rewind`: the arguments of
        #: the :class:`flowdbg.timetravel.Rewound` its branches raise instead of Terminated
        self.rewound: tuple[Any, ...] | None = None
        #: detached while running: its points no longer stop (see Debugger.detach)
        self.released = False
        #: what the adapter attached that runs here (see Debugger.begin_run)
        self.target: Any = None
        self.entered = False
        self._ended = False
        #: the run's default for :attr:`Unit.check_edit` (units opened after it is set take it)
        self.check_edit: Callable[[Unit, str, Any], None] | None = None
        #: free for the adapter's own bookkeeping of this run (dropped when the run ends)
        self.adapter_data: Any = None
        #: set by an adapter whose framework lets the run's caller cancel it on purpose (a
        #: streamed OpenAI Agents run's ``result.cancel()``), on that run (top-level, or nested
        #: in a unit of another: a tool consuming a streamed run of its own):
        #: ``cancelled_by_caller(exc)`` gives the :class:`flowdbg.Terminated` that a
        #: cancellation ``exc`` leaving a unit of the run (or of a run nested in it) ends the
        #: unit with (status ``terminated``, not ``failed``) when the caller cancelled the run,
        #: else ``None`` (see :meth:`stopped_by_caller`). The exception raised on is still
        #: ``exc``: the framework's own cancellation goes on.
        self.cancelled_by_caller: Callable[[BaseException], BaseException | None] | None = None
        #: set by an adapter on a top-level run it cannot go on with after a rewind, saying
        #: why (a streamed OpenAI Agents run, whose result object the SDK fills as it runs):
        #: :meth:`flowdbg.Debugger.rewind` then refuses it with that reason, leaving the stop
        #: open, though the adapter declares :attr:`flowdbg.Capability.REWIND`
        self.cannot_rewind: str | None = None
        #: a rerun's recorded model and tool calls (top-level runs of a rerun only; see
        #: :meth:`Unit.recorded`)
        self.calls: RecordedCalls | None = None
        #: set by the adapter when its framework (or the code it runs) may change the objects
        #: of a finished unit's values (input, output, state) in place, as LlamaIndex does with
        #: an agent's memory and the OpenAI Agents SDK with a run context: the built-in
        #: recorder then takes them as they are when each unit ends (its input as it starts:
        #: ``flowdbg_on_unit_start``), on the run's thread (:meth:`flowdbg.store.Store.freeze`),
        #: instead of reading them later on its writer thread. It costs the run the encoding
        #: of each unit's values, with nothing shared between units (a long message history
        #: is encoded again at each unit), so a framework whose updates replace values
        #: (LangGraph's reducers) leaves it off.
        self.values_change_in_place = False
        #: set by an adapter whose units keep the framework's own objects as their input or
        #: output while nothing can stop, look or record (its fast path: an event object, its
        #: outputs unconverted): ``present(value)`` gives what a stop would show for such a
        #: value, and any other value as it is. The run log applies it when a running run is
        #: read (:attr:`flowdbg.Debugger.runs`), so the fast path converts nothing, and once
        #: to a finished run as it enters the history, whose units then keep the converted
        #: values (the framework's objects are not kept as long as the run is; see _keep).
        self.present: Callable[[Any], Any] | None = None
        #: child runs started by units of this run
        self.children: list[RunScope] = []
        self._counter = itertools.count(1)
        self._path = info.path
        #: finished units, in finishing order (the run log reads them)
        self.units: list[Unit] = []
        #: finished units whose state after is not known yet (see :meth:`settle`)
        self._unsettled: collections.deque[Unit] = collections.deque()
        #: units of this run tree that ended with an exception (top-level runs only; see
        #: Controller.end_run, which lets go of the exceptions once the run ended)
        self._failed: list[Unit] | None = [] if parent_unit is None else None

    def termination(self) -> BaseException:
        """What a branch of this terminated run raises: a :class:`flowdbg.Terminated`, or the
        :class:`flowdbg.timetravel.Rewound` of a rewound run (a new one each time: parallel
        branches raise it at once)."""
        rewound = self.root.rewound
        if rewound is None:
            return Terminated()
        from flowdbg.timetravel import Rewound

        return Rewound(*rewound)

    def _finished(self, unit: Unit) -> None:
        self.units.append(unit)  # list.append is atomic: parallel branches may finish at once
        on_step = self.ctl.on_step
        if on_step is not None:
            on_step(unit)

    @property
    def quiet(self) -> bool:
        """True while nothing can stop, log or observe a point of this debugger: an adapter may
        then skip computing payloads (a state nobody will read)."""
        return self.ctl.quiet

    @property
    def recording(self) -> bool:
        """Whether finished units are recorded (the built-in recorder, or another plugin
        implementing ``flowdbg_on_step``, receives them)."""
        return self.ctl.on_step is not None

    @property
    def unsettled(self) -> bool:
        """Whether finished units of this run wait for :meth:`settle`."""
        return bool(self._unsettled)

    def settle(self, state: Any, *, superstep: int | None = None) -> None:
        """The framework committed what the run's finished units wrote: ``state`` is the run's
        state now. Every unit that finished with ``after(..., deferred=True)`` takes ``state``
        as its state after (the run log shows it), and is recorded.

        Call it where the framework has committed, with a state it has already computed (the
        next superstep's input, the run's final values): flowdbg never runs the framework's or
        the user's code (reducers) a second time to learn a state.

        :param state: the run's committed state.
        :param superstep: settle only the units of supersteps before this one (units of the
            current superstep may finish while others of it start).
        """
        pending = self._unsettled
        on_step = self.ctl.on_step
        while pending:
            try:
                unit = pending.popleft()  # atomic: parallel branches may settle at once
            except IndexError:  # settled by a sibling meanwhile
                return
            if superstep is not None and (unit.superstep is None or unit.superstep >= superstep):
                # the units wait in the order they finished, supersteps in order: the rest
                # are of this superstep (siblings that finished first) and wait on
                pending.appendleft(unit)
                return
            unit.state = state
            if on_step is not None:
                on_step(unit)

    @property
    def root(self) -> RunScope:
        """The top-level run this scope belongs to."""
        return self if self._root is None else self._root

    def stopped_by_caller(self, exc: BaseException) -> BaseException | None:
        """What a cancellation ``exc`` leaving a unit of this run ends the unit with when a
        caller cancelled a run around it on purpose: the :class:`flowdbg.Terminated` given by
        the :attr:`cancelled_by_caller` of the innermost such run (this run first, then the
        runs it is nested in), else ``None``."""
        scope: RunScope | None = self
        while scope is not None:
            by_caller = scope.cancelled_by_caller
            stopped = None if by_caller is None else by_caller(exc)
            if stopped is not None:
                return stopped
            parent = scope.parent_unit
            scope = None if parent is None else parent.run
        return None

    def _keep(self) -> None:
        """Make this finished run, and its child runs, what the run log keeps (the controller
        calls this as the run enters its history). The history keeps runs long enough for the
        garbage collector to promote what they hold to its oldest generation, whose growth
        sets off full collections: a kept unit holds plain values only, where it can.

        - The values its units kept on an adapter's fast path (the framework's own objects,
          see :attr:`present`) are replaced by what a stop shows of them: a framework's object
          (an event model, its field set, its private dict) is several tracked objects, its
          shown form a mapping of plain values, which the collector does not track. One value
          shared by two units (the event one step emits and the next receives) is converted
          once and stays shared. A decision still to be made from an output is made first.
        - Its units' ``check_edit`` functions are dropped: no stop opens at a finished unit,
          and such a function may hold the framework's objects (the events a step collected).
        """
        present = self.present
        memo: dict[int, tuple[Any, Any]] = {}  # id -> (value, shown): values stay alive
        for unit in self.units:
            unit.check_edit = None
            if present is None:
                continue
            if getattr(unit, "_decide", None) is not None:
                unit.resolved()  # its decide function reads the output as it was kept
            for name in ("input", "output"):
                value = getattr(unit, name, None)
                if value is None or type(value) in _PLAIN:
                    continue
                known = memo.get(id(value))
                if known is None:
                    try:
                        known = memo[id(value)] = (value, present(value))
                    except Exception:  # kept as it is (the run log tries again when read)
                        continue
                setattr(unit, name, known[1])
        for child in self.children:
            child._keep()

    def _release(self) -> None:
        """Forget the finished units and child runs (the controller calls this when the run
        leaves its history). Units and their runs refer to each other; dropping these links
        lets reference counting free a finished run at once, instead of leaving it to the
        cyclic garbage collector, whose passes over retained runs cost more than the run."""
        units, self.units = self.units, []
        children, self.children = self.children, []
        for unit in units:
            unit.cause = None  # may be a unit of another run
            frame = unit._frame
            if frame is not None:  # shares the lists above and points back at its unit
                unit._frame = None
                frame.units = []
                frame.children = []
        for child in children:
            child._release()

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.info.run_id

    @property
    def path(self) -> tuple[str, ...]:
        """Names of the units enclosing this scope's units, from the root run down."""
        return self._path

    def unit(
        self,
        node: str,
        *,
        kind: str = "node",
        superstep: int | None = None,
        branch: str | None = None,
        attempt: int = 1,
        cause: Unit | tuple[Unit, ...] | None = None,
        check_edit: Any = _SAME,
    ) -> Unit:
        """Open the next unit of this run.

        :param node: the unit's name (graph node, step, tool, agent).
        :param kind: ``node``, ``tool``, ``llm``, ``handoff`` or ``agent``.
        :param superstep: the framework's superstep, where it has one.
        :param branch: id of the concurrent branch or task running the unit.
        :param attempt: retry attempt, 1-based.
        :param cause: the unit whose output started this one (the step that emitted the event
            it receives, the previous turn of an agent), or a tuple of the units whose outputs
            it receives together (the parallel tool calls before a model turn), where the
            framework says: stepping follows these links from one unit to the next on the same
            line of execution.
        :param check_edit: ``check_edit(unit, "input" | "output", new_payload)`` raises
            :class:`flowdbg.EditRefused` for an edit the framework would not apply exactly;
            ``None`` accepts every edit. Defaults to the run's :attr:`check_edit`.
        :returns: the unit; call ``before`` on it next.
        """
        if type(kind) is not str:
            kind = str(kind)  # a Kind member
        unit = Unit(self, node, kind, next(self._counter), superstep, branch, attempt)
        if cause is not None:
            unit.cause = cause
        if check_edit is not _SAME:
            unit.check_edit = check_edit
        return unit

    def end(
        self, *, output: Any = None, error: BaseException | None = None, suspended: bool = False
    ) -> None:
        """Close the run with its output or the exception that ended it. Idempotent; a no-op
        for a frame.

        :param suspended: the run ended waiting for the framework's own resume (a LangGraph
            ``interrupt()``); with no ``error`` its status is then ``suspended``, not
            ``completed``.
        """
        if self._ended or self.is_frame:
            return
        self._ended = True
        self.adapter_data = self.target = self.cancelled_by_caller = None  # nor these
        if self._unsettled:  # what the framework never committed keeps the state before it
            self.settle(None)
        self.ctl.end_run(self, output=output, error=error, suspended=suspended)

    def converted(self, exc: BaseException) -> BaseException:
        """The exception the run's caller gets for ``exc``, which leaves the run: ``exc``
        itself, but a :class:`flowdbg.Terminated` for the cancellation with which
        :meth:`flowdbg.Debugger.terminate` stopped an async unit of the run (the task it
        cancelled is uncancelled, so that its ``asyncio.timeout`` and task groups behave as if
        no cancellation had been asked). Adapters that end runs themselves end them with the
        converted exception and raise it ``from exc`` when it is another one; the context
        manager does both."""
        if not isinstance(exc, asyncio.CancelledError) or not self.root.terminated:
            return exc
        if not self.ctl.cancelled_units(self.root):  # a cancellation of the user's own
            return exc
        task = _current_task()
        if task is not None and self.ctl.uncancel(task):
            uncancel = getattr(task, "uncancel", None)  # Python 3.11+
            if uncancel is not None and task.cancelling():
                uncancel()
        return self.termination()

    def __enter__(self) -> RunScope:
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        """Close the run: with the exception leaving the block, or (if the block did not call
        :meth:`end` itself) with no output. A cancellation made by ``terminate()`` leaves the
        block as :class:`flowdbg.Terminated` (see :meth:`converted`)."""
        if exc is None:
            self.end()
            return
        raised = self.converted(exc)
        self.end(error=raised)
        if raised is not exc:
            raise raised from exc

    async def __aenter__(self) -> RunScope:
        return self

    async def __aexit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        self.__exit__(kind, exc, tb)

    def has_suspended_units(self) -> bool:
        """Whether a unit of this run (calls inside its units included) ended ``suspended``."""
        return any(unit.status == "suspended" for unit in self.units)

    def __repr__(self) -> str:
        return f"<RunScope {self.info.framework}:{self.info.name} {self.run_id}>"


class Frame(RunScope):
    """The calls a unit makes within its run (the tool and model calls of a node): units opened
    here get the unit's name appended to their ``path``, so they sit one level deeper for
    stepping, and share the run's id, step counter, units and child runs. A frame is no run of
    its own: :meth:`end` does nothing."""

    __slots__ = ("calls_write_state",)
    is_frame = True

    def __init__(self, unit: Unit) -> None:
        run = unit.run
        super().__init__(run.ctl, run.info, unit)
        self._counter = run._counter
        self._path = (*run._path, unit.node)
        self.units = run.units
        self.children = run.children
        self.values_change_in_place = run.values_change_in_place
        self.present = run.present
        self._unsettled = run._unsettled
        #: whether the calls made here write the run's state themselves (an agent's tools
        #: write the run context the agent shares): each call's record then keeps the state
        #: given at its after (or error) point. By default a call commits nothing, its unit
        #: commits what it returns, and the record of a call has no state (see
        #: :func:`flowdbg.recorder.step_record`).
        self.calls_write_state = False


class Unit:
    """One execution of a unit, reported by an adapter."""

    __slots__ = (
        "_decide",
        "_frame",
        "_task",
        "_token",
        "_watch_seen",
        "attempt",
        "branch",
        "cached",
        "cause",
        "check_edit",
        "child_run_id",
        "decision",
        "ended_at",
        "exception",
        "input",
        "input_edits",
        "kind",
        "node",
        "note",
        "output",
        "run",
        "started_at",
        "state",
        "state_before",
        "status",
        "step",
        "superstep",
    )

    # Set when known (see __init__); declared here for type checkers.
    _decide: Callable[[Any], Any] | None
    #: watch id -> the value a watch matched a change to inside this unit (see
    #: flowdbg.breakpoints); set only when one did
    _watch_seen: dict[str, Any]
    #: the exception the unit ended with; once its top-level run has ended, its
    #: :class:`flowdbg.ErrorInfo` (the history keeps no frames alive)
    exception: BaseException | ErrorInfo | None
    #: set by an adapter when a stop at this unit needs a word of warning (shown as
    #: ``Stop.message``), e.g. that time held there counts against a framework timeout
    note: str

    def __init__(
        self,
        run: RunScope,
        node: str,
        kind: str,
        step: int,
        superstep: int | None,
        branch: str | None,
        attempt: int,
    ) -> None:
        self.run = run
        self.node = node
        self.kind = kind
        self.step = step
        self.superstep = superstep
        self.branch = branch
        self.attempt = attempt
        self.state_before: Any = None
        #: the unit whose output started this one (or the units, a tuple), where the adapter
        #: knows it
        self.cause: Unit | tuple[Unit, ...] | None = None
        #: how an edit at this unit's stops is checked (see :meth:`RunScope.unit`)
        self.check_edit: Callable[[Unit, str, Any], None] | None = run.check_edit
        #: the top-level keys of the input set or deleted at the ``before`` stop, in the order
        #: first edited (see :meth:`before`)
        self.input_edits: tuple[Any, ...] = ()
        self._token: contextvars.Token[Unit | None] | None = None
        self._frame: Frame | None = None
        self.child_run_id: str | None = None
        #: its output was served from a recorded run instead of running it (see :meth:`recorded`)
        self.cached = False
        # What the run log and the recorder keep of the unit. To keep this constructor cheap
        # (it runs for every node) these are set when known: started_at and input in before,
        # output, state and decision in after, status, exception and ended_at when
        # the unit finishes. Read them with record_value().
        self.status = "running"

    @property
    def task(self) -> Any:
        """The asyncio task running the unit, from its async ``before`` point until it ends
        (``None`` otherwise): a call the unit makes in another task (``asyncio.gather``) runs
        beside the unit's own line."""
        try:
            return self._task
        except AttributeError:  # no async before point (yet)
            return None

    @property
    def depth(self) -> int:
        """Nesting depth of the unit (0 in a top-level run)."""
        return len(self.run._path)

    def frame(self) -> Frame:
        """The :class:`Frame` for units nested inside this one within the same run (the tool
        and model calls a node makes)."""
        frame = self._frame
        if frame is None:
            frame = self._frame = Frame(self)
        return frame

    def location(self, position: str) -> Location:
        """The unit's :class:`Location` at ``position``."""
        info = self.run.info
        return Location(
            framework=info.framework,
            run_id=info.run_id,
            parent_run_id=info.parent_run_id,
            path=self.run._path,
            node=self.node,
            kind=self.kind,
            position=position,
            step=self.step,
            superstep=self.superstep,
            branch=self.branch,
            attempt=self.attempt,
        )

    def lineage(self) -> tuple[tuple[str, int, str | None, int | None], ...]:
        """(run id, step, branch, superstep) of every enclosing unit and this one, root first."""
        chain = []
        unit: Unit | None = self
        while unit is not None:
            chain.append((unit.run.info.run_id, unit.step, unit.branch, unit.superstep))
            unit = unit.run.parent_unit
        return tuple(reversed(chain))

    # -- sync points --

    def before(
        self,
        *,
        state: Any = None,
        input: Any = _SAME,
        resolve: Callable[[], Any] | None = None,
    ) -> Any:
        """Report the ``before`` point; may block. Returns the input to use (maybe edited).

        An edit made at the stop here is applied to a copy of ``input``, which is returned;
        :attr:`input_edits` then names the top-level keys set or deleted. Where the input is
        the run's state (or a part of it), the adapter keeps those keys in the run's state once
        the unit has run (the unit's own writes of a key coming after the edit), or refuses
        the edit in its ``check_edit`` (called with ``input_edits`` already naming the key
        being edited): an edit the unit sees but the run then forgets is never acceptable.

        :param state: the framework state as the unit sees it.
        :param input: what the unit receives; defaults to ``state``.
        :param resolve: instead of ``state``: ``resolve()`` returns it, called at most once,
            during this point, only when someone looks (a stop, a condition naming the state,
            a watch on this unit, an observer). Give ``input`` with it.
        :raises flowdbg.Terminated: when the debugger terminates the run.
        """
        if input is _SAME:
            input = state
        self.state_before = state
        ctl = self.run.ctl
        if not ctl.quiet:
            self.started_at = _now()
            found = None if resolve is None or state is not None else _at_before(resolve)
            try:
                input = ctl.point(self, _BEFORE, state, input, None, None, None, found)
            except BaseException as exc:
                self._finish("failed", exc)
                raise
        self.started_at = _now()  # time held at a before stop is not the unit's
        self.input = input
        # (on_unit_start first: it is None unless something records, the fast path's case)
        if ctl.on_unit_start is not None and self.run.values_change_in_place:
            ctl.on_unit_start(self)  # the input as received, before the unit changes it
        self._token = _CURRENT_UNIT.set(self)
        ctl.running.add(self)
        return input

    def after(
        self,
        *,
        output: Any = None,
        state: Any = None,
        decision: Any = None,
        resolve: Callable[[Any], tuple[Any, Any]] | None = None,
        deferred: bool = False,
        decide: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Report the ``after`` point; may block. Returns the output to commit (maybe edited).

        :param output: what the unit returns (the update it commits, a tool result).
        :param state: the state with the output applied, where the framework can show it.
        :param decision: the routing result (next nodes), where known.
        :param resolve: instead of ``state`` (and ``decision``): ``resolve(output)`` returns
            both. It is called at most once, during this point, on this thread, and only when
            someone looks (a stop, a condition or watch reading the state, an observer), so a
            run nobody stops costs nothing and runs no framework or user code a second time.
        :param deferred: the framework commits the unit's writes later (at the end of its
            superstep): the state after the unit is the state given to :meth:`RunScope.settle`
            (the unit is recorded then), even where a stop previewed one (a parallel branch's
            own update applied: the superstep commits its siblings' too).
        :param decide: instead of ``decision``: ``decide(output)`` gives it when the unit's
            record is built (later, maybe on another thread); it must only read what the
            framework computed (a route it cached), never run the framework's or user code.
        :raises flowdbg.Terminated: when the debugger terminates the run.
        """
        run = self.run
        ctl = run.ctl
        token = self._token  # self._exit(), inlined: this runs for every unit
        if token is not None:
            self._token = None
            ctl.running.discard(self)
            _leave(self, token)
        ended = _now()  # time held at an after stop is not the unit's
        if not ctl.quiet:
            self.state = state
            self.decision = decision
            try:
                edited = ctl.point(
                    self,
                    _AFTER,
                    state,
                    getattr(self, "input", None),
                    output,
                    None,
                    decision,
                    resolve,
                )
            except BaseException as exc:
                self._finish("failed", exc)
                raise
            state, decision = self.state, self.decision  # resolved there if someone looked
            if edited is not output:
                if resolve is not None:  # resolved from the output the edit replaced
                    state = decision = None
                output = edited
        # Every outcome is stored, None included: reading an unset slot (record_value) raises
        # and catches an AttributeError, which costs the recorder far more than these stores.
        self.output = output
        self.state = state
        self.decision = decision
        if decide is not None:
            self._decide = decide
        self.status = "completed"
        self.exception = None
        self.ended_at = ended
        run.units.append(self)  # list.append is atomic: parallel branches may finish at once
        if deferred:  # the state the framework commits replaces one a point previewed
            run._unsettled.append(self)
        elif ctl.on_step is not None:
            ctl.on_step(self)
        return output

    def error(self, exc: BaseException, *, state: Any = None) -> None:
        """Report the ``error`` point; may block. The adapter re-raises ``exc`` afterwards.

        :raises flowdbg.Terminated: when the debugger terminates the run.
        """
        self._exit()
        ended = _now()
        self.state = state
        ctl = self.run.ctl
        if not ctl.quiet:
            try:
                ctl.point(self, _ERROR, state, self.record_value("input"), None, exc, None)
            except BaseException as other:
                self._finish("failed", other, ended)
                raise
        self._finish("failed", exc, ended)

    # -- async points: suspend only the calling task --

    async def abefore(
        self,
        *,
        state: Any = None,
        input: Any = _SAME,
        resolve: Callable[[], Any] | None = None,
    ) -> Any:
        """Async form of :meth:`before`: suspends only the calling task. ``resolve`` may be
        async (a framework whose state lives behind ``await``); it is then awaited whenever a
        stop could open or something could read the state here."""
        if input is _SAME:
            input = state
        self.state_before = state
        ctl = self.run.ctl
        if not ctl.quiet:
            self.started_at = _now()
            found = None if resolve is None or state is not None else _at_before(resolve)
            try:
                input = await ctl.apoint(self, _BEFORE, state, input, None, None, None, found)
            except BaseException as exc:
                self._finish("failed", exc)
                raise
        self.started_at = _now()
        self.input = input
        if ctl.on_unit_start is not None and self.run.values_change_in_place:
            ctl.on_unit_start(self)
        self._token = _CURRENT_UNIT.set(self)
        self._task = _current_task()  # what terminate() cancels while the unit runs
        ctl.running.add(self)
        return input

    async def aafter(
        self,
        *,
        output: Any = None,
        state: Any = None,
        decision: Any = None,
        resolve: Callable[[Any], tuple[Any, Any]] | None = None,
        deferred: bool = False,
        decide: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Async form of :meth:`after`."""
        run = self.run
        ctl = run.ctl
        token = self._token  # self._exit(), inlined: this runs for every unit
        if token is not None:
            self._token = None
            self._task = None
            ctl.running.discard(self)
            _leave(self, token)
        ended = _now()
        if not ctl.quiet:
            self.state = state
            self.decision = decision
            try:
                edited = await ctl.apoint(
                    self,
                    _AFTER,
                    state,
                    getattr(self, "input", None),
                    output,
                    None,
                    decision,
                    resolve,
                )
            except BaseException as exc:
                self._finish("failed", exc)
                raise
            state, decision = self.state, self.decision
            if edited is not output:
                if resolve is not None:
                    state = decision = None
                output = edited
        self.output = output
        self.state = state
        self.decision = decision
        if decide is not None:
            self._decide = decide
        self.status = "completed"
        self.exception = None
        self.ended_at = ended
        run.units.append(self)
        if deferred:
            run._unsettled.append(self)
        elif ctl.on_step is not None:
            ctl.on_step(self)
        return output

    async def aerror(self, exc: BaseException, *, state: Any = None) -> None:
        """Async form of :meth:`error`."""
        self._exit()
        ended = _now()
        self.state = state
        ctl = self.run.ctl
        if not ctl.quiet:
            try:
                await ctl.apoint(self, _ERROR, state, self.record_value("input"), None, exc, None)
            except BaseException as other:
                self._finish("failed", other, ended)
                raise
        self._finish("failed", exc, ended)

    # -- the whole unit around one call --

    def call(
        self,
        fn: Callable[[Any], Any],
        input: Any,
        *,
        state: Any = None,
        suspend_on: tuple[type[BaseException], ...] = (),
        decide: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Run ``fn(input)`` as this unit: the before point (where ``input`` may be edited),
        the call, then the error point (the exception goes on unchanged) or the after point
        (where the result may be edited). For the calls a unit makes (a tool, a model), whose
        state is the state its unit started from.

        :param fn: the call, given the (maybe edited) input.
        :param input: what the call receives.
        :param state: the state shown at the unit's points.
        :param suspend_on: exceptions that are the framework's control flow pausing the call
            to run it again later (not errors): the unit leaves ``suspended``.
        :param decide: ``decide(result)`` gives the after point's decision (a handoff's target).
        :returns: the call's result, maybe edited at the after stop.
        """
        input = self.before(state=state, input=input)
        try:
            served, output = self.recorded(input)
            if not served:
                output = fn(input)
        except suspend_on as exc:
            self.discard(exc, status="suspended")
            raise
        except Exception as exc:
            self.error(exc, state=state)
            raise
        except BaseException as exc:  # flowdbg.Terminated, cancellation
            self.discard(exc)
            raise
        return self.after(output=output, state=state, decision=_decided(decide, output))

    async def acall(
        self,
        fn: Callable[[Any], Any],
        input: Any,
        *,
        state: Any = None,
        suspend_on: tuple[type[BaseException], ...] = (),
        decide: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Async form of :meth:`call`: ``fn(input)`` is awaited when it returns an awaitable."""
        input = await self.abefore(state=state, input=input)
        try:
            served, output = self.recorded(input)
            if not served:
                output = fn(input)
                if inspect.isawaitable(output):
                    output = await output
        except suspend_on as exc:
            self.discard(exc, status="suspended")
            raise
        except Exception as exc:
            await self.aerror(exc, state=state)
            raise
        except BaseException as exc:
            raised = self.discard(exc)  # terminate() cancelled it: Terminated
            if raised is exc or raised is None:
                raise
            raise raised from exc
        return await self.aafter(output=output, state=state, decision=_decided(decide, output))

    def recorded(self, input: Any, *, serve: bool = True) -> tuple[bool, Any]:
        """Whether to serve this call from the record instead of running it: in a rerun with
        recorded calls (:meth:`flowdbg.Debugger.rerun`), a model or tool call whose name and
        input match the call at the same position of its branch in the recorded run.

        An adapter declaring :attr:`flowdbg.Capability.CACHED_CALLS` calls it after the before
        point, with the input the call is about to get (edits at the stop included); on
        ``(True, output)`` it does not run the call and reports ``output`` at the after point
        as if the call had returned it. :meth:`call` and :meth:`acall` do this by themselves.

        A call the adapter only observes (it cannot keep it from running) asks with
        ``serve=False``, so that it takes its position in its branch (and a difference there
        makes the branch live) while it runs. A unit's first question is the one that counts.

        :returns: ``(True, the recorded output)`` (the unit is marked :attr:`cached`), or
            ``(False, None)``: run the call.
        :raises flowdbg.timetravel.Diverged: in a rerun ``until_divergence``, at the first call
            that differs from the record.
        """
        calls = self.run.root.calls
        if calls is None or self.kind not in _CALL_KINDS:
            return False, None
        served, output = calls.serve(self, input, servable=serve)
        if served:
            self.cached = True
        return served, output

    def served_state(self) -> Any:
        """After :meth:`recorded` served this call: the state the record keeps after it, where
        the call writes the run's state itself (:attr:`Frame.calls_write_state`: an agent's
        tool writing the run context). An adapter can make those writes again, which the
        served call did not make. ``None`` otherwise."""
        calls = self.run.root.calls
        if calls is None or not self.cached:
            return None
        return calls.served_state(self)

    def _finish(self, status: str, exc: BaseException | None, ended: float | None = None) -> None:
        if status == "failed" and isinstance(exc, asyncio.CancelledError):
            exc = self._terminated(exc)
        if status == "failed" and isinstance(exc, Terminated):
            status = "terminated"  # the debugger ended the run here: not an error of the unit
        self.status = status
        self.exception = exc
        self.ended_at = _now() if ended is None else ended
        if exc is not None:
            failed = self.run.root._failed
            if failed is not None:
                failed.append(self)
        self.run._finished(self)

    def _terminated(self, exc: asyncio.CancelledError) -> BaseException:
        """A :class:`flowdbg.Terminated` for the cancellation with which terminate() stopped
        the task this unit runs in, else ``exc``. A call a unit makes (a tool, a model) runs in
        the unit's task: held at a stop there when the run is terminated, it sees the
        cancellation of the enclosing unit's task before the stop hands it its Terminated.
        A cancellation by the run's caller gives what :meth:`RunScope.stopped_by_caller`
        says."""
        root = self.run.root
        if not root.terminated or not self.run.ctl.cancelled_units(root):
            stopped = self.run.stopped_by_caller(exc)
            return exc if stopped is None else stopped
        terminated = root.termination()
        terminated.__cause__ = exc
        return terminated

    def look(
        self, position: str, output: Any, resolve: Callable[[Any], tuple[Any, Any]]
    ) -> tuple[Any, Any]:
        """``(state, decision)`` at a point, from ``resolve(output)`` (internal: the controller
        calls it when a stop, a condition or an observer needs them)."""
        try:
            state, decision = resolve(output)
        except Exception:  # the framework reports a bad update itself
            state, decision = None, None
        return self.looked(position, state, decision)

    def looked(self, position: str, state: Any, decision: Any) -> tuple[Any, Any]:
        """Keep what a point resolved: the state before the unit, or after it."""
        if position == _BEFORE:
            self.state_before = state
            return state, None
        self.state = state
        if decision is not None:
            self.decision = decision
        return self.state, self.decision

    def resolved(self) -> tuple[Any, Any]:
        """``(state, decision)`` after the unit, as far as they are known."""
        decision = getattr(self, "decision", None)
        if decision is None:
            decide = getattr(self, "_decide", None)
            if decide is not None:
                self._decide = None
                try:
                    decision = self.decision = decide(self.output)
                except Exception:  # the framework rejected the output itself
                    decision = None
        return getattr(self, "state", None), decision

    def record(self) -> StepRecord:
        """The :class:`flowdbg.StepRecord` of this unit as it is now (built on each call: an
        observer of ``flowdbg_on_step`` that wants it off the run's thread keeps the unit and
        builds the record later, as the built-in recorder does)."""
        from flowdbg.recorder import step_record

        return step_record(self)

    def record_value(self, name: str) -> Any:
        """An outcome attribute (``input``, ``output``, ``exception``, ``started_at``...) or
        ``None`` when the unit has not got that far."""
        return getattr(self, name, None)

    def discard(
        self, exc: BaseException | None = None, *, status: str = "failed"
    ) -> BaseException | None:
        """Leave the unit without an ``after`` or ``error`` point (a control-flow exception such
        as :class:`flowdbg.Terminated` or a cancellation went through it).

        :param status: ``"failed"`` (``"terminated"`` when ``exc`` is
            :class:`flowdbg.Terminated`), or ``"suspended"`` when the framework's own control
            flow paused the unit to run it again later (a LangGraph ``interrupt()``).
        :returns: the exception to raise on: ``exc``, or a :class:`flowdbg.Terminated` for the
            cancellation with which :meth:`flowdbg.Debugger.terminate` stopped this async unit
            (see :meth:`RunScope.converted`; raise it ``from exc``).
        """
        self._exit()
        raised = exc if exc is None else self.run.converted(exc)
        if self.status == "running":
            self._finish(status, raised)
        return raised

    def _exit(self) -> None:
        token = self._token
        if token is not None:
            self._token = None
            self._task = None  # a finished unit keeps no task (nor its frames) alive
            self.run.ctl.running.discard(self)
            _leave(self, token)

    def __repr__(self) -> str:
        return f"<Unit {self.kind} {self.node!r} step {self.step} of {self.run.run_id}>"


#: value types no adapter's ``present`` converts
_PLAIN = frozenset({dict, str, int, float, bool})


def _decided(decide: Callable[[Any], Any] | None, output: Any) -> Any:
    """``decide(output)``, or ``None`` when there is none or it fails (a decision is shown,
    never a reason for the unit to fail)."""
    if decide is None:
        return None
    try:
        return decide(output)
    except Exception:
        return None


def _at_before(resolve: Callable[[], Any]) -> Callable[[Any], tuple[Any, Any]]:
    """A before point's ``resolve()`` in the shape of an after point's: ``(state, None)``."""
    return lambda _output: (resolve(), None)


def _leave(unit: Unit, token: contextvars.Token[Any]) -> None:
    """Make the unit that enclosed ``unit`` current again as ``unit`` ends: ``token`` reset in
    the context ``unit``'s before point ran in; in another one (a framework running a unit's
    end in a task of its own: the OpenAI Agents SDK gathers its hooks), the enclosing unit is
    restored by value without trying ``reset``, whose ``ValueError`` would cost more than the
    rest of the unit's end (it is raised for every agent unit of an OpenAI run)."""
    if _CURRENT_UNIT.get() is unit:
        try:
            _CURRENT_UNIT.reset(token)
            return
        except ValueError:  # current in another context too
            pass
    _restore(token)


def _restore(token: contextvars.Token[Any]) -> None:
    """Leave a unit from another context than the one its before point ran in: restore the
    enclosing unit by value (``ContextVar.reset`` refuses a token from another context)."""
    old = token.old_value
    _CURRENT_UNIT.set(None if old is contextvars.Token.MISSING else old)


_ids: random.Random | None = None
_ids_lock = threading.Lock()


def _reseed_ids() -> None:
    if _ids is not None:
        _ids.seed()  # a forked child must not repeat its parent's ids


def _make_ids() -> random.Random:
    global _ids
    with _ids_lock:
        if _ids is None:
            _ids = random.Random()
            os.register_at_fork(after_in_child=_reseed_ids)
        return _ids


def new_run_info(framework: str, name: str, parent: Unit | None, input: Any) -> RunInfo:
    """Build the :class:`RunInfo` of a new run (internal).

    Run ids are 128 random bits as 32 hex digits, from a private generator seeded from
    ``os.urandom`` (a third of the cost of ``os.urandom`` per run, and unaffected by
    ``random.seed`` in the debugged program).
    """
    run_id = (_ids or _make_ids()).getrandbits(128).to_bytes(16, "little").hex()
    if parent is None:  # positional: half the cost of keywords, and this runs for every run
        # run_id, framework, name, parent_run_id, root_run_id, path, status, started_at,
        # ended_at, input
        return RunInfo(run_id, framework, name, None, run_id, (), _RUNNING, _now(), None, input)
    pinfo = parent.run.info
    return RunInfo(
        run_id=run_id,
        framework=framework,
        name=name,
        parent_run_id=pinfo.run_id,
        root_run_id=pinfo.root_run_id,
        path=(*parent.run.path, parent.node),
        status=RunStatus.RUNNING,
        input=input,
        parent_step=parent.step,
    )
