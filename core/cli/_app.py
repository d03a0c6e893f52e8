"""The ``flowdbg`` command group, error handling, and the commands that run a target."""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import shlex
import shutil
import sqlite3
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from flowdbg.adapter import NOT_RESUMING, RunOptions
from flowdbg.errors import BreakpointError, FlowdbgError, RunOptionError, Terminated

from ._envelope import emit_json, jsonable
from ._render import (
    Out,
    as_json_text,
    graph_tree,
    is_open,
    node_names,
    short_id,
    state_table,
    text_table,
)
from ._repl import (
    EchoSource,
    LineSource,
    Outcome,
    Session,
    at_prompt,
    position_hint,
    split_kind,
    split_node,
)

if TYPE_CHECKING:
    from flowdbg.adapter import Adapter, AdapterInfo, Demo
    from flowdbg.debugger import Debugger, RunHandle

__all__ = [
    "CliError",
    "FlowdbgGroup",
    "command_name",
    "db_label",
    "db_option",
    "make_cli",
    "resolve_db",
]

_CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class CliError(click.ClickException):
    """A problem the command reports in one line on stderr, with exit code 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        """Print ``error: MESSAGE`` on stderr."""
        click.echo(f"error: {self.format_message()}", err=True, file=file)


def _debugging() -> bool:
    return os.environ.get("FLOWDBG_DEBUG", "").strip() not in ("", "0")


class FlowdbgGroup(click.Group):
    """The root group: adds plugin commands once, and turns errors into one line."""

    def __init__(self, *args: Any, plugins: Iterable[Any] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._plugins = tuple(plugins)
        self._plugins_loaded = False

    @property
    def plugins(self) -> tuple[Any, ...]:
        """The plugin objects given to :func:`make_cli`, besides the entry points."""
        return self._plugins

    def load_plugins(self) -> None:
        """Let plugins add their commands (``flowdbg_register_commands``), once."""
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        from flowdbg.plugins import make_plugin_manager

        try:
            pm, _ = make_plugin_manager(self._plugins)
            pm.hook.flowdbg_register_commands(cli=self)
        except Exception as exc:  # a broken plugin must not break the built-in commands
            if _debugging():
                raise
            click.echo(
                f"warning: a plugin failed to add its commands: {type(exc).__name__}: {exc}",
                err=True,
            )

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The command names, built-in and from plugins."""
        self.load_plugins()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A command by name, built-in or from a plugin."""
        self.load_plugins()
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; turn flowdbg, store, JSON and OS errors into one-line errors."""
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except FlowdbgError as exc:
            if _debugging():
                raise
            raise CliError(str(exc)) from exc
        except sqlite3.Error as exc:
            if _debugging():
                raise
            raise CliError(f"database error: {exc}") from exc
        except OSError as exc:
            if _debugging():
                raise
            raise CliError(str(exc)) from exc
        except Exception as exc:
            if _debugging():
                raise
            raise CliError(
                f"internal error: {type(exc).__name__}: {exc} "
                "(set FLOWDBG_DEBUG=1 to see the traceback)"
            ) from exc


# -------------------------------------------------------------------------- adapters


@dataclass(frozen=True)
class AdapterOption:
    """A ``flowdbg run`` option an adapter adds, and the adapters that offer it."""

    param: click.Parameter
    owners: tuple[str, ...]

    @property
    def flag(self) -> str:
        """The option as typed: ``--thread``."""
        return max(self.param.opts, key=len)


class Adapters:
    """The adapters the command line knows (entry points and the plugins given to
    :func:`make_cli`), their ``flowdbg run`` options and their demos; read once per command
    line, when a command first needs them.

    :param plugins: plugin objects besides the entry points.
    """

    def __init__(self, plugins: Iterable[Any] = ()) -> None:
        self.plugins = tuple(plugins)
        self._infos: dict[str, AdapterInfo] | None = None
        self._options: list[AdapterOption] | None = None
        self._demos: dict[str, tuple[AdapterInfo, Demo]] | None = None

    def infos(self) -> dict[str, AdapterInfo]:
        """Every known adapter by name, usable or not."""
        if self._infos is None:
            from flowdbg.debugger import Debugger

            self._infos = Debugger(record=False, plugins=self.plugins).adapters
        return self._infos

    def options(self, command: click.Command) -> list[AdapterOption]:
        """The options the adapters add to ``command`` (:meth:`flowdbg.Adapter.cli_options`).

        An option spelled like one of the command's own, or like an option of an adapter
        before it by name that is not the same option, is left out with a warning: it could not
        be told apart. Several adapters may offer the same option (same name, same flags).
        """
        if self._options is not None:
            return self._options
        taken = {p.name for p in command.params}
        flags = {flag for p in command.params for flag in (*p.opts, *p.secondary_opts)}
        flags.update(("-h", "--help"))
        found: dict[str, AdapterOption] = {}
        for info in self.infos().values():
            if info.adapter is None:
                continue
            try:
                params = list(info.adapter.cli_options())
            except Exception as exc:  # one broken adapter must not break flowdbg run
                _warn(f"adapter {info.name!r} failed to give its options: {exc!r}")
                continue
            for param in params:
                name = param.name or ""
                shared = found.get(name)
                if shared is not None and shared.param.opts == param.opts:
                    found[name] = AdapterOption(shared.param, (*shared.owners, info.name))
                    continue
                spelled = [*param.opts, *param.secondary_opts]
                if not name or name in taken or shared is not None or flags & set(spelled):
                    _warn(
                        f"adapter {info.name!r} offers {'/'.join(spelled)} to flowdbg run, an "
                        "option flowdbg run or another adapter already has; it is left out"
                    )
                    continue
                found[name] = AdapterOption(param, (info.name,))
                flags.update(spelled)
        self._options = list(found.values())
        return self._options

    def demos(self) -> dict[str, tuple[AdapterInfo, Demo]]:
        """The demos the adapters offer (:meth:`flowdbg.Adapter.demo`), by adapter name,
        available or not."""
        if self._demos is None:
            demos: dict[str, tuple[AdapterInfo, Demo]] = {}
            for name, info in self.infos().items():
                if info.adapter is None:
                    continue
                try:
                    demo = info.adapter.demo()
                except Exception as exc:
                    _warn(f"adapter {name!r} failed to give its demo: {exc!r}")
                    continue
                if demo is not None:
                    demos[name] = (info, demo)
            # the default first, then by name
            self._demos = dict(sorted(demos.items(), key=lambda kv: (kv[0] != "stategraph", kv[0])))
        return self._demos


def adapters_of(ctx: click.Context | None) -> Adapters:
    """The adapters of the command line running ``ctx``: those of the entry points, and of
    the plugins of its ``flowdbg`` group. Kept for that command line only, so that each one
    sees the adapters as they are when it starts."""
    if ctx is None:
        return Adapters()
    root = ctx.find_root()
    found = root.meta.get(_ADAPTERS)
    if not isinstance(found, Adapters):
        group = root.command
        found = Adapters(group.plugins if isinstance(group, FlowdbgGroup) else ())
        root.meta[_ADAPTERS] = found
    return found


_ADAPTERS = "flowdbg.adapters"


def _warn(message: str) -> None:
    if _debugging():
        raise RuntimeError(message)
    click.echo(f"warning: {message}", err=True)


# -------------------------------------------------------------------------- shared options


def resolve_db(db: str | None) -> str:
    """The database path: ``--db``, else ``$FLOWDBG_DB``, else ``.flowdbg/flowdbg.db`` in the
    nearest folder up that has a ``.flowdbg`` folder (as git finds its repository), else in the
    current one."""
    if db:
        return db
    from flowdbg.store import default_db_path

    note_found_db(db)
    return str(default_db_path())


def note_found_db(db: str | None) -> None:
    """Say on stderr, once per command, which database it uses when the search up the folder
    tree found one that is neither the current folder's nor at the root of a git repository:
    outside a repository the search goes up to ``/``, so a run in ``/tmp/x`` would otherwise
    use a ``/tmp/.flowdbg`` that others write too, without a word. Nothing is said when
    ``--db`` or ``$FLOWDBG_DB`` chose the database."""
    if db or os.environ.get("FLOWDBG_DB", "").strip():
        return
    ctx = click.get_current_context(silent=True)
    meta = None if ctx is None else ctx.find_root().meta
    if meta is not None and meta.get("flowdbg.db_noted"):
        return
    from flowdbg.store import find_db

    found = find_db()
    if found is None:
        return
    folder = found.parent.parent
    with contextlib.suppress(OSError):
        if folder == Path.cwd() or (folder / ".git").exists():
            return
    if meta is not None:
        meta["flowdbg.db_noted"] = True
    # stderr: a --json document on stdout stays one document
    click.echo(
        f"using the database {found} (the nearest .flowdbg folder above this one; "
        "--db or FLOWDBG_DB chooses another)",
        err=True,
    )


def db_label(path: str | os.PathLike[str]) -> str:
    """A database path as messages show it: relative to the current folder when inside it."""
    text = os.fspath(path)
    with contextlib.suppress(ValueError):
        rel = os.path.relpath(text)
        if not rel.startswith(".."):
            return rel
    return text


def _db_hint(db: str | None) -> str:
    """`` --db PATH`` when the database is not the default one."""
    if not db:
        return ""
    return f" --db {shlex.quote(db)}"


def command_name() -> str:
    """``flowdbg`` as the user ran it, for the commands a message suggests: the path typed
    (``.venv/bin/flowdbg``) when that is not the ``flowdbg`` found on ``PATH``, else ``flowdbg``.
    """
    typed = sys.argv[0] if sys.argv else ""
    name = os.path.basename(typed)
    if name.lower().endswith(".exe"):
        name = name[:-4]
    if name != "flowdbg" or os.path.dirname(typed) == "":
        return "flowdbg"  # from PATH, or not the console script (python -m, a test runner)
    found = shutil.which("flowdbg")
    with contextlib.suppress(OSError):
        if found is not None and os.path.samefile(found, typed):
            return "flowdbg"
    return shlex.quote(typed)


def db_option(fn: Any) -> Any:
    """``--db PATH`` for commands that touch the store."""
    return click.option(
        "--db",
        metavar="PATH",
        default=None,
        help="the SQLite database (default: $FLOWDBG_DB, else .flowdbg/flowdbg.db in the "
        "nearest folder up that has one)",
    )(fn)


def break_option(fn: Any) -> Any:
    """``-b/--break NODE[:after]`` for commands that start debugged runs."""
    return click.option(
        "-b",
        "--break",
        "breaks",
        multiple=True,
        metavar="[KIND:]NODE[:after]",
        help="break before NODE (a glob), or after it with NODE:after; KIND: (node, tool, "
        "llm, agent, handoff) for units of that kind only, e.g. llm:gpt-4o:after; repeatable",
    )(fn)


def json_option(fn: Any) -> Any:
    """``--json`` for read commands."""
    return click.option(
        "--json", "as_json", is_flag=True, help="print the versioned JSON envelope instead"
    )(fn)


# -------------------------------------------------------------------------- run


def _loads(text: str, where: str, hint: str) -> Any:
    """``text`` parsed as JSON; a :class:`CliError` naming ``where`` (an option) if it is not."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}; " + hint
        ) from None


def _parse_input(input_json: str | None, input_file: Any) -> Any:
    if input_json is not None and input_file is not None:
        raise click.UsageError("give --input or --input-file, not both")
    if input_file is not None:
        text, where = input_file.read(), f"--input-file {getattr(input_file, 'name', '-')}"
    elif input_json is not None:
        text, where = input_json, "--input"
    else:
        return {}
    return _loads(text, where, """e.g. --input '{"x": 1}'""")


def _parse_config(
    config_json: str | None, adapter: Adapter | None = None, target: Any = None
) -> dict[str, Any] | None:
    """The run's config from ``--config`` (``None`` when it is not given); a refusal gives
    the example of ``adapter`` (the target's) when it offers one, else no framework's keys."""
    if config_json is None:
        return None
    example = None if adapter is None else adapter.config_example(target)
    if example is not None:
        hint = f"e.g. --config '{example}'"
    else:
        what = "" if adapter is None else f" (what adapter {adapter.name!r} passes to the run)"
        hint = f"""give a JSON object{what}, e.g. --config '{{"key": "value"}}'"""
    config = _loads(config_json, "--config", hint)
    if not isinstance(config, dict):
        raise CliError(f"--config must be a JSON object, not {type(config).__name__}; {hint}")
    return config


def _given_options(ctx: click.Context, values: Mapping[str, Any]) -> dict[str, Any]:
    """The adapter options (from ``values``, by name) the user gave, not left at a default."""
    defaults = (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
    return {n: v for n, v in values.items() if ctx.get_parameter_source(n) not in defaults}


def _check_owners(
    given: Mapping[str, Any], adapter: Adapter, target: str, offered: Sequence[AdapterOption]
) -> None:
    """Refuse an option of another adapter than the one running the target."""
    by_name = {option.param.name: option for option in offered}
    for name in given:
        option = by_name[name]
        if adapter.name not in option.owners:
            owners = " or ".join(repr(owner) for owner in option.owners)
            raise CliError(
                f"{option.flag} is an option of adapter {owners}, and {target} is run by "
                f"adapter {adapter.name!r}; run it without {option.flag}"
            )


def _describe(dbg: Debugger, target: Any) -> dict[str, Any]:
    try:
        description = dbg.describe(target)
    except NotImplementedError:
        return {}
    return dict(description) if isinstance(description, Mapping) else {}


def _set_breakpoints(
    dbg: Debugger, breaks: Iterable[str], description: Mapping[str, Any], out: Out
) -> None:
    nodes = node_names(description)
    # an agent's tools are units too (-b refund holds before the tool refund), and so are its
    # model turns, named after its model
    tools = [
        str(t.get("name")) if isinstance(t, Mapping) else str(t)
        for t in description.get("tools") or ()
    ]
    models = [
        str(model)
        for n in description.get("nodes") or ()
        if isinstance(n, Mapping)
        for model in ([n["model"]] if isinstance(n.get("model"), str) else n.get("model") or ())
    ]
    for spec in breaks:
        node, position = split_node(spec.strip())
        if " if " in f" {node} ":
            raise CliError(
                f"-b takes NODE[:before|:after], not a condition ({spec!r}); set a conditional "
                "breakpoint at the debugger's prompt: b NODE if EXPR (with --stop-on-entry to "
                "get a prompt before the first node)"
            )
        add = dbg.break_after if position == "after" else dbg.break_before
        kind, node = split_kind(node)
        if kind is not None:  # -b llm:gpt-4o: checked by the debugger for that kind
            try:
                bp = add(node, kind=kind, strict=True)
            except BreakpointError as exc:
                raise CliError(f"{at_prompt(exc, node)} (in -b {spec})") from None
            out.line(f"set {bp.describe()}")
            continue
        name = node.rsplit("/", 1)[-1]  # outer/inner: the unit inner in the run nested in outer
        if nodes and not any(fnmatch.fnmatchcase(n, name) for n in [*nodes, *tools, *models]):
            if is_open(description):  # e.g. a @task the description could not list
                out.line(
                    f"note: {node!r} is none of the known nodes and tasks ({', '.join(nodes)}); "
                    "the breakpoint waits for a unit of that name"
                )
            else:
                listed = f"; tools: {', '.join(tools)}" if tools else ""
                calls = (
                    ""
                    if tools
                    else "; write tool:NAME or llm:NAME for a call a node makes (-b llm:NAME:after)"
                )
                raise CliError(
                    f"unknown node {node!r} in -b {spec}{position_hint(node)}; "
                    f"nodes: {', '.join(nodes)}{listed}{calls}"
                )
        out.line(f"set {add(node).describe()}")


def debug_session(
    dbg: Debugger,
    target: Any,
    value: Any,
    *,
    out: Out,
    breaks: Iterable[str] = (),
    break_on_exception: bool = False,
    stop_on_entry: bool = False,
    source: LineSource | None = None,
    db: str | None = None,
    options: RunOptions | None = None,
    saved: SavedBreakpoints | None = None,
    output: str | None = None,
    ref: str | None = None,
    start: Callable[[], RunHandle] | None = None,
    shared: bool = False,
) -> int:
    """Attach ``dbg`` to ``target``, run it with ``value`` under the terminal debugger, then
    print the result, the run log summary and where the run was recorded.

    The target's adapter runs it (:meth:`flowdbg.Adapter.invoke`, or ``ainvoke`` when
    :meth:`flowdbg.Adapter.is_async` says so) after checking ``options``.

    :param options: how to run it (config, resume value, the adapter's own options).
    :param saved: where the target's breakpoints are kept between sessions: they are restored
        before the run and saved after it.
    :param output: a file to write the whole result to, as JSON.
    :param ref: the target as given (``app.py:graph``), recorded with the run.
    :param start: starts the run instead of the adapter's ``invoke`` with ``value`` (a fork).
    :param shared: other clients drive ``dbg`` too (``--serve``): the prompt notices when one
        resumes the stop it is shown for.
    :param stop_on_entry: whether ``dbg`` stops on entry (only for the message saying that
        nothing will stop).
    :returns: the exit code: 0 when the run completed, 1 when it failed or was terminated.
    :raises flowdbg.errors.RunOptionError: when the adapter cannot honour ``options`` (before
        anything runs).
    """
    options = RunOptions() if options is None else options
    adapter = dbg.adapter_for(target)
    adapter.check_run(target, options)
    if start is None and not options.resuming:
        adapter.check_input(target, value)
    description = _describe(dbg, target)
    dbg.attach(target, ref=ref)
    _set_breakpoints(dbg, breaks, description, out)
    if break_on_exception:
        out.line(f"set {dbg.break_on_exception().describe()}")
    # after those given now, so that one given again is not set twice
    restored = [] if saved is None else saved.restore(dbg, out)
    run = adapter.ainvoke if adapter.is_async(target) else adapter.invoke
    name = description.get("name") or type(target).__name__
    session = Session(dbg, out, description=description, source=source, shared=shared)
    stopping = bool(dbg.breakpoints) or stop_on_entry
    count = len(node_names(description, nested=False))
    out.line(
        f"running {name!r} ({count} node{'s' if count != 1 else ''})"
        + ("" if stopping else "; no breakpoints, so it runs to the end (see -b, --stop-on-entry)")
    )
    handle = dbg.start(run, target, value, options) if start is None else start()
    try:
        outcome = session.run()
    except KeyboardInterrupt:  # outside the prompt and the waits, which handle it themselves
        out.line("interrupted: terminating the run")
        dbg.terminate()
        outcome = Outcome.QUIT
    hint = _failure_hint(adapter, target, options)
    code = _report(
        dbg,
        handle,
        outcome,
        out,
        db,
        hint=hint,
        output=output,
        resumable=_resumable(adapter, target, options),
    )
    if saved is not None:
        saved.save(dbg, out, restored)
    return code


def _failure_hint(
    adapter: Adapter, target: Any, options: RunOptions
) -> Callable[[BaseException], str | None]:
    """What the adapter suggests for a failed run (see :meth:`flowdbg.Adapter.failure_hint`)."""

    def hint(exc: BaseException) -> str | None:
        try:
            return adapter.failure_hint(target, exc, options)
        except Exception:  # a hint must not hide the failure it is about
            return None

    return hint


def _resumable(adapter: Adapter, target: Any, options: RunOptions) -> bool:
    """Whether ``flowdbg run --resume`` can resume a run of ``target`` that its framework
    suspended (the adapter does not refuse a resume value)."""
    import dataclasses

    try:
        adapter.check_run(target, dataclasses.replace(options, resume=None))
    except RunOptionError as exc:
        return exc.option != "resume"
    except Exception:  # another complaint is not about resuming
        return True
    return True


def _report(
    dbg: Debugger,
    handle: RunHandle,
    outcome: Outcome,
    out: Out,
    db: str | None,
    *,
    hint: Callable[[BaseException], str | None] | None = None,
    output: str | None = None,
    resumable: bool = True,
) -> int:
    # after a quit the run was terminated: a unit that does not come back within a few seconds
    # is a call nothing can interrupt (named by the TimeoutError); the process leaves it
    wait = 5.0 if outcome is Outcome.QUIT else 30.0
    try:
        exc = handle.exception(timeout=wait)
    except TimeoutError as late:
        out.line(f"{late}; leaving it (it was recorded as running)", style="yellow")
        return 1
    except KeyboardInterrupt:
        out.line("leaving the run without waiting for it to end")
        return 1
    out.line("")
    failure: str | None = None
    written = True
    run_id = handle.run_id
    prog = command_name()
    try:
        log = None if run_id is None else handle.log
    except LookupError:  # no longer in memory
        log = None
    if exc is None:
        if log is not None and log.run.status == "suspended":
            title = (
                f"run suspended: it waits for the framework's resume ({prog} run --resume "
                "VALUE); result so far"
                if resumable
                else f"run suspended: it waits for the framework's resume, which {prog} run "
                f"--resume cannot give runs of {log.run.framework} (resume it from Python, as "
                "the framework does); result so far"
            )
        else:
            title = "run completed; result"
        elsewhere = None
        if run_id is not None and dbg.store is not None:
            elsewhere = f"{prog} runs show {short_id(run_id)}{_db_hint(db)} --json"
        written = _print_result(out, title, handle.result(), output=output, elsewhere=elsewhere)
    elif isinstance(exc, Terminated):
        out.line("run terminated" + (" (quit)" if outcome is Outcome.QUIT else ""), style="bold")
    else:
        out.line(f"run failed: {type(exc).__name__}: {exc}", style="bold red")
        failure = f"the run failed: {type(exc).__name__}: {exc}"
        remedy = None if hint is None else hint(exc)
        if remedy:
            failure += f" ({remedy})"
    if run_id is not None:
        if log is not None:
            out.line("")
            out.block(str(log.summary()))
        store = dbg.store
        if store is None:
            out.line("")
            out.line(
                "not recorded (--no-record, FLOWDBG_RECORD=0, or a database that cannot be "
                "written: see the warning above)"
            )
        else:
            dbg.flush(timeout=30)
            out.line("")
            out.line(
                f"recorded to {db_label(store.path)}; look at it with: "
                f"{prog} runs show {short_id(run_id)}{_db_hint(db)}"
            )
    else:
        out.line("no run started")
    if output is not None and exc is not None:
        out.line(f"no result: {output} not written")
    if failure is not None:
        click.echo(f"error: {failure}", err=True)
    return 0 if exc is None and written else 1


#: a result longer than this as JSON is shown as a table of its keys, each value cut
_RESULT_CHARS = 2_000
_RESULT_ROWS = 20
_PREVIEW_CHARS = 100


def _print_result(
    out: Out, title: str, result: Any, *, output: str | None, elsewhere: str | None
) -> bool:
    """Print a run's result: whole as JSON when short, else a table of its keys with the
    start of each value, and how to see all of it; write it all to ``output``.

    :returns: ``False`` when ``output`` could not be written.
    """
    from flowdbg._values import summarize

    text = as_json_text(result)
    written = True
    if output is not None:
        try:
            Path(output).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:  # the run is over: say so, and show what it gave all the same
            click.echo(f"error: cannot write the result to --output {output}: {exc}", err=True)
            written, output = False, None
    if len(text) <= _RESULT_CHARS:
        out.line(f"{title}:", style="bold")
        out.block(text, "  ")
        if output is not None:
            out.line(f"  (written to {output} as JSON)")
        return written
    out.line(f"{title} (cut: it is {len(text):,} characters as JSON):", style="bold")
    rows = summarize(result, preview_chars=_PREVIEW_CHARS)
    out.show(state_table(rows[:_RESULT_ROWS]))
    left_out = [f"every value past its first {_PREVIEW_CHARS} characters"]
    if len(rows) > _RESULT_ROWS:
        left_out.append(f"{len(rows) - _RESULT_ROWS:,} of its {len(rows):,} keys")
    if output is not None:
        see = f"all of it is in {output}"
    else:
        see = "see all of it with --output FILE (JSON)"
        if elsewhere is not None:
            see += f" or {elsewhere}"
    out.line(f"  left out: {' and '.join(left_out)}; {see}")
    return written


def _check_output(output: str | None) -> None:
    """Refuse an ``--output`` file that could not be written, before anything runs."""
    if output is None:
        return
    path = Path(output)
    if path.is_dir():
        raise CliError(f"--output {output} is a folder; give a file, e.g. {path / 'result.json'}")
    if not path.parent.is_dir():
        raise CliError(
            f"--output {output}: there is no folder {str(path.parent)!r}; create it first"
        )


@dataclass(frozen=True)
class SavedBreakpoints:
    """Where the terminal debugger keeps the breakpoints of one target between sessions:
    ``breakpoints.json`` in the folder of the database in use, under the target's key.

    :param file: the JSON file.
    :param key: the target, its file relative to the folder holding the database's folder
        (for ``./.flowdbg/flowdbg.db``, the project's folder: ``app.py:graph`` from any
        working folder), or absolute when outside it.
    :param shown: the target as typed, for messages.
    """

    file: Path
    key: str
    shown: str

    @classmethod
    def of(cls, target: str, db_path: str | os.PathLike[str]) -> SavedBreakpoints:
        """Those of ``target`` (as typed), beside the database ``db_path``."""
        folder = Path(os.path.abspath(db_path)).parent
        root = folder.parent
        where, sep, obj = target.rpartition(":")
        key = target
        if sep and (where.endswith(".py") or "/" in where or os.sep in where):
            path = Path(os.path.abspath(where))
            if root != Path(root.anchor):  # relative to a whole disk says no more
                with contextlib.suppress(ValueError):
                    path = path.relative_to(root)
            key = f"{path.as_posix()}:{obj}"
        return cls(folder / "breakpoints.json", key, target)

    def restore(self, dbg: Debugger, out: Out) -> list[dict[str, Any]]:
        """Set the saved breakpoints on ``dbg``, saying so; returns what was saved."""
        from flowdbg import _saved
        from flowdbg.errors import BreakpointError

        if not self.file.exists():
            return []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                items = _saved.read(self.file, self.key)
                added = dbg.load_breakpoints(self.file, key=self.key)
            except BreakpointError as exc:
                items, added = [], []
                click.echo(f"warning: {exc}; starting without saved breakpoints", err=True)
        for warning in caught:
            click.echo(f"warning: {warning.message}", err=True)
        if added:
            count = f"{len(added)} breakpoint{'s' if len(added) != 1 else ''}"
            out.line(
                f"restored {count} saved for {self.shown} (--no-saved-breakpoints starts "
                "without them):"
            )
            for bp in added:
                out.line(f"  {bp.describe()}")
        return items

    def save(self, dbg: Debugger, out: Out, before: Sequence[Mapping[str, Any]]) -> None:
        """Save the breakpoints ``dbg`` has now, saying so when they differ from ``before``."""
        from flowdbg import _saved

        now = [_saved.data_of(bp) for bp in dbg.breakpoints if not bp.has_callable_condition]
        if len(now) == len(before) and all(map(_saved.same, now, before)):
            return
        try:
            dbg.save_breakpoints(self.file, key=self.key)
        except OSError as exc:
            click.echo(f"warning: cannot save the breakpoints to {self.file}: {exc}", err=True)
            return
        where = db_label(self.file)
        if now:
            count = f"{len(now)} breakpoint{'s' if len(now) != 1 else ''}"
            out.line(f"saved {count} for {self.shown} to {where}; the next run of it restores them")
        else:
            out.line(f"no breakpoints left: forgot those saved for {self.shown} in {where}")


def _make_debugger(
    ctx: click.Context, *, stop_on_entry: bool, no_record: bool, db: str | None
) -> Debugger:
    from flowdbg.debugger import Debugger

    if not no_record:
        note_found_db(db)
    return Debugger(
        stop_on_entry=stop_on_entry,
        record=False if no_record else None,
        db=db,
        plugins=adapters_of(ctx).plugins,
    )


class RunCommand(click.Command):
    """``flowdbg run``: its own options, then those the adapters add (after ``--resume``)."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        """The command's parameters with the adapters' options."""
        params = super().get_params(ctx)
        extra = [option.param for option in adapters_of(ctx).options(self)]
        if not extra:
            return params
        names = [param.name for param in params]
        at = names.index("resume_json") + 1 if "resume_json" in names else len(params)
        return [*params[:at], *extra, *params[at:]]


@click.command("run", cls=RunCommand, context_settings=_CONTEXT)
@click.argument("target")
@click.option("--input", "input_json", metavar="JSON", help="the run's input as JSON (default {})")
@click.option(
    "--input-file",
    type=click.File("r", encoding="utf-8"),
    metavar="FILE",
    help="read the input JSON from FILE ('-' for stdin)",
)
@break_option
@click.option(
    "--config",
    "config_json",
    metavar="JSON",
    help="the run's config, a JSON object the target's adapter passes with the input",
)
@click.option(
    "--resume",
    "resume_json",
    metavar="JSON",
    help="instead of --input: resume a run the framework suspended with this value",
)
@click.option("--break-on-exception", is_flag=True, help="stop where a unit raises")
@click.option("--stop-on-entry", is_flag=True, help="stop before the first unit")
@click.option(
    "--output",
    metavar="FILE",
    help="write the run's whole result to FILE as JSON (the terminal shows a long one cut)",
)
@click.option(
    "--no-saved-breakpoints",
    is_flag=True,
    help="start without the breakpoints saved by the last session of TARGET, and keep them",
)
@click.option(
    "--serve",
    is_flag=True,
    help="also serve the session to other processes (the debug server on a free loopback "
    "port; its URL with the token is printed; needs the server extra)",
)
@db_option
@click.option("--no-record", is_flag=True, help="do not record the run to the database")
@click.pass_context
def run_command(
    ctx: click.Context,
    target: str,
    input_json: str | None,
    input_file: Any,
    config_json: str | None,
    resume_json: str | None,
    breaks: tuple[str, ...],
    break_on_exception: bool,
    stop_on_entry: bool,
    db: str | None,
    no_record: bool,
    output: str | None,
    no_saved_breakpoints: bool,
    serve: bool,
    **adapter_values: Any,
) -> None:
    """Run TARGET under the terminal debugger.

    TARGET is path/to/file.py:obj or package.module:obj: a compiled graph (or workflow,
    agent), or a function taking no arguments that returns one. At each stop, type h for the
    commands. Commands can also be piped in: printf 'c\\nc\\n' | flowdbg run app.py:graph -b b

    The options after --resume are those of the adapters (each names its framework); a
    target of another adapter refuses them.

    The breakpoints a session ends with are saved for TARGET beside the database
    (breakpoints.json) and set again at the next run of TARGET.
    """
    from ._target import load_target

    if resume_json is not None and (input_json is not None or input_file is not None):
        raise click.UsageError("give --resume or --input/--input-file, not both")
    value = _parse_input(input_json, input_file)
    resume = NOT_RESUMING
    if resume_json is not None:
        resume = _loads(resume_json, "--resume", """a string needs quotes: --resume '"yes"'""")
    given = _given_options(ctx, adapter_values)
    _check_output(output)
    out = Out()
    dbg = _make_debugger(ctx, stop_on_entry=stop_on_entry, no_record=no_record, db=db)
    store = dbg.store
    saved = None
    if not no_saved_breakpoints:
        saved = SavedBreakpoints.of(target, store.path if store is not None else resolve_db(db))
    try:
        obj = load_target(target, dbg)
        adapter = dbg.adapter_for(obj)
        # read once the target is known: a refusal gives an example of its framework's config
        config = _parse_config(config_json, adapter, obj)
        _check_owners(given, adapter, target, adapters_of(ctx).options(ctx.command))
        options = RunOptions(config=config, resume=resume, extra=given)
        server = None
        if serve:
            from ._serve import start_server

            server = start_server(
                dbg,
                target=obj,
                target_name=target,
                host="127.0.0.1",
                port=0,
                token=os.environ.get("FLOWDBG_TOKEN") or None,
            )
        with contextlib.ExitStack() as stack:
            if server is not None:
                stack.callback(server.close)
            code = debug_session(
                dbg,
                obj,
                value,
                out=out,
                breaks=breaks,
                break_on_exception=break_on_exception,
                stop_on_entry=stop_on_entry,
                db=db,
                options=options,
                saved=saved,
                output=output,
                ref=target,
                shared=server is not None,
            )
    finally:
        dbg.close()
    ctx.exit(code)


# -------------------------------------------------------------------------- demo


class DemoName(click.ParamType):
    """The ``--framework`` of ``flowdbg demo``: an adapter that offers a demo."""

    name = "framework"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        """``[stategraph|langgraph|...]``."""
        ctx = ctx or click.get_current_context(silent=True)
        return "[" + "|".join(adapters_of(ctx).demos()) + "]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """``value`` when an adapter offers a demo of that name (spelled with ``-`` for ``_``,
        as its extra is: ``openai-agents``); else a usage error."""
        names = list(adapters_of(ctx).demos())
        if value in names:
            return value
        if isinstance(value, str) and value.replace("-", "_") in names:
            return value.replace("-", "_")
        self.fail(f"{value!r} is not one of {', '.join(map(repr, names))}", param, ctx)

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[Any]:
        """The demo names starting with ``incomplete``."""
        from click.shell_completion import CompletionItem

        names = adapters_of(ctx).demos()
        return [CompletionItem(name) for name in names if name.startswith(incomplete)]


class DemoCommand(click.Command):
    """``flowdbg demo``, whose help lists the demos the adapters offer."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The demos, each with what it shows (and why it cannot run here, if it cannot)."""
        rows = []
        for name, (info, demo) in adapters_of(ctx).demos().items():
            text = demo.summary or demo.target
            if not info.available:
                text += f" (not available: {info.reason})"
            rows.append((name, text))
        if rows:
            with formatter.section("Demos (--framework)"):
                formatter.write_dl(rows)
        super().format_epilog(ctx, formatter)


@click.command("demo", cls=DemoCommand, context_settings=_CONTEXT)
@click.option(
    "--interactive", is_flag=True, help="type the commands yourself instead of the scripted tour"
)
@click.option(
    "--framework",
    type=DemoName(),
    default="stategraph",
    show_default=True,
    help="whose offline example to debug: the demo of that adapter (listed below)",
)
@db_option
@click.pass_context
def demo_command(ctx: click.Context, interactive: bool, framework: str, db: str | None) -> None:
    """A tour of the terminal debugger on an offline example.

    The default example is a support-ticket graph: the tour runs it stopped on entry, sets a
    breakpoint, prints a value and a diff, edits the state so that the graph takes another
    route, steps, continues, and shows the run log and where the run was recorded. With
    --framework NAME it debugs the example that adapter offers instead (they are listed below).
    Everything runs offline.
    """
    from ._target import load_target

    info, demo = adapters_of(ctx).demos()[framework]
    if not info.available:
        raise CliError(f"the {framework} demo cannot run here: {info.reason}")
    # the input goes through its JSON text, as the command shown would pass it
    text = json.dumps(demo.input)
    out = Out()
    command = (
        f"{command_name()} run {demo.target} --stop-on-entry --input {shlex.quote(text)}"
        + _db_hint(db)
    )
    out.line(f"$ {command}", style="bold")
    source: LineSource | None = None
    if interactive:
        out.line(f"# your turn: {demo.hint}", style="dim")
    else:
        source = EchoSource(demo.script, out, style="bold")
    dbg = _make_debugger(ctx, stop_on_entry=True, no_record=False, db=db)
    try:
        code = debug_session(
            dbg,
            load_target(demo.target, dbg),
            json.loads(text),
            out=out,
            stop_on_entry=True,
            source=source,
            db=db,
            ref=demo.target,
        )
    finally:
        dbg.close()
    ctx.exit(code)


# -------------------------------------------------------------------------- graph, adapters


@click.group("graph", context_settings=_CONTEXT)
def graph_group() -> None:
    """Look at the structure of a target."""


@graph_group.command("inspect", context_settings=_CONTEXT)
@click.argument("target")
@click.option(
    "--format",
    "picture",
    type=click.Choice(["tree", "mermaid", "dot"]),
    default="tree",
    show_default=True,
    help="a tree to read, or a picture as text: a Mermaid flowchart or a Graphviz digraph",
)
@json_option
@click.pass_context
def graph_inspect(ctx: click.Context, target: str, picture: str, as_json: bool) -> None:
    """Nodes, edges, conditional edges and subgraphs of TARGET (file.py:obj or module:obj).

    --format mermaid or dot prints a picture as text (conditional edges dashed), e.g.
    flowdbg graph inspect app.py:graph --format dot | dot -Tsvg > graph.svg
    """
    from flowdbg.debugger import Debugger

    from ._target import load_target

    if as_json and picture != "tree":
        raise click.UsageError(f"give --json or --format {picture}, not both")
    dbg = Debugger(record=False, plugins=adapters_of(ctx).plugins)
    # a factory is called only when written so (file.py:fn()): inspecting has no side effects
    obj = load_target(target, dbg, implicit_call=False)
    adapter = dbg.adapter_for(obj)
    description = _describe(dbg, obj)
    if picture != "tree":
        from flowdbg._diagram import draw

        if not description:
            raise CliError(
                f"adapter {adapter.name!r} gives no description of {target}, so there is no "
                "picture to draw; see flowdbg adapters for what it offers"
            )
        click.echo(draw(description, picture), nl=False)
        return
    if as_json:
        emit_json(
            "graph inspect",
            {"target": target, "adapter": adapter.name, "graph": jsonable(description)},
        )
        return
    if not description:
        click.echo(f"adapter {adapter.name!r} gives no description of {target}")
        return
    Out().show(
        graph_tree(description, f"graph {description.get('name', target)!r} ({adapter.name})")
    )


@click.command("adapters", context_settings=_CONTEXT)
@json_option
@click.pass_context
def adapters_command(ctx: click.Context, as_json: bool) -> None:
    """The framework adapters flowdbg knows, usable or not (and why)."""
    infos = adapters_of(ctx).infos()
    if as_json:
        emit_json("adapters", {"adapters": [info.to_dict() for info in infos.values()]})
        return
    rows = []
    for info in infos.values():
        detail = (
            ", ".join(sorted(c.value for c in info.capabilities))
            if info.available
            else info.reason or ""
        )
        rows.append([info.name, "yes" if info.available else "no", info.version or "-", detail])
    headers = ["adapter", "available", "version", "capabilities / reason"]
    Out().show(text_table(headers, rows))


# -------------------------------------------------------------------------- the group


def make_cli(plugins: Iterable[Any] = ()) -> FlowdbgGroup:
    """Build the ``flowdbg`` command group.

    :param plugins: extra plugin objects whose ``flowdbg_register_commands`` add commands
        (besides the ``flowdbg`` entry points).
    """
    from flowdbg import __version__

    from ._fork import runs_fork, runs_rerun
    from ._runs import runs_group
    from ._serve import mcp_command, serve_command, ui_command

    runs_group.add_command(runs_fork)
    runs_group.add_command(runs_rerun)

    @click.group(cls=FlowdbgGroup, plugins=plugins, context_settings=_CONTEXT, name="flowdbg")
    @click.version_option(__version__, "-V", "--version", prog_name="flowdbg")
    def flowdbg_cli() -> None:
        """flowdbg: one debugger for AI agent and workflow frameworks.

        Debug a graph with `flowdbg run app.py:graph -b NODE`, look at recorded runs with
        `flowdbg runs ls`, or take the tour with `flowdbg demo`.
        """

    for command in (
        run_command,
        serve_command,
        ui_command,
        mcp_command,
        runs_group,
        graph_group,
        adapters_command,
        demo_command,
    ):
        flowdbg_cli.add_command(command)
    assert isinstance(flowdbg_cli, FlowdbgGroup)
    return flowdbg_cli
