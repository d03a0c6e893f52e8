"""flowdbg on a LlamaIndex workflow: hold a step, read the event it receives, fix it, go on.

Run it with ``python examples/llamaindex_workflow.py`` (needs ``pip install
'flowdbg[llamaindex]'``). The workflow is an ordinary LlamaIndex ``Workflow``: ``plan`` fans a
topic out to three ``search`` workers (running concurrently), ``summarize`` collects their notes.
It runs offline: the "search" is a dictionary. The session below holds ``summarize`` before it
runs, reads the notes it received, drops a bad one, and lets the workflow finish.

The same workflow can be debugged from the terminal:
``flowdbg run examples/llamaindex_workflow.py:wf --input '{"topic": "flowdbg"}' -b summarize``
"""

from __future__ import annotations

import asyncio
from typing import Any

from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

import flowdbg

FACTS = {
    "what": "a debugger for agent and workflow frameworks",
    "how": "breakpoints that hold a step while the rest goes on",
    "why": "ERROR: search backend timed out",
}


class Query(Event):
    topic: str
    aspect: str


class Note(Event):
    aspect: str
    text: str


class Notes(Event):
    notes: list[str]


class Research(Workflow):
    @step
    async def plan(self, ctx: Context, ev: StartEvent) -> Query | None:
        await ctx.store.set("topic", ev.topic)
        await ctx.store.set("aspects", len(FACTS))
        for aspect in FACTS:
            ctx.send_event(Query(topic=ev.topic, aspect=aspect))
        return None

    @step(num_workers=3)
    async def search(self, ev: Query) -> Note:
        await asyncio.sleep(0.01)  # a stand-in for a real search
        return Note(aspect=ev.aspect, text=f"{ev.topic}: {FACTS[ev.aspect]}")

    @step
    async def collect(self, ctx: Context, ev: Note) -> Notes | None:
        count = await ctx.store.get("aspects")
        notes = ctx.collect_events(ev, [Note] * count)
        if notes is None:
            return None
        return Notes(notes=sorted(note.text for note in notes))

    @step
    async def summarize(self, ctx: Context, ev: Notes) -> StopEvent:
        topic = await ctx.store.get("topic")
        return StopEvent(result=f"{topic}, in {len(ev.notes)} notes: " + "; ".join(ev.notes))


wf = Research(timeout=60)


async def run_workflow(topic: str) -> Any:
    return await wf.run(topic=topic)


def main() -> None:
    dbg = flowdbg.Debugger()
    dbg.attach(wf)  # the workflow, unchanged: no wrappers in the user's code
    bp = dbg.break_before("summarize")
    print(f"set {bp.describe()}\n")

    run = dbg.start(lambda: asyncio.run(run_workflow("flowdbg")))
    stop = dbg.wait_for_stop(timeout=30)
    assert stop is not None, "the workflow never reached summarize"
    print(f"stopped: {stop}")
    print(f"  the event it receives: {dbg.inspect('')}")
    print(f"  the context store: {dbg.inspect('state:')}")

    notes = [note for note in dbg.inspect("notes") if "ERROR" not in note]
    dbg.set("notes", notes)  # summarize receives the edited event when the run resumes
    print(f"\nedit: notes = {dbg.inspect('notes')}")
    dbg.resume()

    print(f"\nthe workflow finished: {run.result(timeout=30)}")
    print("\nthe run log:")
    print(run.log)
    dbg.flush()
    if run.run_id is not None:
        print(f"\nlook at it later with: flowdbg runs show {run.run_id[:8]}")
    dbg.close()


if __name__ == "__main__":
    main()
