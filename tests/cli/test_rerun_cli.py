"""``flowdbg runs rerun``: the current code of a recorded run's target, its model and tool calls
served from the record (the scripted ones here count their real calls in a file)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from cli_helpers import Cli

AGENT = textwrap.dedent(
    """
    from pathlib import Path

    from flowdbg.adapters.stategraph import END, Model, StateGraph, Tool

    CALLS = Path(__file__).with_name("calls.log")
    PROMPT = "find {q}"


    def _model(messages):
        with CALLS.open("a") as log:
            log.write("chat\\n")
        return "searching " + messages[-1]["content"]


    def _search(query):
        with CALLS.open("a") as log:
            log.write("search\\n")
        return "results for " + query


    chat = Model(_model, name="chat")
    search = Tool(_search, name="search")

    g = StateGraph(name="agent")
    def plan(s):
        content = PROMPT.format(q=s["q"])
        return {"plan": chat(messages=[{"role": "user", "content": content}])}


    g.add_node("plan", plan)
    g.add_node("act", lambda s: {"found": search(query=s["q"])})
    g.set_entry_point("plan")
    g.add_edge("plan", "act")
    g.add_edge("act", END)
    app = g.compile()
    """
)


def test_rerun_serves_unchanged_calls_and_runs_changed_ones(run_cli: Cli, graphs: Path) -> None:
    agent = graphs / "agent.py"
    agent.write_text(AGENT, encoding="utf-8")
    calls = graphs / "calls.log"
    run_cli("run", "agent.py:app", "--input", '{"q": "flights"}', input="")
    assert calls.read_text().split() == ["chat", "search"]
    original = run_cli.json("runs", "ls", command="runs ls")["runs"][0]

    data = run_cli.json("runs", "rerun", original["short_id"], command="runs rerun")
    assert calls.read_text().split() == ["chat", "search"]  # nothing ran again
    assert data["run"]["output"] == {
        "q": "flights",
        "plan": "searching find flights",
        "found": "results for flights",
    }
    assert (data["run"]["origin"], data["run"]["forked_from"]) == ("rerun", original["run_id"])
    assert [(s["node"], s["cached"]) for s in data["steps"]] == [
        ("plan", False),
        ("chat", True),
        ("act", False),
        ("search", True),
    ]
    assert (data["calls"]["served"], data["calls"]["live"], data["calls"]["diverged"]) == (
        2,
        0,
        [],
    )

    agent.write_text(AGENT.replace('"find {q}"', '"find cheap {q}"'), encoding="utf-8")
    out = run_cli("runs", "rerun", original["short_id"], input="").stdout
    assert calls.read_text().split() == ["chat", "search", "chat"]  # only the changed call
    assert "calls served from the record: 1, run live: 1" in out
    # what the served call took, as runs divergence writes durations (not "0.00 s")
    assert re.search(r"run live: 1; saved [0-9.]+(µs|ms|s) of calls", out), out
    assert "in plan: llm 'chat' ran live (input differs from step 2 of the record)" in out
    shown = run_cli("runs", "show", original["short_id"]).stdout
    assert "cached" not in shown
    reruns = run_cli.json("runs", "ls", command="runs ls")["runs"]
    assert run_cli("runs", "show", reruns[1]["short_id"]).stdout.count("completed, cached") == 2

    timeline = run_cli("runs", "timeline", original["short_id"]).stdout.splitlines()
    assert timeline[1].endswith("2 served from the record; same path and states as the run")
    assert "1 served from the record; departs at step 1 (plan): " in timeline[2]

    result = run_cli("runs", "rerun", original["short_id"], "--until-divergence", "--json", code=1)
    assert calls.read_text().split() == ["chat", "search", "chat"]  # the call was not made
    stopped = json.loads(result.stdout)["data"]
    assert stopped["run"]["status"] == "terminated"
    assert stopped["calls"]["until_divergence"] is True
    assert [d["recorded_step"] for d in stopped["calls"]["diverged"]] == [2]
    text = run_cli("runs", "rerun", original["short_id"], "--until-divergence", input="", code=1)
    assert calls.read_text().split() == ["chat", "search", "chat"]  # (again not made)
    assert (
        "in plan: llm 'chat' ended the rerun (input differs from step 2 of the record)"
        in text.stdout
    )
    assert "ran live" not in text.stdout.split("calls served from the record")[1]


def test_rerun_refusals(run_cli: Cli) -> None:
    run_cli("run", "graphs.py:app", "--input", '{"x": 1}', input="")
    short = run_cli.json("runs", "ls", command="runs ls")["runs"][0]["short_id"]
    usage = run_cli("runs", "rerun", short, "--cached-calls", "some", code=2)
    assert "'some' is not one of 'all', 'llm', 'tool', 'none'" in usage.stderr
    assert run_cli.error("runs", "rerun", "zzzzzzzz").startswith("error: no run 'zzzzzzzz'")


def test_divergence_reports_where_a_rerun_departs(run_cli: Cli, graphs: Path) -> None:
    agent = graphs / "agent.py"
    agent.write_text(AGENT, encoding="utf-8")
    run_cli("run", "agent.py:app", "--input", '{"q": "flights"}', input="")
    original = run_cli.json("runs", "ls", command="runs ls")["runs"][0]
    agent.write_text(AGENT.replace('"find {q}"', '"find cheap {q}"'), encoding="utf-8")
    session = run_cli("runs", "rerun", original["short_id"], input="").stdout
    # the session ends with where the rerun departs, old and new value
    assert (
        "  first divergence at step 1 of the new run (state): the state after 'plan' differs "
        "at plan\n"
        '    plan: "searching find flights" -> "searching find cheap flights"\n'
    ) in session
    rerun = run_cli.json("runs", "ls", command="runs ls")["runs"][0]
    assert rerun["origin"] == "rerun"

    out = run_cli("runs", "divergence", rerun["short_id"]).stdout.splitlines()
    assert out[0] == f"{rerun['short_id']}: rerun of {original['short_id']}, completed"
    assert out[3].startswith(
        "  calls: 1 served from the record, 1 run live (the source made 2); saved "
    )
    assert out[4] == "    in plan: llm 'chat' differs from step 2 of the source (input)"
    assert out[5].startswith("  time: ")

    data = run_cli.json("runs", "divergence", rerun["short_id"], command="runs divergence")
    assert (data["a"]["run_id"], data["b"]["run_id"]) == (original["run_id"], rerun["run_id"])
    assert (data["origin"], data["from_step"], data["edited"]) == ("rerun", 0, [])
    assert data["first_divergence"]["paths"] == ["plan"]
    assert (data["old"], data["new"]) == ("searching find flights", "searching find cheap flights")
    assert (data["calls"]["served"], data["calls"]["live"], data["calls"]["recorded"]) == (1, 1, 2)
    assert data["calls"]["saved_seconds"] > 0
    assert [d["recorded_step"] for d in data["calls"]["diverged"]] == [2]
    # the same two runs named the other way round: no lineage, compared from their starts
    back = run_cli.json(
        "runs", "divergence", original["short_id"], rerun["short_id"], command="runs divergence"
    )
    assert back["origin"] is None and back["first_divergence"]["paths"] == ["plan"]
    assert (back["old"], back["new"]) == ("searching find cheap flights", "searching find flights")

    rerun_json = run_cli.json("runs", "rerun", original["short_id"], command="runs rerun")
    assert rerun_json["first_divergence"]["kind"] == "state"
    message = run_cli.error("runs", "divergence", original["short_id"])
    assert message == (
        f"error: run {original['short_id']} was not made from another run (no fork, rerun or "
        f"rewind): name the run to compare it with, flowdbg runs divergence "
        f"{original['short_id']} SOURCE"
    )
