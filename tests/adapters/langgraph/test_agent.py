"""A ReAct agent (a model node and a ToolNode in a loop) on a scripted chat model, offline:
tool breakpoints on argument patterns, the model's messages, edits of tool calls and replies."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import flowdbg

T = 10.0
QUESTION = {"messages": [("user", "find flights to Lisbon and clear the cache")]}


@tool
def search(destination: str) -> str:
    """Find flights."""
    return f"flights to {destination}"


@tool
def shell(cmd: str) -> str:
    """Run a command."""
    return f"ran {cmd}"


def build_agent() -> Any:
    replies = [
        AIMessage(
            content="",
            tool_calls=[
                {"name": "search", "args": {"destination": "Lisbon"}, "id": "c1"},
                {"name": "shell", "args": {"cmd": "rm -rf /tmp/cache"}, "id": "c2"},
            ],
        ),
        AIMessage(content="all done"),
    ]
    model = GenericFakeChatModel(messages=itertools.cycle(replies)).with_config(run_name="model")

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([search, shell]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(name="agent")


def contents(result: dict[str, Any]) -> list[str]:
    return [str(message.content) for message in result["messages"]]


@pytest.fixture
def app() -> Any:
    return build_agent()


def test_undebugged_agent(app: Any) -> None:
    assert contents(app.invoke(QUESTION)) == [
        "find flights to Lisbon and clear the cache",
        "",
        "flights to Lisbon",
        "ran rm -rf /tmp/cache",
        "all done",
    ]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_stop_before_the_matching_tool_call_edit_its_arguments(
    dbg: flowdbg.Debugger, app: Any, mode: str
) -> None:
    dbg.attach(app)
    bp = dbg.break_on_tool("shell", args_pattern=r"rm\s+-rf")
    if mode == "invoke":
        run = dbg.start(lambda: app.invoke(QUESTION))
    else:
        run = dbg.start(lambda: asyncio.run(app.ainvoke(QUESTION)))
    stop = dbg.wait_for_stop(T)
    assert stop is not None
    assert stop.breakpoints == (bp.id,)
    assert (stop.location.kind, stop.location.node, stop.location.path) == (
        "tool",
        "shell",
        ("tools",),
    )
    assert dbg.inspect("cmd", source="input") == "rm -rf /tmp/cache"
    assert dbg.inspect("args:cmd") == dbg.inspect("cmd") == "rm -rf /tmp/cache"
    # the model's request, in the state the tools node received
    request = dbg.inspect("state:messages[-1].tool_calls[1].args")
    assert request == {"cmd": "rm -rf /tmp/cache"}
    # the tool's argument schema is checked at set time: no unknown names, no wrong types
    with pytest.raises(flowdbg.EditRefused, match="takes no argument 'bogus'; its arguments are"):
        dbg.set("bogus", 5)
    with pytest.raises(flowdbg.EditRefused, match=r"refuses these arguments: cmd: Input should"):
        dbg.set("cmd", ["ls"])
    assert dbg.inspect("cmd") == "rm -rf /tmp/cache"  # refused edits change nothing
    dbg.set("cmd", "ls /tmp/cache")
    assert dbg.inspect("cmd") == "ls /tmp/cache"
    # the state still shows what the model asked for: the edit is of the call's arguments
    assert dbg.inspect("state:messages[-1].tool_calls[1].args") == request
    dbg.resume()
    result = run.result(T)
    assert contents(result)[3] == "ran ls /tmp/cache"
    assert dbg.wait_for_stop(0.05) is None  # search never stopped
    assert bp.hits == 1


def test_edit_a_tool_result_at_its_after_stop(dbg: flowdbg.Debugger, app: Any) -> None:
    dbg.attach(app)
    dbg.break_after("search", kind="tool")
    run = dbg.start(lambda: app.invoke(QUESTION))
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.position == "after"
    assert stop.output.content == "flights to Lisbon"
    dbg.set("", "no flights")  # text replaces the ToolMessage's content
    dbg.resume()
    assert contents(run.result(T))[2] == "no flights"


def test_model_calls_are_llm_units_with_their_messages(dbg: flowdbg.Debugger, app: Any) -> None:
    dbg.attach(app)
    dbg.break_before("model", kind="llm")
    run = dbg.start(lambda: app.invoke(QUESTION))
    stop = dbg.wait_for_stop(T)
    assert stop is not None
    assert (stop.location.kind, stop.location.path) == ("llm", ("agent",))
    question = "find flights to Lisbon and clear the cache"
    assert dbg.inspect("messages[-1].content", source="input") == question
    dbg.resume()
    second = dbg.wait_for_stop(T)  # the model's second turn sees the tool results
    assert second is not None
    assert dbg.inspect("messages[-1].content", source="input") == "ran rm -rf /tmp/cache"
    dbg.clear()
    dbg.resume()
    assert contents(run.result(T))[-1] == "all done"


def test_edit_the_model_reply(dbg: flowdbg.Debugger, app: Any) -> None:
    dbg.attach(app)
    dbg.break_after("model", kind="llm", hit_condition="2")  # the final answer
    run = dbg.start(lambda: app.invoke(QUESTION))
    stop = dbg.wait_for_stop(T)
    assert stop is not None
    assert stop.output.content == "all done"
    dbg.set("content", "done, but check the cache")
    dbg.resume()
    assert contents(run.result(T))[-1] == "done, but check the cache"


def test_arguments_of_a_tool_a_node_calls_itself_cannot_be_edited(
    dbg: flowdbg.Debugger,
) -> None:
    def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": [("ai", shell.invoke({"cmd": "rm -rf /"}))]}

    g = StateGraph(MessagesState)
    g.add_node("node", node)
    g.add_edge(START, "node")
    app = g.compile()
    dbg.attach(app)
    dbg.break_on_tool("shell")
    run = dbg.start(lambda: app.invoke({"messages": []}))
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.path == ("node",)
    with pytest.raises(flowdbg.EditRefused, match="only get a copy"):
        dbg.set("cmd", "ls")
    assert dbg.inspect("cmd", source="input") == "rm -rf /"  # nothing changed
    dbg.resume()
    assert contents(run.result(T)) == ["ran rm -rf /"]


def test_terminate_at_a_tool_stop(dbg: flowdbg.Debugger, app: Any) -> None:
    dbg.attach(app)
    dbg.break_on_tool("shell")
    run = dbg.start(lambda: app.invoke(QUESTION))
    assert dbg.wait_for_stop(T) is not None
    dbg.terminate()
    with pytest.raises(flowdbg.Terminated):
        run.result(T)
    log = run.log
    assert log is not None
    assert [step.status for step in log.steps if step.node == "shell"] == ["terminated"]
    assert log.errors == []


class _ToolCallingModel(GenericFakeChatModel):
    """A scripted chat model a prebuilt agent can bind tools to."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def test_the_tool_call_packet_of_a_prebuilt_agent_is_edited_where_it_is_read(
    dbg: flowdbg.Debugger,
) -> None:
    import warnings

    from langgraph.prebuilt import create_react_agent

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    replies = iter(
        [
            AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}, "id": "c1"}]),
            AIMessage("done"),
        ]
    )
    with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.0, still here
        warnings.simplefilter("ignore")
        agent = create_react_agent(_ToolCallingModel(messages=replies), [add])
    app = dbg.attach(agent)
    dbg.break_before("tools")
    run = dbg.start(app.invoke, {"messages": [("user", "add 1 and 2")]})
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "tools"
    if dbg.inspect("").get("__type") != "tool_call_with_context":
        dbg.resume()
        run.result(T)
        pytest.skip("this LangGraph's agent calls its tools node without Send packets")
    assert dbg.inspect("tool_call.args.a") == dbg.inspect("input:tool_call.args.a") == 1
    with pytest.raises(flowdbg.EditRefused, match=r"'a' would be ignored; edit tool_call.args.a"):
        dbg.set("a", 40)  # the packet's own keys are all the tools node reads
    dbg.set("input:tool_call.args.a", 40)
    dbg.resume()
    assert contents(run.result(T)) == ["add 1 and 2", "", "42", "done"]
