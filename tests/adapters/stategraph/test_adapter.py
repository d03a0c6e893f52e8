"""The StateGraph adapter reports the right events: supersteps, branches, depth, decisions,
attempts, child runs; and it leaves graphs it is not attached to alone."""

from __future__ import annotations

import operator
import threading
from typing import Any

import anyio
import pytest

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph

T = 10.0


class Events:
    """An observer plugin collecting events and runs."""

    def __init__(self) -> None:
        self.events: list[flowdbg.Event] = []
        self.runs: list[flowdbg.RunInfo] = []
        self._lock = threading.Lock()

    @flowdbg.hookimpl
    def flowdbg_on_event(self, event: flowdbg.Event) -> None:
        with self._lock:
            self.events.append(event)

    @flowdbg.hookimpl
    def flowdbg_on_run_end(self, run: flowdbg.RunInfo) -> None:
        with self._lock:
            self.runs.append(run)

    def at(self, position: str) -> list[flowdbg.Location]:
        return [e.location for e in self.events if e.location.position == position]


def fan_graph() -> Any:
    g = StateGraph(reducers={"items": operator.add}, name="fan")
    g.add_node("fan", lambda s: {"n": 1})
    g.add_node("p1", lambda s: {"items": ["p1"]})
    g.add_node("p2", lambda s: {"items": ["p2"]})
    g.add_node("join", lambda s: {"total": len(s["items"])})
    g.set_entry_point("fan")
    g.add_conditional_edges("fan", lambda s: ["p1", "p2"])
    g.add_edge("p1", "join")
    g.add_edge("p2", "join")
    g.add_edge("join", END)
    return g.compile()


def nested_graph() -> Any:
    inner = StateGraph(name="inner")
    inner.add_node("inner1", lambda s: {"x": s["x"] * 10})
    inner.add_node("inner2", lambda s: {"z": s["x"] + 1})
    inner.set_entry_point("inner1")
    inner.add_edge("inner1", "inner2")
    inner.add_edge("inner2", END)
    outer = StateGraph(name="outer")
    outer.add_node("pre", lambda s: {"x": s["x"] + 1})
    outer.add_node("sub", inner.compile())
    outer.add_node("post", lambda s: {"done": True})
    outer.set_entry_point("pre")
    outer.add_edge("pre", "sub")
    outer.add_edge("sub", "post")
    outer.add_edge("post", END)
    return outer.compile()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_parallel_units_have_their_superstep_branch_and_decisions(mode: str) -> None:
    rec = Events()
    dbg = flowdbg.Debugger(plugins=[rec])
    app = dbg.attach(fan_graph())
    if mode == "sync":
        result = app.invoke({"items": []})
    else:
        result = anyio.run(app.ainvoke, {"items": []})
    assert result == {"items": ["p1", "p2"], "n": 1, "total": 2}
    before = {loc.node: loc for loc in rec.at("before")}
    assert {n: loc.superstep for n, loc in before.items()} == {
        "fan": 1,
        "p1": 2,
        "p2": 2,
        "join": 3,
    }
    assert before["p1"].branch != before["p2"].branch
    assert len({loc.step for loc in before.values()}) == 4  # one step index per unit
    assert all(loc.depth == 0 and loc.framework == "stategraph" for loc in before.values())
    decisions = {e.location.node: e.decision for e in rec.events if e.location.position == "after"}
    assert decisions["fan"] == ["p1", "p2"]
    assert decisions["p1"] == ["join"] and decisions["join"] == ["__end__"]
    after_fan = next(
        e for e in rec.events if e.location.node == "fan" and e.location.position == "after"
    )
    assert after_fan.output == {"n": 1} and after_fan.state["n"] == 1
    assert [r.status.value for r in rec.runs] == ["completed"]


def test_subgraph_is_a_child_run_one_level_deeper() -> None:
    rec = Events()
    dbg = flowdbg.Debugger(plugins=[rec])
    app = dbg.attach(nested_graph())
    assert app.invoke({"x": 1}) == {"x": 20, "z": 21, "done": True}
    before = {loc.node: loc for loc in rec.at("before")}
    assert before["inner1"].path == ("sub",) and before["inner1"].depth == 1
    assert before["sub"].path == () and before["post"].depth == 0
    assert before["inner1"].parent_run_id == before["sub"].run_id
    assert before["inner1"].run_id != before["sub"].run_id
    child, root = rec.runs
    assert child.name == "inner" and child.parent_run_id == root.run_id
    assert child.root_run_id == root.run_id and root.parent_run_id is None


def test_retry_attempts_are_reported() -> None:
    calls = {"n": 0}

    def flaky(state: dict[str, Any]) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] < 3:
            raise ConnectionError(f"flaky {calls['n']}")
        return {"ok": True}

    g = StateGraph(name="retry")
    g.add_node("flaky", flaky, retry=2)
    g.set_entry_point("flaky")
    g.add_edge("flaky", END)
    rec = Events()
    dbg = flowdbg.Debugger(plugins=[rec])
    app = dbg.attach(g.compile())
    assert app.invoke({}) == {"ok": True}
    trail = [(e.location.position, e.location.attempt) for e in rec.events]
    assert trail == [
        ("before", 1),
        ("error", 1),
        ("before", 2),
        ("error", 2),
        ("before", 3),
        ("after", 3),
    ]
    assert isinstance(rec.events[1].error, ConnectionError)


def test_exception_breakpoint_sees_each_attempt_and_terminate_stops_retries() -> None:
    g = StateGraph(name="always")
    g.add_node("bad", lambda s: 1 / 0, retry=5)
    g.set_entry_point("bad")
    g.add_edge("bad", END)
    dbg = flowdbg.Debugger()
    app = dbg.attach(g.compile())
    dbg.break_on_exception(ZeroDivisionError)
    run = dbg.start(app.invoke, {})
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.attempt == 1
    dbg.resume()
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.attempt == 2
    dbg.terminate()
    with pytest.raises(flowdbg.Terminated):
        run.result(T)


def test_edit_at_after_stop_changes_the_route() -> None:
    g = StateGraph(name="route")
    g.add_node("decide", lambda s: {"go": "left"})
    g.add_node("left", lambda s: {"side": "L"})
    g.add_node("right", lambda s: {"side": "R"})
    g.set_entry_point("decide")
    g.add_conditional_edges("decide", lambda s: s["go"])
    g.add_edge("left", END)
    g.add_edge("right", END)
    dbg = flowdbg.Debugger()
    app = dbg.attach(g.compile())
    dbg.break_after("decide")
    run = dbg.start(app.invoke, {})
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.decision == ["left"]
    dbg.set("go", "right")
    dbg.resume()
    assert run.result(T) == {"go": "right", "side": "R"}


def test_a_key_set_on_an_empty_update_makes_one() -> None:
    # the node returned None (no update); setting a key at its after stop writes one
    g = StateGraph(name="quiet")
    g.add_node("noop", lambda s: None)
    g.set_entry_point("noop")
    g.add_edge("noop", END)
    dbg = flowdbg.Debugger(record=False)
    app = dbg.attach(g.compile())
    dbg.break_after("noop")
    run = dbg.start(app.invoke, {"x": 1})
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.output is None
    dbg.set("y", 2)
    assert dbg.inspect("y", source="output") == 2
    dbg.resume()
    assert run.result(T) == {"x": 1, "y": 2}


def test_unattached_graph_is_unaffected_by_an_attached_one() -> None:
    dbg = flowdbg.Debugger()
    attached = dbg.attach(fan_graph())
    other = fan_graph()
    dbg.break_before("*")
    assert other.invoke({"items": []})["total"] == 2  # no stop: not attached
    assert dbg.stops == []
    run = dbg.start(attached.invoke, {"items": []})
    assert dbg.wait_for_stop(T) is not None
    dbg.terminate()
    with pytest.raises(flowdbg.Terminated):
        run.result(T)


def test_describe_through_the_debugger() -> None:
    dbg = flowdbg.Debugger()
    app = nested_graph()
    desc = dbg.describe(app)
    names = [n["name"] for n in desc["nodes"]]
    assert names == ["pre", "sub", "post"]
    sub = next(n for n in desc["nodes"] if n["name"] == "sub")
    assert [n["name"] for n in sub["subgraph"]["nodes"]] == ["inner1", "inner2"]
    assert {"source": "pre", "target": "sub"} in desc["edges"]


def test_own_event_loop_task_is_suspended_while_the_loop_runs() -> None:
    dbg = flowdbg.Debugger()
    app = dbg.attach(nested_graph())
    dbg.break_before("inner2")

    async def main() -> Any:
        results: dict[str, Any] = {}

        async def user_code() -> None:
            results["out"] = await app.ainvoke({"x": 1})

        async with anyio.create_task_group() as tg:
            tg.start_soon(user_code)
            stop = await dbg.wait_for_stop_async(T)
            assert stop is not None and stop.location.depth == 1
            assert dbg.inspect("x") == 20
            dbg.set("x", 3)
            dbg.resume()
        return results["out"]

    assert anyio.run(main) == {"x": 3, "z": 4, "done": True}  # the state kept the edit


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_own_event_loop_waits_for_a_task_started_after_an_earlier_run(backend: str) -> None:
    # An earlier run has ended and the new task has not started its run yet when the wait
    # begins: the wait must give it the chance to start instead of reporting "the run ended".
    dbg = flowdbg.Debugger(record=False)
    app = dbg.attach(nested_graph())

    async def main() -> Any:
        first = await app.ainvoke({"x": 1})
        dbg.break_before("post")
        results: dict[str, Any] = {}

        async def user_code() -> None:
            results["out"] = await app.ainvoke({"x": 1})

        async with anyio.create_task_group() as tg:
            tg.start_soon(user_code)
            stop = await dbg.wait_for_stop_async(T)
            assert stop is not None and stop.location.node == "post"
            dbg.resume()
            assert await dbg.wait_for_stop_async(T) is None  # the run ends: no more stops
        return first, results["out"]

    first, second = anyio.run(main, backend=backend)
    assert first == second == {"x": 20, "z": 21, "done": True}


def test_bound_invoke_taken_before_attach_is_still_debugged() -> None:
    app = nested_graph()
    invoke = app.invoke  # e.g. stored by the user's service at start-up
    dbg = flowdbg.Debugger()
    dbg.attach(app)
    dbg.break_before("post")
    run = dbg.start(invoke, {"x": 1})
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "post"
    dbg.resume()
    assert run.result(T) == {"x": 20, "z": 21, "done": True}
    dbg.detach(app)
    assert app.interceptor is None


def test_tools_outside_an_attached_run_are_plain_calls() -> None:
    from flowdbg.adapters.stategraph import Tool, tool

    @tool
    def add(a: int, b: int) -> int:
        return a + b

    dbg = flowdbg.Debugger()
    dbg.break_on_tool("*")
    assert add(a=1, b=2) == 3  # no run: nothing to stop
    assert Tool(lambda: "x", name="t")() == "x"
    assert dbg.stops == []


def test_tool_error_stops_at_the_error_point_of_the_call() -> None:
    from flowdbg.adapters.stategraph import Tool

    broken = Tool(lambda path: open(path).read(), name="read_file")  # noqa: SIM115

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        return {"text": broken(path="/nonexistent/flowdbg/file")}

    g = StateGraph(name="toolerr")
    g.add_node("agent", agent)
    g.set_entry_point("agent")
    g.add_edge("agent", END)
    dbg = flowdbg.Debugger()
    app = dbg.attach(g.compile())
    dbg.break_on_exception(FileNotFoundError)
    run = dbg.start(app.invoke, {})
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.kind == "tool"
    assert stop.location.node == "read_file" and stop.location.position == "error"
    assert stop.location.path == ("agent",)
    dbg.resume()
    stop = dbg.wait_for_stop(T)  # the same exception then leaves the node: its error point
    assert stop is not None and stop.location.node == "agent"
    dbg.resume()
    with pytest.raises(FileNotFoundError):
        run.result(T)


# -- edits of the state a node receives, kept by the run ---------------------------------------


def test_an_edit_at_a_before_stop_is_kept_where_the_node_does_not_write_it() -> None:
    g = StateGraph(name="keep")
    g.add_node("a", lambda s: {"n": s["n"] + 1})
    g.add_node("b", lambda s: {"out": s["user"] + "!"})
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    with flowdbg.Debugger(record=False) as dbg:
        app = dbg.attach(g.compile())
        dbg.break_before("a")
        dbg.break_after("a")
        run = dbg.start(app.invoke, {"n": 0, "user": "ann", "tmp": 1})
        stop = dbg.wait_for_stop(T)
        assert stop is not None
        dbg.set("user", "bob")  # a does not write user
        dbg.delete("tmp")
        assert stop.unit is not None and stop.unit.input_edits == ("user", "tmp")
        dbg.resume()
        after = dbg.wait_for_stop(T)
        assert after is not None and after.location.position == "after"
        assert after.state == {"n": 1, "user": "bob"}  # the after stop shows the kept edit
        dbg.resume()
        assert run.result(T) == {"n": 1, "user": "bob", "out": "bob!"}


def test_an_edit_beside_a_parallel_branch_is_merged_under_both_updates() -> None:
    with flowdbg.Debugger(record=False) as dbg:
        app = dbg.attach(fan_graph())
        dbg.break_before("p1")
        dbg.break_before("p2")
        run = dbg.start(app.invoke, {"items": []})
        stops = dbg.wait_for_stops(2, T)
        p1 = next(s for s in stops if s.location.node == "p1")
        dbg.set("items", ["z"], stop=p1.id)
        for stop in stops:
            dbg.resume(stop.id)
        assert run.result(T) == {"n": 1, "items": ["z", "p1", "p2"], "total": 3}


def test_a_retried_node_receives_the_edit_again() -> None:
    seen: list[int] = []

    def flaky(state: dict[str, Any]) -> dict[str, Any]:
        seen.append(state["x"])
        if len(seen) == 1:
            raise ConnectionError("flaky")
        return {"y": state["x"] + 1}

    g = StateGraph(name="retry")
    g.add_node("flaky", flaky, retry=1)
    g.set_entry_point("flaky")
    g.add_edge("flaky", END)
    with flowdbg.Debugger(record=False) as dbg:
        app = dbg.attach(g.compile())
        dbg.break_before("flaky", condition="attempt == 1")
        run = dbg.start(app.invoke, {"x": 1})
        assert dbg.wait_for_stop(T) is not None
        dbg.set("x", 5)
        dbg.resume()
        assert run.result(T) == {"x": 5, "y": 6}
    assert seen == [5, 5]  # the retry received the state the run kept


# -- terminate() cancels an awaiting unit --------------------------------------------------------


@pytest.mark.parametrize("parallel", [False, True])
def test_terminate_cancels_an_async_node_that_never_returns(parallel: bool) -> None:
    import asyncio
    import time

    cancelled: list[str] = []

    async def hang(state: dict[str, Any]) -> dict[str, Any]:
        try:
            await asyncio.sleep(1000)
        except asyncio.CancelledError:
            cancelled.append("hang")
            raise
        return {}

    g = StateGraph(name="hang")
    g.add_node("a", lambda s: {"x": 1})
    g.add_node("hang", hang)
    g.add_node("other", lambda s: {"y": 1})
    g.set_entry_point("a")
    g.add_conditional_edges("a", lambda s: ["hang", "other"] if parallel else ["hang"])
    g.add_edge("hang", END)
    with flowdbg.Debugger() as dbg:
        app = dbg.attach(g.compile())
        dbg.break_after("a")
        run = dbg.start(app.ainvoke, {})
        assert dbg.wait_for_stop(T) is not None
        dbg.resume()
        deadline = time.monotonic() + T
        while not any(u["node"] == "hang" for u in dbg.status().running):
            assert time.monotonic() < deadline, "hang never started"
            time.sleep(0.01)
        dbg.terminate()
        with pytest.raises(flowdbg.Terminated):
            run.result(T)
        assert cancelled == ["hang"]
        steps = {step.node: step.status for step in dbg.runs[-1].steps}
        assert steps["hang"] == "terminated"
        assert dbg.runs[-1].run.status == "terminated"
        assert dbg.flush(T)
        assert dbg.store.get_run(run.run_id).status == "terminated"


def test_edited_tool_arguments_are_checked_against_its_signature() -> None:
    from flowdbg.adapters.stategraph import tool

    @tool
    def shell(cmd: str, timeout: float = 5.0) -> str:
        return f"ran {cmd} within {timeout}"

    g = StateGraph(name="tools")
    g.add_node("agent", lambda s: {"ran": shell(cmd="rm -rf /tmp/cache")})
    g.set_entry_point("agent")
    g.add_edge("agent", END)
    with flowdbg.Debugger(record=False) as dbg:
        app = dbg.attach(g.compile())
        dbg.break_on_tool("shell")
        run = dbg.start(app.invoke, {})
        assert dbg.wait_for_stop(T) is not None
        with pytest.raises(
            flowdbg.EditRefused, match=r"takes no argument 'bogus'; .* cmd, timeout"
        ):
            dbg.set("bogus", 5)
        with pytest.raises(
            flowdbg.EditRefused, match=r"refuses these arguments: cmd: Input should"
        ):
            dbg.set("cmd", ["ls"])
        with pytest.raises(flowdbg.EditRefused, match=r"needs the argument 'cmd'"):
            dbg.delete("cmd")
        assert dbg.inspect("") == {"cmd": "rm -rf /tmp/cache"}  # refused edits change nothing
        dbg.set("timeout", 2)  # an int is a float (as Python passes it on)
        dbg.set("cmd", "ls")
        dbg.resume()
        assert run.result(T) == {"ran": "ran ls within 2"}


def test_terminate_at_a_tool_stop_inside_an_async_node_ends_it_by_the_stop() -> None:
    """The node is running (its tool call is held): terminate() ends the wait at the stop with
    Terminated rather than cancelling the node's task under it."""
    import asyncio

    from flowdbg.adapters.stategraph import tool

    @tool
    async def fetch(url: str) -> str:
        await asyncio.sleep(0)
        return f"got {url}"

    async def agent(state: dict[str, Any]) -> dict[str, Any]:
        return {"page": await fetch.ainvoke({"url": "https://example.org"})}

    g = StateGraph(name="fetching")
    g.add_node("agent", agent)
    g.set_entry_point("agent")
    g.add_edge("agent", END)
    with flowdbg.Debugger() as dbg:
        app = dbg.attach(g.compile())
        dbg.break_on_tool("fetch")
        run = dbg.start(app.ainvoke, {})
        stop = dbg.wait_for_stop(T)
        assert stop is not None and stop.location.kind == "tool"
        assert [u["node"] for u in dbg.status().running] == ["agent"]
        dbg.terminate()
        with pytest.raises(flowdbg.Terminated) as raised:
            run.result(T)
        assert not isinstance(raised.value.__cause__, asyncio.CancelledError)
        steps = {step.node: step.status for step in dbg.runs[-1].steps}
        assert steps == {"fetch": "terminated", "agent": "terminated"}
