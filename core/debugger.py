"""The :class:`Debugger`: one debug session over any number of attached targets."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import dataclasses
import inspect as _inspect
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from flowdbg._diff import StateDiff
from flowdbg._paths import delete_path, get_path, set_path, split_view
from flowdbg._values import KeySummary, summarize
from flowdbg.adapter import Adapter, AdapterInfo, Capability, RunOptions
from flowdbg.breakpoints import (
    Breakpoint,
    BreakpointType,
    KnownNames,
    exception_name_problem,
    unknown_name,
)
from flowdbg.controller import Controller, IdTaken
from flowdbg.errors import (
    AdapterError,
    AdapterNotFound,
    AdapterUnavailable,
    BreakpointError,
    BreakpointWarning,
    NotStoppedError,
    PathError,
)
from flowdbg.events import Event, Kind, Position, RunInfo
from flowdbg.patching import LOCK
from flowdbg.plugins import RECORDER, Hooks, make_plugin_manager
from flowdbg.recorder import OVERFLOW, Recorder, run_record, step_record
from flowdbg.runtime import _REWIND, _RUN_HANDLE, RunScope, Unit, current_unit
from flowdbg.stops import Action, Status, Stop

if TYPE_CHECKING:
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.runlog import RunLog
    from flowdbg.server import DebugServer
    from flowdbg.store import Store
    from flowdbg.timetravel import RecordedCalls

log = logging.getLogger("flowdbg")

__all__ = ["Debugger", "RunHandle"]

_AUTO: Any = object()


def _as_given(config: Any) -> Any:
    """A copy of a run's config as it is now: the run may change what it holds in place (an
    OpenAI agent's tools write the run context they are given) before the recorder writes it."""
    if config is None:
        return None
    try:
        return copy.deepcopy(config)
    except Exception:  # an object that cannot be copied: recorded as it is when written
        return config


class RunHandle:
    """A callable running under the debugger in a worker thread (see :meth:`Debugger.start`)."""

    def __init__(
        self,
        debugger: Debugger,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        name: str | None = None,
    ) -> None:
        self.debugger = debugger
        #: id of the first top-level run the callable started (None until it starts one; for
        #: a run rewound at a stop, the run that goes on: see :meth:`Debugger.rewind`)
        self.run_id: str | None = None
        self._follow = False
        self._fn = fn
        self._args = args
        self._kwargs = kwargs
        #: call ``fn`` in an event loop of the worker thread (see :meth:`Debugger.start`)
        self._in_loop = False
        self._done = threading.Event()
        self._started = threading.Event()
        self._value: Any = None
        self._exc: BaseException | None = None
        #: recorded with the first run the callable starts: its target's reference, and
        #: ``(origin, run id, step)`` of the run it was made from (set by fork and rerun)
        self._target_ref: str | None = None
        self._made_from: tuple[str, str, int | None] | None = None
        #: ``(state,)``: the run's recorded input is the state a fork starts from (what the
        #: callable passes its framework may be a command to go on from there)
        self._start_input: tuple[Any] | None = None
        #: the config the callable runs its target with (the ``RunOptions`` among its
        #: arguments), recorded with the run so that a rerun can start with it again
        self._config: Any = None
        #: a rerun's recorded calls, served to the run it starts
        self._calls: RecordedCalls | None = None
        #: for :meth:`Debugger.rerun`: the recorded calls, with how many were served and run
        #: live, and the first call of each branch that differed from the record
        self.calls: RecordedCalls | None = None
        label = name or getattr(fn, "__qualname__", None) or repr(fn)
        self._thread = threading.Thread(target=self._work, name=f"flowdbg-run:{label}", daemon=True)

    def _start(self) -> None:
        self.debugger._ctl.worker_started()
        self._thread.start()

    def _work(self) -> None:
        _RUN_HANDLE.set(self)
        try:
            if self._in_loop:  # a method of a target that only runs under an event loop
                value = asyncio.run(_call(self._fn, self._args, self._kwargs))
            else:
                value = self._fn(*self._args, **self._kwargs)
                if _inspect.isawaitable(value):
                    value = asyncio.run(_await(value))
            self._value = value
        except BaseException as exc:  # handed to result(), re-raised there unchanged
            if isinstance(exc, RuntimeError) and str(exc) == "no running event loop":
                _add_note(
                    exc,
                    "flowdbg: Debugger.start calls its callable in a worker thread, where no "
                    "event loop runs; give it an async function (async def main(): return "
                    "await wf.run(...)) or the target's method itself (dbg.start(wf.run, ...)), "
                    "which then runs in an event loop of that thread",
                )
            self._exc = exc
        finally:
            self._done.set()
            self._started.set()
            self.debugger._ctl.worker_finished()

    def done(self) -> bool:
        """Whether the callable has returned or raised."""
        return self._done.is_set()

    @property
    def log(self) -> RunLog:
        """The run log of the run this callable started (so far).

        :raises LookupError: when the callable has not started a run (yet).
        """
        if self.run_id is None:
            raise LookupError("the run has not started yet; wait with handle.wait_started()")
        return self.debugger.run_log(self.run_id)

    def wait_started(self, timeout: float | None = None) -> str | None:
        """Wait until the callable starts its first run; return that run's id."""
        self._started.wait(timeout)
        return self.run_id

    def result(self, timeout: float | None = None) -> Any:
        """The callable's return value, or its own exception re-raised unchanged.

        :param timeout: seconds to wait; ``None`` waits for ever.
        :raises TimeoutError: when it has not finished in time (it may be stopped: see
            ``dbg.stops``).
        """
        if not self._done.wait(timeout):
            raise TimeoutError(self._why_not_done(timeout))
        if self._exc is not None:
            raise self._exc
        return self._value

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The exception the callable raised, or ``None`` (waits like :meth:`result`)."""
        if not self._done.wait(timeout):
            raise TimeoutError(self._why_not_done(timeout))
        return self._exc

    def _why_not_done(self, timeout: float | None) -> str:
        ctl = self.debugger._ctl
        scope = next((r for r in ctl.active_runs if r.run_id == self.run_id), None)
        if scope is not None and scope.terminated:
            running = ctl.running_units([scope])
            if running:
                now = time.time()
                names = ", ".join(
                    f"{u.node!r} (step {u.step}, {now - u.record_value('started_at'):.1f} s)"
                    for u in running
                )
                return (
                    f"the run was terminated, but {names} is still running and cannot be "
                    "interrupted there; the run ends when it returns"
                )
        stops = ", ".join(s.id for s in self.debugger.stops) or "none"
        return (
            f"the run did not finish within {timeout} s (open stops: {stops}); resume it with "
            "dbg.resume() or end it with dbg.terminate()"
        )

    def __repr__(self) -> str:
        state = "done" if self.done() else "running"
        return f"<RunHandle {self.run_id or '?'} {state}>"


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _planned_fork(
    store: Any,
    run_id: str,
    step: int,
    edits: Mapping[str, Any] | None,
    adapter: Adapter,
    target: Any,
) -> Any:
    """The :class:`flowdbg.timetravel.ForkPoint` of a fork or rewind, planned with what the
    adapter refuses and lets edits name, and checked by the adapter against ``target``."""
    from flowdbg.timetravel import plan_fork

    point = plan_fork(
        store,
        run_id,
        step,
        edits,
        problems=adapter.fork_problems,
        views=sorted(adapter.fork_views),
        any_unit=adapter.fork_any_unit,
    )
    adapter.check_fork(target, point)
    return point


def _add_note(exc: BaseException, text: str) -> None:
    """``exc.add_note(text)``, on Python 3.10 too (where tracebacks do not print notes)."""
    add = getattr(exc, "add_note", None)
    if add is not None:
        add(text)
    else:  # pragma: no cover - Python 3.10
        exc.__notes__ = [*getattr(exc, "__notes__", ()), text]  # type: ignore[attr-defined]


async def _call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    value = fn(*args, **kwargs)
    if _inspect.isawaitable(value):
        value = await value
    return value


class Debugger:
    """One debug session: breakpoints, the controller, observers and attached targets.

    :param stop_on_entry: stop (reason ``ENTRY``) at the first point of every top-level run.
    :param idle_timeout: seconds after which a forgotten stop resumes by itself; ``None``
        (the default) keeps stops until they are resumed.
    :param plugins: extra plugin objects with ``@flowdbg.hookimpl`` methods (observers).
    :param record: write every run and step to a store; ``None`` (the default) records unless
        the environment variable ``FLOWDBG_RECORD`` is ``0``.
    :param db: the store's SQLite file; default ``$FLOWDBG_DB``, else ``.flowdbg/flowdbg.db`` in
        the nearest folder from the current one up that has a ``.flowdbg`` folder, else in the
        current one. When the default cannot be written, runs go on unrecorded (``store`` is
        ``None``) with one logged warning.
    :param redact: key patterns whose values are replaced by ``[REDACTED]`` in the recording;
        ``None`` uses the default list (api_key, token, secret, password, authorization...).
    :param record_queue: finished steps waiting for the store's writer thread at most
        (200,000 by default); then ``record_overflow`` applies.
    :param record_overflow: ``"wait"`` (the default): the thread that finished a step waits
        until the writer has written a quarter of the queue, so a run that outruns the writer
        slows down for a moment and no step is lost; ``"drop"``: new steps are dropped (counted
        in ``dbg.recorder.dropped``, one warning), and the run never waits.
    :param keep_runs: how many finished top-level runs :attr:`runs` keeps in memory, with
        their units and values (20 by default); older runs are in the store, if recording. Each
        kept run holds its values (and a framework's objects among them) alive: a process that
        runs many small workflows attached pays the garbage collector's scans of them
        (bench/RESULTS.md); ``1`` keeps only the last run, ``0`` none (a finished run's log is
        then only in the store).
    :raises flowdbg.store.StoreError: when recording is on and the database given as ``db``
        cannot be used.
    :raises ValueError: for an unknown ``record_overflow``, a ``record_queue`` below 1 or a
        negative ``keep_runs``.
    """

    def __init__(
        self,
        *,
        stop_on_entry: bool = False,
        idle_timeout: float | None = None,
        plugins: Iterable[Any] = (),
        record: bool | None = None,
        db: str | os.PathLike[str] | None = None,
        redact: Iterable[str] | None = None,
        record_queue: int = 200_000,
        record_overflow: str = "wait",
        keep_runs: int = 20,
    ) -> None:
        if isinstance(keep_runs, bool) or not isinstance(keep_runs, int) or keep_runs < 0:
            raise ValueError(f"keep_runs must be an int of 0 or more, got {keep_runs!r}")
        if idle_timeout is not None and idle_timeout <= 0:
            raise ValueError(f"idle_timeout must be positive seconds or None, got {idle_timeout!r}")
        if record_overflow not in OVERFLOW:
            raise ValueError(
                f"record_overflow must be one of {', '.join(map(repr, OVERFLOW))}, not "
                f"{record_overflow!r}"
            )
        if isinstance(record_queue, bool) or not isinstance(record_queue, int) or record_queue < 1:
            raise ValueError(f"record_queue must be a positive int, got {record_queue!r}")
        self._pm, entry_points = make_plugin_manager(plugins)
        self._hooks = Hooks(self._pm, self)
        self._ctl = Controller(
            self._hooks, stop_on_entry=stop_on_entry, idle_timeout=idle_timeout, keep=keep_runs
        )
        self._keep_runs = keep_runs
        self._attached: dict[int, tuple[Any, Adapter]] = {}
        #: the reference of each attached target (given, or looked up at its first run)
        self._refs: dict[int, str | None] = {}
        self._installed: dict[str, Adapter] = {}
        self._adapters = self._collect_adapters(entry_points)
        if record is None:
            record = os.environ.get("FLOWDBG_RECORD", "1").strip().lower() not in _FALSE
        self._recorder: Recorder | None = None
        if record:
            from flowdbg.store import DEFAULT_REDACT, open_recording_store

            store = open_recording_store(
                db, redact=DEFAULT_REDACT if redact is None else tuple(redact)
            )
            if store is not None:  # None: the default database cannot be used (logged once)
                self._recorder = Recorder(store, max_queue=record_queue, overflow=record_overflow)
                self._pm.register(self._recorder, name=RECORDER)
                self._hooks.refresh()

    # ------------------------------------------------------------- recording

    @property
    def recorder(self) -> Recorder | None:
        """The recorder writing runs to :attr:`store` (its ``dropped`` and ``waits`` counts),
        or ``None`` when recording is off."""
        return self._recorder

    @property
    def store(self) -> Store | None:
        """The store runs are recorded to, or ``None`` when recording is off."""
        return None if self._recorder is None else self._recorder.store

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every finished step and run is written to the store.

        :returns: ``False`` if ``timeout`` seconds passed first (or ``True`` with no recording).
        """
        return True if self._recorder is None else self._recorder.flush(timeout)

    @property
    def runs(self) -> list[RunLog]:
        """The run log of the top-level runs of this debugger (running and the last
        ``keep_runs`` finished, 20 by default), oldest first."""
        scopes = [*self._ctl.history, *self._ctl.active_runs]
        scopes.sort(key=lambda s: s.info.started_at)
        return [run_log(s) for s in scopes]

    def run_log(self, run_id: str) -> RunLog:
        """The run log of one run of this debugger (top-level or nested) by id or id prefix.

        :raises LookupError: when this debugger has no such run in memory.
        """
        for scope in [*self._ctl.history, *self._ctl.active_runs]:
            found = _find_scope(scope, run_id)
            if found is not None:
                return run_log(found)
        if self._recorder is not None:
            raise LookupError(
                f"this debugger has no run {run_id!r} in memory; recorded runs are in the store "
                "(flowdbg runs show ID)"
            )
        # nothing was recorded: pointing to the store would send the user after nothing
        keep = self._keep_runs
        kept = {0: "no finished run", 1: "only the last finished run"}.get(
            keep, f"the last {keep} finished runs"
        )
        raise LookupError(
            f"this debugger has no run {run_id!r} in memory: it keeps {kept} "
            f"(keep_runs={keep}) and records none (no store); keep more with "
            "Debugger(keep_runs=N) or record runs (record=True, then flowdbg runs show ID)"
        )

    # ------------------------------------------------------------- adapters

    def _collect_adapters(self, entry_points: list[Any]) -> dict[str, AdapterInfo]:
        found: list[Adapter] = []

        def register(adapter: Adapter) -> None:
            if isinstance(adapter, type) and issubclass(adapter, Adapter):
                adapter = adapter()
            if not isinstance(adapter, Adapter):
                raise AdapterError(
                    f"flowdbg_register_adapters got {adapter!r}; register an instance of a "
                    "flowdbg.Adapter subclass"
                )
            found.append(adapter)

        self._hooks.register_adapters(register)
        infos: dict[str, AdapterInfo] = {}
        for ep in entry_points:
            if ep.module is None:
                infos[ep.name] = AdapterInfo(name=ep.name, available=False, reason=ep.error)
        for adapter in found:
            reason = adapter.unavailable_reason()
            infos[adapter.name] = AdapterInfo(
                name=adapter.name,
                available=reason is None,
                reason=reason,
                adapter=adapter,
                capabilities=frozenset(adapter.capabilities),
                version=adapter.framework_version(),
                extra=adapter.extra,
            )
        return dict(sorted(infos.items()))

    @property
    def adapters(self) -> dict[str, AdapterInfo]:
        """Every known adapter by name, usable or not (with the reason)."""
        return dict(self._adapters)

    def register_plugin(self, plugin: Any, name: str | None = None) -> None:
        """Register an observer plugin after construction."""
        self._pm.register(plugin, name=name)
        self._pm.check_pending()
        self._hooks.refresh()  # the controller follows (Hooks.listen)

    def unregister_plugin(self, plugin: Any) -> None:
        """Remove an observer plugin (one given to :meth:`register_plugin` or ``plugins=``);
        its hooks are no longer called. Removing one not registered does nothing."""
        if self._pm.is_registered(plugin):
            self._pm.unregister(plugin)
            self._hooks.refresh()

    def adapter_for(self, target: Any) -> Adapter:
        """The adapter that accepts ``target``.

        :raises AdapterUnavailable: when it exists but its framework is missing.
        :raises AdapterNotFound: when no adapter accepts it.
        """
        for info in self._adapters.values():
            if info.adapter is not None and info.adapter.matches(target):
                if not info.available:
                    raise AdapterUnavailable(info.reason or f"adapter {info.name!r} is unavailable")
                return info.adapter
        usable = ", ".join(n for n, i in self._adapters.items() if i.available) or "none"
        missing = "; ".join(
            f"{n}: {i.reason}" for n, i in self._adapters.items() if not i.available
        )
        what = f"{type(target).__module__}.{type(target).__qualname__}"
        msg = f"no flowdbg adapter accepts a {what} object; available adapters: {usable}"
        if missing:
            msg += f" (unavailable: {missing})"
        if isinstance(target, type) and any(
            info.adapter is not None and _accepts_instance(info.adapter, target)
            for info in self._adapters.values()
        ):  # a Workflow subclass, say, given where its instance is wanted
            raise AdapterNotFound(
                f"{msg}. {target.__qualname__} is a class: attach an instance of it "
                f"({target.__qualname__}(...); on the command line, file.py:{target.__name__}() "
                "calls it)"
            )
        raise AdapterNotFound(msg + ". Attach a compiled graph, workflow or agent instead.")

    def attach(self, target: Any, *, ref: str | None = None) -> Any:
        """Instrument ``target`` (a compiled graph, workflow, agent...). Idempotent.

        :param ref: how to import the target again, ``path/to/file.py:obj`` or
            ``package.module:obj`` (``obj()`` for a function building it), recorded with each
            of its runs so that :meth:`fork` and ``flowdbg runs fork`` find the current code
            (a file path is made absolute). Without it, the first run looks for the target
            among the attributes of the loaded modules (a module-level ``app = ...``: the
            script's file for ``__main__``, else the module's name); a target built inside a
            function gets no reference, and a fork of its runs needs ``target=``.
        :returns: ``target`` itself, for chaining.
        :raises AdapterNotFound: no adapter accepts ``target``.
        :raises AdapterUnavailable: its adapter's framework is not installed.
        """
        adapter = self.adapter_for(target)
        with LOCK:  # one lock for every adapter's changes to a framework (flowdbg.patching)
            if id(target) in self._attached:
                return target
            adapter.attach(target, self)
            self._attached[id(target)] = (target, adapter)
            if ref is not None:
                from flowdbg._lineage import normalize_reference

                self._refs[id(target)] = normalize_reference(ref)
        return target

    def install(self, adapter: str) -> None:
        """Instrument a framework library-wide: every run it starts from its own entry points
        reports to this debugger, not only runs of attached targets (for agent frameworks whose
        runners are static methods and whose agents are built on the fly). Idempotent; undone
        by :meth:`uninstall` or :meth:`close`.

        :param adapter: the adapter's name (``flowdbg adapters`` lists them).
        :raises AdapterNotFound: no adapter has that name.
        :raises AdapterUnavailable: its framework is not installed.
        :raises AdapterError: the adapter instruments targets only.
        """
        info = self._adapters.get(adapter)
        if info is None or info.adapter is None:
            known = ", ".join(sorted(self._adapters)) or "none"
            raise AdapterNotFound(f"no adapter {adapter!r}; adapters: {known}")
        if not info.available:
            raise AdapterUnavailable(info.reason or f"adapter {adapter!r} is unavailable")
        with LOCK:
            if adapter in self._installed:
                return
            info.adapter.install(self)
            self._installed[adapter] = info.adapter

    def uninstall(self, adapter: str | None = None) -> None:
        """Undo :meth:`install` of ``adapter`` (of every adapter with ``None``).

        Runs the installation debugs (runs of no attached target) that are held at a stop, or
        still running, go on undebugged, as :meth:`detach` lets a target's runs go: their
        stops resume and no point of theirs stops again (a warning names the stops let go).
        """
        removed: list[str] = []
        with LOCK:
            names = list(self._installed) if adapter is None else [adapter]
            for name in names:
                installed = self._installed.pop(name, None)
                if installed is not None:
                    installed.uninstall(self)
                    removed.append(name)
        if not removed:
            return
        held = self._ctl.release(
            lambda scope: scope.target is None and scope.info.framework in removed
        )
        if held:
            log.warning(
                "uninstalled %s while %d of its runs' branches were held (%s): they go on "
                "undebugged",
                ", ".join(repr(name) for name in removed),
                len(held),
                ", ".join(stop.id for stop in held),
            )

    @property
    def installed(self) -> list[str]:
        """The adapters installed library-wide (see :meth:`install`)."""
        return list(self._installed)

    def detach(self, target: Any | None = None) -> None:
        """Restore ``target`` exactly as it was before :meth:`attach` (all targets if None).

        Runs of it that are held at a stop, or still running, go on undebugged: their stops
        resume and no point of theirs stops again (a warning names the stops let go).
        """
        with LOCK:
            if target is None:
                detached = [obj for obj, _ in self._attached.values()]
                for obj, adapter in list(self._attached.values()):
                    adapter.detach(obj)
                self._attached.clear()
                self._refs.clear()
            else:
                entry = self._attached.pop(id(target), None)
                self._refs.pop(id(target), None)
                detached = [] if entry is None else [target]
                if entry is not None:
                    entry[1].detach(entry[0])
        # (runs of an installed adapter or begun without a target are not these targets')
        held = self._ctl.release(lambda scope: any(scope.target is obj for obj in detached))
        if held:
            what = "every target" if target is None else _target_label(target)
            log.warning(
                "detached %s while %d of its runs' branches were held (%s): they go on undebugged",
                what,
                len(held),
                ", ".join(stop.id for stop in held),
            )

    @property
    def attached(self) -> list[Any]:
        """The attached targets."""
        return [t for t, _ in self._attached.values()]

    def describe(self, target: Any) -> dict[str, Any]:
        """Nodes and edges of ``target`` from its adapter.

        :returns: the adapter's description, a dict that also draws itself: in Jupyter it shows
            as a Mermaid picture, and its ``mermaid()`` and ``dot()`` give the picture as text
            (a ``flowdbg._diagram.GraphDescription``).
        """
        from flowdbg._diagram import GraphDescription

        return GraphDescription(self.adapter_for(target).describe(target))

    # ------------------------------------------------ the adapter-facing API

    def begin_run(
        self,
        *,
        framework: str,
        name: str,
        input: Any = None,
        parent: Unit | None = _AUTO,
        target: Any = None,
    ) -> RunScope:
        """Start reporting a run (for adapters).

        :param framework: the adapter name.
        :param name: the run's name (graph or workflow name).
        :param input: the run's input.
        :param parent: the enclosing unit; by default the unit executing in this context, so
            a graph run inside a node of another attached graph becomes its child run.
        :param target: the attached object that runs (``detach(target)`` lets its held runs go).
        """
        if parent is _AUTO:
            parent = current_unit()
        return self._ctl.begin_run(
            framework=framework,
            name=name,
            input=input,
            parent=parent,
            target=target,
            lineage=self._lineage,
        )

    def _lineage(
        self, target: Any
    ) -> tuple[
        str | None,
        tuple[str, str, int | None] | None,
        tuple[Any] | None,
        RecordedCalls | None,
        Any,
    ]:
        """The reference, origin, (for a fork) input, (for a rerun) recorded calls and the
        config of a new top-level run of ``target``."""
        handle = _RUN_HANDLE.get()
        ref: str | None = None
        made_from = start = calls = config = None
        rewind = _REWIND.get()
        if rewind:  # the run a rewind restarts (see Rewound.lineage): taken once
            ref, made_from, start = rewind.pop()
            if handle is not None and made_from is not None and handle.run_id == made_from[1]:
                handle._follow = True  # the handle's run goes on as this one
                config = handle._config
        elif handle is not None and handle.debugger is self and handle.run_id is None:
            ref, made_from = handle._target_ref, handle._made_from
            start, calls, config = handle._start_input, handle._calls, handle._config
        if ref is None and target is not None and id(target) in self._attached:
            key = id(target)
            if key not in self._refs:  # looked up once per attached target
                from flowdbg._lineage import module_reference

                self._refs[key] = module_reference(target)
            ref = self._refs[key]
        return ref, made_from, start, calls, config

    def current_unit(self) -> Unit | None:
        """The unit of this debugger executing in this context (thread or task), if any: an
        adapter reports a call a unit makes (a tool, a model) in that unit's frame."""
        unit = current_unit()
        return unit if unit is not None and unit.run.ctl is self._ctl else None

    # ---------------------------------------------------------- breakpoints

    def _add(self, type: BreakpointType, *, strict: bool = False, **kwargs: Any) -> Breakpoint:
        # create() checks the breakpoint: a refused one takes no id
        bp = Breakpoint.create(self._ctl.next_breakpoint_id(), type, **kwargs)
        problems = self._breakpoint_problems(bp, strict=strict)
        while True:
            try:
                added = self._ctl.add_breakpoint(bp)
                break
            except IdTaken:  # another thread took this id first
                bp = Breakpoint.create(self._ctl.next_breakpoint_id(), type, **kwargs)
        _warn_problems(added, problems, stacklevel=3)
        return added

    def _breakpoint_problems(self, bp: Breakpoint, *, strict: bool) -> list[tuple[str, bool]]:
        """Why ``bp`` looks unable to stop (see :meth:`break_before`), each with whether it is
        about its unit name; raises the first with ``strict``."""
        problems: list[tuple[str, bool]] = []
        if bp.type == BreakpointType.EXCEPTION:
            given = {f"{c.__module__}.{c.__qualname__}" for c in bp.compiled.exc_classes}
            for name in bp.exception_types:
                problem = None if name in given else exception_name_problem(name)
                if problem is not None:
                    problems.append((problem, False))
        silent = self._without_handoffs() if bp.type == BreakpointType.HANDOFF else []
        if silent:  # (not an unknown name: no unit of any name would come)
            problems.append(
                (
                    f"adapter {silent[0]!r} reports no handoffs, so this breakpoint never stops "
                    f"in its runs; where handing over is a tool call (LlamaIndex's "
                    f"AgentWorkflow: 'handoff'), break on that tool: "
                    f"break_on_tool('handoff', args_pattern=...)",
                    False,
                )
            )
            known = None
        else:
            known = self._known_names()
        unknown = None if known is None else unknown_name(bp, known)
        if unknown is not None:
            problems.append(("; ".join(unknown), True))
        if strict and problems:
            raise BreakpointError(problems[0][0])
        return problems

    def _without_handoffs(self) -> list[str]:
        """The names of the adapters of the attached targets, when none of them reports
        handoffs (:attr:`Capability.HANDOFFS`); empty when one does, or nothing is attached,
        or a framework is instrumented library-wide."""
        if self._installed:
            return []
        adapters = [adapter for _, adapter in list(self._attached.values())]
        if not adapters or any(Capability.HANDOFFS in a.capabilities for a in adapters):
            return []
        return sorted({adapter.name for adapter in adapters})

    def _known_names(self) -> KnownNames | None:
        """The unit names the attached targets describe, or ``None`` when a name cannot be
        checked: nothing is attached, a framework is instrumented library-wide (its runs are
        not only the attached targets'), or a target's adapter gives no description."""
        if self._installed:
            return None
        descriptions: list[Mapping[str, Any]] = []
        for target, adapter in list(self._attached.values()):
            if Capability.DESCRIBE not in adapter.capabilities:
                return None
            try:
                description = adapter.describe(target)
            except Exception:  # a description that fails checks nothing; it must not refuse
                return None
            if not isinstance(description, Mapping):
                return None
            descriptions.append(description)
        return KnownNames.from_descriptions(descriptions) if descriptions else None

    def break_before(
        self,
        node: str,
        *,
        condition: str | Callable[..., Any] | None = None,
        hit_condition: str | int | None = None,
        temporary: bool = False,
        kind: str | Iterable[str] | None = None,
        enabled: bool = True,
        strict: bool = False,
    ) -> Breakpoint:
        """Stop before units whose name matches the glob ``node``.

        The name is checked against the attached targets' descriptions
        (:meth:`flowdbg.Adapter.describe`): a glob that matches none of their nodes (with
        subgraph nodes and listed tasks) or tools sets the breakpoint with a
        :class:`flowdbg.errors.BreakpointWarning` that lists the names there are, closest
        first. Not checked: breakpoints set before anything is attached (they are not checked
        later either), names given ``kind="llm"``, ``"handoff"`` or ``"agent"`` (no
        description lists those), tool names when no description lists tools, and every name
        when a target's description is ``open`` (it runs units it does not list, such as a
        LangGraph ``@entrypoint``'s tasks), when its adapter gives no description, or when a
        framework is instrumented library-wide (:meth:`install`).

        :param condition: sandboxed expression over ``state``, ``input``, ``node``, ``step``,
            ``hits``..., or a Python callable taking a namespace of those names.
        :param hit_condition: ``"3"`` (third hit only), ``">=3"``, ``"%2"``...
        :param temporary: remove the breakpoint after it stops once.
        :param kind: restrict to unit kinds (``node``, ``tool``, ``llm``, ``handoff``, ``agent``).
        :param strict: refuse (raise) instead of warning when the name matches nothing.
        :raises ExpressionError: for a bad condition, at once.
        :raises BreakpointError: for an unknown kind, or with ``strict`` an unknown name.
        """
        return self._add(
            BreakpointType.NODE,
            pattern=node,
            positions=(Position.BEFORE.value,),
            kinds=_kinds(kind),
            condition=condition,
            hit_condition=hit_condition,
            temporary=temporary,
            enabled=enabled,
            strict=strict,
        )

    def break_after(
        self,
        node: str,
        *,
        condition: str | Callable[..., Any] | None = None,
        hit_condition: str | int | None = None,
        temporary: bool = False,
        kind: str | Iterable[str] | None = None,
        enabled: bool = True,
        strict: bool = False,
    ) -> Breakpoint:
        """Stop after units whose name matches ``node`` (arguments and name checks as
        :meth:`break_before`)."""
        return self._add(
            BreakpointType.NODE,
            pattern=node,
            positions=(Position.AFTER.value,),
            kinds=_kinds(kind),
            condition=condition,
            hit_condition=hit_condition,
            temporary=temporary,
            enabled=enabled,
            strict=strict,
        )

    def break_on_exception(
        self,
        *types: type[BaseException] | str,
        node: str = "*",
        condition: str | Callable[..., Any] | None = None,
        hit_condition: str | int | None = None,
        temporary: bool = False,
        strict: bool = False,
    ) -> Breakpoint:
        """Stop at ``error`` points: any exception, or only these types (classes or names).

        A name matches the exception's class or any base class by simple or qualified name.
        Resuming lets the original exception continue unchanged.

        A name must be a class name (``"TimeoutError"``, ``"httpx.ReadTimeout"``), else
        :class:`BreakpointError`. A name that looks mistyped warns
        (:class:`flowdbg.errors.BreakpointWarning`; ``strict`` raises): a dotted name whose
        module is imported but has no such exception class, a builtin that is no exception,
        or a name of no exception class defined so far that does not end like one
        (``...Error``, ``...Exception``, ``...Exit``, ``...Interrupt``, ``...Warning``...) or
        is one letter away from one (see :func:`flowdbg.breakpoints.exception_name_problem`).
        ``node`` is checked like :meth:`break_before`'s name.
        """
        return self._add(
            BreakpointType.EXCEPTION,
            pattern=node,
            positions=(Position.ERROR.value,),
            exception_types=tuple(types),
            condition=condition,
            hit_condition=hit_condition,
            temporary=temporary,
            strict=strict,
        )

    def watch(
        self,
        path: str,
        *,
        condition: str | Callable[..., Any] | None = None,
        node: str = "*",
        hit_condition: str | int | None = None,
        temporary: bool = False,
        strict: bool = False,
    ) -> Breakpoint:
        """Data breakpoint: stop after a unit that changed the value at ``path`` in the state.

        :param condition: evaluated with ``value`` bound to the new value.
        :param node: only units whose name matches this glob (checked like
            :meth:`break_before`'s, ``strict`` too).
        """
        return self._add(
            BreakpointType.WATCH,
            pattern=node,
            positions=(Position.AFTER.value,),
            watch_path=path,
            condition=condition,
            hit_condition=hit_condition,
            temporary=temporary,
            strict=strict,
        )

    def break_on_tool(
        self,
        name: str = "*",
        *,
        args_pattern: str | None = None,
        condition: str | Callable[..., Any] | None = None,
        hit_condition: str | int | None = None,
        temporary: bool = False,
        strict: bool = False,
    ) -> Breakpoint:
        """Stop before tool calls whose name matches ``name`` and whose serialized arguments
        match the regular expression ``args_pattern`` (searched anywhere).

        ``name`` is checked against the tools the attached targets' descriptions list, when
        every one lists them (as :meth:`break_before` checks node names; ``strict`` raises).
        """
        return self._add(
            BreakpointType.TOOL,
            pattern=name,
            positions=(Position.BEFORE.value,),
            kinds=(Kind.TOOL.value,),
            args_pattern=args_pattern,
            condition=condition,
            hit_condition=hit_condition,
            temporary=temporary,
            strict=strict,
        )

    def break_on_handoff(
        self,
        to: str = "*",
        *,
        condition: str | Callable[..., Any] | None = None,
        hit_condition: str | int | None = None,
        temporary: bool = False,
        strict: bool = False,
    ) -> Breakpoint:
        """Stop before agent handoffs to a target matching ``to`` (checked against the attached
        targets' nodes like :meth:`break_before`'s name; ``strict`` raises)."""
        return self._add(
            BreakpointType.HANDOFF,
            pattern=to,
            positions=(Position.BEFORE.value,),
            kinds=(Kind.HANDOFF.value,),
            condition=condition,
            hit_condition=hit_condition,
            temporary=temporary,
            strict=strict,
        )

    def break_on_event(
        self,
        pattern: str = "*",
        *,
        kind: str | Iterable[str] | None = None,
        condition: str | Callable[..., Any] | None = None,
        strict: bool = False,
    ) -> Breakpoint:
        """Stop before every unit matching ``pattern`` (``"*"``: single-step through all;
        name checks as :meth:`break_before`)."""
        return self._add(
            BreakpointType.EVENT,
            pattern=pattern,
            positions=(Position.BEFORE.value,),
            kinds=_kinds(kind),
            condition=condition,
            strict=strict,
        )

    def logpoint(
        self,
        node: str,
        message: str,
        *,
        position: str = "before",
        condition: str | Callable[..., Any] | None = None,
        hit_condition: str | int | None = None,
        kind: str | Iterable[str] | None = None,
        strict: bool = False,
    ) -> Breakpoint:
        """Log ``message`` (a ``str.format`` template over the condition names, e.g.
        ``"count is {state[count]}"``) at matching points; never stops. Messages go to the
        ``flowdbg.logpoint`` logger and the ``flowdbg_on_log`` hook. ``node`` is checked like
        :meth:`break_before`'s name (``strict`` raises)."""
        return self._add(
            BreakpointType.LOGPOINT,
            pattern=node,
            positions=(str(position),),
            kinds=_kinds(kind),
            message=message,
            condition=condition,
            hit_condition=hit_condition,
            strict=strict,
        )

    def add_breakpoint(
        self, data: Breakpoint | Mapping[str, Any], *, strict: bool = False
    ) -> Breakpoint:
        """Add a saved breakpoint (a :class:`Breakpoint` or its ``model_dump()``).

        It keeps its id when free, else gets a new one. Its kinds are checked (an unknown one
        raises :class:`BreakpointError`), its name and exception names like those of the
        ``break_*`` methods (a warning, or with ``strict`` an error).
        """
        bp = data if isinstance(data, Breakpoint) else Breakpoint.from_dict(data)
        if bp._c is None:  # built directly, not by create(): check it the same way
            bp._compile()
        problems = self._breakpoint_problems(bp, strict=strict)
        if any(b.id == bp.id for b in self._ctl.breakpoints):
            bp = bp.model_copy(update={"id": self._ctl.next_breakpoint_id()})
            bp._compile()
        added = self._ctl.add_breakpoint(bp)
        _warn_problems(added, problems, stacklevel=2)
        return added

    @property
    def breakpoints(self) -> list[Breakpoint]:
        """The breakpoints, in the order they were set."""
        return self._ctl.breakpoints

    def get_breakpoint(self, bp_id: str) -> Breakpoint:
        """The breakpoint with id ``bp_id``.

        :raises BreakpointError: when there is none.
        """
        for bp in self._ctl.breakpoints:
            if bp.id == bp_id:
                return bp
        known = ", ".join(b.id for b in self._ctl.breakpoints) or "none"
        raise BreakpointError(f"no breakpoint {bp_id!r}; breakpoints: {known}")

    def remove(self, bp: Breakpoint | str) -> Breakpoint:
        """Remove a breakpoint (object or id).

        :raises BreakpointError: when there is no such breakpoint.
        """
        bp_id = bp.id if isinstance(bp, Breakpoint) else bp
        removed = self._ctl.remove_breakpoint(bp_id)
        if removed is None:
            self.get_breakpoint(bp_id)  # raises with the list of ids
        assert removed is not None
        return removed

    def clear(self) -> None:
        """Remove every breakpoint."""
        self._ctl.clear_breakpoints()

    # -------------------------------------------------------------- running

    def start(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> RunHandle:
        """Run ``fn(*args, **kwargs)`` in a worker thread and return its :class:`RunHandle`.

        An async callable (or one returning an awaitable) runs on an event loop in that thread.
        So does a method of an attached target that only runs under an event loop (its
        adapter's :meth:`~flowdbg.adapter.Adapter.is_async`), such as a LlamaIndex workflow's
        ``run``, which needs one running when it is called: ``dbg.start(wf.run, topic="x")``
        returns what awaiting its handler returns.
        """
        handle = RunHandle(self, fn, args, kwargs)
        handle._in_loop = self._needs_loop(fn)
        # an adapter's invoke with its RunOptions (flowdbg run, a server's start): the run is
        # recorded with the config it was given
        config = next((a.config for a in args if isinstance(a, RunOptions)), None)
        handle._config = _as_given(config)
        handle._start()
        return handle

    def _needs_loop(self, fn: Callable[..., Any]) -> bool:
        """Whether ``fn`` is a (sync) method of an attached target that only runs under an
        event loop."""
        owner = getattr(fn, "__self__", None)
        if owner is None or _inspect.iscoroutinefunction(fn):
            return False
        entry = self._attached.get(id(owner))
        if entry is None or entry[0] is not owner:
            return False
        try:
            return bool(entry[1].is_async(owner))
        except Exception:  # an adapter's question is no reason to refuse the start
            return False

    def fork(
        self,
        run_id: str,
        step: int,
        edits: Mapping[str, Any] | None = None,
        target: Any = None,
        *,
        config: Mapping[str, Any] | None = None,
    ) -> RunHandle:
        """Start a new run of the *current* code of a recorded run's target from the state
        the record holds after ``step``, in a worker thread.

        What runs first is what the current code routes to from the step's node given that
        state (edited: an edit of a routing key changes the route), or, for a node that chose
        its successor itself (a ``Command(goto=...)``, a ``Goto``), the nodes the record says
        came next. The run goes on under this debugger like any run (breakpoints, stepping,
        recording); the record names the run it came from and the step (``origin``
        ``"fork"``, ``forked_from``, ``fork_step``), which ``flowdbg runs show`` and ``runs ls
        --tree`` show.

        :param run_id: the recorded run (an id or a unique prefix) in :attr:`store`.
        :param step: the step to start after; ``0`` starts from the run's input. A step
            inside a node (a tool or model call), one that ran beside parallel nodes, one
            that did not complete or whose values were recorded ``partial`` is refused.
        :param edits: ``{path: value}`` applied to the recorded state first, paths as
            :meth:`set` takes them (``"messages[-1].content"``).
        :param target: the object to run (attached if it is not), or a reference
            (``"app.py:graph"``, ``"pkg.mod:graph"``) to import; by default the reference
            the run recorded (see :meth:`attach`).
        :param config: the run's config (as ``flowdbg run --config`` takes it); by default the
            config the recorded run was started with, if it recorded one.
        :returns: the :class:`RunHandle` of the new run.
        :raises flowdbg.timetravel.ForkError: when recording is off, the step cannot be
            forked from (the message names those that can), the run recorded no target and
            none is given, the target is of another framework, its adapter cannot fork, or
            the recorded config had secrets redacted and no ``config`` is given.
        :raises flowdbg.store.RunNotFound: for an unknown run.
        """
        point, target, ref, adapter = self._prepare_fork(run_id, step, edits, target)
        short = point.run.run_id[:8]
        options = self._options_of(point.run, target, adapter, config, "fork")
        self.attach(target, ref=ref)
        run = adapter.afork if adapter.is_async(target) else adapter.fork
        args = (target, point) if options is None else (target, point, options)
        handle = RunHandle(self, run, args, {}, name=f"fork of {short}")
        handle._config = None if options is None else _as_given(options.config)
        handle._target_ref = self._refs.get(id(target))
        handle._made_from = ("fork", point.run.run_id, point.step)
        handle._start_input = (point.state,)
        handle._start()
        return handle

    def _prepare_fork(
        self, run_id: str, step: int, edits: Mapping[str, Any] | None, target: Any
    ) -> tuple[Any, Any, str | None, Adapter]:
        """Check a fork before it starts: ``(point, target, reference, adapter)``."""

        run, target, ref, adapter = self._made_from_run(run_id, target, Capability.FORK)
        store = self._recording_store(flush=False)
        point = _planned_fork(store, run.run_id, step, edits, adapter, target)
        return point, target, ref, adapter

    def _recording_store(self, *, flush: bool = True) -> Store:
        from flowdbg.timetravel import ForkError

        store = self.store
        if store is None:
            raise ForkError(
                "this debugger does not record (record=False or FLOWDBG_RECORD=0), so it has "
                "no runs to fork, rerun or rewind; create it with record=True and db= the "
                "database of the run"
            )
        # The runs of this process are written in the writer's next lull: what has ended so
        # far is read from the store, so it is written first.
        if flush and not self.flush(timeout=30):
            raise ForkError(
                "the record is not written yet (the recorder's writer is behind, or could not "
                "write: see the log); try again"
            )
        return store

    def _options_of(
        self,
        run: RunRecord,
        target: Any,
        adapter: Adapter,
        config: Mapping[str, Any] | None,
        doing: str,
    ) -> RunOptions | None:
        """The options a run made from ``run`` starts with: ``config``, else the config ``run``
        was started with; ``None`` for none. Checked by the adapter before anything runs."""
        from flowdbg.timetravel import ForkError, _redacted_paths

        short = run.run_id[:8]
        if config is None:
            config = run.config
            if config is None and doing == "rerun":
                config = adapter.recorded_config(run)
            hidden = [] if config is None else _redacted_paths(config)
            if hidden:
                raise ForkError(
                    f"run {short} was started with a config whose secrets were not recorded "
                    f"({', '.join(hidden[:3])}{', ...' if len(hidden) > 3 else ''} redacted): "
                    f"give the whole config again (flowdbg runs {doing} {short} --config "
                    f"JSON, or config= in Python)"
                )
        if config is None:
            return None
        if not isinstance(config, Mapping):
            raise ForkError(
                f"the config of a {doing} must be a JSON object, not {type(config).__name__}"
            )
        options = RunOptions(config=dict(config))
        adapter.check_run(target, options)
        return options

    def _made_from_run(
        self, run_id: str, target: Any, capability: Capability | None
    ) -> tuple[RunRecord, Any, str | None, Adapter]:
        """The recorded run a new run is made from, the target to run (given, or loaded from
        the reference the run recorded), its reference and its adapter, checked."""
        from flowdbg.timetravel import ForkError

        run = self._recording_store().get_run(run_id)
        short = run.run_id[:8]
        if run.parent_run_id is not None:
            raise ForkError(
                f"run {short} is nested in run {run.parent_run_id[:8]} (at its step "
                f"{run.parent_step}); use the top-level run instead"
            )
        ref = target if isinstance(target, str) else None
        if target is None:
            ref = run.target
            if ref is None:
                raise ForkError(
                    f"run {short} recorded no target reference (its target was not a module "
                    "attribute and none was given to attach(ref=...)); pass target= the graph "
                    "to run, or its reference ('app.py:graph')"
                )
        if ref is not None:
            from flowdbg._lineage import live_object
            from flowdbg.cli._target import TargetError, load_target

            found, target = live_object(ref)
            if not found:
                if _LOADING.get():
                    raise ForkError(
                        f"importing the target {ref} forked again: the file runs a fork when "
                        "it is imported; put that code under if __name__ == '__main__':"
                    )
                token = _LOADING.set(True)
                try:
                    target = load_target(ref, self)
                except TargetError as exc:
                    raise ForkError(f"cannot load the target of run {short}: {exc}") from exc
                finally:
                    _LOADING.reset(token)
        adapter = self.adapter_for(target)
        if adapter.name != run.framework:
            raise ForkError(
                f"run {short} is a {run.framework} run, but the target given is a "
                f"{adapter.name} object; give the {run.framework} target it ran"
            )
        if capability is not None and capability not in adapter.capabilities:
            doing = "fork runs" if capability is Capability.FORK else "serve recorded calls"
            raise ForkError(
                f"adapter {adapter.name!r} cannot {doing} (no capability {capability.value!r})"
                + (
                    "; run the target again with its input instead"
                    if doing == "fork runs"
                    else "; rerun it with every call live: cached_calls='none' "
                    "(flowdbg runs rerun --cached-calls none)"
                )
            )
        return run, target, ref, adapter

    def rerun(
        self,
        run_id: str,
        cached_calls: str = "all",
        target: Any = None,
        *,
        until_divergence: bool = False,
        config: Mapping[str, Any] | None = None,
    ) -> RunHandle:
        """Run a recorded run again from its input with the *current* code of its target, in a
        worker thread, serving its model and tool calls from the record where nothing changed.

        A call (a unit of kind ``llm`` or ``tool``) whose name and input equal those of the
        call at the same position of its branch in the record gets the recorded output without
        running: no model is asked, no tool runs. The first call of a branch that differs
        (another input, another call) runs live, and every later call of that branch too. A
        branch is where calls are made: the node making them (with the subgraph nodes above
        it); a position counts the calls made there, in order. Served units are marked
        ``cached`` in the record (``StepRecord.cached``) and the run log. The run goes on under
        this debugger like any run (a breakpoint before a call that is then served holds
        there; an edit of its input makes it run live).

        :param run_id: the recorded run (an id or a unique prefix) in :attr:`store`.
        :param cached_calls: which calls may be served: ``"all"``, ``"llm"``, ``"tool"`` or
            ``"none"`` (every call runs live: a plain rerun).
        :param target: the object to run, or its reference; by default the run's recorded
            reference (see :meth:`fork`).
        :param until_divergence: end the run at the first call that differs from the record
            instead of making it: the run ends ``terminated`` and ``result()`` raises
            :class:`flowdbg.timetravel.Diverged` (a :class:`flowdbg.Terminated`) naming it.
        :param config: the run's config (as ``flowdbg run --config`` takes it: an OpenAI
            agent's ``{"context": {...}}``, LangGraph's ``RunnableConfig``); by default the
            config the recorded run was started with, if it recorded one.
        :returns: the :class:`RunHandle` of the new run; ``handle.calls`` counts the calls
            served and run live, and names the first that differed in each branch.
        :raises flowdbg.timetravel.ForkError: when recording is off, the run is nested, it
            recorded no target and none is given, the target is of another framework, its
            adapter cannot serve recorded calls (only ``"none"`` then), or the recorded
            config had secrets redacted and no ``config`` is given.
        :raises flowdbg.errors.RunOptionError: when the target cannot take the config.
        :raises ValueError: for an unknown ``cached_calls``.
        """
        from flowdbg.timetravel import CACHED_CALLS, RecordedCalls

        if cached_calls not in CACHED_CALLS:
            raise ValueError(
                f"cached_calls must be one of {', '.join(map(repr, CACHED_CALLS))}, not "
                f"{cached_calls!r}"
            )
        needs = None if cached_calls == "none" else Capability.CACHED_CALLS
        run, target, ref, adapter = self._made_from_run(run_id, target, needs)
        if run.origin in ("fork", "rewind") and run.fork_step:
            # its input is a state from the middle of another run
            from flowdbg.timetravel import ForkError

            raise ForkError(
                f"run {run.run_id[:8]} is a {run.origin} of run {(run.forked_from or '?')[:8]} "
                f"after step {run.fork_step}: its input is the state it started from, not a "
                "run's input; fork that run again after that step instead"
            )
        options = self._options_of(run, target, adapter, config, "rerun")
        store = self._recording_store(flush=False)  # flushed by _made_from_run
        steps: list[Any] = []
        pending = [run.run_id]
        while pending:  # the run's calls and those of its nested runs (subgraphs)
            current = pending.pop()
            steps.extend(s for s in store.get_steps(current) if s.kind in CACHED_CALLS["all"])
            pending.extend(child.run_id for child in store.list_runs(parent=current, limit=None))
        calls = RecordedCalls(
            steps,
            CACHED_CALLS[cached_calls],
            redact=getattr(store, "_redact", None),
            until_divergence=until_divergence,
        )
        self.attach(target, ref=ref)
        method = adapter.ainvoke if adapter.is_async(target) else adapter.invoke
        short = run.run_id[:8]
        from flowdbg.timetravel import _redacted_paths

        start = run.initial_state
        if start is not None and _redacted_paths(start):
            start = None  # a secret the record did not keep: from the input alone, as it ran
        fresh = dataclasses.replace(options or RunOptions(), fresh=True, start_state=start)
        handle = RunHandle(self, method, (target, run.input, fresh), {}, name=f"rerun of {short}")
        handle._config = None if options is None else _as_given(options.config)
        handle._target_ref = self._refs.get(id(target))
        handle._made_from = ("rerun", run.run_id, None)
        handle._calls = handle.calls = calls
        handle._start()
        return handle

    def wait_for_stop(self, timeout: float | None = None) -> Stop | None:
        """Wait for a stop.

        Returns at once with the selected stop when one is open; otherwise returns the stop
        when one occurs, or ``None`` on timeout or when every run has ended (including runs
        started with :meth:`start`). Before any run has started it waits for one.

        A run you start in your own thread may not have begun when this is called; if an
        earlier run has ended and nothing else runs, that reads as "every run has ended" and
        ``None`` comes back at once. Start the run with :meth:`start` (which counts it from the
        moment it returns), or wait until your thread's run has begun.
        """
        return self._ctl.wait_for_stop(timeout)

    def wait_for_stops(self, count: int, timeout: float | None = None) -> list[Stop]:
        """Wait until at least ``count`` stops are open; returns the open stops (fewer on
        timeout or when the runs end)."""
        return self._ctl.wait_for_stops(count, timeout)

    async def wait_for_stop_async(self, timeout: float | None = None) -> Stop | None:
        """Async form of :meth:`wait_for_stop`; never blocks the event loop.

        A task started just before the call (``asyncio.create_task(app.ainvoke(...))``, a task
        group's ``start_soon``) is given a few turns of the event loop to begin its run before
        an earlier run's end counts as "every run has ended"."""
        return await self._ctl.wait_for_stop_async(timeout)

    @property
    def stops(self) -> list[Stop]:
        """The open stops, oldest first."""
        return self._ctl.stops

    @property
    def stop(self) -> Stop | None:
        """The selected stop, or ``None``."""
        return self._ctl.selected

    def select(self, stop_id: str) -> Stop:
        """Make ``stop_id`` the stop that ``inspect``/``set``/``diff``/``resume`` act on."""
        return self._ctl.select(stop_id)

    def status(self) -> Status:
        """The debugger's state (idle, running, stopped, terminated), open stops and runs."""
        sel = self._ctl.selected
        now = time.time()
        return Status(
            state=self._ctl.state_name(),
            stops=self._ctl.stops,
            selected=None if sel is None else sel.id,
            runs=[r.run_id for r in self._ctl.active_runs],
            attached=[type(t).__name__ for t in self.attached],
            running=[
                {
                    "run_id": unit.run.run_id,
                    "node": unit.node,
                    "kind": unit.kind,
                    "step": unit.step,
                    "superstep": unit.superstep,
                    "branch": unit.branch,
                    "path": list(unit.run.path),
                    "seconds": round(now - (unit.record_value("started_at") or now), 3),
                }
                for unit in self._ctl.running_units()
            ],
        )

    @property
    def active_runs(self) -> list[RunInfo]:
        """Top-level runs in progress."""
        return [r.info for r in self._ctl.active_runs]

    # ------------------------------------------------------------ inspection

    def inspect(self, path: str = "", *, stop: str | None = None, source: str | None = None) -> Any:
        """Read ``path`` (e.g. ``messages[-1].content``) at the selected stop.

        The path reads the stop's default view (:attr:`Stop.default_view`: ``input`` at a
        before stop, ``output`` at an after stop, ``state`` at an error stop), the same one
        :meth:`set` edits; a ``view:`` prefix reads another (``state:messages[-1].content``,
        ``input:x``, ``error:args``; ``args:`` and ``result:`` at a tool or LLM stop).

        :param path: the path, perhaps with a ``view:`` prefix; ``""`` is the whole view.
        :param stop: the stop's id; the selected stop by default.
        :param source: the view to read, like a prefix (kept for callers written before
            prefixes); it must agree with a prefix given too.
        :raises NotStoppedError: when nothing is stopped.
        :raises PathError: when the path is malformed or leads nowhere, or the stop has no such
            view (the message lists its views).
        """
        s = self._ctl.get_stop(stop)
        view, rest = _view_and_path(path, source)
        name = view or s.default_view
        root = s.view(view)
        return get_path(root, rest, what=name)

    def set(self, path: str, value: Any, *, stop: str | None = None) -> None:
        """Set ``path`` of the stop's default view to ``value`` (adding missing keys); applied
        when the branch resumes: at a ``before`` stop to the unit's input, at an ``after`` stop
        to the output it commits. :meth:`inspect` with the same path shows the new value.

        :param path: the path, perhaps prefixed with the default view's name (``input:x``).
        :raises NotStoppedError: when nothing is stopped.
        :raises EditRefused: when the path names another view (``state:x``: the state shown is
            the framework's, which an edit does not reach), at an error stop, or when the
            adapter refuses the new value; the message says what to edit instead.
        """
        s = self._ctl.get_stop(stop)
        view, rest = _view_and_path(path, None)
        what = view or s.default_view
        # a unit that returned nothing (None) gets an update made of the keys set on it
        s._edit(
            lambda root: set_path({} if root is None and rest else root, rest, value, what=what),
            view=view,
            path=rest,
        )

    def delete(self, path: str, *, stop: str | None = None) -> None:
        """Delete the key or element at ``path`` of the stop's default view (applied and
        refused like :meth:`set`)."""
        s = self._ctl.get_stop(stop)
        view, rest = _view_and_path(path, None)
        what = view or s.default_view
        s._edit(lambda root: delete_path(root, rest, what=what), view=view, path=rest)

    def evaluate(self, expression: str, *, stop: str | None = None) -> Any:
        """Evaluate a Python expression at the selected stop, in the sandbox conditions use
        (no imports, no dunder access, whitelisted functions such as ``len``): the names are
        those of a condition (``state``, ``input``, ``output``, ``args``, ``error``, ``node``,
        ``step``...) and the top-level keys of the stop's default view (as :meth:`inspect`
        reads them), so ``len(messages)`` works.

        :raises NotStoppedError: when nothing is stopped.
        :raises ExpressionError: when the expression is malformed, uses what the sandbox
            refuses, or fails (the message says why).
        """
        from flowdbg._expr import compile_expression
        from flowdbg.breakpoints import condition_names

        s = self._ctl.get_stop(stop)
        event = Event(s.location, s.state, s.input, s.output, s.exception, s.decision)
        names = condition_names(event, hits=0, value=None)
        default = s.view()
        if isinstance(default, Mapping):
            for key, value in default.items():
                if isinstance(key, str) and key.isidentifier() and key not in names:
                    names[key] = value
        return compile_expression(expression, allowed_names=names).evaluate(names)

    def summary(self, *, stop: str | None = None, view: str = "state") -> list[KeySummary]:
        """One row per top-level key of a view at the stop: key, type, size and a short
        preview.

        :param view: the view summarized: the state by default (what the terminal shows as a
            table at each stop); where a stop has no state, its default view.
        :raises PathError: when the stop has no such view.
        """
        s = self._ctl.get_stop(stop)
        root = s.view(view)
        if root is None and view == "state":
            root = s.view()
        return summarize(root)

    def diff(self, *, stop: str | None = None) -> StateDiff:
        """At an ``after`` (or ``error``) stop: what the unit changed in the state, as the state
        before it ran compared with the stop's ``state`` view (the framework's state: edits of
        the output made at the stop are not in it).

        :raises NotStoppedError: at a ``before`` stop, where the unit has not run yet.
        """
        s = self._ctl.get_stop(stop)
        if s.location.position == Position.BEFORE.value:
            raise NotStoppedError(
                f"{s.id} is before {s.location.node!r}, which has not run yet; diff() needs an "
                "after stop (use break_after, or step to the after point)"
            )
        return s.diff()

    # --------------------------------------------------------------- control

    def resume(self, stop_id: str | None = None) -> Stop:
        """Let the selected stop (or ``stop_id``) continue; returns the stop."""
        return self._ctl.resume(stop_id, Action.CONTINUE)

    def resume_all(self) -> list[Stop]:
        """Let every open stop continue."""
        return self._ctl.resume_all()

    def step_over(self, stop_id: str | None = None) -> Stop:
        """Continue to the next ``before``/``error`` point of this branch at the same or a
        shallower depth."""
        return self._ctl.resume(stop_id, Action.STEP_OVER)

    def step_into(self, stop_id: str | None = None) -> Stop:
        """Continue to the next ``before``/``error`` point of this branch at any depth."""
        return self._ctl.resume(stop_id, Action.STEP_INTO)

    def step_out(self, stop_id: str | None = None) -> Stop:
        """Continue to the next ``before``/``error`` point of this branch in an enclosing run
        (at the top level: to the end)."""
        return self._ctl.resume(stop_id, Action.STEP_OUT)

    def pause(self) -> None:
        """Stop every branch at its next point (reason ``PAUSE``)."""
        self._ctl.pause()

    def terminate(self) -> list[str]:
        """End every active run: open stops and the next point of each branch raise
        :class:`flowdbg.Terminated`, which reaches the run's caller (a run rewound at a stop
        that has not gone on yet does not go on). Returns the run ids."""
        for root in self._ctl.active_runs:
            rewound = root.rewound
            if rewound is not None:
                rewound[3].cancelled = True
        return self._ctl.terminate()

    def rewind(
        self,
        step: int,
        edits: Mapping[str, Any] | None = None,
        stop_id: str | None = None,
    ) -> Stop:
        """Go back, at a stop, to the state the selected stop's run (or ``stop_id``'s) had
        after an earlier ``step`` (with ``edits``), and go on from there in the same call.

        The run's branches end (the open stops of the run resume, the next point of each
        branch ends it) and the run is recorded ``terminated`` with a
        :class:`flowdbg.timetravel.Rewound` error; its caller does not see that: the adapter
        starts the framework again from the recorded state after ``step`` as a fork does
        (what the current code routes to from that step's node runs first), in the same call,
        which returns what that run returns. The record keeps both: the new run is a
        ``rewind`` of the old one (``origin``, ``forked_from``, ``fork_step``; ``flowdbg runs
        timeline``). Breakpoints, stepping and recording go on as in any run.

        :param step: a step of the stop's top-level run (at a stop inside a subgraph or a
            nested workflow, the steps of the run that contains it: ``flowdbg runs show``,
            the prompt's ``log``) that had ended when the stop was reached (and, for a
            framework with supersteps, that did not run beside other nodes); ``0`` starts
            again from the run's input.
        :param edits: ``{path: value}`` applied to the recorded state first, paths as
            :meth:`set` takes them.
        :param stop_id: the stop (default: the selected one).
        :returns: the stop, resumed.
        :raises flowdbg.timetravel.ForkError: when recording is off, its adapter cannot
            rewind (no :attr:`Capability.REWIND`), or the step cannot be gone back to (the
            message names the steps that can).
        :raises flowdbg.NotStoppedError: with no stop.
        """
        from flowdbg.timetravel import ForkError

        stop = self._ctl.get_stop(stop_id)
        unit = stop._unit
        if unit is None:
            raise ForkError(f"stop {stop.id} is not in a run: there is nothing to rewind")
        root = unit.run.root
        short = root.run_id[:8]
        store = self._recording_store(flush=False)  # flushed below, once the run is checked
        # the run's adapter: by its attached target, or by the run's framework (a run started
        # from a framework's own runner, which an adapter installed library-wide reports)
        named = self._adapters.get(root.info.framework)
        adapter = (
            named.adapter
            if root.target is None and named is not None and named.adapter is not None
            else self.adapter_for(root.target)
        )
        if Capability.REWIND not in adapter.capabilities:
            instead = (
                f"; fork it instead when it has ended: flowdbg runs fork {short} --step {step}"
                if Capability.FORK in adapter.capabilities
                else "; set a breakpoint where you want to look, and run it again"
            )
            raise ForkError(
                f"adapter {adapter.name!r} cannot rewind a run (no capability 'rewind'){instead}"
            )
        if root.cannot_rewind is not None:
            raise ForkError(f"run {short} cannot be rewound: {root.cannot_rewind}")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ForkError(f"step must be a step number (0 for the input), not {step!r}")
        # steps that had ended: below the first step still running or held at a stop, but
        # for the units enclosing it (an agent whose tool call is held: its earlier calls,
        # inside it, have ended); the run's own steps only (a frame's calls are numbered
        # with them, a nested run's are its own)
        busy = [u for u in self._ctl.running_units([root]) if u.run.info is root.info]
        busy += [
            s.unit for s in self._ctl.stops if s.unit is not None and s.unit.run.info is root.info
        ]
        outer: set[int] = set()
        for unit_ in busy:
            scope = unit_.run
            while scope.is_frame and scope.parent_unit is not None:
                outer.add(id(scope.parent_unit))
                scope = scope.parent_unit.run
        blocking = [u for u in busy if u.step == step] or [u for u in busy if id(u) not in outer]
        if blocking:
            first = min(blocking, key=lambda u: u.step)
            if step >= first.step:
                raise ForkError(
                    f"run {short} cannot be rewound to step {step}: step {first.step} "
                    f"({first.kind} {first.node!r}) has not ended; rewind to a step before "
                    f"{first.step}"
                )
        if not self.flush(timeout=30):
            raise ForkError(
                f"the record of run {short} is not written yet (the writer is behind); try again"
            )
        try:
            point = _planned_fork(store, root.run_id, step, edits, adapter, root.target)
        except ForkError as exc:
            raise ForkError(f"cannot rewind: {exc}") from None
        from flowdbg.timetravel import RestartTicket

        ctl = self._ctl
        ticket = RestartTicket(ctl.worker_started, ctl.worker_finished)
        root.rewound = (root.run_id, point, point.run.target, ticket)
        ctl.terminate(lambda scope: scope is root)
        return stop

    def serve(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        target: Any = None,
        **options: Any,
    ) -> DebugServer:
        """Serve this debugger over HTTP and a WebSocket on a background thread (the debug
        server; needs ``pip install 'flowdbg[server]'``). See ``docs/server.md``.

        :param host: the address; loopback only unless ``token`` is given too.
        :param port: ``0`` (the default) picks a free port.
        :param token: the secret clients send; a random one by default (``server.token``).
        :param target: an object clients may start runs of (``POST /runs``); attached here.
        :param options: more :class:`flowdbg.server.DebugServer` arguments.
        :returns: the running :class:`flowdbg.server.DebugServer` (``server.url`` has the
            token; ``server.close()``, or use it as a context manager).
        :raises flowdbg.server.ServerUnavailable: when the server's packages are missing.
        """
        from flowdbg.server import serve

        return serve(self, host=host, port=port, token=token, target=target, **options)

    def close(self) -> None:
        """Terminate active runs, detach every target, write what is left to the store."""
        if self._ctl.active_runs or self._ctl.stops:
            self.terminate()
            self._let_runs_end(2.0)
        self.detach()
        self.uninstall()
        if self._recorder is not None:
            self._recorder.close()

    def _let_runs_end(self, timeout: float) -> None:
        """Give terminated runs up to ``timeout`` seconds to end, so that the record says how
        they ended (a process closing its debugger and exiting would leave them
        ``interrupted``); not from a run's own thread or task, nor on an event loop's thread,
        where waiting would keep them from ending. A sync call that cannot be interrupted is
        not waited for past ``timeout``."""
        if current_unit() is not None:
            return
        try:
            asyncio.get_running_loop()
            return
        except RuntimeError:
            pass
        deadline = time.monotonic() + timeout
        pause = threading.Event()  # never set: a sleep
        while self._ctl.active_runs and time.monotonic() < deadline:
            pause.wait(0.01)

    def __enter__(self) -> Debugger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<flowdbg.Debugger {self._ctl.state_name()} bps={len(self.breakpoints)}>"

    def save_breakpoints(
        self, path: str | os.PathLike[str], *, key: str | None = None
    ) -> list[Breakpoint]:
        """Write the breakpoints to a JSON file, for :meth:`load_breakpoints` to set again.

        Each is saved with its type, pattern, positions, kinds, condition, hit condition,
        message, ``temporary`` and ``enabled`` (and its exception types, watched path or
        argument pattern), not its id or hit count. A breakpoint whose condition is a Python
        callable cannot be saved: it is left out with a :class:`UserWarning` naming it.

        :param path: the file (its folder is created if needed).
        :param key: keep the breakpoints under this name, beside those the file keeps under
            other names (the terminal debugger keys them by target, ``app.py:graph``); saving
            none removes the name.
        :returns: the breakpoints saved.
        """
        import warnings

        from flowdbg import _saved

        saved: list[Breakpoint] = []
        for bp in self.breakpoints:
            if bp.has_callable_condition:
                warnings.warn(
                    f"breakpoint {bp.describe()} has a Python callable condition, "
                    "which cannot be saved; it is left out (give it an expression string to "
                    "save it)",
                    UserWarning,
                    stacklevel=2,
                )
                continue
            saved.append(bp)
        _saved.write(path, [_saved.data_of(bp) for bp in saved], key)
        return saved

    def load_breakpoints(
        self, path: str | os.PathLike[str], *, key: str | None = None
    ) -> list[Breakpoint]:
        """Set the breakpoints :meth:`save_breakpoints` wrote to ``path``, each with a new id
        and no hits.

        A saved breakpoint like one already set is not set twice; one that cannot be set (its
        condition no longer checks, say) is left out with a :class:`UserWarning` naming it.

        :param path: the file.
        :param key: the name they were saved under; a name the file does not hold sets none.
        :returns: the breakpoints set.
        :raises BreakpointError: when the file is missing or is not a breakpoints file.
        """
        import warnings

        from flowdbg import _saved

        added: list[Breakpoint] = []
        for item in _saved.read(path, key):
            if any(_saved.same(item, _saved.data_of(bp)) for bp in self.breakpoints):
                continue
            try:
                bp_type = BreakpointType(item.get("type"))
                bp = self._add(
                    bp_type,
                    pattern=item.get("pattern", "*"),
                    positions=tuple(item.get("positions") or (Position.BEFORE.value,)),
                    kinds=None if item.get("kinds") is None else tuple(item["kinds"]),
                    condition=item.get("condition"),
                    hit_condition=item.get("hit_condition"),
                    temporary=bool(item.get("temporary", False)),
                    enabled=bool(item.get("enabled", True)),
                    exception_types=tuple(item.get("exception_types") or ()),
                    watch_path=item.get("watch_path"),
                    args_pattern=item.get("args_pattern"),
                    message=item.get("message"),
                )
            except (ValueError, TypeError) as exc:  # BreakpointError is a ValueError
                warnings.warn(
                    f"saved breakpoint {item.get('type')!r} {item.get('pattern')!r} in "
                    f"{os.fspath(path)!r} cannot be set and is left out: {exc}",
                    UserWarning,
                    stacklevel=2,
                )
                continue
            added.append(bp)
        return added


_FALSE = frozenset({"0", "false", "no", "off"})
#: set while a fork imports its target (a file that forks when imported must not loop)
_LOADING: contextvars.ContextVar[bool] = contextvars.ContextVar("flowdbg_loading", default=False)


def _view_and_path(path: str, source: str | None) -> tuple[str | None, str]:
    view, rest = split_view(path)
    if source is not None:
        if view is not None and view != source:
            raise PathError(
                f"path {path!r} names the view {view!r} but source={source!r} was given; "
                "give one of them"
            )
        view = source
    return view, rest


def _find_scope(scope: RunScope, run_id: str) -> RunScope | None:
    if scope.info.run_id.startswith(run_id):
        return scope
    for child in scope.children:
        found = _find_scope(child, run_id)
        if found is not None:
            return found
    return None


def run_log(scope: RunScope) -> RunLog:
    """Build the :class:`~flowdbg.runlog.RunLog` of a run from what it has done so far: its
    finished units, and those still running that a stop or a finished call is inside of."""
    from flowdbg.runlog import RunLog

    units = list(scope.units)
    if not scope.info.ended_at:
        units.extend(_running_units(scope, units))
    units.sort(key=lambda u: u.step)
    records = [step_record(u) for u in units]
    if scope.present is not None:
        records = [_presented(record, scope.present) for record in records]
    return RunLog.from_records(
        run_record(scope.info), records, [run_log(child) for child in scope.children]
    )


def _presented(record: StepRecord, present: Callable[[Any], Any]) -> StepRecord:
    """``record`` with its input and output as a stop shows them (see
    :attr:`RunScope.present <flowdbg.runtime.RunScope.present>`); a value the adapter cannot
    convert stays as it is."""
    input, output = _shown(present, record.input), _shown(present, record.output)
    if input is record.input and output is record.output:
        return record
    return dataclasses.replace(record, input=input, output=output)


def _shown(present: Callable[[Any], Any], value: Any) -> Any:
    try:
        return present(value)
    except Exception:
        log.debug("flowdbg: the adapter could not present a step's value", exc_info=True)
        return value


def _running_units(scope: RunScope, finished: list[Unit]) -> list[Unit]:
    """The units of a running run that have not finished but show in its log: those held at a
    stop, and the units enclosing them or a finished call (a node running its tool calls)."""
    seen = {id(unit) for unit in finished}
    running: list[Unit] = []

    def add(unit: Unit | None) -> None:
        while unit is not None and unit.run.info is scope.info and id(unit) not in seen:
            seen.add(id(unit))
            running.append(unit)
            unit = unit.run.parent_unit if unit.run.is_frame else None

    for stop in scope.ctl.stops:
        add(stop.unit)
    for unit in finished:
        if unit.run.is_frame:
            add(unit.run.parent_unit)
    return running


def _kinds(kind: str | Iterable[str] | None) -> tuple[str, ...] | None:
    if kind is None:
        return None
    if isinstance(kind, str):
        return (kind,)
    return tuple(str(k) for k in kind)


def _accepts_instance(adapter: Adapter, cls: type) -> bool:
    """Whether ``adapter`` would accept an instance of ``cls`` (made without running its
    ``__init__``: only its type is looked at by most adapters' ``matches``)."""
    try:
        return bool(adapter.matches(object.__new__(cls)))
    except Exception:
        return False


def _target_label(target: Any) -> str:
    """A target as a message names it: its class and its own name where it has one (an agent's,
    a graph's), else a short repr."""
    name = getattr(target, "name", None)
    if isinstance(name, str) and name:
        return f"{type(target).__name__} {name!r}"
    shown = repr(target)
    return f"{type(target).__name__} {shown if len(shown) <= 60 else shown[:59] + '…'}"


def _warn_problems(bp: Breakpoint, problems: list[tuple[str, bool]], *, stacklevel: int) -> None:
    """Warn of each problem of ``bp``, attributed to the frame ``stacklevel`` levels above the
    caller (the user's call of a breakpoint method)."""
    for problem, about_name in problems:
        # a name is checked against the targets attached now: say what happens with others
        later = ", and stops if a unit of that name runs, in a target attached later say"
        warnings.warn(
            f"{problem} ({bp.id} is set all the same{later if about_name else ''}; "
            "strict=True refuses it)",
            BreakpointWarning,
            stacklevel=stacklevel + 1,
        )
