"""Forks: a recorded run goes on from any step it can be forked from, under the debugger."""

from __future__ import annotations

import fnmatch
from typing import Any

import pytest

import flowdbg
from flowdbg.adapter import Capability
from flowdbg.testing._base import WAIT, SuiteBase, requires
from flowdbg.testing._fixtures import EXPECTED, Scenario

__all__ = ["AbstractForkTests", "AbstractRerunTests", "AbstractRewindTests"]


class _ScenarioSteps(SuiteBase):
    """Steps are named as a graph numbers its nodes (step 1: the scenario's first unit) and
    mapped onto the record through :meth:`AdapterFixtures.placement` (the scenario's units
    may be calls inside the framework's own: an agent's tool calls)."""

    def _own(self, dbg: flowdbg.Debugger, run_id: str) -> list[Any]:
        """The steps of the scenario's own units in run ``run_id`` (see the class)."""
        store = dbg.store
        assert store is not None
        where = (*store.get_run(run_id).path, *self.place.path)
        return [
            s for s in store.get_steps(run_id, kind=self.scenario_kind) if tuple(s.path) == where
        ]

    def _step(self, dbg: flowdbg.Debugger, run_id: str, step: int) -> int:
        """The record's step of the scenario's unit number ``step`` (0: the run's input)."""
        return step and self._own(dbg, run_id)[step - 1].step


class AbstractForkTests(_ScenarioSteps):
    """:meth:`flowdbg.Debugger.fork` on the canonical scenarios: a fork at any step of a run,
    with nothing edited, ends as the run did; an edit at a fork changes the result as it would
    have in the run; a step that cannot be forked from is refused with the reason and the steps
    that can. The fork runs the scenario's target as built (the "current code").

    Steps are named as in :class:`_ScenarioSteps`."""

    def _result(self, dbg: flowdbg.Debugger, scn: Scenario, fork: flowdbg.RunHandle) -> Any:
        return self.fork_result(dbg, scn, fork, WAIT)

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
        at = self._step(dbg, run_id, step)
        fork = dbg.fork(run_id, at, edits and self.fork_edits(edits), target=scn.target)
        self._harness.handles.append(fork)
        return fork

    def _forkable(self, dbg: flowdbg.Debugger, run_id: str) -> list[int]:
        from flowdbg.timetravel import forkable_steps

        store = dbg.store
        assert store is not None
        run, steps = store.get_run(run_id), store.get_steps(run_id, values=False)
        adapter = self.adapter_info().adapter
        refused = {} if adapter is None else adapter.fork_problems(store, run, steps)
        any_unit = adapter is not None and adapter.fork_any_unit
        return forkable_steps(run, steps, refused, any_unit=any_unit)

    @requires(Capability.FORK)
    @pytest.mark.parametrize(
        "name", ["linear", "loop", "branch_positive", "branch_negative", "nested"]
    )
    def test_a_fork_at_each_step_ends_as_the_original(
        self, dbg: flowdbg.Debugger, name: str
    ) -> None:
        scn = self.scenario(name)
        run_id = self._record(dbg, scn)
        own = [s.step for s in self._own(dbg, run_id)]
        forkable = self._forkable(dbg, run_id)
        assert forkable == [0, *own], "every unit of a run without parallel branches forks"
        for number in range(len(own) + 1):
            fork = self._fork(dbg, scn, run_id, number)
            result = self._result(dbg, scn, fork)
            assert result == dict(EXPECTED[name]), f"after unit {number}"

    @requires(Capability.FORK)
    def test_a_fork_runs_only_the_steps_after_its_own_and_records_where_it_came_from(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("linear")
        run_id = self._record(dbg, scn)
        fork = self._fork(dbg, scn, run_id, 1)
        assert self._result(dbg, scn, fork) == dict(EXPECTED["linear"])
        assert dbg.flush(WAIT) and fork.run_id is not None
        store = dbg.store
        assert store is not None
        recorded = store.get_run(fork.run_id)
        at = self._step(dbg, run_id, 1)
        assert (recorded.origin, recorded.forked_from, recorded.fork_step) == ("fork", run_id, at)
        assert recorded.status == "completed"
        assert recorded.input == store.get_state(run_id, at)
        assert [s.node for s in self._own(dbg, fork.run_id)] == ["b", "c"]
        assert [r.run_id for r in store.list_forks(run_id)] == [fork.run_id]

    @requires(Capability.FORK)
    def test_an_edit_at_a_fork_changes_the_result(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        run_id = self._record(dbg, scn)
        fork = self._fork(dbg, scn, run_id, 1, {"x": 5})
        assert self._result(dbg, scn, fork) == {"x": 50, "y": 51}

    @requires(Capability.FORK)
    def test_a_fork_of_a_fork_from_its_input_goes_on_where_the_fork_started(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("linear")
        run_id = self._record(dbg, scn)
        fork = self._fork(dbg, scn, run_id, 1, {"x": 5})
        assert self._result(dbg, scn, fork) == {"x": 50, "y": 51}
        assert dbg.flush(WAIT) and fork.run_id is not None
        again = self._fork(dbg, scn, fork.run_id, 0)  # its input: the state after a, edited
        assert self._result(dbg, scn, again) == {"x": 50, "y": 51}
        with pytest.raises(flowdbg.ForkError, match="its input is the state it started from"):
            dbg.rerun(fork.run_id, target=scn.target)

    @requires(Capability.FORK, Capability.DECISIONS)
    def test_an_edit_of_what_a_router_reads_changes_the_route(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("branch_positive")
        run_id = self._record(dbg, scn)
        fork = self._fork(dbg, scn, run_id, 1, {"x": -1})
        assert self._result(dbg, scn, fork) == dict(EXPECTED["branch_negative"])

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
        assert self._result(dbg, scn, fork) == {"x": 3, "y": 4}

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
            fork = dbg.fork(run_id, step, target=scn.target)
            self._harness.handles.append(fork)
            assert self._result(dbg, scn, fork) == dict(EXPECTED["parallel"]), step

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
        store = dbg.store
        assert store is not None
        last = store.get_steps(run_id, values=False)[-1].step
        with pytest.raises(
            flowdbg.ForkError, match=rf"has no step 99 \(its steps are 1\.\.{last}\)"
        ):
            dbg.fork(run_id, 99, target=scn.target)


class AbstractRerunTests(SuiteBase):
    """:meth:`flowdbg.Debugger.rerun` on the tools scenario (a model call, then two tool calls,
    in one unit; :attr:`AdapterFixtures.tools_call_kinds`): an unchanged rerun serves every
    call it can from the record (:attr:`AdapterFixtures.served_call_kinds`) and ends as the run
    did; a change before the first call makes it and every later call of its unit run live
    (and those of every unit its changed outcome reaches)."""

    def _record_calls(self, dbg: flowdbg.Debugger, scn: Scenario) -> tuple[str, list[Any]]:
        run = self.launch(dbg, scn)
        assert self.finish(run, scn) == dict(EXPECTED["tools"])
        assert dbg.flush(WAIT) and run.run_id is not None
        store = dbg.store
        assert store is not None
        calls = [s for s in store.get_steps(run.run_id) if s.kind in ("llm", "tool")]
        assert [s.kind for s in calls] == list(self.tools_call_kinds)
        return run.run_id, calls

    def _rerun(
        self, dbg: flowdbg.Debugger, scn: Scenario, run_id: str, cached_calls: str = "all"
    ) -> flowdbg.RunHandle:
        config = self.rerun_config(scn)
        rerun = dbg.rerun(run_id, cached_calls, target=scn.target, config=config)
        self._harness.handles.append(rerun)
        return rerun

    @requires(Capability.CACHED_CALLS, Capability.TOOL_CALLS, Capability.LLM_CALLS)
    def test_an_unchanged_rerun_serves_its_calls_from_the_record(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("tools")
        run_id, calls = self._record_calls(dbg, scn)
        rerun = self._rerun(dbg, scn, run_id)
        assert self.rerun_result(dbg, scn, rerun, WAIT) == dict(EXPECTED["tools"])
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
        run_id, calls = self._record_calls(dbg, scn)
        unit, kind, path = self.tools_question
        dbg.break_before(unit, kind=kind or self.unit_kind)
        rerun = self._rerun(dbg, scn, run_id)
        stop = self.wait_stop(dbg)
        where = stop.location
        assert (where.kind, where.position) == (kind or self.unit_kind, "before")
        assert fnmatch.fnmatchcase(where.node, unit)
        dbg.set(path, "trains")  # what the model is asked changes
        dbg.clear()
        dbg.resume()
        result = self.rerun_result(dbg, scn, rerun, WAIT)
        assert result["found"] == "results for trains"
        assert rerun.calls is not None
        assert (rerun.calls.served, rerun.calls.live) == (0, len(calls))
        # the first call of each branch departs (the question reaches every later call); the
        # first of them all is the first model call
        first, *others = rerun.calls.diverged
        assert (first.kind, first.reason, first.recorded_step) == ("llm", "input", calls[0].step)
        branches = {tuple(s.path) for s in calls}
        assert len(others) == len(branches) - 1
        assert {first.branch, *(o.branch for o in others)} == branches

    @requires(Capability.CACHED_CALLS, Capability.TOOL_CALLS, Capability.LLM_CALLS)
    def test_cached_calls_names_the_kinds_served(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("tools")
        run_id, calls = self._record_calls(dbg, scn)
        rerun = self._rerun(dbg, scn, run_id, "tool")
        assert self.rerun_result(dbg, scn, rerun, WAIT) == dict(EXPECTED["tools"])
        served = [s for s in calls if s.kind == "tool" and "tool" in self.served_call_kinds]
        assert rerun.calls is not None
        assert (rerun.calls.served, rerun.calls.live) == (len(served), len(calls) - len(served))


class AbstractRewindTests(_ScenarioSteps):
    """:meth:`flowdbg.Debugger.rewind` at a live stop: the run goes back to the state after an
    earlier step (edited or not) and goes on in the same call, whose caller gets the result of
    the run from there; the record keeps the rewound run (``terminated``, a ``Rewound`` error)
    and the new one (a ``rewind`` of it); a step that has not ended is refused and the stop
    stays open. Steps are named as in :class:`_ScenarioSteps`."""

    def _at(self, dbg: flowdbg.Debugger, stop: flowdbg.Stop, step: int) -> int:
        """The record's step of the scenario's unit number ``step`` in the held run of
        ``stop`` (its steps so far, once written)."""
        assert dbg.flush(WAIT)
        run_id = stop.location.run_id
        assert run_id is not None
        return self._step(dbg, run_id, step)

    def _rewound(self, dbg: flowdbg.Debugger, old: str, new: str, step: int) -> None:
        assert dbg.flush(WAIT)
        store = dbg.store
        assert store is not None
        rewound = store.get_run(old)
        assert rewound.status == "terminated"
        assert rewound.error is not None and rewound.error.type == "Rewound"
        made = store.get_run(new)
        assert (made.origin, made.forked_from, made.fork_step) == ("rewind", old, step)
        assert made.status == "completed"
        assert [r.run_id for r in store.list_forks(old)] == [new]

    @requires(Capability.REWIND)
    @pytest.mark.parametrize("mode", ["sync", "async"])
    def test_a_rewind_goes_on_from_the_earlier_step_in_the_same_call(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        if mode == "async":
            self.require(Capability.ASYNC)
        scn = self.scenario("linear")
        dbg.break_before("c")
        run = self.launch(dbg, scn, mode)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "c", "before")
        first_run = stop.location.run_id
        assert dbg.inspect("x") == 20
        after_a = self._at(dbg, stop, 1)
        dbg.rewind(after_a)
        again = self.wait_stop(dbg)  # b runs again from the state after a, then c holds
        self.assert_at(again, "c", "before")
        assert again.location.run_id != first_run
        assert dbg.inspect("x") == 20
        dbg.resume()
        assert self.finish(run, scn) == dict(EXPECTED["linear"])
        assert run.run_id == again.location.run_id  # the handle follows the run that goes on
        self._rewound(dbg, first_run, again.location.run_id, after_a)

    @requires(Capability.REWIND)
    def test_a_run_that_went_on_from_a_rewind_is_rewound_again(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("c")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        dbg.rewind(self._at(dbg, stop, 1), self.fork_edits({"x": 5}))
        second = self.wait_stop(dbg)
        dbg.rewind(0)  # the second run's input: the (edited) state after a
        third = self.wait_stop(dbg)
        self.assert_at(third, "c", "before")
        assert dbg.inspect("x") == 50
        dbg.resume()
        assert self.finish(run, scn) == {"x": 50, "y": 51}
        assert dbg.flush(WAIT)
        store = dbg.store
        assert store is not None
        made = store.get_run(third.location.run_id)
        assert (made.origin, made.forked_from, made.fork_step) == (
            "rewind",
            second.location.run_id,
            0,
        )
        assert store.get_run(second.location.run_id).input == {"x": 5}

    @requires(Capability.REWIND)
    def test_a_rewind_with_an_edit_changes_the_result(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("c")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        dbg.rewind(self._at(dbg, stop, 1), self.fork_edits({"x": 5}))
        self.wait_stop(dbg)
        assert dbg.inspect("x") == 50
        dbg.resume()
        assert self.finish(run, scn) == {"x": 50, "y": 51}

    @requires(Capability.REWIND)
    def test_a_step_that_has_not_ended_is_refused_and_the_stop_stays(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("linear")
        dbg.break_before("c")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        held = stop.location.step
        with pytest.raises(flowdbg.ForkError, match=f"step {held} .* has not ended"):
            dbg.rewind(held)
        with pytest.raises(flowdbg.ForkError, match="step must be a step number"):
            dbg.rewind(-1)
        assert [s.id for s in dbg.stops] == [stop.id]  # nothing resumed
        dbg.resume()
        assert self.finish(run, scn) == dict(EXPECTED["linear"])

    @requires(Capability.REWIND, Capability.PARALLEL_BRANCHES, Capability.SUPERSTEPS)
    def test_a_rewind_from_one_of_two_held_branches_restarts_both(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("parallel")
        dbg.break_before("p1")
        dbg.break_before("p2")
        run = self.launch(dbg, scn)
        held = dbg.wait_for_stops(2, WAIT)
        assert len(held) == 2, f"expected 2 open stops, got {[str(s) for s in held]}"
        old = held[0].location.run_id
        after_fan = self._at(dbg, held[1], 1)
        dbg.rewind(after_fan, stop_id=held[1].id)  # after fan: the branches run again
        again = dbg.wait_for_stops(2, WAIT)
        assert sorted(s.location.node for s in again) == ["p1", "p2"]
        assert all(s.location.run_id not in (None, old) for s in again)
        dbg.resume_all()
        assert self.finish(run, scn) == dict(EXPECTED["parallel"])
        assert run.run_id is not None
        self._rewound(dbg, old, run.run_id, after_fan)
