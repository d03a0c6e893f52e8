"""The recorder's writer, writing as units come or in the program's lulls. Prints JSON.

    python bench/recorder_lull.py WORKLOAD [--runs N] [--rounds N]

WORKLOAD is ``openai_run`` or ``openai_streamed`` (bench/openai_agents_overhead.py's scripted
agent), ``llamaindex`` (bench/llamaindex_overhead.py's linear workflow), ``langgraph``
(bench/langgraph_overhead.py's 10 nodes) or ``stategraph`` (bench/recording.py's 10 nodes).
Four variants, interleaved in rounds in one process: ``bare``; ``attached`` (recording off);
``rec_now``, recording with ``Recorder.quiet = 0`` (the writer writes what it finds each time
it wakes: at the end of each run, and every 50 ms); ``rec_lull``, recording as flowdbg does it
(the writer waits for 2 ms without a new unit, a full batch or a second). The recording
variants' times include ``dbg.flush()`` at the end of each round: the writer's work is counted
wherever it is done. Figures are medians of µs per run; ratios to ``bare``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import flowdbg

sys.path.insert(0, str(Path(__file__).resolve().parent))

WORKLOADS = ("openai_run", "openai_streamed", "llamaindex", "langgraph", "stategraph")


def make(
    which: str, runs: int, rounds: int, loop: asyncio.AbstractEventLoop
) -> tuple[Any, Callable[[Any], Any]]:
    """A fresh target of ``which`` and the call that runs it once."""
    if which.startswith("openai"):
        import openai_agents_overhead as b

        agent = b.build(runs * rounds + 10)
        streamed = which == "openai_streamed"
        return agent, lambda a: loop.run_until_complete(b.once(a, streamed))
    if which == "llamaindex":
        import llamaindex_overhead as b

        wf = b.Linear(timeout=None)

        async def go(w: Any) -> None:
            await w.run(x=0)

        return wf, lambda w: loop.run_until_complete(go(w))
    if which == "langgraph":
        import langgraph_overhead as b

        app = b.build()
        return app, lambda a: a.invoke({"x": 0})
    if which == "stategraph":
        import recording as b

        app = b.linear_graph()
        return app, lambda a: a.invoke({"x": 0})
    raise ValueError(f"unknown workload {which!r}; one of {', '.join(WORKLOADS)}")


def measure(which: str, runs: int, rounds: int, tmp: Path) -> dict[str, Any]:
    """The four variants of ``which`` in interleaved rounds: medians of µs per run."""
    loop = asyncio.new_event_loop()
    variants: dict[str, tuple[Any, Callable[[Any], Any], flowdbg.Debugger | None]] = {}
    try:
        for name in ("bare", "attached", "rec_now", "rec_lull"):
            obj, call = make(which, runs, rounds, loop)
            dbg = None
            if name == "attached":
                dbg = flowdbg.Debugger(record=False)
            elif name.startswith("rec"):
                dbg = flowdbg.Debugger(db=tmp / f"{name}.db")
                if name == "rec_now":
                    assert dbg.recorder is not None
                    dbg.recorder.quiet = 0
            if dbg is not None:
                attached = dbg.attach(obj)
                obj = attached if attached is not None else obj
            variants[name] = (obj, call, dbg)
        for obj, call, _ in variants.values():  # warm up
            call(obj)
            call(obj)
        samples: dict[str, list[float]] = {}
        for _round in range(rounds):
            for name, (obj, call, dbg) in variants.items():
                gc.collect()
                start = time.perf_counter()
                for _ in range(runs):
                    call(obj)
                if dbg is not None and dbg.store is not None:
                    assert dbg.flush(60)
                samples.setdefault(name, []).append((time.perf_counter() - start) / runs * 1e6)
    finally:
        for _, _, dbg in variants.values():
            if dbg is not None:
                dbg.close()
        loop.close()
    medians = {name: statistics.median(values) for name, values in samples.items()}
    return {
        "workload": which,
        "runs_per_round": runs,
        "rounds": rounds,
        "us_per_run": {name: round(value, 1) for name, value in medians.items()},
        "ratio_to_bare": {
            name: round(value / medians["bare"], 3) for name, value in medians.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=WORKLOADS)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="flowdbg-bench-") as tmp:
        out = measure(args.workload, args.runs, args.rounds, Path(tmp))
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
