"""Every ``--json`` command, on runs that reach every branch of its schema (failed steps,
nested runs, tool calls, error events, a divergence), matches its published schema exactly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import Cli, record_graph_runs
from json_checks import check_output

T = 10.0


@pytest.fixture
def ids(graphs: Path, db: Path) -> Iterator[dict[str, str]]:
    """Record runs of the test graphs; their ids by name."""
    yield record_graph_runs(
        graphs,
        db,
        [
            ("linear", "app", {"x": 1}),
            ("linear2", "app", {"x": 5}),
            ("failing", "failing", {"x": 1}),
            ("fan", "fan", {}),
            ("tools", "tools", {"q": "flights"}),
        ],
    )


def output(run_cli: Cli, command: str, *args: str) -> Any:
    """The data of ``flowdbg COMMAND ARGS --json``, checked beyond its schema."""
    data = run_cli.json(*command.split(), *args, command=command)
    check_output(command, data)
    return data


def test_runs_ls(run_cli: Cli, ids: dict[str, str]) -> None:
    top = output(run_cli, "runs ls")
    assert top["count"] == 5
    nested = output(run_cli, "runs ls", "--parent", "*")
    assert nested["count"] == 6
    (inner,) = [r for r in nested["runs"] if r["parent_run_id"] is not None]
    assert inner["path"] == ["sub"] and inner["parent_step"] is not None
    failed = output(run_cli, "runs ls", "--status", "failed")
    assert [r["error"]["type"] for r in failed["runs"]] == ["ValueError"]


def test_runs_show(run_cli: Cli, ids: dict[str, str]) -> None:
    shown = output(run_cli, "runs show", ids["linear"])
    assert shown["run"]["output"] == {"x": 20, "y": 21}
    flat = output(run_cli, "runs show", ids["fan"])
    assert [set(child) for child in flat["children"]] == [{"run"}]
    tree = output(run_cli, "runs show", ids["fan"], "--tree")
    (child,) = tree["children"]
    assert [s["node"] for s in child["steps"]] == ["inner1", "inner2"] and child["children"] == []
    errors = output(run_cli, "runs show", ids["failing"], "--errors")
    (step,) = errors["steps"]
    assert step["status"] == "failed" and step["error"]["message"] == "boom at x=2"
    assert errors["filters"] == {"errors": True, "node": None}
    one = output(run_cli, "runs show", ids["linear"], "--node", "beta")
    assert [s["node"] for s in one["steps"]] == ["beta"]


def test_runs_state(run_cli: Cli, ids: dict[str, str]) -> None:
    end = output(run_cli, "runs state", ids["linear"])
    assert {k["key"]: k["written_by"] for k in end["keys"]}["y"] == {"step": 3, "node": "gamma"}
    start = output(run_cli, "runs state", ids["linear"], "--step", "1", "--values")
    assert start["values"] == {"x": 2}
    key = output(run_cli, "runs state", ids["linear"], "--key", "x")
    assert (key["path"], key["value"]) == ("x", 20)
    output(run_cli, "runs state", ids["failing"])


def test_runs_steps(run_cli: Cli, ids: dict[str, str]) -> None:
    tools = output(run_cli, "runs steps", ids["tools"])
    assert [(s["node"], s["kind"]) for s in tools["steps"]] == [
        ("agent", "node"),
        ("search", "tool"),
    ]
    assert tools["steps"][1]["input"] == {"query": "flights"}
    failing = output(run_cli, "runs steps", ids["failing"])
    assert failing["steps"][-1]["error"]["type"] == "ValueError"
    fan = output(run_cli, "runs steps", ids["fan"])
    assert any(s["child_run_id"] for s in fan["steps"])


def test_runs_diff(run_cli: Cli, ids: dict[str, str]) -> None:
    same_path = output(run_cli, "runs diff", ids["linear"], ids["linear2"])
    assert same_path["first_divergence"]["kind"] == "state"
    other = output(run_cli, "runs diff", ids["linear"], ids["failing"])
    assert other["first_divergence"]["kind"] == "path"
    assert any(row["status_changed"] for row in other["nodes"]) or other["nodes"]


def test_runs_replay(run_cli: Cli, ids: dict[str, str]) -> None:
    failing = output(run_cli, "runs replay", ids["failing"])
    assert [e["event"] for e in failing["events"]] == ["before", "after", "before", "error"]
    assert failing["events"][-1]["error"]["type"] == "ValueError"
    nested = output(run_cli, "runs replay", ids["fan"])
    assert any(e["path"] == ["sub"] for e in nested["events"])
    tools = output(run_cli, "runs replay", ids["tools"], "--filter", "tool")
    assert {e["kind"] for e in tools["events"]} == {"tool"}


def test_graph_inspect_and_adapters(run_cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    fan = output(run_cli, "graph inspect", "graphs.py:fan")
    sub = next(n for n in fan["graph"]["nodes"] if n["name"] == "sub")
    assert sub["subgraph"]["name"] == "inner"
    output(run_cli, "graph inspect", "graphs.py:tools")
    adapters = output(run_cli, "adapters")
    assert any(a["available"] for a in adapters["adapters"])
    monkeypatch.setenv("FLOWDBG_DISABLE_ADAPTERS", "stategraph")
    blocked = output(run_cli, "adapters")
    assert any(a["reason"] for a in blocked["adapters"] if not a["available"])


FUNCTIONAL = """\
from langgraph.func import entrypoint, task


@task
def double(x: int) -> int:
    return x * 2


@entrypoint()
def flow(x: int) -> int:
    return double(x).result() + 1
"""


def test_langgraph_outputs(run_cli: Cli, graphs: Path) -> None:
    pytest.importorskip("langgraph", reason="the langgraph extra is not installed")
    (graphs / "flow_app.py").write_text(FUNCTIONAL, encoding="utf-8")
    agent = "flowdbg.adapters.langgraph._demo:build_graph"
    described = output(run_cli, "graph inspect", agent + "()")
    assert described["adapter"] == "langgraph"
    flow = output(run_cli, "graph inspect", "flow_app.py:flow")
    assert flow["graph"]["open"] is True and flow["graph"]["nodes"][0]["tasks"] == ["double"]

    from flowdbg.adapters.langgraph._demo import DEMO_INPUT

    run_cli("run", agent, "--input", json.dumps(DEMO_INPUT))
    run_cli("run", "flow_app.py:flow", "--input", "3")
    listed = output(run_cli, "runs ls")
    runs = {r["name"]: r["run_id"] for r in listed["runs"]}
    steps = output(run_cli, "runs steps", runs["travel-agent"])
    assert {"llm", "tool"} <= {s["kind"] for s in steps["steps"]}
    output(run_cli, "runs show", runs["travel-agent"], "--tree")
    output(run_cli, "runs replay", runs["travel-agent"])
    output(run_cli, "runs state", runs["travel-agent"])
    tasks = output(run_cli, "runs steps", runs["flow"])
    assert [s["node"] for s in tasks["steps"]] == ["flow", "double"]
