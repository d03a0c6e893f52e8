"""Recording: what the store holds matches what ran and what the debugger showed."""

from __future__ import annotations

import json
from typing import Any

import pytest

import flowdbg
from flowdbg._values import to_plain
from flowdbg.testing._base import SuiteBase
from flowdbg.testing._fixtures import EXPECTED

__all__ = ["AbstractRecordingTests"]


def _plain(value: Any) -> Any:
    """A value as the store gives it back: plain JSON."""
    return json.loads(json.dumps(to_plain(value), default=repr))


class AbstractRecordingTests(SuiteBase):
    """Every run is recorded: its steps (order, node, status, decision) and the state after
    each step: the state the framework committed, which is what the debugger showed at the
    step's after point where the step ran alone in its superstep."""

    def _walk(
        self, dbg: flowdbg.Debugger, run: flowdbg.RunHandle
    ) -> list[tuple[str, int, str, str, Any, Any]]:
        """Resume every stop until the run ends; what each after/error stop showed."""
        seen = []
        for _ in range(200):
            stop = dbg.wait_for_stop(10.0)
            if stop is None:
                break
            loc = stop.location
            seen.append(
                (loc.run_id, loc.step, loc.node, loc.position, _plain(stop.state), stop.decision)
            )
            dbg.resume(stop.id)
        else:
            pytest.fail("still stopping after 200 resumes")
        run.exception(10.0)
        return seen

    @pytest.mark.parametrize(
        "name", ["linear", "loop", "branch_positive", "branch_negative", "parallel", "nested"]
    )
    def test_recorded_steps_match_what_ran(self, dbg: flowdbg.Debugger, name: str) -> None:
        scn = self.scenario(name)
        dbg.break_after("*")
        run = self.launch(dbg, scn)
        seen = self._walk(dbg, run)
        assert self.finish(run, scn) == dict(EXPECTED[name])
        assert dbg.flush(10.0)
        store = dbg.store
        assert store is not None
        root = store.get_run(run.run_id or "")
        assert root.status == "completed"
        by_run: dict[str, list[tuple[str, int, str, str, Any, Any]]] = {}
        for entry in seen:
            by_run.setdefault(entry[0], []).append(entry)
        for run_id, entries in by_run.items():
            steps = {s.step: s for s in store.get_steps(run_id)}
            own = tuple(store.get_run(run_id).path)  # the run's own units, not calls in them
            together: dict[tuple[str, int], list[int]] = {}
            for _, step, node, _position, state, decision in entries:
                rec = steps[step]
                assert (rec.node, rec.status) == (node, "completed")
                if decision is not None:
                    assert _plain(rec.decision) == _plain(decision)
                superstep = rec.superstep
                key = ("step", step) if superstep is None else ("superstep", superstep)
                together.setdefault(key, []).append(step)
                if superstep is None or len(self._in_superstep(steps, superstep, own)) == 1:
                    # a unit alone in its superstep: the state it committed is the one shown
                    assert store.get_state(run_id, step=step) == state, (
                        f"state after step {step} ({node}) of run {run_id[:8]} differs from "
                        "what the debugger showed there"
                    )
            for group in together.values():
                # units of one superstep (parallel branches): the state after each is what the
                # superstep committed, the same for all (a stop shows one branch's own update)
                states = [store.get_state(run_id, step=step) for step in group]
                assert all(state == states[0] for state in states), states
            recorded = sorted(steps)
            assert recorded == sorted(step for _, step, *_ in entries)

    @staticmethod
    def _in_superstep(steps: dict[int, Any], superstep: int, own: tuple[str, ...]) -> list[int]:
        return [
            n for n, rec in steps.items() if rec.superstep == superstep and tuple(rec.path) == own
        ]

    def test_nested_runs_are_recorded_as_children(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("nested")
        run = self.launch(dbg, scn)
        assert self.finish(run, scn) == dict(EXPECTED["nested"])
        assert dbg.flush(10.0)
        store = dbg.store
        assert store is not None
        root = store.get_run(run.run_id or "")
        children = store.list_runs(parent=root.run_id)
        assert len(children) == 1
        child = children[0]
        assert child.parent_run_id == root.run_id and child.status == "completed"
        parent_steps = {s.step: s for s in store.get_steps(root.run_id)}
        assert child.parent_step is not None
        assert parent_steps[child.parent_step].node == "sub"
        kind = self.scenario_kind
        assert [s.node for s in store.get_steps(child.run_id, kind=kind)] == ["inner1", "inner2"]
        assert [s.node for s in store.get_steps(root.run_id, kind=kind)] == [
            "pre",
            "sub",
            "post",
        ]

    def test_failed_and_terminated_runs_are_recorded(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("failing")
        run = self.launch(dbg, scn)
        with pytest.raises(ValueError):
            run.result(10.0)
        scn2 = self.scenario("linear")
        self.attach(dbg, scn2)  # before the breakpoint names its node
        dbg.break_before("b")
        run2 = self.launch(dbg, scn2)
        self.wait_stop(dbg)
        dbg.terminate()
        with pytest.raises(flowdbg.Terminated):
            run2.result(10.0)
        assert dbg.flush(10.0)
        store = dbg.store
        assert store is not None
        failed = store.get_run(run.run_id or "")
        assert failed.status == "failed"
        assert failed.error is not None and failed.error.type == "ValueError"
        boom = store.get_steps(failed.run_id, node="boom")
        assert [s.status for s in boom] == ["failed"]
        assert boom[0].error is not None and "boom at x=2" in boom[0].error.message
        assert store.get_run(run2.run_id or "").status == "terminated"
        assert {r.run_id for r in store.list_runs(status="failed")} == {failed.run_id}

    def test_run_log_of_a_run(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        run = self.launch(dbg, scn)
        assert self.finish(run, scn) == dict(EXPECTED["linear"])
        log = run.log
        assert [s.node for s in log.steps if s.kind == self.scenario_kind] == ["a", "b", "c"]
        assert all(s.status == "completed" for s in log.steps)
        assert "completed" in log.summary()
        assert dbg.runs[-1].run.run_id == run.run_id

    def test_recording_off(self) -> None:
        dbg = self.debugger(record=False)
        assert dbg.store is None
        scn = self.scenario("linear")
        run = self.launch(dbg, scn)
        assert self.finish(run, scn) == dict(EXPECTED["linear"])
        # the run log is always on
        assert [s.node for s in run.log.steps if s.kind == self.scenario_kind] == ["a", "b", "c"]
