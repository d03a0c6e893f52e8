"""A large state in the browser: a 10 MB string and a list of 100,000 items at a stop are
shown cut and a page at a time, the page stays usable (an edit, a step), and the run ends."""

from __future__ import annotations

from typing import Any

from web_big_state import DOC_CHARS, ITEMS
from web_browser import Served, ui_fixture

served = ui_fixture("tests/web/web_big_state.py:build_big", "-b", "load:after", "--input", "{}")


def test_a_large_state_is_shown_lazily(open_ui: Any, served: Served) -> None:
    from playwright.sync_api import expect

    ui = open_ui(served)
    page, shot, node = ui.page, ui.shot, ui.node
    expect(node("load")).to_have_attribute("data-break-after", "true")

    page.get_by_role("button", name="Start run").click()
    expect(page.locator("#stop-list li")).to_contain_text("after node load")
    doc = page.locator('#tree li[data-path="doc"] .val')
    # the string is cut, saying how long it is; the list is summarized, not drawn
    expect(doc).to_contain_text(f"… ({DOC_CHARS + 2} chars)")
    assert len(doc.inner_text()) < 300
    items = page.locator('#tree li[data-path="items"]')
    expect(items.locator(".val")).to_have_text(f"[{ITEMS} items]")
    expect(items.locator("li")).to_have_count(0)
    # expanded, the list shows its first hundred items and a button for the next
    items.get_by_role("button", name="expand items").click()
    expect(items.locator("li[data-path]")).to_have_count(100)
    expect(items.locator('li[data-path="items[99]"] .val')).to_have_text("99")
    more = items.get_by_role("button", name=f"show 100 more of {ITEMS - 100}")
    more.click()
    expect(items.locator("li[data-path]")).to_have_count(200)
    expect(items.get_by_role("button", name=f"show 100 more of {ITEMS - 200}")).to_be_visible()
    shot("large-state")

    # the page still works: an edit of one item, then the run goes on and ends
    items.get_by_role("button", name="edit items[50]").click()
    editor = page.get_by_role(
        "textbox", name="new value of items[50] (JSON; plain text is taken as a string)"
    )
    editor.fill("-1")
    editor.press("Enter")
    expect(page.locator('#tree li[data-path="items"] .val').first).to_have_text(f"[{ITEMS} items]")
    page.get_by_role("button", name="Continue F8").click()
    expect(page.locator("#run-summary")).to_contain_text("completed")
    expect(node("count")).to_have_attribute("data-state", "done")

    # the record holds the edited item
    page.get_by_role("tab", name="Record").click()
    page.locator("#rec-runs tbody tr").first.click()
    expect(page.locator('#rec-state tr[data-key="n"]')).to_contain_text(str(ITEMS))
    page.locator('#rec-state tr[data-key="items"]').click()
    expect(page.locator('#rec-tree li[data-path="[50]"] .val')).to_have_text("-1")
    shot("large-record")
    assert not ui.errors, ui.errors
