"""Attached and recording, with breakpoints that never fire, a workflow gives the result and the
event stream it gives without flowdbg: LlamaIndex's own patterns (branches, loops, concurrent
workers, fan-out and fan-in, retries, ``@catch_error``, nested workflows, typed state, sync
steps, streaming, human in the loop, custom start and stop events, failures)."""

from __future__ import annotations

import asyncio
import collections
import gc
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import pytest

pytest.importorskip("workflows", reason="the llamaindex extra is not installed")

from pydantic import BaseModel
from workflows import Context, Workflow, catch_error, step
from workflows.collect import Collect
from workflows.events import (
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StartEvent,
    StepFailedEvent,
    StopEvent,
)
from workflows.retry_policy import retry_policy, stop_after_attempt, wait_fixed

import flowdbg

# -- the workflows -----------------------------------------------------------------------------


class Progress(Event):
    message: str


class Step1(Event):
    value: int


class Linear(Workflow):
    @step
    async def first(self, ctx: Context, ev: StartEvent) -> Step1:
        ctx.write_event_to_stream(Progress(message="first"))
        return Step1(value=ev.x + 1)

    @step
    async def second(self, ctx: Context, ev: Step1) -> StopEvent:
        ctx.write_event_to_stream(Progress(message=f"second got {ev.value}"))
        return StopEvent(result=ev.value * 2)


class Yes(Event):
    pass


class No(Event):
    pass


class Branch(Workflow):
    @step
    async def decide(self, ev: StartEvent) -> Yes | No:
        return Yes() if ev.x > 0 else No()

    @step
    async def yes(self, ev: Yes) -> StopEvent:
        return StopEvent(result="positive")

    @step
    async def no(self, ev: No) -> StopEvent:
        return StopEvent(result="not positive")


class Draft(Event):
    text: str
    round: int


class Reflection(Workflow):
    """Generate, check, retry with feedback until the check passes (a reflection loop)."""

    @step
    async def generate(self, ctx: Context, ev: StartEvent | Draft) -> Draft | StopEvent:
        round = ev.round + 1 if isinstance(ev, Draft) else 1
        text = f"draft {round}"
        ctx.write_event_to_stream(Progress(message=text))
        if round >= 3:
            return StopEvent(result=text)
        return Draft(text=text, round=round)


class Chunk(Event):
    index: int


class Summary(Event):
    index: int
    words: int


class Concurrent(Workflow):
    """send_event to several workers, collect_events to gather them."""

    @step
    async def split(self, ctx: Context, ev: StartEvent) -> Chunk | None:
        await ctx.store.set("chunks", len(ev.texts))
        await ctx.store.set("texts", ev.texts)
        for index in range(len(ev.texts)):
            ctx.send_event(Chunk(index=index))
        return None

    @step(num_workers=4)
    async def summarize(self, ctx: Context, ev: Chunk) -> Summary:
        texts = await ctx.store.get("texts")
        await asyncio.sleep(0.001 * (len(texts) - ev.index))
        return Summary(index=ev.index, words=len(texts[ev.index].split()))

    @step
    async def combine(self, ctx: Context, ev: Summary) -> StopEvent | None:
        summaries = ctx.collect_events(ev, [Summary] * await ctx.store.get("chunks"))
        if summaries is None:
            return None
        return StopEvent(result=sorted((s.index, s.words) for s in summaries))


class Part(Event):
    n: int


class PartDone(Event):
    n: int


class FanOut(Workflow):
    """A list return fans out; a list parameter fans in once."""

    @step
    async def fan(self, ev: StartEvent) -> list[Part]:
        return [Part(n=n) for n in range(ev.count)]

    @step
    async def work(self, ev: Part) -> PartDone:
        return PartDone(n=ev.n * ev.n)

    @step
    async def join(self, parts: Annotated[list[PartDone], Collect()]) -> StopEvent:
        return StopEvent(result=sum(p.n for p in parts))


class Flaky(Workflow):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls = 0

    @step(retry_policy=retry_policy(wait=wait_fixed(0.001), stop=stop_after_attempt(4)))
    async def unreliable(self, ev: StartEvent) -> StopEvent:
        self.calls += 1
        if self.calls < 3:
            raise ConnectionError(f"try {self.calls}")
        return StopEvent(result=f"ok on try {self.calls}")


class Guarded(Workflow):
    @step
    async def risky(self, ev: StartEvent) -> StopEvent:
        raise ValueError(f"bad {ev.x}")

    @catch_error
    async def recover(self, ev: StepFailedEvent) -> StopEvent:
        return StopEvent(result=f"recovered: {ev.exception}")


class Inner(Workflow):
    @step
    async def inner(self, ctx: Context, ev: StartEvent) -> StopEvent:
        ctx.write_event_to_stream(Progress(message="inner"))
        return StopEvent(result=ev.x * 10)


class Outer(Workflow):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.child = Inner(timeout=30)

    @step
    async def outer(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await self.child.run(x=ev.x) + 1)


class Counter(BaseModel):
    count: int = 0
    seen: list[str] = []


class Tick(Event):
    pass


class TypedState(Workflow):
    @step
    async def start(self, ctx: Context[Counter], ev: StartEvent) -> Tick:
        async with ctx.store.edit_state() as state:
            state.count += 1
            state.seen.append("start")
        return Tick()

    @step
    async def tick(self, ctx: Context[Counter], ev: Tick) -> StopEvent:
        async with ctx.store.edit_state() as state:
            state.count += 10
            state.seen.append("tick")
        final = await ctx.store.get_state()
        return StopEvent(result=(final.count, list(final.seen)))


class SyncSteps(Workflow):
    @step
    def double(self, ev: StartEvent) -> Step1:
        return Step1(value=ev.x * 2)

    @step
    def add(self, ev: Step1) -> StopEvent:
        return StopEvent(result=ev.value + 3)


class Ask(Workflow):
    """Human in the loop: wait_for_event with an InputRequiredEvent on the stream."""

    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        answer = await ctx.wait_for_event(
            HumanResponseEvent, waiter_id="name", waiter_event=InputRequiredEvent(prefix="name?")
        )
        return StopEvent(result=f"hi {answer.response}")


class Topic(StartEvent):
    topic: str
    depth: int = 1


class Report(StopEvent):
    title: str
    sections: list[str]


class CustomEvents(Workflow):
    @step
    async def write(self, ev: Topic) -> Report:
        return Report(title=ev.topic.upper(), sections=[f"part {i}" for i in range(ev.depth)])


class Broken(Workflow):
    @step
    async def ok(self, ev: StartEvent) -> Step1:
        return Step1(value=1)

    @step
    async def fails(self, ev: Step1) -> StopEvent:
        raise KeyError(f"missing {ev.value}")


#: name -> (build the workflow, run kwargs, whether the stream's order is deterministic)
CASES: dict[str, tuple[Callable[[], Workflow], dict[str, Any], bool]] = {
    "linear": (lambda: Linear(timeout=30), {"x": 1}, True),
    "branch-yes": (lambda: Branch(timeout=30), {"x": 1}, True),
    "branch-no": (lambda: Branch(timeout=30), {"x": -1}, True),
    "reflection-loop": (lambda: Reflection(timeout=30), {}, True),
    "concurrent-collect": (lambda: Concurrent(timeout=30), {"texts": ["a b", "c", "d e f"]}, False),
    "list-fan-out-in": (lambda: FanOut(timeout=30), {"count": 5}, False),
    "retries": (lambda: Flaky(timeout=30), {}, True),
    "catch-error": (lambda: Guarded(timeout=30), {"x": 3}, True),
    "nested": (lambda: Outer(timeout=30), {"x": 4}, True),
    "typed-state": (lambda: TypedState(timeout=30), {}, True),
    "sync-steps": (lambda: SyncSteps(timeout=30), {"x": 5}, True),
    "human-in-the-loop": (lambda: Ask(timeout=30), {}, True),
    "custom-events": (lambda: CustomEvents(timeout=30), {"topic": "flowdbg", "depth": 2}, True),
    "failing": (lambda: Broken(timeout=30), {}, True),
}


#: fields of LlamaIndex's own events that measure time, different on every run
_TIMINGS = ("elapsed_seconds",)


def _event(event: Any) -> tuple[str, str]:
    data = event.model_dump(mode="json") if hasattr(event, "model_dump") else event
    if isinstance(data, dict):
        data = {key: value for key, value in data.items() if key not in _TIMINGS}
    return type(event).__name__, repr(data)


async def _run(wf: Workflow, kwargs: dict[str, Any]) -> tuple[Any, list[tuple[str, str]]]:
    handler = wf.run(**kwargs)
    assert handler.ctx.is_running
    stream = []
    async for event in handler.stream_events():
        stream.append(_event(event))
        if isinstance(event, InputRequiredEvent):
            handler.ctx.send_event(HumanResponseEvent(response="ada"))
    try:
        result = await handler
    except Exception as exc:
        result = ("raised", type(exc).__name__, str(exc))
    if isinstance(result, BaseModel):
        result = _event(result)
    # the handler and its context answer as without flowdbg: done, and a snapshot of the run
    # (what Context.from_dict restores) with its store
    snapshot = handler.ctx.to_dict()
    state = snapshot.get("state") or {}
    return (result, handler.is_done(), sorted(snapshot), state.get("state_data")), stream


@pytest.mark.parametrize("name", list(CASES))
def test_attached_and_recording_changes_nothing(name: str, tmp_path: Path) -> None:
    build, kwargs, ordered = CASES[name]
    bare_result, bare_stream = asyncio.run(_run(build(), kwargs))

    dbg = flowdbg.Debugger(db=str(tmp_path / "flowdbg.db"))
    try:
        wf = build()
        dbg.attach(wf)
        dbg.break_after("*", condition="step < 0")
        dbg.break_before("*", hit_condition=">=1000")
        dbg.break_on_exception("KeyboardInterrupt")
        run = dbg.start(lambda: asyncio.run(_run(wf, kwargs)))
        assert dbg.wait_for_stop(10) is None
        result, stream = run.result(10)
        assert dbg.flush(10)
        logs = dbg.runs
        assert logs, "the attached run was not seen"
        assert any(log.steps for log in logs)
    finally:
        dbg.close()
    assert result == bare_result
    if ordered:
        assert stream == bare_stream
    else:
        assert sorted(stream) == sorted(bare_stream)


def _cyclic_garbage(go: Callable[[], Any]) -> collections.Counter[str]:
    """The objects of LlamaIndex and flowdbg that ``go()`` leaves in reference cycles (only a
    garbage collection frees them), by type."""
    gc.collect()
    gc.disable()
    try:
        go()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found = collections.Counter(
            type(o).__qualname__
            for o in gc.garbage
            if type(o).__module__.startswith(("workflows", "flowdbg"))
        )
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return found


def test_attached_runs_leave_no_cycles(dbg: flowdbg.Debugger) -> None:
    """An attached run is freed by reference counting where the bare run is: a reference cycle
    would keep the run's whole state alive until a garbage collection, whose cost was most of
    the attached overhead (bench/RESULTS.md). (A run that fails, or waits for a human, leaves
    cycles of LlamaIndex's own, which hold flowdbg's objects of the run too: not checked.)"""
    checked = []
    for name, (build, kwargs, _) in CASES.items():
        bare = build()
        attached = build()
        dbg.attach(attached)
        for wf in (bare, attached):  # the first run of each registers its steps
            asyncio.run(_run(wf, kwargs))
        if _cyclic_garbage(lambda wf=bare, kwargs=kwargs: asyncio.run(_run(wf, kwargs))):
            continue
        garbage = _cyclic_garbage(lambda wf=attached, kwargs=kwargs: asyncio.run(_run(wf, kwargs)))
        assert not garbage, name
        checked.append(name)
    assert {"linear", "concurrent-collect", "nested"} <= set(checked), checked


def _events_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Event))


def test_finished_runs_in_the_run_log_keep_no_events_alive(dbg: flowdbg.Debugger) -> None:
    """A finished run stays in ``dbg.runs`` (20 of them by default) with its steps' inputs and
    outputs as a stop shows them (the events' fields), not with LlamaIndex's event objects:
    those would live as long as the run is kept, long enough for the garbage collector to
    promote them to its oldest generation and scan them in its full collections
    (bench/RESULTS.md). What the run log shows is unchanged."""
    kept = {}
    for name, (build, kwargs, _) in CASES.items():
        bare = build()
        attached = build()
        dbg.attach(attached)
        asyncio.run(_run(bare, kwargs))
        baseline = _events_alive()
        asyncio.run(_run(attached, kwargs))
        kept[name] = _events_alive() - baseline
    # catch-error: the recovering step's input, a StepFailedEvent, has the failed step's
    # input event and its exception (with its traceback) among its fields, which its stop
    # shows and the run log keeps
    assert kept == {name: 3 if name == "catch-error" else 0 for name in CASES}
    linear = Linear(timeout=30)
    dbg.attach(linear)
    asyncio.run(_run(linear, {"x": 1}))
    steps = dbg.runs[-1].steps
    assert [(s.node, s.input, s.output, s.decision) for s in steps] == [
        ("first", {"x": 1}, {"value": 2}, {"second": "Step1"}),
        ("second", {"value": 2}, {"result": 4}, {"__end__": "StopEvent"}),
    ]
