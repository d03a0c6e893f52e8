"""Lineage in the store: target references, forks and where they came from; schema 1 databases
migrated forward with their runs intact."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from store_helpers import run, run_id, step

from flowdbg.store import StoreError, _sqlite, open_store


def test_lineage_is_written_and_read_back(tmp_path: Path) -> None:
    with open_store(tmp_path / "f.db") as store:
        store.write_batch(
            runs=[
                run(1, target="/src/app.py:graph"),
                run(
                    2,
                    target="pkg.app:graph",
                    origin="fork",
                    forked_from=run_id(1),
                    fork_step=3,
                ),
                run(3, origin="rerun", forked_from=run_id(1)),
            ]
        )
        first, fork = store.get_run(run_id(1)), store.get_run(run_id(2))
        assert (first.target, first.origin, first.forked_from, first.fork_step) == (
            "/src/app.py:graph",
            None,
            None,
            None,
        )
        assert (fork.target, fork.origin, fork.forked_from, fork.fork_step) == (
            "pkg.app:graph",
            "fork",
            run_id(1),
            3,
        )
        assert [r.run_id for r in store.list_forks(run_id(1))] == [run_id(2), run_id(3)]
        assert store.list_forks(run_id(2)) == []


def test_ending_a_run_keeps_its_lineage(tmp_path: Path) -> None:
    with open_store(tmp_path / "f.db") as store:
        store.write_batch(runs=[run(1, target="a.py:g", origin="fork", forked_from="x" * 32)])
        store.write_batch(ended=[run(1, status="completed", ended_at=5.0)])
        ended = store.get_run(run_id(1))
        assert ended.status == "completed"
        assert (ended.target, ended.origin, ended.forked_from) == ("a.py:g", "fork", "x" * 32)


def test_a_schema_1_database_is_migrated_with_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "v1.db"
    with monkeypatch.context() as patched:  # a database as the flowdbg before lineage wrote it
        patched.setattr(_sqlite, "MIGRATIONS", _sqlite.MIGRATIONS[:1])
        patched.setattr(_sqlite, "DB_SCHEMA_VERSION", 1)
        open_store(db).close()
    conn = sqlite3.connect(db)
    try:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
        with conn:  # the rows that flowdbg wrote: the schema 1 columns, values inline
            conn.execute(
                "INSERT INTO runs (id, name, framework, status, started_at, step_count) "
                "VALUES (?, 'graph1', 'stategraph', 'completed', 1.0, 3)",
                (run_id(1),),
            )
            conn.executemany(
                "INSERT INTO steps (run_id, step, node, kind, status, started_at, state_ref) "
                "VALUES (?, ?, 'inc', 'node', 'completed', 1.0, ?)",
                [(run_id(1), i, f'[{{"count": {i}}}]') for i in (1, 2, 3)],
            )
    finally:
        conn.close()
    assert "forked_from" not in columns
    with open_store(db, readonly=True) as store:  # read as it is, through views: not changed
        (found,) = store.list_runs()
        assert (found.run_id, found.step_count, found.origin, found.fork_step) == (
            run_id(1),
            3,
            None,
            None,
        )
        assert [s.cached for s in store.get_steps(run_id(1))] == [False] * 3
        assert store.get_state(run_id(1), 2) == {"count": 2}
        assert store.list_forks(run_id(1)) == []
        with pytest.raises(StoreError, match="open read-only"):
            store.write_batch(runs=[run(2)])
    conn = sqlite3.connect(db)
    try:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert version == ("1",)  # nothing migrated by a reader
    finally:
        conn.close()
    with open_store(db) as store:  # opened for writing: migrated to the current schema
        old = store.get_run(run_id(1))
        assert (old.step_count, old.target, old.origin, old.forked_from) == (3, None, None, None)
        assert store.get_state(run_id(1), 2) == {"count": 2}
        store.write_batch(runs=[run(2, origin="fork", forked_from=run_id(1), fork_step=2)])
        assert [r.run_id for r in store.list_forks(run_id(1))] == [run_id(2)]
    with open_store(db, readonly=True) as store:
        assert store.get_run(run_id(2)).fork_step == 2


def test_a_run_keeps_its_config_redacted_and_a_schema_2_database_reads_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(tmp_path / "c.db") as store:
        config = {"context": {"user": "ann", "api_key": "sk-123"}, "max_turns": 3}
        store.write_batch(runs=[run(1, config=config)])
        store.write_batch(ended=[run(1, status="completed", ended_at=5.0)])  # kept at the end
        assert store.get_run(run_id(1)).config == {
            "context": {"user": "ann", "api_key": "[REDACTED]"},
            "max_turns": 3,
        }
    db = tmp_path / "v2.db"
    with monkeypatch.context() as patched:  # a database as the flowdbg before configs wrote it
        patched.setattr(_sqlite, "MIGRATIONS", _sqlite.MIGRATIONS[:2])
        patched.setattr(_sqlite, "DB_SCHEMA_VERSION", 2)
        open_store(db).close()
    conn = sqlite3.connect(db)
    try:
        with conn:  # a run as that flowdbg wrote it
            conn.execute(
                "INSERT INTO runs (id, name, framework, status, started_at, origin) "
                "VALUES (?, 'graph1', 'stategraph', 'completed', 1.0, 'rerun')",
                (run_id(1),),
            )
    finally:
        conn.close()
    with open_store(db, readonly=True) as store:  # through a view: not changed
        old = store.get_run(run_id(1))
        assert (old.origin, old.config) == ("rerun", None)
    with open_store(db) as store:  # migrated when opened for writing
        store.write_batch(runs=[run(2, config={"configurable": {"user": "1"}})])
        assert store.get_run(run_id(2)).config == {"configurable": {"user": "1"}}
        assert store.get_run(run_id(1)).config is None


def test_the_state_before_the_first_step_is_what_no_step_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A LlamaIndex run's input is its start event's fields, its state the context's store: a
    # key the first step wrote with a start field's value is that step's, and a key the store
    # held before any step is no step's. A call inside the first step sees that state.
    rid = run_id(1)
    with open_store(tmp_path / "s.db") as store:
        store.write_batch(runs=[run(1, input={"topic": "x"})])
        store.write_batch(runs=[run(1, initial_state={"owner": "ann"})])  # input kept
        store.write_batch(
            steps=[
                step(rid, 1, node="note", state={"owner": "ann", "topic": "x"}),
                step(rid, 2, node="search", kind="tool", path=("note",)),
                step(rid, 3, node="finish", state={"owner": "ann", "topic": "x", "done": True}),
            ]
        )
        store.write_batch(ended=[run(1, status="completed", ended_at=9.0)])
        recorded = store.get_run(rid)
        assert (recorded.input, recorded.initial_state) == ({"topic": "x"}, {"owner": "ann"})
        assert store.last_writers(rid) == {"topic": (1, "note"), "done": (3, "finish")}
        assert store.get_state(rid, step=2) == {"owner": "ann"}
        assert store.prune(keep=1) == 0  # nothing pruned, and the sweep keeps the state's blob
        assert store.get_run(rid).initial_state == {"owner": "ann"}
    db = tmp_path / "v3.db"
    with monkeypatch.context() as patched:  # a database as the flowdbg before this wrote it
        patched.setattr(_sqlite, "MIGRATIONS", _sqlite.MIGRATIONS[:3])
        patched.setattr(_sqlite, "DB_SCHEMA_VERSION", 3)
        open_store(db).close()
    conn = sqlite3.connect(db)
    try:
        with conn:  # a run and its step as that flowdbg wrote them, values inline
            conn.execute(
                "INSERT INTO runs (id, name, framework, status, started_at, input_ref) "
                """VALUES (?, 'noting', 'llamaindex', 'completed', 1.0, '[{"topic": "x"}]')""",
                (rid,),
            )
            conn.execute(
                "INSERT INTO steps (run_id, step, node, kind, status, started_at, state_ref) "
                """VALUES (?, 1, 'note', 'node', 'completed', 1.0, '[{"topic": "x"}]')""",
                (rid,),
            )
    finally:
        conn.close()
    with open_store(db, readonly=True) as store:  # through a view: the input stands for it
        assert store.get_run(rid).initial_state is None
        assert store.last_writers(rid) == {}
    with open_store(db) as store:  # migrated when opened for writing
        store.write_batch(runs=[run(2, initial_state={"n": 1})])
        assert store.get_run(run_id(2)).initial_state == {"n": 1}
        assert store.get_run(rid).initial_state is None
