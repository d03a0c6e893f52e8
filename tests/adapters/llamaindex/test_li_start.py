"""``dbg.start(wf.run, ...)``: a workflow's ``run`` needs an event loop running when it is
called, so the debugger's worker calls it in one; a callable that calls it outside a loop fails
with a note saying what to pass instead."""

from __future__ import annotations

import gc

import pytest

pytest.importorskip("workflows", reason="the llamaindex extra is not installed")

from workflows import Workflow, step
from workflows.events import Event, StartEvent, StopEvent

import flowdbg

WAIT = 10.0


class Draft(Event):
    text: str


class Writer(Workflow):
    @step
    async def draft(self, ev: StartEvent) -> Draft:
        return Draft(text=f"notes on {ev.topic}")

    @step
    async def summarize(self, ev: Draft) -> StopEvent:
        return StopEvent(result=ev.text.upper())


def test_start_runs_a_workflows_run_method_in_an_event_loop(dbg: flowdbg.Debugger) -> None:
    wf = Writer(timeout=10)
    dbg.attach(wf)
    dbg.break_before("summarize")
    run = dbg.start(wf.run, topic="flowdbg")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.node == "summarize"
    assert dbg.inspect("text") == "notes on flowdbg"
    dbg.set("text", "edited")
    dbg.resume()
    assert run.result(WAIT) == "EDITED"  # what awaiting the handler gives
    assert run.run_id == stop.location.run_id


# LlamaIndex makes the run's coroutine before it finds no loop to schedule it on, and Python
# warns when that coroutine is collected unawaited (the same without flowdbg)
_UNAWAITED = pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnraisableExceptionWarning", "ignore:coroutine:RuntimeWarning"
)


@_UNAWAITED
def test_start_of_a_method_of_a_workflow_not_attached_is_called_as_given(
    dbg: flowdbg.Debugger,
) -> None:
    wf = Writer(timeout=10)  # not attached: the debugger does not guess what it needs
    run = dbg.start(wf.run, topic="x")
    exc = run.exception(WAIT)
    assert isinstance(exc, RuntimeError) and "no running event loop" in str(exc)
    notes = "\n".join(getattr(exc, "__notes__", []))
    assert "dbg.start(wf.run, ...)" in notes and "async def main()" in notes
    del run, exc
    gc.collect()  # the unawaited coroutine goes while the warning is ignored


@_UNAWAITED
def test_a_callable_calling_run_outside_a_loop_is_told_what_to_pass(
    dbg: flowdbg.Debugger,
) -> None:
    wf = Writer(timeout=10)
    dbg.attach(wf)
    run = dbg.start(lambda: wf.run(topic="x"))
    with pytest.raises(RuntimeError, match="no running event loop") as info:
        run.result(WAIT)
    assert any("dbg.start(wf.run, ...)" in note for note in info.value.__notes__)
    # the workflow still runs under the debugger afterwards
    assert dbg.start(wf.run, topic="y").result(WAIT) == "NOTES ON Y"
    del run, info
    gc.collect()
