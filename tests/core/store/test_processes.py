"""Many writers and readers at once, in threads and in real processes; a writer killed mid-run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from store_helpers import TIMEOUT, Lines, counting_steps, run, run_id, script, spawn

from flowdbg.store import SQLiteStore, open_store

pytestmark = pytest.mark.skipif(os.name == "nt", reason="uses POSIX signals")

_WRITER = """
    import os, socket, sys
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.store import SQLiteStore

    db, n = sys.argv[1], int(sys.argv[2])
    print("READY", flush=True)
    assert sys.stdin.readline().strip() == "GO"
    store = SQLiteStore(db)  # all four create the database at once
    rid = "%04x" % n + "0" * 28
    run = RunRecord(run_id=rid, framework="test", name=f"writer{n}", started_at=float(n),
                    pid=os.getpid(), host=socket.gethostname())
    store.write_batch(runs=[run])
    shared = ["a document every writer holds %d " % i * 10 for i in range(30)]
    for first in range(1, 201, 20):
        store.write_batch(steps=[
            StepRecord(run_id=rid, step=i, node="work", started_at=float(i),
                       state={"writer": n, "i": i, "shared": shared, "own": f"w{n} " * 40})
            for i in range(first, first + 20)
        ])
    run.status, run.ended_at = "completed", 300.0
    store.write_batch(ended=[run])
    store.close()
    print("DONE", flush=True)
"""

_VICTIM = """
    import os, socket, sys
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.store import SQLiteStore

    store = SQLiteStore(sys.argv[1])
    rid = "dead" + "0" * 28
    store.write_batch(runs=[RunRecord(run_id=rid, framework="test", name="victim",
                                      pid=os.getpid(), host=socket.gethostname())])
    done = 0
    while True:  # batches of 10 steps, until killed
        store.write_batch(steps=[
            StepRecord(run_id=rid, step=i, node="inc",
                       state={"count": i, "log": ["line %d " % j * 8 for j in range(i % 50)]})
            for i in range(done + 1, done + 11)
        ])
        done += 10
        print(done, flush=True)
"""


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(TIMEOUT)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def test_four_processes_write_into_one_database_at_once(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    db = tmp_path / "shared.db"
    path = script(tmp_path, "writer", _WRITER)
    children.extend(spawn(path, str(db), str(n)) for n in range(4))
    lines = [Lines(proc.stdout) for proc in children]
    assert [out.next() for out in lines] == ["READY"] * 4
    for proc in children:  # start them together
        assert proc.stdin is not None
        proc.stdin.write("GO\n")
        proc.stdin.flush()
    assert [out.next() for out in lines] == ["DONE"] * 4
    assert [proc.wait(TIMEOUT) for proc in children] == [0] * 4
    with open_store(db, create=False) as store:
        runs = store.list_runs()
        assert sorted(r.name for r in runs) == ["writer0", "writer1", "writer2", "writer3"]
        total = 0
        for record in runs:
            n = int(record.name[-1])
            steps = store.get_steps(record.run_id, values=False)
            total += len(steps)
            assert [s.step for s in steps] == list(range(1, 201))
            assert record.status == "completed" and record.step_count == 200
            state = store.get_state(record.run_id, 150)
            assert (state["writer"], state["i"], state["own"]) == (n, 150, f"w{n} " * 40)
            assert len(state["shared"]) == 30
        assert total == 800
    assert integrity(db) == "ok"


def test_a_writer_killed_mid_run_leaves_every_batch_it_committed(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    db = tmp_path / "killed.db"
    proc = spawn(script(tmp_path, "victim", _VICTIM), str(db))
    children.append(proc)
    lines = Lines(proc.stdout)
    committed = 0
    while committed < 300:
        committed = int(lines.next())
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(TIMEOUT) == -signal.SIGKILL
    assert integrity(db) == "ok"
    with open_store(db, create=False) as store:
        (record,) = store.list_runs()
        assert record.status == "interrupted"
        assert store.list_runs(status="interrupted") == [record]
        steps = store.get_steps(record.run_id)
        # every batch it reported, maybe one more, and never part of a batch
        assert len(steps) >= committed and len(steps) % 10 == 0
        assert [s.step for s in steps] == list(range(1, len(steps) + 1))
        assert record.step_count == len(steps)
        assert store.get_state(record.run_id, 299) == {
            "count": 299,
            "log": [f"line {j} " * 8 for j in range(299 % 50)],
        }
    with open_store(db) as store:  # and it can be recorded into again
        store.write_batch(runs=[run(1)], steps=counting_steps(run_id(1), 3))
        assert store.get_state(run_id(1)) == {"count": 3}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see zombies")
def test_a_killed_writer_not_yet_reaped_is_interrupted_too(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    db = tmp_path / "zombie.db"
    proc = spawn(script(tmp_path, "victim", _VICTIM), str(db))
    children.append(proc)
    assert Lines(proc.stdout).next() == "10"
    os.kill(proc.pid, signal.SIGKILL)
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # dead, but not reaped: a zombie
    with open_store(db, create=False) as store:
        (record,) = store.list_runs()
        assert record.pid == proc.pid and record.status == "interrupted"


def test_a_reader_in_another_process_sees_whole_batches_while_a_writer_writes(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    db = tmp_path / "live.db"
    reader = script(
        tmp_path,
        "reader",
        """
        import sys
        from flowdbg.store import open_store
        with open_store(sys.argv[1], readonly=True) as store:
            print("READY", flush=True)
            for line in sys.stdin:
                if line.strip() == "STOP":
                    break
                runs = store.list_runs()
                count = len(store.get_steps(runs[0].run_id, values=False)) if runs else 0
                print(count, flush=True)
        """,
    )
    rid = run_id(1)
    with SQLiteStore(db) as store:
        store.write_batch(runs=[run(1)])
        proc = spawn(reader, str(db))
        children.append(proc)
        lines = Lines(proc.stdout)
        assert lines.next() == "READY"
        assert proc.stdin is not None
        seen = []
        for first in range(1, 501, 50):
            store.write_batch(steps=counting_steps(rid, 50, first=first))
            proc.stdin.write("?\n")
            proc.stdin.flush()
            seen.append(int(lines.next()))
        proc.stdin.write("STOP\n")
        proc.stdin.flush()
        assert proc.wait(TIMEOUT) == 0
    assert seen == list(range(50, 501, 50))


def test_threads_share_one_store(store: SQLiteStore) -> None:
    """A writer thread and reader threads use the same store; readers never see half a batch."""
    rid = run_id(1)
    store.write_batch(runs=[run(1)])
    done = threading.Event()
    errors: list[BaseException] = []
    observed: list[int] = []

    def write() -> None:
        try:
            for first in range(1, 2001, 100):
                store.write_batch(steps=counting_steps(rid, 100, first=first))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            done.set()

    def read() -> None:
        try:
            while True:
                finished = done.is_set()
                count = len(store.get_steps(rid, values=False))
                assert count % 100 == 0, count
                if count:
                    assert store.get_state(rid, count) == {"count": count}
                observed.append(count)
                if finished:
                    return
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write)] + [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    assert not any(thread.is_alive() for thread in threads)
    assert not errors, errors
    assert max(observed) == 2000
    assert store.get_run(rid).step_count == 2000
