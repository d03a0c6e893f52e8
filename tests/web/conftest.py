"""Fixtures of the browser tests: Debian's Chromium for a module's tests, a folder for each
test's screenshots, and ``open_ui``, which opens a page on a served ``flowdbg ui`` and closes it
after the test. (The helpers and the fixture factory :func:`web_browser.ui_fixture` are in
``web_browser``, which test modules import.)"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from web_browser import Served, Shots, T, open_page, require_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, for the module's tests."""
    require_browser()
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=T * 1000)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=shutil.which("chromium"))
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def artifacts(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """Where this test's screenshots go: ``$FLOWDBG_WEB_ARTIFACTS/MODULE/TEST``."""
    base = os.environ.get("FLOWDBG_WEB_ARTIFACTS")
    if not base:
        return tmp_path
    folder = Path(base) / request.node.module.__name__ / request.node.name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class Opened:
    """A page open on a served ``flowdbg ui``, once its first data is shown."""

    page: Any
    #: the page's console errors and uncaught exceptions, as they come
    errors: list[str]
    #: ``shot(name)`` saves the next numbered screenshot in the test's artifacts
    shot: Shots
    context: Any
    closed: bool = False

    def node(self, name: str) -> Any:
        """The graph's node ``name`` (its id: ``sub/c1`` inside the subgraph ``sub``)."""
        return self.page.locator(f'#graph [data-node="{name}"]')

    def close(self) -> None:
        """Close the page now (before its server stops, say); else after the test."""
        if not self.closed:
            self.closed = True
            self.context.close()


@pytest.fixture
def open_ui(browser: Any, artifacts: Path) -> Iterator[Callable[[Served], Opened]]:
    """``open_ui(served)``: a 1280x800 page on ``served`` (see :func:`web_browser.open_page`),
    closed after the test."""
    opened: list[Opened] = []

    def open_(served: Served) -> Opened:
        context, page, errors = open_page(browser, served)
        opened.append(Opened(page, errors, Shots(page, artifacts), context))
        return opened[-1]

    yield open_
    for each in opened:
        each.close()
