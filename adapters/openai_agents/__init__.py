"""The OpenAI Agents SDK adapter: debug ``agents.Agent`` runs with flowdbg.

This module is the ``openai_agents`` entry point of the ``flowdbg`` plugin group. Importing it
does not import the SDK (``import agents`` takes about two seconds); the adapter loads it when an
agent is attached or the runner is instrumented (``dbg.install("openai_agents")``).
"""

from __future__ import annotations

from collections.abc import Callable

from flowdbg.adapter import Adapter
from flowdbg.adapters.openai_agents._adapter import OpenAIAgentsAdapter
from flowdbg.plugins import hookimpl

__all__ = ["OpenAIAgentsAdapter"]


@hookimpl
def flowdbg_register_adapters(register: Callable[[Adapter], None]) -> None:
    """Register the OpenAI Agents SDK adapter."""
    register(OpenAIAgentsAdapter())
