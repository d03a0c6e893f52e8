"""The execution controller: decides where branches stop, holds them, and lets them go on.

Thread-safe and async-safe. A stop holds only its own branch: a sync branch waits on a
``threading.Event`` in its own thread, an async branch awaits in its own task (the event loop
keeps running). Several stops can be open at once; one of them is *selected* and is what
``inspect``/``set``/``diff``/``resume`` act on by default.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import inspect
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from flowdbg._sync import AsyncWaker
from flowdbg.breakpoints import Breakpoint, BreakpointType, _Compiled
from flowdbg.errors import NotStoppedError, StopNotFound, Terminated
from flowdbg.events import ErrorInfo, Event, Position, RunStatus
from flowdbg.runtime import _RUN_HANDLE, RunScope, Unit, _note_run_started, new_run_info
from flowdbg.stops import Action, Stop, StopReason

if TYPE_CHECKING:
    from flowdbg.plugins import Hooks

__all__ = ["Controller"]

log = logging.getLogger("flowdbg")
logpoint_log = logging.getLogger("flowdbg.logpoint")

_BEFORE = Position.BEFORE.value
#: event-loop turns wait_for_stop_async gives a just-started task to open its run
_START_GRACE = 3
_AFTER = Position.AFTER.value

# When several reasons apply at one point, the strongest is reported.
_STRENGTH = {
    StopReason.EXCEPTION: 6,
    StopReason.WATCH: 5,
    StopReason.BREAKPOINT: 4,
    StopReason.STEP: 3,
    StopReason.PAUSE: 2,
    StopReason.ENTRY: 1,
}


@dataclass(frozen=True)
class StepRequest:
    """A pending step of one branch: where it started and how far it may go."""

    action: Action
    lineage: tuple[tuple[str, int, str | None, int | None], ...]

    @property
    def depth(self) -> int:
        return len(self.lineage) - 1

    def matches(self, unit: Unit) -> bool:
        cand = unit.lineage()
        depth = len(cand) - 1
        if self.action == Action.STEP_OVER and depth > self.depth:
            return False
        if self.action == Action.STEP_OUT and depth >= self.depth:
            return False
        return _same_branch(self.lineage, cand, unit)


#: how far back stepping follows a unit's causes (an agent loop's turns chain back to its first)
_CAUSES_MAX = 10_000


def _caused_by(unit: Unit | None, run_id: str, step: int) -> bool:
    """Whether the unit ``step`` of run ``run_id`` is among the causes of ``unit``. A unit's
    ``cause`` is one unit or a tuple of them (a model turn receiving the results of parallel
    tool calls): every line back is followed, a unit met on two of them once."""
    todo: list[Unit | tuple[Unit, ...] | None] = [unit]
    seen: set[int] = set()
    for _ in range(_CAUSES_MAX):
        if not todo:
            return False
        cause = todo.pop()
        if isinstance(cause, tuple):
            for each in cause:
                if id(each) not in seen:
                    seen.add(id(each))
                    todo.append(each)
        elif cause is not None:
            if cause.run.info.run_id == run_id:
                if cause.step == step:
                    return True
                if cause.step < step:  # causes come earlier: the origin is not further back
                    continue
            todo.append(cause.cause)
    return False


def _same_branch(
    origin: tuple[tuple[str, int, str | None, int | None], ...],
    cand: tuple[tuple[str, int, str | None, int | None], ...],
    unit: Unit | None = None,
) -> bool:
    """Whether ``cand`` (the lineage of ``unit``) continues the branch of ``origin``.

    Walk both chains from the root. Where they first reach different units of the same run, the
    candidate is on the branch if it runs in the same branch (task), if the origin's unit is
    among its causes (the unit whose output started it, and so on back), or, for frameworks
    with supersteps, if it runs in a later superstep (the branch's successors after a join).
    A unit inside the origin (or enclosing it) is on it.
    """
    for level, (o, c) in enumerate(zip(origin, cand, strict=False)):
        if o[0] != c[0]:
            return True  # two runs started by the same unit: one line of execution
        if o[1] == c[1]:
            continue
        if o[2] == c[2]:
            return True
        if unit is not None and _caused_by(_enclosing(unit, len(cand) - 1 - level), o[0], o[1]):
            return True
        return o[3] is not None and c[3] is not None and c[3] > o[3]
    return True


def _enclosing(unit: Unit, up: int) -> Unit | None:
    """The unit ``up`` levels above ``unit`` (0: itself)."""
    found: Unit | None = unit
    for _ in range(up):
        if found is None:
            return None
        found = found.run.parent_unit
    return found


def _let_go_of_errors(root: RunScope) -> None:
    """Keep what the history of an ended run shows of its exceptions (type, message, formatted
    traceback), not the exceptions: their tracebacks hold the frames of the framework's run
    loop, and through them everything the run touched."""
    failed = root._failed
    if failed:
        for unit in failed:
            exc = unit.exception
            if isinstance(exc, BaseException):
                unit.exception = ErrorInfo.from_exception(exc)
        failed.clear()
    scopes = [root]
    while scopes:
        scope = scopes.pop()
        error = scope.info.error
        if isinstance(error, BaseException):
            # a copy: observers told of the run's end keep the RunInfo they got, exception and all
            scope.info = dataclasses.replace(scope.info, error=ErrorInfo.from_exception(error))
            for unit in scope.units:  # the frames of its units show the run's info too
                frame = unit._frame
                if frame is not None:
                    frame.info = scope.info
        scopes.extend(scope.children)


class IdTaken(ValueError):
    """A breakpoint's id is already in use (see :meth:`Controller.add_breakpoint`)."""


def _asyncio_task() -> Any:
    """The asyncio task running now, or ``None`` (no asyncio loop: trio, or a thread)."""
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


class Controller:
    """Breakpoint matching, stops, stepping, pause and terminate for one debugger."""

    def __init__(
        self,
        hooks: Hooks,
        *,
        stop_on_entry: bool = False,
        idle_timeout: float | None = None,
        keep: int = 20,
    ) -> None:
        #: the plugins' hooks: the controller tells them of runs, points, stops and steps
        self.hooks = hooks
        self.stop_on_entry = stop_on_entry
        self.idle_timeout = idle_timeout
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._bps: list[Breakpoint] = []  # copy-on-write: readers iterate without the lock
        self._matchers: list[_Compiled] = []
        self._bp_next = 1  # the number of the next breakpoint id (bp-1, bp-2, ...)
        self._stop_ids = itertools.count(1)
        self._stops: dict[str, Stop] = {}
        self._selected: str | None = None
        self._steps: dict[str, list[StepRequest]] = {}
        self._pause = False
        self._roots: dict[str, RunScope] = {}
        self._pending_workers = 0
        self._finished_any = False
        self._last_end_terminated = False
        self._async_waiters: list[Callable[[], None]] = []
        #: units between their before point and their after or error point (not held there)
        self.running: set[Unit] = set()
        #: asyncio tasks terminate() cancelled, with the top-level run of the unit each ran
        self._cancelled: dict[Any, RunScope] = {}
        #: asyncio tasks waiting at a stop now (a call a running unit makes), with how many
        self._holding: dict[Any, int] = {}
        self._sync_waiters = 0  # threads in _wait(): _notify() is skipped when there are none
        self._warned: set[str] = set()
        self.observe_events = False
        #: ``on_step(unit)`` for every finished unit (the recorder and other observers of
        #: ``flowdbg_on_step``), or ``None``: kept in step with the hooks' implementations
        self.on_step: Callable[[Unit], None] | None = None
        #: ``on_unit_start(unit)`` for units of runs whose values change in place that passed
        #: their before point (observers of ``flowdbg_on_unit_start``), or ``None``
        self.on_unit_start: Callable[[Unit], None] | None = None
        #: the last finished top-level runs, newest last (their run logs are kept in memory)
        self.history: collections.deque[RunScope] = collections.deque(maxlen=keep)
        #: True when nothing can stop, log or observe: every point returns at once.
        self.quiet = True
        hooks.listen(self._hooks_changed)
        self._hooks_changed()

    def _hooks_changed(self) -> None:
        with self._lock:
            self.on_step = self.hooks.on_step
            self.on_unit_start = self.hooks.on_unit_start
            self.observe_events = self.hooks.has_event
            self._refresh()

    # ------------------------------------------------------------------ state

    def _refresh(self) -> None:
        """Recompute the fast-path flags (call with the lock held or before sharing)."""
        self._matchers = [b.compiled for b in self._bps]
        self.quiet = not (
            self._bps
            or self._steps
            or self._pause
            or self.stop_on_entry
            or self.observe_events
            or any(r.terminated for r in self._roots.values())
        )

    def _notify(self) -> None:
        """Wake every waiter (lock held)."""
        if self._sync_waiters:
            self._cond.notify_all()
        waiters, self._async_waiters = self._async_waiters, []
        for wake in waiters:
            wake()

    # ------------------------------------------------------------ breakpoints

    def next_breakpoint_id(self) -> str:
        """The id the next breakpoint gets; taken only when a breakpoint with it is added (a
        breakpoint refused for a malformed expression uses up no id)."""
        with self._lock:
            return f"bp-{self._bp_next}"

    def add_breakpoint(self, bp: Breakpoint) -> Breakpoint:
        """Add ``bp``.

        :raises IdTaken: when its id is in use (another thread added a breakpoint with the
            same next id first: take :meth:`next_breakpoint_id` again).
        """
        with self._lock:
            if any(b.id == bp.id for b in self._bps):
                raise IdTaken(f"breakpoint id {bp.id!r} is already in use")
            prefix, _, number = bp.id.partition("-")
            if prefix == "bp" and number.isdigit():  # new ids never repeat one in use
                self._bp_next = max(self._bp_next, int(number) + 1)
            self._bps = [*self._bps, bp]
            self._refresh()
        return bp

    def remove_breakpoint(self, bp_id: str) -> Breakpoint | None:
        with self._lock:
            for bp in self._bps:
                if bp.id == bp_id:
                    self._bps = [b for b in self._bps if b.id != bp_id]
                    self._refresh()
                    return bp
        return None

    def clear_breakpoints(self) -> None:
        with self._lock:
            self._bps = []
            self._refresh()

    @property
    def breakpoints(self) -> list[Breakpoint]:
        return list(self._bps)

    # ------------------------------------------------------------------- runs

    def begin_run(
        self,
        *,
        framework: str,
        name: str,
        input: Any,
        parent: Unit | None,
        target: Any = None,
        lineage: Callable[[Any], tuple[str | None, Any, Any, Any, Any]] | None = None,
    ) -> RunScope:
        if parent is not None and parent.run.ctl is not self:
            parent = None  # a unit of another debugger: this run is top-level here
        info = new_run_info(framework, name, parent, input)
        scope = RunScope(self, info, parent)
        scope.target = target
        if parent is None:
            if lineage is not None:  # the target's reference and where the run came from
                info.target, made_from, start, scope.calls, info.config = lineage(target)
                if made_from is not None:
                    info.origin, info.forked_from, info.fork_step = made_from
                if start is not None:  # a fork: its input is the state it starts from
                    (info.input,) = start
            with self._lock:
                self._roots[info.run_id] = scope
            if _RUN_HANDLE.get() is not None:  # in a Debugger.start() worker
                _note_run_started(info.run_id)
        else:
            scope.terminated = parent.run.root.terminated
            parent.run.children.append(scope)
            parent.child_run_id = info.run_id
        hooks = self.hooks
        if hooks.has_run_start:
            hooks.on_run_start(run=info)
        return scope

    def end_run(
        self,
        scope: RunScope,
        *,
        output: Any,
        error: BaseException | None,
        suspended: bool = False,
    ) -> None:
        info = scope.info
        info.ended_at = time.time()
        info.output = output
        info.error = error
        if error is None:
            info.status = RunStatus.SUSPENDED if suspended else RunStatus.COMPLETED
        elif isinstance(error, Terminated) or scope.root.terminated:
            info.status = RunStatus.TERMINATED
        else:
            info.status = RunStatus.FAILED
        if scope.parent_unit is None:
            if self.history.maxlen:
                scope._keep()
            with self._lock:
                history = self.history
                if not history.maxlen:  # nothing kept: freed now
                    scope._release()
                else:
                    if len(history) == history.maxlen:
                        history.popleft()._release()  # freed now, not in a garbage collection
                    history.append(scope)
                self._roots.pop(info.run_id, None)
                if self.running:  # units an adapter never closed do not outlive their run
                    self.running.difference_update(
                        [unit for unit in list(self.running) if unit.run.root is scope]
                    )
                if self._cancelled:  # nor the tasks terminate() cancelled
                    for task, root in list(self._cancelled.items()):
                        if root is scope:
                            del self._cancelled[task]
                stepping = self._steps.pop(info.run_id, None) if self._steps else None
                self._finished_any = True
                self._last_end_terminated = info.status is RunStatus.TERMINATED
                if not self._roots:
                    self._pause = False
                if stepping or scope.terminated or not self.quiet:
                    self._refresh()  # skipped on the fast path: nothing it computes changed
                if self._sync_waiters or self._async_waiters:
                    self._notify()
        hooks = self.hooks
        if hooks.has_run_end:
            hooks.on_run_end(run=info)
        if scope.parent_unit is None and (scope._failed or scope.children or error is not None):
            _let_go_of_errors(scope)

    def worker_started(self) -> None:
        with self._lock:
            self._pending_workers += 1

    def worker_finished(self) -> None:
        with self._lock:
            self._pending_workers -= 1
            self._finished_any = True
            self._notify()

    @property
    def active_runs(self) -> list[RunScope]:
        with self._lock:
            return list(self._roots.values())

    # ------------------------------------------------------------------ points

    def point(
        self,
        unit: Unit,
        position: str,
        state: Any,
        input: Any,
        output: Any,
        error: BaseException | None,
        decision: Any,
        resolve: Callable[[Any], tuple[Any, Any]] | None = None,
    ) -> Any:
        """A point reached by a sync branch: returns the (maybe edited) payload.

        ``resolve(output)`` gives ``(state, decision)`` of an after point when ``state`` is not
        given; it is called only when a stop, a condition or an observer needs them."""
        stop = self._check(unit, position, state, input, output, error, decision, resolve)
        if stop is None:
            return input if position == _BEFORE else output
        if not stop._published:  # its state is resolved outside the lock: framework code
            assert resolve is not None
            stop.state, stop.decision = unit.look(position, output, resolve)
            self._publish(stop)
        while not stop._event.wait(self.idle_timeout):
            self._idle_resume(stop)
        action = stop._action
        return self._go_on(stop, action)

    async def apoint(
        self,
        unit: Unit,
        position: str,
        state: Any,
        input: Any,
        output: Any,
        error: BaseException | None,
        decision: Any,
        resolve: Callable[[Any], tuple[Any, Any]] | None = None,
    ) -> Any:
        """A point reached by an async branch: suspends only the calling task. ``resolve`` may
        be async here (a state behind ``await``): it is awaited where a condition, a watch or
        an observer reads the state, and for a stop before the stop is shown."""
        if resolve is not None and state is None and self._reads_state(unit, position):
            state, decision = await self._alook(unit, position, output, decision, resolve)
            resolve = None
        stop = self._check(unit, position, state, input, output, error, decision, resolve)
        if stop is not None and resolve is not None and not stop._published:
            stop.state, stop.decision = await self._alook(unit, position, output, decision, resolve)
            self._publish(stop)
        if stop is None:
            return input if position == _BEFORE else output
        holding = _asyncio_task()
        if holding is not None:  # terminate() lets the stop end this task's wait (see _cancel)
            self._holding[holding] = self._holding.get(holding, 0) + 1
        try:
            while not stop._event.is_set():
                waker = AsyncWaker()
                with stop._lock:
                    if stop._event.is_set():
                        break
                    stop._wakers.append(waker.wake)
                if not await waker.wait(self.idle_timeout):
                    self._idle_resume(stop)
        except anyio.get_cancelled_exc_class():
            self._abandon(stop)
            raise
        finally:
            if holding is not None:
                left = self._holding.pop(holding, 1) - 1
                if left:
                    self._holding[holding] = left
        return self._go_on(stop, stop._action)

    def _check(
        self,
        unit: Unit,
        position: str,
        state: Any,
        input: Any,
        output: Any,
        error: BaseException | None,
        decision: Any,
        resolve: Callable[[Any], tuple[Any, Any]] | None = None,
    ) -> Stop | None:
        """Emit the event and decide whether it stops; open the stop if so. With a state still
        to resolve, the stop is returned unopened: its point resolves the state outside the
        lock (awaiting it, at an async point), then calls :meth:`_publish`."""
        root = unit.run.root
        if root.terminated:
            raise root.termination()
        if root.released:  # its target was detached: it goes on undebugged
            return None
        if resolve is not None:
            if state is not None:
                resolve = None
            elif position == _BEFORE and self._watched(unit):
                # a watch compares the state after the unit with the state before it
                state, decision = unit.look(position, output, resolve)
                resolve = None
        event: Event | None = None
        if self.observe_events:
            if resolve is not None:
                state, decision = unit.look(position, output, resolve)
                resolve = None
            event = Event(unit.location(position), state, input, output, error, decision)
            self.hooks.on_event(event=event)

        reason: StopReason | None = None
        hit_ids: list[str] = []
        reasons: dict[str, StopReason] | None = None
        watches: dict[str, str] | None = None
        hits: dict[str, int] = {}
        temporary: list[str] = []
        kind, node = unit.kind, unit.node
        for c in self._matchers:
            bp = c.bp
            if not bp.enabled or not c.may_match(position, kind, node):
                continue
            if resolve is not None and c.needs_resolve:
                state, decision = unit.look(position, output, resolve)
                resolve = event = None
            if event is None:
                event = Event(unit.location(position), state, input, output, error, decision)
            try:
                ok, value = c.matches_payload(event, unit)
            except Exception as exc:
                self._condition_failed(bp, event, exc)
                continue
            if not ok:
                continue
            with self._lock:
                bp.hits += 1
                n = bp.hits
            if not c.hit_allows(n):
                continue
            if bp.type == BreakpointType.LOGPOINT:
                self._log(bp, event, value)
                continue
            hit_ids.append(bp.id)
            hits[bp.id] = n
            if bp.type == BreakpointType.EXCEPTION:
                r = StopReason.EXCEPTION
            elif bp.type == BreakpointType.WATCH:
                r = StopReason.WATCH
                if watches is None:
                    watches = {}
                watches[bp.id] = bp.watch_path or ""
            else:
                r = StopReason.BREAKPOINT
            if reasons is None:
                reasons = {}
            reasons[bp.id] = r
            if reason is None or _STRENGTH[r] > _STRENGTH[reason]:
                reason = r
            if bp.temporary:
                temporary.append(bp.id)

        if (
            reason is None
            and not self._pause
            and not (self._steps and position != _AFTER)
            and not (self.stop_on_entry and not root.entered)
        ):
            return None
        with self._lock:
            if temporary:
                # Matching runs outside the lock: a parallel branch may have taken a temporary
                # breakpoint first (and removed it). It stops only one of them.
                live = {b.id for b in self._bps}
                gone = [bp_id for bp_id in temporary if bp_id not in live]
                if gone:
                    temporary = [bp_id for bp_id in temporary if bp_id in live]
                    hit_ids = [bp_id for bp_id in hit_ids if bp_id not in gone]
                    for bp_id in gone:
                        hits.pop(bp_id, None)
                    assert reasons is not None  # a temporary breakpoint was hit
                    reason = max(
                        (reasons[bp_id] for bp_id in hit_ids),
                        key=_STRENGTH.__getitem__,
                        default=None,
                    )
            if position != _AFTER:
                reqs = self._steps.get(root.run_id)
                if reqs:
                    for req in reqs:
                        if req.matches(unit):
                            reqs.remove(req)
                            if not reqs:
                                del self._steps[root.run_id]
                            if reason is None:
                                reason = StopReason.STEP
                            break
            if reason is None and self._pause:
                reason = StopReason.PAUSE
            if (
                self.stop_on_entry
                and position == _BEFORE
                and unit.run.parent_unit is None
                and not root.entered
            ):
                root.entered = True
                if reason is None:
                    reason = StopReason.ENTRY
            if reason is None:
                return None
            if root.released:  # detached meanwhile (see release)
                return None
            reqs = self._steps.get(root.run_id)
            if reqs:
                # A stop on a branch ends any step still pending on that branch (DAP habit: a
                # breakpoint hit while stepping over a nested graph cancels the step).
                lineage = unit.lineage()
                reqs[:] = [r for r in reqs if not _same_branch(r.lineage, lineage, unit)]
                if not reqs:
                    del self._steps[root.run_id]
            if temporary:
                self._bps = [b for b in self._bps if b.id not in temporary]
            stop = Stop(
                id=f"stop-{next(self._stop_ids)}",
                reason=reason,
                location=unit.location(position) if event is None else event.location,
                breakpoints=tuple(hit_ids),
                hits=hits,
                state=state,
                input=input,
                output=output,
                exception=error,
                decision=decision,
                state_before=unit.state_before if position != _BEFORE else None,
                message=getattr(unit, "note", None),
                watches=watches or {},
                _unit=unit,
            )
            if resolve is not None:  # the point resolves the state, then opens it (_publish)
                return stop
            self._open(stop)
        self.hooks.on_stop(stop=stop)
        return stop

    def _open(self, stop: Stop) -> None:
        """Hold ``stop`` among the open stops (lock held)."""
        stop._published = True
        self._stops[stop.id] = stop
        if self._selected is None:
            self._selected = stop.id
        self._refresh()
        self._notify()

    def _watched(self, unit: Unit) -> bool:
        """Whether a watch may stop after ``unit``."""
        return any(
            c.bp.enabled
            and c.type == BreakpointType.WATCH
            and c.may_match(_AFTER, unit.kind, unit.node)
            for c in self._matchers
        )

    def _reads_state(self, unit: Unit, position: str) -> bool:
        """Whether checking this point reads its state: an observer, a breakpoint whose match
        needs it (see ``_Compiled.needs_resolve``), a watch on the unit. The same cases as
        :meth:`_check` resolves in, so an async point can await the state first."""
        if self.observe_events:
            return True
        kind, node = unit.kind, unit.node
        if any(
            c.needs_resolve and c.bp.enabled and c.may_match(position, kind, node)
            for c in self._matchers
        ):
            return True
        return position == _BEFORE and self._watched(unit)

    @staticmethod
    async def _alook(
        unit: Unit,
        position: str,
        output: Any,
        decision: Any,
        resolve: Callable[[Any], Any],
    ) -> tuple[Any, Any]:
        """``resolve(output)``, awaited where it (or, at a before point, the state in it) is
        awaitable; kept on the unit like :meth:`Unit.look`."""
        try:
            found = resolve(output)
            if inspect.isawaitable(found):
                found = await found
            state, resolved = found
            if inspect.isawaitable(state):  # a before point's async resolve()
                state = await state
        except Exception:  # the framework reports a bad update itself
            state, resolved = None, None
        return unit.looked(position, state, decision if resolved is None else resolved)

    def _publish(self, stop: Stop) -> None:
        """Open a stop built without its state (its point resolved it since, outside the lock:
        resolving runs framework code, reducers maybe, which must not hold other branches)."""
        unit = stop._unit
        with self._lock:
            root = None if unit is None else unit.run.root
            if root is not None and (root.terminated or root.released):
                # terminate() or detach() came first: do not hold
                stop._action = Action.TERMINATE if root.terminated else Action.CONTINUE
                stop._event.set()
                return
            self._open(stop)
        self.hooks.on_stop(stop=stop)

    def _go_on(self, stop: Stop, action: Action) -> Any:
        if action == Action.TERMINATE:
            unit = stop._unit
            raise Terminated() if unit is None else unit.run.root.termination()
        if stop.location.position == _BEFORE:
            return stop.input
        if stop.location.position == _AFTER:
            return stop.output
        return None

    def _idle_resume(self, stop: Stop) -> None:
        log.warning(
            "%s auto-resumed after %s s idle (idle_timeout); set Debugger(idle_timeout=None) "
            "to keep stops until resumed",
            stop,
            self.idle_timeout,
        )
        try:
            self.resume(stop.id, Action.CONTINUE)
        except StopNotFound:
            pass

    def _abandon(self, stop: Stop) -> None:
        """The stopped task was cancelled: forget the stop."""
        with self._lock:
            if self._stops.pop(stop.id, None) is not None:
                if self._selected == stop.id:
                    self._selected = next(iter(self._stops), None)
                stop._event.set()
                self._notify()

    def _condition_failed(self, bp: Breakpoint, event: Event, exc: Exception) -> None:
        key = f"{bp.id}:{type(exc).__name__}"
        if key in self._warned:
            return
        self._warned.add(key)
        log.warning(
            "condition of %s failed at %s and counts as false: %s",
            bp.id,
            event.location,
            exc,
        )

    def _log(self, bp: Breakpoint, event: Event, value: Any) -> None:
        try:
            message = bp.render(event, value)
        except Exception as exc:  # a logpoint never breaks the run
            message = f"<logpoint {bp.id} failed: {exc}>"
        logpoint_log.info("%s", message)
        self.hooks.on_log(breakpoint=bp, event=event, message=message)

    # -------------------------------------------------------------- control

    def get_stop(self, stop_id: str | None = None) -> Stop:
        with self._lock:
            if stop_id is None:
                if self._selected is None:
                    raise NotStoppedError(
                        "nothing is stopped; set a breakpoint and wait with "
                        "dbg.wait_for_stop() before inspecting or resuming"
                    )
                return self._stops[self._selected]
            try:
                return self._stops[stop_id]
            except KeyError:
                open_ids = ", ".join(self._stops) or "none"
                raise StopNotFound(f"no open stop {stop_id!r}; open stops: {open_ids}") from None

    def select(self, stop_id: str) -> Stop:
        with self._lock:
            stop = self.get_stop(stop_id)
            self._selected = stop.id
            return stop

    @property
    def stops(self) -> list[Stop]:
        with self._lock:
            return list(self._stops.values())

    @property
    def selected(self) -> Stop | None:
        with self._lock:
            return None if self._selected is None else self._stops.get(self._selected)

    def resume(self, stop_id: str | None, action: Action) -> Stop:
        with self._lock:
            stop = self.get_stop(stop_id)
            del self._stops[stop.id]
            if self._selected == stop.id:
                self._selected = next(iter(self._stops), None)
            self._pause = False
            unit = stop._unit
            if action in (Action.STEP_OVER, Action.STEP_INTO, Action.STEP_OUT) and unit is not None:
                root_id = unit.run.root.run_id
                if root_id in self._roots:
                    self._steps.setdefault(root_id, []).append(StepRequest(action, unit.lineage()))
            stop._action = action
            stop.resumed_at = time.time()
            self._refresh()
            with stop._lock:
                stop._event.set()
                wakers, stop._wakers = stop._wakers, []
            self._notify()
        for wake in wakers:
            wake()
        self.hooks.on_resume(stop=stop, action=action.value)
        return stop

    def resume_all(self) -> list[Stop]:
        resumed = []
        for stop in self.stops:
            try:
                resumed.append(self.resume(stop.id, Action.CONTINUE))
            except StopNotFound:
                pass
        return resumed

    def release(self, which: Callable[[RunScope], bool]) -> list[Stop]:
        """Let the top-level runs ``which`` accepts go on undebugged: their open stops resume,
        their pending steps are dropped, and their points no longer stop.

        :returns: the stops that were open.
        """
        with self._lock:
            roots = [scope for scope in self._roots.values() if which(scope)]
            for scope in roots:
                scope.released = True
                self._steps.pop(scope.run_id, None)
            held = [
                stop
                for stop in self._stops.values()
                if stop.unit is not None and stop.unit.run.root in roots
            ]
            self._refresh()
        for stop in held:
            try:
                self.resume(stop.id, Action.CONTINUE)
            except StopNotFound:
                pass
        return held

    def pause(self) -> None:
        with self._lock:
            self._pause = True
            self._refresh()

    def terminate(self, which: Callable[[RunScope], bool] | None = None) -> list[str]:
        """End the active top-level runs ``which`` accepts (all by default): their open stops
        and the next point of each branch raise :meth:`RunScope.termination`, running async
        units are cancelled."""
        with self._lock:
            roots = [s for s in self._roots.values() if which is None or which(s)]
            ids = [scope.run_id for scope in roots]
            for scope in roots:
                scope.terminated = True
            if which is None:
                self._steps.clear()
                self._pause = False
            else:
                for scope in roots:
                    self._steps.pop(scope.run_id, None)
            self._refresh()
            stops = [
                stop
                for stop in self._stops.values()
                if which is None or (stop._unit is not None and stop._unit.run.root in roots)
            ]
        for stop in stops:
            try:
                self.resume(stop.id, Action.TERMINATE)
            except StopNotFound:
                pass
        running = self.running_units(roots)
        on_step = self.on_step
        if on_step is not None:
            # what is running now is recorded as running: should one of them never return
            # (a sync call nothing can interrupt), the record names it
            for unit in running:
                on_step(unit)
        for unit in running:
            self._cancel(unit)
        return ids

    def _cancel(self, unit: Unit) -> None:
        """Cancel the asyncio task running ``unit`` (an awaiting node would otherwise hold its
        run until it returns), on the task's own loop; a sync unit cannot be interrupted."""
        task = getattr(unit, "_task", None)
        if task is None:
            return
        from flowdbg.runtime import TERMINATE_MESSAGE

        def cancel() -> None:  # on the loop's thread: the unit cannot finish meanwhile
            # (a task held at a stop, in a call its unit makes, ends by the stop's Terminated)
            if (
                unit in self.running
                and not task.done()
                and task not in self._cancelled
                and task not in self._holding
            ):
                self._cancelled[task] = unit.run.root
                task.cancel(TERMINATE_MESSAGE)

        try:
            task.get_loop().call_soon_threadsafe(cancel)
        except RuntimeError:  # its loop is closed: the unit is gone with it
            pass

    def cancelled_units(self, root: RunScope) -> bool:
        """Whether terminate() cancelled a task running a unit of the run ``root``."""
        return any(scope is root for scope in list(self._cancelled.values()))

    def uncancel(self, task: Any) -> bool:
        """Forget ``task`` if terminate() cancelled it; whether it did."""
        return self._cancelled.pop(task, None) is not None

    def running_units(self, roots: list[RunScope] | None = None) -> list[Unit]:
        """The units running now (of ``roots``' runs), longest running first."""
        units = [u for u in list(self.running) if roots is None or u.run.root in roots]
        units.sort(key=lambda u: u.record_value("started_at") or 0.0)
        return units

    # ---------------------------------------------------------------- waiting

    def _finished(self) -> bool:
        return not self._roots and self._pending_workers == 0 and self._finished_any

    def _current(self) -> Stop | None:
        if self._selected is not None:
            return self._stops.get(self._selected)
        return next(iter(self._stops.values()), None)

    def wait_for_stop(self, timeout: float | None) -> Stop | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                stop = self._current()
                if stop is not None:
                    return stop
                if self._finished():
                    return None
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._wait(remaining)

    def wait_for_stops(self, count: int, timeout: float | None) -> list[Stop]:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if len(self._stops) >= count:
                    return list(self._stops.values())
                if self._finished():
                    return list(self._stops.values())
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return list(self._stops.values())
                self._wait(remaining)

    def _wait(self, timeout: float | None) -> None:
        """Wait for a notification (lock held)."""
        self._sync_waiters += 1
        try:
            self._cond.wait(timeout)
        finally:
            self._sync_waiters -= 1

    async def wait_for_stop_async(self, timeout: float | None) -> Stop | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        # A task the caller started just before waiting (``create_task(app.ainvoke(...))``)
        # has not run yet, so no run is open and an earlier run's end would read as "the run
        # ended". Yielding to the event loop a few times first lets such a task begin its run;
        # a few, because trio may run the waiter first within a batch of runnable tasks.
        grace = _START_GRACE
        while True:
            waker = AsyncWaker()
            with self._lock:
                stop = self._current()
                if stop is not None:
                    return stop
                finished = self._finished()
                if finished and not grace:
                    return None
                if not finished:
                    self._async_waiters.append(waker.wake)
            if finished:
                grace -= 1
                await anyio.lowlevel.checkpoint()
                continue
            grace = 0  # a run was seen: from now on its end is the end
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            await waker.wait(remaining)

    def state_name(self) -> str:
        with self._lock:
            if self._stops:
                return "stopped"
            if self._roots or self._pending_workers:
                if any(r.terminated for r in self._roots.values()):
                    return "terminated"
                return "running"
            if self._last_end_terminated:
                return "terminated"
            return "idle"
