"""The description of a workflow that builds and runs another inside a step: the nested
workflow is drawn from its class with its steps' edges, as a workflow held in an attribute is."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("workflows", reason="the llamaindex extra is not installed")

from workflows import Workflow, step
from workflows.events import Event, StartEvent, StopEvent

import flowdbg


class Doubled(Event):
    x: int


class Inner(Workflow):
    @step
    async def double(self, ev: StartEvent) -> Doubled:
        return Doubled(x=ev.x * 2)

    @step
    async def finish(self, ev: Doubled) -> StopEvent:
        return StopEvent(result=ev.x)


class Built(Workflow):
    """``nested`` builds its Inner as it runs."""

    @step
    async def nested(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await Inner(timeout=30).run(x=ev.x))


class Held(Workflow):
    """``nested`` runs the Inner held in an attribute."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.inner = Inner(timeout=30)

    @step
    async def nested(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=await self.inner.run(x=ev.x))


def _subgraph(workflow: Workflow) -> dict[str, Any]:
    with flowdbg.Debugger(record=False) as dbg:
        described = dbg.describe(workflow)
    (node,) = described["nodes"]
    assert node["name"] == "nested"
    return dict(node["subgraph"])


def test_a_workflow_built_in_a_step_is_described_with_its_edges() -> None:
    built = _subgraph(Built(timeout=30))
    assert built["name"] == "Inner"
    assert built["entry"] == ["double"]
    assert [n["name"] for n in built["nodes"]] == ["double", "finish"]
    assert built["edges"] == [
        {"source": "__start__", "target": "double"},
        {"source": "double", "target": "finish"},
        {"source": "finish", "target": "__end__"},
    ]
    assert not built.get("open")
    # the same structure as the description of an instance held in an attribute
    held = _subgraph(Held(timeout=30))
    for key in ("entry", "nodes", "edges", "conditional_edges"):
        assert built[key] == held[key], key
