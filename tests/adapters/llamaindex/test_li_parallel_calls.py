"""Tool calls a step makes at once (``asyncio.gather``) are parallel branches: each has a branch
of its own, a stop at one holds only that call, and stepping from it stays on its line (tox env
``llamaindex_core``). Calls the step makes one after the other share the step's branch."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="llama-index-core is not installed")

from llama_index.core.tools import FunctionTool
from workflows import Workflow, step
from workflows.events import StartEvent, StopEvent

import flowdbg

WAIT = 10.0


def build(ran: list[str], done: dict[str, threading.Event] | None = None) -> Workflow:
    async def search(query: str) -> str:
        """Search the web."""
        ran.append(query)
        if done is not None and query in done:
            done[query].set()
        await asyncio.sleep(0.005)  # (a search takes a while: calls made at once overlap)
        return f"results for {query}"

    class Research(Workflow):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.search = FunctionTool.from_defaults(async_fn=search, name="search")

        @step
        async def look(self, ev: StartEvent) -> StopEvent:
            first = await self.search.acall(query="first")
            both = await asyncio.gather(
                self.search.acall(query="right"), self.search.acall(query="left")
            )
            return StopEvent(result=[str(first), *map(str, both)])

    return Research(timeout=10)


def test_calls_made_at_once_are_branches_of_their_own(tmp_path: Any) -> None:
    ran: list[str] = []
    wf = build(ran)
    dbg = flowdbg.Debugger(db=tmp_path / "p.db")
    try:
        dbg.attach(wf)
        assert dbg.start(wf.run).result(WAIT) == [
            "results for first",
            "results for right",
            "results for left",
        ]
        assert dbg.flush(WAIT) and dbg.store is not None
        (run,) = dbg.store.list_runs()
        steps = dbg.store.get_steps(run.run_id)
        look = next(s for s in steps if s.node == "look")
        calls = {s.input["query"]: s.branch for s in steps if s.kind == "tool"}
        assert calls["first"] == look.branch  # made by the step itself, in its line
        assert len({calls["left"], calls["right"], look.branch}) == 3
        assert all(str(calls[q]).startswith(f"{look.branch}/") for q in ("left", "right"))
    finally:
        dbg.close()


def test_parallel_calls_stop_on_their_own_branches_and_resume_one_at_a_time(
    dbg: flowdbg.Debugger,
) -> None:
    ran: list[str] = []
    done = {"left": threading.Event()}
    wf = build(ran, done)
    dbg.attach(wf)
    dbg.break_on_tool("search", condition="args['query'] != 'first'")
    run = dbg.start(wf.run)
    stops = dbg.wait_for_stops(2, WAIT)
    assert sorted(s.input["query"] for s in stops) == ["left", "right"]
    left, right = sorted(stops, key=lambda s: s.input["query"])
    assert left.location.branch != right.location.branch
    assert ran == ["first"]  # both held before their bodies
    dbg.resume(left.id)
    assert done["left"].wait(WAIT)
    assert ran == ["first", "left"]  # the resumed call ran; the other is still held
    assert dbg.stops == [right]
    dbg.resume(right.id)
    assert run.result(WAIT)[1:] == ["results for right", "results for left"]


def test_a_rerun_serving_calls_made_at_once_reports_no_divergence(tmp_path: Any) -> None:
    # served calls overlap as the recorded ones did, so the report compares them as concurrent
    # (in any order), not as two calls that swapped places
    ran: list[str] = []
    wf = build(ran)
    dbg = flowdbg.Debugger(db=tmp_path / "r.db")
    try:
        dbg.attach(wf)
        first = dbg.start(wf.run)
        expected = first.result(WAIT)
        assert dbg.flush(WAIT) and first.run_id is not None
        for _ in range(3):
            again = dbg.rerun(first.run_id, "all", target=wf)
            assert again.result(WAIT) == expected
            assert again.calls is not None and (again.calls.served, again.calls.live) == (3, 0)
            assert dbg.flush(WAIT) and dbg.store is not None and again.run_id is not None
            report = dbg.store.divergence(first.run_id, again.run_id)
            assert report.first is None, report.first
        assert ran == ["first", "right", "left"]  # the tool ran in the recorded run only
    finally:
        dbg.close()
