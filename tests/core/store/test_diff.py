"""diff_runs: per-node counts and timings, and where two runs first part ways."""

from __future__ import annotations

import json
from typing import Any

import pytest
from store_helpers import T0, run, run_id, step

from flowdbg.events import ErrorInfo
from flowdbg.records import StepRecord
from flowdbg.store import RunNotFound, SQLiteStore


def graph_run(
    n: int, nodes: list[str], *, outputs: dict[int, Any] | None = None, durations: float = 0.5
) -> list[StepRecord]:
    """Steps of a run through ``nodes``: each node adds its output to a growing state."""
    rid = run_id(n)
    state: dict[str, Any] = {"question": "q", "notes": []}
    steps = []
    for index, node in enumerate(nodes, start=1):
        output = (outputs or {}).get(index, f"{node} says hi")
        state = {**state, "notes": [*state["notes"], output], node: output}
        steps.append(
            step(
                rid,
                index,
                node=node,
                input={"at": index},
                output={node: output},
                state=state,
                started_at=T0 + index,
                ended_at=T0 + index + durations,
            )
        )
    return steps


def record(store: SQLiteStore, n: int, steps: list[StepRecord]) -> str:
    store.write_batch(runs=[run(n)], steps=steps)
    return run_id(n)


def test_identical_runs_do_not_diverge(store: SQLiteStore) -> None:
    a = record(store, 1, graph_run(1, ["plan", "search", "answer"]))
    b = record(store, 2, graph_run(2, ["plan", "search", "answer"]))
    result = store.diff_runs(a, b)
    assert result.first_divergence is None
    assert [(d.node, d.count_a, d.count_b) for d in result.nodes] == [
        ("plan", 1, 1),
        ("search", 1, 1),
        ("answer", 1, 1),
    ]
    assert (result.a.run_id, result.b.run_id) == (a, b)


def test_a_changed_node_output_diverges_at_that_step_with_the_state_paths(
    store: SQLiteStore,
) -> None:
    nodes = ["plan", "search", "answer", "check"]
    a = record(store, 1, graph_run(1, nodes))
    b = record(store, 2, graph_run(2, nodes, outputs={3: "a different answer"}))
    div = store.diff_runs(a[:6], b[:6]).first_divergence
    assert div is not None
    assert (div.kind, div.step_a, div.step_b, div.node_a, div.node_b) == (
        "state",
        3,
        3,
        "answer",
        "answer",
    )
    assert div.paths == ["answer", "notes[2]"]
    assert div.detail == "the state after 'answer' differs at answer, notes[2]"


def test_a_different_path_diverges_with_kind_path(store: SQLiteStore) -> None:
    a = record(store, 1, graph_run(1, ["plan", "search", "answer"]))
    b = record(store, 2, graph_run(2, ["plan", "answer"]))
    div = store.diff_runs(a, b).first_divergence
    assert div is not None
    assert (div.kind, div.step_a, div.step_b, div.node_a, div.node_b) == (
        "path",
        2,
        2,
        "search",
        "answer",
    )
    assert "'search'" in div.detail and "'answer'" in div.detail


def test_a_run_that_stops_early_diverges_where_it_stopped(store: SQLiteStore) -> None:
    a = record(store, 1, graph_run(1, ["plan", "search"]))
    b = record(store, 2, graph_run(2, ["plan", "search", "answer"]))
    div = store.diff_runs(a, b).first_divergence
    assert div is not None
    assert (div.kind, div.step_a, div.step_b, div.node_b) == ("path", None, 3, "answer")
    assert div.detail == "run a ended after 2 steps; run b went on with 'answer' (step 3)"


def test_a_step_that_failed_in_one_run_diverges_with_kind_status(store: SQLiteStore) -> None:
    a = record(store, 1, graph_run(1, ["plan", "search"]))
    failing = graph_run(2, ["plan", "search"])
    failing[1].status = "failed"
    failing[1].error = ErrorInfo(type="TimeoutError", message="search timed out", traceback="")
    b = record(store, 2, failing)
    result = store.diff_runs(a, b)
    div = result.first_divergence
    assert div is not None and div.kind == "status" and div.step_a == 2
    assert "completed in run a and failed in run b" in div.detail
    assert "TimeoutError: search timed out" in div.detail
    search = next(d for d in result.nodes if d.node == "search")
    assert search.statuses_a == {"completed": 1} and search.statuses_b == {"failed": 1}
    assert search.status_changed


def test_a_step_that_failed_differently_diverges_with_kind_status(store: SQLiteStore) -> None:
    runs = []
    for n, error in ((1, ValueError("x=2")), (2, KeyError("y"))):
        steps = graph_run(n, ["plan", "call"])
        steps[1].status = "failed"
        steps[1].error = ErrorInfo.from_exception(error)
        runs.append(record(store, n, steps))
    div = store.diff_runs(*runs).first_divergence
    assert div is not None and (div.kind, div.step_a) == ("status", 2)
    assert div.detail == (
        "'call' failed differently: ValueError: x=2 in run a, KeyError: 'y' in run b"
    )


def test_steps_without_state_are_compared_by_output(store: SQLiteStore) -> None:
    rid_a, rid_b = run_id(1), run_id(2)
    tool = {"node": "search", "kind": "tool"}
    store.write_batch(
        runs=[run(1), run(2)],
        steps=[
            step(rid_a, 1, **tool, output={"hits": ["x", "y"]}),
            step(rid_b, 1, **tool, output={"hits": ["x", "z"]}),
        ],
    )
    div = store.diff_runs(rid_a, rid_b).first_divergence
    assert div is not None and div.kind == "state"
    assert div.paths == ["output.hits[1]"]
    assert div.detail.startswith("the output of 'search' differs")


def test_concurrent_units_in_a_different_order_are_not_a_divergence(store: SQLiteStore) -> None:
    def parallel(n: int, order: list[str]) -> list[StepRecord]:
        rid = run_id(n)
        return [
            step(rid, 1, node="fan_out", superstep=0, state={"x": 0}),
            *(
                step(rid, 2 + i, node=node, superstep=1, output={node: 1})
                for i, node in enumerate(order)
            ),
            step(rid, 5, node="join", superstep=2, state={"x": 3}),
        ]

    a = record(store, 1, parallel(1, ["left", "middle", "right"]))
    b = record(store, 2, parallel(2, ["right", "left", "middle"]))
    assert store.diff_runs(a, b).first_divergence is None


def test_per_node_counts_and_total_times(store: SQLiteStore) -> None:
    a = record(store, 1, graph_run(1, ["plan", "act", "act", "answer"], durations=0.5))
    b = record(store, 2, graph_run(2, ["plan", "act", "act", "act", "answer"], durations=2.0))
    nodes = {d.node: d for d in store.diff_runs(a, b).nodes}
    assert list(nodes) == ["plan", "act", "answer"]
    act = nodes["act"]
    assert (act.count_a, act.count_b) == (2, 3)
    assert act.total_a == pytest.approx(1.0) and act.total_b == pytest.approx(6.0)
    assert not act.status_changed


def test_the_diff_as_a_dict_is_json(store: SQLiteStore) -> None:
    a = record(store, 1, graph_run(1, ["plan", "answer"]))
    b = record(store, 2, graph_run(2, ["plan", "answer"], outputs={2: "other"}))
    data = store.diff_runs(a, b).to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["a"]["run_id"] == a and data["b"]["step_count"] == 2
    assert data["first_divergence"]["kind"] == "state"
    assert data["first_divergence"]["paths"] == ["answer", "notes[1]"]
    assert data["nodes"][0] == {
        "node": "plan",
        "count_a": 1,
        "count_b": 1,
        "total_a": 0.5,
        "total_b": 0.5,
        "statuses_a": {"completed": 1},
        "statuses_b": {"completed": 1},
        "status_changed": False,
    }


def test_unknown_runs_are_refused(store: SQLiteStore) -> None:
    a = record(store, 1, graph_run(1, ["plan"]))
    with pytest.raises(RunNotFound):
        store.diff_runs(a, "ffffffff")
