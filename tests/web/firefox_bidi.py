"""A small WebDriver BiDi client for Debian's Firefox (``firefox-esr``): Playwright drives only
its own Firefox build, which cannot be downloaded here, while Firefox itself speaks WebDriver
BiDi on ``--remote-debugging-port``. Enough to open a page, run script in it and wait."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Any

FIREFOX = ("firefox-esr", "firefox")


def firefox_path() -> str | None:
    """Firefox on PATH, or ``None``."""
    for name in FIREFOX:
        found = shutil.which(name)
        if found:
            return found
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Firefox:
    """A headless Firefox with one tab, driven over WebDriver BiDi."""

    def __init__(self, timeout: float = 30.0) -> None:
        from websockets.sync.client import connect

        path = firefox_path()
        assert path is not None, "no firefox-esr on PATH"
        self._profile = tempfile.TemporaryDirectory(prefix="flowdbg-firefox-")
        port = _free_port()
        args = [path, "--headless", "--remote-debugging-port", str(port)]
        self._proc = subprocess.Popen(
            [*args, "--profile", self._profile.name, "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._ids = 0
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._ws = connect(f"ws://127.0.0.1:{port}/session", open_timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or self._proc.poll() is not None:
                    self.close()
                    raise AssertionError("Firefox did not open its WebDriver BiDi port") from None
                time.sleep(0.2)
        self.call("session.new", {"capabilities": {}})
        tree = self.call("browsingContext.getTree", {})
        self.context = tree["contexts"][0]["context"]
        self.call("browsingContext.setViewport", {
            "context": self.context,
            "viewport": {"width": 1280, "height": 800},
        })  # fmt: skip

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """Send a command; its result (events in between are passed over)."""
        self._ids += 1
        ident = self._ids
        self._ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv(timeout=30))
            if message.get("id") != ident:
                continue
            if message.get("type") == "error":
                raise AssertionError(f"{method}: {message.get('error')}: {message.get('message')}")
            return message.get("result")

    def goto(self, url: str) -> None:
        params = {"context": self.context, "url": url, "wait": "complete"}
        self.call("browsingContext.navigate", params)

    def js(self, expression: str) -> Any:
        """The value of a script expression in the page (awaited; JSON values only)."""
        result = self.call("script.evaluate", {
            "expression": f"(async () => JSON.stringify(await ({expression})))()",
            "target": {"context": self.context},
            "awaitPromise": True,
        })  # fmt: skip
        if result.get("type") == "exception":
            raise AssertionError(f"{expression}: {result['exceptionDetails'].get('text')}")
        value = result["result"].get("value")
        return None if value is None else json.loads(value)

    def wait(self, expression: str, timeout: float = 20.0) -> Any:
        """Wait until ``expression`` is truthy in the page; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {timeout} s for {expression}; last: {value!r}")
            time.sleep(0.1)

    def screenshot(self, path: str) -> None:
        import base64

        data = self.call("browsingContext.captureScreenshot", {"context": self.context})["data"]
        with open(path, "wb") as file:
            file.write(base64.b64decode(data))

    def close(self) -> None:
        try:
            ws = getattr(self, "_ws", None)
            if ws is not None:
                try:
                    self.call("session.end", {})
                except Exception:
                    pass
                ws.close()
        finally:
            self._proc.terminate()
            try:
                self._proc.wait(15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(15)
            self._profile.cleanup()
