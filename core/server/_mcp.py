"""The MCP server: flowdbg's operations as tools for a coding agent (``flowdbg mcp``).

It runs on the official ``mcp`` SDK (:class:`mcp.server.MCPServer`) over stdio, next to the
debugged program in one process, and calls the same :class:`~flowdbg.server._service.Service`
as the HTTP server. Tool results are JSON objects; large values come back summarized, one row
per key with the path that reads it (``inspect``), never dumped whole.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import Field

from flowdbg._json import jsonable
from flowdbg._paths import format_path, parse_path, split_view
from flowdbg._values import short_repr, summarize
from flowdbg._views import editable_now
from flowdbg.errors import FlowdbgError

from . import _protocol as p
from ._service import paginate

if TYPE_CHECKING:
    from mcp.server import MCPServer

    from ._service import Service

__all__ = ["INSTRUCTIONS", "make_mcp_server", "value_view"]

#: a value whose JSON is longer than this is summarized (one row per key, with its path)
VALUE_LIMIT = 2000
#: rows of a summarized list
LIST_ROWS = 20
#: the most items a listing tool returns at once
PAGE_MOST = 100

INSTRUCTIONS = """\
flowdbg is a debugger for agent and workflow graphs (LangGraph, LlamaIndex Workflows, OpenAI
Agents, flowdbg's StateGraph). A run executes units (graph nodes, tool calls, model calls); a
breakpoint holds a run before or after a unit so you can read and edit what it receives or
returns, then let it go on.

A typical session:
1. describe_target: the graph's nodes and edges (what can be broken on).
2. set_breakpoint: e.g. type="after", pattern="classify" (globs work: "tool_*").
3. start_run with the run's input (a JSON object).
4. wait_for_stop: blocks until a run stops (or ends, or the timeout passes). It returns the
   stop: its id, why it stopped, where (node, before/after), the state and the unit's
   input/output, summarized with a path for every key.
5. inspect(stop_id, path) reads a value ("messages[-1].content", "state:plan"); set_value
   edits the unit's input (at a before stop) or output (at an after stop) before it goes on;
   evaluate runs a sandboxed expression ("len(messages)"); diff shows what the unit changed.
6. resume(stop_id, action): "continue" to the next breakpoint, "step_over" to the next unit,
   "step_into" into subgraphs and calls, "step_out" to the enclosing graph.
7. wait_for_stop again, until no run is active: outcome "ended" (the run completed), "failed"
   (it raised: the error's type and message) or "terminated".
Recorded runs stay readable after they end: list_runs, list_steps, get_run_state.
Every edit takes plain JSON; nothing you send is executed as code."""

_F = TypeVar("_F", bound=Callable[..., Any])

# the parameters most tools share, described once for the tools' input schemas
StopId = Annotated[
    str, Field(description='the stop\'s id, as wait_for_stop or status give it ("stop-3")')
]
StopPath = Annotated[
    str,
    Field(
        description='a path at the stop: "" (the whole default view), "messages[-1].content", '
        '"plan.steps[0]", or with a view prefix "state:amount", "input:x", "output:route"'
    ),
]
RunId = Annotated[str, Field(description="a recorded run's id (or a unique prefix of 4+ chars)")]
PageOffset = Annotated[
    int, Field(description="items to skip: the next_offset of the previous page (0: the first)")
]
PageLimit = Annotated[int, Field(description=f"the most items to return (up to {PAGE_MOST})")]


def _tool_errors(fn: _F) -> _F:
    """Report a flowdbg error as the tool's error result, with the error's own message."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except FlowdbgError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from None

    return call  # type: ignore[return-value]


def _clamp(offset: int, limit: int) -> tuple[int, int]:
    """An agent's ``offset`` and ``limit`` brought within what a page can be."""
    return max(0, offset), max(1, min(limit, PAGE_MOST))


def _child_path(path: str, key: Any) -> str:
    view, rest = split_view(path)
    parts = (*parse_path(rest), key)
    return (f"{view}:" if view else "") + format_path(parts)


def value_view(value: Any, path: str) -> dict[str, Any]:
    """``value`` for an agent: ``{"value": ...}`` when its JSON is short, else a summary:
    ``{"summary": [{"path", "type", "size", "preview"}...], "note"}`` whose paths read each
    part with ``inspect``.

    :param path: the path ``value`` was read at (``state:`` for a whole view).
    """
    plain = jsonable(value)
    text = json.dumps(plain, ensure_ascii=False)
    if len(text) <= VALUE_LIMIT:
        return {"value": plain}
    rows: list[dict[str, Any]] = []
    if isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray):
        indexes = list(range(len(value)))
        if len(indexes) > LIST_ROWS:
            indexes = indexes[: LIST_ROWS - 2] + indexes[-2:]
        for i in indexes:
            item = value[i]
            rows.append(
                {
                    "path": _child_path(path, i),
                    "type": type(item).__name__,
                    "size": _size(item),
                    "preview": short_repr(item, 80),
                }
            )
    else:
        for row in summarize(value, preview_chars=80):
            rows.append(
                {
                    "path": path if row.key == "." else _child_path(path, row.key),
                    "type": row.type,
                    "size": row.size,
                    "preview": row.preview,
                }
            )
    return {
        "summary": rows,
        "note": f"large value ({len(text)} characters of JSON): read a part with "
        "inspect(stop_id, path) using a path above",
    }


def _size(value: Any) -> int | None:
    if isinstance(value, str | bytes | Mapping | Sequence):
        return len(value)
    return None


def stop_report(service: Service, stop_id: str) -> dict[str, Any]:
    """A stop as an agent reads it: where and why, the values summarized with paths, what the
    other open stops are, and how to go on."""
    stop = service.open_stop(stop_id)
    loc = stop.location
    report: dict[str, Any] = {
        "stop_id": stop.id,
        "reason": stop.reason.value,
        "node": loc.node,
        "kind": loc.kind,
        "position": loc.position,
        "step": loc.step,
        "run_id": loc.run_id,
        "nesting": list(loc.path),
        "branch": loc.branch,
        "breakpoints": list(stop.breakpoints),
        "message": stop.message,
    }
    default = stop.default_view
    report["state"] = value_view(stop.state, "state:")
    if default != "state":
        report[default] = value_view(stop.view(default), f"{default}:")
    if loc.position == "after":
        report["input"] = value_view(stop.input, "input:")
    if stop.decision is not None:
        report["decision"] = jsonable(stop.decision)
    watched = stop.watch_changes()
    if watched:  # a watch stop: each watched path's value before the unit and now
        report["watched"] = [change.to_dict() for change in watched]
    err = stop.error
    if err is not None:
        report["error"] = {"type": err.type, "message": err.message}
    editable = editable_now(stop)
    report["editable"] = editable
    report["how_to_continue"] = _how(stop.id, loc.node, str(loc.position), editable)
    others = [s.id for s in service.dbg.stops if s.id != stop.id]
    if others:
        report["other_open_stops"] = others
    return report


_ENDED_HINTS = {
    "none": "no run is active; start one with start_run",
    "ended": "no run is active; the last one completed: list_steps(run_id) shows its steps",
    "failed": "no run is active; the last one failed with error: list_steps(run_id) shows "
    "the step that raised",
    "terminated": "no run is active; the last one was terminated",
}


def _how(stop_id: str, node: str, position: str, editable: str | None) -> str:
    edit = (
        f"set_value(stop_id={stop_id!r}, path=..., value=...) changes what {node!r} "
        + ("receives" if editable == "input" else "returns")
        + "; "
        if editable
        else "nothing can be edited here; "
    )
    return (
        f"{edit}resume(stop_id={stop_id!r}, action='continue') runs on to the next breakpoint, "
        "'step_over' stops at the next unit, 'step_into' enters subgraphs and calls, "
        "'step_out' runs to the enclosing graph; then call wait_for_stop"
    )


def make_mcp_server(service: Service) -> MCPServer:
    """The MCP server with flowdbg's tools over ``service``."""
    from mcp.server import MCPServer

    from flowdbg import __version__

    server: MCPServer = MCPServer(
        "flowdbg", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )

    def tool(fn: _F) -> _F:
        server.add_tool(_tool_errors(fn), name=fn.__name__, description=fn.__doc__)
        return fn

    @tool
    def describe_target() -> dict[str, Any]:
        """The program being debugged: its adapter (framework) and its graph: nodes, edges and
        conditional edges (routers). Node names are what breakpoints take."""
        return service.target_info().model_dump(mode="json")

    @tool
    def set_breakpoint(
        pattern: Annotated[
            str, Field(description='a unit name or glob: "triage", "tool_*", "*" for every unit')
        ],
        type: Literal[
            "before", "after", "exception", "watch", "tool", "handoff", "event", "log"
        ] = "before",
        condition: str | None = None,
        path: str | None = None,
        message: str | None = None,
        hit_condition: str | None = None,
        temporary: bool = False,
        strict: bool = False,
        kind: Annotated[
            list[str] | None,
            Field(description='only units of these kinds: "node", "tool", "llm", "agent"...'),
        ] = None,
    ) -> dict[str, Any]:
        """Set a breakpoint. pattern: a unit name or glob ("refund", "tool_*", "*").
        type: "before" holds a run before the unit runs (its input can be edited), "after"
        holds it after (its output can be edited before the graph uses it), "exception" where
        a unit raises, "watch" after any unit that changes the state at `path`, "tool" before
        a tool call named pattern, "log" prints `message` (a template like "n={state[n]}")
        without stopping. condition: an optional Python-like expression over state, input,
        output, node, step ("state['amount'] > 100"); it runs in a sandbox. Returns the
        breakpoint and warnings (e.g. a name that matches no node); strict: refuse such a
        name instead of warning. kind: only units of these kinds (["llm"] for model calls)."""
        req = p.BreakpointCreate(
            type=type,
            pattern=pattern,
            condition=condition,
            path=path,
            message=message,
            hit_condition=hit_condition,
            temporary=temporary,
            strict=strict,
            kind=kind,
        )
        return service.add_breakpoint(req).model_dump(mode="json")

    @tool
    def list_breakpoints(offset: PageOffset = 0, limit: PageLimit = 100) -> dict[str, Any]:
        """The breakpoints set, in the order they were set, with their ids and hit counts.
        A page at a time: when next_offset is not null, call again with offset=next_offset."""
        offset, limit = _clamp(offset, limit)
        return service.breakpoints(offset=offset, limit=limit).model_dump(mode="json")

    @tool
    def remove_breakpoint(breakpoint_id: str) -> dict[str, Any]:
        """Remove a breakpoint by id ("bp-1"); returns it."""
        return service.remove_breakpoint(breakpoint_id).model_dump(mode="json")

    @tool
    def start_run(input: Any = None, config: dict[str, Any] | None = None) -> dict[str, Any]:
        """Start a run of the program with `input`: what its framework starts from (a graph's
        initial state as a JSON object; a LlamaIndex workflow's start event fields, an object;
        an OpenAI agent's user message, a string). `config`: the run's config as `flowdbg run
        --config` takes it (an OpenAI agent's {"context": {...}, "max_turns": 5}). It runs in
        the background; call wait_for_stop next to see where it stops or how it ends."""
        return service.start(p.StartRun(input=input, config=config)).model_dump(mode="json")

    @tool
    def wait_for_stop(
        timeout: Annotated[
            float, Field(description="seconds to wait at most (up to 300); 0 only looks")
        ] = 30.0,
    ) -> dict[str, Any]:
        """Block until a run is held at a breakpoint or step (returns at once if one already
        is), until every run has ended, or until `timeout` seconds pass. Returns outcome
        "stopped" with the stop (stop_id, reason, node, position, the state and the unit's
        input/output with paths, how to continue); "timeout" (still running: call again); or,
        when no run is active, how the last run ended: "ended" (it completed, or none ran),
        "failed" (it raised: error has the exception's type and message) or "terminated".
        Read the results with list_runs / list_steps."""
        idle = (
            service.target is not None
            and not service.dbg.stops
            and not service.dbg.active_runs
            and all(handle.done() for handle in service.launches)
        )
        # runs of the target start from start_run only: when idle, nothing can stop
        result = service.wait(0.0 if idle else max(0.0, min(float(timeout), 300.0)))
        if result.stop is not None:
            return {"outcome": "stopped", "stop": stop_report(service, result.stop.id)}
        data: dict[str, Any] = {"outcome": result.outcome}
        if result.run_id is not None:
            data["run_id"] = result.run_id
        if result.error is not None:
            data["error"] = result.error.model_dump(mode="json")
        if result.outcome != "timeout":
            data["hint"] = _ENDED_HINTS[result.outcome if result.run_id else "none"]
        return data

    @tool
    def status(offset: PageOffset = 0, limit: PageLimit = 100) -> dict[str, Any]:
        """The debugger's state (idle, running, stopped), the open stops' ids and locations
        (oldest first, a page at a time: when next_offset is not null, call again with
        offset=next_offset), the active runs and the units running now."""
        st = service.status()
        stops, paging = paginate(st.stops, *_clamp(offset, limit))
        return {
            "state": st.state,
            "stops": [
                {
                    "stop_id": s.id,
                    "reason": s.reason,
                    "node": s.location.node,
                    "position": s.location.position,
                }
                for s in stops
            ],
            "next_offset": paging["next_offset"],
            "runs": st.runs,
            "running": [u.model_dump(mode="json") for u in st.running],
        }

    @tool
    def inspect(stop_id: StopId, path: StopPath = "") -> dict[str, Any]:
        """Read a value at a stop. path: "" for the whole default view (the unit's input at a
        before stop, its output at an after stop), a key path like "messages[-1].content" or
        "plan.steps[0]", or a view prefix: "state:amount", "input:x", "output:route",
        "error:args". Large values come back summarized with the paths of their parts."""
        value, shown = service.read(stop_id, path)
        if split_view(path)[0]:
            shown = path
        return {"stop_id": stop_id, "path": path, **value_view(value, shown)}

    @tool
    def set_value(
        stop_id: StopId,
        path: StopPath,
        value: Annotated[Any, Field(description="the new value, plain JSON")],
    ) -> dict[str, Any]:
        """Edit the held unit's input (at a before stop) or output (at an after stop) at
        `path` to `value` (plain JSON), applied when the run resumes: the run then goes on as
        if the unit had received or returned that. The state view cannot be edited directly:
        edit what the unit receives or returns instead."""
        service.set(stop_id, path, value)
        now = service.dbg.inspect(path, stop=stop_id)
        return {"stop_id": stop_id, "path": path, "now": value_view(now, path)}

    @tool
    def delete_value(stop_id: StopId, path: StopPath) -> dict[str, Any]:
        """Delete a key or list element of the held unit's input or output (like set_value)."""
        service.delete(stop_id, path)
        return {"stop_id": stop_id, "deleted": path}

    @tool
    def evaluate(stop_id: StopId, expression: str) -> dict[str, Any]:
        """Evaluate a sandboxed Python expression at a stop: names are state, input, output,
        node, step and the top-level keys of the default view ("len(messages)",
        "state['amount'] > 500"). No imports, no attribute starting with '_'."""
        result = service.evaluate(stop_id, expression)
        return {"stop_id": stop_id, "expression": expression, **value_view(result.value, "")}

    @tool
    def diff(stop_id: StopId) -> dict[str, Any]:
        """At an after stop: what the unit changed in the state (path, added/removed/changed,
        old and new values)."""
        return service.diff(stop_id).model_dump(mode="json")

    @tool
    def resume(
        stop_id: StopId,
        action: Literal["continue", "step_over", "step_into", "step_out"] = "continue",
    ) -> dict[str, Any]:
        """Let a held run go on: "continue" to the next breakpoint or the end, "step_over" to
        the next unit, "step_into" into subgraphs and tool/model calls, "step_out" to the
        enclosing graph. Call wait_for_stop next."""
        return service.resume(stop_id, action).model_dump(mode="json")

    @tool
    def rewind(
        stop_id: StopId,
        step: Annotated[
            int, Field(ge=0, description="a step of the run that has ended; 0: its input")
        ],
        edits: Annotated[
            dict[str, Any] | None,
            Field(description="path -> new value applied to the state after that step first"),
        ] = None,
    ) -> dict[str, Any]:
        """Go back in the held run to the state after an earlier step (with edits, say a fixed
        value) and go on from there: the run restarts as a new run (the old one is kept in the
        record as rewound). Call wait_for_stop next; a step that has not ended is refused."""
        return service.rewind(stop_id, p.Rewind(step=step, edits=edits)).model_dump(mode="json")

    @tool
    def pause() -> dict[str, Any]:
        """Hold every running branch at its next unit (reason "pause"); then wait_for_stop."""
        service.pause()
        return {"paused": True}

    @tool
    def terminate() -> dict[str, Any]:
        """End every active run now (held ones too). Returns the ended run ids."""
        return service.terminate().model_dump(mode="json")

    @tool
    def list_runs(limit: PageLimit = 10, offset: PageOffset = 0) -> dict[str, Any]:
        """Recorded runs, newest first: id, status (completed, failed, terminated...), name,
        number of steps, error. Page with offset (next_offset)."""
        offset, limit = _clamp(offset, limit)
        page = service.recorded_runs(offset=offset, limit=limit)
        return {
            "runs": [
                {
                    "run_id": r.run_id,
                    "name": r.name,
                    "status": r.status,
                    "steps": r.steps,
                    "started_at": None if r.started_at is None else r.started_at.isoformat(),
                    "error": None if r.error is None else f"{r.error.type}: {r.error.message}",
                }
                for r in page.runs
            ],
            "next_offset": page.next_offset,
        }

    @tool
    def list_steps(run_id: RunId, from_step: int = 1, limit: int = 50) -> dict[str, Any]:
        """A recorded run's steps in order: step number, node, kind, status and routing
        decision. Page with from_step (next_step)."""
        page = service.recorded_steps(run_id, from_step=max(1, from_step), limit=max(1, limit))
        return {
            "run_id": page.run_id,
            "steps": [
                {
                    "step": s.step,
                    "node": s.node,
                    "kind": s.kind,
                    "status": s.status,
                    "decision": s.decision,
                    "error": None if s.error is None else f"{s.error.type}: {s.error.message}",
                }
                for s in page.steps
            ],
            "next_step": page.next_step,
        }

    @tool
    def get_run_state(
        run_id: RunId, step: int | None = None, path: str | None = None
    ) -> dict[str, Any]:
        """A recorded run's state after `step` (the final state when omitted): one row per
        key with the step and node that last wrote it, and the value at `path` if given."""
        state = service.recorded_state(run_id, step=step, path=path)
        data = state.model_dump(mode="json", exclude={"value"})
        if path is not None:
            data.update(value_view(state.value, path))
        return data

    @tool
    def compare_runs(run_a: RunId, run_b: RunId) -> dict[str, Any]:
        """Compare two recorded runs (say a good one and a bad one): where they first diverge
        (a different node ran, a node ended differently, or left a different state: with the
        state paths), and per node how many times it ran in each. Generated ids and times are
        left out of the comparison."""
        result = service.recorded_diff(run_a, run_b)
        first = result.first_divergence
        return {
            "first_divergence": None if first is None else first.model_dump(mode="json"),
            "nodes": [
                {"node": n.node, "count_a": n.count_a, "count_b": n.count_b}
                for n in result.nodes or []
            ],
            "warnings": result.warnings,
        }

    @tool
    def fork_run(
        run_id: RunId,
        step: Annotated[int, Field(ge=0, description="the step to start after; 0: the input")],
        edits: Annotated[
            dict[str, Any] | None,
            Field(description="path -> new value applied to the recorded state first"),
        ] = None,
    ) -> dict[str, Any]:
        """Start a new run of the current code from a recorded run's state after `step` (with
        edits): try a fix without running the earlier steps again. It runs under the
        breakpoints; call wait_for_stop next, then run_divergence to see where it departs."""
        return service.fork(run_id, p.Fork(step=step, edits=edits)).model_dump(mode="json")

    @tool
    def rerun_run(
        run_id: RunId,
        cached_calls: Annotated[
            Literal["all", "llm", "tool", "none"],
            Field(description="which recorded model and tool calls may be served"),
        ] = "all",
        until_divergence: Annotated[
            bool, Field(description="end the rerun at the first call that differs")
        ] = False,
    ) -> dict[str, Any]:
        """Run a recorded run again from its input with the current code, its model and tool
        calls served from the record while they match it (no model asked, no tool run again):
        check a fix cheaply. It runs under the breakpoints; call wait_for_stop next, then
        run_divergence to see where it departs and which calls ran live."""
        request = p.Rerun(cached_calls=cached_calls, until_divergence=until_divergence)
        return service.rerun(run_id, request).model_dump(mode="json")

    @tool
    def run_divergence(
        run_id: RunId,
        source: Annotated[
            str | None, Field(description="the run to compare with; default: its source")
        ] = None,
    ) -> dict[str, Any]:
        """Where a fork, rerun or rewind departs from the run it was made from: the first
        divergence (step, node, state paths, old and new value) and the model and tool calls
        served from the record or run live."""
        report = service.recorded_divergence(run_id, source)
        data = report.model_dump(mode="json", include={"origin", "from_step", "edited"})
        first = report.first_divergence
        data["first_divergence"] = None if first is None else first.model_dump(mode="json")
        # the values at the first differing path (large ones summarized: get_run_state reads
        # their parts from each run's state at step_a / step_b)
        path = first.paths[0] if first is not None and first.paths else ""
        data["old"] = value_view(report.old, path)
        data["new"] = value_view(report.new, path)
        data["calls"] = report.calls.model_dump(mode="json", exclude={"diverged"})
        return data

    @server.resource(
        "flowdbg://runs",
        name="recorded_runs",
        description="The 20 newest recorded runs: id, name, status, steps, error (JSON).",
        mime_type="application/json",
    )
    def runs_resource() -> str:
        return json.dumps(_errors_as_text(lambda: list_runs(limit=20)))

    @server.resource(
        "flowdbg://runs/{run_id}",
        name="recorded_run",
        description="One recorded run with its steps (node, kind, status, decision) and its "
        "final state summarized (JSON).",
        mime_type="application/json",
    )
    def run_resource(run_id: str) -> str:
        def read() -> dict[str, Any]:
            run = service.recorded_run(run_id)
            return {
                "run": {
                    "run_id": run.run_id,
                    "name": run.name,
                    "status": run.status,
                    "steps": run.steps,
                    "error": None
                    if run.error is None
                    else f"{run.error.type}: {run.error.message}",
                },
                "steps": list_steps(run.run_id, limit=200)["steps"],
                "final_state": get_run_state(run.run_id)["keys"],
            }

        return json.dumps(_errors_as_text(read))

    return server


def _errors_as_text(read: Callable[[], Any]) -> Any:
    """What ``read`` returns, or ``{"error": ...}`` with a flowdbg error's message (a resource
    has no error result of its own)."""
    try:
        return read()
    except FlowdbgError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
