"""The recorder end to end: real graphs, a real SQLite file, real processes."""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph
from flowdbg.recorder import Recorder
from flowdbg.records import RunRecord, StepRecord
from flowdbg.store import SQLiteStore, Store, open_store

T = 10.0


def loop_graph(n: int = 5) -> Any:
    g = StateGraph(name="loop")
    g.add_node("inc", lambda s: {"count": s["count"] + 1})
    g.add_node("done", lambda s: {"finished": True})
    g.set_entry_point("inc")
    g.add_conditional_edges("inc", lambda s: "inc" if s["count"] < n else "done")
    g.add_edge("done", END)
    return g.compile(step_limit=max(25, n + 2))


def test_every_step_is_recorded_with_state(tmp_path: Path) -> None:
    dbg = flowdbg.Debugger(db=tmp_path / "r.db")
    app = dbg.attach(loop_graph())
    assert app.invoke({"count": 0}) == {"count": 5, "finished": True}
    assert dbg.flush(T)
    store = dbg.store
    assert store is not None
    (run,) = store.list_runs()
    assert run.status == "completed" and run.name == "loop" and run.framework == "stategraph"
    steps = store.get_steps(run.run_id)
    assert [s.node for s in steps] == ["inc"] * 5 + ["done"]
    assert [s.decision for s in steps] == [["inc"]] * 4 + [["done"], ["__end__"]]
    assert store.get_state(run.run_id, step=3) == {"count": 3}
    assert store.get_state(run.run_id) == {"count": 5, "finished": True}
    assert all(s.duration is not None and s.duration >= 0 for s in steps)
    dbg.close()


class RecordsOnly(SQLiteStore):
    """A store that takes records: the base class's ``write_fields`` makes them from the fields
    the recorder hands over."""

    write_fields = Store.write_fields

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.received: list[Any] = []

    def write_batch(
        self,
        *,
        runs: Sequence[RunRecord] = (),
        steps: Sequence[StepRecord] = (),
        ended: Sequence[RunRecord] = (),
    ) -> None:
        self.received.extend(steps)
        super().write_batch(runs=runs, steps=steps, ended=ended)


def test_a_store_that_takes_records_gets_every_step_as_one(tmp_path: Path) -> None:
    store = RecordsOnly(tmp_path / "r.db")
    recorder = Recorder(store)
    dbg = flowdbg.Debugger(record=False, plugins=[recorder])
    app = dbg.attach(loop_graph(3))
    assert app.invoke({"count": 0}) == {"count": 3, "finished": True}
    assert recorder.flush(T)
    assert all(type(s) is StepRecord for s in store.received)
    assert [(s.step, s.node, s.state, s.decision) for s in store.received] == [
        (1, "inc", {"count": 1}, ["inc"]),
        (2, "inc", {"count": 2}, ["inc"]),
        (3, "inc", {"count": 3}, ["done"]),
        (4, "done", {"count": 3, "finished": True}, ["__end__"]),
    ]
    (run,) = store.list_runs()
    assert run.status == "completed" and run.step_count == 4
    recorder.close()


def test_recording_off_by_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWDBG_RECORD", "0")
    dbg = flowdbg.Debugger(db=tmp_path / "off.db")
    assert dbg.store is None
    dbg.attach(loop_graph()).invoke({"count": 0})
    assert not (tmp_path / "off.db").exists()


def test_secrets_are_redacted_and_unserializable_values_do_not_break_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<Opaque handle>"

    g = StateGraph(name="secrets")
    g.add_node("call", lambda s: {"auth": {"api_key": "sk-123", "user": "ana"}, "h": Opaque()})
    g.set_entry_point("call")
    g.add_edge("call", END)
    dbg = flowdbg.Debugger(db=tmp_path / "s.db")
    app = dbg.attach(g.compile())
    with caplog.at_level(logging.WARNING):
        out = app.invoke({"q": 1})
    assert out["auth"]["api_key"] == "sk-123"  # the run itself is untouched
    assert dbg.flush(T)
    store = dbg.store
    assert store is not None
    (run,) = store.list_runs()
    (step,) = store.get_steps(run.run_id)
    assert step.partial
    state = store.get_state(run.run_id)
    assert state["auth"] == {"api_key": "[REDACTED]", "user": "ana"}
    assert "Opaque" in str(state["h"])
    assert "Opaque" in caplog.text
    dbg.close()


def test_functions_in_a_state_are_stored_as_their_repr_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def tokenize(text: str, *, special: str) -> list[str]:
        return text.split()

    g = StateGraph(name="code")
    g.add_node("keep", lambda s: {"tokenizer": functools.partial(tokenize, special="all")})
    g.set_entry_point("keep")
    g.add_edge("keep", END)
    dbg = flowdbg.Debugger(db=tmp_path / "c.db")
    app = dbg.attach(g.compile())
    with caplog.at_level(logging.INFO, logger="flowdbg.store"):
        app.invoke({"q": 1})
        assert dbg.flush(T)
    store = dbg.store
    assert store is not None
    (run,) = store.list_runs()
    (step,) = store.get_steps(run.run_id)
    assert step.partial  # a fork could not give the function back
    assert step.state["tokenizer"]["__type__"] == "functools.partial"
    assert "tokenize" in step.state["tokenizer"]["__repr__"]
    (said,) = [r for r in caplog.records if "functools.partial" in r.getMessage()]
    assert said.levelno == logging.INFO
    dbg.close()


@dataclasses.dataclass
class Basket:
    items: list[str]


@pytest.mark.parametrize("in_place", [True, False])
def test_values_a_framework_changes_in_place_are_recorded_as_they_were_at_their_unit(
    tmp_path: Path, in_place: bool
) -> None:
    """A framework that goes on changing a finished unit's objects (an agent's memory) says
    so; its units are then recorded as they ended, though the writer writes afterwards. A
    framework that replaces its values (LangGraph) does not pay for it."""
    store = SQLiteStore(tmp_path / "r.db")
    recorder = Recorder(store, quiet=60.0, max_delay=60.0)  # writes at the flush only
    dbg = flowdbg.Debugger(record=False, plugins=[recorder])
    scope = dbg.begin_run(framework="test", name="t", input={})
    scope.values_change_in_place = in_place
    memory = {"log": ["a"], "meta": {"n": 1}, "basket": Basket(["fig"])}
    first = scope.unit("start")
    first.before(state={}, input={})
    first.after(output=memory, state={"memory": memory})
    agent = scope.unit("agent", kind="agent")
    agent.before(state={"memory": memory}, input=memory)
    call = agent.frame().unit("search", kind="tool")
    call.before(input={"query": memory["log"]})
    call.after(output="found")
    memory["log"].append("b")  # the agent changes what its call was given, and the memory
    memory["meta"]["n"] = 2
    memory["basket"].items.append("pear")
    agent.after(output=None, state={"memory": memory})
    scope.end(output=None)
    assert store.list_runs() == []  # nothing written yet: the values changed before
    assert recorder.flush(T)
    steps = store.get_steps(scope.run_id)
    then = {"log": ["a"], "meta": {"n": 1}, "basket": {"items": ["fig"]}}
    now = {"log": ["a", "b"], "meta": {"n": 2}, "basket": {"items": ["fig", "pear"]}}
    recorded = {s.node: s for s in steps}
    assert recorded["start"].output == (then if in_place else now)
    assert recorded["start"].state == {"memory": then if in_place else now}
    # a call's input is kept as it was at its end either way (without the flag, its lists
    # are copied then)
    assert recorded["search"].input == {"query": ["a"]}
    assert recorded["agent"].state == {"memory": now}
    # the agent changed its own input as it ran: recorded as it started, where taken then
    assert recorded["agent"].input == (then if in_place else now)
    recorder.close()


def test_an_input_taken_for_a_unit_that_never_ends_is_let_go_with_its_run(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "r.db")
    recorder = Recorder(store)
    dbg = flowdbg.Debugger(record=False, plugins=[recorder])
    scope = dbg.begin_run(framework="test", name="t", input={})
    scope.values_change_in_place = True
    unit = scope.unit("cut")
    # in a context of its own: a unit left running stays this context's current unit
    contextvars.copy_context().run(unit.before, input={"log": ["x"]})
    assert len(recorder._inputs) == 1  # taken as it started, for its record
    scope.end(error=RuntimeError("cut short"))
    assert recorder._inputs == {}
    recorder.close()


def test_a_run_input_and_output_are_recorded_as_they_were_at_its_start_and_end(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "r.db")
    recorder = Recorder(store, quiet=60.0, max_delay=60.0)  # writes at the flush only
    dbg = flowdbg.Debugger(record=False, plugins=[recorder])
    memory: dict[str, Any] = {"messages": ["hi"], "n": 1}
    scope = dbg.begin_run(framework="test", name="t", input={"memory": memory})
    memory["messages"].append("hello")  # the run changes the memory it was given
    result = {"messages": memory["messages"]}
    scope.end(output=result)
    result["messages"].append("and you?")  # the caller goes on with what the run returned
    assert recorder.flush(T)
    run = store.get_run(scope.run_id)
    assert run.input == {"memory": {"messages": ["hi"], "n": 1}}
    assert run.output == {"messages": ["hi", "hello"]}
    recorder.close()


def test_a_run_input_stays_as_it_was_at_its_start_when_its_end_is_written_later(
    tmp_path: Path,
) -> None:
    # The writer wrote the run's start in one batch (a lull while it ran) and its end in a
    # later one: the end's record must not write the input again as it is by then.
    store = SQLiteStore(tmp_path / "r.db")
    recorder = Recorder(store, quiet=60.0, max_delay=60.0)  # writes at each flush only
    dbg = flowdbg.Debugger(record=False, plugins=[recorder])
    memory: dict[str, Any] = {"messages": ["hi"]}
    scope = dbg.begin_run(framework="test", name="t", input={"memory": memory})
    assert recorder.flush(T)  # the start, written
    assert store.get_run(scope.run_id).input == {"memory": {"messages": ["hi"]}}
    memory["messages"].append("hello")  # the run changes the memory it was given
    scope.end(output="done")
    assert recorder.flush(T)  # the end, written in a batch of its own
    run = store.get_run(scope.run_id)
    assert run.status == "completed" and run.output == "done"
    assert run.input == {"memory": {"messages": ["hi"]}}
    recorder.close()


def test_a_store_taking_records_gets_plain_values_where_a_unit_was_taken_as_it_ended(
    tmp_path: Path,
) -> None:
    store = RecordsOnly(tmp_path / "r.db")
    recorder = Recorder(store)
    dbg = flowdbg.Debugger(record=False, plugins=[recorder])
    scope = dbg.begin_run(framework="test", name="t", input={"q": ["x"]})
    scope.values_change_in_place = True
    unit = scope.unit("start")
    unit.before(state={}, input={"q": ["x"]})
    unit.after(output={"basket": Basket(["fig"])}, state={"basket": Basket(["fig"])})
    scope.end(output=[1, 2])
    assert recorder.flush(T)
    (step,) = store.received
    assert step.output == step.state == {"basket": {"items": ["fig"]}}
    assert step.input == {"q": ["x"]}
    assert store.get_run(scope.run_id).input == {"q": ["x"]}
    recorder.close()


def test_a_value_whose_repr_records_a_step_itself_is_taken_whole(tmp_path: Path) -> None:
    """Freezing runs user code (a repr, a serializer), which may record a unit of its own on
    the same thread: the inner freeze has its own encoder, the outer one loses nothing."""
    store = SQLiteStore(tmp_path / "r.db")

    class Inner:
        def __repr__(self) -> str:
            return "<inner>"

    class Outer:
        def __repr__(self) -> str:
            (inner,) = store.freeze(({"h": Inner()},))
            assert inner.failures == (f"{__name__}.{Inner.__qualname__}",)
            return "<outer>"

    store.freeze(({"warm": ["up"]},))  # the thread's encoder exists
    looped: dict[str, Any] = {"a": Outer(), "b": Basket(["x"])}
    looped["me"] = looped  # met again after the repr: a cycle, cut there
    first, second = store.freeze((looped, {"c": Inner()}))
    assert first.plain["a"]["__repr__"] == "<outer>"
    assert first.plain["b"] == {"items": ["x"]}
    assert first.plain["me"]["__type__"] == "builtins.dict"
    assert first.failures == (f"{__name__}.{Outer.__qualname__}", "builtins.dict")
    assert second.failures == (f"{__name__}.{Inner.__qualname__}",)
    store.close()


_CHILD = textwrap.dedent(
    """
    import sys, time
    import flowdbg
    from flowdbg.adapters.stategraph import StateGraph, END

    def inc(s):
        if s["count"] == {block_at}:
            print("READY", flush=True)
            time.sleep(600)
        return {{"count": s["count"] + 1}}

    g = StateGraph(name="{name}")
    g.add_node("inc", inc)
    g.set_entry_point("inc")
    g.add_conditional_edges("inc", lambda s: "inc" if s["count"] < {n} else "__end__")
    dbg = flowdbg.Debugger(db=sys.argv[1])
    app = dbg.attach(g.compile(step_limit=10_000))
    app.invoke({{"count": 0}})
    dbg.flush()
    print("DONE", flush=True)
    """
)


def _script(tmp_path: Path, name: str, *, n: int, block_at: int) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(_CHILD.format(name=name, n=n, block_at=block_at), encoding="utf-8")
    return path


def test_sigkill_mid_run_leaves_a_readable_database(tmp_path: Path) -> None:
    db = tmp_path / "killed.db"
    script = _script(tmp_path, "victim", n=1000, block_at=300)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(db)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "READY"
        # wait (bounded) until the writer has flushed the steps before the blocking one
        deadline = time.monotonic() + T
        steps: list[Any] = []
        while time.monotonic() < deadline:
            with open_store(db, create=False) as store:
                runs = store.list_runs()
                steps = store.get_steps(runs[0].run_id, values=False) if runs else []
            if len(steps) >= 300:
                break
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(T)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(T)
        if proc.stdout is not None:
            proc.stdout.close()
    with open_store(db, create=False) as store:
        (run,) = store.list_runs()
        assert run.status == "interrupted"
        steps = store.get_steps(run.run_id)
        assert len(steps) >= 300
        assert [s.step for s in steps] == list(range(1, len(steps) + 1))
        assert store.get_state(run.run_id, step=300) == {"count": 300}


def test_several_processes_record_into_one_database(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    procs = [
        subprocess.Popen(
            [sys.executable, str(_script(tmp_path, f"p{i}", n=200, block_at=-1)), str(db)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "DONE" in out
    with open_store(db, create=False) as store:
        runs = store.list_runs()
        assert sorted(r.name for r in runs) == ["p0", "p1", "p2", "p3"]
        for run in runs:
            assert run.status == "completed"
            assert len(store.get_steps(run.run_id, values=False)) == 200


def test_not_a_flowdbg_database_is_refused_at_once(tmp_path: Path) -> None:
    bad = tmp_path / "notes.db"
    bad.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(flowdbg.FlowdbgError, match=r"notes\.db"):
        flowdbg.Debugger(db=bad)
    assert bad.read_bytes().startswith(b"this is not sqlite")


def test_a_step_held_at_a_stop_is_recorded_as_running(tmp_path: Path) -> None:
    g = StateGraph(name="held")
    g.add_node("a", lambda s: {"x": s["x"] + 1})
    g.add_node("b", lambda s: {"x": s["x"] * 10})
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", "__end__")
    with flowdbg.Debugger(db=tmp_path / "held.db") as dbg:
        app = dbg.attach(g.compile())
        dbg.break_before("b")
        run = dbg.start(app.invoke, {"x": 1})
        assert dbg.wait_for_stop(T) is not None
        assert dbg.flush(T) and dbg.store is not None
        (held,) = dbg.store.list_runs()
        steps = dbg.store.get_steps(held.run_id)
        assert [(s.node, s.status) for s in steps] == [("a", "completed"), ("b", "running")]
        assert held.step_count == 2
        dbg.resume()
        assert run.result(T) == {"x": 20}
        assert dbg.flush(T)
        steps = dbg.store.get_steps(held.run_id)
        assert [(s.node, s.status, s.output) for s in steps] == [
            ("a", "completed", {"x": 2}),
            ("b", "completed", {"x": 20}),
        ]
        assert dbg.store.get_run(held.run_id).step_count == 2  # replaced, not counted twice


# -- a run that outruns the writer ---------------------------------------------------------------


def _slow_writes(dbg: flowdbg.Debugger, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the store's writer slower than the run, so the queue fills up."""
    store = dbg.store
    assert store is not None
    write = store.write_fields  # what the recorder writes through

    def slow_write(**batch: Any) -> None:
        time.sleep(0.002)
        write(**batch)

    monkeypatch.setattr(store, "write_fields", slow_write)


def test_a_run_outrunning_the_writer_waits_and_loses_no_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbg = flowdbg.Debugger(db=tmp_path / "r.db", record_queue=50)
    recorder = dbg.recorder
    assert recorder is not None
    recorder.batch_size = 10  # the writer takes small bites: it falls behind at once
    _slow_writes(dbg, monkeypatch)
    app = dbg.attach(loop_graph(400))
    for _ in range(3):
        assert app.invoke({"count": 0}) == {"count": 400, "finished": True}
    assert dbg.flush(T)
    assert recorder.waits > 0 and recorder.dropped == 0
    store = dbg.store
    assert store is not None
    runs = store.list_runs()
    assert [r.step_count for r in runs] == [401, 401, 401]  # every step of every run


def test_the_drop_policy_never_waits_and_counts_what_it_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    dbg = flowdbg.Debugger(db=tmp_path / "r.db", record_queue=50, record_overflow="drop")
    recorder = dbg.recorder
    assert recorder is not None
    recorder.batch_size = 10
    _slow_writes(dbg, monkeypatch)
    app = dbg.attach(loop_graph(400))
    with caplog.at_level(logging.WARNING, logger="flowdbg.recorder"):
        assert app.invoke({"count": 0}) == {"count": 400, "finished": True}
    assert dbg.flush(T)
    assert recorder.dropped > 0 and recorder.waits == 0
    store = dbg.store
    assert store is not None
    assert store.list_runs()[0].step_count == 401 - recorder.dropped
    assert "record_overflow='drop'" in caplog.text


def test_an_unknown_overflow_policy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"record_overflow must be one of 'wait', 'drop'"):
        flowdbg.Debugger(db=tmp_path / "r.db", record_overflow="block")
    with pytest.raises(ValueError, match="record_queue must be a positive int"):
        flowdbg.Debugger(db=tmp_path / "r.db", record_queue=0)


@pytest.mark.parametrize("calls_write_state", [False, True])
def test_a_call_records_its_state_where_calls_write_the_state(
    tmp_path: Path, calls_write_state: bool
) -> None:
    # An agent's tools write the run context themselves: each call's record keeps the context
    # after it. Elsewhere (a graph node's calls) a call commits nothing: its record has no state.
    dbg = flowdbg.Debugger(db=tmp_path / "r.db")
    scope = dbg.begin_run(framework="test", name="t", input={"n": 0})
    agent = scope.unit("agent", kind="agent")
    agent.before(state={"n": 0})
    frame = agent.frame()
    frame.calls_write_state = calls_write_state
    state = {"n": 0}
    for n in (1, 2):
        call = frame.unit("inc", kind="tool")
        call.before(state=dict(state), input={})
        state["n"] = n
        call.after(output=n, state=dict(state))
    held = frame.unit("model", kind="llm")  # left without an after point: no state of its own
    held.before(state=dict(state))
    held.discard()
    agent.after(output=None, state=dict(state))
    scope.end(output=None)
    assert dbg.flush(T)
    store = dbg.store
    assert store is not None
    rid = scope.run_id
    written = {"n": 1} if calls_write_state else None, {"n": 2} if calls_write_state else None
    assert [(s.step, s.node, s.state) for s in store.get_steps(rid)] == [
        (1, "agent", {"n": 2}),
        (2, "inc", written[0]),
        (3, "inc", written[1]),
        (4, "model", None),
    ]
    # the state at a call's step: its own, else the latest its unit's calls recorded by then
    at_calls = [store.get_state(rid, step=n) for n in (2, 3, 4)]
    if calls_write_state:
        assert at_calls == [{"n": 1}, {"n": 2}, {"n": 2}]
        assert store.last_writers(rid) == {"n": (3, "inc")}
    else:
        assert at_calls == [{"n": 0}] * 3  # the run's input: the state the agent started from
        assert store.last_writers(rid) == {"n": (1, "agent")}
    assert store.get_state(rid, step=1) == store.get_state(rid) == {"n": 2}
    dbg.close()


def test_closing_the_debugger_records_how_its_held_runs_ended(tmp_path: Path) -> None:
    from flowdbg.adapters.stategraph import Tool

    def lookup(q: str) -> str:
        return q

    search = Tool(lookup, name="lookup")

    def node(state: dict[str, Any]) -> dict[str, Any]:
        try:
            return {"found": search(q=state["q"])}
        finally:  # the node takes a moment to unwind once its call is terminated
            time.sleep(0.3)

    g = StateGraph(name="slow_unwind")
    g.add_node("ask", node)
    g.set_entry_point("ask")
    g.add_edge("ask", END)
    db = tmp_path / "closed.db"
    dbg = flowdbg.Debugger(db=db)
    app = dbg.attach(g.compile())
    dbg.break_on_tool("lookup")
    run = dbg.start(app.invoke, {"q": "x"})
    assert dbg.wait_for_stop(T) is not None
    dbg.close()  # as a process does before it exits: the run's end is in the record
    with pytest.raises(flowdbg.Terminated):
        run.result(T)
    assert run.run_id is not None
    with open_store(db, readonly=True) as store:
        assert store.get_run(run.run_id).status == "terminated"


# -- the writer works in the program's lulls ------------------------------------------------------


class CountingStore(SQLiteStore):
    """Counts the batches the recorder writes, and the units whose program was busy then."""

    def __init__(self, path: Path, busy: Any) -> None:
        super().__init__(path)
        self.busy = busy
        self.batches = 0
        self.batches_while_busy = 0

    def write_fields(self, **batch: Any) -> None:
        self.batches += 1
        if self.busy.is_set():
            self.batches_while_busy += 1
        super().write_fields(**batch)


def _busy_program(
    recorder: Recorder, seconds: float, stop: Any, gap: float = 0.0, every: int = 20
) -> tuple[Any, list[int]]:
    """A thread that runs a small graph again and again for ``seconds`` or until ``stop`` is
    set, sleeping ``gap`` seconds after every ``every`` runs; returns it and a list that gets
    the number of runs it made."""
    dbg = flowdbg.Debugger(record=False, plugins=[recorder])
    app = dbg.attach(loop_graph(3))
    made: list[int] = []

    def work() -> None:
        runs = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not stop.is_set():
            app.invoke({"count": 0})
            runs += 1
            if gap and runs % every == 0:
                time.sleep(gap)
        made.append(runs)

    return threading.Thread(target=work), made


def _run_busy(
    tmp_path: Path, seconds: float, *, gap: float = 0.0, every: int = 20, **settings: Any
) -> tuple[CountingStore, Recorder, int]:
    """A busy program (see _busy_program) run to its end, recorded by a Recorder with
    ``settings``; the store counts what was written while it ran. Returns the store, the
    recorder and the number of runs made."""
    busy, stop = threading.Event(), threading.Event()
    store = CountingStore(tmp_path / "r.db", busy)
    recorder = Recorder(store, **settings)
    thread, made = _busy_program(recorder, seconds, stop, gap=gap, every=every)
    busy.set()
    thread.start()
    thread.join(T)
    busy.clear()
    assert made and made[0] > 0
    return store, recorder, made[0]


def _all_written(store: CountingStore, recorder: Recorder, runs: int) -> None:
    """Nothing was lost by waiting: every run is in the store once flushed."""
    assert recorder.flush(T)
    assert len(store.list_runs(limit=10**6)) == runs
    recorder.close()


def test_the_writer_waits_for_a_lull_while_the_program_keeps_making_steps(
    tmp_path: Path,
) -> None:
    # a lull is 0.2 s without a unit; the busy program makes one every few microseconds
    # (one batch per lull: what a lull writes is one write)
    store, recorder, runs = _run_busy(
        tmp_path, 0.8, quiet=0.2, max_delay=60, max_backlog=10**6, batch_size=10**7
    )
    assert runs > 50
    # the writer writes in the lull after the program (a scheduling hiccup of 0.2 s, as a
    # loaded machine may cause, gives it one more); one that wrote as units came would have
    # written every 0.05 s and at the end of every run
    assert store.batches_while_busy <= 2
    deadline = time.monotonic() + T
    while store.batches == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.batches > 0  # the lull alone, with no flush
    _all_written(store, recorder, runs)


def test_pauses_shorter_than_quiet_are_no_lull(tmp_path: Path) -> None:
    # pauses of 0.05 s, longer than the writer's longest look (0.032 s), shorter than quiet
    store, recorder, runs = _run_busy(
        tmp_path, 1.5, gap=0.05, quiet=0.3, max_delay=60, max_backlog=10**6, batch_size=10**7
    )
    assert store.batches_while_busy <= 2  # (a hiccup of 0.3 s may give it one)
    _all_written(store, recorder, runs)


def test_the_writer_waits_for_a_lull_at_most_max_delay(tmp_path: Path) -> None:
    store, recorder, runs = _run_busy(tmp_path, 1.0, quiet=5.0, max_delay=0.1, max_backlog=10**6)
    # no lull in sight (5 s), yet the writer wrote while the program ran: after max_delay
    # (how far it then trails depends on how often the program lets go of the interpreter lock)
    assert store.batches_while_busy >= 1
    _all_written(store, recorder, runs)


def test_the_writer_waits_for_a_lull_until_max_backlog_units_are_queued(tmp_path: Path) -> None:
    store, recorder, runs = _run_busy(tmp_path, 0.5, quiet=60, max_delay=60, max_backlog=200)
    assert store.batches_while_busy >= 1  # neither a lull nor max_delay came: the backlog did
    _all_written(store, recorder, runs)


def test_a_small_queue_is_written_before_it_overflows_while_the_writer_waits_for_a_lull(
    tmp_path: Path,
) -> None:
    # no lull (pauses of 1 ms), a queue far below max_backlog: the writer must not wait for a
    # lull until steps are dropped
    store, recorder, runs = _run_busy(
        tmp_path, 1.0, gap=0.001, every=1, max_queue=1000, overflow="drop"
    )
    assert recorder.dropped == 0
    _all_written(store, recorder, runs)


def test_flush_does_not_wait_for_a_lull(tmp_path: Path) -> None:
    busy, stop = threading.Event(), threading.Event()
    store = CountingStore(tmp_path / "r.db", busy)
    recorder = Recorder(store, quiet=60, max_delay=60, max_backlog=10**6)
    thread, made = _busy_program(recorder, 60, stop)
    thread.start()
    try:
        deadline = time.monotonic() + T
        while len(recorder._queue) < 100 and time.monotonic() < deadline:
            time.sleep(0.01)  # the program has queued units the writer holds back
        assert recorder._queue
        # the program is still running (it stops only once flush returned): the lull the
        # writer waits for never comes, and flush writes anyway
        assert recorder.flush(T)
        assert thread.is_alive() and store.batches >= 1 and store.list_runs()
    finally:
        stop.set()
        thread.join(T)
    _all_written(store, recorder, made[0])
