"""Forks of recorded LlamaIndex runs: a new run of the current workflow from the recorded store
and the events the step emitted, edited; refused where the record cannot give a state the
workflow had (concurrent workers), and from the command line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("workflows", reason="the llamaindex extra is not installed")

from click.testing import CliRunner
from pydantic import BaseModel
from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

import flowdbg
from flowdbg.cli import cli
from flowdbg.timetravel import forkable_steps

WAIT = 10


class Draft(Event):
    text: str


class Polished(Event):
    text: str


class Writer(Workflow):
    @step
    async def draft(self, ctx: Context, ev: StartEvent) -> Draft:
        await ctx.store.set("style", "plain")
        return Draft(text=f"notes on {ev.topic}")

    @step
    async def polish(self, ctx: Context, ev: Draft) -> Polished:
        await ctx.store.set("polished", True)
        return Polished(text=ev.text + ".")

    @step
    async def publish(self, ctx: Context, ev: Polished) -> StopEvent:
        style = await ctx.store.get("style")
        return StopEvent(result=ev.text.upper() if style == "shout" else ev.text)


class Plain(Workflow):
    """The writer as it was before: its draft step emits an event the writer lacks."""

    @step
    async def draft(self, ctx: Context, ev: StartEvent) -> Polished:
        return Polished(text="x")

    @step
    async def publish(self, ctx: Context, ev: Polished) -> StopEvent:
        return StopEvent(result=ev.text)


async def write(wf: Workflow) -> Any:
    return await wf.run(topic="forks")


async def plain(wf: Workflow) -> Any:
    return await wf.run()


def recorded(dbg: flowdbg.Debugger, wf: Workflow) -> str:
    dbg.attach(wf)
    handle = dbg.start(write, wf)
    assert handle.result(timeout=WAIT) == "notes on forks."
    assert dbg.flush(WAIT) and handle.run_id is not None
    return handle.run_id


@pytest.fixture
def rec(tmp_path: Path) -> Any:
    with flowdbg.Debugger(db=tmp_path / "f.db") as debugger:
        yield debugger


def test_a_store_edit_at_step_2_changes_what_the_later_step_does(rec: flowdbg.Debugger) -> None:
    wf = Writer(timeout=10)
    run_id = recorded(rec, wf)
    fork = rec.fork(run_id, 2, {"style": "shout"}, target=wf)
    assert fork.result(timeout=WAIT) == "NOTES ON FORKS."
    assert rec.flush(WAIT) and fork.run_id is not None
    store = rec.store
    assert store is not None
    made = store.get_run(fork.run_id)
    assert (made.origin, made.forked_from, made.fork_step) == ("fork", run_id, 2)
    assert made.input == {"style": "shout", "polished": True}
    steps = store.get_steps(fork.run_id)
    assert [(s.node, s.input) for s in steps] == [("publish", {"text": "notes on forks."})]
    # unedited, it ends as the run did, from every step
    for after in forkable_steps(store.get_run(run_id), store.get_steps(run_id, values=False)):
        assert rec.fork(run_id, after, target=wf).result(timeout=WAIT) == "notes on forks."
    report = store.divergence(run_id, fork.run_id)
    assert report.edited == ["style"]


def test_an_edit_of_the_steps_event_reaches_the_step_it_goes_to(rec: flowdbg.Debugger) -> None:
    wf = Writer(timeout=10)
    run_id = recorded(rec, wf)
    fork = rec.fork(run_id, 1, {"output:text": "edited"}, target=wf)
    assert fork.result(timeout=WAIT) == "edited."
    with pytest.raises(flowdbg.ForkError, match=r"the view 'input', which a fork of a llamaindex"):
        rec.fork(run_id, 1, {"input:text": "x"}, target=wf)
    with pytest.raises(flowdbg.ForkError, match=r"Draft .* does not fit the current code's Draft"):
        rec.fork(run_id, 1, {"output:text": ["not", "text"]}, target=wf)
    # the view named without its colon: the store has no key 'output', and the message says
    # how to name the view
    with pytest.raises(flowdbg.ForkError, match=r"name the view: output:text$"):
        rec.fork(run_id, 1, {"output.text": "x"}, target=wf)


def test_a_fork_after_the_last_step_with_an_edited_result_reports_the_results_differ(
    rec: flowdbg.Debugger,
) -> None:
    wf = Writer(timeout=10)
    run_id = recorded(rec, wf)
    fork = rec.fork(run_id, 3, {"output:result": "EDITED"}, target=wf)
    assert fork.result(timeout=WAIT) == "EDITED"  # no step ran after the stop event
    assert rec.flush(WAIT) and rec.store is not None and fork.run_id is not None
    report = rec.store.divergence(run_id, fork.run_id)
    first = report.first
    assert first is not None and first.detail == "the runs' results differ"
    assert (first.step_b, first.paths, report.old, report.new) == (
        None,
        ["result"],
        "notes on forks.",
        "EDITED",
    )
    same = rec.fork(run_id, 3, target=wf)  # nothing edited: nothing differs
    assert same.result(timeout=WAIT) == "notes on forks."
    assert rec.flush(WAIT) and same.run_id is not None
    assert rec.store.divergence(run_id, same.run_id).first is None


def test_a_fork_stops_at_a_breakpoint_and_an_edit_there_counts(rec: flowdbg.Debugger) -> None:
    wf = Writer(timeout=10)
    run_id = recorded(rec, wf)
    rec.break_before("publish")
    fork = rec.fork(run_id, 1, target=wf)
    stop = rec.wait_for_stop(WAIT)
    assert stop is not None and stop.location.node == "publish"
    assert stop.location.run_id == fork.run_id
    assert rec.inspect("text") == "notes on forks."
    assert rec.inspect("state:polished") is True
    rec.set("text", "held")
    rec.resume()
    assert fork.result(timeout=WAIT) == "held"


def test_an_event_type_the_current_workflow_lacks_is_refused(rec: flowdbg.Debugger) -> None:
    run_id = recorded(rec, Writer(timeout=10))
    with pytest.raises(flowdbg.ForkError) as refused:
        rec.fork(run_id, 1, target=Plain(timeout=10))
    assert str(refused.value) == (
        "step 1 (draft) emitted a Draft, an event type workflow 'Plain' no longer has (its "
        "events: Polished, StartEvent, StopEvent); fork after another step, or give the "
        "workflow that has it (--target)"
    )


class Work(Event):
    item: int


class Result(Event):
    value: int


class Fan(Workflow):
    @step
    async def fan(self, ctx: Context, ev: StartEvent) -> Work:
        await ctx.store.set("items", 3)
        for item in range(3):
            ctx.send_event(Work(item=item))
        return None  # type: ignore[return-value]

    @step(num_workers=3)
    async def work(self, ctx: Context, ev: Work) -> Result:
        for _ in range(3):  # the three workers take turns: they run concurrently
            await asyncio.sleep(0)
        return Result(value=ev.item * 10)

    @step
    async def gather(self, ctx: Context, ev: Result) -> StopEvent | None:
        results = ctx.collect_events(ev, [Result] * await ctx.store.get("items"))
        if results is None:
            return None
        return StopEvent(result=sum(r.value for r in results))


class Left(Event):
    x: int


class Right(Event):
    x: int


class Joined(Event):
    x: int


class TwoShapes(Workflow):
    """A step sending two events of one shape (their fields alike) to two steps."""

    @step
    async def split(self, ctx: Context, ev: StartEvent) -> Left | Right | None:
        ctx.send_event(Left(x=1))
        ctx.send_event(Right(x=2))
        return None

    @step
    async def left(self, ev: Left) -> Joined:
        return Joined(x=ev.x * 10)

    @step
    async def right(self, ev: Right) -> Joined:
        return Joined(x=ev.x * 100)

    @step
    async def join(self, ctx: Context, ev: Joined) -> StopEvent | None:
        got = ctx.collect_events(ev, [Joined, Joined])
        return None if got is None else StopEvent(result=sum(j.x for j in got))


def test_events_of_one_shape_are_told_apart_by_the_steps_that_received_them(
    rec: flowdbg.Debugger,
) -> None:
    """The record of a step's output keeps its events' fields: two events alike in shape and
    of different types are rebuilt as the types the steps that received them took (they were
    refused as ambiguous)."""
    wf = TwoShapes(timeout=10)
    rec.attach(wf)
    handle = rec.start(plain, wf)
    assert handle.result(timeout=WAIT) == 210
    assert rec.flush(WAIT) and handle.run_id is not None
    assert rec.fork(handle.run_id, 1, target=wf).result(timeout=WAIT) == 210
    edited = rec.fork(handle.run_id, 1, {"output:[1].x": 5}, target=wf)
    assert edited.result(timeout=WAIT) == 10 + 500  # the Right event, edited


def test_a_fork_at_a_concurrent_worker_is_refused_naming_the_forkable_steps(
    rec: flowdbg.Debugger,
) -> None:
    wf = Fan(timeout=10)
    rec.attach(wf)
    handle = rec.start(plain, wf)
    assert handle.result(timeout=WAIT) == 30
    assert rec.flush(WAIT) and handle.run_id is not None
    store = rec.store
    assert store is not None
    run, steps = store.get_run(handle.run_id), store.get_steps(handle.run_id, values=False)
    refused = rec.adapter_for(wf).fork_problems(store, run, steps)
    forkable = forkable_steps(run, steps, refused)
    workers = [s.step for s in steps if s.node == "work"]
    assert len(workers) == 3 and not set(workers) & set(forkable)
    assert forkable[:2] == [0, 1]  # the fan-out step: its three events are all in flight
    listed = ", ".join(map(str, forkable))
    with pytest.raises(flowdbg.ForkError) as info:
        rec.fork(handle.run_id, workers[0], target=wf)
    message = str(info.value)
    assert f"cannot fork run {handle.run_id[:8]} after step {workers[0]}: " in message
    # the worker ran beside the others, or (when it ended before they started) while their
    # events were waiting for them: either way, a state the store and its event do not make
    assert (
        "ran beside steps" in message
        or f"step {workers[0]} (work) ended while 2 event(s) emitted before it were still on "
        "their way to their steps"
        in message
    )
    assert message.endswith(f"it can be forked after steps {listed}")
    assert rec.fork(handle.run_id, 1, target=wf).result(timeout=WAIT) == 30
    idle = next(s.step for s in steps if s.node == "gather")  # it kept its event to collect
    assert "emitted no event" in refused[idle]


class Gathered(Event):
    numbers: list[int]


class FanThenReport(Workflow):
    """Fan-out, a ``collect_events`` fan-in, then one more step: LlamaIndex may run the fan-in
    again for events it already buffered, so its invocations outnumber the events."""

    @step
    async def fan(self, ctx: Context, ev: StartEvent) -> Work:
        await ctx.store.set("items", 3)
        for item in range(3):
            ctx.send_event(Work(item=item))
        return None  # type: ignore[return-value]

    @step(num_workers=3)
    async def work(self, ev: Work) -> Result:
        await asyncio.sleep(0.001 * (3 - ev.item))
        return Result(value=ev.item * 10)

    @step
    async def gather(self, ctx: Context, ev: Result) -> Gathered | None:
        results = ctx.collect_events(ev, [Result] * await ctx.store.get("items"))
        if results is None:
            return None
        return Gathered(numbers=sorted(r.value for r in results))

    @step
    async def report(self, ev: Gathered) -> StopEvent:
        return StopEvent(result=f"{len(ev.numbers)} values, sum {sum(ev.numbers)}")


def test_the_step_a_fan_in_releases_its_events_from_can_be_forked_with_an_edit(
    rec: flowdbg.Debugger,
) -> None:
    wf = FanThenReport(timeout=10)
    rec.attach(wf)
    handle = rec.start(plain, wf)
    assert handle.result(timeout=WAIT) == "3 values, sum 30"
    assert rec.flush(WAIT) and handle.run_id is not None
    store = rec.store
    assert store is not None
    steps = store.get_steps(handle.run_id)
    # the fan-in invocation that emitted the gathered event: everything after it descends
    # from that event, so nothing else was in flight, however many times the fan-in ran
    released = next(s.step for s in steps if s.node == "gather" and s.output)
    fork = rec.fork(handle.run_id, released, {"output:numbers": [1, 2]}, target=wf)
    assert fork.result(timeout=WAIT) == "2 values, sum 3"
    assert rec.flush(WAIT) and fork.run_id is not None
    assert [s.node for s in store.get_steps(fork.run_id)] == ["report"]


class Counts(BaseModel):
    count: int = 0
    label: str = ""


class Typed(Workflow):
    @step
    async def first(self, ctx: Context[Counts], ev: StartEvent) -> Draft:
        async with ctx.store.edit_state() as state:
            state.count = 1
        return Draft(text="a")

    @step
    async def second(self, ctx: Context[Counts], ev: Draft) -> StopEvent:
        state = await ctx.store.get_state()
        return StopEvent(result=f"{ev.text}{state.count}{state.label}")


def test_a_typed_state_is_rebuilt_and_checked(rec: flowdbg.Debugger) -> None:
    wf = Typed(timeout=10)
    rec.attach(wf)
    handle = rec.start(plain, wf)
    assert handle.result(timeout=WAIT) == "a1"
    assert rec.flush(WAIT) and handle.run_id is not None
    fork = rec.fork(handle.run_id, 1, {"count": 7, "label": "!"}, target=wf)
    assert fork.result(timeout=WAIT) == "a7!"
    with pytest.raises(flowdbg.ForkError, match=r"does not fit the workflow's state Counts"):
        rec.fork(handle.run_id, 1, {"count": "many"}, target=wf)
    # a key the state has no field for would be dropped: refused, naming the fields
    with pytest.raises(flowdbg.ForkError, match=r"sets 'nokey', which the workflow's state"):
        rec.fork(handle.run_id, 1, {"state:nokey": 1}, target=wf)


def test_a_rewind_to_a_step_a_fork_cannot_start_after_is_refused(rec: flowdbg.Debugger) -> None:
    """A rewind goes on as a fork would: a step the record cannot give the state after (a
    worker that ran beside the others) is refused, naming the steps it can go back to, and the
    stop stays; the fan-out step before them can (see test_li_rewind.py for the rest)."""
    wf = Fan(timeout=10)
    rec.attach(wf)
    rec.break_before("gather")
    handle = rec.start(plain, wf)
    stop = rec.wait_for_stop(WAIT)
    assert stop is not None
    run_id = stop.location.run_id
    workers = [u.step for u in rec.runs[-1].steps if u.node == "work" and u.status == "completed"]
    assert workers, "a worker ended before the first gather"
    with pytest.raises(flowdbg.ForkError) as refused:
        rec.rewind(workers[0])
    assert f"cannot rewind: cannot fork run {run_id[:8]} after step {workers[0]}" in str(
        refused.value
    )
    assert "it can be forked after steps 0, 1" in str(refused.value)
    assert stop.id in {s.id for s in rec.stops}  # nothing resumed
    rec.rewind(1)  # after the fan-out: its three events on their way again
    again = rec.wait_for_stop(WAIT)
    assert again is not None and again.location.run_id != run_id
    rec.clear()
    rec.resume_all()
    assert handle.result(timeout=WAIT) == 30


# -- the command line ---------------------------------------------------------------------------

FLOW = """
from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent


class Draft(Event):
    text: str


class Writer(Workflow):
    @step
    async def draft(self, ctx: Context, ev: StartEvent) -> Draft:
        await ctx.store.set("style", "plain")
        return Draft(text=f"notes on {ev.topic}")

    @step
    async def publish(self, ctx: Context, ev: Draft) -> StopEvent:
        style = await ctx.store.get("style")
        return StopEvent(result=ev.text.upper() if style == "shout" else ev.text)


wf = Writer(timeout=10)
"""


def flowdbg_cli(*args: str, input: str | None = None) -> str:
    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def flow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("FLOWDBG_DB", str(tmp_path / "flowdbg.db"))
    monkeypatch.setenv("FLOWDBG_HISTORY", str(tmp_path / "history"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.py").write_text(FLOW)
    flowdbg_cli("run", "flow.py:wf", "--input", '{"topic": "x"}', input="")
    runs = json.loads(flowdbg_cli("runs", "ls", "--json"))["data"]["runs"]
    return str(runs[0]["short_id"])


def test_runs_fork_debugs_a_llamaindex_run_from_a_step(flow: str) -> None:
    out = flowdbg_cli(
        "runs",
        "fork",
        flow,
        "--step",
        "1",
        "--set",
        'style="shout"',
        "-b",
        "publish",
        input="p text\np state:style\nc\n",
    )
    assert f"forking run {flow} after step 1 with " in out
    assert "stop-1: breakpoint [bp-1] at before node 'publish' (step 1)" in out
    assert "(flowdbg) p text\n'notes on x'" in out
    assert "(flowdbg) p state:style\n'shout'" in out
    assert '"NOTES ON X"' in out
    runs = json.loads(flowdbg_cli("runs", "ls", "--json"))["data"]["runs"]
    assert (runs[0]["origin"], runs[0]["fork_step"], runs[0]["steps"]) == ("fork", 1, 1)


def test_runs_fork_json_prints_the_new_run_and_its_steps(flow: str) -> None:
    data = json.loads(
        flowdbg_cli("runs", "fork", flow, "--step", "1", "--set", 'output:text="mine"', "--json")
    )["data"]
    assert data["run"]["output"] == "mine"
    assert data["run"]["input"] == {"style": "plain"}
    assert data["run"]["origin"] == "fork"
    assert [s["node"] for s in data["steps"]] == ["publish"]
    assert data["edits"] == {"output:text": "mine"}
