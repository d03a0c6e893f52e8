"""Tests for flowdbg.runlog: the run log's tables, summary, stats, dicts and thread safety."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from flowdbg.events import ErrorInfo
from flowdbg.records import RunRecord, StepRecord
from flowdbg.runlog import NodeStats, RunLog, format_duration

T = 10.0
RUN = "a" * 32
CHILD = "3f2a91c0" + "b" * 24
ELLIPSIS = "\u2026"


def run_record(
    status: str = "completed",
    *,
    name: str = "support",
    run_id: str = RUN,
    ended_at: float | None = 101.2,
    error: ErrorInfo | None = None,
    **fields: Any,
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        framework="stategraph",
        name=name,
        status=status,
        started_at=100.0,
        ended_at=None if status == "running" else ended_at,
        error=error,
        **fields,
    )


def step(
    index: int, node: str, seconds: float = 0.001, *, start: float = 100.0, **fields: Any
) -> StepRecord:
    fields.setdefault("run_id", RUN)
    return StepRecord(step=index, node=node, started_at=start, ended_at=start + seconds, **fields)


def column(text: str, name: str, following: str) -> list[str]:
    """The cells of the column ``name`` of a table (its rows, after the summary and header)."""
    lines = text.splitlines()
    start, end = lines[2].index(name), lines[2].index(following)
    return [line[start:end].rstrip() for line in lines[3:]]


def boom(message: str = "boom at x=2") -> ErrorInfo:
    return ErrorInfo(type="ValueError", message=message, traceback="Traceback ...")


def three_nodes(status: str = "completed") -> RunLog:
    steps = [
        step(1, "classify", 0.82, decision=["refund"]),
        step(2, "refund", 0.012, decision="post"),
        step(3, "boom", 0.001, status="failed", error=boom()),
    ]
    error = boom() if status == "failed" else None
    return RunLog.from_records(run_record(status, error=error), steps)


def child_log(status: str = "completed") -> RunLog:
    run = run_record(
        status,
        name="inner",
        run_id=CHILD,
        parent_run_id=RUN,
        root_run_id=RUN,
        parent_step=2,
        path=("sub",),
    )
    steps = [
        step(1, "retrieve", 0.005, run_id=CHILD, path=("sub",), decision=["generate"]),
        step(2, "generate", 0.006, run_id=CHILD, path=("sub",)),
    ]
    return RunLog.from_records(run, steps)


def nested_log() -> RunLog:
    steps = [
        step(1, "classify", 0.82, decision=["sub"]),
        step(2, "sub", 0.012, decision="post", child_run_id=CHILD),
        step(3, "post", 0.002),
    ]
    return RunLog.from_records(run_record(), steps, [child_log()])


# --------------------------------------------------------------------------------------------
# format_duration
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "-"),
        (0.0, "0µs"),
        (0.00085, "850µs"),
        (0.0009994, "999µs"),
        (0.0009996, "1ms"),
        (0.12, "120ms"),
        (0.9996, "1.0s"),
        (2.4, "2.4s"),
        (59.94, "59.9s"),
        (59.96, "1m00s"),
        (272, "4m32s"),
        (3599.4, "59m59s"),
        (3599.6, "1h00m"),
        (3720, "1h02m"),
        (90000, "25h00m"),
        (-0.5, "0µs"),
        (float("nan"), "-"),
    ],
)
def test_format_duration(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text


# --------------------------------------------------------------------------------------------
# Step view
# --------------------------------------------------------------------------------------------


def test_step_view_shows_every_step_with_its_decision_or_error() -> None:
    lines = str(three_nodes("failed")).splitlines()
    assert lines[0].startswith("support (stategraph) failed: ValueError: boom at x=2;")
    assert lines[1] == ""
    assert lines[2:] == [
        "step  node      kind  status     duration  decision / error",
        "1     classify  node  completed  820ms     -> refund",
        "2     refund    node  completed  12ms      -> post",
        "3     boom      node  failed     1ms       ValueError: boom at x=2",
    ]


@pytest.mark.parametrize(
    ("decision", "shown"),
    [
        (["a", "b"], "-> a, b"),
        (("a",), "-> a"),
        ("a", "-> a"),
        (None, ""),
        ([], ""),
        ({"goto": 3}, "-> {'goto': 3}"),
        ([1, 2], "-> [1, 2]"),
    ],
)
def test_decisions_are_shown_as_targets(decision: Any, shown: str) -> None:
    log = RunLog.from_records(run_record(), [step(1, "n", decision=decision)])
    row = str(log).splitlines()[3]
    assert row.endswith(f"n     node  completed  1ms       {shown}".rstrip())


def test_retried_and_running_steps() -> None:
    steps = [
        step(1, "flaky", 0.002, status="failed", error=boom("try again")),
        step(2, "flaky", 0.003, attempt=2),
        StepRecord(run_id=RUN, step=3, node="slow", status="running", started_at=100.0),
    ]
    lines = str(RunLog.from_records(run_record("running"), steps)).splitlines()
    assert lines[3:] == [
        "1     flaky  node  failed                2ms       ValueError: try again",
        "2     flaky  node  completed, attempt 2  3ms",
        "3     slow   node  running               -",
    ]


def test_tool_and_llm_units_are_indented_under_their_node() -> None:
    steps = [
        step(1, "agent", 0.5, decision=["tools"]),
        step(2, "llm", 0.3, kind="llm", path=("agent",)),
        step(3, "other", 0.01),  # a parallel branch: units are grouped under their own node
        step(4, "search", 0.1, kind="tool", path=("agent",)),
        step(5, "tools", 0.05),
    ]
    lines = str(RunLog.from_records(run_record(), steps)).splitlines()
    assert lines[3:] == [
        "1     agent       node  completed  500ms     -> tools",
        "2       └ llm     llm   completed  300ms",
        "4       └ search  tool  completed  100ms",
        "3     other       node  completed  10ms",
        "5     tools       node  completed  50ms",
    ]


def test_units_are_placed_under_the_latest_execution_of_their_node() -> None:
    steps = [
        step(1, "agent"),
        step(2, "search", kind="tool", path=("agent",)),
        step(3, "agent"),
        step(4, "search", kind="tool", path=("agent",)),
        step(5, "fetch", kind="tool", path=("agent", "search")),
    ]
    text = str(RunLog.from_records(run_record(), steps))
    assert column(text, "step", "kind") == [
        "1     agent",
        "2       └ search",
        "3     agent",
        "4       └ search",
        "5         └ fetch",
    ]


def test_a_unit_whose_node_is_not_logged_yet_stays_in_place() -> None:
    # Live, a node's record arrives when it finishes, after the tool calls made inside it.
    log = RunLog(run_record("running"))
    log.add_step(step(2, "search", kind="tool", path=("agent",)))
    assert str(log).splitlines()[3].startswith("2       └ search  tool")
    log.add_step(step(1, "agent"))
    assert column(str(log), "step", "kind") == ["1     agent", "2       └ search"]


def test_long_values_are_truncated_to_keep_rows_short() -> None:
    huge = {"documents": ["lorem ipsum " * 50] * 20}
    steps = [
        step(1, "n" * 80, decision=huge),
        step(2, "route", decision=[f"target_{i}" for i in range(40)]),
        step(3, "fail", status="failed", error=boom("bad\nvalue " + "x" * 500)),
    ]
    rows = str(RunLog.from_records(run_record(), steps)).splitlines()[2:]
    assert all(len(row) < 120 for row in rows)
    rows = rows[1:]
    assert rows[0].startswith("1     " + "n" * 31 + ELLIPSIS)
    assert "-> {'documents': [" in rows[0]
    assert rows[1].endswith(ELLIPSIS)
    assert "-> target_0, target_1, target_2" in rows[1]
    assert "ValueError: bad value xxx" in rows[2]
    assert rows[2].endswith(ELLIPSIS)


# --------------------------------------------------------------------------------------------
# Stats view
# --------------------------------------------------------------------------------------------


def loop_log(n: int = 50, *, fail_at: int | None = None) -> RunLog:
    steps = []
    for i in range(1, n + 1):
        failed = i == fail_at
        steps.append(
            step(
                i,
                "inc",
                0.002 if i % 2 else 0.004,
                start=100.0 + i,
                decision=["inc"],
                status="failed" if failed else "completed",
                error=boom(f"at {i}") if failed else None,
            )
        )
    steps.append(step(n + 1, "done", 0.0001, start=200.0))
    return RunLog.from_records(run_record(ended_at=160.0), steps)


def test_stats_view_for_a_loop() -> None:
    log = loop_log()
    lines = str(log).splitlines()
    assert lines[0] == (
        "support (stategraph) completed: 51 steps over 2 nodes in 1m00s, 0 errors, "
        "slowest inc (4ms; 50\u00d7, 150ms summed)"
    )
    assert lines[2:] == [
        "node  count  total    avg    max  errors",
        "inc      50  150ms    3ms    4ms       0",
        "done      1  100µs  100µs  100µs       0",
    ]
    stats = log.node_stats["inc"]
    assert (stats.node, stats.count, stats.errors) == ("inc", 50, 0)
    assert stats.total == pytest.approx(0.15)
    assert stats.avg == pytest.approx(0.003)
    assert stats.max == pytest.approx(0.004)
    assert list(log.node_stats) == ["inc", "done"]
    assert log.timing == pytest.approx({"inc": 0.15, "done": 0.0001})


def test_units_of_different_kinds_sharing_a_name_are_counted_apart() -> None:
    # an OpenAI Agents run: the agent 'billing' and the handoff to it share the name
    names = [("triage", "agent"), ("chat", "llm"), ("billing", "handoff")]
    names += [("billing", "agent"), ("chat", "llm"), ("chat", "llm")]
    steps = [
        step(i, name, 0.001 * i, kind=kind, start=100.0 + i)
        for i, (name, kind) in enumerate(names, 1)
    ]
    log = RunLog.from_records(run_record(), steps)
    assert log.render("stats").splitlines()[2:] == [
        "node               count  total  avg  max  errors",
        "triage                 1    1ms  1ms  1ms       0",
        "chat                   3   13ms  4ms  6ms       0",
        "billing (handoff)      1    3ms  3ms  3ms       0",
        "billing (agent)        1    4ms  4ms  4ms       0",
    ]
    billing = log.node_stats["billing (agent)"]
    assert (billing.node, billing.kind, billing.count) == ("billing", "agent", 1)
    assert log.node_stats["chat"].kind == "llm"


def test_stats_view_lists_failed_steps_below_the_table() -> None:
    text = str(loop_log(fail_at=37))
    assert "inc      50  150ms    3ms    4ms       1" in text
    assert text.endswith("1 failed step:\n  step 37 inc: ValueError: at 37")


@pytest.mark.parametrize(
    ("counts", "view"),
    [
        ({"a": 1, "b": 1, "c": 1}, "steps"),
        ({"a": 3, "b": 1}, "steps"),  # a short loop still reads best step by step
        ({"a": 4}, "stats"),
        ({f"n{i}": 1 for i in range(25)}, "steps"),  # long, but every node ran once
        ({"a": 2, **{f"n{i}": 1 for i in range(19)}}, "stats"),  # 21 steps with a repeat
    ],
)
def test_auto_view_picks_stats_when_nodes_repeat(counts: dict[str, int], view: str) -> None:
    names = [name for name, count in counts.items() for _ in range(count)]
    log = RunLog.from_records(run_record(), [step(i, n) for i, n in enumerate(names, 1)])
    header = str(log).splitlines()[2]
    assert header.startswith("node  count" if view == "stats" else "step  node")
    assert str(log) == log.render(view)


def test_render_can_force_a_view() -> None:
    log = loop_log(5)
    assert log.render("stats").splitlines()[2].startswith("node  count")
    assert len(log.render("steps").splitlines()) == 3 + 6
    with pytest.raises(ValueError, match=r"unknown run log view 'table'; use one of auto"):
        log.render("table")


# --------------------------------------------------------------------------------------------
# Nested runs
# --------------------------------------------------------------------------------------------


def test_a_nested_run_is_one_row_with_a_link() -> None:
    log = nested_log()
    lines = str(log).splitlines()
    assert lines[0].endswith(", 1 child run")
    assert lines[3:] == [
        "1     classify  node  completed  820ms     -> sub",
        "2     sub       node  completed  12ms      -> post [child run 3f2a91c0: 2 steps]",
        "3     post      node  completed  2ms",
    ]
    assert [child.run.run_id for child in log.children] == [CHILD]


def test_tree_expands_nested_runs_under_their_step() -> None:
    lines = nested_log().tree().splitlines()
    assert lines[3:] == [
        "1     classify    node  completed  820ms     -> sub",
        "2     sub         node  completed  12ms      -> post [child run 3f2a91c0: 2 steps]",
        "2.1     retrieve  node  completed  5ms       -> generate",
        "2.2     generate  node  completed  6ms",
        "3     post        node  completed  2ms",
    ]


def test_two_runs_of_one_step_are_expanded_in_the_order_they_started() -> None:
    # a node running two nested graphs (an agent calling two agents as tools in one turn):
    # the step names the last one only, the first names the step
    second = "9c1d0e2f" + "c" * 24
    first_log = child_log()
    run = run_record(name="other", run_id=second, parent_run_id=RUN, root_run_id=RUN, parent_step=2)
    run.started_at = 100.5  # after the first
    second_log = RunLog.from_records(run, [step(1, "lookup", 0.004, run_id=second)])
    steps = [
        step(1, "classify", 0.82, decision=["sub"]),
        step(2, "sub", 0.012, decision="post", child_run_id=second),
        step(3, "post", 0.002),
    ]
    log = RunLog.from_records(run_record(), steps, [second_log, first_log])
    assert log.tree().splitlines()[3:] == [
        "1     classify    node  completed  820ms     -> sub",
        "2     sub         node  completed  12ms      -> post [2 child runs: 3 steps]",
        "2a.1    retrieve  node  completed  5ms       -> generate",
        "2a.2    generate  node  completed  6ms",
        "2b.1    lookup    node  completed  4ms",
        "3     post        node  completed  2ms",
    ]


def test_a_nested_run_is_linked_by_parent_step_and_shows_its_status() -> None:
    steps = [step(1, "a"), step(2, "sub"), step(3, "b")]  # no child_run_id on the step
    log = RunLog.from_records(run_record("failed"), steps, [child_log("failed")])
    row = str(log).splitlines()[4]
    assert row.endswith("[child run 3f2a91c0: 2 steps, failed]")
    assert log.summary().endswith(", 1 child run (1 failed)")


def test_a_nested_run_without_its_step_yet_is_listed_below() -> None:
    # Live, a nested run starts (and is added) before the step that started it finishes.
    log = RunLog(run_record("running"))
    log.add_step(step(1, "classify"))
    log.add_child(child_log("running"))
    text = str(log)
    assert "nested runs not linked to a step:\n  child run 3f2a91c0 from step 2: inner" in text
    assert "inner (stategraph) running: 2 steps over 2 nodes so far" in text
    tree = log.tree()
    assert "\n  child run 3f2a91c0 from step 2:\n    inner (stategraph) running" in tree
    assert "\n    1     retrieve  node  completed  5ms       -> generate" in tree
    log.add_step(step(2, "sub"))
    assert "[child run 3f2a91c0: 2 steps, running]" in str(log)
    assert "not linked" not in str(log)


def test_errors_and_all_errors() -> None:
    child = child_log("failed")
    child.add_step(step(3, "crash", run_id=CHILD, path=("sub",), status="failed", error=boom()))
    log = RunLog.from_records(run_record("failed"), three_nodes().steps, [child])
    assert [(s.run_id, s.node) for s in log.errors] == [(RUN, "boom")]
    assert [(s.run_id, s.node) for s in log.all_errors] == [(RUN, "boom"), (CHILD, "crash")]


# --------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------


def test_summary_of_a_completed_run() -> None:
    steps = [
        step(1, "classify", 0.82),
        step(2, "refund", 0.2),
        step(3, "post", 0.1),
        step(4, "notify", 0.05),
    ]
    log = RunLog.from_records(run_record(), steps)
    assert log.summary() == (
        "support (stategraph) completed: 4 steps over 4 nodes in 1.2s, 0 errors, "
        "slowest classify (820ms)"
    )
    assert log.duration == pytest.approx(1.2)


def test_the_slowest_is_the_longest_unit_and_a_sum_is_labelled_as_one() -> None:
    # two lookups at once, each 0.9 s of a 1 s run: summed they took longer than the run
    steps = [
        step(1, "fan", 1.0, start=100.0),
        step(2, "lookup", 0.9, start=100.05, kind="tool"),
        step(3, "lookup", 0.9, start=100.06, kind="tool"),
    ]
    log = RunLog.from_records(run_record(ended_at=101.0), steps)
    assert log.summary().endswith("0 errors, slowest fan (1.0s)")
    # a node that ran often, each time briefly, is not the slowest of one that ran long once
    steps = [step(1, "plan", 0.5), *(step(i, "poll", 0.3, start=100.5 + i) for i in range(2, 5))]
    log = RunLog.from_records(run_record(ended_at=102.0), steps)
    assert log.summary().endswith("0 errors, slowest plan (500ms)")
    steps = [step(1, "plan", 0.1), *(step(i, "poll", 0.3, start=100.5 + i) for i in range(2, 5))]
    log = RunLog.from_records(run_record(ended_at=102.0), steps)
    assert log.summary().endswith("0 errors, slowest poll (300ms; 3\u00d7, 900ms summed)")


def test_summary_of_a_failed_run_names_the_error() -> None:
    assert three_nodes("failed").summary() == (
        "support (stategraph) failed: ValueError: boom at x=2; 3 steps over 3 nodes in 1.2s, "
        "1 error (boom), slowest classify (820ms)"
    )


def test_summary_of_a_failed_run_without_a_run_error_uses_the_failed_step() -> None:
    log = RunLog.from_records(run_record("failed"), three_nodes().steps)
    assert log.summary().startswith("support (stategraph) failed: ValueError: boom at x=2; ")


def test_summary_of_a_running_and_a_terminated_run() -> None:
    log = RunLog(run_record("running"))
    assert log.summary() == "support (stategraph) running: 0 steps over 0 nodes so far, 0 errors"
    assert log.duration is None
    assert str(log).splitlines()[2] == "(no steps)"
    log.add_step(step(1, "classify", 0.5))
    assert log.summary() == (
        "support (stategraph) running: 1 step over 1 node so far, 0 errors, "
        "slowest classify (500ms)"
    )
    log.finish(run_record("terminated", ended_at=100.7))
    assert log.run.status == "terminated"
    assert log.summary() == (
        "support (stategraph) terminated: 1 step over 1 node in 700ms, 0 errors, "
        "slowest classify (500ms)"
    )


# --------------------------------------------------------------------------------------------
# Filling the log
# --------------------------------------------------------------------------------------------


def test_steps_are_kept_ordered_and_replaced_by_index() -> None:
    log = RunLog(run_record("running"))
    for index in (3, 1, 4, 2):
        log.add_step(step(index, f"n{index}"))
    log.add_step(step(2, "n2", status="failed", error=boom()))
    assert [(s.step, s.status) for s in log.steps] == [
        (1, "completed"),
        (2, "failed"),
        (3, "completed"),
        (4, "completed"),
    ]
    copy = log.steps
    copy.clear()
    assert len(log.steps) == 4


def test_add_step_from_many_threads_keeps_every_step_in_order() -> None:
    log = RunLog(run_record("running"))
    threads_count, per_thread = 8, 250
    start = threading.Barrier(threads_count, timeout=T)
    failures: list[BaseException] = []

    def add(offset: int) -> None:
        try:
            start.wait()
            # Interleaved indices, each thread adding in reverse: every insert lands mid-list.
            for i in reversed(range(per_thread)):
                log.add_step(step(i * threads_count + offset + 1, f"n{offset}"))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=add, args=(t,)) for t in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(T)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    total = threads_count * per_thread
    assert [s.step for s in log.steps] == list(range(1, total + 1))
    assert log.node_stats["n0"].count == per_thread


def test_records_of_other_runs_are_refused() -> None:
    log = RunLog(run_record("running"))
    with pytest.raises(ValueError, match=r"step 1 \('x'\) belongs to run 'other'"):
        log.add_step(step(1, "x", run_id="other"))
    stranger = RunLog(run_record(run_id="c" * 32, parent_run_id="other"))
    with pytest.raises(ValueError, match=r"has parent run 'other', not 'a+'"):
        log.add_child(stranger)
    with pytest.raises(ValueError, match=r"with the record of run 'ccc"):
        log.finish(run_record(run_id="c" * 32))


# --------------------------------------------------------------------------------------------
# Dicts and HTML
# --------------------------------------------------------------------------------------------


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque>"


def test_to_dict_survives_a_json_round_trip() -> None:
    log = nested_log()
    log.add_step(step(4, "odd", decision={1: Opaque(), "inf": float("inf")}))
    log.finish(run_record("failed", error=boom(), output={"answer": Opaque()}, tags={"k": "v"}))
    data = log.to_dict()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert data["summary"] == log.summary()
    assert data["status"] == "failed"
    assert data["error"] == {"type": "ValueError", "message": "boom at x=2"}
    assert data["output"] == {"answer": "<Opaque>"}
    assert data["steps"][0] == {
        "node": "classify",
        "kind": "node",
        "path": [],
        "step": 1,
        "superstep": None,
        "branch": None,
        "attempt": 1,
        "status": "completed",
        "started_at": 100.0,
        "ended_at": 100.82,
        "duration": pytest.approx(0.82),
        "decision": ["sub"],
        "error": None,
        "child_run_id": None,
        "cached": False,
    }
    assert data["steps"][3]["decision"] == {"1": "<Opaque>", "inf": "Infinity"}
    assert data["node_stats"]["classify"]["count"] == 1
    assert [child["run_id"] for child in data["children"]] == [CHILD]
    assert data["children"][0]["steps"][1]["node"] == "generate"

    rebuilt = RunLog.from_dict(json.loads(json.dumps(data)))
    assert rebuilt.to_dict() == data
    # The same table, but for the decision that is now its JSON form.
    assert str(rebuilt).splitlines()[:-1] == str(log).splitlines()[:-1]
    assert str(rebuilt).endswith("""-> {'1': '<Opaque>', 'inf': 'Infinity'}""")


def test_html_escapes_every_value() -> None:
    steps = [
        step(1, "<b>node</b>", decision="<img src=x>"),
        step(2, "bad", status="failed", error=boom("<script>alert(1)</script>")),
    ]
    log = RunLog.from_records(run_record("failed", name="a&b"), steps)
    page = log._repr_html_()
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;node&lt;/b&gt;" in page
    assert "-&gt; &lt;img src=x&gt;" in page
    assert "a&amp;b (stategraph) failed" in page
    assert page.count("<tr>") == 3  # header and one row per step, as in the text table


def test_html_of_an_empty_run_and_of_nested_runs_not_linked_yet() -> None:
    log = RunLog(run_record("running"))
    assert "<em>(no steps)</em>" in log._repr_html_()
    log.add_child(child_log())
    page = log._repr_html_()
    assert "<li>nested runs not linked to a step:</li>" in page
    assert "<li>child run 3f2a91c0 from step 2: inner (stategraph) completed" in page
    assert "<li></li>" not in page


def test_html_of_the_stats_view() -> None:
    page = loop_log()._repr_html_()
    assert "<th" in page and ">count</th>" in page
    assert ">inc</td>" in page and ">50</td>" in page


def test_node_stats_is_a_frozen_record() -> None:
    stats = NodeStats(node="a", count=2, total=1.0, avg=0.5, errors=0, max=0.6)
    with pytest.raises(AttributeError):
        stats.count = 3
    assert stats.to_dict()["max"] == 0.6


# --------------------------------------------------------------------------------------------
# Nodes and calls counted apart
# --------------------------------------------------------------------------------------------


def agent_log() -> RunLog:
    """Two nodes run three times (agent, tools, agent); the nodes make four calls."""
    steps = [
        step(1, "agent", 0.3),
        step(2, "model", 0.2, kind="llm", path=("agent",)),
        step(3, "tools", 0.1),
        step(4, "search", 0.01, kind="tool", path=("tools",)),
        step(5, "shell", 0.01, kind="tool", path=("tools",)),
        step(6, "agent", 0.3),
        step(7, "model", 0.2, kind="llm", path=("agent",)),
    ]
    return RunLog.from_records(run_record(), steps)


def test_summary_counts_calls_apart_from_the_nodes_that_make_them() -> None:
    log = agent_log()
    assert log.summary().startswith(
        "support (stategraph) completed: 7 steps: 3 over 2 nodes, 4 calls (2 llm, 2 tool) in 1.2s"
    )
    assert str(log).splitlines()[0] == log.summary()
    data = log.to_dict()
    assert data["summary"] == log.summary()
    assert (data["step_count"], data["node_count"], data["node_steps"]) == (7, 2, 3)
    assert (data["call_count"], data["calls"]) == (4, {"llm": 2, "tool": 2})
    assert RunLog.from_dict(json.loads(json.dumps(data))).to_dict() == data


def test_summary_of_calls_of_one_kind_and_of_calls_alone() -> None:
    steps = [step(1, "act", 0.1), step(2, "shell", 0.01, kind="tool", path=("act",))]
    assert (
        "2 steps: 1 over 1 node, 1 tool call in"
        in RunLog.from_records(run_record(), steps).summary()
    )
    calls = [step(1, "lookup", kind="call"), step(2, "lookup", kind="call")]
    assert "2 steps: 2 calls in" in RunLog.from_records(run_record(), calls).summary()
    mixed = [*calls, step(3, "to_billing", kind="handoff")]
    assert (
        "3 steps: 3 calls (2 other, 1 handoff) in"
        in RunLog.from_records(run_record(), mixed).summary()
    )


def test_a_run_of_nodes_only_keeps_its_short_summary() -> None:
    data = three_nodes().to_dict()
    assert "3 steps over 3 nodes in" in data["summary"]
    assert (data["node_count"], data["node_steps"], data["call_count"], data["calls"]) == (
        3,
        3,
        0,
        {},
    )
