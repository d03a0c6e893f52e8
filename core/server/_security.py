"""The checks every request and WebSocket passes before the debug server sees it.

:class:`Guard` is plain ASGI middleware around the whole application, so that no route can
forget a check: the ``Host`` header must name this server (no DNS rebinding), an ``Origin``
header, when a browser sends one, must be this server's own (no cross-site requests), the token
must be given (``?token=`` or ``Authorization: Bearer``), and a request body must fit the limit.
A refusal is a JSON :class:`~flowdbg.server._protocol.ErrorBody` (for a WebSocket, the HTTP
answer to its handshake).
"""

from __future__ import annotations

import hmac
import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, NamedTuple
from urllib.parse import parse_qs

__all__ = ["TOTAL_RATES", "ClientRates", "Guard", "RateLimit", "Refusal"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


#: the server-wide rate limit is this many times the per-client one, unless given
TOTAL_RATES = 10


class RateLimit:
    """A token bucket: ``rate`` requests a second on average, bursts of ``burst``."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = float(burst)
        self._tokens = float(burst)
        self._at = time.monotonic()
        self._lock = threading.Lock()

    def take(self) -> float:
        """Take one token: ``0.0``, or when there is none left the seconds until there is."""
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
            self._at = now
            if self._tokens < 1:
                return (1 - self._tokens) / self.rate
            self._tokens -= 1
            return 0.0


class ClientRates:
    """A :class:`RateLimit` for each client, and one for the whole server.

    A client is known by its connection (address and port): on loopback every process has
    the same address, so the connection is what tells a web page from an agent or a script.
    A client that keeps its connection open (an HTTP client object, a browser's pool, a
    WebSocket) has its own budget, which a runaway client next to it cannot use up; one that
    opens a connection per request only meets the server-wide limit, which is there so that
    no client can starve the debugged program of CPU.

    :param rate: requests a second a client may make on average (bursts of twice that).
    :param total: requests a second for all clients together (bursts of twice that).
    :param clients: buckets kept at most (the least recently used go first: a client seen
        again after that starts with a full bucket).
    """

    def __init__(self, rate: float, total: float, *, clients: int = 4096) -> None:
        self.rate = rate
        self.total = total
        self._all = RateLimit(total, _burst(total))
        self._clients: OrderedDict[str, RateLimit] = OrderedDict()
        self._most = clients
        self._lock = threading.Lock()

    def take(self, client: str) -> tuple[str, float] | None:
        """Count a request of ``client``: ``None`` when it may go on, else what it exceeds
        (a sentence) and the seconds until it may retry."""
        with self._lock:
            bucket = self._clients.get(client)
            if bucket is None:
                bucket = self._clients[client] = RateLimit(self.rate, _burst(self.rate))
                if len(self._clients) > self._most:
                    self._clients.popitem(last=False)
            else:
                self._clients.move_to_end(client)
        wait = bucket.take()
        if wait:
            return f"more than {self.rate:g} requests a second from this client ({client})", wait
        wait = self._all.take()
        if wait:
            return f"more than {self.total:g} requests a second to this server in all", wait
        return None


def _burst(rate: float) -> int:
    return max(1, int(rate * 2))


class Refusal(NamedTuple):
    """Why a request is refused: the HTTP status, the error type and its message, and for
    ``429`` the seconds until a retry may pass."""

    status: int
    kind: str
    message: str
    retry: float | None = None


class Guard:
    """ASGI middleware: Host, Origin, token, body size and rate checks.

    :param app: the application guarded.
    :param token: the secret every request must carry.
    :param hosts: the ``Host`` header values accepted (``127.0.0.1:PORT``...); filled in once
        the port is known.
    :param max_body: the largest request body accepted, in bytes.
    :param rate: the request rates before ``429``, per client and in all; ``None``: no limit.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        hosts: set[str] | None = None,
        max_body: int = 1 << 20,
        rate: ClientRates | None = None,
    ) -> None:
        self.app = app
        self.token = token
        self.hosts: set[str] = set() if hosts is None else hosts
        self.max_body = max_body
        self.rate = rate

    @property
    def origins(self) -> set[str]:
        """The ``Origin`` values accepted: this server's own, over http."""
        return {f"http://{host}" for host in self.hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        refusal = self.check(scope)
        if refusal is not None:
            if kind == "websocket":
                await receive()  # websocket.connect: the handshake is answered after it
            await _refuse(scope, send, *refusal)
            return
        if kind == "websocket":
            await self.app(scope, receive, send)
            return
        body: list[bytes] = []
        size = 0
        declared = _header(scope, b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            await _refuse(scope, send, *self._too_large())
            return
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await _refuse(scope, send, *self._too_large())
                return
            body.append(chunk)
            more = bool(message.get("more_body", False))
        await self.app(scope, _replay(b"".join(body), receive), _tagged(send))

    def _too_large(self) -> Refusal:
        return Refusal(
            413,
            "PayloadTooLarge",
            f"the request body is larger than {self.max_body} bytes; send a smaller value "
            "(large values are read at a stop by path, not sent whole)",
        )

    def check(self, scope: Scope) -> Refusal | None:
        """Why the request must be refused (status, type, message), or ``None``."""
        host = _header(scope, b"host")
        if host is None or host.lower() not in self.hosts:
            return Refusal(
                403,
                "Forbidden",
                f"the Host header {host!r} does not name this server; connect to "
                f"{' or '.join(sorted(self.hosts)) or 'its printed address'} (a page of "
                "another site cannot reach it through DNS rebinding)",
            )
        origin = _header(scope, b"origin")
        if origin is not None and origin.lower() not in self.origins:
            return Refusal(
                403,
                "Forbidden",
                f"requests from the origin {origin!r} are refused: only pages served by this "
                "server may call it",
            )
        given = _token(scope)
        if given is None:
            return Refusal(
                401,
                "Unauthorized",
                "a token is required: add ?token=TOKEN to the URL or send 'Authorization: "
                "Bearer TOKEN' (the server printed its URL with the token when it started)",
            )
        if not hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode()):
            return Refusal(
                401,
                "Unauthorized",
                "the token is wrong; use the one in the URL the server printed when it started",
            )
        if self.rate is not None:
            peer = scope.get("client")
            client = "unknown" if not peer else f"{peer[0]}:{peer[1]}"
            exceeded = self.rate.take(client)
            if exceeded is not None:
                what, wait = exceeded
                return Refusal(
                    429,
                    "TooManyRequests",
                    f"{what}; slow down and retry in {max(wait, 0.001):.3g} s",
                    retry=wait,
                )
        return None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _token(scope: Scope) -> str | None:
    auth = _header(scope, b"authorization")
    if auth is not None:
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
    values = query.get("token")
    return values[-1] if values else None


def _tagged(send: Send) -> Send:
    """``send`` adding the protocol version header to the response."""
    from ._protocol import PROTOCOL_VERSION

    version = str(PROTOCOL_VERSION).encode()

    async def tagged(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = dict(message)
            message["headers"] = [*message.get("headers", ()), (b"flowdbg-protocol", version)]
        await send(message)

    return tagged


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: a disconnect, when the client goes

    return replay


async def _refuse(
    scope: Scope, send: Send, status: int, kind: str, message: str, retry: float | None = None
) -> None:
    body = json.dumps({"error": {"type": kind, "message": message, "status": status}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if retry is not None:
        headers.append((b"retry-after", str(max(1, math.ceil(retry))).encode()))
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    if "websocket.http.response" in scope.get("extensions", {}):
        # the handshake's answer is this HTTP response, so the client sees why
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
        return
    await send({"type": "websocket.close", "code": 1008})
