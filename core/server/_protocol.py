"""The debug protocol: every request body, response and event the debug server speaks.

This module is the single source of truth of the protocol: the HTTP routes take and return
these models (the OpenAPI document at ``/openapi.json`` is built from them), the WebSocket
stream sends :class:`EventMessage` frames, and the MCP tools return the same shapes. Live
objects that the command line already prints as JSON reuse its models
(:mod:`flowdbg.schemas`: ``Stop``, ``DebuggerStatus``, ``BreakpointInfo``, ``Run``, ``Step``).

:data:`PROTOCOL_VERSION` changes when a change is not compatible (a field removed or renamed,
a meaning changed); adding a field, an event type or a value of an enumeration (a wait outcome)
is compatible, so a client must ignore what it does not know. Importing this module needs
pydantic only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from flowdbg import schemas

__all__ = [
    "PROTOCOL_VERSION",
    "BreakpointCreate",
    "BreakpointCreated",
    "BreakpointList",
    "Diff",
    "ErrorBody",
    "ErrorDetail",
    "EvaluateRequest",
    "EvaluateResult",
    "EventMessage",
    "EventType",
    "Hello",
    "KeyRow",
    "Page",
    "PathRequest",
    "RecordedState",
    "ResumeResult",
    "RunError",
    "RunList",
    "RunStarted",
    "ServerInfo",
    "SetRequest",
    "StartRun",
    "StepList",
    "StopBrief",
    "StopList",
    "TargetInfo",
    "TerminateResult",
    "ValueResult",
    "WaitResult",
]

#: the protocol's version: in :class:`ServerInfo`, every :class:`EventMessage` and the
#: ``flowdbg-protocol`` response header
PROTOCOL_VERSION = 1


class _Request(BaseModel):
    # a request with an unknown field is refused: a typo must not be ignored silently
    model_config = ConfigDict(extra="forbid")


class _Response(BaseModel):
    model_config = ConfigDict(frozen=True)


# ------------------------------------------------------------------------------------ errors


class ErrorDetail(_Response):
    """What went wrong: the error's class name and the message the command line prints."""

    type: str = Field(
        description="the flowdbg error class (StopNotFound, PathError, ExpressionError...), "
        "or a protocol error (Unauthorized, Forbidden, PayloadTooLarge, InvalidRequest)"
    )
    message: str = Field(description="what was wrong and how to fix it, in one sentence")
    status: int = Field(description="the HTTP status")


class ErrorBody(_Response):
    """Every error response: ``{"error": {...}}``."""

    error: ErrorDetail


# ------------------------------------------------------------------------------------ server


class TargetInfo(_Response):
    """The target the server runs (``flowdbg serve TARGET``)."""

    target: str = Field(description="as given on the command line, or the object's type")
    adapter: str
    graph: dict[str, Any] = Field(description="the adapter's description: nodes, edges...")
    example_input: Any = Field(
        default=None,
        description="an input the target runs with, offered to clients for POST /runs (the "
        "demo's input, or flowdbg serve --input); null: none known",
    )
    default_config: dict[str, Any] | None = Field(
        default=None,
        description="the config of a run started without one (flowdbg serve --config), its "
        "secrets redacted as in a recorded run's config; null: runs start without a config",
    )
    capabilities: list[str] = Field(
        default_factory=list,
        description="what the target's adapter can do (GET /adapters lists every adapter's): "
        "'rewind' for POST /stops/{id}/rewind, 'fork' for POST /records/runs/{id}/fork, "
        "'cached_calls' for a rerun serving recorded calls (without it, only cached_calls "
        "'none')",
    )


class ServerInfo(_Response):
    """``GET /``: what this server is."""

    protocol: int = Field(description="PROTOCOL_VERSION")
    flowdbg: str = Field(description="flowdbg's version")
    target: TargetInfo | None = Field(description="null: no target, runs cannot be started")
    recording: bool = Field(description="whether runs are recorded (the /records routes)")
    events: str = Field(description="the WebSocket path of the event stream")


# ------------------------------------------------------------------------------- breakpoints


class BreakpointCreate(_Request):
    """A breakpoint to set (``POST /breakpoints``); the fields a type does not use must be left
    out. Conditions are sandboxed expressions (no imports, no dunders, whitelisted functions)."""

    type: Literal["before", "after", "exception", "watch", "tool", "handoff", "event", "log"] = (
        Field(
            description="before/after: a unit by name; exception: where a unit raises; watch: "
            "after a unit that changed a state path; tool/handoff: before such calls; event: "
            "before every unit matching; log: a logpoint (never stops)"
        )
    )
    pattern: str = Field(
        default="*",
        max_length=1000,
        description="a glob of unit names (the tool name for tool, the target for handoff)",
    )
    condition: str | None = Field(
        default=None, max_length=4000, description="a sandboxed expression over state, input..."
    )
    hit_condition: str | None = Field(
        default=None, max_length=100, description='"3" (third hit), ">=3", "%2"...'
    )
    temporary: bool = Field(default=False, description="remove it after its first stop")
    enabled: bool = True
    kind: list[str] | None = Field(
        default=None, description="only these unit kinds (node, tool, llm, handoff, agent)"
    )
    exception_types: list[str] = Field(
        default_factory=list, description="exception class names (type exception)"
    )
    path: str | None = Field(default=None, max_length=1000, description="the watched state path")
    args_pattern: str | None = Field(
        default=None, max_length=1000, description="a regex the tool's arguments must match"
    )
    message: str | None = Field(
        default=None, max_length=4000, description="the logpoint's template: 'n={state[n]}'"
    )
    position: Literal["before", "after", "error"] = Field(
        default="before", description="where a logpoint fires"
    )
    strict: bool = Field(
        default=False, description="refuse a name that matches no node (else a warning)"
    )


class BreakpointCreated(_Response):
    """A breakpoint set by ``POST /breakpoints``, and why it may never stop."""

    breakpoint: schemas.BreakpointInfo
    warnings: list[str] = Field(
        default_factory=list, description="e.g. a name that matches no node of the target"
    )


class Page(_Response):
    """Where a page of a list is: pass ``next_offset`` as ``offset`` for the next one."""

    offset: int = Field(description="how many items come before this page")
    limit: int = Field(description="the most items a page holds")
    next_offset: int | None = Field(description="null: this is the last page")


class BreakpointList(Page):
    """A page of the breakpoints, in the order they were set."""

    breakpoints: list[schemas.BreakpointInfo]


# ----------------------------------------------------------------------------------- running


class StartRun(_Request):
    """Start a run of the served target (``POST /runs``)."""

    input: Any = Field(default=None, description="the run's input (JSON); null: {}")
    config: dict[str, Any] | None = Field(
        default=None, description="the run's config, as flowdbg run --config takes it"
    )


class RunStarted(_Response):
    """A run started by ``POST /runs``."""

    run_id: str | None = Field(description="null: the run had not begun after the wait")
    launch: int = Field(description="this server's number for the launch (GET /launches/N)")


class RunList(Page):
    """A page of recorded runs, newest first."""

    runs: list[schemas.Run]


class StepList(_Response):
    """A page of a recorded run's steps, in step order."""

    run_id: str
    steps: list[schemas.StepDetail | schemas.Step]
    next_step: int | None = Field(description="pass as from_step for the next page; null: done")


class RecordedState(_Response):
    """A recorded run's state after a step: one row per key, and the value at ``path``."""

    run_id: str
    step: int | None
    keys: list[schemas.StateKey]
    path: str | None = None
    value: Any = None


# --------------------------------------------------------------------------------- stops


class StopBrief(_Response):
    """A stop without its values (what events carry): fetch ``GET /stops/{id}`` for them."""

    id: str
    reason: str
    location: schemas.Location
    breakpoints: list[str]
    message: str | None


class StopList(Page):
    """A page of the open stops, oldest first."""

    stops: list[schemas.Stop]


class RunError(_Response):
    """Why a run failed: the exception's type name and message (secrets redacted)."""

    type: str
    message: str


class WaitResult(_Response):
    """``POST /wait``: the stop, or why there is none.

    ``ended``, ``failed`` and ``terminated`` all mean that no run is active and nothing is
    stopped; they tell how the last top-level run to end ended. Outcomes may be added: a
    client should read any outcome other than ``stopped`` and ``timeout`` as "no run is active".
    """

    stop: schemas.Stop | None
    outcome: Literal["stopped", "timeout", "ended", "failed", "terminated"] = Field(
        description="stopped: a branch is held (stop); timeout: runs go on; ended: every run "
        "has ended and the last one completed (or none ran); failed: the last one raised "
        "(error); terminated: the last one was terminated"
    )
    run_id: str | None = Field(
        default=None, description="the run the outcome is about: the stop's, or the last to end"
    )
    error: RunError | None = Field(default=None, description="why the run failed (failed)")


class PathRequest(_Request):
    """A path at a stop (``input:x``, ``state:messages[-1].content``)."""

    path: str = Field(max_length=1000)


class SetRequest(PathRequest):
    """Set the value at a path of the stop's editable view (applied when it resumes)."""

    value: Any = Field(description="plain JSON: no code is ever evaluated")


class EvaluateRequest(_Request):
    """A sandboxed expression evaluated at a stop."""

    expression: str = Field(max_length=4000)


class KeyRow(_Response):
    """One top-level key of a value: its type, size and a short preview."""

    key: str = Field(description='the key or field ("." for a value without keys)')
    type: str
    size: int | None = Field(description="its length, for a sized value")
    preview: str


class ValueResult(_Response):
    """A value read at a stop."""

    stop: str
    path: str
    value: Any = Field(description="the value as JSON (secrets redacted)")
    keys: list[KeyRow] = Field(description="its top-level keys summarized (type, size, preview)")


class EvaluateResult(_Response):
    """The result of an expression."""

    stop: str
    expression: str
    value: Any


class Diff(_Response):
    """What the unit changed in the state (at an after or error stop)."""

    stop: str
    changes: list[schemas.StateChange]


class ResumeResult(_Response):
    """A stop let go."""

    stop: str
    action: Literal["continue", "step_over", "step_into", "step_out"]


class Rewind(_Request):
    """Go back, at a stop, to the recorded state after an earlier step of its run
    (``POST /stops/{id}/rewind``)."""

    step: int = Field(ge=0, le=10**9, description="a step of the run that has ended; 0: its input")
    edits: dict[str, Any] | None = Field(
        default=None, description="path -> value applied to the recorded state first"
    )


class RewindResult(_Response):
    """A stop's run rewound: it goes on from the state after ``step`` as a new run."""

    stop: str
    run_id: str = Field(description="the rewound run (recorded terminated)")
    step: int


class Fork(_Request):
    """Start a run of the current code from a recorded run's state after a step
    (``POST /records/runs/{id}/fork``)."""

    step: int = Field(ge=0, le=10**9, description="the step to start after; 0: from the input")
    edits: dict[str, Any] | None = Field(
        default=None, description="path -> value applied to the recorded state first"
    )


class Rerun(_Request):
    """Run a recorded run again from its input, its model and tool calls served from the
    record while they match it (``POST /records/runs/{id}/rerun``)."""

    cached_calls: Literal["all", "llm", "tool", "none"] = Field(
        default="all", description="which calls may be served"
    )
    until_divergence: bool = Field(
        default=False, description="end the rerun at the first call that differs from the record"
    )


class TerminateResult(_Response):
    """The runs ended by ``POST /terminate``."""

    runs: list[str]


# ------------------------------------------------------------------------------------ events

EventType = Literal[
    "hello",
    "run_start",
    "run_end",
    "stop",
    "resume",
    "log",
    "step",
    "gap",
    "released",
]


class EventMessage(_Response):
    """One frame of the WebSocket event stream.

    ``seq`` grows by one per event, from 1; a client that reconnects with ``?since=SEQ`` gets
    every event after ``SEQ`` that the server still keeps. When some were dropped before it
    came back, a ``gap`` event says which (``data.first_kept``).

    The ``data`` of each type: ``run_start`` and ``run_end``: ``run_id``, ``name``,
    ``framework``, ``status``, ``parent_run_id`` (and ``error`` at the end); ``stop``: a
    :class:`StopBrief`; ``resume``: ``stop`` and ``action``; ``log``: ``breakpoint``,
    ``message`` and ``location``; ``step``: ``run_id``, ``parent_run_id``, ``step``,
    ``node``, ``kind``, ``status``, ``path``, ``branch``, ``superstep``, ``started_at``,
    ``ended_at``; ``gap``: ``since`` and ``first_kept``; ``released``: ``stops`` and
    ``reason`` (the held stops were resumed because no client stayed connected); ``hello``
    (the first frame, seq 0): ``protocol``, ``last_seq``.
    """

    protocol: int = PROTOCOL_VERSION
    seq: int = Field(ge=0)
    type: EventType
    time: float = Field(description="epoch seconds")
    data: dict[str, Any]


class Hello(_Response):
    """The ``data`` of the first frame of a connection."""

    protocol: int
    last_seq: int = Field(description="the newest event's seq (0: none yet)")
