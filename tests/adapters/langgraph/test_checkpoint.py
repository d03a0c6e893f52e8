"""Checkpointers and human-in-the-loop under the debugger: ``interrupt()`` and
``Command(resume=...)``, ``interrupt_before``, state history and ``update_state``."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

import lg_helpers as lg
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from lg_helpers import T, norm, thread

import flowdbg


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """Makes a fresh checkpointer of one kind (each SQLite one in its own file)."""
    connections: list[sqlite3.Connection] = []

    def make() -> Any:
        if request.param == "memory":
            return InMemorySaver()
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = tmp_path / f"checkpoints-{len(connections)}.db"
        connections.append(sqlite3.connect(path, check_same_thread=False))
        return SqliteSaver(connections[-1])

    yield make
    for connection in connections:
        connection.close()


def history(app: Any, config: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What the checkpoints of a thread say, without their ids and times."""
    return [
        (norm(s.values), s.next, s.metadata.get("step"), s.metadata.get("source"), len(s.tasks))
        for s in app.get_state_history(config)
    ]


def interrupts(result: dict[str, Any]) -> list[Any]:
    return [(i.value, type(i).__name__) for i in result.get("__interrupt__", [])]


# -- interrupt() -------------------------------------------------------------------------------


def test_interrupt_returns_the_same_payload_and_resumes_to_a_breakpoint(
    dbg: flowdbg.Debugger, saver: Callable[[], Any]
) -> None:
    plain = lg.hitl(saver())
    paused = plain.invoke({"x": 1}, thread("t"))
    resumed = plain.invoke(Command(resume="bob"), thread("t"))
    assert resumed == {"x": 2, "answer": "bob", "done": True}

    app = dbg.attach(lg.hitl(saver()))
    dbg.break_before("post")
    result = app.invoke({"x": 1}, thread("t"))  # no stop: ask is interrupted before post
    assert result.keys() == paused.keys() == {"x", "__interrupt__"}
    assert result["x"] == paused["x"]
    assert (
        interrupts(result) == interrupts(paused) == [({"question": "name?", "x": 2}, "Interrupt")]
    )
    (pending,) = app.get_state(thread("t")).interrupts
    assert result["__interrupt__"][0].id == pending.id
    assert app.get_state(thread("t")).next == ("ask",)

    (log,) = dbg.runs
    assert log.run.status == "suspended"  # waiting for Command(resume=...): not done, no error
    assert [(s.node, s.status) for s in log.steps] == [("pre", "completed"), ("ask", "suspended")]
    assert log.errors == [] and log.all_errors == []
    assert "0 errors" in log.summary()

    run = dbg.start(app.invoke, Command(resume="bob"), thread("t"))
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "post"
    assert stop.state == {"x": 2, "answer": "bob"}
    dbg.resume()
    assert run.result(T) == resumed
    second = dbg.runs[-1]
    assert second.run.status == "completed"
    assert [(s.node, s.status) for s in second.steps] == [
        ("ask", "completed"),
        ("post", "completed"),
    ]
    assert second.steps[0].output == {"answer": "bob"}


def test_an_interrupt_in_a_subgraph_fails_no_run(dbg: flowdbg.Debugger) -> None:
    plain = lg.hitl_nested(InMemorySaver())
    paused = plain.invoke({"x": 1}, thread("t"))
    plain_state = plain.get_state(thread("t"), subgraphs=True)
    app = dbg.attach(lg.hitl_nested(InMemorySaver()))
    result = app.invoke({"x": 1}, thread("t"))
    assert (
        norm(result)
        == norm(paused)
        == {"x": 1, "__interrupt__": [("Interrupt", {"question": "name?", "x": 2})]}
    )
    state = app.get_state(thread("t"), subgraphs=True)
    assert state.next == plain_state.next == ("sub",)
    assert state.tasks[0].state.values == plain_state.tasks[0].state.values == {"x": 2}

    (log,) = dbg.runs
    (child,) = log.children
    assert [(s.node, s.status) for s in log.steps] == [("sub", "suspended")]
    assert [(s.node, s.status) for s in child.steps] == [("c1", "completed"), ("ask", "suspended")]
    assert log.all_errors == []
    status, error = child.run.status, child.run.error
    assert status != "failed", f"the subgraph run failed with {error and error.type}"
    assert (log.run.status, child.run.status) == ("suspended", "suspended")

    assert app.invoke(Command(resume="ann"), thread("t")) == {"x": 2, "answer": "ann", "done": True}


def test_interrupt_before_behaves_the_same_with_flowdbg(
    dbg: flowdbg.Debugger, saver: Callable[[], Any]
) -> None:
    plain = lg.checkpointed(saver(), interrupt_before=["c"])
    first = plain.invoke({"x": 1}, thread("t"))
    next_plain = plain.get_state(thread("t")).next
    last = plain.invoke(None, thread("t"))

    app = dbg.attach(lg.checkpointed(saver(), interrupt_before=["c"]))
    dbg.break_before("c")
    assert app.invoke({"x": 1}, thread("t")) == first == {"x": 20}
    assert app.get_state(thread("t")).next == next_plain == ("c",)
    assert dbg.stops == []  # c did not start
    assert [s.node for s in dbg.runs[-1].steps] == ["a", "b"]

    run = dbg.start(app.invoke, None, thread("t"))
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "c" and stop.state == {"x": 20}
    dbg.resume()
    assert run.result(T) == last == {"x": 20, "y": 21}
    assert history(app, thread("t")) == history(plain, thread("t"))


# -- checkpointers -----------------------------------------------------------------------------


def test_state_and_history_are_the_same_with_flowdbg(
    dbg: flowdbg.Debugger, saver: Callable[[], Any]
) -> None:
    app = lg.checkpointed(saver())
    expected = app.invoke({"x": 1}, thread("plain"))
    assert expected == {"x": 20, "y": 21}
    dbg.attach(app)
    dbg.break_after("b")
    run = dbg.start(app.invoke, {"x": 1}, thread("debugged"))
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.decision == ["c"]
    dbg.resume()
    assert run.result(T) == expected

    plain_history = history(app, thread("plain"))
    assert [h[1] for h in plain_history] == [(), ("c",), ("b",), ("a",), ("__start__",)]
    assert history(app, thread("debugged")) == plain_history
    now = app.get_state(thread("debugged"))
    assert (now.values, now.next) == (expected, ())
    dbg.detach(app)
    assert history(app, thread("debugged")) == plain_history


def test_update_state_then_resume_while_attached(
    dbg: flowdbg.Debugger, saver: Callable[[], Any]
) -> None:
    plain = lg.checkpointed(saver(), interrupt_before=["c"])
    plain.invoke({"x": 1}, thread("t"))
    plain.update_state(thread("t"), {"x": 7})
    expected = plain.invoke(None, thread("t"))
    assert expected == {"x": 7, "y": 8}

    app = dbg.attach(lg.checkpointed(saver(), interrupt_before=["c"]))
    app.invoke({"x": 1}, thread("t"))
    app.update_state(thread("t"), {"x": 7})
    assert app.get_state(thread("t")).values == {"x": 7}
    dbg.break_before("c")
    run = dbg.start(app.invoke, None, thread("t"))
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.state == {"x": 7}
    dbg.resume()
    assert run.result(T) == expected
    assert history(app, thread("t")) == history(plain, thread("t"))


def fork(app: Any) -> Any:
    """Run, then rewrite a's update in the checkpoint before b: returns the fork's config."""
    assert app.invoke({"x": 1}, thread("t")) == {"x": 20, "y": 21}
    before_b = next(s for s in app.get_state_history(thread("t")) if s.next == ("b",))
    return app.update_state(before_b.config, {"x": 200})  # as a: its router runs again


def test_fork_from_an_earlier_checkpoint_while_attached(dbg: flowdbg.Debugger) -> None:
    plain = lg.checkpointed(InMemorySaver())
    # which nodes the fork runs depends on the LangGraph version: compare with it
    ran = [next(iter(chunk)) for chunk in plain.stream(None, fork(plain), stream_mode="updates")]
    expected = plain.get_state(thread("t")).values
    assert ran and expected["x"] != 20
    app = dbg.attach(lg.checkpointed(InMemorySaver()))
    forked = fork(app)
    dbg.break_before("*")
    run = dbg.start(app.invoke, None, forked)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == ran[0]
    assert stop.state == {"x": 200}
    dbg.clear()
    dbg.resume()
    assert run.result(T) == expected
    assert [s.node for s in dbg.runs[-1].steps] == ran
    assert history(app, thread("t")) == history(plain, thread("t"))


def test_terminate_leaves_the_last_checkpoint_to_continue_from(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.checkpointed(InMemorySaver()))
    dbg.break_before("c")
    run = dbg.start(app.invoke, {"x": 1}, thread("t"))
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "c"
    dbg.terminate()
    with pytest.raises(flowdbg.Terminated):
        run.result(T)
    assert dbg.runs[-1].run.status == "terminated"
    state = app.get_state(thread("t"))
    assert (state.values, state.next) == ({"x": 20}, ("c",))
    dbg.clear()
    assert app.invoke(None, thread("t")) == {"x": 20, "y": 21}
    assert [s.node for s in dbg.runs[-1].steps] == ["c"]
