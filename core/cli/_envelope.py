"""The ``--json`` envelope every read command prints, and turning values into JSON."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import click

from flowdbg.state import to_plain

__all__ = ["SCHEMA_VERSION", "emit_json", "envelope", "iso", "jsonable"]

SCHEMA_VERSION = 1


def iso(timestamp: float | None) -> str | None:
    """An epoch timestamp as an ISO 8601 UTC string (``2024-05-01T12:00:00.123456Z``)."""
    if timestamp is None:
        return None
    moment = dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc)
    return moment.isoformat().replace("+00:00", "Z")


def jsonable(value: Any) -> Any:
    """A JSON-serializable view of ``value``: plain containers, ``repr`` for anything else."""
    return _clean(to_plain(value))


def _clean(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return repr(value)


def envelope(command: str, data: Any) -> dict[str, Any]:
    """Wrap ``data`` for ``command`` (e.g. ``"runs ls"``) in the versioned envelope."""
    now = dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z")
    return {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "generated_at": now,
        "data": data,
    }


def emit_json(command: str, data: Any) -> None:
    """Print the envelope of ``data`` as indented JSON on stdout."""
    click.echo(json.dumps(envelope(command, data), indent=2, ensure_ascii=False))
