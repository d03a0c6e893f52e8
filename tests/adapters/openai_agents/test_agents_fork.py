"""Forks of recorded OpenAI agent runs (capability ``fork``): the current agent goes on from
the conversation the record holds after a tool call, a handoff or a model turn, with the
recorded run context (edited) and the call's result (``output:`` edits); refused where the
conversation is not whole, naming the steps that can be forked; and from the command line."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

import oa_helpers as oa
from agents import Agent, RunContextWrapper, function_tool, handoff
from agents.testing import ModelStep
from click.testing import CliRunner

import flowdbg
from flowdbg.cli import cli
from flowdbg.timetravel import forkable_steps

WAIT = 10.0


def _outputs(call: Any) -> list[Any]:
    """The tool results a model turn received, as values (the SDK sends ``str(result)``)."""
    values = []
    for text in oa.outputs(call):
        try:
            values.append(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            values.append(text)
    return values


class Desk:
    """A support agent that looks an order up, refunds what was paid (in the currency the run
    context names), then answers with the refund; a handoff agent, ``notes``, answers with
    the conversation's last tool result. Counts the tool bodies that ran."""

    def __init__(self) -> None:
        self.looked_up: list[int] = []
        self.refunded: list[tuple[int, int, str]] = []

        @function_tool
        def lookup(order: int) -> dict[str, int]:
            """Look an order up."""
            self.looked_up.append(order)
            return {"order": order, "paid": 150}

        @function_tool
        def refund(ctx: RunContextWrapper[dict[str, Any]], order: int, amount: int) -> str:
            """Refund an order."""
            currency = ctx.context["currency"]
            self.refunded.append((order, amount, currency))
            ctx.context["refunded"] = amount
            return f"refunded {amount} {currency}"

        def desk_turn(call: Any) -> list[Any]:
            results = _outputs(call)
            if not results:
                return oa.calls(("lookup", {"order": 1042}, "call-1"))
            if isinstance(results[-1], dict):
                amount = results[-1]["paid"]
                return oa.calls(("refund", {"order": 1042, "amount": amount}, "call-2"))
            return oa.say(f"Done: {results[-1]}.")

        self.model = oa.Scripted([ModelStep.respond(desk_turn)] * 20, name="desk-m")
        self.agent = Agent(name="desk", model=self.model, tools=[lookup, refund])

    def run(self, dbg: flowdbg.Debugger, currency: str = "EUR") -> str:
        """Run the agent under ``dbg`` (recording) and return the run's id."""
        dbg.attach(self.agent)
        run = dbg.start(
            lambda: oa.run_sync(self.agent, "refund 1042", context={"currency": currency})
        )
        assert run.result(WAIT).final_output == f"Done: refunded 150 {currency}."
        assert dbg.flush(WAIT) and run.run_id is not None
        return run.run_id


def _step(dbg: flowdbg.Debugger, run_id: str, node: str) -> int:
    store = dbg.store
    assert store is not None
    (found,) = [s.step for s in store.get_steps(run_id, values=False) if s.node == node]
    return found


def test_an_output_edit_after_a_tool_call_is_what_the_next_model_turn_receives(
    rec: flowdbg.Debugger,
) -> None:
    desk = Desk()
    run_id = desk.run(rec)
    asked = len(desk.model.calls)
    after = _step(rec, run_id, "lookup")
    fork = rec.fork(run_id, after, {"output:paid": 40}, target=desk.agent)
    assert fork.result(WAIT) == "Done: refunded 40 EUR."
    # the fork asked the model from the conversation after the lookup, its result edited
    first = desk.model.calls[asked]
    assert [item.get("type") or item.get("role") for item in first.input] == [
        "user",
        "function_call",
        "function_call_output",
    ]
    assert _outputs(first) == [{"order": 1042, "paid": 40}]
    assert desk.looked_up == [1042]  # the lookup did not run again
    assert desk.refunded == [(1042, 150, "EUR"), (1042, 40, "EUR")]
    assert rec.flush(WAIT) and fork.run_id is not None
    store = rec.store
    assert store is not None
    made = store.get_run(fork.run_id)
    assert (made.origin, made.forked_from, made.fork_step) == ("fork", run_id, after)
    assert made.input == {"currency": "EUR"}  # the run context it started from
    assert [(s.kind, s.node) for s in store.get_steps(fork.run_id)] == [
        ("agent", "desk"),
        ("llm", "desk-m"),
        ("tool", "refund"),
        ("llm", "desk-m"),
    ]
    assert store.get_state(fork.run_id) == {"currency": "EUR", "refunded": 40}
    # where it departs from its run: the refund's arguments, then what it wrote
    report = store.divergence(run_id, fork.run_id)
    assert report.origin == "fork" and report.from_step == after
    assert report.first is not None
    assert (report.first.node_a, report.first.node_b) == ("desk", "desk")
    assert report.calls.diverged[0].name == "desk-m"


def test_a_context_edit_reaches_the_tools_of_the_fork(rec: flowdbg.Debugger) -> None:
    desk = Desk()
    run_id = desk.run(rec)
    fork = rec.fork(run_id, _step(rec, run_id, "lookup"), {"currency": "NOK"}, target=desk.agent)
    assert fork.result(WAIT) == "Done: refunded 150 NOK."
    assert desk.refunded[-1] == (1042, 150, "NOK")
    assert rec.flush(WAIT) and fork.run_id is not None
    store = rec.store
    assert store is not None
    assert store.get_run(fork.run_id).input == {"currency": "NOK"}
    assert store.divergence(run_id, fork.run_id).edited == ["currency"]


def test_unedited_forks_end_as_the_run_did_and_the_other_steps_are_refused_naming_them(
    rec: flowdbg.Debugger,
) -> None:
    desk = Desk()
    run_id = desk.run(rec)
    store = rec.store
    assert store is not None
    steps = store.get_steps(run_id, values=False)
    assert [(s.step, s.kind, s.node) for s in steps] == [
        (1, "agent", "desk"),
        (2, "llm", "desk-m"),
        (3, "tool", "lookup"),
        (4, "llm", "desk-m"),
        (5, "tool", "refund"),
        (6, "llm", "desk-m"),
    ]
    for after in (0, 3, 5):
        fork = rec.fork(run_id, after, target=desk.agent)
        assert fork.result(WAIT) == "Done: refunded 150 EUR.", after
    refusals = {
        1: r"step 1 \(desk\) is agent 'desk''s activation",
        2: r"step 2 \(desk-m\) is a model turn that planned tool calls .* fork after step 3",
        6: r"step 6 \(desk-m\) is a model turn that gave the agent's final output",
    }
    for step, why in refusals.items():
        with pytest.raises(flowdbg.ForkError, match=why) as info:
            rec.fork(run_id, step, target=desk.agent)
        assert str(info.value).endswith("it can be forked after steps 0, 3, 5")
    with pytest.raises(flowdbg.ForkError, match=r"'output:' edits change the result of a tool"):
        rec.fork(run_id, 0, {"output:paid": 1}, target=desk.agent)
    # at step 0 paths edit the input: another run context comes with the config
    fork = rec.fork(run_id, 0, target=desk.agent, config={"context": {"currency": "NOK"}})
    assert fork.result(WAIT) == "Done: refunded 150 NOK."
    assert desk.refunded[-1] == (1042, 150, "NOK")


def test_a_fork_holds_at_a_breakpoint_and_goes_on_when_resumed(rec: flowdbg.Debugger) -> None:
    desk = Desk()
    run_id = desk.run(rec)
    rec.break_on_tool("refund")
    fork = rec.fork(run_id, _step(rec, run_id, "lookup"), target=desk.agent)
    stop = rec.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.position) == ("refund", "before")
    assert stop.location.run_id == fork.run_id
    assert rec.inspect("amount") == 150
    assert desk.refunded == [(1042, 150, "EUR")]  # held before the body
    rec.set("amount", 7)
    rec.resume()
    assert fork.result(WAIT) == "Done: refunded 7 EUR."


def test_a_fork_after_parallel_calls_starts_after_the_last_to_end(rec: flowdbg.Debugger) -> None:
    @function_tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    def turn(call: Any) -> list[Any]:
        if not oa.outputs(call):
            return oa.calls(
                ("weather", {"city": "Oslo"}, "w1"), ("weather", {"city": "Rome"}, "w2")
            )
        return oa.say(" | ".join(oa.outputs(call)))

    agent = oa.agent("forecast", [ModelStep.respond(turn)] * 6, tools=[weather])
    rec.attach(agent)
    run = rec.start(lambda: oa.run_sync(agent, "weather?"))
    assert run.result(WAIT).final_output == "sunny in Oslo | sunny in Rome"
    assert rec.flush(WAIT) and run.run_id is not None
    store = rec.store
    assert store is not None
    calls = [s for s in store.get_steps(run.run_id) if s.kind == "tool"]
    assert len(calls) == 2
    last = max(calls, key=lambda s: (s.ended_at, s.step))
    first = next(s for s in calls if s is not last)
    adapter = rec.adapter_for(agent)
    run_record = store.get_run(run.run_id)
    steps = store.get_steps(run.run_id, values=False)
    refused = adapter.fork_problems(store, run_record, steps)
    assert forkable_steps(run_record, steps, refused, any_unit=True) == [0, last.step]
    with pytest.raises(flowdbg.ForkError, match=f"ended before its sibling call step {last.step}"):
        rec.fork(run.run_id, first.step, target=agent)
    city = "Rome" if last.input == {"city": "Rome"} else "Oslo"
    fork = rec.fork(run.run_id, last.step, {"output:": f"snow in {city}"}, target=agent)
    assert city in fork.result(WAIT) and f"snow in {city}" in fork.result(WAIT)


@dataclass
class Account:
    """A run context that is no mapping: the record keeps it only as JSON."""

    owner: str


def _account_agent() -> Agent[Any]:
    @function_tool
    def whoami(ctx: RunContextWrapper[Account]) -> str:
        """Who the account belongs to."""
        return ctx.context.owner

    def turn(call: Any) -> list[Any]:
        results = oa.outputs(call)
        if len(results) < 2:
            return oa.calls(("whoami", {}, f"c{len(results)}"))
        return oa.say(" then ".join(results))

    return oa.agent("account", [ModelStep.respond(turn)] * 6, tools=[whoami])


def test_a_context_that_is_no_mapping_is_given_again_in_the_config(
    rec: flowdbg.Debugger,
) -> None:
    agent = _account_agent()
    rec.attach(agent)
    run = rec.start(lambda: oa.run_sync(agent, "who?", context=Account("ana")))
    assert run.result(WAIT).final_output == "ana then ana"
    assert rec.flush(WAIT) and run.run_id is not None
    first = _first_call(rec, run.run_id, "whoami")
    fork = rec.fork(run.run_id, first, target=agent)
    with pytest.raises(flowdbg.ForkError, match=r"give the context again \(config="):
        fork.result(WAIT)
    fork = rec.fork(run.run_id, first, target=agent, config={"context": Account("bo")})
    assert fork.result(WAIT) == "ana then bo"
    with pytest.raises(flowdbg.ForkError, match="is no mapping"):
        rec.fork(run.run_id, first, {"context.owner": "x"}, target=agent)


def _first_call(dbg: flowdbg.Debugger, run_id: str, node: str) -> int:
    store = dbg.store
    assert store is not None
    return next(s.step for s in store.get_steps(run_id, values=False) if s.node == node)


def _handing_off(filtered: bool = False) -> Agent[Any]:
    notes = oa.agent("notes", oa.answer(lambda call: f"noted: {oa.outputs(call)[-1]}", 4))
    desk_turns = [oa.calls(("transfer_to_notes", {}, "h1"))] * 4
    target: Any = handoff(notes, input_filter=lambda data: data) if filtered else notes
    return oa.agent("desk", desk_turns, handoffs=[target])


def test_a_fork_after_a_handoff_goes_on_with_the_agent_it_went_to(rec: flowdbg.Debugger) -> None:
    agent = _handing_off()
    rec.attach(agent)
    run = rec.start(lambda: oa.run_sync(agent, "note this", context={"n": 1}))
    assert run.result(WAIT).final_output == 'noted: {"assistant": "notes"}'
    assert rec.flush(WAIT) and run.run_id is not None
    after = next(
        s.step for s in rec.store.get_steps(run.run_id, values=False) if s.kind == "handoff"
    )
    fork = rec.fork(run.run_id, after, {"n": 2}, target=agent)
    assert fork.result(WAIT) == 'noted: {"assistant": "notes"}'
    assert rec.flush(WAIT) and fork.run_id is not None
    made = rec.store.get_run(fork.run_id)
    assert (made.name, made.input) == ("notes", {"n": 2})
    # the SDK rewrites what a filtered handoff passes on: refused, saying why
    filtered = _handing_off(filtered=True)
    rec.attach(filtered)
    run = rec.start(lambda: oa.run_sync(filtered, "note this", context={"n": 1}))
    assert run.result(WAIT).final_output.startswith("noted: ")
    assert rec.flush(WAIT) and run.run_id is not None
    after = next(
        s.step for s in rec.store.get_steps(run.run_id, values=False) if s.kind == "handoff"
    )
    # (before anything runs: dbg.fork raises, no run is started)
    with pytest.raises(flowdbg.ForkError, match="its handoff has an input_filter"):
        rec.fork(run.run_id, after, target=filtered)


# -- the command line ---------------------------------------------------------------------------

DESK = """
from agents import Agent, RunContextWrapper, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call


@function_tool
def lookup(order: int) -> dict:
    \"\"\"Look an order up.\"\"\"
    return {"order": order, "paid": 150}


@function_tool
def refund(ctx: RunContextWrapper[dict], order: int, amount: int) -> str:
    \"\"\"Refund an order.\"\"\"
    return f"refunded {amount} {ctx.context['currency']}"


def turn(call):
    outputs = [
        i["output"]
        for i in call.input
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    if not outputs:
        return [function_call("lookup", {"order": 1042}, call_id="c1")]
    if outputs[-1].startswith("{"):
        paid = eval(outputs[-1])["paid"]
        return [function_call("refund", {"order": 1042, "amount": paid}, call_id="c2")]
    return [assistant_message("Done: " + outputs[-1])]


model = ScriptedModel([ModelStep.respond(turn)] * 10)
desk = Agent(name="desk", model=model, tools=[lookup, refund])
"""


def flowdbg_cli(*args: str, input: str | None = None) -> str:
    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def desk_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("FLOWDBG_DB", str(tmp_path / "flowdbg.db"))
    monkeypatch.setenv("FLOWDBG_HISTORY", str(tmp_path / "history"))
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "desk.py").write_text(DESK)
    flowdbg_cli(
        "run",
        "desk.py:desk",
        "--input",
        '"refund 1042"',
        "--config",
        '{"context": {"currency": "EUR"}}',
        input="",
    )
    runs = json.loads(flowdbg_cli("runs", "ls", "--json"))["data"]["runs"]
    return str(runs[0]["short_id"])


def test_runs_fork_json_forks_an_agent_run_after_a_tool_call(desk_run: str) -> None:
    data = json.loads(
        flowdbg_cli("runs", "fork", desk_run, "--step", "3", "--set", "output:paid=40", "--json")
    )["data"]
    assert data["run"]["output"] == "Done: refunded 40 EUR"
    assert data["run"]["input"] == {"currency": "EUR"}
    assert (data["run"]["origin"], data["run"]["fork_step"]) == ("fork", 3)
    assert [(s["kind"], s["node"]) for s in data["steps"]] == [
        ("agent", "desk"),
        ("llm", "ScriptedModel"),
        ("tool", "refund"),
        ("llm", "ScriptedModel"),
    ]
    assert data["edits"] == {"output:paid": 40}
    short = data["run"]["short_id"]
    divergence = json.loads(flowdbg_cli("runs", "divergence", short, "--json"))["data"]
    assert divergence["origin"] == "fork" and divergence["from_step"] == 3


def test_runs_fork_refuses_a_model_turn_naming_the_forkable_steps(desk_run: str) -> None:
    result = CliRunner().invoke(cli, ["runs", "fork", desk_run, "--step", "2", "--json"])
    assert result.exit_code != 0
    assert "is a model turn that planned tool calls" in result.output
    assert "it can be forked after steps 0, 3, 5" in result.output


def test_runs_fork_debugs_the_fork_at_a_breakpoint(desk_run: str) -> None:
    out = flowdbg_cli(
        "runs",
        "fork",
        desk_run,
        "--step",
        "3",
        "--set",
        "output:paid=40",
        "-b",
        "refund",
        input="p amount\nset amount = 5\nc\n",
    )
    assert f"forking run {desk_run} after step 3 with " in out
    assert "(flowdbg) p amount\n40" in out
    assert "Done: refunded 5 EUR" in out
