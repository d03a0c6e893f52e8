"""LangGraph's own values in the store: ``Send`` packets, ``Command`` returns and ``Interrupt``
payloads are recorded as typed objects of their fields, readable back, and leave no step
partial."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

import lg_helpers as lg
from click.testing import CliRunner
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send

import flowdbg
from flowdbg.cli import cli
from flowdbg.store import REDACTED, Store

SEND = "langgraph.types.Send"
COMMAND = "langgraph.types.Command"
INTERRUPT = "langgraph.types.Interrupt"


class Jobs(TypedDict, total=False):
    items: list[str]
    results: Annotated[list[str], operator.add]
    phase: str


def fan_out_graph() -> Any:
    """``plan`` returns a Command that sends one ``work`` packet per item (carrying a credential
    that must not be stored); ``work`` appends its result; then a conditional edge sends every
    result to ``check`` with Send packets."""

    def plan(s: Jobs) -> Command[Any]:
        packets = [Send("work", {"item": item, "api_key": "sk-live"}) for item in s["items"]]
        return Command(update={"phase": "working"}, goto=packets)

    def work(packet: dict[str, str]) -> Jobs:
        return {"results": [packet["item"].upper()]}

    def route(s: Jobs) -> list[Send]:
        return [Send("check", {"result": result}) for result in s["results"]]

    g = StateGraph(Jobs)
    g.add_node("plan", plan)
    g.add_node("work", work)
    g.add_node("gather", lambda s: {"phase": "checking"})
    g.add_node("check", lambda packet: {})
    g.add_edge(START, "plan")
    g.add_edge("work", "gather")
    g.add_conditional_edges("gather", route, ["check"])
    g.add_edge("check", END)
    return g.compile(name="fanout")


def read_store(dbg: flowdbg.Debugger) -> Store:
    assert dbg.flush(lg.T)
    store = dbg.store
    assert store is not None
    return store


def test_a_command_with_send_packets_is_stored_as_typed_objects(tmp_path: Path) -> None:
    with flowdbg.Debugger(db=tmp_path / "v.db") as dbg:
        app = dbg.attach(fan_out_graph())
        result = app.invoke({"items": ["a", "b"]})
        assert result == {"items": ["a", "b"], "results": ["A", "B"], "phase": "checking"}
        store = read_store(dbg)
        (run,) = store.list_runs()
        steps = store.get_steps(run.run_id)
        assert store.get_state(run.run_id, step=1)["phase"] == "working"

    assert [(s.node, s.partial) for s in steps] == [
        ("plan", False),
        ("work", False),
        ("work", False),
        ("gather", False),
        ("check", False),
        ("check", False),
    ]
    plan = steps[0]
    assert plan.decision == ["work", "work"]
    assert plan.output == {
        "__type__": COMMAND,
        "graph": None,
        "update": {"phase": "working"},
        "resume": None,
        "goto": [
            {"__type__": SEND, "node": "work", "arg": {"item": item, "api_key": REDACTED}}
            | ({"timeout": None} if "timeout" in Send.__slots__ else {})
            for item in ("a", "b")
        ],
    }
    # each packet is the input of the step it started (branches run in either order), redacted
    # the same way
    assert sorted(s.input["item"] for s in steps[1:3]) == ["a", "b"]
    assert all(s.input["api_key"] == REDACTED for s in steps[1:3])
    assert sorted(s.input["result"] for s in steps[4:]) == ["A", "B"]


def test_a_command_goto_a_node_keeps_its_type(tmp_path: Path) -> None:
    with flowdbg.Debugger(db=tmp_path / "v.db") as dbg:
        app = dbg.attach(lg.command())
        assert app.invoke({"x": 3}) == {"x": 6, "side": "R"}
        store = read_store(dbg)
        (run,) = store.list_runs()
        decide, right = store.get_steps(run.run_id)
    assert not decide.partial and not right.partial
    assert decide.output == {
        "__type__": COMMAND,
        "graph": None,
        "update": {"x": 6},
        "resume": None,
        "goto": "right",
    }


def test_interrupts_and_the_resume_command_are_stored_as_typed_objects(tmp_path: Path) -> None:
    with flowdbg.Debugger(db=tmp_path / "v.db") as dbg:
        app = dbg.attach(lg.hitl(InMemorySaver()))
        config = lg.thread("t1")
        first = app.invoke({"x": 1}, config)
        (pending,) = first["__interrupt__"]
        assert app.invoke(Command(resume="ann"), config) == {"x": 2, "answer": "ann", "done": True}
        store = read_store(dbg)
        suspended, resumed = sorted(store.list_runs(), key=lambda r: r.started_at)
        partial = [
            s.step for r in (suspended, resumed) for s in store.get_steps(r.run_id) if s.partial
        ]

    assert suspended.status == "suspended"
    (stored,) = suspended.output["__interrupt__"]
    assert stored["__type__"] == INTERRUPT
    assert stored["value"] == {"question": "name?", "x": 2}
    assert stored["id"] == pending.id
    assert resumed.input["__type__"] == COMMAND
    assert resumed.input["resume"] == "ann"
    assert partial == []


def test_runs_steps_shows_the_typed_objects(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    with flowdbg.Debugger(db=db) as dbg:
        dbg.attach(fan_out_graph()).invoke({"items": ["a"]})
        (run,) = read_store(dbg).list_runs()

    def runs_steps(*options: str) -> str:
        args = ["runs", "steps", run.run_id, "--db", str(db), "--node", "plan", *options]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    text = runs_steps()
    assert "partial" not in text
    assert (
        "output:   Command(graph=None, update={'phase': 'working'}, resume=None, goto=[Send("
        in text
    )
    (plan,) = json.loads(runs_steps("--json"))["data"]["steps"]
    assert not plan["partial"]
    (packet,) = plan["output"]["goto"]
    assert packet["__type__"] == SEND
    assert packet["arg"] == {"item": "a", "api_key": REDACTED}
