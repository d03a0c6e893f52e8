"""The documented JSON Schemas: the validator works, and docs/cli.md holds exactly them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flowdbg.cli._schemas import ENVELOPE, SCHEMAS, validate

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def documented() -> dict[str, object]:
    text = DOCS.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- schema: ([a-z ]+) -->\s*```json\n(.*?)\n```", text, flags=re.S)
    return {name: json.loads(body) for name, body in blocks}


def test_every_command_schema_is_documented_verbatim() -> None:
    docs = documented()
    assert docs.pop("envelope") == ENVELOPE
    assert docs == SCHEMAS


def test_every_json_command_has_a_section() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for command in SCHEMAS:
        assert f"### `flowdbg {command}" in text, command


@pytest.mark.parametrize(
    "value, problem",
    [
        ({"adapters": [{"name": "x"}]}, "$.adapters[0]: missing required property 'available'"),
        ({"adapters": "no"}, "$.adapters: expected array, got str"),
        (
            {
                "adapters": [
                    {
                        "name": "x",
                        "available": 1,
                        "reason": None,
                        "version": None,
                        "capabilities": [],
                    }
                ]
            },
            "$.adapters[0].available: expected boolean, got int",
        ),
    ],
)
def test_validator_reports_problems(value: object, problem: str) -> None:
    assert problem in validate(value, SCHEMAS["adapters"])


def test_validator_follows_refs_enums_formats_and_any_of() -> None:
    schema = SCHEMAS["runs ls"]
    run = {
        "run_id": "abc",
        "short_id": "abc",
        "name": "n",
        "framework": "stategraph",
        "status": "done",
        "parent_run_id": None,
        "root_run_id": None,
        "started_at": "yesterday",
        "ended_at": None,
        "duration": -1,
        "steps": True,
        "error": {"type": "E"},
    }
    problems = validate({"db": "x", "count": 1, "runs": [run]}, schema)
    assert "$.runs[0].status: 'done' is not one of" in " ".join(problems)
    assert "$.runs[0].started_at: 'yesterday' matches none of anyOf" in problems
    assert "$.runs[0].duration: -1 is below the minimum 0" in problems
    assert "$.runs[0].steps: expected integer or null, got bool" in problems
    assert "$.runs[0].error: {'type': 'E'} matches none of anyOf" in problems
    assert validate({"schema_version": 2}, ENVELOPE)[0] == "$: missing required property 'command'"
    assert "$.schema_version: expected 1, got 2" in validate({"schema_version": 2}, ENVELOPE)
