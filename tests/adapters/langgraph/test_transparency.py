"""Attached with no breakpoint and recording on, flowdbg changes nothing a graph returns or
streams, whatever LangGraph feature the graph uses."""

from __future__ import annotations

import asyncio
import gc
import itertools
import operator
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict
from unittest import mock

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

import lg_helpers as lg
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send
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


# -- what more than the return value must stay the same ----------------------------------------


#: the updates ``_counting`` was called with, in order
_REDUCED: list[str] = []


def _counting(left: list[str], right: list[str]) -> list[str]:
    """A user reducer with a side effect: it notes every call."""
    _REDUCED.append(",".join(right))
    return [*left, *right]


class Counted(TypedDict, total=False):
    items: Annotated[list[str], _counting]
    messages: Annotated[list[AnyMessage], add_messages]
    results: Annotated[list[str], operator.add]


def _counted_graph() -> Any:
    """Nodes appending to a user reducer that counts its calls and to ``add_messages`` (which
    draws a ``uuid4`` for every message without an id), with a ``Send`` fan-out and a
    conditional edge (whose router reads the node's fresh state: LangGraph runs the reducers
    for that itself)."""

    def plan(s: Counted) -> Counted:
        return {"items": ["plan"], "messages": [AIMessage("planning")]}

    def fan(s: Counted) -> list[Send]:
        return [Send("work", {"item": item}) for item in ("a", "b")]

    def work(p: dict[str, str]) -> Counted:
        return {"results": [p["item"]], "messages": [AIMessage(f"did {p['item']}")]}

    def review(s: Counted) -> Counted:
        return {"items": ["review"], "messages": [HumanMessage("ok?")]}

    def route(s: Counted) -> str:
        return "again" if len(s["items"]) < 4 else "done"

    g = StateGraph(Counted)
    g.add_node("plan", plan)
    g.add_node("work", work)
    g.add_node("review", review)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan, ["work"])
    g.add_edge("work", "review")
    g.add_conditional_edges("review", route, {"again": "plan", "done": END})
    return g.compile(name="counted")


def _with_fixed_ids(run: Callable[[], Any]) -> Any:
    """Run with ``uuid.uuid4`` drawing from a fixed sequence (as LangGraph's own tests do), so
    that an extra draw anywhere shows as different message ids."""
    counter = itertools.count()
    with mock.patch("uuid.uuid4", side_effect=lambda: uuid.UUID(int=next(counter))):
        return run()


def _ids(result: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(type(m).__name__, m.id) for m in result["messages"]]


_SETUPS = ["recording", "never-firing breakpoints", "both"]


def _debugger(setup: str, tmp_path: Path) -> flowdbg.Debugger:
    dbg = flowdbg.Debugger(db=tmp_path / "t.db") if setup != "never-firing breakpoints" else None
    dbg = dbg or flowdbg.Debugger(record=False)
    if setup != "recording":
        # breakpoints at every kind of point that never stop: conditions that are false,
        # a hit count never reached, an exception type never raised
        dbg.break_after("*", condition="step < 0")
        dbg.break_before("*", hit_condition=">=1000")
        dbg.break_on_exception("KeyboardInterrupt")
    return dbg


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "astream_events"])
@pytest.mark.parametrize("setup", _SETUPS)
def test_reducers_and_random_ids_are_untouched(tmp_path: Path, setup: str, mode: str) -> None:
    def run(app: Any) -> Any:
        input = {"items": [], "messages": [HumanMessage("go")]}
        if mode == "invoke":
            return app.invoke(input)
        if mode == "ainvoke":
            return asyncio.run(app.ainvoke(input))

        async def events() -> Any:
            last = None
            async for event in app.astream_events(input, version="v2"):
                if event["event"] == "on_chain_end" and event["name"] == "counted":
                    last = event["data"]["output"]
            return last

        return asyncio.run(events())

    _REDUCED.clear()
    bare = _with_fixed_ids(lambda: run(_counted_graph()))
    bare_calls = list(_REDUCED)
    assert len(bare["messages"]) == 9 and bare_calls  # the graph really exercises both

    _REDUCED.clear()
    calls = _REDUCED
    dbg = _debugger(setup, tmp_path)
    try:
        app = dbg.attach(_counted_graph())
        attached = _with_fixed_ids(lambda: run(app))
        assert dbg.flush(T)
        assert _ids(attached) == _ids(bare)
        assert calls == bare_calls  # the user's reducer ran as often, with the same updates
        assert norm(attached) == norm(bare)
        if dbg.store is not None:  # the record has every step, states included
            (recorded,) = dbg.store.list_runs()
            steps = dbg.store.get_steps(recorded.run_id)
            assert [s.node for s in steps][:4] == ["plan", "work", "work", "review"]
            final = dbg.store.get_state(recorded.run_id)
            assert final is not None and final["items"] == bare["items"]
            assert calls == bare_calls  # writing the record ran no reducer either
    finally:
        dbg.close()


def _by_node(items: list[tuple[Any, ...]]) -> dict[Any, list[tuple[Any, ...]]]:
    """Items grouped by their first field, in order within each group: parallel branches run
    sync nodes on threads, so only the order within a branch is fixed."""
    groups: dict[Any, list[tuple[Any, ...]]] = {}
    for key, *rest in items:
        groups.setdefault(key, []).append(tuple(rest))
    return groups


def _events(app: Any, input: Any) -> dict[Any, list[tuple[Any, ...]]]:
    """The ``astream_events`` (v2) sequence per node, without what differs between two equal
    runs (run ids, timestamps, task ids in checkpoint namespaces)."""

    async def collect() -> list[tuple[Any, ...]]:
        seen = []
        async for event in app.astream_events(input, version="v2"):
            metadata = event.get("metadata", {})
            seen.append(
                (
                    (  # one group per task: a Send task's path holds its packet's index
                        metadata.get("langgraph_node"),
                        metadata.get("langgraph_step"),
                        repr(metadata.get("langgraph_path")),
                    ),
                    event["event"],
                    event["name"],
                    tuple(sorted(event.get("tags", []))),
                    norm(repr(event.get("data", {}).get("chunk"))),
                )
            )
        return seen

    return _by_node(asyncio.run(collect()))


def _log_ops(app: Any, input: Any) -> dict[Any, list[tuple[Any, ...]]]:
    """The JSON-patch operations ``astream_log`` yields (op and path, ids taken out), per
    logged run."""

    async def collect() -> list[tuple[Any, ...]]:
        ops = []
        async for patch in app.astream_log(input):
            for op in patch.ops:
                path = re.sub(r":\d+$", "", op["path"])
                ops.append(
                    (path.split("/")[2] if path.startswith("/logs/") else "", op["op"], path)
                )
        return ops

    return _by_node(asyncio.run(collect()))


_STREAMED = {
    "linear": (lg.linear, {"x": 1}),
    "parallel_reducer": (lg.parallel, {"items": []}),
    "send_map_reduce": (lg.map_reduce, {"items": ["a", "b"]}),
    "compiled_subgraph": (lg.nested, {"x": 1}),
    "messages": (lg.messages_graph, None),
}


@pytest.mark.filterwarnings("ignore:astream_log is deprecated")  # still used, still served
@pytest.mark.parametrize("case", list(_STREAMED))
@pytest.mark.parametrize("setup", _SETUPS)
def test_event_streams_are_the_same(tmp_path: Path, case: str, setup: str) -> None:
    build, input = _STREAMED[case]
    input = input if input is not None else lg.messages_input()
    bare_events, bare_log = _events(build(), input), _log_ops(build(), input)
    # the nodes' own output reaches the stream (what went missing when a node was invoked
    # instead of streamed)
    assert any(
        e[0] == "on_chain_stream"
        for (node, *_), events in bare_events.items()
        if node
        for e in events
    )
    assert any(path.endswith("/streamed_output/-") for ops in bare_log.values() for _, path in ops)
    dbg = _debugger(setup, tmp_path)
    try:
        app = dbg.attach(build())
        assert _events(app, input) == bare_events
        assert _log_ops(app, input) == bare_log
    finally:
        dbg.close()


def _live(name: str, besides: tuple[Any, ...] | list[Any] = ()) -> list[Any]:
    """Objects of the class ``name`` alive after a full collection, other than ``besides``
    (what earlier tests left: the check is about the runs made here)."""
    gc.collect()
    return [
        o for o in gc.get_objects() if type(o).__name__ == name and all(o is not b for b in besides)
    ]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_no_run_outlives_itself(tmp_path: Path, mode: str) -> None:
    """After runs that completed, failed and were suspended by interrupt(), nothing of
    LangGraph's run loop stays alive because of the debugger's history of runs."""
    loop = "SyncPregelLoop" if mode == "invoke" else "AsyncPregelLoop"

    def failing() -> Any:
        def boom(s: lg.Linear) -> lg.Linear:
            raise ValueError("boom")

        g = StateGraph(lg.Linear)
        g.add_node("boom", boom)
        g.add_edge(START, "boom")
        return g.compile(name="failing")

    def runs(dbg: flowdbg.Debugger | None) -> None:
        graphs = [lg.linear(), failing(), lg.hitl(InMemorySaver()), lg.map_reduce()]
        inputs = [{"x": 1}, {"x": 1}, {"x": 1}, {"items": ["a", "b"]}]
        for app, input in zip(graphs, inputs, strict=True):
            if dbg is not None:
                dbg.attach(app)
            try:
                if mode == "invoke":
                    app.invoke(input, thread("t"))
                else:
                    asyncio.run(app.ainvoke(input, thread("t")))
            except ValueError:
                pass
        if dbg is not None:
            assert dbg.flush(T)

    earlier = _live(loop)
    runs(None)
    assert _live(loop, earlier) == []  # LangGraph itself keeps none: the check can see a leak

    with flowdbg.Debugger(db=tmp_path / "t.db") as dbg:
        dbg.break_after("*", condition="step < 0")
        runs(dbg)
        assert len(dbg.runs) == 4
        assert _live(loop, earlier) == []
        failed = [log.run for log in dbg.runs if log.run.status == "failed"]
        (error,) = [r.error for r in failed]
        assert error is not None and error.type == "ValueError"  # what the history keeps
        assert "boom" in error.traceback
