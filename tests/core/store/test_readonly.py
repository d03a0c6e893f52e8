"""Reading a database that cannot be written (a read-only file, folder or mount), and recording
where the default database cannot be written.

Permissions do not bind root, and the tests often run as root: the checks that need them run in
a child process that, under root, gives up the capabilities that override them
(``CAP_DAC_OVERRIDE``, ``CAP_DAC_READ_SEARCH``, ``CAP_FOWNER``), so that a folder with mode
0o555 cannot be written even by its owner.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from store_helpers import TIMEOUT, counting_steps, run, run_id

import flowdbg
from flowdbg.store import SQLiteStore, StoreError, open_recording_store, open_store

CHILD = textwrap.dedent(
    """
    import json, logging, os, sys

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    action, path = sys.argv[1], sys.argv[2]
    out = {}
    if action == "probe":
        try:
            open(os.path.join(path, "probe"), "w").close()
            out["bound"] = False
        except PermissionError:
            out["bound"] = True
    elif action == "read":
        from flowdbg.store import StoreError, open_store

        try:
            with open_store(path, readonly=True) as store:
                out["runs"] = [r.run_id for r in store.list_runs(limit=None)]
                out["immutable"] = store.immutable
        except StoreError as exc:
            out["error"] = str(exc)
    elif action == "write":
        from flowdbg.store import StoreError, open_store

        try:
            open_store(path).close()
            out["error"] = None
        except StoreError as exc:
            out["error"] = str(exc)
    elif action == "debugger":
        import flowdbg
        from flowdbg.store import StoreError

        os.chdir(path)
        out["stores"] = [flowdbg.Debugger().store is None for _ in range(2)]
        try:
            flowdbg.Debugger(db=os.path.join(path, "given.db"))
            out["given"] = None
        except StoreError as exc:
            out["given"] = str(exc)
    elif action == "cli":
        import subprocess

        done = subprocess.run(
            [sys.executable, "-m", "flowdbg.cli", "runs", "ls", "--db", path, "--json"],
            capture_output=True,
            text=True,
        )
        out["code"] = done.returncode
        out["stderr"] = done.stderr
        if done.returncode == 0:
            out["runs"] = [r["run_id"] for r in json.loads(done.stdout)["data"]["runs"]]
    print(json.dumps(out))
    """
)

_PR_CAPBSET_DROP = 24
_OVERRIDES = (1, 2, 3)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER


def _bind_permissions() -> None:  # pragma: no cover - runs in the child before exec
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in _OVERRIDES:
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def bound_child(action: str, path: Path) -> tuple[dict[str, Any], str]:
    """Run the child ``action`` on ``path`` in a process file permissions bind; its result
    and its log."""
    env = {k: v for k, v in os.environ.items() if k != "FLOWDBG_DB"}
    preexec = None
    if os.geteuid() == 0:
        if not sys.platform.startswith("linux"):
            pytest.skip("running as root: permissions bind only with Linux capabilities dropped")
        preexec = _bind_permissions
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, action, str(path)],
            capture_output=True,
            text=True,
            env=env,
            timeout=TIMEOUT,
            preexec_fn=preexec,
        )
    except subprocess.SubprocessError as exc:
        pytest.skip(f"cannot start a child process that permissions bind: {exc}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[Path]:
    """A folder whose read-only modes bind the child processes (or the test is skipped)."""
    folder = tmp_path / "data"
    folder.mkdir()
    probe = tmp_path / "probe"
    probe.mkdir(mode=0o555)
    try:
        if not bound_child("probe", probe)[0]["bound"]:
            pytest.skip("file permissions do not bind this user")
        yield folder
    finally:
        for path in [tmp_path, *tmp_path.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)


def recorded(folder: Path, name: str = "flowdbg.db", runs: int = 2) -> Path:
    db = folder / name
    with open_store(db) as store:
        store.write_batch(runs=[run(n) for n in range(1, runs + 1)])
    db.chmod(0o444)
    return db


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------------ reading


def test_a_read_only_file_in_a_writable_folder_is_read(shared: Path) -> None:
    folder = shared / "rw"
    folder.mkdir()
    db = recorded(folder)
    result, _ = bound_child("read", db)
    assert result["runs"] == [run_id(2), run_id(1)]
    assert result["immutable"] is False
    result, _ = bound_child("cli", db)
    assert result["code"] == 0, result["stderr"]
    assert result["runs"] == [run_id(2), run_id(1)]


def test_a_database_in_a_read_only_folder_is_read_as_immutable(shared: Path) -> None:
    folder = shared / "ro"
    folder.mkdir()
    db = recorded(folder)
    before = (digest(db), files(folder))
    folder.chmod(0o555)
    result, log = bound_child("read", db)
    assert result["runs"] == [run_id(2), run_id(1)]
    assert result["immutable"] is True
    assert f"flowdbg reads {db} as immutable" in log
    result, _ = bound_child("cli", db)
    assert result["code"] == 0, result["stderr"]
    assert result["runs"] == [run_id(2), run_id(1)]
    assert (digest(db), files(folder)) == before


def test_a_read_only_folder_with_the_wal_files_is_read_in_full(shared: Path) -> None:
    """A copy taken while a recorder was writing: the last runs are in the -wal file only."""
    source = shared / "live.db"
    with open_store(source) as store:
        store.write_batch(runs=[run(1)])
        conn = sqlite3.connect(source)
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        try:
            store.write_batch(runs=[run(2)])  # into the -wal file, not checkpointed yet
            folder = shared / "copy"
            folder.mkdir()
            for suffix in ("", "-wal", "-shm"):
                shutil.copyfile(f"{source}{suffix}", folder / f"flowdbg.db{suffix}")
        finally:
            conn.close()
    if (folder / "flowdbg.db-wal").stat().st_size == 0:
        pytest.skip("SQLite checkpointed the copy's -wal file already")
    for path in folder.iterdir():
        path.chmod(0o444)
    folder.chmod(0o555)
    result, _ = bound_child("read", folder / "flowdbg.db")
    assert result == {"runs": [run_id(2), run_id(1)], "immutable": False}


def test_immutable_reads_without_touching_the_folder(tmp_path: Path) -> None:
    db = tmp_path / "mount" / "flowdbg.db"
    with open_store(db) as store:
        store.write_batch(runs=[run(1)], steps=counting_steps(run_id(1), 3))
    before = (digest(db), files(db.parent))
    with open_store(db, readonly=True, immutable=True) as store:
        assert isinstance(store, SQLiteStore) and store.immutable
        assert store.get_state(run_id(1), 2) == {"count": 2}
        assert files(db.parent) == ["flowdbg.db"]  # no -shm or -wal file made
        with pytest.raises(StoreError, match="is open read-only"):
            store.write_batch(runs=[run(2)])
    assert (digest(db), files(db.parent)) == before
    assert "immutable=True" in repr(open_store(db, readonly=True, immutable=True))


def test_writing_to_a_read_only_file_is_refused_at_once(shared: Path) -> None:
    folder = shared / "w"
    folder.mkdir()
    db = recorded(folder)
    result, _ = bound_child("write", db)
    assert result["error"] == (
        f"cannot write the flowdbg database {db}: the file is read-only; make it writable, or "
        "pass --db (or set FLOWDBG_DB) with a path you can write"
    )


# ------------------------------------------------------------------ recording


def test_a_debugger_in_a_read_only_folder_records_nothing_and_warns_once(shared: Path) -> None:
    folder = shared / "checkout"
    (folder / ".git").mkdir(parents=True)  # a repository's top: the search ends here
    folder.chmod(0o555)
    result, log = bound_child("debugger", folder)
    assert result["stores"] == [True, True]
    warnings = [line for line in log.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1, log
    assert f"flowdbg cannot record runs to {folder / '.flowdbg' / 'flowdbg.db'}" in warnings[0]
    assert "set FLOWDBG_DB or pass Debugger(db=...)" in warnings[0]
    assert result["given"] is not None and str(folder / "given.db") in result["given"]
    assert files(folder) == [".git"]


def test_an_unusable_default_database_turns_recording_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The same as above for any user: a file named .flowdbg blocks the folder."""
    monkeypatch.delenv("FLOWDBG_DB", raising=False)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".flowdbg").write_text("not a folder")
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING, logger="flowdbg.store"):
        first, second = flowdbg.Debugger(), flowdbg.Debugger()
        assert open_recording_store() is None
    try:
        assert first.store is None and second.store is None
        assert first.flush(timeout=1.0)
    finally:
        first.close()
        second.close()
    messages = [r.getMessage() for r in caplog.records if r.name == "flowdbg.store"]
    assert len(messages) == 1
    assert messages[0].startswith(f"flowdbg cannot record runs to {tmp_path}/.flowdbg/flowdbg.db")
    with pytest.raises(StoreError, match="cannot use"):
        flowdbg.Debugger(db=tmp_path / ".flowdbg" / "given.db")
