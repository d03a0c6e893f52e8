"""Forks of recorded LangGraph runs: built from the record on a checkpointer of the fork's own
(the user's graph needs none), debugged like any run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from lg_helpers import T, branch, checkpointed, command, linear, parallel, thread

import flowdbg


@pytest.fixture
def rec(tmp_path: Path) -> Iterator[flowdbg.Debugger]:
    """A debugger recording into a fresh database."""
    debugger = flowdbg.Debugger(db=tmp_path / "f.db")
    yield debugger
    debugger.close()


def record(dbg: flowdbg.Debugger, app: Any, value: Any, config: Any = None) -> str:
    dbg.attach(app)
    handle = dbg.start(app.invoke, value, config)
    handle.result(timeout=T)
    assert dbg.flush(T) and handle.run_id is not None
    return handle.run_id


def test_a_fork_at_each_step_ends_as_the_original(rec: flowdbg.Debugger) -> None:
    app = linear()
    run_id = record(rec, app, {"x": 1})
    for step in range(4):
        assert rec.fork(run_id, step, target=app).result(timeout=T) == {"x": 20, "y": 21}
    assert rec.flush(T) and rec.store is not None
    forks = rec.store.list_forks(run_id)
    assert [(f.origin, f.fork_step) for f in forks] == [("fork", n) for n in range(4)]
    assert [s.node for s in rec.store.get_steps(forks[1].run_id)] == ["b", "c"]
    assert forks[1].input == {"x": 2}


def test_an_edit_goes_through_the_current_routers(rec: flowdbg.Debugger) -> None:
    app = branch()
    run_id = record(rec, app, {"x": 5})
    out = rec.fork(run_id, 1, {"x": -3}, target=app).result(timeout=T)
    assert out == {"x": -3, "seen": True, "sign": "-"}


def test_a_node_that_chose_its_successor_with_a_command_goes_on_there(
    rec: flowdbg.Debugger,
) -> None:
    app = command()
    run_id = record(rec, app, {"x": 2})
    # decide went right with Command(goto=...): the update alone would route nowhere
    out = rec.fork(run_id, 1, {"x": -7}, target=app).result(timeout=T)
    assert out == {"x": -7, "side": "R"}


def test_a_fork_needs_no_checkpointer_and_leaves_the_users_alone(rec: flowdbg.Debugger) -> None:
    saver = InMemorySaver()
    app = checkpointed(saver)
    run_id = record(rec, app, {"x": 1}, thread("t1"))
    fork = rec.fork(run_id, 1, {"x": 500}, target=app)  # no thread given
    assert fork.result(timeout=T) == {"x": 499, "y": 500}
    assert app.checkpointer is saver
    assert {c.config["configurable"]["thread_id"] for c in saver.list(None)} == {"t1"}


def test_a_fork_holds_at_a_breakpoint_and_an_edit_there_counts(rec: flowdbg.Debugger) -> None:
    app = linear()
    run_id = record(rec, app, {"x": 1})
    rec.break_before("c")
    fork = rec.fork(run_id, 1, target=app)
    stop = rec.wait_for_stop(timeout=T)
    assert stop is not None and stop.location.node == "c"
    assert stop.location.run_id == fork.run_id
    rec.set("x", 3)
    rec.resume()
    assert fork.result(timeout=T) == {"x": 3, "y": 4}


def test_messages_come_back_as_messages(rec: flowdbg.Debugger) -> None:
    seen: list[list[BaseMessage]] = []

    def bot(s: MessagesState) -> dict[str, Any]:
        seen.append(list(s["messages"]))
        return {"messages": [AIMessage(f"hi {s['messages'][-1].content}", id="ai-1")]}

    def echo(s: MessagesState) -> dict[str, Any]:
        seen.append(list(s["messages"]))
        return {"messages": [AIMessage(f"echo: {s['messages'][-1].content}", id="ai-2")]}

    g = StateGraph(MessagesState)
    g.add_node("bot", bot)
    g.add_node("echo", echo)
    g.add_edge(START, "bot")
    g.add_edge("bot", "echo")
    g.add_edge("echo", END)
    app = g.compile(name="messages")
    run_id = record(rec, app, {"messages": [HumanMessage("bob", id="human-1")]})
    seen.clear()
    fork = rec.fork(run_id, 1, {"messages[-1].content": "hello there"}, target=app)
    out = fork.result(timeout=T)
    (received,) = seen
    assert [type(m).__name__ for m in received] == ["HumanMessage", "AIMessage"]
    assert received[-1].content == "hello there"
    assert [m.content for m in out["messages"]] == ["bob", "hello there", "echo: hello there"]


def test_a_step_between_parallel_branches_is_refused(rec: flowdbg.Debugger) -> None:
    app = parallel()
    run_id = record(rec, app, {"items": []})
    with pytest.raises(flowdbg.ForkError, match="ran beside other nodes in superstep 2") as info:
        rec.fork(run_id, 2, target=app)
    assert str(info.value).endswith("it can be forked after steps 0, 1, 4")
    assert rec.fork(run_id, 1, target=app).result(timeout=T) == {
        "items": ["p1", "p2"],
        "total": 2,
    }


def test_a_node_the_current_graph_lacks_is_refused(rec: flowdbg.Debugger) -> None:
    run_id = record(rec, linear(), {"x": 1})
    with pytest.raises(flowdbg.ForkError, match="names node 'b', which graph 'branch' no longer"):
        rec.fork(run_id, 2, target=branch())


def test_an_edit_of_a_key_the_graph_has_no_channel_for_is_refused(rec: flowdbg.Debugger) -> None:
    app = linear()
    run_id = record(rec, app, {"x": 1})
    with pytest.raises(flowdbg.ForkError, match=r"sets 'zzz', which graph .* has no state key"):
        rec.fork(run_id, 1, {"zzz": 1}, target=app)
    assert rec.fork(run_id, 1, {"x": 5}, target=app).result(timeout=T) == {"x": 50, "y": 51}
    # the state view named (as inspect and set name it): its key is x, not "state"
    assert rec.fork(run_id, 1, {"state:x": 5}, target=app).result(timeout=T) == {"x": 50, "y": 51}


SCRIPT = textwrap.dedent(
    """
    import sys
    from typing import TypedDict

    import flowdbg
    from langgraph.graph import END, START, StateGraph


    class S(TypedDict, total=False):
        n: int


    g = StateGraph(S)
    g.add_node("inc", lambda s: {"n": s["n"] + 1})
    g.add_node("double", lambda s: {"n": s["n"] * 2})
    g.add_edge(START, "inc")
    g.add_edge("inc", "double")
    g.add_edge("double", END)
    app = g.compile(name="counter")

    if __name__ == "__main__":
        dbg = flowdbg.Debugger(db=sys.argv[1])
        dbg.attach(app)
        print(dbg.start(app.invoke, {"n": 1}).result(timeout=30))
        dbg.close()
    """
)


def test_a_run_recorded_by_another_process_forks(tmp_path: Path) -> None:
    script = tmp_path / "lg_counter.py"
    script.write_text(SCRIPT, encoding="utf-8")
    db = tmp_path / "f.db"
    done = subprocess.run(
        [sys.executable, str(script), str(db)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    with flowdbg.Debugger(db=db) as dbg:
        assert dbg.store is not None
        (run,) = dbg.store.list_runs()
        assert run.framework == "langgraph" and run.target == f"{script}:app"
        assert dbg.fork(run.run_id, 1, {"n": 5}).result(timeout=T) == {"n": 10}


def test_a_rerun_of_a_graph_without_calls_runs_it_again_from_its_input(
    rec: flowdbg.Debugger,
) -> None:
    app = linear()
    run_id = record(rec, app, {"x": 1})
    again = rec.rerun(run_id, target=app)
    assert again.result(timeout=T) == {"x": 20, "y": 21}
    assert again.calls is not None and (again.calls.served, again.calls.live) == (0, 0)
    assert rec.flush(T) and rec.store is not None and again.run_id is not None
    recorded = rec.store.get_run(again.run_id)
    assert (recorded.origin, recorded.forked_from, recorded.input) == ("rerun", run_id, {"x": 1})
    assert [s.node for s in rec.store.get_steps(again.run_id)] == ["a", "b", "c"]
