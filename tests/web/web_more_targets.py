"""LlamaIndex workflows the browser tests serve: one runs another built inside a step, one fans
items out to a step with two workers. The framework is imported where a target is built, so
that this module imports without it."""

from __future__ import annotations

from typing import Any


def build_nested() -> Any:
    """``nested`` builds an ``Inner`` workflow (double, then finish) and runs it."""
    from workflows import Workflow, step
    from workflows.events import Event, StartEvent, StopEvent

    class Doubled(Event):
        x: int

    class Inner(Workflow):
        @step
        async def double(self, ev: StartEvent) -> Doubled:
            return Doubled(x=ev.x * 2)

        @step
        async def finish(self, ev: Doubled) -> StopEvent:
            return StopEvent(result=ev.x)

    class Outer(Workflow):
        @step
        async def nested(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result=await Inner(timeout=30).run(x=ev.x))

    return Outer(timeout=60)


def build_workers() -> Any:
    """``split`` sends two items to ``square`` (two workers), ``gather`` sums the squares."""
    from workflows import Context, Workflow, step
    from workflows.events import Event, StartEvent, StopEvent

    class Item(Event):
        n: int

    class Squared(Event):
        sq: int

    class Workers(Workflow):
        @step
        async def split(self, ctx: Context, ev: StartEvent) -> Item | None:
            for n in (2, 3):
                ctx.send_event(Item(n=n))
            return None

        @step(num_workers=2)
        async def square(self, ev: Item) -> Squared:
            return Squared(sq=ev.n * ev.n)

        @step
        async def gather(self, ctx: Context, ev: Squared) -> StopEvent | None:
            got = ctx.collect_events(ev, [Squared, Squared])
            if got is None:
                return None
            return StopEvent(result=sum(e.sq for e in got))

    return Workers(timeout=60)
