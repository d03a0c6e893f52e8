"""The debug server's HTTP API, through a real server and a real HTTP client."""

from __future__ import annotations

import threading
from typing import Any

import _server_required  # noqa: F401  (skips the module without the server extra)
import pytest
from server_helpers import build_counter

import flowdbg
from flowdbg.errors import BreakpointError


def _wait_stop(client: Any) -> dict[str, Any]:
    body = client.post("/wait", params={"timeout": 10}).json()
    assert body["outcome"] == "stopped", body
    return body["stop"]


def test_info_names_the_protocol_and_the_target(client: Any) -> None:
    info = client.get("/").json()
    assert info["protocol"] == 1
    assert info["target"]["target"] == "counter.py:graph"
    assert info["target"]["adapter"] == "stategraph"
    assert [n["name"] for n in info["target"]["graph"]["nodes"]] == ["a", "b"]
    assert info["recording"] is True
    assert client.get("/").headers["flowdbg-protocol"] == "1"


def test_openapi_document_lists_the_routes(client: Any) -> None:
    doc = client.get("/openapi.json").json()
    paths = set(doc["paths"])
    for route in (
        "/breakpoints",
        "/breakpoints/{bp_id}",
        "/runs",
        "/wait",
        "/stops/{stop_id}/value",
        "/stops/{stop_id}/set",
        "/stops/{stop_id}/step_over",
        "/records/runs/{run_id}/steps",
    ):
        assert route in paths
    assert "BreakpointCreate" in doc["components"]["schemas"]
    events = doc["components"]["schemas"]["EventMessage"]
    assert "released" in events["properties"]["type"]["enum"]
    assert doc["x-flowdbg-events"]["path"] == "/events"


def test_breakpoints_crud(client: Any) -> None:
    made = client.post("/breakpoints", json={"type": "after", "pattern": "a"})
    assert made.status_code == 201
    bp = made.json()["breakpoint"]
    assert bp["positions"] == ["after"] and bp["pattern"] == "a"
    assert made.json()["warnings"] == []
    assert [b["id"] for b in client.get("/breakpoints").json()["breakpoints"]] == [bp["id"]]
    assert client.get(f"/breakpoints/{bp['id']}").json()["id"] == bp["id"]
    assert client.delete(f"/breakpoints/{bp['id']}").json()["id"] == bp["id"]
    assert client.get("/breakpoints").json()["breakpoints"] == []
    gone = client.get(f"/breakpoints/{bp['id']}")
    assert gone.status_code == 404
    assert gone.json()["error"]["type"] == "BreakpointNotFound"


def test_unknown_breakpoint_message_is_the_python_apis(client: Any, dbg: flowdbg.Debugger) -> None:
    with pytest.raises(BreakpointError) as caught:
        dbg.get_breakpoint("bp-99")
    answer = client.delete("/breakpoints/bp-99")
    assert answer.status_code == 404
    assert answer.json()["error"]["message"] == str(caught.value)


def test_a_name_matching_no_node_warns_or_with_strict_is_refused(client: Any) -> None:
    loose = client.post("/breakpoints", json={"type": "before", "pattern": "nope"}).json()
    assert "unknown node 'nope'" in loose["warnings"][0]
    strict = client.post("/breakpoints", json={"type": "before", "pattern": "nope", "strict": True})
    assert strict.status_code == 400
    assert strict.json()["error"]["type"] == "BreakpointError"


def test_a_warning_advises_the_requests_strict_field_not_the_python_keyword(
    client: Any,
) -> None:
    loose = client.post("/breakpoints", json={"type": "before", "pattern": "nope"}).json()
    (warning,) = loose["warnings"]
    assert "strict=True" not in warning
    assert '"strict": true' in warning
    refused = client.post(
        "/breakpoints", json={"type": "before", "pattern": "nope", "strict": True}
    )
    message = refused.json()["error"]["message"]
    assert "kind=" not in message and '"kind": ["tool"] or ["llm"]' in message


def test_the_target_tells_its_adapters_capabilities(client: Any) -> None:
    target = client.get("/target").json()
    adapters = {a["name"]: a for a in client.get("/adapters").json()["adapters"]}
    assert {"rewind", "fork", "cached_calls"} <= set(target["capabilities"])
    assert target["capabilities"] == adapters["stategraph"]["capabilities"]


def test_a_request_with_an_unknown_field_is_refused(client: Any) -> None:
    answer = client.post("/breakpoints", json={"type": "before", "pattern": "a", "nodee": "b"})
    assert answer.status_code == 422
    assert answer.json()["error"]["type"] == "InvalidRequest"
    assert "nodee" in answer.json()["error"]["message"]


def test_run_stop_edit_and_resume_changes_the_result(client: Any) -> None:
    client.post("/breakpoints", json={"type": "before", "pattern": "b"})
    started = client.post("/runs", json={"input": {"n": 1}}).json()
    stop = _wait_stop(client)
    assert stop["location"]["node"] == "b" and stop["reason"] == "breakpoint"
    assert stop["location"]["run_id"] == started["run_id"]
    value = client.get(f"/stops/{stop['id']}/value", params={"path": "n"}).json()
    assert value["value"] == 2
    edited = client.post(f"/stops/{stop['id']}/set", json={"path": "n", "value": 10}).json()
    assert edited["input"] == {"n": 10} and edited["edited"] is True
    assert client.post(f"/stops/{stop['id']}/continue").json()["action"] == "continue"
    assert client.post("/wait", params={"timeout": 10}).json()["outcome"] == "ended"
    run = client.get(f"/records/runs/{started['run_id']}").json()
    assert run["status"] == "completed" and run["output"] == {"n": 20}


def test_step_over_stops_at_the_next_node(client: Any) -> None:
    client.post("/breakpoints", json={"type": "before", "pattern": "a"})
    client.post("/runs", json={"input": {"n": 1}})
    first = _wait_stop(client)
    client.post(f"/stops/{first['id']}/step_over")
    second = _wait_stop(client)
    assert (second["location"]["node"], second["reason"]) == ("b", "step")
    client.post(f"/stops/{second['id']}/continue")


def test_evaluate_and_diff_at_an_after_stop(client: Any) -> None:
    client.post("/breakpoints", json={"type": "after", "pattern": "a"})
    client.post("/runs", json={"input": {"n": 4}})
    stop = _wait_stop(client)
    assert (
        client.post(f"/stops/{stop['id']}/evaluate", json={"expression": "state['n'] * 10"}).json()[
            "value"
        ]
        == 50
    )
    changes = client.get(f"/stops/{stop['id']}/diff").json()["changes"]
    assert changes == [{"path": "n", "kind": "changed", "old": 4, "new": 5}]
    client.post(f"/stops/{stop['id']}/continue")


def test_errors_are_typed_with_the_messages_of_the_python_api(client: Any) -> None:
    nothing = client.get("/stops/stop-9/value")
    assert nothing.status_code == 404 and nothing.json()["error"]["type"] == "StopNotFound"
    client.post("/breakpoints", json={"type": "before", "pattern": "a"})
    client.post("/runs", json={"input": {"n": 1}})
    stop = _wait_stop(client)["id"]
    before = client.get(f"/stops/{stop}/diff")
    assert before.status_code == 409 and before.json()["error"]["type"] == "NotStoppedError"
    refused = client.post(f"/stops/{stop}/set", json={"path": "state:n", "value": 3})
    assert refused.status_code == 409 and refused.json()["error"]["type"] == "EditRefused"
    nowhere = client.get(f"/stops/{stop}/value", params={"path": "missing.deeper"})
    assert nowhere.status_code == 400 and nowhere.json()["error"]["type"] == "PathError"
    client.post(f"/stops/{stop}/continue")


def test_a_stop_resumed_twice_says_it_has_resumed(client: Any) -> None:
    client.post("/breakpoints", json={"type": "before", "pattern": "a"})
    client.post("/runs", json={"input": {"n": 1}})
    stop = _wait_stop(client)["id"]
    results: list[int] = []
    barrier = threading.Barrier(2)

    def resume() -> None:
        barrier.wait(10)
        results.append(client.post(f"/stops/{stop}/continue").status_code)

    threads = [threading.Thread(target=resume) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results) == [200, 404]
    again = client.get(f"/stops/{stop}").json()["error"]
    assert "has already resumed (continue)" in again["message"]


def test_terminate_ends_a_held_run(client: Any) -> None:
    client.post("/breakpoints", json={"type": "before", "pattern": "b"})
    started = client.post("/runs", json={"input": {"n": 1}}).json()
    _wait_stop(client)
    assert client.post("/terminate").json()["runs"] == [started["run_id"]]
    waited = client.post("/wait", params={"timeout": 10}).json()
    assert (waited["outcome"], waited["run_id"], waited["error"]) == (
        "terminated",
        started["run_id"],
        None,
    )
    assert client.get("/status").json()["stops"] == []
    run = client.get(f"/records/runs/{started['run_id']}").json()
    assert run["status"] == "terminated"


def test_recorded_runs_and_steps_are_paginated(client: Any, dbg: flowdbg.Debugger) -> None:
    app = build_counter()
    dbg.attach(app)
    for n in range(3):
        app.invoke({"n": n})
    first = client.get("/records/runs", params={"limit": 2}).json()
    assert len(first["runs"]) == 2 and first["next_offset"] == 2
    rest = client.get("/records/runs", params={"offset": 2, "limit": 2}).json()
    assert len(rest["runs"]) == 1 and rest["next_offset"] is None
    by_adapter = client.get("/records/runs", params={"adapter": "stategraph"}).json()
    assert len(by_adapter["runs"]) == 3
    assert client.get("/records/runs", params={"adapter": "langgraph"}).json()["runs"] == []
    run_id = rest["runs"][0]["run_id"]  # the oldest: n = 0
    page = client.get(f"/records/runs/{run_id}/steps", params={"limit": 1}).json()
    assert [s["node"] for s in page["steps"]] == ["a"] and page["next_step"] == 2
    page2 = client.get(
        f"/records/runs/{run_id}/steps", params={"from_step": 2, "values": True}
    ).json()
    assert [(s["node"], s["output"]) for s in page2["steps"]] == [("b", {"n": 2})]
    assert page2["next_step"] is None
    state = client.get(f"/records/runs/{run_id}/state", params={"step": 1, "path": "n"}).json()
    assert state["value"] == 1 and state["keys"][0]["written_by"] == {"step": 1, "node": "a"}
    missing = client.get("/records/runs/ffffffff")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "RunNotFound"


def test_open_stops_and_breakpoints_are_paginated(client: Any, dbg: flowdbg.Debugger) -> None:
    for node in ("a", "b", "a"):  # three breakpoints; the runs stop at the first, before a
        client.post("/breakpoints", json={"type": "before", "pattern": node})
    for n in range(3):
        client.post("/runs", json={"input": {"n": n}})
    assert len(dbg.wait_for_stops(3, timeout=30)) == 3
    everything = client.get("/stops").json()
    assert len(everything["stops"]) == 3 and everything["next_offset"] is None
    assert everything["limit"] == 100  # the default: every stop of a usual session
    first = client.get("/stops", params={"limit": 2}).json()
    rest = client.get("/stops", params={"offset": first["next_offset"], "limit": 2}).json()
    assert (first["next_offset"], rest["offset"], rest["next_offset"]) == (2, 2, None)
    paged = [s["id"] for s in first["stops"] + rest["stops"]]
    assert paged == [s["id"] for s in everything["stops"]] == [s.id for s in dbg.stops]
    bps = client.get("/breakpoints", params={"limit": 2}).json()
    assert [b["pattern"] for b in bps["breakpoints"]] == ["a", "b"] and bps["next_offset"] == 2
    tail = client.get("/breakpoints", params={"offset": 2}).json()
    assert [b["pattern"] for b in tail["breakpoints"]] == ["a"] and tail["next_offset"] is None
    assert len(client.get("/breakpoints").json()["breakpoints"]) == 3
    for bad in ({"limit": 0}, {"limit": 501}, {"offset": -1}):
        refused = client.get("/stops", params=bad)
        assert refused.status_code == 422, bad
        assert refused.json()["error"]["type"] == "InvalidRequest"
    client.post("/terminate")


def test_a_server_without_target_cannot_start_runs(tmp_path: Any) -> None:
    import httpx

    with flowdbg.Debugger(record=False) as dbg, dbg.serve() as srv:
        answer = httpx.post(f"{srv.base_url}/runs", params={"token": srv.token}, json={})
        assert answer.status_code == 409
        assert answer.json()["error"]["type"] == "NoTarget"
        records = httpx.get(f"{srv.base_url}/records/runs", params={"token": srv.token})
        assert records.status_code == 409 and records.json()["error"]["type"] == "NoRecording"


def test_runs_started_in_process_are_seen_by_the_server(dbg: flowdbg.Debugger) -> None:
    import httpx

    app = dbg.attach(build_counter())
    dbg.break_after("b")
    with dbg.serve() as srv:
        handle = dbg.start(app.invoke, {"n": 3})
        auth = {"Authorization": f"Bearer {srv.token}"}
        with httpx.Client(base_url=srv.base_url, headers=auth) as c:
            stop = _wait_stop(c)
            assert stop["output"] == {"n": 8}
            c.post(f"/stops/{stop['id']}/set", json={"path": "n", "value": -1})
            c.post(f"/stops/{stop['id']}/continue")
        assert handle.result(10) == {"n": -1}


def test_two_recorded_runs_compared(client: Any, dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(build_counter())
    app.invoke({"n": 1})
    app.invoke({"n": 2})
    runs = client.get("/records/runs", params={"limit": 2}).json()["runs"]
    newer, older = runs[0]["run_id"], runs[1]["run_id"]
    diff = client.get("/records/diff", params={"a": older, "b": newer}).json()
    assert diff["first_divergence"]["kind"] == "state"
    assert diff["first_divergence"]["paths"] == ["n"]
    assert [n["node"] for n in diff["nodes"]] == ["a", "b"]
    missing = client.get("/records/diff", params={"a": older, "b": "ffffffff"})
    assert missing.status_code == 404


def test_parallel_branches_are_held_and_edited_by_stop_id(dbg: flowdbg.Debugger) -> None:
    import operator

    import httpx

    from flowdbg.adapters.stategraph import END, StateGraph

    g = StateGraph(name="fan", reducers={"items": operator.add})
    g.add_node("split", lambda s: {})
    g.add_node("left", lambda s: {"items": [s["left_tag"] + "-left"]})
    g.add_node("right", lambda s: {"items": [s["right_tag"] + "-right"]})
    g.set_entry_point("split")
    g.add_conditional_edges("split", lambda s: ["left", "right"])
    g.add_edge("left", END)
    g.add_edge("right", END)
    app = g.compile()
    with dbg.serve(target=app) as srv:
        auth = {"Authorization": f"Bearer {srv.token}"}
        with httpx.Client(base_url=srv.base_url, headers=auth, timeout=30) as c:
            c.post("/breakpoints", json={"type": "before", "pattern": "left"})
            c.post("/breakpoints", json={"type": "before", "pattern": "right"})
            given = {"left_tag": "t", "right_tag": "t", "items": []}
            run_id = c.post("/runs", json={"input": given}).json()["run_id"]
            assert len(dbg.wait_for_stops(2, timeout=30)) == 2
            stops = {s["location"]["node"]: s["id"] for s in c.get("/stops").json()["stops"]}
            assert set(stops) == {"left", "right"}
            # each branch's own key: a key both replaced would be refused by the graph
            c.post(f"/stops/{stops['left']}/set", json={"path": "left_tag", "value": "L"})
            c.post(f"/stops/{stops['right']}/set", json={"path": "right_tag", "value": "R"})
            for stop_id in stops.values():
                assert c.post(f"/stops/{stop_id}/continue").status_code == 200
            assert c.post("/wait", params={"timeout": 30}).json()["outcome"] == "ended"
            output = c.get(f"/records/runs/{run_id}").json()["output"]
    assert sorted(output["items"]) == ["L-left", "R-right"]


def test_a_run_that_fails_on_its_input_is_waited_for_as_failed(client: Any) -> None:
    started = client.post("/runs", json={"input": {"m": 1}})  # node a reads n
    assert started.status_code == 201
    waited = client.post("/wait", params={"timeout": 10}).json()
    assert waited["outcome"] == "failed" and waited["stop"] is None
    assert waited["run_id"] == started.json()["run_id"]
    assert waited["error"] == {"type": "KeyError", "message": "'n'"}
    run = client.get(f"/records/runs/{started.json()['run_id']}").json()
    assert run["status"] == "failed"
    assert run["error"]["type"] == "KeyError" and "'n'" in run["error"]["message"]


def test_wait_tells_how_the_last_run_ended(dbg: flowdbg.Debugger) -> None:
    import httpx

    from flowdbg.adapters.stategraph import END, StateGraph

    def charge(state: dict[str, Any]) -> dict[str, Any]:
        if state["amount"] < 0:
            raise ValueError(f"cannot charge {state['amount']} (api_key=sk-abcdef0123456789abcd)")
        return {"charged": state["amount"]}

    g = StateGraph(name="pay")
    g.add_node("charge", charge)
    g.set_entry_point("charge")
    g.add_edge("charge", END)
    with dbg.serve(target=g.compile()) as srv:
        auth = {"Authorization": f"Bearer {srv.token}"}
        with httpx.Client(base_url=srv.base_url, headers=auth, timeout=30) as c:
            assert c.post("/wait", params={"timeout": 0}).json() == {
                "stop": None,
                "outcome": "ended",  # nothing ran yet
                "run_id": None,
                "error": None,
            }
            bad = c.post("/runs", json={"input": {"amount": -5}}).json()["run_id"]
            failed = c.post("/wait", params={"timeout": 10}).json()
            assert (failed["outcome"], failed["run_id"]) == ("failed", bad)
            assert failed["error"]["type"] == "ValueError"
            assert failed["error"]["message"].startswith("cannot charge -5")
            assert "sk-abcdef" not in failed["error"]["message"]  # redacted like events
            # asked again, the answer stands until another run ends
            assert c.post("/wait", params={"timeout": 0}).json()["outcome"] == "failed"
            good = c.post("/runs", json={"input": {"amount": 5}}).json()["run_id"]
            ended = c.post("/wait", params={"timeout": 10}).json()
            assert (ended["outcome"], ended["run_id"], ended["error"]) == ("ended", good, None)
            c.post("/breakpoints", json={"type": "before", "pattern": "charge"})
            held = c.post("/runs", json={"input": {"amount": 1}}).json()["run_id"]
            stopped = c.post("/wait", params={"timeout": 10}).json()
            assert (stopped["outcome"], stopped["run_id"]) == ("stopped", held)
            assert c.post("/wait", params={"timeout": 0}).json()["outcome"] == "stopped"
            c.post("/terminate")
            gone = c.post("/wait", params={"timeout": 10}).json()
            assert (gone["outcome"], gone["run_id"]) == ("terminated", held)


def test_a_stop_resumed_in_process_is_reported_as_resumed(
    client: Any, dbg: flowdbg.Debugger
) -> None:
    client.post("/breakpoints", json={"type": "before", "pattern": "a"})
    client.post("/runs", json={"input": {"n": 1}})
    stop = _wait_stop(client)["id"]
    dbg.step_over(stop)  # the Python API, not the server
    gone = client.post(f"/stops/{stop}/set", json={"path": "n", "value": 3}).json()["error"]
    assert gone["type"] == "StopNotFound"
    assert f"stop {stop!r} has already resumed (step_over)" in gone["message"]
    client.post("/terminate")


def test_every_view_a_stop_lists_reads_by_its_name(dbg: flowdbg.Debugger) -> None:
    pytest.importorskip("agents", reason="the openai-agents extra is not installed")
    import httpx

    from flowdbg.adapters.openai_agents._demo import DEMO_INPUT, build_agent

    with (
        dbg.serve(target=build_agent(), target_name="demo") as srv,
        httpx.Client(
            base_url=srv.base_url, headers={"Authorization": f"Bearer {srv.token}"}, timeout=30
        ) as client,
    ):
        client.post("/breakpoints", json={"type": "before", "pattern": "*", "kind": ["llm"]})
        client.post("/runs", json={"input": DEMO_INPUT})
        stop = _wait_stop(client)
        assert stop["location"]["kind"] == "llm" and "args" in stop["views"]
        default = stop[stop["default_view"]]
        for view in [v for v in stop["views"] if v not in default]:
            answer = client.get(f"/stops/{stop['id']}/value", params={"path": view})
            assert answer.status_code == 200, (view, answer.json())
            whole = client.get(f"/stops/{stop['id']}/value", params={"path": f"{view}:"})
            assert answer.json()["value"] == whole.json()["value"]
        # a key of the default view keeps its meaning: the model's input has a key 'input'
        assert "input" in default
        key = client.get(f"/stops/{stop['id']}/value", params={"path": "input"}).json()
        assert key["value"] == stop["input"]["input"]
        dbg.terminate()


def test_a_refused_config_or_input_names_the_request_field(dbg: flowdbg.Debugger) -> None:
    pytest.importorskip("workflows", reason="the llamaindex extra is not installed")
    import httpx
    from workflows import Workflow, step
    from workflows.events import StartEvent, StopEvent

    class Echo(Workflow):
        @step
        async def echo(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result=ev.get("x"))

    with dbg.serve(target=Echo(timeout=10)) as srv:
        auth = {"Authorization": f"Bearer {srv.token}"}
        with httpx.Client(base_url=srv.base_url, headers=auth, timeout=30) as c:
            config = c.post("/runs", json={"input": {"x": 1}, "config": {"a": 1}})
            wrong = c.post("/runs", json={"input": 3})
    assert config.status_code == wrong.status_code == 400
    # a request has fields config and input; --config and --input are flowdbg run's options
    assert config.json()["error"] == {
        "type": "RunOptionError",
        "status": 400,
        "message": "config: a LlamaIndex workflow takes no config besides its start event; put "
        "the values in input",
    }
    message = wrong.json()["error"]["message"]
    assert message.startswith("input: a LlamaIndex workflow starts from keyword arguments")
    assert "--" not in config.json()["error"]["message"] + message


def test_target_shows_the_config_of_a_run_started_without_one(server: Any, client: Any) -> None:
    assert client.get("/target").json()["default_config"] is None  # served without --config
    # as flowdbg serve --config sets it
    server.service.default_config = {"context": {"user": "ann", "api_key": "sk-0123456789abcdef"}}
    shown = client.get("/target").json()["default_config"]
    assert shown == {"context": {"user": "ann", "api_key": "[REDACTED]"}}  # as it is recorded
    assert client.get("/").json()["target"]["default_config"] == shown
    assert server.service.default_config["context"]["api_key"] == "sk-0123456789abcdef"
