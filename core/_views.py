"""Plain JSON views of what flowdbg records and holds, shared by its front ends.

The command line's ``--json`` outputs and the debug server (HTTP and MCP) show runs, steps,
diffs and stops the same way; the shapes are those of :mod:`flowdbg.schemas`. Nothing here
prints or imports a front end's packages (click, rich, FastAPI).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from flowdbg._json import jsonable
from flowdbg.errors import EditRefused

if TYPE_CHECKING:
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.stops import Stop

__all__ = [
    "editable_now",
    "error_dict",
    "iso",
    "leftout_dict",
    "run_dict",
    "runs_diff_dict",
    "short_id",
    "step_dict",
]


def iso(timestamp: float | None) -> str | None:
    """An epoch timestamp as an ISO 8601 UTC string (``2024-05-01T12:00:00.123456Z``)."""
    if timestamp is None:
        return None
    moment = dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc)
    return moment.isoformat().replace("+00:00", "Z")


def short_id(run_id: str | None) -> str:
    """The 8-character form of a run id shown in tables."""
    return "-" if not run_id else run_id[:8]


def error_dict(error: Any) -> dict[str, Any] | None:
    """An :class:`~flowdbg.events.ErrorInfo` (or a dict of one) as JSON, or ``None``."""
    if error is None:
        return None
    if hasattr(error, "to_dict"):
        return dict(error.to_dict())
    return dict(error)


def run_dict(run: RunRecord, *, values: bool = False) -> dict[str, Any]:
    """A run as the ``--json`` outputs and the server show it (schema ``#/$defs/run``);
    with ``values``, its input and output too."""
    data: dict[str, Any] = {
        "run_id": run.run_id,
        "short_id": short_id(run.run_id),
        "name": run.name,
        "framework": run.framework,
        "status": run.status,
        "parent_run_id": run.parent_run_id,
        "root_run_id": run.root_run_id,
        "parent_step": run.parent_step,
        "path": list(run.path),
        "started_at": iso(run.started_at or None),
        "ended_at": iso(run.ended_at),
        "duration": run.duration,
        "steps": run.step_count,
        "error": error_dict(run.error),
        "tags": dict(run.tags or {}),
        "pid": run.pid,
        "host": run.host,
        "target": run.target,
        "origin": run.origin,
        "forked_from": run.forked_from,
        "fork_step": run.fork_step,
    }
    if values:
        data["input"] = jsonable(run.input)
        data["output"] = jsonable(run.output)
        data["config"] = jsonable(run.config)
    return data


def step_dict(step: StepRecord, *, values: bool = False) -> dict[str, Any]:
    """A step as the ``--json`` outputs and the server show it (schema ``#/$defs/step``);
    with ``values``, its input and output too."""
    data: dict[str, Any] = {
        "run_id": step.run_id,
        "step": step.step,
        "node": step.node,
        "kind": step.kind,
        "path": list(step.path),
        "status": step.status,
        "started_at": iso(step.started_at or None),
        "ended_at": iso(step.ended_at),
        "duration": step.duration,
        "superstep": step.superstep,
        "branch": step.branch,
        "attempt": step.attempt,
        "decision": jsonable(step.decision),
        "error": error_dict(step.error),
        "partial": bool(step.partial),
        "child_run_id": step.child_run_id,
        "cached": bool(step.cached),
    }
    if values:
        data["input"] = jsonable(step.input)
        data["output"] = jsonable(step.output)
    return data


def leftout_dict(result: Any) -> dict[str, Any]:
    """What a comparison of runs or steps left out: its ``ignored`` differences, ``ignore``
    globs, ``strict`` and ``warnings``."""
    return {
        "ignored": [item.to_dict() for item in result.ignored],
        "ignore": list(result.ignore),
        "strict": result.strict,
        "warnings": list(result.warnings),
    }


def runs_diff_dict(a: RunRecord, b: RunRecord, result: Any) -> dict[str, Any]:
    """Two runs compared (``Store.diff_runs``'s ``result``), as ``flowdbg runs diff --json``
    and ``GET /records/diff`` show it: per-node counts and times with their ``delta``, and
    where the runs first diverge (schema ``RunsDiff``)."""
    first = result.first_divergence
    return {
        "a": run_dict(a),
        "b": run_dict(b),
        "nodes": [
            {**jsonable(node.to_dict()), "delta": node.total_b - node.total_a}
            for node in result.nodes
        ],
        "first_divergence": None if first is None else jsonable(first.to_dict()),
        **leftout_dict(result),
    }


def editable_now(stop: Stop) -> str | None:
    """The view of ``stop`` that an edit changes (``input``, ``output``), or ``None`` where
    its adapter refuses every edit (a tool call seen through callbacks, say): the adapter's
    check is tried on the payload as it is."""
    which = stop.editable
    unit = stop._unit
    if which is None or unit is None or unit.check_edit is None:
        return which
    try:
        unit.check_edit(unit, which, getattr(stop, which))
    except EditRefused:
        return None
    return which
