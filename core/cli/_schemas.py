"""JSON Schemas of what the ``--json`` commands print, generated from :mod:`flowdbg.schemas`,
and a check of an output against them.

``docs/cli.md`` publishes the schemas (a test keeps the two identical) and the tests check every
command's real output with :func:`validate`. The schemas are built on first use, not at import.
"""

from __future__ import annotations

import datetime as dt
import importlib
import re
from collections.abc import Mapping
from typing import Any

from flowdbg.schemas import COMMANDS, Envelope, json_schema

__all__ = ["DEFS", "ENVELOPE", "SCHEMAS", "schema_for", "validate"]


def schema_for(command: str) -> dict[str, Any]:
    """The self-contained JSON Schema of ``command``'s ``data`` (with the ``$defs`` it uses).

    :param command: a command with ``--json``, as its envelope names it (``"runs ls"``).
    :returns: a new dict on every call.
    :raises KeyError: for a command without ``--json``.
    """
    return json_schema(COMMANDS[command], title=f"flowdbg {command} --json data")


def _envelope() -> dict[str, Any]:
    return json_schema(Envelope, title="flowdbg --json envelope")


def _defs() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for schema in _lazy("SCHEMAS").values():
        found.update(schema.get("$defs", {}))
    return dict(sorted(found.items()))


#: the envelope around every ``--json`` output
ENVELOPE: dict[str, Any]
#: command -> the JSON Schema of its ``data``
SCHEMAS: dict[str, dict[str, Any]]
#: every shared definition the command schemas refer to, by ``$defs`` name
DEFS: dict[str, Any]

# (annotated above, built by the module's __getattr__ on first use)
_BUILDERS = {
    "ENVELOPE": _envelope,
    "SCHEMAS": lambda: {command: schema_for(command) for command in COMMANDS},
    "DEFS": _defs,
}


def _lazy(name: str) -> Any:
    value = globals().get(name)
    if value is None:
        value = globals()[name] = _BUILDERS[name]()
    return value


def __getattr__(name: str) -> Any:
    if name in _BUILDERS:
        return _lazy(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------------------------ checking

_DATE_TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", re.I)


def _is_date_time(value: object) -> bool:
    """RFC 3339 ``date-time``: the form, and a real calendar date and time of day."""
    if not isinstance(value, str):
        return True  # "format" applies to strings only; "type" judges the rest
    if not _DATE_TIME_RE.fullmatch(value):
        return False
    try:
        dt.datetime.strptime(value[:19].upper(), "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return False
    return True


def validate(instance: Any, schema: Mapping[str, Any]) -> list[str]:
    """Check ``instance`` against ``schema`` with ``jsonschema`` (draft 2020-12), ``format:
    date-time`` included; an empty list means valid.

    ``jsonschema`` is a test dependency of flowdbg, imported here only when called.

    :returns: one message per problem, each starting with the JSON path (``$.runs[0].status``).
    :raises ImportError: when ``jsonschema`` is not installed.
    """
    try:
        # (imported by name: the package has no type stubs, and flowdbg does not need them)
        jsonschema = importlib.import_module("jsonschema")
    except ImportError as exc:
        raise ImportError(
            "checking an output against its schema needs jsonschema; install it with: "
            "pip install 'flowdbg[test]'"
        ) from exc
    # jsonschema checks date-time only when the optional rfc3339-validator is installed, and
    # passes every string otherwise: check it here so that a wrong time cannot slip through
    checker = jsonschema.FormatChecker()
    checker.checks("date-time")(_is_date_time)
    validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
    errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.path])
    return [f"{error.json_path}: {error.message}" for error in errors]
