"""The debug server: a :class:`~flowdbg.Debugger` driven over HTTP and a WebSocket.

``server = dbg.serve()`` (or :func:`serve`) starts it on a background thread of this process;
``flowdbg serve app.py:graph`` starts one for a target. It needs the ``server`` extra
(``pip install 'flowdbg[server]'``). The protocol is :mod:`flowdbg.server._protocol`; see
``docs/server.md`` for the routes, the events and the security model.
"""

from __future__ import annotations

import ipaddress
import secrets
import threading
import time
from typing import TYPE_CHECKING, Any

from flowdbg.errors import FlowdbgError

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger

    from ._service import Service

__all__ = ["DebugServer", "ServerError", "ServerUnavailable", "require", "serve"]

#: the packages the ``server`` extra installs, by import name
_PACKAGES = ("fastapi", "uvicorn", "websockets")


class ServerError(FlowdbgError):
    """The debug server cannot start as asked (an unsafe bind, a port in use...)."""


class ServerUnavailable(ServerError):
    """The packages the debug server needs are not installed."""


def require(*packages: str) -> None:
    """Check that the server's packages import.

    :raises ServerUnavailable: naming the missing ones and the ``pip`` command that installs
        them.
    """
    import importlib.util

    missing = [name for name in packages or _PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise ServerUnavailable(
            f"the debug server needs {', '.join(missing)}, which {verb} not installed; "
            "install them with: pip install 'flowdbg[server]'"
        )


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (``127.0.0.1``, ``::1``,
    ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class DebugServer:
    """A debug server running on a background thread; a context manager.

    :param dbg: the debugger served.
    :param target: the object the server starts runs of (``POST /runs``), or ``None``.
    :param target_name: how to call the target for clients (``app.py:graph``).
    :param host: the address to bind; loopback unless a ``token`` is given too.
    :param port: the port; ``0`` picks a free one (see :attr:`port`).
    :param token: the secret clients must send; a random one by default.
    :param allowed_hosts: more ``Host`` header values to accept (``name:port``, or ``name``
        for this server's port), for a server reached through a name of its own (a
        non-loopback ``host``'s clients send the machine's name or address).
    :param max_body: the largest request body accepted, in bytes.
    :param rate: requests a second a client (a connection) may make on average before
        ``429`` (bursts of twice that); ``None``: no limit.
    :param total_rate: requests a second for all clients together (``None``: ten times
        ``rate``).
    :param on_disconnect: when the last event-stream (WebSocket) client disconnects while
        branches are held: ``"resume"`` (the default) lets them go after ``grace`` seconds
        unless a client reconnects (a ``released`` event says so), ``"keep"`` holds them.
    :param grace: seconds to wait for a client to come back (60 by default).
    :param example_input: an input the target runs with, offered to clients (the web page
        fills its run form with it).
    :raises ServerError: for a non-loopback ``host`` without an explicit ``token``.
    :raises ServerUnavailable: when the ``server`` extra is not installed.
    """

    def __init__(
        self,
        dbg: Debugger,
        *,
        target: Any = None,
        target_name: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        allowed_hosts: tuple[str, ...] = (),
        max_body: int = 1 << 20,
        rate: float | None = 200.0,
        total_rate: float | None = None,
        on_disconnect: str = "resume",
        grace: float = 60.0,
        example_input: Any = None,
    ) -> None:
        require()
        if on_disconnect not in ("resume", "keep"):
            raise ServerError(f"on_disconnect must be 'resume' or 'keep', not {on_disconnect!r}")
        if grace < 0:
            raise ServerError(f"grace must be seconds (0 or more), not {grace!r}")
        if not is_loopback(host) and not token:
            raise ServerError(
                f"refusing to listen on {host!r} without a token: anyone who can reach it "
                "could drive the debugged program; give a token of your own too "
                "(--token or token=...), or bind to 127.0.0.1"
            )
        for name, value in (("rate", rate), ("total_rate", total_rate)):
            if value is not None and value <= 0:
                raise ServerError(
                    f"{name} must be requests a second (above 0) or None, not {value!r}"
                )
        if token is not None and len(token) < 16:
            raise ServerError("the token must be at least 16 characters; use a random one")
        from ._app import make_app
        from ._service import Service

        self.host = host
        self.token = token or secrets.token_urlsafe(32)
        self.service: Service = Service(dbg, target, target_name=target_name)
        self.service.on_disconnect = on_disconnect
        self.service.grace = grace
        self.service.example_input = example_input
        self._hosts: set[str] = set()
        self._allowed = tuple(h.lower() for h in allowed_hosts)
        self._port = port
        self.app = make_app(
            self.service,
            token=self.token,
            hosts=self._hosts,
            max_body=max_body,
            rate=rate,
            total_rate=total_rate,
        )
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port it listens on (known once started)."""
        return self._port

    @property
    def url(self) -> str:
        """The address to open, with the token (``http://127.0.0.1:PORT/?token=...``); a
        browser opening it gets the web debugger."""
        return f"{self.base_url}/?token={self.token}"

    @property
    def base_url(self) -> str:
        """The address without the token."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self._port}"

    def start(self, timeout: float = 10.0) -> DebugServer:
        """Start serving on a background thread; returns once it listens.

        :raises ServerError: when it cannot listen (the port is taken, say).
        """
        import uvicorn

        config = uvicorn.Config(
            self.app,
            host=self.host,
            port=self._port,
            log_level="warning",
            lifespan="on",  # the MCP server's sessions run in the app's lifespan
            ws="websockets-sansio",
            # the server's own limits apply before any route: see _security.Guard
            ws_max_size=1 << 20,
            access_log=False,
        )
        server = uvicorn.Server(config)
        failed: list[BaseException] = []

        def run() -> None:
            try:
                server.run()
            except BaseException as exc:  # SystemExit when the port cannot be bound
                failed.append(exc)

        self._server = server
        self._thread = threading.Thread(target=run, name="flowdbg-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        pause = threading.Event()  # never set: a wait on it is a short pause
        while not server.started and self._thread.is_alive() and time.monotonic() < deadline:
            pause.wait(0.01)
        if not server.started:
            self.close()
            why = f": {failed[0]}" if failed and str(failed[0]) else ""
            raise ServerError(
                f"the debug server could not listen on {self.host}:{self._port}{why}; "
                "choose another port (0 picks a free one)"
            )
        sockets = [s for srv in server.servers for s in srv.sockets]
        self._port = sockets[0].getsockname()[1]
        names = {"127.0.0.1", "localhost", "[::1]", self.host.lower()}
        if ":" in self.host and not self.host.startswith("["):
            names.add(f"[{self.host.lower()}]")
        self._hosts.update(f"{name}:{self._port}" for name in names)
        # a name without a port means this server's port
        self._hosts.update(
            h if ":" in h.lstrip("[").split("]")[-1] else f"{h}:{self._port}" for h in self._allowed
        )
        return self

    def close(self, timeout: float = 10.0) -> None:
        """Stop serving: open connections are closed and the server stops observing the
        debugger, which is left as it is (its stops stay held, its breakpoints set)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.service.close()

    def __enter__(self) -> DebugServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<flowdbg.DebugServer {self.base_url}>"


def serve(dbg: Debugger, **kwargs: Any) -> DebugServer:
    """Start a :class:`DebugServer` for ``dbg`` (the arguments are its own); returns it
    listening."""
    return DebugServer(dbg, **kwargs).start()
