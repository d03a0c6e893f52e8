"""Forks of recorded StateGraph runs from Python: the current code from a recorded step, under
the debugger, with lineage; refusals name the steps that can be forked from."""

from __future__ import annotations

import asyncio
import operator
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph, Tool
from flowdbg.store import RunNotFound

T = 10.0


def support(calls: list[str] | None = None) -> Any:
    """classify -> refund | answer -> sign; counts the nodes it runs in ``calls``."""
    seen = [] if calls is None else calls

    def node(name: str, update: Any) -> Any:
        def fn(state: dict[str, Any]) -> dict[str, Any]:
            seen.append(name)
            return update(state)

        return fn

    g = StateGraph(name="support")
    g.add_node("classify", node("classify", lambda s: {"intent": "refund"}))
    g.add_node("refund", node("refund", lambda s: {"reply": f"refund for {s['user']}"}))
    g.add_node("answer", node("answer", lambda s: {"reply": f"help for {s['user']}"}))
    g.add_node("sign", node("sign", lambda s: {"reply": s["reply"] + " -- bot"}))
    g.set_entry_point("classify")
    g.add_conditional_edges(
        "classify", lambda s: s["intent"], {"refund": "refund", "question": "answer"}
    )
    g.add_edge("refund", "sign")
    g.add_edge("answer", "sign")
    g.add_edge("sign", END)
    return g.compile()


@pytest.fixture
def dbg(tmp_path: Path) -> Iterator[flowdbg.Debugger]:
    debugger = flowdbg.Debugger(db=tmp_path / "f.db")
    yield debugger
    debugger.close()


def record(dbg: flowdbg.Debugger, app: Any, value: Any) -> str:
    dbg.attach(app)
    handle = dbg.start(app.invoke, value)
    handle.result(timeout=T)
    assert dbg.flush(T) and handle.run_id is not None
    return handle.run_id


def test_a_fork_at_each_step_ends_as_the_original(dbg: flowdbg.Debugger) -> None:
    app = support()
    run_id = record(dbg, app, {"user": "ana"})
    original = {"user": "ana", "intent": "refund", "reply": "refund for ana -- bot"}
    for step in range(4):
        assert dbg.fork(run_id, step, target=app).result(timeout=T) == original


def test_a_fork_runs_only_what_came_after_the_step_with_the_current_code(
    dbg: flowdbg.Debugger,
) -> None:
    calls: list[str] = []
    app = support(calls)
    run_id = record(dbg, app, {"user": "ana"})
    calls.clear()
    changed = support(calls)  # the "current code": sign now signs differently
    changed.nodes["sign"].fn = lambda s: {"reply": s["reply"] + " -- team"}  # type: ignore[attr-defined]
    fork = dbg.fork(run_id, 2, target=changed)
    assert fork.result(timeout=T)["reply"] == "refund for ana -- team"
    assert calls == []  # refund ran in the original only; sign is the changed function
    assert dbg.flush(T) and dbg.store is not None and fork.run_id is not None
    recorded = dbg.store.get_run(fork.run_id)
    assert (recorded.origin, recorded.forked_from, recorded.fork_step) == ("fork", run_id, 2)
    assert recorded.input == {"user": "ana", "intent": "refund", "reply": "refund for ana"}
    assert [s.node for s in dbg.store.get_steps(fork.run_id)] == ["sign"]
    assert [r.run_id for r in dbg.store.list_forks(run_id)] == [fork.run_id]


def test_an_edit_changes_the_state_and_the_route(dbg: flowdbg.Debugger) -> None:
    calls: list[str] = []
    app = support(calls)
    run_id = record(dbg, app, {"user": "ana"})
    calls.clear()
    out = dbg.fork(run_id, 1, {"intent": "question", "user": "bo"}, target=app).result(timeout=T)
    assert out == {"user": "bo", "intent": "question", "reply": "help for bo -- bot"}
    assert calls == ["answer", "sign"]


def test_a_fork_holds_at_breakpoints_and_steps(dbg: flowdbg.Debugger) -> None:
    app = support()
    run_id = record(dbg, app, {"user": "ana"})
    dbg.break_before("sign")
    fork = dbg.fork(run_id, 1, target=app)
    stop = dbg.wait_for_stop(timeout=T)
    assert stop is not None and stop.location.node == "sign"
    assert stop.location.run_id == fork.run_id
    assert dbg.inspect("reply") == "refund for ana"
    dbg.set("reply", "edited")
    dbg.resume()
    assert fork.result(timeout=T)["reply"] == "edited -- bot"


def test_an_async_graph_forks_under_its_event_loop(dbg: flowdbg.Debugger) -> None:
    async def double(state: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"x": state["x"] * 2}

    g = StateGraph(name="async")
    g.add_node("a", double)
    g.add_node("b", double)
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    app = g.compile()
    dbg.attach(app)
    handle = dbg.start(app.ainvoke, {"x": 1})
    assert handle.result(timeout=T) == {"x": 4}
    assert dbg.flush(T) and handle.run_id is not None
    assert dbg.fork(handle.run_id, 1, {"x": 10}, target=app).result(timeout=T) == {"x": 20}


# ------------------------------------------------------------------------------ refusals


def fan() -> Any:
    g = StateGraph(name="fan", reducers={"items": operator.add})
    g.add_node("start", lambda s: {"items": ["s"]})
    g.add_node("left", lambda s: {"items": ["l"]})
    g.add_node("right", lambda s: {"items": ["r"]})
    g.add_node("join", lambda s: {"total": len(s["items"])})
    g.set_entry_point("start")
    g.add_conditional_edges("start", lambda s: ["left", "right"])
    g.add_edge("left", "join")
    g.add_edge("right", "join")
    g.add_edge("join", END)
    return g.compile()


def test_a_step_between_parallel_branches_is_refused_naming_the_forkable_ones(
    dbg: flowdbg.Debugger,
) -> None:
    app = fan()
    run_id = record(dbg, app, {"items": []})
    with pytest.raises(flowdbg.ForkError) as info:
        dbg.fork(run_id, 2, target=app)
    message = str(info.value)
    assert "ran beside other nodes in superstep 2" in message
    assert message.endswith("it can be forked after steps 0, 1, 4")
    assert dbg.fork(run_id, 1, target=app).result(timeout=T) == {
        "items": ["s", "l", "r"],
        "total": 3,
    }


def test_a_call_inside_a_node_and_an_unknown_step_are_refused(dbg: flowdbg.Debugger) -> None:
    shout = Tool(lambda text: text.upper(), name="shout")
    g = StateGraph(name="tools")
    g.add_node("speak", lambda s: {"out": shout(text=s["text"])})
    g.set_entry_point("speak")
    g.add_edge("speak", END)
    app = g.compile()
    run_id = record(dbg, app, {"text": "hi"})
    with pytest.raises(
        flowdbg.ForkError, match=r"step 2 is a tool call inside a node \(speak/shout\)"
    ):
        dbg.fork(run_id, 2, target=app)
    assert dbg.fork(run_id, 1, {"out": "edited"}, target=app).result(timeout=T)["out"] == "edited"
    with pytest.raises(flowdbg.ForkError, match=r"has no step 5 \(its steps are 1\.\.2\)"):
        dbg.fork(run_id, 5, target=app)
    with pytest.raises(RunNotFound):
        dbg.fork("ffffffff", 1, target=app)


def test_a_step_with_values_recorded_partial_is_refused(dbg: flowdbg.Debugger) -> None:
    class Opaque:
        pass

    g = StateGraph(name="opaque")
    g.add_node("make", lambda s: {"handle": Opaque()})
    g.add_node("use", lambda s: {"done": True})
    g.set_entry_point("make")
    g.add_edge("make", "use")
    g.add_edge("use", END)
    app = g.compile()
    run_id = record(dbg, app, {})
    with pytest.raises(flowdbg.ForkError, match="has values recorded partial") as info:
        dbg.fork(run_id, 1, target=app)
    assert str(info.value).endswith("it can be forked after steps 0")


def test_a_run_without_a_target_reference_needs_one(dbg: flowdbg.Debugger) -> None:
    run_id = record(dbg, support(), {"user": "ana"})  # built in a function: no reference
    with pytest.raises(flowdbg.ForkError, match="recorded no target reference"):
        dbg.fork(run_id, 1)


def test_an_edit_that_does_not_fit_the_state_is_refused(dbg: flowdbg.Debugger) -> None:
    app = support()
    run_id = record(dbg, app, {"user": "ana"})
    with pytest.raises(flowdbg.ForkError, match=r"cannot apply the edit 'user\[3\]'"):
        dbg.fork(run_id, 1, {"user[3]": "x"}, target=app)


def test_a_debugger_that_does_not_record_cannot_fork(tmp_path: Path) -> None:
    with (
        flowdbg.Debugger(record=False) as dbg,
        pytest.raises(flowdbg.ForkError, match="does not record"),
    ):
        dbg.fork("abcd", 1)


# ------------------------------------------------------------------------------ another process

SCRIPT = textwrap.dedent(
    """
    import sys

    import flowdbg
    from flowdbg.adapters.stategraph import END, StateGraph

    g = StateGraph(name="counter")
    g.add_node("inc", lambda s: {"n": s["n"] + 1})
    g.add_node("double", lambda s: {"n": s["n"] * 2})
    g.set_entry_point("inc")
    g.add_edge("inc", "double")
    g.add_edge("double", END)
    app = g.compile()

    if __name__ == "__main__":
        dbg = flowdbg.Debugger(db=sys.argv[1])
        dbg.attach(app)
        print(dbg.start(app.invoke, {"n": 1}).result(timeout=10))
        dbg.close()
    """
)


def test_a_run_recorded_by_another_process_forks_from_its_recorded_target(
    tmp_path: Path,
) -> None:
    script = tmp_path / "counter.py"
    script.write_text(SCRIPT, encoding="utf-8")
    db = tmp_path / "f.db"
    done = subprocess.run(
        [sys.executable, str(script), str(db)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'n': 4}"
    with flowdbg.Debugger(db=db) as dbg:
        assert dbg.store is not None
        (run,) = dbg.store.list_runs()
        assert run.target == f"{script}:app"
        fork = dbg.fork(run.run_id[:8], 1, {"n": 10})  # imports the script's file again
        assert fork.result(timeout=T) == {"n": 20}
        assert dbg.flush(T) and fork.run_id is not None
        forked = dbg.store.get_run(fork.run_id)
        assert (forked.forked_from, forked.target) == (run.run_id, f"{script}:app")


def test_a_run_that_just_ended_forks_and_reruns_without_a_flush(dbg: flowdbg.Debugger) -> None:
    # the writer writes in its next lull (bench/RESULTS.md): fork and rerun write what has
    # ended before they read the record
    app = dbg.attach(support())
    handle = dbg.start(app.invoke, {"user": "ana"})
    original = handle.result(timeout=T)
    assert handle.run_id is not None
    assert dbg.fork(handle.run_id, 1, target=app).result(timeout=T) == original
    again = dbg.start(app.invoke, {"user": "bo"})
    expected = again.result(timeout=T)
    assert again.run_id is not None
    assert dbg.rerun(again.run_id, target=app).result(timeout=T) == expected
