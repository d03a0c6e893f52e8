"""The conformance suites run against real LangGraph graphs (tox env ``langgraph``)."""

from __future__ import annotations

import itertools
import threading
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

import lg_helpers as lg
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

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

#: Longest a slow node waits for release() before giving up on its own.
SLOW_LIMIT = 10.0


class Inner(TypedDict, total=False):
    x: int
    z: int


class Nested(TypedDict, total=False):
    x: int
    z: int
    done: bool


class Slow(TypedDict, total=False):
    x: int
    y: int


class Tools(TypedDict, total=False):
    q: str
    reply: str
    found: str
    ran: str
    finished: bool


#: the effects list of the parallel scenario built last (see build_parallel)
_NOTED: list[list[str]] = [[]]


def _noted_add(left: list[str], right: list[str]) -> list[str]:
    _NOTED[0].append(f"reduce {right}")
    return left + right


class Noted(TypedDict, total=False):
    items: Annotated[list[str], _noted_add]
    total: int


def _scenario(app: Any, input: dict[str, Any], **extra: Any) -> Scenario:
    return Scenario(
        target=app,
        run=lambda state: app.invoke(state),
        arun=lambda state: app.ainvoke(state),
        input=input,
        **extra,
    )


class LangGraphFixtures(AdapterFixtures):
    """The canonical scenarios, built natively with LangGraph's ``StateGraph``."""

    adapter = "langgraph"
    fixed_state_keys = True  # a node's update can only write the state schema's channels

    def build_linear(self) -> Scenario:
        return _scenario(lg.linear(), {"x": 1})

    def build_loop(self) -> Scenario:
        effects: list[str] = []

        def route(s: lg.Loop) -> str:
            effects.append(f"route {s['count']}")
            return "inc" if s["count"] < 5 else "done"

        g = StateGraph(lg.Loop)
        g.add_node("inc", lambda s: {"count": s["count"] + 1})
        g.add_node("done", lambda s: {"finished": True})
        g.add_edge(START, "inc")
        g.add_conditional_edges("inc", route, ["inc", "done"])
        g.add_edge("done", END)
        return _scenario(g.compile(name="loop"), {"count": 0}, effects=effects)

    def build_branch(self, positive: bool) -> Scenario:
        return _scenario(lg.branch(), {"x": 1 if positive else -1})

    def build_parallel(self) -> Scenario:
        # the reducer is named in the state's annotations, which LangGraph resolves in this
        # module: a module-level function noting its calls in the list of the scenario built last
        effects = _NOTED[0] = []
        return _scenario(lg.parallel(Noted), {"items": []}, effects=effects)

    def build_nested(self) -> Scenario:
        inner = StateGraph(Inner)
        inner.add_node("inner1", lambda s: {"x": s["x"] * 10})
        inner.add_node("inner2", lambda s: {"z": s["x"] + 1})
        inner.add_edge(START, "inner1")
        inner.add_edge("inner1", "inner2")
        inner.add_edge("inner2", END)

        g = StateGraph(Nested)
        g.add_node("pre", lambda s: {"x": s["x"] + 1})
        g.add_node("sub", inner.compile(name="sub"))
        g.add_node("post", lambda s: {"done": True})
        g.add_edge(START, "pre")
        g.add_edge("pre", "sub")
        g.add_edge("sub", "post")
        g.add_edge("post", END)
        return _scenario(g.compile(name="nested"), {"x": 1})

    def build_failing(self) -> Scenario:
        def boom(s: lg.Linear) -> lg.Linear:
            raise ValueError(f"boom at x={s['x']}")

        g = StateGraph(lg.Linear)
        g.add_node("a", lambda s: {"x": s["x"] + 1})
        g.add_node("boom", boom)
        g.add_edge(START, "a")
        g.add_edge("a", "boom")
        g.add_edge("boom", END)
        return _scenario(g.compile(name="failing"), {"x": 1})

    def build_slow(self) -> Scenario:
        started = threading.Event()
        gate = threading.Event()

        def slow(s: Slow) -> Slow:
            started.set()
            gate.wait(SLOW_LIMIT)
            return {"x": s["x"] + 1}

        g = StateGraph(Slow)
        g.add_node("slow", slow)
        g.add_node("after", lambda s: {"y": 1})
        g.add_edge(START, "slow")
        g.add_edge("slow", "after")
        g.add_edge("after", END)
        return _scenario(g.compile(name="slow"), {"x": 1}, started=started, release=gate.set)

    def build_tools(self) -> Scenario:
        # A scripted chat model (offline) and two LangChain tools the node calls itself.
        chat = GenericFakeChatModel(
            messages=itertools.repeat(AIMessage("search, then clean up"))
        ).with_config(run_name="chat")

        @tool
        def search(query: str) -> str:
            """Search the web."""
            return f"results for {query}"

        @tool
        def shell(cmd: str) -> str:
            """Run a shell command."""
            return f"ran {cmd}"

        def agent(s: Tools) -> Tools:
            reply = chat.invoke([{"role": "user", "content": s["q"]}])
            found = search.invoke({"query": s["q"]})
            ran = shell.invoke({"cmd": "rm -rf /tmp/cache"})
            return {"reply": str(reply.content), "found": found, "ran": ran}

        g = StateGraph(Tools)
        g.add_node("agent", agent)
        g.add_node("done", lambda s: {"finished": True})
        g.add_edge(START, "agent")
        g.add_edge("agent", "done")
        g.add_edge("done", END)
        return _scenario(g.compile(name="tools"), {"q": "flights"})

    def reply_text(self, output: Any) -> Any:
        return getattr(output, "content", output)

    # the tools scenario's node calls its tools itself: seen through callbacks, they run live
    served_call_kinds = frozenset({"llm"})


class TestLangGraphBreakpoints(LangGraphFixtures, AbstractBreakpointTests):
    pass


class TestLangGraphConditions(LangGraphFixtures, AbstractConditionTests):
    pass


class TestLangGraphExceptions(LangGraphFixtures, AbstractExceptionTests):
    pass


class TestLangGraphWatches(LangGraphFixtures, AbstractWatchTests):
    pass


class TestLangGraphStepping(LangGraphFixtures, AbstractSteppingTests):
    pass


class TestLangGraphStateEditing(LangGraphFixtures, AbstractStateEditingTests):
    pass


class TestLangGraphPause(LangGraphFixtures, AbstractPauseTests):
    pass


class TestLangGraphParallel(LangGraphFixtures, AbstractParallelTests):
    pass


class TestLangGraphTerminate(LangGraphFixtures, AbstractTerminateTests):
    pass


class TestLangGraphLogpoints(LangGraphFixtures, AbstractLogpointTests):
    pass


class TestLangGraphTransparency(LangGraphFixtures, AbstractTransparencyTests):
    pass


class TestLangGraphWait(LangGraphFixtures, AbstractWaitTests):
    pass


class TestLangGraphAsync(LangGraphFixtures, AbstractAsyncTests):
    pass


class TestLangGraphObservers(LangGraphFixtures, AbstractObserverTests):
    pass


class TestLangGraphTools(LangGraphFixtures, AbstractToolTests):
    pass


class TestLangGraphViews(LangGraphFixtures, AbstractViewTests):
    pass


class TestLangGraphRecording(LangGraphFixtures, AbstractRecordingTests):
    pass


class TestLangGraphFork(LangGraphFixtures, AbstractForkTests):
    pass


class TestLangGraphRerun(LangGraphFixtures, AbstractRerunTests):
    pass


class TestLangGraphRewind(LangGraphFixtures, AbstractRewindTests):
    pass


# The adapter does not declare "handoffs" yet (a Command(goto=...) is reported as a node's
# decision, not as a unit of kind "handoff"): these skip, naming the capability.
class TestLangGraphHandoffs(LangGraphFixtures, AbstractHandoffTests):
    pass
