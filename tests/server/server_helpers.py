"""What the debug server tests share besides fixtures (a module of its own: a name imported
from ``conftest`` would be looked up in whichever conftest.py pytest imported first)."""

from __future__ import annotations

from typing import Any

from flowdbg.adapters.stategraph import END, StateGraph


def build_counter() -> Any:
    """a -> b -> END: a adds one to n, b doubles it."""
    g = StateGraph(name="counter")
    g.add_node("a", lambda s: {"n": s["n"] + 1})
    g.add_node("b", lambda s: {"n": s["n"] * 2})
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile()
