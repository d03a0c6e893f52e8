"""Fixtures for the command-line tests: graph files and a database per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import GRAPHS, Cli


@pytest.fixture
def graphs(tmp_path: Path) -> Path:
    """A folder holding ``graphs.py`` (the test graphs) and ``broken.py`` (does not import)."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "graphs.py").write_text(GRAPHS, encoding="utf-8")
    (folder / "broken.py").write_text("import no_such_module_here\n", encoding="utf-8")
    (folder / "syntax.py").write_text("def f(:\n", encoding="utf-8")
    return folder


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh database path, also the default through ``FLOWDBG_DB``."""
    path = tmp_path / "runs" / "flowdbg.db"
    monkeypatch.setenv("FLOWDBG_DB", str(path))
    monkeypatch.setenv("FLOWDBG_HISTORY", str(tmp_path / "history"))
    monkeypatch.delenv("FLOWDBG_RECORD", raising=False)
    monkeypatch.delenv("FLOWDBG_DEBUG", raising=False)
    return path


@pytest.fixture
def run_cli(graphs: Path, db: Path) -> Iterator[Cli]:
    """``flowdbg`` run in the folder holding the test graphs, with a fresh database."""
    yield Cli(graphs)
