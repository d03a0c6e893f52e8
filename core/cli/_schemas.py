"""JSON Schemas of the ``data`` each ``--json`` command prints, and a small validator.

The schemas are documented in ``docs/cli.md`` (a test keeps the two identical) and every
``--json`` output is validated against them in the tests. The validator covers the subset of
JSON Schema the schemas use, so that flowdbg needs no ``jsonschema`` dependency.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["DEFS", "ENVELOPE", "SCHEMAS", "schema_for", "validate"]

_DATE_TIME = {"type": "string", "format": "date-time"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{name}"}


#: shared definitions, referenced as ``#/$defs/NAME``
DEFS: dict[str, dict[str, Any]] = {
    "error": {
        "type": "object",
        "description": "an exception: its type name, module, message and formatted traceback",
        "required": ["type", "message", "traceback"],
        "properties": {
            "type": {"type": "string"},
            "module": {"type": "string"},
            "message": {"type": "string"},
            "traceback": {"type": "string"},
        },
    },
    "run": {
        "type": "object",
        "description": "one recorded run; times are ISO 8601 UTC, durations seconds",
        "required": [
            "run_id",
            "short_id",
            "name",
            "framework",
            "status",
            "parent_run_id",
            "root_run_id",
            "started_at",
            "ended_at",
            "duration",
            "steps",
            "error",
        ],
        "properties": {
            "run_id": {"type": "string"},
            "short_id": {"type": "string"},
            "name": {"type": "string"},
            "framework": {"type": "string"},
            "status": {
                "enum": [
                    "running",
                    "completed",
                    "failed",
                    "terminated",
                    "interrupted",
                    "suspended",
                ],
            },
            "parent_run_id": {"type": ["string", "null"]},
            "root_run_id": {"type": ["string", "null"]},
            "parent_step": {"type": ["integer", "null"]},
            "path": {"type": "array", "items": {"type": "string"}},
            "started_at": _nullable(_DATE_TIME),
            "ended_at": _nullable(_DATE_TIME),
            "duration": {"type": ["number", "null"], "minimum": 0},
            "steps": {"type": ["integer", "null"], "minimum": 0},
            "error": _nullable(_ref("error")),
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "pid": {"type": ["integer", "null"]},
            "host": {"type": ["string", "null"]},
            "input": {"description": "the run's input (only in runs show)"},
            "output": {"description": "the run's output (only in runs show)"},
        },
    },
    "step": {
        "type": "object",
        "description": "one execution of a unit (node, tool call, model call, handoff)",
        "required": [
            "run_id",
            "step",
            "node",
            "kind",
            "path",
            "status",
            "started_at",
            "ended_at",
            "duration",
            "superstep",
            "branch",
            "attempt",
            "error",
        ],
        "properties": {
            "run_id": {"type": "string"},
            "step": {"type": "integer"},
            "node": {"type": "string"},
            "kind": {"type": "string"},
            "path": {"type": "array", "items": {"type": "string"}},
            "status": {"enum": ["running", "completed", "failed", "suspended", "terminated"]},
            "started_at": _nullable(_DATE_TIME),
            "ended_at": _nullable(_DATE_TIME),
            "duration": {"type": ["number", "null"], "minimum": 0},
            "superstep": {"type": ["integer", "null"]},
            "branch": {"type": ["string", "null"]},
            "attempt": {"type": "integer", "minimum": 1},
            "decision": {"description": "the routing decision (next nodes), or null"},
            "error": _nullable(_ref("error")),
            "partial": {"type": "boolean"},
            "child_run_id": {"type": ["string", "null"]},
            "input": {"description": "what the unit received (runs steps only)"},
            "output": {"description": "what the unit returned (runs steps only)"},
        },
    },
    "run_tree": {
        "type": "object",
        "description": "a run with its steps and, with --tree, its nested runs",
        "required": ["run"],
        "properties": {
            "run": _ref("run"),
            "steps": {"type": "array", "items": _ref("step")},
            "children": {"type": "array", "items": _ref("run_tree")},
        },
    },
}

_RUNS_LS = {
    "type": "object",
    "required": ["db", "count", "runs"],
    "properties": {
        "db": {"type": "string", "description": "the database file"},
        "count": {"type": "integer", "minimum": 0},
        "runs": {"type": "array", "items": _ref("run")},
    },
}

_RUNS_SHOW = {
    "type": "object",
    "required": ["run", "steps", "children", "filters"],
    "properties": {
        "run": _ref("run"),
        "steps": {"type": "array", "items": _ref("step")},
        "children": {
            "type": "array",
            "items": _ref("run_tree"),
            "description": "nested runs; their steps and children only with --tree",
        },
        "filters": {
            "type": "object",
            "required": ["errors", "node"],
            "properties": {
                "errors": {"type": "boolean"},
                "node": {"type": ["string", "null"]},
            },
        },
    },
}

_RUNS_STATE = {
    "type": "object",
    "required": ["run_id", "step", "keys"],
    "properties": {
        "run_id": {"type": "string"},
        "step": {
            "type": ["integer", "null"],
            "description": "the state after this step; null for the run's final state",
        },
        "keys": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "type", "size", "preview", "written_by"],
                "properties": {
                    "key": {"type": "string"},
                    "type": {"type": "string"},
                    "size": {"type": ["integer", "null"]},
                    "preview": {"type": "string"},
                    "written_by": _nullable(
                        {
                            "type": "object",
                            "required": ["step", "node"],
                            "properties": {
                                "step": {"type": "integer"},
                                "node": {"type": "string"},
                            },
                        }
                    ),
                },
            },
        },
        "values": {"type": "object", "description": "every top-level value (with --values)"},
        "path": {"type": "string", "description": "the path given with --key"},
        "value": {"description": "the value at --key"},
    },
}

_RUNS_STEPS = {
    "type": "object",
    "required": ["run_id", "steps"],
    "properties": {
        "run_id": {"type": "string"},
        "steps": {"type": "array", "items": _ref("step")},
    },
}

_COUNTS = {"type": "object", "additionalProperties": {"type": "integer"}}

_RUNS_DIFF = {
    "type": "object",
    "required": ["a", "b", "nodes", "first_divergence"],
    "properties": {
        "a": _ref("run"),
        "b": _ref("run"),
        "nodes": {
            "type": "array",
            "description": "one row per node that ran in either run, in order of first appearance",
            "items": {
                "type": "object",
                "required": [
                    "node",
                    "count_a",
                    "count_b",
                    "total_a",
                    "total_b",
                    "delta",
                    "statuses_a",
                    "statuses_b",
                    "status_changed",
                ],
                "properties": {
                    "node": {"type": "string"},
                    "count_a": {"type": "integer", "minimum": 0},
                    "count_b": {"type": "integer", "minimum": 0},
                    "total_a": {"type": "number", "description": "seconds over its steps in a"},
                    "total_b": {"type": "number", "description": "seconds over its steps in b"},
                    "delta": {"type": "number", "description": "total_b - total_a"},
                    "statuses_a": _COUNTS,
                    "statuses_b": _COUNTS,
                    "status_changed": {"type": "boolean"},
                },
            },
        },
        "first_divergence": _nullable(
            {
                "type": "object",
                "description": "path: different units ran; status: a unit ended differently; "
                "state: it left a different state (paths lists where)",
                "required": ["kind", "step_a", "step_b", "node_a", "node_b", "detail", "paths"],
                "properties": {
                    "kind": {"enum": ["path", "state", "status"]},
                    "step_a": {"type": ["integer", "null"]},
                    "step_b": {"type": ["integer", "null"]},
                    "node_a": {"type": ["string", "null"]},
                    "node_b": {"type": ["string", "null"]},
                    "detail": {"type": "string"},
                    "paths": {"type": "array", "items": {"type": "string"}},
                },
            }
        ),
    },
}

_RUNS_REPLAY = {
    "type": "object",
    "required": ["run_id", "events"],
    "properties": {
        "run_id": {"type": "string"},
        "events": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "offset",
                    "time",
                    "event",
                    "run_id",
                    "step",
                    "node",
                    "kind",
                    "path",
                    "status",
                ],
                "properties": {
                    "offset": {
                        "type": "number",
                        "description": "seconds since the first event replayed",
                    },
                    "time": _nullable(_DATE_TIME),
                    "event": {"enum": ["before", "after", "error"]},
                    "run_id": {"type": "string", "description": "the run or nested run"},
                    "step": {"type": "integer"},
                    "node": {"type": "string"},
                    "kind": {"type": "string"},
                    "path": {"type": "array", "items": {"type": "string"}},
                    "status": {
                        "enum": ["running", "completed", "failed", "suspended", "terminated"]
                    },
                    "duration": {"type": ["number", "null"]},
                    "decision": {"description": "after and error events: the routing decision"},
                    "error": _nullable(_ref("error")),
                },
            },
        },
    },
}

_GRAPH_INSPECT = {
    "type": "object",
    "required": ["target", "adapter", "graph"],
    "properties": {
        "target": {"type": "string"},
        "adapter": {"type": "string"},
        "graph": {
            "type": "object",
            "description": "the adapter's describe(): name, nodes, edges and more",
            "required": ["nodes", "edges"],
            "properties": {
                "name": {"type": "string"},
                "entry": {"type": "array", "items": {"type": "string"}},
                "nodes": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "tasks": {
                                "type": "array",
                                "items": {"type": "string"},
                                "description": "the @task functions an @entrypoint refers to",
                            },
                        },
                    },
                },
                "open": {
                    "type": "boolean",
                    "description": "units other than the nodes run too (an @entrypoint's tasks)",
                },
                "edges": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["source", "target"],
                        "properties": {
                            "source": {"type": "string"},
                            "target": {"type": "string"},
                        },
                    },
                },
                "conditional_edges": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["source", "targets"],
                        "properties": {
                            "source": {"type": "string"},
                            "router": {"type": ["string", "null"]},
                            "targets": {
                                "type": ["array", "null"],
                                "items": {"type": "string"},
                            },
                        },
                    },
                },
            },
        },
    },
}

_ADAPTERS = {
    "type": "object",
    "required": ["adapters"],
    "properties": {
        "adapters": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "available", "reason", "version", "capabilities"],
                "properties": {
                    "name": {"type": "string"},
                    "available": {"type": "boolean"},
                    "reason": {"type": ["string", "null"]},
                    "version": {"type": ["string", "null"]},
                    "extra": {"type": "string"},
                    "capabilities": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    },
}

_DATA: dict[str, dict[str, Any]] = {
    "runs ls": _RUNS_LS,
    "runs show": _RUNS_SHOW,
    "runs state": _RUNS_STATE,
    "runs steps": _RUNS_STEPS,
    "runs diff": _RUNS_DIFF,
    "runs replay": _RUNS_REPLAY,
    "graph inspect": _GRAPH_INSPECT,
    "adapters": _ADAPTERS,
}

#: the envelope around every ``--json`` output
ENVELOPE: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["schema_version", "command", "generated_at", "data"],
    "properties": {
        "schema_version": {"const": 1},
        "command": {"type": "string"},
        "generated_at": _DATE_TIME,
        "data": {"description": "the command's data (see each command)"},
    },
}


def _refs(schema: Any, found: set[str]) -> None:
    if isinstance(schema, Mapping):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name not in found:
                found.add(name)
                _refs(DEFS[name], found)
        for value in schema.values():
            _refs(value, found)
    elif isinstance(schema, list):
        for value in schema:
            _refs(value, found)


def schema_for(command: str) -> dict[str, Any]:
    """The self-contained JSON Schema of ``command``'s ``data`` (with the ``$defs`` it uses).

    :raises KeyError: for a command without ``--json``.
    """
    body = _DATA[command]
    names: set[str] = set()
    _refs(body, names)
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"flowdbg {command} --json data",
        **body,
    }
    if names:
        schema["$defs"] = {name: DEFS[name] for name in sorted(names)}
    return schema


#: command -> the JSON Schema of its ``data``
SCHEMAS: dict[str, dict[str, Any]] = {command: schema_for(command) for command in _DATA}

# ------------------------------------------------------------------------------ validator

_DATE_TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def validate(instance: Any, schema: Mapping[str, Any]) -> list[str]:
    """Check ``instance`` against ``schema``; an empty list means valid.

    Supports ``type``, ``enum``, ``const``, ``properties``, ``required``,
    ``additionalProperties``, ``items``, ``anyOf``, ``minimum``, ``format: date-time`` and
    ``$ref`` to ``#/$defs/...`` of the root schema.

    :returns: one message per problem, each starting with the JSON path (``$.runs[0].status``).
    """
    errors: list[str] = []
    _check(instance, schema, schema, "$", errors)
    return errors


def _check(
    value: Any, schema: Mapping[str, Any], root: Mapping[str, Any], where: str, errors: list[str]
) -> None:
    ref = schema.get("$ref")
    if ref is not None:
        name = str(ref).removeprefix("#/$defs/")
        target = (root.get("$defs") or {}).get(name)
        if target is None:
            errors.append(f"{where}: unresolved $ref {ref}")
            return
        _check(value, target, root, where, errors)
    if "anyOf" in schema:
        options = schema["anyOf"]
        if not any(not _sub(value, option, root, where) for option in options):
            errors.append(f"{where}: {value!r:.80} matches none of anyOf")
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_TYPES[k](value) for k in kinds):
            errors.append(f"{where}: expected {' or '.join(kinds)}, got {type(value).__name__}")
            return
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: expected {schema['const']!r}, got {value!r:.80}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r:.80} is not one of {schema['enum']}")
    if "minimum" in schema and _TYPES["number"](value) and value < schema["minimum"]:
        errors.append(f"{where}: {value} is below the minimum {schema['minimum']}")
    is_date = schema.get("format") == "date-time" and isinstance(value, str)
    if is_date and not _DATE_TIME_RE.fullmatch(value):
        errors.append(f"{where}: {value!r} is not an RFC 3339 date-time")
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name in schema.get("required") or ():
            if name not in value:
                errors.append(f"{where}: missing required property {name!r}")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in props:
                _check(item, props[name], root, f"{where}.{name}", errors)
            elif extra is False:
                errors.append(f"{where}: unexpected property {name!r}")
            elif isinstance(extra, Mapping):
                _check(item, extra, root, f"{where}.{name}", errors)
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            _check(item, schema["items"], root, f"{where}[{index}]", errors)


def _sub(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any], where: str) -> list[str]:
    errors: list[str] = []
    _check(value, schema, root, where, errors)
    return errors
