"""``flowdbg runs ...`` on a real SQLite database filled by recorded runs."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from cli_helpers import Cli, record_graph_runs

import flowdbg

T = 10.0


@pytest.fixture
def recorded(graphs: Path, db: Path) -> Iterator[dict[str, str]]:
    """Record runs of the test graphs: two linear ones, a failing one, a nested one."""
    yield record_graph_runs(
        graphs,
        db,
        [
            ("linear", "app", {"x": 1}),
            ("linear2", "app", {"x": 5}),
            ("failing", "failing", {"x": 1}),
            ("fan", "fan", {}),
        ],
    )


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()[1:] if line.strip()]


# ---------------------------------------------------------------------------- runs ls


def test_ls_lists_top_level_runs_newest_first(run_cli: Cli, recorded: dict[str, str]) -> None:
    out = run_cli("runs", "ls").stdout
    assert out.splitlines()[0].split() == [
        "id", "name", "framework", "status", "started", "duration", "steps",
    ]  # fmt: skip
    table = rows(out)
    assert [r[0] for r in table] == [
        recorded[k][:8] for k in ("fan", "failing", "linear2", "linear")
    ]
    assert [r[1] for r in table] == ["fan", "failing", "linear", "linear"]
    assert [r[3] for r in table] == ["completed", "failed", "completed", "completed"]
    assert table[3][-1] == "3" and table[1][-1] == "2"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", table[0][4])


def test_ls_filters(run_cli: Cli, recorded: dict[str, str]) -> None:
    assert [r[0] for r in rows(run_cli("runs", "ls", "--status", "failed").stdout)] == [
        recorded["failing"][:8]
    ]
    out = run_cli("runs", "ls", "--status", "failed", "--status", "COMPLETED", "--name", "linear")
    assert len(rows(out.stdout)) == 2
    assert len(rows(run_cli("runs", "ls", "--since", "1h ago").stdout)) == 4
    assert run_cli("runs", "ls", "--until", "2d ago").stdout.startswith("no runs in ")
    assert len(rows(run_cli("runs", "ls", "--limit", "1").stdout)) == 1
    children = rows(run_cli("runs", "ls", "--parent", recorded["fan"][:6]).stdout)
    assert [r[1] for r in children] == ["inner"]
    assert len(rows(run_cli("runs", "ls", "--parent", "*").stdout)) == 5


def test_ls_json(run_cli: Cli, recorded: dict[str, str]) -> None:
    data = run_cli.json("runs", "ls", command="runs ls")
    assert data["count"] == 4
    assert data["db"].endswith("flowdbg.db")
    first = data["runs"][0]
    assert first["run_id"] == recorded["fan"]
    assert first["short_id"] == recorded["fan"][:8]
    assert first["steps"] == 5
    failing = data["runs"][1]
    assert failing["status"] == "failed"
    assert failing["error"]["type"] == "ValueError"
    assert failing["error"]["message"] == "boom at x=2"


def test_ls_bad_when_is_a_usage_error(run_cli: Cli, recorded: dict[str, str]) -> None:
    result = run_cli("runs", "ls", "--since", "last tuesday", code=2)
    assert "'last tuesday' is not a time; use an ISO date (2024-05-01)" in result.stderr
    assert "'30m ago', '1h ago', '2d ago'" in result.stderr
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------------- runs show


def test_show_prints_the_run_log(run_cli: Cli, recorded: dict[str, str]) -> None:
    out = run_cli("runs", "show", recorded["linear"][:8]).stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"run {recorded['linear']}  started 20")
    assert lines[1].startswith("linear (stategraph) completed: 3 steps over 3 nodes in ")
    assert re.search(r"^1\s+alpha\s+node\s+completed", out, flags=re.M)
    assert re.search(r"^3\s+gamma\s+node\s+completed", out, flags=re.M)


def test_show_errors_node_and_tree(run_cli: Cli, recorded: dict[str, str]) -> None:
    out = run_cli("runs", "show", recorded["failing"], "--errors").stdout
    assert "run error: ValueError: boom at x=2" in out
    assert "step 2 boom (attempt 1)" in out
    assert "  ValueError: boom at x=2" in out
    assert "Traceback (most recent call last):" not in out.split("step 2 boom")[0]
    assert "raise ValueError" in out  # the traceback of the failed step
    out = run_cli("runs", "show", recorded["linear"], "--errors").stdout
    assert "no step failed" in out
    out = run_cli("runs", "show", recorded["linear"], "--node", "beta").stdout
    assert re.search(r"^2\s+beta\s+node", out, flags=re.M)
    assert not re.search(r"^1\s+alpha", out, flags=re.M)
    out = run_cli("runs", "show", recorded["fan"]).stdout
    assert "1 nested run; expand with --tree" in out
    out = run_cli("runs", "show", recorded["fan"], "--tree").stdout
    assert "inner1" in out and "inner2" in out


def test_show_says_when_it_shows_a_row_per_node(run_cli: Cli, db: Path) -> None:
    from flowdbg.adapters.stategraph import END, StateGraph

    g = StateGraph(name="loop")
    g.add_node("tick", lambda s: {"n": s["n"] + 1})
    g.add_conditional_edges("tick", lambda s: "tick" if s["n"] < 12 else END)
    g.set_entry_point("tick")
    app = g.compile()
    with flowdbg.Debugger(db=db) as dbg:
        dbg.attach(app)
        assert dbg.start(app.invoke, {"n": 0}).result(T) == {"n": 12}
        run_id = dbg.runs[-1].run.run_id
    out = run_cli("runs", "show", run_id[:8]).stdout
    assert re.search(r"^tick\s+12\s", out, flags=re.M)  # one row for the node, 12 runs
    assert "(one row per node: 12 steps; --view steps lists each)" in out
    steps = run_cli("runs", "show", run_id[:8], "--view", "steps").stdout
    assert re.search(r"^12\s+tick\s+node\s+completed", steps, flags=re.M)
    assert "one row per node" not in steps
    # the steps of one node are listed each
    assert re.search(r"^12\s+tick", run_cli("runs", "show", run_id, "--node", "tick").stdout, re.M)


def test_diff_shows_both_counts_of_a_node_that_ran_more_often(run_cli: Cli, db: Path) -> None:
    from flowdbg.adapters.stategraph import END, StateGraph

    g = StateGraph(name="loop")
    g.add_node("tick", lambda s: {"n": s["n"] + 1})
    g.add_conditional_edges("tick", lambda s: "tick" if s["n"] < s["until"] else END)
    g.set_entry_point("tick")
    app = g.compile()
    with flowdbg.Debugger(db=db) as dbg:
        dbg.attach(app)
        ids = []
        for until in (3, 5):
            dbg.start(app.invoke, {"n": 0, "until": until}).result(T)
            ids.append(dbg.runs[-1].run.run_id)
    out = run_cli("runs", "diff", *ids).stdout
    assert re.search(r"^tick\s+3\s+5\s.*3 completed -> 5 completed$", out, flags=re.M)


def test_show_json(run_cli: Cli, recorded: dict[str, str]) -> None:
    data = run_cli.json("runs", "show", recorded["linear"], command="runs show")
    assert data["run"]["input"] == {"x": 1}
    assert data["run"]["output"] == {"x": 20, "y": 21}
    assert [s["node"] for s in data["steps"]] == ["alpha", "beta", "gamma"]
    assert data["filters"] == {"errors": False, "node": None}
    data = run_cli.json("runs", "show", recorded["fan"], "--tree", command="runs show")
    (child,) = data["children"]
    assert [s["node"] for s in child["steps"]] == ["inner1", "inner2"]
    data = run_cli.json("runs", "show", recorded["failing"], "--errors", command="runs show")
    (step,) = data["steps"]
    assert step["error"]["type"] == "ValueError"
    assert "raise ValueError" in step["error"]["traceback"]


def test_node_in_the_path_form_of_a_unit_inside_another(
    run_cli: Cli, graphs: Path, db: Path
) -> None:
    run_id = record_graph_runs(graphs, db, [("tools", "tools", {"q": "cats"})])["tools"]
    # runs show writes the tool as agent/search (--json: path ['agent']), stops name it so
    for command in ("show", "steps"):
        out = run_cli("runs", command, run_id, "--node", "agent/search").stdout
        assert "search" in out and "'agent'" not in out and not re.search(r"^1\s", out, re.M)
    data = run_cli.json("runs", "show", run_id, "--node", "agent/search", command="runs show")
    assert [(s["path"], s["node"]) for s in data["steps"]] == [(["agent"], "search")]
    line = run_cli.error("runs", "show", run_id, "--node", "other/search")
    assert line == (
        f"error: run {run_id[:8]} has no step of node 'other/search'; its nodes: agent, "
        "agent/search"
    )


def test_unknown_run_and_node(run_cli: Cli, recorded: dict[str, str]) -> None:
    line = run_cli.error("runs", "show", "zzzz")
    assert re.fullmatch(
        r"error: no run 'zzzz' in \S*flowdbg\.db; list runs with: flowdbg runs ls", line
    ), line
    line = run_cli.error("runs", "show", recorded["linear"], "--node", "nope")
    assert line == (
        f"error: run {recorded['linear'][:8]} has no step of node 'nope'; "
        "its nodes: alpha, beta, gamma"
    )
    for command in ("state", "steps", "replay"):
        assert "no run 'zzzz'" in run_cli.error("runs", command, "zzzz")
    assert "no run 'zzzz'" in run_cli.error("runs", "diff", recorded["linear"], "zzzz")
    assert "no run 'zzzz'" in run_cli.error("runs", "ls", "--parent", "zzzz")


def test_the_db_option_is_named_in_the_hint(
    run_cli: Cli, recorded: dict[str, str], db: Path
) -> None:
    line = run_cli.error("runs", "show", "zzzz", "--db", str(db))
    assert line.endswith(f"list runs with: flowdbg runs ls --db {db}")


# ---------------------------------------------------------------------------- runs state


def test_state_summary_with_last_writers(run_cli: Cli, recorded: dict[str, str]) -> None:
    out = run_cli("runs", "state", recorded["linear"]).stdout
    assert out.splitlines()[0] == f"state of run {recorded['linear'][:8]} (linear) after the end"
    assert re.search(r"^  key\s+type\s+size\s+written by\s+preview$", out, flags=re.M)
    assert re.search(r"^  x\s+int\s+step 2 beta\s+20$", out, flags=re.M)
    assert re.search(r"^  y\s+int\s+step 3 gamma\s+21$", out, flags=re.M)
    out = run_cli("runs", "state", recorded["linear"], "--step", "1").stdout
    assert re.search(r"^  x\s+int\s+step 1 alpha\s+2$", out, flags=re.M)
    assert not re.search(r"^  y\s", out, flags=re.M)


def test_state_values_and_key(run_cli: Cli, recorded: dict[str, str]) -> None:
    out = run_cli("runs", "state", recorded["fan"], "--values").stdout
    assert 'items:\n  [\n    "left",\n    "right"\n  ]' in out
    assert run_cli("runs", "state", recorded["fan"], "--key", "items[-1]").stdout == '"right"\n'
    line = run_cli.error("runs", "state", recorded["fan"], "--key", "nope")
    assert line.startswith("error: ") and "'nope'" in line


def test_state_step_out_of_range(run_cli: Cli, recorded: dict[str, str]) -> None:
    line = run_cli.error("runs", "state", recorded["linear"], "--step", "99")
    assert line == f"error: run {recorded['linear'][:8]} has no step 99; its steps are 1..3"


def test_state_json(run_cli: Cli, recorded: dict[str, str]) -> None:
    data = run_cli.json("runs", "state", recorded["linear"], "--step", "2", command="runs state")
    assert data["step"] == 2
    assert data["keys"] == [
        {"key": "x", "type": "int", "size": None, "preview": "20",
         "written_by": {"step": 2, "node": "beta"}},
    ]  # fmt: skip
    data = run_cli.json(
        "runs", "state", recorded["linear"], "--values", "--key", "y", command="runs state"
    )
    assert data["values"] == {"x": 20, "y": 21}
    assert data["path"] == "y" and data["value"] == 21


# ---------------------------------------------------------------------------- runs steps


def test_steps_detail(run_cli: Cli, recorded: dict[str, str]) -> None:
    out = run_cli("runs", "steps", recorded["linear"]).stdout
    assert re.search(r"^step 1  alpha  node  completed  \d{4}-\d\d-\d\d ", out, flags=re.M)
    assert "  superstep 1 · branch " in out
    assert "  input:    {'x': 1}" in out
    assert "  output:   {'x': 2}" in out
    assert "  decision: ['beta']" in out
    out = run_cli("runs", "steps", recorded["failing"], "--node", "boom").stdout
    assert "  error:    ValueError: boom at x=2" in out
    assert "step 1 " not in out


def test_steps_json(run_cli: Cli, recorded: dict[str, str]) -> None:
    data = run_cli.json("runs", "steps", recorded["linear"], command="runs steps")
    assert [(s["step"], s["node"], s["input"], s["output"]) for s in data["steps"]] == [
        (1, "alpha", {"x": 1}, {"x": 2}),
        (2, "beta", {"x": 2}, {"x": 20}),
        (3, "gamma", {"x": 20}, {"y": 21}),
    ]
    assert data["steps"][0]["decision"] == ["beta"]
    assert "no step of node 'nope'" in run_cli.error(
        "runs", "steps", recorded["linear"], "--node", "nope"
    )


# ---------------------------------------------------------------------------- runs diff


def test_diff_two_runs(run_cli: Cli, recorded: dict[str, str]) -> None:
    out = run_cli("runs", "diff", recorded["linear"], recorded["failing"]).stdout
    lines = out.splitlines()
    assert lines[1].split()[:4] == ["a", recorded["linear"][:8], "linear", "completed"]
    assert lines[2].split()[:4] == ["b", recorded["failing"][:8], "failing", "failed"]
    assert lines[4].split() == ["node", "runs", "a", "runs", "b", "time", "a", "time", "b",
                                "delta", "status"]  # fmt: skip
    assert re.search(r"^alpha\s+1\s+0\s.*\scompleted -> -$", out, flags=re.M)
    assert re.search(r"^boom\s+0\s+1\s.*\s- -> failed$", out, flags=re.M)
    assert (
        "first divergence (path): run a ran 'alpha' (step 1) where run b ran 'ok' (step 1)"
    ) in out
    out = run_cli("runs", "diff", recorded["linear"], recorded["linear2"]).stdout
    assert "first divergence (state): the state after 'alpha' differs at x" in out
    assert run_cli("runs", "diff", recorded["linear"], recorded["linear"]).stdout.endswith(
        "no divergence: the same path, outcomes and states\n"
    )
    data = run_cli.json(
        "runs", "diff", recorded["linear"], recorded["linear2"], command="runs diff"
    )
    assert data["a"]["run_id"] == recorded["linear"]
    assert data["b"]["run_id"] == recorded["linear2"]
    assert [n["node"] for n in data["nodes"]] == ["alpha", "beta", "gamma"]
    first = data["nodes"][0]
    assert first["count_a"] == first["count_b"] == 1
    assert first["delta"] == pytest.approx(first["total_b"] - first["total_a"])
    assert data["first_divergence"]["kind"] == "state"
    assert data["first_divergence"]["paths"] == ["x"]
    assert (data["ignored"], data["ignore"], data["strict"], data["warnings"]) == (
        [],
        [],
        False,
        [],
    )


def test_diff_of_runs_of_different_graphs_warns(run_cli: Cli, recorded: dict[str, str]) -> None:
    warning = (
        "run a is of 'linear' (stategraph) and run b of 'failing' (stategraph): they are runs of "
        "different graphs, compared step by step all the same"
    )
    result = run_cli("runs", "diff", recorded["linear"], recorded["failing"])
    assert result.stderr == f"warning: {warning}\n"
    assert "first divergence (path)" in result.stdout
    assert run_cli("runs", "diff", recorded["linear"], recorded["linear2"]).stderr == ""
    data = run_cli.json(
        "runs", "diff", recorded["linear"], recorded["failing"], command="runs diff"
    )
    assert data["warnings"] == [warning]


def test_diff_ignore_and_strict(run_cli: Cli, recorded: dict[str, str]) -> None:
    a, b = recorded["linear"], recorded["linear2"]  # x and y differ from the first step on
    out = run_cli("runs", "diff", a, b, "--ignore", "x", "--ignore", "y").stdout
    assert "no divergence: the same path, outcomes and states" in out
    assert out.splitlines()[-1] == "ignored: x (x, 3 values), y (y, 1 value)"
    out = run_cli("runs", "diff", a, b, "--ignore", "x").stdout
    assert "first divergence (state): the state after 'gamma' differs at y" in out
    data = run_cli.json("runs", "diff", a, b, "--ignore", "?", "--strict", command="runs diff")
    assert data["first_divergence"] is None
    assert data["ignore"] == ["?"] and data["strict"] is True
    assert data["ignored"] == [
        {"path": "x", "rule": "?", "count": 3},
        {"path": "y", "rule": "?", "count": 1},
    ]
    assert "give a path glob" in run_cli.error("runs", "diff", a, b, "--ignore", "", code=2)


def test_diff_steps_of_one_run_and_of_two(run_cli: Cli, recorded: dict[str, str]) -> None:
    linear, linear2 = recorded["linear"], recorded["linear2"]
    out = run_cli("runs", "diff", linear, "--steps", "1", "3").stdout
    assert out.splitlines() == [
        f"state of run {linear[:8]} (linear) after step 1 (alpha) -> after step 3 (gamma)",
        "~ x: 2 -> 20",
        "+ y = 21",
    ]
    # --ignore leaves out a key added (or removed) between the steps too
    out = run_cli("runs", "diff", linear, "--steps", "1", "3", "--ignore", "y").stdout
    assert "+ y = 21" not in out and "~ x: 2 -> 20" in out
    out = run_cli("runs", "diff", linear, linear2, "--steps", "2", "2").stdout
    assert out.splitlines() == [
        f"state after step 2 (beta) of run {linear[:8]} (linear) -> after step 2 (beta) of run "
        f"{linear2[:8]} (linear)",
        "~ x: 20 -> 60",
    ]
    assert run_cli("runs", "diff", linear, "--steps", "2", "2").stdout.endswith("no differences\n")
    data = run_cli.json("runs", "diff", linear[:6], "--steps", "1", "3", command="runs diff")
    assert data["a"]["run_id"] == data["b"]["run_id"] == linear
    assert "nodes" not in data and "first_divergence" not in data
    assert data["steps"] == {
        "step_a": 1,
        "step_b": 3,
        "node_a": "alpha",
        "node_b": "gamma",
        "changes": [
            {"path": "x", "kind": "changed", "old": 2, "new": 20},
            {"path": "y", "kind": "added", "old": None, "new": 21},
        ],
    }
    assert run_cli.error("runs", "diff", linear, "--steps", "1", "9") == (
        f"error: run {linear[:8]!r} has steps 1..3; step 9 is out of range"
    )
    assert "--steps" in run_cli.error("runs", "diff", linear, code=2)
    assert "numbered from 1" in run_cli.error("runs", "diff", linear, "--steps", "0", "2", code=2)


def test_diff_of_two_langgraph_runs_ignores_message_ids(
    tmp_path: Path, db: Path, run_cli: Cli
) -> None:
    pytest.importorskip("langgraph")
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, StateGraph
    from langgraph.graph.message import add_messages
    from typing_extensions import TypedDict

    # the functional form: LangGraph reads the reducer from a real annotation, not a string
    Chat = TypedDict("Chat", {"messages": Annotated[list[Any], add_messages]})  # noqa: UP013

    def bot(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(content="hi there")]}

    graph = StateGraph(Chat)
    graph.add_node("bot", bot)
    graph.set_entry_point("bot")
    graph.add_edge("bot", END)
    app = graph.compile()
    dbg = flowdbg.Debugger(record=True, db=db)
    try:
        dbg.attach(app)
        ids = []
        for _ in range(2):
            handle = dbg.start(app.invoke, {"messages": [HumanMessage(content="hello")]})
            assert handle.exception(timeout=T) is None
            ids.append(handle.run_id)
        assert dbg.flush(timeout=T)
    finally:
        dbg.close()
    out = run_cli("runs", "diff", *ids).stdout
    assert out.splitlines()[-2:] == [
        "no divergence: the same path, outcomes and states",
        "ignored: messages[*].id (message id, 2 values); --strict compares them",
    ]
    out = run_cli("runs", "diff", *ids, "--strict").stdout
    assert out.splitlines()[-1] == (
        "first divergence (state): the state after 'bot' differs at messages[0].id, messages[1].id"
    )


# ---------------------------------------------------------------------------- the database


def test_read_commands_find_the_database_in_a_parent_folder(
    graphs: Path, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLOWDBG_DB")
    (graphs / ".git").mkdir()  # the project's top: the search ends there
    Cli(graphs)("run", "graphs.py:app", "--input", '{"x": 1}')
    assert (graphs / ".flowdbg" / "flowdbg.db").exists()
    deep = graphs / "src" / "pkg"
    deep.mkdir(parents=True)
    out = Cli(deep)("runs", "ls").stdout
    assert [r[1] for r in rows(out)] == ["linear"]
    data = Cli(deep).json("runs", "ls", command="runs ls")
    assert data["db"] == str(graphs / ".flowdbg" / "flowdbg.db")
    assert not (deep / ".flowdbg").exists()
    elsewhere = graphs.parent / "elsewhere"
    (elsewhere / ".git").mkdir(parents=True)
    message = Cli(elsewhere).error("runs", "ls")
    assert message == (
        "error: no flowdbg database at "
        f"{elsewhere / '.flowdbg' / 'flowdbg.db'}; record a run first or pass --db"
    )


# ---------------------------------------------------------------------------- runs replay


def test_replay_prints_events_in_order(run_cli: Cli, recorded: dict[str, str]) -> None:
    out = run_cli("runs", "replay", recorded["linear"]).stdout
    lines = out.splitlines()
    assert lines[0] == f"replaying run {recorded['linear'][:8]} (linear): 6 events"
    events = [re.sub(r"^\+\s*[\d.]+s\s+", "", line).split(" (")[0] for line in lines[1:]]
    assert events == [
        "before  node 'alpha'", "after   node 'alpha'",
        "before  node 'beta'", "after   node 'beta'",
        "before  node 'gamma'", "after   node 'gamma'",
    ]  # fmt: skip
    assert "-> ['beta']" in lines[2]


def test_replay_options(run_cli: Cli, recorded: dict[str, str]) -> None:
    out = run_cli("runs", "replay", recorded["linear"], "--from-step", "3").stdout
    assert "2 events" in out and "'alpha'" not in out
    refused = run_cli.error("runs", "replay", recorded["linear"], "--from-step", "50")
    assert f"run {recorded['linear'][:8]} has no step 50; its steps are 1..3" in refused
    out = run_cli("runs", "replay", recorded["fan"], "--timed", "--speed", "1000x").stdout
    assert "14 events" in out  # five steps of fan and two of the nested run
    assert re.search(r"^\+\s*[\d.]+s\s+before  node 'inner1'", out, flags=re.M)  # nested
    out = run_cli("runs", "replay", recorded["failing"]).stdout
    assert re.search(r"error   node 'boom' \(step 2\) ValueError: boom at x=2$", out, flags=re.M)
    out = run_cli("runs", "replay", recorded["linear"], "--filter", "tool,llm").stdout
    assert "0 events" in out
    result = run_cli("runs", "replay", recorded["linear"], "--speed", "fast", code=2)
    assert "Invalid value for '--speed': 'fast' is not a speed; use e.g. 2x, 0.5x" in result.stderr
    result = run_cli("runs", "replay", recorded["linear"], "--filter", "nodes", code=2)
    assert "Invalid value for '--filter': unknown kind 'nodes'; use a comma-separated list of" in (
        result.stderr
    )


def test_replay_json(run_cli: Cli, recorded: dict[str, str]) -> None:
    data = run_cli.json("runs", "replay", recorded["failing"], command="runs replay")
    assert [(e["event"], e["node"]) for e in data["events"]] == [
        ("before", "ok"), ("after", "ok"), ("before", "boom"), ("error", "boom"),
    ]  # fmt: skip
    assert data["events"][0]["offset"] == 0
    assert data["events"][-1]["error"]["message"] == "boom at x=2"
    offsets = [e["offset"] for e in data["events"]]
    assert offsets == sorted(offsets)


def test_replay_shows_a_terminated_unit_as_terminated(run_cli: Cli, graphs: Path, db: Path) -> None:
    import sys

    sys.path.insert(0, str(graphs))
    try:
        import graphs as module

        dbg = flowdbg.Debugger(record=True, db=db)
        try:
            dbg.attach(module.app)
            dbg.break_after("beta")
            handle = dbg.start(module.app.invoke, {"x": 1})
            assert dbg.wait_for_stop(T) is not None
            dbg.terminate()  # at the end of beta: it is recorded as terminated
            assert isinstance(handle.exception(timeout=T), flowdbg.Terminated)
            assert dbg.flush(timeout=T)
            run_id = handle.run_id
            assert run_id is not None
        finally:
            dbg.close()
    finally:
        sys.path.remove(str(graphs))
        sys.modules.pop("graphs", None)
    out = run_cli("runs", "replay", run_id).stdout
    events = [re.sub(r"^\+\s*[\d.]+s\s+", "", line) for line in out.splitlines()[1:]]
    assert events[0].startswith("before      node 'alpha' (step 1)")
    assert events[1].startswith("after       node 'alpha' (step 1)")
    assert events[2].startswith("before      node 'beta' (step 2)")
    assert re.fullmatch(
        r"terminated  node 'beta' \(step 2\) \S+ "
        r"Terminated: the run was terminated by the debugger",
        events[3],
    )
    data = run_cli.json("runs", "replay", run_id, command="runs replay")
    last = data["events"][-1]
    assert (last["event"], last["status"], last["error"]["type"]) == (
        "terminated", "terminated", "Terminated",
    )  # fmt: skip


# ---------------------------------------------------------------------------- runs prune


def test_prune(run_cli: Cli, recorded: dict[str, str]) -> None:
    result = run_cli("runs", "prune", code=2)
    assert "say what to delete: --older-than WHEN and/or --keep N" in result.stderr
    result = run_cli("runs", "prune", "--keep", "1", input="n\n", code=1)
    assert "delete all but the newest 1 runs from " in result.stdout
    assert len(rows(run_cli("runs", "ls").stdout)) == 4
    out = run_cli("runs", "prune", "--older-than", "1d ago", "--yes").stdout
    assert re.fullmatch(r"deleted 0 runs from \S+\n", out)
    out = run_cli("runs", "prune", "--keep", "1", input="y\n").stdout
    assert re.search(r"^deleted 3 runs from \S+$", out, flags=re.M)
    assert [r[0] for r in rows(run_cli("runs", "ls").stdout)] == [recorded["fan"][:8]]


# ---------------------------------------------------------------------------- databases


def test_missing_database(run_cli: Cli, tmp_path: Path) -> None:
    line = run_cli.error("runs", "ls", "--db", str(tmp_path / "nothing.db"))
    assert "nothing.db" in line


def test_not_a_flowdbg_database(run_cli: Cli, tmp_path: Path) -> None:
    notes = tmp_path / "notes.db"
    notes.write_text("these are my notes, not a database\n" * 50, encoding="utf-8")
    for args in (["runs", "ls"], ["runs", "show", "x"], ["runs", "prune", "--keep", "1", "-y"]):
        line = run_cli.error(*args, "--db", str(notes))
        assert "notes.db" in line, line


def test_run_records_and_points_at_runs_show(run_cli: Cli, db: Path) -> None:
    result = run_cli("run", "graphs.py:app", "--input", '{"x": 2}')
    match = re.search(r"recorded to (\S+); look at it with: flowdbg runs show (\w{8})$",
                      result.stdout, flags=re.M)  # fmt: skip
    assert match is not None, result.stdout
    assert Path(match.group(1)).name == "flowdbg.db"
    data: Any = run_cli.json("runs", "show", match.group(2), command="runs show")
    assert data["run"]["input"] == {"x": 2}
    assert data["run"]["status"] == "completed"


def test_run_with_a_db_option_names_it_in_the_hint(run_cli: Cli, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    result = run_cli("run", "graphs.py:app", "--input", '{"x": 2}', "--db", str(other))
    assert f"--db {other}" in result.stdout
    assert other.exists()


# ---------------------------------------------------------------------------- written records


@pytest.fixture
def written(db: Path) -> dict[str, float]:
    """Runs written straight into the store: two with ids sharing a prefix, one a month old."""
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.store import open_store

    now = time.time()
    old = now - 30 * 86400
    runs = [
        RunRecord("abcd1111", "stategraph", "recent", status="completed", started_at=now - 60,
                  ended_at=now - 59, root_run_id="abcd1111"),
        RunRecord("abcd2222", "stategraph", "recent", status="completed", started_at=now - 50,
                  ended_at=now - 49, root_run_id="abcd2222"),
        RunRecord("0ld00000", "stategraph", "ancient", status="failed", started_at=old,
                  ended_at=old + 1, root_run_id="0ld00000"),
    ]  # fmt: skip
    steps = [
        StepRecord(r.run_id, 1, "only", started_at=r.started_at, ended_at=r.ended_at,
                   output={"n": 1}, state={"n": 1})
        for r in runs
    ]  # fmt: skip
    with open_store(db) as store:
        store.write_batch(runs=runs, steps=steps, ended=runs)
    return {"now": now, "old": old}


def test_diff_keeps_units_of_different_kinds_sharing_a_name_apart(run_cli: Cli, db: Path) -> None:
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.store import open_store

    units = {  # OpenAI Agents runs: the agent 'billing' and the handoff to it
        "aaaa1111": [("triage", "agent"), ("billing", "handoff"), ("billing", "agent")],
        "bbbb2222": [
            ("triage", "agent"),
            ("billing", "handoff"),
            ("billing", "agent"),
            ("billing", "agent"),
        ],
    }
    runs = [
        RunRecord(run_id, "openai_agents", "triage", status="completed", started_at=100.0 + n,
                  ended_at=101.0 + n, root_run_id=run_id)
        for n, run_id in enumerate(units)
    ]  # fmt: skip
    steps = [
        StepRecord(run_id, i, name, kind=kind, started_at=100.0 + i, ended_at=100.5 + i)
        for run_id, named in units.items()
        for i, (name, kind) in enumerate(named, 1)
    ]
    with open_store(db) as store:
        store.write_batch(runs=runs, steps=steps, ended=runs)
    out = run_cli("runs", "diff", "aaaa1111", "bbbb2222").stdout
    assert re.search(r"^billing \(handoff\)\s+1\s+1\s", out, flags=re.M), out
    assert re.search(r"^billing \(agent\)\s+1\s+2\s", out, flags=re.M), out
    assert re.search(r"^triage\s+1\s+1\s", out, flags=re.M), out  # no kind: no other
    data = run_cli.json("runs", "diff", "aaaa1111", "bbbb2222", command="runs diff")
    assert [(n["node"], n["kind"], n["count_a"], n["count_b"]) for n in data["nodes"]] == [
        ("triage", "agent", 1, 1),
        ("billing", "handoff", 1, 1),
        ("billing", "agent", 1, 2),
    ]
    out = run_cli("runs", "show", "bbbb2222", "--view", "stats").stdout
    assert re.search(r"^billing \(agent\)\s+2\s", out, flags=re.M), out


def test_ambiguous_and_short_prefixes(run_cli: Cli, written: dict[str, float]) -> None:
    line = run_cli.error("runs", "show", "abcd")
    assert "run id prefix 'abcd' is ambiguous" in line and "'abcd1111', 'abcd2222'" in line
    line = run_cli.error("runs", "show", "ab")
    assert "give at least 4 characters of a run id" in line
    out = run_cli("runs", "show", "abcd2").stdout
    assert out.startswith("run abcd2222  started ")


def test_time_filters_and_prune_by_age(run_cli: Cli, written: dict[str, float]) -> None:
    assert [r[0] for r in rows(run_cli("runs", "ls", "--until", "1d ago").stdout)] == ["0ld00000"]
    assert [r[0] for r in rows(run_cli("runs", "ls", "--since", "1h ago").stdout)] == [
        "abcd2222",
        "abcd1111",
    ]
    assert [r[1] for r in rows(run_cli("runs", "ls", "--name", "anc*").stdout)] == ["ancient"]
    out = run_cli("runs", "prune", "--older-than", "7d ago", "--yes").stdout
    assert re.fullmatch(r"deleted 1 run from \S+\n", out)
    assert [r[0] for r in rows(run_cli("runs", "ls").stdout)] == ["abcd2222", "abcd1111"]
