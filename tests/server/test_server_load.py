"""Many runs held and released through the API by several WebSocket clients at once."""

from __future__ import annotations

import json
import threading
from typing import Any

import _server_required  # noqa: F401  (skips the module without the server extra)
import httpx
import pytest
from server_helpers import build_counter

import flowdbg

sync_client = pytest.importorskip("websockets.sync.client")

RUNS = 100
CLIENTS = 10


def _connect(server: Any, since: int | None = None) -> Any:
    url = server.base_url.replace("http://", "ws://") + f"/events?token={server.token}"
    if since is not None:
        url += f"&since={since}"
    # entered, as websockets 17 wants of a connection not opened in a with block (it warns
    # otherwise); closed by the client's own ws.close()
    return sync_client.connect(url, open_timeout=30, max_queue=None).__enter__()


def test_runs_held_and_released_by_many_clients_lose_no_event(dbg: flowdbg.Debugger) -> None:
    # the default rate limits: a few hundred requests within a second from 11 clients pass
    with dbg.serve(target=build_counter()) as server:
        _hold_and_release(server, dbg)


def _hold_and_release(server: Any, dbg: flowdbg.Debugger) -> None:
    auth = {"Authorization": f"Bearer {server.token}"}
    http = httpx.Client(base_url=server.base_url, headers=auth, timeout=60)
    http.post("/breakpoints", json={"type": "before", "pattern": "b"})
    seen: list[list[dict[str, Any]]] = [[] for _ in range(CLIENTS)]
    claimed: set[str] = set()
    claim_lock = threading.Lock()
    errors: list[BaseException] = []
    done = threading.Event()

    def client(i: int) -> None:
        """Read events; resume the stops it claims; every third client drops its connection
        twice on the way (a disconnect storm) and comes back with ?since=."""
        try:
            last = 0
            drops = 2 if i % 3 == 0 else 0
            ws = _connect(server, since=0)
            with httpx.Client(base_url=server.base_url, headers=auth, timeout=60) as mine:
                while True:
                    event = json.loads(ws.recv(timeout=60))
                    if event["type"] == "hello":
                        continue
                    seen[i].append(event)
                    last = event["seq"]
                    if event["type"] == "stop":
                        with claim_lock:
                            mine_to_resume = event["data"]["id"] not in claimed
                            claimed.add(event["data"]["id"])
                        if mine_to_resume:
                            answer = mine.post(f"/stops/{event['data']['id']}/continue")
                            assert answer.status_code == 200, answer.text
                    ends = sum(1 for e in seen[i] if e["type"] == "run_end")
                    if ends == RUNS:
                        ws.close()
                        return
                    if drops and len(seen[i]) in (RUNS, 2 * RUNS):
                        drops -= 1
                        ws.close()
                        ws = _connect(server, since=last)
        except BaseException as exc:
            errors.append(exc)
            done.set()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    # every client is connected (it reads from seq 0 anyway) when the runs start
    run_ids = [http.post("/runs", json={"input": {"n": k}}).json()["run_id"] for k in range(RUNS)]
    for t in threads:
        t.join(120)
    http.close()
    assert not errors, errors
    assert all(not t.is_alive() for t in threads)
    for events in seen:
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(1, len(seqs) + 1)), "a lost or repeated event"
        kinds = [e["type"] for e in events]
        assert kinds.count("stop") == RUNS and kinds.count("resume") == RUNS
        assert kinds.count("run_end") == RUNS
        assert {e["data"]["run_id"] for e in events if e["type"] == "run_end"} == set(run_ids)
    assert all(e["data"]["status"] == "completed" for e in seen[0] if e["type"] == "run_end")
    assert dbg.stops == []
