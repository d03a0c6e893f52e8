"""A watch on the run context stops once per change: at the tool call that wrote it, not again
at the agent activation the call was part of (whose state before and after differ by the same
write)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

import oa_helpers as oa
from agents import RunContextWrapper, RunHooks, function_tool

import flowdbg
from flowdbg import StopReason

WAIT = 10.0


def cart_agent() -> Any:
    @function_tool
    def add(ctx: RunContextWrapper[dict[str, Any]], item: str) -> str:
        """Put an item in the cart."""
        ctx.context["cart"] = [*ctx.context["cart"], item]
        return f"added {item}"

    return oa.agent(
        "shop",
        [oa.calls(("add", {"item": "tea"}, "call-1")), oa.say("bought")],
        tools=[add],
    )


class Bagger(RunHooks[Any]):
    """The user's run hooks write the cart again once the tool has returned: a change made in
    the agent's activation, outside the tool call."""

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        context.context["cart"] = [*context.context["cart"], "bag"]


def stops_of(dbg: flowdbg.Debugger, agent: Any, **kwargs: Any) -> list[tuple[str, str, Any]]:
    """Run ``agent`` under ``dbg``, resuming every stop; the (unit, kind, watched value) of
    each stop."""
    run = dbg.start(oa.run_sync, agent, "buy tea", context={"cart": []}, **kwargs)
    seen = []
    while (stop := dbg.wait_for_stop(WAIT)) is not None:  # None once the run has ended
        assert stop.reason == StopReason.WATCH, str(stop)
        seen.append((stop.location.node, stop.location.kind, stop.state["cart"]))
        dbg.resume()
    run.result(WAIT)
    return seen


def test_a_watch_stops_at_the_tool_that_changed_the_context_and_not_again_at_its_agent(
    dbg: flowdbg.Debugger,
) -> None:
    agent = cart_agent()
    dbg.attach(agent)
    dbg.watch("cart")
    assert stops_of(dbg, agent) == [("add", "tool", ["tea"])]


def test_a_later_change_in_the_agent_itself_still_stops_there(dbg: flowdbg.Debugger) -> None:
    agent = cart_agent()
    dbg.attach(agent)
    dbg.watch("cart")
    assert stops_of(dbg, agent, hooks=Bagger()) == [
        ("add", "tool", ["tea"]),
        ("shop", "agent", ["tea", "bag"]),
    ]
