"""The debug server on loopback: stop-to-event latency, command round trip, event throughput.
Prints JSON.

    python bench/server.py [--stops 200] [--clients 10] [--steps 2000]

- ``stop_to_event_ms``: from the moment a branch stops (the debugger's ``flowdbg_on_stop``
  hook, timed in the run's thread) to the moment a WebSocket client has the ``stop`` event.
- ``round_trip_ms``: one ``GET /status`` on a kept-alive HTTP connection, and one
  ``POST /stops/{id}/continue`` (with the resume it causes).
- ``events_per_s``: a run of ``--steps`` steps streamed to ``--clients`` WebSocket clients:
  events each client received per second, and whether every client got every event once.
- ``journal_cost``: what serving adds to each step of a run (the journal's hooks run in the
  run's thread), with no client and with one client reading the stream.

Medians and the 10th-90th percentile range; budgets (issue 13): median stop-to-event and round
trip under 5 ms. Needs the server extra, httpx and websockets.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import connect

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph


def graph(steps: int) -> Any:
    g = StateGraph(name="bench")
    g.add_node("tick", lambda s: {"n": s["n"] + 1})
    g.set_entry_point("tick")
    g.add_conditional_edges("tick", lambda s: "tick" if s["n"] < steps else END)
    return g.compile()


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {
        "median": round(statistics.median(ordered) * 1000, 3),
        "p10": round(pick(0.1) * 1000, 3),
        "p90": round(pick(0.9) * 1000, 3),
    }


class StopClock:
    """Notes when each stop happened, in the run's thread."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    @flowdbg.hookimpl
    def flowdbg_on_stop(self, stop: Any) -> None:
        self.at[stop.id] = time.perf_counter()


def ws_url(server: Any, since: int | None = None) -> str:
    url = server.base_url.replace("http://", "ws://") + f"/events?token={server.token}"
    return url if since is None else f"{url}&since={since}"


def stop_latency(stops: int) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    clock = StopClock()
    with flowdbg.Debugger(record=False) as dbg:
        app = dbg.attach(graph(stops))
        dbg.break_before("tick")
        latencies: list[float] = []
        status_rt: list[float] = []
        resume_rt: list[float] = []
        with dbg.serve(rate=None) as server, connect(ws_url(server)) as ws:
            # registered after the server's journal, so called before it (pluggy calls the
            # newest first): the clock reads the time before the event is published
            dbg.register_plugin(clock)
            auth = {"Authorization": f"Bearer {server.token}"}
            with httpx.Client(base_url=server.base_url, headers=auth) as http:
                json.loads(ws.recv(timeout=10))  # hello
                handle = dbg.start(app.invoke, {"n": 0}, step_limit=stops * 2 + 10)
                for _ in range(stops):
                    while True:
                        event = json.loads(ws.recv(timeout=10))
                        if event["type"] == "stop":
                            latencies.append(time.perf_counter() - clock.at[event["data"]["id"]])
                            break
                    start = time.perf_counter()
                    http.get("/status")
                    status_rt.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    http.post(f"/stops/{event['data']['id']}/continue")
                    resume_rt.append(time.perf_counter() - start)
                dbg.clear()
                for stop in dbg.stops:
                    dbg.resume(stop.id)
                handle.result(30)
    return summary(latencies), summary(status_rt), summary(resume_rt)


def throughput(clients: int, steps: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, flowdbg.Debugger(db=Path(tmp) / "b.db") as dbg:
        app = dbg.attach(graph(steps))
        with dbg.serve(rate=None) as server:
            sockets = [connect(ws_url(server), max_queue=None).__enter__() for _ in range(clients)]
            for ws in sockets:
                json.loads(ws.recv(timeout=10))
            counts: list[list[int]] = [[] for _ in sockets]
            done = [threading.Event() for _ in sockets]
            finished: list[float] = [0.0] * clients

            def read(i: int) -> None:
                while True:
                    event = json.loads(sockets[i].recv(timeout=60))
                    counts[i].append(event["seq"])
                    if event["type"] == "run_end":
                        finished[i] = time.perf_counter()
                        done[i].set()
                        return

            readers = [threading.Thread(target=read, args=(i,)) for i in range(clients)]
            for t in readers:
                t.start()
            start = time.perf_counter()
            app.invoke({"n": 0}, step_limit=steps * 2 + 10)
            for event in done:
                event.wait(120)
            for ws in sockets:
                ws.close()
            per_client = [len(c) / max(1e-9, finished[i] - start) for i, c in enumerate(counts)]
            complete = all(
                c == list(range(c[0], c[0] + len(c))) and len(c) == steps + 2 for c in counts
            )
    return {
        "clients": clients,
        "events_per_client": steps + 2,
        "per_client_median": round(statistics.median(per_client)),
        "per_client_min": round(min(per_client)),
        "every_event_once": complete,
    }


def journal_cost(steps: int, rounds: int = 7) -> dict[str, Any]:
    """Microseconds a step costs the run more while it is served (the journal's hooks), with
    no client and with one client reading the stream; interleaved rounds, no recording."""
    with flowdbg.Debugger(record=False) as dbg:
        app = dbg.attach(graph(steps))
        limit = steps * 2 + 10
        plain: list[float] = []
        served: list[float] = []
        watched: list[float] = []
        app.invoke({"n": 0}, step_limit=limit)  # warm
        for _ in range(rounds):
            start = time.perf_counter()
            app.invoke({"n": 0}, step_limit=limit)
            plain.append(time.perf_counter() - start)
            with dbg.serve(rate=None) as server:
                start = time.perf_counter()
                app.invoke({"n": 0}, step_limit=limit)
                served.append(time.perf_counter() - start)
                with connect(ws_url(server), max_queue=None) as ws:
                    json.loads(ws.recv(timeout=10))
                    start = time.perf_counter()
                    app.invoke({"n": 0}, step_limit=limit)
                    watched.append(time.perf_counter() - start)
    base = statistics.median(plain)
    return {
        "steps": steps,
        "plain_us_per_step": round(base / steps * 1e6, 2),
        "served_us_per_step_added": round((statistics.median(served) - base) / steps * 1e6, 2),
        "one_client_us_per_step_added": round((statistics.median(watched) - base) / steps * 1e6, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stops", type=int, default=200)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    latency, status_rt, resume_rt = stop_latency(args.stops)
    result = {
        "benchmark": "server",
        "python": sys.version.split()[0],
        "stops": args.stops,
        "stop_to_event_ms": latency,
        "round_trip_ms": {"status": status_rt, "continue": resume_rt},
        "events_per_s": throughput(args.clients, args.steps),
        "journal_cost": journal_cost(args.steps),
        "budget_ms": 5,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
