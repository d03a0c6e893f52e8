"""Reruns of a LangGraph agent with recorded calls: the scripted model and the tools count their
real calls; an unchanged rerun makes none (model replies through LangChain's cache, ToolNode
calls through its wrapper), a changed node runs its model calls live."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

from langchain_core.globals import get_llm_cache
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import flowdbg

T = 10.0
QUESTION = {"messages": [("user", "find flights to Lisbon")]}


class Counts:
    def __init__(self) -> None:
        self.model = 0
        self.tools = 0


def build_agent(counts: Counts, *, system: str | None = None) -> Any:
    replies = [
        AIMessage("", tool_calls=[{"name": "search", "args": {"to": "Lisbon"}, "id": "c1"}]),
        AIMessage("booked"),
    ]

    class Counting(GenericFakeChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            counts.model += 1
            return super()._generate(*args, **kwargs)

    model = Counting(messages=itertools.cycle(replies))

    @tool
    def search(to: str) -> str:
        """Find flights."""
        counts.tools += 1
        return f"flights to {to}"

    def agent(state: MessagesState) -> dict[str, Any]:
        messages = list(state["messages"])
        if system is not None:
            messages.insert(0, SystemMessage(system))
        return {"messages": [model.invoke(messages)]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([search]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(name="agent")


def contents(result: dict[str, Any]) -> list[str]:
    return [str(message.content) for message in result["messages"]]


@pytest.fixture
def rec(tmp_path: Path) -> Iterator[flowdbg.Debugger]:
    debugger = flowdbg.Debugger(db=tmp_path / "r.db")
    yield debugger
    debugger.close()


def record(dbg: flowdbg.Debugger, app: Any) -> str:
    dbg.attach(app)
    handle = dbg.start(app.invoke, QUESTION)
    assert contents(handle.result(timeout=T)) == [
        "find flights to Lisbon",
        "",
        "flights to Lisbon",
        "booked",
    ]
    assert dbg.flush(T) and handle.run_id is not None
    return handle.run_id


def test_an_unchanged_rerun_asks_no_model_and_runs_no_tool(rec: flowdbg.Debugger) -> None:
    counts = Counts()
    app = build_agent(counts)
    run_id = record(rec, app)
    assert (counts.model, counts.tools) == (2, 1)
    before = get_llm_cache()
    again = rec.rerun(run_id, target=app)
    result = again.result(timeout=T)
    assert contents(result) == ["find flights to Lisbon", "", "flights to Lisbon", "booked"]
    assert result["messages"][1].tool_calls[0]["args"] == {"to": "Lisbon"}
    assert result["messages"][2].tool_call_id == "c1"
    assert (counts.model, counts.tools) == (2, 1)  # nothing was asked or run again
    assert again.calls is not None and (again.calls.served, again.calls.live) == (3, 0)
    assert get_llm_cache() is before  # LangChain's cache is as it was
    assert rec.flush(T) and rec.store is not None and again.run_id is not None
    cached = [(s.node, s.kind) for s in rec.store.get_steps(again.run_id) if s.cached]
    assert [kind for _, kind in cached] == ["llm", "tool", "llm"]


def test_a_changed_node_asks_its_model_again_and_keeps_the_tools_served(
    rec: flowdbg.Debugger,
) -> None:
    counts = Counts()
    run_id = record(rec, build_agent(counts))
    changed = build_agent(counts, system="be brief")  # the current code adds a system prompt
    again = rec.rerun(run_id, target=changed)
    assert contents(again.result(timeout=T))[-1] == "booked"
    assert (counts.model, counts.tools) == (2 + 2, 1)  # both model calls live, the tool served
    calls = again.calls
    assert calls is not None and (calls.served, calls.live) == (1, 2)
    (first,) = calls.diverged
    assert (first.branch, first.kind, first.reason) == (("agent",), "llm", "input")
    assert rec.flush(T) and rec.store is not None and again.run_id is not None
    report = rec.store.divergence(run_id, again.run_id)
    assert (report.calls.recorded, report.calls.served, report.calls.live) == (3, 1, 2)
    (stored,) = report.calls.diverged
    assert (stored.branch, stored.kind, stored.reason) == (("agent",), "llm", "input")
    assert stored.recorded_step == first.recorded_step
    # the system prompt is not in the graph's state and the scripted replies are the same:
    # the units, states and outcomes match (message ids are left out as volatile)
    assert report.first is None, report.first


def test_cached_calls_llm_runs_the_tools(rec: flowdbg.Debugger) -> None:
    counts = Counts()
    app = build_agent(counts)
    run_id = record(rec, app)
    again = rec.rerun(run_id, cached_calls="llm", target=app)
    assert contents(again.result(timeout=T))[-1] == "booked"
    assert (counts.model, counts.tools) == (2, 2)


def test_an_async_agent_reruns_and_forks_under_its_event_loop(rec: flowdbg.Debugger) -> None:
    counts = Counts()

    def script() -> Iterator[AIMessage]:
        # new message objects each time: LangChain sets the id of the one it returns, and a
        # message met again (itertools.cycle) would replace its first use in the history
        yield AIMessage("", tool_calls=[{"name": "search", "args": {"to": "Lisbon"}, "id": "c1"}])
        while True:
            yield AIMessage("booked")

    replies = script()

    class Counting(GenericFakeChatModel):
        async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
            counts.model += 1
            return await super()._agenerate(*args, **kwargs)

    model = Counting(messages=replies)

    @tool
    async def search(to: str) -> str:
        """Find flights."""
        counts.tools += 1
        return f"flights to {to}"

    async def agent(state: MessagesState) -> dict[str, Any]:  # async only: run with ainvoke
        return {"messages": [await model.ainvoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([search]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    app = g.compile(name="async_agent")
    rec.attach(app)
    handle = rec.start(app.ainvoke, QUESTION)
    assert contents(handle.result(timeout=T))[-1] == "booked"
    assert rec.flush(T) and handle.run_id is not None
    assert (counts.model, counts.tools) == (2, 1)
    again = rec.rerun(handle.run_id, target=app)
    assert contents(again.result(timeout=T))[-1] == "booked"
    assert (counts.model, counts.tools) == (2, 1)
    assert again.calls is not None and (again.calls.served, again.calls.live) == (3, 0)
    assert get_llm_cache() is None
    with pytest.raises(flowdbg.ForkError, match=r"step 2 is a model call inside a node"):
        rec.fork(handle.run_id, 2, target=app)
    fork = rec.fork(handle.run_id, 3, target=app)  # after the tools node: the agent answers
    assert contents(fork.result(timeout=T))[-1] == "booked"
    assert counts.model == 3


def test_a_rerun_of_a_run_on_a_checkpointer_thread_neither_resumes_nor_changes_the_thread(
    rec: flowdbg.Debugger,
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from flowdbg.adapters.langgraph import LangGraphAdapter

    counts = Counts()
    saver = InMemorySaver()
    app = build_agent(counts).copy(update={"checkpointer": saver})
    rec.attach(app)
    thread = {"configurable": {"thread_id": "t1"}}
    # the run as `flowdbg run app.py:app --config '{"configurable": {"thread_id": "t1"}}'`
    # starts it, so that its config is recorded
    first = rec.start(LangGraphAdapter().invoke, app, QUESTION, flowdbg.RunOptions(config=thread))
    assert contents(first.result(timeout=T))[-1] == "booked"
    assert rec.flush(T) and first.run_id is not None
    assert rec.store is not None and rec.store.get_run(first.run_id).config == thread
    history = [c.config for c in app.get_state_history(thread)]
    again = rec.rerun(first.run_id, target=app)
    # from the input alone: on thread t1 LangGraph would go on from the four messages the run
    # left there and append the question again
    assert contents(again.result(timeout=T)) == [
        "find flights to Lisbon",
        "",
        "flights to Lisbon",
        "booked",
    ]
    assert again.calls is not None and (again.calls.served, again.calls.live) == (3, 0)
    assert [c.config for c in app.get_state_history(thread)] == history  # the thread untouched
    assert len(app.get_state(thread).values["messages"]) == 4


def test_a_rerun_of_a_later_turn_of_a_thread_starts_from_the_turns_before_it(
    rec: flowdbg.Debugger,
) -> None:
    """The second turn of a thread ran on the first turn's messages: its rerun starts from
    them too (the state the record holds before its first node), on a thread of its own, so
    its model is asked what it was asked and its call is served."""
    from langgraph.checkpoint.memory import InMemorySaver

    from flowdbg.adapters.langgraph import LangGraphAdapter

    asked: list[int] = []

    class Counting(GenericFakeChatModel):
        def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            asked.append(len(messages))
            return super()._generate(messages, *args, **kwargs)

    # a new reply object each call (add_messages keys messages by the id it gives them)
    model = Counting(messages=(AIMessage(f"reply {n}") for n in itertools.count()))

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    app = g.compile(name="chat", checkpointer=InMemorySaver())
    rec.attach(app)
    thread = flowdbg.RunOptions(config={"configurable": {"thread_id": "t1"}})
    first = rec.start(LangGraphAdapter().invoke, app, QUESTION, thread)
    assert contents(first.result(timeout=T)) == ["find flights to Lisbon", "reply 0"]
    second = rec.start(
        LangGraphAdapter().invoke, app, {"messages": [("user", "and to Porto?")]}, thread
    )
    recorded = contents(second.result(timeout=T))
    assert recorded == ["find flights to Lisbon", "reply 0", "and to Porto?", "reply 1"]
    assert rec.flush(T) and second.run_id is not None
    assert asked == [1, 3]
    again = rec.rerun(second.run_id, target=app)
    assert contents(again.result(timeout=T)) == recorded
    assert again.calls is not None and (again.calls.served, again.calls.live) == (1, 0)
    assert asked == [1, 3]  # served: the model was asked nothing
    live = rec.rerun(second.run_id, target=app, cached_calls="none")
    assert contents(live.result(timeout=T))[:3] == recorded[:3]
    assert asked == [1, 3, 3]  # asked again, with the three messages it was asked then
    assert len(app.get_state(thread.config).values["messages"]) == 4  # the thread untouched
