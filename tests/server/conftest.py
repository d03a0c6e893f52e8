"""Fixtures of the debug server tests: a real server on a free loopback port, real clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import build_counter

import flowdbg


@pytest.fixture
def dbg(tmp_path: Path) -> Iterator[flowdbg.Debugger]:
    debugger = flowdbg.Debugger(db=tmp_path / "flowdbg.db")
    yield debugger
    debugger.close()


@pytest.fixture
def server(dbg: flowdbg.Debugger) -> Iterator[Any]:
    with dbg.serve(target=build_counter(), target_name="counter.py:graph") as srv:
        yield srv


@pytest.fixture
def client(server: Any) -> Iterator[Any]:
    import httpx

    with httpx.Client(
        base_url=server.base_url,
        headers={"Authorization": f"Bearer {server.token}"},
        timeout=30,
    ) as c:
        yield c
