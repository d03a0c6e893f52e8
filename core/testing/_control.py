"""Suites for exceptions, stepping, state editing, pause, parallel branches and terminate."""

from __future__ import annotations

import json

import pytest

import flowdbg
from flowdbg import Capability, StopReason
from flowdbg.testing._base import WAIT, SuiteBase, requires
from flowdbg.testing._fixtures import EXPECTED

__all__ = [
    "AbstractExceptionTests",
    "AbstractParallelTests",
    "AbstractPauseTests",
    "AbstractStateEditingTests",
    "AbstractSteppingTests",
    "AbstractTerminateTests",
]

_BOOM = "boom at x=2"
_Types = tuple["type[BaseException] | str", ...]


@requires(Capability.EXCEPTIONS)
class AbstractExceptionTests(SuiteBase):
    """Exception breakpoints stop at the failing unit; the original exception goes on."""

    def _undebugged_error(self) -> BaseException:
        scn = self.scenario("failing")
        with pytest.raises(ValueError) as info:
            scn.run(scn.input)
        return info.value

    def test_stops_at_the_error_point(self, dbg: flowdbg.Debugger, mode: str) -> None:
        plain = self._undebugged_error()
        scn = self.scenario("failing")
        bp = dbg.break_on_exception()
        run = self.launch(dbg, scn, mode)

        stop = self.wait_stop(dbg)
        self.assert_at(stop, "boom", "error", StopReason.EXCEPTION, depth=0)
        assert stop.breakpoints == (bp.id,)
        assert stop.error is not None
        assert stop.error.type == "ValueError"
        assert stop.error.message == _BOOM
        assert "ValueError" in stop.error.traceback
        assert isinstance(stop.exception, ValueError)
        assert str(stop.exception) == _BOOM
        assert dbg.inspect("x") == 2
        assert dbg.inspect("x", source="input") == 2  # what the failing unit was given
        data = json.loads(json.dumps(stop.to_dict()))
        assert data["reason"] == "exception"
        assert data["error"]["type"] == "ValueError"
        assert data["error"]["message"] == _BOOM

        dbg.resume()
        with pytest.raises(ValueError) as info:
            run.result(WAIT)
        assert type(info.value) is type(plain) is ValueError
        assert str(info.value) == str(plain) == _BOOM
        if mode == "sync" and self.exception_identity:
            assert info.value is stop.exception

    @pytest.mark.parametrize(
        "types",
        [(ValueError,), ("ValueError",), ("Exception",), (KeyError, "ValueError")],
        ids=["class", "name", "base-class-name", "one-of-several"],
    )
    def test_matching_type_stops(self, dbg: flowdbg.Debugger, types: _Types) -> None:
        scn = self.scenario("failing")
        dbg.break_on_exception(*types)
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "boom", "error", StopReason.EXCEPTION)
        dbg.resume()
        with pytest.raises(ValueError, match=_BOOM):
            run.result(WAIT)

    @pytest.mark.parametrize("types", [(KeyError,), ("KeyError",), ("TimeoutError",)])
    def test_other_type_does_not_stop(self, dbg: flowdbg.Debugger, types: _Types) -> None:
        scn = self.scenario("failing")
        dbg.break_on_exception(*types)
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        with pytest.raises(ValueError, match=_BOOM):
            run.result(WAIT)

    def test_node_filter(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("failing")
        dbg.break_on_exception(node="a")
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        with pytest.raises(ValueError, match=_BOOM):
            run.result(WAIT)

        scn = self.scenario("failing")
        dbg.clear()
        dbg.break_on_exception(ValueError, node="bo*")
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "boom", "error", StopReason.EXCEPTION)
        dbg.resume()
        with pytest.raises(ValueError, match=_BOOM):
            run.result(WAIT)

    def test_without_breakpoint_the_error_reaches_the_caller(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        scn = self.scenario("failing")
        run = self.launch(dbg, scn, mode)
        self.wait_no_stop(dbg)
        with pytest.raises(ValueError, match=_BOOM):
            run.result(WAIT)

    def test_stepping_lands_on_the_error_point(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("failing")
        dbg.break_before("boom")
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "boom", "before")
        dbg.step_over()
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "boom", "error", StopReason.STEP)
        assert stop.error is not None and stop.error.type == "ValueError"
        dbg.resume()
        with pytest.raises(ValueError, match=_BOOM):
            run.result(WAIT)

    def test_failed_run_does_not_break_the_next_one(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("failing")
        dbg.break_on_exception()
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        dbg.resume()
        with pytest.raises(ValueError, match=_BOOM):
            run.result(WAIT)

        ok = self.scenario("linear")
        self.attach(dbg, ok)  # before the breakpoint names its node
        dbg.break_before("b")
        run = self.launch(dbg, ok)
        self.assert_at(self.wait_stop(dbg), "b", "before", StopReason.BREAKPOINT)
        dbg.resume()
        assert self.finish(run, ok) == EXPECTED["linear"]


class AbstractSteppingTests(SuiteBase):
    """step_over, step_into and step_out, flat and through a nested graph."""

    def test_step_over_walks_the_top_level(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("linear")
        bp = dbg.break_before("a")
        run = self.launch(dbg, scn, mode)
        self.assert_at(self.wait_stop(dbg), "a", "before", StopReason.BREAKPOINT)

        stop = self.step(dbg, dbg.step_over)
        self.assert_at(stop, "b", "before", StopReason.STEP)
        assert stop.breakpoints == ()
        assert bp.id not in stop.hits
        assert dbg.inspect("x") == 2

        stop = self.step(dbg, dbg.step_over)
        self.assert_at(stop, "c", "before", StopReason.STEP)
        assert dbg.inspect("x") == 20

        # from the last top-level unit: runs to the end
        self.step_to_end(dbg, dbg.step_over)
        assert run.done()
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_step_into_without_nesting_is_step_over(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("a")
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        self.assert_at(self.step(dbg, dbg.step_into), "b", "before", StopReason.STEP)
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_step_out_at_top_level_runs_to_the_end(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("a")
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        self.step_to_end(dbg, dbg.step_out)
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_step_over_follows_a_loop(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("loop")
        dbg.break_before("inc", temporary=True)
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        counts = [dbg.inspect("state:count")]
        nodes = ["inc"]
        for _ in range(5):
            stop = self.step(dbg, dbg.step_over)
            assert stop.reason == StopReason.STEP
            nodes.append(stop.location.node)
            counts.append(dbg.inspect("state:count"))
        assert nodes == ["inc"] * 5 + ["done"]
        assert counts == [0, 1, 2, 3, 4, 5]
        self.step_to_end(dbg, dbg.step_over)
        assert self.finish(run, scn) == EXPECTED["loop"]

    def test_step_into_and_out_of_a_nested_graph(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("nested")
        dbg.break_before("sub")
        run = self.launch(dbg, scn, mode)
        self.assert_at(self.wait_stop(dbg), "sub", "before", StopReason.BREAKPOINT, depth=0)

        stop = self.step(dbg, dbg.step_into)
        self.assert_at(stop, "inner1", "before", StopReason.STEP, depth=1)
        assert stop.location.path == self.place.of(("sub",))
        assert dbg.inspect("x") == 2

        stop = self.step(dbg, dbg.step_over)
        self.assert_at(stop, "inner2", "before", StopReason.STEP, depth=1)
        assert dbg.inspect("x") == 20

        stop = self.step(dbg, dbg.step_out)
        self.assert_at(stop, "post", "before", StopReason.STEP, depth=0)
        assert stop.location.path == self.place.of(())
        assert dbg.inspect("state:z") == 21

        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["nested"]

    def test_step_over_skips_a_nested_graph(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("nested")
        dbg.break_before("pre")
        run = self.launch(dbg, scn, mode)
        self.assert_at(self.wait_stop(dbg), "pre", "before", depth=0)

        self.assert_at(self.step(dbg, dbg.step_over), "sub", "before", StopReason.STEP, depth=0)
        stop = self.step(dbg, dbg.step_over)
        self.assert_at(stop, "post", "before", StopReason.STEP, depth=0)
        assert dbg.inspect("state:x") == 20

        self.step_to_end(dbg, dbg.step_over)
        assert self.finish(run, scn) == EXPECTED["nested"]

    def test_step_over_from_the_last_nested_unit_leaves_the_graph(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("nested")
        dbg.break_before("inner2")
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "inner2", "before", depth=1)
        self.assert_at(self.step(dbg, dbg.step_over), "post", "before", StopReason.STEP, depth=0)
        dbg.resume()
        assert self.finish(run, scn) == EXPECTED["nested"]

    def test_step_out_from_the_first_nested_unit(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("nested")
        dbg.break_before("inner1")
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "inner1", "before", depth=1)
        self.assert_at(self.step(dbg, dbg.step_out), "post", "before", StopReason.STEP, depth=0)
        dbg.resume()
        assert self.finish(run, scn) == EXPECTED["nested"]

    def test_breakpoint_hit_while_stepping_over_a_nested_graph(self, dbg: flowdbg.Debugger) -> None:
        # stepping over "sub" does not hide a breakpoint inside it
        scn = self.scenario("nested")
        dbg.break_before("sub")
        bp = dbg.break_before("inner2")
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "sub")
        stop = self.step(dbg, dbg.step_over)
        self.assert_at(stop, "inner2", "before", StopReason.BREAKPOINT, depth=1)
        assert stop.breakpoints == (bp.id,)
        dbg.clear()
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["nested"]


@requires(Capability.STATE_EDITING)
class AbstractStateEditingTests(SuiteBase):
    """Edits at before stops reach the unit's input; at after stops, what the unit commits."""

    def test_edit_input_before_a_unit(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("linear")
        dbg.break_before("b")
        run = self.launch(dbg, scn, mode)
        self.wait_stop(dbg)
        dbg.set("x", 5)
        assert dbg.inspect("x") == 5
        dbg.resume()
        assert self.finish(run, scn) == {"x": 50, "y": 51}

    def test_edit_output_after_a_unit(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("linear")
        dbg.break_after("b")
        run = self.launch(dbg, scn, mode)
        self.wait_stop(dbg)
        assert dbg.inspect("x") == 20
        dbg.set("x", 7)
        assert dbg.inspect("x") == 7
        dbg.resume()
        assert self.finish(run, scn) == {"x": 7, "y": 8}

    def test_the_unit_sees_an_edit_made_before_it(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("c")
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        dbg.set("x", 100)
        assert dbg.inspect("x") == 100
        if self.fixed_state_keys:  # c receives the state, which cannot take another key
            with pytest.raises(flowdbg.EditRefused, match="'w'"):
                dbg.set("w", "new")
            with pytest.raises(flowdbg.PathError):
                dbg.inspect("w")  # the refused edit left nothing behind
        else:
            dbg.set("w", "new")  # a key the state did not have
            assert dbg.inspect("w") == "new"
        dbg.resume()
        assert self.finish(run, scn)["y"] == 101

    def test_add_a_key_to_what_a_unit_commits(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("linear")
        dbg.break_after("c")
        run = self.launch(dbg, scn, mode)
        self.wait_stop(dbg)
        if self.fixed_state_keys:
            with pytest.raises(flowdbg.EditRefused, match="'w'"):
                dbg.set("w", [1, 2])
            with pytest.raises(flowdbg.PathError):
                dbg.inspect("w")  # the refused edit left nothing behind
            dbg.set("y", 5)  # a key of the schema still can be written
            dbg.resume()
            assert self.finish(run, scn) == {"x": 20, "y": 5}
            return
        dbg.set("w", [1, 2])
        assert dbg.inspect("w[-1]") == 2
        dbg.resume()
        assert self.finish(run, scn) == {"x": 20, "y": 21, "w": [1, 2]}

    def test_delete_a_key_from_what_a_unit_commits(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_after("b")
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        dbg.delete("x")  # b's update no longer sets x: it stays 2
        if not self.merged_updates:
            # b's output is the event it emits: the next unit receives it without x, and the
            # state keeps what b wrote itself
            dbg.break_before("c")
            dbg.resume()
            stop = self.wait_stop(dbg)
            self.assert_at(stop, "c", "before", StopReason.BREAKPOINT)
            with pytest.raises(flowdbg.PathError):
                dbg.inspect("x")
            assert dbg.inspect("state:x") == 20
            dbg.resume()
            self.wait_no_stop(dbg)
            assert self.finish(run, scn) == EXPECTED["linear"]
            return
        dbg.resume()
        assert self.finish(run, scn) == {"x": 2, "y": 3}

    def test_edit_after_a_unit_changes_the_route(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("loop")
        dbg.break_after("inc", temporary=True)
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        assert dbg.inspect("count") == 1
        dbg.set("count", 7)  # the loop condition sees 7: on to "done"
        dbg.break_before("inc")
        dbg.resume(stop.id)
        if not self.merged_updates:
            # inc chose its route in its own code: the edit reaches the unit its event goes
            # to (inc again, given 7), not the route
            stop = self.wait_stop(dbg)
            self.assert_at(stop, "inc", "before", StopReason.BREAKPOINT)
            assert dbg.inspect("count") == 7
            dbg.clear()
            dbg.resume()
            self.wait_no_stop(dbg)
            assert self.finish(run, scn) == {"count": 8, "finished": True}
            return
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == {"count": 7, "finished": True}

    def test_edit_before_a_unit_in_a_loop(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("loop")
        dbg.break_before("inc", temporary=True)
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        dbg.set("count", 10)
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == {"count": 11, "finished": True}

    def test_edit_inside_a_nested_graph(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("nested")
        dbg.break_before("inner2")
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "inner2", depth=1)
        dbg.set("x", 3)
        dbg.resume()
        result = self.finish(run, scn)
        assert result["z"] == 4
        assert result["done"] is True

    def test_edit_at_one_parallel_branch_affects_only_that_branch(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        scn = self.scenario("parallel")
        dbg.break_after("p1")
        dbg.break_after("p2")
        run = self.launch(dbg, scn, mode)
        stops = dbg.wait_for_stops(2, WAIT)
        assert len(stops) == 2, stops
        by_node = {s.location.node: s for s in stops}
        assert set(by_node) == {"p1", "p2"}

        dbg.select(by_node["p1"].id)
        dbg.set("items", ["p1-edited"])
        assert dbg.inspect("items") == ["p1-edited"]
        dbg.select(by_node["p2"].id)
        assert dbg.inspect("items") == ["p2"]

        dbg.resume_all()
        result = self.finish(run, scn)
        assert sorted(result["items"]) == ["p1-edited", "p2"]
        assert result["total"] == 2

    def test_inspect_errors(self, dbg: flowdbg.Debugger) -> None:
        with pytest.raises(flowdbg.NotStoppedError):
            dbg.inspect("x")
        with pytest.raises(flowdbg.NotStoppedError):
            dbg.set("x", 1)
        scn = self.scenario("linear")
        dbg.break_before("b")
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        with pytest.raises(flowdbg.PathError):
            dbg.inspect("no_such_key")
        with pytest.raises(flowdbg.PathError):
            dbg.inspect("x[")
        with pytest.raises(flowdbg.NotStoppedError):
            dbg.diff()  # nothing ran yet at a before stop
        dbg.resume()
        assert self.finish(run, scn) == EXPECTED["linear"]


@requires(Capability.PAUSE)
class AbstractPauseTests(SuiteBase):
    """pause() stops a running branch at its next point."""

    def test_pause_stops_at_the_next_point(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("slow")
        assert scn.started is not None and scn.release is not None
        run = self.launch(dbg, scn, mode)
        assert scn.started.wait(WAIT), "the slow unit did not start"
        assert dbg.status().state == "running"
        dbg.pause()
        scn.release()

        stop = self.wait_stop(dbg)
        self.assert_at(stop, "slow", "after", StopReason.PAUSE)
        assert stop.breakpoints == ()
        assert dbg.inspect("x") == 2

        dbg.resume()  # a pause is one stop, not a mode
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["slow"]


@requires(Capability.PARALLEL_BRANCHES)
class AbstractParallelTests(SuiteBase):
    """A stop holds only its own branch; several stops can be open at once."""

    def _both_stopped(self, dbg: flowdbg.Debugger) -> dict[str, flowdbg.Stop]:
        stops = dbg.wait_for_stops(2, WAIT)
        assert len(stops) == 2, f"expected 2 open stops, got {[str(s) for s in stops]}"
        by_node = {s.location.node: s for s in stops}
        assert set(by_node) == {"p1", "p2"}
        return by_node

    def test_two_branches_stop_at_once(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("parallel")
        dbg.break_before("p1")
        dbg.break_before("p2")
        run = self.launch(dbg, scn, mode)
        stops = self._both_stopped(dbg)
        p1, p2 = stops["p1"], stops["p2"]
        for s in (p1, p2):
            self.assert_at(s, s.location.node, "before", StopReason.BREAKPOINT, depth=0)
        assert p1.location.branch is not None
        assert p1.location.branch != p2.location.branch
        assert p1.location.run_id == p2.location.run_id
        if Capability.SUPERSTEPS in self.capabilities():
            assert p1.location.superstep is not None
            assert p1.location.superstep == p2.location.superstep

        dbg.resume(p1.id)
        assert [s.id for s in dbg.stops] == [p2.id]
        assert not run.done()
        assert self.wait_stop(dbg).id == p2.id  # still open

        dbg.resume(p2.id)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["parallel"]

    def test_other_branch_runs_while_one_is_stopped(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("parallel")
        dbg.break_before("p1")
        dbg.break_after("p2")
        run = self.launch(dbg, scn, mode)
        stops = self._both_stopped(dbg)
        self.assert_at(stops["p1"], "p1", "before")
        self.assert_at(stops["p2"], "p2", "after")  # p2 ran while p1 was held
        dbg.resume_all()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["parallel"]

    def test_resume_all_and_select(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("parallel")
        dbg.break_before("p*")
        run = self.launch(dbg, scn)
        stops = self._both_stopped(dbg)

        assert dbg.select(stops["p2"].id) is stops["p2"]
        assert dbg.status().selected == stops["p2"].id
        resumed = dbg.resume()
        assert resumed.id == stops["p2"].id
        assert [s.id for s in dbg.stops] == [stops["p1"].id]

        with pytest.raises(flowdbg.StopNotFound):
            dbg.select(stops["p2"].id)
        assert [s.id for s in dbg.resume_all()] == [stops["p1"].id]
        assert dbg.stops == []
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["parallel"]

    def test_step_over_from_a_branch_reaches_the_join(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("parallel")
        dbg.break_before("p1")
        dbg.break_before("p2")
        run = self.launch(dbg, scn)
        stops = self._both_stopped(dbg)
        dbg.step_over(stops["p1"].id)
        dbg.resume(stops["p2"].id)
        stop = self.onto_own(dbg, self.wait_stop(dbg))
        self.assert_at(stop, "join", "before", StopReason.STEP)
        if self.merged_updates:
            assert sorted(dbg.inspect("state:items")) == ["p1", "p2"]
        else:  # the join receives the branches' events
            assert sorted(item for event in dbg.inspect("") for item in event["items"]) == [
                "p1",
                "p2",
            ]
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["parallel"]


@requires(Capability.TERMINATE)
class AbstractTerminateTests(SuiteBase):
    """terminate() ends the run; its caller gets flowdbg.Terminated; the debugger goes on."""

    def test_terminate_while_stopped(self, dbg: flowdbg.Debugger, mode: str) -> None:
        assert issubclass(flowdbg.Terminated, BaseException)
        assert not issubclass(flowdbg.Terminated, Exception)
        scn = self.scenario("linear")
        dbg.break_before("b")
        run = self.launch(dbg, scn, mode)
        self.wait_stop(dbg)

        dbg.terminate()
        with pytest.raises(flowdbg.Terminated):
            run.result(WAIT)
        assert dbg.stops == []
        assert dbg.status().state != "stopped"

        # the debugger (and the same attached target) work normally afterwards
        run = self.launch(dbg, scn, mode)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "b", "before", StopReason.BREAKPOINT)
        assert dbg.inspect("x") == 2
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_terminate_while_running(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("slow")
        assert scn.started is not None and scn.release is not None
        run = self.launch(dbg, scn, mode)
        assert scn.started.wait(WAIT), "the slow unit did not start"
        dbg.terminate()
        scn.release()
        with pytest.raises(flowdbg.Terminated):
            run.result(WAIT)
        assert dbg.stops == []

    def test_terminate_with_parallel_stops(self, dbg: flowdbg.Debugger) -> None:
        self.require(Capability.PARALLEL_BRANCHES)
        scn = self.scenario("parallel")
        dbg.break_before("p1")
        dbg.break_before("p2")
        run = self.launch(dbg, scn)
        assert len(dbg.wait_for_stops(2, WAIT)) == 2
        dbg.terminate()
        with pytest.raises(flowdbg.Terminated):
            run.result(WAIT)
        assert dbg.stops == []

    def test_terminate_inside_a_nested_graph(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("nested")
        dbg.break_before("inner1")
        run = self.launch(dbg, scn, mode)
        self.assert_at(self.wait_stop(dbg), "inner1", depth=1)
        dbg.terminate()
        with pytest.raises(flowdbg.Terminated):
            run.result(WAIT)
        assert dbg.stops == []

    def test_terminate_reaches_the_callers_own_thread(self, dbg: flowdbg.Debugger) -> None:
        self.require(Capability.SYNC)
        scn = self.scenario("linear")
        self.attach(dbg, scn)
        dbg.break_before("b")
        call = self.call_in_thread(scn.run, scn.input)
        self.wait_stop(dbg)
        dbg.terminate()
        with pytest.raises(flowdbg.Terminated):
            call.result(WAIT)
