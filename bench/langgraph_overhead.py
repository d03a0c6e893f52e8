"""Cost of flowdbg on a real LangGraph graph, next to LangGraph's own checkpointers. Prints JSON.

    python bench/langgraph_overhead.py [--runs 300] [--rounds 5]

A 10-node linear ``StateGraph`` with trivial nodes, run with ``invoke`` and ``ainvoke`` in these
variants, measured in interleaved rounds (the machine is shared and noisy: compare the ratios,
which are taken within one run):

- ``bare``: the graph as compiled;
- ``attached``: attached to a Debugger, no breakpoints, recording off;
- ``recording``: attached with recording on (SQLite in a temporary directory), including the
  recorder's writer thread catching up (``dbg.flush()`` after each round);
- ``inmemory_saver`` / ``sqlite_saver``: no flowdbg, LangGraph's own ``InMemorySaver`` and
  ``SqliteSaver`` (a file) with a thread id, for comparison.

Each figure is the median over the rounds of µs per node; ratios are to ``bare``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

os.environ.setdefault("LANGSMITH_TRACING", "false")

import langgraph
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

import flowdbg

NODES = 10


class State(TypedDict, total=False):
    x: int


def build(checkpointer: Any = None) -> Any:
    g = StateGraph(State)
    names = [f"n{i}" for i in range(NODES)]
    for name in names:
        g.add_node(name, lambda s: {"x": s.get("x", 0) + 1})
    g.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile(checkpointer=checkpointer)


def _sqlite_saver(path: Path) -> Any:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        return None
    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def timed(run: Callable[[int], Any], runs: int, after: Callable[[], Any] | None) -> float:
    start = time.perf_counter()
    for i in range(runs):
        run(i)
    if after is not None:
        after()
    return (time.perf_counter() - start) / (runs * NODES) * 1e6


def measure(runs: int, rounds: int, workdir: Path) -> dict[str, Any]:
    variants: dict[str, tuple[Any, Callable[[], Any] | None, bool]] = {}
    variants["bare"] = (build(), None, False)
    dbg_plain = flowdbg.Debugger(record=False)
    attached = build()
    dbg_plain.attach(attached)
    variants["attached"] = (attached, None, False)
    dbg_rec = flowdbg.Debugger(db=workdir / "flowdbg.db")
    recorded = build()
    dbg_rec.attach(recorded)
    variants["recording"] = (recorded, dbg_rec.flush, False)
    variants["inmemory_saver"] = (build(InMemorySaver()), None, True)
    saver = _sqlite_saver(workdir / "checkpoints.db")
    if saver is not None:
        variants["sqlite_saver"] = (build(saver), None, True)

    def config(threaded: bool, i: int) -> Any:
        return {"configurable": {"thread_id": f"t{i}"}} if threaded else None

    results: dict[str, dict[str, list[float]]] = {"invoke": {}, "ainvoke": {}}
    loop = asyncio.new_event_loop()
    async_apps: dict[str, Any] = {}
    closers = contextlib.AsyncExitStack()
    if saver is not None:  # SqliteSaver is sync only: ainvoke gets LangGraph's AsyncSqliteSaver
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        asaver = loop.run_until_complete(
            closers.enter_async_context(
                AsyncSqliteSaver.from_conn_string(str(workdir / "acheckpoints.db"))
            )
        )
        async_apps["sqlite_saver"] = build(asaver)
    try:
        for round_ in range(rounds + 1):  # the first round warms up and is dropped
            for name, (app, after, threaded) in variants.items():
                if name == "inmemory_saver":
                    # a fresh saver each round: the checkpoints it keeps in memory would
                    # otherwise pile up round after round and make every variant's garbage
                    # collections slower, whichever variant triggers them
                    app = build(InMemorySaver())
                gc.collect()
                async_app = async_apps.get(name, app)

                def sync_run(i: int, app: Any = app, threaded: bool = threaded) -> Any:
                    return app.invoke({"x": 0}, config(threaded, i))

                async def many(app: Any = async_app, threaded: bool = threaded) -> None:
                    for i in range(runs):
                        await app.ainvoke({"x": 0}, config(threaded, i))

                us_sync = timed(sync_run, runs, after)
                start = time.perf_counter()
                loop.run_until_complete(many())
                if after is not None:
                    after()
                us_async = (time.perf_counter() - start) / (runs * NODES) * 1e6
                if round_:
                    results["invoke"].setdefault(name, []).append(us_sync)
                    results["ainvoke"].setdefault(name, []).append(us_async)
    finally:
        loop.run_until_complete(closers.aclose())
        loop.close()
        dbg_plain.close()
        dbg_rec.close()

    out: dict[str, Any] = {}
    for mode, per in results.items():
        medians = {name: statistics.median(values) for name, values in per.items()}
        bare = medians["bare"]
        out[mode] = {
            name: {
                "us_per_node": round(value, 2),
                "ratio": round(value / bare, 3),
                "added_us_per_node": round(value - bare, 2),
            }
            for name, value in medians.items()
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="invokes per variant and round")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds (medians)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        figures = measure(args.runs, args.rounds, Path(tmp))
    report = {
        "benchmark": "langgraph_overhead",
        "python": platform.python_version(),
        "langgraph": getattr(langgraph, "__version__", None) or _version("langgraph"),
        "nodes": NODES,
        "runs": args.runs,
        "rounds": args.rounds,
        "budgets": {"attached_ratio_max": 1.05, "recording_ratio_max": 1.15},
        **figures,
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
