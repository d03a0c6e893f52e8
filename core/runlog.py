"""The run log: an always-on, in-memory account of one run, its steps and its nested runs.

Every run under the debugger has a :class:`RunLog`. The debugger fills it live (the run record when
the run starts, each :class:`~flowdbg.records.StepRecord` as its unit finishes, nested runs as they
start, the final record when the run ends); :meth:`RunLog.from_records` rebuilds one from stored
records. A log answers the questions asked after a run without any setup before it: what ran, in
which order, how long each node took, which routing decisions were made and what failed.

It keeps timing, status, decisions and errors only. Values (inputs, outputs, states) stay on the
records it holds and in the store; they are not shown or exported here.
"""

from __future__ import annotations

import bisect
import html
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flowdbg._json import jsonable
from flowdbg._values import short_repr
from flowdbg.events import ErrorInfo
from flowdbg.records import RunRecord, StepRecord

__all__ = ["VIEWS", "NodeStats", "RunLog", "format_duration"]

#: The table layouts :meth:`RunLog.render` accepts.
VIEWS = ("auto", "steps", "stats")

_ELLIPSIS = "\u2026"
_TABLE_WIDTH = 120  # every table row stays shorter than this
_NODE_WIDTH = 32
_MIN_NOTE_WIDTH = 20
_GAP = "  "
_SHORT_ID = 8
_SUMMARY_ERROR_CHARS = 100
_MAX_LISTED_CHILDREN = 10
_MAX_LISTED_ERRORS = 5
_MAX_FAILED_NODES = 3
# Auto view: per-node stats when a long run repeats nodes, or any node repeats more than this.
_STATS_MIN_STEPS = 20
_STATS_MAX_REPEATS = 3

_NODE_KIND = "node"
_CALL_KIND = "call"  # a call of no more specific kind

_STEP_HEADER = ("step", "node", "kind", "status", "duration", "decision / error")
_STATS_HEADER = ("node", "count", "total", "avg", "max", "errors")
_STATS_RIGHT = frozenset({1, 2, 3, 4, 5})


def format_duration(seconds: float | None) -> str:
    """Format a duration for people: ``850µs``, ``120ms``, ``2.4s``, ``4m32s``, ``1h02m``.

    :param seconds: the duration in seconds, or ``None`` when unknown (negative values count as 0).
    :returns: the text, or ``"-"`` for ``None`` (and for NaN).
    """
    if seconds is None or math.isnan(seconds):
        return "-"
    seconds = max(float(seconds), 0.0)
    if math.isinf(seconds):
        return "inf"
    # Each unit is used only if the value still fits it once rounded (0.9996 s is "1.0s").
    micros = round(seconds * 1e6)
    if micros < 1000:
        return f"{micros}µs"
    millis = round(seconds * 1e3)
    if millis < 1000:
        return f"{millis}ms"
    if round(seconds, 1) < 60:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    minutes = round(seconds / 60)
    return f"{minutes // 60}h{minutes % 60:02d}m"


@dataclass(frozen=True)
class NodeStats:
    """Timing of one node (or tool, model call, ...) over every time it ran in a run.

    ``count`` includes executions still running; ``total``, ``avg`` and ``max`` are seconds over
    the finished ones; ``errors`` counts the failed ones. Units of different kinds that share a
    name (an OpenAI agent ``billing`` and the handoff to it) are counted apart: each is keyed
    by ``"name (kind)"`` in :attr:`RunLog.node_stats` then.
    """

    node: str
    count: int
    total: float
    avg: float
    errors: int
    max: float
    #: the units' kind (``node``, ``tool``, ``llm``, ``handoff``, ``agent``)
    kind: str = "node"

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict of every field."""
        return {
            "node": self.node,
            "count": self.count,
            "total": self.total,
            "avg": self.avg,
            "errors": self.errors,
            "max": self.max,
            "kind": self.kind,
        }


class RunLog:
    """The account of one run: its record, its steps ordered by step index, its nested runs.

    Steps and nested runs may be added from several threads at once. Reading (the properties,
    :meth:`summary`, ``str(log)``) is safe while a run is going on and shows it so far.

    :param run: the run's record; :meth:`finish` replaces it with the final one.
    """

    def __init__(self, run: RunRecord) -> None:
        #: the run's record (the final one once :meth:`finish` was called)
        self.run = run
        self._lock = threading.Lock()
        self._steps: list[StepRecord] = []
        self._indices: list[int] = []  # step indices of _steps, for bisect
        self._children: dict[str, RunLog] = {}

    # -- filling --

    def add_step(self, step: StepRecord) -> None:
        """Add a unit's record. A record with the step index of one already held replaces it.

        :param step: the record; units of the run's frames (tool and model calls inside a node)
            belong here too, they share the run's id.
        :raises ValueError: if the step belongs to another run.
        """
        if step.run_id != self.run.run_id:
            raise ValueError(
                f"step {step.step} ({step.node!r}) belongs to run {step.run_id!r}, not to run "
                f"{self.run.run_id!r}; add it to that run's log"
            )
        index = step.step
        with self._lock:
            indices = self._indices
            if not indices or index > indices[-1]:  # units mostly finish in order
                indices.append(index)
                self._steps.append(step)
                return
            position = bisect.bisect_left(indices, index)
            if position < len(indices) and indices[position] == index:
                self._steps[position] = step
            else:
                indices.insert(position, index)
                self._steps.insert(position, step)

    def add_child(self, log: RunLog) -> None:
        """Add the log of a nested run started by a unit of this run.

        :param log: the nested run's log; its ``run.parent_run_id`` is this run's id and its
            ``run.parent_step`` the step index of the unit that started it. Adding a log for a run
            already held replaces it.
        :raises ValueError: if the nested run's parent is another run.
        """
        if log.run.parent_run_id != self.run.run_id:
            raise ValueError(
                f"run {log.run.run_id!r} has parent run {log.run.parent_run_id!r}, not "
                f"{self.run.run_id!r}; add it to its parent's log"
            )
        with self._lock:
            self._children[log.run.run_id] = log

    def finish(self, run: RunRecord) -> None:
        """Record how the run ended.

        :param run: the run's final record (status, ``ended_at``, error, output).
        :raises ValueError: if it is the record of another run.
        """
        if run.run_id != self.run.run_id:
            raise ValueError(
                f"cannot finish the log of run {self.run.run_id!r} with the record of run "
                f"{run.run_id!r}"
            )
        self.run = run

    @classmethod
    def from_records(
        cls,
        run: RunRecord,
        steps: Sequence[StepRecord],
        children: Sequence[RunLog] = (),
    ) -> RunLog:
        """Build the log of a recorded run.

        :param run: the run's record.
        :param steps: its step records, in any order.
        :param children: the logs of its nested runs (built the same way).
        :returns: the log.
        :raises ValueError: if a step or a child belongs to another run.
        """
        log = cls(run)
        for step in steps:
            log.add_step(step)
        for child in children:
            log.add_child(child)
        return log

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunLog:
        """Rebuild a log from :meth:`to_dict` output (after a JSON round trip, say).

        Step values are not part of that output, so the steps' ``input``, ``output`` and ``state``
        are ``None``, and errors have no traceback.

        :param data: the dict.
        :returns: the log.
        :raises KeyError: if a required field is missing.
        """
        run = RunRecord(
            run_id=data["run_id"],
            framework=data["framework"],
            name=data["name"],
            parent_run_id=data.get("parent_run_id"),
            root_run_id=data.get("root_run_id"),
            parent_step=data.get("parent_step"),
            path=tuple(data.get("path", ())),
            status=data.get("status", "running"),
            started_at=data.get("started_at", 0.0),
            ended_at=data.get("ended_at"),
            input=data.get("input"),
            output=data.get("output"),
            error=_error_from_dict(data.get("error")),
            tags=dict(data.get("tags") or {}),
            step_count=data.get("step_count"),
        )
        steps = [
            StepRecord(
                run_id=run.run_id,
                step=item["step"],
                node=item["node"],
                kind=item.get("kind", "node"),
                path=tuple(item.get("path", ())),
                superstep=item.get("superstep"),
                branch=item.get("branch"),
                attempt=item.get("attempt", 1),
                status=item.get("status", "completed"),
                started_at=item.get("started_at", 0.0),
                ended_at=item.get("ended_at"),
                decision=item.get("decision"),
                error=_error_from_dict(item.get("error")),
                child_run_id=item.get("child_run_id"),
                cached=bool(item.get("cached", False)),
            )
            for item in data.get("steps", ())
        ]
        children = [cls.from_dict(child) for child in data.get("children", ())]
        return cls.from_records(run, steps, children)

    # -- reading --

    @property
    def steps(self) -> list[StepRecord]:
        """The run's own step records ordered by step index (a copy)."""
        with self._lock:
            return list(self._steps)

    @property
    def children(self) -> list[RunLog]:
        """The logs of the nested runs, ordered by the step that started them."""
        with self._lock:
            children = list(self._children.values())
        return sorted(children, key=_child_order)

    @property
    def errors(self) -> list[StepRecord]:
        """The run's own failed steps, in step order (see :attr:`all_errors`)."""
        return [step for step in self.steps if step.status == "failed"]

    @property
    def all_errors(self) -> list[StepRecord]:
        """Failed steps of this run and of every nested run: this run's first, then each nested
        run's in :attr:`children` order (each record's ``run_id`` tells which run it is from)."""
        found = self.errors
        for child in self.children:
            found.extend(child.all_errors)
        return found

    @property
    def timing(self) -> dict[str, float]:
        """Seconds spent per node over the run's own finished steps, in order of first
        appearance."""
        return {name: stats.total for name, stats in self.node_stats.items()}

    @property
    def node_stats(self) -> dict[str, NodeStats]:
        """Per-node :class:`NodeStats` over the run's own steps, in order of first appearance."""
        return _node_stats(self.steps)

    @property
    def duration(self) -> float | None:
        """Seconds from start to end of the run, or ``None`` while it runs."""
        return self.run.duration

    def summary(self) -> str:
        """One line about the run, for example ``support (stategraph) completed: 4 steps over
        4 nodes in 1.2s, 0 errors, slowest classify (820ms)``.

        The slowest is the node (or call) of the longest single unit, with its time; one that
        ran several times adds its count and their time summed (``slowest lookup (930ms; 2\u00d7,
        1.8s summed)``), which for units that ran at once can exceed the run's.

        Units of another kind than ``node`` (tool and model calls made inside a node) are counted
        as calls apart from the nodes: ``7 steps: 3 over 2 nodes, 4 calls (2 tool, 2 llm)``. A
        failed run names its error first (``failed: ValueError: boom at x=2; ...``); nested runs
        are counted at the end.

        :returns: the line.
        """
        return _summary(self.run, self.steps, self.children)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict: the run's fields, ``summary``, ``steps`` (timing,
        status, decision and error of each; no values), ``node_stats`` and ``children`` (nested
        runs' dicts, recursively).

        ``step_count`` counts every step; ``node_count`` the distinct nodes, ``node_steps`` the
        steps of kind ``node``, ``call_count`` the others (tool and model calls...) and ``calls``
        those by kind, e.g. ``{"tool": 2, "llm": 2}``.
        """
        run = self.run
        steps = self.steps
        nodes, node_steps, calls = _kind_counts(steps)
        return {
            "run_id": run.run_id,
            "framework": run.framework,
            "name": run.name,
            "parent_run_id": run.parent_run_id,
            "root_run_id": run.root_run_id,
            "parent_step": run.parent_step,
            "path": list(run.path),
            "status": run.status,
            "started_at": run.started_at,
            "ended_at": run.ended_at,
            "duration": run.duration,
            "error": _error_dict(run.error),
            "tags": dict(run.tags),
            "step_count": len(steps),
            "node_count": len(nodes),
            "node_steps": node_steps,
            "call_count": sum(calls.values()),
            "calls": calls,
            "input": jsonable(run.input),
            "output": jsonable(run.output),
            "summary": _summary(run, steps, self.children),
            "steps": [_step_dict(step) for step in steps],
            "node_stats": {name: s.to_dict() for name, s in _node_stats(steps).items()},
            "children": [child.to_dict() for child in self.children],
        }

    # -- display --

    def render(self, view: str = "auto", *, expand: bool = False) -> str:
        """The log as text: the summary line, then a table.

        :param view: ``"steps"``: one row per step, units run inside a node (tool and model
            calls) indented under it, each nested run as a link on the row of the step that
            started it; ``"stats"``: one row per node with its count, total, average and maximum
            time and errors, then the failed steps and the nested runs; ``"auto"``: the stats
            view when a run of more than 20 steps repeats a node or any node ran more than 3
            times, else the step view.
        :param expand: show nested runs in full under the step that started them (every nested
            run in the step view, whatever its size) instead of as links.
        :returns: the text; every table row is shorter than 120 characters.
        :raises ValueError: if ``view`` is not one of :data:`VIEWS`.
        """
        if view not in VIEWS:
            raise ValueError(f"unknown run log view {view!r}; use one of {', '.join(VIEWS)}")
        return "\n".join(self._text(view, expand))

    def auto_view(self) -> str:
        """The view ``render("auto")`` shows for this run: ``"stats"`` or ``"steps"``."""
        return _Snapshot.of(self).pick("auto")

    def tree(self) -> str:
        """The log with nested runs expanded under the step that started them, indented
        (``render("steps", expand=True)``).

        :returns: the text.
        """
        return self.render("steps", expand=True)

    def __str__(self) -> str:
        """The summary line and the table of the auto view (see :meth:`render`)."""
        return self.render()

    def __repr__(self) -> str:
        run = self.run
        count = len(self.steps)
        return (
            f"<RunLog {run.name!r} {run.run_id[:_SHORT_ID]} {run.status}, {_plural(count, 'step')}>"
        )

    def _repr_html_(self) -> str:
        """The auto view as an HTML table, for notebooks; every value is escaped."""
        snapshot = _Snapshot.of(self)
        view = snapshot.pick("auto")
        parts = [
            '<div class="flowdbg-runlog">',
            f"<p><strong>{_esc(snapshot.summary())}</strong></p>",
        ]
        header: Sequence[str] = _STATS_HEADER
        right = _STATS_RIGHT
        if view == "stats":
            rows = snapshot.stats_rows()
        else:
            header, right = _STEP_HEADER, frozenset()
            step_rows = snapshot.step_rows(expand=False)
            budget = _note_budget(step_rows)
            rows = [row.cells(budget) for row in step_rows]
        if rows:
            status_column = -1 if view == "stats" else 3
            parts.append(_html_table(header, rows, right, status_column=status_column))
        else:
            parts.append("<p><em>(no steps)</em></p>")
        footer = [line for line in snapshot.footer(view, expand=False) if line]
        if footer:
            items = "".join(f"<li>{_esc(line.strip())}</li>" for line in footer)
            parts.append(f'<ul style="list-style: none; padding-left: 0">{items}</ul>')
        parts.append("</div>")
        return "\n".join(parts)

    def _text(self, requested: str, expand: bool) -> list[str]:
        snapshot = _Snapshot.of(self)
        view = snapshot.pick(requested)
        lines = [snapshot.summary(), ""]
        if view == "stats":
            rows = snapshot.stats_rows()
            if rows:
                lines.extend(_text_table(_STATS_HEADER, rows, _STATS_RIGHT))
        else:
            step_rows = snapshot.step_rows(expand=expand)
            if step_rows:
                budget = _note_budget(step_rows)
                rows = [row.cells(budget) for row in step_rows]
                lines.extend(_text_table(_STEP_HEADER, rows, frozenset()))
        if not snapshot.steps:
            lines.append("(no steps)")
        lines.extend(snapshot.footer(view, expand=expand))
        if expand:
            # The step view expands linked nested runs in its table; the others (all of them in
            # the stats view) follow the table, each indented under a line naming it.
            for child in snapshot.unlinked_children(view):
                lines.append("")
                lines.append(_child_line(child, with_summary=False))
                lines.extend(f"    {line}" if line else "" for line in child._text(requested, True))
        return lines


# --------------------------------------------------------------------------------------------
# Building views
# --------------------------------------------------------------------------------------------


@dataclass
class _StepRow:
    """One row of the step view; the last column is formatted once its width is known."""

    label: str
    node: str
    kind: str
    status: str
    duration: str
    step: StepRecord
    link: str

    def fixed(self) -> tuple[str, str, str, str, str]:
        return (self.label, self.node, self.kind, self.status, self.duration)

    def cells(self, budget: int) -> list[str]:
        return [*self.fixed(), _note(self.step, self.link, budget)]


@dataclass
class _Snapshot:
    """A consistent copy of a log's contents for one rendering."""

    run: RunRecord
    steps: list[StepRecord]
    children: list[RunLog]

    @classmethod
    def of(cls, log: RunLog) -> _Snapshot:
        run = log.run
        return cls(run, log.steps, log.children)

    def summary(self) -> str:
        return _summary(self.run, self.steps, self.children)

    def pick(self, view: str) -> str:
        if view != "auto":
            return view
        counts: dict[str, int] = {}
        for step in self.steps:
            counts[step.node] = counts.get(step.node, 0) + 1
        most = max(counts.values(), default=0)
        repeats = most > _STATS_MAX_REPEATS or (len(self.steps) > _STATS_MIN_STEPS and most > 1)
        return "stats" if repeats else "steps"

    def links(self) -> dict[int, list[RunLog]]:
        """Nested runs by the step index that started them (steps of this run only), each
        step's in the order they started."""
        indices = {step.step for step in self.steps}
        # a step names only the last run it started (child_run_id); the others name the step
        # (parent_step)
        owner = {step.child_run_id: step.step for step in self.steps if step.child_run_id}
        by_step: dict[int, list[RunLog]] = {}
        for child in self.children:  # in the order they started
            at = owner.get(child.run.run_id, child.run.parent_step)
            if at is not None and at in indices:
                by_step.setdefault(at, []).append(child)
        return by_step

    def unlinked_children(self, view: str) -> list[RunLog]:
        if view == "stats":
            return self.children
        linked = {id(child) for group in self.links().values() for child in group}
        return [child for child in self.children if id(child) not in linked]

    def step_rows(self, *, expand: bool, label: str = "", level: int = 0) -> list[_StepRow]:
        rows: list[_StepRow] = []
        links = self.links()

        def emit(unit: _Unit) -> None:
            step = unit.step
            children = links.get(step.step, [])
            row_label = f"{label}.{step.step}" if label else str(step.step)
            rows.append(
                _StepRow(
                    label=row_label,
                    node=_clip(_indent(level, unit.depth) + step.node, _NODE_WIDTH),
                    kind=step.kind,
                    status=_status(step),
                    duration=format_duration(step.duration),
                    step=step,
                    link=_link(children),
                )
            )
            for nested in unit.inside:
                emit(nested)
            if expand:  # after the units run inside this one: they belong to this run
                for number, child in enumerate(children):
                    # several runs of one step: 1a.1, 1b.1, ... tell their steps apart
                    prefix = row_label if len(children) == 1 else row_label + _letters(number)
                    snapshot = _Snapshot.of(child)
                    rows.extend(snapshot.step_rows(expand=True, label=prefix, level=level + 1))

        for unit in _units(self.steps, len(self.run.path)):
            emit(unit)
        return rows

    def stats_rows(self) -> list[list[str]]:
        return [
            [
                _clip(name, _NODE_WIDTH),
                str(s.count),
                format_duration(s.total),
                format_duration(s.avg),
                format_duration(s.max),
                str(s.errors),
            ]
            for name, s in _node_stats(self.steps).items()
        ]

    def footer(self, view: str, *, expand: bool) -> list[str]:
        lines: list[str] = []
        if view == "stats":
            failed = [step for step in self.steps if step.status == "failed"]
            if failed:
                lines.append("")
                lines.append(f"{_plural(len(failed), 'failed step')}:")
                for step in failed[:_MAX_LISTED_ERRORS]:
                    head = f"  step {step.step} {step.node}: "
                    lines.append(head + _error_text(step.error, _TABLE_WIDTH - 1 - len(head)))
                if len(failed) > _MAX_LISTED_ERRORS:
                    lines.append(f"  {_ELLIPSIS} and {len(failed) - _MAX_LISTED_ERRORS} more")
        children = self.unlinked_children(view)
        if children and not expand:
            lines.append("")
            title = "nested runs" if view == "stats" else "nested runs not linked to a step"
            lines.append(f"{title}:")
            for child in children[:_MAX_LISTED_CHILDREN]:
                lines.append(_child_line(child))
            if len(children) > _MAX_LISTED_CHILDREN:
                lines.append(f"  {_ELLIPSIS} and {len(children) - _MAX_LISTED_CHILDREN} more")
        return lines


@dataclass
class _Unit:
    """A step in display order, with the units run inside it (its tool and model calls)."""

    step: StepRecord
    depth: int
    inside: list[_Unit]


def _units(steps: list[StepRecord], base: int) -> list[_Unit]:
    """The steps as a forest: each unit holds the units run inside it, recursively.

    A nested unit's ``path`` ends with its enclosing unit's name, and that unit opened first, so
    it is the latest earlier step of that name one level up. A nested unit whose enclosing unit is
    not (yet) in the log stays at the top, in its place.
    """
    roots: list[_Unit] = []
    latest: dict[tuple[int, str], _Unit] = {}
    for step in steps:
        depth = max(len(step.path) - base, 0)
        parent = latest.get((depth - 1, step.path[-1])) if depth and step.path else None
        unit = _Unit(step, depth, [])
        (roots if parent is None else parent.inside).append(unit)
        latest[(depth, step.node)] = unit
    return roots


def _indent(level: int, depth: int) -> str:
    """Node-column prefix: two spaces per nested run level, ``└`` for units inside a node."""
    if depth <= 0:
        return "  " * level
    return "  " * (level + depth) + "\u2514 "


def _status(step: StepRecord) -> str:
    status = step.status if step.attempt <= 1 else f"{step.status}, attempt {step.attempt}"
    return f"{status}, cached" if step.cached else status


def _link(children: list[RunLog]) -> str:
    if not children:
        return ""
    if len(children) == 1:
        child = children[0]
        status = "" if child.run.status == "completed" else f", {child.run.status}"
        count = _step_count(child)
        return f"[child run {child.run.run_id[:_SHORT_ID]}: {_plural(count, 'step')}{status}]"
    count = sum(_step_count(child) for child in children)
    failed = sum(child.run.status == "failed" for child in children)
    extra = f", {failed} failed" if failed else ""
    return f"[{len(children)} child runs: {_plural(count, 'step')}{extra}]"


def _step_count(log: RunLog) -> int:
    count = len(log.steps)
    return count if count or log.run.step_count is None else log.run.step_count


def _child_line(child: RunLog, *, with_summary: bool = True) -> str:
    run = child.run
    where = "" if run.parent_step is None else f" from step {run.parent_step}"
    head = f"  child run {run.run_id[:_SHORT_ID]}{where}:"
    if not with_summary:
        return head
    return f"{head} {_clip(child.summary(), _TABLE_WIDTH - 2 - len(head))}"


def _note(step: StepRecord, link: str, budget: int) -> str:
    """The last column of a step row: the error or the decision, then the nested-run link."""
    room = budget - (len(link) + 1 if link else 0)
    if step.status == "failed" or step.error is not None:
        text = _error_text(step.error, room) if step.error is not None else ""
    else:
        text = _decision_text(step.decision, room)
    if not link:
        return text
    if not text:
        return link
    return f"{text} {link}" if len(text) + 1 + len(link) <= budget else _clip(link, budget)


def _decision_text(decision: Any, limit: int) -> str:
    if decision is None:
        return ""
    limit = max(limit - 3, 1)
    if isinstance(decision, str):
        text = _clip(decision, limit)
    elif isinstance(decision, list | tuple) and all(isinstance(item, str) for item in decision):
        if not decision:
            return ""
        text = _clip(", ".join(decision), limit)
    else:
        text = _clip(short_repr(decision, limit), limit)
    return f"-> {text}"


def _error_text(error: ErrorInfo | None, limit: int) -> str:
    if error is None:
        return ""
    text = f"{error.type}: {error.message}" if error.message else error.type
    return _clip(text, limit)


def _note_budget(rows: list[_StepRow]) -> int:
    """Width left for the last column so that rows stay shorter than the table width."""
    used = 0
    for column, header in enumerate(_STEP_HEADER[:-1]):
        used += max([len(header), *(len(row.fixed()[column]) for row in rows)]) + len(_GAP)
    return max(_TABLE_WIDTH - 1 - used, _MIN_NOTE_WIDTH)


# --------------------------------------------------------------------------------------------
# Summary and stats
# --------------------------------------------------------------------------------------------


def _kind_labels(units: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """How to name each ``(name, kind)`` of units in a table: the name, or ``"name (kind)"``
    where units of several kinds share it (an OpenAI agent and the handoff to it)."""
    kinds: dict[str, set[str]] = {}
    for name, kind in units:
        kinds.setdefault(name, set()).add(kind)
    return {
        (name, kind): name if len(found) == 1 else f"{name} ({kind})"
        for name, found in kinds.items()
        for kind in found
    }


def _node_stats(steps: list[StepRecord]) -> dict[str, NodeStats]:
    # (node, kind) -> [count, finished, total, errors, max]
    acc: dict[tuple[str, str], list[Any]] = {}
    for step in steps:
        entry = acc.setdefault((step.node, step.kind), [0, 0, 0.0, 0, 0.0])
        entry[0] += 1
        duration = step.duration
        if duration is not None:
            entry[1] += 1
            entry[2] += duration
            entry[4] = max(entry[4], duration)
        if step.status == "failed":
            entry[3] += 1
    labels = _kind_labels(acc)
    return {
        labels[node, kind]: NodeStats(
            node=node,
            count=count,
            total=total,
            avg=total / finished if finished else 0.0,
            errors=errors,
            max=longest,
            kind=kind,
        )
        for (node, kind), (count, finished, total, errors, longest) in acc.items()
    }


def _summary(run: RunRecord, steps: list[StepRecord], children: list[RunLog]) -> str:
    stats = _node_stats(steps)
    failed_steps = [step for step in steps if step.status == "failed"]
    head = f"{_clip(run.name, _NODE_WIDTH)} ({run.framework}) {run.status}"
    error = run.error
    if error is None and run.status == "failed" and failed_steps:
        error = failed_steps[-1].error
    if run.status == "failed" and error is not None:
        head += f": {_error_text(error, _SUMMARY_ERROR_CHARS)};"
    else:
        head += ":"
    counts = _counts(steps)
    duration = run.duration
    counts += " so far" if duration is None else f" in {format_duration(duration)}"
    parts = [counts]
    errors = _plural(len(failed_steps), "error")
    if failed_steps:
        names = list(dict.fromkeys(_clip(step.node, _NODE_WIDTH) for step in failed_steps))
        shown = ", ".join(names[:_MAX_FAILED_NODES])
        errors += f" ({shown}{', ' + _ELLIPSIS if len(names) > _MAX_FAILED_NODES else ''})"
    parts.append(errors)
    if any(step.ended_at is not None for step in steps):
        # the node of the longest single unit: summed, the calls of a node that ran at once
        # (parallel tool calls) could take longer than the whole run
        name, slowest = max(stats.items(), key=lambda item: item[1].max)
        summed = ""
        if slowest.count > 1:
            summed = f"; {slowest.count}\u00d7, {format_duration(slowest.total)} summed"
        parts.append(f"slowest {_clip(name, _NODE_WIDTH)} ({format_duration(slowest.max)}{summed})")
    if children:
        text = _plural(len(children), "child run")
        failed = sum(child.run.status == "failed" for child in children)
        if failed:
            text += f" ({failed} failed)"
        parts.append(text)
    return f"{head} {', '.join(parts)}"


def _kind_counts(steps: list[StepRecord]) -> tuple[list[str], int, dict[str, int]]:
    """The distinct nodes, the number of node steps, and the calls (units of another kind than
    ``node``, such as tool and model calls inside a node) by kind, in order of first appearance."""
    nodes: dict[str, None] = {}
    node_steps = 0
    calls: dict[str, int] = {}
    for step in steps:
        if step.kind == _NODE_KIND:
            nodes[step.node] = None
            node_steps += 1
        else:
            calls[step.kind] = calls.get(step.kind, 0) + 1
    return list(nodes), node_steps, calls


def _counts(steps: list[StepRecord]) -> str:
    """``3 steps over 2 nodes``; with calls, ``7 steps: 3 over 2 nodes, 4 calls (2 tool, 2
    llm)``, so that a node is never counted twice for the calls it makes."""
    nodes, node_steps, calls = _kind_counts(steps)
    total = _plural(len(steps), "step")
    if not calls:
        return f"{total} over {_plural(len(nodes), 'node')}"
    parts = [f"{node_steps} over {_plural(len(nodes), 'node')}"] if node_steps else []
    count = sum(calls.values())
    if len(calls) == 1:
        kind = next(iter(calls))
        noun = "call" if kind == _CALL_KIND else f"{kind} call"
        parts.append(_plural(count, noun))
    else:
        by_kind = ", ".join(
            f"{n} {'other' if kind == _CALL_KIND else kind}" for kind, n in calls.items()
        )
        parts.append(f"{_plural(count, 'call')} ({by_kind})")
    return f"{total}: {', '.join(parts)}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _letters(number: int) -> str:
    """``a``, ``b``, ... ``z``, ``aa``, ``ab``, ...: the ``number``-th (from 0) child run of a
    step in the labels of the step view."""
    text = ""
    number += 1
    while number:
        number, rest = divmod(number - 1, 26)
        text = chr(ord("a") + rest) + text
    return text


def _child_order(log: RunLog) -> tuple[bool, int, float]:
    step = log.run.parent_step
    return (step is None, step or 0, log.run.started_at)


# --------------------------------------------------------------------------------------------
# Text and HTML
# --------------------------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    if "\n" in text or "\r" in text or "\t" in text:
        text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + _ELLIPSIS


def _text_table(header: Sequence[str], rows: list[list[str]], right: frozenset[int]) -> list[str]:
    widths = [max([len(header[i]), *(len(row[i]) for row in rows)]) for i in range(len(header))]
    last = len(header) - 1

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            if i in right:
                out.append(cell.rjust(widths[i]))
            elif i == last:
                out.append(cell)
            else:
                out.append(cell.ljust(widths[i]))
        return _GAP.join(out).rstrip()

    return [line(header), *(line(row) for row in rows)]


def _esc(value: str) -> str:
    return html.escape(value, quote=True)


def _html_table(
    header: Sequence[str], rows: list[list[str]], right: frozenset[int], *, status_column: int
) -> str:
    pad = "padding: 1px 8px"
    cells = "".join(
        f'<th style="{pad}; text-align: {"right" if i in right else "left"}">{_esc(name)}</th>'
        for i, name in enumerate(header)
    )
    body = []
    for row in rows:
        tds = []
        for i, cell in enumerate(row):
            style = f"{pad}; white-space: pre; text-align: {'right' if i in right else 'left'}"
            if i == status_column and cell.startswith("failed"):
                style += "; color: #c62828"
            tds.append(f'<td style="{style}">{_esc(cell)}</td>')
        body.append(f"<tr>{''.join(tds)}</tr>")
    return (
        '<table style="border-collapse: collapse; font-family: monospace">'
        f"<thead><tr>{cells}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


# --------------------------------------------------------------------------------------------
# Dicts
# --------------------------------------------------------------------------------------------


def _error_dict(error: ErrorInfo | None) -> dict[str, str] | None:
    return None if error is None else {"type": error.type, "message": error.message}


def _error_from_dict(data: Mapping[str, Any] | None) -> ErrorInfo | None:
    if data is None:
        return None
    return ErrorInfo(
        type=data.get("type", ""),
        message=data.get("message", ""),
        traceback=data.get("traceback", ""),
        module=data.get("module", ""),
    )


def _step_dict(step: StepRecord) -> dict[str, Any]:
    return {
        "node": step.node,
        "kind": step.kind,
        "path": list(step.path),
        "step": step.step,
        "superstep": step.superstep,
        "branch": step.branch,
        "attempt": step.attempt,
        "status": step.status,
        "started_at": step.started_at,
        "ended_at": step.ended_at,
        "duration": step.duration,
        "decision": jsonable(step.decision),
        "error": _error_dict(step.error),
        "child_run_id": step.child_run_id,
        "cached": step.cached,
    }
