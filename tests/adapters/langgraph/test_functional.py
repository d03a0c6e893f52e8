"""The functional API: an ``@entrypoint`` is a unit, and each of its ``@task`` calls is a unit
nested in it (seen through LangChain's chain callbacks, so their arguments and results are read
only)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

import lg_helpers as lg
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt
from lg_helpers import T

import flowdbg
from flowdbg.stops import StopReason


@task
def double(x: int) -> int:
    return x * 2


@task
def add(a: int, b: int) -> int:
    return a + b


@task
def explode(x: int) -> int:
    raise ValueError(f"cannot take {x}")


@task
async def adouble(x: int) -> int:
    await asyncio.sleep(0)
    return x * 2


def stop_editable(dbg: flowdbg.Debugger) -> Any:
    stop = dbg.stop
    assert stop is not None
    return stop.to_dict()["editable"]


def workflow() -> Any:
    """``double`` once, then twice in parallel, then ``add``: 3 -> 6 -> (12, 14) -> 26."""

    @entrypoint()
    def flow(x: int) -> int:
        d = double(x).result()
        pair = [double(d), double(d + 1)]
        return add(*[f.result() for f in pair]).result()

    return flow


def test_tasks_are_units_nested_in_the_entrypoint(
    dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture
) -> None:
    app = workflow()
    expected = app.invoke(3)
    with caplog.at_level(logging.WARNING, logger="flowdbg.adapters.langgraph"):
        dbg.attach(app)
    assert caplog.records == []  # nothing to warn about any more
    described = dbg.describe(app)
    assert described["open"] is True
    assert [(n["name"], n["tasks"]) for n in described["nodes"]] == [("flow", ["double", "add"])]
    dbg.break_before("double")
    run = dbg.start(app.invoke, 3)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.reason == StopReason.BREAKPOINT
    loc = stop.location
    assert (loc.node, loc.kind, loc.position, loc.path, loc.depth) == (
        "double",
        "node",
        "before",
        ("flow",),
        1,
    )
    assert stop.input == {"x": 3}
    assert dbg.inspect("x", source="input") == 3
    dbg.resume()
    # the two parallel calls stop independently, each holding its own thread
    stops = dbg.wait_for_stops(2, T)
    assert sorted(s.input["x"] for s in stops) == [6, 7]
    dbg.resume(stops[0].id)
    assert [s.id for s in dbg.stops] == [stops[1].id]
    dbg.resume_all()
    assert run.result(T) == expected == 26
    log = run.log
    assert [(s.node, s.kind, s.status) for s in log.steps] == [
        ("flow", "node", "completed"),
        ("double", "node", "completed"),
        ("double", "node", "completed"),
        ("double", "node", "completed"),
        ("add", "node", "completed"),
    ]


def test_after_a_task_its_result_is_the_output_and_cannot_be_replaced(
    dbg: flowdbg.Debugger,
) -> None:
    app = dbg.attach(workflow())
    dbg.break_after("add")
    run = dbg.start(app.invoke, 3)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and (stop.location.node, stop.location.position) == ("add", "after")
    assert stop.output == 26
    with pytest.raises(flowdbg.EditRefused, match=r"the result of @task 'add' cannot be edited"):
        dbg.set("", 0)
    assert stop.output == 26  # a refused edit changes nothing
    dbg.resume()
    assert run.result(T) == 26


def test_a_tasks_arguments_cannot_be_edited(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(workflow())
    dbg.break_before("add")
    run = dbg.start(app.invoke, 1)  # 1 -> 2 -> (4, 6) -> 10
    assert dbg.wait_for_stop(T) is not None
    assert stop_editable(dbg) is None  # to_dict says nothing can be edited here
    with pytest.raises(flowdbg.EditRefused, match=r"the arguments of @task 'add' cannot be"):
        dbg.set("a", 100)
    assert dbg.inspect("a", source="input") == 4
    dbg.resume()
    assert run.result(T) == 10


def test_step_into_from_the_entrypoint_walks_its_tasks(dbg: flowdbg.Debugger) -> None:
    @entrypoint()
    def chain(x: int) -> int:
        return add(double(x).result(), 1).result()

    dbg.attach(chain)
    dbg.break_before("chain")
    run = dbg.start(chain.invoke, 5)
    assert dbg.wait_for_stop(T) is not None
    seen = []
    for _ in range(2):
        dbg.step_into()
        stop = dbg.wait_for_stop(T)
        assert stop is not None and stop.reason == StopReason.STEP
        seen.append((stop.location.node, stop.location.depth))
    assert seen == [("double", 1), ("add", 1)]
    dbg.step_out()  # back out to the entrypoint's end: nothing stops after it
    assert run.result(T) == 11


def test_an_exception_in_a_task_stops_and_reaches_the_caller_unchanged(
    dbg: flowdbg.Debugger,
) -> None:
    @entrypoint()
    def failing(x: int) -> int:
        return explode(x).result()

    dbg.attach(failing)
    dbg.break_on_exception(ValueError)
    run = dbg.start(failing.invoke, 4)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.reason == StopReason.EXCEPTION
    assert (stop.location.node, stop.location.position) == ("explode", "error")
    assert stop.error is not None and stop.error.message == "cannot take 4"
    dbg.resume()
    # it then passes through the entrypoint, which stops there too
    stop = dbg.wait_for_stop(T)
    assert stop is not None and (stop.location.node, stop.location.position) == ("failing", "error")
    assert stop.exception is not None and str(stop.exception) == "cannot take 4"
    dbg.resume()
    error = run.exception(T)
    assert type(error) is ValueError and str(error) == "cannot take 4"
    statuses = {(s.node, s.status) for s in run.log.steps}
    assert statuses == {("failing", "failed"), ("explode", "failed")}


def test_terminate_at_a_task_stop_ends_the_run(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(workflow())
    dbg.break_before("add")
    run = dbg.start(app.invoke, 3)
    assert dbg.wait_for_stop(T) is not None
    dbg.terminate()
    with pytest.raises(flowdbg.Terminated):
        run.result(T)
    assert run.log.run.status == "terminated"


def test_async_tasks_suspend_only_their_own_task(dbg: flowdbg.Debugger) -> None:
    @entrypoint()
    async def aflow(x: int) -> int:
        first, second = adouble(x), adouble(x + 1)
        return (await first) + (await second)

    expected = asyncio.run(aflow.ainvoke(3))
    dbg.attach(aflow)
    dbg.break_before("adouble")

    async def main() -> Any:
        run = asyncio.ensure_future(aflow.ainvoke(3))
        stops = await asyncio.wait_for(asyncio.to_thread(dbg.wait_for_stops, 2, T), T)
        assert sorted(s.input["x"] for s in stops) == [3, 4]
        assert all(s.location.path == ("aflow",) for s in stops)
        dbg.resume_all()
        return await asyncio.wait_for(run, T)

    assert asyncio.run(main()) == expected == 14


def test_an_interrupt_in_a_task_coexists_with_breakpoints(dbg: flowdbg.Debugger) -> None:
    @task
    def ask(question: str) -> str:
        return str(interrupt(question))

    @entrypoint(checkpointer=InMemorySaver())
    def review(topic: str) -> str:
        answer = ask(f"approve {topic}?").result()
        return f"{topic}: {answer}"

    dbg.attach(review)
    config = lg.thread("review")
    first = review.invoke("deploy", config)
    assert first["__interrupt__"][0].value == "approve deploy?"
    assert dbg.runs[-1].run.status == "suspended"
    assert [(s.node, s.status) for s in dbg.runs[-1].steps] == [
        ("review", "suspended"),
        ("ask", "suspended"),
    ]
    dbg.break_before("ask")
    run = dbg.start(review.invoke, Command(resume="yes"), config)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "ask"
    dbg.resume()
    assert run.result(T) == "deploy: yes"


def test_task_calls_are_recorded_nested_in_the_entrypoint(tmp_path: Path) -> None:
    dbg = flowdbg.Debugger(db=tmp_path / "f.db")
    try:
        app = dbg.attach(workflow())
        run = dbg.start(app.invoke, 3)
        assert run.result(T) == 26
        assert dbg.flush(T)
        assert dbg.store is not None
        steps = dbg.store.get_steps(run.run_id or "")
        assert [(s.node, s.path, s.status) for s in steps] == [
            ("flow", (), "completed"),
            ("double", ("flow",), "completed"),
            ("double", ("flow",), "completed"),
            ("double", ("flow",), "completed"),
            ("add", ("flow",), "completed"),
        ]
        assert [s.output for s in steps] == [26, 6, 12, 14, 26] or [s.output for s in steps] == [
            26,
            6,
            14,
            12,
            26,
        ]  # the parallel pair may finish in either order
        # tasks commit nothing to the run's state; the entrypoint's return value is its state
        assert [s.state is None for s in steps] == [False, True, True, True, True]
        assert dbg.store.get_state(run.run_id or "") == {"__end__": 26}
        # inside the entrypoint, a task's step sees the state the entrypoint started from
        assert [dbg.store.get_state(run.run_id or "", step=n) for n in (2, 5)] == [3, 3]
        assert dbg.store.get_state(run.run_id or "", step=1) == {"__end__": 26}
    finally:
        dbg.close()


def test_a_retried_task_counts_its_attempts(dbg: flowdbg.Debugger) -> None:
    from langgraph.types import RetryPolicy

    calls: list[int] = []

    @task(retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.0, jitter=False))
    def flaky(x: int) -> int:
        calls.append(x)
        if len(calls) < 3:
            raise ConnectionError(f"attempt {len(calls)} failed")
        return x + 100

    @entrypoint()
    def retrying(x: int) -> int:
        return flaky(x).result()

    dbg.attach(retrying)
    run = dbg.start(retrying.invoke, 1)
    assert run.result(T) == 101
    rows = [(s.node, s.attempt, s.status) for s in run.log.steps if s.node == "flaky"]
    assert rows == [("flaky", 1, "failed"), ("flaky", 2, "failed"), ("flaky", 3, "completed")]
    # a new run's call starts again at attempt 1
    calls.clear()
    run = dbg.start(retrying.invoke, 2)
    assert run.result(T) == 102
    assert [s.attempt for s in run.log.steps if s.node == "flaky"] == [1, 2, 3]


def test_the_log_at_a_task_stop_shows_the_running_entrypoint(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(workflow())
    dbg.break_before("add")
    run = dbg.start(app.invoke, 3)
    assert dbg.wait_for_stop(T) is not None
    rows = [(s.node, s.status) for s in run.log.steps]
    assert rows == [
        ("flow", "running"),
        ("double", "completed"),
        ("double", "completed"),
        ("double", "completed"),
        ("add", "running"),  # held at its before stop
    ]
    assert "flow" in str(run.log).splitlines()[3]
    dbg.resume()
    assert run.result(T) == 26
    assert [s.status for s in run.log.steps] == ["completed"] * 5
