"""The ``flowdbg`` command group, error handling, and the commands that run a target."""

from __future__ import annotations

import contextlib
import fnmatch
import inspect
import json
import os
import shlex
import sqlite3
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import click

from flowdbg.errors import FlowdbgError, Terminated

from ._envelope import emit_json, jsonable
from ._render import Out, graph_tree, is_open, node_names, short_id, text_table
from ._repl import EchoSource, LineSource, Outcome, Session, position_hint, split_node

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger, RunHandle

__all__ = ["CliError", "FlowdbgGroup", "db_label", "db_option", "make_cli", "resolve_db"]

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


# -------------------------------------------------------------------------- shared options


def resolve_db(db: str | None) -> str:
    """The database path: ``--db``, else ``$FLOWDBG_DB``, else ``./.flowdbg/flowdbg.db``."""
    if db:
        return db
    from flowdbg.store import default_db_path

    return str(default_db_path())


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


def db_option(fn: Any) -> Any:
    """``--db PATH`` for commands that touch the store."""
    return click.option(
        "--db",
        metavar="PATH",
        default=None,
        help="the SQLite database (default: $FLOWDBG_DB or ./.flowdbg/flowdbg.db)",
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


def _parse_config(config_json: str | None, thread: str | None) -> dict[str, Any] | None:
    """The run's config from ``--config`` and ``--thread`` (``None`` when neither is given)."""
    if config_json is None and thread is None:
        return None
    config: Any = {}
    if config_json is not None:
        config = _loads(
            config_json, "--config", """e.g. --config '{"configurable": {"thread_id": "1"}}'"""
        )
        if not isinstance(config, dict):
            raise CliError(f"--config must be a JSON object, not {type(config).__name__}")
    if thread is not None:
        configurable = config.setdefault("configurable", {})
        if not isinstance(configurable, dict):
            raise CliError("--config's 'configurable' must be a JSON object to add --thread to")
        configurable["thread_id"] = thread
    return dict(config)


def _resume_input(
    dbg: Debugger, target: Any, resume_json: str, config: dict[str, Any] | None
) -> Any:
    """The input resuming a suspended run of ``target`` with the ``--resume`` value."""
    value = _loads(resume_json, "--resume", """a string needs quotes: --resume '"yes"'""")
    adapter = dbg.adapter_for(target)
    try:
        return adapter.resume_input(target, value, config)
    except (NotImplementedError, ValueError) as exc:
        raise CliError(f"--resume: {exc}") from None


def _accepts_config(fn: Any) -> bool:
    """Whether ``fn`` (a target's invoke) takes a second positional argument, the config."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature to read: let the call say
        return True
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return True
    named = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(kind in named for kind in kinds) >= 2


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
    for spec in breaks:
        node, position = split_node(spec.strip())
        if " if " in f" {node} ":
            raise CliError(
                f"-b takes NODE[:before|:after], not a condition ({spec!r}); set a conditional "
                "breakpoint at the debugger's prompt: b NODE if EXPR (with --stop-on-entry to "
                "get a prompt before the first node)"
            )
        if nodes and not any(fnmatch.fnmatchcase(n, node) for n in nodes):
            if is_open(description):  # e.g. a @task the description could not list
                out.line(
                    f"note: {node!r} is none of the known nodes and tasks ({', '.join(nodes)}); "
                    "the breakpoint waits for a unit of that name"
                )
            else:
                raise CliError(
                    f"unknown node {node!r} in -b {spec}{position_hint(node)}; "
                    f"nodes: {', '.join(nodes)}"
                )
        add = dbg.break_after if position == "after" else dbg.break_before
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
    config: dict[str, Any] | None = None,
) -> int:
    """Attach ``dbg`` to ``target``, run it with ``value`` under the terminal debugger, then
    print the result, the run log summary and where the run was recorded.

    :param config: passed to the target's ``invoke`` after the input (a LangGraph config:
        ``{"configurable": {"thread_id": ...}}``).

    :param stop_on_entry: whether ``dbg`` stops on entry (only for the message saying that
        nothing will stop).
    :returns: the exit code: 0 when the run completed, 1 when it failed or was terminated.
    """
    from ._target import run_callable

    description = _describe(dbg, target)
    dbg.attach(target)
    _set_breakpoints(dbg, breaks, description, out)
    if break_on_exception:
        out.line(f"set {dbg.break_on_exception().describe()}")
    fn = dbg.adapter_for(target).run_method(target) or run_callable(target)
    if config is not None and not _accepts_config(fn):
        raise CliError(
            f"{type(target).__name__}.{getattr(fn, '__name__', 'invoke')}() takes no config "
            "after the input; run it without --config/--thread"
        )
    name = description.get("name") or type(target).__name__
    session = Session(dbg, out, description=description, source=source)
    stopping = bool(dbg.breakpoints) or stop_on_entry
    count = len(node_names(description, nested=False))
    out.line(
        f"running {name!r} ({count} node{'s' if count != 1 else ''})"
        + ("" if stopping else "; no breakpoints, so it runs to the end (see -b, --stop-on-entry)")
    )
    handle = dbg.start(fn, value) if config is None else dbg.start(fn, value, config)
    try:
        outcome = session.run()
    except KeyboardInterrupt:  # outside the prompt and the waits, which handle it themselves
        out.line("interrupted: terminating the run")
        dbg.terminate()
        outcome = Outcome.QUIT
    return _report(dbg, handle, outcome, out, db, config=config)


def _report(
    dbg: Debugger,
    handle: RunHandle,
    outcome: Outcome,
    out: Out,
    db: str | None,
    *,
    config: dict[str, Any] | None = None,
) -> int:
    try:
        exc = handle.exception(timeout=30)
    except TimeoutError:
        out.line("the run did not end within 30 s after the session; leaving it")
        return 1
    out.line("")
    failure: str | None = None
    run_id = handle.run_id
    try:
        log = None if run_id is None else handle.log
    except LookupError:  # no longer in memory
        log = None
    if exc is None:
        if log is not None and log.run.status == "suspended":
            out.line(
                "run suspended: it waits for the framework's resume (e.g. LangGraph's "
                "Command(resume=...)); result so far:",
                style="bold",
            )
        else:
            out.line("run completed; result:", style="bold")
        out.block(json.dumps(jsonable(handle.result()), indent=2, ensure_ascii=False), "  ")
    elif isinstance(exc, Terminated):
        out.line("run terminated" + (" (quit)" if outcome is Outcome.QUIT else ""), style="bold")
    else:
        out.line(f"run failed: {type(exc).__name__}: {exc}", style="bold red")
        failure = f"the run failed: {type(exc).__name__}: {exc}"
        if config is None and "thread_id" in str(exc):  # a LangGraph graph with a checkpointer
            failure += " (give the run a checkpointer thread with --thread ID)"
    if run_id is not None:
        if log is not None:
            out.line("")
            out.block(str(log.summary()))
        store = dbg.store
        if store is None:
            out.line("")
            out.line("not recorded (--no-record or FLOWDBG_RECORD=0)")
        else:
            dbg.flush(timeout=30)
            out.line("")
            out.line(
                f"recorded to {db_label(store.path)}; look at it with: "
                f"flowdbg runs show {short_id(run_id)}{_db_hint(db)}"
            )
    else:
        out.line("no run started")
    if failure is not None:
        click.echo(f"error: {failure}", err=True)
    return 0 if exc is None else 1


def _make_debugger(*, stop_on_entry: bool, no_record: bool, db: str | None) -> Debugger:
    from flowdbg.debugger import Debugger

    return Debugger(stop_on_entry=stop_on_entry, record=False if no_record else None, db=db)


@click.command("run", context_settings=_CONTEXT)
@click.argument("target")
@click.option("--input", "input_json", metavar="JSON", help="the run's input as JSON (default {})")
@click.option(
    "--input-file",
    type=click.File("r", encoding="utf-8"),
    metavar="FILE",
    help="read the input JSON from FILE ('-' for stdin)",
)
@click.option(
    "-b",
    "--break",
    "breaks",
    multiple=True,
    metavar="NODE[:after]",
    help="break before NODE (a glob), or after it with NODE:after; repeatable",
)
@click.option(
    "--config",
    "config_json",
    metavar="JSON",
    help="a config passed after the input (LangGraph: e.g. its configurable keys)",
)
@click.option(
    "--thread",
    metavar="ID",
    help="LangGraph checkpointer thread: sets configurable.thread_id in the config",
)
@click.option(
    "--resume",
    "resume_json",
    metavar="JSON",
    help="resume a suspended run with this value (LangGraph: Command(resume=VALUE)); "
    "with --thread, instead of --input",
)
@click.option("--break-on-exception", is_flag=True, help="stop where a unit raises")
@click.option("--stop-on-entry", is_flag=True, help="stop before the first unit")
@db_option
@click.option("--no-record", is_flag=True, help="do not record the run to the database")
@click.pass_context
def run_command(
    ctx: click.Context,
    target: str,
    input_json: str | None,
    input_file: Any,
    config_json: str | None,
    thread: str | None,
    resume_json: str | None,
    breaks: tuple[str, ...],
    break_on_exception: bool,
    stop_on_entry: bool,
    db: str | None,
    no_record: bool,
) -> None:
    """Run TARGET under the terminal debugger.

    TARGET is path/to/file.py:obj or package.module:obj: a compiled graph (or workflow,
    agent), or a function taking no arguments that returns one. At each stop, type h for the
    commands. Commands can also be piped in: printf 'c\\nc\\n' | flowdbg run app.py:graph -b b
    """
    from ._target import load_target

    if resume_json is not None and (input_json is not None or input_file is not None):
        raise click.UsageError("give --resume or --input/--input-file, not both")
    value = _parse_input(input_json, input_file)
    config = _parse_config(config_json, thread)
    out = Out()
    dbg = _make_debugger(stop_on_entry=stop_on_entry, no_record=no_record, db=db)
    try:
        obj = load_target(target, dbg)
        if resume_json is not None:
            value = _resume_input(dbg, obj, resume_json, config)
        code = debug_session(
            dbg,
            obj,
            value,
            out=out,
            breaks=breaks,
            break_on_exception=break_on_exception,
            stop_on_entry=stop_on_entry,
            db=db,
            config=config,
        )
    finally:
        dbg.close()
    ctx.exit(code)


# -------------------------------------------------------------------------- demo


@click.command("demo", context_settings=_CONTEXT)
@click.option(
    "--interactive", is_flag=True, help="type the commands yourself instead of the scripted tour"
)
@click.option(
    "--framework",
    type=click.Choice(["stategraph", "langgraph"]),
    default="stategraph",
    show_default=True,
    help="the offline example to debug: flowdbg's StateGraph, or a LangGraph agent",
)
@db_option
@click.pass_context
def demo_command(ctx: click.Context, interactive: bool, framework: str, db: str | None) -> None:
    """A tour of the terminal debugger on an offline example.

    The default example is a support-ticket graph: the tour runs it stopped on entry, sets a
    breakpoint, prints a value and a diff, edits the state so that the graph takes another
    route, steps, continues, and shows the run log and where the run was recorded. With
    --framework langgraph it debugs a LangGraph agent instead: it holds the agent before a
    dangerous tool call, reads what the model asked for and rewrites the call. Everything runs
    offline.
    """
    if framework == "langgraph":
        try:
            from . import _demo_langgraph as demo
        except ImportError as exc:
            raise CliError(
                f"the LangGraph demo needs LangGraph ({exc}); install it with: "
                "pip install 'flowdbg[langgraph]'"
            ) from None
    else:
        from . import _demo as demo  # type: ignore[no-redef]
    DEMO_INPUT, SCRIPT, TARGET, build_graph = (
        demo.DEMO_INPUT,
        demo.SCRIPT,
        demo.TARGET,
        demo.build_graph,
    )
    hint = {
        "stategraph": "try l, b classify:after, c, p intent, diff, set intent = "
        '"question", n, log, c (h for help)',
        "langgraph": "try l, tool shell, c, p input:cmd, p messages[-1].tool_calls, "
        "set cmd = 'ls', c, log (h for help)",
    }[framework]

    out = Out()
    command = (
        f"flowdbg run {TARGET} --stop-on-entry --input {shlex.quote(json.dumps(DEMO_INPUT))}"
        + _db_hint(db)
    )
    out.line(f"$ {command}", style="bold")
    source: LineSource | None = None
    if interactive:
        out.line(f"# your turn: {hint}", style="dim")
    else:
        source = EchoSource(SCRIPT, out, style="bold")
    dbg = _make_debugger(stop_on_entry=True, no_record=False, db=db)
    try:
        code = debug_session(
            dbg,
            build_graph(),
            dict(DEMO_INPUT),
            out=out,
            stop_on_entry=True,
            source=source,
            db=db,
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
@json_option
def graph_inspect(target: str, as_json: bool) -> None:
    """Nodes, edges, conditional edges and subgraphs of TARGET (file.py:obj or module:obj)."""
    from flowdbg.debugger import Debugger

    from ._target import load_target

    dbg = Debugger(record=False)
    obj = load_target(target, dbg)
    adapter = dbg.adapter_for(obj)
    description = _describe(dbg, obj)
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
def adapters_command(as_json: bool) -> None:
    """The framework adapters flowdbg knows, usable or not (and why)."""
    from flowdbg.debugger import Debugger

    infos = Debugger(record=False).adapters
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

    from ._runs import runs_group

    @click.group(cls=FlowdbgGroup, plugins=plugins, context_settings=_CONTEXT, name="flowdbg")
    @click.version_option(__version__, "-V", "--version", prog_name="flowdbg")
    def flowdbg_cli() -> None:
        """flowdbg: one debugger for AI agent and workflow frameworks.

        Debug a graph with `flowdbg run app.py:graph -b NODE`, look at recorded runs with
        `flowdbg runs ls`, or take the tour with `flowdbg demo`.
        """

    for command in (
        run_command,
        runs_group,
        graph_group,
        adapters_command,
        demo_command,
    ):
        flowdbg_cli.add_command(command)
    assert isinstance(flowdbg_cli, FlowdbgGroup)
    return flowdbg_cli
