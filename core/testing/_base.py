"""The base of every suite: a fresh debugger per test, run tracking and clean teardown."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

import flowdbg
from flowdbg.adapter import Capability
from flowdbg.testing._fixtures import SCENARIO_CAPABILITIES, AdapterFixtures, Placement, Scenario

__all__ = ["MODES", "WAIT", "SuiteBase", "ThreadCall", "requires"]

#: Seconds any wait that is expected to succeed may take before the test fails.
WAIT = 10.0
#: The ways a scenario is run under the debugger (``dbg.start(run)`` / ``dbg.start(arun)``).
MODES = ("sync", "async")


_REQUIRES = "_flowdbg_requires"

_T = TypeVar("_T")


def requires(*capabilities: Capability) -> Callable[[_T], _T]:
    """Mark a test method, or every test method defined in a suite class, as needing
    ``capabilities``; the test is skipped with the reason when the adapter lacks one.

    Marking methods rather than using a class-wide fixture keeps the requirement with the tests
    of that suite when several suites are composed into one class.
    """

    def mark(obj: _T) -> _T:
        targets = (
            [v for k, v in vars(obj).items() if k.startswith("test") and callable(v)]
            if isinstance(obj, type)
            else [obj]
        )
        for fn in targets:
            setattr(fn, _REQUIRES, (*getattr(fn, _REQUIRES, ()), *capabilities))
        return obj

    return mark


class ThreadCall:
    """A callable running in a thread of the test's own, with its outcome captured.

    Used where the *user's* code, not :meth:`flowdbg.Debugger.start`, calls the framework: the
    stop then blocks this thread while the test drives the debugger from its own.
    """

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self._fn = fn
        self._args = args
        self._done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._work, name="flowdbg-test-caller", daemon=True)

    def _work(self) -> None:
        try:
            self.value = self._fn(*self._args)
        except BaseException as exc:  # kept for result(); a thread must not die with it
            self.error = exc
        finally:
            self._done.set()

    def start(self) -> ThreadCall:
        self.thread.start()
        return self

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)

    def result(self, timeout: float = WAIT) -> Any:
        """The call's value, or its exception re-raised; fails the test on timeout."""
        if not self._done.wait(timeout):
            pytest.fail(f"the caller's thread did not finish within {timeout} s")
        if self.error is not None:
            raise self.error
        return self.value


class _Harness:
    """Everything a test started, so that teardown can end it (never a thread left blocked)."""

    def __init__(self) -> None:
        self.debuggers: list[flowdbg.Debugger] = []
        self.attached: list[tuple[flowdbg.Debugger, Any]] = []
        self.handles: list[flowdbg.RunHandle] = []
        self.calls: list[ThreadCall] = []
        self.releases: list[Callable[[], None]] = []
        self._tmpdir: str | None = None

    def tmpdir(self) -> str:
        """A temporary folder for this test (for its recordings), removed at teardown."""
        if self._tmpdir is None:
            self._tmpdir = tempfile.mkdtemp(prefix="flowdbg-conformance-")
        return self._tmpdir

    def _pending(self) -> list[str]:
        out = [repr(h) for h in self.handles if not h.done()]
        out += [c.thread.name for c in self.calls if not c.done()]
        return out

    def close(self) -> list[str]:
        problems: list[str] = []
        for release in self.releases:
            try:
                release()
            except Exception as exc:
                problems.append(f"release() of a slow scenario failed: {exc!r}")
        for dbg in self.debuggers:
            dbg.clear()
        deadline = time.monotonic() + WAIT
        while True:
            for dbg in self.debuggers:
                status = dbg.status()
                if dbg.stops or status.runs:
                    dbg.terminate()
            pending = [h for h in self.handles if not h.done()]
            calls = [c for c in self.calls if not c.done()]
            if not pending and not calls:
                break
            if time.monotonic() > deadline:
                problems.append(f"runs still going at teardown: {self._pending()}")
                break
            # Wait on the runs themselves; terminate again in case one stopped meanwhile.
            for h in pending:
                try:
                    h.exception(0.05)
                except TimeoutError:
                    pass
            for c in calls:
                c.wait(0.05)
        for dbg, target in reversed(self.attached):
            try:
                dbg.detach(target)
            except Exception as exc:
                problems.append(f"detach failed: {exc!r}")
        for dbg in self.debuggers:
            try:
                dbg.close()  # writes what is left of the recording and closes the store
            except Exception as exc:
                problems.append(f"closing the debugger failed: {exc!r}")
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
        return problems


async def _await(awaitable: Any) -> Any:
    return await awaitable


class SuiteBase(AdapterFixtures):
    """Shared machinery of the ``Abstract*Tests`` suites (not a suite itself).

    Every test gets a fresh :class:`flowdbg.Debugger` (fixture ``dbg``); runs, caller threads and
    attached targets are tracked and ended at teardown: open stops are terminated, slow units
    released, runs joined (with a timeout), targets detached.

    The helper names defined here (``require``, ``debugger``, ``scenario``, ``entry``, ``launch``,
    ``attach``, ``call_in_thread``, ``undebugged``, ``wait_stop``, ``wait_no_stop``, ``finish``,
    ``resume_until_done``, ``assert_at``) and the fixtures ``dbg`` and ``mode`` are reserved:
    an :class:`AdapterFixtures` subclass must not define methods of the same names.
    """

    _harness: _Harness
    _place: Placement | None = None

    # ------------------------------------------------------------------ fixtures

    @pytest.fixture(autouse=True)
    def _flowdbg_harness(self, request: pytest.FixtureRequest) -> Iterator[None]:
        info = self.adapter_info()
        if not info.available:
            pytest.skip(f"adapter {self.adapter!r} is unavailable: {info.reason}")
        self.require(*getattr(request.function, _REQUIRES, ()))
        reason = self.excluded.get(request.function.__name__)
        if reason is not None:
            pytest.skip(f"adapter {self.adapter!r} excludes this test: {reason}")
        harness = _Harness()
        request.instance._harness = harness
        yield
        problems = harness.close()
        if problems:
            pytest.fail("; ".join(problems))

    @pytest.fixture
    def dbg(self) -> flowdbg.Debugger:
        """A fresh debugger, cleaned up at teardown."""
        return self.debugger()

    @pytest.fixture(params=MODES)
    def mode(self, request: pytest.FixtureRequest) -> str:
        """``"sync"``: ``dbg.start(scenario.run, ...)``; ``"async"``: ``dbg.start(scenario.arun,
        ...)`` (an event loop in the worker thread)."""
        mode: str = request.param
        self.require(Capability.SYNC if mode == "sync" else Capability.ASYNC)
        return mode

    # ------------------------------------------------------------------ helpers

    def require(self, *capabilities: Capability) -> None:
        """Skip the test unless the adapter declares every one of ``capabilities``."""
        declared = self.capabilities()
        for cap in capabilities:
            if cap not in declared:
                pytest.skip(f"adapter {self.adapter!r} does not declare capability {cap.value!r}")

    def debugger(self, **kwargs: Any) -> flowdbg.Debugger:
        """A new debugger (``flowdbg.Debugger(**kwargs)``), cleaned up at teardown.

        Recording is on, into a database of the test's own (removed at teardown), unless the
        test passes ``record=False`` or its own ``db``.
        """
        if kwargs.get("record", True) is not False and "db" not in kwargs:
            kwargs["db"] = os.path.join(self._harness.tmpdir(), "flowdbg.db")
        dbg = flowdbg.Debugger(**kwargs)
        self._harness.debuggers.append(dbg)
        return dbg

    def scenario(self, name: str) -> Scenario:
        """Build scenario ``name`` (``linear``, ``branch_positive``, ...) fresh.

        Skips when it needs a capability the adapter lacks or the fixtures cannot build it.
        """
        cap = SCENARIO_CAPABILITIES.get(name)
        if cap is not None:
            self.require(cap)
        builders: dict[str, Callable[[], Scenario]] = {
            "linear": self.build_linear,
            "loop": self.build_loop,
            "branch_positive": lambda: self.build_branch(True),
            "branch_negative": lambda: self.build_branch(False),
            "parallel": self.build_parallel,
            "nested": self.build_nested,
            "failing": self.build_failing,
            "slow": self.build_slow,
            "tools": self.build_tools,
            "handoff": self.build_handoff,
        }
        try:
            scn = builders[name]()
        except NotImplementedError as exc:
            pytest.skip(f"adapter {self.adapter!r} fixtures do not build {name!r}: {exc}")
        if scn.release is not None:
            self._harness.releases.append(scn.release)
        self._place = self.placement(name)
        return scn

    @property
    def place(self) -> Placement:
        """Where the framework runs the units of the scenario built last (see
        :meth:`AdapterFixtures.placement`)."""
        return self._place if self._place is not None else Placement(kind=self.unit_kind)

    @property
    def scenario_kind(self) -> str:
        """The kind of the units of the scenario built last."""
        return self.place.kind or self.unit_kind

    def own(self, location: flowdbg.Location) -> bool:
        """Whether ``location`` is at a unit of the scenario built last (not one of the
        framework's own units around them: an agent, its model turns)."""
        return location.kind == self.scenario_kind

    def step(self, dbg: flowdbg.Debugger, how: Callable[[], Any]) -> flowdbg.Stop:
        """Step with ``how`` (``dbg.step_over``...) and wait for the stop, stepping on into
        the framework's own units it lands on (an agent's model turn between two tool calls)
        until it is at a unit of the scenario."""
        how()
        return self.onto_own(dbg, self.wait_stop(dbg))

    def onto_own(self, dbg: flowdbg.Debugger, stop: flowdbg.Stop) -> flowdbg.Stop:
        """``stop`` if it is at a unit of the scenario; else the stop at the next unit of the
        scenario, stepping into the framework's own units from there."""
        for _ in range(20):
            if self.own(stop.location):
                return stop
            dbg.step_into(stop.id)
            stop = self.wait_stop(dbg)
        pytest.fail(f"stepping never reached a unit of the scenario; last at {stop}")

    def wait_no_own_stop(self, dbg: flowdbg.Debugger, *, stepping: bool = False) -> None:
        """Wait until the runs end; no stop may open at a unit of the scenario meanwhile. Stops
        at the framework's own units (an agent reporting its tool calls' change again when it
        ends) are resumed, or stepped into while ``stepping``."""
        for _ in range(50):
            stop = dbg.wait_for_stop(WAIT)
            if stop is None:
                return
            assert not self.own(stop.location), f"expected no stop, got {stop}"
            if stepping:
                dbg.step_into(stop.id)
            else:
                dbg.resume(stop.id)
        pytest.fail("the runs kept stopping at the framework's own units")

    def step_to_end(self, dbg: flowdbg.Debugger, how: Callable[[], Any]) -> None:
        """Step with ``how``; the runs must end without another stop at a unit of the scenario
        (the framework's own units it lands on are stepped into, as :meth:`step` does)."""
        how()
        self.wait_no_own_stop(dbg, stepping=True)

    def entry(self, scn: Scenario, mode: str) -> Callable[[Any], Any]:
        """The scenario's entry point for ``mode``."""
        if mode == "sync":
            return scn.run
        if scn.arun is None:
            pytest.fail(
                f"adapter {self.adapter!r} declares capability 'async' but its fixtures give "
                "no async entry point (Scenario.arun is None)"
            )
        return scn.arun

    def launch(
        self, dbg: flowdbg.Debugger, scn: Scenario, mode: str = "sync", input: Any = None
    ) -> flowdbg.RunHandle:
        """Attach ``scn.target`` to ``dbg`` and start the scenario in a worker."""
        self.attach(dbg, scn)
        fn = self.entry(scn, mode)
        run = dbg.start(fn, scn.input if input is None else input)
        self._harness.handles.append(run)
        return run

    def attach(self, dbg: flowdbg.Debugger, scn: Scenario) -> None:
        """``dbg.attach(scn.target)``, detached again at teardown."""
        dbg.attach(scn.target)
        self._harness.attached.append((dbg, scn.target))

    def call_in_thread(self, fn: Callable[..., Any], *args: Any) -> ThreadCall:
        """Run ``fn(*args)`` in a thread of the test's own (the user's code calling the
        framework directly), joined at teardown."""
        call = ThreadCall(fn, *args)
        self._harness.calls.append(call)
        return call.start()

    def undebugged(self, scn: Scenario, mode: str = "sync") -> dict[str, Any]:
        """The scenario's normalized result without any debugger (``scn`` must be fresh)."""
        fn = self.entry(scn, mode)
        raw = fn(scn.input) if mode == "sync" else asyncio.run(_await(fn(scn.input)))
        return scn.normalize(raw)

    def wait_stop(self, dbg: flowdbg.Debugger, timeout: float = WAIT) -> flowdbg.Stop:
        """Wait for a stop that must come."""
        stop = dbg.wait_for_stop(timeout)
        assert stop is not None, (
            f"expected a stop within {timeout} s, got none; status: {dbg.status().state}, "
            f"breakpoints: {[b.describe() for b in dbg.breakpoints]}"
        )
        return stop

    def wait_no_stop(self, dbg: flowdbg.Debugger, timeout: float = WAIT) -> None:
        """Wait until the runs end; no stop may open meanwhile."""
        stop = dbg.wait_for_stop(timeout)
        assert stop is None, f"expected no stop, got {stop}"

    def finish(self, run: flowdbg.RunHandle, scn: Scenario) -> dict[str, Any]:
        """The run's normalized result (waits at most :data:`WAIT`)."""
        return scn.normalize(run.result(WAIT))

    def resume_until_done(
        self, dbg: flowdbg.Debugger, run: flowdbg.RunHandle, *, own: bool = False
    ) -> list[str]:
        """Resume every stop until the run ends; returns the nodes it stopped at, in order
        (with ``own``, only the stops at the scenario's own units: see :meth:`own`)."""
        nodes = []
        for _ in range(100):
            stop = dbg.wait_for_stop(WAIT)
            if stop is None:
                break
            if not own or self.own(stop.location):
                nodes.append(stop.location.node)
            dbg.resume(stop.id)
        else:
            pytest.fail(f"still stopping after 100 resumes, at {nodes[-5:]}")
        run.exception(WAIT)  # join; the caller checks the outcome
        return nodes

    def assert_at(
        self,
        stop: flowdbg.Stop,
        node: str,
        position: str = "before",
        reason: flowdbg.StopReason | None = None,
        depth: int | None = None,
    ) -> None:
        """Assert where ``stop`` is (with a message naming where it really is). ``depth`` is
        the scenario's own (0: its top level, 1: inside ``sub`` or a unit), placed where the
        framework runs the scenario (:attr:`place`)."""
        loc = stop.location
        if depth is not None:
            depth = self.place.depth(depth)
        where = f"{stop} (reason {stop.reason.value}, depth {loc.depth})"
        assert loc.node == node, f"expected a stop at {node!r}, got {where}"
        assert loc.position == position, f"expected position {position!r}, got {where}"
        if reason is not None:
            assert stop.reason == reason, f"expected reason {reason.value!r}, got {where}"
        if depth is not None:
            assert loc.depth == depth, f"expected depth {depth}, got {where}"
