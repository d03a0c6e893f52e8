"""flowdbg quick start: a scripted debugging session on an offline support-ticket graph.

Run it with ``python examples/quickstart.py``. The graph classifies a ticket with a scripted
stand-in for a model (no network, no API key), routes it to a refund or an answer node, and
writes a reply. The session below stops after the classifier, reads and edits the state (which
changes the route the graph takes), steps to the next node, and lets the run finish.
"""

from __future__ import annotations

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph


def classify(state: dict) -> dict:
    """A scripted 'model': picks an intent from keywords, like an LLM classifier would."""
    text = state["ticket"].lower()
    intent = "refund" if "refund" in text or "money back" in text else "question"
    return {"intent": intent, "confidence": 0.62}


def refund(state: dict) -> dict:
    return {"reply": "We have opened a refund for your order.", "escalated": True}


def answer(state: dict) -> dict:
    return {"reply": f"Here is how to fix it: {state['ticket'][:40]}...", "escalated": False}


def sign(state: dict) -> dict:
    return {"reply": state["reply"] + " -- Support team"}


def build_graph():
    g = StateGraph(name="support")
    g.add_node("classify", classify)
    g.add_node("refund", refund)
    g.add_node("answer", answer)
    g.add_node("sign", sign)
    g.set_entry_point("classify")
    g.add_conditional_edges(
        "classify", lambda s: s["intent"], {"refund": "refund", "question": "answer"}
    )
    g.add_edge("refund", "sign")
    g.add_edge("answer", "sign")
    g.add_edge("sign", END)
    return g.compile()


def main() -> dict:
    app = build_graph()
    ticket = {"ticket": "My app crashes on start, I want my money back or a fix"}
    print("undebugged run routes to:", "refund" if app.invoke(ticket)["escalated"] else "answer")

    dbg = flowdbg.Debugger()
    dbg.attach(app)  # the graph is unchanged; attach instruments it, detach restores it
    bp = dbg.break_after("classify")
    print(f"\nset {bp.describe()}")

    run = dbg.start(app.invoke, ticket)  # runs in a worker thread; stops hold that thread
    stop = dbg.wait_for_stop(timeout=10)
    assert stop is not None
    print(f"stopped: {stop}")
    print("  what classify changed:")
    for line in str(dbg.diff()).splitlines():
        print("   ", line)
    print("  next nodes:", stop.decision)
    print("  inspect intent ->", repr(dbg.inspect("intent")))

    # The classifier is only 62% sure. Correct it: the edit is applied to the update that
    # classify commits when the branch resumes, so the graph routes differently.
    dbg.set("intent", "question")
    print("\nedit: set intent = 'question'  (inspect now ->", repr(dbg.inspect("intent")) + ")")

    dbg.step_over()
    stop = dbg.wait_for_stop(timeout=10)
    assert stop is not None
    print(f"step over -> stopped: {stop}")
    print("  state keys:", ", ".join(sorted(stop.state)))

    dbg.resume()
    result = run.result(timeout=10)
    print("\nresumed; the run finished with:")
    for key, value in result.items():
        print(f"  {key}: {value!r}")
    print("debugger status:", dbg.status().state)
    print("\nthe run log:")
    print(run.log)
    dbg.flush()  # the recorder writes on its own thread; wait for it before pointing at it
    if dbg.store is not None:
        print(f"\nrecorded to {dbg.store.path}")
        print(f"look at it with: flowdbg runs show {run.run_id[:8]}")
    dbg.close()  # detaches the graph and closes the store
    return result


if __name__ == "__main__":
    main()
