"""Secrets never reach the disk, the logs, the --json output, the terminal or Stop.to_dict,
whether or not they sit under a tell-tale key; ordinary values stay readable."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import flowdbg
from flowdbg._redact import REDACTED, redact, redact_text
from flowdbg._values import short_repr
from flowdbg.adapters.stategraph import END, StateGraph
from flowdbg.cli import cli
from flowdbg.store import encode_value

T = 10.0


class Client:
    """An object stored as its repr, which shows its key (as many SDK clients' reprs do)."""

    def __init__(self, key: str) -> None:
        self.key = key

    def __repr__(self) -> str:
        return f"Client(api_key={self.key!r}, model='m')"


_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

#: state key -> (value, the secret parts that must never be written). No key is tell-tale:
#: each secret is found by its value, its record or its pair.
CORPUS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "header_pair": (["Authorization", "Bearer hdrPairQ7w8e9r0t1y2"], ("hdrPairQ7w8e9r0t1y2",)),
    "env_pair": (("API_KEY", "envPairZ1x2c3v4b5"), ("envPairZ1x2c3v4b5",)),
    "record": ({"name": "token", "value": "recNameM9n8b7v6"}, ("recNameM9n8b7v6",)),
    "record_key": ({"key": "X-Api-Key", "value": "recKeyP0o9i8u7"}, ("recKeyP0o9i8u7",)),
    "record_header": (
        {"header": "Authorization", "value": "Basic recHdrL1k2j3h4"},
        ("recHdrL1k2j3h4",),
    ),
    "db_url": ("postgres://app:dbPw4x7Kq2@db.internal:5432/main", ("dbPw4x7Kq2",)),
    "http_url": ("https://alice:httpPw9z8Y@example.com/private", ("httpPw9z8Y",)),
    "openai": ("use sk-proj-AbCdEf0123456789GhIjKlMnOpQr now", ("AbCdEf0123456789GhIjKlMnOpQr",)),
    "anthropic": ("sk-ant-api03-ZyXw9876543210TsRqPoNmLkJi-AA", ("ZyXw9876543210TsRqPoNmLkJi",)),
    "github": (
        "ghp_aBcD0123456789eFgH0123456789iJkL0123",
        ("aBcD0123456789eFgH0123456789iJkL0123",),
    ),
    "github_pat": (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz012345",
        ("11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz012345",),
    ),
    "aws": ("key id AKIAIOSFODNN7EXAMPLE here", ("IOSFODNN7EXAMPLE",)),
    "slack": ("xoxb-123456789012-abcdefSLACK1234", ("123456789012-abcdefSLACK1234",)),
    "google": ("AIzaSyD-0123456789abcdefghijklmnopqrstu", ("SyD-0123456789abcdefghijklmnopqrstu",)),
    "jwt": (f"session {_JWT}", (_JWT[3:],)),
    "pem": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEApemBody0123\n"
        "-----END RSA PRIVATE KEY-----",
        ("MIIEpAIBAAKCAQEApemBody0123",),
    ),
    "auth_text": (
        "curl -H 'Authorization: Bearer txtBearer5566' https://api.example.com",
        ("txtBearer5566",),
    ),
    "env_text": ("export OPENAI_API_KEY=envTxtW3e4r5 && run", ("envTxtW3e4r5",)),
    "client": (Client("clientReprK8j7h6"), ("clientReprK8j7h6",)),
    "api_key": ("keyBasedS1d2f3g4", ("keyBasedS1d2f3g4",)),  # the key rule still holds
}
SECRETS = [secret for _, secrets in CORPUS.values() for secret in secrets]

#: values that look a little like secrets, or name them, and must be shown as they are
ORDINARY: dict[str, Any] = {
    "run_uuid": "6f1c2b9e-3a4d-4e5f-9a0b-1c2d3e4f5a6b",
    "commit": "9fceb02d0ae598e95dc970b74767f19372d61af8",
    "digest": "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
    "max_tokens": 512,
    "usage": {"prompt_tokens": 10, "total_tokens": 1234, "token_count": 7},
    "memory": {"token_limit": 3000, "token_budget": 100},
    "homepage": "https://example.com/docs?page=2&sort=asc",
    "remote": "git@github.com:org/repo.git",
    "email": "alice@example.com",
    "prose": (
        "Each token costs money and the tokenizer splits words. Password resets go through "
        "support. Note: the secret to good soup is salt; token: the unit of text."
    ),
    "library": "sk-learn-compatible-estimators",
    "pair": ["name", "value"],
    "record_plain": {"name": "model", "value": "gpt-x"},
    "assign": "retries=3 timeout=30",
}


def _graph() -> Any:
    g = StateGraph(name="secrets")
    g.add_node("load", lambda s: {**{k: v for k, (v, _) in CORPUS.items()}, **ORDINARY})
    g.add_node("use", lambda s: {"done": True})
    g.set_entry_point("load")
    g.add_edge("load", "use")
    g.add_edge("use", END)
    return g.compile()


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


@pytest.fixture
def recorded(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    """Runs the graph once, recorded, with a logpoint and a stop; what each surface showed."""
    db = tmp_path / "r.db"
    dbg = flowdbg.Debugger(db=db)
    app = dbg.attach(_graph())
    dbg.logpoint("use", "state is {state}")
    dbg.logpoint("use", "field {state[db_url]} {state[record][value]} {state[client]}")
    dbg.break_before("use")
    caplog.set_level(logging.INFO, logger="flowdbg.logpoint")
    handle = dbg.start(app.invoke, {})
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "use"
    stop_dict = json.dumps(stop.to_dict(), ensure_ascii=False)
    dbg.resume()
    handle.result(T)
    assert dbg.flush(T)
    store = dbg.store
    assert store is not None
    (run,) = store.list_runs()
    state = store.get_state(run.run_id)
    dbg.close()
    raw = b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())
    logs = "\n".join(r.getMessage() for r in caplog.records if r.name == "flowdbg.logpoint")

    def cli_out(*args: str) -> str:
        result = CliRunner().invoke(cli, [*args, "--db", str(db)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    return {
        "run_id": run.run_id,
        "state": state,
        "db": raw,
        "logs": logs,
        "stop": stop_dict,
        "json": cli_out("runs", "state", run.run_id, "--values", "--json"),
        "show": cli_out("runs", "show", run.run_id),
        "steps": cli_out("runs", "steps", run.run_id),
        "table": cli_out("runs", "state", run.run_id),
        "values": cli_out("runs", "state", run.run_id, "--values"),
    }


@pytest.mark.parametrize("surface", ["logs", "stop", "json", "show", "steps", "table", "values"])
def test_no_secret_is_written_anywhere(recorded: dict[str, Any], surface: str) -> None:
    text = recorded[surface]
    if surface != "show":  # (the run's summary shows no values)
        assert "[REDACTED]" in text  # the surface did show the corpus
    assert _leaks(text) == []


def test_no_secret_reaches_the_database_file(recorded: dict[str, Any]) -> None:
    raw: bytes = recorded["db"]
    assert raw and REDACTED.encode() in raw
    assert [s for s in SECRETS if s.encode() in raw] == []


def test_what_is_redacted_is_only_the_secret(recorded: dict[str, Any]) -> None:
    state = recorded["state"]
    assert state["header_pair"] == ["Authorization", REDACTED]
    assert state["env_pair"] == ["API_KEY", REDACTED]
    assert state["record"] == {"name": "token", "value": REDACTED}
    assert state["db_url"] == "postgres://app:[REDACTED]@db.internal:5432/main"
    assert state["auth_text"].startswith("curl -H 'Authorization: Bearer [REDACTED]'")
    assert state["openai"] == "use sk-[REDACTED] now"
    assert state["github"] == "ghp_[REDACTED]"
    assert state["pem"].startswith("-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n-----END")
    assert state["client"]["__repr__"] == "Client(api_key='[REDACTED]', model='m')"
    assert state["api_key"] == REDACTED


def test_ordinary_values_are_kept_everywhere(recorded: dict[str, Any]) -> None:
    state = recorded["state"]
    assert {key: state[key] for key in ORDINARY} == ORDINARY
    data = json.loads(recorded["json"])["data"]["values"]
    assert {key: data[key] for key in ORDINARY} == ORDINARY
    for key in ("run_uuid", "commit", "homepage", "remote"):
        assert ORDINARY[key] in recorded["values"]
    assert "token: the unit of text" in recorded["logs"]


# -- the rules, one by one --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgres://u:PASS@h/db", "postgres://u:[REDACTED]@h/db"),
        ("https://user:p@ss@host/x", "https://user:[REDACTED]@host/x"),
        ("redis://:pw123456@localhost:6379/0", "redis://:[REDACTED]@localhost:6379/0"),
        ("Authorization: Bearer x", "Authorization: Bearer [REDACTED]"),
        ("see Bearer abcdEFGH12345678 here", "see Bearer [REDACTED] here"),
        ("https://x/?a=1&api_key=abc123&b=2", "https://x/?a=1&api_key=[REDACTED]&b=2"),
        ("{'password': 'hunter2', 'x': 1}", "{'password': '[REDACTED]', 'x': 1}"),
        ('{"access_token": "v", "n": 2}', '{"access_token": "[REDACTED]", "n": 2}'),
        ("X-Api-Key: abc123", "X-Api-Key: [REDACTED]"),
        ("x=sk-abcdefghij0123456789xyz", "x=sk-[REDACTED]"),
        (
            "https://hooks.slack.com/services/T0/B0/XX",
            "https://hooks.slack.com/services/[REDACTED]",
        ),
        ("-----BEGIN PRIVATE KEY-----\nMIIcut", "-----BEGIN PRIVATE KEY-----\n[REDACTED]"),
    ],
)
def test_secret_parts_of_strings_are_replaced(text: str, expected: str) -> None:
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=100 and total_tokens=7",
        "monkey=3",
        "https://example.com/path?x=1",
        "the token is the unit of text; tokens matter",
        "Secret: the recipe",
        "Bearer tokens are sent in a header",
        "sk-learn-compatible-estimators",
        "12:30:45 a=b",
    ],
)
def test_ordinary_text_is_kept(text: str) -> None:
    assert redact_text(text) is text


def test_rules_follow_the_key_patterns_and_can_be_turned_off() -> None:
    value = {"n": ("ssn", "123-45"), "u": "postgres://u:pw@h/db", "api_key": "k"}
    assert redact(value, ["ssn"]) == {"n": ("ssn", REDACTED), "u": "postgres://u:[REDACTED]@h/db",
                                      "api_key": "k"}  # fmt: skip
    assert redact(value, ()) is value
    assert encode_value(value, redact=())[0] == {"n": ["ssn", "123-45"], **{
        k: value[k] for k in ("u", "api_key")}}  # fmt: skip


def test_the_store_and_the_json_rules_agree() -> None:
    values = {key: value for key, (value, _) in CORPUS.items() if key != "client"}
    plain, _ = encode_value({**values, **ORDINARY})
    assert plain == json.loads(json.dumps(redact(json.loads(json.dumps({**values, **ORDINARY})))))


def test_short_reprs_hide_secrets_even_when_cut() -> None:
    assert short_repr({"api_key": "k", "x": 1}) == "{'api_key': '[REDACTED]', 'x': 1}"
    assert short_repr(("API_KEY", "zzz")) == "('API_KEY', '[REDACTED]')"
    # the cut falls inside the key: no part of it is shown
    cut = short_repr("ab sk-abcdefghijklmnop0123456789 " + "x" * 1000, 24)
    assert "abcdefgh" not in cut and "sk-" in cut


def test_a_secret_in_an_exception_message_is_not_stored(tmp_path: Path) -> None:
    def connect(s: dict[str, Any]) -> dict[str, Any]:
        raise ConnectionError("cannot reach postgres://app:hunter2secret@db.internal/orders")

    g = StateGraph(name="failing")
    g.add_node("connect", connect)
    g.set_entry_point("connect")
    g.add_edge("connect", "__end__")
    db = tmp_path / "errors.db"
    with flowdbg.Debugger(db=db) as dbg:
        app = dbg.attach(g.compile())
        with pytest.raises(ConnectionError):
            app.invoke({})
        assert dbg.flush(10)
        assert dbg.store is not None
        (run,) = dbg.store.list_runs()
        assert run.error is not None and "[REDACTED]" in run.error.message
        assert "postgres://app:[REDACTED]@db.internal/orders" in run.error.message
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("errors"))
    assert b"hunter2secret" not in stored
