"""flowdbg's reference StateGraph: a small graph engine and its debugger adapter.

The engine (:class:`StateGraph`) works on its own; the adapter shows how any framework plugs into
flowdbg. This module is the ``stategraph`` entry point of the ``flowdbg`` plugin group.
"""

from __future__ import annotations

from collections.abc import Callable

from flowdbg.adapter import Adapter
from flowdbg.adapters.stategraph._adapter import StateGraphAdapter
from flowdbg.adapters.stategraph._graph import (
    END,
    START,
    CompiledGraph,
    Goto,
    GraphRecursionError,
    Handoff,
    InvalidGraphError,
    InvalidUpdateError,
    Model,
    StateGraph,
    StateGraphError,
    Tool,
    ahandoff,
    handoff,
    tool,
)
from flowdbg.plugins import hookimpl

__all__ = [
    "END",
    "START",
    "CompiledGraph",
    "Goto",
    "GraphRecursionError",
    "Handoff",
    "InvalidGraphError",
    "InvalidUpdateError",
    "Model",
    "StateGraph",
    "StateGraphAdapter",
    "StateGraphError",
    "Tool",
    "ahandoff",
    "handoff",
    "tool",
]


@hookimpl
def flowdbg_register_adapters(register: Callable[[Adapter], None]) -> None:
    """Register the StateGraph adapter."""
    register(StateGraphAdapter())
