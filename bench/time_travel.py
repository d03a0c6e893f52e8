"""Time travel on the reference StateGraph: fork latency and reruns with recorded calls. Prints
JSON.

    python bench/time_travel.py [--steps 1000] [--calls 20] [--latency-ms 5] [--rounds 5]

- fork latency: a loop graph recorded over ``--steps`` steps; the time from ``dbg.fork(run,
  step)`` (the store read, the refusal checks, the state rebuilt, the worker started) to the
  first node of the fork starting, for a fork near the start, the middle and the end of the run
  (budget: under 200 ms);
- rerun: an agent making ``--calls`` model and tool calls, each standing in for a provider
  call that takes ``--latency-ms``; the original run against an unchanged rerun with every
  call served from the record (wall time ratio, and live calls: must be 0), in interleaved
  rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import flowdbg
from flowdbg.adapters.stategraph import END, Model, StateGraph, Tool


def loop_graph(steps: int, started: threading.Event) -> Any:
    def inc(state: dict[str, Any]) -> dict[str, Any]:
        started.set()
        return {"n": state["n"] + 1, "log": f"step {state['n']}"}

    g = StateGraph(name="loop")
    g.add_node("inc", inc)
    g.set_entry_point("inc")
    g.add_conditional_edges("inc", lambda s: "inc" if s["n"] < steps else END)
    return g.compile(step_limit=steps + 10)


def fork_latency(steps: int, rounds: int, tmp: Path) -> dict[str, Any]:
    started = threading.Event()
    app = loop_graph(steps, started)
    dbg = flowdbg.Debugger(db=tmp / "fork.db")
    dbg.attach(app)
    handle = dbg.start(app.invoke, {"n": 0})
    handle.result(timeout=300)
    assert dbg.flush(60) and handle.run_id is not None
    run_id = handle.run_id
    out: dict[str, Any] = {"recorded_steps": steps}
    for label, step in (("start", 1), ("middle", steps // 2), ("end", steps - 1)):
        samples = []
        for _ in range(rounds):
            started.clear()
            begin = time.perf_counter()
            fork = dbg.fork(run_id, step, target=app)
            assert started.wait(60)
            samples.append((time.perf_counter() - begin) * 1e3)
            fork.result(timeout=300)
        out[f"ms_to_first_node_after_step_{label}"] = {
            "step": step,
            "median": round(statistics.median(samples), 2),
            "min": round(min(samples), 2),
            "max": round(max(samples), 2),
        }
    dbg.close()
    return out


def agent(calls: int, latency: float, counts: list[int]) -> Any:
    def model(messages: list[dict[str, str]]) -> str:
        counts[0] += 1
        time.sleep(latency)  # the provider's round trip
        return f"next step after {len(messages)} messages"

    def search(query: str) -> str:
        counts[0] += 1
        time.sleep(latency)
        return f"results for {query}"

    chat = Model(model, name="chat")
    tool = Tool(search, name="search")

    def work(state: dict[str, Any]) -> dict[str, Any]:
        history = list(state["history"])
        for turn in range(calls // 2):
            history.append({"role": "assistant", "content": chat(messages=history)})
            history.append({"role": "tool", "content": tool(query=f"q{turn}")})
        return {"history": history}

    g = StateGraph(name="agent")
    g.add_node("work", work)
    g.set_entry_point("work")
    g.add_edge("work", END)
    return g.compile()


def rerun_ratio(calls: int, latency: float, rounds: int, tmp: Path) -> dict[str, Any]:
    counts = [0]
    app = agent(calls, latency, counts)
    dbg = flowdbg.Debugger(db=tmp / "rerun.db")
    dbg.attach(app)
    value = {"history": [{"role": "user", "content": "plan a trip"}]}
    originals, reruns, live = [], [], []
    for _ in range(rounds):  # interleaved: a new original run, then a rerun of it
        begin = time.perf_counter()
        handle = dbg.start(app.invoke, value)
        original = handle.result(timeout=300)
        originals.append(time.perf_counter() - begin)
        assert dbg.flush(60) and handle.run_id is not None
        before = counts[0]
        begin = time.perf_counter()
        again = dbg.rerun(handle.run_id, target=app)
        assert again.result(timeout=300) == original
        reruns.append(time.perf_counter() - begin)
        live.append(counts[0] - before)
        assert again.calls is not None and again.calls.served == calls
    dbg.close()
    ratios = [r / o for r, o in zip(reruns, originals, strict=True)]
    return {
        "calls": calls,
        "latency_ms_per_call": latency * 1e3,
        "original_ms_median": round(statistics.median(originals) * 1e3, 2),
        "rerun_all_cached_ms_median": round(statistics.median(reruns) * 1e3, 2),
        "rerun_over_original": {
            "median": round(statistics.median(ratios), 3),
            "min": round(min(ratios), 3),
            "max": round(max(ratios), 3),
        },
        "live_calls_in_reruns": live,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        result = {
            "fork": fork_latency(args.steps, args.rounds, tmp),
            "rerun": rerun_ratio(args.calls, args.latency_ms / 1e3, args.rounds, tmp),
        }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
