"""A target the browser tests serve whose state is large: a 10 MB string and a list of 100,000
numbers, made by its first node (flowdbg's own StateGraph: no framework needed)."""

from __future__ import annotations

from typing import Any

from flowdbg.adapters.stategraph import END, CompiledGraph, StateGraph

#: the length of the string ``load`` makes
DOC_CHARS = 10 * 1024 * 1024
#: the length of the list it makes
ITEMS = 100_000


def load(state: dict[str, Any]) -> dict[str, Any]:
    return {
        "doc": "lorem ipsum " * (DOC_CHARS // 12) + "x" * (DOC_CHARS % 12),
        "items": list(range(ITEMS)),
    }


def count(state: dict[str, Any]) -> dict[str, Any]:
    return {"n": len(state["items"]), "chars": len(state["doc"])}


def build_big() -> CompiledGraph:
    """load -> count."""
    g = StateGraph(name="big")
    g.add_node("load", load)
    g.add_node("count", count)
    g.set_entry_point("load")
    g.add_edge("load", "count")
    g.add_edge("count", END)
    return g.compile()
