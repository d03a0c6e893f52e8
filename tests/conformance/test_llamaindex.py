"""The conformance suites run against real LlamaIndex workflows (tox env ``llamaindex``).

How the canonical scenarios map onto an event-driven workflow: the context store is the state;
a step receives an event carrying the keys its sender computed, commits them to the store (the
sender's update arrives with its event), computes from the event, writes what it computed to the
store and returns it as its own event. The last step's stop event carries its update; a run's
normalized result is the final store with that update.
"""

from __future__ import annotations

import asyncio
import threading
from types import MappingProxyType
from typing import Annotated, Any

import pytest

pytest.importorskip("workflows", reason="the llamaindex extra is not installed")

from workflows import Context, Workflow, step
from workflows.collect import Collect
from workflows.events import Event, StartEvent, StopEvent

from flowdbg.testing import (
    AbstractAsyncTests,
    AbstractBreakpointTests,
    AbstractConditionTests,
    AbstractExceptionTests,
    AbstractForkTests,
    AbstractHandoffTests,
    AbstractLogpointTests,
    AbstractObserverTests,
    AbstractParallelTests,
    AbstractPauseTests,
    AbstractRecordingTests,
    AbstractRerunTests,
    AbstractRewindTests,
    AbstractStateEditingTests,
    AbstractSteppingTests,
    AbstractTerminateTests,
    AbstractToolTests,
    AbstractTransparencyTests,
    AbstractViewTests,
    AbstractWaitTests,
    AbstractWatchTests,
    AdapterFixtures,
    Scenario,
)

#: Longest a slow step waits for release() before giving up on its own.
SLOW_LIMIT = 10.0


class Done(StopEvent):
    """The last step's update, as the run's result; its ``result`` is the final store."""


def fields(event: Any) -> dict[str, Any]:
    """The keys an event carries (declared and dynamic fields)."""
    out = {name: getattr(event, name) for name in type(event).model_fields}
    out.update(event.to_dict())
    out.pop("result", None)  # StopEvent's own field, unused here
    return out


async def commit(ctx: Context, values: dict[str, Any]) -> None:
    for key, value in values.items():
        await ctx.store.set(key, value)


async def received(ctx: Context, event: Event) -> dict[str, Any]:
    """Commit the update an event carries to the store; return its keys."""
    values = fields(event)
    await commit(ctx, values)
    return values


async def wrote(ctx: Context, kind: type[Event], **values: Any) -> Any:
    """Write a step's update to the store and return it as an event of ``kind``; the last
    event (a stop event) carries the whole store besides, so that the workflow's own result
    (a fork's) is the scenario's result too (as its ``result``, not among its update's keys)."""
    await commit(ctx, values)
    if issubclass(kind, Done):
        return kind(result=(await ctx.store.get_state()).to_dict(), **values)
    return kind(**values)


def _normalized(result: Any) -> dict[str, Any]:
    """A run's result as the scenario's: the final store with the last update (what
    :func:`_arun` gives, or what the workflow's own result, a fork's, carries)."""
    if isinstance(result, Done):
        return {**(result.result or {}), **fields(result)}
    return fields(result) if isinstance(result, Event) else dict(result)


async def _arun(wf: Workflow, input: dict[str, Any]) -> dict[str, Any]:
    # the run's state starts as its input: a context whose store holds it (LlamaIndex's way of
    # starting a run from a prepared state)
    ctx = Context(wf)
    await commit(ctx, input)
    handler = wf.run(ctx=ctx, **input)
    result = await handler
    state = await handler.ctx.store.get_state()
    return {**state.to_dict(), **fields(result)}


def _scenario(wf: Workflow, input: dict[str, Any], **extra: Any) -> Scenario:
    return Scenario(
        target=wf,
        run=lambda s: asyncio.run(_arun(wf, s)),
        arun=lambda s: _arun(wf, s),
        input=input,
        normalize=_normalized,
        **extra,
    )


# -- linear ----------------------------------------------------------------------------------


class AEvent(Event):
    pass


class BEvent(Event):
    pass


class Linear(Workflow):
    @step
    async def a(self, ctx: Context, ev: StartEvent) -> AEvent:
        s = await received(ctx, ev)
        return await wrote(ctx, AEvent, x=s["x"] + 1)

    @step
    async def b(self, ctx: Context, ev: AEvent) -> BEvent:
        s = await received(ctx, ev)
        return await wrote(ctx, BEvent, x=s["x"] * 10)

    @step
    async def c(self, ctx: Context, ev: BEvent) -> Done:
        await received(ctx, ev)
        return await wrote(ctx, Done, y=await ctx.store.get("x") + 1)


# -- loop --------------------------------------------------------------------------------------


class Again(Event):
    pass


class Finish(Event):
    pass


def loop(effects: list[str]) -> Workflow:
    class Loop(Workflow):
        @step
        async def inc(self, ctx: Context, ev: StartEvent | Again) -> Again | Finish:
            s = await received(ctx, ev)
            count = s.get("count", await ctx.store.get("count")) + 1
            effects.append(f"route {count}")
            return await wrote(ctx, Again if count < 5 else Finish, count=count)

        @step
        async def done(self, ctx: Context, ev: Finish) -> Done:
            await received(ctx, ev)
            return await wrote(ctx, Done, finished=True)

    return Loop(timeout=30)


# -- branch ------------------------------------------------------------------------------------


class Pos(Event):
    pass


class Neg(Event):
    pass


class Branch(Workflow):
    @step
    async def start(self, ctx: Context, ev: StartEvent) -> Pos | Neg:
        s = await received(ctx, ev)
        return await wrote(ctx, Pos if s["x"] > 0 else Neg, seen=True)

    @step
    async def pos(self, ctx: Context, ev: Pos) -> Done:
        await received(ctx, ev)
        return await wrote(ctx, Done, sign="+")

    @step
    async def neg(self, ctx: Context, ev: Neg) -> Done:
        await received(ctx, ev)
        return await wrote(ctx, Done, sign="-")


# -- parallel ----------------------------------------------------------------------------------


class P1Go(Event):
    pass


class P2Go(Event):
    pass


class PDone(Event):
    pass


def parallel(effects: list[str]) -> Workflow:
    class Parallel(Workflow):
        @step
        async def fan(self, ctx: Context, ev: StartEvent) -> list[P1Go | P2Go]:
            await received(ctx, ev)
            return [P1Go(), P2Go()]

        @step
        async def p1(self, ctx: Context, ev: P1Go) -> PDone:
            return PDone(items=["p1"])

        @step
        async def p2(self, ctx: Context, ev: P2Go) -> PDone:
            return PDone(items=["p2"])

        @step
        async def join(self, ctx: Context, results: Annotated[list[PDone], Collect()]) -> Done:
            items = list(await ctx.store.get("items"))
            for result in results:  # the list-add "reducer" of the branches' items
                effects.append(f"reduce {result['items']}")
                items += result["items"]
            await commit(ctx, {"items": items})
            return await wrote(ctx, Done, total=len(items))

    return Parallel(timeout=30)


# -- nested ------------------------------------------------------------------------------------


class I1Event(Event):
    pass


class SubDone(Event):
    pass


class Inner(Workflow):
    @step
    async def inner1(self, ctx: Context, ev: StartEvent) -> I1Event:
        s = await received(ctx, ev)
        return await wrote(ctx, I1Event, x=s["x"] * 10)

    @step
    async def inner2(self, ctx: Context, ev: I1Event) -> Done:
        s = await received(ctx, ev)
        return await wrote(ctx, Done, z=s["x"] + 1)


class PreDone(Event):
    pass


class Nested(Workflow):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sub_workflow = Inner(timeout=30)

    @step
    async def pre(self, ctx: Context, ev: StartEvent) -> PreDone:
        s = await received(ctx, ev)
        return await wrote(ctx, PreDone, x=s["x"] + 1)

    @step
    async def sub(self, ctx: Context, ev: PreDone) -> SubDone:
        s = await received(ctx, ev)
        inner = await _arun(self.sub_workflow, {"x": s["x"]})  # the nested run's final state
        return await wrote(ctx, SubDone, **inner)

    @step
    async def post(self, ctx: Context, ev: SubDone) -> Done:
        await received(ctx, ev)
        return await wrote(ctx, Done, done=True)


# -- failing, slow -----------------------------------------------------------------------------


class Failing(Workflow):
    @step
    async def a(self, ctx: Context, ev: StartEvent) -> AEvent:
        s = await received(ctx, ev)
        return await wrote(ctx, AEvent, x=s["x"] + 1)

    @step
    async def boom(self, ctx: Context, ev: AEvent) -> Done:
        s = await received(ctx, ev)
        raise ValueError(f"boom at x={s['x']}")


class Slowed(Event):
    pass


def slow(started: threading.Event, gate: threading.Event) -> Workflow:
    class Slow(Workflow):
        @step
        def slow(self, ctx: Context, ev: StartEvent) -> Slowed:
            # a sync step: LlamaIndex runs it in a thread of its executor
            started.set()
            gate.wait(SLOW_LIMIT)
            return Slowed(x=ev["x"] + 1)

        @step
        async def after(self, ctx: Context, ev: Slowed) -> Done:
            await received(ctx, ev)
            return await wrote(ctx, Done, y=1)

    return Slow(timeout=60)


# -- tools -------------------------------------------------------------------------------------


class Called(Event):
    pass


def tools_workflow() -> Workflow:
    """A step that calls its model and two tools itself (``await llm.achat``, ``await
    tool.acall``), as a workflow written from scratch does; needs llama-index-core (tox env
    ``llamaindex_core``), for the model and the tools."""
    try:
        from llama_index.core.base.llms.types import ChatMessage, CompletionResponse
        from llama_index.core.llms import MockLLM
        from llama_index.core.tools import FunctionTool
    except ImportError as exc:
        raise NotImplementedError(
            f"llama-index-core is not installed ({exc}): models and tools are its classes "
            "(tox -e llamaindex_core runs these tests)"
        ) from None

    class chat(MockLLM):  # an llm unit is named after its model's class
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            return CompletionResponse(text="search, then clean up")

    async def search(query: str) -> str:
        """Search the web."""
        return f"results for {query}"

    async def shell(cmd: str) -> str:
        """Run a shell command."""
        return f"ran {cmd}"

    class Tools(Workflow):
        def __init__(self, llm: Any, tools: list[Any], **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.llm = llm
            self.tools = {tool.metadata.name: tool for tool in tools}

        @step
        async def agent(self, ctx: Context, ev: StartEvent) -> Called:
            s = await received(ctx, ev)
            reply = await self.llm.achat([ChatMessage(role="user", content=s["q"])])
            found = await self.tools["search"].acall(query=s["q"])
            ran = await self.tools["shell"].acall(cmd="rm -rf /tmp/cache")
            return await wrote(
                ctx,
                Called,
                reply=reply.message.content,
                found=found.raw_output,
                ran=ran.raw_output,
            )

        @step
        async def done(self, ctx: Context, ev: Called) -> Done:
            s = await received(ctx, ev)
            # the run's result carries the whole outcome: a rerun (which runs the workflow
            # itself, not this module's runner reading the store) returns this event
            q = await ctx.store.get("q")
            return await wrote(ctx, Done, q=q, **s, finished=True)

    tools = [
        FunctionTool.from_defaults(async_fn=search, name="search"),
        FunctionTool.from_defaults(async_fn=shell, name="shell"),
    ]
    return Tools(chat(), tools, timeout=30)


class LlamaIndexFixtures(AdapterFixtures):
    """The canonical scenarios, built natively as LlamaIndex workflows."""

    adapter = "llamaindex"
    # a step writes the store itself and routes by the type of the event it returns; its
    # output is that event
    merged_updates = False

    def build_linear(self) -> Scenario:
        return _scenario(Linear(timeout=30), {"x": 1})

    def build_loop(self) -> Scenario:
        effects: list[str] = []
        return _scenario(loop(effects), {"count": 0}, effects=effects)

    def build_branch(self, positive: bool) -> Scenario:
        return _scenario(Branch(timeout=30), {"x": 1 if positive else -1})

    def build_parallel(self) -> Scenario:
        effects: list[str] = []
        scn = _scenario(parallel(effects), {"items": []}, effects=effects)
        # the join collects the branches' events in the order they arrive, which depends on
        # which branch a test resumes first: the canonical result lists the items sorted
        scn.normalize = lambda result: {
            **_normalized(result),
            "items": sorted(_normalized(result)["items"]),
        }
        return scn

    def build_nested(self) -> Scenario:
        return _scenario(Nested(timeout=30), {"x": 1})

    def build_failing(self) -> Scenario:
        return _scenario(Failing(timeout=30), {"x": 1})

    def build_slow(self) -> Scenario:
        started = threading.Event()
        gate = threading.Event()
        scn = _scenario(slow(started, gate), {"x": 1}, started=started, release=gate.set)
        return scn

    def build_tools(self) -> Scenario:
        scn = _scenario(tools_workflow(), {"q": "flights"})
        # the scenario's runner gives the final store with the last event's update; a rerun
        # gives the workflow's own result, that last event, which carries the same keys
        scn.normalize = lambda result: fields(result) if isinstance(result, Event) else result
        return scn

    def fork_edits(self, edits: dict[str, Any]) -> dict[str, Any]:
        # the state after a step is the store and the update its event carries to the next
        # step (see the module's docstring): a canonical edit names both
        return {**edits, **{f"output:{path}": value for path, value in edits.items()}}

    def reply_text(self, output: Any) -> Any:
        return getattr(output, "content", output)  # an llm unit's output is the reply message


class TestLlamaIndexBreakpoints(LlamaIndexFixtures, AbstractBreakpointTests):
    pass


class TestLlamaIndexConditions(LlamaIndexFixtures, AbstractConditionTests):
    pass


class TestLlamaIndexExceptions(LlamaIndexFixtures, AbstractExceptionTests):
    pass


class TestLlamaIndexWatches(LlamaIndexFixtures, AbstractWatchTests):
    pass


class TestLlamaIndexStepping(LlamaIndexFixtures, AbstractSteppingTests):
    pass


class TestLlamaIndexStateEditing(LlamaIndexFixtures, AbstractStateEditingTests):
    pass


class TestLlamaIndexPause(LlamaIndexFixtures, AbstractPauseTests):
    pass


class TestLlamaIndexParallel(LlamaIndexFixtures, AbstractParallelTests):
    pass


class TestLlamaIndexTerminate(LlamaIndexFixtures, AbstractTerminateTests):
    pass


class TestLlamaIndexLogpoints(LlamaIndexFixtures, AbstractLogpointTests):
    pass


class TestLlamaIndexTransparency(LlamaIndexFixtures, AbstractTransparencyTests):
    pass


class TestLlamaIndexWait(LlamaIndexFixtures, AbstractWaitTests):
    pass


class TestLlamaIndexAsync(LlamaIndexFixtures, AbstractAsyncTests):
    pass


class TestLlamaIndexObservers(LlamaIndexFixtures, AbstractObserverTests):
    pass


class TestLlamaIndexTools(LlamaIndexFixtures, AbstractToolTests):
    pass


class TestLlamaIndexViews(LlamaIndexFixtures, AbstractViewTests):
    pass


class TestLlamaIndexRecording(LlamaIndexFixtures, AbstractRecordingTests):
    pass


class TestLlamaIndexFork(LlamaIndexFixtures, AbstractForkTests):
    excluded = MappingProxyType(
        {
            "test_an_edit_of_what_a_router_reads_changes_the_route": (
                "a step routes in its own code, by the type of the event it returns: a fork "
                "after it goes on with that event (edits change the store and the event's "
                "fields, not its type)"
            ),
        }
    )


class TestLlamaIndexRerun(LlamaIndexFixtures, AbstractRerunTests):
    pass


class TestLlamaIndexRewind(LlamaIndexFixtures, AbstractRewindTests):
    pass


class TestLlamaIndexHandoffs(LlamaIndexFixtures, AbstractHandoffTests):
    pass
