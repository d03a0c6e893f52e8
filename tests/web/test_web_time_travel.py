"""Time travel in the web debugger on the demo graph: rewind a held run to an earlier step (and
a refused rewind), then, in the record, the runs made from a run, where one departs, and a fork
and a rerun started from the page."""

from __future__ import annotations

from typing import Any

from web_browser import Served, ui_fixture

served = ui_fixture()  # the demo graph
edited = ui_fixture()  # another server of it, with no breakpoint left by the test before


def test_rewind_fork_and_rerun_from_the_page(open_ui: Any, served: Served) -> None:
    from playwright.sync_api import expect

    ui = open_ui(served)
    page, shot, node = ui.page, ui.shot, ui.node
    stops = page.locator("#stop-list li")

    node("sign").click()  # break before sign
    expect(node("sign")).to_have_attribute("data-break-before", "true")
    page.get_by_role("button", name="Start run").click()
    expect(stops).to_have_count(1)
    expect(stops).to_contain_text("before node sign")
    first_run = page.locator("#stop-list li").get_attribute("data-stop")
    assert first_run is not None
    rewind = page.get_by_label("Rewind to the state after step")
    expect(rewind).to_have_value("2")  # the step before the held one

    # a step that has not ended is refused, and the stop stays
    rewind.fill("3")
    page.get_by_role("button", name="Rewind", exact=True).click()
    expect(page.locator("#stop-error")).to_contain_text("has not ended")
    expect(stops).to_have_count(1)
    shot("rewind-refused")

    # rewind to the state after classify: refund runs again, and sign holds in the new run
    rewind.fill("1")
    page.get_by_role("button", name="Rewind", exact=True).click()
    expect(page.locator("#log")).to_contain_text("to the state after step 1")
    expect(stops).to_have_count(1)
    expect(stops).to_contain_text("before node sign")
    expect(stops).not_to_have_attribute("data-stop", first_run)
    shot("rewound")
    page.locator("body").press("c")
    expect(stops).to_have_count(0)
    expect(page.locator("#run-summary")).to_contain_text("completed")

    # the record: the rewound run (terminated) lists the run that went on, which did not depart
    # from it (sign, cut off by the rewind, is not a difference)
    page.get_by_role("tab", name="Record").click()
    rows = page.locator("#rec-runs tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(1)).to_contain_text("terminated")
    rows.nth(1).click()
    made = page.locator("#rec-made-list li")
    expect(made).to_have_count(1)
    expect(made).to_contain_text("rewind")
    expect(made).to_contain_text("after step 1: completed")
    made.locator("button").first.click()
    expect(page.locator("#rec-divergence")).to_contain_text("did not depart")
    shot("made-from")

    # a fork after classify from the page: it holds at sign like any run, then completes
    slider = page.locator("#rec-slider")
    slider.focus()
    slider.press("Home")
    expect(page.locator("#rec-step-label")).to_contain_text("1 of")
    page.get_by_role("button", name="Fork after this step").click()
    expect(page.locator("#rec-travel-note")).to_contain_text("fork")
    expect(stops).to_have_count(1)  # the page shows the Stops tab at a stop
    page.locator("body").press("c")
    expect(stops).to_have_count(0)
    page.get_by_role("tab", name="Record").click()
    # a rerun too: the demo's model call is served from the record
    page.get_by_role("button", name="Rerun with recorded calls").click()
    expect(page.locator("#rec-travel-note")).to_contain_text("rerun")
    expect(stops).to_have_count(1)
    page.locator("body").press("c")
    expect(stops).to_have_count(0)
    page.get_by_role("tab", name="Record").click()
    expect(made).to_have_count(3)
    expect(page.locator("#rec-made-list")).to_contain_text("fork")
    expect(page.locator("#rec-made-list")).to_contain_text("rerun")
    made.filter(has_text="fork").locator("button").first.click()
    expect(page.locator("#rec-divergence")).to_contain_text("departs at its step")
    shot("fork-and-rerun")
    # the refused rewind is the only request that failed (the browser logs its 400)
    assert [e for e in ui.errors if "status of 400" not in e] == [], ui.errors


def test_rewind_and_fork_with_edits_from_the_page(open_ui: Any, edited: Served) -> None:
    from playwright.sync_api import expect

    ui = open_ui(edited)
    page, node = ui.page, ui.node
    stops = page.locator("#stop-list li")
    node("sign").click()  # break before sign
    expect(node("sign")).to_have_attribute("data-break-before", "true")
    page.get_by_role("button", name="Start run").click()
    expect(stops).to_contain_text("before node sign")
    expect(page.locator("#tree")).to_contain_text("opened a refund")  # the ticket asks for one

    # a line that is not PATH=VALUE is refused on the page: nothing is sent, the stop stays
    page.get_by_label("Rewind to the state after step").fill("1")
    edits = page.get_by_label("With edits", exact=True)
    edits.fill("intent")
    page.get_by_role("button", name="Rewind", exact=True).click()
    expect(page.locator("#stop-error")).to_contain_text("an edit is PATH=VALUE")
    expect(stops).to_have_count(1)

    # rewound to the state after classify with the intent edited: answer runs, not refund
    edits.fill('intent="question"\nconfidence=0.99')
    page.get_by_role("button", name="Rewind", exact=True).click()
    expect(page.locator("#log")).to_contain_text("with intent, confidence edited")
    expect(edits).to_have_value("")
    expect(stops).to_contain_text("before node sign")
    expect(page.locator("#tree")).to_contain_text("Here is how to fix it")
    expect(page.locator("#tree")).to_contain_text("0.99")
    ui.shot("rewound-with-edits")
    page.locator("body").press("c")
    expect(stops).to_have_count(0)

    # a fork of the run that went on (its step 1 is answer), with the reply edited
    page.get_by_role("tab", name="Record").click()
    rows = page.locator("#rec-runs tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("completed")
    rows.nth(0).click()
    expect(page.locator("#rec-step-label")).to_contain_text("2 of 2: sign")  # its steps shown
    slider = page.locator("#rec-slider")
    slider.focus()
    slider.press("Home")
    expect(page.locator("#rec-step-label")).to_contain_text("1 of")
    expect(page.locator("#rec-step-label")).to_contain_text("answer")
    page.get_by_label("Fork with edits").fill('reply = "We will refund you."')
    page.get_by_role("button", name="Fork after this step").click()
    expect(page.locator("#rec-travel-note")).to_contain_text("with reply edited")
    expect(stops).to_have_count(1)
    expect(page.locator("#tree")).to_contain_text("We will refund you.")
    ui.shot("forked-with-edits")
    page.locator("body").press("c")
    expect(stops).to_have_count(0)
    assert ui.errors == [], ui.errors
