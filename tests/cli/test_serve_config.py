"""``flowdbg serve --config`` (and ``ui``): the config of a run a client starts without one,
checked when the server starts."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import SUPPORT_AGENT, Cli

URL = re.compile(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)")


def _serve(folder: Path, db: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "FLOWDBG_DB": str(db), "PYTHONUNBUFFERED": "1"}
    env.pop("FLOWDBG_TOKEN", None)
    return subprocess.Popen(
        [sys.executable, "-m", "flowdbg.cli", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=folder,
    )


def test_serve_config_is_the_config_of_a_run_started_without_one(graphs: Path, db: Path) -> None:
    pytest.importorskip("agents", reason="the openai-agents extra is not installed")
    for name in ("fastapi", "uvicorn", "websockets", "httpx"):
        pytest.importorskip(name, reason="the server extra is not installed")
    import httpx

    (graphs / "support.py").write_text(SUPPORT_AGENT, encoding="utf-8")
    proc = _serve(graphs, db, "support.py:build", "--config", '{"context": {"user": "ann"}}')
    try:
        assert proc.stdout is not None
        found = None
        for line in proc.stdout:
            found = URL.search(line)
            if found:
                break
        assert found is not None, proc.stderr.read() if proc.stderr else ""
        base, token = found.group(1), found.group(2)
        outputs = []
        newest = []
        with httpx.Client(base_url=base, params={"token": token}, timeout=30) as c:
            for body in (
                {"input": "my balance"},  # no config: the server's
                {"input": "my balance", "config": {"context": {"user": "bob"}}},
                {"input": "my balance"},  # the server's again, as it was given
            ):
                assert c.post("/runs", json=body).status_code == 201
                assert c.post("/wait", params={"timeout": 20}).json()["outcome"] == "ended"
                newest.append(c.get("/records/runs").json()["runs"][0]["run_id"])
                outputs.append(c.get(f"/records/runs/{newest[-1]}").json()["output"])
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    assert outputs == ["account of ann", "account of bob", "account of ann"]
    # the tool counts its calls in the context: each run of the server's config starts from
    # that config, not from the context an earlier run left
    from flowdbg.store import open_store

    store = open_store(db, readonly=True)
    try:
        configs = [store.get_run(run_id).config for run_id in newest]
    finally:
        store.close()
    assert configs[0] == configs[2] == {"context": {"user": "ann"}}


@pytest.mark.parametrize("command", ["serve", "ui"])
def test_serve_refuses_a_config_that_is_not_a_json_object(run_cli: Cli, command: str) -> None:
    message = run_cli.error(command, "graphs.py:app", "--config", "[1]")
    assert message == (
        "error: --config must be a JSON object, not list; give a JSON object (what adapter "
        """'stategraph' passes to the run), e.g. --config '{"key": "value"}'"""
    )
    message = run_cli.error(command, "graphs.py:app", "--config", "{user: 1}")
    assert message.startswith("error: --config is not valid JSON")


def test_serve_refuses_a_config_the_target_cannot_take(run_cli: Cli) -> None:
    for name in ("fastapi", "uvicorn", "websockets"):
        pytest.importorskip(name, reason="the server extra is not installed")
    message = run_cli.error("serve", "graphs.py:app", "--config", '{"user": 1}')
    assert "config" in message and "stategraph" in message


@pytest.mark.parametrize("command", ["serve", "ui"])
def test_serve_refuses_a_tool_breakpoint_naming_no_tool_of_the_target(
    run_cli: Cli, graphs: Path, command: str
) -> None:
    pytest.importorskip("agents", reason="the openai-agents extra is not installed")
    for name in ("fastapi", "uvicorn", "websockets"):
        pytest.importorskip(name, reason="the server extra is not installed")
    (graphs / "support.py").write_text(SUPPORT_AGENT, encoding="utf-8")
    message = run_cli.error(command, "support.py:build", "-b", "tool:acount")
    assert (
        message
        == "error: unknown tool 'acount'; tools: account; check the spelling (in -b tool:acount)"
    )


@pytest.mark.parametrize("command", ["run", "serve"])
def test_a_config_that_is_no_json_object_gets_no_other_frameworks_example(
    run_cli: Cli, graphs: Path, command: str
) -> None:
    pytest.importorskip("agents", reason="the openai-agents extra is not installed")
    (graphs / "support.py").write_text(SUPPORT_AGENT, encoding="utf-8")
    for text in ("{context: 1}", '["ann"]'):
        message = run_cli.error(command, "support.py:build", "--config", text)
        # an agent's run takes no LangGraph configurable
        assert "configurable" not in message
        assert message.endswith(
            """e.g. --config '{"context": {"user_id": "42"}, "max_turns": 5}'"""
        )
