"""Fixtures of the store tests: a fresh SQLite store in a temporary folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flowdbg.store import SQLiteStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "flowdbg.db"


@pytest.fixture
def store(db: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(db) as opened:
        yield opened
