"""The LangGraph adapter: debug compiled LangGraph graphs with flowdbg.

This module is the ``langgraph`` entry point of the ``flowdbg`` plugin group. Importing it does
not import LangGraph; the adapter loads it when a graph is attached.
"""

from __future__ import annotations

from collections.abc import Callable

from flowdbg.adapter import Adapter
from flowdbg.adapters.langgraph._adapter import LangGraphAdapter
from flowdbg.plugins import hookimpl

__all__ = ["LangGraphAdapter"]


@hookimpl
def flowdbg_register_adapters(register: Callable[[Adapter], None]) -> None:
    """Register the LangGraph adapter."""
    register(LangGraphAdapter())
