"""Every way of running a graph reports to flowdbg: invoke, ainvoke, stream (each mode, with
subgraphs), astream, batch and abatch stop at a breakpoint, resume, and return what the same
graph returns without flowdbg."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

import lg_helpers as lg
from langgraph.graph import START, StateGraph
from lg_helpers import T, norm

import flowdbg

INPUT = {"x": 1}
RESULT = {"x": 20, "y": 21}


def _stream(app: Any, **kwargs: Any) -> list[Any]:
    return list(app.stream(INPUT, **kwargs))


def _astream(app: Any, **kwargs: Any) -> Callable[[], Any]:
    async def consume() -> list[Any]:
        return [chunk async for chunk in app.astream(INPUT, **kwargs)]

    return consume


def stopped_once_at_b(dbg: flowdbg.Debugger, run: flowdbg.RunHandle) -> Any:
    """Check the single stop before ``b`` of the linear graph, resume, return the result."""
    stop = dbg.wait_for_stop(T)
    assert stop is not None
    assert (stop.location.node, stop.location.position) == ("b", "before")
    assert stop.location.framework == "langgraph"
    assert stop.location.superstep == 2
    assert dbg.inspect("x") == 2
    dbg.resume()
    value = run.result(T)
    assert dbg.stops == []
    return value


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_invoke_and_ainvoke_stop_and_resume(dbg: flowdbg.Debugger, how: str) -> None:
    app = dbg.attach(lg.linear())
    dbg.break_before("b")
    run = dbg.start(getattr(app, how), INPUT)
    assert stopped_once_at_b(dbg, run) == RESULT
    (log,) = dbg.runs
    assert log.run.framework == "langgraph" and log.run.name == "linear"
    assert log.run.status == "completed"
    assert [(s.node, s.superstep, s.decision) for s in log.steps] == [
        ("a", 1, ["b"]),
        ("b", 2, ["c"]),
        ("c", 3, ["__end__"]),
    ]
    assert dbg.runs[0].run.output == RESULT


STREAM_MODES: list[Any] = ["values", "updates", ["updates", "values"], ["values", "custom"]]


@pytest.mark.parametrize("mode", STREAM_MODES, ids=str)
@pytest.mark.parametrize("how", ["stream", "astream"])
def test_stream_modes_stop_and_yield_the_same_chunks(
    dbg: flowdbg.Debugger, how: str, mode: Any
) -> None:
    plain = lg.linear()
    expected = list(plain.stream(INPUT, stream_mode=mode))
    assert expected  # the mode yields something to compare
    app = dbg.attach(lg.linear())
    dbg.break_before("b")
    if how == "stream":
        run = dbg.start(_stream, app, stream_mode=mode)
    else:
        run = dbg.start(_astream(app, stream_mode=mode))
    assert stopped_once_at_b(dbg, run) == expected
    (log,) = dbg.runs
    assert [s.node for s in log.steps] == ["a", "b", "c"]
    if "values" in mode:
        assert log.run.output == RESULT  # the run's output follows the "values" chunks


@pytest.mark.parametrize("mode", ["updates", "values", ["values", "updates"]], ids=str)
@pytest.mark.parametrize("how", ["stream", "astream"])
def test_stream_with_subgraphs_stops_in_the_subgraph(
    dbg: flowdbg.Debugger, how: str, mode: Any
) -> None:
    expected = norm(list(lg.nested().stream({"x": 1}, stream_mode=mode, subgraphs=True)))
    assert ("sub",) in [chunk[0] for chunk in expected]
    app = dbg.attach(lg.nested())
    dbg.break_before("c2")
    if how == "stream":
        run = dbg.start(lambda: list(app.stream({"x": 1}, stream_mode=mode, subgraphs=True)))
    else:

        async def consume() -> list[Any]:
            return [c async for c in app.astream({"x": 1}, stream_mode=mode, subgraphs=True)]

        run = dbg.start(consume)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "c2"
    assert stop.location.path == ("sub",)
    assert stop.state == {"x": 20, "scratch": "seen 2"}  # the subgraph's own state
    dbg.resume()
    assert norm(run.result(T)) == expected
    (log,) = dbg.runs
    if "values" in mode:  # the run's output follows the root graph's "values" chunks
        assert log.run.output == {"x": 20, "z": 21, "done": True}
    assert [c.run.name for c in log.children] == ["child"]


@pytest.mark.parametrize("how", ["batch", "abatch"])
def test_batch_runs_are_separate_runs_stopping_in_parallel(dbg: flowdbg.Debugger, how: str) -> None:
    inputs = [{"x": 1}, {"x": 2}, {"x": 3}]
    expected = lg.linear().batch(inputs)
    app = dbg.attach(lg.linear())
    dbg.break_before("b")
    run = dbg.start(getattr(app, how), inputs)
    stops = dbg.wait_for_stops(3, T)
    assert len(stops) == 3, "the three invocations of the batch stop at the same time"
    assert sorted(s.state["x"] for s in stops) == [2, 3, 4]
    assert len({s.location.run_id for s in stops}) == 3
    dbg.resume_all()
    assert run.result(T) == expected == [{"x": 20, "y": 21}, {"x": 30, "y": 31}, {"x": 40, "y": 41}]
    assert sorted(log.run.output["x"] for log in dbg.runs) == [20, 30, 40]


def test_astream_delivers_earlier_chunks_while_a_node_is_stopped(dbg: flowdbg.Debugger) -> None:
    expected = list(lg.linear().stream(INPUT, stream_mode="updates"))
    assert expected == [{"a": {"x": 2}}, {"b": {"x": 20}}, {"c": {"y": 21}}]
    app = dbg.attach(lg.linear())
    dbg.break_before("c")
    gate = lg.Gate(2)

    async def consume() -> list[Any]:
        async for chunk in app.astream(INPUT, stream_mode="updates"):
            gate.add(chunk)
        return gate.items

    run = dbg.start(consume)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "c"
    # the event loop goes on while c is held: the consumer gets the chunks of a and b
    assert gate.reached.wait(T), f"chunks so far: {gate.items}"
    assert gate.items == expected[:2]
    dbg.resume()
    assert run.result(T) == expected


def test_stream_yields_earlier_chunks_before_a_node_stops(dbg: flowdbg.Debugger) -> None:
    expected = list(lg.linear().stream(INPUT, stream_mode="values"))
    app = dbg.attach(lg.linear())
    dbg.break_before("c")
    seen: list[Any] = []

    def consume() -> list[Any]:
        for chunk in app.stream(INPUT, stream_mode="values"):
            seen.append(chunk)
        return seen

    run = dbg.start(consume)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "c"
    assert seen == expected[:3] == [{"x": 1}, {"x": 2}, {"x": 20}]
    dbg.resume()
    assert run.result(T) == expected


def test_ainvoke_on_the_callers_event_loop_suspends_only_the_run(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.nested())
    dbg.break_before("c2")

    async def main() -> Any:
        task = asyncio.ensure_future(app.ainvoke({"x": 1}))
        stop = await dbg.wait_for_stop_async(T)
        assert stop is not None and stop.location.depth == 1
        assert dbg.inspect("x") == 20
        dbg.set("x", 3)
        dbg.resume()
        return await asyncio.wait_for(task, T)

    assert asyncio.run(main()) == {"x": 3, "z": 4, "done": True}  # the state kept the edit


def test_a_task_created_after_an_earlier_run_is_waited_for(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.nested())

    async def main() -> Any:
        first = await app.ainvoke({"x": 1})
        dbg.break_before("c2")
        task = asyncio.create_task(app.ainvoke({"x": 1}))  # has not started when we wait
        stop = await dbg.wait_for_stop_async(T)
        assert stop is not None and stop.location.node == "c2"
        dbg.resume()
        assert await dbg.wait_for_stop_async(T) is None
        return first, await asyncio.wait_for(task, T)

    first, second = asyncio.run(main())
    assert first == second == {"x": 20, "z": 21, "done": True}


def test_an_exception_reaches_the_caller_unchanged(dbg: flowdbg.Debugger) -> None:
    def boom(s: lg.Linear) -> lg.Linear:
        raise KeyError(f"missing at x={s['x']}")

    g = StateGraph(lg.Linear)
    g.add_node("a", lambda s: {"x": s["x"] + 1})
    g.add_node("boom", boom)
    g.add_edge(START, "a")
    g.add_edge("a", "boom")
    app = dbg.attach(g.compile(name="failing"))
    dbg.break_on_exception(KeyError)
    run = dbg.start(app.invoke, INPUT)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.position == "error"
    assert isinstance(stop.exception, KeyError) and stop.state == {"x": 2}
    dbg.resume()
    with pytest.raises(KeyError, match="missing at x=2") as caught:
        run.result(T)
    assert caught.value is stop.exception
    (log,) = dbg.runs
    assert log.run.status == "failed"
    assert [(s.node, s.status) for s in log.steps] == [("a", "completed"), ("boom", "failed")]


@pytest.mark.parametrize("how", ["ainvoke", "astream"])
def test_async_nodes_in_parallel_stop_together_and_take_edits(
    dbg: flowdbg.Debugger, how: str
) -> None:
    items = {"items": ["a", "b", "c"]}
    expected = asyncio.run(lg.async_map_reduce().ainvoke(items))
    assert expected == {"items": ["a", "b", "c"], "results": ["A", "B", "C"]}
    app = dbg.attach(lg.async_map_reduce())
    dbg.break_after("work")
    if how == "ainvoke":
        run = dbg.start(app.ainvoke, items)
    else:

        async def last_values() -> Any:
            chunks = [chunk async for chunk in app.astream(items, stream_mode="values")]
            return chunks[-1]

        run = dbg.start(last_values)
    stops = dbg.wait_for_stops(3, T)
    assert len(stops) == 3, "the three async Send tasks are held at once"
    assert sorted(s.output["results"][0] for s in stops) == ["A", "B", "C"]
    assert all(s.decision == ["__end__"] for s in stops)
    (b,) = [s for s in stops if s.output == {"results": ["B"]}]
    dbg.set("results", ["bee"], stop=b.id)
    dbg.resume_all()
    assert run.result(T) == {"items": ["a", "b", "c"], "results": ["A", "bee", "C"]}


def test_an_invalid_update_is_the_error_point_of_its_node(dbg: flowdbg.Debugger) -> None:
    g = StateGraph(lg.Linear)
    g.add_node("a", lambda s: 5)  # not a dict: LangGraph's writers refuse it
    g.add_edge(START, "a")
    app = dbg.attach(g.compile(name="invalid"))
    dbg.break_on_exception("InvalidUpdateError")
    run = dbg.start(app.invoke, INPUT)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and (stop.location.node, stop.location.position) == ("a", "error")
    dbg.resume()
    error = run.exception(T)
    assert type(error).__name__ == "InvalidUpdateError" and error is stop.exception
    assert dbg.runs[-1].run.status == "failed"


def test_functional_api_entrypoint_is_a_unit(dbg: flowdbg.Debugger) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.func import entrypoint, task

    @task
    def double(x: int) -> int:
        return x * 2

    @entrypoint(checkpointer=InMemorySaver())
    def workflow(x: int) -> int:
        return double(x).result() + 1

    assert workflow.invoke(3, lg.thread("plain")) == 7
    dbg.attach(workflow)
    dbg.break_before("workflow")
    run = dbg.start(workflow.invoke, 3, lg.thread("debugged"))
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "workflow"
    assert stop.input == 3
    dbg.set("", 10)  # the entrypoint's whole input
    dbg.resume()
    assert run.result(T) == 21
    # LangGraph names an entrypoint's Pregel "LangGraph"; its run has the function's name
    assert (workflow.name, dbg.runs[-1].run.name) == ("LangGraph", "workflow")


@pytest.mark.skipif(
    "timeout" not in inspect.signature(StateGraph.add_node).parameters,
    reason="this LangGraph has no node timeouts",
)
def test_a_stop_at_a_node_with_a_timeout_warns_that_the_clock_runs(
    dbg: flowdbg.Debugger,
) -> None:
    # LangGraph's watchdog for timeout= keeps counting while a breakpoint holds the node: the
    # stop says so (and a prompt resume finishes normally).
    async def slow(state: dict[str, Any]) -> dict[str, Any]:
        return {"x": state["x"] + 1}

    g = StateGraph(lg.Linear)
    g.add_node("slow", slow, timeout=30)
    g.add_node("plain", lambda s: {"y": 1})
    g.add_edge(START, "slow")
    g.add_edge("slow", "plain")
    app = g.compile()
    dbg.attach(app)
    dbg.break_before("slow")
    dbg.break_before("plain")

    async def main() -> Any:
        task = asyncio.ensure_future(app.ainvoke({"x": 1}))
        first = await dbg.wait_for_stop_async(10)
        assert first is not None
        assert first.message is not None
        assert "'slow' 30 s to finish (timeout=)" in first.message
        assert "NodeTimeoutError" in first.message
        dbg.resume()
        second = await dbg.wait_for_stop_async(10)
        assert second is not None and second.location.node == "plain"
        assert second.message is None  # no timeout, no warning
        dbg.resume()
        return await task

    assert asyncio.run(main()) == {"x": 2, "y": 1}


@pytest.mark.parametrize("parallel", [False, True])
def test_terminate_cancels_an_async_node_that_never_returns(
    dbg: flowdbg.Debugger, parallel: bool
) -> None:
    import time
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class S(TypedDict, total=False):
        x: int
        y: int

    cancelled: list[str] = []

    async def hang(state: S) -> S:
        try:
            await asyncio.sleep(1000)
        except asyncio.CancelledError:
            cancelled.append("hang")
            raise
        return {}

    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": 1})
    g.add_node("hang", hang)
    g.add_node("other", lambda s: {"y": 1})
    g.add_edge(START, "a")
    g.add_edge("a", "hang")
    g.add_edge("hang", END)
    if parallel:
        g.add_edge("a", "other")
        g.add_edge("other", END)
    app = dbg.attach(g.compile())
    dbg.break_after("a")

    async def main() -> Any:  # the user's own event loop, terminated from another thread
        return await app.ainvoke({})

    run = dbg.start(lambda: asyncio.run(main()))
    assert dbg.wait_for_stop(T) is not None
    dbg.resume()
    deadline = time.monotonic() + T
    while not any(u["node"] == "hang" for u in dbg.status().running):
        assert time.monotonic() < deadline, "hang never started"
        time.sleep(0.01)
    dbg.terminate()
    with pytest.raises(flowdbg.Terminated):
        run.result(T)
    assert cancelled == ["hang"]
    assert {step.node: step.status for step in dbg.runs[-1].steps}["hang"] == "terminated"
    assert dbg.runs[-1].run.status == "terminated"
