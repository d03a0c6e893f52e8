"""The views of a stop: a path reads and edits the same object, the stop's default view."""

from __future__ import annotations

import pytest

import flowdbg
from flowdbg._paths import get_path
from flowdbg.adapter import Capability
from flowdbg.stops import StopReason
from flowdbg.testing._base import WAIT, SuiteBase, requires
from flowdbg.testing._fixtures import EXPECTED

__all__ = ["AbstractViewTests"]


class AbstractViewTests(SuiteBase):
    """``inspect`` reads what ``set`` edits: ``input`` before a unit, ``output`` after it,
    ``state`` at an error; ``state:`` reads the framework's state and refuses edits."""

    def test_before_a_unit_a_path_reads_and_edits_its_input(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        scn = self.scenario("linear")
        dbg.break_before("b")
        run = self.launch(dbg, scn, mode)
        stop = self.wait_stop(dbg)
        assert stop.default_view == "input"
        assert set(stop.views) >= {"state", "input"} and "output" not in stop.views
        assert dbg.inspect("x") == get_path(stop.view(stop.default_view), "x") == 2
        assert dbg.inspect("input:x") == dbg.inspect("x", source="input") == 2
        dbg.set("x", 5)
        assert dbg.inspect("x") == dbg.inspect("input:x") == 5
        assert dbg.inspect("state:x") == 2  # the state shown is the framework's, not edited
        dbg.resume()
        assert self.finish(run, scn) == {"x": 50, "y": 51}  # b received x = 5

    def _require_state_input(self) -> None:
        """Skip where units receive events rather than the merged state (see
        ``AdapterFixtures.merged_updates``): there a before-stop edit changes the event alone."""
        if not self.merged_updates:
            pytest.skip(
                f"adapter {self.adapter!r}: units receive events, not the state, so a join's "
                "input is its branches' events and an edit before a unit changes that event only"
            )

    def test_an_edit_of_the_state_a_unit_receives_is_kept_or_refused(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        # c returns {"y": x + 1}: it does not write x, which the run must keep all the same
        scn = self.scenario("linear")
        dbg.break_before("c")
        run = self.launch(dbg, scn, mode)
        self.wait_stop(dbg)
        try:
            dbg.set("x", 3)
        except flowdbg.EditRefused as refused:
            assert "instead" in str(refused), "a refusal says what to do instead"
            assert dbg.inspect("x") == 20  # refused: nothing changed
            dbg.resume()
            assert self.finish(run, scn) == dict(EXPECTED["linear"])
            return
        assert dbg.inspect("x") == 3
        dbg.resume()
        assert self.finish(run, scn) == {"x": 3, "y": 4}  # what c saw is what the run kept

    def test_an_edit_of_a_reducer_list_at_a_before_stop_changes_the_element_shown(
        self, dbg: flowdbg.Debugger
    ) -> None:
        self._require_state_input()
        scn = self.scenario("parallel")
        dbg.break_before("join")
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        items = dbg.inspect("items")
        assert sorted(items) == ["p1", "p2"]
        first = items[0]
        try:
            dbg.set("items[0]", "edited")
        except flowdbg.EditRefused as refused:
            assert "instead" in str(refused)
            dbg.resume()
            assert self.finish(run, scn) == dict(EXPECTED["parallel"])
            return
        assert dbg.inspect("items") == ["edited", *items[1:]]
        dbg.resume()
        result = self.finish(run, scn)
        # the element shown was edited, none was added or lost, and join saw the edit
        assert result == {"items": ["edited", *items[1:]], "total": 2}
        assert first not in result["items"]

    def test_an_edit_at_a_before_stop_beside_a_parallel_branch_is_kept_or_refused(
        self, dbg: flowdbg.Debugger
    ) -> None:
        self._require_state_input()
        scn = self.scenario("parallel")
        dbg.break_before("p1")
        dbg.break_before("p2")
        run = self.launch(dbg, scn)
        stops = dbg.wait_for_stops(2, WAIT)  # both branches have started: p2 is a sibling
        assert len(stops) == 2
        at_p1 = next(s for s in stops if s.location.node == "p1")
        try:
            dbg.set("items", ["z"], stop=at_p1.id)
        except flowdbg.EditRefused as refused:
            assert "p2" in str(refused) and "instead" in str(refused)
            for stop in stops:
                dbg.resume(stop.id)
            assert self.finish(run, scn) == dict(EXPECTED["parallel"])
            return
        for stop in stops:
            dbg.resume(stop.id)
        result = self.finish(run, scn)
        # the replaced value, then both branches' updates through the reducer: none is lost
        assert sorted(result["items"]) == ["p1", "p2", "z"] and result["total"] == 3

    def test_after_a_unit_a_path_reads_and_edits_its_output(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        scn = self.scenario("linear")
        dbg.break_after("b")
        run = self.launch(dbg, scn, mode)
        stop = self.wait_stop(dbg)
        assert stop.default_view == "output"
        assert "output" in stop.views
        assert dbg.inspect("x") == get_path(stop.view(stop.default_view), "x") == 20
        dbg.set("output:x", 7)  # the prefix of the default view is allowed
        assert dbg.inspect("x") == dbg.inspect("output:x") == 7
        assert dbg.inspect("state:x") == 20
        dbg.resume()
        assert self.finish(run, scn) == {"x": 7, "y": 8}  # b committed x = 7

    def test_after_a_unit_a_key_it_does_not_return_is_only_in_the_state(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("linear")
        dbg.break_after("c")  # c returns {"y": x + 1}: x is not in its output
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        assert dbg.inspect("y") == 21
        with pytest.raises(flowdbg.PathError, match=r"^output has no key 'x'"):
            dbg.inspect("x")
        assert dbg.inspect("state:x") == 20
        with pytest.raises(flowdbg.EditRefused, match=r"edit output:x"):
            dbg.set("state:x", 1)
        dbg.resume()
        assert self.finish(run, scn) == dict(EXPECTED["linear"])

    def test_the_state_view_refuses_edits_and_keeps_the_payload(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("linear")
        dbg.break_before("b")
        dbg.break_after("b")
        run = self.launch(dbg, scn)
        before = self.wait_stop(dbg)
        with pytest.raises(flowdbg.EditRefused, match=r"is not edited: edit input:x"):
            dbg.set("state:x", 9)
        with pytest.raises(flowdbg.EditRefused, match=r"edit input:x"):
            dbg.delete("state:x")
        assert dbg.inspect("x") == dbg.inspect("state:x") == 2
        assert before.to_dict()["edited"] is False
        dbg.resume()
        after = self.wait_stop(dbg)
        self.assert_at(after, "b", "after")
        with pytest.raises(flowdbg.EditRefused, match=r"the state after 'b' .* edit output:x"):
            dbg.set("state:x", 9)
        assert dbg.inspect("input:x") == 2  # what b received, read-only now
        with pytest.raises(flowdbg.EditRefused, match=r"received its input already.* output:x"):
            dbg.set("input:x", 9)
        assert dbg.inspect("x") == dbg.inspect("state:x") == 20
        assert after.to_dict()["edited"] is False
        dbg.resume()
        assert self.finish(run, scn) == dict(EXPECTED["linear"])

    def test_at_an_error_the_default_view_is_the_state(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("failing")
        dbg.break_on_exception()
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "boom", "error", StopReason.EXCEPTION)
        assert stop.default_view == "state"
        assert "error" in stop.views and "output" not in stop.views
        assert dbg.inspect("x") == get_path(stop.view("state"), "x") == 2
        assert dbg.inspect("error:args[0]") == "boom at x=2"
        assert stop.to_dict()["default_view"] == "state"
        with pytest.raises(flowdbg.EditRefused, match=r"error point of 'boom'"):
            dbg.set("x", 3)
        dbg.resume()
        with pytest.raises(ValueError, match="boom at x=2"):
            run.result(WAIT)

    def test_an_unknown_or_absent_view_is_refused_with_the_views_there(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("linear")
        dbg.break_before("b")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        listed = ", ".join(stop.views)
        with pytest.raises(flowdbg.PathError, match=f"no memory view: .*; its views are {listed}$"):
            dbg.inspect("memory:x")
        with pytest.raises(flowdbg.PathError, match=r"no output view: the unit has not run yet"):
            dbg.inspect("output:x")
        with pytest.raises(flowdbg.PathError, match=r"no memory view"):
            dbg.set("memory:x", 1)
        with pytest.raises(flowdbg.PathError, match=r"no memory view"):
            stop.view("memory")
        with pytest.raises(flowdbg.PathError, match=r"names the view 'state'"):
            dbg.inspect("state:x", source="input")
        assert stop.to_dict()["views"] == list(stop.views)
        dbg.resume()
        assert self.finish(run, scn) == dict(EXPECTED["linear"])

    @requires(Capability.TOOL_CALLS)
    def test_at_a_tool_call_args_is_the_input_and_result_the_output(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("tools")
        dbg.break_on_tool("shell")
        dbg.break_after("search", kind="tool")
        run = self.launch(dbg, scn)
        after = self.wait_stop(dbg)
        self.assert_at(after, "search", "after", depth=1)
        assert "result" in after.views and "args" in after.views
        assert dbg.inspect("result:") == dbg.inspect("output:") == dbg.inspect("")
        assert dbg.inspect("") == after.output
        assert dbg.inspect("args:query") == dbg.inspect("input:query") == "flights"
        with pytest.raises(flowdbg.EditRefused, match=r"received its args already"):
            dbg.set("args:query", "trains")
        dbg.resume()
        before = self.wait_stop(dbg)
        self.assert_at(before, "shell", "before", depth=1)
        assert before.default_view == "input"
        assert "args" in before.views and "result" not in before.views
        assert dbg.inspect("args:cmd") == dbg.inspect("input:cmd") == dbg.inspect("cmd")
        assert dbg.inspect("cmd") == "rm -rf /tmp/cache"
        if Capability.TOOL_ARG_EDITING not in self.capabilities():
            dbg.resume()
            self.wait_no_stop(dbg)
            assert self.finish(run, scn) == dict(EXPECTED["tools"])
            return
        dbg.set("args:cmd", "ls /tmp/cache")
        assert dbg.inspect("cmd") == dbg.inspect("input:cmd") == "ls /tmp/cache"
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn)["ran"] == "ran ls /tmp/cache"

    @requires(Capability.TOOL_CALLS, Capability.TOOL_ARG_EDITING)
    def test_a_tool_argument_the_tool_does_not_take_is_refused_at_set_time(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("tools")
        dbg.break_on_tool("shell")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "shell", "before", depth=1)
        with pytest.raises(flowdbg.EditRefused, match=r"'bogus_arg'"):
            dbg.set("bogus_arg", 5)  # never "applied" and then dropped by the tool
        assert dbg.inspect("") == {"cmd": "rm -rf /tmp/cache"}  # the refusal changed nothing
        dbg.resume()
        assert self.finish(run, scn) == dict(EXPECTED["tools"])
