"""A served tool call of an OpenAI Agents rerun makes again the writes the tool made to a mapping
run context (from the state the record keeps after the call): later turns, tools and the caller
see the context as the recorded run left it, without the tool's body running."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

import oa_helpers as oa
from agents import Agent, RunContextWrapper, function_tool
from agents.testing import ModelStep

import flowdbg

WAIT = 10.0


def notes_agent(bodies: list[str]) -> Agent[Any]:
    @function_tool
    def add_note(ctx: RunContextWrapper[dict[str, Any]], text: str) -> str:
        """Add a note."""
        bodies.append(text)
        ctx.context["notes"] = [*ctx.context.get("notes", []), text]
        ctx.context["count"] = ctx.context.get("count", 0) + 1
        ctx.context.pop("draft", None)  # a key the tool removes
        return f"noted {text}"

    def answer(call: Any) -> list[Any]:
        return [oa.assistant_message("Done: " + ", ".join(oa.outputs(call)))]

    return oa.agent(
        "notes",
        [
            oa.calls(("add_note", {"text": "a"}, "n1"), ("add_note", {"text": "b"}, "n2")),
            ModelStep.respond(answer),
        ],
        tools=[add_note],
    )


@pytest.fixture
def dbg(tmp_path: Path) -> Iterator[flowdbg.Debugger]:
    with flowdbg.Debugger(db=tmp_path / "c.db") as debugger:
        yield debugger


def recorded(dbg: flowdbg.Debugger, agent: Agent[Any], context: dict[str, Any]) -> str:
    """The id of a recorded run of ``agent`` with ``context``."""
    dbg.attach(agent)
    first = dbg.start(oa.run_sync, agent, "take notes", context=context)
    assert first.result(WAIT).final_output == "Done: noted a, noted b"
    assert dbg.flush(WAIT) and first.run_id is not None
    return first.run_id


def test_a_served_tool_makes_its_context_writes_again(dbg: flowdbg.Debugger) -> None:
    bodies: list[str] = []
    agent = notes_agent(bodies)
    context: dict[str, Any] = {"user": "me", "draft": "x"}
    run_id = recorded(dbg, agent, context)
    assert context == {"user": "me", "notes": ["a", "b"], "count": 2}
    again: dict[str, Any] = {"user": "me", "draft": "x"}
    rerun = dbg.rerun(run_id, config={"context": again}, target=agent)
    assert rerun.result(WAIT) == "Done: noted a, noted b"
    assert rerun.calls is not None and (rerun.calls.served, rerun.calls.live) == (4, 0)
    assert bodies == ["a", "b"]  # the bodies ran in the recorded run only
    assert again == context  # the writes made again, the removed key removed
    assert dbg.flush(WAIT) and dbg.store is not None and rerun.run_id is not None
    assert dbg.store.divergence(run_id, rerun.run_id).first is None


def test_a_live_tool_is_left_to_write_the_context_itself(dbg: flowdbg.Debugger) -> None:
    bodies: list[str] = []
    agent = notes_agent(bodies)
    run_id = recorded(dbg, agent, {"user": "me"})
    again: dict[str, Any] = {"user": "me"}
    rerun = dbg.rerun(run_id, "llm", config={"context": again}, target=agent)
    rerun.result(WAIT)
    assert bodies == ["a", "b", "a", "b"]  # the tools ran again, live
    assert again == {"user": "me", "notes": ["a", "b"], "count": 2}


def test_a_run_started_from_python_reruns_with_the_context_it_started_with(
    dbg: flowdbg.Debugger,
) -> None:
    # Runner.run(..., context=...) from Python records no config: the rerun takes the mapping
    # context the run started with (its state before the first unit), not None
    bodies: list[str] = []
    agent = notes_agent(bodies)
    run_id = recorded(dbg, agent, {"user": "me"})
    assert dbg.store is not None and dbg.store.get_run(run_id).config is None
    rerun = dbg.rerun(run_id, "llm", target=agent)  # the tools run live
    assert rerun.result(WAIT) == "Done: noted a, noted b"
    assert bodies == ["a", "b", "a", "b"]
    assert dbg.flush(WAIT) and rerun.run_id is not None
    assert dbg.store.get_run(rerun.run_id).config == {"context": {"user": "me"}}
    assert dbg.store.get_state(rerun.run_id) == {"user": "me", "notes": ["a", "b"], "count": 2}
