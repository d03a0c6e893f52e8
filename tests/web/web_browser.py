"""Fixtures and helpers of the browser tests: a real ``flowdbg ui`` on a free loopback port,
Debian's Chromium driven by Playwright, and a folder for the screenshots of each stage. (Not a
conftest.py: other test folders import their conftest by name, which a second one would shadow;
the test modules import these fixtures.)

Without Chromium or Playwright these tests skip, saying which is missing; with
``FLOWDBG_REQUIRE_BROWSER=1`` (the tox env ``web`` sets it) they fail instead, so that CI
cannot pass without running them. Screenshots go to ``$FLOWDBG_WEB_ARTIFACTS`` (default: the
test's temporary folder).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
URL = re.compile(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)")
#: seconds a test waits for anything the page should show
T = 20.0


def _missing() -> str | None:
    """What the browser tests lack here, or ``None``."""
    for name in ("fastapi", "uvicorn", "websockets", "httpx"):
        try:
            __import__(name)
        except ImportError:
            return f"{name} is not installed (pip install 'flowdbg[server]' httpx)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    if shutil.which("chromium") is None:
        return "no chromium on PATH (apt-get install chromium)"
    return None


def require_browser() -> None:
    """Skip the calling test without a browser, or fail under ``FLOWDBG_REQUIRE_BROWSER=1``."""
    why = _missing()
    if why is None:
        return
    if os.environ.get("FLOWDBG_REQUIRE_BROWSER") == "1":
        pytest.fail(f"the browser tests must run here (FLOWDBG_REQUIRE_BROWSER=1), but {why}")
    pytest.skip(f"browser tests need a browser: {why}")


@pytest.fixture(name="browser", scope="module")
def browser_fixture() -> Iterator[Any]:
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


@dataclass
class Served:
    """A running ``flowdbg ui`` and what it printed."""

    proc: subprocess.Popen[str]
    base: str
    token: str
    db: Path

    @property
    def url(self) -> str:
        return f"{self.base}/?token={self.token}"


def start_ui(tmp: Path, *args: str) -> Served:
    """``flowdbg ui ARGS --no-browser`` with its own database; returns once it printed its
    URL."""
    db = tmp / "web.db"
    env = {**os.environ, "FLOWDBG_DB": str(db), "PYTHONUNBUFFERED": "1"}
    env.pop("FLOWDBG_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "flowdbg.cli", "ui", *args, "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        found = URL.search(line)
        if found:
            return Served(proc, found.group(1), found.group(2), db)
    proc.wait(30)
    err = proc.stderr.read() if proc.stderr else ""
    raise AssertionError(f"flowdbg ui printed no URL: {lines} {err}")


@contextlib.contextmanager
def serving(tmp: Path, *args: str) -> Iterator[Served]:
    """``flowdbg ui ARGS`` (see :func:`start_ui`) while inside, stopped on the way out."""
    server = start_ui(tmp, *args)
    try:
        yield server
    finally:
        stop_ui(server)


def stop_ui(served: Served) -> None:
    served.proc.send_signal(signal.SIGINT)
    try:
        _, err = served.proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        served.proc.kill()
        _, err = served.proc.communicate()
    assert served.proc.returncode == 0, err


@pytest.fixture(name="artifacts")
def artifacts_fixture(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """Where this test's screenshots go: ``$FLOWDBG_WEB_ARTIFACTS/MODULE/TEST``."""
    base = os.environ.get("FLOWDBG_WEB_ARTIFACTS")
    if not base:
        return tmp_path
    folder = Path(base) / request.node.module.__name__ / request.node.name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Shots:
    """Numbered screenshots of one page."""

    def __init__(self, page: Any, folder: Path) -> None:
        self.page = page
        self.folder = folder
        self.count = 0

    def __call__(self, name: str) -> Path:
        self.count += 1
        path = self.folder / f"{self.count:02d}-{name}.png"
        self.page.screenshot(path=str(path))
        return path


def open_page(browser: Any, served: Served) -> tuple[Any, Any, list[str]]:
    """A 1280x800 page on the served URL, once its first data is shown; and the page's
    errors (console errors and uncaught exceptions) as they come."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    page.on(
        "console",
        lambda msg: errors.append(f"console: {msg.text}") if msg.type == "error" else None,
    )
    page.goto(served.url)
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    expect(page.locator("#conn")).to_have_text("live")
    return context, page, errors
