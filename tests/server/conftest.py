"""Fixtures of the debug server tests: a real server on a free loopback port, real clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph


def build_counter() -> Any:
    """a -> b -> END: a adds one to n, b doubles it."""
    g = StateGraph(name="counter")
    g.add_node("a", lambda s: {"n": s["n"] + 1})
    g.add_node("b", lambda s: {"n": s["n"] * 2})
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile()


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
