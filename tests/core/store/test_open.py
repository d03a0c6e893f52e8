"""Opening databases: creating, refusing foreign or newer ones untouched, migrating, read-only."""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from pathlib import Path

import pytest
from store_helpers import counting_steps, run, run_id, step

from flowdbg.errors import FlowdbgError
from flowdbg.store import (
    DB_SCHEMA_VERSION,
    DEFAULT_DB,
    SQLiteStore,
    StoreError,
    _sqlite,
    default_db_path,
    find_db,
    open_store,
)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


def test_a_new_database_is_created_with_its_folder_in_wal_mode(tmp_path: Path) -> None:
    db = tmp_path / "deep" / "er" / "flowdbg.db"
    with open_store(db) as store:
        assert store.path == str(db)
        store.write_batch(runs=[run(1)])
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    finally:
        conn.close()
    assert meta["app"] == "flowdbg" and meta["schema_version"] == str(DB_SCHEMA_VERSION) == "4"


def test_the_default_database_is_in_the_current_folder_unless_flowdbg_db_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLOWDBG_DB", raising=False)
    (tmp_path / ".git").mkdir()  # the top of a repository: the search ends there
    monkeypatch.chdir(tmp_path)
    assert default_db_path() == Path(".flowdbg/flowdbg.db") == Path(DEFAULT_DB)
    with open_store() as store:
        assert store.path == str(tmp_path / ".flowdbg" / "flowdbg.db")
    monkeypatch.setenv("FLOWDBG_DB", str(tmp_path / "env.db"))
    assert default_db_path() == tmp_path / "env.db"
    with open_store() as store:
        assert store.path == str(tmp_path / "env.db")


def test_the_default_database_is_found_in_a_parent_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLOWDBG_DB", raising=False)
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    with open_store() as store:  # recording at the top creates ./.flowdbg
        store.write_batch(runs=[run(1)])
    deep = tmp_path / "src" / "pkg"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    found = tmp_path / ".flowdbg" / "flowdbg.db"
    assert find_db() == found == default_db_path()
    with open_store(create=False) as store:
        assert store.path == str(found)
        assert [r.run_id for r in store.list_runs()] == [run_id(1)]
    assert not (deep / ".flowdbg").exists()
    # the nearest one wins, and FLOWDBG_DB wins over all
    (deep / ".flowdbg").mkdir()
    assert default_db_path() == Path(DEFAULT_DB)
    assert find_db(tmp_path / "src") == found
    monkeypatch.setenv("FLOWDBG_DB", str(tmp_path / "env.db"))
    assert default_db_path() == tmp_path / "env.db"


def test_the_search_ends_at_the_top_of_a_git_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLOWDBG_DB", raising=False)
    (tmp_path / ".flowdbg").mkdir()  # above the repository: not the project's
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    assert find_db() is None
    assert default_db_path() == Path(DEFAULT_DB)
    (repo / ".flowdbg").mkdir()  # at the top of the repository: found
    assert find_db() == repo / ".flowdbg" / "flowdbg.db"


def test_the_search_does_not_go_into_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".flowdbg").mkdir(parents=True)
    (home / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert find_db(home / "project") is None
    assert find_db(home) == home / ".flowdbg" / "flowdbg.db"


def test_a_relative_path_stays_put_when_the_process_changes_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with open_store("rel.db") as store:
        os.chdir(tmp_path.parent)
        store.write_batch(runs=[run(1)])
        assert store.get_run(run_id(1)).run_id == run_id(1)
    assert (tmp_path / "rel.db").exists()


def test_a_missing_database_is_not_created_when_asked_not_to(tmp_path: Path) -> None:
    db = tmp_path / "none.db"
    message = f"no flowdbg database at {db}; record a run first or pass --db"
    with pytest.raises(StoreError, match=re.escape(message)):
        open_store(db, create=False)
    with pytest.raises(StoreError, match=re.escape(message)):
        open_store(db, readonly=True)
    assert not db.exists()


@pytest.mark.parametrize(
    "content",
    [b"this is not sqlite at all" * 100, os.urandom(4096), b"SQLite format 3\x00" + b"\xff" * 200],
    ids=["text", "random", "bad-header"],
)
def test_a_file_that_is_not_a_database_is_refused_and_left_alone(
    tmp_path: Path, content: bytes
) -> None:
    bad = tmp_path / "notes.db"
    bad.write_bytes(content)
    with pytest.raises(StoreError) as info:
        open_store(bad)
    assert str(bad) in str(info.value) and "is not a flowdbg database" in str(info.value)
    assert "pass --db" in str(info.value)
    assert bad.read_bytes() == content
    assert siblings(bad) == ["notes.db"]


def test_another_applications_sqlite_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "app.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users (name) VALUES ('ana')")
    conn.commit()
    conn.close()
    before = digest(other)
    for readonly in (False, True):
        with pytest.raises(StoreError, match=r"app\.sqlite is not a flowdbg database .*users"):
            SQLiteStore(other, readonly=readonly)
    assert digest(other) == before
    assert siblings(other) == ["app.sqlite"]


def test_a_foreign_meta_table_is_not_mistaken_for_ours(tmp_path: Path) -> None:
    other = tmp_path / "meta.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.commit()
    conn.close()
    before = digest(other)
    with pytest.raises(StoreError, match="its meta table is not flowdbg's"):
        open_store(other)
    assert digest(other) == before


def test_an_empty_file_becomes_a_database(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(StoreError, match="no flowdbg database"):
        open_store(empty, create=False)
    with open_store(empty) as store:
        store.write_batch(runs=[run(1)])
        assert store.list_runs()[0].run_id == run_id(1)


def test_a_database_from_a_newer_flowdbg_is_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    with open_store(db) as store:
        store.write_batch(runs=[run(1)])
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    before = digest(db)
    message = (
        f"database {db} was written by a newer flowdbg (schema 7; this flowdbg reads up to "
        f"{DB_SCHEMA_VERSION}); upgrade flowdbg"
    )
    for readonly in (False, True):
        with pytest.raises(StoreError) as info:
            open_store(db, readonly=readonly)
        assert str(info.value) == message
    assert digest(db) == before


def test_an_older_schema_is_migrated_forward(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "old.db"
    with open_store(db) as store:
        store.write_batch(runs=[run(1)], steps=counting_steps(run_id(1), 3))

    def add_notes(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE runs ADD COLUMN notes TEXT")

    monkeypatch.setattr(_sqlite, "MIGRATIONS", [*_sqlite.MIGRATIONS, add_notes])
    newer = _sqlite.DB_SCHEMA_VERSION + 1
    monkeypatch.setattr(_sqlite, "DB_SCHEMA_VERSION", newer)
    with pytest.raises(StoreError, match=r"upgrade it by recording a run into it \(or by"):
        open_store(db, readonly=True)
    with open_store(db) as store:
        assert store.get_state(run_id(1), 2) == {"count": 2}
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(newer),
        )
        assert "notes" in [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
    finally:
        conn.close()
    with open_store(db, readonly=True) as store:  # now current: read-only works again
        assert store.get_run(run_id(1)).step_count == 3


def indexes(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        query = "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        return sorted(name for (name,) in conn.execute(query))
    finally:
        conn.close()


def test_the_state_index_of_earlier_databases_is_dropped_when_opened_for_writing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "earlier.db"
    with open_store(db) as store:
        store.write_batch(runs=[run(1)], steps=counting_steps(run_id(1), 4))
    conn = sqlite3.connect(db)  # as databases made before it was retired have it
    conn.execute("CREATE INDEX steps_state ON steps (run_id, step) WHERE state_ref IS NOT NULL")
    conn.close()
    with open_store(db, readonly=True) as store:  # a reader changes nothing
        assert store.get_state(run_id(1), 3) == {"count": 3}
    assert "steps_state" in indexes(db)
    with open_store(db) as store:
        assert store.get_state(run_id(1), 3) == {"count": 3}
        assert store.get_state(run_id(1)) == {"count": 4}
    assert "steps_state" not in indexes(db)


def test_the_latest_state_is_found_behind_steps_without_one(tmp_path: Path) -> None:
    # calls record no state: get_state reads back past them to the unit's
    with open_store(tmp_path / "calls.db") as store:
        rid = run_id(1)
        calls = [step(rid, i, node="tool", kind="tool", state=None) for i in range(2, 40)]
        store.write_batch(runs=[run(1)], steps=[*counting_steps(rid, 1), *calls])
        assert store.get_state(rid, 39) == {"count": 1}
        assert store.get_state(rid) == {"count": 1}
        assert store.last_writers(rid, 39) == {"count": (1, "inc")}


def test_a_read_only_store_reads_and_refuses_to_write(tmp_path: Path) -> None:
    db = tmp_path / "ro.db"
    with open_store(db) as store:
        store.write_batch(runs=[run(1)], steps=counting_steps(run_id(1), 5))
    before = digest(db)
    with open_store(db, readonly=True) as store:
        assert store.get_state(run_id(1), 3) == {"count": 3}
        assert len(store.get_steps(run_id(1))) == 5
        with pytest.raises(StoreError, match="is open read-only"):
            store.write_batch(runs=[run(2)])
        with pytest.raises(StoreError, match="is open read-only"):
            store.prune(keep=0)
    assert digest(db) == before


def test_a_path_that_cannot_be_created_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match=r"cannot use .* as a flowdbg database") as info:
        open_store(blocker / "sub" / "flowdbg.db")
    assert "pass --db (or set FLOWDBG_DB)" in str(info.value)
    with pytest.raises(StoreError, match="it is a directory"):
        open_store(tmp_path)


def test_a_url_is_refused_until_other_backends_exist(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="only SQLite files are supported"):
        open_store("postgresql://localhost/flowdbg")


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db")
    store.close()
    with pytest.raises(StoreError, match="is closed"):
        store.list_runs()
    store.close()  # twice is fine


def test_store_errors_are_flowdbg_errors() -> None:
    assert issubclass(StoreError, FlowdbgError)
