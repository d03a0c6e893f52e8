"""The store interface every backend implements, and the parts all backends share."""

from __future__ import annotations

import abc
import os
import pathlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from flowdbg._diff import Change
from flowdbg._diff import diff as state_diff
from flowdbg._paths import get_path
from flowdbg.records import RunRecord, StepRecord
from flowdbg.store._ignore import Ignored, IgnoreRules

if TYPE_CHECKING:
    from flowdbg.timetravel import DivergenceReport

__all__ = [
    "DEFAULT_DB",
    "Divergence",
    "NodeDelta",
    "RunDiff",
    "StepDiff",
    "Store",
    "default_db_path",
    "find_db",
]

_S = TypeVar("_S", bound="Store")

#: where runs are recorded unless ``FLOWDBG_DB`` or ``--db`` says otherwise: in the nearest
#: ``.flowdbg`` folder of the current directory or its parents (see :func:`find_db`), else
#: relative to the current directory
DEFAULT_DB = ".flowdbg/flowdbg.db"


def find_db(start: str | os.PathLike[str] | None = None) -> pathlib.Path | None:
    """The database of the nearest ``.flowdbg`` folder, looking up from ``start`` as git looks
    for ``.git``.

    The search goes up from ``start`` to the top of the git repository it is in (the folder
    holding ``.git``, which is searched too), so that a project's runs are never recorded into
    a folder above the project; outside a repository it goes up to the filesystem root, but
    not into the home directory from below it (a ``~/.flowdbg`` would otherwise collect the
    runs of every project under ``~``).

    :param start: the folder to start from; ``None`` for the current directory.
    :returns: ``<folder>/.flowdbg/flowdbg.db`` of the nearest folder holding a ``.flowdbg``
        folder (whether or not the database exists yet), else ``None``.
    """
    here = pathlib.Path.cwd() if start is None else pathlib.Path(start).absolute()
    try:
        home: pathlib.Path | None = pathlib.Path.home()
    except (KeyError, RuntimeError):  # no home directory (a service account)
        home = None
    for folder in (here, *here.parents):
        if folder == home and folder != here:
            return None
        try:
            if (folder / ".flowdbg").is_dir():
                return folder / DEFAULT_DB
            if (folder / ".git").exists():
                return None
        except OSError:  # a folder we may not look into ends the search, as the root does
            return None
    return None


def default_db_path() -> pathlib.Path:
    """The database to use when none is given.

    :returns: ``$FLOWDBG_DB`` when it is set (and not empty); else the database of the nearest
        ``.flowdbg`` folder (:func:`find_db`), as ``.flowdbg/flowdbg.db`` when it is in the
        current directory; else ``.flowdbg/flowdbg.db`` (relative: recording creates it in the
        current directory).
    """
    env = os.environ.get("FLOWDBG_DB", "").strip()
    if env:
        return pathlib.Path(env).expanduser()
    found = find_db()
    if found is None or found.parent.parent == pathlib.Path.cwd():
        return pathlib.Path(DEFAULT_DB)
    return found


# --------------------------------------------------------------------------------------------
# Run diffs
# --------------------------------------------------------------------------------------------


@dataclass
class NodeDelta:
    """How often a node ran in two runs, how long it took in total and how its runs ended.
    Units of different kinds that share a name (an OpenAI agent and the handoff to it) are
    counted apart."""

    node: str
    count_a: int = 0
    count_b: int = 0
    #: seconds, summed over the node's finished steps
    total_a: float = 0.0
    total_b: float = 0.0
    #: step status -> how many of the node's steps ended so
    statuses_a: dict[str, int] = field(default_factory=dict)
    statuses_b: dict[str, int] = field(default_factory=dict)
    #: the units' kind (``node``, ``tool``, ``llm``, ``handoff``, ``agent``)
    kind: str = "node"

    @property
    def status_changed(self) -> bool:
        """Whether the node's steps ended in different ways (say, one failed in ``b`` only);
        a node that merely ran more often in one run has not changed status."""
        return set(self.statuses_a) != set(self.statuses_b)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "node": self.node,
            "kind": self.kind,
            "count_a": self.count_a,
            "count_b": self.count_b,
            "total_a": self.total_a,
            "total_b": self.total_b,
            "statuses_a": dict(self.statuses_a),
            "statuses_b": dict(self.statuses_b),
            "status_changed": self.status_changed,
        }


@dataclass
class Divergence:
    """The first place where two runs differ.

    ``kind`` is ``"path"`` when different units ran (or one run stopped earlier), ``"status"``
    when the same unit ended differently, ``"state"`` when it left a different state (or, for a
    unit without a state, returned a different output; ``paths`` then start with ``output``).
    """

    kind: Literal["path", "state", "status"]
    #: the step numbers in each run (``None`` where that run has no such step)
    step_a: int | None
    step_b: int | None
    node_a: str | None
    node_b: str | None
    detail: str
    #: the state paths whose values differ (``kind == "state"``)
    paths: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "kind": self.kind,
            "step_a": self.step_a,
            "step_b": self.step_b,
            "node_a": self.node_a,
            "node_b": self.node_b,
            "detail": self.detail,
            "paths": list(self.paths),
        }


def _run_summary(run: RunRecord) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "name": run.name,
        "framework": run.framework,
        "status": run.status,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "duration": run.duration,
        "step_count": run.step_count,
        "error": None if run.error is None else run.error.to_dict(),
    }


@dataclass
class RunDiff:
    """Two runs compared: per-node counts, timings and outcomes, and where they first differ."""

    a: RunRecord
    b: RunRecord
    #: one row per node that ran in either run, in order of first appearance
    nodes: list[NodeDelta]
    #: ``None`` when the runs took the same path with the same states and outcomes
    first_divergence: Divergence | None
    #: the differences left out (volatile values, ``ignore`` globs) up to the first divergence
    ignored: list[Ignored] = field(default_factory=list)
    #: the ``ignore`` globs given
    ignore: list[str] = field(default_factory=list)
    #: whether volatile values were compared too
    strict: bool = False
    #: what the reader should know, such as runs of two different graphs
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``a``, ``b`` (run summaries), ``nodes``, ``first_divergence``,
        ``ignored``, ``ignore``, ``strict`` and ``warnings``."""
        return {
            "a": _run_summary(self.a),
            "b": _run_summary(self.b),
            "nodes": [node.to_dict() for node in self.nodes],
            "first_divergence": None
            if self.first_divergence is None
            else self.first_divergence.to_dict(),
            "ignored": [item.to_dict() for item in self.ignored],
            "ignore": list(self.ignore),
            "strict": self.strict,
            "warnings": list(self.warnings),
        }


@dataclass
class StepDiff:
    """The states after two steps compared (of one run, or of two)."""

    a: RunRecord
    b: RunRecord
    step_a: int
    step_b: int
    #: the nodes (units) of the two steps
    node_a: str | None
    node_b: str | None
    #: what changed from the state after ``step_a`` to the state after ``step_b``, by path;
    #: ``old`` and ``new`` are the stored values
    changes: list[Change]
    #: the differences left out (volatile values, ``ignore`` globs)
    ignored: list[Ignored] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    strict: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``a``, ``b`` (run summaries), ``step_a``, ``step_b``, ``node_a``,
        ``node_b``, ``changes`` (``path``, ``kind``, ``old``, ``new``), ``ignored``, ``ignore``,
        ``strict`` and ``warnings``."""
        return {
            "a": _run_summary(self.a),
            "b": _run_summary(self.b),
            "step_a": self.step_a,
            "step_b": self.step_b,
            "node_a": self.node_a,
            "node_b": self.node_b,
            "changes": [
                {"path": c.path, "kind": c.kind, "old": c.old, "new": c.new} for c in self.changes
            ],
            "ignored": [item.to_dict() for item in self.ignored],
            "ignore": list(self.ignore),
            "strict": self.strict,
            "warnings": list(self.warnings),
        }


def graph_warnings(a: RunRecord, b: RunRecord) -> list[str]:
    """A warning when two runs compared are not of one graph (their names or frameworks
    differ): their differences then say little about a change."""
    if (a.name, a.framework) == (b.name, b.framework):
        return []
    return [
        f"run a is of {a.name!r} ({a.framework}) and run b of {b.name!r} ({b.framework}): "
        "they are runs of different graphs, compared step by step all the same"
    ]


def _value_at(value: Any, path: str, fallback: Any) -> Any:
    try:
        return get_path(value, path)
    except Exception:  # a path the parser refuses (a dunder key): the compared copy will do
        return fallback


@dataclass
class DiffRow:
    """A step as :meth:`Store.diff_runs` compares it: the record (without values) and tokens
    standing for its state and output. Equal tokens mean equal values; unequal tokens are
    loaded with :meth:`Store._diff_value` and compared."""

    step: StepRecord
    state: Any
    output: Any
    #: it ran concurrently with others and was placed among them by what it did (see
    #: :func:`_unordered`), not by when it started
    concurrent: bool = False


def _aligned(rows: list[DiffRow]) -> list[DiffRow]:
    """Steps in a canonical order: by step, but units that ran concurrently (and may be
    numbered in any order) sorted: those of one superstep by node, branch and attempt; those of
    frameworks without supersteps (LlamaIndex's workers of a step, parallel tool calls) by what
    they were and what they left (see :func:`_unordered`), so that two runs whose concurrent
    units only ran in another order line up unit by unit, while a unit that ran in one of them
    only, or ended or left something otherwise, still shows."""
    rows = sorted(rows, key=lambda row: row.step.step)
    out: list[DiffRow] = []
    group: list[DiffRow] = []  # one superstep's units
    loose: list[DiffRow] = []  # units without a superstep, in step order

    def flush() -> None:
        out.extend(sorted(group, key=_concurrent_key))
        group.clear()
        out.extend(_unordered(loose))
        loose.clear()

    for row in rows:
        superstep = row.step.superstep
        if superstep is None:
            if group:
                flush()
            loose.append(row)
        else:
            if loose or (group and superstep != group[0].step.superstep):
                flush()
            group.append(row)
    flush()
    return out


def _unordered(rows: list[DiffRow]) -> list[DiffRow]:
    """``rows`` (units without a superstep, in step order) with the stretches where units ran
    concurrently sorted by :func:`_overlapping_key`.

    The record says two units ran concurrently when one started while the other was running
    and is not inside it (a tool call inside its node is not concurrency). How concurrent
    units interleave with the rest depends on timing, and so does where a pause with nothing
    running falls: a stretch runs from a unit that overlapped another to the last unit of a
    node (at its path) that overlapped one in the stretch, the units in between included (in
    a LlamaIndex run, the workers of one step that start as others end, and the steps their
    events start between them).
    """
    # windows: units chained by overlapping in time
    windows: list[list[DiffRow]] = []
    running: list[StepRecord] = []  # the units still running as this one started
    until = float("-inf")  # when the last of them ends
    for row in rows:
        step = row.step
        start = step.started_at
        if start >= until:  # (most units: the ones before have ended)
            running.clear()
        elif running:
            running = [o for o in running if o.ended_at is not None and start < o.ended_at]
        if running and any(not _inside(step, other) for other in running):
            windows[-1].append(row)
        else:
            windows.append([row])
        if step.ended_at is not None:  # (a unit that never ended says nothing of when it ran)
            running.append(step)
            until = max(until, step.ended_at) if len(running) > 1 else step.ended_at
    if len(windows) == len(rows):  # nothing ran concurrently
        return rows
    last: dict[tuple[tuple[str, ...], str], int] = {}
    for index, window in enumerate(windows):
        for row in window:
            last[row.step.path, row.step.node] = index
    out: list[DiffRow] = []
    index = 0
    while index < len(windows):
        if len(windows[index]) < 2:
            out.extend(windows[index])
            index += 1
            continue
        end = scanned = index
        while scanned <= end:  # the stretch grows with each concurrent window it takes in
            if len(windows[scanned]) > 1:
                end = max([end, *(last[r.step.path, r.step.node] for r in windows[scanned])])
            scanned += 1
        stretch = [row for window in windows[index : end + 1] for row in window]
        for row in stretch:
            row.concurrent = True
        out.extend(sorted(stretch, key=_overlapping_key))
        index = end + 1
    return out


def _count_detail(
    sa: StepRecord, sb: StepRecord, rows_a: list[DiffRow], rows_b: list[DiffRow]
) -> tuple[str, tuple[Any, str, str]] | None:
    """How often the units of ``sa`` and ``sb`` ran in each run, where that differs, and which
    unit (path, node, kind) that is."""
    for step in (sa, sb):
        unit = (step.path, step.node, step.kind)
        count_a = sum((r.step.path, r.step.node, r.step.kind) == unit for r in rows_a)
        count_b = sum((r.step.path, r.step.node, r.step.kind) == unit for r in rows_b)
        if count_a != count_b:
            return (
                f"{_where(step)!r} ran {count_a} time{'s' if count_a != 1 else ''} in run a "
                f"and {count_b} in run b (among units that ran concurrently)"
            ), unit
    return None


def _extra_of(
    unit: tuple[Any, str, str], rows_a: list[DiffRow], rows_b: list[DiffRow]
) -> tuple[int | None, int | None]:
    """Where ``unit`` (path, node, kind), which ran more often in one run, departs: in that
    run the first of its runs the other lacks, in the other its last run (``None`` if none)."""
    runs_a = [r.step.step for r in rows_a if (r.step.path, r.step.node, r.step.kind) == unit]
    runs_b = [r.step.step for r in rows_b if (r.step.path, r.step.node, r.step.kind) == unit]
    shared = min(len(runs_a), len(runs_b))

    def at(runs: list[int]) -> int | None:
        if len(runs) > shared:
            return runs[shared]
        return runs[shared - 1] if shared else None

    return at(runs_a), at(runs_b)


def _inside(step: StepRecord, other: StepRecord) -> bool:
    """Whether ``step`` ran inside ``other`` (a tool call inside its node: not concurrency)."""
    holder = (*other.path, other.node)
    return step.path[: len(holder)] == holder


def _overlapping_key(row: DiffRow) -> tuple[Any, ...]:
    # equal values have equal tokens: units that did the same line up whatever their order
    step = row.step
    return (step.path, step.node, step.kind, repr(row.output), repr(row.state), step.attempt)


def _concurrent_key(row: DiffRow) -> tuple[str, str, int, int]:
    step = row.step
    return (step.node, step.branch or "", step.attempt, step.step)


def _where(step: StepRecord) -> str:
    return "/".join((*step.path, step.node))


def _prefixed(prefix: str, paths: list[str]) -> list[str]:
    return [prefix + ("" if not p else p if p.startswith("[") else "." + p) for p in paths]


def _listing(paths: list[str]) -> str:
    shown = ", ".join(p or "<root>" for p in paths[:5])
    return shown + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


# --------------------------------------------------------------------------------------------
# The interface
# --------------------------------------------------------------------------------------------


class Store(abc.ABC):
    """Where runs and their steps are recorded, and read back from.

    The recorder calls :meth:`write_batch` from its writer thread; front-ends read with the
    query methods, from any thread or process. Values come back as plain JSON values. Run ids
    may be given in full or as a unique prefix of at least 4 characters.
    """

    #: where the store lives, for messages
    path: str

    @abc.abstractmethod
    def write_batch(
        self,
        *,
        runs: Sequence[RunRecord] = (),
        steps: Sequence[StepRecord] = (),
        ended: Sequence[RunRecord] = (),
    ) -> None:
        """Write records in one transaction: new ``runs``, ``steps``, then ``ended`` runs.

        Values (inputs, outputs, states, decisions) are serialized here: values that cannot be
        serialized are stored as a typed repr (the step is flagged ``partial`` and a warning is
        logged once per type), secrets are redacted. Writing the same records again changes
        nothing.

        :param runs: runs that started (inserted, or replaced if known).
        :param steps: finished (or running) steps.
        :param ended: runs that ended: their status, end time, output and error are updated.
        :raises StoreError: if the database cannot be written.
        """

    def write_fields(
        self,
        *,
        runs: Sequence[RunRecord] = (),
        steps: Sequence[tuple[Any, ...]] = (),
        ended: Sequence[RunRecord] = (),
    ) -> None:
        """:meth:`write_batch` with each step given as the tuple of its
        :class:`~flowdbg.records.StepRecord` fields, in their declared order.

        The recorder writes through this method: it hands over the fields it read from each
        unit without making a record object per step. This default makes the records and calls
        :meth:`write_batch`; a store may read the tuples directly.

        :param runs: as for :meth:`write_batch`.
        :param steps: the steps' fields (``run_id, step, node, kind, path, ...``).
        :param ended: as for :meth:`write_batch`.
        :raises StoreError: if the database cannot be written.
        """
        self.write_batch(runs=runs, steps=[StepRecord(*fields) for fields in steps], ended=ended)

    def freeze(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """The values of one step (its input, output, state) taken as they are now, for a
        later :meth:`write_fields` or :meth:`write_batch` on any thread.

        The recorder calls this on the run's thread as each step ends: a framework may go on
        changing those objects in place afterwards (an agent's memory, a run context), and
        the step must be recorded as it was. A store may encode the values here (into a form
        only its own write methods take) or copy them. This default keeps them as they are
        (the values are then recorded as they are when written).

        :param values: live values; ``None`` and plain scalars may be returned as they are.
        :returns: one value per value given, in the same order.
        """
        return values

    @abc.abstractmethod
    def get_run(self, run_id: str) -> RunRecord:
        """One run, with its ``step_count``.

        A run still ``running`` whose recording process (on this host) is gone is reported as
        ``interrupted``.

        :param run_id: the run's id, or a unique prefix of at least 4 characters.
        :returns: the run.
        :raises RunNotFound: if no run, or more than one, matches.
        """

    @abc.abstractmethod
    def list_runs(
        self,
        *,
        status: str | Sequence[str] | None = None,
        since: float | None = None,
        until: float | None = None,
        name: str | None = None,
        parent: str | None = None,
        limit: int | None = 50,
        framework: str | None = None,
    ) -> list[RunRecord]:
        """Runs, newest first.

        :param status: only runs with this status (or one of these); ``"interrupted"`` works.
        :param since: only runs started at or after this time (epoch seconds).
        :param until: only runs started at or before this time (epoch seconds).
        :param name: only runs whose name matches this glob (``*``, ``?``, ``[...]``;
            case-sensitive).
        :param parent: ``None`` for top-level runs, a run id for that run's children, ``"*"``
            for every run.
        :param limit: at most this many runs; ``None`` for all.
        :param framework: only runs of this adapter (``"langgraph"``...).
        :returns: the runs.
        """

    def list_forks(self, run_id: str) -> list[RunRecord]:
        """The runs made from ``run_id`` (its forks, reruns and rewinds: the runs whose
        ``forked_from`` is it), oldest first.

        The default reads every run; a backend with an index overrides it.

        :param run_id: the run's full id.
        """
        runs = [r for r in self.list_runs(parent="*", limit=None) if r.forked_from == run_id]
        runs.sort(key=lambda r: (r.started_at, r.run_id))
        return runs

    @abc.abstractmethod
    def get_steps(
        self,
        run_id: str,
        *,
        node: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        from_step: int | None = None,
        to_step: int | None = None,
        values: bool = True,
    ) -> list[StepRecord]:
        """A run's steps, in step order.

        :param run_id: the run's id or a unique prefix.
        :param node: only the steps of this node.
        :param kind: only steps of this kind (``node``, ``tool``, ``llm``, ...).
        :param status: only steps with this status.
        :param from_step: only steps numbered at least this.
        :param to_step: only steps numbered at most this.
        :param values: ``False`` leaves ``input``, ``output`` and ``state`` as ``None`` (faster).
        :returns: the steps.
        :raises RunNotFound: if the run is unknown.
        """

    @abc.abstractmethod
    def get_state(self, run_id: str, step: int | None = None) -> Any:
        """The state after a step: the one recorded at the latest step at or before it. A call
        inside a unit (a tool or model call, an @task) records none, since its unit commits the
        state: at its step the state is the one that unit started from. Where the calls write
        the run's state themselves (an agent's tools; see :attr:`flowdbg.Frame.calls_write_state`)
        each records the state after it, and the state at a call's step is the latest its
        unit's calls recorded by then (the one its unit started from before the first).

        :param run_id: the run's id or a unique prefix.
        :param step: a step number; ``None`` for the latest state.
        :returns: the state as plain JSON values, or ``None`` if no state was recorded by then.
        :raises RunNotFound: if the run is unknown.
        :raises StepNotFound: if ``step`` is outside the run's steps.
        """

    @abc.abstractmethod
    def last_writers(self, run_id: str, step: int | None = None) -> dict[str, tuple[int, str]]:
        """Which step last changed each top-level key of the state after ``step``.

        :param run_id: the run's id or a unique prefix.
        :param step: a step number; ``None`` for the latest state.
        :returns: key -> ``(step, node)`` for every key of that state some step changed (keys
            still as they were before the run's first step are left out: that state where it was
            recorded, else the run's input).
        :raises RunNotFound: if the run is unknown.
        :raises StepNotFound: if ``step`` is outside the run's steps.
        """

    @abc.abstractmethod
    def prune(self, *, older_than: float | None = None, keep: int | None = None) -> int:
        """Delete top-level runs, with their nested runs, steps and the values only they used.

        Runs still being recorded by a live process are never deleted.

        :param older_than: delete runs started before this time (epoch seconds).
        :param keep: delete all but the newest ``keep`` top-level runs.
        :returns: how many top-level runs were deleted.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Close the store; it cannot be used afterwards."""

    # -- diffs: shared by every backend --

    def _diff_rows(self, run_id: str) -> list[DiffRow]:
        """The rows :meth:`diff_runs` compares; backends return cheap tokens instead."""
        return [DiffRow(step, step.state, step.output) for step in self.get_steps(run_id)]

    def _diff_value(self, token: Any) -> Any:
        """The value a token of :meth:`_diff_rows` stands for."""
        return token

    def diff_runs(
        self, a: str, b: str, *, ignore: Iterable[str] = (), strict: bool = False
    ) -> RunDiff:
        """Compare two runs (typically of one graph): what ran, how long, and where they part.

        Steps are compared in order, but units that ran concurrently by what they were and
        did, whatever order they ran in: those of one superstep by node, and where a framework
        has no supersteps (LlamaIndex's workers of a step, parallel tool calls) those the
        record shows running at the same time (one started while the other ran):
        the first pair that ran different units is a ``path`` divergence, the first that ended
        with a different status a ``status`` one, the first that left a different state (or,
        the state the same, returned something else: ``output...`` paths) a ``state`` one,
        with the differing paths. Values that are new on every run
        (message ids, generated ids, timestamps: see :mod:`flowdbg.store._ignore`) are left out
        unless ``strict``, and listed in :attr:`RunDiff.ignored`.

        :param a: a run id or unique prefix.
        :param b: another.
        :param ignore: globs of state paths to leave out too (``messages[*].id``, ``**.usage``).
        :param strict: compare volatile values too (``ignore`` globs still apply).
        :returns: the comparison; its ``warnings`` say when the runs are of different graphs.
        :raises RunNotFound: if a run is unknown.
        :raises ValueError: if an ``ignore`` glob is empty.
        """
        rules = IgnoreRules(ignore, strict=strict)
        run_a, run_b = self.get_run(a), self.get_run(b)
        rows_a = _aligned(self._diff_rows(run_a.run_id))
        rows_b = _aligned(self._diff_rows(run_b.run_id))
        return RunDiff(
            a=run_a,
            b=run_b,
            nodes=_node_deltas(rows_a, rows_b),
            first_divergence=self._first_divergence(rows_a, rows_b, rules),
            ignored=rules.ignored,
            ignore=list(rules.patterns),
            strict=strict,
            warnings=graph_warnings(run_a, run_b),
        )

    def divergence(
        self, a: str, b: str, *, ignore: Iterable[str] = (), strict: bool = False
    ) -> DivergenceReport:
        """How run ``b`` (typically a fork or rerun of ``a``) departs from run ``a``: the first
        divergence with the old and new value at its first path, the model and tool calls
        served from the record and run live, what the served ones took in ``a``, and per
        branch the first call that differs. A fork is compared from its fork step on.

        See :func:`flowdbg.timetravel.divergence`.

        :param a: a run id or unique prefix (the source).
        :param b: another (the run made from it).
        :param ignore: globs of state paths to leave out.
        :param strict: compare volatile values too.
        :raises RunNotFound: if a run is unknown.
        :raises ValueError: if an ``ignore`` glob is empty.
        """
        from flowdbg.timetravel import divergence

        return divergence(self, a, b, ignore=tuple(ignore), strict=strict)

    def diff_steps(
        self,
        a: str,
        step_a: int,
        step_b: int,
        *,
        b: str | None = None,
        ignore: Iterable[str] = (),
        strict: bool = False,
    ) -> StepDiff:
        """Compare the state after one step with the state after another: of one run (say,
        what steps 3 to 7 changed), or of two runs (``b``).

        The states are those :meth:`get_state` gives; volatile values and ``ignore`` globs are
        left out as in :meth:`diff_runs`.

        :param a: a run id or unique prefix.
        :param step_a: a step of run ``a``.
        :param step_b: a step of run ``b`` (of run ``a`` when ``b`` is not given).
        :param b: another run, or ``None`` for run ``a``.
        :param ignore: globs of state paths to leave out.
        :param strict: compare volatile values too.
        :returns: the changes from the first state to the second.
        :raises RunNotFound: if a run is unknown.
        :raises StepNotFound: if a step is outside its run's steps.
        :raises ValueError: if an ``ignore`` glob is empty.
        """
        rules = IgnoreRules(ignore, strict=strict)
        run_a = self.get_run(a)
        run_b = run_a if b is None else self.get_run(b)
        state_a = self.get_state(run_a.run_id, step_a)
        state_b = self.get_state(run_b.run_id, step_b)
        norm_a, norm_b = rules.normalize(state_a, state_b)
        changes = [
            Change(
                change.path,
                change.kind,
                None if change.kind == "added" else _value_at(state_a, change.path, change.old),
                None if change.kind == "removed" else _value_at(state_b, change.path, change.new),
            )
            for change in state_diff(norm_a, norm_b).changes()
        ]
        return StepDiff(
            a=run_a,
            b=run_b,
            step_a=step_a,
            step_b=step_b,
            node_a=self._node_of(run_a.run_id, step_a),
            node_b=self._node_of(run_b.run_id, step_b),
            changes=changes,
            ignored=rules.ignored,
            ignore=list(rules.patterns),
            strict=strict,
            warnings=[] if run_a is run_b else graph_warnings(run_a, run_b),
        )

    def _node_of(self, run_id: str, step: int) -> str | None:
        found = self.get_steps(run_id, from_step=step, to_step=step, values=False)
        return found[0].node if found else None

    def _first_divergence(
        self, rows_a: list[DiffRow], rows_b: list[DiffRow], rules: IgnoreRules | None = None
    ) -> Divergence | None:
        rules = IgnoreRules() if rules is None else rules
        quiet: IgnoreRules | None = None  # made once, when outputs are first compared
        for index in range(max(len(rows_a), len(rows_b))):
            if index >= len(rows_a) or index >= len(rows_b):
                longer, name, other = (
                    (rows_a, "a", "b") if index < len(rows_a) else (rows_b, "b", "a")
                )
                step = longer[index].step
                return Divergence(
                    kind="path",
                    step_a=step.step if name == "a" else None,
                    step_b=step.step if name == "b" else None,
                    node_a=step.node if name == "a" else None,
                    node_b=step.node if name == "b" else None,
                    detail=f"run {other} ended after {index} steps; run {name} went on with "
                    f"{_where(step)!r} (step {step.step})",
                )
            row_a, row_b = rows_a[index], rows_b[index]
            sa, sb = row_a.step, row_b.step
            common: dict[str, Any] = {
                "step_a": sa.step,
                "step_b": sb.step,
                "node_a": sa.node,
                "node_b": sb.node,
            }
            if (sa.path, sa.node, sa.kind) != (sb.path, sb.node, sb.kind):
                detail = (
                    f"run a ran {_where(sa)!r} (step {sa.step}) where run b ran "
                    f"{_where(sb)!r} (step {sb.step})"
                )
                if row_a.concurrent and row_b.concurrent:
                    # placed by what they did, not when: say what ran more often instead, at
                    # that unit's steps (the rows here are of two different units)
                    counted = _count_detail(sa, sb, rows_a, rows_b)
                    if counted is not None:
                        detail, unit = counted
                        step_a, step_b = _extra_of(unit, rows_a, rows_b)
                        common = {
                            "step_a": step_a,
                            "step_b": step_b,
                            "node_a": unit[1] if step_a is not None else None,
                            "node_b": unit[1] if step_b is not None else None,
                        }
                return Divergence(kind="path", detail=detail, **common)
            if sa.status != sb.status:
                detail = f"{_where(sa)!r} {sa.status} in run a and {sb.status} in run b"
                error = sa.error or sb.error
                if error is not None:
                    detail += f" ({error.type}: {error.message})"
                return Divergence(kind="status", detail=detail, **common)
            if (
                sa.error is not None
                and sb.error is not None
                and ((sa.error.type, sa.error.message) != (sb.error.type, sb.error.message))
            ):
                detail = (
                    f"{_where(sa)!r} failed differently: {sa.error.type}: {sa.error.message} in "
                    f"run a, {sb.error.type}: {sb.error.message} in run b"
                )
                return Divergence(kind="status", detail=detail, **common)
            paths = self._value_paths(row_a.state, row_b.state, rules)
            what = "state after"
            if paths is None and row_a.state is None and row_b.state is None:
                paths = self._value_paths(row_a.output, row_b.output, rules, ("output",))
                paths = None if paths is None else _prefixed("output", paths)
                what = "output of"
            elif paths is None:
                # the same state after it, but a unit may still have returned something else
                # that no state holds (a tool's result, an agent's answer, an emitted event);
                # what it returned is compared as an update of the state: the same globs
                # apply, and what they leave out here is not tallied twice
                if quiet is None:
                    quiet = IgnoreRules(rules.patterns, strict=rules.strict)
                paths = self._value_paths(row_a.output, row_b.output, quiet)
                paths = None if paths is None else _prefixed("output", paths)
                what = "output of"
            if paths is not None:
                blamed = None
                if what == "state after" and sa.superstep is not None:
                    blamed = self._writer_in_superstep(rows_a, rows_b, index, rules)
                if blamed is not None:
                    # units of one superstep share the state after it: name the one whose
                    # update differs rather than the first of them
                    wa, wb = blamed
                    return Divergence(
                        kind="state",
                        detail=f"the state after superstep {sa.superstep} differs at "
                        f"{_listing(paths)}: the update of {_where(wa)!r} differs",
                        paths=paths,
                        step_a=wa.step,
                        step_b=wb.step,
                        node_a=wa.node,
                        node_b=wb.node,
                    )
                return Divergence(
                    kind="state",
                    detail=f"the {what} {_where(sa)!r} differs at {_listing(paths)}",
                    paths=paths,
                    **common,
                )
        return None

    def _writer_in_superstep(
        self, rows_a: list[DiffRow], rows_b: list[DiffRow], index: int, rules: IgnoreRules
    ) -> tuple[StepRecord, StepRecord] | None:
        """Of the units of the superstep at ``index`` (the same units in both runs, from
        there on), the first pair whose outputs differ; ``None`` when none do or the unit ran
        alone in it."""
        superstep = rows_a[index].step.superstep
        group = [row for row in rows_a if row.step.superstep == superstep]
        if len(group) < 2:
            return None  # a unit alone in its superstep: the state after it is its own
        for k in range(index, min(len(rows_a), len(rows_b))):
            sa, sb = rows_a[k].step, rows_b[k].step
            if sa.superstep != superstep or sb.superstep != superstep:
                break
            if (sa.path, sa.node, sa.kind) != (sb.path, sb.node, sb.kind):
                break
            if self._value_paths(rows_a[k].output, rows_b[k].output, rules) is not None:
                return sa, sb
        return None

    def _value_paths(
        self, token_a: Any, token_b: Any, rules: IgnoreRules, prefix: tuple[str, ...] = ()
    ) -> list[str] | None:
        """The paths where two values differ, ``None`` if they are equal (once what ``rules``
        leave out is)."""
        if token_a == token_b:
            return None
        value_a, value_b = self._diff_value(token_a), self._diff_value(token_b)
        if value_a == value_b:
            return None
        value_a, value_b = rules.normalize(value_a, value_b, prefix)
        if value_a == value_b:
            return None
        return state_diff(value_a, value_b).paths or [""]

    # -- context manager --

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _node_deltas(rows_a: list[DiffRow], rows_b: list[DiffRow]) -> list[NodeDelta]:
    deltas: dict[tuple[str, str], NodeDelta] = {}
    for side, rows in (("a", rows_a), ("b", rows_b)):
        for row in rows:
            step = row.step
            delta = deltas.get((step.node, step.kind))
            if delta is None:
                delta = deltas[step.node, step.kind] = NodeDelta(step.node, kind=step.kind)
            duration = step.duration or 0.0
            statuses = delta.statuses_a if side == "a" else delta.statuses_b
            statuses[step.status] = statuses.get(step.status, 0) + 1
            if side == "a":
                delta.count_a += 1
                delta.total_a += duration
            else:
                delta.count_b += 1
                delta.total_b += duration
    return list(deltas.values())
