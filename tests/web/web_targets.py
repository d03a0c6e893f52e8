"""Targets the browser tests serve with ``flowdbg ui TARGET``: a LangGraph agent with tool
calls on a scripted chat model, LangGraph parallel branches and a nested subgraph. Offline."""

from __future__ import annotations

import itertools
import operator
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

#: the agent's input, as the page's run form takes it
AGENT_INPUT = {"messages": [["user", "find flights to Lisbon"]]}


@tool
def search(destination: str) -> str:
    """Find flights."""
    return f"flights to {destination}"


def build_agent() -> Any:
    """A ReAct loop: the model asks for ``search``, the ToolNode runs it, the model answers."""
    replies = [
        AIMessage(
            content="",
            tool_calls=[{"name": "search", "args": {"destination": "Lisbon"}, "id": "c1"}],
        ),
        AIMessage(content="here are your flights"),
    ]
    model = GenericFakeChatModel(messages=itertools.cycle(replies)).with_config(run_name="model")

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([search]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(name="agent")


class Fan(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    total: int


class Child(TypedDict, total=False):
    x: int
    z: int


class Parent(TypedDict, total=False):
    x: int
    z: int
    items: Annotated[list[str], operator.add]
    total: int


def build_parallel() -> Any:
    """fan, then left and right in one superstep, then join; and a nested subgraph ``sub``
    (c1, c2) before the fan."""
    child = StateGraph(Child)
    child.add_node("c1", lambda s: {"x": s["x"] * 10})
    child.add_node("c2", lambda s: {"z": s["x"] + 1})
    child.add_edge(START, "c1")
    child.add_edge("c1", "c2")
    child.add_edge("c2", END)

    g = StateGraph(Parent)
    g.add_node("sub", child.compile(name="child"))
    g.add_node("fan", lambda s: {})
    g.add_node("left", lambda s: {"items": ["left"]})
    g.add_node("right", lambda s: {"items": ["right"]})
    g.add_node("join", lambda s: {"total": len(s["items"])})
    g.add_edge(START, "sub")
    g.add_edge("sub", "fan")
    g.add_edge("fan", "left")
    g.add_edge("fan", "right")
    g.add_edge(["left", "right"], "join")
    g.add_edge("join", END)
    return g.compile(name="parallel")
