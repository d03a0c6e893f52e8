"""``flowdbg demo --framework langgraph``: an offline LangGraph agent and its scripted session.

The agent is a plain LangGraph graph: a model node and a ``ToolNode`` in a loop. The model is
scripted (no network, no API key): it asks to search for flights and to clean a cache with
``rm -rf``, then answers. The session holds the run before that shell call only, reads what
the model asked for, rewrites the command, and lets the agent finish.

LangGraph is imported by :func:`build_graph` only, so that :data:`DEMO` can be read (to list
the demo, or to say what to install) where LangGraph is missing.
"""

from __future__ import annotations

import itertools
from typing import Any

from flowdbg.adapter import Demo

__all__ = ["DEMO", "DEMO_INPUT", "SCRIPT", "TARGET", "build_graph"]

#: the demo as a ``flowdbg run`` target
TARGET = "flowdbg.adapters.langgraph._demo:build_graph"

DEMO_INPUT: dict[str, Any] = {
    "messages": [["user", "Find me a flight to Lisbon and clear the travel cache"]]
}

#: what the tour types at the terminal debugger (``#`` lines are narration)
SCRIPT = (
    "# stopped on entry, before the agent's first node; the graph:",
    "l",
    "# hold the run before a shell call that deletes things (and only that one)",
    "tool shell ~rm\\s+-rf",
    "c",
    "where",
    "# p and set reach what the call receives, its arguments",
    "p cmd",
    "# what the model asked for, in the last message of the state (read only)",
    "p state:messages[-1].tool_calls",
    "# list the cache instead of wiping it",
    "set cmd = 'ls ~/.cache/travel'",
    "# the run so far, then on to its end",
    "log",
    "c",
)

DEMO = Demo(
    target=TARGET,
    input=DEMO_INPUT,
    script=SCRIPT,
    hint="try l, tool shell, c, p cmd, p state:messages[-1].tool_calls, set cmd = 'ls', log, "
    "c (h for help)",
    summary="a LangGraph agent held before an rm -rf tool call, whose command is rewritten",
)


def build_graph() -> Any:
    """The agent: ``agent`` (scripted model) -> ``tools`` (ToolNode) -> ``agent`` ... -> end."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool
    def search_flights(destination: str) -> str:
        """Find flights to a destination."""
        return f"3 flights to {destination}, cheapest 129 EUR"

    @tool
    def shell(cmd: str) -> str:
        """Run a shell command (pretend to)."""
        return f"$ {cmd} (done)"

    replies = [
        AIMessage(
            content="",
            tool_calls=[
                {"name": "search_flights", "args": {"destination": "Lisbon"}, "id": "call-1"},
                {"name": "shell", "args": {"cmd": "rm -rf ~/.cache/travel"}, "id": "call-2"},
            ],
        ),
        AIMessage(content="Booked nothing yet: 3 flights to Lisbon from 129 EUR. Cache handled."),
    ]
    model = GenericFakeChatModel(messages=itertools.cycle(replies)).with_config(run_name="model")

    def agent(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([search_flights, shell]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(name="travel-agent")
