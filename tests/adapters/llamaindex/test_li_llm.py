"""Model calls of LlamaIndex agents are ``llm`` units inside the step making them, held before
the model is called; the messages are edited at the before stop, the reply at the after stop
(tox env ``llamaindex_core``: the agents and mock models of llama-index-core)."""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="llama-index-core is not installed")

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage, MockFunctionCallingLLM, MockLLM
from llama_index.core.workflow import StartEvent, StopEvent, Workflow, step

import flowdbg
from flowdbg import StopReason

WAIT = 10.0
LLM = "MockFunctionCallingLLM"
METHODS = (
    "achat",
    "astream_chat",
    "achat_with_tools",
    "astream_chat_with_tools",
    "acomplete",
    "astream_complete",
)

# see test_agents.py: pydantic's deprecation warnings about LlamaIndex's own code, and
# ReActAgent's own read of ctx.is_running inside a step
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning"),
    pytest.mark.filterwarnings("ignore:is_running called from within a step"),
]

ran: list[str] = []


def search(query: str) -> str:
    """Search the web."""
    ran.append(f"search {query}")
    return f"results for {query}"


def shell(cmd: str) -> str:
    """Run a shell command."""
    ran.append(f"shell {cmd}")
    return f"ran {cmd}"


@pytest.fixture(autouse=True)
def _no_tool_ran() -> None:
    ran.clear()


class Model:
    """A scripted function-calling model: it calls ``tool`` with ``args`` until a tool result
    is in its messages, then answers with the results. It counts its calls and keeps the text
    of the messages of each; ``chunks`` splits a streamed answer into that many chunks."""

    def __init__(self, tool: str = "search", args: dict[str, Any] | None = None, chunks: int = 1):
        self.tool = tool
        self.args = {"query": "flights"} if args is None else args
        self.chunks = chunks
        self.seen: list[list[str]] = []
        self.roles: list[list[str]] = []

    @property
    def calls(self) -> int:
        return len(self.seen)

    def reply(self, messages: list[ChatMessage]) -> ChatMessage:
        self.seen.append([str(m.content) for m in messages])
        results = [str(m.content) for m in messages if m.role == "tool"]
        if results:
            return ChatMessage(role="assistant", content="done: " + " | ".join(results))
        block = ToolCallBlock(tool_call_id="call-0", tool_name=self.tool, tool_kwargs=self.args)
        return ChatMessage(role="assistant", blocks=[block])

    def __call__(self, messages: list[ChatMessage], **kwargs: Any) -> Any:
        self.roles.append([str(m.role.value) for m in messages])
        message = self.reply(messages)
        if self.chunks == 1 or not message.content:
            return message
        return self._stream(str(message.content))

    async def _stream(self, text: str) -> AsyncIterator[ChatMessage]:
        size = -(-len(text) // self.chunks)
        for end in range(size, len(text) + size, size):
            yield ChatMessage(role="assistant", content=text[: min(end, len(text))])


class ReActModel(Model):
    """The same for a ReAct agent, in ReAct's text format."""

    def reply(self, messages: list[ChatMessage]) -> ChatMessage:
        text = "\n".join(str(m.content) for m in messages[1:])  # after ReAct's system prompt
        self.seen.append([str(m.content) for m in messages])
        if "Observation:" in text:
            observed = text.rsplit("Observation:", 1)[1].strip().splitlines()[0]
            return ChatMessage(
                role="assistant", content=f"Thought: I can answer.\nAnswer: {observed}"
            )
        return ChatMessage(
            role="assistant",
            content='Thought: I need a tool.\nAction: search\nAction Input: {"query": "flights"}',
        )


def function_agent(model: Model, streaming: bool = True) -> FunctionAgent:
    llm = MockFunctionCallingLLM(response_generator=model)
    return FunctionAgent(tools=[search, shell], llm=llm, streaming=streaming)


def react_agent(model: Model, streaming: bool = True) -> ReActAgent:
    llm = MockFunctionCallingLLM(response_generator=model)
    return ReActAgent(tools=[search], llm=llm, streaming=streaming)


def agent_workflow(model: Model, streaming: bool = True) -> AgentWorkflow:
    agent = FunctionAgent(
        name="researcher",
        description="searches",
        tools=[search, shell],
        llm=MockFunctionCallingLLM(response_generator=model),
        streaming=streaming,
    )
    return AgentWorkflow(agents=[agent], root_agent="researcher")


def llm_of(agent: Workflow) -> Any:
    if isinstance(agent, AgentWorkflow):
        return agent.agents["researcher"].llm
    return agent.llm


def run_agent(dbg: flowdbg.Debugger, agent: Workflow, message: str) -> flowdbg.RunHandle:
    async def go() -> Any:
        return await agent.run(user_msg=message)

    return dbg.start(go)


def methods(cls: type) -> dict[str, Any]:
    """The chat methods of every class a model is made of, as each class holds them."""
    return {
        (klass.__qualname__, name): vars(klass)[name]
        for klass in cls.__mro__
        for name in METHODS
        if name in vars(klass)
    }


BUILDS: dict[str, Callable[[Model, bool], Workflow]] = {
    "function": function_agent,
    "agent-workflow": agent_workflow,
}


# -- holding, editing --------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "not-streaming"])
@pytest.mark.parametrize("kind", list(BUILDS))
def test_a_model_call_holds_before_the_model_is_called_and_edited_messages_reach_it(
    dbg: flowdbg.Debugger, kind: str, streaming: bool
) -> None:
    model = Model()
    agent = BUILDS[kind](model, streaming)
    dbg.attach(agent)
    bp = dbg.break_before(LLM, kind="llm")
    run = run_agent(dbg, agent, "find flights")

    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        LLM,
        "llm",
        "before",
    )
    assert stop.location.path == ("run_agent_step",)  # inside the step making the call
    assert stop.location.depth == 1
    assert stop.breakpoints == (bp.id,)
    assert model.calls == 0  # held before the model was called
    assert dbg.inspect("messages[-1].content") == "find flights"
    assert dbg.inspect("args:messages[-1].role") == "user"
    dbg.set("messages[-1]", "find trains")  # text keeps the message's role
    assert dbg.inspect("messages[-1]") == "find trains"
    dbg.clear()
    dbg.resume()

    assert dbg.wait_for_stop(WAIT) is None
    assert str(run.result(WAIT)) == "done: results for flights"
    assert model.seen[0][-1] == "find trains"  # the model received the edit
    assert model.roles[0][-1] == "user"
    assert "find flights" not in model.seen[0]
    assert model.calls == 2


def test_message_text_is_edited_through_content_or_blocks(dbg: flowdbg.Debugger) -> None:
    model = Model()
    agent = function_agent(model, streaming=False)
    dbg.attach(agent)
    dbg.break_before("*", kind="llm")
    dbg.break_after("*", kind="llm")
    run = run_agent(dbg, agent, "find flights")
    assert dbg.wait_for_stop(WAIT) is not None
    dbg.set("messages[-1].content", "find buses")
    assert dbg.inspect("messages[-1].blocks[0].text") == "find buses"
    dbg.resume()
    assert dbg.wait_for_stop(WAIT) is not None  # after: the reply is a tool call, no text
    with pytest.raises(flowdbg.PathError, match="blocks"):
        dbg.set("content", "no tool")  # ChatMessage's own refusal: set blocks instead
    dbg.resume()
    assert dbg.wait_for_stop(WAIT) is not None  # the second call
    dbg.resume()
    assert dbg.wait_for_stop(WAIT) is not None
    assert dbg.inspect("content") == "done: results for flights"
    dbg.set("content", "edited")
    dbg.resume()
    assert str(run.result(WAIT)) == "edited"
    assert model.seen[0] == ["find buses"]


def test_edits_a_model_call_cannot_take_are_refused_with_what_to_do(
    dbg: flowdbg.Debugger,
) -> None:
    model = Model()
    agent = function_agent(model)
    dbg.attach(agent)
    dbg.break_before("*", kind="llm")
    dbg.break_after("*", kind="llm")
    run = run_agent(dbg, agent, "find flights")
    assert dbg.wait_for_stop(WAIT) is not None
    with pytest.raises(flowdbg.EditRefused, match=r"messages\[i\]"):
        dbg.set("temperature", 0.1)
    with pytest.raises(flowdbg.EditRefused, match="list"):
        dbg.set("messages", "find trains")
    with pytest.raises(flowdbg.EditRefused, match="ChatMessage"):
        dbg.set("messages[0]", 42)
    with pytest.raises(flowdbg.EditRefused, match="ChatMessage"):
        dbg.set("messages[0]", {"role": "nobody", "content": "x"})
    assert dbg.inspect("messages[0].content") == "find flights"  # refused edits change nothing
    dbg.resume()
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.position == "after"
    with pytest.raises(flowdbg.EditRefused, match="ChatMessage"):
        dbg.set("", ["not", "a", "reply"])
    dbg.clear()
    dbg.resume()
    assert str(run.result(WAIT)) == "done: results for flights"
    assert model.seen[0] == ["find flights"]


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "not-streaming"])
@pytest.mark.parametrize("kind", list(BUILDS))
def test_a_reply_edited_at_the_after_stop_changes_what_the_agent_does(
    dbg: flowdbg.Debugger, kind: str, streaming: bool
) -> None:
    model = Model("shell", {"cmd": "rm -rf /tmp/cache"})
    agent = BUILDS[kind](model, streaming)
    dbg.attach(agent)
    dbg.break_after(LLM, kind="llm")
    run = run_agent(dbg, agent, "clean up")

    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.kind, stop.location.position) == ("llm", "after")
    assert model.calls == 1
    reply = dbg.inspect("result:")
    assert reply.role == "assistant"
    assert [block.tool_name for block in reply.blocks] == ["shell"]  # the model's tool call
    dbg.set("", "I will not delete anything.")  # a text reply instead: no tool call
    dbg.clear()
    dbg.resume()

    assert dbg.wait_for_stop(WAIT) is None
    assert str(run.result(WAIT)) == "I will not delete anything."
    assert ran == []  # the agent called no tool
    assert model.calls == 1


def test_a_reply_edited_in_place_reaches_the_agent(dbg: flowdbg.Debugger) -> None:
    model = Model("search", {"query": "flights"})
    agent = function_agent(model, streaming=False)
    dbg.attach(agent)
    dbg.break_after("*", kind="llm")
    run = run_agent(dbg, agent, "find flights")
    assert dbg.wait_for_stop(WAIT) is not None
    dbg.set("blocks[0].tool_kwargs", {"query": "trains"})  # another argument for the tool
    dbg.clear()
    dbg.resume()
    assert str(run.result(WAIT)) == "done: results for trains"
    assert ran == ["search trains"]


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "not-streaming"])
def test_react_agent_model_calls_are_units(dbg: flowdbg.Debugger, streaming: bool) -> None:
    model = ReActModel()
    agent = react_agent(model, streaming)
    dbg.attach(agent)
    dbg.break_before("*", kind="llm")
    run = run_agent(dbg, agent, "find flights")

    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.path) == (LLM, ("run_agent_step",))
    assert model.calls == 0
    assert dbg.inspect("messages[0].role") == "system"  # ReAct's own prompt, as sent
    assert dbg.inspect("messages[-1].content") == "find flights"
    dbg.set("messages[-1]", "find trains")
    dbg.clear()
    dbg.break_after("*", kind="llm")
    dbg.resume()

    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.position == "after"
    assert model.seen[0][-1] == "find trains"
    assert "Action: search" in dbg.inspect("result:content")
    # answer straight away instead of calling the tool
    dbg.set("", "Thought: I know it.\nAnswer: no flights today")
    dbg.clear()
    dbg.resume()
    assert dbg.wait_for_stop(WAIT) is None
    assert str(run.result(WAIT)) == "no flights today"
    assert ran == []
    assert model.calls == 1


# -- streaming ---------------------------------------------------------------------------------


async def _streamed(agent: Workflow, message: str) -> tuple[str, list[tuple[str, str]]]:
    handler = agent.run(user_msg=message)
    deltas = [
        (event.delta, event.response)
        async for event in handler.stream_events()
        if type(event).__name__ == "AgentStream"
    ]
    return str(await handler), deltas


def test_a_streamed_reply_streams_the_same_chunks(dbg: flowdbg.Debugger) -> None:
    bare = asyncio.run(_streamed(function_agent(Model(chunks=4)), "find flights"))
    assert len(bare[1]) > 4  # the answer came in chunks

    agent = function_agent(Model(chunks=4))
    dbg.attach(agent)
    dbg.break_after("*", kind="llm", condition="step < 0")  # looked at, never stops
    run = dbg.start(_streamed, agent, "find flights")
    assert dbg.wait_for_stop(WAIT) is None
    assert run.result(WAIT) == bare


def test_a_streamed_reply_edited_at_its_end_comes_as_one_more_chunk(
    dbg: flowdbg.Debugger,
) -> None:
    model = Model(chunks=4)
    agent = function_agent(model)
    dbg.attach(agent)
    dbg.break_after("*", kind="llm", condition="'done' in str(output.content)")
    run = dbg.start(_streamed, agent, "find flights")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert dbg.inspect("result:content") == "done: results for flights"
    dbg.set("", "edited answer")
    dbg.resume()
    result, deltas = run.result(WAIT)
    assert result == "edited answer"
    assert deltas[-1] == ("", "edited answer")  # no text of its own, the edited reply
    assert deltas[-2][1] == "done: results for flights"  # the model's chunks came as they were


# -- failures, terminate, detach ---------------------------------------------------------------


def test_a_model_that_raises_stops_at_the_llm_units_error_point(dbg: flowdbg.Debugger) -> None:
    def failing(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        raise ConnectionError("model unreachable")

    llm = MockFunctionCallingLLM(response_generator=failing)
    agent = FunctionAgent(tools=[search], llm=llm, streaming=False)
    dbg.attach(agent)
    dbg.break_on_exception(ConnectionError)
    run = run_agent(dbg, agent, "go")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        LLM,
        "llm",
        "error",
    )
    assert stop.reason == StopReason.EXCEPTION
    assert str(stop.exception) == "model unreachable"
    dbg.clear()
    dbg.resume()
    with pytest.raises(Exception, match="model unreachable"):
        run.result(WAIT)
    (log,) = dbg.runs
    assert [(s.node, s.status) for s in log.steps if s.kind == "llm"] == [(LLM, "failed")]


def test_terminate_at_a_model_call_ends_the_run_before_the_model_is_called(
    dbg: flowdbg.Debugger,
) -> None:
    model = Model()
    agent = function_agent(model)
    dbg.attach(agent)
    dbg.break_before("*", kind="llm")
    run = run_agent(dbg, agent, "go")
    assert dbg.wait_for_stop(WAIT) is not None
    dbg.terminate()
    with pytest.raises(BaseException):  # noqa: B017 - how the agent's run ends is LlamaIndex's
        run.result(WAIT)
    assert model.calls == 0
    (log,) = dbg.runs
    assert [s.status for s in log.steps if s.kind == "llm"] == ["terminated"]


@pytest.mark.parametrize("kind", list(BUILDS))
def test_detach_restores_the_model_exactly(dbg: flowdbg.Debugger, kind: str) -> None:
    model = Model()
    agent = BUILDS[kind](model, True)
    llm = llm_of(agent)
    cls = type(llm)
    found = methods(cls)
    attributes = dict(vars(llm))
    dump = llm.model_dump()

    dbg.attach(agent)
    assert methods(cls) != found  # the chat methods of its class report to flowdbg
    assert vars(llm) == attributes  # the model object itself is not changed
    dbg.attach(agent)  # idempotent
    dbg.detach(agent)
    assert methods(cls) == found
    assert all(methods(cls)[key] is method for key, method in found.items())
    assert not any(hasattr(inspect.unwrap(m), "__wrapped__") for m in methods(cls).values())
    assert vars(llm) == attributes
    assert llm.model_dump() == dump

    dbg.break_before("*", kind="llm")
    run = run_agent(dbg, agent, "find flights")  # detached: nothing stops
    assert dbg.wait_for_stop(1.0) is None
    assert str(run.result(WAIT)) == "done: results for flights"


def test_detach_while_held_at_a_model_call_lets_the_run_finish(dbg: flowdbg.Debugger) -> None:
    model = Model()
    agent = function_agent(model)
    cls = type(agent.llm)
    found = methods(cls)
    dbg.attach(agent)
    dbg.break_before("*", kind="llm")
    run = run_agent(dbg, agent, "find flights")
    assert dbg.wait_for_stop(WAIT) is not None
    dbg.detach(agent)
    assert methods(cls) == found
    assert str(run.result(WAIT)) == "done: results for flights"
    assert model.calls == 2


def test_two_agents_on_one_model_class_patch_it_once_and_restore_it_last(
    dbg: flowdbg.Debugger,
) -> None:
    first, second = function_agent(Model()), function_agent(Model())
    found = methods(type(first.llm))
    dbg.attach(first)
    dbg.attach(second)
    dbg.detach(first)
    assert methods(type(first.llm)) != found  # still held for the second agent
    dbg.break_before("*", kind="llm")
    run = run_agent(dbg, second, "go")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.kind == "llm"
    dbg.clear()
    dbg.resume()
    run.result(WAIT)
    dbg.detach(second)
    assert methods(type(first.llm)) == found


def test_calls_on_a_model_no_attached_workflow_holds_are_not_units(
    dbg: flowdbg.Debugger,
) -> None:
    attached, bare = function_agent(Model()), function_agent(Model())
    dbg.attach(attached)
    dbg.break_before("*", kind="llm")

    # the same model class, another object, in a run nobody attached: nothing stops
    async def go() -> Any:
        return await bare.run(user_msg="go")

    assert str(asyncio.run(go())) == "done: results for flights"
    assert dbg.wait_for_stop(0.2) is None


class Asking(Workflow):
    """A workflow of one's own holding a model: its step asks the model, then a copy of it."""

    def __init__(self, llm: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.llm = llm

    @step
    async def ask(self, ev: StartEvent) -> StopEvent:
        question = [ChatMessage(role="user", content=ev.question)]
        first = await self.llm.achat(question)
        second = await self.llm.model_copy().achat(question)
        return StopEvent(result=[str(first.message.content), str(second.message.content)])


def test_a_workflow_holding_a_model_reports_its_calls_but_not_a_copys(
    dbg: flowdbg.Debugger,
) -> None:
    def echo(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        return ChatMessage(role="assistant", content=f"echo {messages[-1].content}")

    wf = Asking(MockFunctionCallingLLM(response_generator=echo), timeout=30)
    dbg.attach(wf)
    dbg.break_after("*", kind="llm")

    async def go() -> Any:
        return await wf.run(question="hi")

    run = dbg.start(go)
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.path == ("ask",)
    dbg.set("", "edited")
    dbg.resume()
    assert dbg.wait_for_stop(1.0) is None  # the copy's call is not a unit
    assert run.result(WAIT) == ["edited", "echo hi"]
    (log,) = dbg.runs
    assert [(s.node, s.kind) for s in log.steps] == [("ask", "node"), (LLM, "llm")]


def test_time_held_at_a_model_call_does_not_count_against_the_timeout(
    dbg: flowdbg.Debugger,
) -> None:
    model = Model()
    agent = FunctionAgent(
        tools=[search], llm=MockFunctionCallingLLM(response_generator=model), timeout=0.5
    )
    dbg.attach(agent)
    dbg.break_before("*", kind="llm")
    run = run_agent(dbg, agent, "find flights")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert "timeout" in (stop.message or "")
    threading.Event().wait(1.0)  # longer than the timeout
    dbg.clear()
    dbg.resume()
    assert str(run.result(WAIT)) == "done: results for flights"


# -- completions in a workflow of one's own ---------------------------------------------------


class Summarizing(Workflow):
    """A workflow of one's own asking its model for a completion, streamed or not: the result
    is the reply's text and, streamed, the text each chunk added."""

    def __init__(self, llm: Any, streamed: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.llm = llm
        self.streamed = streamed

    @step
    async def summarize(self, ev: StartEvent) -> StopEvent:
        prompt = f"Summarize: {ev.topic}"
        if not self.streamed:
            reply = await self.llm.acomplete(prompt)
            return StopEvent(result=reply.text)
        deltas, text = [], None
        async for chunk in await self.llm.astream_complete(prompt):
            deltas.append(chunk.delta)
            text = chunk.text
        return StopEvent(result={"text": text, "deltas": deltas})


def summarize(wf: Summarizing, topic: str) -> Any:
    async def go() -> Any:
        return await wf.run(topic=topic)

    return go


@pytest.mark.parametrize("streamed", [False, True], ids=["acomplete", "astream_complete"])
def test_a_completion_holds_before_the_model_and_its_prompt_and_text_are_edited(
    dbg: flowdbg.Debugger, streamed: bool
) -> None:
    prompts: list[str] = []

    class Echo(MockLLM):  # MockLLM answers with the prompt itself
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            prompts.append(prompt)
            return super().complete(prompt, formatted=formatted, **kwargs)

        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            prompts.append(prompt)
            return super().stream_complete(prompt, formatted=formatted, **kwargs)

    wf = Summarizing(Echo(), streamed=streamed, timeout=30)
    dbg.attach(wf)
    dbg.break_before("*", kind="llm")
    dbg.break_after("*", kind="llm")
    run = dbg.start(summarize(wf, "flowdbg"))

    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        "Echo",
        "llm",
        "before",
    )
    assert stop.location.path == ("summarize",)
    assert prompts == []  # held before the model was called
    assert dbg.inspect("prompt") == "Summarize: flowdbg"
    dbg.set("prompt", "Say: hi")
    dbg.resume()

    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.position == "after"
    assert prompts == ["Say: hi"]  # the model received the edit
    assert dbg.inspect("") == "Say: hi"  # the reply's text
    dbg.set("", "edited")
    dbg.resume()
    assert dbg.wait_for_stop(1.0) is None
    result = run.result(WAIT)
    if streamed:  # the model's chunks as they came, then the edited text in one more
        assert result["text"] == "edited"
        assert "".join(result["deltas"]) == "Say: hi"
        assert result["deltas"][-1] == ""
    else:
        assert result == "edited"
    (log,) = dbg.runs
    assert [(s.node, s.kind, s.status) for s in log.steps] == [
        ("summarize", "node", "completed"),
        ("Echo", "llm", "completed"),
    ]


def test_edits_a_completion_cannot_take_are_refused_with_what_to_do(
    dbg: flowdbg.Debugger,
) -> None:
    wf = Summarizing(MockLLM(), timeout=30)
    dbg.attach(wf)
    dbg.break_before("*", kind="llm")
    dbg.break_after("*", kind="llm")
    run = dbg.start(summarize(wf, "flowdbg"))
    assert dbg.wait_for_stop(WAIT) is not None
    with pytest.raises(flowdbg.EditRefused, match="edit prompt"):
        dbg.set("messages", [])
    with pytest.raises(flowdbg.EditRefused, match="text, not a int"):
        dbg.set("prompt", 42)
    assert dbg.inspect("prompt") == "Summarize: flowdbg"  # refused edits change nothing
    dbg.resume()
    assert dbg.wait_for_stop(WAIT) is not None
    with pytest.raises(flowdbg.EditRefused, match="set it to a string"):
        dbg.set("", ["not", "text"])
    dbg.clear()
    dbg.resume()
    assert run.result(WAIT) == "Summarize: flowdbg"


@pytest.mark.parametrize("streamed", [False, True], ids=["acomplete", "astream_complete"])
def test_completions_attached_and_recording_give_the_same_results(
    tmp_path: Path, streamed: bool
) -> None:
    async def bare() -> Any:
        return await Summarizing(MockLLM(), streamed=streamed, timeout=30).run(topic="x")

    expected = asyncio.run(bare())
    dbg = flowdbg.Debugger(db=str(tmp_path / "flowdbg.db"))
    try:
        wf = Summarizing(MockLLM(), streamed=streamed, timeout=30)
        dbg.attach(wf)
        run = dbg.start(summarize(wf, "x"))
        assert run.result(WAIT) == expected
        assert dbg.flush(WAIT)
        store = dbg.store
        assert store is not None
        steps = store.get_steps(run.run_id or "")
    finally:
        dbg.close()
    (call,) = [s for s in steps if s.kind == "llm"]
    assert call.input == {"prompt": "Summarize: x"}
    assert call.output == "Summarize: x"


# -- stepping, recording -----------------------------------------------------------------------


def test_step_into_from_the_agent_step_stops_at_its_model_call(dbg: flowdbg.Debugger) -> None:
    agent = function_agent(Model())
    dbg.attach(agent)
    dbg.break_before("run_agent_step")
    run = run_agent(dbg, agent, "find flights")
    assert dbg.wait_for_stop(WAIT) is not None
    dbg.step_into()
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.kind, stop.reason) == (LLM, "llm", StopReason.STEP)
    dbg.step_over()  # over the call: the next stop is the next step of the agent
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.depth) == ("parse_agent_output", 0)
    dbg.clear()
    dbg.resume()
    while dbg.wait_for_stop(1.0) is not None:
        dbg.resume()
    assert str(run.result(WAIT)) == "done: results for flights"


def test_recording_keeps_the_model_calls_with_their_messages_and_replies(
    tmp_path: Path,
) -> None:
    dbg = flowdbg.Debugger(db=str(tmp_path / "flowdbg.db"))
    try:
        agent = function_agent(Model())
        dbg.attach(agent)
        run = run_agent(dbg, agent, "find flights")
        assert str(run.result(WAIT)) == "done: results for flights"
        assert dbg.flush(WAIT)
        store = dbg.store
        assert store is not None
        steps = store.get_steps(run.run_id or "")
    finally:
        dbg.close()
    rows = [(s.node, s.kind, s.path) for s in steps]
    assert rows.count((LLM, "llm", ("run_agent_step",))) == 2
    calls = [s for s in steps if s.kind == "llm"]
    assert all(s.status == "completed" for s in calls)
    first, second = calls
    assert "find flights" in str(first.input)
    assert "search" in str(first.output)  # the tool call it asked for
    assert "done: results for flights" in str(second.output)
    # each call comes inside its step: numbered after it, before the next step
    for call in calls:
        enclosing = max(
            (s for s in steps if s.kind == "node" and s.step < call.step), key=lambda s: s.step
        )
        assert enclosing.node == "run_agent_step"


# -- transparency ------------------------------------------------------------------------------


#: ReActAgent numbers its tool calls with fresh uuids, different on every run
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _event(event: Any) -> tuple[str, str]:
    return type(event).__name__, _UUID.sub("<uuid>", repr(event.model_dump(mode="json")))


async def _run(agent: Workflow, message: str) -> tuple[str, list[tuple[str, str]]]:
    handler = agent.run(user_msg=message)
    stream = [_event(event) async for event in handler.stream_events()]
    return str(await handler), stream


TRANSPARENT: dict[str, Callable[[], Workflow]] = {
    "function-streaming": lambda: function_agent(Model(chunks=3)),
    "function": lambda: function_agent(Model(), streaming=False),
    "react-streaming": lambda: react_agent(ReActModel(chunks=3)),
    "react": lambda: react_agent(ReActModel(), streaming=False),
    "agent-workflow-streaming": lambda: agent_workflow(Model(chunks=3)),
    "agent-workflow": lambda: agent_workflow(Model(), streaming=False),
}


@pytest.mark.parametrize("name", list(TRANSPARENT))
def test_attached_and_recording_agents_give_the_same_results_and_events(
    name: str, tmp_path: Path
) -> None:
    bare = asyncio.run(_run(TRANSPARENT[name](), "find flights"))
    assert "results for flights" in bare[0]

    dbg = flowdbg.Debugger(db=str(tmp_path / "flowdbg.db"))
    try:
        agent = TRANSPARENT[name]()
        dbg.attach(agent)
        dbg.break_before("*", kind="llm", condition="step < 0")
        dbg.break_after("*", kind="llm", hit_condition=">=1000")
        run = dbg.start(_run, agent, "find flights")
        assert dbg.wait_for_stop(WAIT) is None
        attached = run.result(WAIT)
        assert dbg.flush(WAIT)
        (log,) = dbg.runs
        assert any(s.kind == "llm" for s in log.steps)
    finally:
        dbg.close()
    assert attached == bare
