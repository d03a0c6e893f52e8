"""Rewinds at a live stop on the StateGraph, beyond the conformance suite: a run the user
started on a thread of their own, terminate right after a rewind, and the divergence report
of a rewound run."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph

T = 10.0


def linear() -> Any:
    """a (x + 1) -> b (x * 10) -> c (y = x + 1)."""
    g = StateGraph(name="linear")
    g.add_node("a", lambda s: {"x": s["x"] + 1})
    g.add_node("b", lambda s: {"x": s["x"] * 10})
    g.add_node("c", lambda s: {"y": s["x"] + 1})
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    return g.compile()


@pytest.fixture
def dbg(tmp_path: Path) -> Iterator[flowdbg.Debugger]:
    debugger = flowdbg.Debugger(db=tmp_path / "rewind.db")
    yield debugger
    debugger.close()


def test_waiting_right_after_a_rewind_sees_the_run_that_goes_on(dbg: flowdbg.Debugger) -> None:
    # the app runs the graph on a thread of its own (not dbg.start): between the rewound run's
    # end and the new run's start no run is active, which must not read as "every run ended"
    app = dbg.attach(linear())
    dbg.break_before("c")
    for _ in range(10):
        results: list[Any] = []
        worker = threading.Thread(target=lambda out=results: out.append(app.invoke({"x": 1})))
        worker.start()
        assert dbg.wait_for_stop(T) is not None
        dbg.rewind(1)
        again = dbg.wait_for_stop(T)
        assert again is not None and again.location.node == "c"
        dbg.resume()
        worker.join(T)
        assert results == [{"x": 20, "y": 21}]


def test_terminate_right_after_a_rewind_ends_the_run(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(linear())
    dbg.break_before("c")
    run = dbg.start(app.invoke, {"x": 1})
    stop = dbg.wait_for_stop(T)
    assert stop is not None
    old = stop.location.run_id
    dbg.rewind(1)
    dbg.terminate()  # before or after the new run began: it does not go on
    with pytest.raises(flowdbg.Terminated):
        run.result(T)
    assert dbg.wait_for_stop(T) is None
    assert dbg.flush(T) and dbg.store is not None
    made = dbg.store.list_forks(old)
    assert all(r.status == "terminated" for r in made)


def test_a_rewind_departs_only_where_it_was_edited(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(linear())
    dbg.break_before("c")
    store = dbg.store
    assert store is not None
    reports = []
    for edits in (None, {"x": 5}):
        run = dbg.start(app.invoke, {"x": 1})
        stop = dbg.wait_for_stop(T)
        assert stop is not None
        old = stop.location.run_id
        dbg.rewind(1, edits)
        again = dbg.wait_for_stop(T)
        assert again is not None
        dbg.resume()
        run.result(T)
        assert dbg.flush(T)
        reports.append(store.divergence(old, again.location.run_id))
    plain, edited = reports
    # the unit the rewind cut off (c, held) is not a difference; b ran again the same
    assert (plain.origin, plain.from_step, plain.edited, plain.first) == ("rewind", 1, [], None)
    assert edited.edited == ["x"]
    assert edited.first is not None and edited.first.node_b == "b"
    assert (edited.first.kind, edited.first.paths) == ("state", ["x"])
    assert (edited.old, edited.new) == (20, 50)
