"""The web debugger on the demo graph, as a new user meets it: ``flowdbg ui`` with no target,
the page in a real headless Chromium, a breakpoint set by clicking a node, a stop, an edit that
changes the route, a step, continue, the record with its step slider, and the diff of two runs.
Each stage is saved as a screenshot."""

from __future__ import annotations

from typing import Any

from web_browser import Served, ui_fixture

served = ui_fixture()  # the demo graph


def test_debug_the_demo_graph_in_the_browser(open_ui: Any, served: Served) -> None:
    from playwright.sync_api import expect

    ui = open_ui(served)
    page, shot, node = ui.page, ui.shot, ui.node

    # the demo graph, laid out; the run form holds the demo's input
    for name in ("classify", "refund", "answer", "sign"):
        expect(node(name)).to_be_visible()
    expect(page.locator("#target")).to_contain_text("build_graph")
    expect(page.locator("#run-input")).to_have_value(
        '{"ticket":"My app crashes on start, I want my money back or a fix"}'
    )
    shot("graph")

    # shift+click: a breakpoint after classify, shown on the node and in the list
    node("classify").click(modifiers=["Shift"])
    expect(node("classify")).to_have_attribute("data-break-after", "true")
    expect(node("classify")).to_have_attribute("data-break-before", "false")
    expect(page.locator("#bp-count")).to_have_text("1")
    shot("breakpoint")

    # start a run: it stops after classify, which is held, with its output in the tree
    page.get_by_role("button", name="Start run").click()
    stop = page.locator("#stop-list li")
    expect(stop).to_have_count(1)
    expect(stop).to_contain_text("after node classify")
    expect(node("classify")).to_have_attribute("data-state", "held")
    expect(page.locator("#state")).to_have_text("stopped")
    # the timeline shows the unit held
    expect(page.locator("#timeline .block.held")).to_have_attribute("data-unit", "classify")
    intent = page.locator('#tree li[data-path="intent"] .val')
    expect(intent).to_have_text('"refund"')
    # what the unit changed is listed and highlighted
    expect(page.locator("#diff-list")).to_contain_text('+ intent = "refund"')
    expect(page.locator('#tree li[data-path="intent"] .row')).to_have_class("row changed")
    shot("stopped")

    # the other views read the stop too: state is the state before the unit
    page.locator('#view-tabs [data-view="state"]').click()
    expect(page.locator('#tree li[data-path="ticket"] .val')).to_contain_text("My app crashes")
    expect(page.locator("#edit-hint")).to_contain_text("Read-only here")
    expect(page.get_by_role("button", name="edit ticket")).to_have_count(0)
    page.locator('#view-tabs [data-view="output"]').click()

    # an expression evaluated at the stop, in the condition sandbox (which refuses imports)
    page.get_by_label("Evaluate").fill("output['confidence'] * 100")
    page.get_by_role("button", name="Evaluate", exact=True).click()
    expect(page.locator("#eval-result")).to_have_text("output['confidence'] * 100 = 62")
    page.get_by_label("Evaluate").fill("__import__('os')")
    page.get_by_role("button", name="Evaluate", exact=True).click()
    expect(page.locator("#eval-result")).to_contain_text("ExpressionError")

    # edit the output in place: the route changes from refund to answer
    page.get_by_role("button", name="edit intent").click()
    editor = page.get_by_role(
        "textbox", name="new value of intent (JSON; plain text is taken as a string)"
    )
    editor.fill('"question"')
    editor.press("Enter")
    expect(intent).to_have_text('"question"')
    shot("edited")

    # step over (F10): classify is done, the run holds before answer, not refund
    page.locator("body").press("F10")
    expect(stop).to_contain_text("before node answer")
    expect(node("answer")).to_have_attribute("data-state", "held")
    expect(node("classify")).to_have_attribute("data-state", "done")
    expect(node("refund")).to_have_attribute("data-state", "idle")
    expect(page.locator('#tree li[data-path="intent"] .val')).to_have_text('"question"')
    shot("stepped")

    # continue (c): the run completes; every node it ran is done, once
    page.locator("body").press("c")
    expect(page.locator("#stop-list li")).to_have_count(0)
    expect(page.locator("#run-summary")).to_contain_text("completed")
    for name in ("classify", "answer", "sign"):
        expect(node(name)).to_have_attribute("data-state", "done")
        expect(node(name).locator(".hits")).to_have_text("×1")  # noqa: RUF001
    expect(page.locator("#timeline .block")).to_have_count(3)
    expect(page.locator("#timeline .block.held")).to_have_count(0)
    expect(page.locator("#log")).to_contain_text("completed")
    shot("completed")

    # a second run without the breakpoint takes the refund route; a logpoint on sign, with a
    # condition, writes the reply to the run log
    node("classify").click(modifiers=["Shift"])
    expect(node("classify")).to_have_attribute("data-break-after", "false")
    page.get_by_role("tab", name="Breakpoints").click()
    pane = page.locator("#pane-breakpoints")
    pane.get_by_label("Where").select_option("log")
    pane.get_by_label("Name").fill("sign")
    pane.get_by_label("Condition").fill("state['escalated']")
    pane.get_by_label("Message").fill("signing: {state[reply]}")
    pane.get_by_role("button", name="Add breakpoint").click()
    expect(page.locator("#bp-list")).to_contain_text('logpoint sign "signing: {state[reply]}"')
    # a conditional breakpoint is set from the form too, and drawn as a ring
    pane.get_by_label("Where").select_option("before")
    pane.get_by_label("Name").fill("refund")
    pane.get_by_label("Hit").fill("2")
    pane.get_by_role("button", name="Add breakpoint").click()
    expect(page.locator("#bp-list")).to_contain_text("before refund (hit 2)")
    expect(node("refund").locator(".bp-before")).to_have_class("bp-before on cond")
    page.get_by_role("button", name="Start run").click()
    expect(node("refund")).to_have_attribute("data-state", "done")
    expect(page.locator("#run-summary")).to_contain_text("completed")
    expect(page.locator("#log .log-point")).to_have_count(1)
    expect(page.locator("#log .log-point")).to_contain_text(
        "signing: We have opened a refund for your order."
    )

    # the record: both runs, newest first
    page.get_by_role("tab", name="Record").click()
    rows = page.locator("#rec-runs tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("completed")
    # the first (edited) run: its steps, and the slider through them
    rows.nth(1).click()
    expect(page.locator("#rec-run-title")).to_contain_text("3 steps")
    expect(page.locator("#rec-steps")).to_contain_text("2. answer")
    slider = page.locator("#rec-slider")
    expect(page.locator("#rec-state")).to_have_attribute("data-step", "3")
    # a key's whole value, fetched by its path
    page.locator('#rec-state tr[data-key="reply"]').click()
    expect(page.locator("#rec-value-title")).to_have_text("reply after step 3")
    expect(page.locator("#rec-tree")).to_contain_text("Support team")
    shot("record-last-step")
    slider.focus()
    slider.press("Home")
    expect(page.locator("#rec-state")).to_have_attribute("data-step", "1")
    expect(page.locator("#rec-step-label")).to_contain_text("1 of 3: classify")
    # after step 1 the state holds the edited intent, and no reply yet
    expect(page.locator('#rec-state tr[data-key="intent"]')).to_contain_text("'question'")
    expect(page.locator('#rec-state tr[data-key="reply"]')).to_have_count(0)
    shot("record-step-1")
    slider.press("ArrowRight")
    expect(page.locator("#rec-state")).to_have_attribute("data-step", "2")
    expect(page.locator('#rec-state tr[data-key="reply"]')).to_contain_text("Here is how to fix it")
    # the value shown follows the slider: no signature before step 3
    expect(page.locator("#rec-value-title")).to_have_text("reply after step 2")
    expect(page.locator("#rec-tree")).not_to_contain_text("Support team")

    # the diff of the two runs: they part where the edit was made, at classify's intent;
    # then one ran answer and the other refund
    page.locator("#rec-a").select_option(index=1)
    page.locator("#rec-b").select_option(index=0)
    page.get_by_role("button", name="Diff").click()
    divergence = page.locator("#rec-diff .divergence")
    expect(divergence).to_contain_text("First divergence (state): step 1 classify")
    expect(divergence).to_contain_text("intent")
    table = page.locator("#rec-diff table tbody")
    expect(table.locator("tr", has_text="answer").locator("td").nth(1)).to_have_text("1")
    expect(table.locator("tr", has_text="answer").locator("td").nth(2)).to_have_text("0")
    expect(table.locator("tr", has_text="refund").locator("td").nth(1)).to_have_text("0")
    expect(table.locator("tr", has_text="refund").locator("td").nth(2)).to_have_text("1")
    shot("diff")

    # the breakpoints removed at once; then terminate a held run: it ends terminated, and the
    # record's filter finds it
    page.get_by_role("tab", name="Breakpoints").click()
    page.get_by_role("button", name="Remove all breakpoints").click()
    expect(page.locator("#bp-count")).to_have_text("0")
    expect(node("refund")).to_have_attribute("data-break-before", "false")
    node("answer").click()
    page.get_by_label("Input").fill('{"ticket": "How do I reset my password?"}')
    page.get_by_role("button", name="Start run").click()
    expect(page.locator("#stop-list li")).to_contain_text("before node answer")
    page.get_by_role("button", name="Terminate").click()
    expect(page.locator("#run-summary")).to_contain_text("terminated")
    expect(page.locator("#stop-list li")).to_have_count(0)
    page.get_by_role("tab", name="Record").click()
    expect(rows).to_have_count(3)
    page.get_by_label("Status").select_option("terminated")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("terminated")
    page.get_by_label("Started").select_option("3600")
    expect(rows).to_have_count(1)
    page.get_by_label("Adapter").select_option("langgraph")
    expect(rows).to_have_count(0)
    page.get_by_label("Adapter").select_option("stategraph")
    expect(rows).to_have_count(1)
    page.locator("#rec-name").fill("nothing*")
    page.get_by_role("button", name="Refresh").click()
    expect(rows).to_have_count(0)

    # the refused expression's answer (400) is the only failed request
    assert [e for e in ui.errors if "status of 400" not in e] == [], ui.errors
