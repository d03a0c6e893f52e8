"""``flowdbg serve`` and ``flowdbg run --serve``, as a user starts them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import _server_required  # noqa: F401  (skips the module without the server extra)
import httpx
import pytest
from click.testing import CliRunner

import flowdbg.server
from flowdbg.cli import make_cli

ROOT = Path(__file__).resolve().parents[2]
URL = re.compile(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)")


def _serve(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "FLOWDBG_DB": str(tmp_path / "serve.db"), "PYTHONUNBUFFERED": "1"}
    env.pop("FLOWDBG_TOKEN", None)
    return subprocess.Popen(
        [sys.executable, "-m", "flowdbg.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def _url(proc: subprocess.Popen[str]) -> tuple[str, str, list[str]]:
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        found = URL.search(line)
        if found:
            return found.group(1), found.group(2), lines
    raise AssertionError(f"no URL printed: {lines} {proc.stderr.read() if proc.stderr else ''}")


def test_serve_prints_the_url_with_its_token_and_serves_the_target(tmp_path: Path) -> None:
    proc = _serve(tmp_path, "examples/quickstart.py:build_graph()", "-b", "classify:after")
    try:
        base, token, lines = _url(proc)
        assert any("set bp-1" in line for line in lines)
        assert httpx.get(base + "/status").status_code == 401
        with httpx.Client(base_url=base, params={"token": token}, timeout=30) as c:
            assert c.get("/target").json()["target"] == "examples/quickstart.py:build_graph()"
            c.post("/runs", json={"input": {"ticket": "I want a refund"}})
            stop = c.post("/wait", params={"timeout": 20}).json()["stop"]
            assert stop["location"]["node"] == "classify"
            assert stop["output"]["intent"] == "refund"
            c.post(f"/stops/{stop['id']}/set", json={"path": "intent", "value": "question"})
            c.post(f"/stops/{stop['id']}/continue")
            assert c.post("/wait", params={"timeout": 20}).json()["outcome"] == "ended"
            run = c.get("/records/runs").json()["runs"][0]
            steps = c.get(f"/records/runs/{run['run_id']}/steps").json()["steps"]
            assert [s["node"] for s in steps] == ["classify", "answer", "sign"]
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped serving" in out


def test_serve_refuses_a_public_bind_without_a_token(tmp_path: Path) -> None:
    proc = _serve(tmp_path, "examples/quickstart.py:build_graph()", "--host", "0.0.0.0")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "refusing to listen on '0.0.0.0' without a token" in err


def test_serve_without_the_server_packages_says_how_to_install_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(flowdbg.server, "_PACKAGES", ("flowdbg_no_such_package",))
    result = CliRunner().invoke(make_cli(), ["serve", "examples/quickstart.py:build_graph()"])
    assert result.exit_code == 1
    assert "pip install 'flowdbg[server]'" in result.output


def test_debugger_serve_without_the_packages_raises_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(flowdbg.server, "_PACKAGES", ("flowdbg_no_such_package",))
    with (
        flowdbg.Debugger(record=False) as dbg,
        pytest.raises(flowdbg.server.ServerUnavailable) as e,
    ):
        dbg.serve()
    assert "flowdbg_no_such_package" in str(e.value) and "flowdbg[server]" in str(e.value)


def _run_serve(tmp_path: Path, *breaks: str) -> subprocess.Popen[str]:
    """``flowdbg run --serve`` of the quick start stopping at ``breaks``, its stdin a pipe."""
    env = {**os.environ, "FLOWDBG_DB": str(tmp_path / "run.db"), "PYTHONUNBUFFERED": "1"}
    env["FLOWDBG_HISTORY"] = str(tmp_path / "history")
    target = ["examples/quickstart.py:build_graph()", "--input", '{"ticket": "refund please"}']
    options = [arg for node in breaks for arg in ("-b", node)]
    options += ["--serve", "--no-saved-breakpoints"]
    return subprocess.Popen(
        [sys.executable, "-m", "flowdbg.cli", "run", *target, *options],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def test_run_serve_serves_the_terminal_session(tmp_path: Path) -> None:
    proc = _run_serve(tmp_path, "sign")
    try:
        base, token, _ = _url(proc)
        with httpx.Client(base_url=base, params={"token": token}, timeout=30) as c:
            stop: Any = c.post("/wait", params={"timeout": 20}).json()["stop"]
            assert stop["location"]["node"] == "sign"
        assert proc.stdin is not None
        proc.stdin.write("c\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "completed" in out


def test_run_serve_prompt_goes_on_when_a_client_resumes_its_stop(tmp_path: Path) -> None:
    proc = _run_serve(tmp_path, "classify", "sign")
    try:
        base, token, lines = _url(proc)
        assert proc.stdout is not None and proc.stdin is not None

        def read_until(text: str) -> None:
            for line in proc.stdout:  # type: ignore[union-attr]
                lines.append(line)
                if text in line:
                    return
            raise AssertionError(f"{text!r} never printed: {''.join(lines)}")

        read_until("stop-1: breakpoint [bp-1] at before node 'classify'")
        with httpx.Client(base_url=base, params={"token": token}, timeout=30) as c:
            # the terminal waits at its prompt for stop-1: a client lets it go
            assert c.post("/stops/stop-1/continue").status_code == 200
            read_until("stop-1 was resumed by a client (continue)")
            read_until("stop-2: breakpoint [bp-2] at before node 'sign'")
        # the prompt is the next stop's: a command typed now acts there
        proc.stdin.write("set reply = 'edited at the terminal'\nc\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
        lines.append(out)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    text = "".join(lines)
    assert text.index("resumed by a client") < text.index("stop-2:")
    assert "(flowdbg) set reply = 'edited at the terminal'" in text
    assert "run completed" in text
    assert '"reply": "edited at the terminal -- Support team"' in text
