"""Fixtures of the LlamaIndex adapter tests (LlamaIndex itself is imported by the test modules,
after ``pytest.importorskip``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import flowdbg


@pytest.fixture
def dbg() -> Iterator[flowdbg.Debugger]:
    """A debugger that records nothing; closed after the test (which ends a run left stopped by
    a failing assertion, and detaches every workflow)."""
    debugger = flowdbg.Debugger(record=False)
    yield debugger
    debugger.close()
