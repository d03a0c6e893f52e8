"""Rewinds of LlamaIndex runs held at a stop: the run goes on from the state after an earlier
step, in the caller's own ``wf.run()``, whose handler follows it (its result, its event stream
and its context's store are those of the run that goes on); the record keeps both runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("workflows", reason="the llamaindex extra is not installed")

from test_li_fork import Draft, Polished
from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent, WorkflowCancelledEvent

import flowdbg

WAIT = 10


class Progress(Event):
    msg: str


class Writer(Workflow):
    @step
    async def draft(self, ctx: Context, ev: StartEvent) -> Draft:
        await ctx.store.set("style", "plain")
        ctx.write_event_to_stream(Progress(msg="drafted"))
        return Draft(text=f"notes on {ev.topic}")

    @step
    async def polish(self, ctx: Context, ev: Draft) -> Polished:
        await ctx.store.set("polished", ev.text)
        ctx.write_event_to_stream(Progress(msg=f"polished {ev.text}"))
        return Polished(text=ev.text + ".")

    @step
    async def publish(self, ctx: Context, ev: Polished) -> StopEvent:
        style = await ctx.store.get("style")
        return StopEvent(result=ev.text.upper() if style == "shout" else ev.text)


def _debugger(tmp_path: Path, wf: Workflow) -> flowdbg.Debugger:
    dbg = flowdbg.Debugger(db=tmp_path / "flowdbg.db")
    dbg.attach(wf)
    return dbg


def test_the_handler_follows_the_run_that_goes_on(tmp_path: Path) -> None:
    wf = Writer(timeout=30)
    dbg = _debugger(tmp_path, wf)
    dbg.break_before("publish")
    seen: list[Any] = []

    async def run() -> tuple[Any, Any]:
        handler = wf.run(topic="bees")
        async for ev in handler.stream_events():
            seen.append(ev)
        result = await handler
        return result, await handler.ctx.store.get("style")

    try:
        handle = dbg.start(lambda: asyncio.run(run()))
        stop = dbg.wait_for_stop(WAIT)
        assert stop is not None and stop.location.node == "publish"
        first = stop.location.run_id
        # back to the state after draft, the style and the draft's text edited
        dbg.rewind(1, {"style": "shout", "output:text": "notes on wasps"})
        again = dbg.wait_for_stop(WAIT)
        assert again is not None and again.location.node == "publish"
        assert again.location.run_id != first
        assert dbg.inspect("text") == "notes on wasps."
        dbg.resume()
        result, style = handle.result(WAIT)
        assert dbg.flush(WAIT)
        store = dbg.store
        assert store is not None
        rewound, made = store.get_run(first), store.get_run(again.location.run_id)
    finally:
        dbg.close()
    assert result == "NOTES ON WASPS."
    assert style == "shout"  # handler.ctx reads the store of the run that went on
    assert handle.run_id == again.location.run_id
    # the stream: the rewound run's events up to the stop, then the new run's, to its end;
    # not the cancellation with which LlamaIndex ended the rewound run
    progress = [ev.msg for ev in seen if isinstance(ev, Progress)]
    assert progress == ["drafted", "polished notes on bees", "polished notes on wasps"]
    assert not any(isinstance(ev, WorkflowCancelledEvent) for ev in seen)
    assert isinstance(seen[-1], StopEvent) and seen[-1].result == "NOTES ON WASPS."
    assert rewound.status == "terminated"
    assert rewound.error is not None and rewound.error.type == "Rewound"
    assert (made.origin, made.forked_from, made.fork_step, made.status) == (
        "rewind",
        first,
        1,
        "completed",
    )


def test_a_rewind_to_the_input_runs_the_workflow_again(tmp_path: Path) -> None:
    wf = Writer(timeout=30)
    dbg = _debugger(tmp_path, wf)
    dbg.break_before("polish")

    async def run() -> Any:
        return await wf.run(topic="bees")

    try:
        handle = dbg.start(lambda: asyncio.run(run()))
        assert dbg.wait_for_stop(WAIT) is not None
        dbg.rewind(0, {"topic": "ants"})
        again = dbg.wait_for_stop(WAIT)
        assert again is not None and again.location.node == "polish"
        assert dbg.inspect("text") == "notes on ants"
        dbg.resume()
        assert handle.result(WAIT) == "notes on ants."
    finally:
        dbg.close()


def test_a_rewind_needs_recording(tmp_path: Path) -> None:
    wf = Writer(timeout=30)
    dbg = flowdbg.Debugger(record=False)
    dbg.attach(wf)
    dbg.break_before("publish")

    async def run() -> Any:
        return await wf.run(topic="bees")

    try:
        handle = dbg.start(lambda: asyncio.run(run()))
        stop = dbg.wait_for_stop(WAIT)
        assert stop is not None
        with pytest.raises(flowdbg.ForkError, match="record"):
            dbg.rewind(1)
        assert [s.id for s in dbg.stops] == [stop.id]  # the stop stays
        dbg.resume()
        assert handle.result(WAIT) == "notes on bees."
    finally:
        dbg.close()


def test_terminate_after_a_rewind_ends_the_run(tmp_path: Path) -> None:
    wf = Writer(timeout=30)
    dbg = _debugger(tmp_path, wf)
    dbg.break_before("publish")

    async def run() -> Any:
        handler = wf.run(topic="bees")
        events = [ev async for ev in handler.stream_events()]
        return events, await handler

    try:
        handle = dbg.start(lambda: asyncio.run(run()))
        assert dbg.wait_for_stop(WAIT) is not None
        dbg.rewind(1)
        dbg.terminate()
        with pytest.raises(flowdbg.Terminated):
            handle.result(WAIT)
    finally:
        dbg.close()
