"""The ``--json`` envelope every read command prints, and turning values into JSON."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import click

from flowdbg._json import jsonable, strict_json
from flowdbg._views import iso

__all__ = ["JSON_SCHEMA_VERSION", "emit_json", "envelope", "iso", "jsonable"]

#: the version of the --json outputs' schemas (the database has its own: DB_SCHEMA_VERSION)
JSON_SCHEMA_VERSION = 1


def envelope(command: str, data: Any) -> dict[str, Any]:
    """Wrap ``data`` for ``command`` (e.g. ``"runs ls"``) in the versioned envelope."""
    now = dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z")
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "command": command,
        "generated_at": now,
        "data": data,
    }


def emit_json(command: str, data: Any) -> None:
    """Print the envelope of ``data`` as indented JSON on stdout.

    Values in ``data`` should already be :func:`jsonable`. The whole envelope goes through
    :func:`~flowdbg._json.strict_json` once more, so that the fields built without it (an error
    message holding a lone surrogate, a duration) cannot make the output invalid either: ``jq``
    and every strict parser read it.
    """
    plain = strict_json(envelope(command, data))
    click.echo(json.dumps(plain, indent=2, ensure_ascii=False, allow_nan=False))
