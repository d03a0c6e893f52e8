"""The debug server's ASGI application: the HTTP routes and the WebSocket event stream.

:func:`make_app` builds a FastAPI application over a :class:`~flowdbg.server._service.Service`
and wraps it in the :class:`~flowdbg.server._security.Guard`. The routes are thin: each calls
one service method and returns its protocol model; errors become
:class:`~flowdbg.server._protocol.ErrorBody` answers with the message the command line prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request, WebSocket, WebSocketDisconnect
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from flowdbg import schemas
from flowdbg.errors import (
    EditRefused,
    FlowdbgError,
    NotStoppedError,
    StopNotFound,
)

from . import _protocol as p
from ._security import TOTAL_RATES, ClientRates, Guard
from ._service import (
    BREAKPOINTS_PAGE,
    STOPS_PAGE,
    BreakpointNotFound,
    NoRecording,
    NoTarget,
    Service,
)

__all__ = ["error_status", "make_app"]

_ERRORS: dict[int, str] = {
    400: "a bad request: a malformed path, condition or breakpoint",
    401: "no token, or a wrong one",
    403: "a foreign Host or Origin header",
    404: "no such stop, breakpoint, run or step",
    409: "not possible now: nothing stopped, an edit refused, no target or no recording",
    413: "the request body is too large",
    422: "the request does not match the protocol",
    429: "too many requests",
}
_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": p.ErrorBody, "description": text} for code, text in _ERRORS.items()
}

# the paging parameters of every route that lists (stops, breakpoints, recorded runs)
Offset = Annotated[
    int, Query(ge=0, le=1_000_000, description="items to skip: the last page's next_offset")
]
Limit = Annotated[int, Query(ge=1, le=500, description="the most items in the page")]


def error_status(exc: FlowdbgError) -> int:
    """The HTTP status of a flowdbg error: 404 for what names nothing, 409 for what cannot be
    done now, 400 for the rest (a malformed path, a refused condition...)."""
    from flowdbg.store import RunNotFound, StepNotFound

    if isinstance(exc, StopNotFound | BreakpointNotFound | RunNotFound | StepNotFound):
        return 404
    if isinstance(exc, NotStoppedError | EditRefused | NoTarget | NoRecording):
        return 409
    return 400


def _error(status: int, kind: str, message: str) -> JSONResponse:
    body = p.ErrorBody(error=p.ErrorDetail(type=kind, message=message, status=status))
    return JSONResponse(body.model_dump(mode="json"), status_code=status)


def make_app(
    service: Service,
    *,
    token: str,
    hosts: set[str],
    max_body: int = 1 << 20,
    rate: float | None = 200.0,
    total_rate: float | None = None,
    mcp: bool = True,
) -> Guard:
    """The guarded ASGI application serving ``service``.

    :param token: the secret every request and WebSocket must carry.
    :param hosts: the ``Host`` header values accepted (the set may be filled in later, once
        the port is known).
    :param max_body: the largest request body accepted, in bytes.
    :param rate: requests a second a client (a connection) may make on average before ``429``
        (bursts of twice that); ``None`` for no limit.
    :param total_rate: requests a second for all clients together (ten times ``rate`` when
        ``None``).
    :param mcp: also serve the MCP server over streamable HTTP at ``/mcp`` (when the ``mcp``
        package is installed).
    """
    from flowdbg import __version__

    mcp_app, lifespan = _mcp_app(service) if mcp else (None, None)
    app = FastAPI(
        lifespan=lifespan,
        title="flowdbg debug server",
        version=f"{p.PROTOCOL_VERSION}",
        summary=f"drive flowdbg {__version__} over HTTP; events over the WebSocket /events",
        docs_url=None,  # the interactive pages load scripts from a CDN: not on a debug server
        redoc_url=None,
        responses=_RESPONSES,
    )

    default_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        # the WebSocket is not an OpenAPI operation: its frames' schema is published beside
        schema = default_openapi()
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        if "EventMessage" not in components:
            components["EventMessage"] = p.EventMessage.model_json_schema(
                ref_template="#/components/schemas/{model}"
            )
            schema["x-flowdbg-events"] = {
                "path": "/events",
                "query": {"since": "the last seq handled; events after it are sent again"},
                "message": {"$ref": "#/components/schemas/EventMessage"},
            }
        return schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.exception_handler(FlowdbgError)
    async def flowdbg_error(request: Request, exc: FlowdbgError) -> JSONResponse:
        return _error(error_status(exc), type(exc).__name__, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors()[:5]:
            where = ".".join(str(x) for x in err.get("loc", ()))
            parts.append(f"{where}: {err.get('msg')}")
        return _error(422, "InvalidRequest", "; ".join(parts) or "the request is not valid")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        kind = "NotFound" if exc.status_code == 404 else "HTTPError"
        message = (
            f"no route {request.method} {request.url.path}; GET /openapi.json lists them"
            if exc.status_code in (404, 405)
            else str(exc.detail)
        )
        return _error(exc.status_code, kind, message)

    # -------------------------------------------------------------------- the server

    @app.get("/", response_model=p.ServerInfo, tags=["server"])
    def server_info() -> p.ServerInfo:
        """What this server is: the protocol version, its target, whether it records."""
        return service.info()

    @app.get("/adapters", response_model=schemas.Adapters, tags=["server"])
    def adapters() -> schemas.Adapters:
        """Every adapter flowdbg knows, usable or not."""
        return service.adapters()

    @app.get("/target", response_model=p.TargetInfo, tags=["server"])
    def target() -> p.TargetInfo:
        """The target runs are started of, with its graph."""
        return service.target_info()

    @app.get("/status", response_model=schemas.DebuggerStatus, tags=["control"])
    def status() -> schemas.DebuggerStatus:
        """The debugger's state (idle, running, stopped, terminated), open stops and runs."""
        return service.status()

    # ---------------------------------------------------------------- breakpoints

    @app.get("/breakpoints", response_model=p.BreakpointList, tags=["breakpoints"])
    def list_breakpoints(offset: Offset = 0, limit: Limit = BREAKPOINTS_PAGE) -> p.BreakpointList:
        """A page of the breakpoints, in the order they were set."""
        return service.breakpoints(offset=offset, limit=limit)

    @app.post(
        "/breakpoints", response_model=p.BreakpointCreated, status_code=201, tags=["breakpoints"]
    )
    def add_breakpoint(req: p.BreakpointCreate) -> p.BreakpointCreated:
        """Set a breakpoint, watch, logpoint or exception breakpoint."""
        return service.add_breakpoint(req)

    @app.delete("/breakpoints", response_model=p.BreakpointList, tags=["breakpoints"])
    def clear_breakpoints() -> p.BreakpointList:
        """Remove every breakpoint."""
        return service.clear_breakpoints()

    @app.get("/breakpoints/{bp_id}", response_model=schemas.BreakpointInfo, tags=["breakpoints"])
    def get_breakpoint(bp_id: str) -> schemas.BreakpointInfo:
        """One breakpoint, with its hit count."""
        return service.get_breakpoint(bp_id)

    @app.delete("/breakpoints/{bp_id}", response_model=schemas.BreakpointInfo, tags=["breakpoints"])
    def remove_breakpoint(bp_id: str) -> schemas.BreakpointInfo:
        """Remove a breakpoint; returns it."""
        return service.remove_breakpoint(bp_id)

    # ----------------------------------------------------------------------- runs

    @app.post("/runs", response_model=p.RunStarted, status_code=201, tags=["control"])
    def start_run(req: p.StartRun) -> p.RunStarted:
        """Start a run of the target with an input; it runs in the server's process until it
        ends or stops at a breakpoint (watch the event stream, or POST /wait)."""
        return service.start(req)

    @app.post("/pause", response_model=schemas.DebuggerStatus, tags=["control"])
    def pause() -> schemas.DebuggerStatus:
        """Stop every branch at its next point (reason pause)."""
        return service.pause()

    @app.post("/terminate", response_model=p.TerminateResult, tags=["control"])
    def terminate() -> p.TerminateResult:
        """End every active run (their open stops too)."""
        return service.terminate()

    # ---------------------------------------------------------------------- stops

    @app.get("/stops", response_model=p.StopList, tags=["stops"])
    def list_stops(offset: Offset = 0, limit: Limit = STOPS_PAGE) -> p.StopList:
        """A page of the open stops, oldest first, with their values."""
        return service.stops(offset=offset, limit=limit)

    @app.post("/wait", response_model=p.WaitResult, tags=["stops"])
    def wait(
        timeout: float = Query(10.0, ge=0, le=300, description="seconds to wait at most"),
    ) -> p.WaitResult:
        """Wait for a stop: at once when one is open, else until one occurs, the runs end, or
        the timeout passes."""
        return service.wait(timeout)

    @app.get("/stops/{stop_id}", response_model=schemas.Stop, tags=["stops"])
    def get_stop(stop_id: str) -> schemas.Stop:
        """One open stop with its views' values."""
        return service.stop(stop_id)

    @app.get("/stops/{stop_id}/value", response_model=p.ValueResult, tags=["stops"])
    def get_value(
        stop_id: str,
        path: str = Query(
            "",
            max_length=1000,
            description="a path of the default view, or view:path (state:messages[-1])",
        ),
    ) -> p.ValueResult:
        """The value at a path at a stop, and its top-level keys summarized."""
        return service.inspect(stop_id, path)

    @app.post("/stops/{stop_id}/set", response_model=schemas.Stop, tags=["stops"])
    def set_value(stop_id: str, req: p.SetRequest) -> schemas.Stop:
        """Set a path of the stop's editable view (input before, output after) to a JSON
        value, applied when the branch resumes."""
        return service.set(stop_id, req.path, req.value)

    @app.post("/stops/{stop_id}/delete", response_model=schemas.Stop, tags=["stops"])
    def delete_value(stop_id: str, req: p.PathRequest) -> schemas.Stop:
        """Delete a key or element of the stop's editable view."""
        return service.delete(stop_id, req.path)

    @app.post("/stops/{stop_id}/evaluate", response_model=p.EvaluateResult, tags=["stops"])
    def evaluate(stop_id: str, req: p.EvaluateRequest) -> p.EvaluateResult:
        """Evaluate an expression in the condition sandbox (no imports, no dunders)."""
        return service.evaluate(stop_id, req.expression)

    @app.get("/stops/{stop_id}/diff", response_model=p.Diff, tags=["stops"])
    def diff(stop_id: str) -> p.Diff:
        """What the unit changed in the state (after and error stops)."""
        return service.diff(stop_id)

    def _resume_route(action: str) -> None:
        def resume(stop_id: str) -> p.ResumeResult:
            return service.resume(stop_id, action)

        resume.__name__ = f"resume_{action}"
        resume.__doc__ = _RESUME_DOCS[action]
        app.post(f"/stops/{{stop_id}}/{action}", response_model=p.ResumeResult, tags=["stops"])(
            resume
        )

    for action in _RESUME_DOCS:
        _resume_route(action)

    @app.post("/stops/{stop_id}/rewind", response_model=p.RewindResult, tags=["stops"])
    def rewind(stop_id: str, req: p.Rewind) -> p.RewindResult:
        """Go back to the recorded state after an earlier step of the stop's run (with edits)
        and go on from there in the same call; the run goes on as a rewind of it."""
        return service.rewind(stop_id, req)

    # -------------------------------------------------------------------- records

    @app.get("/records/runs", response_model=p.RunList, tags=["records"])
    def recorded_runs(
        offset: Offset = 0,
        limit: Limit = 50,
        status: str | None = Query(None, max_length=20),
        name: str | None = Query(None, max_length=200, description="a glob of run names"),
        since: float | None = Query(None, description="started at or after (epoch seconds)"),
        until: float | None = Query(None, description="started at or before (epoch seconds)"),
        adapter: str | None = Query(
            None, max_length=50, description="only runs of this adapter (stategraph, langgraph...)"
        ),
    ) -> p.RunList:
        """Recorded top-level runs, newest first."""
        return service.recorded_runs(
            offset=offset,
            limit=limit,
            status=status,
            name=name,
            since=since,
            until=until,
            framework=adapter,
        )

    @app.get("/records/runs/{run_id}", response_model=schemas.RunDetail, tags=["records"])
    def recorded_run(run_id: str) -> schemas.RunDetail:
        """One recorded run (id or a unique prefix of 4+ characters) with input and output."""
        return service.recorded_run(run_id)

    @app.get("/records/runs/{run_id}/steps", response_model=p.StepList, tags=["records"])
    def recorded_steps(
        run_id: str,
        from_step: int = Query(1, ge=1, le=10**9),
        limit: int = Query(100, ge=1, le=1000),
        values: bool = Query(False, description="with each step's input and output"),
        node: str | None = Query(None, max_length=200),
    ) -> p.StepList:
        """A page of a recorded run's steps; pass next_step as from_step for the next one."""
        return service.recorded_steps(
            run_id, from_step=from_step, limit=limit, values=values, node=node
        )

    @app.get("/records/runs/{run_id}/state", response_model=p.RecordedState, tags=["records"])
    def recorded_state(
        run_id: str,
        step: int | None = Query(None, ge=1, le=10**9, description="null: the final state"),
        path: str | None = Query(None, max_length=1000),
    ) -> p.RecordedState:
        """A recorded run's state after a step, and the value at a path."""
        return service.recorded_state(run_id, step=step, path=path)

    @app.get("/records/diff", response_model=schemas.RunsDiff, tags=["records"])
    def recorded_diff(
        a: str = Query(..., max_length=100, description="the first run's id or prefix"),
        b: str = Query(..., max_length=100, description="the second run's id or prefix"),
        ignore: Annotated[
            list[str] | None,
            Query(max_length=50, description="state path globs to leave out of the comparison"),
        ] = None,
        strict: bool = Query(False, description="compare generated ids and times too"),
    ) -> schemas.RunsDiff:
        """Two recorded runs compared (as flowdbg runs diff): per-node counts and times, and
        where they first diverge."""
        return service.recorded_diff(a, b, ignore=tuple(ignore or ()), strict=strict)

    @app.get(
        "/records/runs/{run_id}/timeline", response_model=schemas.RunsTimeline, tags=["records"]
    )
    def recorded_timeline(run_id: str) -> schemas.RunsTimeline:
        """The run, its forks, reruns and rewinds (and theirs), as flowdbg runs timeline."""
        return service.recorded_timeline(run_id)

    @app.get(
        "/records/runs/{run_id}/divergence",
        response_model=schemas.RunsDivergence,
        tags=["records"],
    )
    def recorded_divergence(
        run_id: str,
        source: str | None = Query(
            None, max_length=100, description="the run to compare with; null: its source"
        ),
        ignore: Annotated[
            list[str] | None,
            Query(max_length=50, description="state path globs to leave out of the comparison"),
        ] = None,
        strict: bool = Query(False, description="compare generated ids and times too"),
    ) -> schemas.RunsDivergence:
        """How a fork, rerun or rewind departs from its run, as flowdbg runs divergence."""
        return service.recorded_divergence(
            run_id, source, ignore=tuple(ignore or ()), strict=strict
        )

    @app.post(
        "/records/runs/{run_id}/fork",
        response_model=p.RunStarted,
        status_code=201,
        tags=["records"],
    )
    def fork(run_id: str, req: p.Fork) -> p.RunStarted:
        """Start a run of the current code from the run's recorded state after a step."""
        return service.fork(run_id, req)

    @app.post(
        "/records/runs/{run_id}/rerun",
        response_model=p.RunStarted,
        status_code=201,
        tags=["records"],
    )
    def rerun(run_id: str, req: p.Rerun) -> p.RunStarted:
        """Run the run again from its input, unchanged model and tool calls served."""
        return service.rerun(run_id, req)

    # ------------------------------------------------------------------- the page

    from ._web import add_web

    add_web(app)

    # --------------------------------------------------------------------- events

    @app.websocket("/events")
    async def events(ws: WebSocket, since: int | None = None) -> None:
        """The event stream (see :class:`~flowdbg.server._protocol.EventMessage`)."""
        await _stream(ws, service, since)

    guard = Guard(
        app if mcp_app is None else _Dispatch(app, mcp_app),
        token=token,
        hosts=hosts,
        max_body=max_body,
        rate=None if rate is None else ClientRates(rate, total_rate or rate * TOTAL_RATES),
    )
    return guard


class _Dispatch:
    """``/mcp`` to the MCP server's app, everything else (and the lifespan) to the API."""

    def __init__(self, api: Any, mcp_app: Any) -> None:
        self.api = api
        self.mcp_app = mcp_app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == MCP_PATH or path.startswith(MCP_PATH + "/")):
            await self.mcp_app(scope, receive, send)
        else:
            await self.api(scope, receive, send)


#: where the MCP server answers over streamable HTTP
MCP_PATH = "/mcp"


def _mcp_app(service: Service) -> tuple[Any, Any]:
    """The MCP server's streamable HTTP app, and the lifespan that runs its sessions; ``(None,
    None)`` without the ``mcp`` package."""
    try:
        from mcp.server.transport_security import TransportSecuritySettings
    except ImportError:  # the server extra installs it; without it, no /mcp
        return None, None

    from ._mcp import make_mcp_server

    server = make_mcp_server(service)
    # the Guard around everything checks Host, Origin and the token, for exact ports
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> Any:
        async with server.session_manager.run():
            yield

    return app, lifespan


_RESUME_DOCS = {
    "continue": "Let the stop's branch run on to its next breakpoint or the end.",
    "step_over": "Run to the branch's next point at the same or a shallower depth.",
    "step_into": "Run to the branch's next point at any depth (into subgraphs and calls).",
    "step_out": "Run to the branch's next point in an enclosing run (at the top: the end).",
}


async def _stream(ws: WebSocket, service: Service, since: int | None) -> None:
    """Send the journal's events after ``since`` (from now when ``None``) as they come; a
    slow client only falls behind (then a ``gap`` event), it never holds the run."""
    journal = service.journal
    await ws.accept()
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()
    journal.register(loop, wake)
    cursor = journal.last_seq if since is None or since < 0 else since
    hello = p.Hello(protocol=p.PROTOCOL_VERSION, last_seq=journal.last_seq)
    receiver = asyncio.ensure_future(_drain(ws))
    service.client_connected()
    try:
        await ws.send_json(_frame(0, "hello", hello.model_dump()))
        while not receiver.done():
            wake.clear()
            items, first_kept = journal.since(cursor)
            if first_kept is not None:
                await ws.send_json(_frame(0, "gap", {"since": cursor, "first_kept": first_kept}))
                cursor = first_kept - 1
            for item in items:
                await ws.send_json({"protocol": p.PROTOCOL_VERSION, **item})
                cursor = item["seq"]
            if items or first_kept is not None:
                continue
            waiter = asyncio.ensure_future(wake.wait())
            await asyncio.wait({waiter, receiver}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
    except (WebSocketDisconnect, RuntimeError):
        pass  # the client went away while we were sending
    finally:
        service.client_disconnected()
        journal.unregister(loop, wake)
        receiver.cancel()
        with contextlib.suppress(BaseException):
            await receiver


async def _drain(ws: WebSocket) -> None:
    """Read (and ignore) what the client sends, until it disconnects."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return


def _frame(seq: int, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "protocol": p.PROTOCOL_VERSION,
        "seq": seq,
        "type": kind,
        "time": time.time(),
        "data": data,
    }
