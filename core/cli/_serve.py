"""``flowdbg serve``: a target served to other processes over HTTP and a WebSocket."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import click

from ._app import (
    _CONTEXT,
    CliError,
    _make_debugger,
    _parse_config,
    _set_breakpoints,
    break_option,
    db_option,
)

__all__ = ["mcp_command", "serve_command", "server_options", "start_server", "ui_command"]

#: the environment variable a token may come from (so that it is not on a command line)
TOKEN_ENV = "FLOWDBG_TOKEN"


def server_options(fn: Any) -> Any:
    """``--host``, ``--port``, ``--token`` and ``--allow-host``."""
    fn = click.option(
        "--allow-host",
        "allowed_hosts",
        multiple=True,
        metavar="NAME[:PORT]",
        help="also accept requests whose Host header is NAME:PORT (the name clients reach a "
        "--host server by); repeatable",
    )(fn)
    fn = click.option(
        "--token",
        metavar="TOKEN",
        envvar=TOKEN_ENV,
        help=f"the secret clients send (default: a random one; also ${TOKEN_ENV}); required "
        "with a --host other than loopback",
    )(fn)
    fn = click.option(
        "--port",
        type=click.IntRange(0, 65535),
        default=0,
        show_default=True,
        help="the port (0: a free one)",
    )(fn)
    return click.option(
        "--host",
        default="127.0.0.1",
        show_default=True,
        help="the address to listen on; anything but loopback needs --token too",
    )(fn)


def disconnect_options(fn: Any) -> Any:
    """``--on-disconnect`` and ``--grace``: what happens to held runs when the clients go."""
    fn = click.option(
        "--grace",
        type=click.FloatRange(min=0),
        default=60.0,
        show_default=True,
        metavar="SECONDS",
        help="how long held runs wait for a client to come back",
    )(fn)
    return click.option(
        "--on-disconnect",
        type=click.Choice(["resume", "keep"]),
        default="resume",
        show_default=True,
        help="when the clients go while runs are held (the last event-stream client, or the "
        "MCP client closing stdio): resume them after --grace seconds, or keep them held",
    )(fn)


def config_option(fn: Any) -> Any:
    """``--config``: the config of the runs the server starts without one."""
    return click.option(
        "--config",
        "config_json",
        metavar="JSON",
        help="the config of a run started without one (a JSON object, as flowdbg run --config "
        """takes it: e.g. '{"context": {"user": "ann"}}' for an OpenAI agent)""",
    )(fn)


def start_server(
    dbg: Any,
    *,
    target: Any,
    target_name: str,
    host: str,
    port: int,
    token: str | None,
    default_config: dict[str, Any] | None = None,
    **options: Any,
) -> Any:
    """Start the debug server for ``dbg`` and print its URL (with the token).

    :param default_config: the config of a run a client starts without one.
    :raises CliError: when the server's packages are missing or it cannot listen.
    """
    from flowdbg.server import ServerError

    try:
        server = dbg.serve(
            host=host, port=port, token=token, target=target, target_name=target_name, **options
        )
    except ServerError as exc:
        raise CliError(str(exc)) from exc
    # set before the URL (and its token) is printed: no client can start a run before it
    server.service.default_config = default_config
    # the URL carries the token: printed as is (Out would redact it), on stdout for scripts
    click.echo(f"flowdbg debug server for {target_name}: {server.url}")
    return server


@click.command("serve", context_settings=_CONTEXT)
@click.argument("target")
@server_options
@break_option
@click.option("--stop-on-entry", is_flag=True, help="stop every run before its first unit")
@config_option
@disconnect_options
@click.option(
    "--rate",
    type=click.FloatRange(min=0),
    default=200.0,
    show_default=True,
    metavar="N",
    help="requests a second a client may make before 429 (bursts of twice that; ten times "
    "that for all clients together); 0: no limit",
)
@db_option
@click.option("--no-record", is_flag=True, help="do not record runs to the database")
@click.pass_context
def serve_command(
    ctx: click.Context,
    target: str,
    host: str,
    port: int,
    token: str | None,
    allowed_hosts: tuple[str, ...],
    breaks: tuple[str, ...],
    stop_on_entry: bool,
    config_json: str | None,
    on_disconnect: str,
    grace: float,
    rate: float,
    db: str | None,
    no_record: bool,
) -> None:
    """Serve TARGET to other processes: a web page, an editor, a script or an agent.

    Prints the server's URL with its token and serves until interrupted (Ctrl-C).
    Clients set breakpoints, start runs with an input, wait for stops, read and edit state,
    step and resume over HTTP, and follow the runs on the WebSocket /events. A run started
    without a config gets --config's. Needs pip install 'flowdbg[server]'. See docs/server.md.
    """
    _serve_until_interrupted(
        ctx,
        target,
        config_json=config_json,
        breaks=breaks,
        stop_on_entry=stop_on_entry,
        no_record=no_record,
        db=db,
        host=host,
        port=port,
        token=token,
        on_disconnect=on_disconnect,
        grace=grace,
        allowed_hosts=allowed_hosts,
        rate=rate or None,
    )


def _serve_until_interrupted(
    ctx: click.Context,
    target: str,
    *,
    breaks: tuple[str, ...],
    stop_on_entry: bool,
    no_record: bool,
    db: str | None,
    config_json: str | None = None,
    after_start: Any = None,
    **options: Any,
) -> None:
    """Load ``target``, set ``breaks``, serve it until Ctrl-C (``after_start(server)`` is
    called once it listens); ``config_json`` is the config of a run started without one
    (``--config``'s text, read once the target is known)."""
    from flowdbg.adapter import RunOptions
    from flowdbg.server import require

    from ._render import Out
    from ._target import load_target

    dbg = _make_debugger(ctx, stop_on_entry=stop_on_entry, no_record=no_record, db=db)
    try:
        obj = load_target(target, dbg)
        adapter = dbg.adapter_for(obj)
        config = _parse_config(config_json, adapter, obj)
        if config is not None:  # refused now, not at the first run a client starts
            adapter.check_run(obj, RunOptions(config=config))
        try:  # (after the config: a mistake there is told without the extra too)
            require()
        except Exception as exc:
            raise CliError(str(exc)) from exc
        if breaks:
            # attached first (the server attaches it too: attaching is idempotent), so that a
            # -b KIND:NAME naming no tool or model of the target is refused as flowdbg run does
            dbg.attach(obj)
            try:
                description = dict(dbg.describe(obj))
            except NotImplementedError:
                description = {}
            _set_breakpoints(dbg, breaks, description, Out())
        server = start_server(dbg, target=obj, target_name=target, default_config=config, **options)
        try:
            if after_start is not None:
                after_start(server)
            with _interruptible() as wait:
                wait(None)
            click.echo("stopped serving")
        finally:
            server.close()
    finally:
        dbg.close()


@click.command("ui", context_settings=_CONTEXT)
@click.argument("target", required=False)
@server_options
@break_option
@click.option(
    "--input",
    "input_text",
    metavar="JSON",
    help="the input the page offers for a run (default: the demo's input without TARGET)",
)
@config_option
@click.option("--no-browser", is_flag=True, help="print the page's URL, do not open a browser")
@click.option("--stop-on-entry", is_flag=True, help="stop every run before its first unit")
@db_option
@click.option("--no-record", is_flag=True, help="do not record runs to the database")
@click.pass_context
def ui_command(
    ctx: click.Context,
    target: str | None,
    host: str,
    port: int,
    token: str | None,
    allowed_hosts: tuple[str, ...],
    breaks: tuple[str, ...],
    input_text: str | None,
    config_json: str | None,
    no_browser: bool,
    stop_on_entry: bool,
    db: str | None,
    no_record: bool,
) -> None:
    """The web debugger: serve TARGET and open its page in a browser.

    Without TARGET it serves the offline demo graph of flowdbg demo. The page shows the
    graph (click a node to break there), the stops with their state (edit it in place), the
    run's timeline and log, and the recorded runs (step through one, compare two). Prints
    the page's URL with its token and serves until interrupted (Ctrl-C); no browser is
    opened with --no-browser, under CI, or without a display. A run started without a config
    gets --config's. Needs pip install 'flowdbg[server]'. See docs/server.md.
    """
    from ._app import adapters_of

    example: Any = None
    if target is None:
        _, demo = adapters_of(ctx).demos()["stategraph"]
        target, example = demo.target, demo.input
    if input_text is not None:
        try:
            example = json.loads(input_text)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"not JSON: {exc}", param_hint="--input") from exc

    def opened(server: Any) -> None:
        url = server.url
        why = _no_browser_reason(no_browser)
        if why is not None:
            click.echo(f"open {url} in a browser ({why})")
        elif not _open_browser(url):
            click.echo(f"could not start a browser: open {url} yourself")
        click.echo("serving until Ctrl-C")

    _serve_until_interrupted(
        ctx,
        target,
        config_json=config_json,
        breaks=breaks,
        stop_on_entry=stop_on_entry,
        no_record=no_record,
        db=db,
        after_start=opened,
        host=host,
        port=port,
        token=token,
        allowed_hosts=allowed_hosts,
        example_input=example,
    )


def _no_browser_reason(no_browser: bool) -> str | None:
    """Why no browser is opened, or ``None`` when one may be."""
    if no_browser:
        return "--no-browser"
    if os.environ.get("CI"):
        return "CI is set"
    if (
        sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd"))
        and not os.environ.get("DISPLAY")
        and not os.environ.get("WAYLAND_DISPLAY")
        and not os.environ.get("BROWSER")
    ):
        return "no display"
    return None


def _open_browser(url: str) -> bool:
    import webbrowser

    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False


@contextlib.contextmanager
def _interruptible() -> Iterator[Callable[[float | None], bool]]:
    """SIGTERM handled like Ctrl-C while inside; yields ``wait(timeout)``, which blocks the
    main thread until Ctrl-C or SIGTERM (``True``) or for ``timeout`` seconds (``False``;
    ``None`` waits for ever). A signal that came before ``wait`` is not lost."""
    import signal

    done = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread() and os.name != "nt":
        previous = signal.signal(signal.SIGTERM, lambda *_: done.set())

    def wait(timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                # short waits: Ctrl-C is only seen between them
                left = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
                if left <= 0:
                    return False
                if done.wait(left):
                    return True
        except KeyboardInterrupt:
            done.set()
            return True

    try:
        yield wait
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


@click.command("mcp", context_settings=_CONTEXT)
@click.option(
    "--target",
    metavar="TARGET",
    help="the program the agent debugs (path/to/file.py:obj); without it, recorded runs only",
)
@disconnect_options
@db_option
@click.option("--no-record", is_flag=True, help="do not record runs to the database")
@click.pass_context
def mcp_command(
    ctx: click.Context,
    target: str | None,
    on_disconnect: str,
    grace: float,
    db: str | None,
    no_record: bool,
) -> None:
    """An MCP server on stdio: lets a coding agent debug TARGET.

    The agent sets breakpoints, starts runs, waits for stops, reads and edits state, steps,
    resumes, and reads recorded runs, with the tools this server lists. Configure it in an MCP
    client as {"command": "flowdbg", "args": ["mcp", "--target", "app.py:graph"]}. When the
    client closes stdio while runs are held, they are resumed after --grace seconds (or kept
    held until this process is stopped, with --on-disconnect keep). Needs
    pip install 'flowdbg[server]'. See docs/mcp.md.
    """
    from flowdbg.server import require

    from ._target import load_target

    try:
        require("mcp")
    except Exception as exc:
        raise CliError(str(exc)) from exc
    from flowdbg.server._mcp import make_mcp_server
    from flowdbg.server._service import Service

    dbg = _make_debugger(ctx, stop_on_entry=False, no_record=no_record, db=db)
    try:
        obj = None if target is None else load_target(target, dbg)
        service = Service(dbg, obj, target_name=target)
        service.on_disconnect = on_disconnect
        service.grace = grace
        make_mcp_server(service).run("stdio")
        _stdio_closed(service)
    finally:
        dbg.close()


def _stdio_closed(service: Any) -> None:
    """The MCP client closed stdio: runs still held or going on follow the disconnect policy.

    No client can come back over stdio, so after the grace period the held stops are released
    (a ``released`` event, and a line on stderr, the client's log) and so is every stop
    after them, until the runs end. With ``keep`` they stay held until the process is stopped.
    """
    dbg = service.dbg
    if not dbg.stops and not dbg.active_runs and all(h.done() for h in service.launches):
        return
    held = ", ".join(s.id for s in dbg.stops)
    what = f"{held} held" if held else "runs going on"
    with _interruptible() as wait:
        if service.on_disconnect == "keep":
            _say(
                f"the MCP client disconnected with {what}; they stay held until this process "
                "is stopped (--on-disconnect keep)"
            )
            wait(None)
            return
        _say(
            f"the MCP client disconnected with {what}; resuming what is held in "
            f"{service.grace:g} s (--grace), then running on to the end"
        )
        if wait(service.grace):
            return  # stopped: closing the debugger terminates the runs
    while True:
        released = service.release()
        if released:
            ids = ", ".join(stop.id for stop in released)
            _say(f"released {ids}: no client connected for {service.grace:g} s")
        if dbg.wait_for_stop(None) is None:
            return


def _say(message: str) -> None:
    click.echo(f"flowdbg mcp: {message}", err=True)
