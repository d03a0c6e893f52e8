"""Reruns of OpenAI agent runs with recorded calls (capability ``cached_calls``): model turns
and function tool calls served from the record, run and streamed, until the first call that
differs."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

import oa_helpers as oa
from agents import Agent, RunConfig, Runner, function_tool
from agents.run_internal import run_loop
from agents.testing import ModelStep
from openai.types.responses import ResponseCompletedEvent, ResponseTextDeltaEvent

import flowdbg
from flowdbg.adapters.openai_agents._adapter import OpenAIAgentsAdapter
from flowdbg.timetravel import Diverged

WAIT = 10.0


class Shop:
    """A triage agent that looks an order up and hands off to a refunds agent, which refunds
    it within the refund limit its instructions state, then answers: four model turns, two
    tool calls and a handoff. Counts what really ran: model turns asked, tool bodies run."""

    def __init__(self, fresh_ids: bool = False) -> None:
        self.note = "Look orders up, then hand off."  # the triage agent's instructions
        self.limit = 100  # read by the refunds agent's instructions: "the code" of a rerun
        self.paid = 150  # what the lookup tool finds: its code
        self.looked_up: list[int] = []
        self.refunded: list[tuple[int, int]] = []

        @function_tool
        def lookup(order: int) -> dict[str, Any]:
            """Look an order up."""
            self.looked_up.append(order)
            return {"order": order, "paid": self.paid}

        @function_tool
        def refund(order: int, amount: int) -> str:
            """Refund an order."""
            self.refunded.append((order, amount))
            return f"refunded {amount} for order {order}"

        def triage_turn(call: Any) -> list[Any]:
            name, args = (
                ("lookup", {"order": 1042}) if not oa.outputs(call) else ("transfer_to_refunds", {})
            )
            if fresh_ids:  # new ids on every call, as a provider's model gives them
                new = uuid.uuid4().hex[:24]
                return [oa.function_call(name, args, call_id=f"call_{new}", item_id=f"fc_{new}")]
            return oa.calls((name, args, "call-1" if name == "lookup" else "call-2"))

        def refunds_turn(call: Any) -> list[Any]:
            outputs = oa.outputs(call)
            if outputs[-1].startswith("refunded"):
                return oa.say(f"Done: {outputs[-1]}.")
            limit = int(str(call.system_instructions).rsplit(" ", 1)[-1])
            return oa.calls(("refund", {"order": 1042, "amount": min(150, limit)}, "call-3"))

        self.triage_model = oa.Scripted([ModelStep.respond(triage_turn)] * 10, name="triage-m")
        self.refunds_model = oa.Scripted([ModelStep.respond(refunds_turn)] * 10, name="refund-m")
        self.refunds = Agent(
            name="refunds",
            instructions=lambda ctx, agent: f"Refund at most {self.limit}",
            model=self.refunds_model,
            tools=[refund],
        )
        self.triage = Agent(
            name="triage",
            instructions=lambda ctx, agent: self.note,
            model=self.triage_model,
            tools=[lookup],
            handoffs=[self.refunds],
        )

    def asked(self) -> int:
        """Model turns asked so far, both models."""
        return len(self.triage_model.calls) + len(self.refunds_model.calls)


@pytest.fixture
def dbg(tmp_path: Path) -> Iterator[flowdbg.Debugger]:
    """A recording debugger (reruns read the record)."""
    debugger = flowdbg.Debugger(db=tmp_path / "flowdbg.db")
    yield debugger
    debugger.close()


#: what a streamed run's consumer saw, per run (filled by the streamed invoke below)
SEEN: list[list[Any]] = []


def _streamed_invoke(self: Any, target: Any, input: Any, options: Any = None) -> Any:
    """The adapter's invoke as Runner.run_streamed, the stream read to its end."""

    async def main() -> Any:
        result = Runner.run_streamed(target, input, **self._kwargs(options or _options()))
        events = [event async for event in result.stream_events()]
        SEEN.append(events)
        return result.final_output

    return asyncio.run(main())


def _options() -> Any:
    from flowdbg.adapter import RunOptions

    return RunOptions()


@pytest.fixture(params=["run", "streamed"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Reruns (and the recorded run) made with Runner.run_sync, or Runner.run_streamed."""
    SEEN.clear()
    if request.param == "streamed":
        monkeypatch.setattr(OpenAIAgentsAdapter, "invoke", _streamed_invoke)
    return str(request.param)


def _record(dbg: flowdbg.Debugger, shop: Shop) -> str:
    dbg.attach(shop.triage)
    run = dbg.start(OpenAIAgentsAdapter().invoke, shop.triage, "refund order 1042")
    assert run.result(timeout=WAIT) == "Done: refunded 100 for order 1042."
    assert dbg.flush(WAIT) and run.run_id is not None
    assert (shop.asked(), shop.looked_up, shop.refunded) == (4, [1042], [(1042, 100)])
    return run.run_id


def _steps(dbg: flowdbg.Debugger, run_id: str) -> list[tuple[str, str, str, bool]]:
    assert dbg.flush(WAIT) and dbg.store is not None
    return [(s.node, s.kind, s.status, s.cached) for s in dbg.store.get_steps(run_id)]


def test_an_unchanged_rerun_asks_no_model_and_runs_no_tool(
    dbg: flowdbg.Debugger, mode: str
) -> None:
    shop = Shop()
    run_id = _record(dbg, shop)
    again = dbg.rerun(run_id, target=shop.triage)
    assert again.result(timeout=WAIT) == "Done: refunded 100 for order 1042."
    # nothing asked again, no tool body run again
    assert (shop.asked(), shop.looked_up, shop.refunded) == (4, [1042], [(1042, 100)])
    assert again.calls is not None
    assert (again.calls.served, again.calls.live, again.calls.diverged) == (6, 0, [])
    assert repr(again.calls) == (
        "<RecordedCalls llm+tool: 6 recorded, 6 served, 0 live, 0 diverged>"
    )
    # the served turns share one validator of the output items (pydantic takes about 20 ms to
    # build one, which each served turn used to pay)
    from flowdbg.adapters.openai_agents import _served

    assert _served._output_items.cache_info().misses == 1  # built once in this process
    assert again.run_id is not None
    assert _steps(dbg, again.run_id) == [
        ("triage", "agent", "completed", False),
        ("triage-m", "llm", "completed", True),
        ("lookup", "tool", "completed", True),
        ("triage-m", "llm", "completed", True),
        ("refunds", "handoff", "completed", False),
        ("refunds", "agent", "completed", False),
        ("refund-m", "llm", "completed", True),
        ("refund", "tool", "completed", True),
        ("refund-m", "llm", "completed", True),
    ]
    # the served tool result is the recorded JSON value: a dict, as the tool returned it
    assert dbg.store is not None
    lookup = next(s for s in dbg.store.get_steps(again.run_id) if s.node == "lookup")
    assert lookup.output == {"order": 1042, "paid": 150}


def test_a_served_streamed_turn_gives_the_consumer_its_text_and_the_completed_response(
    dbg: flowdbg.Debugger, monkeypatch: pytest.MonkeyPatch
) -> None:
    SEEN.clear()
    monkeypatch.setattr(OpenAIAgentsAdapter, "invoke", _streamed_invoke)
    shop = Shop()
    run_id = _record(dbg, shop)
    again = dbg.rerun(run_id, target=shop.triage)
    assert again.result(timeout=WAIT) == "Done: refunded 100 for order 1042."
    assert shop.asked() == 4
    recorded, served = SEEN
    raw = [e.data for e in served if e.type == "raw_response_event"]
    deltas = [e.delta for e in raw if isinstance(e, ResponseTextDeltaEvent)]
    assert deltas == ["Done: refunded 100 for order 1042."]  # the whole text, at once
    assert sum(isinstance(e, ResponseCompletedEvent) for e in raw) == 4
    # the run's own events are those of the recorded run
    names = [getattr(e, "name", e.type) for e in served if e.type != "raw_response_event"]
    assert names == [getattr(e, "name", e.type) for e in recorded if e.type != "raw_response_event"]
    assert names == [
        "agent_updated_stream_event",
        "tool_called",
        "tool_output",
        "handoff_requested",
        "handoff_occured",
        "agent_updated_stream_event",
        "tool_called",
        "tool_output",
        "message_output_created",
    ]


def test_a_changed_instruction_diverges_there_and_runs_the_rest_of_that_agent_live(
    dbg: flowdbg.Debugger, mode: str
) -> None:
    shop = Shop()
    run_id = _record(dbg, shop)
    shop.limit = 80  # the refunds agent's instructions change: its model is asked otherwise
    again = dbg.rerun(run_id, target=shop.triage)
    assert again.result(timeout=WAIT) == "Done: refunded 80 for order 1042."
    # triage (two turns, the lookup) served; refunds' turns and its refund ran live
    assert (len(shop.triage_model.calls), len(shop.refunds_model.calls)) == (2, 4)
    assert (shop.looked_up, shop.refunded) == ([1042], [(1042, 100), (1042, 80)])
    assert again.calls is not None
    assert (again.calls.served, again.calls.live) == (3, 3)
    (first,) = again.calls.diverged
    assert (first.branch, first.kind, first.name, first.reason) == (
        ("refunds",),
        "llm",
        "refund-m",
        "input",
    )
    assert first.input["instructions"] == "Refund at most 80"
    assert first.recorded_input["instructions"] == "Refund at most 100"
    assert again.run_id is not None
    assert [(n, c) for n, k, _, c in _steps(dbg, again.run_id) if k in ("llm", "tool")] == [
        ("triage-m", True),
        ("lookup", True),
        ("triage-m", True),
        ("refund-m", False),
        ("refund", False),
        ("refund-m", False),
    ]


def test_a_changed_tool_runs_live_with_llm_only_and_the_turns_it_reaches_run_live(
    dbg: flowdbg.Debugger, mode: str
) -> None:
    shop = Shop()
    run_id = _record(dbg, shop)
    shop.paid = 120  # the tool's code changed: served, its recorded result would hide that
    served = dbg.rerun(run_id, target=shop.triage)
    assert served.result(timeout=WAIT) == "Done: refunded 100 for order 1042."
    assert served.calls is not None and served.calls.diverged == []
    assert shop.looked_up == [1042]
    # cached_calls="llm": the tool runs live, and the turn receiving its new result is asked
    again = dbg.rerun(run_id, "llm", target=shop.triage)
    assert again.result(timeout=WAIT) == "Done: refunded 100 for order 1042."
    assert shop.looked_up == [1042, 1042]
    assert again.calls is not None
    assert (again.calls.served, again.calls.live) == (1, 5)
    first, then = again.calls.diverged
    assert (first.branch, first.name, first.reason) == (("triage",), "triage-m", "input")
    # the tool's new result, as the SDK gives it to the model (str() of what it returned)
    assert first.input["input"][-1] == {
        "call_id": "call-1",
        "output": "{'order': 1042, 'paid': 120}",
        "type": "function_call_output",
    }
    assert (then.branch, then.name) == (("refunds",), "refund-m")


def test_an_agent_whose_turns_differ_only_in_generated_ids_is_served(
    dbg: flowdbg.Debugger,
) -> None:
    shop = Shop(fresh_ids=True)
    run_id = _record(dbg, shop)
    shop.note = "Look orders up first, then hand off."  # triage is asked again, gives new ids
    again = dbg.rerun(run_id, target=shop.triage)
    assert again.result(timeout=WAIT) == "Done: refunded 100 for order 1042."
    # the refunds agent receives the same conversation but for the ids of triage's calls: the
    # record serves its turns and its refund
    assert (len(shop.triage_model.calls), len(shop.refunds_model.calls)) == (4, 2)
    assert (shop.looked_up, shop.refunded) == ([1042, 1042], [(1042, 100)])
    assert again.calls is not None
    assert (again.calls.served, again.calls.live) == (3, 3)
    (first,) = again.calls.diverged
    assert (first.branch, first.name) == (("triage",), "triage-m")


def test_until_divergence_ends_the_rerun_at_the_first_differing_turn(
    dbg: flowdbg.Debugger, mode: str
) -> None:
    shop = Shop()
    run_id = _record(dbg, shop)
    shop.limit = 80
    again = dbg.rerun(run_id, target=shop.triage, until_divergence=True)
    with pytest.raises(Diverged, match=r"llm 'refund-m' in refunds \(input differs from step"):
        again.result(timeout=WAIT)
    assert (shop.asked(), shop.refunded) == (4, [(1042, 100)])  # not asked, nothing refunded
    assert again.run_id is not None and dbg.store is not None
    # the call and its agent end terminated, where the rerun ended
    assert _steps(dbg, again.run_id)[-3:] == [
        ("refunds", "handoff", "completed", False),
        ("refunds", "agent", "terminated", False),
        ("refund-m", "llm", "terminated", False),
    ]
    assert dbg.store.get_run(again.run_id).status == "terminated"


def test_an_edit_at_the_before_stop_of_a_served_call_makes_it_run_live(
    dbg: flowdbg.Debugger,
) -> None:
    shop = Shop()
    run_id = _record(dbg, shop)
    dbg.break_before("lookup", kind="tool")
    again = dbg.rerun(run_id, target=shop.triage)
    stop = dbg.wait_for_stop(WAIT)  # a breakpoint holds before a call the record would serve
    assert stop is not None and (stop.location.node, stop.location.position) == (
        "lookup",
        "before",
    )
    dbg.set("order", 7)
    dbg.clear()
    dbg.resume()
    assert again.result(timeout=WAIT) == "Done: refunded 100 for order 1042."
    assert shop.looked_up == [1042, 7]  # the edited call ran
    assert again.calls is not None
    first, then = again.calls.diverged
    assert (first.name, first.reason, first.input) == ("lookup", "input", {"order": 7})
    # the rest of triage ran live (its next turn got another tool output); refunds' branch
    # then differs at its first turn (the history it receives holds that other output)
    assert (then.branch, then.name, then.reason) == (("refunds",), "refund-m", "input")
    assert (len(shop.triage_model.calls), len(shop.refunds_model.calls)) == (3, 4)
    assert (again.calls.served, again.calls.live) == (1, 5)


def test_a_model_turn_can_be_served_while_tools_run_live(dbg: flowdbg.Debugger) -> None:
    shop = Shop()
    run_id = _record(dbg, shop)
    again = dbg.rerun(run_id, "llm", target=shop.triage)
    assert again.result(timeout=WAIT) == "Done: refunded 100 for order 1042."
    assert shop.asked() == 4
    assert (shop.looked_up, shop.refunded) == ([1042, 1042], [(1042, 100), (1042, 100)])
    assert again.calls is not None
    assert (again.calls.served, again.calls.live) == (4, 2)


def test_runs_that_are_not_reruns_get_their_own_model(dbg: flowdbg.Debugger) -> None:
    shop = Shop()
    dbg.attach(shop.triage)
    # the patched resolution hands the model itself to every run that is not such a rerun
    assert run_loop.get_model(shop.triage, RunConfig()) is shop.triage_model
    assert oa.run_sync(shop.triage, "refund order 1042").final_output == (
        "Done: refunded 100 for order 1042."
    )
    dbg.detach(shop.triage)
    assert not hasattr(run_loop.get_model, "__wrapped__")


def test_runs_show_marks_the_served_steps(dbg: flowdbg.Debugger, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from flowdbg.cli import cli

    shop = Shop()
    run_id = _record(dbg, shop)
    again = dbg.rerun(run_id, target=shop.triage)
    again.result(timeout=WAIT)
    assert dbg.flush(WAIT) and again.run_id is not None
    out = CliRunner().invoke(
        cli,
        ["runs", "show", again.run_id[:8], "--db", str(tmp_path / "flowdbg.db"), "--json"],
        catch_exceptions=False,
    )
    assert out.exit_code == 0, out.output
    steps = json.loads(out.stdout)["data"]["steps"]
    assert [s["cached"] for s in steps if s["kind"] in ("llm", "tool")] == [True] * 6


def test_a_model_turn_keeps_the_call_it_planned_when_the_call_is_edited(
    dbg: flowdbg.Debugger,
) -> None:
    # what a rerun serves for a turn is what the model answered, whatever was edited later
    shop = Shop()
    dbg.attach(shop.triage)
    dbg.break_after("triage-m", kind="llm", hit_condition="1")
    dbg.break_before("lookup", kind="tool")
    run = dbg.start(OpenAIAgentsAdapter().invoke, shop.triage, "refund order 1042")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.kind == "llm"
    (planned,) = stop.output["output"]
    dbg.resume()
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.node == "lookup"
    dbg.set("order", 7)
    dbg.resume()
    assert run.result(timeout=WAIT) == "Done: refunded 100 for order 1042."
    assert shop.looked_up == [7]
    assert json.loads(planned.arguments) == {"order": 1042}
    assert dbg.flush(WAIT) and dbg.store is not None and run.run_id is not None
    turn = next(s for s in dbg.store.get_steps(run.run_id) if s.kind == "llm")
    assert json.loads(turn.output["output"][0]["arguments"]) == {"order": 1042}


def test_a_rerun_whose_turns_are_all_served_never_makes_the_model(
    dbg: flowdbg.Debugger,
) -> None:
    from agents.models.interface import ModelProvider

    class Provider(ModelProvider):
        """Makes the model an agent names (a provider's model wants its client: credentials,
        a connection); counts the models made."""

        def __init__(self) -> None:
            self.made: list[str | None] = []
            self.model = oa.Scripted(
                [oa.calls(("shell", {"cmd": "ls"}, "call-1")), *oa.answer(lambda c: "listed")],
                name="gpt-x",
            )

        def get_model(self, model_name: str | None) -> Any:
            self.made.append(model_name)
            return self.model

    ran: list[str] = []

    @function_tool
    def shell(cmd: str) -> str:
        """Run a command."""
        ran.append(cmd)
        return "a b"

    agent = Agent(name="agent", model="gpt-x", tools=[shell])
    provider = Provider()
    dbg.attach(agent)
    run = dbg.start(
        lambda: oa.run_sync(agent, "list", run_config=RunConfig(model_provider=provider))
    )
    assert run.result(timeout=WAIT).final_output == "listed"
    assert dbg.flush(WAIT) and run.run_id is not None
    assert (provider.made, ran) == (["gpt-x", "gpt-x"], ["ls"])
    again = dbg.rerun(run.run_id, target=agent, config={"model_provider": provider})
    assert again.result(timeout=WAIT) == "listed"
    assert (provider.made, ran) == (["gpt-x", "gpt-x"], ["ls"])  # no model made, no tool run
    assert again.calls is not None and (again.calls.served, again.calls.live) == (3, 0)


def test_parallel_calls_and_an_agent_used_as_a_tool_are_served(dbg: flowdbg.Debugger) -> None:
    ran: list[str] = []

    @function_tool
    async def first(x: int) -> str:
        """One of two calls of a turn."""
        ran.append(f"first {x}")
        await asyncio.sleep(0)  # the other call starts meanwhile
        return f"first {x}"

    @function_tool
    async def second(x: int) -> str:
        """The other."""
        ran.append(f"second {x}")
        return f"second {x}"

    @function_tool
    def inner(x: int) -> str:
        """A tool of the agent used as a tool."""
        ran.append(f"inner {x}")
        return f"inner {x}"

    helper = oa.agent(
        "helper",
        [oa.calls(("inner", {"x": 5}, "call-i")), *oa.answer(lambda call: "helped")] * 3,
        tools=[inner],
    )

    def turn(call: Any) -> list[Any]:
        outputs = oa.outputs(call)
        if not outputs:
            return oa.calls(("first", {"x": 1}, "call-1"), ("second", {"x": 2}, "call-2"))
        if len(outputs) == 2:
            return oa.calls(("help", {"input": "go"}, "call-3"))
        return oa.say("; ".join(outputs))

    agent = oa.agent(
        "main",
        [ModelStep.respond(turn)] * 6,
        tools=[first, second, helper.as_tool(tool_name="help", tool_description="Helps.")],
    )
    dbg.attach(agent)
    run = dbg.start(OpenAIAgentsAdapter().invoke, agent, "go")
    assert run.result(timeout=WAIT) == "first 1; second 2; helped"
    assert dbg.flush(WAIT) and run.run_id is not None
    assert sorted(ran) == ["first 1", "inner 5", "second 2"]
    again = dbg.rerun(run.run_id, target=agent)
    assert again.result(timeout=WAIT) == "first 1; second 2; helped"
    assert sorted(ran) == ["first 1", "inner 5", "second 2"]  # nothing ran again
    assert again.calls is not None
    # three turns, the two parallel calls and the agent used as a tool (its run not made)
    assert (again.calls.served, again.calls.live, again.calls.diverged) == (6, 0, [])


def test_a_run_whose_provider_keeps_the_conversation_asks_its_model_again(
    dbg: flowdbg.Debugger,
) -> None:
    # with previous_response_id chaining the provider keeps the history: a served turn would be
    # missing from it, so such a run's turns run live (here a run a tool makes)
    inner = oa.agent("inner", oa.answer(lambda call: "inner says hi", repeat=4))

    @function_tool
    async def ask(question: str) -> str:
        """Ask the inner agent."""
        result = await Runner.run(inner, question, auto_previous_response_id=True)
        return str(result.final_output)

    outer = oa.agent(
        "outer",
        [
            oa.calls(("ask", {"question": "hi?"}, "call-1")),
            *oa.answer(lambda call: oa.outputs(call)[-1], 3),
        ],
        tools=[ask],
    )
    dbg.attach(outer)
    run = dbg.start(OpenAIAgentsAdapter().invoke, outer, "go")
    assert run.result(timeout=WAIT) == "inner says hi"
    assert dbg.flush(WAIT) and run.run_id is not None
    inner_model, outer_model = inner.model, outer.model
    assert isinstance(inner_model, oa.Scripted) and isinstance(outer_model, oa.Scripted)
    assert (len(inner_model.calls), len(outer_model.calls)) == (1, 2)
    again = dbg.rerun(run.run_id, "llm", target=outer)  # the tool runs: its run is made again
    assert again.result(timeout=WAIT) == "inner says hi"
    assert (len(inner_model.calls), len(outer_model.calls)) == (2, 2)
    assert again.calls is not None
    assert (again.calls.served, again.calls.live) == (2, 2)  # outer's turns served
    assert again.calls.diverged == []  # the inner turn matched the record, and ran all the same
