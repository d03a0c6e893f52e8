"""The page's controls on targets other than the demo: a LlamaIndex workflow whose step runs on
two workers (its parallel units keep their timeline lanes once the run ends; a rewind to a step
that has not ended is refused; the diff never compares a run with itself), a refused
breakpoint's message (out of the toolbar's way, dismissible), and an OpenAI agent whose tool
reads the run's context, given in the run form's config (a rewind to its held step refused)."""

from __future__ import annotations

import json
from typing import Any

from web_browser import Served, ui_fixture

workers = ui_fixture("tests/web/web_more_targets.py:build_workers", needs="workflows")
greeter = ui_fixture(
    "tests/web/web_agent_target.py:build_greeter", "--input", json.dumps("hi"), needs="agents"
)


def _apart(a: dict[str, float] | None, b: dict[str, float] | None) -> bool:
    assert a is not None and b is not None
    return (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )


def _rewind_refused(page: Any, step: int, why: str, *, stops: int) -> None:
    """Rewind is offered; a rewind to ``step`` is refused saying ``why``; ``stops`` stay."""
    from playwright.sync_api import expect

    expect(page.locator("#rewind-go")).to_be_enabled()
    page.get_by_label("Rewind to the state after step").fill(str(step))
    page.get_by_role("button", name="Rewind", exact=True).click()
    expect(page.locator("#stop-error")).to_contain_text(why)
    expect(page.locator("#stop-list li")).to_have_count(stops)


def test_parallel_units_keep_their_lanes_and_time_travel_is_offered_as_the_adapter_can(
    open_ui: Any, workers: Served
) -> None:
    from playwright.sync_api import expect

    ui = open_ui(workers)
    page, shot = ui.page, ui.shot
    square = page.locator('#graph [data-node="square"]')
    square.click()
    expect(square).to_have_attribute("data-break-before", "true")
    page.get_by_role("button", name="Start run").click()
    stops = page.locator("#stop-list li")
    expect(stops).to_have_count(2)  # both workers held at once
    lanes = page.locator("#timeline .lane")
    expect(lanes).to_have_count(2)
    expect(lanes.nth(1)).to_contain_text("∥2")

    # the adapter rewinds: a step that has not ended (a held worker) is refused, and both
    # stops stay
    _rewind_refused(page, 2, "has not ended", stops=2)
    shot("held-on-two-workers")

    # each worker resumed in turn; the run ends and both lanes still show what ran there
    stops.first.get_by_role("button", name="Continue").click()
    expect(stops).to_have_count(1)
    stops.first.get_by_role("button", name="Continue").click()
    expect(page.locator("#run-summary")).to_contain_text("completed")
    expect(lanes).to_have_count(2)
    expect(page.locator("#timeline .block.held")).to_have_count(0)
    for i in range(2):
        expect(lanes.nth(i).locator('.block[data-unit="square"]')).to_have_count(1)
    shot("lanes-after-the-run")

    # the record: Fork and Rerun offered (the adapter forks from a step's store and events);
    # one run cannot be diffed
    page.get_by_role("tab", name="Record").click()
    rows = page.locator("#rec-runs tbody tr")
    expect(rows).to_have_count(1)
    rows.first.click()
    fork = page.get_by_role("button", name="Fork after this step")
    rerun = page.get_by_role("button", name="Rerun with recorded calls")
    expect(fork).to_be_enabled()
    expect(rerun).to_be_enabled()
    diff = page.get_by_role("button", name="Diff")
    expect(diff).to_be_disabled()

    # a second run: the two selectors hold different runs, and keep doing so
    square.click()
    expect(square).to_have_attribute("data-break-before", "false")
    page.get_by_role("button", name="Start run").click()
    expect(page.locator("#run-summary")).to_contain_text("completed")
    page.get_by_role("tab", name="Record").click()
    expect(rows).to_have_count(2)
    a, b = page.locator("#rec-a"), page.locator("#rec-b")
    expect(diff).to_be_enabled()
    assert a.input_value() != b.input_value()
    first = a.input_value()
    b.select_option(first)  # B takes A's run: A moves to the other one
    expect(b).to_have_value(first)
    expect(a).not_to_have_value(first)
    a.select_option(first)  # and the other way round
    expect(b).not_to_have_value(first)
    diff.click()
    expect(page.locator("#rec-diff")).to_contain_text("divergence")
    shot("diff")

    # a refused breakpoint: its message covers no control and can be dismissed
    page.get_by_role("tab", name="Breakpoints").click()
    page.locator("#bp-node").fill("square")
    page.locator("#bp-condition").fill("__import__('os')")
    page.get_by_role("button", name="Add breakpoint").click()
    alert = page.get_by_role("alert").filter(has_text="import")
    expect(alert).to_be_visible()
    for control in ("#controls", "#run-form", ".tabs", "#bp-form"):
        assert _apart(alert.bounding_box(), page.locator(control).bounding_box()), control
    shot("refused")
    alert.get_by_role("button", name="Dismiss the message").click()
    expect(alert).to_be_hidden()
    # a name that matches no step: the warning advises what this page can do
    page.locator("#bp-condition").fill("")
    page.locator("#bp-node").fill("sqaure")
    page.get_by_role("button", name="Add breakpoint").click()
    warning = page.locator("#alert")
    expect(warning).to_contain_text("unknown node 'sqaure'")
    expect(warning).to_contain_text('pick "tool call" under Where')
    expect(warning).to_contain_text("remove it here if the name is wrong")
    expect(warning).not_to_contain_text("strict")
    expect(warning).not_to_contain_text("kind")
    # the refused breakpoint and rewind are the only requests that failed (the browser logs
    # their 400)
    assert [e for e in ui.errors if "status of 400" not in e] == [], ui.errors


def test_a_run_gets_the_config_given_in_the_form(open_ui: Any, greeter: Served) -> None:
    import httpx
    from playwright.sync_api import expect

    ui = open_ui(greeter)
    page, shot = ui.page, ui.shot
    config = page.get_by_label("Config")
    # not JSON: refused before any run starts, saying what to give
    config.fill('{"context": {"user": ')
    page.get_by_role("button", name="Start run").click()
    alert = page.locator("#alert")
    expect(alert).to_contain_text("the config is not JSON")
    expect(alert).to_contain_text('{"context": {"user": "ada"}}')
    expect(config).to_have_class("invalid")
    config.fill('["ada"]')
    page.get_by_role("button", name="Start run").click()
    expect(alert).to_contain_text("the config must be a JSON object")
    shot("config-refused")
    assert page.locator("#log li").count() == 0  # nothing ran

    # the run's context reaches the tool
    config.fill('{"context": {"user": "ada"}}')
    page.get_by_role("button", name="Start run").click()
    expect(page.locator("#run-summary")).to_contain_text("completed")
    expect(config).not_to_have_class("invalid")
    auth = {"Authorization": f"Bearer {greeter.token}"}
    (run,) = httpx.get(f"{greeter.base}/records/runs", headers=auth).json()["runs"]
    detail = httpx.get(f"{greeter.base}/records/runs/{run['run_id']}", headers=auth).json()
    assert "hello ada" in json.dumps(detail["output"]), detail["output"]
    shot("config-given")

    # held before the agent: a rewind to the held step is refused, saying why, and the
    # stop stays
    agent = page.locator('#graph [data-node="greeter"]')
    agent.click()
    expect(agent).to_have_attribute("data-break-before", "true")
    page.get_by_role("button", name="Start run").click()
    stops = page.locator("#stop-list li")
    expect(stops).to_have_count(1)
    _rewind_refused(page, 1, "step 1 (agent 'greeter') has not ended", stops=1)
    shot("rewind-refused")
    page.locator("body").press("c")
    expect(stops).to_have_count(0)
    # the refused rewind is the only request that failed (the browser logs its 400)
    assert [e for e in ui.errors if "status of 400" not in e] == [], ui.errors


demo = ui_fixture()  # the demo graph


def test_a_watch_stop_says_what_changed(open_ui: Any, demo: Served) -> None:
    """A watch set through the API (the page sets node and tool breakpoints): its stop, in the
    list, names the watched value before the unit and now."""
    import httpx
    from playwright.sync_api import expect

    auth = {"Authorization": f"Bearer {demo.token}"}
    made = httpx.post(
        f"{demo.base}/breakpoints", headers=auth, json={"type": "watch", "path": "intent"}
    )
    assert made.status_code == 201, made.text
    ui = open_ui(demo)
    page = ui.page
    page.get_by_role("button", name="Start run").click()
    stops = page.locator("#stop-list li")
    expect(stops).to_have_count(1)
    expect(stops).to_contain_text('watch intent: (missing) → "refund"')
    ui.shot("watch-stop")
    page.locator("body").press("c")
    expect(page.locator("#run-summary")).to_contain_text("completed")
    assert not ui.errors, ui.errors
