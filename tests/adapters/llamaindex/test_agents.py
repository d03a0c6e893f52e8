"""LlamaIndex agents (workflows themselves) under flowdbg, on llama-index-core's mock LLMs:
tool calls are ``tool`` units inside the agent's ``call_tool`` step (tox env
``llamaindex_core``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="llama-index-core is not installed")

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage, MockFunctionCallingLLM
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.workflow import Workflow

import flowdbg
from flowdbg import StopReason

WAIT = 10.0

# LlamaIndex lists an agent's steps with inspect.getmembers, which reads every attribute of the
# agent (a pydantic model), deprecated ones included (__fields__, model_computed_fields on the
# instance): pydantic's warnings about LlamaIndex's own code (workflows/utils.py,
# get_steps_from_instance), on every agent it builds. ReActAgent's own step code reads
# ctx.is_running, which warns that doing so in a step is deprecated.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning"),
    pytest.mark.filterwarnings("ignore:is_running called from within a step"),
]


def search(query: str) -> str:
    """Search the web."""
    return f"results for {query}"


def shell(cmd: str) -> str:
    """Run a shell command."""
    return f"ran {cmd}"


def broken(path: str) -> str:
    """Read a file."""
    raise PermissionError(f"cannot read {path}")


class Scripted:
    """A scripted model for a function-calling agent: first it calls ``calls`` (tool name,
    arguments), then it answers with what the tools returned; it keeps the messages it saw."""

    def __init__(self, *calls: tuple[str, dict[str, Any]]) -> None:
        self.calls = calls
        self.seen: list[list[ChatMessage]] = []

    def __call__(self, messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        results = [str(m.content) for m in messages if m.role == "tool"]
        if results:
            return ChatMessage(role="assistant", content="done: " + " | ".join(results))
        blocks = [
            ToolCallBlock(tool_call_id=f"call-{i}", tool_name=name, tool_kwargs=args)
            for i, (name, args) in enumerate(self.calls)
        ]
        return ChatMessage(role="assistant", blocks=blocks)


def run_agent(dbg: flowdbg.Debugger, agent: Workflow, message: str) -> flowdbg.RunHandle:
    async def go() -> Any:
        return await agent.run(user_msg=message)

    return dbg.start(lambda: asyncio.run(go()))


def test_llama_index_core_workflow_is_the_same_workflow_class() -> None:
    import workflows

    assert Workflow is workflows.Workflow
    assert (
        flowdbg.Debugger(record=False)
        .adapters["llamaindex"]
        .adapter.matches(FunctionAgent(tools=[search], llm=MockFunctionCallingLLM()))
    )


def test_function_agent_tool_breakpoint_holds_the_tool_and_edits_its_arguments(
    dbg: flowdbg.Debugger,
) -> None:
    model = Scripted(("search", {"query": "flights"}), ("shell", {"cmd": "rm -rf /tmp/cache"}))
    agent = FunctionAgent(
        tools=[search, shell], llm=MockFunctionCallingLLM(response_generator=model)
    )
    dbg.attach(agent)
    bp = dbg.break_on_tool("shell", args_pattern=r"rm\s+-rf")
    run = run_agent(dbg, agent, "find flights and clean up")

    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        "shell",
        "tool",
        "before",
    )
    assert stop.location.path == ("call_tool",)
    assert stop.breakpoints == (bp.id,)
    assert dbg.inspect("args:cmd") == "rm -rf /tmp/cache"
    with pytest.raises(flowdbg.EditRefused, match="mapping"):
        dbg.set("args:", "ls")
    dbg.set("cmd", "ls /tmp/cache")
    dbg.resume()
    assert dbg.wait_for_stop(WAIT) is None
    answer = str(run.result(WAIT))
    assert "ran ls /tmp/cache" in answer
    assert "rm -rf" not in answer
    (log,) = dbg.runs
    tools = [(s.node, s.kind) for s in log.steps if s.kind == "tool"]
    assert sorted(tools) == [("search", "tool"), ("shell", "tool")]


def test_tool_arguments_edited_at_a_stop_must_fit_the_tools_signature(
    dbg: flowdbg.Debugger,
) -> None:
    model = Scripted(("search", {"query": "flights"}))
    agent = FunctionAgent(tools=[search], llm=MockFunctionCallingLLM(response_generator=model))
    dbg.attach(agent)
    dbg.break_on_tool("search")
    run = run_agent(dbg, agent, "find flights")
    assert dbg.wait_for_stop(WAIT) is not None
    with pytest.raises(flowdbg.EditRefused, match=r"^tool 'search' takes no argument 'limit'; "):
        dbg.set("limit", 3)
    with pytest.raises(
        flowdbg.EditRefused,
        match=r"^the arguments of tool 'search' do not fit its signature: query: Input should "
        r"be a valid string",
    ):
        dbg.set("query", 42)
    assert dbg.inspect("query") == "flights"  # a refused edit changes nothing
    dbg.set("query", "trains")
    dbg.resume()
    assert "results for trains" in str(run.result(WAIT))


def test_an_agents_tools_and_model_are_described_and_checked(dbg: flowdbg.Debugger) -> None:
    llm = MockFunctionCallingLLM(response_generator=Scripted())
    agent = FunctionAgent(name="finder", description="finds", tools=[search, shell], llm=llm)
    described = dbg.describe(agent)
    assert described["tools"] == [{"name": "search"}, {"name": "shell"}]
    (step,) = [n for n in described["nodes"] if n["name"] == "run_agent_step"]
    assert step["model"] == "MockFunctionCallingLLM"  # the name its model calls take
    other = FunctionAgent(name="helper", description="helps", tools=[broken], llm=llm)
    team = AgentWorkflow(agents=[agent, other], root_agent="finder")
    assert [t["name"] for t in dbg.describe(team)["tools"]] == [
        "search",
        "shell",
        "broken",
        "handoff",  # AgentWorkflow's own, with more than one agent
    ]
    dbg.attach(agent)
    dbg.break_on_tool("shell")
    dbg.break_after("MockFunctionCallingLLM")
    with pytest.warns(
        flowdbg.errors.BreakpointWarning, match=r"^unknown tool 'serch'; tools: search"
    ):
        dbg.break_on_tool("serch")
    dbg.attach(team)
    # handing over is AgentWorkflow's 'handoff' tool call, not a unit of its own: said so
    # (not "unknown handoff target", which it is not)
    with pytest.warns(
        flowdbg.errors.BreakpointWarning,
        match=r"^adapter 'llamaindex' reports no handoffs, so this breakpoint never stops in "
        r"its runs; .* break_on_tool\('handoff', args_pattern=\.\.\.\) \(bp-4 is set",
    ):
        dbg.break_on_handoff(to="helper")


def test_react_agent_tool_result_edited_at_the_after_stop_reaches_the_model(
    dbg: flowdbg.Debugger,
) -> None:
    seen: list[str] = []

    def model(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        seen.append("\n".join(str(m.content) for m in messages))
        if len(seen) > 1:
            return ChatMessage(role="assistant", content="Thought: I can answer.\nAnswer: done")
        return ChatMessage(
            role="assistant",
            content='Thought: I need to search.\nAction: search\nAction Input: {"query": "x"}',
        )

    agent = ReActAgent(tools=[search], llm=MockFunctionCallingLLM(response_generator=model))
    dbg.attach(agent)
    dbg.break_after("search", kind="tool")
    run = run_agent(dbg, agent, "search for x")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.position) == ("search", "after")
    assert dbg.inspect("result:") == "results for x"
    dbg.set("", "nothing found")
    dbg.resume()
    assert str(run.result(WAIT)) == "done"
    assert "Observation: nothing found" in seen[-1]
    assert "results for x" not in seen[-1]


def test_a_tool_that_raises_stops_at_its_error_point(dbg: flowdbg.Debugger) -> None:
    model = Scripted(("broken", {"path": "/etc/shadow"}))
    agent = FunctionAgent(tools=[broken], llm=MockFunctionCallingLLM(response_generator=model))
    dbg.attach(agent)
    dbg.break_on_exception(PermissionError)
    run = run_agent(dbg, agent, "read it")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        "broken",
        "tool",
        "error",
    )
    assert stop.reason == StopReason.EXCEPTION
    assert str(stop.exception) == "cannot read /etc/shadow"
    dbg.resume()  # the agent goes on as it would: the error is the tool's output
    assert "cannot read /etc/shadow" in str(run.result(WAIT))


def test_step_over_a_call_tool_step_skips_its_tool(dbg: flowdbg.Debugger) -> None:
    model = Scripted(("search", {"query": "a"}))
    agent = FunctionAgent(tools=[search], llm=MockFunctionCallingLLM(response_generator=model))
    dbg.attach(agent)
    dbg.break_before("call_tool")
    run = run_agent(dbg, agent, "go")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.node == "call_tool"
    assert dbg.inspect("tool_name") == "search"
    dbg.step_over()
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert stop.location.kind == "node" and stop.location.node == "aggregate_tool_results"
    dbg.clear()
    dbg.resume()
    assert "results for a" in str(run.result(WAIT))


def test_agent_workflow_is_debugged_like_any_workflow(dbg: flowdbg.Debugger) -> None:
    model = Scripted(("search", {"query": "q"}))
    agent = FunctionAgent(
        name="researcher",
        description="searches",
        tools=[search],
        llm=MockFunctionCallingLLM(response_generator=model),
    )
    flow = AgentWorkflow(agents=[agent], root_agent="researcher")
    dbg.attach(flow)
    dbg.break_on_tool("search")
    run = run_agent(dbg, flow, "go")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.kind == "tool"
    assert dbg.inspect("query") == "q"
    dbg.set("query", "edited")
    dbg.resume()
    assert "results for edited" in str(run.result(WAIT))
    dbg.detach(flow)


def test_a_recorded_agent_run_keeps_each_step_as_it_ended(tmp_path: Any) -> None:
    """The agent's memory and scratchpad sit in the context's store and grow in place, and
    the agent changes the AgentOutput it emitted later on: each step's record keeps them as
    they were when the step ended, although the recorder writes after the run."""
    model = Scripted(("search", {"query": "flights"}))
    agent = FunctionAgent(tools=[search], llm=MockFunctionCallingLLM(response_generator=model))
    dbg = flowdbg.Debugger(db=tmp_path / "r.db")
    memory = ChatMemoryBuffer.from_defaults()  # the caller's, filled by the run

    async def go() -> Any:
        return await agent.run(user_msg="find flights", memory=memory)

    try:
        dbg.attach(agent)
        run = dbg.start(lambda: asyncio.run(go()))
        assert "done: results for flights" in str(run.result(WAIT))
        assert len(memory.get_all()) == 4
        assert dbg.flush(WAIT)
        store = dbg.store
        assert store is not None
        (record,) = store.list_runs()
        steps = [s for s in store.get_steps(record.run_id) if s.kind == "node"]
    finally:
        dbg.close()

    def roles(memory: Any) -> list[str]:
        return [m["role"] for m in memory["chat_store"]["store"].get("chat_history", ())]

    # the memory the run was given, and the one init_run received: empty then
    assert roles(record.input["memory"]) == []
    assert steps[0].node == "init_run" and roles(steps[0].input["memory"]) == []

    assert [s.node for s in steps] == [
        "init_run",
        "setup_agent",
        "run_agent_step",
        "parse_agent_output",
        "call_tool",
        "aggregate_tool_results",
        "setup_agent",
        "run_agent_step",
        "parse_agent_output",
    ]
    # the memory gets the user's message at the start, the rest only when the agent finishes
    assert [roles(s.state["memory"]) for s in steps[:-1]] == [["user"]] * 8
    assert roles(steps[-1].state["memory"]) == ["user", "assistant", "tool", "assistant"]
    # the scratchpad grows over the tool round (the model's call, then the tool's result)
    pads = [len(s.state.get("scratchpad", ())) for s in steps]
    assert pads[0] == 0 and pads[2] < pads[5] < pads[7]
    # the AgentOutput the first model turn emitted, with the call it asked for, and the
    # second one's, with none (the agent later sets the run's calls on the one it returns)
    first_turn, second_turn = steps[2].output, steps[7].output
    assert [c["tool_name"] for c in first_turn["tool_calls"]] == ["search"]
    assert second_turn["tool_calls"] == []


def test_a_rerun_serves_the_agents_streamed_model_replies_and_runs_its_tool_live(
    tmp_path: Any,
) -> None:
    # FunctionAgent streams its model calls (astream_chat_with_tools): the rerun serves each
    # recorded reply, tool calls included, as a stream of one chunk; the agent's call_tool
    # step runs the tool again (its result is an event the agent makes)
    model = Scripted(("search", {"query": "flights"}))
    agent = FunctionAgent(tools=[search], llm=MockFunctionCallingLLM(response_generator=model))
    dbg = flowdbg.Debugger(db=tmp_path / "r.db")
    try:
        dbg.attach(agent)
        first = run_agent(dbg, agent, "find flights")
        assert str(first.result(WAIT)) == "done: results for flights"
        assert len(model.seen) == 2
        assert dbg.flush(WAIT)
        store = dbg.store
        assert store is not None
        (recorded,) = store.list_runs()
        rerun = dbg.rerun(recorded.run_id, "all", target=agent)
        assert str(rerun.result(WAIT)) == "done: results for flights"
        assert len(model.seen) == 2  # the model was not asked again
        assert rerun.calls is not None
        assert (rerun.calls.served, rerun.calls.live, rerun.calls.diverged) == (2, 1, [])
        assert dbg.flush(WAIT) and rerun.run_id is not None
        calls = [
            (s.node, s.kind, s.cached)
            for s in store.get_steps(rerun.run_id)
            if s.kind in ("llm", "tool")
        ]
        assert [(kind, cached) for _, kind, cached in calls] == [
            ("llm", True),
            ("tool", False),
            ("llm", True),
        ]
    finally:
        dbg.close()


def test_a_fork_of_an_agent_run_is_refused_naming_the_value_that_was_recorded_as_a_repr(
    tmp_path: Any,
) -> None:
    # the agent keeps its memory in the context store; the memory's tokenizer is a
    # functools.partial, which the record keeps as its repr: the state cannot be rebuilt, and
    # the refusal says where that value is
    model = Scripted(("search", {"query": "flights"}))
    agent = FunctionAgent(tools=[search], llm=MockFunctionCallingLLM(response_generator=model))
    dbg = flowdbg.Debugger(db=tmp_path / "f.db")
    try:
        dbg.attach(agent)
        first = run_agent(dbg, agent, "find flights")
        assert str(first.result(WAIT)) == "done: results for flights"
        assert dbg.flush(WAIT) and first.run_id is not None
        with pytest.raises(flowdbg.ForkError) as info:
            dbg.fork(first.run_id, 2, target=agent)
        message = str(info.value)
        assert "in the state: memory.tokenizer_fn (functools.partial)" in message
        assert message.endswith("it can be forked after steps 0")
    finally:
        dbg.close()
