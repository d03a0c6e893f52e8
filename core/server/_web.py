"""The web debugger: the page the debug server serves at ``/ui/``, and ``GET /`` for browsers.

The page (``flowdbg/server/web/``: HTML, CSS, our own ES modules and the vendored layout
library) is a client of the protocol like any other: it calls the same routes and reads the
same event stream, with the same token. Its files are static; the token reaches them in their
URLs, since a browser sends no ``Authorization`` header for a ``<script>`` or a stylesheet:
``index.html`` is served with the token of the request written into its asset links, and the
modules pass it on to what they import.

Every answer carries a strict Content-Security-Policy (only this server's own scripts, styles
and connections; no inline script, no frames) and no ``Referer`` leaves the page, so the token
in its address is not sent anywhere else.
"""

from __future__ import annotations

import html
import mimetypes
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

__all__ = ["UI_PATH", "add_web", "asset_names"]

#: where the page is served
UI_PATH = "/ui/"

# the placeholder index.html holds where its asset links take the token
_TOKEN_MARK = "__FLOWDBG_TOKEN__"

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
}


#: the kinds of file the page is made of; nothing else in the folder is served
_SERVED = (".html", ".js", ".css", ".svg", ".png", ".txt")


def _web_root() -> Any:
    return resources.files("flowdbg.server").joinpath("web")


def asset_names() -> list[str]:
    """The files the page is made of, relative to ``/ui/`` (``app.js``,
    ``vendor/dagre.esm.js``...)."""
    names: list[str] = []

    def walk(folder: Any, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            elif "." + entry.name.rsplit(".", 1)[-1] in _SERVED:
                names.append(prefix + entry.name)

    walk(_web_root(), "")
    return sorted(names)


def _read(name: str) -> bytes | None:
    """The bytes of asset ``name``, or ``None`` when there is no such asset (or the name
    tries to leave the folder)."""
    parts = name.split("/")
    if not name or any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        return None
    if "." + name.rsplit(".", 1)[-1] not in _SERVED:  # the folder's scripts and notes are not
        return None
    entry = _web_root()
    for part in parts:
        entry = entry.joinpath(part)
    if not entry.is_file():
        return None
    data: bytes = entry.read_bytes()
    return data


def _csp(host: str) -> str:
    # The Guard has checked the Host header against this server's own names, so it can be
    # written into the policy: Chromium and Firefox both accept ws: under 'self' by now, but
    # an older browser needs the WebSocket's address spelled out.
    return "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            f"connect-src 'self' ws://{host}",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )


def _headers(kind: str, host: str) -> dict[str, str]:
    return {
        "content-type": kind,
        "content-security-policy": _csp(host),
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cache-control": "no-store",
        "x-frame-options": "DENY",
    }


def _token_of(query: str) -> str:
    values = parse_qs(query).get("token")
    return values[-1] if values else ""


def add_web(app: FastAPI) -> None:
    """Serve the page at ``/ui/`` on ``app``, and send a browser asking ``GET /`` for HTML
    there (API clients keep getting the JSON of ``GET /``)."""

    @app.get(UI_PATH, include_in_schema=False)
    def page(request: Request) -> Response:
        data = _read("index.html")
        if data is None:  # a broken install: say what is missing
            return _not_found(request)
        token = _token_of(request.url.query) or _bearer(request)
        text = data.decode("utf-8").replace(_TOKEN_MARK, html.escape(quote(token, safe="")))
        host = request.headers.get("host", "")
        return Response(text, headers=_headers(_TYPES[".html"], host))

    @app.get(UI_PATH + "{name:path}", include_in_schema=False)
    def asset(name: str, request: Request) -> Response:
        data = _read(name)
        if data is None:
            return _not_found(request)
        suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
        kind = _TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
        return Response(data, headers=_headers(kind, request.headers.get("host", "")))

    app.add_middleware(_HtmlRoot)


def _bearer(request: Request) -> str:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _not_found(request: Request) -> Response:
    status = 404
    body = {
        "error": {
            "type": "NotFound",
            "message": f"no file {request.url.path} in the web page; it starts at {UI_PATH}",
            "status": status,
        }
    }
    return JSONResponse(body, status_code=status)


class _HtmlRoot:
    """ASGI middleware: ``GET /`` from a browser (an ``Accept`` preferring ``text/html``) is
    redirected to the page with the same query (the token); any other client gets the JSON."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and scope.get("path") == "/"
            and scope.get("method") in ("GET", "HEAD")
            and _wants_html(scope)
        ):
            query = bytes(scope.get("query_string", b"")).decode("latin-1")
            location = UI_PATH + (f"?{query}" if query else "")
            await send(
                {
                    "type": "http.response.start",
                    "status": 303,
                    "headers": [
                        (b"location", location.encode("latin-1")),
                        (b"referrer-policy", b"no-referrer"),
                        (b"cache-control", b"no-store"),
                        (b"content-length", b"0"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, receive, send)


def _wants_html(scope: Any) -> bool:
    """Whether the request's ``Accept`` header ranks HTML above JSON (as a browser's does)."""
    accept = ""
    for key, value in scope.get("headers", ()):
        if key.lower() == b"accept":
            accept = bytes(value).decode("latin-1").lower()
    html_q = json_q = -1.0
    for item in accept.split(","):
        kind, *params = (part.strip() for part in item.split(";"))
        q = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        if kind in ("text/html", "application/xhtml+xml"):
            html_q = max(html_q, q)
        elif kind in ("application/json", "*/*"):
            json_q = max(json_q, q if kind == "application/json" else q - 0.001)
    return html_q > 0 and html_q > json_q
