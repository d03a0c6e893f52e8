"""A rerun (and a fork) starts with the config its run was started with: an OpenAI agent's run
context, whose tools read it; ``--config`` replaces it, and a config whose secrets were not
recorded must be given again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import SUPPORT_AGENT, Cli

from flowdbg.store import open_store


@pytest.fixture
def agent_cli(run_cli: Cli, graphs: Path) -> Cli:
    pytest.importorskip("agents", reason="the openai-agents extra is not installed")
    (graphs / "support.py").write_text(SUPPORT_AGENT, encoding="utf-8")
    return run_cli


def _first_run(cli: Cli, config: dict[str, object]) -> str:
    cli("run", "support.py:build", "--input", '"my balance"', "--config", json.dumps(config))
    runs = cli.json("runs", "ls", command="runs ls")["runs"]
    assert [run["status"] for run in runs] == ["completed"]
    return str(runs[0]["run_id"])


def test_a_rerun_starts_with_the_context_the_run_was_started_with(agent_cli: Cli, db: Path) -> None:
    run_id = _first_run(agent_cli, {"context": {"user": "ann"}})
    with open_store(db, create=False) as store:
        assert store.get_run(run_id).config == {"context": {"user": "ann"}}
    header = agent_cli("runs", "show", run_id).stdout.splitlines()[0]
    assert header.endswith("  config {'context': {'user': 'ann'}}")
    shown = agent_cli.json("runs", "show", run_id, command="runs show")
    assert shown["run"]["config"] == {"context": {"user": "ann"}}

    # every call live: the tool reads the context again
    data = agent_cli.json("runs", "rerun", run_id, "--cached-calls", "none", command="runs rerun")
    assert data["run"]["status"] == "completed"
    assert data["run"]["output"] == "account of ann"
    with open_store(db, create=False) as store:
        assert store.get_run(data["run"]["run_id"]).config == {"context": {"user": "ann"}}

    # --config replaces it
    data = agent_cli.json(
        "runs",
        "rerun",
        run_id,
        "--cached-calls",
        "none",
        "--config",
        '{"context": {"user": "bob"}}',
        command="runs rerun",
    )
    assert data["run"]["output"] == "account of bob"

    out = agent_cli("runs", "rerun", run_id, "--cached-calls", "none", input="").stdout
    assert "the config the run was started with" in out

    # without --cached-calls: every call the record has is served (the adapter can)
    out = agent_cli("runs", "rerun", run_id, input="").stdout
    assert "recorded calls served: all, the config the run was started with" in out.splitlines()[0]
    assert '"account of ann"' in out
    # a served tool call is matched by its name and arguments, not by the context it reads:
    # with another context its recorded result is served all the same
    data = agent_cli.json(
        "runs",
        "rerun",
        run_id,
        "--cached-calls",
        "all",
        "--config",
        '{"context": {"user": "bob"}}',
        command="runs rerun",
    )
    assert data["run"]["output"] == "account of ann"
    assert (data["calls"]["served"], data["calls"]["live"]) == (3, 0)


def test_a_config_whose_secrets_were_redacted_must_be_given_again(agent_cli: Cli) -> None:
    run_id = _first_run(agent_cli, {"context": {"user": "ann", "api_key": "sk-live-1234"}})
    message = agent_cli.error("runs", "rerun", run_id, "--cached-calls", "none", "--json")
    assert "secrets were not recorded (context.api_key redacted)" in message
    assert f"flowdbg runs rerun {run_id[:8]} --config JSON" in message
    data = agent_cli.json(
        "runs",
        "rerun",
        run_id,
        "--cached-calls",
        "none",
        "--config",
        '{"context": {"user": "cy", "api_key": "sk-2"}}',
        command="runs rerun",
    )
    assert data["run"]["output"] == "account of cy"


def test_rerun_config_must_be_a_json_object(agent_cli: Cli) -> None:
    run_id = _first_run(agent_cli, {"context": {"user": "ann"}})
    message = agent_cli.error("runs", "rerun", run_id, "--config", "[1]", code=1)
    assert "--config must be a JSON object, not list" in message
    assert "configurable" not in message  # no LangGraph example for an agent's run
    message = agent_cli.error("runs", "rerun", run_id, "--config", "{", code=1)
    assert message.startswith("error: --config is not valid JSON: ")
    # the target is read before the config, whose example is its adapter's
    assert """e.g. --config '{"context": {"user_id": "42"}, "max_turns": 5}'""" in message
    message = agent_cli.error("runs", "fork", run_id, "--step", "0", "--config", "{", code=1)
    assert message.startswith("error: --config is not valid JSON: ")
    assert '"max_turns": 5' in message
