"""How many finished runs a debugger keeps in memory (``Debugger(keep_runs=...)``)."""

from __future__ import annotations

import gc
import os
import tempfile
import weakref
from typing import Any

import pytest

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph


class Payload:
    """A value only the run holds: whether it outlives the run shows what is kept."""

    def __init__(self, n: int) -> None:
        self.n = n


def graph(made: list[weakref.ref[Payload]]) -> Any:
    def a(s: dict[str, Any]) -> dict[str, Any]:
        payload = Payload(s["x"])
        made.append(weakref.ref(payload))
        return {"x": s["x"] + 1, "payload": payload}

    def b(s: dict[str, Any]) -> dict[str, Any]:
        return {"y": s["payload"].n * 10, "payload": None}

    g = StateGraph(name="keep")
    g.add_node("a", a)
    g.add_node("b", b)
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile()


def test_by_default_the_last_20_runs_are_kept() -> None:
    dbg = flowdbg.Debugger(record=False)
    try:
        app = dbg.attach(graph([]))
        for x in range(25):
            app.invoke({"x": x})
        assert [log.run.input["x"] for log in dbg.runs] == list(range(5, 25))
    finally:
        dbg.close()


def test_keep_runs_1_keeps_only_the_last_run_and_lets_the_others_values_go() -> None:
    made: list[weakref.ref[Payload]] = []
    dbg = flowdbg.Debugger(record=False, keep_runs=1)
    try:
        app = dbg.attach(graph(made))
        for x in range(3):
            app.invoke({"x": x})
        (log,) = dbg.runs
        assert log.run.input == {"x": 2}
        assert [s.node for s in log.steps] == ["a", "b"]
        gc.collect()
        assert [ref() is None for ref in made] == [True, True, False]  # the last run's only
    finally:
        dbg.close()


def test_keep_runs_0_keeps_none_and_the_record_still_has_every_run() -> None:
    made: list[weakref.ref[Payload]] = []
    with tempfile.TemporaryDirectory() as tmp:
        dbg = flowdbg.Debugger(db=os.path.join(tmp, "flowdbg.db"), keep_runs=0)
        try:
            app = dbg.attach(graph(made))
            run = dbg.start(app.invoke, {"x": 1})
            assert run.result(10) == {"x": 2, "y": 10, "payload": None}
            assert dbg.runs == []
            with pytest.raises(LookupError, match="recorded runs are in the store"):
                run.log  # noqa: B018 - the property raises
            assert dbg.flush(10)  # the recorder holds a unit's values until it wrote them
            gc.collect()
            assert made[0]() is None
            store = dbg.store
            assert store is not None
            (recorded,) = store.list_runs()
            assert [s.node for s in store.get_steps(recorded.run_id)] == ["a", "b"]
        finally:
            dbg.close()


@pytest.mark.parametrize("bad", [-1, True, 2.5, "20"])
def test_a_keep_runs_that_is_no_count_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="keep_runs must be an int of 0 or more"):
        flowdbg.Debugger(record=False, keep_runs=bad)


@pytest.mark.parametrize(
    ("keep", "kept"),
    [(0, "keeps no finished run"), (1, "keeps only the last finished run")],
)
def test_the_log_of_a_run_neither_kept_nor_recorded_says_how_to_keep_it(
    keep: int, kept: str
) -> None:
    dbg = flowdbg.Debugger(record=False, keep_runs=keep)
    try:
        app = dbg.attach(graph([]))
        first = dbg.start(app.invoke, {"x": 1})
        first.result(10)
        dbg.start(app.invoke, {"x": 2}).result(10)
        with pytest.raises(LookupError) as caught:
            first.log  # noqa: B018 - the property raises
    finally:
        dbg.close()
    message = str(caught.value)
    assert "in the store" not in message  # there is no store: nothing was recorded
    assert message == (
        f"this debugger has no run {first.run_id!r} in memory: it {kept} (keep_runs={keep}) "
        "and records none (no store); keep more with Debugger(keep_runs=N) or record runs "
        "(record=True, then flowdbg runs show ID)"
    )
