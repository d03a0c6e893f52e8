"""The WebSocket event stream: order, sequence numbers, resuming, and slow clients."""

from __future__ import annotations

import json
from typing import Any

import _server_required  # noqa: F401  (skips the module without the server extra)
import pytest
from server_helpers import build_counter

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph
from flowdbg.server._events import EventJournal

sync_client = pytest.importorskip("websockets.sync.client")


def _ws(server: Any, since: int | None = None, **options: Any) -> Any:
    url = server.base_url.replace("http://", "ws://") + f"/events?token={server.token}"
    if since is not None:
        url += f"&since={since}"
    return sync_client.connect(url, open_timeout=10, **options)


def _read_until(ws: Any, kind: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    while True:
        event = json.loads(ws.recv(timeout=10))
        events.append(event)
        if event["type"] == kind:
            return event


def test_a_run_streams_its_events_in_order(server: Any, client: Any) -> None:
    client.post("/breakpoints", json={"type": "before", "pattern": "b"})
    with _ws(server) as ws:
        hello = json.loads(ws.recv(timeout=10))
        assert (hello["type"], hello["seq"], hello["protocol"]) == ("hello", 0, 1)
        run_id = client.post("/runs", json={"input": {"n": 1}}).json()["run_id"]
        events: list[dict[str, Any]] = []
        stop = _read_until(ws, "stop", events)
        assert stop["data"]["location"]["node"] == "b"
        assert stop["data"]["location"]["run_id"] == run_id
        client.post(f"/stops/{stop['data']['id']}/continue")
        _read_until(ws, "run_end", events)
    kinds = [(e["type"], e["data"].get("node")) for e in events]
    assert kinds == [
        ("run_start", None),
        ("step", "a"),
        ("stop", None),
        ("resume", None),
        ("step", "b"),
        ("run_end", None),
    ]
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert events[-1]["data"]["status"] == "completed"
    assert events[3]["data"] == {"stop": stop["data"]["id"], "action": "continue"}


def test_a_client_that_reconnects_misses_nothing(server: Any, client: Any) -> None:
    client.post("/breakpoints", json={"type": "before", "pattern": "b"})
    with _ws(server) as ws:
        json.loads(ws.recv(timeout=10))
        client.post("/runs", json={"input": {"n": 1}})
        seen: list[dict[str, Any]] = []
        stop = _read_until(ws, "stop", seen)
    # gone: the run goes on without it
    client.post(f"/stops/{stop['data']['id']}/continue")
    assert client.post("/wait", params={"timeout": 10}).json()["outcome"] == "ended"
    with _ws(server, since=stop["seq"]) as ws:
        json.loads(ws.recv(timeout=10))
        rest: list[dict[str, Any]] = []
        _read_until(ws, "run_end", rest)
    assert [e["type"] for e in rest] == ["resume", "step", "run_end"]
    assert rest[0]["seq"] == stop["seq"] + 1
    everything = seen + rest
    assert len({e["seq"] for e in everything}) == len(everything)


def test_logpoint_messages_are_streamed(server: Any, client: Any) -> None:
    client.post("/breakpoints", json={"type": "log", "pattern": "b", "message": "n is {state[n]}"})
    with _ws(server) as ws:
        json.loads(ws.recv(timeout=10))
        client.post("/runs", json={"input": {"n": 4}})
        log = _read_until(ws, "log", [])
    assert log["data"]["message"] == "n is 5"
    assert log["data"]["location"]["node"] == "b"


def test_a_client_that_does_not_read_never_holds_the_run(server: Any, dbg: Any) -> None:
    g = StateGraph(name="loop")
    g.add_node("tick", lambda s: {"n": s["n"] + 1})
    g.set_entry_point("tick")
    g.add_conditional_edges("tick", lambda s: "tick" if s["n"] < 1000 else END)
    app = dbg.attach(g.compile())
    # connected, never reads (past the client's small queue); closing does not wait long for
    # the server, whose sends wait for the client
    with _ws(server, max_queue=1, close_timeout=0.2):
        handle = dbg.start(app.invoke, {"n": 0}, step_limit=5000)
        assert handle.result(60)["n"] == 1000


def test_journal_reports_a_gap_when_a_client_fell_too_far_behind() -> None:
    journal = EventJournal(size=3)
    for i in range(5):
        journal.publish("step", {"i": i})
    items, first_kept = journal.since(1)
    assert [e["seq"] for e in items] == [3, 4, 5]
    assert first_kept == 3
    items, first_kept = journal.since(2)
    assert first_kept is None and [e["seq"] for e in items] == [3, 4, 5]
    assert journal.since(5) == ([], None)


def test_events_of_a_debugger_without_target(tmp_path: Any) -> None:
    with flowdbg.Debugger(record=False) as dbg, dbg.serve() as srv:
        app = dbg.attach(build_counter())
        with _ws(srv) as ws:
            json.loads(ws.recv(timeout=10))
            app.invoke({"n": 1})
            events: list[dict[str, Any]] = []
            _read_until(ws, "run_end", events)
        assert [e["type"] for e in events] == ["run_start", "step", "step", "run_end"]


def test_held_stops_are_released_when_the_last_client_goes(dbg: Any) -> None:
    app = dbg.attach(build_counter())
    dbg.break_before("b")
    with dbg.serve(grace=0.05) as srv:
        with _ws(srv) as ws:
            json.loads(ws.recv(timeout=10))
            handle = dbg.start(app.invoke, {"n": 1})
            _read_until(ws, "stop", [])
        # no client is left: after the grace period the branch goes on
        assert handle.result(10) == {"n": 4}
        with _ws(srv, since=0) as ws:
            released = _read_until(ws, "released", [])
    assert released["data"]["stops"] == ["stop-1"]
    assert "no client connected" in released["data"]["reason"]


def test_with_keep_held_stops_wait_for_a_client(dbg: Any) -> None:
    app = dbg.attach(build_counter())
    dbg.break_before("b")
    with dbg.serve(grace=0.0, on_disconnect="keep") as srv:
        with _ws(srv) as ws:
            json.loads(ws.recv(timeout=10))
            handle = dbg.start(app.invoke, {"n": 1})
            _read_until(ws, "stop", [])
        with pytest.raises(TimeoutError):
            handle.result(0.5)
        assert [s.id for s in dbg.stops] == ["stop-1"]
        dbg.resume()
        assert handle.result(10) == {"n": 4}
