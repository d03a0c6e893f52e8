"""An OpenAI agent the browser tests serve, whose ``greet`` tool reads ``ctx.context["user"]``:
a run needs the config ``{"context": {"user": ...}}``. Offline: its model is the SDK's scripted
one. (Imports the SDK: import it where the SDK is installed.)"""

from __future__ import annotations

from typing import Any

from agents import Agent, RunContextWrapper, function_tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call


@function_tool
def greet(ctx: RunContextWrapper[Any]) -> str:
    """Greet the user of the run."""
    return f"hello {ctx.context['user']}"


def _answer(call: Any) -> Any:
    outputs = [
        item
        for item in call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    return [assistant_message(str(outputs[-1]["output"]))]


def build_greeter() -> Any:
    """The agent ``greeter``: it calls ``greet`` and answers with its result."""
    set_tracing_disabled(True)
    return Agent(
        name="greeter",
        instructions="Greet the user.",
        tools=[greet],
        model=ScriptedModel(
            [[function_call("greet", {}, call_id="g1")], ModelStep.respond(_answer)]
        ),
    )
