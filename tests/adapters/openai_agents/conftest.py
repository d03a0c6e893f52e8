"""Fixtures of the OpenAI Agents SDK adapter tests (the SDK itself is imported by the test
modules, after ``pytest.importorskip``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import flowdbg


@pytest.fixture
def dbg() -> Iterator[flowdbg.Debugger]:
    """A debugger that records nothing; closed after the test (which ends a run left stopped by
    a failing assertion, and detaches every agent)."""
    debugger = flowdbg.Debugger(record=False)
    yield debugger
    debugger.close()


@pytest.fixture
def rec(tmp_path: Path) -> Iterator[flowdbg.Debugger]:
    """A recording debugger (forks and rewinds read the record); closed after the test."""
    debugger = flowdbg.Debugger(db=tmp_path / "flowdbg.db")
    yield debugger
    debugger.close()
