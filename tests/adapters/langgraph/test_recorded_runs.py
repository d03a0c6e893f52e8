"""A recorded LangGraph run: the run, its steps with decisions, the subgraph as a child run, and
the state after every step, as the debugger showed them."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

import lg_helpers as lg
from langchain_core.messages import AnyMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command
from lg_helpers import T, thread

import flowdbg
from flowdbg._values import to_plain


def plain(value: Any) -> Any:
    """A value as the store gives it back."""
    return json.loads(json.dumps(to_plain(value), default=repr))


def test_recorded_run_has_steps_decisions_states_and_the_child_run(tmp_path: Path) -> None:
    with flowdbg.Debugger(db=tmp_path / "r.db") as dbg:
        app = dbg.attach(lg.nested())
        dbg.break_after("*")
        run = dbg.start(app.invoke, {"x": 1})
        shown: dict[tuple[str, int], Any] = {}
        for _ in range(20):
            stop = dbg.wait_for_stop(T)
            if stop is None:
                break
            shown[stop.location.run_id, stop.location.step] = plain(stop.state)
            dbg.resume(stop.id)
        assert run.result(T) == {"x": 20, "z": 21, "done": True}
        assert dbg.flush(T)
        store = dbg.store
        assert store is not None

        root = store.get_run(run.run_id or "")
        assert (root.framework, root.name, root.status) == ("langgraph", "nested", "completed")
        assert root.parent_run_id is None
        assert root.input == {"x": 1} and root.output == {"x": 20, "z": 21, "done": True}
        steps = store.get_steps(root.run_id)
        assert [(s.step, s.node, s.status, s.decision) for s in steps] == [
            (1, "pre", "completed", ["sub"]),
            (2, "sub", "completed", ["post"]),
            (3, "post", "completed", ["__end__"]),
        ]
        assert [s.superstep for s in steps] == [1, 2, 3]
        assert steps[1].output == {"x": 20, "z": 21, "scratch": "seen 2"}  # the child's output

        (child,) = store.list_runs(parent=root.run_id)
        assert (child.name, child.framework, child.status) == ("child", "langgraph", "completed")
        assert child.parent_run_id == root.run_id and child.root_run_id == root.run_id
        assert child.path == ("sub",) and child.parent_step == 2
        assert steps[1].child_run_id == child.run_id
        child_steps = store.get_steps(child.run_id)
        assert [(s.node, s.decision, s.path) for s in child_steps] == [
            ("c1", ["c2"], ("sub",)),
            ("c2", ["__end__"], ("sub",)),
        ]

        expected = {
            (root.run_id, 1): {"x": 2},
            (root.run_id, 2): {"x": 20, "z": 21},
            (root.run_id, 3): {"x": 20, "z": 21, "done": True},
            (child.run_id, 1): {"x": 20, "scratch": "seen 2"},
            (child.run_id, 2): {"x": 20, "z": 21, "scratch": "seen 2"},
        }
        assert shown == expected
        for (run_id, step), state in expected.items():
            assert store.get_state(run_id, step=step) == state, (run_id[:8], step)
        assert store.get_state(root.run_id) == {"x": 20, "z": 21, "done": True}


def test_recorded_send_branches_and_retries(tmp_path: Path) -> None:
    with flowdbg.Debugger(db=tmp_path / "r.db") as dbg:
        app = dbg.attach(lg.map_reduce())
        assert app.invoke({"items": ["a", "b"]})["results"] == ["A", "B"]
        calls: list[int] = []
        retried = dbg.attach(lg.retry_graph(calls))
        assert retried.invoke({"x": 1}) == {"x": 2, "ok": True}
        assert dbg.flush(T)
        store = dbg.store
        assert store is not None
        sent, retry = sorted(store.list_runs(), key=lambda r: r.started_at)
        steps = store.get_steps(sent.run_id)
        assert [(s.node, s.superstep) for s in steps] == [("fan", 1), ("work", 2), ("work", 2)]
        assert steps[0].decision == ["work", "work"]
        assert steps[1].branch != steps[2].branch
        assert sorted(s.input["item"] for s in steps[1:]) == ["a", "b"]
        assert sent.output == {"items": ["a", "b"], "results": ["A", "B"]}
        # nobody stopped there, so the state after each parallel branch is what LangGraph
        # committed at the end of their superstep (flowdbg computes no state of its own)
        for step in steps[1:]:
            assert store.get_state(sent.run_id, step=step.step) == {
                "items": ["a", "b"],
                "results": ["A", "B"],
            }

        flaky = store.get_steps(retry.run_id, node="flaky")
        assert [s.status for s in flaky] == ["failed", "completed"]
        assert flaky[0].error is not None and flaky[0].error.type == "ConnectionError"
        assert retry.status == "completed"


def test_an_interrupted_step_is_recorded_as_suspended(tmp_path: Path) -> None:
    with flowdbg.Debugger(db=tmp_path / "r.db") as dbg:
        app = dbg.attach(lg.hitl(InMemorySaver()))
        assert "__interrupt__" in app.invoke({"x": 1}, thread("t"))
        assert app.invoke(Command(resume="bob"), thread("t"))["answer"] == "bob"
        assert dbg.flush(T)
        store = dbg.store
        assert store is not None
        first, second = sorted(store.list_runs(), key=lambda r: r.started_at)
        assert (first.status, second.status) == ("suspended", "completed")
        assert [r.run_id for r in store.list_runs(status=["suspended"])] == [first.run_id]
        pre, ask = store.get_steps(first.run_id)
        assert (pre.node, pre.status, pre.state) == ("pre", "completed", {"x": 2})
        assert (ask.node, ask.status, ask.output) == ("ask", "suspended", None)
        assert ask.error is not None and ask.error.type == "GraphInterrupt"  # why it paused
        assert store.get_steps(first.run_id, status="failed") == []
        assert [s.node for s in store.get_steps(second.run_id)] == ["ask", "post"]


class Reduced(TypedDict, total=False):
    count: int
    items: Annotated[list[str], operator.add]
    messages: Annotated[list[AnyMessage], add_messages]


def test_states_recorded_without_stops_equal_those_read_at_stops(tmp_path: Path) -> None:
    # Without a stop the record takes the state LangGraph committed after each superstep; at
    # a stop the debugger reads the node's fresh state from LangGraph. Both must agree.
    def step(name: str) -> Any:
        def node(s: Reduced) -> Reduced:
            return {
                "count": s.get("count", 0) + 1,
                "items": [name],
                "messages": [("ai", f"{name} saw {len(s['messages'])}")],
            }

        return node

    g = StateGraph(Reduced)
    for name in ("a", "b", "c"):
        g.add_node(name, step(name))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    app = g.compile()

    def recorded(stop_everywhere: bool) -> list[Any]:
        with flowdbg.Debugger(db=tmp_path / f"{stop_everywhere}.db") as dbg:
            dbg.attach(app)
            if stop_everywhere:
                dbg.break_after("*")
            run = dbg.start(app.invoke, {"items": [], "messages": [("user", "hi")]})
            while stop_everywhere and (stop := dbg.wait_for_stop(T)) is not None:
                dbg.resume(stop.id)
            run.result(T)
            assert dbg.flush(T)
            store = dbg.store
            assert store is not None
            states = [store.get_state(run.run_id or "", step=k) for k in (1, 2, 3)]
            dbg.detach(app)
        for state in states:  # message ids are new in every run
            state["messages"] = [(m["type"], m["content"]) for m in state["messages"]]
        return states

    replayed, read = recorded(False), recorded(True)
    assert replayed == read
    assert replayed[2] == {
        "count": 3,
        "items": ["a", "b", "c"],
        "messages": [("human", "hi"), ("ai", "a saw 1"), ("ai", "b saw 2"), ("ai", "c saw 3")],
    }
