"""Overhead and latency of the debugger on the reference StateGraph. Prints JSON.

    python bench/overhead.py [--runs 2000] [--rounds 7] [--stops 200]

Per-node cost on a 10-node linear graph with trivial nodes, in four variants measured in
interleaved rounds (the machine is shared and noisy, so compare ratios within one run):

- ``detached``: the bare graph;
- ``attached``: attached, no breakpoints (the fast path);
- ``attached_nomatch``: a breakpoint on a node name that never runs;
- ``attached_false_condition``: a breakpoint on every node whose condition is always false.

Stop latency is the time from the breakpoint being hit to ``wait_for_stop`` returning in the
controlling thread; resume latency from ``resume()`` to the stopped node starting. Both are
medians over many stops, for a sync run (thread) and an async run (task on a loop in a thread).
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph

NODES = 10


def linear_graph(n: int = NODES) -> Any:
    g = StateGraph(name=f"linear{n}")
    names = [f"n{i}" for i in range(n)]
    for name in names:
        g.add_node(name, lambda s: None)
    g.set_entry_point(names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile()


def time_invokes(invoke: Callable[[Any], Any], runs: int) -> float:
    """µs per node over ``runs`` invokes."""
    start = time.perf_counter()
    for _ in range(runs):
        invoke({"x": 0})
    return (time.perf_counter() - start) / (runs * NODES) * 1e6


def overhead(runs: int, rounds: int) -> dict[str, Any]:
    graphs = {}
    detached = linear_graph()
    graphs["detached"] = (detached, None)
    for variant in ("attached", "attached_nomatch", "attached_false_condition"):
        app = linear_graph()
        dbg = flowdbg.Debugger(record=False)  # recording has its own benchmark
        dbg.attach(app)
        if variant == "attached_nomatch":
            dbg.break_before("no-such-node")
        elif variant == "attached_false_condition":
            dbg.break_before("*", condition="state['x'] < 0")
        graphs[variant] = (app, dbg)
    for app, _ in graphs.values():  # warm up
        time_invokes(app.invoke, max(50, runs // 20))
    samples: dict[str, list[float]] = {k: [] for k in graphs}
    for _ in range(rounds):
        for name, (app, _) in graphs.items():
            samples[name].append(time_invokes(app.invoke, runs))
    base = statistics.median(samples["detached"])
    out: dict[str, Any] = {}
    for name, values in samples.items():
        # the ratio of medians, and the median of per-round ratios (robust to drift)
        per_round = [v / d for v, d in zip(values, samples["detached"], strict=True)]
        out[name] = {
            "us_per_node": round(statistics.median(values), 3),
            "added_us_per_node": round(statistics.median(values) - base, 3),
            "ratio_to_detached": round(statistics.median(per_round), 3),
        }
    return out


def latency_graph() -> tuple[Any, dict[str, float]]:
    marks: dict[str, float] = {}

    def a(state: dict) -> None:
        marks["hit"] = time.perf_counter()  # the next point is b's breakpoint

    def b(state: dict) -> None:
        marks["started"] = time.perf_counter()

    async def a_async(state: dict) -> None:
        marks["hit"] = time.perf_counter()

    async def b_async(state: dict) -> None:
        marks["started"] = time.perf_counter()

    g = StateGraph(name="latency")
    g.add_node("a", a)
    g.add_node("b", b)
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    ga = StateGraph(name="latency_async")
    ga.add_node("a", a_async)
    ga.add_node("b", b_async)
    ga.set_entry_point("a")
    ga.add_edge("a", "b")
    ga.add_edge("b", END)
    return (g.compile(), ga.compile()), marks  # type: ignore[return-value]


def latencies(stops: int) -> dict[str, Any]:
    (sync_app, async_app), marks = latency_graph()
    out = {}
    for mode, app in (("sync", sync_app), ("async", async_app)):
        dbg = flowdbg.Debugger(record=False)
        dbg.attach(app)
        dbg.break_before("b")
        stop_lat, resume_lat = [], []
        for _ in range(stops):
            run = dbg.start(app.invoke if mode == "sync" else app.ainvoke, {"x": 0})
            stop = dbg.wait_for_stop(10)
            got = time.perf_counter()
            assert stop is not None
            stop_lat.append(got - marks["hit"])
            t0 = time.perf_counter()
            dbg.resume()
            run.result(10)
            resume_lat.append(marks["started"] - t0)
        out[mode] = {
            "stop_latency_ms_median": round(statistics.median(stop_lat) * 1e3, 4),
            "stop_latency_ms_p90": round(sorted(stop_lat)[int(0.9 * len(stop_lat))] * 1e3, 4),
            "resume_latency_ms_median": round(statistics.median(resume_lat) * 1e3, 4),
            "resume_latency_ms_p90": round(sorted(resume_lat)[int(0.9 * len(resume_lat))] * 1e3, 4),
            "stops": stops,
        }
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="invokes per round and variant")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--stops", type=int, default=200)
    args = parser.parse_args(argv)
    over = overhead(args.runs, args.rounds)
    lat = latencies(args.stops)
    result = {
        "benchmark": "stategraph_overhead",
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "nodes": NODES,
        "runs_per_round": args.runs,
        "rounds": args.rounds,
        "per_node": over,
        "latency": lat,
        "budgets": {
            "attached_added_us_per_node_max": 3.0,
            "attached_added_us_per_node": over["attached"]["added_us_per_node"],
            "latency_median_ms_max": 1.0,
            "met": over["attached"]["added_us_per_node"] <= 3.0
            and all(
                v["stop_latency_ms_median"] < 1.0 and v["resume_latency_ms_median"] < 1.0
                for v in lat.values()
            ),
        },
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
