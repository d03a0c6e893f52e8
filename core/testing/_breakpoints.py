"""Suites for breakpoints, conditions, logpoints and watches."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest

import flowdbg
from flowdbg import Capability, StopReason
from flowdbg.testing._base import WAIT, SuiteBase
from flowdbg.testing._fixtures import EXPECTED

__all__ = [
    "AbstractBreakpointTests",
    "AbstractConditionTests",
    "AbstractLogpointTests",
    "AbstractWatchTests",
]


def _name(item: Any) -> str:
    for attr in ("node", "name"):  # a LangGraph Send; an agent or a workflow step
        value = getattr(item, attr, None)
        if isinstance(value, str):
            return value
    return str(item)


def _names(decision: Any) -> set[str]:
    """The unit names in a routing decision: a name, a mapping keyed by names, or a collection
    of names or of objects naming a unit (``.node``, ``.name``)."""
    if decision is None:
        return set()
    if isinstance(decision, str):
        return {decision}
    if isinstance(decision, dict):
        return {str(k) for k in decision}
    try:
        items = list(decision)
    except TypeError:
        return {_name(decision)}
    return {_name(i) for i in items}


class AbstractBreakpointTests(SuiteBase):
    """Node breakpoints: where they stop, what a stop shows, and that resuming is harmless."""

    def test_break_before_stops_with_the_units_input(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        expected = self.undebugged(self.scenario("linear"))
        scn = self.scenario("linear")
        bp = dbg.break_before("b")
        run = self.launch(dbg, scn, mode)

        stop = self.wait_stop(dbg)
        self.assert_at(stop, "b", "before", StopReason.BREAKPOINT, depth=0)
        loc = stop.location
        assert loc.framework == self.adapter
        assert loc.kind == self.scenario_kind
        assert loc.path == self.place.of(())
        assert loc.run_id
        assert stop.breakpoints == (bp.id,)
        assert stop.hits == {bp.id: 1}
        assert bp.hits == 1
        assert stop.state["x"] == 2
        assert dbg.inspect("x") == 2
        assert not run.done(), "the run finished although it is stopped"

        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == expected == EXPECTED["linear"]

    def test_break_after_shows_the_units_effect(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("linear")
        dbg.break_after("b")
        run = self.launch(dbg, scn, mode)

        stop = self.wait_stop(dbg)
        self.assert_at(stop, "b", "after", StopReason.BREAKPOINT)
        assert dbg.inspect("x") == 20
        diff = dbg.diff()
        assert diff.changed == {"x": (2, 20)}
        assert diff.added == {}
        assert diff.removed == {}

        dbg.resume()
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_glob_stops_at_every_matching_unit_in_order(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        scn = self.scenario("linear")
        dbg.break_before("*", kind=self.scenario_kind)  # the framework's own units aside
        run = self.launch(dbg, scn, mode)
        assert self.resume_until_done(dbg, run) == ["a", "b", "c"]
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_glob_character_class(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("[bc]")
        run = self.launch(dbg, scn)
        assert self.resume_until_done(dbg, run) == ["b", "c"]
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_kind_filter(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("b", kind="llm" if self.scenario_kind == "tool" else "tool")
        dbg.break_after("b", kind=self.scenario_kind)
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "b", "after")
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_break_on_event_single_steps_everything(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("nested")
        dbg.break_on_event("*")
        run = self.launch(dbg, scn)
        assert self.resume_until_done(dbg, run, own=True) == [
            "pre",
            "sub",
            "inner1",
            "inner2",
            "post",
        ]
        assert self.finish(run, scn) == EXPECTED["nested"]

    def test_breakpoint_on_unknown_node_never_stops(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        bp = dbg.break_before("no_such_node")
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]
        assert bp.hits == 0

    def test_loop_stops_at_every_iteration_and_counts_hits(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("loop")
        bp = dbg.break_before("inc")
        run = self.launch(dbg, scn)
        counts = []
        for hit in range(1, 6):
            stop = self.wait_stop(dbg)
            self.assert_at(stop, "inc", "before", StopReason.BREAKPOINT)
            assert stop.hits == {bp.id: hit}
            counts.append(dbg.inspect("count"))
            dbg.resume()
        self.wait_no_stop(dbg)
        assert counts == [0, 1, 2, 3, 4]
        assert bp.hits == 5
        assert self.finish(run, scn) == EXPECTED["loop"]

    def test_steps_increase_within_a_run(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("*", kind=self.scenario_kind)
        run = self.launch(dbg, scn)
        steps, run_ids = [], set()
        while (stop := dbg.wait_for_stop(WAIT)) is not None:
            steps.append(stop.location.step)
            run_ids.add(stop.location.run_id)
            dbg.resume()
        assert len(steps) == 3
        assert steps == sorted(steps) and len(set(steps)) == 3, steps
        assert len(run_ids) == 1
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_breakpoint_inside_a_nested_graph(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("nested")
        dbg.break_before("inner2")
        run = self.launch(dbg, scn, mode)

        stop = self.wait_stop(dbg)
        self.assert_at(stop, "inner2", "before", StopReason.BREAKPOINT, depth=1)
        assert stop.location.path == self.place.of(("sub",))
        assert stop.location.parent_run_id is not None
        assert stop.location.parent_run_id != stop.location.run_id
        assert dbg.inspect("x") == 20

        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["nested"]

    def test_nested_and_top_level_units_are_told_apart(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("nested")
        dbg.break_before("*")
        run = self.launch(dbg, scn)
        seen = []
        while (stop := dbg.wait_for_stop(WAIT)) is not None:
            if self.own(stop.location):
                seen.append((stop.location.node, stop.location.path, stop.location.depth))
            dbg.resume()
        top, inner = self.place.of(()), self.place.of(("sub",))
        assert seen == [
            ("pre", top, len(top)),
            ("sub", top, len(top)),
            ("inner1", inner, len(inner)),
            ("inner2", inner, len(inner)),
            ("post", top, len(top)),
        ]
        assert self.finish(run, scn) == EXPECTED["nested"]

    @pytest.mark.parametrize("positive", [True, False], ids=["positive", "negative"])
    def test_after_stop_reports_the_routing_decision(
        self, dbg: flowdbg.Debugger, positive: bool
    ) -> None:
        self.require(Capability.DECISIONS)
        name = "branch_positive" if positive else "branch_negative"
        scn = self.scenario(name)
        dbg.break_after("start")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "start", "after")
        assert _names(stop.decision) == ({"pos"} if positive else {"neg"})
        dbg.resume()
        assert self.finish(run, scn) == EXPECTED[name]

    def test_ids_remove_and_clear(self, dbg: flowdbg.Debugger) -> None:
        first = dbg.break_before("a")
        second = dbg.break_after("b")
        third = dbg.break_before("c")
        ids = [first.id, second.id, third.id]
        assert all(re.fullmatch(r"bp-\d+", i) for i in ids), ids
        assert len(set(ids)) == 3
        assert [b.id for b in dbg.breakpoints] == ids

        dbg.remove(first.id)
        dbg.remove(second)
        assert [b.id for b in dbg.breakpoints] == [third.id]
        with pytest.raises(flowdbg.BreakpointError, match=re.escape(first.id)):
            dbg.remove(first.id)
        dbg.clear()
        assert dbg.breakpoints == []

        scn = self.scenario("linear")
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_breakpoint_added_while_stopped_takes_effect(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        bp = dbg.break_before("a")
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "a")
        dbg.remove(bp)
        dbg.break_before("c")
        dbg.resume()
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "c", "before", StopReason.BREAKPOINT)
        assert dbg.inspect("x") == 20
        dbg.resume()
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_stop_blocks_the_callers_own_thread(self, dbg: flowdbg.Debugger) -> None:
        self.require(Capability.SYNC)
        scn = self.scenario("linear")
        self.attach(dbg, scn)
        dbg.break_before("b")
        call = self.call_in_thread(scn.run, scn.input)

        stop = self.wait_stop(dbg)
        self.assert_at(stop, "b")
        assert not call.done(), "the caller's thread went on although its run is stopped"
        dbg.resume()
        assert scn.normalize(call.result()) == EXPECTED["linear"]

    def test_stop_to_dict_is_json(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        bp = dbg.break_after("b")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        data = json.loads(json.dumps(stop.to_dict()))
        assert data["id"] == stop.id
        assert data["reason"] == "breakpoint"
        assert data["location"]["node"] == "b"
        assert data["location"]["position"] == "after"
        assert data["breakpoints"] == [bp.id]
        assert data["state"]["x"] == 20
        dbg.resume()
        assert self.finish(run, scn) == EXPECTED["linear"]


class AbstractConditionTests(SuiteBase):
    """Conditions, hit conditions, temporary and disabled breakpoints, and bad input."""

    def _counts_at_stops(self, dbg: flowdbg.Debugger, **bp_args: Any) -> list[int]:
        scn = self.scenario("loop")
        dbg.break_before("inc", **bp_args)
        run = self.launch(dbg, scn)
        counts = []
        while (stop := dbg.wait_for_stop(WAIT)) is not None:
            self.assert_at(stop, "inc", "before", StopReason.BREAKPOINT)
            counts.append(dbg.inspect("count"))
            dbg.resume()
        assert self.finish(run, scn) == EXPECTED["loop"]
        return counts

    def test_condition_on_state(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("loop")
        bp = dbg.break_before("inc", condition="state['count'] == 3")
        run = self.launch(dbg, scn, mode)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "inc", "before", StopReason.BREAKPOINT)
        assert dbg.inspect("count") == 3
        assert stop.breakpoints == (bp.id,)
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["loop"]

    def test_condition_on_node_name(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("*", condition="node == 'b' and step > 0")
        run = self.launch(dbg, scn)
        assert self.resume_until_done(dbg, run) == ["b"]
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_condition_at_after_point_sees_the_new_state(self, dbg: flowdbg.Debugger) -> None:
        assert self._counts_after(dbg, condition="state['count'] == 5") == [5]

    def _counts_after(self, dbg: flowdbg.Debugger, **bp_args: Any) -> list[int]:
        scn = self.scenario("loop")
        dbg.break_after("inc", **bp_args)
        run = self.launch(dbg, scn)
        counts = []
        while (stop := dbg.wait_for_stop(WAIT)) is not None:
            self.assert_at(stop, "inc", "after")
            counts.append(dbg.inspect("count"))
            dbg.resume()
        assert self.finish(run, scn) == EXPECTED["loop"]
        return counts

    def test_callable_condition(self, dbg: flowdbg.Debugger) -> None:
        assert self._counts_at_stops(dbg, condition=lambda ns: ns["state"]["count"] == 2) == [2]

    @pytest.mark.parametrize(
        ("hit_condition", "counts"),
        [("3", [2]), (">=3", [2, 3, 4]), ("%2", [1, 3])],
        ids=["exactly-3", "from-3", "every-2nd"],
    )
    def test_hit_condition(
        self, dbg: flowdbg.Debugger, hit_condition: str, counts: list[int]
    ) -> None:
        assert self._counts_at_stops(dbg, hit_condition=hit_condition) == counts

    def test_hit_condition_combines_with_condition(self, dbg: flowdbg.Debugger) -> None:
        # the condition filters first (count 1, 2, 3, 4 match), the hit condition picks the 2nd
        got = self._counts_at_stops(dbg, condition="state['count'] >= 1", hit_condition="2")
        assert got == [2]

    def test_temporary_breakpoint_stops_once_and_goes_away(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("loop")
        bp = dbg.break_before("inc", temporary=True)
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "inc", "before", StopReason.BREAKPOINT)
        assert stop.breakpoints == (bp.id,)
        assert bp.id not in [b.id for b in dbg.breakpoints]
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["loop"]

    def test_disabled_breakpoint_never_stops(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        bp = dbg.break_before("b")
        bp.enabled = False
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]
        assert bp.hits == 0
        assert bp in dbg.breakpoints

        # enabled again, it stops on the next run
        bp.enabled = True
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "b")
        dbg.resume()
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_disabled_at_creation(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("b", enabled=False)
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_condition_failing_at_runtime_counts_as_false(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.break_before("b", condition="state['no_such_key'] == 1")
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]

    @pytest.mark.parametrize(
        "condition",
        ["state[", "no_such_name == 1", "__import__('os')", "state.__class__", "open('x')"],
        ids=["syntax", "unknown-name", "import", "dunder", "builtin"],
    )
    def test_bad_condition_is_rejected_when_set(
        self, dbg: flowdbg.Debugger, condition: str
    ) -> None:
        with pytest.raises(flowdbg.ExpressionError) as info:
            dbg.break_before("b", condition=condition)
        assert str(info.value)
        with pytest.raises(flowdbg.ExpressionError):
            dbg.watch("x", condition=condition)
        assert dbg.breakpoints == []

    @pytest.mark.parametrize("hit_condition", ["abc", ">=", "%0", "3x"])
    def test_bad_hit_condition_is_rejected_when_set(
        self, dbg: flowdbg.Debugger, hit_condition: str
    ) -> None:
        with pytest.raises(flowdbg.BreakpointError, match=re.escape(repr(hit_condition))):
            dbg.break_before("b", hit_condition=hit_condition)
        assert dbg.breakpoints == []


class _LogCollector:
    """A plugin recording ``flowdbg_on_log`` calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str, str]] = []

    @flowdbg.hookimpl
    def flowdbg_on_log(
        self, breakpoint: flowdbg.Breakpoint, event: flowdbg.Event, message: str
    ) -> None:
        loc = event.location
        self.calls.append((breakpoint.id, loc.node, loc.position, message))


class AbstractLogpointTests(SuiteBase):
    """Logpoints log through ``flowdbg.logpoint`` and the ``flowdbg_on_log`` hook, never stop."""

    @staticmethod
    def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "flowdbg.logpoint"]

    def test_logpoint_logs_and_never_stops(
        self, mode: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO, logger="flowdbg.logpoint")
        collector = _LogCollector()
        dbg = self.debugger(plugins=[collector])
        scn = self.scenario("linear")
        bp = dbg.logpoint("b", "x is {state[x]}")
        run = self.launch(dbg, scn, mode)

        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]
        assert self._logged(caplog) == ["x is 2"]
        assert [r.levelno for r in caplog.records if r.name == "flowdbg.logpoint"] == [logging.INFO]
        assert collector.calls == [(bp.id, "b", "before", "x is 2")]

    def test_logpoint_after(self, dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture) -> None:
        caplog.set_level(logging.INFO, logger="flowdbg.logpoint")
        scn = self.scenario("linear")
        dbg.logpoint("b", "x became {state[x]}", position="after")
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]
        assert self._logged(caplog) == ["x became 20"]

    def test_logpoint_every_iteration_with_condition(
        self, dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO, logger="flowdbg.logpoint")
        scn = self.scenario("loop")
        dbg.logpoint("inc", "count={state[count]}", condition="state['count'] % 2 == 0")
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["loop"]
        assert self._logged(caplog) == ["count=0", "count=2", "count=4"]

    def test_logpoint_next_to_a_breakpoint(
        self, dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO, logger="flowdbg.logpoint")
        scn = self.scenario("linear")
        dbg.logpoint("b", "x is {state[x]}")
        bp = dbg.break_before("b")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "b", "before", StopReason.BREAKPOINT)
        assert stop.breakpoints == (bp.id,)
        dbg.resume()
        assert self.finish(run, scn) == EXPECTED["linear"]
        assert self._logged(caplog) == ["x is 2"]

    def test_missing_field_renders_as_error_instead_of_failing(
        self, dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.INFO, logger="flowdbg.logpoint")
        scn = self.scenario("linear")
        dbg.logpoint("b", "w is {state[w]}")
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]
        (message,) = self._logged(caplog)
        assert message.startswith("w is ") and "error" in message.lower()

    @pytest.mark.parametrize(
        "template",
        ["x is {state[x]", "{no_such_name}", "{state.__class__}"],
        ids=["malformed", "unknown-name", "dunder"],
    )
    def test_bad_template_is_rejected_when_set(self, dbg: flowdbg.Debugger, template: str) -> None:
        with pytest.raises(flowdbg.ExpressionError):
            dbg.logpoint("b", template)
        assert dbg.breakpoints == []


class AbstractWatchTests(SuiteBase):
    """Data breakpoints: stop after a unit that changed a watched value."""

    def test_watch_stops_after_each_unit_that_changed_the_value(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        scn = self.scenario("linear")
        bp = dbg.watch("x")
        run = self.launch(dbg, scn, mode)

        stop = self.wait_stop(dbg)
        self.assert_at(stop, "a", "after", StopReason.WATCH)
        assert stop.breakpoints == (bp.id,)
        assert dbg.inspect("x") == 2
        dbg.resume()

        stop = self.wait_stop(dbg)
        self.assert_at(stop, "b", "after", StopReason.WATCH)
        assert dbg.inspect("x") == 20
        dbg.resume()

        self.wait_no_own_stop(dbg)  # c does not change x
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_watch_a_new_key_with_condition_on_value(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.watch("y", condition="value == 21")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "c", "after", StopReason.WATCH)
        assert dbg.inspect("y") == 21
        dbg.resume()
        self.wait_no_own_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_watch_condition_never_true(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("linear")
        dbg.watch("x", condition="value > 100")
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == EXPECTED["linear"]

    def test_watch_in_a_loop(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("loop")
        dbg.watch("count", condition="value >= 4")
        run = self.launch(dbg, scn)
        counts = []
        while (stop := dbg.wait_for_stop(WAIT)) is not None:
            if self.own(stop.location):  # an agent may report its tool calls' change again
                self.assert_at(stop, "inc", "after", StopReason.WATCH)
                counts.append(dbg.inspect("count"))
            dbg.resume()
        assert counts == [4, 5]
        assert self.finish(run, scn) == EXPECTED["loop"]

    def test_watch_after_a_parallel_join(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("parallel")
        dbg.watch("total")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "join", "after", StopReason.WATCH)
        assert dbg.inspect("state:total") == 2 == dbg.inspect("total")  # join's update sets it
        assert sorted(dbg.inspect("state:items")) == ["p1", "p2"]
        dbg.resume()
        # an agent running the units as tool calls may report their change again; nothing else
        assert self.resume_until_done(dbg, run, own=True) == []
        assert self.finish(run, scn) == EXPECTED["parallel"]

    def test_watch_sees_changes_made_in_a_nested_graph(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("nested")
        dbg.watch("z")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        # the first unit that sets z is inner2, inside the nested graph
        self.assert_at(stop, "inner2", "after", StopReason.WATCH, depth=1)
        assert dbg.inspect("z") == 21
        dbg.resume()
        # the enclosing unit "sub" may report the same change when it commits it (and the
        # framework's own units around it); nothing else
        rest = self.resume_until_done(dbg, run, own=True)
        assert set(rest) <= {"sub"}, rest
        assert self.finish(run, scn) == EXPECTED["nested"]
