"""Cost of flowdbg on a LangGraph agent with model and tool calls. Prints JSON.

    python bench/langgraph_agent.py [--runs 100] [--rounds 5]

The agent of ``examples/langgraph_agent.py`` (a model node and a ``ToolNode`` in a loop, on a
scripted chat model, offline): each run is 3 nodes, 2 model calls and 2 tool calls, so flowdbg
sees 7 units. Variants, measured in interleaved rounds: ``bare``, ``attached`` (no breakpoints,
recording off) and ``recording`` (SQLite in a temporary folder, ``flush()`` included). Figures
are medians over the rounds of ms per run, and ratios to ``bare``. The scripted model answers at
once: a real model call takes 100 ms or more, which would make every ratio close to 1.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("LANGSMITH_TRACING", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import langgraph
from langgraph_agent import build_agent

import flowdbg

INPUT = {"messages": [("user", "find me a flight to Lisbon and clean up")]}


def timed(app: Any, runs: int, after: Callable[[], Any] | None) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        app.invoke(INPUT)
    if after is not None:
        after()
    return (time.perf_counter() - start) / runs * 1e3


def measure(runs: int, rounds: int, workdir: Path) -> dict[str, Any]:
    plain = flowdbg.Debugger(record=False)
    recorder = flowdbg.Debugger(db=workdir / "agent.db")
    attached, recorded = build_agent(), build_agent()
    plain.attach(attached)
    recorder.attach(recorded)
    variants: dict[str, tuple[Any, Callable[[], Any] | None]] = {
        "bare": (build_agent(), None),
        "attached": (attached, None),
        "recording": (recorded, recorder.flush),
    }
    results: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for round_ in range(rounds + 1):  # the first round warms up and is dropped
            for name, (app, after) in variants.items():
                gc.collect()
                ms = timed(app, runs, after)
                if round_:
                    results[name].append(ms)
        units = len(recorder.runs[-1].steps)
    finally:
        plain.close()
        recorder.close()
    bare = statistics.median(results["bare"])
    return {
        "units_per_run": units,
        "variants": {
            name: {
                "ms_per_run": round(statistics.median(values), 3),
                "ratio": round(statistics.median(values) / bare, 3),
                "added_us_per_unit": round((statistics.median(values) - bare) * 1e3 / units, 1),
            }
            for name, values in results.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="runs per variant and round")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds (medians)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        figures = measure(args.runs, args.rounds, Path(tmp))
    out = {
        "benchmark": "langgraph_agent",
        "python": platform.python_version(),
        "langgraph": getattr(langgraph, "__version__", None) or _version(),
        "runs": args.runs,
        "rounds": args.rounds,
        **figures,
    }
    print(json.dumps(out, indent=2))
    return 0


def _version() -> str | None:
    from importlib.metadata import version

    try:
        return version("langgraph")
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main())
