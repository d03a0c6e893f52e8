"""The LlamaIndex adapter: debug LlamaIndex Workflows (and the agents built on them) with flowdbg.

This module is the ``llamaindex`` entry point of the ``flowdbg`` plugin group. Importing it does
not import LlamaIndex; the adapter loads it when a workflow is attached.
"""

from __future__ import annotations

from collections.abc import Callable

from flowdbg.adapter import Adapter
from flowdbg.adapters.llamaindex._adapter import LlamaIndexAdapter
from flowdbg.plugins import hookimpl

__all__ = ["LlamaIndexAdapter"]


@hookimpl
def flowdbg_register_adapters(register: Callable[[Adapter], None]) -> None:
    """Register the LlamaIndex adapter."""
    register(LlamaIndexAdapter())
