"""Time travel in the web debugger on the demo graph: rewind a held run to an earlier step (and
a refused rewind), then, in the record, the runs made from a run, where one departs, and a fork
and a rerun started from the page."""

from __future__ import annotations

from typing import Any

from web_browser import Served, ui_fixture

served = ui_fixture()  # the demo graph


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
