"""The command line on LangGraph targets: the LangGraph demo, ``flowdbg run`` on an agent file,
``graph inspect``, and reading the recorded runs back."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

from click.testing import CliRunner, Result

from flowdbg.cli import cli

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "langgraph_agent.py"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "flowdbg.db"
    monkeypatch.setenv("FLOWDBG_DB", str(path))
    monkeypatch.setenv("FLOWDBG_HISTORY", str(tmp_path / "history"))
    return path


def flowdbg(*args: str, input: str | None = None, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.stderr, result.stderr
    return result


def in_order(out: str, expected: list[str]) -> None:
    position = 0
    for line in expected:
        found = out.find(line, position)
        assert found >= 0, f"{line!r} missing (after position {position}):\n{out}"
        position = found + len(line)


def test_langgraph_demo_holds_the_dangerous_call_and_rewrites_it(db: Path) -> None:
    out = flowdbg("demo", "--framework", "langgraph").stdout
    in_order(
        out,
        [
            "$ flowdbg run flowdbg.adapters.langgraph._demo:build_graph --stop-on-entry",
            "stop-1: entry at before node 'agent' (step 1, superstep 1)",
            "(flowdbg) l",
            "[agent]",
            "(flowdbg) tool shell ~rm\\s+-rf",
            "(flowdbg) c",
            "breakpoint [bp-1] at before tool 'tools/shell'",
            "(flowdbg) p cmd",
            "'rm -rf ~/.cache/travel'",
            "(flowdbg) p state:messages[-1].tool_calls",
            "'search_flights'",
            "(flowdbg) set cmd = 'ls ~/.cache/travel'",
            "(applied to the input of 'shell' when it resumes)",
            "run completed; result:",
            '"content": "$ ls ~/.cache/travel (done)"',
            "travel-agent (langgraph) completed: 7 steps: 3 over 2 nodes, 4 calls (2 llm, 2 tool)",
        ],
    )
    assert out.count("breakpoint [bp-1]") == 1  # search_flights never stopped
    assert "$ rm -rf" not in out
    assert "unread" not in out  # the tour types every command while the run is held
    assert re.search(r"^5\s+└ shell\s+tool\s+running", out, flags=re.M)  # log at the stop
    match = re.search(r"look at it with: flowdbg runs show (\w{8})$", out, flags=re.M)
    assert match is not None
    shown = flowdbg("runs", "show", match.group(1)).stdout
    assert re.search(r"^5\s+└ shell\s+tool\s+completed", shown, flags=re.M), shown
    assert re.search(r"^2\s+└ model\s+llm\s+completed", shown, flags=re.M), shown


def test_run_an_agent_file_with_a_node_breakpoint(db: Path, tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    shutil.copy(EXAMPLE, agent)
    result = flowdbg(
        "run",
        f"{agent}:app",
        "--input",
        json.dumps({"messages": [["user", "hi"]]}),
        "-b",
        "tools",
        input="p messages[-1].tool_calls[1].args\nn\nc\n",
    )
    in_order(
        result.stdout,
        [
            "set bp-1 node 'tools' before (0 hits)",
            "stop-1: breakpoint [bp-1] at before node 'tools' (step 3, superstep 2)",
            "{'cmd': 'rm -rf ~/.cache/travel'}",
            "(flowdbg) n",
            "step at before node 'agent' (step 6, superstep 3)",
            "run completed; result:",
        ],
    )
    run_id = re.search(r"flowdbg runs show (\w{8})", result.stdout)
    assert run_id is not None
    state = flowdbg("runs", "state", run_id.group(1), "--step", "3", "--json").stdout
    data = json.loads(state)["data"]
    assert data["step"] == 3
    messages = next(key for key in data["keys"] if key["key"] == "messages")
    assert messages["size"] == 4  # the question, the call, two tool results


def test_graph_inspect_a_langgraph_agent(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    shutil.copy(EXAMPLE, agent)
    data = json.loads(flowdbg("graph", "inspect", f"{agent}:app", "--json").stdout)["data"]
    assert data["adapter"] == "langgraph"
    graph = data["graph"]
    assert [node["name"] for node in graph["nodes"]] == ["agent", "tools"]
    assert {"source": "tools", "target": "agent"} in graph["edges"]
    (conditional,) = graph["conditional_edges"]
    assert conditional["source"] == "agent"
    assert conditional["targets"] == ["__end__", "tools"]


def test_the_example_session_runs(tmp_path: Path) -> None:
    env = {**os.environ, "FLOWDBG_DB": str(tmp_path / "example.db"), "LANGSMITH_TRACING": "false"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    in_order(
        out,
        [
            "set bp-1 tool 'shell'",
            "stopped: stop-1: breakpoint [bp-1] at before tool 'tools/shell'",
            "the command: 'rm -rf ~/.cache/travel'",
            "edit: cmd = 'ls ~/.cache/travel'",
            "tool: $ ls ~/.cache/travel (done)",
            "travel-agent (langgraph) completed: 7 steps: 3 over 2 nodes, 4 calls (2 llm, 2 tool)",
            "look at it later with: flowdbg runs show ",
        ],
    )


FUNCTIONAL = """\
from langgraph.func import entrypoint, task


@task
def double(x: int) -> int:
    return x * 2


def helper(x):
    return double(x)


@entrypoint()
def flow(x: int) -> int:
    return double(x).result() + 1
"""


def test_an_entrypoint_lists_its_tasks_and_breaks_on_them(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "flow_app.py").write_text(FUNCTIONAL, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    described = json.loads(flowdbg("graph", "inspect", "flow_app.py:flow", "--json").stdout)
    graph = described["data"]["graph"]
    assert graph["open"] is True
    assert [(n["name"], n["tasks"]) for n in graph["nodes"]] == [("flow", ["double"])]
    assert "flow  (tasks: double)" in flowdbg("graph", "inspect", "flow_app.py:flow").stdout
    out = flowdbg(
        "run", "flow_app.py:flow", "--input", "3", "-b", "double", input="p input:x\nc\n"
    ).stdout
    in_order(
        out,
        [
            "set bp-1 node 'double' before",
            "stop-1: breakpoint [bp-1] at before node 'flow/double' (step 2",
            "(flowdbg) p input:x",
            "3",
            "run completed; result:",
            "7",
        ],
    )
    # a name the description cannot know may still be a task's: set, with a note
    out = flowdbg("run", "flow_app.py:flow", "--input", "3", "-b", "elsewhere").stdout
    assert (
        "note: 'elsewhere' is none of the known nodes and tasks (flow, double); the breakpoint "
        "waits for a unit of that name" in out
    )
    assert "run completed" in out


HITL = """\
from typing import TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    x: int
    answer: str


def ask(state):
    return {"answer": interrupt("name?")}


builder = StateGraph(State)
builder.add_node("ask", ask)
builder.add_edge(START, "ask")
builder.add_edge("ask", END)
app = builder.compile(checkpointer=InMemorySaver())
"""


def test_a_checkpointed_graph_runs_on_a_thread_and_ends_suspended_at_an_interrupt(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hitl_app.py").write_text(HITL, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    # without a thread LangGraph refuses the run; the error says how to give one
    result = flowdbg("run", "hitl_app.py:app", "--input", '{"x": 1}', code=1)
    assert "(give the run a checkpointer thread with --thread ID)" in result.stderr
    out = flowdbg("run", "hitl_app.py:app", "--input", '{"x": 1}', "--thread", "t1").stdout
    assert "run suspended: it waits for the framework's resume" in out
    assert '"value": "name?"' in out
    assert "LangGraph (langgraph) suspended: 1 step over 1 node" in out
    listed = json.loads(flowdbg("runs", "ls", "--status", "suspended", "--json").stdout)
    assert [run["status"] for run in listed["data"]["runs"]] == ["suspended"]
    (suspended,) = listed["data"]["runs"]
    assert suspended["tags"] == {"thread_id": "t1"}  # the thread to --resume it on
    shown = flowdbg("runs", "show", suspended["run_id"][:8]).stdout
    assert "thread_id=t1" in shown.splitlines()[0]
    # --config takes the whole config; --thread adds its thread id to it
    config = '{"configurable": {"thread_id": "t2"}, "tags": ["cli"]}'
    out = flowdbg("run", "hitl_app.py:app", "--input", '{"x": 2}', "--config", config).stdout
    assert "run suspended" in out
    bad = flowdbg("run", "hitl_app.py:app", "--config", "[1]", code=1)
    assert bad.stderr == (
        "error: --config must be a JSON object, not list; e.g. --config "
        """'{"configurable": {"thread_id": "1"}}'\n"""
    )
    config = '{"configurable": 1}'
    bad = flowdbg("run", "hitl_app.py:app", "--config", config, "--thread", "t3", code=1)
    assert bad.stderr == (
        "error: --config: its 'configurable' must be a JSON object for --thread to set "
        "thread_id in it\n"
    )


def test_resume_goes_on_from_the_interrupt_under_breakpoints(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langgraph.checkpoint.sqlite", reason="langgraph-checkpoint-sqlite")
    persistent = HITL.replace(
        "from langgraph.checkpoint.memory import InMemorySaver",
        "import sqlite3\n\nfrom langgraph.checkpoint.sqlite import SqliteSaver",
    ).replace(
        "checkpointer=InMemorySaver()",
        'checkpointer=SqliteSaver(sqlite3.connect("checkpoints.db", check_same_thread=False))',
    )
    (tmp_path / "hitl_sql.py").write_text(persistent, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = flowdbg("run", "hitl_sql.py:app", "--input", '{"x": 1}', "--thread", "t1").stdout
    assert "run suspended" in out
    out = flowdbg(
        "run",
        "hitl_sql.py:app",
        "--thread",
        "t1",
        "--resume",
        '"bob"',
        "-b",
        "ask:after",
        input="p answer\nc\n",
    ).stdout
    in_order(
        out,
        [
            "stop-1: breakpoint [bp-1] at after node 'ask'",
            "(flowdbg) p answer",
            "'bob'",
            "run completed; result:",
            '"answer": "bob"',
        ],
    )
    usage = flowdbg("run", "hitl_sql.py:app", "--resume", '"x"', "--input", "{}", code=2)
    assert "give --resume or --input/--input-file, not both" in usage.output
    bad = flowdbg("run", "hitl_sql.py:app", "--thread", "t1", "--resume", "bob", code=1)
    assert "error: --resume is not valid JSON" in bad.stderr


ASYNC_APP = """\
from typing import TypedDict

from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph


class State(TypedDict):
    x: int


async def inc(state):
    return {"x": state["x"] + 1}


builder = StateGraph(State)
builder.add_node("inc", inc)
builder.add_edge(START, "inc")
builder.add_edge("inc", END)
app = builder.compile()


@task
async def triple(x: int) -> int:
    return x * 3


@entrypoint()
async def flow(x: int) -> int:
    return await triple(x)
"""


def test_graphs_with_async_only_nodes_run_under_ainvoke(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "async_app.py").write_text(ASYNC_APP, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = flowdbg("run", "async_app.py:app", "--input", '{"x": 1}', "-b", "inc", input="p x\nc\n")
    in_order(out.stdout, ["stop-1: breakpoint [bp-1] at before node 'inc'", "(flowdbg) p x", "1"])
    in_order(out.stdout, ["run completed; result:", '"x": 2'])
    assert "flow  (tasks: triple)" in flowdbg("graph", "inspect", "async_app.py:flow").stdout
    out = flowdbg("run", "async_app.py:flow", "--input", "2", "-b", "triple", input="c\n")
    in_order(out.stdout, ["at before node 'flow/triple'", "run completed; result:", "6"])


def test_resume_refuses_a_thread_with_nothing_to_resume(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langgraph.checkpoint.sqlite", reason="langgraph-checkpoint-sqlite")
    persistent = HITL.replace(
        "from langgraph.checkpoint.memory import InMemorySaver",
        "import sqlite3\n\nfrom langgraph.checkpoint.sqlite import SqliteSaver",
    ).replace(
        "checkpointer=InMemorySaver()",
        'checkpointer=SqliteSaver(sqlite3.connect("checkpoints.db", check_same_thread=False))',
    )
    (tmp_path / "hitl_sql.py").write_text(persistent, encoding="utf-8")
    (tmp_path / "async_app.py").write_text(ASYNC_APP, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    cases = [
        (["hitl_sql.py:app"], "needs the checkpointer thread of the suspended run: give it"),
        (["hitl_sql.py:app", "--thread", "new"], "thread 'new' has no suspended run to resume"),
        (["async_app.py:app", "--thread", "t"], "graph 'LangGraph' has no checkpointer"),
    ]
    for args, message in cases:
        result = flowdbg("run", *args, "--resume", '"x"', code=1)
        assert "error: --resume: " in result.stderr and message in result.stderr, result.stderr
    on_t = ("run", "hitl_sql.py:app", "--thread", "t")
    assert "run suspended" in flowdbg(*on_t, "--input", "{}").stdout
    assert "run completed" in flowdbg(*on_t, "--resume", '"a"').stdout
    done = flowdbg("run", "hitl_sql.py:app", "--thread", "t", "--resume", '"b"', code=1)
    assert "thread 't' has no suspended run to resume (its last run completed)" in done.stderr


def test_the_adapter_runs_graphs_with_run_options(tmp_path: Path) -> None:
    """The contract ``flowdbg run`` uses, called directly: a thread, a resume, refusals."""
    import asyncio

    from flowdbg.adapter import RunOptions
    from flowdbg.adapters.langgraph import LangGraphAdapter
    from flowdbg.errors import RunOptionError

    space: dict[str, Any] = {}
    exec(compile(HITL + ASYNC_APP.replace("app =", "async_app ="), "hitl", "exec"), space)
    app, async_app = space["app"], space["async_app"]
    adapter = LangGraphAdapter()
    on_t = RunOptions(extra={"thread": "t"})
    assert adapter.is_async(app) is False and adapter.is_async(async_app) is True
    suspended = adapter.invoke(app, {"x": 1}, on_t)
    assert [i.value for i in suspended["__interrupt__"]] == ["name?"]
    done = adapter.invoke(app, None, RunOptions(resume="bob", extra={"thread": "t"}))
    assert done == {"x": 1, "answer": "bob"}
    with pytest.raises(RunOptionError) as refused:
        adapter.invoke(app, None, RunOptions(resume="again", extra={"thread": "t"}))
    assert str(refused.value) == (
        "--resume: thread 't' has no suspended run to resume (its last run completed)"
    )
    with pytest.raises(RunOptionError, match=r"^--resume: it needs the checkpointer thread"):
        adapter.invoke(app, None, RunOptions(resume="bob"))
    with pytest.raises(RunOptionError, match=r"^--config: its 'configurable' must be a JSON obj"):
        adapter.check_run(app, RunOptions(config={"configurable": 1}, extra={"thread": "t"}))
    with pytest.raises(RunOptionError, match=r"^--prefix: adapter 'langgraph' takes no such"):
        adapter.check_run(app, RunOptions(extra={"prefix": "p"}))
    # a config given with a thread keeps its own keys
    config = {"configurable": {"user": "ann"}, "tags": ["cli"]}
    adapter.invoke(app, {"x": 2}, RunOptions(config=config, extra={"thread": "u"}))
    assert app.get_state({"configurable": {"thread_id": "u"}}).values == {"x": 2}
    assert config == {"configurable": {"user": "ann"}, "tags": ["cli"]}  # not changed
    assert asyncio.run(adapter.ainvoke(async_app, {"x": 1})) == {"x": 2}
    # a graph with a checkpointer run without a thread: the hint says how to give one
    with pytest.raises(ValueError) as failed:
        adapter.invoke(app, {"x": 1})
    hint = adapter.failure_hint(app, failed.value, RunOptions())
    assert hint == "give the run a checkpointer thread with --thread ID"
    assert adapter.failure_hint(app, failed.value, on_t) is None


def test_the_demos_are_listed_with_what_they_show(db: Path) -> None:
    out = " ".join(flowdbg("demo", "--help").stdout.split())
    # (other installed adapters with a demo are listed after these)
    assert re.search(r"--framework \[stategraph\|langgraph[]|]", out)
    assert "langgraph a LangGraph agent held before an rm -rf tool call" in out
    assert "stategraph a support-ticket graph whose route changes" in out
    # the target earlier versions printed still runs the demo's graph
    out = flowdbg(
        "run", "flowdbg.cli._demo_langgraph:build_graph", "--input", '{"messages": []}'
    ).stdout
    assert "travel-agent (langgraph) completed" in out
