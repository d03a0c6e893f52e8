"""A LlamaIndex rerun ``until_divergence`` ends at the first model or tool call that differs from
the record: that call, the step making it and the run all end ``terminated`` (none is left
running), and ``result()`` raises ``Diverged`` (tox env ``llamaindex_core``)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="llama-index-core is not installed")

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage, MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from workflows import Workflow, step
from workflows.events import StartEvent, StopEvent

import flowdbg
from flowdbg.timetravel import Diverged

WAIT = 10.0

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning"),
]


def recorded_then_rerun(
    dbg: flowdbg.Debugger, target: Any, change: Any, **kwargs: Any
) -> tuple[flowdbg.RunHandle, str]:
    """Record one run of ``target`` with ``kwargs``, apply ``change()`` to the code, then rerun
    the record until its first divergence; returns the rerun's handle and its run id."""
    assert dbg.start(target.run, **kwargs).result(WAIT) is not None
    assert dbg.flush(WAIT)
    assert dbg.store is not None
    (recorded,) = dbg.store.list_runs()
    change()
    rerun = dbg.rerun(recorded.run_id, "all", target=target, until_divergence=True)
    with pytest.raises(Diverged):
        rerun.result(WAIT)
    assert dbg.flush(WAIT) and rerun.run_id is not None
    return rerun, rerun.run_id


def test_a_step_s_own_tool_call_that_differs_ends_the_rerun_there(tmp_path: Any) -> None:
    ran: list[str] = []

    async def search(query: str) -> str:
        """Search the web."""
        ran.append(query)
        return f"results for {query}"

    class Research(Workflow):
        prefix = "flights"
        tool = FunctionTool.from_defaults(async_fn=search, name="search")

        @step
        async def look(self, ev: StartEvent) -> StopEvent:
            found = await self.tool.acall(query=f"{self.prefix} to {ev.city}")
            return StopEvent(result=str(found))

    wf = Research(timeout=10)
    dbg = flowdbg.Debugger(db=tmp_path / "r.db")
    try:
        dbg.attach(wf)

        def change() -> None:
            Research.prefix = "trains"  # the current code asks the tool something else

        rerun, run_id = recorded_then_rerun(dbg, wf, change, city="Oslo")
        assert ran == ["flights to Oslo"]  # the differing call did not run
        assert rerun.calls is not None and len(rerun.calls.diverged) == 1
        store = dbg.store
        assert store is not None
        steps = [(s.node, s.kind, s.status) for s in store.get_steps(run_id)]
        assert steps == [("look", "node", "terminated"), ("search", "tool", "terminated")] or (
            steps == [("search", "tool", "terminated"), ("look", "node", "terminated")]
        )
        assert store.get_run(run_id).status == "terminated"
        assert not dbg.stops
    finally:
        dbg.close()


def test_an_agent_s_model_call_that_differs_ends_the_rerun_and_its_step(tmp_path: Any) -> None:
    seen: list[list[ChatMessage]] = []

    def model(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        seen.append(list(messages))
        if any(m.role == "tool" for m in messages):
            return ChatMessage(role="assistant", content="done")
        call = ToolCallBlock(tool_call_id="c1", tool_name="lookup", tool_kwargs={"q": "x"})
        return ChatMessage(role="assistant", blocks=[call])

    def lookup(q: str) -> str:
        """Look something up."""
        return f"found {q}"

    agent = FunctionAgent(
        tools=[lookup],
        llm=MockFunctionCallingLLM(response_generator=model),
        system_prompt="Be brief.",
    )
    dbg = flowdbg.Debugger(db=tmp_path / "a.db")
    try:
        dbg.attach(agent)

        def change() -> None:
            agent.system_prompt = "Be thorough."  # the first model call's input differs

        asked = len(seen)
        _, run_id = recorded_then_rerun(dbg, agent, change, user_msg="look up x")
        assert len(seen) == asked + 2  # the two recorded calls; the rerun asked nothing
        store = dbg.store
        assert store is not None
        units = store.get_steps(run_id)
        llm = [s for s in units if s.kind == "llm"]
        assert [s.status for s in llm] == ["terminated"]
        # the step making the call ended with it: nothing of the rerun is left running
        assert all(s.status in ("completed", "terminated") for s in units)
        assert any(s.kind == "node" and s.status == "terminated" for s in units)
        assert store.get_run(run_id).status == "terminated"
    finally:
        dbg.close()
