"""The command line on LlamaIndex workflows: the demo, ``flowdbg run`` on a workflow file with a
step breakpoint, ``graph inspect``, the example session, and reading the recorded runs back."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("workflows", reason="the llamaindex extra is not installed")

from click.testing import CliRunner, Result

from flowdbg.cli import cli

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "llamaindex_workflow.py"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "flowdbg.db"
    monkeypatch.setenv("FLOWDBG_DB", str(path))
    monkeypatch.setenv("FLOWDBG_HISTORY", str(tmp_path / "history"))
    monkeypatch.chdir(tmp_path)  # flowdbg run saves breakpoints next to where it runs
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


def test_llamaindex_demo_holds_the_last_step_and_fixes_its_event(db: Path) -> None:
    out = flowdbg("demo", "--framework", "llamaindex").stdout
    in_order(
        out,
        [
            "flowdbg run flowdbg.adapters.llamaindex._demo:build_workflow --stop-on-entry",
            "stop-1: entry at before node 'plan' (step 1)",
            "(flowdbg) b summarize",
            "breakpoint [bp-1] at before node 'summarize'",
            "(flowdbg) p notes",
            "'flowdbg: ERROR: search backend timed out'",
            "(flowdbg) p state:",
            "{'topic': 'flowdbg', 'searches': 3}",
            "(flowdbg) log",
            "Research (llamaindex) running:",
            "search",
            "run completed; result:",
            "so that a run can be looked at and fixed while it runs",
        ],
    )
    assert "ERROR: search backend" not in out.split("run completed; result:")[1]


def test_run_a_workflow_file_with_a_step_breakpoint(db: Path, tmp_path: Path) -> None:
    target = tmp_path / "research.py"
    shutil.copy(EXAMPLE, target)
    result = flowdbg(
        "run",
        f"{target}:wf",
        "--input",
        '{"topic": "x"}',
        "-b",
        "summarize",
        input="p notes[1]\nset notes = ['just this']\nc\n",
    )
    in_order(
        result.stdout,
        [
            "set bp-1 node 'summarize' before (0 hits)",
            "stop-1: breakpoint [bp-1] at before node 'summarize'",
            "timeout (60 s) does not run while flowdbg holds one of its steps",
            "(flowdbg) p notes[1]",
            "'x: a debugger for agent and workflow frameworks'",
            "run completed; result:",
            '"x, in 1 notes: just this"',
        ],
    )
    run_id = re.search(r"flowdbg runs show (\w{8})", result.stdout)
    assert run_id is not None
    steps = json.loads(flowdbg("runs", "steps", run_id.group(1), "--json").stdout)["data"]
    rows = steps["steps"] if isinstance(steps, dict) else steps
    nodes = [row["node"] for row in rows]
    assert nodes[0] == "plan" and nodes[-1] == "summarize"
    assert nodes.count("search") == 3
    first = rows[0]
    assert first["decision"] == {"search": "Query"}


def test_a_run_input_that_is_not_an_object_is_refused(db: Path, tmp_path: Path) -> None:
    target = tmp_path / "research.py"
    shutil.copy(EXAMPLE, target)
    result = flowdbg("run", f"{target}:wf", "--input", "3", code=1)
    # one line of error, before anything runs
    assert result.output.strip().splitlines() == [
        "error: --input: a LlamaIndex workflow starts from keyword arguments (the start "
        """event's fields): give a JSON object such as '{"topic": "x"}'"""
    ]
    assert not db.exists() or "no runs" in flowdbg("runs", "ls").output


def test_graph_inspect_a_workflow(tmp_path: Path) -> None:
    target = tmp_path / "research.py"
    shutil.copy(EXAMPLE, target)
    data = json.loads(flowdbg("graph", "inspect", f"{target}:wf", "--json").stdout)["data"]
    assert data["adapter"] == "llamaindex"
    graph = data["graph"]
    assert sorted(node["name"] for node in graph["nodes"]) == [
        "collect",
        "plan",
        "search",
        "summarize",
    ]
    search = next(node for node in graph["nodes"] if node["name"] == "search")
    assert search["accepts"] == ["Query"] and search["returns"] == ["Note"]
    assert search["workers"] == 3
    assert graph["entry"] == ["plan"]
    assert {"source": "search", "target": "collect"} in graph["edges"]
    assert {"source": "summarize", "target": "__end__"} in graph["edges"]


def test_the_example_session_runs(tmp_path: Path) -> None:
    env = {**os.environ, "FLOWDBG_DB": str(tmp_path / "example.db")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    in_order(
        done.stdout,
        [
            "set bp-1 node 'summarize' before",
            "stopped: stop-1: breakpoint [bp-1] at before node 'summarize'",
            "the context store: {'topic': 'flowdbg', 'aspects': 3}",
            "the workflow finished: flowdbg, in 2 notes:",
            "Research (llamaindex) completed",
        ],
    )
