"""The web debugger on every adapter's demo (the example ``flowdbg demo --framework NAME``
runs): its graph is drawn, a breakpoint set by clicking the entry node holds the run, and the
run, continued, completes with its nodes shown done. A framework not installed here skips."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

for _name in ("fastapi", "uvicorn", "websockets", "httpx"):
    pytest.importorskip(_name)

import httpx  # noqa: E402  (after the skip: the server extra may be missing)
from web_browser import require_browser, serving  # noqa: E402

import flowdbg  # noqa: E402

#: adapter -> the package its framework is imported as
FRAMEWORKS = {
    "stategraph": None,
    "langgraph": "langgraph",
    "llamaindex": "workflows",
    "openai_agents": "agents",
}


def graph_kind(adapter: str) -> str:
    """The unit kind of a graph node of ``adapter`` (an OpenAI agent's nodes are agents)."""
    return "agent" if adapter == "openai_agents" else "node"


@pytest.mark.parametrize("adapter", sorted(FRAMEWORKS))
def test_every_adapters_demo_runs_in_the_page(adapter: str, open_ui: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    require_browser()
    package = FRAMEWORKS[adapter]
    if package is not None and importlib.util.find_spec(package) is None:
        pytest.skip(f"the {adapter} framework is not installed here")
    with flowdbg.Debugger(record=False) as dbg:
        demo = dbg.adapters[adapter].adapter.demo()
    assert demo is not None
    with serving(tmp_path, demo.target, "--input", json.dumps(demo.input)) as served:
        ui = open_ui(served)
        page, shot = ui.page, ui.shot
        graph = httpx.get(f"{served.base}/target", params={"token": served.token}).json()["graph"]
        for unit in graph["nodes"]:
            expect(ui.node(unit["name"])).to_be_visible()
        entry = graph["entry"][0]
        # the run form holds the demo's input
        assert json.loads(page.locator("#run-input").input_value()) == demo.input

        node = ui.node(entry)
        node.click()
        expect(node).to_have_attribute("data-break-before", "true")
        page.get_by_role("button", name="Start run").click()
        stops = page.locator("#stop-list li")
        expect(stops.first).to_contain_text(f"breakpoint before {graph_kind(adapter)} {entry}")
        expect(node).to_have_attribute("data-state", "held")
        expect(page.locator("#tree li").first).to_be_visible()
        shot("stopped")
        # the breakpoint removed, the stop continued: the run completes
        node.click()
        expect(node).to_have_attribute("data-break-before", "false")
        stops.first.get_by_role("button", name="Continue").click()
        expect(stops).to_have_count(0)
        expect(page.locator("#run-summary")).to_contain_text("completed")
        expect(node).to_have_attribute("data-state", "done")
        expect(page.locator("#timeline .block").first).to_be_visible()
        shot("completed")
        assert not ui.errors, ui.errors
        ui.close()  # before its server stops
