"""The shapes of the JSON flowdbg prints and serves, as pydantic models.

Every ``--json`` command of the CLI prints an :class:`Envelope` whose ``data`` is one of the
command models below (:data:`COMMANDS` names them); the debug server answers with the same
shapes, plus :class:`Stop`, :class:`DebuggerStatus` and :class:`BreakpointInfo` for a live
session. :func:`json_schema` turns a model into the JSON Schema (2020-12) that
``docs/cli.md`` publishes.

The models describe output: a consumer must accept properties it does not know (adding one is
a compatible change), so none of them forbids extra keys. A property that some outputs leave
out (``RunTree.steps``, ``RunsState.value``...) is a field that is ``None`` when absent, and
that the JSON Schema does not let be null: build such a model with the properties the output
has, and dump it with ``model_dump(mode="json", exclude_unset=True)``. Use the module as a namespace
(``from flowdbg import schemas``; ``schemas.Run``) since several names (``Stop``, ``Location``)
are also core classes, of which these are the JSON views.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from flowdbg.adapter import Capability
from flowdbg.breakpoints import BreakpointType
from flowdbg.events import Kind, Position
from flowdbg.stops import StopReason

__all__ = [
    "COMMANDS",
    "JSON_SCHEMA_DIALECT",
    "AdapterEntry",
    "Adapters",
    "BreakpointInfo",
    "CallsServed",
    "ConditionalEdge",
    "DebuggerStatus",
    "Divergence",
    "Edge",
    "Envelope",
    "Error",
    "ForkTree",
    "Graph",
    "GraphInspect",
    "GraphNode",
    "IgnoredDifference",
    "LiveCall",
    "Location",
    "NodeDelta",
    "ReplayAfter",
    "ReplayBefore",
    "ReplayError",
    "ReplayTerminated",
    "Run",
    "RunDetail",
    "RunStatusName",
    "RunTree",
    "RunsDiff",
    "RunsDivergence",
    "RunsFork",
    "RunsLs",
    "RunsReplay",
    "RunsRerun",
    "RunsShow",
    "RunsState",
    "RunsSteps",
    "RunsTimeline",
    "ShowFilters",
    "StateChange",
    "StateKey",
    "Step",
    "StepDetail",
    "StepStatusName",
    "StepsCompared",
    "Stop",
    "WatchChange",
    "WrittenBy",
    "json_schema",
]

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# Kinds, positions, capabilities and the like are the core enums themselves, so that a new value
# reaches the schemas at once. The statuses have no enum of their own in the core (the store
# keeps them as text): they repeat flowdbg.records.RUN_STATUSES / STEP_STATUSES, and a test
# keeps the two in step.
RunStatusName = Literal["running", "completed", "failed", "terminated", "interrupted", "suspended"]
StepStatusName = Literal["running", "completed", "failed", "suspended", "terminated"]
Origin = Literal["fork", "rerun", "rewind"]
DebuggerStateName = Literal["idle", "running", "stopped", "terminated"]

Seconds = Annotated[float, Field(ge=0)]
Count = Annotated[int, Field(ge=0)]
StepNumber = Annotated[int, Field(ge=1, description="the step's number in its run, from 1")]
Attempt = Annotated[int, Field(ge=1)]
Timestamp = Annotated[dt.datetime, Field(description="ISO 8601, UTC")]
#: ``X | Absent = None``: a property some outputs leave out; the JSON Schema never lets it be null
Absent = SkipJsonSchema[None]


class _Shape(BaseModel):
    # frozen: a shape is built once and printed; extra keys are ignored, never forbidden
    model_config = ConfigDict(frozen=True)


# ------------------------------------------------------------------------------ runs and steps


class Error(_Shape):
    """An exception: its type name, module, message and formatted traceback."""

    type: str
    module: str
    message: str
    traceback: str


class Run(_Shape):
    """One recorded run; times are ISO 8601 UTC, durations seconds."""

    run_id: str
    short_id: str = Field(description="the first 8 characters of run_id, as tables show it")
    name: str
    framework: str
    status: RunStatusName = Field(
        description="interrupted: its recording process died; suspended: it ended waiting "
        "for the framework's resume"
    )
    parent_run_id: str | None = Field(description="the run it is nested in")
    root_run_id: str | None
    parent_step: int | None = Field(description="the step of the parent run that started it")
    path: list[str] = Field(description="the enclosing units, from the top-level run down")
    started_at: Timestamp | None
    ended_at: Timestamp | None
    duration: Seconds | None
    steps: Count | None = Field(description="the number of steps recorded")
    error: Error | None
    tags: dict[str, str] = Field(description="labels such as a LangGraph thread_id")
    pid: int | None = Field(description="the process that recorded it")
    host: str | None
    target: str | None = Field(
        description="how to import its target again (path/to/file.py:obj or module:obj), "
        "null when unknown"
    )
    origin: Origin | None = Field(
        description="how it was made from run forked_from: fork (from the state after step "
        "fork_step), rerun (from its input) or rewind; null for a run started afresh"
    )
    forked_from: str | None = Field(description="the run it was made from")
    fork_step: int | None = Field(description="the step of forked_from it starts after")


class RunDetail(Run):
    """A run with its input and output (runs show)."""

    input: Any = Field(description="the run's input")
    output: Any = Field(description="the run's output")
    config: Any = Field(
        default=None,
        description="the config it was started with (flowdbg run --config, a server's), "
        "secrets redacted; a rerun starts with it again; null when none was given",
    )


class Step(_Shape):
    """One execution of a unit (node, tool call, model call, handoff)."""

    run_id: str
    step: StepNumber
    node: str
    kind: Kind
    path: list[str] = Field(description="the enclosing units, from the top-level run down")
    status: StepStatusName = Field(
        description="failed: it raised; suspended: the framework paused it to run again "
        "later; terminated: stopped on purpose there, by the debugger or the run's caller (a "
        "streamed OpenAI Agents run's result.cancel())"
    )
    started_at: Timestamp | None
    ended_at: Timestamp | None
    duration: Seconds | None
    superstep: int | None
    branch: str | None
    attempt: Attempt
    decision: Any = Field(description="the routing decision (next nodes), or null")
    error: Error | None
    partial: bool = Field(description="some value could not be recorded and is shown by repr")
    child_run_id: str | None = Field(description="the run this unit started (a subgraph)")
    cached: bool = Field(
        description="a rerun served its output from the recorded run instead of running it"
    )


class StepDetail(Step):
    """A step with what the unit received and returned (runs steps)."""

    input: Any = Field(description="what the unit received")
    output: Any = Field(description="what the unit returned")


class RunTree(_Shape):
    """A run with its steps and, with --tree, its nested runs."""

    run: Run
    steps: list[Step] | Absent = Field(default=None, description="with --tree")
    children: list[RunTree] | Absent = Field(default=None, description="with --tree")


# ------------------------------------------------------------------------------ runs commands


class ForkTree(_Shape):
    """A run listed by runs ls --tree and the runs listed that were made from it."""

    run_id: str
    forks: list[ForkTree] = Field(description="its forks, reruns and rewinds, oldest first")


class RunsLs(_Shape):
    """flowdbg runs ls --json: the runs that match, newest first."""

    db: str = Field(description="the database file")
    count: Count
    runs: list[Run]
    tree: list[ForkTree] | Absent = Field(
        default=None,
        description="with --tree: the runs listed that were not made from another run listed, "
        "each with those made from it",
    )


class ShowFilters(_Shape):
    """The filters that runs show applied to the steps."""

    errors: bool
    node: str | None


class RunsShow(_Shape):
    """flowdbg runs show --json: a run, its steps and its nested runs."""

    run: RunDetail
    steps: list[Step]
    children: list[RunTree] = Field(
        description="nested runs; their steps and children only with --tree"
    )
    filters: ShowFilters


class RunsFork(_Shape):
    """flowdbg runs fork --json: the new run, run to its end without stopping."""

    run: RunDetail = Field(
        description="the fork: origin 'fork', forked_from and fork_step say where it started; "
        "its input is the state it started from"
    )
    steps: list[Step] = Field(description="the steps the fork ran")
    edits: dict[str, Any] = Field(description="the --set edits applied first, path -> value")
    first_divergence: Divergence | None = Field(
        description="where the fork first departs from the run after the fork step (null: "
        "the same units with the same states; see runs divergence)"
    )


class LiveCall(_Shape):
    """The first call of a branch that ran live in a rerun where the record had a call."""

    branch: list[str] = Field(description="the units the call is inside, from the run down")
    kind: Kind
    name: str
    recorded_name: str | None = Field(description="the call the record has at that position")
    recorded_step: int | None = Field(description="its step in the recorded run")
    reason: Literal["input", "name", "partial", "extra"] = Field(
        description="input: its input differs; name: another call; partial: the recorded "
        "values are incomplete; extra: the record has no more calls there"
    )
    input: Any = Field(description="the call's input in the rerun")
    recorded_input: Any = Field(description="the recorded call's input")


class CallsServed(_Shape):
    """What a rerun served from the record."""

    cached_calls: Literal["all", "llm", "tool", "none"]
    until_divergence: bool = Field(
        description="the rerun ended at the first call that differed instead of making it"
    )
    served: Count = Field(description="calls given their recorded output without running")
    live: Count = Field(description="calls that ran")
    saved_seconds: Seconds = Field(description="what the served calls took in the recorded run")
    saved_tokens: Count = Field(
        description="the tokens the served replies report (their usage's total_tokens)"
    )
    diverged: list[LiveCall] = Field(description="per branch, the first call that differed")


class RunsRerun(_Shape):
    """flowdbg runs rerun --json: the new run, run to its end without stopping."""

    run: RunDetail = Field(description="the rerun: origin 'rerun', forked_from the run")
    steps: list[Step] = Field(description="its steps; cached: served from the record")
    first_divergence: Divergence | None = Field(
        description="where the rerun first departs from the run (null: the same path, states "
        "and outcomes; see runs divergence)"
    )
    calls: CallsServed


class RunsTimeline(_Shape):
    """flowdbg runs timeline --json: a run and the runs made from it, as a tree."""

    run: Run
    cached: Count = Field(description="its steps a rerun served from the record")
    divergence: Divergence | None = Field(
        description="for a rerun: where it first departs from the run it was made from (null: "
        "the same path and states); null for the others (a fork starts after fork_step)"
    )
    made: list[RunsTimeline] = Field(description="the runs made from it, oldest first")


class CallsCompared(_Shape):
    """A run's model and tool calls compared with another's at the same positions."""

    recorded: Count = Field(description="the calls run a made in the part compared")
    served: Count = Field(description="run b's calls given their recorded output (cached)")
    live: Count = Field(description="run b's calls that ran")
    saved_seconds: Seconds = Field(description="what the served calls took in run a")
    saved_tokens: Count = Field(description="the tokens the served replies report")
    diverged: list[LiveCall] = Field(
        description="per branch, run b's first call that differs from run a's at its position"
    )


class RunsDivergence(_Shape):
    """flowdbg runs divergence --json: how run b (a fork or rerun of run a, or any run)
    departs from run a."""

    a: Run = Field(description="the run compared with (the source)")
    b: Run
    origin: Origin | None = Field(
        description="b's origin when it was made from a; null: two runs compared from the start"
    )
    from_step: Count = Field(
        description="the step of a after which b started (a fork's step); 0: from the input"
    )
    edited: list[str] = Field(
        description="for a fork: the state paths where its input differs from a's state after "
        "from_step"
    )
    first_divergence: Divergence | None = Field(description="null: no divergence")
    old: Any = Field(description="for a state divergence: the value at its first path in a")
    new: Any = Field(description="and in b")
    calls: CallsCompared
    seconds_a: Seconds | None = Field(description="the wall time of a's compared part")
    seconds_b: Seconds | None = Field(description="b's wall time")
    ignored: list[IgnoredDifference] = Field(
        description="the differences left out, up to the first divergence"
    )
    ignore: list[str] = Field(description="the --ignore globs given")
    strict: bool = Field(description="--strict: volatile values were compared too")
    warnings: list[str] = Field(description="e.g. the runs are of different graphs")


class WrittenBy(_Shape):
    """The step that last wrote a key."""

    step: StepNumber
    node: str


class StateKey(_Shape):
    """One top-level key of a state."""

    key: str
    type: str = Field(description="the value's type name")
    size: Count | None = Field(description="its length, for a sized value")
    preview: str
    written_by: WrittenBy | None = Field(
        description="null: as the run started with it (the state before its first step)"
    )


class RunsState(_Shape):
    """flowdbg runs state --json: a run's state after a step."""

    run_id: str
    step: int | None = Field(description="the state after this step; null for the final state")
    keys: list[StateKey]
    values: dict[str, Any] | Absent = Field(
        default=None, description="every top-level value (--values)"
    )
    path: str | Absent = Field(default=None, description="the path given with --key")
    value: Any = Field(default=None, description="the value at --key")


class RunsSteps(_Shape):
    """flowdbg runs steps --json: every step of a run, with its input and output."""

    run_id: str
    steps: list[StepDetail]


class NodeDelta(_Shape):
    """How one node ran in two runs (units of different kinds that share a name are apart)."""

    node: str
    kind: str = Field(description="the units' kind: node, tool, llm, handoff or agent")
    count_a: Count
    count_b: Count
    total_a: Seconds = Field(description="seconds over its steps in a")
    total_b: Seconds = Field(description="seconds over its steps in b")
    delta: float = Field(description="total_b - total_a")
    statuses_a: dict[StepStatusName, Count] = Field(description="status -> steps that ended so")
    statuses_b: dict[StepStatusName, Count] = Field(description="status -> steps that ended so")
    status_changed: bool


class Divergence(_Shape):
    """Where two runs first differ.

    path: different units ran; status: a unit ended differently; state: it left a different
    state (paths lists where).
    """

    kind: Literal["path", "state", "status"]
    step_a: int | None
    step_b: int | None
    node_a: str | None
    node_b: str | None
    detail: str
    paths: list[str]


class IgnoredDifference(_Shape):
    """Differences a diff left out at one path."""

    path: str = Field(description="the state path, list indices written [*]")
    rule: str = Field(
        description="message id, generated id or timestamp (volatile values), or the --ignore "
        "glob that matched"
    )
    count: Annotated[int, Field(ge=1)] = Field(description="how many differing values")


class StateChange(_Shape):
    """One difference between two states."""

    path: str = Field(description="the state path; empty for the whole state")
    kind: Literal["added", "removed", "changed"]
    old: Any = Field(description="the value in the first state (null when added)")
    new: Any = Field(description="the value in the second state (null when removed)")


class StepsCompared(_Shape):
    """The states after two steps compared (runs diff --steps N M)."""

    step_a: StepNumber
    step_b: StepNumber
    node_a: str | None = Field(description="the unit of step_a in run a")
    node_b: str | None = Field(description="the unit of step_b in run b")
    changes: list[StateChange] = Field(description="from the first state to the second")


class RunsDiff(_Shape):
    """flowdbg runs diff --json: two runs compared, or (with --steps) the states after two
    steps of one run or of two."""

    a: Run
    b: Run = Field(description="the same run as a for --steps with one run")
    nodes: list[NodeDelta] | Absent = Field(
        default=None,
        description="one row per node that ran in either run, in order of first appearance "
        "(absent with --steps)",
    )
    first_divergence: Divergence | None = Field(
        default=None, description="null: no divergence (absent with --steps)"
    )
    steps: StepsCompared | Absent = Field(default=None, description="with --steps")
    ignored: list[IgnoredDifference] = Field(
        description="the differences left out, up to the first divergence"
    )
    ignore: list[str] = Field(description="the --ignore globs given")
    strict: bool = Field(description="--strict: volatile values were compared too")
    warnings: list[str] = Field(description="e.g. the runs are of different graphs")


class _ReplayEvent(_Shape):
    offset: Seconds = Field(description="seconds since the first event replayed")
    time: Timestamp | None
    run_id: str = Field(description="the run or nested run")
    step: StepNumber
    node: str
    kind: Kind
    path: list[str]


class ReplayBefore(_ReplayEvent):
    """A unit started."""

    event: Literal["before"]
    status: StepStatusName = Field(description="how the step ended")


class ReplayAfter(_ReplayEvent):
    """A unit ended without raising."""

    event: Literal["after"]
    status: Literal["running", "completed", "suspended"]
    duration: Seconds | None
    decision: Any = Field(description="the routing decision, or null")


class ReplayError(_ReplayEvent):
    """A unit raised."""

    event: Literal["error"]
    status: Literal["failed"]
    duration: Seconds | None
    decision: Any = Field(description="the routing decision, or null")
    error: Error | None


class ReplayTerminated(_ReplayEvent):
    """A unit ended because its run was terminated (by the debugger or a rewind)."""

    event: Literal["terminated"]
    status: Literal["terminated"]
    duration: Seconds | None
    decision: Any = Field(description="the routing decision, or null")
    error: Error | None = Field(description="what ended it (Terminated, Rewound)")


class RunsReplay(_Shape):
    """flowdbg runs replay --json: a run's steps as events in time order."""

    run_id: str
    events: list[ReplayBefore | ReplayAfter | ReplayError | ReplayTerminated]


# ------------------------------------------------------------------------------ graphs, adapters


class Edge(_Shape):
    """A fixed edge."""

    source: str
    target: str


class ConditionalEdge(_Shape):
    """An edge chosen at run time by a router."""

    source: str
    router: str | None = Field(default=None, description="the router's name")
    targets: list[str] | None = Field(description="null: the router names its targets itself")


class GraphNode(_Shape):
    """A node of a graph."""

    name: str
    subgraph: Graph | None = Field(default=None, description="the nested graph it runs")
    retry: Count | Absent = Field(default=None, description="how many times it is retried")
    tasks: list[str] | Absent = Field(default=None, description="the @task functions it refers to")


class Graph(_Shape):
    """An adapter's describe(): name, nodes, edges and more."""

    name: str | Absent = None
    entry: list[str] | Absent = Field(default=None, description="the first nodes")
    nodes: list[GraphNode]
    edges: list[Edge]
    conditional_edges: list[ConditionalEdge] | Absent = None
    reducers: list[str] | Absent = Field(default=None, description="the state keys with a reducer")
    open: bool | Absent = Field(
        default=None, description="units other than the nodes run too (an @entrypoint's tasks)"
    )


class GraphInspect(_Shape):
    """flowdbg graph inspect --json: the structure of a target."""

    target: str
    adapter: str
    graph: Graph


class AdapterEntry(_Shape):
    """A known adapter, usable or not."""

    name: str
    available: bool
    reason: str | None = Field(description="why it is unavailable")
    version: str | None = Field(description="the framework's version")
    extra: str = Field(description="the pip extra that installs its framework")
    capabilities: list[Capability]


class Adapters(_Shape):
    """flowdbg adapters --json: every adapter flowdbg knows."""

    adapters: list[AdapterEntry]


class Envelope(_Shape):
    """What every --json command prints."""

    schema_version: Literal[1]
    command: str
    generated_at: Timestamp
    data: Any = Field(description="the command's data (see each command)")


#: command -> the model of its ``--json`` data
COMMANDS: dict[str, type[BaseModel]] = {
    "runs ls": RunsLs,
    "runs fork": RunsFork,
    "runs rerun": RunsRerun,
    "runs timeline": RunsTimeline,
    "runs divergence": RunsDivergence,
    "runs show": RunsShow,
    "runs state": RunsState,
    "runs steps": RunsSteps,
    "runs diff": RunsDiff,
    "runs replay": RunsReplay,
    "graph inspect": GraphInspect,
    "adapters": Adapters,
}

# ------------------------------------------------------------------------------ a live session


class Location(_Shape):
    """Where a stop is: the unit, its nesting and its concurrency coordinates."""

    framework: str
    run_id: str
    parent_run_id: str | None
    path: list[str]
    depth: Count
    node: str
    kind: Kind
    position: Position
    step: StepNumber
    superstep: int | None
    branch: str | None
    attempt: Attempt


class WatchChange(_Shape):
    """A watched path's change at a watch stop: its value before the unit and in the stop's
    state (as gdb shows a watchpoint)."""

    breakpoint: str = Field(description="the watch's breakpoint id")
    path: str = Field(description="the watched path in the state")
    old: Any = Field(description="its value before the unit (null where it was added)")
    new: Any = Field(description="its value in the stop's state (null where it was removed)")
    added: bool = Field(description="the path did not resolve before the unit")
    removed: bool = Field(description="the path does not resolve in the stop's state")


class Stop(_Shape):
    """A branch held by the debugger, with what is known there."""

    id: str
    reason: StopReason
    location: Location
    breakpoints: list[str] = Field(description="the ids of the breakpoints that matched")
    hits: dict[str, Count] = Field(description="breakpoint id -> its hit count")
    state: Any
    input: Any
    output: Any
    error: Error | None
    decision: Any
    message: str | None = Field(description="a logpoint's or watch's message")
    created_at: float = Field(description="epoch seconds")
    default_view: Literal["input", "output", "state"] = Field(
        description="the view a path without a view: prefix reads and edits: input at a "
        "before stop, output at an after stop, state at an error stop"
    )
    views: list[Literal["state", "input", "output", "error", "args", "result"]] = Field(
        description="the views of the stop a view: prefix may name (args and result: the "
        "input and output of a tool or LLM call)"
    )
    editable: Literal["input", "output"] | None = Field(
        description="what an edit changes here; null: nothing can be edited"
    )
    edited: bool
    watched: list[WatchChange] = Field(
        description="at a watch stop, what each watch that stopped here saw change"
    )


class RunningUnit(_Shape):
    """A unit between its before point and its after or error point."""

    run_id: str
    node: str
    kind: Kind
    step: StepNumber
    superstep: int | None = Field(description="the framework's superstep, where it has one")
    branch: str | None = Field(description="the concurrent branch or task running it")
    path: list[str]
    seconds: Seconds = Field(description="since its before point")


class DebuggerStatus(_Shape):
    """The debugger's state, its open stops and its runs."""

    state: DebuggerStateName
    stops: list[Stop]
    selected: str | None = Field(description="the id of the selected stop")
    runs: list[str] = Field(description="the ids of the active runs")
    attached: list[str]
    running: list[RunningUnit] = Field(
        description="units running now (not held at a stop), longest running first"
    )


class BreakpointInfo(_Shape):
    """A breakpoint, logpoint, watch or exception breakpoint."""

    id: str
    type: BreakpointType
    pattern: str = Field(description="a glob of unit names")
    positions: list[Position]
    kinds: list[Kind] | None = Field(description="null: every kind")
    condition: str | None
    has_callable_condition: bool
    hit_condition: str | None
    temporary: bool
    enabled: bool
    hits: Count
    exception_types: list[str]
    watch_path: str | None
    args_pattern: str | None
    message: str | None


# ------------------------------------------------------------------------------ JSON Schema


def json_schema(model: type[BaseModel], *, title: str | None = None) -> dict[str, Any]:
    """The JSON Schema (2020-12) of ``model``'s JSON, as flowdbg publishes it.

    It is ``model.model_json_schema()`` without the titles pydantic derives from names and the
    defaults of optional fields (an output leaves such a field out, it never defaults it), and
    with ``$defs`` named in snake case (``#/$defs/run_tree``).

    :param model: one of this module's models.
    :param title: the schema's title (default: none).
    :returns: a self-contained schema: the ``$defs`` it refers to are inside it.
    """
    raw = model.model_json_schema()
    names = {name: _snake(name) for name in raw.get("$defs", {})}
    body = _tidy(raw, names)
    schema: dict[str, Any] = {"$schema": JSON_SCHEMA_DIALECT}
    if title is not None:
        schema["title"] = title
    schema.update(body)
    if "$defs" in schema:  # after the body's keys, sorted: easier to read in the docs
        schema["$defs"] = dict(sorted(schema.pop("$defs").items()))
    return schema


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_MAPS = ("properties", "$defs", "patternProperties")


def _tidy(schema: Any, names: dict[str, str]) -> Any:
    if isinstance(schema, list):
        return [_tidy(item, names) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "default"):
            continue
        if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
            out[key] = "#/$defs/" + names[value.removeprefix("#/$defs/")]
        elif key in _MAPS and isinstance(value, dict):
            # keys of these maps are names (a property may be called "title"), not keywords
            rename = key == "$defs"
            out[key] = {
                (names[name] if rename else name): _tidy(sub, names) for name, sub in value.items()
            }
        else:
            out[key] = _tidy(value, names)
    # "type" and "description" first: a reader sees what a value is before its details
    first = {key: out.pop(key) for key in ("type", "description") if key in out}
    return {**first, **out}
