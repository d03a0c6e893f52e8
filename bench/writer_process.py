"""An experiment: the recorder's writing moved to a child process. Prints JSON.

    python bench/writer_process.py [--runs 1000] [--rounds 5]

Not how flowdbg records: a measurement of the design left to try when the writer thread's work
under the interpreter lock is the wall. Three variants of flowdbg's 10-node StateGraph with
trivial nodes run in interleaved rounds: attached without recording, recording with the
writer thread (as shipped), and recording where the writer thread only reads each unit's fields
and sends the batch, pickled, through a pipe to a child process that encodes and inserts it
(``Store.write_fields``) into its own database. Each variant's time ends when everything it
queued is written (``flush()``, and for the child process its acknowledgement of every batch).

The child is started with ``fork`` (POSIX only). The prototype leaves out what a real one needs:
values that cannot be pickled (encoding them to plain JSON values first, in the debugged
process), the child's errors, and a child that outlives a killed parent to write what it
received.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import pickle
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import flowdbg
from flowdbg.recorder import Recorder, run_record, step_fields
from flowdbg.store import SQLiteStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recording import NODES, linear_graph  # bench/recording.py


def _child(conn: Connection, path: str) -> None:
    store = SQLiteStore(path)
    try:
        while True:
            try:
                data = conn.recv_bytes()
            except EOFError:
                return
            runs, steps, ended = pickle.loads(data)
            store.write_fields(runs=runs, steps=steps, ended=ended)
            conn.send(len(steps))
    finally:
        store.close()


class ChildWriter:
    """Replaces a recorder's batch function: read, pickle, send; the child writes."""

    def __init__(self, recorder: Recorder, path: Path) -> None:
        self.recorder = recorder
        self.conn, theirs = multiprocessing.Pipe()
        context = multiprocessing.get_context("fork")
        self.process = context.Process(target=_child, args=(theirs, str(path)), daemon=True)
        self.process.start()
        self.sent = self.acknowledged = 0
        recorder._write_some = self._write_some  # type: ignore[method-assign]

    def _write_some(self) -> int:
        recorder = self.recorder
        queue = recorder._queue
        with recorder._take_lock:
            taken = min(len(queue), recorder.batch_size)
            items = [queue.popleft() for _ in range(taken)]
            recorder._taken += taken
        started: list[Any] = []
        steps: list[tuple[Any, ...]] = []
        ending: dict[int, Any] = {}
        for kind, item in items:
            if kind == "step":
                steps.append(step_fields(item))
            elif kind == "run":
                started.append(item)
            else:
                ending[id(item)] = item
        runs = [run_record(info) for info in started if id(info) not in ending]
        ended = [run_record(info) for info in ending.values()]
        self.conn.send_bytes(pickle.dumps((runs, steps, ended), protocol=5))
        self.sent += 1
        while self.conn.poll():
            self.conn.recv()
            self.acknowledged += 1
        with recorder._cond:
            recorder._written += taken
            recorder._cond.notify_all()
        return taken

    def drain(self) -> None:
        while self.acknowledged < self.sent:
            self.conn.recv()
            self.acknowledged += 1

    def close(self) -> None:
        self.conn.close()
        self.process.join(10)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        plain_app, thread_app, child_app = linear_graph(), linear_graph(), linear_graph()
        plain = flowdbg.Debugger(record=False)
        plain.attach(plain_app)
        threaded = flowdbg.Debugger(db=tmp / "thread.db")
        threaded.attach(thread_app)
        forked = flowdbg.Debugger(db=tmp / "unused.db")
        assert forked.recorder is not None
        child = ChildWriter(forked.recorder, tmp / "child.db")
        forked.attach(child_app)

        def timed(app: Any, dbg: flowdbg.Debugger, after: Any = None) -> float:
            start = time.perf_counter()
            for _ in range(args.runs):
                app.invoke({"x": 0})
            dbg.flush()
            if after is not None:
                after()
            return (time.perf_counter() - start) / (args.runs * NODES) * 1e6

        samples: dict[str, list[float]] = {"attached": [], "writer_thread": [], "child": []}
        for round_ in range(args.rounds + 1):  # the first round warms up
            figures = {
                "attached": timed(plain_app, plain),
                "writer_thread": timed(thread_app, threaded),
                "child": timed(child_app, forked, child.drain),
            }
            if round_:
                for name, value in figures.items():
                    samples[name].append(value)
        child.close()
        written = SQLiteStore(tmp / "child.db", readonly=True)
        steps = sum(run.step_count or 0 for run in written.list_runs(limit=None))
        written.close()
        for dbg in (plain, threaded, forked):
            dbg.close()
    attached = statistics.median(samples["attached"])
    result: dict[str, Any] = {
        "benchmark": "writer_process",
        "python": sys.version.split()[0],
        "runs": args.runs,
        "rounds": args.rounds,
        "steps_written_by_child": steps,
        "variants": {
            name: {
                "us_per_node": round(statistics.median(values), 2),
                "ratio_to_attached": round(statistics.median(values) / attached, 2),
                "range": [round(min(values), 2), round(max(values), 2)],
            }
            for name, values in samples.items()
        },
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
