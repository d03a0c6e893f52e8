"""LlamaIndex's own features under flowdbg: concurrent workers, fan-in, retries,
``@catch_error``, nested workflows, ``wait_for_event``, timeouts, cancelling, detaching."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("workflows", reason="the llamaindex extra is not installed")

from workflows import Context, Workflow, catch_error, step
from workflows.errors import WorkflowCancelledByUser, WorkflowTimeoutError
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
from flowdbg import StopReason

WAIT = 10.0


def start(dbg: flowdbg.Debugger, wf: Workflow, **kwargs: Any) -> flowdbg.RunHandle:
    """Run ``wf`` with ``kwargs`` in a worker of the debugger (its own event loop)."""

    async def go() -> Any:
        return await wf.run(**kwargs)

    return dbg.start(lambda: asyncio.run(go()))


def stop_at(dbg: flowdbg.Debugger, node: str, position: str = "before") -> flowdbg.Stop:
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None, f"expected a stop at {node!r}, got none"
    assert (stop.location.node, stop.location.position) == (node, position), str(stop)
    return stop


# -- concurrent workers ------------------------------------------------------------------------


class Item(Event):
    n: int


class Squared(Event):
    n: int


class Workers(Workflow):
    @step
    async def fan(self, ctx: Context, ev: StartEvent) -> Item | None:
        await ctx.store.set("count", len(ev.numbers))
        for n in ev.numbers:
            ctx.send_event(Item(n=n))
        return None

    @step(num_workers=4)
    async def square(self, ev: Item) -> Squared:
        return Squared(n=ev.n * ev.n)

    @step
    async def gather(self, ctx: Context, ev: Squared) -> StopEvent | None:
        count = await ctx.store.get("count")
        got = ctx.collect_events(ev, [Squared] * count)
        if got is None:
            return None
        return StopEvent(result=sorted(e.n for e in got))


def test_one_worker_held_while_the_others_finish(dbg: flowdbg.Debugger) -> None:
    wf = Workers(timeout=30)
    dbg.attach(wf)
    dbg.break_before("square", condition="input['n'] == 3")
    dbg.break_before("gather", condition="input['n'] == 1", temporary=True)
    run = start(dbg, wf, numbers=[1, 2, 3, 4])

    # the worker given 3 is held; the others run meanwhile: 1 squared reaches the fan-in step
    stops = {s.location.node: s for s in dbg.wait_for_stops(2, WAIT)}
    assert set(stops) == {"square", "gather"}
    held, arrived = stops["square"], stops["gather"]
    assert held.input == {"n": 3}
    assert arrived.location.branch != held.location.branch
    assert held.is_open and not run.done()
    dbg.resume(arrived.id)
    dbg.select(held.id)
    dbg.set("n", 5)  # the held worker squares 5 instead
    dbg.resume(held.id)
    assert run.result(WAIT) == [1, 4, 16, 25]


class Marker(Event):
    pass


class Sender(Workflow):
    @step
    async def send(self, ctx: Context, ev: StartEvent) -> Marker | Item:
        ctx.send_event(Item(n=ev.n))
        return Marker()

    @step
    async def square(self, ev: Item) -> Squared:
        return Squared(n=ev.n * ev.n)

    @step
    async def finish(self, ctx: Context, ev: Squared | Marker) -> StopEvent | None:
        got = ctx.collect_events(ev, [Squared, Marker])
        return None if got is None else StopEvent(result=got[0].n)


def test_sent_events_are_shown_and_their_edit_is_refused(dbg: flowdbg.Debugger) -> None:
    wf = Sender(timeout=30)
    dbg.attach(wf)
    dbg.break_after("send")
    run = start(dbg, wf, n=3)
    stop = stop_at(dbg, "send", "after")
    # what the step sent (delivered already: square may have run), then what it returned
    assert dbg.inspect("") == [{"n": 3}, {}]
    assert stop.decision == {"square": "Item", "finish": "Marker"}
    with pytest.raises(flowdbg.EditRefused, match=r"ctx\.send_event"):
        dbg.set("[0].n", 9)
    dbg.resume()
    assert run.result(WAIT) == 9


# -- fan-in with collect_events, seen as a join --------------------------------------------------


def test_collect_events_invocations_are_units_and_the_last_emits(dbg: flowdbg.Debugger) -> None:
    wf = Workers(timeout=30)
    dbg.attach(wf)
    dbg.break_after("gather")
    run = start(dbg, wf, numbers=[1, 2, 3])
    outputs = []
    # an invocation per arriving event (LlamaIndex may run the step once more to release the
    # collection): each ends without an event until the last
    while (stop := dbg.wait_for_stop(WAIT)) is not None:
        assert (stop.location.node, stop.location.position) == ("gather", "after")
        outputs.append(stop.output)
        if stop.output is None:
            with pytest.raises(flowdbg.EditRefused, match="collecting events"):
                dbg.set("result", [])
        dbg.resume()
    assert len(outputs) >= 3
    assert sorted(outputs, key=bool)[-2:] == [None, {"result": [1, 4, 9]}]
    assert run.result(WAIT) == [1, 4, 9]


def _values(log: Any, which: str) -> list[tuple[str, Any]]:
    return sorted(((s.node, getattr(s, which)) for s in log.steps), key=repr)


def test_the_run_log_shows_events_as_a_stop_does_also_when_nothing_looked(
    dbg: flowdbg.Debugger, tmp_path: Any
) -> None:
    # Attached with nothing to stop, look or record, the adapter keeps the events themselves
    # (its fast path); the run log still shows them as a stop and the record do.
    quiet_wf = Workers(timeout=30)
    dbg.attach(quiet_wf)
    assert start(dbg, quiet_wf, numbers=[1, 2, 3]).result(WAIT) == [1, 4, 9]
    (quiet,) = dbg.runs
    recording = flowdbg.Debugger(db=tmp_path / "r.db")
    try:
        recorded_wf = Workers(timeout=30)
        recording.attach(recorded_wf)
        assert start(recording, recorded_wf, numbers=[1, 2, 3]).result(WAIT) == [1, 4, 9]
        (recorded,) = recording.runs
    finally:
        recording.close()
    steps = {(s.node, repr(s.input), repr(s.output)) for s in quiet.steps if s.node != "gather"}
    assert steps == {
        ("fan", "{'numbers': [1, 2, 3]}", "[{'n': 1}, {'n': 2}, {'n': 3}]"),  # sent events
        ("square", "{'n': 1}", "{'n': 1}"),
        ("square", "{'n': 2}", "{'n': 4}"),
        ("square", "{'n': 3}", "{'n': 9}"),
    }
    assert [s.output for s in quiet.steps if s.node == "gather" and s.output] == [
        {"result": [1, 4, 9]}
    ]
    # (which gather invocation releases the collection depends on the workers' order)
    for which in ("input", "output"):
        assert _values(quiet, which) == _values(recorded, which)


# -- retries -----------------------------------------------------------------------------------


class Flaky(Workflow):
    calls = 0

    @step(retry_policy=retry_policy(wait=wait_fixed(0.01), stop=stop_after_attempt(3)))
    async def flaky(self, ev: StartEvent) -> StopEvent:
        Flaky.calls += 1
        if Flaky.calls < 3:
            raise ConnectionError(f"attempt {Flaky.calls} failed")
        return StopEvent(result=f"ok after {Flaky.calls}")


def test_retries_carry_their_attempt_and_stop_at_each_error(dbg: flowdbg.Debugger) -> None:
    Flaky.calls = 0
    wf = Flaky(timeout=30)
    dbg.attach(wf)
    dbg.break_on_exception(ConnectionError)
    run = start(dbg, wf)
    for attempt in (1, 2):
        stop = stop_at(dbg, "flaky", "error")
        assert stop.reason == StopReason.EXCEPTION
        assert stop.location.attempt == attempt
        assert str(stop.exception) == f"attempt {attempt} failed"
        dbg.resume()
    assert run.result(WAIT) == "ok after 3"
    (log,) = dbg.runs
    assert [(s.node, s.attempt, s.status) for s in log.steps] == [
        ("flaky", 1, "failed"),
        ("flaky", 2, "failed"),
        ("flaky", 3, "completed"),
    ]


# -- @catch_error ------------------------------------------------------------------------------


class Guarded(Workflow):
    @step
    async def risky(self, ev: StartEvent) -> StopEvent:
        raise ValueError(f"bad input {ev.x}")

    @catch_error
    async def recover(self, ev: StepFailedEvent) -> StopEvent:
        return StopEvent(result=f"recovered from {ev.step_name}: {ev.exception}")


def test_catch_error_step_runs_after_the_error_stop(dbg: flowdbg.Debugger) -> None:
    wf = Guarded(timeout=30)
    dbg.attach(wf)
    dbg.break_on_exception()
    dbg.break_before("recover")
    run = start(dbg, wf, x=7)
    stop = stop_at(dbg, "risky", "error")
    assert isinstance(stop.exception, ValueError)
    dbg.resume()
    stop = stop_at(dbg, "recover")
    assert dbg.inspect("step_name") == "risky"
    dbg.resume()
    assert "recovered from risky" in run.result(WAIT)


# -- nested workflows --------------------------------------------------------------------------


class Child(Workflow):
    @step
    async def double(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=ev.x * 2)


class Parent(Workflow):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.child = Child(timeout=30)

    @step
    async def call_child(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await self.child.run(x=ev.x) + 1)


def test_nested_workflow_is_a_child_run_and_detaches_with_its_parent(
    dbg: flowdbg.Debugger,
) -> None:
    wf = Parent(timeout=30)
    child_runtime = wf.child._runtime
    dbg.attach(wf)
    dbg.break_before("double")
    run = start(dbg, wf, x=4)
    stop = stop_at(dbg, "double")
    assert stop.location.path == ("call_child",)
    assert stop.location.parent_run_id is not None
    dbg.set("x", 10)
    dbg.resume()
    assert run.result(WAIT) == 21
    dbg.detach(wf)
    assert wf.child._runtime is child_runtime


class OnTheFly(Workflow):
    @step
    async def delegate(self, ev: StartEvent) -> StopEvent:
        child = Child(timeout=30)  # built inside the step, as many workflows do
        return StopEvent(result=await child.run(x=ev.x))


def test_a_workflow_built_and_run_inside_a_step_is_a_child_run(dbg: flowdbg.Debugger) -> None:
    wf = OnTheFly(timeout=30)
    dbg.attach(wf)
    dbg.break_after("double")
    run = start(dbg, wf, x=2)
    stop = stop_at(dbg, "double", "after")
    assert stop.location.path == ("delegate",)
    assert dbg.inspect("result") == 4
    dbg.set("result", 40)
    dbg.resume()
    assert run.result(WAIT) == 40
    (log,) = dbg.runs
    assert log.run.name == "OnTheFly"
    assert [child.run.name for child in log.children] == ["Child"]
    dbg.detach(wf)
    assert run.done()


class Half(Event):
    x: int


class DelegateThenFinish(Workflow):
    """A step that runs a workflow built inside it, then a step after it: the child registers
    on the parent's runtime between the two."""

    @step
    async def delegate(self, ev: StartEvent) -> Half:
        return Half(x=await Child(timeout=30).run(x=ev.x))

    @step
    async def finish(self, ev: Half) -> StopEvent:
        return StopEvent(result=ev.x + 1)


@pytest.mark.parametrize("watched", [False, True], ids=["quiet", "at-a-stop"])
def test_decisions_after_a_child_workflow_name_the_parents_steps(
    dbg: flowdbg.Debugger, watched: bool
) -> None:
    wf = DelegateThenFinish(timeout=30)
    dbg.attach(wf)
    if watched:
        dbg.break_after("delegate")
    run = start(dbg, wf, x=2)
    if watched:
        stop = stop_at(dbg, "delegate", "after")
        assert stop.decision == {"finish": "Half"}
        dbg.resume()
    assert run.result(WAIT) == 5
    (log,) = dbg.runs
    decisions = {s.node: s.decision for s in log.steps}
    assert decisions["delegate"] == {"finish": "Half"}  # the parent's step, not the child's
    assert decisions["finish"] == {"__end__": "StopEvent"}
    assert [s.decision for s in log.children[0].steps] == [{"__end__": "StopEvent"}]


def test_registering_builds_workflows_on_the_debugged_runtime(dbg: flowdbg.Debugger) -> None:
    wf = Quick(timeout=30)
    dbg.attach(wf)
    with wf.runtime.registering():
        other = Child(timeout=30)
    assert other.runtime is wf.runtime
    with pytest.warns(flowdbg.BreakpointWarning, match="unknown node 'double'"):
        dbg.break_before("double")  # other is not attached: its steps are not known
    run = start(dbg, other, x=5)
    stop_at(dbg, "double")
    dbg.resume()
    assert run.result(WAIT) == 10


# -- wait_for_event ----------------------------------------------------------------------------


class Asking(Workflow):
    @step
    async def ask(self, ctx: Context, ev: StartEvent) -> StopEvent:
        answer = await ctx.wait_for_event(
            HumanResponseEvent,
            waiter_id="q1",
            waiter_event=InputRequiredEvent(prefix="name?"),
        )
        return StopEvent(result=f"hello {answer.response}")


def test_wait_for_event_rerun_is_reported_and_can_stop(dbg: flowdbg.Debugger) -> None:
    wf = Asking(timeout=30)
    dbg.attach(wf)
    dbg.break_after("ask")

    async def go() -> Any:
        handler = wf.run()
        async for event in handler.stream_events():
            if isinstance(event, InputRequiredEvent):
                handler.ctx.send_event(HumanResponseEvent(response="ada"))
        return await handler

    run = dbg.start(lambda: asyncio.run(go()))
    # the first run of the step ends waiting (no stop: it emitted nothing); the re-run, with
    # the answer there, stops after it
    stop = stop_at(dbg, "ask", "after")
    assert stop.output == {"result": "hello ada"}
    dbg.set("result", "hello grace")
    dbg.resume()
    assert run.result(WAIT) == "hello grace"
    (log,) = dbg.runs
    assert [(s.node, s.status) for s in log.steps] == [
        ("ask", "suspended"),
        ("ask", "completed"),
    ]


# -- timeouts ----------------------------------------------------------------------------------


class Quick(Workflow):
    @step
    async def first(self, ev: StartEvent) -> Squared:
        return Squared(n=ev.n)

    @step
    async def second(self, ev: Squared) -> StopEvent:
        return StopEvent(result=ev.n + 1)


def test_time_held_at_a_stop_does_not_count_against_the_timeout(dbg: flowdbg.Debugger) -> None:
    wf = Quick(timeout=0.5)
    dbg.attach(wf)
    dbg.break_before("second")
    run = start(dbg, wf, n=1)
    stop = stop_at(dbg, "second")
    assert stop.message is not None and "timeout (0.5 s)" in stop.message
    # held four times the timeout: the run's clock stands still meanwhile
    with pytest.raises(TimeoutError):
        run.exception(2.0)
    dbg.resume()
    assert run.result(WAIT) == 2


class Stuck(Workflow):
    @step
    async def first(self, ev: StartEvent) -> Squared:
        return Squared(n=1)

    @step
    async def second(self, ev: Squared) -> StopEvent:
        await asyncio.sleep(5)
        return StopEvent(result=0)


def test_the_timeout_still_fires_for_a_step_that_runs_too_long(dbg: flowdbg.Debugger) -> None:
    wf = Stuck(timeout=0.3)
    dbg.attach(wf)
    dbg.break_before("second")
    run = start(dbg, wf)
    stop_at(dbg, "second")
    dbg.resume()  # held first (not counted), then the step itself overruns
    with pytest.raises(WorkflowTimeoutError):
        run.result(WAIT)


# -- cancelling, detaching ---------------------------------------------------------------------


def test_cancel_run_while_a_step_is_held(dbg: flowdbg.Debugger) -> None:
    wf = Quick(timeout=30)
    dbg.attach(wf)
    dbg.break_before("second")
    box: dict[str, Any] = {}
    ready = threading.Event()

    async def go() -> Any:
        handler = wf.run(n=1)
        box["handler"], box["loop"] = handler, asyncio.get_running_loop()
        ready.set()
        return await handler

    run = dbg.start(lambda: asyncio.run(go()))
    stop = stop_at(dbg, "second")
    assert ready.wait(WAIT)
    asyncio.run_coroutine_threadsafe(box["handler"].cancel_run(), box["loop"]).result(WAIT)
    with pytest.raises(WorkflowCancelledByUser):
        run.result(WAIT)
    assert not stop.is_open
    assert dbg.stops == []
    (log,) = dbg.runs
    assert log.run.status != "running"


@pytest.mark.parametrize("where", ["second", "first:after"])
def test_terminate_ends_a_run_whose_events_are_streamed(tmp_path: Any, where: str) -> None:
    wf = Quick(timeout=30)
    recording = flowdbg.Debugger(db=tmp_path / "r.db")
    try:
        recording.attach(wf)
        node, _, position = where.partition(":")
        (recording.break_after if position else recording.break_before)(node)
        streamed: list[str] = []

        async def go() -> Any:
            handler = wf.run(n=1)
            async for ev in handler.stream_events():  # ended by the terminated run's last event
                streamed.append(type(ev).__name__)
            return await handler

        run = recording.start(lambda: asyncio.run(go()))
        assert recording.wait_for_stop(WAIT) is not None
        recording.terminate()
        with pytest.raises(flowdbg.Terminated):
            run.result(WAIT)
        assert streamed[-1:] == ["WorkflowCancelledEvent"]
        assert recording.status().state == "terminated"
        assert recording.flush(WAIT)
        assert recording.store is not None
        (record,) = recording.store.list_runs()
        assert record.status == "terminated"
    finally:
        recording.close()


def test_detach_while_held_lets_the_run_finish_undebugged(dbg: flowdbg.Debugger) -> None:
    wf = Quick(timeout=30)
    runtime = wf._runtime
    dbg.attach(wf)
    dbg.break_before("first")
    dbg.break_before("second")
    run = start(dbg, wf, n=1)
    stop = stop_at(dbg, "first")
    dbg.detach(wf)
    assert wf._runtime is runtime
    assert run.result(WAIT) == 2
    assert not stop.is_open and dbg.stops == []


def test_attach_refused_for_another_debugger_changes_nothing(dbg: flowdbg.Debugger) -> None:
    wf = Parent(timeout=30)
    runtimes = (wf._runtime, wf.child._runtime)
    other = flowdbg.Debugger(record=False)
    try:
        other.attach(wf.child)
        with pytest.raises(flowdbg.AdapterError, match="another Debugger"):
            dbg.attach(wf)
        assert wf._runtime is runtimes[0]  # the parent was not attached either
        other.detach(wf.child)
        assert (wf._runtime, wf.child._runtime) == runtimes
    finally:
        other.close()


def test_a_workflow_attached_after_it_ran_is_debugged(dbg: flowdbg.Debugger) -> None:
    wf = Quick(timeout=30)

    async def go() -> Any:
        return await wf.run(n=2)

    assert asyncio.run(go()) == 3  # the run locks LlamaIndex's runtime choice
    dbg.attach(wf)
    dbg.break_before("second")
    run = dbg.start(lambda: asyncio.run(go()))
    stop_at(dbg, "second")
    dbg.set("n", 10)
    dbg.resume()
    assert run.result(WAIT) == 11


def test_a_snapshot_taken_while_held_restores_the_held_step(dbg: flowdbg.Debugger) -> None:
    from workflows import Context as WorkflowContext

    wf = Quick(timeout=30)
    dbg.attach(wf)
    dbg.break_before("second")
    box: dict[str, Any] = {}
    ready = threading.Event()

    async def go() -> Any:
        handler = wf.run(n=1)
        box["handler"], box["loop"] = handler, asyncio.get_running_loop()
        ready.set()
        return await handler

    async def snapshot() -> dict[str, Any]:
        return box["handler"].ctx.to_dict()

    run = dbg.start(lambda: asyncio.run(go()))
    stop_at(dbg, "second")
    assert ready.wait(WAIT)
    snap = asyncio.run_coroutine_threadsafe(snapshot(), box["loop"]).result(WAIT)
    dbg.resume()
    assert run.result(WAIT) == 2

    # the snapshot holds the step that was held: restored, it runs (and stops) again
    async def restored() -> Any:
        return await wf.run(ctx=WorkflowContext.from_dict(wf, snap))

    run = dbg.start(lambda: asyncio.run(restored()))
    stop_at(dbg, "second")
    assert dbg.inspect("n") == 1
    dbg.set("n", 41)
    dbg.resume()
    assert run.result(WAIT) == 42


# -- a watch set while a step runs -------------------------------------------------------------


class Mid(Event):
    pass


def _gated_workflow(entered: threading.Event, gate: threading.Event) -> Workflow:
    class Gated(Workflow):
        @step
        async def first(self, ctx: Context, ev: StartEvent) -> Mid:
            await ctx.store.set("a", 1)
            return Mid()

        @step
        async def second(self, ctx: Context, ev: Mid) -> StopEvent:
            entered.set()
            while not gate.is_set():  # a slow model call, say
                await asyncio.sleep(0.01)
            await ctx.store.set("b", 2)
            return StopEvent(result="ok")

    return Gated(timeout=30)


@pytest.mark.parametrize("record", [False, True])
def test_a_watch_set_while_a_step_runs_stops_only_where_its_key_changes(
    record: bool, tmp_path: Any
) -> None:
    entered, gate = threading.Event(), threading.Event()
    dbg = flowdbg.Debugger(db=tmp_path / "r.db") if record else flowdbg.Debugger(record=False)
    wf = _gated_workflow(entered, gate)
    dbg.attach(wf)
    handle = start(dbg, wf)
    assert entered.wait(WAIT)
    dbg.watch("a")  # 'second' is past its before point and does not change "a"
    dbg.watch("b")  # ... but sets "b"
    gate.set()
    if record:
        # a recorded step reads the state before it: "b" is new after it, "a" is unchanged
        stop = stop_at(dbg, "second", "after")
        assert stop.reason is StopReason.WATCH
        assert stop.state_before == {"a": 1} and stop.state == {"a": 1, "b": 2}
        dbg.resume()
    # unrecorded, nothing read the state before the step (nothing could stop then): there is
    # nothing to compare with, and a missing old value is no change
    assert handle.result(timeout=WAIT) == "ok"
    assert dbg.wait_for_stop(0.2) is None
    dbg.close()


def test_attaching_a_workflow_class_says_to_attach_an_instance(dbg: flowdbg.Debugger) -> None:
    with pytest.raises(
        flowdbg.errors.AdapterNotFound,
        match=r"\. Quick is a class: attach an instance of it \(Quick\(\.\.\.\); on the command "
        r"line, file\.py:Quick\(\) calls it\)$",
    ):
        dbg.attach(Quick)


class Noted(Event):
    pass


class Noting(Workflow):
    """A step copying a start field into the store, which held another key from the start."""

    @step
    async def note(self, ctx: Context, ev: StartEvent) -> Noted:
        await ctx.store.set("topic", ev.topic)  # equal to the start event's field
        return Noted()

    @step
    async def finish(self, ctx: Context, ev: Noted) -> StopEvent:
        await ctx.store.set("done", True)
        return StopEvent(result="ok")


def test_written_by_credits_the_step_that_wrote_a_key_not_the_start_event(tmp_path: Any) -> None:
    # The state is the context's store, not the start event: a key the first step wrote with
    # a start field's value is that step's, and a key the store held before any step is no
    # step's (the baseline is the state before the first unit, not the run's input).
    dbg = flowdbg.Debugger(db=tmp_path / "r.db")
    wf = Noting(timeout=30)

    async def go() -> Any:
        ctx = Context(wf)
        await ctx.store.set("owner", "ann")  # the caller's, before the run
        return await wf.run(ctx=ctx, topic="flowdbg")

    try:
        dbg.attach(wf)
        assert asyncio.run(go()) == "ok"
        assert dbg.flush(WAIT)
        store = dbg.store
        assert store is not None
        (run,) = store.list_runs()
        assert run.input == {"topic": "flowdbg"}
        assert store.get_state(run.run_id) == {"owner": "ann", "topic": "flowdbg", "done": True}
        assert store.last_writers(run.run_id) == {"topic": (1, "note"), "done": (2, "finish")}
    finally:
        dbg.close()


class Step2(Event):
    x: int


class Step3(Event):
    x: int


class Writes(Workflow):
    """Steps that write the context store, and one that does not."""

    @step
    async def set_k(self, ctx: Context, ev: StartEvent) -> Half:
        await ctx.store.set("k", 1)
        return Half(x=1)

    @step
    async def read_only(self, ctx: Context, ev: Half) -> Step2:
        return Step2(x=await ctx.store.get("k"))

    @step
    async def edit(self, ctx: Context, ev: Step2) -> Step3:
        async with ctx.store.edit_state() as state:
            state["j"] = 2
        return Step3(x=ev.x)

    @step
    async def set_same(self, ctx: Context, ev: Step3) -> StopEvent:
        await ctx.store.set("k", 1)  # the same value again: a new committed state
        await ctx.store.set("k", 5)
        return StopEvent(result=ev.x)


def test_recorded_store_states_follow_each_write(tmp_path: Path) -> None:
    """Each recorded step has the store as it left it (the store is read before and after
    each step; a read finds the last one's mapping again while nothing was written)."""
    dbg = flowdbg.Debugger(db=tmp_path / "flowdbg.db")
    try:
        wf = Writes(timeout=30)
        dbg.attach(wf)
        run = start(dbg, wf)
        assert run.result(WAIT) == 1
        assert dbg.flush(WAIT)
        states = [(s.node, s.state) for s in dbg.store.get_steps(run.run_id)]
        assert states == [
            ("set_k", {"k": 1}),
            ("read_only", {"k": 1}),
            ("edit", {"k": 1, "j": 2}),
            ("set_same", {"k": 5, "j": 2}),
        ]
        assert [s.state for s in dbg.runs[-1].steps] == [state for _, state in states]
    finally:
        dbg.close()
