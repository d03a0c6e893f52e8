"""``flowdbg runs ...``: the recorded runs in the store."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # rich is imported when something is printed: --help stays fast
    from rich.text import Text

from flowdbg._paths import get_path
from flowdbg._values import summarize
from flowdbg._views import error_dict, leftout_dict, run_dict, runs_diff_dict, step_dict
from flowdbg.records import RUN_STATUSES

from ._app import CliError, _db_hint, db_label, db_option, json_option, resolve_db
from ._envelope import emit_json, iso, jsonable
from ._render import (
    Out,
    as_json_text,
    duration,
    local_time,
    preview,
    short_id,
    state_table,
    text_table,
)
from ._time import WHEN

if TYPE_CHECKING:
    import datetime as dt

    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.store import Store

__all__ = ["runs_group"]

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
_KINDS = ("node", "tool", "llm", "handoff", "agent")
_STATUS_STYLE = {
    "completed": "green",
    "failed": "red",
    "terminated": "yellow",
    "interrupted": "yellow",
    "suspended": "yellow",
    "running": "cyan",
}


# ------------------------------------------------------------------------------ helpers


class _Ctx:
    """An open store and how to name it in messages."""

    def __init__(self, store: Store, db: str | None, path: str) -> None:
        self.store = store
        self.db = db
        self.label = db_label(path)

    def run(self, run_id: str) -> RunRecord:
        """The run with this id or id prefix, or a one-line error naming the database."""
        from flowdbg.store import RunNotFound

        try:
            return self.store.get_run(run_id)
        except RunNotFound as exc:
            message = str(exc)
            if "ambiguous" in message or "at least" in message:
                raise CliError(message) from None
            raise CliError(
                f"no run {run_id!r} in {self.label}; list runs with: flowdbg runs ls"
                + _db_hint(self.db)
            ) from None

    def children(self, run_id: str) -> list[RunRecord]:
        """The runs nested directly in ``run_id``, oldest first."""
        runs = list(self.store.list_runs(parent=run_id, limit=None))
        runs.sort(key=lambda r: r.started_at or 0.0)
        return runs


@contextlib.contextmanager
def _open(db: str | None, *, write: bool = False) -> Iterator[_Ctx]:
    """The store, opened read-only unless ``write``: reading works on a read-only file, folder
    or mount, and never changes the database."""
    from flowdbg.store import open_store

    path = resolve_db(db)
    store = open_store(path, create=False, readonly=not write)
    try:
        yield _Ctx(store, db, str(getattr(store, "path", path)))
    finally:
        store.close()


def _epoch(moment: dt.datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def made_from(run: RunRecord, *, full: bool = False) -> str:
    """``fork of 3f2a91c0 at step 6`` (``rerun of ...``, ``rewind of ...``), or ``""``."""
    if run.forked_from is None:
        return ""
    source = run.forked_from if full else short_id(run.forked_from)
    at = "" if run.fork_step is None or run.origin == "rerun" else f" at step {run.fork_step}"
    return f"{run.origin or 'fork'} of {source}{at}"


def _status(status: str) -> Text:
    from rich.text import Text

    return Text(status, style=_STATUS_STYLE.get(status, ""))


def _where(step: StepRecord) -> str:
    """A step's node as runs show writes it: ``parent/child`` for a unit inside another."""
    return "/".join((*step.path, step.node))


def _node_steps(
    ctx: _Ctx, run: RunRecord, node: str | None, **filters: Any
) -> Sequence[StepRecord]:
    """The steps of ``run`` (of ``node`` when given: a name, or the path form
    ``parent/child`` that runs show, stops and breakpoints use for a nested unit)."""
    if node is None or "/" not in node.strip("/"):
        name = None if node is None else node.strip("/")
        return ctx.store.get_steps(run.run_id, node=name, **filters)
    path = node.strip("/")
    steps = ctx.store.get_steps(run.run_id, node=path.rsplit("/", 1)[1], **filters)
    # the full path, or its end (b/c of a/b/c)
    return [s for s in steps if _where(s) == path or _where(s).endswith("/" + path)]


def _check_node(ctx: _Ctx, run: RunRecord, node: str, steps: Sequence[StepRecord]) -> None:
    if steps:
        return
    names: list[str] = []
    for step in ctx.store.get_steps(run.run_id, values=False):
        # the path form asked for is answered with the paths there are
        name = _where(step) if "/" in node.strip("/") else step.node
        if name not in names:
            names.append(name)
    raise CliError(
        f"run {short_id(run.run_id)} has no step of node {node!r}; its nodes: "
        + (", ".join(names) or "none")
    )


def _log(ctx: _Ctx, run: RunRecord, steps: Sequence[StepRecord], tree: bool) -> Any:
    from flowdbg.runlog import RunLog

    children = (
        [
            _log(ctx, child, ctx.store.get_steps(child.run_id, values=False), tree)
            for child in ctx.children(run.run_id)
        ]
        if tree
        else []
    )
    return RunLog.from_records(run, list(steps), children)


def _run_header(out: Out, run: RunRecord) -> None:
    head = f"run {run.run_id}  started {local_time(run.started_at)}"
    if run.parent_run_id:
        at = "" if run.parent_step is None else f" at step {run.parent_step}"
        head += f"  nested in {short_id(run.parent_run_id)}{at}"
    if run.forked_from:
        head += f"  {made_from(run)}"
    if run.tags:
        head += "  " + " ".join(f"{key}={value}" for key, value in sorted(run.tags.items()))
    if run.target:
        head += f"  target {run.target}"
    if run.config is not None:  # what a rerun starts with again
        head += f"  config {preview(run.config)}"
    out.line(head, style="bold")


def _tree_dict(ctx: _Ctx, run: RunRecord) -> dict[str, Any]:
    return {
        "run": run_dict(run),
        "steps": [step_dict(s) for s in ctx.store.get_steps(run.run_id, values=False)],
        "children": [_tree_dict(ctx, child) for child in ctx.children(run.run_id)],
    }


# ------------------------------------------------------------------------------ commands


@click.group("runs", context_settings=_CONTEXT)
def runs_group() -> None:
    """Look at recorded runs: list, show, state, steps, diff, replay, prune."""


@runs_group.command("ls", context_settings=_CONTEXT)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(RUN_STATUSES, case_sensitive=False),
    help="only runs with this status (repeatable)",
)
@click.option("--since", type=WHEN, help="only runs started at or after WHEN (e.g. '1h ago')")
@click.option("--until", type=WHEN, help="only runs started before WHEN (e.g. yesterday)")
@click.option("--name", metavar="GLOB", help="only runs whose name matches GLOB (e.g. 'sup*')")
@click.option(
    "--parent", metavar="ID", help="only runs nested in run ID; '*' lists nested runs too"
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    metavar="N",
    help="at most N runs",
)
@click.option(
    "--tree",
    is_flag=True,
    help="list each run's forks and reruns under it (those made from a run listed)",
)
@db_option
@json_option
def runs_ls(
    statuses: tuple[str, ...],
    since: dt.datetime | None,
    until: dt.datetime | None,
    name: str | None,
    parent: str | None,
    limit: int,
    tree: bool,
    db: str | None,
    as_json: bool,
) -> None:
    """List recorded runs, newest first (top-level runs unless --parent is given).

    WHEN is an ISO date or datetime, now, today, yesterday, or an age such as 30m ago, 1h ago,
    2d ago.
    """
    with _open(db) as ctx:
        parent_id = parent
        if parent is not None and parent != "*":
            parent_id = ctx.run(parent).run_id
        runs = ctx.store.list_runs(
            status=[s.lower() for s in statuses] or None,
            since=_epoch(since),
            until=_epoch(until),
            name=name,
            parent=parent_id,
            limit=limit,
        )
        # with --tree: a run made from another run listed goes under it, not in the list
        listed = {run.run_id for run in runs}
        made: dict[str, list[RunRecord]] = {}
        if tree:
            for run in sorted(runs, key=lambda r: (r.started_at, r.run_id)):
                if run.forked_from in listed:
                    made.setdefault(run.forked_from, []).append(run)
        roots = [run for run in runs if not (tree and run.forked_from in listed)]
        if as_json:
            data: dict[str, Any] = {
                "db": ctx.label,
                "count": len(runs),
                "runs": [run_dict(r) for r in runs],
            }
            if tree:
                data["tree"] = [_fork_tree(run, made) for run in roots]
            emit_json("runs ls", data)
            return
        out = Out()
        if not runs:
            out.line(f"no runs in {ctx.label} match")
            return
        rows: list[list[str | Text]] = []

        def add(run: RunRecord, depth: int) -> None:
            label = short_id(run.run_id)
            rows.append(
                [
                    "  " * depth + ("└ " if depth else "") + label,
                    run.name,
                    run.framework,
                    _status(run.status),
                    local_time(run.started_at),
                    duration(run.duration),
                    "-" if run.step_count is None else str(run.step_count),
                    made_from(run) or "",
                ]
            )
            for child in made.get(run.run_id, ()):
                add(child, depth + 1)

        for run in roots:
            add(run, 0)
        headers = ["id", "name", "framework", "status", "started", "duration", "steps", "from"]
        if not any(row[-1] for row in rows):
            headers.pop()
            rows = [row[:-1] for row in rows]
        out.show(text_table(headers, rows, right=[5, 6]))


def _fork_tree(run: RunRecord, made: dict[str, list[RunRecord]]) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "forks": [_fork_tree(child, made) for child in made.get(run.run_id, ())],
    }


@runs_group.command("show", context_settings=_CONTEXT)
@click.argument("run_id", metavar="ID")
@click.option("--errors", is_flag=True, help="only failed steps, with their tracebacks")
@click.option(
    "--node", metavar="NODE", help="only the steps of NODE (PARENT/NODE: of NODE inside PARENT)"
)
@click.option("--tree", is_flag=True, help="expand nested runs (subgraphs, nested workflows)")
@click.option(
    "--view",
    type=click.Choice(["auto", "steps", "stats"]),
    default="auto",
    show_default=True,
    help="steps: one row per step; stats: one row per node; auto: stats for a long run that "
    "repeats nodes",
)
@db_option
@json_option
def runs_show(
    run_id: str,
    errors: bool,
    node: str | None,
    tree: bool,
    view: str,
    db: str | None,
    as_json: bool,
) -> None:
    """The run log of run ID (an id or a unique prefix): one row per step, or one per node
    for a long run that repeats nodes (--view steps or stats chooses)."""
    with _open(db) as ctx:
        run = ctx.run(run_id)
        steps = _node_steps(ctx, run, node, status="failed" if errors else None, values=False)
        if node is not None:
            _check_node(ctx, run, node, steps)
        if as_json:
            children = (
                [_tree_dict(ctx, c) for c in ctx.children(run.run_id)]
                if tree
                else [{"run": run_dict(c)} for c in ctx.children(run.run_id)]
            )
            emit_json(
                "runs show",
                {
                    "run": run_dict(run, values=True),
                    "steps": [step_dict(s) for s in steps],
                    "children": children,
                    "filters": {"errors": errors, "node": node},
                },
            )
            return
        out = Out()
        _run_header(out, run)
        if errors:
            if run.error is not None:
                out.line(f"run error: {run.error.type}: {run.error.message}", style="red")
            out.line("")
            if not steps:
                out.line("no step failed")
            for step in steps:
                where = "/".join((*step.path, step.node))
                out.line(f"step {step.step} {where} (attempt {step.attempt})", style="bold")
                if step.error is not None:
                    out.line(f"  {step.error.type}: {step.error.message}", style="red")
                    out.block(step.error.traceback.rstrip(), "    ")
            return
        log = _log(ctx, run, steps, tree)
        if view == "auto" and node is not None:
            view = "steps"  # the steps of one node: each of them
        if tree:
            out.block(log.tree())
        else:
            out.block(log.render(view))
            if view == "auto" and log.auto_view() == "stats":
                out.line(f"(one row per node: {len(steps)} steps; --view steps lists each)")
        if not tree:
            count = len(ctx.children(run.run_id))
            if count:
                out.line("")
                out.line(f"{count} nested run{'s' if count != 1 else ''}; expand with --tree")


@runs_group.command("state", context_settings=_CONTEXT)
@click.argument("run_id", metavar="ID")
@click.option("--step", type=int, metavar="N", help="the state after step N (default: the end)")
@click.option("--values", is_flag=True, help="print every value in full")
@click.option("--key", "path", metavar="PATH", help="print only the value at PATH")
@db_option
@json_option
def runs_state(
    run_id: str, step: int | None, values: bool, path: str | None, db: str | None, as_json: bool
) -> None:
    """The state of run ID after a step: one row per key, with the step that last wrote it."""
    from flowdbg.store import StepNotFound

    with _open(db) as ctx:
        run = ctx.run(run_id)
        try:
            state = ctx.store.get_state(run.run_id, step=step)
            writers = ctx.store.last_writers(run.run_id, step=step)
        except StepNotFound:
            numbers = [s.step for s in ctx.store.get_steps(run.run_id, values=False)]
            known = (
                f"its steps are {min(numbers)}..{max(numbers)}" if numbers else "it has no steps"
            )
            raise CliError(f"run {short_id(run.run_id)} has no step {step}; {known}") from None
        value = get_path(state, path) if path is not None else None
        rows = summarize(state) if state is not None else []
        if as_json:
            data: dict[str, Any] = {
                "run_id": run.run_id,
                "step": step,
                "keys": [
                    {
                        "key": row.key,
                        "type": row.type,
                        "size": row.size,
                        "preview": row.preview,
                        "written_by": None
                        if row.key not in writers
                        else {"step": writers[row.key][0], "node": writers[row.key][1]},
                    }
                    for row in rows
                ],
            }
            if values:
                data["values"] = jsonable(state if isinstance(state, dict) else {".": state})
            if path is not None:
                data["path"] = path
                data["value"] = jsonable(value)
            emit_json("runs state", data)
            return
        out = Out()
        if path is not None:
            out.block(as_json_text(value))
            return
        where = "the end" if step is None else f"step {step}"
        out.line(f"state of run {short_id(run.run_id)} ({run.name}) after {where}", style="bold")
        if state is None:
            out.line("  (no state recorded)")
            return
        if values:
            for row in rows:
                out.line(f"{row.key}:", style="bold")
                item = state if row.key == "." else get_path(state, [row.key])
                out.block(as_json_text(item), "  ")
            return
        out.show(state_table(rows, writers))


@runs_group.command("steps", context_settings=_CONTEXT)
@click.argument("run_id", metavar="ID")
@click.option(
    "--node", metavar="NODE", help="only the steps of NODE (PARENT/NODE: of NODE inside PARENT)"
)
@db_option
@json_option
def runs_steps(run_id: str, node: str | None, db: str | None, as_json: bool) -> None:
    """Every step of run ID in detail: timing, coordinates, decision, error, input and output."""
    with _open(db) as ctx:
        run = ctx.run(run_id)
        steps = _node_steps(ctx, run, node, values=True)
        if node is not None:
            _check_node(ctx, run, node, steps)
        if as_json:
            emit_json(
                "runs steps",
                {"run_id": run.run_id, "steps": [step_dict(s, values=True) for s in steps]},
            )
            return
        out = Out()
        if not steps:
            out.line(f"run {short_id(run.run_id)} has no recorded steps")
        from rich.text import Text

        for step in steps:
            where = "/".join((*step.path, step.node))
            head = Text(f"step {step.step}  {where}  {step.kind}  ", style="bold")
            head.append_text(_status(step.status))
            head.append(f"  {local_time(step.started_at, millis=True)}  {duration(step.duration)}")
            out.show(head)
            out.line(
                f"  superstep {'-' if step.superstep is None else step.superstep}"
                f" · branch {step.branch or '-'} · attempt {step.attempt}"
                + (" · partial" if step.partial else "")
                + (f" · child run {short_id(step.child_run_id)}" if step.child_run_id else "")
            )
            out.line(f"  input:    {preview(step.input, 100)}")
            out.line(f"  output:   {preview(step.output, 100)}")
            if step.decision is not None:
                out.line(f"  decision: {preview(step.decision, 100)}")
            if step.error is not None:
                out.line(f"  error:    {step.error.type}: {step.error.message}", style="red")


def _steps_option(
    ctx: click.Context, param: click.Parameter, value: tuple[int, int] | None
) -> tuple[int, int] | None:
    if value and any(number < 1 for number in value):
        raise click.BadParameter("steps are numbered from 1; use e.g. --steps 3 7")
    return value or None


def _ignore_option(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    for pattern in value:
        if not pattern.strip():
            raise click.BadParameter("give a path glob, e.g. --ignore 'messages[*].id'")
    return value


@runs_group.command("diff", context_settings=_CONTEXT)
@click.argument("run_a", metavar="ID1")
@click.argument("run_b", metavar="[ID2]", required=False)
@click.option(
    "--steps",
    type=int,
    nargs=2,
    metavar="N M",
    callback=_steps_option,
    help="compare the state after step N of ID1 with the state after step M of ID2 (of ID1 "
    "when ID2 is not given)",
)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="GLOB",
    callback=_ignore_option,
    help="leave out the state paths matching GLOB and what is below them (repeatable): "
    "* any key characters, [*] any index, ** anything; e.g. 'messages[*].id', '**.usage'",
)
@click.option(
    "--strict",
    is_flag=True,
    help="compare volatile values too (message ids, generated ids, timestamps)",
)
@db_option
@json_option
def runs_diff(
    run_a: str,
    run_b: str | None,
    steps: tuple[int, int] | None,
    ignore: tuple[str, ...],
    strict: bool,
    db: str | None,
    as_json: bool,
) -> None:
    """Compare two runs: per-node counts and timing, status changes, and where they first
    diverge (a different path, outcome or state). With --steps N M, compare the state after
    step N with the state after step M instead, of one run or of two.

    Values new on every run are left out and listed as ignored: the id of a LangChain message,
    ids (id, *_id) whose two values are generated (UUIDs, run-..., call_...), and times
    (timestamp, created_at, *_at...) whose two values are times. --strict compares them too.
    """
    if run_b is None and steps is None:
        raise click.UsageError(
            "give two runs to compare (runs diff ID1 ID2), or steps of one run "
            "(runs diff ID --steps N M)"
        )
    with _open(db) as ctx:
        a = ctx.run(run_a)
        b = a if run_b is None else ctx.run(run_b)
        if steps is not None:
            _diff_steps(ctx, a, b, steps, ignore, strict, as_json)
            return
        result = ctx.store.diff_runs(a.run_id, b.run_id, ignore=ignore, strict=strict)
        data = runs_diff_dict(a, b, result)
        if as_json:
            emit_json("runs diff", data)
            return
        nodes, first = data["nodes"], data["first_divergence"]
        _warn(result.warnings)
        out = Out()
        runs: list[list[str | Text]] = []
        for label, run in (("a", a), ("b", b)):
            count = "-" if run.step_count is None else str(run.step_count)
            runs.append(
                [label, short_id(run.run_id), run.name, _status(run.status),
                 duration(run.duration), count]
            )  # fmt: skip
        out.show(text_table(["", "run", "name", "status", "duration", "steps"], runs, right=[4, 5]))
        out.line("")
        from rich.text import Text

        from flowdbg.runlog import _kind_labels

        labels = _kind_labels((node["node"], node["kind"]) for node in nodes)
        rows: list[list[str | Text]] = []
        for node in nodes:
            changed = node["status_changed"]
            # the outcomes of both runs where they differ, in kind or in number
            status = (
                f"{_statuses(node['statuses_a'])} -> {_statuses(node['statuses_b'])}"
                if changed or node["statuses_a"] != node["statuses_b"]
                else _statuses(node["statuses_a"])
            )
            rows.append(
                [
                    labels[node["node"], node["kind"]],
                    str(node["count_a"]),
                    str(node["count_b"]),
                    duration(node["total_a"]),
                    duration(node["total_b"]),
                    _signed(node["delta"]),
                    Text(status, style="yellow" if changed else ""),
                ]
            )
        headers = ["node", "runs a", "runs b", "time a", "time b", "delta", "status"]
        out.show(text_table(headers, rows, right=[1, 2, 3, 4, 5]))
        out.line("")
        if first is None:
            out.line("no divergence: the same path, outcomes and states")
        else:
            out.line(f"first divergence ({first['kind']}): {first['detail']}", style="bold")
        _ignored_line(out, result.ignored)


def _warn(warnings: Sequence[str]) -> None:
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)


def _ignored_line(out: Out, ignored: Sequence[Any]) -> None:
    if not ignored:
        return
    from flowdbg.store import DEFAULT_RULES

    shown = ", ".join(
        f"{item.path} ({item.rule}, {item.count} value{'s' if item.count != 1 else ''})"
        for item in ignored[:8]
    )
    if len(ignored) > 8:
        shown += f" and {len(ignored) - 8} more paths"
    hint = "; --strict compares them" if any(i.rule in DEFAULT_RULES for i in ignored) else ""
    out.line(f"ignored: {shown}{hint}", style="dim")


def _diff_steps(
    ctx: _Ctx,
    a: RunRecord,
    b: RunRecord,
    steps: tuple[int, int],
    ignore: tuple[str, ...],
    strict: bool,
    as_json: bool,
) -> None:
    from flowdbg._values import short_repr
    from flowdbg.store import StepNotFound

    other = None if b.run_id == a.run_id else b.run_id
    try:
        result = ctx.store.diff_steps(
            a.run_id, steps[0], steps[1], b=other, ignore=ignore, strict=strict
        )
    except StepNotFound as exc:
        raise CliError(str(exc)) from None
    if as_json:
        emit_json(
            "runs diff",
            {
                "a": run_dict(a),
                "b": run_dict(b),
                "steps": {
                    "step_a": result.step_a,
                    "step_b": result.step_b,
                    "node_a": result.node_a,
                    "node_b": result.node_b,
                    "changes": [
                        {
                            "path": change.path,
                            "kind": change.kind,
                            "old": jsonable(change.old),
                            "new": jsonable(change.new),
                        }
                        for change in result.changes
                    ],
                },
                **leftout_dict(result),
            },
        )
        return
    _warn(result.warnings)
    out = Out()

    def where(step: int, node: str | None) -> str:
        return f"step {step}" + ("" if node is None else f" ({node})")

    first = where(result.step_a, result.node_a)
    second = where(result.step_b, result.node_b)
    if other is None:
        head = f"state of run {short_id(a.run_id)} ({a.name}) after {first} -> after {second}"
    else:
        head = (
            f"state after {first} of run {short_id(a.run_id)} ({a.name}) -> after {second} of "
            f"run {short_id(b.run_id)} ({b.name})"
        )
    out.line(head, style="bold")
    if not result.changes:
        out.line("no differences")
    for change in result.changes:
        path = change.path or "<root>"
        if change.kind == "added":
            out.line(f"+ {path} = {short_repr(change.new)}", style="green")
        elif change.kind == "removed":
            out.line(f"- {path} = {short_repr(change.old)}", style="red")
        else:
            out.line(f"~ {path}: {short_repr(change.old)} -> {short_repr(change.new)}")
    _ignored_line(out, result.ignored)


def _statuses(counts: dict[str, int]) -> str:
    if not counts:
        return "-"
    return ", ".join(f"{n} {status}" if n != 1 else status for status, n in sorted(counts.items()))


def _signed(seconds: float) -> str:
    text = duration(abs(seconds))
    if text == duration(0.0):
        return "±" + text
    return ("+" if seconds > 0 else "-") + text


def _speed(ctx: click.Context, param: click.Parameter, value: str) -> float:
    text = value.strip().lower().removesuffix("x")
    try:
        speed = float(text)
    except ValueError:
        speed = 0.0
    if not speed > 0:
        raise click.BadParameter(f"{value!r} is not a speed; use e.g. 2x, 0.5x or 10")
    return speed


def _kinds(ctx: click.Context, param: click.Parameter, value: str | None) -> set[str] | None:
    if value is None:
        return None
    kinds = {k.strip().lower() for k in value.split(",") if k.strip()}
    unknown = sorted(kinds - set(_KINDS))
    if unknown or not kinds:
        raise click.BadParameter(
            f"unknown kind {', '.join(map(repr, unknown)) or repr(value)}; use a comma-separated "
            "list of " + ", ".join(_KINDS)
        )
    return kinds


def _replay_events(
    ctx: _Ctx, run: RunRecord, kinds: set[str] | None, from_step: int | None
) -> list[dict[str, Any]]:
    pending: list[tuple[float, int, int, StepRecord, str]] = []
    order = 0
    runs = [run]
    while runs:
        current = runs.pop(0)
        runs.extend(ctx.children(current.run_id))
        for step in ctx.store.get_steps(current.run_id, values=False):
            if current is run and from_step is not None and step.step < from_step:
                continue
            if kinds is not None and step.kind not in kinds:
                continue
            pending.append((step.started_at or 0.0, 0, order, step, "before"))
            order += 1
            if step.ended_at is not None:
                # a terminated unit did not end by itself: say so, as runs show does
                end = {"failed": "error", "terminated": "terminated"}.get(step.status, "after")
                pending.append((step.ended_at, 1, order, step, end))
                order += 1
    pending.sort(key=lambda e: (e[0], e[1], e[2]))
    first = pending[0][0] if pending else 0.0
    events = []
    for moment, _, _, step, kind in pending:
        event: dict[str, Any] = {
            "offset": round(max(moment - first, 0.0), 6),
            "time": iso(moment or None),
            "event": kind,
            "run_id": step.run_id,
            "step": step.step,
            "node": step.node,
            "kind": step.kind,
            "path": list(step.path),
            "status": step.status,
        }
        if kind != "before":
            event["duration"] = step.duration
            event["decision"] = jsonable(step.decision)
        if kind in ("error", "terminated"):
            event["error"] = error_dict(step.error)
        events.append(event)
    return events


@runs_group.command("replay", context_settings=_CONTEXT)
@click.argument("run_id", metavar="ID")
@click.option("--timed", is_flag=True, help="wait between events as long as the run did")
@click.option(
    "--speed",
    default="1x",
    show_default=True,
    callback=_speed,
    help="with --timed: 2x is twice as fast",
)
@click.option(
    "--filter",
    "kinds",
    metavar="KINDS",
    callback=_kinds,
    help="only these unit kinds, comma-separated: node, tool, llm, handoff, agent",
)
@click.option("--from-step", type=int, metavar="N", help="start at step N of the run")
@db_option
@json_option
def runs_replay(
    run_id: str,
    timed: bool,
    speed: float,
    kinds: set[str] | None,
    from_step: int | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Replay the recorded steps of run ID (and its nested runs) as before/after events."""
    with _open(db) as ctx:
        run = ctx.run(run_id)
        if from_step is not None:
            numbers = [s.step for s in ctx.store.get_steps(run.run_id, values=False)]
            if from_step not in numbers:  # as runs state --step refuses it
                known = "it has no steps"
                if numbers:
                    known = f"its steps are {min(numbers)}..{max(numbers)}"
                raise CliError(f"run {short_id(run.run_id)} has no step {from_step}; {known}")
        events = _replay_events(ctx, run, kinds, from_step)
    if as_json:
        emit_json("runs replay", {"run_id": run.run_id, "events": events})
        return
    out = Out()
    out.line(f"replaying run {short_id(run.run_id)} ({run.name}): {len(events)} events")
    previous = 0.0
    # "terminated" is wider than the other events: the column widens only when one is there
    width = max((len(event["event"]) for event in events), default=6)
    for event in events:
        if timed:
            gap = (event["offset"] - previous) / speed
            if gap > 0:
                time.sleep(gap)
        previous = event["offset"]
        indent = "  " * len(event["path"])
        head = f"+{event['offset']:8.3f}s  {indent}{event['event']:<{width}}  {event['kind']} "
        head += f"{event['node']!r} (step {event['step']})"
        if event["event"] in ("after", "terminated"):
            head += f" {duration(event.get('duration'))}"
            # a terminated unit's decision was never followed
            if event["event"] == "after" and event.get("decision") is not None:
                head += f" -> {preview(event['decision'], 60)}"
        if event["event"] != "before" and event.get("error"):
            head += f" {event['error']['type']}: {event['error']['message']}"
        styles = {"error": "red", "terminated": _STATUS_STYLE["terminated"]}
        out.line(head, style=styles.get(event["event"]))


@runs_group.command("prune", context_settings=_CONTEXT)
@click.option("--older-than", type=WHEN, help="delete runs started before WHEN (e.g. '7d ago')")
@click.option("--keep", type=click.IntRange(min=0), help="keep only the newest N runs")
@click.option("--yes", "-y", is_flag=True, help="do not ask for confirmation")
@db_option
def runs_prune(older_than: dt.datetime | None, keep: int | None, yes: bool, db: str | None) -> None:
    """Delete recorded runs (with their steps and nested runs)."""
    if older_than is None and keep is None:
        raise click.UsageError("say what to delete: --older-than WHEN and/or --keep N")
    with _open(db, write=True) as ctx:
        what = []
        if older_than is not None:
            what.append(f"runs started before {older_than:%Y-%m-%d %H:%M:%S}")
        if keep is not None:
            what.append(f"all but the newest {keep} runs")
        if not yes:
            click.confirm(f"delete {' and '.join(what)} from {ctx.label}?", abort=True)
        count = ctx.store.prune(older_than=_epoch(older_than), keep=keep)
        click.echo(f"deleted {count} run{'s' if count != 1 else ''} from {ctx.label}")


@runs_group.command("timeline", context_settings=_CONTEXT)
@click.argument("run_id", metavar="ID")
@db_option
@json_option
def runs_timeline(run_id: str, db: str | None, as_json: bool) -> None:
    """Run ID, its forks and reruns (and theirs) as a tree: where each starts or departs from
    the run it was made from, and how it ended."""
    from flowdbg.timetravel import timeline

    with _open(db) as ctx:
        ctx.run(run_id)  # a one-line error for an unknown run
        root = timeline(ctx.store, run_id)
        if as_json:
            emit_json("runs timeline", root.to_dict(run_dict))
            return
        out = Out()
        for line in _timeline_lines(root, 0):
            out.line(line)


@runs_group.command("divergence", context_settings=_CONTEXT)
@click.argument("run_id", metavar="ID")
@click.argument("source", metavar="[SOURCE]", required=False)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="GLOB",
    help="leave out state paths matching GLOB (repeatable), as runs diff",
)
@click.option("--strict", is_flag=True, help="compare volatile values too (ids, timestamps)")
@db_option
@json_option
def runs_divergence(
    run_id: str,
    source: str | None,
    ignore: tuple[str, ...],
    strict: bool,
    db: str | None,
    as_json: bool,
) -> None:
    """How run ID departs from the run it was made from (a fork or rerun; or from SOURCE, any
    run): the first divergence with the old and new value, the model and tool calls served
    from the record and run live, what the served ones took, and the first call that differs
    in each branch. A fork is compared from its fork step on."""
    with _open(db) as ctx:
        run = ctx.run(run_id)
        if source is None:
            from flowdbg.timetravel import ForkError, source_of

            short = short_id(run.run_id)
            hint = f"name the run to compare it with, flowdbg runs divergence {short} SOURCE"
            try:
                source = source_of(run, hint)
            except ForkError as exc:
                raise CliError(str(exc)) from None
        origin_run = ctx.run(source)
        report = ctx.store.divergence(origin_run.run_id, run.run_id, ignore=ignore, strict=strict)
        if as_json:
            emit_json("runs divergence", jsonable(report.to_dict(run_dict)))
            return
        _warn(report.warnings)
        out = Out()
        for line in divergence_lines(report):
            out.line(line)
        _ignored_line(out, report.ignored)


def divergence_lines(report: Any, *, calls: bool = True) -> list[str]:
    """A divergence report (:class:`flowdbg.timetravel.DivergenceReport`) as lines of text
    (``calls=False``: without the lines on model and tool calls)."""
    a, b = report.a, report.b
    what = (
        made_from(b) if report.origin else f"run {short_id(b.run_id)} against {short_id(a.run_id)}"
    )
    lines = [f"{short_id(b.run_id)}: {what}, {b.status}"]
    if report.edited:
        lines.append(f"  started from an edited state: {', '.join(report.edited[:5])}")
    first = report.first
    if first is None:
        lines.append("  no divergence: the same units ran with the same states and outcomes")
    else:
        where = f"step {first.step_b} of the new run" if first.step_b is not None else "its end"
        lines.append(f"  first divergence at {where} ({first.kind}): {first.detail}")
        if first.kind == "state" and first.paths:
            lines.append(
                f"    {first.paths[0] or '<root>'}: {_brief(report.old)} -> {_brief(report.new)}"
            )
    compared = report.calls
    if calls and (compared.recorded or compared.served or compared.live):
        line = f"  calls: {compared.served} served from the record, {compared.live} run live"
        line += f" (the source made {compared.recorded})"
        if compared.served:
            line += f"; saved {duration(compared.saved_seconds)}"
            if compared.saved_tokens:
                line += f" and {compared.saved_tokens:,} tokens"
        lines.append(line)
        for live in compared.diverged:
            branch = "/".join(live.branch) or "the run"
            lines.append(
                f"    in {branch}: {live.kind} {live.name!r} differs from step "
                f"{live.recorded_step} of the source ({live.reason})"
                if live.recorded_step is not None
                else f"    in {branch}: {live.kind} {live.name!r} is not in the source"
            )
    if report.seconds_a is not None and report.seconds_b is not None:
        part = " after the fork step" if report.from_step else ""
        lines.append(
            f"  time: {duration(report.seconds_b)} (the source: {duration(report.seconds_a)}{part})"
        )
    return lines


def _brief(value: Any, width: int = 60) -> str:
    import json

    text = json.dumps(jsonable(value), ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def _timeline_lines(entry: Any, level: int) -> list[str]:
    run = entry.run
    count = run.step_count
    steps = "- steps" if count is None else f"{count} step{'' if count == 1 else 's'}"
    what = made_from(run)
    head = f"{what.split(' of ')[0]} {short_id(run.run_id)}" if what else short_id(run.run_id)
    if run.origin in ("fork", "rewind") and run.fork_step is not None:
        head += f" after step {run.fork_step}" if run.fork_step else " from the input"
    line = f"{head}  {run.name} ({run.framework}) {run.status}, {steps}"
    if entry.cached:
        line += f", {entry.cached} served from the record"
    if run.origin == "rerun":
        divergence = entry.divergence
        if divergence is None:
            line += "; same path and states as the run"
        else:
            line += (
                f"; departs at step {divergence.step_b} ({divergence.node_b}): {divergence.detail}"
            )
    lines = [("  " * (level - 1) + "└ " if level else "") + line]
    for child in entry.made:
        lines.extend(_timeline_lines(child, level + 1))
    return lines
