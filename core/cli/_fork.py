"""``flowdbg runs fork``: a new run of the current code from a recorded step, debugged like
``flowdbg run``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from ._app import (
    CliError,
    _check_output,
    _make_debugger,
    _parse_config,
    break_option,
    db_option,
    debug_session,
    json_option,
)
from ._envelope import emit_json, jsonable
from ._render import Out, duration, short_id

__all__ = ["parse_edits", "runs_fork", "runs_rerun"]

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def parse_edits(texts: Sequence[str]) -> dict[str, Any]:
    """``--set PATH=VALUE`` options as ``{path: value}`` (VALUE: JSON or a Python literal, as
    the debugger's ``set`` reads it)."""
    from ._repl import parse_value

    edits: dict[str, Any] = {}
    for text in texts:
        path, sep, value = text.partition("=")
        if not sep or not path.strip():
            raise CliError(
                f"--set takes PATH=VALUE, not {text!r} (e.g. --set 'messages[-1].content=\"hi\"')"
            )
        try:
            edits[path.strip()] = parse_value(value)
        except ValueError as exc:
            raise CliError(f"--set {text}: {exc}") from None
    return edits


@click.command("fork", context_settings=_CONTEXT)
@click.argument("run_id", metavar="RUN")
@click.option(
    "--step",
    type=click.IntRange(min=0),
    required=True,
    metavar="N",
    help="start after step N of RUN (0: from its input)",
)
@click.option(
    "--set",
    "edits",
    multiple=True,
    metavar="PATH=VALUE",
    help="change the state first (VALUE is JSON or a Python literal); repeatable",
)
@click.option(
    "--config",
    "config_json",
    metavar="JSON",
    help="the run's config, as flowdbg run --config takes it (default: the config RUN was "
    "started with, if it recorded one)",
)
@break_option
@click.option("--break-on-exception", is_flag=True, help="stop where a unit raises")
@click.option("--stop-on-entry", is_flag=True, help="stop before the first unit")
@click.option(
    "--target",
    metavar="TARGET",
    help="run this target (path/to/file.py:obj or package.module:obj) instead of the one RUN "
    "recorded",
)
@click.option("--output", metavar="FILE", help="write the fork's whole result to FILE as JSON")
@db_option
@json_option
@click.pass_context
def runs_fork(
    ctx: click.Context,
    run_id: str,
    step: int,
    edits: tuple[str, ...],
    config_json: str | None,
    breaks: tuple[str, ...],
    break_on_exception: bool,
    stop_on_entry: bool,
    target: str | None,
    output: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Fork RUN after step N: run the current code of its target from the state recorded
    after that step, under the terminal debugger (as flowdbg run does). What runs first is
    where the current code routes from the step's node given that state (so --set of a
    routing key changes the route), else the nodes the record says came next. The new run is
    recorded with where it came from (runs show, runs ls --tree, runs timeline).

    The target is the one RUN recorded (flowdbg run records it as given) unless --target
    names another; the config is the one RUN was started with (flowdbg run --config records
    it) unless --config gives another. With --json the fork runs to its end without stopping
    and prints the new run.
    """
    if as_json and (breaks or stop_on_entry or break_on_exception):
        raise click.UsageError("--json runs the fork without stopping: leave out -b and stops")
    changes = parse_edits(edits)
    _check_output(output)
    dbg = _make_debugger(ctx, stop_on_entry=stop_on_entry, no_record=False, db=db)
    try:
        store = dbg.store
        if store is None:
            raise CliError(
                "cannot fork: recording is off (FLOWDBG_RECORD=0) or the database cannot be "
                "written, and the fork must be recorded; pass --db with a writable database"
            )
        # everything a fork checks, before anything is printed or run
        point, obj, ref, adapter = dbg._prepare_fork(run_id, step, changes, target)
        config = _parse_config(config_json, adapter, obj)  # its example is the target's
        full_id = point.run.run_id
        options = dbg._options_of(point.run, obj, adapter, config, "fork")

        handles: list[Any] = []

        def start() -> Any:
            handle = dbg.fork(full_id, step, changes, target=obj, config=config)
            handles.append(handle)
            return handle

        if as_json:
            dbg.attach(obj, ref=ref)
            handle = start()
            error = handle.exception(timeout=None)
            dbg.flush(timeout=30)
            if handle.run_id is None:  # refused as it started (by the framework's adapter)
                raise CliError(f"cannot fork run {short_id(full_id)} after step {step}: {error}")
            from flowdbg._views import run_dict, step_dict

            run = store.get_run(handle.run_id)
            emit_json(
                "runs fork",
                {
                    "run": run_dict(run, values=True),
                    "steps": [step_dict(s) for s in store.get_steps(run.run_id, values=False)],
                    "edits": {path: jsonable(value) for path, value in changes.items()},
                    "first_divergence": _first_divergence(store, full_id, run.run_id),
                },
            )
            code = 0 if error is None else 1
        else:
            out = Out()
            came = f"after step {step}" if step else "from its input"
            out.line(
                f"forking run {short_id(full_id)} {came} with {ref or 'the target given'}"
                + _config_note(config, options)
            )
            code = debug_session(
                dbg,
                obj,
                None,
                out=out,
                breaks=breaks,
                break_on_exception=break_on_exception,
                stop_on_entry=stop_on_entry,
                db=db,
                output=output,
                ref=ref,
                start=start,
            )
            _divergence_after(out, dbg, full_id, handles)
    finally:
        dbg.close()
    ctx.exit(code)


def _config_note(given: Any, options: Any) -> str:
    """How the printed line of a fork or rerun names its config."""
    if options is None:
        return ""
    return ", the config given" if given is not None else ", the config the run was started with"


def _first_divergence(store: Any, source: str, run_id: str) -> dict[str, Any] | None:
    """The first divergence of a fork or rerun from its source, for ``--json``."""
    first = store.divergence(source, run_id).first
    return None if first is None else jsonable(first.to_dict())


def _divergence_after(out: Out, dbg: Any, source: str, handles: Sequence[Any]) -> None:
    """Where the fork or rerun a session ran departs from its source (``runs divergence``)."""
    from ._runs import divergence_lines

    if not handles or handles[0].run_id is None or dbg.store is None:
        return
    dbg.flush(timeout=30)
    report = dbg.store.divergence(source, handles[0].run_id)
    for line in divergence_lines(report, calls=False)[1:]:  # the rerun says its calls itself
        out.line(line)


@click.command("rerun", context_settings=_CONTEXT)
@click.argument("run_id", metavar="RUN")
@click.option(
    "--cached-calls",
    type=click.Choice(["all", "llm", "tool", "none"]),
    default=None,
    help="which model and tool calls are served from RUN's record when they match it "
    "(default: all, where RUN's adapter can serve recorded calls; else none)",
)
@click.option(
    "--config",
    "config_json",
    metavar="JSON",
    help="the run's config, as flowdbg run --config takes it (default: the config RUN was "
    "started with, if it recorded one)",
)
@break_option
@click.option("--break-on-exception", is_flag=True, help="stop where a unit raises")
@click.option("--stop-on-entry", is_flag=True, help="stop before the first unit")
@click.option(
    "--target",
    metavar="TARGET",
    help="run this target (path/to/file.py:obj or package.module:obj) instead of the one RUN "
    "recorded",
)
@click.option(
    "--until-divergence",
    is_flag=True,
    help="end the rerun at the first call that differs from the record, without making it",
)
@click.option("--output", metavar="FILE", help="write the rerun's whole result to FILE as JSON")
@db_option
@json_option
@click.pass_context
def runs_rerun(
    ctx: click.Context,
    run_id: str,
    cached_calls: str | None,
    config_json: str | None,
    breaks: tuple[str, ...],
    break_on_exception: bool,
    stop_on_entry: bool,
    target: str | None,
    until_divergence: bool,
    output: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Run RUN again from its input with the current code of its target, under the terminal
    debugger, serving its model and tool calls from the record: a call whose name and input
    match the call at the same place in the record gets the recorded result without running
    (no model is asked, no tool runs); the first call of a node that differs runs live, and
    so do the calls after it there (with --until-divergence the rerun ends there instead).
    Served steps show as "cached". The run starts with the input and the config RUN was
    started with (flowdbg run --config records it; secrets are not recorded, so a config with
    one must be given again with --config, which replaces the recorded one).

    With --json the rerun runs to its end without stopping and prints the new run, its steps
    and what was served.
    """
    from flowdbg.adapter import Capability
    from flowdbg.timetravel import _descendant_steps

    if as_json and (breaks or stop_on_entry or break_on_exception):
        raise click.UsageError("--json runs the rerun without stopping: leave out -b and stops")
    _check_output(output)
    dbg = _make_debugger(ctx, stop_on_entry=stop_on_entry, no_record=False, db=db)
    try:
        if dbg.store is None:
            raise CliError(
                "cannot rerun: recording is off (FLOWDBG_RECORD=0) or the database cannot be "
                "written, and the rerun must be recorded; pass --db with a writable database"
            )
        store = dbg.store
        needs = None if cached_calls in (None, "none") else Capability.CACHED_CALLS
        run, obj, ref, adapter = dbg._made_from_run(run_id, target, needs)  # refuse before printing
        config = _parse_config(config_json, adapter, obj)  # its example is the target's
        served_note = ""
        if cached_calls is None:  # all where the adapter can serve them; else every call live
            can = Capability.CACHED_CALLS in getattr(adapter, "capabilities", ())
            cached_calls = "all" if can else "none"
            if not can:
                served_note = f" (the {adapter.name} adapter cannot serve recorded calls)"
        options = dbg._options_of(run, obj, adapter, config, "rerun")
        handles: list[Any] = []

        def start() -> Any:
            handle = dbg.rerun(
                run.run_id,
                cached_calls=cached_calls,
                target=obj,
                until_divergence=until_divergence,
                config=config,
            )
            handles.append(handle)
            return handle

        if as_json:
            handle = start()
            error = handle.exception(timeout=None)
            dbg.flush(timeout=30)
            if handle.run_id is None:  # refused as it started (by the framework's adapter)
                raise CliError(f"cannot rerun run {short_id(run.run_id)}: {error}")
            assert handle.calls is not None
            from flowdbg._views import run_dict, step_dict

            new = store.get_run(handle.run_id)
            calls = handle.calls
            emit_json(
                "runs rerun",
                {
                    "run": run_dict(new, values=True),
                    "steps": [step_dict(s) for s in store.get_steps(new.run_id, values=False)],
                    "first_divergence": _first_divergence(store, run.run_id, new.run_id),
                    "calls": {
                        "cached_calls": cached_calls,
                        "until_divergence": until_divergence,
                        "served": calls.served,
                        # with none served, no call asked the record: count what ran
                        "live": calls.live
                        if cached_calls != "none"
                        else sum(
                            1
                            for step in _descendant_steps(store, new.run_id)
                            if step.kind in ("llm", "tool")
                        ),
                        "saved_seconds": calls.saved_seconds,
                        "saved_tokens": calls.saved_tokens,
                        "diverged": [jsonable(d.to_dict()) for d in calls.diverged],
                    },
                },
            )
            code = 0 if error is None else 1
        else:
            out = Out()
            out.line(
                f"rerunning run {short_id(run.run_id)} with {ref or 'the target given'}, "
                f"recorded calls served: {cached_calls}{served_note}"
                + _config_note(config, options)
            )
            code = debug_session(
                dbg,
                obj,
                None,
                out=out,
                breaks=breaks,
                break_on_exception=break_on_exception,
                stop_on_entry=stop_on_entry,
                db=db,
                output=output,
                ref=ref,
                start=start,
            )
            if handles and handles[0].calls is not None and cached_calls == "none":
                # no call asked the record: every model and tool call ran live (the count
                # comes from the record of the rerun, as runs divergence counts them)
                new_id = handles[0].run_id
                dbg.flush(timeout=30)
                live = (
                    0
                    if new_id is None
                    else sum(
                        1
                        for step in _descendant_steps(store, new_id)
                        if step.kind in ("llm", "tool")
                    )
                )
                out.line(
                    f"calls served from the record: none (--cached-calls none), run live: {live}"
                )
            elif handles and handles[0].calls is not None:
                calls = handles[0].calls
                saved = f"; saved {duration(calls.saved_seconds)} of calls"
                if calls.saved_tokens:
                    saved += f" and {calls.saved_tokens:,} tokens"
                out.line(
                    f"calls served from the record: {calls.served}, run live: {calls.live}"
                    + (saved if calls.served else "")
                )
                # with --until-divergence the first differing call was not made: the rerun
                # ended there
                went = "ended the rerun" if calls.until_divergence else "ran live"
                for live in calls.diverged:
                    where = "/".join(live.branch) or "the run"
                    out.line(
                        f"  in {where}: {live.kind} {live.name!r} {went} ({live.reason} differs "
                        f"from step {live.recorded_step} of the record)"
                        if live.recorded_step is not None
                        else f"  in {where}: {live.kind} {live.name!r} {went} (not in the record)"
                    )
            _divergence_after(out, dbg, run.run_id, handles)
    finally:
        dbg.close()
    ctx.exit(code)
