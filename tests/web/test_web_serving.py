"""The page as the server serves it, without a browser: only with the token, with a strict
Content-Security-Policy, from the installed package; ``GET /`` sends browsers to it and keeps
answering JSON to API clients; the protocol's additions the page reads (``example_input``, the
``step`` event's path, branch and times)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph

for _name in ("fastapi", "uvicorn", "websockets", "httpx"):
    pytest.importorskip(_name)

import httpx  # noqa: E402  (after the skip: the server extra may be missing)
from websockets.sync.client import connect  # noqa: E402

from flowdbg.server._web import asset_names  # noqa: E402

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def build_graph() -> Any:
    g = StateGraph(name="pair")
    g.add_node("a", lambda s: {"n": s["n"] + 1})
    g.add_node("b", lambda s: {"n": s["n"] * 2})
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile()


@pytest.fixture
def server(tmp_path: Any) -> Iterator[Any]:
    with (
        flowdbg.Debugger(db=tmp_path / "flowdbg.db") as dbg,
        dbg.serve(target=build_graph(), example_input={"n": 1}) as srv,
    ):
        yield srv


def test_the_package_ships_the_page_and_the_vendored_library() -> None:
    names = set(asset_names())
    assert {"index.html", "app.js", "app.css", "graph.js", "tree.js"} <= names
    assert {"vendor/dagre.esm.js", "vendor/dagre.LICENSE.txt"} <= names


@pytest.mark.parametrize("name", ["", "index.html", "app.js", "vendor/dagre.esm.js"])
def test_the_page_and_its_files_need_the_token(server: Any, name: str) -> None:
    url = f"{server.base_url}/ui/{name}"
    refused = httpx.get(url)
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "Unauthorized"
    wrong = httpx.get(
        url, params={"token": server.token[:-1] + ("A" if server.token[-1] != "A" else "B")}
    )
    assert wrong.status_code == 401
    ok = httpx.get(url, params={"token": server.token})
    assert ok.status_code == 200, ok.text
    assert ok.content


def test_every_file_of_the_page_is_served_with_a_strict_policy(server: Any) -> None:
    for name in ["", *asset_names()]:
        r = httpx.get(f"{server.base_url}/ui/{name}", params={"token": server.token})
        assert r.status_code == 200, name
        csp = r.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp, csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert r.headers["referrer-policy"] == "no-referrer"
        assert r.headers["x-content-type-options"] == "nosniff"
    js = httpx.get(f"{server.base_url}/ui/app.js", params={"token": server.token})
    assert js.headers["content-type"].startswith("text/javascript")


def test_the_page_passes_its_token_to_its_files(server: Any) -> None:
    page = httpx.get(f"{server.base_url}/ui/", params={"token": server.token}).text
    assert f"/ui/app.js?token={server.token}" in page
    assert "__FLOWDBG_TOKEN__" not in page
    # no inline script: the policy would block it
    assert "<script>" not in page and '<script type="module">' not in page
    # nothing loaded from elsewhere
    assert "http://" not in page and "https://" not in page


def test_only_the_pages_files_are_served(server: Any) -> None:
    for name in ["vendor.py", "vendor.json", "../_web.py", "%2e%2e/_web.py", "nothing.js"]:
        r = httpx.get(f"{server.base_url}/ui/{name}", params={"token": server.token})
        assert r.status_code == 404, name
        assert "_web" not in r.text or r.json()["error"]["type"] == "NotFound"


def test_get_root_sends_a_browser_to_the_page_and_answers_json_to_api_clients(
    server: Any,
) -> None:
    browser = httpx.get(server.url, headers={"Accept": BROWSER_ACCEPT})
    assert browser.status_code == 303
    assert browser.headers["location"] == f"/ui/?token={server.token}"
    api = httpx.get(server.url)
    assert api.status_code == 200
    assert api.json()["protocol"] == 1
    json_first = httpx.get(server.url, headers={"Accept": "application/json, text/html;q=0.5"})
    assert json_first.json()["protocol"] == 1
    # the redirect is behind the token too
    assert httpx.get(f"{server.base_url}/", headers={"Accept": BROWSER_ACCEPT}).status_code == 401


def test_the_target_offers_its_example_input(server: Any) -> None:
    target = httpx.get(f"{server.base_url}/target", params={"token": server.token}).json()
    assert target["example_input"] == {"n": 1}
    assert httpx.get(server.url).json()["target"]["example_input"] == {"n": 1}


def test_a_target_served_without_an_example_input_offers_none(tmp_path: Any) -> None:
    with flowdbg.Debugger(record=False) as dbg, dbg.serve(target=build_graph()) as srv:
        target = httpx.get(f"{srv.base_url}/target", params={"token": srv.token}).json()
    assert target["example_input"] is None


def test_step_events_say_where_and_when_the_unit_ran(server: Any) -> None:
    ws_url = server.base_url.replace("http", "ws", 1) + f"/events?token={server.token}"
    with connect(ws_url, open_timeout=10) as ws:
        assert json.loads(ws.recv(timeout=10))["type"] == "hello"
        httpx.post(
            f"{server.base_url}/runs", params={"token": server.token}, json={"input": {"n": 1}}
        )
        steps = []
        while len(steps) < 2:
            event = json.loads(ws.recv(timeout=10))
            if event["type"] == "step":
                steps.append(event["data"])
    assert [s["node"] for s in steps] == ["a", "b"]
    for s in steps:
        assert s["path"] == [] and s["parent_run_id"] is None
        assert s["branch"] and s["status"] == "completed"
        assert s["started_at"] <= s["ended_at"]
    assert steps[0]["ended_at"] <= steps[1]["started_at"]


def test_recorded_runs_are_filtered_by_when_they_started(server: Any) -> None:
    import time

    token = {"token": server.token}
    before = time.time()
    run = httpx.post(f"{server.base_url}/runs", params=token, json={"input": {"n": 1}}).json()
    wait = httpx.post(f"{server.base_url}/wait", params={**token, "timeout": 10}, timeout=20)
    assert wait.json()["outcome"] == "ended"

    def listed(**bounds: float) -> list[str]:
        answer = httpx.get(f"{server.base_url}/records/runs", params={**token, **bounds})
        assert answer.status_code == 200, answer.text
        return [r["run_id"] for r in answer.json()["runs"]]

    assert listed() == [run["run_id"]]
    assert listed(since=before - 60) == [run["run_id"]]
    assert listed(since=time.time() + 60) == []
    assert listed(until=before - 60) == []
    assert listed(since=before - 60, until=time.time() + 60) == [run["run_id"]]
