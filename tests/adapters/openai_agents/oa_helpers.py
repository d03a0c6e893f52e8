"""Offline agents for the OpenAI Agents SDK adapter tests: scripted models, no network.

Import it after ``pytest.importorskip("agents")``: it imports the SDK.
"""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

# tracing must never reach the network, whatever the environment (tox sets it too)
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents import Agent, Runner, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

set_tracing_disabled(True)

__all__ = [
    "Scripted",
    "answer",
    "assistant_message",
    "calls",
    "function_call",
    "outputs",
    "run_sync",
    "say",
]


class Scripted(ScriptedModel):
    """A ScriptedModel whose unit name is ``name`` (the ``llm`` units take a model's name)."""

    def __init__(self, steps: Sequence[Any], name: str = "chat") -> None:
        super().__init__(steps)
        self.model = name


def say(text: str) -> list[Any]:
    """A model turn answering ``text``."""
    return [assistant_message(text)]


def calls(*items: tuple[str, dict[str, Any], str]) -> list[Any]:
    """A model turn calling tools: ``(name, arguments, call_id)`` each."""
    return [function_call(name, args, call_id=call_id) for name, args, call_id in items]


def outputs(call: Any) -> list[str]:
    """The tool outputs in a recorded model call's input, oldest first."""
    return [
        str(item["output"])
        for item in call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def answer(fn: Callable[[Any], str], repeat: int = 1) -> list[Any]:
    """``repeat`` model turns answering ``fn(call)`` (computed from the call)."""
    return [ModelStep.respond(lambda call: [assistant_message(fn(call))])] * repeat


def handoff_args(call: Any) -> dict[str, Any]:
    """The arguments of the last handoff call in a recorded model call's input."""
    for item in reversed(call.input):
        if (
            isinstance(item, dict)
            and item.get("type") == "function_call"
            and str(item.get("name", "")).startswith("transfer_to_")
        ):
            return json.loads(item.get("arguments") or "{}")
    return {}


def agent(name: str, steps: Sequence[Any], **kwargs: Any) -> Agent[Any]:
    """An agent answering with the scripted ``steps``."""
    return Agent(name=name, model=Scripted(steps), **kwargs)


def run_sync(agent: Agent[Any], input: Any, **kwargs: Any) -> Any:
    """``Runner.run_sync(agent, input, **kwargs)``, then close the event loop the SDK left open
    for the thread (run.py, ``_run_sync_impl``: it keeps the thread's default loop open on
    purpose, and makes a new one when it finds it closed; pytest's ``filterwarnings = error``
    turns an unclosed loop into an error when it is collected)."""
    try:
        return Runner.run_sync(agent, input, **kwargs)
    finally:
        policy = asyncio.get_event_loop_policy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                loop = policy.get_event_loop()
            except RuntimeError:
                loop = None
        if loop is not None and not loop.is_running():
            loop.close()
            policy.set_event_loop(None)
