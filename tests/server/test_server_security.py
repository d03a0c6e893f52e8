"""What the debug server refuses: every check of the guard, and sandbox escapes through it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import _server_required  # noqa: F401  (skips the module without the server extra)
import httpx
import pytest

import flowdbg
from flowdbg.server import DebugServer, ServerError

sync_client = pytest.importorskip("websockets.sync.client")
ws_exceptions = pytest.importorskip("websockets.exceptions")


def _error(answer: httpx.Response) -> tuple[int, str]:
    return answer.status_code, answer.json()["error"]["type"]


def test_no_token_is_refused(server: Any) -> None:
    answer = httpx.get(f"{server.base_url}/status")
    assert _error(answer) == (401, "Unauthorized")
    assert "?token=TOKEN" in answer.json()["error"]["message"]
    assert answer.headers["www-authenticate"] == "Bearer"


def test_a_wrong_token_is_refused(server: Any) -> None:
    assert _error(httpx.get(f"{server.base_url}/status", params={"token": "x" * 43})) == (
        401,
        "Unauthorized",
    )
    last = "B" if server.token.endswith("A") else "A"  # one character off
    bearer = {"Authorization": "Bearer " + server.token[:-1] + last}
    assert _error(httpx.get(f"{server.base_url}/status", headers=bearer))[0] == 401


def test_the_token_works_in_the_printed_url_and_as_a_bearer(server: Any) -> None:
    assert server.url.startswith("http://127.0.0.1:") and f"token={server.token}" in server.url
    assert httpx.get(server.url).status_code == 200
    auth = {"Authorization": f"Bearer {server.token}"}
    assert httpx.get(f"{server.base_url}/status", headers=auth).status_code == 200


def test_a_foreign_host_header_is_refused(server: Any) -> None:
    # what a page on evil.example gets when its name resolves to 127.0.0.1 (DNS rebinding)
    headers = {"Host": f"evil.example:{server.port}"}
    answer = httpx.get(server.url, headers=headers)
    assert _error(answer) == (403, "Forbidden")
    assert "DNS rebinding" in answer.json()["error"]["message"]
    assert httpx.get(server.url, headers={"Host": f"localhost:{server.port}"}).status_code == 200


def test_a_foreign_origin_is_refused(server: Any) -> None:
    cross = httpx.get(server.url, headers={"Origin": "https://evil.example"})
    assert _error(cross) == (403, "Forbidden")
    assert _error(httpx.get(server.url, headers={"Origin": "null"}))[0] == 403
    own = httpx.get(server.url, headers={"Origin": f"http://127.0.0.1:{server.port}"})
    assert own.status_code == 200


def test_an_oversized_body_is_refused(client: Any) -> None:
    big = {"type": "before", "pattern": "a", "condition": "1" * (2 << 20)}
    answer = client.post("/breakpoints", json=big)
    assert _error(answer) == (413, "PayloadTooLarge")

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it comes
        yield b'{"type": "before", "pattern": "'
        for _ in range(40):
            yield b"a" * 65536
        yield b'"}'

    streamed = client.post(
        "/breakpoints", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert _error(streamed) == (413, "PayloadTooLarge")
    assert client.get("/breakpoints").json()["breakpoints"] == []


def _ws_url(server: Any, query: str) -> str:
    return server.base_url.replace("http://", "ws://") + "/events" + query


def test_a_websocket_without_the_token_is_refused(server: Any) -> None:
    with pytest.raises(ws_exceptions.InvalidStatus) as caught:
        sync_client.connect(_ws_url(server, ""), open_timeout=10)
    assert caught.value.response.status_code == 401
    assert json.loads(caught.value.response.body)["error"]["type"] == "Unauthorized"


def test_a_websocket_from_a_foreign_origin_is_refused(server: Any) -> None:
    with pytest.raises(ws_exceptions.InvalidStatus) as caught:
        sync_client.connect(
            _ws_url(server, f"?token={server.token}"),
            origin="https://evil.example",
            open_timeout=10,
        )
    assert caught.value.response.status_code == 403
    with sync_client.connect(
        _ws_url(server, f"?token={server.token}"),
        origin=f"http://127.0.0.1:{server.port}",
        open_timeout=10,
    ) as ws:
        assert json.loads(ws.recv(timeout=10))["type"] == "hello"


def test_a_non_loopback_bind_needs_a_token_of_ones_own() -> None:
    with flowdbg.Debugger(record=False) as dbg:
        with pytest.raises(ServerError, match="without a token"):
            DebugServer(dbg, host="0.0.0.0")
        with pytest.raises(ServerError, match="at least 16"):
            DebugServer(dbg, host="0.0.0.0", token="short")


def test_a_condition_escaping_the_sandbox_is_refused(client: Any) -> None:
    for condition in (
        "__import__('os').system('true')",
        "state.__class__.__mro__",
        "open('/etc/passwd').read()",
        "[c for c in ().__class__.__base__.__subclasses__()]",
    ):
        answer = client.post(
            "/breakpoints", json={"type": "before", "pattern": "a", "condition": condition}
        )
        assert _error(answer) == (400, "ExpressionError"), condition
    assert client.get("/breakpoints").json()["breakpoints"] == []


def test_a_logpoint_template_escaping_the_sandbox_is_refused(client: Any) -> None:
    for message in ("{state.__class__}", "{__import__}", "{0.__class__}"):
        answer = client.post(
            "/breakpoints", json={"type": "log", "pattern": "a", "message": message}
        )
        assert _error(answer) == (400, "ExpressionError"), message
    assert client.get("/breakpoints").json()["breakpoints"] == []


def test_expressions_and_edits_at_a_stop_run_no_code(client: Any) -> None:
    client.post("/breakpoints", json={"type": "before", "pattern": "a"})
    client.post("/runs", json={"input": {"n": 1}})
    stop = client.post("/wait", params={"timeout": 10}).json()["stop"]["id"]
    escape = client.post(
        f"/stops/{stop}/evaluate", json={"expression": "getattr(state, '__class__')"}
    )
    assert _error(escape) == (400, "ExpressionError")
    code = "__import__('os').system('echo pwned')"
    edited = client.post(f"/stops/{stop}/set", json={"path": "n", "value": code}).json()
    assert edited["input"]["n"] == code  # a string, never evaluated
    client.post("/terminate")


def test_a_client_over_its_rate_is_refused_and_the_others_go_on(dbg: flowdbg.Debugger) -> None:
    # a client may make one request in a burst, then one every 100 s
    with (
        dbg.serve(rate=0.01, total_rate=1000) as srv,
        httpx.Client(base_url=srv.base_url, params={"token": srv.token}) as greedy,
        httpx.Client(base_url=srv.base_url, params={"token": srv.token}) as other,
    ):
        codes = [greedy.get("/status").status_code for _ in range(3)]
        refused = greedy.get("/status")
        assert other.get("/status").status_code == 200  # its own budget
        assert other.get("/status").status_code == 429
    assert codes == [200, 429, 429]
    error = refused.json()["error"]
    assert error["type"] == "TooManyRequests"
    assert "more than 0.01 requests a second from this client (127.0.0.1:" in error["message"]
    assert "slow down and retry in" in error["message"]
    assert 1 <= int(refused.headers["retry-after"]) <= 100


def test_all_clients_together_meet_the_server_wide_rate(dbg: flowdbg.Debugger) -> None:
    # a request on a new connection each time is a new client: the server's limit holds it
    with dbg.serve(rate=1000, total_rate=0.01) as srv:
        codes = [httpx.get(srv.url).status_code for _ in range(3)]
        refused = httpx.get(srv.url)
    assert codes == [200, 429, 429]
    assert (
        "more than 0.01 requests a second to this server in all"
        in (refused.json()["error"]["message"])
    )


def test_a_rate_must_be_above_zero(dbg: flowdbg.Debugger) -> None:
    with pytest.raises(flowdbg.server.ServerError, match="rate must be requests a second"):
        dbg.serve(rate=0)


def test_a_name_of_ones_own_can_be_allowed(dbg: flowdbg.Debugger) -> None:
    with dbg.serve(allowed_hosts=("debugbox.local",)) as srv:
        named = httpx.get(srv.url, headers={"Host": f"debugbox.local:{srv.port}"})
        other_port = httpx.get(srv.url, headers={"Host": "debugbox.local:1"})
    assert named.status_code == 200
    assert _error(other_port) == (403, "Forbidden")


def test_a_closed_server_no_longer_answers(dbg: flowdbg.Debugger) -> None:
    server = dbg.serve()
    assert httpx.get(server.url).status_code == 200
    server.close()
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url, timeout=5)


def test_a_closed_server_stops_observing_the_debugger(dbg: flowdbg.Debugger) -> None:
    from server_helpers import build_counter

    app = dbg.attach(build_counter())
    server = dbg.serve()
    app.invoke({"n": 1})
    seen = server.service.journal.last_seq
    assert seen > 0
    server.close()
    app.invoke({"n": 1})
    assert server.service.journal.last_seq == seen


def test_a_port_in_use_is_a_clear_error(dbg: flowdbg.Debugger) -> None:
    with dbg.serve() as first, pytest.raises(ServerError, match="could not listen"):
        DebugServer(dbg, port=first.port).start()
