"""The live-session shapes of :mod:`flowdbg.schemas` (stops, the debugger's status,
breakpoints) match what a real debugging session gives, as the debug server will send it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from json_checks import closed
from pydantic import BaseModel, ValidationError

import flowdbg
from flowdbg import schemas
from flowdbg.adapters.stategraph import END, StateGraph, tool
from flowdbg.cli._schemas import validate

T = 10.0


@tool
def search(query: str) -> list[str]:
    return [f"{query} result"]


def _boom(state: dict[str, Any]) -> dict[str, Any]:
    raise ValueError(f"boom at x={state['x']}")


def build() -> Any:
    g = StateGraph(name="session")
    g.add_node("alpha", lambda s: {"x": s["x"] + 1})
    g.add_node("agent", lambda s: {"found": search(query="flights")})
    g.add_node("boom", _boom)
    g.set_entry_point("alpha")
    g.add_edge("alpha", "agent")
    g.add_edge("agent", "boom")
    g.add_edge("boom", END)
    return g.compile()


def check(model: type[BaseModel], data: Any) -> None:
    """``data`` matches ``model``'s published schema, lists no property it leaves out, and is
    what the model dumps back."""
    schema = schemas.json_schema(model)
    assert validate(data, schema) == []
    assert validate(data, closed(schema)) == []
    model_data = model.model_validate_json(json.dumps(data), strict=True)
    assert model_data.model_dump(mode="json", exclude_unset=True) == data


@pytest.fixture
def session() -> Any:
    dbg = flowdbg.Debugger(record=False, stop_on_entry=True)
    yield dbg
    dbg.close()


def test_stops_and_status_of_a_session(session: flowdbg.Debugger) -> None:
    graph = build()
    session.attach(graph)
    session.break_after("alpha", condition="state['x'] > 1", hit_condition=">=1")
    session.break_on_tool("search", args_pattern="fl.*")
    session.break_on_exception(ValueError)
    handle = session.start(graph.invoke, {"x": 1})
    seen: list[tuple[str, str, str]] = []
    while True:
        stop = session.wait_for_stop(timeout=T)
        if stop is None:
            break
        data = stop.to_dict()
        check(schemas.Stop, data)
        status = session.status().to_dict()
        check(schemas.DebuggerStatus, status)
        assert status["state"] == "stopped"
        where = data["location"]
        seen.append((data["reason"], where["position"], where["node"]))
        if where["position"] == "error":
            assert data["error"]["type"] == "ValueError" and data["editable"] is None
        session.resume()
        if stop.reason is flowdbg.StopReason.EXCEPTION:
            break
    assert isinstance(handle.exception(timeout=T), ValueError)
    assert seen == [
        ("entry", "before", "alpha"),
        ("breakpoint", "after", "alpha"),
        ("breakpoint", "before", "search"),
        ("exception", "error", "boom"),
    ]
    idle = session.status().to_dict()
    check(schemas.DebuggerStatus, idle)
    assert idle["stops"] == []


def test_a_watch_stop_says_what_changed(session: flowdbg.Debugger) -> None:
    """A watch stop's JSON (the CLI's --json, the server, MCP) names each watch's old and new
    value, as the terminal shows them."""
    graph = build()
    session.attach(graph)
    session.watch("x")
    session.watch("found[0]")  # added by agent
    handle = session.start(graph.invoke, {"x": 1})
    entry = session.wait_for_stop(timeout=T)
    assert entry is not None and entry.to_dict()["watched"] == []
    session.resume()
    stop = session.wait_for_stop(timeout=T)
    assert stop is not None
    data = stop.to_dict()
    check(schemas.Stop, data)
    assert data["reason"] == "watch" and data["location"]["node"] == "alpha"
    assert data["watched"] == [
        {
            "breakpoint": stop.breakpoints[0],
            "path": "x",
            "old": 1,
            "new": 2,
            "added": False,
            "removed": False,
        }
    ]
    session.resume()
    stop = session.wait_for_stop(timeout=T)
    assert stop is not None and stop.location.node == "agent"
    (change,) = stop.watch_changes()
    assert (change.path, change.old, change.new, change.added) == (
        "found[0]",
        None,
        "flights result",
        True,
    )
    check(schemas.Stop, stop.to_dict())
    session.clear()
    session.resume()
    handle.exception(timeout=T)


def test_every_type_of_breakpoint(session: flowdbg.Debugger) -> None:
    made = [
        session.break_before("alpha", condition="state['x'] > 0", kind="node", temporary=True),
        session.break_after("a*", hit_condition="%2", enabled=False),
        session.break_before("alpha", condition=lambda state: True),
        session.break_on_exception(ValueError, "KeyError", node="boom"),
        session.watch("x", condition="value > 3"),
        session.break_on_tool("search", args_pattern="fl.*"),
        session.break_on_handoff("billing"),
        session.break_on_event("*", kind=["tool", "llm"]),
        session.logpoint("agent", "x is {state['x']}", position="after"),
    ]
    assert {bp.type.value for bp in made} == {t.value for t in flowdbg.BreakpointType}
    for bp in made:
        check(schemas.BreakpointInfo, bp.model_dump(mode="json"))


def test_the_live_shapes_reject_what_a_session_never_gives() -> None:
    schema = schemas.json_schema(schemas.Stop)
    location = {
        "framework": "stategraph",
        "run_id": "r",
        "parent_run_id": None,
        "path": [],
        "depth": 0,
        "node": "alpha",
        "kind": "node",
        "position": "before",
        "step": 1,
        "superstep": 1,
        "branch": None,
        "attempt": 1,
    }
    stop = {
        "id": "stop-1",
        "reason": "entry",
        "location": location,
        "breakpoints": [],
        "hits": {},
        "state": {"x": 1},
        "input": {"x": 1},
        "output": None,
        "error": None,
        "decision": None,
        "message": None,
        "created_at": 1714567890.5,
        "default_view": "input",
        "views": ["state", "input"],
        "editable": "input",
        "edited": False,
        "watched": [],
    }
    assert validate(stop, schema) == []
    wrong = [
        ({**stop, "reason": "boredom"}, "$.reason: 'boredom' is not one of"),
        ({**stop, "editable": "state"}, "$.editable: 'state' is not valid under any"),
        ({**stop, "default_view": "error"}, "$.default_view: 'error' is not one of"),
        ({**stop, "views": ["memory"]}, "$.views[0]: 'memory' is not one of"),
        ({**stop, "location": {**location, "position": "during"}}, "$.location.position"),
        ({**stop, "location": {**location, "step": 0}}, "$.location.step: 0 is less than"),
    ]
    for value, problem in wrong:
        assert any(p.startswith(problem) for p in validate(value, schema)), (problem, value)
        with pytest.raises(ValidationError):
            schemas.Stop.model_validate_json(json.dumps(value), strict=True)
