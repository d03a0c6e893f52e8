"""``flowdbg demo --framework openai-agents``: an offline support agent and its scripted session.

A triage agent hands a refund request over to a refunds agent, which calls the ``refund`` tool
and answers. Both models are the SDK's own ``agents.testing.ScriptedModel`` (no network, no API
key). The session holds the run before the refund is paid, lowers the amount, and lets the
agents finish.

The SDK is imported by :func:`build_agent` only, so that :data:`DEMO` can be read (to list the
demo, or to say what to install) where the SDK is missing.
"""

from __future__ import annotations

from typing import Any

from flowdbg.adapter import Demo

__all__ = ["DEMO", "DEMO_INPUT", "SCRIPT", "TARGET", "build_agent"]

#: the demo as a ``flowdbg run`` target
TARGET = "flowdbg.adapters.openai_agents._demo:build_agent"

DEMO_INPUT = "Please refund order 1042, it arrived broken"

#: what the tour types at the terminal debugger (``#`` lines are narration)
SCRIPT = (
    "# stopped on entry, before the triage agent; the agents, their tools and handoffs:",
    "l",
    "# hold the run before any refund of four digits or more (before the tool body runs)",
    'tool refund ~"amount":\\s*[0-9]{4,}',
    "c",
    "where",
    "# p and set reach the arguments the tool receives",
    "p amount",
    "set amount = 50",
    "# the run so far, then on to its end",
    "log",
    "c",
)

DEMO = Demo(
    target=TARGET,
    input=DEMO_INPUT,
    script=SCRIPT,
    hint="try l, tool refund, c, p amount, set amount = 50, log, c (h for help)",
    summary="an OpenAI Agents SDK handoff, held before a refund tool call whose amount is lowered",
)


def build_agent() -> Any:
    """The agents: ``triage`` hands off to ``refunds``, which calls ``refund`` and answers."""
    from agents import Agent, function_tool, set_tracing_disabled
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    # the demo is offline: the SDK would otherwise export traces when OPENAI_API_KEY is set
    set_tracing_disabled(True)

    @function_tool
    def refund(order_id: int, amount: int) -> str:
        """Refund an order."""
        return f"refunded {amount} EUR for order {order_id}"

    def answer(call: Any) -> Any:
        outputs = [
            item
            for item in call.input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        return [assistant_message(f"Done: {outputs[-1]['output']}.")]

    refunds = Agent(
        name="refunds",
        instructions="Refund orders.",
        tools=[refund],
        model=ScriptedModel(
            [
                [function_call("refund", {"order_id": 1042, "amount": 1999}, call_id="call-1")],
                ModelStep.respond(answer),
            ]
        ),
    )
    return Agent(
        name="triage",
        instructions="Send refund requests to the refunds agent.",
        handoffs=[refunds],
        model=ScriptedModel([[function_call("transfer_to_refunds", {}, call_id="call-0")]]),
    )
