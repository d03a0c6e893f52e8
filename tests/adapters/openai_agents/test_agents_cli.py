"""The command line on agents: the OpenAI Agents demo, ``flowdbg run`` on the example's agents
with a tool breakpoint, ``graph inspect``, ``runs state`` at a tool's step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

import oa_helpers as oa
from agents import RunContextWrapper, function_tool
from click.testing import CliRunner, Result

from flowdbg import Debugger
from flowdbg.cli import cli
from flowdbg.store import open_store

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "openai_agents_support.py"


@pytest.fixture(autouse=True)
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "flowdbg.db"
    monkeypatch.setenv("FLOWDBG_DB", str(path))
    monkeypatch.setenv("FLOWDBG_HISTORY", str(tmp_path / "history"))
    monkeypatch.chdir(tmp_path)  # saved breakpoints go to ./.flowdbg
    return path


def flowdbg(*args: str, input: str | None = None, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def in_order(out: str, expected: list[str]) -> None:
    position = 0
    for line in expected:
        found = out.find(line, position)
        assert found >= 0, f"{line!r} missing (after position {position}):\n{out}"
        position = found + len(line)


@pytest.mark.parametrize("name", ["openai-agents", "openai_agents"])
def test_the_demo_holds_the_refund_and_lowers_it(name: str) -> None:
    out = flowdbg("demo", "--framework", name).stdout
    in_order(
        out,
        [
            "$ flowdbg run flowdbg.adapters.openai_agents._demo:build_agent --stop-on-entry",
            "stop-1: entry at before agent 'triage' (step 1)",
            "(flowdbg) tool refund",
            "breakpoint [bp-1] at before tool 'refunds/refund'",
            "(flowdbg) p amount",
            "1999",
            "(flowdbg) set amount = 50",
            "run completed; result:",
            "Done: refunded 50 EUR for order 1042.",
        ],
    )


def test_run_with_a_tool_breakpoint_from_the_terminal() -> None:
    out = flowdbg(
        "run",
        f"{EXAMPLE}:triage_agent",
        "--input",
        '"refund my order"',
        "-b",
        "refund",
        input="p amount\nset amount = 50\nc\n",
    ).stdout
    in_order(
        out,
        [
            "breakpoint [bp-1] at before tool 'refunds/refund'",
            "1999",
            "run completed; result:",
            "Done: refunded 50 EUR for order 1042.",
        ],
    )


def test_run_breaks_after_a_model_turn_named_by_its_kind() -> None:
    out = flowdbg(
        "run",
        f"{EXAMPLE}:triage_agent",
        "--input",
        '"refund my order"',
        "-b",
        "llm:*:after",
        input="c\nc\nc\nc\n",
    ).stdout
    in_order(
        out,
        [
            "set bp-1 node '*' after kind llm (0 hits)",
            "breakpoint [bp-1] at after llm ",
            "run completed; result:",
        ],
    )
    refused = flowdbg(
        "run", f"{EXAMPLE}:triage_agent", "--input", '"x"', "-b", "tool:refnud", code=1
    ).output
    assert "unknown tool 'refnud'; tools: refund" in refused and "(in -b tool:refnud)" in refused


APPROVAL = """
from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

set_tracing_disabled(True)


@function_tool(needs_approval=True)
def pay(amount: int) -> str:
    \"\"\"Pay.\"\"\"
    return f"paid {amount}"


payer = Agent(
    name="payer",
    tools=[pay],
    model=ScriptedModel(
        [[function_call("pay", {"amount": 700}, call_id="p1")], [assistant_message("done")]]
    ),
)
"""


def test_a_run_waiting_for_approval_says_how_it_can_be_resumed(tmp_path: Path) -> None:
    (tmp_path / "approval.py").write_text(APPROVAL, encoding="utf-8")
    out = flowdbg("run", f"{tmp_path / 'approval.py'}:payer", "--input", '"pay"').stdout
    # not --resume, which this adapter refuses
    assert (
        "run suspended: it waits for the framework's resume, which flowdbg run --resume cannot "
        "give runs of openai_agents (resume it from Python, as the framework does)"
    ) in " ".join(out.split())


def test_an_unknown_name_lists_the_agents_and_tools() -> None:
    message = flowdbg(
        "run", f"{EXAMPLE}:triage_agent", "--input", '"x"', "-b", "refnud", code=1
    ).output
    assert "nodes: triage, refunds; tools: refund" in message


def test_graph_inspect_shows_agents_and_handoffs() -> None:
    out = flowdbg("graph", "inspect", f"{EXAMPLE}:triage_agent").stdout
    assert "triage -?-> refunds" in out
    assert "refunds  (tools: refund, model " in out  # the agent's tools, in the text too
    mermaid = flowdbg("graph", "inspect", f"{EXAMPLE}:triage_agent", "--format", "mermaid").stdout
    assert '[["refund"]]' in mermaid and '-.->|"tool"|' in mermaid
    data = flowdbg("graph", "inspect", f"{EXAMPLE}:triage_agent", "--json").stdout
    assert '"refund"' in data and '"handoffs"' in data


@pytest.mark.parametrize("in_place", [False, True], ids=["replaced", "in_place"])
def test_runs_state_at_a_tool_step_shows_the_context_the_tool_wrote(
    db: Path, in_place: bool
) -> None:
    @function_tool
    def add(ctx: RunContextWrapper[dict[str, Any]], item: str) -> str:
        """Put an item in the cart."""
        if in_place:  # the same list, changed: each step is recorded as it was then
            ctx.context["cart"].append(item)
        else:
            ctx.context["cart"] = [*ctx.context["cart"], item]
        return f"added {item}"

    agent = oa.agent(
        "shop",
        [
            oa.calls(("add", {"item": "tea"}, "call-1")),
            oa.calls(("add", {"item": "jam"}, "call-2")),
            oa.say("bought"),
        ],
        tools=[add],
    )
    dbg = Debugger(db=db)
    try:
        dbg.attach(agent)
        assert oa.run_sync(agent, "tea and jam", context={"cart": []}).final_output == "bought"
        assert dbg.flush(10.0)
    finally:
        dbg.close()
    with open_store(db, create=False) as store:
        (run_id,) = [r.run_id for r in store.list_runs()]
        steps = store.get_steps(run_id)
    assert [(s.node, s.kind) for s in steps] == [
        ("shop", "agent"),
        ("chat", "llm"),
        ("add", "tool"),
        ("chat", "llm"),
        ("add", "tool"),
        ("chat", "llm"),
    ]
    carts = []
    for number in (3, 4, 5):
        out = flowdbg("runs", "state", run_id, "--step", str(number), "--values", "--json").stdout
        data = json.loads(out)["data"]
        carts.append((data["values"]["cart"], {k["key"]: k["written_by"] for k in data["keys"]}))
    assert carts == [
        (["tea"], {"cart": {"step": 3, "node": "add"}}),
        (["tea"], {"cart": {"step": 3, "node": "add"}}),  # the model turn writes nothing
        (["tea", "jam"], {"cart": {"step": 5, "node": "add"}}),
    ]


def test_a_rerun_departs_where_an_edited_tool_made_the_agent_answer_otherwise() -> None:
    flowdbg(
        "run",
        f"{EXAMPLE}:triage_agent",
        "--input",
        '"refund my order"',
        "-b",
        "refund",
        input="set amount = 50\nc\n",
    )
    (first,) = json.loads(flowdbg("runs", "ls", "--json").stdout)["data"]["runs"]
    out = flowdbg("runs", "rerun", first["run_id"][:8], "--cached-calls", "all").stdout
    flat = " ".join(out.split())
    # both model turns before the refund are served; the refund the model asks for is the
    # one it asked for (1999), not the one edited at the stop (50): the tool runs live there
    assert "recorded calls served: all" in flat
    assert "calls served from the record: 2, run live:" in flat, out
    assert "in refunds: tool 'refund' ran live (input differs from step 6 of the record)" in flat
    assert '"Done: refunded 1999 EUR for order 1042."' in flat
    (again,) = [
        r
        for r in json.loads(flowdbg("runs", "ls", "--json").stdout)["data"]["runs"]
        if r["origin"] == "rerun"
    ]
    shown = flowdbg("runs", "show", again["run_id"][:8], "--view", "steps").stdout
    assert shown.count("completed, cached") == 2
    # without --cached-calls it serves all, as the adapter can
    out = flowdbg("runs", "rerun", first["run_id"][:8]).stdout
    assert "recorded calls served: all" in " ".join(out.split())
    out = flowdbg("runs", "rerun", first["run_id"][:8], "--cached-calls", "none").stdout
    flat = " ".join(out.split())
    # the rerun's tool is not edited: the agent answers otherwise, which the states (the
    # agent and turn) do not show
    assert "calls served from the record: none (--cached-calls none), run live: 4" in flat
    assert "the output of 'refunds' differs at output" in flat
    assert (
        'output: "Done: refunded 50 EUR for order 1042." -> "Done: refunded 1999 EUR for order '
        '1042."'
    ) in flat


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--input", "42"], "(JSON objects), not a number: give --input"),
        (["--input", '{"q": 1}'], "(JSON objects), not an object: give --input"),
        ([], "an agent needs an input: the user's message as a JSON string"),
    ],
)
def test_an_input_an_agent_cannot_take_is_refused_before_it_runs(
    db: Path, args: list[str], said: str
) -> None:
    out = flowdbg("run", f"{EXAMPLE}:triage_agent", *args, code=1).output
    assert out.startswith("error: --input: ") and said in out
    assert len(out.strip().splitlines()) == 1  # nothing ran
