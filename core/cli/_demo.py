"""``flowdbg demo``: the offline support-ticket graph, the StateGraph adapter's demo.

The graph classifies a ticket with a scripted stand-in for a model (no network, no API key),
routes it to a refund or an answer node, and signs the reply. The tour
(:meth:`flowdbg.adapters.stategraph.StateGraphAdapter.demo`) stops after the classifier, reads
and edits the state (which changes the route), steps, and lets the run finish.
"""

from __future__ import annotations

from typing import Any

from flowdbg.adapters.stategraph import END, CompiledGraph, StateGraph

__all__ = ["build_graph"]


def classify(state: dict[str, Any]) -> dict[str, Any]:
    """A scripted 'model': picks an intent from keywords, like an LLM classifier would."""
    text = state["ticket"].lower()
    intent = "refund" if "refund" in text or "money back" in text else "question"
    return {"intent": intent, "confidence": 0.62}


def refund(state: dict[str, Any]) -> dict[str, Any]:
    """Open a refund."""
    return {"reply": "We have opened a refund for your order.", "escalated": True}


def answer(state: dict[str, Any]) -> dict[str, Any]:
    """Answer the question."""
    return {"reply": f"Here is how to fix it: {state['ticket'][:40]}...", "escalated": False}


def sign(state: dict[str, Any]) -> dict[str, Any]:
    """Sign the reply."""
    return {"reply": state["reply"] + " -- Support team"}


def route(state: dict[str, Any]) -> str:
    """Route on the classified intent."""
    return str(state["intent"])


def build_graph() -> CompiledGraph:
    """The support-ticket graph: classify -> refund | answer -> sign."""
    g = StateGraph(name="support")
    g.add_node("classify", classify)
    g.add_node("refund", refund)
    g.add_node("answer", answer)
    g.add_node("sign", sign)
    g.set_entry_point("classify")
    g.add_conditional_edges("classify", route, {"refund": "refund", "question": "answer"})
    g.add_edge("refund", "sign")
    g.add_edge("answer", "sign")
    g.add_edge("sign", END)
    return g.compile()
