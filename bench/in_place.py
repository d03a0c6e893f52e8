"""What encoding each step's values as it ends costs on a growing message history. Prints JSON.

    python bench/in_place.py [--turns 40] [--runs 5] [--rounds 7]

A LangGraph graph of one node called ``--turns`` times in a loop, each call adding a model reply
of about 250 characters to ``messages`` (``add_messages``), so each step's input and state hold
the whole history so far. Variants, interleaved in rounds in one process: ``bare``;
``recording`` (as flowdbg records LangGraph: the writer encodes the values, and its memo of one
batch encodes each message once); ``frozen`` (recording with ``values_change_in_place`` set on
each run, as the LlamaIndex and OpenAI Agents adapters set it: each step's values are encoded as
the step ends, nothing shared between steps). The recording variants include ``dbg.flush()``.
Figures are medians of ms per run, and ratios to ``bare``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

os.environ.setdefault("LANGSMITH_TRACING", "false")

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, StateGraph
from langgraph.graph.message import add_messages

import flowdbg


class State(TypedDict):
    messages: Annotated[list[Any], add_messages]
    n: int


def build(turns: int) -> Any:
    def chat(state: State) -> dict[str, Any]:
        text = f"reply {state['n']}: " + "lorem ipsum dolor " * 14
        return {"messages": [AIMessage(content=text)], "n": state["n"] + 1}

    graph = StateGraph(State)
    graph.add_node("chat", chat)
    graph.set_entry_point("chat")
    graph.add_conditional_edges("chat", lambda s: "chat" if s["n"] < turns else END)
    return graph.compile()


def recorded(db: Path, turns: int, *, frozen: bool) -> tuple[Any, flowdbg.Debugger]:
    dbg = flowdbg.Debugger(db=db, record=True)
    if frozen:
        begin = dbg.begin_run

        def begin_frozen(**kwargs: Any) -> Any:
            scope = begin(**kwargs)
            scope.values_change_in_place = True
            return scope

        dbg.begin_run = begin_frozen  # type: ignore[method-assign]
    app = build(turns)
    dbg.attach(app)
    return app, dbg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    config = {"recursion_limit": args.turns + 10}
    start = {"messages": [HumanMessage(content="hi")], "n": 0}
    with tempfile.TemporaryDirectory() as tmp:
        bare = build(args.turns)
        variants = {
            "bare": (bare, None),
            "recording": recorded(Path(tmp) / "r.db", args.turns, frozen=False),
            "frozen": recorded(Path(tmp) / "f.db", args.turns, frozen=True),
        }

        def once(name: str, runs: int) -> float:
            app, dbg = variants[name]
            began = time.perf_counter()
            for _ in range(runs):
                app.invoke(start, config)
            if dbg is not None:
                dbg.flush()
            return (time.perf_counter() - began) / runs

        for name in variants:
            once(name, 1)  # warm up
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name in variants:
                times[name].append(once(name, args.runs))
        for _, dbg in variants.values():
            if dbg is not None:
                dbg.close()
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(
        json.dumps(
            {
                "benchmark": "in_place",
                "python": sys.version.split()[0],
                "turns": args.turns,
                "runs": args.runs,
                "rounds": args.rounds,
                "ms_per_run": {name: round(value * 1e3, 2) for name, value in medians.items()},
                "ratio_to_bare": {
                    name: round(value / medians["bare"], 3) for name, value in medians.items()
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
