"""Speed and size of the SQLite store. Prints JSON.

    python bench/store.py [--scale 1.0] [--dir DIR] [--keep]

Three measurements, each compared with its budget:

- ``write``: sustained throughput of ``write_batch`` in batches of 500 steps with small states
  (what the recorder's writer thread does), in steps per second;
- ``storage``: bytes per step of a run whose state is a message history growing by one
  200-byte message per step (the input of each step is the state before it, its output the new
  message), for 1,000 and 2,000 steps: the per-step figure must stay under budget, and doubling
  the steps must roughly double the bytes (linear, not quadratic, growth);
- ``queries``: latencies on a generated store of 1,000,000 steps in 10,000 runs (times
  ``--scale``), which holds one run of 100,000 steps and one of 10,000: ``list_runs`` of failed
  runs, ``get_steps`` of the 10,000-step run, ``get_state`` at random steps of the 100,000-step
  run. With ``--scale`` below 1 every count shrinks, the two big runs too.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from flowdbg.records import RunRecord, StepRecord
from flowdbg.store import SQLiteStore

BATCH = 500
WRITE_BUDGET = 20_000  # steps/s
STORAGE_BUDGET = 2048  # bytes/step
LIST_BUDGET = 0.100
STEPS_BUDGET = 0.500
STATE_BUDGET = 0.050


def small_step(run_id: str, i: int, t: float) -> StepRecord:
    return StepRecord(
        run_id=run_id,
        step=i,
        node=("plan", "act", "observe")[i % 3],
        superstep=i,
        started_at=t + i * 0.01,
        ended_at=t + i * 0.01 + 0.004,
        input={"count": i - 1, "phase": "running"},
        output={"count": i},
        state={"count": i, "phase": "running", "ok": i % 7 != 0},
        decision=["act"],
    )


def file_bytes(path: Path) -> int:
    """Size of the database once its WAL is folded in."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())


def bench_write(folder: Path, steps: int) -> dict[str, Any]:
    store = SQLiteStore(folder / "write.db")
    t = time.time()
    run = RunRecord(run_id="w" * 32, framework="bench", name="write", started_at=t)
    store.write_batch(runs=[run])
    batches = [
        [small_step(run.run_id, i, t) for i in range(start, min(start + BATCH, steps + 1))]
        for start in range(1, steps + 1, BATCH)
    ]
    began = time.perf_counter()
    for batch in batches:
        store.write_batch(steps=batch)
    seconds = time.perf_counter() - began
    store.close()
    rate = steps / seconds
    return {
        "steps": steps,
        "batch": BATCH,
        "seconds": round(seconds, 3),
        "steps_per_s": round(rate),
        "budget_steps_per_s": WRITE_BUDGET,
        "ok": rate >= WRITE_BUDGET,
    }


def message(i: int) -> dict[str, Any]:
    text = f"message {i}: " + "lorem ipsum dolor sit amet " * 8
    return {"role": "user" if i % 2 else "assistant", "content": text[:170], "id": f"m{i}"}


def history_run(path: Path, steps: int, batch: int = 50) -> tuple[int, int]:
    """Record a growing message history; return (file bytes added, blob bytes)."""
    store = SQLiteStore(path)
    empty = file_bytes(path)
    t = time.time()
    run = RunRecord(run_id="h" * 32, framework="bench", name="history", started_at=t)
    store.write_batch(runs=[run])
    messages: list[dict[str, Any]] = []
    pending: list[StepRecord] = []
    for i in range(1, steps + 1):
        before = {"messages": list(messages), "turn": i - 1}
        new = message(i)
        messages.append(new)
        pending.append(
            StepRecord(
                run_id=run.run_id,
                step=i,
                node="chat",
                started_at=t + i,
                ended_at=t + i + 0.5,
                input=before,
                output={"messages": [new]},
                state={"messages": list(messages), "turn": i},
            )
        )
        if len(pending) == batch:
            store.write_batch(steps=pending)
            pending = []
    store.write_batch(steps=pending)
    store.close()
    conn = sqlite3.connect(path)
    blob_bytes = conn.execute("SELECT sum(length(data)) FROM blobs").fetchone()[0]
    conn.close()
    return file_bytes(path) - empty, blob_bytes


def bench_storage(folder: Path) -> dict[str, Any]:
    size = len(json.dumps(message(1)))
    one, blobs_one = history_run(folder / "history1k.db", 1000)
    two, blobs_two = history_run(folder / "history2k.db", 2000)
    per_step = one / 1000
    ratio = two / one
    return {
        "message_bytes": size,
        "steps_1000": {"file_bytes": one, "blob_bytes": blobs_one, "bytes_per_step": per_step},
        "steps_2000": {"file_bytes": two, "blob_bytes": blobs_two, "bytes_per_step": two / 2000},
        "ratio_2000_to_1000": round(ratio, 2),
        "naive_bytes_per_step_1000": round(size * 1000 / 2 * 2),
        "budget_bytes_per_step": STORAGE_BUDGET,
        "ok": per_step <= STORAGE_BUDGET and ratio <= 2.3,
    }


def generate(path: Path, scale: float) -> dict[str, Any]:
    """A store of ``1,000,000 * scale`` steps in ``10,000 * scale`` runs."""
    total = int(1_000_000 * scale)
    runs = max(int(10_000 * scale), 3)
    big, mid = int(100_000 * scale), int(10_000 * scale)
    rest = (total - big - mid) // (runs - 2)
    store = SQLiteStore(path)
    rng = random.Random(7)
    t0 = time.time() - 30 * 86400
    began = time.perf_counter()
    pending_runs: list[RunRecord] = []
    pending: list[StepRecord] = []
    ids = []
    for r in range(runs):
        count = big if r == 0 else mid if r == 1 else rest
        roll = rng.random()
        status = "failed" if roll < 0.1 else "running" if roll < 0.12 else "completed"
        if r < 2:
            status = "completed"
        run_id = f"{r:08d}{rng.getrandbits(96):024x}"
        ids.append(run_id)
        start = t0 + r * 60
        pending_runs.append(
            RunRecord(
                run_id=run_id,
                framework="bench",
                name=f"agent-{r % 20}",
                status=status,
                started_at=start,
                ended_at=None if status == "running" else start + count * 0.01,
                input={"question": f"q{r}"},
                output=None if status != "completed" else {"answer": f"a{r}"},
            )
        )
        for i in range(1, count + 1):
            pending.append(small_step(run_id, i, start))
            if len(pending) >= 5000:
                store.write_batch(runs=pending_runs, steps=pending)
                pending_runs, pending = [], []
    store.write_batch(runs=pending_runs, steps=pending)
    store.close()
    return {
        "runs": runs,
        "steps": big + mid + rest * (runs - 2),
        "big_run_steps": big,
        "mid_run_steps": mid,
        "seconds": round(time.perf_counter() - began, 1),
        "file_bytes": file_bytes(path),
        "ids": ids,
    }


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return times


def summary(times: list[float], budget: float) -> dict[str, Any]:
    median = statistics.median(times)
    return {
        "median_ms": round(median * 1000, 2),
        "max_ms": round(max(times) * 1000, 2),
        "budget_ms": budget * 1000,
        "ok": median <= budget,
    }


def bench_queries(folder: Path, scale: float) -> dict[str, Any]:
    path = folder / "big.db"
    info = generate(path, scale)
    ids = info.pop("ids")
    store = SQLiteStore(path, readonly=True)
    rng = random.Random(11)
    failed = store.list_runs(status="failed")
    listing = timed(lambda: store.list_runs(status="failed"), 20)
    steps = store.get_steps(ids[1])
    assert len(steps) == info["mid_run_steps"], len(steps)
    get_steps = timed(lambda: store.get_steps(ids[1]), 5)
    big = info["big_run_steps"]

    def random_state() -> None:
        step = rng.randint(1, big)
        assert store.get_state(ids[0], step)["count"] == step

    get_state = timed(random_state, 50)
    store.close()
    return {
        "store": info,
        "list_runs_failed": {"returned": len(failed), **summary(listing, LIST_BUDGET)},
        "get_steps_mid_run": {"steps": len(steps), **summary(get_steps, STEPS_BUDGET)},
        "get_state_big_run_random_step": {"run_steps": big, **summary(get_state, STATE_BUDGET)},
    }


def folder_for(arg: str | None, keep: bool) -> Iterator[Path]:
    if arg:
        path = Path(arg)
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    tmp = Path(tempfile.mkdtemp(prefix="flowdbg-bench-"))
    try:
        yield tmp
    finally:
        if keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None, *, quiet: bool = False) -> dict[str, Any]:
    """Run the store benchmarks; print the figures (unless ``quiet``) and return them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="size of the query store")
    parser.add_argument("--dir", help="where to put the databases (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="do not delete the databases")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {}
    for folder in folder_for(args.dir, args.keep):
        result = {
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "scale": args.scale,
            "write": bench_write(folder, max(int(100_000 * min(args.scale, 1.0)), 20_000)),
            "storage": bench_storage(folder),
            "queries": bench_queries(folder, args.scale),
        }
        result["all_ok"] = all(
            section["ok"]
            for section in (
                result["write"],
                result["storage"],
                *(v for k, v in result["queries"].items() if k != "store"),
            )
        )
        if not quiet:
            print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
