"""prune: old runs go with their nested runs, their steps and the values only they used."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from store_helpers import T0, run, run_id, step

from flowdbg.records import RunRecord, StepRecord
from flowdbg.store import SQLiteStore

ALL = {1, 2, 3, 4, 5, 11}


def blob_count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM blobs").fetchone()[0])
    finally:
        conn.close()


def file_bytes(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.exists())


def dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def records(numbers: set[int]) -> list[tuple[RunRecord, list[StepRecord]]]:
    """Runs 1..4 (top-level, oldest first); run 11 is a child of run 1, run 5 of run 3.

    Every top-level run's state holds a value of its own and one shared by all of them.
    """
    shared = "shared document " * 50
    out = []
    for n in range(1, 5):
        own = f"run {n}'s own document " * 50
        out.append(
            (
                run(n, started_at=T0 + 100 * n, status="completed"),
                [step(run_id(n), s, state={"own": own, "shared": shared}) for s in (1, 2)],
            )
        )
    for n, parent in ((11, 1), (5, 3)):
        out.append(
            (
                run(n, parent_run_id=run_id(parent), started_at=T0 + 100 * parent + 1),
                [step(run_id(n), 1, state={"child": f"child {n} " * 50})],
            )
        )
    return [(r, steps) for r, steps in out if int(r.run_id[:4], 16) in numbers]


def populate(store: SQLiteStore, numbers: set[int] = ALL) -> None:
    for record, steps in records(numbers):
        store.write_batch(runs=[record], steps=steps)


def blobs_of(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {key for (key,) in conn.execute("SELECT hash FROM blobs")}
    finally:
        conn.close()


def assert_blobs_are_those_of(db: Path, numbers: set[int], tmp_path: Path) -> None:
    """The values left are exactly those of a database that only ever held these runs."""
    with SQLiteStore(tmp_path / "expected.db") as expected:
        populate(expected, numbers)
    assert blobs_of(db) == blobs_of(tmp_path / "expected.db")


def all_ids(store: SQLiteStore) -> set[int]:
    return {int(r.run_id[:4], 16) for r in store.list_runs(parent="*")}


def test_prune_older_than_deletes_old_runs_with_their_children(
    store: SQLiteStore, db: Path, tmp_path: Path
) -> None:
    populate(store)
    before = blob_count(db)
    assert store.prune(older_than=T0 + 250) == 2  # runs 1 and 2 (run 11 goes with run 1)
    assert all_ids(store) == {3, 4, 5}
    assert_blobs_are_those_of(db, {3, 4, 5}, tmp_path)
    assert blob_count(db) < before
    assert store.get_state(run_id(3)) == {
        "own": "run 3's own document " * 50,
        "shared": "shared document " * 50,
    }
    assert store.get_state(run_id(5)) == {"child": "child 5 " * 50}
    conn = sqlite3.connect(db)
    try:
        orphans = conn.execute(
            "SELECT count(*) FROM steps WHERE run_id NOT IN (SELECT id FROM runs)"
        ).fetchone()[0]
    finally:
        conn.close()
    assert orphans == 0


def test_prune_keep_keeps_the_newest_runs(store: SQLiteStore, db: Path, tmp_path: Path) -> None:
    populate(store)
    assert store.prune(keep=1) == 3
    assert all_ids(store) == {4}
    assert store.get_state(run_id(4))["shared"] == "shared document " * 50
    assert_blobs_are_those_of(db, {4}, tmp_path)
    assert store.prune(keep=1) == 0


def test_prune_with_both_deletes_what_either_selects(store: SQLiteStore) -> None:
    populate(store)
    assert store.prune(older_than=T0 + 150, keep=3) == 1
    assert all_ids(store) == {2, 3, 4, 5}
    assert store.prune() == 0


def test_prune_spares_runs_still_being_recorded(store: SQLiteStore) -> None:
    store.write_batch(
        runs=[
            run(1, started_at=T0),  # running, recorded by this (live) process
            run(2, started_at=T0 + 1, pid=dead_pid()),  # running, but its process is gone
            run(3, started_at=T0 + 2, status="completed"),
        ]
    )
    assert store.prune(older_than=T0 + 100) == 2
    assert all_ids(store) == {1}


def test_pruning_shrinks_the_file(store: SQLiteStore, db: Path) -> None:
    rid = run_id(1)
    store.write_batch(
        runs=[run(1, status="completed")],
        steps=[step(rid, n, state={"doc": os.urandom(10_000).hex()}) for n in range(1, 60)],
    )
    store.write_batch(runs=[run(2, status="completed", started_at=T0 + 10)])
    full = file_bytes(db)
    assert store.prune(keep=1) == 1
    assert file_bytes(db) < full / 4


def test_a_value_pruned_by_another_connection_is_stored_again(db: Path) -> None:
    """A writer remembers which values it stored; a prune elsewhere must make it forget."""
    doc = "a document both runs hold " * 40
    with SQLiteStore(db) as writer, SQLiteStore(db) as pruner:
        writer.write_batch(
            runs=[run(1, status="completed")], steps=[step(run_id(1), 1, state={"d": doc})]
        )
        assert pruner.prune(keep=0) == 1
        assert blob_count(db) == 0
        writer.write_batch(
            runs=[run(2, status="completed")], steps=[step(run_id(2), 1, state={"d": doc})]
        )
        assert writer.get_state(run_id(2)) == {"d": doc}


def test_a_long_value_taken_as_stored_is_stored_again_after_a_prune(db: Path) -> None:
    """A long string met before is not dumped again (its blob is remembered by identity);
    once a prune removed the blob, the next write stores it again."""
    doc = os.urandom(6_000).hex()  # long enough to be remembered by identity
    with SQLiteStore(db) as writer, SQLiteStore(db) as pruner:
        writer.write_batch(
            runs=[run(1, status="completed")], steps=[step(run_id(1), 1, state={"d": doc})]
        )
        assert pruner.prune(keep=0) == 1
        assert blob_count(db) == 0
        writer.write_batch(
            runs=[run(2, status="completed")], steps=[step(run_id(2), 1, state={"d": doc})]
        )
        assert writer.get_state(run_id(2)) == {"d": doc}
