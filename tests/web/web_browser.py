"""Helpers of the browser tests: a real ``flowdbg ui`` on a free loopback port (and
:func:`ui_fixture`, a module's fixture serving one), Debian's Chromium driven by Playwright, and
numbered screenshots of each stage. The fixtures every module shares (``browser``,
``artifacts``, ``open_ui``) are in this folder's conftest.py; names a test module imports are
here (a name imported from ``conftest`` would be looked up in whichever conftest.py pytest
imported first).

Without Chromium or Playwright these tests skip, saying which is missing; with
``FLOWDBG_REQUIRE_BROWSER=1`` (the tox env ``web`` sets it) they fail instead, so that CI
cannot pass without running them. Screenshots go to ``$FLOWDBG_WEB_ARTIFACTS`` (default: the
test's temporary folder).
"""

from __future__ import annotations

import contextlib
import importlib.util
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


def ui_fixture(*args: str, needs: str | None = None) -> Any:
    """A module-scoped fixture serving ``flowdbg ui ARGS`` (see :func:`serving`) for the
    module's tests, named as the module attribute it is assigned to: ``demo = ui_fixture()``.

    :param needs: a framework's import name: the tests skip, naming it, where it is missing.
    """

    @pytest.fixture(scope="module")
    def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
        require_browser()
        if needs is not None and importlib.util.find_spec(needs) is None:
            pytest.skip(f"{needs} is not installed here (its flowdbg extra)")
        with serving(tmp_path_factory.mktemp("ui"), *args) as server:
            yield server

    return served


def stop_ui(served: Served) -> None:
    served.proc.send_signal(signal.SIGINT)
    try:
        _, err = served.proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        served.proc.kill()
        _, err = served.proc.communicate()
    assert served.proc.returncode == 0, err


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
