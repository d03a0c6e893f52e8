"""A LlamaIndex run cannot be forked (the adapter lacks the capability): refused, saying so."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("workflows")

from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

import flowdbg


class Draft(Event):
    text: str


class Writer(Workflow):
    @step
    async def draft(self, ctx: Context, ev: StartEvent) -> Draft:
        return Draft(text=f"notes on {ev.topic}")

    @step
    async def summarize(self, ctx: Context, ev: Draft) -> StopEvent:
        return StopEvent(result=ev.text.upper())


async def write(wf: Writer) -> str:
    return str(await wf.run(topic="forks"))


def test_forking_a_llamaindex_run_is_refused_by_capability(tmp_path: Path) -> None:
    wf = Writer(timeout=10)
    with flowdbg.Debugger(db=tmp_path / "f.db") as dbg:
        dbg.attach(wf)
        handle = dbg.start(write, wf)
        assert handle.result(timeout=10) == "NOTES ON FORKS"
        assert dbg.flush(10) and handle.run_id is not None
        with pytest.raises(flowdbg.ForkError, match=r"adapter 'llamaindex' cannot fork runs"):
            dbg.fork(handle.run_id, 1, target=wf)


def test_rewinding_a_llamaindex_run_is_refused_without_pointing_at_a_fork(tmp_path: Path) -> None:
    wf = Writer(timeout=10)
    with flowdbg.Debugger(db=tmp_path / "f.db") as dbg:
        dbg.attach(wf)
        dbg.break_before("summarize")
        handle = dbg.start(write, wf)
        assert dbg.wait_for_stop(10) is not None
        with pytest.raises(flowdbg.ForkError) as refused:
            dbg.rewind(1)
        assert str(refused.value) == (
            "adapter 'llamaindex' cannot rewind a run (no capability 'rewind'); set a "
            "breakpoint where you want to look, and run it again"
        )  # (it cannot be forked either: no command that fails too)
        dbg.resume()
        assert handle.result(timeout=10) == "NOTES ON FORKS"
