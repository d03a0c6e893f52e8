"""Handoffs in the reference StateGraph: the engine's Handoff call and Goto update, and how the
adapter reports them (units of kind "handoff")."""

from __future__ import annotations

import copy
import importlib.util
import operator
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import pytest

import flowdbg
from flowdbg.adapters.stategraph._graph import (
    CALL_INTERCEPTOR,
    END,
    START,
    Call,
    CompiledGraph,
    Goto,
    Handoff,
    InvalidGraphError,
    InvalidUpdateError,
    StateGraph,
    ahandoff,
    handoff,
)

T = 10.0
HAS_TRIO = importlib.util.find_spec("trio") is not None

State = dict[str, Any]


@pytest.fixture(
    params=[
        "asyncio",
        pytest.param(
            "trio", marks=pytest.mark.skipif(not HAS_TRIO, reason="trio is not installed")
        ),
    ]
)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def dbg() -> Iterator[flowdbg.Debugger]:
    """A debugger that records nothing; closed after the test (which ends a run left stopped by
    a failing assertion)."""
    debugger = flowdbg.Debugger(record=False)
    yield debugger
    debugger.close()


def answer(agent: str) -> Callable[[State], State]:
    return lambda s: {"agent": agent, "answer": f"{agent}: {s['topic']}"}


def support_graph(triage: Callable[[State], Any] | None = None) -> CompiledGraph:
    """triage hands off to specialist; its static edge to billing is not followed."""
    g = StateGraph(name="support")
    g.add_node("triage", triage or (lambda s: handoff("specialist", topic=s["q"])))
    g.add_node("specialist", answer("specialist"))
    g.add_node("billing", answer("billing"))
    g.add_edge(START, "triage")
    g.add_edge("triage", "billing")
    g.add_edge("specialist", END)
    g.add_edge("billing", END)
    return g.compile()


class Recording:
    """A call interceptor that records every call and may rewrite its arguments."""

    def __init__(self, rewrite: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.calls: list[tuple[str, str, dict[str, Any], Any]] = []
        self._rewrite = rewrite

    def call(self, target: Call, args: dict[str, Any], proceed: Callable[[Any], Any]) -> Any:
        result = proceed(args if self._rewrite is None else self._rewrite(args))
        self.calls.append((target.kind, target.name, args, result))
        return result

    async def acall(
        self, target: Call, args: dict[str, Any], proceed: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        result = await proceed(args if self._rewrite is None else self._rewrite(args))
        self.calls.append((target.kind, target.name, args, result))
        return result


def with_interceptor(interceptor: Any, fn: Callable[[], Any]) -> Any:
    token = CALL_INTERCEPTOR.set(interceptor)
    try:
        return fn()
    finally:
        CALL_INTERCEPTOR.reset(token)


# ------------------------------------------------------------------------------ the engine


def test_a_handoff_commits_its_payload_and_runs_only_its_target() -> None:
    result = support_graph().invoke({"q": "refund"})
    assert result == {
        "q": "refund",
        "topic": "refund",
        "agent": "specialist",
        "answer": "specialist: refund",
    }


def test_a_handoff_overrides_routers_too() -> None:
    g = StateGraph()
    g.add_node("triage", lambda s: handoff("specialist", topic="x"))
    g.add_node("specialist", answer("specialist"))
    g.add_node("billing", answer("billing"))
    g.set_entry_point("triage")
    g.add_conditional_edges("triage", lambda s: "billing")
    assert g.compile().invoke({})["agent"] == "specialist"


def test_a_handoff_to_end_ends_the_branch() -> None:
    app = support_graph(lambda s: handoff(END, topic="none"))
    assert app.invoke({"q": "refund"}) == {"q": "refund", "topic": "none"}


def test_a_handoff_without_payload_commits_nothing() -> None:
    g = StateGraph()
    g.add_node("triage", lambda s: handoff("specialist"))
    g.add_node("specialist", lambda s: {"seen": sorted(s)})
    g.set_entry_point("triage")
    assert g.compile().invoke({"q": 1}) == {"q": 1, "seen": ["q"]}


def test_a_handoff_to_an_unknown_node_is_an_invalid_graph() -> None:
    app = support_graph(lambda s: handoff("nobody"))
    with pytest.raises(InvalidGraphError, match=r"'triage' handed off to 'nobody'.*one of"):
        app.invoke({"q": "refund"})


@pytest.mark.parametrize("to", ["", 3, None])
def test_a_handoff_target_must_be_a_name(to: Any) -> None:
    with pytest.raises(InvalidGraphError, match="not a node name"):
        Handoff(to)


def test_a_handoff_in_one_branch_of_a_superstep_joins_the_next_one() -> None:
    g = StateGraph(reducers={"log": operator.add})
    g.add_node("fan", lambda s: {"log": ["fan"]})
    g.add_node("p1", lambda s: handoff("helper", log=["p1"]))
    g.add_node("p2", lambda s: {"log": ["p2"]})
    g.add_node("helper", lambda s: {"log": ["helper"]})
    g.add_node("join", lambda s: {"log": ["join"]})
    g.set_entry_point("fan")
    g.add_edge("fan", "p1").add_edge("fan", "p2")
    g.add_edge("p1", "join")  # not followed: p1 hands off
    g.add_edge("p2", "join")
    # superstep 3 runs helper and join together; the order inside it is the engine's
    assert g.compile().invoke({"log": []})["log"] == ["fan", "p1", "p2", "helper", "join"]


def test_a_handoff_inside_a_subgraph_stays_in_it() -> None:
    inner = StateGraph()
    inner.add_node("triage", lambda s: handoff("specialist", topic=s["q"]))
    inner.add_node("specialist", answer("specialist"))
    inner.set_entry_point("triage")
    outer = StateGraph()
    outer.add_node("desk", inner.compile(name="desk"))
    outer.add_node("close", lambda s: {"closed": s["agent"]})
    outer.set_entry_point("desk")
    outer.add_edge("desk", "close")
    assert outer.compile().invoke({"q": "refund"})["closed"] == "specialist"


def test_async_nodes_hand_off_with_ahandoff(backend: str) -> None:
    async def triage(s: State) -> Goto:
        return await ahandoff("specialist", topic=s["q"])

    app = support_graph(triage)
    result = anyio.run(app.ainvoke, {"q": "refund"}, backend=backend)
    assert result["answer"] == "specialist: refund"


def test_the_call_interceptor_sees_a_handoff_and_may_redirect_it() -> None:
    seen = Recording(lambda args: {**args, "to": "billing"})
    result = with_interceptor(seen, lambda: support_graph().invoke({"q": "refund"}))
    assert result["answer"] == "billing: refund"
    assert seen.calls == [
        (
            "handoff",
            "specialist",
            {"to": "specialist", "payload": {"topic": "refund"}},
            {"to": "billing", "payload": {"topic": "refund"}},
        )
    ]


def test_the_async_call_interceptor_sees_a_handoff(backend: str) -> None:
    async def triage(s: State) -> Goto:
        return await ahandoff("specialist", topic=s["q"])

    seen = Recording()
    app = support_graph(triage)

    async def main() -> Any:
        token = CALL_INTERCEPTOR.set(seen)
        try:
            return await app.ainvoke({"q": "refund"})
        finally:
            CALL_INTERCEPTOR.reset(token)

    assert anyio.run(main, backend=backend)["agent"] == "specialist"
    assert [(kind, name) for kind, name, _, _ in seen.calls] == [("handoff", "specialist")]


@pytest.mark.parametrize(
    "rewritten",
    [{"to": 3, "payload": None}, {"to": "billing", "payload": "topic"}, {"payload": {}}],
    ids=["target-not-a-name", "payload-not-a-mapping", "no-target"],
)
def test_an_interceptor_must_give_back_a_handoff(rewritten: dict[str, Any]) -> None:
    class Rewriting(Recording):
        def call(self, target: Call, args: dict[str, Any], proceed: Any) -> Any:
            return rewritten

    with pytest.raises(InvalidUpdateError, match=r"handoff 'specialist' resolved to"):
        with_interceptor(Rewriting(), lambda: support_graph().invoke({"q": "refund"}))


def test_a_goto_keeps_its_target_through_a_deep_copy() -> None:
    goto = handoff("specialist", topic={"id": 1})
    assert isinstance(goto, Goto) and goto.to == "specialist"
    twin = copy.deepcopy(goto)  # what an edit at a stop works on
    assert type(twin) is Goto and twin.to == "specialist" and twin == goto
    assert twin["topic"] is not goto["topic"]
    assert repr(goto) == "Goto('specialist', {'topic': {'id': 1}})"


# ----------------------------------------------------------------------- under the debugger


def debugged(dbg: flowdbg.Debugger, app: CompiledGraph) -> flowdbg.RunHandle:
    dbg.attach(app)
    return dbg.start(app.invoke, {"q": "refund"})


def stop_of(dbg: flowdbg.Debugger) -> flowdbg.Stop:
    stop = dbg.wait_for_stop(T)
    assert stop is not None
    return stop


def test_the_handing_off_node_decides_its_target(dbg: flowdbg.Debugger) -> None:
    dbg.break_after("triage")
    run = debugged(dbg, support_graph())
    stop = stop_of(dbg)
    assert stop.decision == ["specialist"]
    assert dbg.inspect("topic", source="output") == "refund"
    dbg.resume()
    assert run.result(T)["agent"] == "specialist"


def test_an_edit_of_the_payload_before_the_handoff_reaches_the_target(
    dbg: flowdbg.Debugger,
) -> None:
    dbg.break_on_handoff()
    run = debugged(dbg, support_graph())
    stop_of(dbg)
    dbg.set("payload.topic", "invoice")
    dbg.resume()
    assert run.result(T)["answer"] == "specialist: invoice"


def test_an_edit_of_the_payload_after_the_handoff_reaches_the_target(
    dbg: flowdbg.Debugger,
) -> None:
    dbg.break_after("*", kind="handoff")
    run = debugged(dbg, support_graph())
    stop = stop_of(dbg)
    assert stop.location.kind == "handoff"
    dbg.set("payload.topic", "invoice")
    dbg.resume()
    assert run.result(T)["answer"] == "specialist: invoice"


def test_the_target_cannot_change_once_the_handoff_resolved_it(dbg: flowdbg.Debugger) -> None:
    dbg.break_after("*", kind="handoff")
    run = debugged(dbg, support_graph())
    stop_of(dbg)
    with pytest.raises(flowdbg.EditRefused, match=r"change 'to' at its before stop"):
        dbg.set("to", "billing")
    assert dbg.inspect("to", source="output") == "specialist"
    dbg.resume()
    assert run.result(T)["agent"] == "specialist"


@pytest.mark.parametrize(
    ("path", "value"),
    [("to", 3), ("payload", "refund"), ("reason", "x"), ("", "billing")],
    ids=["target-not-a-name", "payload-not-a-mapping", "unknown-key", "not-a-mapping"],
)
def test_an_edit_the_engine_could_not_follow_is_refused(
    dbg: flowdbg.Debugger, path: str, value: Any
) -> None:
    dbg.break_on_handoff()
    run = debugged(dbg, support_graph())
    stop = stop_of(dbg)
    assert stop.to_dict()["editable"] == "input"
    with pytest.raises(flowdbg.EditRefused, match=r"handoff 'specialist' takes \{'to'"):
        dbg.set(path, value)
    assert dbg.inspect("", source="input") == {"to": "specialist", "payload": {"topic": "refund"}}
    dbg.resume()
    assert run.result(T)["agent"] == "specialist"


def test_a_redirect_to_an_unknown_node_fails_the_handing_off_node(
    dbg: flowdbg.Debugger,
) -> None:
    dbg.break_on_handoff()
    run = debugged(dbg, support_graph())
    stop_of(dbg)
    dbg.set("to", "nobody")
    dbg.resume()
    with pytest.raises(InvalidGraphError, match="'triage' handed off to 'nobody'"):
        run.result(T)


def test_tool_calls_next_to_a_handoff_stay_editable(dbg: flowdbg.Debugger) -> None:
    from flowdbg.adapters.stategraph import Tool

    lookup = Tool(lambda order: f"order {order}", name="lookup")

    def triage(s: State) -> Goto:
        # the handoff comes first: its edit check must not apply to the tool call after it
        goto = handoff("specialist", topic=s["q"])
        found = lookup(order=goto["topic"])
        return Goto(goto.to, {"topic": found})

    dbg.break_on_tool("lookup")
    run = debugged(dbg, support_graph(triage))
    stop_of(dbg)
    dbg.set("order", "42")
    dbg.resume()
    assert run.result(T)["answer"] == "specialist: order 42"


def test_a_handoff_in_an_async_node_stops_only_its_task(dbg: flowdbg.Debugger) -> None:
    async def triage(s: State) -> Goto:
        return await ahandoff("specialist", topic=s["q"])

    app = support_graph(triage)
    dbg.attach(app)
    dbg.break_on_handoff(to="specialist")
    run = dbg.start(app.ainvoke, {"q": "refund"})
    stop = stop_of(dbg)
    assert (stop.location.kind, stop.location.path) == ("handoff", ("triage",))
    dbg.set("to", "billing")
    dbg.resume()
    assert run.result(T)["agent"] == "billing"
