"""Cost of recording on the reference StateGraph. Prints JSON.

    python bench/recording.py [--runs 2000] [--rounds 7] [--store-scale 0.1]

Per-node cost on a 10-node linear graph with trivial nodes, attached without recording and
attached with recording (into a fresh SQLite file), in interleaved rounds; the ratio of the two
is the recording overhead (budget: at most 1.15x). The recorded variant's time includes the
writer thread's work, which competes with the run for the interpreter lock, and ends with a
flush, so nothing is left unwritten. Then the store's own figures (write throughput, storage
per step, query latencies) from bench/store.py, at ``--store-scale`` (1.0: the full 1,000,000
step store; 0 skips them).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph

NODES = 10


def linear_graph() -> Any:
    g = StateGraph(name="linear10")
    names = [f"n{i}" for i in range(NODES)]
    for i, name in enumerate(names):
        g.add_node(name, lambda s, i=i: {"x": s["x"] + i})
    g.set_entry_point(names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile()


def per_node_us(app: Any, dbg: flowdbg.Debugger, runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        app.invoke({"x": 0})
    dbg.flush()
    return (time.perf_counter() - start) / (runs * NODES) * 1e6


def recording_overhead(runs: int, rounds: int, tmp: Path) -> dict[str, Any]:
    plain_app, recorded_app = linear_graph(), linear_graph()
    plain = flowdbg.Debugger(record=False)
    plain.attach(plain_app)
    recorded = flowdbg.Debugger(db=tmp / "bench.db")
    recorded.attach(recorded_app)
    per_node_us(plain_app, plain, max(50, runs // 20))  # warm up
    per_node_us(recorded_app, recorded, max(50, runs // 20))
    samples: dict[str, list[float]] = {"attached": [], "attached_recording": []}
    for _ in range(rounds):
        samples["attached"].append(per_node_us(plain_app, plain, runs))
        samples["attached_recording"].append(per_node_us(recorded_app, recorded, runs))
    ratios = [
        r / p for r, p in zip(samples["attached_recording"], samples["attached"], strict=True)
    ]
    store = recorded.store
    assert store is not None
    steps = sum(r.step_count or 0 for r in store.list_runs(limit=None))
    size = (tmp / "bench.db").stat().st_size
    recorded.close()
    return {
        "attached_us_per_node": round(statistics.median(samples["attached"]), 3),
        "recording_us_per_node": round(statistics.median(samples["attached_recording"]), 3),
        "ratio": round(statistics.median(ratios), 3),
        "budget_ratio_max": 1.15,
        "met": statistics.median(ratios) <= 1.15,
        "steps_recorded": steps,
        "db_bytes_per_step": round(size / max(steps, 1), 1),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--store-scale", type=float, default=0.1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        result: dict[str, Any] = {
            "benchmark": "recording",
            "python": sys.version.split()[0],
            "nodes": NODES,
            "overhead": recording_overhead(args.runs, args.rounds, Path(tmp)),
        }
    if args.store_scale > 0:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import store as store_bench  # bench/store.py

        result["store"] = store_bench.main(["--scale", str(args.store_scale)], quiet=True)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
