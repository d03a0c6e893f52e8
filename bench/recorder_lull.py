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

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument(
    "workload", choices=["openai_run", "openai_streamed", "llamaindex", "langgraph", "stategraph"]
)
parser.add_argument("--runs", type=int, default=30)
parser.add_argument("--rounds", type=int, default=7)
args = parser.parse_args()
which, runs, rounds = args.workload, args.runs, args.rounds
tmp = Path(tempfile.mkdtemp(prefix="flowdbg-bench-"))
loop = asyncio.new_event_loop()


def make() -> tuple[Any, Callable[[Any], Any]]:
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
    raise AssertionError(which)


V: dict[str, tuple[Any, Callable[[Any], Any], flowdbg.Debugger | None]] = {}
for name in ("bare", "attached", "rec_now", "rec_lull"):
    obj, call = make()
    dbg = None
    if name == "attached":
        dbg = flowdbg.Debugger(record=False)
    elif name.startswith("rec"):
        dbg = flowdbg.Debugger(db=tmp / f"{name}.db")
        if name == "rec_now":
            assert dbg.recorder is not None
            dbg.recorder.quiet = 0
    if dbg is not None:
        r = dbg.attach(obj)
        obj = r if r is not None else obj
    V[name] = (obj, call, dbg)
for obj, call, _ in V.values():  # warm up
    call(obj)
    call(obj)
S: dict[str, list[float]] = {}
for _round in range(rounds):
    for name, (obj, call, dbg) in V.items():
        gc.collect()
        t = time.perf_counter()
        for _ in range(runs):
            call(obj)
        if dbg is not None and dbg.store is not None:
            assert dbg.flush(60)
        S.setdefault(name, []).append((time.perf_counter() - t) / runs * 1e6)
for _, _, dbg in V.values():
    if dbg is not None:
        dbg.close()
medians = {k: statistics.median(v) for k, v in S.items()}
out = {
    "workload": which,
    "runs_per_round": runs,
    "rounds": rounds,
    "us_per_run": {k: round(v, 1) for k, v in medians.items()},
    "ratio_to_bare": {k: round(v / medians["bare"], 3) for k, v in medians.items()},
}
json.dump(out, sys.stdout, indent=2)
sys.stdout.write("\n")
