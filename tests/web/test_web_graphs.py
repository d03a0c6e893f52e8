"""What the graph shows beyond nodes and edges: a LlamaIndex workflow run inside a step is a box
with its own steps and edges (each step's run count inside its node, clear of the box's title),
and an OpenAI agent's tools hang from it as nodes on which a click sets a tool breakpoint."""

from __future__ import annotations

import json
from typing import Any

from web_browser import Served, ui_fixture

nested = ui_fixture(
    "tests/web/web_more_targets.py:build_nested",
    "--input",
    json.dumps({"x": 2}),
    needs="workflows",
)
agents = ui_fixture(
    "flowdbg.adapters.openai_agents._demo:build_agent",
    "--input",
    json.dumps("Please refund order 1042, it arrived broken"),
    needs="agents",
)


def _inside(inner: dict[str, float], outer: dict[str, float]) -> bool:
    return (
        inner["x"] >= outer["x"]
        and inner["y"] >= outer["y"]
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"]
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"]
    )


def _apart(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def test_a_workflow_run_inside_a_step_is_drawn_with_its_edges(open_ui: Any, nested: Served) -> None:
    from playwright.sync_api import expect

    ui = open_ui(nested)
    page, shot, node = ui.page, ui.shot, ui.node
    edge = lambda a, b: page.locator(f'#graph [data-edge="{a}->{b}"]')  # noqa: E731
    box = page.locator('#graph [data-cluster="nested"]')
    expect(box).to_contain_text("nested: Inner")
    for name in ("double", "finish"):
        expect(node(f"nested/{name}")).to_be_visible()
    # the nested workflow's own flow, from its START to its END, inside the box
    expect(edge("nested/__start__", "nested/double")).to_have_count(1)
    expect(edge("nested/double", "nested/finish")).to_have_count(1)
    expect(edge("nested/finish", "nested/__end__")).to_have_count(1)
    # and the box in the outer flow
    expect(edge("__start__", "nested/__start__")).to_have_count(1)
    expect(edge("nested/__end__", "__end__")).to_have_count(1)
    # the box's title is painted over the edge entering the box, which does not cross it out
    painted_after = page.evaluate(
        """() => {
          const q = (css) => document.querySelector(css);
          const title = q('#graph [data-cluster="nested"] .cluster-label');
          const entering = q('#graph [data-edge="__start__->nested/__start__"]');
          const order = entering.compareDocumentPosition(title);
          return Boolean(order & Node.DOCUMENT_POSITION_FOLLOWING);
        }"""
    )
    assert painted_after

    page.get_by_role("button", name="Start run").click()
    expect(page.locator("#run-summary")).to_contain_text("completed")
    title = box.locator(".cluster-label").bounding_box()
    assert title is not None
    for name in ("double", "finish"):
        expect(node(f"nested/{name}")).to_have_attribute("data-state", "done")
        badge = node(f"nested/{name}").locator(".hits")
        expect(badge).to_have_text("×1")  # noqa: RUF001
        shown, body = badge.bounding_box(), node(f"nested/{name}").locator(".body").bounding_box()
        assert shown is not None and body is not None
        # the run count is inside its node: it covers neither the box's title nor a neighbour
        assert _inside(shown, body), (name, shown, body)
        assert _apart(shown, title), (name, shown, title)
    shot("nested-done")
    assert not ui.errors, ui.errors


def test_an_agents_tools_are_nodes_that_take_a_tool_breakpoint(
    open_ui: Any, agents: Served
) -> None:
    from playwright.sync_api import expect

    ui = open_ui(agents)
    page, shot = ui.page, ui.shot
    tool = page.locator('#graph [data-tool="refund"]')
    # the refunds agent's tool, attached to it
    expect(tool).to_have_attribute("data-node", "refunds/refund")
    expect(tool).to_contain_text("refund")
    expect(page.locator('#graph [data-edge="refunds->refunds/refund"]')).to_have_count(1)
    expect(page.locator('#graph [data-tool="refund"] .bp-before')).not_to_have_class("on")

    tool.click()  # a breakpoint on the tool's calls
    expect(tool).to_have_attribute("data-break-before", "true")
    page.get_by_role("tab", name="Breakpoints").click()
    expect(page.locator("#bp-list li")).to_have_count(1)
    expect(page.locator("#bp-list li")).to_contain_text("tool refund")
    page.get_by_role("button", name="Start run").click()
    stops = page.locator("#stop-list li")
    expect(stops).to_have_count(1)
    expect(stops).to_contain_text("before tool refunds › refund")  # noqa: RUF001
    expect(tool).to_have_attribute("data-state", "held")
    shot("tool-held")
    tool.click()  # removed again: the run goes on to its end
    expect(tool).to_have_attribute("data-break-before", "false")
    stops.first.get_by_role("button", name="Continue").click()
    expect(page.locator("#run-summary")).to_contain_text("completed")
    expect(tool).to_have_attribute("data-state", "done")
    expect(tool.locator(".hits")).to_have_text("×1")  # noqa: RUF001
    shot("tool-done")
    # the record: forks are offered (refused at the agent's own step, saying where a fork can
    # start: its handoff and its tool call), and reruns serving recorded calls
    page.get_by_role("tab", name="Record").click()
    rows = page.locator("#rec-runs tbody tr")
    expect(rows).to_have_count(1)
    rows.first.click()
    fork = page.get_by_role("button", name="Fork after this step")
    rerun = page.get_by_role("button", name="Rerun with recorded calls")
    expect(fork).to_be_enabled()
    slider = page.locator("#rec-slider")
    slider.focus()
    slider.press("Home")
    expect(page.locator("#rec-step-label")).to_contain_text("1 of")
    fork.click()
    note = page.locator("#rec-travel-note")
    expect(note).to_contain_text("is agent 'triage''s activation")
    expect(note).to_contain_text("it can be forked after steps 0, 3, 6")
    expect(page.locator("#rec-made-list li")).to_have_count(0)
    expect(rerun).to_be_enabled()
    rerun.click()  # no breakpoint left: it runs to its end, every model turn and call served
    expect(page.locator("#rec-travel-note")).to_contain_text("rerun")
    made = page.locator("#rec-made-list li")
    expect(made).to_have_count(1)
    expect(made).to_contain_text("rerun")
    expect(made).to_contain_text("completed, 4 served from the record")
    shot("rerun-served")
    # the refused fork is the only request that failed (the browser logs its 400)
    assert [e for e in ui.errors if "status of 400" not in e] == [], ui.errors
