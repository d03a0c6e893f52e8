"""flowdbg on a LangGraph agent: stop before a dangerous tool call, look, fix it, go on.

Run it with ``python examples/langgraph_agent.py`` (needs ``pip install 'flowdbg[langgraph]'``).
The agent is an ordinary LangGraph graph -- a model node and a ``ToolNode`` in a loop -- with a
scripted chat model, so it runs offline with no API key. The model decides to search for
flights and to "clean up" with ``rm -rf``. The session below holds the run before that shell
call, reads the model's messages, rewrites the command, and lets the agent finish.

The same graph can be debugged from the terminal:
``flowdbg run examples/langgraph_agent.py:app --input '{"messages": [["user", "hi"]]}' -b tools``
"""

from __future__ import annotations

import itertools
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import flowdbg


@tool
def search_flights(destination: str) -> str:
    """Find flights to a destination."""
    return f"3 flights to {destination}, cheapest 129 EUR"


@tool
def shell(cmd: str) -> str:
    """Run a shell command (here: pretend to)."""
    return f"$ {cmd}\n(done)"


# A scripted stand-in for an LLM: first it asks for two tool calls, then it answers.
# (It cycles, so the graph can run any number of times.)
SCRIPT = [
    AIMessage(
        content="",
        tool_calls=[
            {"name": "search_flights", "args": {"destination": "Lisbon"}, "id": "call-1"},
            {"name": "shell", "args": {"cmd": "rm -rf ~/.cache/travel"}, "id": "call-2"},
        ],
    ),
    AIMessage(content="Found 3 flights to Lisbon (from 129 EUR) and tidied the cache."),
]
model = GenericFakeChatModel(messages=itertools.cycle(SCRIPT)).with_config(run_name="model")


def agent(state: MessagesState) -> dict[str, Any]:
    return {"messages": [model.invoke(state["messages"])]}


def build_agent() -> Any:
    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([search_flights, shell]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)  # tools if the model asked, else END
    g.add_edge("tools", "agent")
    return g.compile(name="travel-agent")


app = build_agent()


def main() -> None:
    question = {"messages": [("user", "Book me something to Lisbon and clean up after")]}

    dbg = flowdbg.Debugger()
    dbg.attach(app)  # the compiled graph, unchanged: no wrappers in the user's code
    bp = dbg.break_on_tool("shell", args_pattern=r"rm\s+-rf")
    print(f"set {bp.describe()}\n")

    run = dbg.start(lambda: app.invoke(question))
    stop = dbg.wait_for_stop(timeout=30)
    assert stop is not None, "the agent never reached the shell call"
    print(f"stopped: {stop}")
    print(f"  path: {' > '.join(stop.location.path)} > {stop.location.node}")
    print(f"  the command: {dbg.inspect('cmd')!r}")  # before a call: its arguments
    print(f"  the model asked for: {dbg.inspect('state:messages[-1].tool_calls[1].args')}")

    dbg.set("cmd", "ls ~/.cache/travel")  # applied to the call when the run resumes
    print(f"\nedit: cmd = {dbg.inspect('cmd')!r}")
    dbg.resume()

    result = run.result(timeout=30)
    print("\nthe agent finished:")
    for message in result["messages"]:
        text = str(message.content).replace("\n", " ") or f"(tool calls: {len(message.tool_calls)})"
        print(f"  {message.type:>5}: {text}")

    print("\nthe run log:")
    print(run.log)
    dbg.flush()
    if run.run_id is not None:
        print(f"\nlook at it later with: flowdbg runs show {run.run_id[:8]}")
    dbg.close()


if __name__ == "__main__":
    main()
