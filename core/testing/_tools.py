"""Tool and model calls made inside a unit: breakpoints on them, argument edits, stepping."""

from __future__ import annotations

import flowdbg
from flowdbg.adapter import Capability
from flowdbg.stops import StopReason
from flowdbg.testing._base import WAIT, SuiteBase, requires
from flowdbg.testing._fixtures import EXPECTED

__all__ = ["AbstractToolTests"]


@requires(Capability.TOOL_CALLS)
class AbstractToolTests(SuiteBase):
    """Tool calls are units of kind ``tool`` one level inside the unit that makes them."""

    def test_tool_breakpoint_stops_before_a_call_whose_arguments_match(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        scn = self.scenario("tools")
        bp = dbg.break_on_tool("shell", args_pattern=r"rm\s+-rf")
        run = self.launch(dbg, scn, mode)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "shell", "before", StopReason.BREAKPOINT, depth=1)
        assert stop.location.kind == "tool"
        assert stop.location.path == ("agent",)
        assert stop.breakpoints == (bp.id,)
        assert dbg.inspect("cmd", source="input") == "rm -rf /tmp/cache"
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["tools"])

    def test_arguments_that_do_not_match_never_stop(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("tools")
        bp = dbg.break_on_tool("shell", args_pattern=r"DROP\s+TABLE")
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["tools"])
        assert bp.hits == 0

    def test_tool_glob_and_condition_on_args(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("tools")
        dbg.break_on_tool("*", condition="args.get('query') == 'flights'")
        run = self.launch(dbg, scn)
        assert self.resume_until_done(dbg, run) == ["search"]
        assert self.finish(run, scn) == dict(EXPECTED["tools"])

    @requires(Capability.TOOL_ARG_EDITING)
    def test_edited_arguments_reach_the_tool(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("tools")
        dbg.break_on_tool("shell")
        run = self.launch(dbg, scn, mode)
        self.wait_stop(dbg)
        dbg.set("cmd", "ls /tmp/cache")
        assert dbg.inspect("cmd", source="input") == "ls /tmp/cache"
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn)["ran"] == "ran ls /tmp/cache"

    @requires(Capability.TOOL_ARG_EDITING)
    def test_after_a_tool_call_its_result_is_the_output(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("tools")
        dbg.break_after("search", kind="tool")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "search", "after", depth=1)
        assert stop.output == "results for flights"
        dbg.set("", "no results")  # replace the whole result
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn)["found"] == "no results"

    def test_step_over_from_the_unit_skips_its_calls(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("tools")
        dbg.break_before("agent")
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "agent", depth=0)
        dbg.step_over()
        self.assert_at(self.wait_stop(dbg), "done", "before", StopReason.STEP, depth=0)
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["tools"])

    def test_recorded_state_changes_only_at_the_units_that_commit_it(
        self, dbg: flowdbg.Debugger
    ) -> None:
        # A call inside a unit changes nothing in the run's state by itself (its unit commits
        # what it returns): at a call's step the state is the one its unit started from, and
        # no key is "written" by a call.
        scn = self.scenario("tools")
        run = self.launch(dbg, scn)
        assert self.finish(run, scn) == dict(EXPECTED["tools"])
        assert dbg.flush(WAIT)
        store = dbg.store
        assert store is not None
        run_id = run.run_id or ""
        steps = store.get_steps(run_id)
        calls = [s.step for s in steps if s.kind in ("tool", "llm")]
        units = [s.step for s in steps if s.kind not in ("tool", "llm")]
        assert calls, "the tools scenario recorded no tool calls"
        run_input = store.get_run(run_id).input  # the state before the first unit
        for step in calls:
            enclosing = max(n for n in units if n < step)
            earlier = [n for n in units if n < enclosing]
            started_from = store.get_state(run_id, step=max(earlier)) if earlier else run_input
            assert store.get_state(run_id, step=step) == started_from, (
                f"the state at call step {step} is not the one its unit (step {enclosing}) "
                "started from"
            )
        final = store.get_state(run_id)
        assert {key: final.get(key) for key in EXPECTED["tools"]} == dict(EXPECTED["tools"])
        nodes = {s.step: s.node for s in steps}
        writers = store.last_writers(run_id)
        assert writers["found"] == writers["ran"] == (units[0], "agent"), writers
        assert writers["finished"][1] == "done"
        assert all(step in units for step, _ in writers.values()), (writers, nodes)

    def test_the_log_at_a_call_stop_shows_the_unit_making_it_as_running(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("tools")
        dbg.break_on_tool("shell")
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        rows = {(s.node, s.status) for s in run.log.steps}
        assert ("agent", "running") in rows and ("shell", "running") in rows
        assert ("search", "completed") in rows
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["tools"])
        assert {s.status for s in run.log.steps} == {"completed"}

    def test_step_into_walks_the_calls(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("tools")
        dbg.break_before("agent")
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        expected = [("search", "tool", 1), ("shell", "tool", 1), ("done", self.unit_kind, 0)]
        if Capability.LLM_CALLS in self.capabilities():
            expected.insert(0, ("chat", "llm", 1))
        seen: list[tuple[str, str, int]] = []
        for _ in range(3 * len(expected)):
            if len(seen) == len(expected):
                break
            dbg.step_into()
            stop = self.wait_stop(dbg)
            assert stop.reason == StopReason.STEP
            where = (stop.location.node, stop.location.kind, stop.location.depth)
            if stop.location.kind == "handoff" or (where[1] == "llm" and where in seen):
                # an agent calls its model again after its tool calls, and hands the run to
                # the next agent: those steps lie between the ones the scenario names
                continue
            seen.append(where)
        assert seen == expected
        dbg.resume()
        self.resume_until_done(dbg, run)
        assert self.finish(run, scn) == dict(EXPECTED["tools"])

    def test_step_out_of_a_call_returns_to_the_next_unit(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("tools")
        dbg.break_on_tool("search")
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "search", depth=1)
        dbg.step_out()
        self.assert_at(self.wait_stop(dbg), "done", "before", StopReason.STEP, depth=0)
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["tools"])

    @requires(Capability.LLM_CALLS)
    def test_model_calls_are_llm_units_with_their_messages(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        scn = self.scenario("tools")
        dbg.break_before("*", kind="llm")
        run = self.launch(dbg, scn, mode)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "chat", "before", depth=1)
        assert stop.location.kind == "llm"
        assert dbg.inspect(f"{self.llm_messages}[-1].content", source="input") == "flights"
        dbg.resume()
        while (more := dbg.wait_for_stop(WAIT)) is not None:
            # an agent calls its model again after its tool calls: only model turns stop
            assert more.location.kind == "llm", f"expected only model turns to stop, got {more}"
            dbg.resume()
        assert self.finish(run, scn) == dict(EXPECTED["tools"])

    @requires(Capability.LLM_CALLS)
    def test_a_model_reply_edited_after_the_call_is_what_the_unit_gets(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("tools")
        dbg.break_after("chat", kind="llm")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        assert self.reply_text(stop.output) == "search, then clean up"
        dbg.set("", "only search")
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn)["reply"] == "only search"
