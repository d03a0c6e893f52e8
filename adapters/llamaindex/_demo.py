"""``flowdbg demo --framework llamaindex``: an offline LlamaIndex workflow and its scripted session.

The workflow is a plain LlamaIndex ``Workflow``: ``plan`` sends a topic to three concurrent
``search`` workers, ``collect`` gathers their notes (``ctx.collect_events``), ``summarize`` writes
the answer. The searches are a dictionary (no network, no API key); one of them "times out". The
session holds ``summarize`` before it runs, reads the notes it receives and the context store,
replaces the failed note, and lets the workflow finish.

LlamaIndex is imported by :func:`build_workflow` only, so that :data:`DEMO` can be read (to list
the demo, or to say what to install) where LlamaIndex is missing.
"""

from __future__ import annotations

from typing import Any

from flowdbg.adapter import Demo

__all__ = ["DEMO", "DEMO_INPUT", "SCRIPT", "TARGET", "build_workflow"]

#: the demo as a ``flowdbg run`` target
TARGET = "flowdbg.adapters.llamaindex._demo:build_workflow"

DEMO_INPUT: dict[str, Any] = {"topic": "flowdbg"}

FACTS = {
    "how": "breakpoints that hold one step while the others go on",
    "what": "a debugger for agent and workflow frameworks",
    "why": "ERROR: search backend timed out",
}

#: what the tour types at the terminal debugger (``#`` lines are narration)
SCRIPT = (
    "# stopped on entry, before the workflow's first step; its steps:",
    "l",
    "# hold the step that writes the answer, and run on to it",
    "b summarize",
    "c",
    "where",
    "# p and set reach the event summarize receives; the context store is the state",
    "p notes",
    "p state:",
    "# the 'why' search failed: put a real note in its place",
    "set notes[0] = 'flowdbg: so that a run can be looked at and fixed while it runs'",
    "# the run so far (three search workers ran concurrently), then on to its end",
    "log",
    "c",
)

DEMO = Demo(
    target=TARGET,
    input=DEMO_INPUT,
    script=SCRIPT,
    hint="try l, b summarize, c, p notes, p state:, set notes[0] = 'ok', log, c (h for help)",
    summary="a LlamaIndex workflow held before its last step, whose input event is fixed",
)


def build_workflow() -> Any:
    """The workflow: ``plan`` -> ``search`` x3 (concurrent workers) -> ``collect`` ->
    ``summarize``."""
    import asyncio

    from workflows import Context, Workflow, step
    from workflows.events import Event, StartEvent, StopEvent

    class Query(Event):
        topic: str
        aspect: str

    class Note(Event):
        text: str

    class Notes(Event):
        notes: list[str]

    class Research(Workflow):
        @step
        async def plan(self, ctx: Context, ev: StartEvent) -> Query | None:
            await ctx.store.set("topic", ev.topic)
            await ctx.store.set("searches", len(FACTS))
            for aspect in FACTS:
                ctx.send_event(Query(topic=ev.topic, aspect=aspect))
            return None

        @step(num_workers=3)
        async def search(self, ev: Query) -> Note:
            await asyncio.sleep(0.01)  # a stand-in for a real search
            return Note(text=f"{ev.topic}: {FACTS[ev.aspect]}")

        @step
        async def collect(self, ctx: Context, ev: Note) -> Notes | None:
            notes = ctx.collect_events(ev, [Note] * await ctx.store.get("searches"))
            if notes is None:
                return None
            return Notes(notes=sorted(note.text for note in notes))

        @step
        async def summarize(self, ctx: Context, ev: Notes) -> StopEvent:
            topic = await ctx.store.get("topic")
            return StopEvent(result=f"{topic}, in {len(ev.notes)} notes: " + "; ".join(ev.notes))

    return Research(timeout=120)
