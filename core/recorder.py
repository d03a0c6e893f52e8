"""The built-in recorder: every finished unit and every run, written to a store off the hot path.

It is a plugin like any other, observing ``flowdbg_on_run_start``, ``flowdbg_on_step`` and
``flowdbg_on_run_end``. The debugged program only appends to a queue (a few hundred nanoseconds
per unit); a writer thread reads the queued units' fields (those of their
:class:`~flowdbg.records.StepRecord`, as tuples: :func:`step_fields`) and writes them in
batches with :meth:`Store.write_fields <flowdbg.store.Store.write_fields>`, one transaction
each, when the program pauses in making units (it waits for a model or a tool, is held at a
stop, or is idle) or at least every second (see :meth:`Recorder._wait_for_lull`). Where the
framework changes a finished unit's objects in place (:attr:`RunScope.values_change_in_place
<flowdbg.runtime.RunScope.values_change_in_place>`), the program reads the fields itself as the
unit ends and the store takes its values as they are then (:meth:`Store.freeze
<flowdbg.store.Store.freeze>`; its input as it starts). A run's input and output are taken as
it starts and ends. The queue is
bounded; when the writer falls that far behind, the overflow policy decides:
``"wait"`` (the default) holds the thread that finished the step until the writer has caught up
by a quarter of the queue, so the run slows down for a moment and no step is lost; ``"drop"``
drops new steps instead, counts them and warns once, so the run is never slowed. At
interpreter exit the queue is flushed.
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import socket
import threading
import time
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from flowdbg.events import ErrorInfo
from flowdbg.plugins import hookimpl
from flowdbg.records import RunRecord, StepRecord
from flowdbg.runtime import Frame

if TYPE_CHECKING:
    from flowdbg.events import RunInfo
    from flowdbg.runtime import Unit
    from flowdbg.stops import Stop
    from flowdbg.store import Store

__all__ = ["OVERFLOW", "Recorder", "run_record", "step_fields", "step_record"]

#: the overflow policies of a recorder whose writer falls :attr:`Recorder.max_queue` behind
OVERFLOW = ("wait", "drop")

log = logging.getLogger("flowdbg.recorder")

_HOST = socket.gethostname()


#: "the run's own value, as it is now" (see :func:`run_record`)
_LIVE: Any = object()


def step_fields(unit: Unit) -> tuple[Any, ...]:
    """The fields of a finished (or running) unit's :class:`~flowdbg.records.StepRecord`, as a
    tuple in the record's field order (what :meth:`Store.write_fields
    <flowdbg.store.Store.write_fields>` takes)."""
    state, decision = unit.resolved()
    run = unit.run
    if isinstance(run, Frame) and not run.calls_write_state:
        # A call inside a unit (a tool or model call, an @task) commits nothing to the run's
        # state; the state it shows at its stops is its unit's input. Recording that as the
        # state after the call would make the recorded state go back in time (the enclosing
        # unit's step comes first but commits last), so a call has no state column; the store
        # gives the state its unit started from at its step (SQLiteStore._state_column).
        # Where the calls write the run's state themselves (an agent's tools write the run
        # context: Frame.calls_write_state), the state after each call is kept.
        state = None
    # The outcome slots are set as the unit gets that far (see Unit.record_value): read them
    # directly, as this runs for every step.
    error = getattr(unit, "exception", None)
    return (
        run.info.run_id,
        unit.step,
        unit.node,
        unit.kind,
        run.path,
        unit.superstep,
        unit.branch,
        unit.attempt,
        unit.status,
        getattr(unit, "started_at", None) or 0.0,
        getattr(unit, "ended_at", None),
        getattr(unit, "input", None),
        getattr(unit, "output", None),
        state,
        decision,
        None if error is None else ErrorInfo.of(error),
        False,
        unit.child_run_id,
        unit.cached,
    )


def step_record(unit: Unit) -> StepRecord:
    """The record of a finished (or running) unit."""
    return StepRecord(*step_fields(unit))


def run_record(
    info: RunInfo, input: Any = _LIVE, output: Any = _LIVE, initial: Any = None
) -> RunRecord:
    """The record of a run (its current status); ``input`` and ``output``, where given,
    instead of the run's (taken as they were when the run started and ended); ``initial``, its
    state before its first unit, where known."""
    return RunRecord(
        run_id=info.run_id,
        framework=info.framework,
        name=info.name,
        parent_run_id=info.parent_run_id,
        root_run_id=info.root_run_id,
        parent_step=info.parent_step,
        path=info.path,
        status=info.status.value,
        started_at=info.started_at,
        ended_at=info.ended_at,
        input=info.input if input is _LIVE else input,
        output=info.output if output is _LIVE else output,
        error=None if info.error is None else ErrorInfo.of(info.error),
        pid=os.getpid(),
        host=_HOST,
        tags=dict(info.tags),
        target=info.target,
        origin=info.origin,
        forked_from=info.forked_from,
        fork_step=info.fork_step,
        config=info.config,
        initial_state=initial,
    )


#: the longest the writer sleeps between two looks for a lull (see Recorder._wait_for_lull)
_QUIET_MAX = 0.032

#: the kinds of the units whose input the recorder takes as it was at the call
_CALL_KINDS = frozenset({"llm", "tool"})
#: how deep :func:`_containers` copies (a deeper value is kept as it is)
_COPY_DEPTH = 32


def _containers(value: Any, depth: int) -> Any:
    """``value`` with its dicts, lists and tuples copied (their items in turn), the rest kept."""
    if depth > _COPY_DEPTH:
        return value
    kind = type(value)
    if kind is dict:
        return {key: _containers(item, depth + 1) for key, item in value.items()}
    if kind is list:
        return [_containers(item, depth + 1) for item in value]
    if kind is tuple:
        return tuple(_containers(item, depth + 1) for item in value)
    return value


class Recorder:
    """Queues runs and units and writes them to ``store`` from a writer thread.

    :param store: where to write.
    :param batch_size: most steps per transaction.
    :param interval: seconds between two looks of an idle writer at the queue.
    :param quiet: the writer writes when no unit was queued for this many seconds (the
        program waits for a model, a tool, a stop, or ended its runs), so that its work does
        not take the interpreter lock from a running program; ``0`` writes at once.
    :param max_delay: seconds at most the writer waits for such a lull while units keep
        coming (a program that never waits); ``max_backlog`` queued units also end the wait.
    :param max_backlog: queued units (and runs) at which the writer stops waiting for a lull
        (half ``max_queue`` when that is smaller).
    :param max_queue: queued steps at which the overflow policy applies.
    :param overflow: ``"wait"``: the thread finishing a step waits until the writer has room
        (nothing is lost); ``"drop"``: new steps are dropped and counted (the run never waits).
    :raises ValueError: for another ``overflow`` or a ``max_queue`` below 1.
    """

    def __init__(
        self,
        store: Store,
        *,
        batch_size: int = 500,
        interval: float = 0.05,
        quiet: float = 0.002,
        max_delay: float = 1.0,
        max_backlog: int = 5_000,
        max_queue: int = 200_000,
        overflow: str = "wait",
    ) -> None:
        if overflow not in OVERFLOW:
            raise ValueError(
                f"overflow must be one of {', '.join(map(repr, OVERFLOW))}, not {overflow!r}"
            )
        if max_queue < 1:
            raise ValueError(f"max_queue must be at least 1, not {max_queue!r}")
        self.store = store
        self.batch_size = batch_size
        self.interval = interval
        self.quiet = quiet
        self.max_delay = max_delay
        self.max_backlog = max_backlog
        self.max_queue = max_queue
        self.overflow = overflow
        #: steps dropped because the queue was full (overflow "drop")
        self.dropped = 0
        #: times a step waited for the writer (overflow "wait")
        self.waits = 0
        self._queue: collections.deque[tuple[str, Any]] = collections.deque()
        # id(unit) -> (unit, its input as it started), for the units of runs whose values
        # change in place, from their before point to their end (flowdbg_on_unit_start)
        self._inputs: dict[int, tuple[Unit, Any]] = {}
        self._wake = threading.Event()
        self._cond = threading.Condition()
        self._taken = 0  # popped by the writer (under _take_lock)
        self._written = 0
        self._take_lock = threading.Lock()
        self._closed = False
        self._hurry = 0  # threads waiting for the writer (flush, a full queue): no lull wait
        # worked out from the settings by the writer, each time it wakes, rather than by the
        # program at each unit it queues (the hot path)
        self._wake_at = self._wake_threshold()
        self._failed_once = False
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        _live.add(self)

    # -- the hot path: hooks called on the debugged program's threads and tasks --

    @hookimpl
    def flowdbg_on_run_start(self, run: RunInfo) -> None:
        # The run's input and output are taken as they are when it starts and ends: what it
        # was given may be changed by its steps (a memory passed in), and what it returned by
        # the caller (a chat loop appending to the messages it got back).
        self._put("run", (run, self._as_now(run.input)))

    @hookimpl
    def flowdbg_on_unit_start(self, unit: Unit) -> None:
        # (called only for runs whose values change in place) the unit may change the input it
        # receives as it runs: take it now. Kept by the unit's id until the unit finishes;
        # the unit is kept with it so that a reused id cannot match.
        try:
            (taken,) = self.store.freeze((unit.input,))
        except Exception:  # never let one bad record stop the run: read at the unit's end
            log.exception("flowdbg could not take a unit's input as it is; it is read later")
            return
        self._inputs[id(unit)] = (unit, taken)

    @hookimpl
    def flowdbg_on_step(self, unit: Unit) -> None:
        if len(self._queue) >= self.max_queue:
            if self.overflow == "wait":
                self._wait_for_room()
            else:
                self.dropped += 1
                if self.dropped == 1:
                    log.warning(
                        "flowdbg's recorder is %d steps behind; dropping steps until it catches "
                        "up (record_overflow='drop': the run is not slowed down)",
                        self.max_queue,
                    )
                return
        if unit.step == 1 and unit.state_before is not None:
            # the run's first unit: the state it started from is the run's state before any
            # unit, what none of them wrote (Store.last_writers); taken as it is now
            initial = self._as_now(unit.state_before)
            if initial is not _LIVE:
                self._put("initial", (unit.run.info, initial))
        if unit.run.values_change_in_place:
            # The framework changes the objects of a finished unit's values in place (an
            # agent's memory in a LlamaIndex context, an OpenAI run context, events it edits
            # later): the writer, reading them later, would record them as they are then.
            # Read the unit's fields now, on the run's thread, and have the store take its
            # values as they are (Store.freeze: the SQLite store encodes them).
            inputs = self._inputs
            # (a unit still running when its run was terminated is reported again as it ends)
            started = (
                inputs.get(id(unit)) if unit.status == "running" else inputs.pop(id(unit), None)
            )
            try:
                fields = step_fields(unit)
                if started is not None and started[0] is unit:
                    frozen = (started[1], *self.store.freeze(fields[12:14]))
                else:  # a unit that never passed its before point
                    frozen = self.store.freeze(fields[11:14])
            except Exception:  # never let one bad record stop the run
                log.exception("flowdbg could not record a step; it is skipped")
                return
            self._put("fields", (*fields[:11], *frozen, *fields[14:]))
            return
        if unit.kind in _CALL_KINDS:
            # A model or tool call's input is often a list its node goes on changing once the
            # call returned (a message history it appends to): the writer, reading it later,
            # would record the changed list. Keep its containers as they are now (a copy of
            # the dicts and lists only: the values in them, such as message objects, are not
            # copied, which costs little next to a call).
            self._put("call", (unit, _containers(unit.record_value("input"), 0)))
            return
        self._put("step", unit)

    def _wait_for_room(self) -> None:
        """Hold the calling thread until the writer has written a quarter of the queue (or
        stopped: a closed recorder, a writer that died)."""
        self.waits += 1
        if self.waits == 1:
            log.info(
                "flowdbg's recorder is %d steps behind; runs wait for it to catch up "
                "(record_overflow='drop' drops steps instead)",
                self.max_queue,
            )
        room = self.max_queue - max(1, self.max_queue // 4)
        if self._thread is None:
            self._start()
        with self._cond:
            self._hurry += 1  # the writer does not wait for a lull: this thread waits for it
            try:
                self._wake.set()
                while len(self._queue) > room and not self._closed:
                    thread = self._thread
                    if thread is None or not thread.is_alive():
                        return
                    self._cond.wait(0.05)
                    self._wake.set()
            finally:
                self._hurry -= 1

    @hookimpl
    def flowdbg_on_stop(self, stop: Stop) -> None:
        # A unit held at a stop is recorded as running now, not only once it finishes: the
        # record shows where the run is held (runs show during the stop), and a kill -9 while
        # held keeps the step. Its finished record replaces this one.
        unit = stop.unit
        if unit is not None and unit.status == "running":
            self._put("step", unit)
            self._wake.set()

    @hookimpl
    def flowdbg_on_run_end(self, run: RunInfo) -> None:
        self._put("end", (run, self._as_now(run.output)))
        if self._inputs and run.parent_run_id is None:
            # units that started and never finished (a run cut short): let them go
            root = run.run_id
            for key, (unit, _) in list(self._inputs.items()):
                if unit.run.info.root_run_id == root:
                    self._inputs.pop(key, None)
        if self.quiet <= 0:
            self._wake.set()  # a finished run is written promptly (else: in the next lull)

    def _as_now(self, value: Any) -> Any:
        """``value`` as it is now (:meth:`Store.freeze <flowdbg.store.Store.freeze>`), or as it
        is when written should that fail."""
        try:
            return self.store.freeze((value,))[0]
        except Exception:  # never let one bad record stop the run
            log.exception("flowdbg could not take a run's value as it is; it is read later")
            return _LIVE

    def _put(self, kind: str, item: Any) -> None:
        queue = self._queue
        queue.append((kind, item))
        if self._thread is None:
            self._start()
        elif len(queue) >= self._wake_at:
            self._wake.set()

    def _backlog(self) -> int:
        """Queued items at which the writer stops waiting for a lull: :attr:`max_backlog`, or
        half the queue when that is smaller (the overflow policy must never be reached while
        the writer waits)."""
        return max(1, min(self.max_backlog, self.max_queue // 2))

    def _wake_threshold(self) -> int:
        """Queued items at which a new one wakes the writer (see :attr:`_wake_at`)."""
        return self.batch_size if self.quiet <= 0 else self._backlog()

    # -- the writer thread --

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name="flowdbg-recorder", daemon=True
                )
                self._thread.start()

    def _work(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            self._wake_at = self._wake_threshold()
            while self._queue:
                self._wait_for_lull(time.monotonic())
                left = len(self._queue)  # then all of it: the lull may be short
                while left > 0 and self._queue:
                    left -= self._write_some()
            if self._closed and not self._queue:
                return

    def _wait_for_lull(self, since: float) -> None:
        """Hold off writing while the program goes on queueing units, until it has queued none
        for :attr:`quiet` seconds, or :attr:`max_delay` seconds have passed since ``since``,
        or :attr:`max_backlog` units are queued (half :attr:`max_queue` if smaller), or
        someone waits (flush, close, a full queue).

        Why: the writer's work is Python code, which runs under the interpreter lock. Writing
        while the program runs makes every system call of the program (an event loop's
        ``epoll``, ``os.urandom``) a chance for the writer to take the lock, which the program
        then waits for, up to the switch interval (``sys.getswitchinterval()``, 5 ms by
        default): on a program whose steps cost tens of microseconds that waiting cost several
        times the writer's own CPU time (bench/RESULTS.md, "Writing in the lulls"). Real
        programs wait for models and tools often, and the writer works then.
        """
        quiet = self.quiet
        if quiet <= 0:
            return
        queue = self._queue
        backlog = self._backlog()
        wait = quiet
        while not (self._hurry or self._closed):
            left = since + self.max_delay - time.monotonic()
            if len(queue) >= backlog or left <= 0:
                return
            seen = self._taken + len(queue)
            if self._wake.wait(min(wait, left)):
                self._wake.clear()
            elif self._taken + len(queue) == seen:
                return  # nothing queued for ``quiet`` seconds or more: a lull
            # Each time this thread wakes it needs the interpreter lock, which a busy program
            # holds: the longer the program has been busy, the less often it looks.
            wait = min(wait * 2, max(quiet, _QUIET_MAX))

    def _write_some(self) -> int:
        """Write the next batch; returns how many queued items it took."""
        started: list[Any] = []
        steps: list[tuple[Any, ...]] = []
        ending: dict[int, Any] = {}
        initial: dict[int, tuple[RunInfo, Any]] = {}
        queue = self._queue
        with self._take_lock:  # one batch taken at once (flush() counts under this lock)
            taken = min(len(queue), self.batch_size)
            items = [queue.popleft() for _ in range(taken)]
            self._taken += taken
        for kind, item in items:
            if kind == "fields":  # read and taken when the unit ended
                steps.append(item)
            elif kind == "step":
                try:
                    steps.append(step_fields(item))
                except Exception:  # never let one bad record stop the writer
                    log.exception("flowdbg could not record a step; it is skipped")
            elif kind == "call":
                # a call recorded with the input it was given (taken at its after point,
                # before the framework could change the arguments' objects)
                unit, taken_input = item
                try:
                    fields = step_fields(unit)
                    steps.append((*fields[:11], taken_input, *fields[12:]))
                except Exception:
                    log.exception("flowdbg could not record a call; it is skipped")
            elif kind == "run":
                started.append(item)
            elif kind == "initial":
                initial[id(item[0])] = item
            else:
                ending[id(item[0])] = item
        # A run's records are made now, from its current state (but for its input and output,
        # taken at its start and end): a run that started and ended within the batch is
        # written once, as ended (its row then counts the batch's steps).
        # An ended run whose start an earlier batch wrote carries no input (None: the store
        # keeps the one written then): the run's input is by now what its steps made of it (a
        # memory it was given and filled), not what it started from.
        # The state before a run's first unit goes with the run's record in this batch, or,
        # when an earlier batch wrote the run's start, in a record of it that changes nothing
        # else (no input; the store keeps what it has for what the record leaves empty).
        inputs = {id(info): taken for info, taken in started}

        def first(info: RunInfo) -> Any:
            found = initial.pop(id(info), None)
            return None if found is None else found[1]

        runs = self._records(
            (info, taken, _LIVE, first(info)) for info, taken in started if id(info) not in ending
        )
        ended = self._records(
            (info, inputs.get(id(info)), output, first(info)) for info, output in ending.values()
        )
        runs += self._records((info, None, _LIVE, state) for info, state in initial.values())
        try:
            self.store.write_fields(runs=runs, steps=steps, ended=ended)
        except Exception as exc:
            if not self._failed_once:
                self._failed_once = True
                log.error("flowdbg could not write to %s: %s", self.store.path, exc)
        with self._cond:
            self._written += taken
            self._cond.notify_all()
        return taken

    @staticmethod
    def _records(runs: Iterable[tuple[RunInfo, Any, Any, Any]]) -> list[RunRecord]:
        records = []
        for info, input, output, initial in runs:
            try:
                records.append(run_record(info, input, output, initial))
            except Exception:  # never let one bad record stop the writer
                log.exception("flowdbg could not record a run; it is skipped")
        return records

    # -- control --

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything queued before this call is written.

        :returns: ``False`` if ``timeout`` seconds passed first.
        """
        if self._thread is None:
            return True
        with self._take_lock:
            target = self._taken + len(self._queue)
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._hurry += 1
            try:
                self._wake.set()
                while self._written < target:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    self._cond.wait(remaining if remaining is not None else 0.5)
                    self._wake.set()
            finally:
                self._hurry -= 1
        return True

    def close(self, timeout: float | None = 10.0) -> None:
        """Flush, stop the writer and close the store."""
        if self._closed:
            return
        self.flush(timeout)
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.store.close()


_live: weakref.WeakSet[Recorder] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    for recorder in list(_live):
        try:
            recorder.flush(timeout=5.0)
        except Exception:
            pass
