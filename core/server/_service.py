"""The operations the debug server and the MCP server offer, over one :class:`Debugger`.

Both front ends call :class:`Service`, which returns the protocol's models
(:mod:`flowdbg.server._protocol`) and raises the core's :class:`~flowdbg.FlowdbgError`
subclasses with their own messages. Nothing here evaluates code: conditions and expressions go
to the condition sandbox, edits take plain JSON values.
"""

from __future__ import annotations

import copy
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from flowdbg import schemas
from flowdbg._json import jsonable
from flowdbg._redact import DEFAULT_REDACT, redact, redact_text
from flowdbg._values import summarize
from flowdbg._views import run_dict, runs_diff_dict, step_dict
from flowdbg.breakpoints import CALL_KINDS_REMEDY
from flowdbg.errors import (
    BreakpointError,
    FlowdbgError,
    PathError,
    RunOptionError,
    StopNotFound,
)

from . import _protocol as p
from ._events import EventJournal

if TYPE_CHECKING:
    from flowdbg.adapter import Adapter
    from flowdbg.breakpoints import Breakpoint
    from flowdbg.debugger import Debugger, RunHandle
    from flowdbg.stops import Stop
    from flowdbg.store import Store

__all__ = [
    "BREAKPOINTS_PAGE",
    "STOPS_PAGE",
    "BreakpointNotFound",
    "NoRecording",
    "NoTarget",
    "RunNotStarted",
    "Service",
    "paginate",
]

#: the default page sizes of ``GET /stops`` and ``GET /breakpoints``: more than a session
#: usually holds, so a client that does not page still sees every one
STOPS_PAGE = 100
BREAKPOINTS_PAGE = 500

# warnings.catch_warnings changes process-wide state: one caller at a time
_WARNINGS = threading.Lock()


class BreakpointNotFound(BreakpointError, LookupError):
    """A breakpoint id names no breakpoint."""


class NoTarget(FlowdbgError):
    """The server was started without a target, so it cannot start runs."""


class RunNotStarted(FlowdbgError):
    """A run of the target failed before it began (a bad input, say)."""


class NoRecording(FlowdbgError):
    """Recording is off, so there are no recorded runs to read."""


class Service:
    """What a client can do: breakpoints, runs, stops, recorded runs.

    :param dbg: the debugger.
    :param target: the object runs are started of (attached here), or ``None``.
    :param target_name: how the target was named (``app.py:graph``), for clients.
    """

    def __init__(
        self,
        dbg: Debugger,
        target: Any = None,
        *,
        target_name: str | None = None,
    ) -> None:
        self.dbg = dbg
        self.target = target
        self.adapter: Adapter | None = None
        self.target_name = target_name
        if target is not None:
            self.adapter = dbg.adapter_for(target)
            dbg.attach(target)
            if target_name is None:
                self.target_name = type(target).__name__
        #: an input the target runs with, offered to clients (``TargetInfo.example_input``)
        self.example_input: Any = None
        #: the config of a run started without one (``flowdbg serve --config``)
        self.default_config: dict[str, Any] | None = None
        #: the numbered events the WebSocket clients read
        self.journal = EventJournal()
        dbg.register_plugin(self.journal)
        self.launches: list[RunHandle] = []
        #: what happens to held stops when the last event-stream client goes: ``"resume"``
        #: them after :attr:`grace` seconds without a client, or ``"keep"`` them held
        self.on_disconnect = "resume"
        self.grace = 60.0
        self._clients = 0
        self._generation = 0  # bumped at each connect: a pending release is then void
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """Stop observing the debugger (the journal's hooks are removed) and call off a
        pending release."""
        self.dbg.unregister_plugin(self.journal)
        with self._lock:
            self._generation += 1
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    # -------------------------------------------------------------- clients

    def client_connected(self) -> None:
        """An event-stream client connected: a pending release is called off."""
        with self._lock:
            self._clients += 1
            self._generation += 1
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def client_disconnected(self) -> None:
        """An event-stream client went away; when it was the last one and stops are held,
        they are released after :attr:`grace` seconds unless a client comes back (with
        :attr:`on_disconnect` ``"resume"``)."""
        with self._lock:
            self._clients -= 1
            if self._clients or self.on_disconnect != "resume" or not self.dbg.stops:
                return
            if self._timer is not None:
                self._timer.cancel()
            timer = threading.Timer(self.grace, self._release, args=(self._generation,))
            timer.daemon = True
            timer.name = "flowdbg-server-release"
            self._timer = timer
        timer.start()

    def _release(self, generation: int) -> None:
        with self._lock:
            if self._clients or generation != self._generation:
                return
        self.release()

    def release(self) -> list[Stop]:
        """Resume every held stop because no client stayed connected, and publish a
        ``released`` event naming them (none when nothing was held); returns them."""
        released = self.dbg.resume_all()
        if released:
            self.journal.publish(
                "released",
                {
                    "stops": [stop.id for stop in released],
                    "reason": f"no client connected for {self.grace:g} s",
                },
            )
        return released

    # ------------------------------------------------------------------ info

    def info(self) -> p.ServerInfo:
        """What this server is."""
        from flowdbg import __version__

        return p.ServerInfo(
            protocol=p.PROTOCOL_VERSION,
            flowdbg=__version__,
            target=self.target_info() if self.target is not None else None,
            recording=self.dbg.store is not None,
            events="/events",
        )

    def target_info(self) -> p.TargetInfo:
        """The served target and its graph.

        :raises NoTarget: when there is none.
        """
        if self.target is None or self.adapter is None:
            raise NoTarget(_NO_TARGET)
        try:
            graph = dict(self.dbg.describe(self.target))
        except NotImplementedError:
            graph = {}
        config = None
        if self.default_config is not None:
            # redacted by the rules the store records a run's config with (the same keys)
            store = self.dbg.store
            keys = DEFAULT_REDACT if store is None else getattr(store, "_redact", DEFAULT_REDACT)
            config = jsonable(redact(self.default_config, keys))
        return p.TargetInfo(
            target=self.target_name or "",
            adapter=self.adapter.name,
            graph=jsonable(graph),
            example_input=jsonable(self.example_input),
            default_config=config,
            capabilities=sorted(c.value for c in self.adapter.capabilities),
        )

    def adapters(self) -> schemas.Adapters:
        """Every adapter flowdbg knows, usable or not."""
        entries = [
            schemas.AdapterEntry(
                name=info.name,
                available=info.available,
                reason=info.reason,
                version=info.version,
                extra=info.extra or "",
                capabilities=sorted(info.capabilities),
            )
            for info in self.dbg.adapters.values()
        ]
        return schemas.Adapters(adapters=entries)

    def status(self) -> schemas.DebuggerStatus:
        """The debugger's state, open stops and runs."""
        return schemas.DebuggerStatus.model_validate(self.dbg.status().to_dict())

    # ----------------------------------------------------------- breakpoints

    def breakpoints(self, *, offset: int = 0, limit: int = BREAKPOINTS_PAGE) -> p.BreakpointList:
        """A page of the breakpoints, in the order they were set."""
        rows, paging = paginate(self.dbg.breakpoints, offset, limit)
        return p.BreakpointList(breakpoints=[_bp(bp) for bp in rows], **paging)

    def add_breakpoint(self, req: p.BreakpointCreate) -> p.BreakpointCreated:
        """Set a breakpoint.

        :raises BreakpointError: for a bad pattern, kind or hit condition (with ``strict``, a
            name that matches nothing).
        :raises ExpressionError: for a condition the sandbox refuses.
        """
        dbg = self.dbg
        kind = None if req.kind is None else tuple(req.kind)
        if req.type == "watch" and not req.path:
            raise _bad("a watch needs the state path to watch: give 'path'")
        if req.type == "log" and not req.message:
            raise _bad("a logpoint needs a message template: give 'message'")
        common: dict[str, Any] = {"condition": req.condition, "strict": req.strict}
        # what every type that stops takes (an event breakpoint has no hit count)
        stops = {**common, "hit_condition": req.hit_condition, "temporary": req.temporary}
        at_unit = {**stops, "kind": kind, "enabled": req.enabled}
        make: dict[str, Callable[[], Breakpoint]] = {
            "before": lambda: dbg.break_before(req.pattern, **at_unit),
            "after": lambda: dbg.break_after(req.pattern, **at_unit),
            "exception": lambda: dbg.break_on_exception(
                *req.exception_types, node=req.pattern, **stops
            ),
            "watch": lambda: dbg.watch(req.path or "", node=req.pattern, **stops),
            "tool": lambda: dbg.break_on_tool(req.pattern, args_pattern=req.args_pattern, **stops),
            "handoff": lambda: dbg.break_on_handoff(req.pattern, **stops),
            "event": lambda: dbg.break_on_event(req.pattern, kind=kind, **common),
            "log": lambda: dbg.logpoint(
                req.pattern,
                req.message or "",
                position=req.position,
                hit_condition=req.hit_condition,
                kind=kind,
                **common,
            ),
        }
        with _WARNINGS, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                bp = make[req.type]()
            except BreakpointError as exc:
                advised = _for_clients(str(exc))
                if advised == str(exc):
                    raise
                raise type(exc)(advised) from exc
        return p.BreakpointCreated(
            breakpoint=_bp(bp), warnings=[_for_clients(str(w.message)) for w in caught]
        )

    def _known(self, bp_id: str) -> None:
        if not any(bp.id == bp_id for bp in self.dbg.breakpoints):
            try:
                self.dbg.get_breakpoint(bp_id)
            except BreakpointError as exc:  # its message lists the ids there are
                raise BreakpointNotFound(str(exc)) from None

    def get_breakpoint(self, bp_id: str) -> schemas.BreakpointInfo:
        """One breakpoint (:class:`BreakpointNotFound` when there is none)."""
        self._known(bp_id)
        return _bp(self.dbg.get_breakpoint(bp_id))

    def remove_breakpoint(self, bp_id: str) -> schemas.BreakpointInfo:
        """Remove a breakpoint; returns it."""
        self._known(bp_id)
        return _bp(self.dbg.remove(bp_id))

    def clear_breakpoints(self) -> p.BreakpointList:
        """Remove every breakpoint."""
        self.dbg.clear()
        return self.breakpoints()

    # --------------------------------------------------------------- running

    def start(self, req: p.StartRun, *, wait: float = 5.0) -> p.RunStarted:
        """Start a run of the target with ``req.input`` in a worker thread.

        :param wait: seconds to wait for the run to begin (for its id).
        :raises NoTarget: when the server has no target.
        :raises RunOptionError: when the target's adapter cannot run it with ``req.config``.
        """
        from flowdbg.adapter import RunOptions

        if self.target is None or self.adapter is None:
            raise NoTarget(_NO_TARGET)
        # each run gets the server's config as it was given: a run's tools may change its
        # context in place (an OpenAI agent's), which must not carry into the next run
        config = copy.deepcopy(self.default_config) if req.config is None else req.config
        options = RunOptions(config=config)
        value = {} if req.input is None else req.input
        try:
            self.adapter.check_run(self.target, options)
            self.adapter.check_input(self.target, value)  # refused before anything runs
        except RunOptionError as refused:  # named as the request's fields, not as --config
            raise refused.as_request_field() from None
        adapter = self.adapter
        run = adapter.ainvoke if adapter.is_async(self.target) else adapter.invoke
        handle = self.dbg.start(run, self.target, value, options)
        with self._lock:
            self.launches.append(handle)
            launch = len(self.launches)
        run_id = handle.wait_started(wait)
        if run_id is None and handle.done():
            exc = handle.exception(0)
            if exc is not None:  # it failed before its first unit: the caller must hear of it
                raise RunNotStarted(
                    f"the run failed before it started: {type(exc).__name__}: {exc}; check "
                    "the input (GET /target shows the graph)"
                )
        return p.RunStarted(run_id=run_id, launch=launch)

    def pause(self) -> schemas.DebuggerStatus:
        """Stop every branch at its next point."""
        self.dbg.pause()
        return self.status()

    def terminate(self) -> p.TerminateResult:
        """End every active run."""
        return p.TerminateResult(runs=self.dbg.terminate())

    # ----------------------------------------------------------------- stops

    def stops(self, *, offset: int = 0, limit: int = STOPS_PAGE) -> p.StopList:
        """A page of the open stops, oldest first."""
        rows, paging = paginate(self.dbg.stops, offset, limit)
        return p.StopList(stops=[_stop(s) for s in rows], **paging)

    def wait(self, timeout: float) -> p.WaitResult:
        """Wait up to ``timeout`` seconds for a stop (at once when one is open); with none,
        say whether runs go on (``timeout``) or how the last one ended (``ended``,
        ``failed`` with its error, ``terminated``)."""
        stop = self.dbg.wait_for_stop(timeout)
        if stop is not None:
            return p.WaitResult(stop=_stop(stop), outcome="stopped", run_id=stop.location.run_id)
        if self.dbg.active_runs or any(not h.done() for h in self.launches):
            return p.WaitResult(stop=None, outcome="timeout")
        return self.last_outcome()

    def last_outcome(self) -> p.WaitResult:
        """How the last top-level run of the debugger to end ended (``ended`` when none
        has)."""
        ended = [log.run for log in self.dbg.runs if log.run.ended_at is not None]
        if not ended:
            return p.WaitResult(stop=None, outcome="ended")
        run = max(ended, key=lambda r: r.ended_at or 0.0)
        if run.status == "failed":
            error = None
            if run.error is not None:
                error = p.RunError(type=run.error.type, message=redact_text(run.error.message))
            return p.WaitResult(stop=None, outcome="failed", run_id=run.run_id, error=error)
        if run.status == "terminated":
            return p.WaitResult(stop=None, outcome="terminated", run_id=run.run_id)
        return p.WaitResult(stop=None, outcome="ended", run_id=run.run_id)

    def open_stop(self, stop_id: str) -> Stop:
        """The open stop ``stop_id``.

        :raises StopNotFound: when it is not open (saying so when it has resumed).
        """
        for stop in self.dbg.stops:
            if stop.id == stop_id:
                return stop
        open_ids = ", ".join(s.id for s in self.dbg.stops) or "none"
        raise self._gone(stop_id, StopNotFound(f"no open stop {stop_id!r}; open stops: {open_ids}"))

    def _gone(self, stop_id: str, exc: StopNotFound) -> StopNotFound:
        action = self.journal.resumed.get(stop_id)
        if action is None:
            return exc
        open_ids = ", ".join(s.id for s in self.dbg.stops) or "none"
        return StopNotFound(
            f"stop {stop_id!r} has already resumed ({action}); it cannot be inspected or "
            f"resumed again. Open stops: {open_ids} (wait for the next stop)"
        )

    def stop(self, stop_id: str) -> schemas.Stop:
        """One open stop with its values."""
        return _stop(self.open_stop(stop_id))

    def inspect(self, stop_id: str, path: str) -> p.ValueResult:
        """Read ``path`` at a stop (its default view unless ``view:`` names another)."""
        value, _ = self.read(stop_id, path)
        return p.ValueResult(stop=stop_id, path=path, value=jsonable(value), keys=_keys(value))

    def read(self, stop_id: str, path: str) -> tuple[Any, str]:
        """The value at ``path`` of an open stop, and the path that read it with its view
        (``input:x`` for ``x`` at a before stop). A path that is only the name of one of the
        stop's views (``args``, ``state``...) reads that whole view when the default view has
        no such key: every name a stop lists in ``views`` reads as it is listed.

        :raises PathError: when the path leads nowhere (the message lists the views).
        """
        from flowdbg._paths import split_view

        stop = self.open_stop(stop_id)
        view, rest = split_view(path)
        try:
            return self.dbg.inspect(path, stop=stop_id), f"{view or stop.default_view}:{rest}"
        except PathError:
            if view is not None or rest not in stop.views:
                raise
        return self.dbg.inspect(f"{rest}:", stop=stop_id), f"{rest}:"

    def set(self, stop_id: str, path: str, value: Any) -> schemas.Stop:
        """Set ``path`` of the stop's editable view to a plain JSON ``value``."""
        self.open_stop(stop_id)
        self.dbg.set(path, value, stop=stop_id)
        return self.stop(stop_id)

    def delete(self, stop_id: str, path: str) -> schemas.Stop:
        """Delete ``path`` of the stop's editable view."""
        self.open_stop(stop_id)
        self.dbg.delete(path, stop=stop_id)
        return self.stop(stop_id)

    def evaluate(self, stop_id: str, expression: str) -> p.EvaluateResult:
        """Evaluate a sandboxed expression at a stop."""
        self.open_stop(stop_id)
        value = self.dbg.evaluate(expression, stop=stop_id)
        return p.EvaluateResult(stop=stop_id, expression=expression, value=jsonable(value))

    def diff(self, stop_id: str) -> p.Diff:
        """What the unit changed in the state (after and error stops)."""
        self.open_stop(stop_id)
        changes = [
            schemas.StateChange(path=c.path, kind=c.kind, old=jsonable(c.old), new=jsonable(c.new))
            for c in self.dbg.diff(stop=stop_id).changes()
        ]
        return p.Diff(stop=stop_id, changes=changes)

    def resume(self, stop_id: str, action: str) -> p.ResumeResult:
        """Let a stop go: ``continue``, ``step_over``, ``step_into`` or ``step_out``."""
        dbg = self.dbg
        go = {
            "continue": dbg.resume,
            "step_over": dbg.step_over,
            "step_into": dbg.step_into,
            "step_out": dbg.step_out,
        }[action]
        try:
            stop = go(stop_id)
        except StopNotFound as exc:
            raise self._gone(stop_id, exc) from None
        return p.ResumeResult(stop=stop.id, action=action)  # type: ignore[arg-type]

    def rewind(self, stop_id: str, req: p.Rewind) -> p.RewindResult:
        """Rewind a stop's run to the state after ``req.step`` (see ``Debugger.rewind``)."""
        stop = self.open_stop(stop_id)
        run_id = stop.unit.run.root.run_id if stop.unit is not None else ""
        try:
            self.dbg.rewind(req.step, req.edits, stop_id)
        except StopNotFound as exc:
            raise self._gone(stop_id, exc) from None
        return p.RewindResult(stop=stop_id, run_id=run_id, step=req.step)

    def fork(self, run_id: str, req: p.Fork, *, wait: float = 5.0) -> p.RunStarted:
        """Fork a recorded run (see ``Debugger.fork``): of the served target when it is of
        the run's framework, else of the target the run recorded."""
        store = self._store()
        run = store.get_run(run_id)
        handle = self.dbg.fork(run.run_id, req.step, req.edits, target=self._target_for(run))
        return self._launched(handle, wait)

    def rerun(self, run_id: str, req: p.Rerun, *, wait: float = 5.0) -> p.RunStarted:
        """Rerun a recorded run with its recorded calls (see ``Debugger.rerun``)."""
        store = self._store()
        run = store.get_run(run_id)
        handle = self.dbg.rerun(
            run.run_id,
            cached_calls=req.cached_calls,
            target=self._target_for(run),
            until_divergence=req.until_divergence,
        )
        return self._launched(handle, wait)

    def _target_for(self, run: Any) -> Any:
        """The served target when ``run`` is one of its runs (same framework and name), else
        ``None``: the target the run recorded is loaded."""
        adapter = self.adapter
        target = self.target
        if target is None or adapter is None or adapter.name != run.framework:
            return None
        name = getattr(target, "name", None)
        if name is not None and name != run.name:
            return None  # a run of another graph of the same framework
        return target

    def _launched(self, handle: Any, wait: float) -> p.RunStarted:
        with self._lock:
            self.launches.append(handle)
            launch = len(self.launches)
        run_id = handle.wait_started(wait)
        if run_id is None and handle.done():
            exc = handle.exception(0)
            if exc is not None:  # refused as it started (by the adapter): the caller must hear
                from flowdbg.timetravel import ForkError

                if isinstance(exc, ForkError):
                    raise exc
                raise RunNotStarted(
                    f"the run failed before it started: {type(exc).__name__}: {exc}"
                )
        return p.RunStarted(run_id=run_id, launch=launch)

    # -------------------------------------------------------------- records

    def _store(self) -> Store:
        store = self.dbg.store
        if store is None:
            raise NoRecording(
                "recording is off, so there are no recorded runs; start the server without "
                "--no-record (or a Debugger with record=True)"
            )
        self.dbg.flush(5.0)  # what has finished is readable
        return store

    def recorded_runs(
        self,
        *,
        offset: int = 0,
        limit: int = 50,
        status: str | None = None,
        name: str | None = None,
        since: float | None = None,
        until: float | None = None,
        framework: str | None = None,
    ) -> p.RunList:
        """Recorded top-level runs, newest first, a page at a time (started from ``since`` to
        ``until`` when given, epoch seconds)."""
        store = self._store()
        # one row past the page says whether another page follows
        rows = store.list_runs(
            status=status,
            name=name,
            since=since,
            until=until,
            framework=framework,
            limit=offset + limit + 1,
        )
        page, paging = paginate(rows, offset, limit)
        return p.RunList(runs=[schemas.Run.model_validate(run_dict(r)) for r in page], **paging)

    def recorded_run(self, run_id: str) -> schemas.RunDetail:
        """One recorded run with its input and output."""
        return schemas.RunDetail.model_validate(
            run_dict(self._store().get_run(run_id), values=True)
        )

    def recorded_steps(
        self,
        run_id: str,
        *,
        from_step: int = 1,
        limit: int = 100,
        values: bool = False,
        node: str | None = None,
    ) -> p.StepList:
        """A page of a recorded run's steps (``from_step`` on, at most ``limit``)."""
        store = self._store()
        run = store.get_run(run_id)
        rows = store.get_steps(
            run.run_id, node=node, from_step=from_step, to_step=None, values=values
        )
        page = rows[:limit]
        model = schemas.StepDetail if values else schemas.Step
        return p.StepList(
            run_id=run.run_id,
            steps=[model.model_validate(step_dict(s, values=values)) for s in page],
            next_step=rows[limit].step if len(rows) > limit else None,
        )

    def recorded_state(
        self, run_id: str, *, step: int | None = None, path: str | None = None
    ) -> p.RecordedState:
        """A recorded run's state after ``step`` (the end for ``None``): a row per key, and
        the value at ``path`` when given."""
        from flowdbg._paths import get_path

        store = self._store()
        run = store.get_run(run_id)
        state = store.get_state(run.run_id, step=step)
        writers = store.last_writers(run.run_id, step=step)
        rows = summarize(state) if state is not None else []
        keys = [
            schemas.StateKey(
                key=row.key,
                type=row.type,
                size=row.size,
                preview=row.preview,
                written_by=None
                if row.key not in writers
                else schemas.WrittenBy(step=writers[row.key][0], node=writers[row.key][1]),
            )
            for row in rows
        ]
        value = jsonable(get_path(state, path)) if path is not None else None
        return p.RecordedState(run_id=run.run_id, step=step, keys=keys, path=path, value=value)

    def recorded_diff(
        self, run_a: str, run_b: str, *, ignore: tuple[str, ...] = (), strict: bool = False
    ) -> schemas.RunsDiff:
        """Two recorded runs compared, as ``flowdbg runs diff --json`` shows them: per-node
        counts and times, and where they first diverge (path, outcome or state)."""
        store = self._store()
        a = store.get_run(run_a)
        b = store.get_run(run_b)
        result = store.diff_runs(a.run_id, b.run_id, ignore=ignore, strict=strict)
        return schemas.RunsDiff.model_validate(runs_diff_dict(a, b, result))

    def recorded_timeline(self, run_id: str) -> schemas.RunsTimeline:
        """A recorded run and the runs made from it (forks, reruns, rewinds), as a tree."""
        from flowdbg.timetravel import timeline

        store = self._store()
        root = timeline(store, store.get_run(run_id).run_id)
        return schemas.RunsTimeline.model_validate(jsonable(root.to_dict(run_dict)))

    def recorded_divergence(
        self, run_id: str, source: str | None, *, ignore: tuple[str, ...] = (), strict: bool = False
    ) -> schemas.RunsDivergence:
        """How a run departs from the run it was made from (or ``source``), as ``flowdbg runs
        divergence --json`` shows it."""
        store = self._store()
        run = store.get_run(run_id)
        if source is None:
            from flowdbg.timetravel import source_of

            source = source_of(run, "pass source= the run to compare it with")
        report = store.divergence(source, run.run_id, ignore=ignore, strict=strict)
        return schemas.RunsDivergence.model_validate(jsonable(report.to_dict(run_dict)))


_T = TypeVar("_T")


def paginate(items: Sequence[_T], offset: int, limit: int) -> tuple[list[_T], dict[str, Any]]:
    """``items[offset:offset + limit]`` and the :class:`~flowdbg.server._protocol.Page` fields
    that say where it is (``next_offset`` is ``None`` on the last page)."""
    end = offset + limit
    paging = {"offset": offset, "limit": limit, "next_offset": end if len(items) > end else None}
    return list(items[offset:end]), paging


_NO_TARGET = (
    "this server has no target, so it cannot start runs; start it with a target "
    "(flowdbg serve app.py:graph) or run your program in the process that serves"
)


def _bad(message: str) -> FlowdbgError:
    return BreakpointError(message)


#: the Python API's advice in breakpoint warnings and errors -> the request fields a client of
#: the server gives instead (POST /breakpoints, MCP set_breakpoint)
_ADVICE = {
    "strict=True refuses it": 'set it with "strict": true to have it refused instead',
    CALL_KINDS_REMEDY: 'give "kind": ["tool"] or ["llm"] for a call a node makes',
}


def _for_clients(message: str) -> str:
    """A breakpoint warning or error as a client of the server can act on it: the Python
    keywords it advises are request fields here."""
    for python, request in _ADVICE.items():
        message = message.replace(python, request)
    return message


def _bp(bp: Breakpoint) -> schemas.BreakpointInfo:
    return schemas.BreakpointInfo.model_validate(bp.model_dump(mode="json"))


def _stop(stop: Any) -> schemas.Stop:
    return schemas.Stop.model_validate(stop.to_dict())


def _keys(value: Any) -> list[p.KeyRow]:
    return [
        p.KeyRow(key=row.key, type=row.type, size=row.size, preview=row.preview)
        for row in summarize(value)
    ]
