"""Finding runs, steps and states: ids and prefixes, filters, states at any step."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest
from store_helpers import HOST, T0, counting_steps, run, run_id, step

from flowdbg.errors import FlowdbgError
from flowdbg.records import RunRecord
from flowdbg.store import RunNotFound, SQLiteStore, StepNotFound

# -- ids and prefixes -----------------------------------------------------------------------


def _ids_store(store: SQLiteStore) -> None:
    store.write_batch(
        runs=[
            run(1, run_id="abc12345" + "0" * 24),
            run(2, run_id="abc12399" + "0" * 24),
            run(3, run_id="ffee0011" + "0" * 24),
        ]
    )


def test_a_run_is_found_by_its_id_or_a_unique_prefix(store: SQLiteStore) -> None:
    _ids_store(store)
    full = "ffee0011" + "0" * 24
    assert store.get_run(full).run_id == full
    assert store.get_run("ffee").run_id == full
    assert store.get_run("FFEE00").run_id == full  # ids are lower case; prefixes may not be
    assert store.get_run("abc1234").run_id != store.get_run("abc1239").run_id


def test_an_unknown_id_says_where_it_looked_and_how_to_list_runs(store: SQLiteStore) -> None:
    _ids_store(store)
    with pytest.raises(RunNotFound) as info:
        store.get_run("deadbeef")
    assert str(info.value) == (
        f"no run 'deadbeef' in {store.path}; list runs with: flowdbg runs ls"
    )
    assert isinstance(info.value, LookupError) and isinstance(info.value, FlowdbgError)
    with pytest.raises(RunNotFound, match="give at least 4 characters"):
        store.get_run("ffe")
    with pytest.raises(RunNotFound, match="no run ''"):
        store.get_run("")


def test_an_ambiguous_prefix_names_the_runs_it_matches(store: SQLiteStore) -> None:
    _ids_store(store)
    with pytest.raises(RunNotFound) as info:
        store.get_run("abc1")
    message = str(info.value)
    assert "ambiguous" in message and "give more characters" in message
    assert "'abc12345" in message and "'abc12399" in message and "ffee" not in message


def test_every_query_takes_a_prefix(store: SQLiteStore) -> None:
    rid = run_id(7)
    store.write_batch(runs=[run(7)], steps=counting_steps(rid, 3))
    prefix = rid[:6]
    assert len(store.get_steps(prefix)) == 3
    assert store.get_state(prefix, 2) == {"count": 2}
    assert store.last_writers(prefix) == {"count": (3, "inc")}
    with pytest.raises(RunNotFound):
        store.get_steps("0000ffff")
    with pytest.raises(RunNotFound):
        store.get_state("0000ffff")


# -- list_runs ------------------------------------------------------------------------------


@pytest.fixture
def many(store: SQLiteStore) -> SQLiteStore:
    """Six top-level runs (newest last) and two children of run 1."""
    statuses = ["completed", "failed", "completed", "terminated", "failed", "running"]
    runs = [
        run(n, name=name, status=status, started_at=T0 + 100 * n)
        for n, (name, status) in enumerate(
            zip(["chat", "chat-v2", "rag", "chat", "rag-eval", "chat"], statuses, strict=True),
            start=1,
        )
    ]
    children = [
        run(10 + n, parent_run_id=run_id(1), root_run_id=run_id(1), started_at=T0 + 150 + n)
        for n in range(2)
    ]
    store.write_batch(runs=runs + children)
    return store


def _numbers(runs: list[RunRecord]) -> list[int]:
    return [int(r.run_id[:4], 16) for r in runs]


def test_runs_are_listed_newest_first_and_top_level_by_default(many: SQLiteStore) -> None:
    assert _numbers(many.list_runs()) == [6, 5, 4, 3, 2, 1]
    assert _numbers(many.list_runs(limit=2)) == [6, 5]
    assert many.list_runs(limit=0) == []
    assert len(many.list_runs(limit=None)) == 6


def test_runs_are_filtered_by_parent(many: SQLiteStore) -> None:
    assert _numbers(many.list_runs(parent=run_id(1))) == [11, 10]
    assert _numbers(many.list_runs(parent="*")) == [6, 5, 4, 3, 2, 11, 10, 1]
    assert many.list_runs(parent=run_id(2)) == []


def test_runs_are_filtered_by_status_name_and_time(many: SQLiteStore) -> None:
    assert _numbers(many.list_runs(status="failed")) == [5, 2]
    assert _numbers(many.list_runs(status=["failed", "terminated"])) == [5, 4, 2]
    assert _numbers(many.list_runs(name="chat")) == [6, 4, 1]
    assert _numbers(many.list_runs(name="chat*")) == [6, 4, 2, 1]
    assert _numbers(many.list_runs(name="rag?eval")) == [5]
    assert _numbers(many.list_runs(since=T0 + 300, until=T0 + 500)) == [5, 4, 3]
    assert _numbers(many.list_runs(status="completed", since=T0 + 200)) == [3]
    assert many.list_runs(status="no-such-status") == []


def test_a_run_whose_recording_process_died_is_interrupted(store: SQLiteStore) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    dead_pid = int(dead.stdout)
    store.write_batch(
        runs=[
            run(1, pid=dead_pid, host=HOST, started_at=T0 + 1),  # gone
            run(2, started_at=T0 + 2),  # this process: alive
            run(3, pid=dead_pid, host="another-host", started_at=T0 + 3),  # cannot tell
            run(4, pid=dead_pid, status="completed", started_at=T0 + 4),
        ]
    )
    assert store.get_run(run_id(1)).status == "interrupted"
    assert [r.status for r in store.list_runs()] == [
        "completed",
        "running",
        "running",
        "interrupted",
    ]
    assert _numbers(store.list_runs(status="interrupted")) == [1]
    assert _numbers(store.list_runs(status="running")) == [3, 2]
    assert _numbers(store.list_runs(status=["running", "interrupted"])) == [3, 2, 1]
    assert _numbers(store.list_runs(status="interrupted", limit=1)) == [1]


# -- get_steps ------------------------------------------------------------------------------


@pytest.fixture
def agent(store: SQLiteStore) -> str:
    """A run of 10 steps: model calls, tool calls and a failure."""
    rid = run_id(1)
    steps = []
    for n in range(1, 11):
        kind = "llm" if n % 2 else "tool"
        steps.append(
            step(
                rid,
                n,
                node="model" if kind == "llm" else "search",
                kind=kind,
                status="failed" if n == 6 else "completed",
                input={"n": n},
                output={"n": n * 10},
                state={"n": n} if kind == "llm" else None,
            )
        )
    store.write_batch(runs=[run(1)], steps=steps)
    return rid


def _steps(store: SQLiteStore, rid: str, **filters: Any) -> list[int]:
    return [s.step for s in store.get_steps(rid, **filters)]


def test_steps_are_filtered(store: SQLiteStore, agent: str) -> None:
    assert _steps(store, agent) == list(range(1, 11))
    assert _steps(store, agent, node="search") == [2, 4, 6, 8, 10]
    assert _steps(store, agent, kind="llm") == [1, 3, 5, 7, 9]
    assert _steps(store, agent, status="failed") == [6]
    assert _steps(store, agent, from_step=4, to_step=7) == [4, 5, 6, 7]
    assert _steps(store, agent, node="search", from_step=5) == [6, 8, 10]
    assert _steps(store, agent, node="nothing") == []


def test_steps_without_values_are_listed_without_them(store: SQLiteStore, agent: str) -> None:
    light = store.get_steps(agent, values=False)
    full = store.get_steps(agent)
    assert all(s.input is None and s.output is None and s.state is None for s in light)
    assert [s.output for s in full] == [{"n": n * 10} for n in range(1, 11)]
    assert [(s.node, s.status, s.duration) for s in light] == [
        (s.node, s.status, s.duration) for s in full
    ]


# -- get_state ------------------------------------------------------------------------------


def test_the_state_after_a_step_is_the_latest_recorded_by_then(
    store: SQLiteStore, agent: str
) -> None:
    assert store.get_state(agent, 1) == {"n": 1}
    assert store.get_state(agent, 4) == {"n": 3}  # step 4 (a tool) recorded no state
    assert store.get_state(agent, 9) == {"n": 9}
    assert store.get_state(agent, 10) == {"n": 9}
    assert store.get_state(agent) == {"n": 9}


def test_a_step_out_of_range_is_refused_with_the_range(store: SQLiteStore, agent: str) -> None:
    short = agent[:8]
    for bad in (0, 11, 40, -1):
        with pytest.raises(StepNotFound) as info:
            store.get_state(agent, bad)
        assert str(info.value) == f"run '{short}' has steps 1..10; step {bad} is out of range"
        assert isinstance(info.value, LookupError)
    with pytest.raises(StepNotFound):
        store.last_writers(agent, 11)


def test_a_run_without_steps_or_states(store: SQLiteStore) -> None:
    store.write_batch(runs=[run(1), run(2)], steps=[step(run_id(2), 1, output={"x": 1})])
    assert store.get_state(run_id(1)) is None
    with pytest.raises(StepNotFound, match=re.escape("has no steps; step 1 is out of range")):
        store.get_state(run_id(1), 1)
    assert store.get_state(run_id(2), 1) is None
    assert store.last_writers(run_id(2)) == {}


def test_states_at_many_steps_of_a_long_run(store: SQLiteStore) -> None:
    rid = run_id(1)
    store.write_batch(runs=[run(1)])
    for first in range(1, 3001, 500):
        store.write_batch(steps=counting_steps(rid, 500, first=first))
    for n in (1, 2, 499, 500, 501, 1777, 2999, 3000):
        assert store.get_state(rid, n) == {"count": n}
    assert store.get_run(rid).step_count == 3000


# -- last_writers ---------------------------------------------------------------------------


def test_last_writers_name_the_step_that_last_changed_each_key(store: SQLiteStore) -> None:
    rid = run_id(1)
    big = [f"item {i} " * 10 for i in range(40)]
    states = [
        {"q": "why", "plan": None, "docs": []},  # 1 plan: wrote nothing
        {"q": "why", "plan": "search", "docs": []},  # 2 think: plan
        {"q": "why", "plan": "search", "docs": big},  # 3 search: docs
        {"q": "why", "plan": "answer", "docs": big, "draft": "d"},  # 4 write: plan, draft
        {"q": "why", "plan": "answer", "docs": big, "draft": "d"},  # 5 check: nothing
    ]
    nodes = ["plan", "think", "search", "write", "check"]
    store.write_batch(
        runs=[run(1, input={"q": "why", "plan": None, "docs": []})],
        steps=[step(rid, n, node=nodes[n - 1], state=s) for n, s in enumerate(states, start=1)],
    )
    assert store.last_writers(rid) == {
        "plan": (4, "write"),
        "docs": (3, "search"),
        "draft": (4, "write"),
    }
    assert store.last_writers(rid, 3) == {"plan": (2, "think"), "docs": (3, "search")}
    assert store.last_writers(rid, 1) == {}


def test_a_key_removed_and_added_again_is_written_by_the_adder(store: SQLiteStore) -> None:
    rid = run_id(1)
    states = [{"a": 1, "tmp": 1}, {"a": 1}, {"a": 1, "tmp": 1}]
    store.write_batch(runs=[run(1)], steps=[step(rid, n, state=s) for n, s in enumerate(states, 1)])
    assert store.last_writers(rid) == {"a": (1, "node1"), "tmp": (3, "node3")}
