"""Rewinds of OpenAI agent runs held at a stop (capability ``rewind``): ``Runner.run`` and
``run_sync`` go on, in the caller's own call, from the conversation and run context after an
earlier step, with the caller's own arguments and context object; a streamed run, and a run
whose context the record cannot give back, are refused with the reason, the stop left open."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

import oa_helpers as oa
from agents import RunHooks, Runner
from test_agents_fork import Desk

import flowdbg

WAIT = 10.0


def _step_of(dbg: flowdbg.Debugger, run_id: str, node: str) -> int:
    assert dbg.flush(WAIT) and dbg.store is not None
    return next(s.step for s in dbg.store.get_steps(run_id, values=False) if s.node == node)


class Counting(RunHooks[Any]):
    def __init__(self) -> None:
        self.tools: list[str] = []

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        self.tools.append(tool.name)


def test_run_sync_goes_on_from_the_earlier_step_with_the_callers_context_and_hooks(
    rec: flowdbg.Debugger,
) -> None:
    desk = Desk()
    rec.attach(desk.agent)
    rec.break_on_tool("refund")
    context: dict[str, Any] = {"currency": "EUR"}
    hooks = Counting()
    run = rec.start(lambda: oa.run_sync(desk.agent, "refund 1042", context=context, hooks=hooks))
    stop = rec.wait_for_stop(WAIT)
    assert stop is not None and stop.location.node == "refund"
    first = stop.location.run_id
    assert first is not None
    # back to the state after the lookup, in another currency
    rec.rewind(_step_of(rec, first, "lookup"), {"currency": "USD"})
    again = rec.wait_for_stop(WAIT)
    assert again is not None and again.location.node == "refund"
    assert again.location.run_id != first
    assert rec.inspect("state:currency") == "USD"
    rec.resume()
    result = run.result(WAIT)
    assert result.final_output == "Done: refunded 150 USD."
    assert run.run_id == again.location.run_id
    # the caller's own context object is the run's context, and their hooks saw both runs
    assert result.context_wrapper.context is context
    assert context == {"currency": "USD", "refunded": 150}
    # (the SDK told the hooks of the refund held in the first run as it was about to call it;
    # the lookup ran once: the rewind went on after it)
    assert hooks.tools == ["lookup", "refund", "refund"]
    assert desk.looked_up == [1042] and desk.refunded == [(1042, 150, "USD")]
    assert rec.flush(WAIT) and rec.store is not None
    made = rec.store.get_run(again.location.run_id)
    assert (made.origin, made.forked_from, made.status) == ("rewind", first, "completed")
    assert rec.store.get_run(first).status == "terminated"


def test_runner_run_goes_on_in_the_callers_task(rec: flowdbg.Debugger) -> None:
    desk = Desk()
    rec.attach(desk.agent)
    rec.break_on_tool("refund")

    async def go() -> Any:
        return await Runner.run(desk.agent, "refund 1042", context={"currency": "EUR"})

    run = rec.start(lambda: asyncio.run(go()))
    stop = rec.wait_for_stop(WAIT)
    assert stop is not None and stop.location.run_id is not None
    rec.rewind(0)  # from the run's input: the lookup runs again
    again = rec.wait_for_stop(WAIT)
    assert again is not None and again.location.node == "refund"
    rec.resume()
    assert run.result(WAIT).final_output == "Done: refunded 150 EUR."
    assert desk.looked_up == [1042, 1042]


def test_a_streamed_run_is_refused_and_the_stop_stays(rec: flowdbg.Debugger) -> None:
    desk = Desk()
    rec.attach(desk.agent)
    rec.break_on_tool("refund")

    async def go() -> Any:
        result = Runner.run_streamed(desk.agent, "refund 1042", context={"currency": "EUR"})
        async for _ in result.stream_events():
            pass
        return result.final_output

    run = rec.start(lambda: asyncio.run(go()))
    stop = rec.wait_for_stop(WAIT)
    assert stop is not None and stop.location.run_id is not None
    with pytest.raises(flowdbg.ForkError, match="a streamed run") as refused:
        rec.rewind(_step_of(rec, stop.location.run_id, "lookup"))
    assert "fork it once it has ended" in str(refused.value)
    assert [s.id for s in rec.stops] == [stop.id]
    rec.resume()
    assert run.result(WAIT) == "Done: refunded 150 EUR."


class Settings:
    currency = "EUR"


def test_a_context_the_record_cannot_give_back_is_refused(rec: flowdbg.Debugger) -> None:
    agent = oa.agent("plain", oa.answer(lambda call: "hi", repeat=3))
    rec.attach(agent)
    rec.break_before("plain")
    run = rec.start(lambda: oa.run_sync(agent, "hello", context=Settings()))
    stop = rec.wait_for_stop(WAIT)
    assert stop is not None
    with pytest.raises(flowdbg.ForkError, match="its run context is a Settings"):
        rec.rewind(0)
    rec.resume()
    assert run.result(WAIT).final_output == "hi"


def test_a_run_of_an_agent_not_attached_is_refused(rec: flowdbg.Debugger) -> None:
    """No agent attached: the installed runner reports every run (``dbg.install``), but a
    rewind goes on with the attached agents, which there are none of."""
    desk = Desk()
    rec.install("openai_agents")
    rec.break_on_tool("refund")
    run = rec.start(lambda: oa.run_sync(desk.agent, "refund 1042", context={"currency": "EUR"}))
    stop = rec.wait_for_stop(WAIT)
    assert stop is not None and stop.location.run_id is not None
    with pytest.raises(flowdbg.ForkError, match="agent 'desk' is not attached"):
        rec.rewind(_step_of(rec, stop.location.run_id, "lookup"))
    rec.resume()
    assert run.result(WAIT).final_output == "Done: refunded 150 EUR."
