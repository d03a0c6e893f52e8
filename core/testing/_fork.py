"""Forks: a recorded run goes on from any step it can be forked from, under the debugger."""

from __future__ import annotations

from typing import Any

import pytest

import flowdbg
from flowdbg.adapter import Capability
from flowdbg.testing._base import WAIT, SuiteBase, requires
from flowdbg.testing._fixtures import EXPECTED, Scenario

__all__ = ["AbstractForkTests", "AbstractRerunTests"]


class AbstractForkTests(SuiteBase):
    """:meth:`flowdbg.Debugger.fork` on the canonical scenarios: a fork at any step of a run,
    with nothing edited, ends as the run did; an edit at a fork changes the result as it would
    have in the run; a step that cannot be forked from is refused with the reason and the steps
    that can. The fork runs the scenario's target as built (the "current code")."""

    def _record(self, dbg: flowdbg.Debugger, scn: Scenario) -> str:
        run = self.launch(dbg, scn)
        assert self.finish(run, scn) is not None
        assert dbg.flush(WAIT) and run.run_id is not None
        return run.run_id

    def _fork(
        self,
        dbg: flowdbg.Debugger,
        scn: Scenario,
        run_id: str,
        step: int,
        edits: dict[str, Any] | None = None,
    ) -> flowdbg.RunHandle:
        fork = dbg.fork(run_id, step, edits, target=scn.target)
        self._harness.handles.append(fork)
        return fork

    def _forkable(self, dbg: flowdbg.Debugger, run_id: str) -> list[int]:
        from flowdbg.timetravel import forkable_steps

        store = dbg.store
        assert store is not None
        return forkable_steps(store.get_run(run_id), store.get_steps(run_id, values=False))

    @requires(Capability.FORK)
    @pytest.mark.parametrize(
        "name", ["linear", "loop", "branch_positive", "branch_negative", "nested"]
    )
    def test_a_fork_at_each_step_ends_as_the_original(
        self, dbg: flowdbg.Debugger, name: str
    ) -> None:
        scn = self.scenario(name)
        run_id = self._record(dbg, scn)
        store = dbg.store
        assert store is not None
        own = [
            s.step
            for s in store.get_steps(run_id, kind=self.unit_kind)
            if tuple(s.path) == tuple(store.get_run(run_id).path)
        ]
        forkable = self._forkable(dbg, run_id)
        assert forkable == [0, *own], "every unit of a run without parallel branches forks"
        for step in forkable:
            fork = self._fork(dbg, scn, run_id, step)
            assert scn.normalize(fork.result(WAIT)) == dict(EXPECTED[name]), f"after step {step}"

    @requires(Capability.FORK)
    def test_a_fork_runs_only_the_steps_after_its_own_and_records_where_it_came_from(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("linear")
        run_id = self._record(dbg, scn)
        fork = self._fork(dbg, scn, run_id, 1)
        assert scn.normalize(fork.result(WAIT)) == dict(EXPECTED["linear"])
        assert dbg.flush(WAIT) and fork.run_id is not None
        store = dbg.store
        assert store is not None
        recorded = store.get_run(fork.run_id)
        assert (recorded.origin, recorded.forked_from, recorded.fork_step) == ("fork", run_id, 1)
        assert recorded.status == "completed"
        assert recorded.input == store.get_state(run_id, 1)
        assert [s.node for s in store.get_steps(fork.run_id, kind=self.unit_kind)] == ["b", "c"]
        assert [r.run_id for r in store.list_forks(run_id)] == [fork.run_id]

    @requires(Capability.FORK)
    def test_an_edit_at_a_fork_changes_the_result(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        run_id = self._record(dbg, scn)
        fork = self._fork(dbg, scn, run_id, 1, {"x": 5})
        assert scn.normalize(fork.result(WAIT)) == {"x": 50, "y": 51}

    @requires(Capability.FORK, Capability.DECISIONS)
    def test_an_edit_of_what_a_router_reads_changes_the_route(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("branch_positive")
        run_id = self._record(dbg, scn)
        fork = self._fork(dbg, scn, run_id, 1, {"x": -1})
        assert scn.normalize(fork.result(WAIT)) == dict(EXPECTED["branch_negative"])

    @requires(Capability.FORK)
    def test_a_fork_holds_at_breakpoints_and_takes_edits_there(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        run_id = self._record(dbg, scn)
        dbg.break_before("c")
        fork = self._fork(dbg, scn, run_id, 1)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "c", "before")
        assert stop.location.run_id == fork.run_id
        assert dbg.inspect("x") == 20
        dbg.set("x", 3)
        dbg.resume()
        assert scn.normalize(fork.result(WAIT)) == {"x": 3, "y": 4}

    @requires(Capability.FORK, Capability.PARALLEL_BRANCHES, Capability.SUPERSTEPS)
    def test_a_step_between_parallel_branches_is_refused_naming_the_forkable_ones(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("parallel")
        run_id = self._record(dbg, scn)
        store = dbg.store
        assert store is not None
        branches = [s.step for s in store.get_steps(run_id) if s.node in ("p1", "p2")]
        forkable = self._forkable(dbg, run_id)
        assert branches and not set(branches) & set(forkable)
        listed = ", ".join(map(str, forkable))
        with pytest.raises(flowdbg.ForkError, match="ran beside other nodes") as info:
            dbg.fork(run_id, branches[0], target=scn.target)
        assert str(info.value).endswith(f"it can be forked after steps {listed}")
        for step in forkable:
            fork = self._fork(dbg, scn, run_id, step)
            assert scn.normalize(fork.result(WAIT)) == dict(EXPECTED["parallel"]), step

    @requires(Capability.FORK, Capability.TOOL_CALLS)
    def test_a_call_inside_a_unit_is_refused(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("tools")
        run_id = self._record(dbg, scn)
        store = dbg.store
        assert store is not None
        calls = [s for s in store.get_steps(run_id) if s.kind == "tool"]
        assert calls
        with pytest.raises(flowdbg.ForkError, match=r"is a tool call inside a node"):
            dbg.fork(run_id, calls[0].step, target=scn.target)

    @requires(Capability.FORK)
    def test_an_unknown_step_is_refused_naming_the_forkable_ones(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("linear")
        run_id = self._record(dbg, scn)
        with pytest.raises(flowdbg.ForkError, match=r"has no step 99 \(its steps are 1\.\.3\)"):
            dbg.fork(run_id, 99, target=scn.target)


class AbstractRerunTests(SuiteBase):
    """:meth:`flowdbg.Debugger.rerun` on the tools scenario (a model call, then two tool calls,
    in one unit): an unchanged rerun serves every call it can from the record
    (:attr:`AdapterFixtures.served_call_kinds`) and ends as the run did; a change before the
    first call makes it and every later call of its unit run live."""

    def _record(self, dbg: flowdbg.Debugger, scn: Scenario) -> tuple[str, list[Any]]:
        run = self.launch(dbg, scn)
        assert self.finish(run, scn) == dict(EXPECTED["tools"])
        assert dbg.flush(WAIT) and run.run_id is not None
        store = dbg.store
        assert store is not None
        calls = [s for s in store.get_steps(run.run_id) if s.kind in ("llm", "tool")]
        assert [s.kind for s in calls] == ["llm", "tool", "tool"]
        return run.run_id, calls

    def _rerun(
        self, dbg: flowdbg.Debugger, scn: Scenario, run_id: str, cached_calls: str = "all"
    ) -> flowdbg.RunHandle:
        rerun = dbg.rerun(run_id, cached_calls, target=scn.target)
        self._harness.handles.append(rerun)
        return rerun

    @requires(Capability.CACHED_CALLS, Capability.TOOL_CALLS, Capability.LLM_CALLS)
    def test_an_unchanged_rerun_serves_its_calls_from_the_record(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("tools")
        run_id, calls = self._record(dbg, scn)
        rerun = self._rerun(dbg, scn, run_id)
        assert scn.normalize(rerun.result(WAIT)) == dict(EXPECTED["tools"])
        servable = [s for s in calls if s.kind in self.served_call_kinds]
        assert rerun.calls is not None
        assert (rerun.calls.served, rerun.calls.live) == (
            len(servable),
            len(calls) - len(servable),
        )
        assert rerun.calls.diverged == []
        assert dbg.flush(WAIT) and rerun.run_id is not None
        store = dbg.store
        assert store is not None
        again = [s for s in store.get_steps(rerun.run_id) if s.kind in ("llm", "tool")]
        assert [(s.node, s.cached) for s in again] == [
            (s.node, s.kind in self.served_call_kinds) for s in calls
        ]
        recorded = store.get_run(rerun.run_id)
        assert (recorded.origin, recorded.forked_from) == ("rerun", run_id)

    @requires(
        Capability.CACHED_CALLS,
        Capability.TOOL_CALLS,
        Capability.LLM_CALLS,
        Capability.STATE_EDITING,
    )
    def test_a_change_runs_the_first_differing_call_and_the_rest_of_its_unit_live(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("tools")
        run_id, calls = self._record(dbg, scn)
        dbg.break_before("agent", kind=self.unit_kind)
        rerun = self._rerun(dbg, scn, run_id)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "agent", "before")
        dbg.set("q", "trains")  # what the model is asked changes
        dbg.clear()
        dbg.resume()
        result = scn.normalize(rerun.result(WAIT))
        assert result["found"] == "results for trains"
        assert rerun.calls is not None
        assert (rerun.calls.served, rerun.calls.live) == (0, len(calls))
        (first,) = rerun.calls.diverged
        assert (first.kind, first.reason, first.recorded_step) == ("llm", "input", calls[0].step)

    @requires(Capability.CACHED_CALLS, Capability.TOOL_CALLS, Capability.LLM_CALLS)
    def test_cached_calls_names_the_kinds_served(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("tools")
        run_id, calls = self._record(dbg, scn)
        rerun = self._rerun(dbg, scn, run_id, "tool")
        assert scn.normalize(rerun.result(WAIT)) == dict(EXPECTED["tools"])
        served = [s for s in calls if s.kind == "tool" and "tool" in self.served_call_kinds]
        assert rerun.calls is not None
        assert (rerun.calls.served, rerun.calls.live) == (len(served), len(calls) - len(served))
