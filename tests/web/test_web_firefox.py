"""The web debugger in Firefox (Debian's firefox-esr, over WebDriver BiDi): the demo graph is
drawn, a click on a node (sign, which every run reaches) sets a breakpoint, a run stops there
and is continued to its end."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from firefox_bidi import Firefox, firefox_path
from web_browser import Served, serving

pytest.importorskip("websockets")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    if firefox_path() is None:
        why = "no firefox-esr on PATH (apt-get install firefox-esr)"
        if os.environ.get("FLOWDBG_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser tests must run here (FLOWDBG_REQUIRE_BROWSER=1), but {why}")
        pytest.skip(why)
    with serving(tmp_path_factory.mktemp("firefox")) as server:
        yield server


def test_the_demo_graph_is_debugged_in_firefox(served: Served, artifacts: Path) -> None:
    fox = Firefox()
    try:
        fox.goto(served.url)
        fox.wait("document.body.dataset.ready === 'true'")
        fox.wait("document.getElementById('conn').textContent === 'live'")
        nodes = fox.wait(
            "[...document.querySelectorAll('#graph [data-node]')].map(n => n.dataset.node)"
        )
        assert {"classify", "refund", "answer", "sign"} <= set(nodes)
        fox.screenshot(str(artifacts / "01-firefox-graph.png"))

        node = "document.querySelector('#graph [data-node=\"sign\"]')"
        fox.js(f"{node}.dispatchEvent(new MouseEvent('click', {{bubbles: true}}))")
        fox.wait(f"{node}.dataset.breakBefore === 'true'")
        fox.js(
            "[...document.querySelectorAll('button')].find(b => b.textContent.trim() === "
            "'Start run').click()"
        )
        held = fox.wait("document.querySelector('#stop-list li')?.textContent")
        assert "before node sign" in held
        fox.wait(f"{node}.dataset.state === 'held'")
        fox.screenshot(str(artifacts / "02-firefox-stopped.png"))

        fox.js("document.getElementById('btn-continue').click()")
        fox.wait("document.querySelectorAll('#stop-list li').length === 0")
        summary = fox.wait("document.getElementById('run-summary').textContent")
        fox.wait("document.getElementById('run-summary').textContent.includes('completed')")
        assert summary
        assert fox.js(f"{node}.dataset.state") == "done"
    finally:
        fox.close()
