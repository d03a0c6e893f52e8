"""The LangGraph demo's former place: ``flowdbg run flowdbg.cli._demo_langgraph:build_graph``
(the target earlier versions of ``flowdbg demo --framework langgraph`` printed) still runs it.
The demo belongs to the LangGraph adapter: :mod:`flowdbg.adapters.langgraph._demo`."""

from __future__ import annotations

from flowdbg.adapters.langgraph._demo import DEMO_INPUT, SCRIPT, TARGET, build_graph

__all__ = ["DEMO_INPUT", "SCRIPT", "TARGET", "build_graph"]
