"""``flowdbg demo``: the scripted tour prints the session a user would type."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from cli_helpers import Cli


def test_demo_tour(run_cli: Cli, db: Path) -> None:
    out = run_cli("demo").stdout
    expected = [
        "$ flowdbg run flowdbg.cli._demo:build_graph --stop-on-entry --input ",
        "stop-1: entry at before node 'classify' (step 1, superstep 1)",
        "(flowdbg) l",
        "  START  ->  [classify]  ->  refund?, answer?",
        "(flowdbg) b classify:after",
        "set bp-1 node 'classify' after (0 hits)",
        "(flowdbg) c",
        "stop-2: breakpoint [bp-1] at after node 'classify' (step 1, superstep 1)",
        "  next: ['refund']",
        "(flowdbg) p intent",
        "'refund'",
        "(flowdbg) diff",
        "  + intent = 'refund'",
        '(flowdbg) set intent = "question"',
        "intent = 'question'  (applied to the output of 'classify' when it resumes)",
        "(flowdbg) n",
        "stop-3: step at before node 'answer' (step 2, superstep 2)",
        "  classify?  ->  [answer]  ->  sign",
        "(flowdbg) log",
        "(flowdbg) c",
        "run completed; result:",
        '"reply": "Here is how to fix it: My app crashes on start, I want my money... -- Support',
        "support (stategraph) completed: 3 steps over 3 nodes",
    ]
    position = 0
    for line in expected:
        found = out.find(line, position)
        assert found >= 0, f"{line!r} missing (after position {position}):\n{out}"
        position = found + len(line)
    assert "'refund'" not in out.split("run completed")[1].split("support (stategraph)")[0]
    match = re.search(r"^recorded to (\S+); look at it with: flowdbg runs show (\w{8})$",
                      out, flags=re.M)  # fmt: skip
    assert match is not None
    shown = run_cli("runs", "show", match.group(2)).stdout
    assert re.search(r"^2\s+answer\s+node\s+completed", shown, flags=re.M)


def test_demo_interactive_reads_the_commands(run_cli: Cli, db: Path, tmp_path: Path) -> None:
    other = tmp_path / "demo.db"
    result = run_cli("demo", "--interactive", "--db", str(other), input="p ticket\nq\n", code=1)
    assert "# your turn: try l, b classify:after" in result.stdout
    assert "(flowdbg) p ticket\n'My app crashes on start, I want my money back or a fix'" in (
        result.stdout
    )
    assert "run terminated (quit)" in result.stdout
    assert f"--db {other}" in result.stdout


@pytest.mark.skipif(
    importlib.util.find_spec("langgraph") is not None, reason="LangGraph is installed here"
)
def test_langgraph_demo_without_langgraph_says_what_to_install(run_cli: Cli, db: Path) -> None:
    message = run_cli.error("demo", "--framework", "langgraph")
    assert "the langgraph demo cannot run here: adapter 'langgraph' needs langgraph" in message
    assert "pip install 'flowdbg[langgraph]'" in message


def test_the_commands_shown_name_flowdbg_as_it_was_run(
    run_cli: Cli, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as the README has it run: .venv/bin/flowdbg demo
    script = tmp_path / "project" / ".venv" / "bin" / "flowdbg"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [".venv/bin/flowdbg", "demo"])
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    out = run_cli("demo").stdout
    assert out.startswith("$ .venv/bin/flowdbg run flowdbg.cli._demo:build_graph --stop-on-entry ")
    assert re.search(r"look at it with: \.venv/bin/flowdbg runs show \w{8}$", out, flags=re.M)

    # the same script found on PATH: plain flowdbg works there
    monkeypatch.setenv("PATH", str(script.parent))
    out = run_cli("demo").stdout
    assert out.startswith("$ flowdbg run flowdbg.cli._demo:build_graph")
    assert re.search(r"look at it with: flowdbg runs show \w{8}$", out, flags=re.M)


def test_the_commands_shown_name_flowdbg_under_python_m(
    run_cli: Cli, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["/usr/lib/python3/site-packages/flowdbg/cli/__main__.py"])
    out = run_cli("demo").stdout
    assert out.startswith("$ flowdbg run ")
