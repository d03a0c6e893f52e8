"""A state holding one big value that does not change, recorded across ten steps. Prints JSON.

    python bench/big_value.py [--mb 10] [--steps 10]

The value is random text (base64 of random bytes: what an image or a document in a state looks
like), so compression cannot hide a copy. Measured in a fresh process: the run, the flush of
everything recorded, the database's size after a checkpoint (WAL folded in), and the peak
resident memory above the value itself. Goals: flush under 1 s, under 15 MB stored and under 2x
the value's size of extra memory for 10 steps of a 10 MB value.
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import os
import resource
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph


def graph(steps: int) -> Any:
    g = StateGraph(name="big_value")
    names = [f"n{i}" for i in range(steps)]
    for i, name in enumerate(names):
        g.add_node(name, lambda s, i=i: {"i": i})  # the big value is left as it is
    g.set_entry_point(names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile()


def db_bytes(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    size = int(args.mb * 1024 * 1024)
    value = base64.b64encode(os.urandom(size * 3 // 4)).decode()
    app = graph(args.steps)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "big.db"
        dbg = flowdbg.Debugger(db=db)
        dbg.attach(app)
        app.invoke({"doc": "warm-up", "i": 0})
        dbg.flush()
        base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        app.invoke({"doc": value, "i": 0})
        ran = time.perf_counter()
        dbg.flush()
        flushed = time.perf_counter()
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        dbg.close()
        stored = db_bytes(db)
    extra_mb = (peak_kb - base_kb) / 1024
    result = {
        "benchmark": "big_value",
        "python": sys.version.split()[0],
        "value_mb": round(len(value) / 1e6, 2),
        "steps": args.steps,
        "run_s": round(ran - start, 4),
        "flush_s": round(flushed - ran, 3),
        "db_mb": round(stored / 1e6, 2),
        "peak_extra_mb": round(extra_mb, 1),
        "goals": {"flush_s_max": 1.0, "db_mb_max": 15.0, "peak_extra_x_value_max": 2.0},
        "met": flushed - ran < 1.0
        and stored / 1e6 < 15.0
        and extra_mb * 1024 * 1024 < 2 * len(value),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
