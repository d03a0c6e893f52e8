"""Time travel through the debug server: rewind at a stop, fork and rerun a recorded run, its
timeline and where a run made from another departs from it."""

from __future__ import annotations

from typing import Any

import _server_required  # noqa: F401  (skips the module without the server extra)


def _wait_stop(client: Any) -> dict[str, Any]:
    body = client.post("/wait", params={"timeout": 10}).json()
    assert body["outcome"] == "stopped", body
    return body["stop"]


def _ended(client: Any) -> None:
    assert client.post("/wait", params={"timeout": 10}).json()["outcome"] == "ended"


def test_rewind_at_a_stop_goes_on_from_an_earlier_step(client: Any) -> None:
    client.post("/breakpoints", json={"type": "before", "pattern": "b"})
    started = client.post("/runs", json={"input": {"n": 1}}).json()
    stop = _wait_stop(client)
    assert stop["location"]["step"] == 2
    refused = client.post(f"/stops/{stop['id']}/rewind", json={"step": 2})
    assert refused.status_code == 400
    assert "step 2 (node 'b') has not ended" in refused.json()["error"]["message"]
    assert client.get("/stops").json()["stops"][0]["id"] == stop["id"]  # still held

    done = client.post(f"/stops/{stop['id']}/rewind", json={"step": 0, "edits": {"n": 4}})
    assert done.status_code == 200, done.text
    assert done.json() == {"stop": stop["id"], "run_id": started["run_id"], "step": 0}
    again = _wait_stop(client)  # a ran again on the edited input, b holds in the new run
    assert again["location"]["run_id"] != started["run_id"]
    assert client.get(f"/stops/{again['id']}/value", params={"path": "n"}).json()["value"] == 5
    client.post(f"/stops/{again['id']}/continue")
    _ended(client)

    new = again["location"]["run_id"]
    assert client.get(f"/records/runs/{new}").json()["output"] == {"n": 10}
    old = client.get(f"/records/runs/{started['run_id']}").json()
    assert (old["status"], old["error"]["type"]) == ("terminated", "Rewound")
    tree = client.get(f"/records/runs/{started['run_id']}/timeline").json()
    assert [(m["run"]["run_id"], m["run"]["origin"]) for m in tree["made"]] == [(new, "rewind")]
    gone = client.post(f"/stops/{stop['id']}/rewind", json={"step": 0})
    assert gone.status_code == 404


def test_fork_and_rerun_a_recorded_run_and_see_where_they_depart(client: Any) -> None:
    started = client.post("/runs", json={"input": {"n": 1}}).json()
    _ended(client)
    source = started["run_id"]

    forked = client.post(f"/records/runs/{source}/fork", json={"step": 1, "edits": {"n": 7}})
    assert forked.status_code == 201, forked.text
    fork_id = forked.json()["run_id"]
    _ended(client)
    assert client.get(f"/records/runs/{fork_id}").json()["output"] == {"n": 14}
    report = client.get(f"/records/runs/{fork_id}/divergence").json()
    assert (report["origin"], report["from_step"], report["edited"]) == ("fork", 1, ["n"])
    first = report["first_divergence"]
    assert (first["kind"], first["step_a"], first["step_b"], first["paths"]) == (
        "state",
        2,
        1,
        ["n"],
    )
    assert (report["old"], report["new"]) == (4, 14)

    rerun = client.post(f"/records/runs/{source}/rerun", json={"cached_calls": "none"})
    assert rerun.status_code == 201, rerun.text
    rerun_id = rerun.json()["run_id"]
    _ended(client)
    same = client.get(f"/records/runs/{rerun_id}/divergence").json()
    assert same["origin"] == "rerun" and same["first_divergence"] is None

    tree = client.get(f"/records/runs/{source}/timeline").json()
    assert [m["run"]["origin"] for m in tree["made"]] == ["fork", "rerun"]
    alone = client.get(f"/records/runs/{source}/divergence")
    assert alone.status_code == 400
    assert "was not made from another run" in alone.json()["error"]["message"]
    bad = client.post(f"/records/runs/{source}/fork", json={"step": 9})
    assert bad.status_code == 400
    assert "has no step 9" in bad.json()["error"]["message"]


def test_a_fork_of_another_graphs_run_does_not_run_the_served_one(client: Any, dbg: Any) -> None:
    from flowdbg.adapters.stategraph import END, StateGraph

    other = StateGraph(name="other")
    other.add_node("big", lambda s: {"n": s["n"] * 100})
    other.set_entry_point("big")
    other.add_edge("big", END)
    app = dbg.attach(other.compile())
    run = dbg.start(app.invoke, {"n": 1})
    assert run.result(10) == {"n": 100}
    assert dbg.flush(10) and run.run_id is not None
    # the served target is 'counter', of the same framework: the fork must not run it; this
    # run recorded no reference to load its own graph from, so the fork is refused
    forked = client.post(f"/records/runs/{run.run_id}/fork", json={"step": 0})
    assert forked.status_code == 400, forked.text
    assert "recorded no target reference" in forked.json()["error"]["message"]
    assert client.get("/records/runs", params={"name": "counter"}).json()["runs"] == []
