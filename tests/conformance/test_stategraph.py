"""The conformance suites run against flowdbg's reference StateGraph."""

from __future__ import annotations

import threading
from typing import Any

from flowdbg.adapters.stategraph import END, START, Model, StateGraph, Tool, handoff
from flowdbg.testing import (
    AbstractAsyncTests,
    AbstractBreakpointTests,
    AbstractConditionTests,
    AbstractExceptionTests,
    AbstractForkTests,
    AbstractHandoffTests,
    AbstractLogpointTests,
    AbstractObserverTests,
    AbstractParallelTests,
    AbstractPauseTests,
    AbstractRecordingTests,
    AbstractRerunTests,
    AbstractRewindTests,
    AbstractStateEditingTests,
    AbstractSteppingTests,
    AbstractTerminateTests,
    AbstractToolTests,
    AbstractTransparencyTests,
    AbstractViewTests,
    AbstractWaitTests,
    AbstractWatchTests,
    AdapterFixtures,
    Scenario,
)

State = dict[str, Any]

#: Longest a slow node waits for release() before giving up on its own.
SLOW_LIMIT = 10.0


def _scenario(app: Any, input: State, **extra: Any) -> Scenario:
    # Look the entry points up at call time: attach instruments the graph's own invoke/ainvoke,
    # so a bound method taken before attach would bypass the debugger.
    return Scenario(
        target=app,
        run=lambda state: app.invoke(state),
        arun=lambda state: app.ainvoke(state),
        input=input,
        **extra,
    )


class StateGraphFixtures(AdapterFixtures):
    """The canonical scenarios, built with the reference StateGraph engine."""

    adapter = "stategraph"

    def build_linear(self) -> Scenario:
        g = StateGraph()
        g.add_node("a", lambda s: {"x": s["x"] + 1})
        g.add_node("b", lambda s: {"x": s["x"] * 10})
        g.add_node("c", lambda s: {"y": s["x"] + 1})
        g.add_edge(START, "a")
        g.add_edge("a", "b")
        g.add_edge("b", "c")
        g.add_edge("c", END)
        return _scenario(g.compile(name="linear"), {"x": 1})

    def build_loop(self) -> Scenario:
        effects: list[str] = []

        def route(s: State) -> str:
            effects.append(f"route {s['count']}")
            return "inc" if s["count"] < 5 else "done"

        g = StateGraph()
        g.add_node("inc", lambda s: {"count": s["count"] + 1})
        g.add_node("done", lambda s: {"finished": True})
        g.set_entry_point("inc")
        g.add_conditional_edges("inc", route)
        g.add_edge("done", END)
        return _scenario(g.compile(name="loop"), {"count": 0}, effects=effects)

    def build_branch(self, positive: bool) -> Scenario:
        g = StateGraph()
        g.add_node("start", lambda s: {"seen": True})
        g.add_node("pos", lambda s: {"sign": "+"})
        g.add_node("neg", lambda s: {"sign": "-"})
        g.set_entry_point("start")
        g.add_conditional_edges(
            "start",
            lambda s: "positive" if s["x"] > 0 else "negative",
            {"positive": "pos", "negative": "neg"},
        )
        g.add_edge("pos", END)
        g.add_edge("neg", END)
        return _scenario(g.compile(name="branch"), {"x": 1 if positive else -1})

    def build_parallel(self) -> Scenario:
        effects: list[str] = []

        def add(left: list[str], right: list[str]) -> list[str]:
            effects.append(f"reduce {right}")
            return left + right

        g = StateGraph(reducers={"items": add})
        g.add_node("fan", lambda s: None)
        g.add_node("p1", lambda s: {"items": ["p1"]})
        g.add_node("p2", lambda s: {"items": ["p2"]})
        g.add_node("join", lambda s: {"total": len(s["items"])})
        g.set_entry_point("fan")
        g.add_edge("fan", "p1")
        g.add_edge("fan", "p2")
        g.add_edge("p1", "join")
        g.add_edge("p2", "join")
        g.add_edge("join", END)
        return _scenario(g.compile(name="parallel"), {"items": []}, effects=effects)

    def build_nested(self) -> Scenario:
        inner = StateGraph()
        inner.add_node("inner1", lambda s: {"x": s["x"] * 10})
        inner.add_node("inner2", lambda s: {"z": s["x"] + 1})
        inner.add_edge(START, "inner1")
        inner.add_edge("inner1", "inner2")
        inner.add_edge("inner2", END)

        g = StateGraph()
        g.add_node("pre", lambda s: {"x": s["x"] + 1})
        g.add_node("sub", inner.compile(name="sub"))
        g.add_node("post", lambda s: {"done": True})
        g.add_edge(START, "pre")
        g.add_edge("pre", "sub")
        g.add_edge("sub", "post")
        g.add_edge("post", END)
        return _scenario(g.compile(name="nested"), {"x": 1})

    def build_failing(self) -> Scenario:
        def boom(s: State) -> State:
            raise ValueError(f"boom at x={s['x']}")

        g = StateGraph()
        g.add_node("a", lambda s: {"x": s["x"] + 1})
        g.add_node("boom", boom)
        g.add_edge(START, "a")
        g.add_edge("a", "boom")
        g.add_edge("boom", END)
        return _scenario(g.compile(name="failing"), {"x": 1})

    def build_slow(self) -> Scenario:
        started = threading.Event()
        gate = threading.Event()

        def slow(s: State) -> State:
            started.set()
            gate.wait(SLOW_LIMIT)
            return {"x": s["x"] + 1}

        g = StateGraph()
        g.add_node("slow", slow)
        g.add_node("after", lambda s: {"y": 1})
        g.add_edge(START, "slow")
        g.add_edge("slow", "after")
        g.add_edge("after", END)
        return _scenario(g.compile(name="slow"), {"x": 1}, started=started, release=gate.set)

    def build_tools(self) -> Scenario:
        chat = Model(lambda messages: "search, then clean up", name="chat")
        search = Tool(lambda query: f"results for {query}", name="search")
        shell = Tool(lambda cmd: f"ran {cmd}", name="shell")

        def agent(s: State) -> State:
            reply = chat(messages=[{"role": "user", "content": s["q"]}])
            found = search(query=s["q"])
            ran = shell(cmd="rm -rf /tmp/cache")
            return {"reply": reply, "found": found, "ran": ran}

        g = StateGraph()
        g.add_node("agent", agent)
        g.add_node("done", lambda s: {"finished": True})
        g.add_edge(START, "agent")
        g.add_edge("agent", "done")
        g.add_edge("done", END)
        return _scenario(g.compile(name="tools"), {"q": "flights"})

    def build_handoff(self) -> Scenario:
        def answer(agent: str) -> Any:
            return lambda s: {"agent": agent, "answer": f"{agent}: {s['topic']}"}

        g = StateGraph()
        g.add_node("triage", lambda s: handoff("specialist", topic=s["q"]))
        g.add_node("specialist", answer("specialist"))
        g.add_node("billing", answer("billing"))
        g.add_edge(START, "triage")
        g.add_edge("specialist", END)
        g.add_edge("billing", END)
        return _scenario(
            g.compile(name="handoff"),
            {"q": "refund"},
            normalize=lambda s: {"agent": s["agent"], "answer": s["answer"]},
        )


class TestStateGraphBreakpoints(StateGraphFixtures, AbstractBreakpointTests):
    pass


class TestStateGraphConditions(StateGraphFixtures, AbstractConditionTests):
    pass


class TestStateGraphExceptions(StateGraphFixtures, AbstractExceptionTests):
    pass


class TestStateGraphWatches(StateGraphFixtures, AbstractWatchTests):
    pass


class TestStateGraphStepping(StateGraphFixtures, AbstractSteppingTests):
    pass


class TestStateGraphStateEditing(StateGraphFixtures, AbstractStateEditingTests):
    pass


class TestStateGraphPause(StateGraphFixtures, AbstractPauseTests):
    pass


class TestStateGraphParallel(StateGraphFixtures, AbstractParallelTests):
    pass


class TestStateGraphTerminate(StateGraphFixtures, AbstractTerminateTests):
    pass


class TestStateGraphLogpoints(StateGraphFixtures, AbstractLogpointTests):
    pass


class TestStateGraphTransparency(StateGraphFixtures, AbstractTransparencyTests):
    pass


class TestStateGraphWait(StateGraphFixtures, AbstractWaitTests):
    pass


class TestStateGraphAsync(StateGraphFixtures, AbstractAsyncTests):
    pass


class TestStateGraphObservers(StateGraphFixtures, AbstractObserverTests):
    pass


class TestStateGraphTools(StateGraphFixtures, AbstractToolTests):
    pass


class TestStateGraphViews(StateGraphFixtures, AbstractViewTests):
    pass


class TestStateGraphRecording(StateGraphFixtures, AbstractRecordingTests):
    pass


class TestStateGraphFork(StateGraphFixtures, AbstractForkTests):
    pass


class TestStateGraphRerun(StateGraphFixtures, AbstractRerunTests):
    pass


class TestStateGraphRewind(StateGraphFixtures, AbstractRewindTests):
    pass


class TestStateGraphHandoffs(StateGraphFixtures, AbstractHandoffTests):
    pass
