"""diff_runs: per-node counts and timings, and where two runs first part ways."""

from __future__ import annotations

import json
from typing import Any

import pytest
from store_helpers import T0, run, run_id, step

from flowdbg.events import ErrorInfo
from flowdbg.records import StepRecord
from flowdbg.store import RunNotFound, SQLiteStore, StepNotFound


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


def test_a_state_difference_in_a_superstep_names_the_unit_whose_update_differs(
    store: SQLiteStore,
) -> None:
    # p1 and p2 run in one superstep and share the state after it: the divergence names p2,
    # whose update differs, not p1, which comes first
    def parallel(n: int, p2_items: list[str]) -> list[StepRecord]:
        rid = run_id(n)
        after = {"items": ["p1", *p2_items]}
        return [
            step(rid, 1, node="fan", superstep=0, state={"items": []}),
            step(rid, 2, node="p1", superstep=1, output={"items": ["p1"]}, state=after),
            step(rid, 3, node="p2", superstep=1, output={"items": p2_items}, state=after),
        ]

    a = record(store, 1, parallel(1, ["p2"]))
    b = record(store, 2, parallel(2, ["p2", "p2"]))
    div = store.diff_runs(a, b).first_divergence
    assert div is not None
    assert (div.kind, div.node_a, div.node_b, div.step_b, div.paths) == (
        "state",
        "p2",
        "p2",
        3,
        ["items[2]"],
    )
    assert div.detail == (
        "the state after superstep 1 differs at items[2]: the update of 'p2' differs"
    )


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
        "kind": "node",
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


# ------------------------------------------------------------------ volatile values, --ignore


def message(kind: str, content: str, msg_id: str) -> dict[str, Any]:
    """A LangChain message as the store keeps it."""
    return {
        "content": content,
        "additional_kwargs": {},
        "response_metadata": {},
        "type": kind,
        "name": None,
        "id": msg_id,
    }


def chat_run(store: SQLiteStore, n: int, answer: str = "hi there", **extra: Any) -> str:
    """A LangGraph-like run: one step appending an AI message (new ids on every run)."""
    uid = f"{n:08x}-1111-4111-8111-{n:012x}"
    state = {
        "messages": [
            message("human", "hello", "a" + uid[1:]),
            message("ai", answer, "b" + uid[1:]),
        ],
        **extra,
    }
    return state_run(store, n, [state])


def state_run(store: SQLiteStore, n: int, states: list[dict[str, Any]]) -> str:
    """A run of one graph ("chat") leaving these states."""
    rid = run_id(n)
    steps = [step(rid, i, node=f"node{i}", state=s) for i, s in enumerate(states, start=1)]
    store.write_batch(runs=[run(n, name="chat")], steps=steps)
    return rid


def test_message_ids_are_ignored_and_listed(store: SQLiteStore) -> None:
    a, b = chat_run(store, 1), chat_run(store, 2)
    result = store.diff_runs(a, b)
    assert result.first_divergence is None
    assert [i.to_dict() for i in result.ignored] == [
        {"path": "messages[*].id", "rule": "message id", "count": 2}
    ]
    data = result.to_dict()
    assert data["ignored"] == [{"path": "messages[*].id", "rule": "message id", "count": 2}]
    assert (data["ignore"], data["strict"], data["warnings"]) == ([], False, [])


def test_strict_compares_message_ids(store: SQLiteStore) -> None:
    a, b = chat_run(store, 1), chat_run(store, 2)
    result = store.diff_runs(a, b, strict=True)
    div = result.first_divergence
    assert div is not None and div.paths == ["messages[0].id", "messages[1].id"]
    assert result.ignored == [] and result.strict


def test_a_real_difference_is_found_beside_ignored_ids(store: SQLiteStore) -> None:
    a, b = chat_run(store, 1), chat_run(store, 2, answer="bye")
    div = store.diff_runs(a, b).first_divergence
    assert div is not None and div.kind == "state"
    assert div.paths == ["messages[1].content"]


@pytest.mark.parametrize(
    ("key", "value_a", "value_b", "rule"),
    [
        ("run_id", "1f0c7a52-9d3e-4b7a-8c1e-2a3b4c5d6e7f", "2a0c7a52-9d3e-4b7a-8c1e-2a3b4c5d6e7f",
         "generated id"),
        ("id", "run-1f0c7a52-9d3e-4b7a-8c1e-2a3b4c5d6e7f-0",
         "lc_run--9f0c7a52-9d3e-4b7a-8c1e-2a3b4c5d6e70", "generated id"),
        ("tool_call_id", "call_Ab3dE5fG7hI9", "call_Zz9yX8wV7uT6", "generated id"),
        ("id", "fc_68ccd2bf17f0819081ff3bb2", "fc_68ccd2c04a2c8190a1f2e9d1", "generated id"),
        ("id", "rs_68ccd2bf17f0819081ff3bb2", "rs_68ccd2c04a2c8190a1f2e9d1", "generated id"),
        ("traceId", "0af7651916cd43dd8448eb211c80319c", "1bf7651916cd43dd8448eb211c80319c",
         "generated id"),
        ("created_at", "2024-05-01T10:00:00Z", "2024-05-02T11:30:00.123+02:00", "timestamp"),
        ("timestamp", 1_714_557_600.5, 1_714_557_609.25, "timestamp"),
        ("sent_ts", 1_714_557_600_123, 1_714_557_600_999, "timestamp"),
    ],
)  # fmt: skip
def test_volatile_values_are_ignored(
    store: SQLiteStore, key: str, value_a: Any, value_b: Any, rule: str
) -> None:
    a = state_run(store, 1, [{"meta": {key: value_a}, "x": 1}])
    b = state_run(store, 2, [{"meta": {key: value_b}, "x": 1}])
    result = store.diff_runs(a, b)
    assert result.first_divergence is None
    assert [(i.path, i.rule, i.count) for i in result.ignored] == [(f"meta.{key}", rule, 1)]


@pytest.mark.parametrize(
    ("key", "value_a", "value_b"),
    [
        ("user_id", "user-1", "user-2"),  # ids a person chose: a real difference
        ("id", 41, 42),
        ("run_id", "1f0c7a52-9d3e-4b7a-8c1e-2a3b4c5d6e7f", "none"),
        ("created_at", "2024-05-01T10:00:00Z", "yesterday"),
        ("timestamp", 3, 4),  # not a time since 1970
        ("label", "1f0c7a52-9d3e-4b7a-8c1e-2a3b4c5d6e7f", "2a0c7a52-9d3e-4b7a-8c1e-2a3b4c5d6e7f"),
    ],
)
def test_values_that_are_not_volatile_on_both_sides_are_compared(
    store: SQLiteStore, key: str, value_a: Any, value_b: Any
) -> None:
    a = state_run(store, 1, [{"meta": {key: value_a}}])
    b = state_run(store, 2, [{"meta": {key: value_b}}])
    result = store.diff_runs(a, b)
    assert result.first_divergence is not None
    assert result.first_divergence.paths == [f"meta.{key}"]
    assert result.ignored == []


def test_ignore_globs_leave_out_paths_and_what_is_below(store: SQLiteStore) -> None:
    a = state_run(
        store, 1, [{"usage": {"tokens": 10}, "notes": [{"score": 1}, {"score": 2}], "x": 1}]
    )
    b = state_run(
        store, 2, [{"usage": {"tokens": 12}, "notes": [{"score": 3}, {"score": 2}], "x": 1}]
    )
    assert store.diff_runs(a, b).first_divergence is not None
    result = store.diff_runs(a, b, ignore=["usage", "notes[*].score"])
    assert result.first_divergence is None
    assert [(i.path, i.rule, i.count) for i in result.ignored] == [
        ("usage", "usage", 1),
        ("notes[*].score", "notes[*].score", 1),
    ]
    assert result.ignore == ["usage", "notes[*].score"]
    # one index only, any depth, one key's characters
    assert store.diff_runs(a, b, ignore=["notes[1].score", "usage"]).first_divergence is not None
    assert store.diff_runs(a, b, ignore=["**.score", "us*"]).first_divergence is None
    assert store.diff_runs(a, b, ignore=["**.tokens", "*.score"]).first_divergence is not None


def test_strict_keeps_the_ignore_globs(store: SQLiteStore) -> None:
    a, b = chat_run(store, 1), chat_run(store, 2)
    result = store.diff_runs(a, b, ignore=["messages[*].id"], strict=True)
    assert result.first_divergence is None
    assert [(i.path, i.rule) for i in result.ignored] == [("messages[*].id", "messages[*].id")]


def test_an_empty_glob_is_refused(store: SQLiteStore) -> None:
    a = chat_run(store, 1)
    with pytest.raises(ValueError, match="ignore pattern must not be empty"):
        store.diff_runs(a, a, ignore=[" "])


def test_outputs_are_matched_with_their_output_prefix(store: SQLiteStore) -> None:
    rid_a, rid_b = run_id(1), run_id(2)
    tool = {"node": "search", "kind": "tool"}
    store.write_batch(
        runs=[run(1), run(2)],
        steps=[
            step(rid_a, 1, **tool, output={"hits": ["x"], "took": 0.1}),
            step(rid_b, 1, **tool, output={"hits": ["x"], "took": 0.3}),
        ],
    )
    assert store.diff_runs(rid_a, rid_b).first_divergence is not None
    result = store.diff_runs(rid_a, rid_b, ignore=["output.took"])
    assert result.first_divergence is None
    assert [i.path for i in result.ignored] == ["output.took"]


def test_runs_of_different_graphs_come_with_a_warning(store: SQLiteStore) -> None:
    a = record(store, 1, graph_run(1, ["plan"]))
    b = record(store, 2, graph_run(2, ["plan"]))  # run(2) is named graph2
    store.write_batch(runs=[run(3, name="graph1")], steps=graph_run(3, ["plan"]))
    result = store.diff_runs(a, b)
    assert result.warnings == [
        "run a is of 'graph1' (stategraph) and run b of 'graph2' (stategraph): they are runs of "
        "different graphs, compared step by step all the same"
    ]
    assert result.to_dict()["warnings"] == result.warnings
    assert store.diff_runs(a, run_id(3)).warnings == []
    store.write_batch(runs=[run(4, name="graph1", framework="langgraph")])
    assert "(langgraph)" in store.diff_runs(a, run_id(4)).warnings[0]


# ------------------------------------------------------------------ steps of one run, or two


def test_two_steps_of_one_run(store: SQLiteStore) -> None:
    a = record(store, 1, graph_run(1, ["plan", "search", "answer"]))
    result = store.diff_steps(a[:6], 1, 3)
    assert (result.a.run_id, result.b.run_id) == (a, a)
    assert (result.step_a, result.step_b, result.node_a, result.node_b) == (1, 3, "plan", "answer")
    assert [(c.path, c.kind, c.old, c.new) for c in result.changes] == [
        ("answer", "added", None, "answer says hi"),
        ("notes[1]", "added", None, "search says hi"),
        ("notes[2]", "added", None, "answer says hi"),
        ("search", "added", None, "search says hi"),
    ]
    assert result.warnings == []
    assert store.diff_steps(a, 2, 2).changes == []
    data = result.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["changes"][0] == {
        "path": "answer",
        "kind": "added",
        "old": None,
        "new": "answer says hi",
    }


def test_steps_of_two_runs_ignore_volatile_values_and_show_stored_values(
    store: SQLiteStore,
) -> None:
    a = chat_run(store, 1, answer="yes")
    b = chat_run(store, 2, answer="no")
    result = store.diff_steps(a, 1, 1, b=b)
    assert [(c.path, c.kind, c.old, c.new) for c in result.changes] == [
        ("messages[1].content", "changed", "yes", "no")
    ]
    assert [(i.path, i.count) for i in result.ignored] == [("messages[*].id", 2)]
    strict = store.diff_steps(a, 1, 1, b=b, strict=True)
    ids = [c for c in strict.changes if c.path.endswith(".id")]
    assert [c.old[:8] for c in ids] == ["a0000001", "b0000001"]


def test_a_step_outside_the_run_is_refused(store: SQLiteStore) -> None:
    a = record(store, 1, graph_run(1, ["plan", "search"]))
    with pytest.raises(StepNotFound, match="step 9 is out of range"):
        store.diff_steps(a, 1, 9)


# units (name, start, end, output) of a LlamaIndex-like run: no supersteps, a step with three
# workers whose results a 'gather' step collects; in run b the workers ran in another order
WORKERS_A = [
    ("plan", 0.0, 1.0, {"items": 3}),
    ("square", 1.1, 3.0, {"sq": 1}),
    ("square", 1.2, 2.0, {"sq": 4}),
    ("gather", 2.05, 2.1, None),
    ("square", 2.15, 4.0, {"sq": 9}),  # started as the second worker ended
    ("gather", 3.05, 3.1, None),
    ("gather", 4.05, 4.1, {"total": 14}),
    ("report", 4.2, 4.3, "14"),
]
WORKERS_B = [
    ("plan", 0.0, 1.0, {"items": 3}),
    ("square", 1.1, 1.5, {"sq": 4}),
    ("square", 1.2, 3.0, {"sq": 1}),
    ("square", 1.6, 4.0, {"sq": 9}),
    ("gather", 1.65, 1.7, None),
    ("gather", 3.05, 3.1, None),
    ("gather", 4.05, 4.1, {"total": 14}),
    ("report", 4.2, 4.3, "14"),
]


def worker_run(store: SQLiteStore, n: int, units: list[tuple[str, float, float, Any]]) -> str:
    rid = run_id(n)
    steps = [
        step(rid, i, node=node, output=output, started_at=T0 + start, ended_at=T0 + end)
        for i, (node, start, end, output) in enumerate(units, 1)
    ]
    return record(store, n, steps)


def test_concurrent_workers_that_ran_in_another_order_do_not_diverge(
    store: SQLiteStore,
) -> None:
    a, b = worker_run(store, 1, WORKERS_A), worker_run(store, 2, WORKERS_B)
    assert store.diff_runs(a, b).first_divergence is None
    assert store.divergence(a, b).first is None


def test_concurrent_workers_still_diverge_where_they_did_otherwise(store: SQLiteStore) -> None:
    a = worker_run(store, 1, WORKERS_A)
    other = [*WORKERS_B]
    other[2] = ("square", 1.2, 3.0, {"sq": 100})  # a worker returned something else
    div = store.diff_runs(a, worker_run(store, 2, other)).first_divergence
    assert div is not None and (div.kind, div.node_a, div.node_b) == ("state", "square", "square")
    assert div.paths == ["output.sq"]
    fewer = [unit for i, unit in enumerate(WORKERS_B) if i != 5]  # a gather did not run
    div = store.diff_runs(a, worker_run(store, 3, fewer)).first_divergence
    assert div is not None and div.kind == "path"
    assert div.detail == (
        "'gather' ran 3 times in run a and 2 in run b (among units that ran concurrently)"
    )
    # the steps named are that unit's, in each run (not two different units side by side)
    assert (div.node_a, div.node_b) == ("gather", "gather")
    steps_a = {s.step: s.node for s in store.get_steps(a)}
    steps_b = {s.step: s.node for s in store.get_steps(run_id(3))}
    assert div.step_a is not None and steps_a[div.step_a] == "gather"
    assert div.step_b is not None and steps_b[div.step_b] == "gather"


def test_sequential_units_in_another_order_still_diverge(store: SQLiteStore) -> None:
    # the same units, but none ran while another did: their order is the run's path
    def sequential(units: list[tuple[str, float, float, Any]]) -> list[Any]:
        return [(node, i, i + 0.5, out) for i, (node, _, _, out) in enumerate(units)]

    a = worker_run(store, 1, sequential(WORKERS_A))
    div = store.diff_runs(a, worker_run(store, 2, sequential(WORKERS_B))).first_divergence
    # the second unit: a square that returned 1 in run a and 4 in run b
    assert div is not None and (div.kind, div.step_a, div.paths) == ("state", 2, ["output.sq"])
