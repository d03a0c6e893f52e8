"""A database found up the folder tree, neither the current folder's nor at a repository's
root, is named on stderr (outside a repository the search goes up to ``/``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import GRAPHS, Cli

NOTE = "using the database {} (the nearest .flowdbg folder above this one; --db or FLOWDBG_DB "


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``shared/.flowdbg`` with a run recorded into it from ``shared/work``."""
    monkeypatch.delenv("FLOWDBG_DB", raising=False)
    monkeypatch.delenv("FLOWDBG_RECORD", raising=False)
    monkeypatch.setenv("FLOWDBG_HISTORY", str(tmp_path / "history"))
    (tmp_path / "shared" / ".flowdbg").mkdir(parents=True)
    work = tmp_path / "shared" / "work"
    work.mkdir()
    (work / "graphs.py").write_text(GRAPHS, encoding="utf-8")
    return tmp_path / "shared"


def test_a_database_found_above_is_named_on_stderr(shared: Path) -> None:
    db = shared / ".flowdbg" / "flowdbg.db"
    cli = Cli(shared / "work")
    result = cli("run", "graphs.py:app", "--input", '{"x": 1}', input="")
    assert result.stderr.splitlines()[0].startswith(NOTE.format(db))
    assert db.exists()  # recorded there, as before
    result = cli("runs", "ls")
    assert result.stderr.startswith(NOTE.format(db))
    assert result.stderr.count("using the database") == 1  # once per command
    result = cli("runs", "ls", "--json")
    assert json.loads(result.stdout)["data"]["count"] == 1  # stdout: the document only
    assert result.stderr.startswith(NOTE.format(db))


def test_nothing_is_said_when_the_database_was_chosen_or_is_here(
    shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = shared / ".flowdbg" / "flowdbg.db"
    cli = Cli(shared / "work")
    cli("run", "graphs.py:app", "--input", '{"x": 1}', "--db", str(db), input="")
    for result in (
        cli("runs", "ls", "--db", str(db)),
        Cli(shared)("runs", "ls"),  # the current folder's
    ):
        assert "using the database" not in result.stderr
        assert result.stdout.startswith("id ")
    monkeypatch.setenv("FLOWDBG_DB", str(db))
    assert "using the database" not in cli("runs", "ls").stderr
    monkeypatch.delenv("FLOWDBG_DB")
    (shared / ".git").mkdir()  # a repository's root: the project's own database
    assert "using the database" not in cli("runs", "ls").stderr
