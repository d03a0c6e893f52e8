"""The terminal debugger in a real pseudo-terminal (pexpect): prompt, commands, readline tab
completion, quitting; and ``python -m flowdbg.cli`` as a subprocess with piped commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pexpect = pytest.importorskip("pexpect")

if sys.platform == "win32":  # pragma: no cover
    pytest.skip("pexpect.spawn needs a POSIX pseudo-terminal", allow_module_level=True)

PROMPT = "(flowdbg) "
T = 20


def env(tmp_path: Path) -> dict[str, str]:
    values = dict(os.environ)
    values.update(
        NO_COLOR="1",
        TERM="dumb",
        COLUMNS="100",
        FLOWDBG_HISTORY=str(tmp_path / "history"),
        FLOWDBG_DB=str(tmp_path / "flowdbg.db"),
        HOME=str(tmp_path),
        PYTHONIOENCODING="utf-8",
    )
    values.pop("FLOWDBG_DEBUG", None)
    return values


def spawn(tmp_path: Path, cwd: Path, *args: str) -> Any:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "flowdbg.cli", *args],
        cwd=str(cwd),
        env=env(tmp_path),
        encoding="utf-8",
        timeout=T,
        dimensions=(40, 120),
    )
    return child


def test_terminal_session_with_tab_completion(tmp_path: Path, graphs: Path) -> None:
    child = spawn(
        tmp_path, graphs, "run", "graphs.py:build_support", "-b", "classify:after", "--no-record",
        "--input", '{"ticket": "money back"}',
    )  # fmt: skip
    try:
        child.expect_exact("stop-1: breakpoint [bp-1] at after node 'classify'")
        child.expect_exact(PROMPT)
        child.sendline("p intent")
        child.expect_exact("'refund'")
        child.expect_exact(PROMPT)
        # tab completes the node name: "b ans<TAB>" becomes "b answer "
        child.send("b ans\t")
        child.expect_exact("b answer ")
        child.sendline("")
        child.expect_exact("set bp-2 node 'answer' before (0 hits)")
        child.expect_exact(PROMPT)
        child.send("set inte\t")
        child.expect_exact("set intent")
        child.sendline(' = "question"')
        child.expect_exact("intent = 'question'  (applied to the output of 'classify'")
        child.expect_exact(PROMPT)
        child.sendline("nonsense")
        child.expect_exact("unknown command 'nonsense'; type h for help")
        child.expect_exact(PROMPT)
        child.sendline("c")
        child.expect_exact("stop-2: breakpoint [bp-2] at before node 'answer'")
        child.expect_exact(PROMPT)
        child.sendline("c")
        child.expect_exact("run completed; result:")
        child.expect_exact('"reply": "here is how"')
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    history = (tmp_path / "history").read_text(encoding="utf-8").splitlines()
    # readline keeps one of two equal lines in a row
    assert history == ["p intent", "b answer ", 'set intent = "question"', "nonsense", "c"]


def test_terminal_quit_terminates_the_run(tmp_path: Path, graphs: Path) -> None:
    child = spawn(tmp_path, graphs, "run", "graphs.py:app", "-b", "beta", "--input", '{"x": 1}')
    try:
        child.expect_exact(PROMPT)
        child.sendline("q")
        child.expect_exact("run terminated (quit)")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 1


def test_piped_commands_to_python_m(tmp_path: Path, graphs: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "flowdbg.cli", "run", "graphs.py:app", "-b", "beta", "--no-record",
         "--input", '{"x": 1}'],
        input="p x\nc\n", capture_output=True, text=True, cwd=graphs, env=env(tmp_path),
        timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"{PROMPT}p x\n2\n{PROMPT}c\n" in proc.stdout
    assert "run completed; result:" in proc.stdout
    assert proc.stderr == ""


def test_python_m_help(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "flowdbg.cli", "--help"],
        capture_output=True, text=True, env=env(tmp_path), timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0
    assert proc.stdout.startswith("Usage: flowdbg [OPTIONS] COMMAND [ARGS]...")
    for command in ("run", "runs", "graph", "adapters", "demo"):
        assert f"\n  {command} " in proc.stdout
