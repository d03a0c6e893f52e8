"""The web debugger on LangGraph: an agent whose scripted model calls a tool (a tool
breakpoint, an edit of the call's arguments refused by the tool's schema and then accepted,
model and tool calls on the timeline), and parallel branches held at once, each resumed on its
own, beside a nested subgraph that collapses."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

from web_browser import Served, ui_fixture
from web_targets import AGENT_INPUT

TARGETS = "tests/web/web_targets.py"

agent = ui_fixture(f"{TARGETS}:build_agent", "--input", json.dumps(AGENT_INPUT))
parallel = ui_fixture(f"{TARGETS}:build_parallel")


def test_an_agent_with_tool_calls(open_ui: Any, agent: Served) -> None:
    from playwright.sync_api import expect

    ui = open_ui(agent)
    page, shot, node = ui.page, ui.shot, ui.node
    expect(node("agent")).to_be_visible()
    expect(node("tools")).to_be_visible()
    # the conditional edge is labelled with its router
    expect(page.locator("#graph .edge-label").first).to_have_text("tools_condition")

    # a breakpoint before the tool call search, from the breakpoints form
    page.get_by_role("tab", name="Breakpoints").click()
    pane = page.locator("#pane-breakpoints")
    pane.get_by_label("Where").select_option("tool")
    pane.get_by_label("Name").fill("search")
    pane.get_by_role("button", name="Add breakpoint").click()
    expect(page.locator("#bp-list")).to_contain_text("tool search")

    page.get_by_role("button", name="Start run").click()
    stop = page.locator("#stop-list li")
    expect(stop).to_have_count(1)
    expect(stop).to_contain_text("before tool tools › search")  # noqa: RUF001
    # the call is inside the tools node, which is shown held
    expect(node("tools")).to_have_attribute("data-state", "held")
    expect(page.locator('#view-tabs [data-view="input"]')).to_have_attribute("aria-pressed", "true")
    destination = page.locator('#tree li[data-path="destination"] .val')
    expect(destination).to_have_text('"Lisbon"')
    shot("tool-stop")

    # a number is not a destination: the tool's schema refuses it, and the page says why
    page.get_by_role("button", name="edit destination").click()
    editor = page.get_by_role(
        "textbox", name="new value of destination (JSON; plain text is taken as a string)"
    )
    editor.fill("5")
    editor.press("Enter")
    refusal = page.locator("#stop-error")
    expect(refusal).to_be_visible()
    expect(refusal).to_contain_text("EditRefused")
    expect(refusal).to_contain_text("destination")
    shot("edit-refused")
    # plain text is taken as a string, which it accepts
    editor.fill("Porto")
    editor.press("Enter")
    expect(destination).to_have_text('"Porto"')

    page.get_by_role("button", name="Continue F8").click()
    expect(page.locator("#run-summary")).to_contain_text("completed")
    # the model ran twice, the tool node once; their calls are on the timeline
    expect(node("agent").locator(".hits")).to_have_text("×2")  # noqa: RUF001
    expect(node("tools").locator(".hits")).to_have_text("×1")  # noqa: RUF001
    expect(page.locator("#timeline .block.k-tool")).to_have_count(1)
    expect(page.locator("#timeline .block.k-llm")).to_have_count(2)
    shot("agent-done")

    # the record holds the tool's answer for the edited destination
    page.get_by_role("tab", name="Record").click()
    page.locator("#rec-runs tbody tr").first.click()
    page.locator('#rec-state tr[data-key="messages"]').click()
    # the tree builds a message's fields when it is expanded
    tool_message = page.locator('#rec-tree li[data-path="[2]"]')
    expect(tool_message.locator('li[data-path="[2].content"]')).to_have_count(0)
    tool_message.get_by_role("button", name="expand [2]").click()
    expect(tool_message.locator('li[data-path="[2].content"]')).to_contain_text("flights to Porto")
    shot("agent-record")
    # the refused edit's answer (409) is the only failed request
    assert [e for e in ui.errors if "status of 409" not in e] == [], ui.errors


def test_parallel_branches_and_a_subgraph(open_ui: Any, parallel: Served) -> None:
    from playwright.sync_api import expect

    ui = open_ui(parallel)
    page, shot, node = ui.page, ui.shot, ui.node

    # the subgraph is a box holding its nodes; collapsed, it is one node; expanded again
    expect(node("sub/c1")).to_be_visible()
    expect(page.locator('#graph [data-cluster="sub"]')).to_contain_text("sub: child")
    page.get_by_role("button", name="collapse sub").click()
    expect(node("sub/c1")).to_have_count(0)
    expect(node("sub")).to_contain_text("sub")
    shot("collapsed")
    # a stop inside a collapsed subgraph shows on its node
    page.get_by_label("Input").fill('{"x": 1, "items": []}')
    node("sub").focus()
    page.keyboard.press("Enter")  # break before sub itself
    expect(node("sub")).to_have_attribute("data-break-before", "true")
    page.get_by_role("button", name="Start run").click()
    expect(node("sub")).to_have_attribute("data-state", "held")
    page.get_by_role("button", name="Continue F8").click()
    expect(page.locator("#run-summary")).to_contain_text("completed")
    node("sub").click()
    expect(node("sub")).to_have_attribute("data-break-before", "false")
    page.get_by_role("button", name="expand sub").click()
    expect(node("sub/c1")).to_be_visible()

    # breakpoints before both branches, and inside the subgraph, from the keyboard
    node("left").click()
    node("right").click()
    node("sub/c2").focus()
    page.keyboard.press("Enter")
    expect(node("sub/c2")).to_have_attribute("data-break-before", "true")

    page.get_by_label("Input").fill('{"x": 1, "items": []}')
    page.get_by_role("button", name="Start run").click()
    stops = page.locator("#stop-list li")
    expect(stops).to_have_count(1)
    expect(stops).to_contain_text("before node sub › c2")  # noqa: RUF001
    expect(node("sub/c2")).to_have_attribute("data-state", "held")
    expect(node("sub/c1")).to_have_attribute("data-state", "done")
    # c1 finished in the nested run, which has its own lane
    done = page.locator("#timeline .block:not(.held)")
    expect(done).to_have_count(1)
    expect(done).to_have_attribute("data-unit", "c1")
    # c2 is held in the same lane
    expect(page.locator("#timeline .lane")).to_have_count(1)
    expect(page.locator("#timeline .block.held")).to_have_attribute("data-unit", "c2")
    shot("subgraph-stop")
    page.get_by_role("button", name="Continue F8").click()

    # both branches held at once, each shown and each resumable on its own
    expect(stops).to_have_count(2)
    expect(node("left")).to_have_attribute("data-state", "held")
    expect(node("right")).to_have_attribute("data-state", "held")
    # each held branch in a lane of its own
    held = page.locator("#timeline .block.held")
    expect(held).to_have_count(2)
    lanes = page.locator("#timeline .lane")
    expect(lanes.filter(has=page.locator(".block.held"))).to_have_count(2)
    shot("two-stops")
    right = page.locator('#stop-list li[data-stop-node="right"]')
    right.get_by_role("button", name="Continue").click()
    expect(stops).to_have_count(1)
    expect(page.locator('#stop-list li[data-stop-node="left"]')).to_be_visible()
    # right ran on (LangGraph commits its superstep once left is done too); left is held
    expect(node("right")).to_have_attribute("data-state", re.compile("^(running|done)$"))
    expect(node("left")).to_have_attribute("data-state", "held")
    expect(node("join")).to_have_attribute("data-state", "idle")
    shot("one-resumed")
    page.locator('#stop-list li[data-stop-node="left"]').get_by_role(
        "button", name="Continue"
    ).click()
    expect(stops).to_have_count(0)
    expect(node("join")).to_have_attribute("data-state", "done")
    for name in ("left", "right", "fan", "sub/c1", "sub/c2"):
        expect(node(name)).to_have_attribute("data-state", "done")
    expect(page.locator('#graph [data-cluster="sub"]')).to_have_attribute("data-state", "done")
    expect(page.locator("#run-summary")).to_contain_text("completed")
    # lanes: the nested run's, and two for the top-level run, whose branches overlapped
    expect(page.locator("#timeline .lane")).to_have_count(3)
    expect(page.locator("#timeline .lane .lane-label", has_text="∥2")).to_have_count(1)
    shot("parallel-done")

    # pause, then step into the subgraph and out of it, from the keyboard
    for name in ("left", "right", "sub/c2"):
        node(name).click()
        expect(node(name)).to_have_attribute("data-break-before", "false")
    page.locator("body").press("p")
    page.get_by_role("button", name="Start run").click()
    expect(stops).to_have_count(1)
    expect(stops).to_contain_text("pause before node sub")
    page.locator("body").press("s")
    expect(stops).to_contain_text("before node sub › c1")  # noqa: RUF001
    expect(node("sub/c1")).to_have_attribute("data-state", "held")
    page.locator("body").press("r")
    # out of the subgraph: the next point of the enclosing run
    expect(stops).to_contain_text("step before node fan")
    expect(node("sub/c2")).to_have_attribute("data-state", "done")
    expect(page.locator('#graph [data-cluster="sub"]')).to_have_attribute("data-state", "done")
    shot("stepped-out")
    page.locator("body").press("c")
    expect(stops).to_have_count(0)
    expect(page.locator("#run-summary")).to_contain_text("completed")
    assert not ui.errors, ui.errors
