"""Reruns with recorded calls on the StateGraph: scripted models and tools count their calls;
an unchanged rerun makes none, a change runs live from the first call that differs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import flowdbg
from flowdbg.adapters.stategraph import END, Model, StateGraph, Tool

T = 10.0


class Counting:
    """A scripted model and two tools that count how often they really run."""

    def __init__(self) -> None:
        self.llm = 0
        self.tools = 0

    def model(self, messages: list[dict[str, str]]) -> str:
        self.llm += 1
        return f"answer to {messages[-1]['content']}"

    def search(self, query: str) -> str:
        self.tools += 1
        return f"results for {query}"


def agent(counts: Counting, prompt: str = "plan a trip to {q}") -> Any:
    """plan (model: chat) -> research (tool: search, twice) -> write (model: chat)."""
    chat = Model(counts.model, name="chat")
    search = Tool(counts.search, name="search")

    def plan(state: dict[str, Any]) -> dict[str, Any]:
        text = chat(messages=[{"role": "user", "content": prompt.format(q=state["q"])}])
        return {"plan": text}

    def research(state: dict[str, Any]) -> dict[str, Any]:
        return {"found": [search(query=state["q"]), search(query=state["q"] + " hotels")]}

    def write(state: dict[str, Any]) -> dict[str, Any]:
        notes = "; ".join(state["found"])
        return {"reply": chat(messages=[{"role": "user", "content": f"write up: {notes}"}])}

    g = StateGraph(name="agent")
    g.add_node("plan", plan)
    g.add_node("research", research)
    g.add_node("write", write)
    g.set_entry_point("plan")
    g.add_edge("plan", "research")
    g.add_edge("research", "write")
    g.add_edge("write", END)
    return g.compile()


@pytest.fixture
def dbg(tmp_path: Path) -> Iterator[flowdbg.Debugger]:
    debugger = flowdbg.Debugger(db=tmp_path / "r.db")
    yield debugger
    debugger.close()


def record(dbg: flowdbg.Debugger, app: Any) -> tuple[str, Any]:
    dbg.attach(app)
    handle = dbg.start(app.invoke, {"q": "Lisbon"})
    result = handle.result(timeout=T)
    assert dbg.flush(T) and handle.run_id is not None
    return handle.run_id, result


def test_an_unchanged_rerun_makes_no_live_call(dbg: flowdbg.Debugger) -> None:
    counts = Counting()
    app = agent(counts)
    run_id, original = record(dbg, app)
    assert (counts.llm, counts.tools) == (2, 2)
    rerun = dbg.rerun(run_id, target=app)
    assert rerun.result(timeout=T) == original
    assert (counts.llm, counts.tools) == (2, 2)  # nothing ran again
    assert rerun.calls is not None
    assert (rerun.calls.served, rerun.calls.live, rerun.calls.diverged) == (4, 0, [])
    assert dbg.flush(T) and dbg.store is not None and rerun.run_id is not None
    steps = dbg.store.get_steps(rerun.run_id)
    assert [(s.node, s.cached) for s in steps] == [
        ("plan", False),
        ("chat", True),
        ("research", False),
        ("search", True),
        ("search", True),
        ("write", False),
        ("chat", True),
    ]
    recorded = dbg.store.get_run(rerun.run_id)
    assert (recorded.origin, recorded.forked_from, recorded.fork_step) == ("rerun", run_id, None)
    log = str(rerun.log)
    assert log.count("completed, cached") == 4


def test_a_changed_prompt_runs_that_call_live_and_its_branch_after_it(
    dbg: flowdbg.Debugger,
) -> None:
    counts = Counting()
    run_id, _ = record(dbg, agent(counts))
    changed = agent(counts, prompt="plan a cheap trip to {q}")  # the current code
    rerun = dbg.rerun(run_id, target=changed)
    result = rerun.result(timeout=T)
    assert result["plan"] == "answer to plan a cheap trip to Lisbon"
    assert (counts.llm, counts.tools) == (3, 2)  # only the changed call ran again
    calls = rerun.calls
    assert calls is not None and (calls.served, calls.live) == (3, 1)
    (first,) = calls.diverged
    assert (first.branch, first.name, first.reason, first.recorded_step) == (
        ("plan",),
        "chat",
        "input",
        2,
    )
    assert first.input["messages"][0]["content"] == "plan a cheap trip to Lisbon"
    assert first.recorded_input["messages"][0]["content"] == "plan a trip to Lisbon"

    # the record tells the same afterwards, to any reader (another process, runs divergence)
    assert dbg.flush(T) and dbg.store is not None and rerun.run_id is not None
    report = dbg.store.divergence(run_id, rerun.run_id)
    assert (report.origin, report.from_step) == ("rerun", 0)
    assert (report.calls.recorded, report.calls.served, report.calls.live) == (4, 3, 1)
    (stored,) = report.calls.diverged
    assert (stored.branch, stored.name, stored.reason, stored.recorded_step) == (
        ("plan",),
        "chat",
        "input",
        2,
    )
    assert stored.input["messages"][0]["content"] == "plan a cheap trip to Lisbon"
    assert report.first is not None and report.first.kind == "state"
    assert (report.first.node_a, report.first.node_b) == ("plan", "plan")
    assert report.first.paths == ["plan"]
    assert (report.old, report.new) == (
        "answer to plan a trip to Lisbon",
        "answer to plan a cheap trip to Lisbon",
    )


def test_cached_calls_chooses_what_is_served(dbg: flowdbg.Debugger) -> None:
    counts = Counting()
    app = agent(counts)
    run_id, original = record(dbg, app)
    assert dbg.rerun(run_id, cached_calls="llm", target=app).result(timeout=T) == original
    assert (counts.llm, counts.tools) == (2, 4)  # the tools ran again, the model did not
    assert dbg.rerun(run_id, cached_calls="tool", target=app).result(timeout=T) == original
    assert (counts.llm, counts.tools) == (4, 4)
    none = dbg.rerun(run_id, cached_calls="none", target=app)
    assert none.result(timeout=T) == original
    assert (counts.llm, counts.tools) == (6, 6)
    assert none.calls is not None and (none.calls.served, none.calls.live) == (0, 4)
    with pytest.raises(ValueError, match="cached_calls must be one of 'all', 'llm'"):
        dbg.rerun(run_id, cached_calls="some", target=app)


def test_an_edit_at_a_stop_before_a_call_makes_it_run_live(dbg: flowdbg.Debugger) -> None:
    counts = Counting()
    app = agent(counts)
    run_id, _ = record(dbg, app)
    dbg.break_on_tool("search")
    rerun = dbg.rerun(run_id, target=app)
    stop = dbg.wait_for_stop(timeout=T)
    assert stop is not None and stop.location.node == "search"
    dbg.set("query", "Porto")
    dbg.clear()
    dbg.resume()
    result = rerun.result(timeout=T)
    assert result["found"] == ["results for Porto", "results for Lisbon hotels"]
    assert counts.tools == 4  # the edited search and the one after it in its node ran again
    assert counts.llm == 2 + 1  # write's prompt changed with the results: live too


def test_until_divergence_ends_the_rerun_at_the_first_differing_call(
    dbg: flowdbg.Debugger,
) -> None:
    from flowdbg.timetravel import Diverged

    counts = Counting()
    run_id, _ = record(dbg, agent(counts))
    changed = agent(counts, prompt="plan a cheap trip to {q}")
    rerun = dbg.rerun(run_id, target=changed, until_divergence=True)
    with pytest.raises(Diverged, match=r"llm 'chat' in plan \(input differs from step 2"):
        rerun.result(timeout=T)
    assert (counts.llm, counts.tools) == (2, 2)  # the differing call was not made
    assert dbg.flush(T) and dbg.store is not None and rerun.run_id is not None
    assert dbg.store.get_run(rerun.run_id).status == "terminated"
    assert rerun.calls is not None and len(rerun.calls.diverged) == 1


def test_a_rerun_counts_the_time_and_tokens_the_served_calls_took(
    dbg: flowdbg.Debugger,
) -> None:
    replies = iter(range(100))

    def model(messages: list[dict[str, str]]) -> dict[str, Any]:
        return {"content": f"reply {next(replies)}", "usage": {"total_tokens": 120}}

    chat = Model(model, name="chat")
    g = StateGraph(name="usage")
    g.add_node("ask", lambda s: {"a": chat(messages=[{"role": "user", "content": "1"}])})
    g.add_node("again", lambda s: {"b": chat(messages=[{"role": "user", "content": "2"}])})
    g.set_entry_point("ask")
    g.add_edge("ask", "again")
    g.add_edge("again", END)
    app = g.compile()
    run_id, original = record(dbg, app)
    assert dbg.store is not None
    took = sum(s.duration or 0.0 for s in dbg.store.get_steps(run_id, kind="llm"))
    rerun = dbg.rerun(run_id, target=app)
    assert rerun.result(timeout=T) == original  # the recorded replies, not new ones
    assert rerun.calls is not None
    assert rerun.calls.saved_tokens == 240
    assert rerun.calls.saved_seconds == pytest.approx(took)
    assert dbg.flush(T) and rerun.run_id is not None
    report = dbg.store.divergence(run_id, rerun.run_id)
    assert (report.calls.saved_tokens, report.calls.served, report.calls.live) == (240, 2, 0)
    assert report.calls.saved_seconds == pytest.approx(took)
    assert report.first is None  # the same units, states and outcomes


def test_a_call_input_the_node_changes_afterwards_is_recorded_as_it_was(
    dbg: flowdbg.Debugger,
) -> None:
    counts = Counting()
    chat = Model(counts.model, name="chat")

    def converse(state: dict[str, Any]) -> dict[str, Any]:
        history = [{"role": "user", "content": state["q"]}]
        for _ in range(3):  # the same list, appended to after each call
            history.append({"role": "assistant", "content": chat(messages=history)})
        return {"history": history}

    g = StateGraph(name="converse")
    g.add_node("converse", converse)
    g.set_entry_point("converse")
    g.add_edge("converse", END)
    app = g.compile()
    run_id, original = record(dbg, app)
    assert dbg.store is not None
    lengths = [len(s.input["messages"]) for s in dbg.store.get_steps(run_id, kind="llm")]
    assert lengths == [1, 2, 3]
    rerun = dbg.rerun(run_id, target=app)
    assert rerun.result(timeout=T) == original
    assert counts.llm == 3  # the rerun asked nothing


def test_the_timeline_counts_the_calls_nested_runs_served(dbg: flowdbg.Debugger) -> None:
    """The research node is a subgraph (a nested run): its two tool calls served in a rerun
    count in the timeline's served calls with the model's two."""
    from flowdbg.timetravel import timeline

    counts = Counting()
    search = Tool(counts.search, name="search")
    inner = StateGraph(name="research")
    inner.add_node(
        "look", lambda s: {"found": [search(query=s["q"]), search(query=s["q"] + " hotels")]}
    )
    inner.set_entry_point("look")
    inner.add_edge("look", END)
    chat = Model(counts.model, name="chat")
    outer = StateGraph(name="agent")
    outer.add_node("plan", lambda s: {"plan": chat(messages=[{"role": "user", "content": s["q"]}])})
    outer.add_node("research", inner.compile())
    outer.add_node(
        "write", lambda s: {"reply": chat(messages=[{"role": "user", "content": str(s["found"])}])}
    )
    outer.set_entry_point("plan")
    outer.add_edge("plan", "research")
    outer.add_edge("research", "write")
    outer.add_edge("write", END)
    app = outer.compile()
    run_id, original = record(dbg, app)
    rerun = dbg.rerun(run_id, target=app)
    assert rerun.result(timeout=T) == original
    assert rerun.calls is not None and (rerun.calls.served, rerun.calls.live) == (4, 0)
    assert (counts.llm, counts.tools) == (2, 2)
    assert dbg.flush(T) and dbg.store is not None
    (made,) = timeline(dbg.store, run_id).made
    assert made.cached == 4  # the model's two, and the tool's two in the nested run
