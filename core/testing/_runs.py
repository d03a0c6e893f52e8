"""Suites for transparency, waiting for stops, and async code (the user's own event loop)."""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import flowdbg
from flowdbg import Capability, StopReason
from flowdbg.testing._base import MODES, WAIT, SuiteBase, requires
from flowdbg.testing._fixtures import EXPECTED, Scenario

__all__ = [
    "AbstractAsyncTests",
    "AbstractObserverTests",
    "AbstractTransparencyTests",
    "AbstractWaitTests",
]

#: Scenarios whose run completes normally, for the transparency tests.
_COMPLETING = ("linear", "loop", "branch_positive", "branch_negative", "parallel", "nested")


def _snapshot(target: Any) -> dict[str, Any]:
    """Identity of every attribute of ``target``, and of the items of its dict attributes."""
    attrs = getattr(target, "__dict__", None)
    if attrs is None:
        return {}
    snap: dict[str, Any] = {}
    for key, value in attrs.items():
        snap[key] = id(value)
        if isinstance(value, dict):
            snap[f"{key}[]"] = {k: id(v) for k, v in value.items()}
    return snap


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class AbstractTransparencyTests(SuiteBase):
    """Attached without breakpoints, every scenario behaves exactly as undebugged."""

    @pytest.mark.parametrize("name", _COMPLETING)
    def test_attached_run_gives_the_undebugged_result(
        self, dbg: flowdbg.Debugger, mode: str, name: str
    ) -> None:
        expected = self.undebugged(self.scenario(name), mode)
        assert expected == dict(EXPECTED[name])
        scn = self.scenario(name)
        run = self.launch(dbg, scn, mode)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == expected

    @pytest.mark.parametrize("name", _COMPLETING)
    @pytest.mark.parametrize("call", MODES)
    def test_attached_target_called_directly(
        self, dbg: flowdbg.Debugger, call: str, name: str
    ) -> None:
        self.require(Capability.SYNC if call == "sync" else Capability.ASYNC)
        scn = self.scenario(name)
        self.attach(dbg, scn)
        fn = self.entry(scn, call)
        raw = fn(scn.input) if call == "sync" else asyncio.run(_await(fn(scn.input)))
        assert scn.normalize(raw) == dict(EXPECTED[name])

    @pytest.mark.parametrize("name", ["loop", "parallel"])
    def test_user_code_runs_as_often_with_breakpoints_that_never_fire(
        self, dbg: flowdbg.Debugger, mode: str, name: str
    ) -> None:
        """Recording on and breakpoints set that never stop (a false condition, a hit count
        never reached, an exception never raised): reducers and routers run exactly as often,
        in the same order, as without the debugger, and the run gives the same result."""
        plain = self.scenario(name)
        if plain.effects is None:
            pytest.skip(f"the fixtures note no user-code calls of {name!r} (Scenario.effects)")
        expected = self.undebugged(plain, mode)
        assert plain.effects, "the scenario's user code ran: the check can see a difference"
        dbg.break_after("*", condition="step < 0")
        dbg.break_before("*", hit_condition=">=1000")
        dbg.break_on_exception("KeyboardInterrupt")
        scn = self.scenario(name)
        run = self.launch(dbg, scn, mode)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == expected
        assert dbg.flush(WAIT)  # writing the record runs no user code either
        # as often, with the same arguments (parallel branches may interleave differently)
        assert sorted(scn.effects or ()) == sorted(plain.effects)

    def test_an_ended_run_keeps_no_exception_alive(self, dbg: flowdbg.Debugger, mode: str) -> None:
        """The debugger's history of an ended run keeps what it shows of an exception (type,
        message, traceback text), not the exception: its traceback holds the frames of the
        framework's run loop, and through them everything the run touched."""
        scn = self.scenario("failing")
        run = self.launch(dbg, scn, mode)
        self.wait_no_stop(dbg)
        error = run.exception(WAIT)
        assert isinstance(error, ValueError)
        assert dbg.flush(WAIT)
        gc.collect()
        holders = [
            type(holder).__name__
            for holder in gc.get_referrers(error)
            if type(holder).__module__.startswith("flowdbg.")
            and not isinstance(holder, flowdbg.RunHandle)  # the caller's own handle
        ]
        assert holders == []
        (log,) = [log for log in dbg.runs if log.run.status == "failed"]
        assert log.run.error is not None and log.run.error.type == "ValueError"
        assert "boom at x=2" in log.run.error.traceback

    def test_failing_run_raises_the_undebugged_error(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        plain = self.scenario("failing")
        with pytest.raises(ValueError) as undebugged:
            self.undebugged(plain, mode)
        scn = self.scenario("failing")
        run = self.launch(dbg, scn, mode)
        self.wait_no_stop(dbg)
        with pytest.raises(ValueError) as debugged:
            run.result(WAIT)
        assert type(debugged.value) is type(undebugged.value)
        assert str(debugged.value) == str(undebugged.value) == "boom at x=2"

    def test_detach_restores_the_target(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("linear")
        before = _snapshot(scn.target)
        dbg.attach(scn.target)
        dbg.attach(scn.target)  # idempotent
        dbg.detach(scn.target)
        assert _snapshot(scn.target) == before

        # detached, the target no longer reports to the debugger: the breakpoint never stops
        dbg.break_before("b")
        run = dbg.start(self.entry(scn, mode), scn.input)
        self._harness.handles.append(run)
        self.wait_no_stop(dbg)
        assert scn.normalize(run.result(WAIT)) == dict(EXPECTED["linear"])

        # and it can be attached again
        run = self.launch(dbg, scn, mode)
        self.assert_at(self.wait_stop(dbg), "b")
        dbg.resume()
        assert self.finish(run, scn) == dict(EXPECTED["linear"])

    def test_detach_while_held_lets_the_run_go_on(
        self, dbg: flowdbg.Debugger, mode: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Detaching a target whose run is held releases it: the run goes on undebugged and
        ends as without the debugger; a warning says which stops were let go."""
        scn = self.scenario("linear")
        dbg.break_before("b")
        dbg.break_before("c")
        run = self.launch(dbg, scn, mode)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "b")
        with caplog.at_level("WARNING", logger="flowdbg"):
            dbg.detach(scn.target)
        self.wait_no_stop(dbg)  # and c does not stop either
        assert self.finish(run, scn) == dict(EXPECTED["linear"])
        assert not stop.is_open and dbg.stops == []
        assert f"({stop.id})" in caplog.text and "go on undebugged" in caplog.text

    def test_attaching_twice_reports_each_point_once(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        self.attach(dbg, scn)
        self.attach(dbg, scn)
        bp = dbg.break_before("*", kind=self.scenario_kind)
        run = self.launch(dbg, scn)
        assert self.resume_until_done(dbg, run) == ["a", "b", "c"]
        assert bp.hits == 3
        assert self.finish(run, scn) == dict(EXPECTED["linear"])

    def test_unattached_target_is_not_debugged(self, dbg: flowdbg.Debugger) -> None:
        attached = self.scenario("linear")
        self.attach(dbg, attached)
        dbg.break_before("b")
        other = self.scenario("linear")
        run = dbg.start(other.run, other.input)
        self._harness.handles.append(run)
        self.wait_no_stop(dbg)
        assert other.normalize(run.result(WAIT)) == dict(EXPECTED["linear"])

        run = self.launch(dbg, attached)
        self.assert_at(self.wait_stop(dbg), "b")
        dbg.resume()
        assert self.finish(run, attached) == dict(EXPECTED["linear"])

    def test_concurrent_runs_of_one_target_are_independent(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        scn = self.scenario("linear")
        dbg.break_before("b")
        first = self.launch(dbg, scn, mode)
        second = self.launch(dbg, scn, mode, input={"x": 2})
        stops = dbg.wait_for_stops(2, WAIT)
        assert len(stops) == 2, [str(s) for s in stops]
        assert stops[0].location.run_id != stops[1].location.run_id
        assert sorted(s.state["x"] for s in stops) == [2, 3]
        dbg.resume_all()
        self.wait_no_stop(dbg)
        assert self.finish(first, scn) == dict(EXPECTED["linear"])
        assert self.finish(second, scn) == {"x": 30, "y": 31}


class AbstractWaitTests(SuiteBase):
    """wait_for_stop / wait_for_stops, status, stop_on_entry and run handles."""

    def test_wait_times_out_while_the_run_goes_on(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("slow")
        assert scn.started is not None and scn.release is not None
        run = self.launch(dbg, scn, mode)
        assert scn.started.wait(WAIT), "the slow unit did not start"
        # the run is held inside the slow unit, so a None here can only be the timeout
        assert dbg.wait_for_stop(0.2) is None
        assert not run.done()
        assert dbg.stops == []
        scn.release()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["slow"])

    def test_wait_returns_the_open_stop_at_once(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("b")
        run = self.launch(dbg, scn)
        first = self.wait_stop(dbg)
        # a stop is open: even a short wait returns it instead of waiting for a new one
        again = dbg.wait_for_stop(0.2)
        assert again is not None and again.id == first.id
        assert [s.id for s in dbg.stops] == [first.id]
        assert run.run_id == first.location.run_id
        assert not run.done()
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["linear"])

    def test_wait_returns_none_promptly_when_the_run_ends(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        scn = self.scenario("linear")
        dbg.break_before("b")
        run = self.launch(dbg, scn, mode)
        self.wait_stop(dbg)
        dbg.resume()
        started = time.monotonic()
        assert dbg.wait_for_stop(60) is None
        # generous bound: only proves it did not sit out its timeout
        assert time.monotonic() - started < 30
        assert run.done()
        assert self.finish(run, scn) == dict(EXPECTED["linear"])

    def test_wait_for_stops_gives_what_is_open_at_timeout(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("b")
        run = self.launch(dbg, scn)
        stops = dbg.wait_for_stops(2, 0.5)
        assert [s.location.node for s in stops] == ["b"]
        dbg.resume()
        assert dbg.wait_for_stops(1, WAIT) == []  # the run ended
        assert self.finish(run, scn) == dict(EXPECTED["linear"])

    def test_status(self, dbg: flowdbg.Debugger) -> None:
        assert dbg.status().state == "idle"
        assert dbg.status().stops == []
        scn = self.scenario("slow")
        assert scn.started is not None and scn.release is not None
        dbg.break_before("after")
        run = self.launch(dbg, scn)
        assert scn.started.wait(WAIT)
        assert dbg.status().state == "running"
        scn.release()
        stop = self.wait_stop(dbg)
        status = dbg.status()
        assert status.state == "stopped"
        assert [s.id for s in status.stops] == [stop.id]
        dbg.resume()
        self.wait_no_stop(dbg)
        assert dbg.status().state == "idle"
        assert dbg.status().stops == []
        assert self.finish(run, scn) == dict(EXPECTED["slow"])

    def test_stop_on_entry(self, mode: str) -> None:
        dbg = self.debugger(stop_on_entry=True)
        scn = self.scenario("linear")
        for _ in range(2):  # every new run stops on entry
            run = self.launch(dbg, scn, mode)
            stop = self.wait_stop(dbg)
            # at the run's first unit: "a", or a unit of the framework's own that runs it
            assert stop.reason == StopReason.ENTRY and stop.location.depth == 0, stop
            assert stop.breakpoints == ()
            self.assert_at(self.onto_own(dbg, stop), "a", "before", depth=0)
            assert dbg.inspect("x") == 1
            dbg.resume()
            self.wait_no_stop(dbg)
            assert self.finish(run, scn) == dict(EXPECTED["linear"])

    def test_idle_timeout_resumes_a_forgotten_stop(self, caplog: pytest.LogCaptureFixture) -> None:
        dbg = self.debugger(idle_timeout=0.2)
        scn = self.scenario("linear")
        bp = dbg.break_before("b")
        run = self.launch(dbg, scn)
        # nobody resumes: the stop lets go by itself
        assert self.finish(run, scn) == dict(EXPECTED["linear"])
        assert bp.hits == 1
        assert dbg.stops == []

    def test_stop_on_entry_ignores_nested_runs(self) -> None:
        dbg = self.debugger(stop_on_entry=True)
        scn = self.scenario("nested")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        # the run's first unit: "pre", or a unit of the framework's own that runs it
        assert stop.reason == StopReason.ENTRY and stop.location.depth == 0, stop
        self.assert_at(self.onto_own(dbg, stop), "pre", "before", depth=0)
        dbg.resume()  # no stop on entry of the nested run
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["nested"])


@requires(Capability.ASYNC)
class AbstractAsyncTests(SuiteBase):
    """A stop in async code suspends only its task, never the event loop."""

    def _arun(self, scn: Scenario) -> Callable[[Any], Awaitable[Any]]:
        fn = self.entry(scn, "async")
        return fn

    def _in_user_loop(self, dbg: flowdbg.Debugger, main: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``main`` with ``anyio.run`` (asyncio) in a thread of the test's own.

        If a stop blocked the whole event loop, the driving task in that loop could never
        resume it; then the run is terminated and the test fails instead of hanging.
        """
        call = self.call_in_thread(functools.partial(anyio.run, main, backend="asyncio"))
        if not call.wait(3 * WAIT):
            dbg.terminate()
            pytest.fail("the event loop stayed blocked: a stop must suspend only its own task")
        return call.result()

    def test_stop_suspends_only_its_task(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        arun = self._arun(scn)
        self.attach(dbg, scn)
        dbg.break_before("b")
        out: dict[str, Any] = {}

        async def main() -> None:
            done = anyio.Event()
            other_ran = anyio.Event()

            async def user() -> None:
                try:
                    out["result"] = await arun(scn.input)
                finally:
                    done.set()

            async def other() -> None:
                await anyio.lowlevel.checkpoint()
                other_ran.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(user)
                stop = await dbg.wait_for_stop_async(WAIT)
                out["stop"] = stop
                # the loop keeps running other tasks while `user` is held
                tg.start_soon(other)
                with anyio.fail_after(WAIT):
                    await other_ran.wait()
                out["held"] = not done.is_set()
                if stop is not None:
                    dbg.resume(stop.id)
                with anyio.fail_after(WAIT):
                    await done.wait()
                out["after_end"] = await dbg.wait_for_stop_async(WAIT)

        self._in_user_loop(dbg, main)
        stop = out["stop"]
        assert stop is not None, "wait_for_stop_async returned no stop"
        self.assert_at(stop, "b", "before", StopReason.BREAKPOINT)
        assert out["held"], "the user's task went on although it is stopped"
        assert out["after_end"] is None
        assert scn.normalize(out["result"]) == dict(EXPECTED["linear"])

    def test_two_tasks_stopped_in_one_loop(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        arun = self._arun(scn)
        self.attach(dbg, scn)
        dbg.break_before("b")
        out: dict[str, Any] = {"results": {}}

        async def main() -> None:
            async def user(x: int) -> None:
                out["results"][x] = await arun({"x": x})

            async with anyio.create_task_group() as tg:
                tg.start_soon(user, 1)
                tg.start_soon(user, 2)
                # a blocking wait goes to a worker thread; the loop stays free
                stops = await anyio.to_thread.run_sync(dbg.wait_for_stops, 2, WAIT)
                out["stops"] = stops
                dbg.resume_all()

        self._in_user_loop(dbg, main)
        stops = out["stops"]
        assert len(stops) == 2, [str(s) for s in stops]
        assert sorted(s.state["x"] for s in stops) == [2, 3]
        assert {x: scn.normalize(r) for x, r in out["results"].items()} == {
            1: dict(EXPECTED["linear"]),
            2: {"x": 30, "y": 31},
        }

    def test_terminate_reaches_the_awaiting_task(self, dbg: flowdbg.Debugger) -> None:
        self.require(Capability.TERMINATE)
        scn = self.scenario("linear")
        arun = self._arun(scn)
        self.attach(dbg, scn)
        dbg.break_before("b")
        out: dict[str, Any] = {}

        async def main() -> None:
            async def user() -> None:
                try:
                    await arun(scn.input)
                except flowdbg.Terminated as exc:
                    out["error"] = exc

            async with anyio.create_task_group() as tg:
                tg.start_soon(user)
                out["stop"] = await dbg.wait_for_stop_async(WAIT)
                dbg.terminate()

        self._in_user_loop(dbg, main)
        assert out["stop"] is not None
        assert isinstance(out.get("error"), flowdbg.Terminated)
        assert dbg.stops == []

    def test_wait_for_stop_async_drives_a_worker_run(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("nested")
        dbg.break_before("inner1")
        run = self.launch(dbg, scn, "async")
        out: dict[str, Any] = {}

        async def drive() -> None:
            stop = await dbg.wait_for_stop_async(WAIT)
            out["stop"] = stop
            if stop is not None:
                dbg.step_over()
                step = await dbg.wait_for_stop_async(WAIT)
                while step is not None and not self.own(step.location):
                    dbg.step_into(step.id)  # past the framework's own units (a model turn)
                    step = await dbg.wait_for_stop_async(WAIT)
                out["step"] = step
                dbg.resume()
            out["end"] = await dbg.wait_for_stop_async(WAIT)

        anyio.run(drive, backend="asyncio")
        self.assert_at(out["stop"], "inner1", "before", StopReason.BREAKPOINT, depth=1)
        self.assert_at(out["step"], "inner2", "before", StopReason.STEP, depth=1)
        assert out["end"] is None
        assert self.finish(run, scn) == dict(EXPECTED["nested"])


class _Recorder:
    """A plugin recording everything the observation hooks report."""

    def __init__(self) -> None:
        self.events: list[flowdbg.Event] = []
        self.started: list[flowdbg.RunInfo] = []
        self.ended: list[flowdbg.RunInfo] = []
        self.stops: list[str] = []
        self.resumes: list[tuple[str, str]] = []

    @flowdbg.hookimpl
    def flowdbg_on_event(self, event: flowdbg.Event) -> None:
        self.events.append(event)

    @flowdbg.hookimpl
    def flowdbg_on_run_start(self, run: flowdbg.RunInfo) -> None:
        self.started.append(run)

    @flowdbg.hookimpl
    def flowdbg_on_run_end(self, run: flowdbg.RunInfo) -> None:
        self.ended.append(run)

    @flowdbg.hookimpl
    def flowdbg_on_stop(self, stop: flowdbg.Stop) -> None:
        self.stops.append(stop.id)

    @flowdbg.hookimpl
    def flowdbg_on_resume(self, stop: flowdbg.Stop, action: str) -> None:
        self.resumes.append((stop.id, action))

    def points(self) -> list[tuple[str, str]]:
        return [(e.location.node, e.location.position) for e in self.events]


class AbstractObserverTests(SuiteBase):
    """What plugins observe: the event stream (ARCHITECTURE §2) and run/stop hooks."""

    def _observed(self) -> tuple[flowdbg.Debugger, _Recorder]:
        recorder = _Recorder()
        return self.debugger(plugins=[recorder]), recorder

    def test_event_stream_of_a_run(self, mode: str) -> None:
        dbg, rec = self._observed()
        scn = self.scenario("linear")
        run = self.launch(dbg, scn, mode)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["linear"])

        # the scenario's units (an agent framework reports its agent and model turns too)
        events = [e for e in rec.events if self.own(e.location)]
        assert [(e.location.node, e.location.position) for e in events] == [
            ("a", "before"),
            ("a", "after"),
            ("b", "before"),
            ("b", "after"),
            ("c", "before"),
            ("c", "after"),
        ]
        locs = [e.location for e in events]
        assert {loc.framework for loc in locs} == {self.adapter}
        assert {e.location.framework for e in rec.events} == {self.adapter}
        assert {loc.kind for loc in locs} == {self.scenario_kind}
        assert {loc.run_id for loc in locs} == {run.run_id}
        assert all(loc.path == self.place.of(()) and loc.attempt == 1 for loc in locs)
        steps = [loc.step for loc in locs]
        assert steps[0::2] == steps[1::2], "before and after of one unit share its step"
        assert steps[0] < steps[2] < steps[4]
        supersteps = [loc.superstep for loc in locs[0::2]]
        if Capability.SUPERSTEPS in self.capabilities():
            # one unit per superstep here: each runs in a superstep of its own, in order
            numbers = [n for n in supersteps if isinstance(n, int)]
            assert len(numbers) == 3 and numbers[0] < numbers[1] < numbers[2], supersteps
        else:
            assert supersteps == [None, None, None], (
                f"adapter {self.adapter!r} reports supersteps {supersteps} but does not declare "
                "capability 'supersteps'"
            )
        assert events[2].state["x"] == 2  # before b
        assert json.loads(json.dumps(events[3].to_dict()))["location"]["node"] == "b"

    def test_error_event(self) -> None:
        self.require(Capability.EXCEPTIONS)
        dbg, rec = self._observed()
        scn = self.scenario("failing")
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        with pytest.raises(ValueError):
            run.result(WAIT)
        assert rec.points() == [
            ("a", "before"),
            ("a", "after"),
            ("boom", "before"),
            ("boom", "error"),
        ]
        error = rec.events[-1].error
        assert isinstance(error, ValueError) and str(error) == "boom at x=2"
        (ended,) = rec.ended
        assert ended.status == flowdbg.RunStatus.FAILED
        assert isinstance(ended.error, ValueError)

    def test_nested_run_is_a_child_run(self, mode: str) -> None:
        dbg, rec = self._observed()
        scn = self.scenario("nested")
        run = self.launch(dbg, scn, mode)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["nested"])

        assert len(rec.started) == 2, rec.started
        root, child = rec.started
        assert root.run_id == run.run_id
        assert root.parent_run_id is None and root.path == ()
        assert child.parent_run_id == root.run_id
        assert child.root_run_id == root.run_id
        assert child.path == (*self.place.path, "sub")
        assert {r.run_id: r.status for r in rec.ended} == {
            root.run_id: flowdbg.RunStatus.COMPLETED,
            child.run_id: flowdbg.RunStatus.COMPLETED,
        }
        inner = [e.location for e in rec.events if e.location.node.startswith("inner")]
        assert inner and all(
            loc.run_id == child.run_id and loc.parent_run_id == root.run_id for loc in inner
        )

    def test_parallel_events_carry_branches(self) -> None:
        dbg, rec = self._observed()
        scn = self.scenario("parallel")
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["parallel"])
        before = {
            e.location.node: e.location
            for e in rec.events
            if e.location.position == "before" and self.own(e.location)
        }
        assert set(before) == {"fan", "p1", "p2", "join"}
        fan, p1, p2, join = before["fan"], before["p1"], before["p2"], before["join"]
        assert p1.branch is not None and p1.branch != p2.branch
        # every adapter: step numbers follow the order in which the units started
        assert fan.step < min(p1.step, p2.step) and max(p1.step, p2.step) < join.step
        if Capability.SUPERSTEPS in self.capabilities():
            assert p1.superstep is not None and p1.superstep == p2.superstep
            assert fan.superstep is not None and join.superstep is not None
            assert fan.superstep < p1.superstep < join.superstep
        else:
            assert {loc.superstep for loc in before.values()} == {None}

    def test_stop_and_resume_hooks(self) -> None:
        dbg, rec = self._observed()
        scn = self.scenario("linear")
        dbg.break_before("b")
        run = self.launch(dbg, scn)
        first = self.wait_stop(dbg)
        dbg.step_over()
        second = self.wait_stop(dbg)
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["linear"])
        assert rec.stops == [first.id, second.id]
        assert rec.resumes == [(first.id, "step_over"), (second.id, "continue")]

    def test_terminated_run_status(self) -> None:
        self.require(Capability.TERMINATE)
        dbg, rec = self._observed()
        scn = self.scenario("linear")
        dbg.break_before("b")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        dbg.terminate()
        with pytest.raises(flowdbg.Terminated):
            run.result(WAIT)
        (ended,) = rec.ended
        assert ended.status == flowdbg.RunStatus.TERMINATED
        assert rec.resumes == [(stop.id, "terminate")]
