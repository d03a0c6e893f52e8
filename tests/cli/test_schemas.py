"""The published JSON Schemas: valid schemas, generated from flowdbg.schemas, documented in
docs/cli.md as they are, in step with the core's enums, and strict enough to reject wrong
output. The real output of every command is checked against them in the command tests
(``Cli.json``) and in test_json_outputs.py.

Run this file as a script to write the generated schemas into docs/cli.md.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any, get_args

import click
import pytest
from cli_helpers import Cli
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from flowdbg import schemas
from flowdbg.cli import make_cli
from flowdbg.cli._schemas import ENVELOPE, SCHEMAS, schema_for, validate
from flowdbg.records import RUN_STATUSES, STEP_STATUSES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
_BLOCK = re.compile(r"(<!-- schema: ([a-z ]+) -->\s*```json\n)(.*?)(\n```)", flags=re.S)


def documented() -> dict[str, Any]:
    text = DOCS.read_text(encoding="utf-8")
    return {name: json.loads(body) for _, name, body, _ in _BLOCK.findall(text)}


def generated() -> dict[str, Any]:
    return {"envelope": ENVELOPE, **SCHEMAS}


def write_docs(path: Path = DOCS) -> None:
    """Replace the schema blocks of docs/cli.md (or a copy of it at ``path``) by the
    generated schemas."""
    schemas_by_name = generated()
    text = path.read_text(encoding="utf-8")

    def block(match: re.Match[str]) -> str:
        body = json.dumps(schemas_by_name[match.group(2)], indent=2, ensure_ascii=False)
        return match.group(1) + body + match.group(4)

    path.write_text(_BLOCK.sub(block, text), encoding="utf-8")


# ------------------------------------------------------------------------------ the schemas


def test_every_schema_is_a_valid_json_schema() -> None:
    live = [schemas.Stop, schemas.DebuggerStatus, schemas.BreakpointInfo]
    for schema in [*generated().values(), *(schemas.json_schema(m) for m in live)]:
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == Draft202012Validator.META_SCHEMA["$id"]


def test_every_json_command_has_a_schema() -> None:
    def walk(group: click.Group, prefix: str) -> list[str]:
        found = []
        for name, command in sorted(group.commands.items()):
            if isinstance(command, click.Group):
                found += walk(command, f"{prefix}{name} ")
            elif any(param.name == "as_json" for param in command.params):
                found.append(prefix + name)
        return found

    assert sorted(walk(make_cli(), "")) == sorted(SCHEMAS)
    with pytest.raises(KeyError):
        schema_for("runs prune")


def test_schema_for_gives_a_fresh_schema() -> None:
    mine = schema_for("runs ls")
    mine["properties"].clear()
    assert schema_for("runs ls") == SCHEMAS["runs ls"]
    assert SCHEMAS["runs ls"]["title"] == "flowdbg runs ls --json data"


def test_the_status_values_follow_the_store() -> None:
    assert get_args(schemas.RunStatusName) == RUN_STATUSES
    assert get_args(schemas.StepStatusName) == STEP_STATUSES


def test_every_command_schema_is_documented_verbatim() -> None:
    fix = f"update docs/cli.md with: python {Path(__file__).relative_to(DOCS.parents[1])}"
    assert documented() == generated(), fix


def test_every_json_command_has_a_section() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for command in SCHEMAS:
        assert f"### `flowdbg {command}" in text, command


# ------------------------------------------------------------------------------ strictness


@pytest.fixture
def outputs(run_cli: Cli) -> dict[str, Any]:
    """Real data of a few commands: a failed run's list, steps, replay and a diff."""
    run_cli("run", "graphs.py:app", "--input", '{"x": 1}')
    run_cli("run", "graphs.py:failing", "--input", '{"x": 1}', code=1)
    runs = run_cli.json("runs", "ls", command="runs ls")
    ok, failed = sorted(runs["runs"], key=lambda r: r["status"])
    assert (ok["status"], failed["status"]) == ("completed", "failed")
    return {
        "runs ls": runs,
        "runs steps": run_cli.json("runs", "steps", failed["run_id"], command="runs steps"),
        "runs replay": run_cli.json("runs", "replay", failed["run_id"], command="runs replay"),
        "runs diff": run_cli.json(
            "runs", "diff", ok["run_id"], failed["run_id"], command="runs diff"
        ),
        "adapters": run_cli.json("adapters", command="adapters"),
    }


def _set(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    data = copy.deepcopy(data)
    *parents, last = path
    target = data
    for key in parents:
        target = target[key]
    if value is _DELETE:
        del target[last]
    else:
        target[last] = value
    return data


_DELETE = object()

WRONG = [
    ("runs ls", ("runs", 0, "status"), _DELETE, "$.runs[0]: 'status' is a required property"),
    ("runs ls", ("runs", 0, "status"), "done", "$.runs[0].status: 'done' is not one of"),
    ("runs ls", ("runs", 0, "started_at"), "yesterday", "$.runs[0].started_at: 'yesterday' is"),
    ("runs ls", ("runs", 0, "ended_at"), "2024-02-30T10:00:00Z", "$.runs[0].ended_at"),
    ("runs ls", ("runs", 0, "duration"), -1, "$.runs[0].duration: -1 is not valid"),
    ("runs ls", ("runs", 0, "steps"), True, "$.runs[0].steps: True is not valid"),
    ("runs ls", ("runs", 0, "error"), {"type": "E"}, "$.runs[0].error: {'type': 'E'} is not"),
    ("runs ls", ("runs", 0, "tags"), {"thread_id": 1}, "$.runs[0].tags.thread_id: 1 is not"),
    ("runs ls", ("count",), "2", "$.count: '2' is not of type 'integer'"),
    ("runs steps", ("steps", 0, "kind"), "subroutine", "$.steps[0].kind: 'subroutine' is not"),
    ("runs steps", ("steps", 0, "attempt"), 0, "$.steps[0].attempt: 0 is less than"),
    ("runs steps", ("steps", 0, "input"), _DELETE, "$.steps[0]: 'input' is a required"),
    ("runs replay", ("events", 3, "status"), "completed", "$.events[3]: {"),
    ("runs replay", ("events", 1, "duration"), _DELETE, "$.events[1]: {"),
    ("runs diff", ("first_divergence", "kind"), "vibes", "$.first_divergence: {"),
    ("runs diff", ("nodes", 0, "statuses_a"), {"done": 1}, "$.nodes[0].statuses_a: 'done' is"),
    ("adapters", ("adapters", 0, "capabilities"), ["teleport"], "$.adapters[0].capabilities[0]"),
    ("adapters", ("adapters", 0, "reason"), _DELETE, "$.adapters[0]: 'reason' is a required"),
]


@pytest.mark.parametrize(
    "command, path, value, problem", WRONG, ids=[f"{w[0]}-{w[1][-1]}" for w in WRONG]
)
def test_wrong_output_is_rejected(
    outputs: dict[str, Any], command: str, path: tuple[Any, ...], value: Any, problem: str
) -> None:
    real = outputs[command]
    assert validate(real, SCHEMAS[command]) == []  # the change below is what makes it wrong
    problems = validate(_set(real, path, value), SCHEMAS[command])
    assert any(p.startswith(problem) for p in problems), problems
    with pytest.raises(ValidationError):
        schemas.COMMANDS[command].model_validate_json(
            json.dumps(_set(real, path, value)), strict=True
        )


def test_the_replay_events_are_the_ones_the_mutations_change(outputs: dict[str, Any]) -> None:
    events = [e["event"] for e in outputs["runs replay"]["events"]]
    assert events == ["before", "after", "before", "error"]


def test_a_new_property_is_allowed(outputs: dict[str, Any]) -> None:
    real = outputs["runs ls"]
    assert validate(_set(real, ("runs", 0, "cost"), 0.5), SCHEMAS["runs ls"]) == []


def test_the_envelope() -> None:
    good = {"schema_version": 1, "command": "runs ls", "generated_at": "2024-05-01T12:00:00Z"}
    assert validate({**good, "data": {}}, ENVELOPE) == []
    assert validate(good, ENVELOPE) == ["$: 'data' is a required property"]
    assert validate({**good, "data": None, "schema_version": 2}, ENVELOPE) == [
        "$.schema_version: 1 was expected"
    ]
    late = {**good, "data": 1, "generated_at": "2024-05-01 12:00"}
    assert validate(late, ENVELOPE) == ["$.generated_at: '2024-05-01 12:00' is not a 'date-time'"]


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "args",
    [
        ("runs", "show", "nope"),
        ("runs", "state", "nope"),
        ("runs", "steps", "nope"),
        ("runs", "diff", "nope", "nada"),
        ("runs", "replay", "nope"),
        ("graph", "inspect", "broken.py:x"),
        ("graph", "inspect", "graphs.py:not_a_graph"),
    ],
)
def test_an_error_prints_no_json(run_cli: Cli, args: tuple[str, ...]) -> None:
    """With --json a failing command still reports one line on stderr, and prints no
    envelope: a consumer tells failure by the exit code, never by a half-written output."""
    run_cli("run", "graphs.py:app", "--input", '{"x": 1}')
    result = run_cli(*args, "--json", code=1)
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ")


if __name__ == "__main__":  # python tests/cli/test_schemas.py [COPY_OF_CLI_MD]
    write_docs(*(Path(arg) for arg in sys.argv[1:2]))
