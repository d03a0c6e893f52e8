"""Attached with no breakpoint and recording on, flowdbg changes nothing a graph returns or
streams, whatever LangGraph feature the graph uses."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

import lg_helpers as lg
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from lg_helpers import T, norm, thread

import flowdbg

#: one call of a graph: its input and config
Call = tuple[Any, Any]


def _one(build: Callable[[], Any], input: Any) -> Callable[[], tuple[Any, list[Call]]]:
    return lambda: (build(), [(input, None)])


def _retry() -> tuple[Any, list[Call]]:
    return lg.retry_graph([]), [({"x": 1}, None), ({"x": 5}, None)]


def _checkpointed() -> tuple[Any, list[Call]]:
    # the second call goes on in the same thread, from the state the first one left
    return lg.checkpointed(InMemorySaver()), [({"x": 1}, thread("t")), ({"x": 3}, thread("t"))]


def _interrupt() -> tuple[Any, list[Call]]:
    return lg.hitl(InMemorySaver()), [({"x": 1}, thread("t")), (Command(resume="bob"), thread("t"))]


def _interrupt_nested() -> tuple[Any, list[Call]]:
    app = lg.hitl_nested(InMemorySaver())
    return app, [({"x": 1}, thread("t")), (Command(resume="ann"), thread("t"))]


def _interrupt_before() -> tuple[Any, list[Call]]:
    app = lg.checkpointed(InMemorySaver(), interrupt_before=["b"])
    return app, [({"x": 1}, thread("t")), (None, thread("t"))]


def _functional_interrupt() -> tuple[Any, list[Call]]:
    app = lg.functional_hitl(InMemorySaver())
    return app, [({"greeting": "hi"}, thread("t")), (Command(resume="ann"), thread("t"))]


CASES: dict[str, Callable[[], tuple[Any, list[Call]]]] = {
    "linear": _one(lg.linear, {"x": 1}),
    "loop": _one(lg.loop, {"count": 0}),
    "branch_positive": _one(lg.branch, {"x": 1}),
    "branch_negative": _one(lg.branch, {"x": -1}),
    "parallel_reducer": _one(lg.parallel, {"items": []}),
    "send_map_reduce": _one(lg.map_reduce, {"items": ["a", "b", "c", "d"]}),
    "compiled_subgraph": _one(lg.nested, {"x": 1}),
    "function_subgraph": _one(lg.calling, {"x": 1}),
    "command": _one(lg.command, {"x": 1}),
    "command_parent": _one(lg.parent_command, {"x": 1}),
    "pydantic": _one(lg.pydantic_graph, {"x": 1}),
    "dataclass": _one(lg.dataclass_graph, {"x": 1}),
    "messages": _one(lg.messages_graph, lg.messages_input()),
    "retry": _retry,
    "checkpointer": _checkpointed,
    "interrupt": _interrupt,
    "interrupt_in_subgraph": _interrupt_nested,
    "interrupt_before": _interrupt_before,
    "functional_tasks": _one(lambda: lg.functional(parallel=False), {"x": 3}),
    "functional_interrupt_in_task": _functional_interrupt,
}


def _run(app: Any, calls: list[Call], mode: str) -> list[Any]:
    if mode == "invoke":
        return [app.invoke(input, config) for input, config in calls]
    if mode == "ainvoke":

        async def main() -> list[Any]:
            return [await app.ainvoke(input, config) for input, config in calls]

        return asyncio.run(main())
    if mode == "astream":

        async def consume() -> list[Any]:
            streams = []
            for input, config in calls:
                stream = app.astream(input, config, stream_mode="updates")
                streams.append([chunk async for chunk in stream])
            return streams

        return asyncio.run(consume())
    return [list(app.stream(input, config, stream_mode=mode)) for input, config in calls]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "updates", "values", "astream"])
@pytest.mark.parametrize("case", list(CASES))
def test_same_output_and_chunks_with_flowdbg(tmp_path: Path, case: str, mode: str) -> None:
    app, calls = CASES[case]()
    expected = norm(_run(app, calls, mode))

    dbg = flowdbg.Debugger(db=tmp_path / "x.db")
    try:
        app, calls = CASES[case]()
        dbg.attach(app)
        assert norm(_run(app, calls, mode)) == expected
        assert dbg.flush(T)
        assert dbg.store is not None
        recorded = dbg.store.list_runs()
        assert len(recorded) == len(calls), "every call is a recorded run"
        assert {r.framework for r in recorded} == {"langgraph"}
        assert all(dbg.store.get_steps(r.run_id) for r in recorded)
    finally:
        dbg.close()
