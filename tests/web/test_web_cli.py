"""``flowdbg ui``: what it serves (the demo graph without a target, with the demo's input),
when it opens a browser on the page, and what it prints instead."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

for _name in ("fastapi", "uvicorn", "websockets", "httpx"):
    pytest.importorskip(_name)

import httpx  # noqa: E402  (after the skip: the server extra may be missing)
from click.testing import CliRunner  # noqa: E402

from flowdbg.cli import _serve, make_cli  # noqa: E402


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """What the browser was asked to open, with what the served page and target were then;
    the command returns at once instead of serving until Ctrl-C."""
    seen: list[dict[str, Any]] = []

    def open_browser(url: str) -> bool:
        page = httpx.get(url, headers={"Accept": "text/html"}, follow_redirects=True)
        target = httpx.get(url.replace("/?", "/target?"))
        seen.append({"url": url, "page": page.text, "target": target.json()})
        return True

    monkeypatch.setattr(_serve, "_open_browser", open_browser)

    @contextlib.contextmanager
    def at_once() -> Iterator[Callable[[float | None], bool]]:
        yield lambda timeout: True  # as if Ctrl-C came at once

    monkeypatch.setattr(_serve, "_interruptible", at_once)
    monkeypatch.setenv("FLOWDBG_DB", str(tmp_path / "ui.db"))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    return seen


def test_ui_without_a_target_opens_the_demo_graph_in_the_browser(
    opened: list[dict[str, Any]],
) -> None:
    result = CliRunner().invoke(make_cli(), ["ui"])
    assert result.exit_code == 0, result.output
    assert len(opened) == 1
    url = opened[0]["url"]
    assert f"flowdbg debug server for flowdbg.cli._demo:build_graph: {url}" in result.output
    assert '<script type="module" src="/ui/app.js?token=' in opened[0]["page"]
    target = opened[0]["target"]
    assert [n["name"] for n in target["graph"]["nodes"]] == ["classify", "refund", "answer", "sign"]
    assert target["example_input"]["ticket"].startswith("My app crashes")


def test_ui_serves_a_target_with_an_input_and_breakpoints(opened: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(
        make_cli(),
        ["ui", "examples/quickstart.py:build_graph()", "--input", '{"ticket": "hi"}', "-b", "sign"],
    )
    assert result.exit_code == 0, result.output
    assert opened[0]["target"]["example_input"] == {"ticket": "hi"}
    assert "set bp-1" in result.output


@pytest.mark.parametrize(
    ("args", "env", "reason"),
    [
        (["--no-browser"], {}, "--no-browser"),
        ([], {"CI": "true"}, "CI is set"),
        ([], {"DISPLAY": None}, "no display"),
    ],
)
def test_ui_prints_the_url_instead_of_opening_a_browser(
    opened: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str | None],
    reason: str,
) -> None:
    if reason == "no display" and not _serve.sys.platform.startswith("linux"):
        pytest.skip("a display is looked for on Linux and the BSDs only")
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("BROWSER", raising=False)
    result = CliRunner().invoke(make_cli(), ["ui", *args])
    assert result.exit_code == 0, result.output
    assert opened == []
    assert f"in a browser ({reason})" in result.output
    assert "open http://127.0.0.1:" in result.output


def test_ui_refuses_an_input_that_is_not_json(opened: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(make_cli(), ["ui", "--input", "{nope"])
    assert result.exit_code == 2
    assert "--input" in result.output and "not JSON" in result.output
    assert opened == []
