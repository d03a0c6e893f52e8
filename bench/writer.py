"""CPU time of the recorder's writer per recorded step. Prints JSON.

    python bench/writer.py [--runs 1000] [--rounds 5] [--profile N] [--workload stategraph]

The run is executed first with the writer held (nothing written while it runs), then the queued
runs and steps are written by calling the writer's own batch function on this thread, timed
with ``time.thread_time`` (CPU time, so the shared machine's other load does not count). The
figure is what the writer takes from a run under the interpreter lock, per step, including the
run rows (two upserts per run) and the commits. Workloads:

- ``stategraph``: flowdbg's own 10-node linear graph with trivial nodes (a one-key state);
- ``langgraph``: LangGraph's 10-node linear graph of ``bench/langgraph_overhead.py``;
- ``agent``: the agent of ``bench/langgraph_agent.py`` (a scripted model, two tool calls).

Each round writes into a fresh database file. ``--profile N`` adds the ``N`` functions with the
most own time (cProfile, one more round) on stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import itertools
import json
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import flowdbg

NODES = 10


def _stategraph() -> tuple[Any, Callable[[Any], Any]]:
    from flowdbg.adapters.stategraph import END, StateGraph

    g = StateGraph(name="linear10")
    names = [f"n{i}" for i in range(NODES)]
    for i, name in enumerate(names):
        g.add_node(name, lambda s, i=i: {"x": s["x"] + i})
    g.set_entry_point(names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile(), lambda app: app.invoke({"x": 0})


def _langgraph() -> tuple[Any, Callable[[Any], Any]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import langgraph_overhead  # bench/langgraph_overhead.py

    return langgraph_overhead.build(), lambda app: app.invoke({"x": 0})


def _agent() -> tuple[Any, Callable[[Any], Any]]:
    # examples/langgraph_agent.py, under another name (bench/langgraph_agent.py has its name)
    path = Path(__file__).resolve().parents[1] / "examples" / "langgraph_agent.py"
    spec = importlib.util.spec_from_file_location("_example_agent", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    request = {"messages": [("user", "find me a flight to Lisbon and clean up")]}
    return example.build_agent(), lambda app: app.invoke(request)


def _openai() -> tuple[Any, Callable[[Any], Any]]:
    # bench/openai_agents_overhead.py's scripted agent (4 model turns, 2 tools, a handoff)
    import asyncio

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import openai_agents_overhead

    return openai_agents_overhead.build(5000), lambda app: asyncio.run(
        openai_agents_overhead.once(app, False)
    )


def _llamaindex() -> tuple[Any, Callable[[Any], Any]]:
    # bench/llamaindex_overhead.py's linear workflow (10 steps)
    import asyncio

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import llamaindex_overhead

    async def run(app: Any) -> Any:
        return await app.run(x=0)

    return llamaindex_overhead.Linear(timeout=None), lambda app: asyncio.run(run(app))


WORKLOADS = {
    "stategraph": _stategraph,
    "langgraph": _langgraph,
    "agent": _agent,
    "openai": _openai,
    "llamaindex": _llamaindex,
}


def queued(workload: str, runs: int, db: Path) -> tuple[flowdbg.Debugger, int]:
    """A debugger whose recorder holds ``runs`` runs, none written yet; and their step count."""
    app, invoke = WORKLOADS[workload]()
    dbg = flowdbg.Debugger(db=db)
    recorder = dbg.recorder
    assert recorder is not None
    recorder._start = lambda: None  # type: ignore[method-assign]  # hold the writer
    dbg.attach(app)
    for _ in range(runs):
        invoke(app)
    # (a unit is queued as "step", a model or tool call as "call", and a unit of a run whose
    # values change in place, taken as it ended, as "fields")
    steps = sum(1 for kind, _ in recorder._queue if kind in ("step", "call", "fields"))
    return dbg, steps


def write_all(dbg: flowdbg.Debugger) -> None:
    recorder = dbg.recorder
    assert recorder is not None
    while recorder._queue:
        recorder._write_some()


def measure(workload: str, runs: int, rounds: int, tmp: Path) -> dict[str, Any]:
    per_step: list[float] = []
    wall: list[float] = []
    steps = 0
    for index in range(rounds + 1):  # the first round warms up
        dbg, steps = queued(workload, runs, tmp / f"{workload}-{index}.db")
        start, start_wall = time.thread_time(), time.perf_counter()
        write_all(dbg)
        took, took_wall = time.thread_time() - start, time.perf_counter() - start_wall
        dbg.close()
        if index:
            per_step.append(took / steps * 1e6)
            wall.append(took_wall / steps * 1e6)
    return {
        "steps_per_round": steps,
        "writer_cpu_us_per_step": round(statistics.median(per_step), 2),
        "range": [round(min(per_step), 2), round(max(per_step), 2)],
        # includes waiting for the disk (the WAL checkpoints' fsync) and for other processes
        "writer_wall_us_per_step": round(statistics.median(wall), 2),
        "budget_us_max": 10.0,
    }


def profile(workload: str, runs: int, tmp: Path, top: int) -> str:
    dbg, _ = queued(workload, runs, tmp / f"{workload}-profile.db")
    profiler = cProfile.Profile()
    profiler.enable()
    write_all(dbg)
    profiler.disable()
    dbg.close()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), action="append", help="repeatable")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {
        "benchmark": "writer",
        "python": sys.version.split()[0],
        "runs": args.runs,
    }
    with tempfile.TemporaryDirectory() as tmp:
        for workload in args.workload or ["stategraph"]:
            result[workload] = measure(workload, args.runs, args.rounds, Path(tmp))
            if args.profile:
                print(profile(workload, args.runs, Path(tmp), args.profile), file=sys.stderr)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
