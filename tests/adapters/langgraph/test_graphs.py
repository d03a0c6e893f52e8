"""LangGraph's own constructs under the debugger: Send map-reduce, Command, subgraphs with a
state of their own, retries, pydantic/dataclass/MessagesState states, and edits at stops."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

import lg_helpers as lg
from langgraph.types import Command
from lg_helpers import T

import flowdbg

ITEMS = {"items": ["a", "b", "c"]}


def wait(dbg: flowdbg.Debugger, node: str, position: str = "before") -> flowdbg.Stop:
    stop = dbg.wait_for_stop(T)
    assert stop is not None, f"no stop at {position} {node!r}"
    assert (stop.location.node, stop.location.position) == (node, position)
    return stop


# -- Send --------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_send_fan_out_stops_every_branch_in_parallel(dbg: flowdbg.Debugger, how: str) -> None:
    expected = lg.map_reduce().invoke(ITEMS)
    assert expected == {"items": ["a", "b", "c"], "results": ["A", "B", "C"]}
    app = dbg.attach(lg.map_reduce())
    dbg.break_after("fan")
    dbg.break_before("work")
    run = dbg.start(getattr(app, how), ITEMS)
    stop = wait(dbg, "fan", "after")
    assert stop.decision == ["work", "work", "work"]  # one Send per item
    dbg.resume()

    first = dbg.wait_for_stop(T)
    assert first is not None and first.location.node == "work"
    stops = dbg.wait_for_stops(3, T)
    assert len(stops) == 3, "the three Send tasks are held at the same time"
    assert first in stops
    assert all(s.location.superstep == 2 for s in stops)
    assert len({s.location.branch for s in stops}) == 3
    assert len({s.location.step for s in stops}) == 3
    assert sorted(s.input["item"] for s in stops) == ["a", "b", "c"]  # each its own packet
    assert all(s.state == {"items": ["a", "b", "c"], "results": []} for s in stops)
    for stop in dbg.stops:
        dbg.resume(stop.id)
    assert run.result(T) == expected
    (log,) = dbg.runs
    works = [s for s in log.steps if s.node == "work"]
    assert len(works) == 3 and all(s.decision == ["__end__"] for s in works)


def test_edit_of_one_send_packet_changes_only_that_branch(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.map_reduce())
    dbg.break_before("work", condition="input['item'] == 'b'")
    run = dbg.start(app.invoke, ITEMS)
    stop = wait(dbg, "work")
    assert dbg.inspect("item", source="input") == dbg.inspect("item") == "b"
    with pytest.raises(flowdbg.PathError, match=r"^state has no key 'item'"):
        dbg.inspect("state:item")  # the packet is what the worker receives, not the state
    dbg.set("item", "zed")
    assert stop.input == {"item": "zed"} and dbg.inspect("item") == "zed"
    dbg.resume()
    assert run.result(T) == {"items": ["a", "b", "c"], "results": ["A", "ZED", "C"]}


def test_edit_at_the_fanning_node_replans_the_sends(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.map_reduce())
    dbg.break_after("fan")
    run = dbg.start(app.invoke, ITEMS)
    wait(dbg, "fan", "after")
    dbg.set("items", ["x", "y"])  # the fan's update now writes items: the router sees them
    dbg.resume()
    assert run.result(T) == {"items": ["x", "y"], "results": ["X", "Y"]}
    fan = dbg.runs[-1].steps[0]
    assert fan.node == "fan" and fan.decision == ["work", "work"]


# -- Command -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("x", "target"), [(1, "right"), (-1, "left")])
def test_command_goto_is_the_decision(dbg: flowdbg.Debugger, x: int, target: str) -> None:
    expected = lg.command().invoke({"x": x})
    app = dbg.attach(lg.command())
    dbg.break_after("decide")
    run = dbg.start(app.invoke, {"x": x})
    stop = wait(dbg, "decide", "after")
    assert stop.decision == [target]
    assert stop.output == Command(goto=target, update={"x": 2 * x})
    assert stop.state == {"x": 2 * x}  # the update applied
    dbg.resume()
    assert run.result(T) == expected == {"x": 2 * x, "side": target[0].upper()}
    assert [s.node for s in dbg.runs[-1].steps] == ["decide", target]


def test_editing_a_command_changes_route_and_update(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.command())
    dbg.break_after("decide")
    run = dbg.start(app.invoke, {"x": 1})
    wait(dbg, "decide", "after")
    dbg.set("goto", "left")
    dbg.set("update.x", 7)
    assert dbg.inspect("goto") == dbg.inspect("goto", source="output") == "left"
    with pytest.raises(flowdbg.PathError, match=r"^state has no key 'goto'"):
        dbg.inspect("state:goto")  # a Command's fields are not state keys
    dbg.resume()
    assert run.result(T) == {"x": 7, "side": "L"}
    decide, left = dbg.runs[-1].steps
    assert (decide.decision, left.node) == (["left"], "left")


def test_a_key_outside_the_schema_in_a_command_update_is_refused(dbg: flowdbg.Debugger) -> None:
    """LangGraph drops update keys that are not channels, in a Command's update as in a dict."""
    app = dbg.attach(lg.command())
    dbg.break_after("decide")
    run = dbg.start(app.invoke, {"x": 1})
    stop = wait(dbg, "decide", "after")
    try:
        with pytest.raises(flowdbg.EditRefused, match="'bogus'"):
            dbg.set("update.bogus", 5)
        assert stop.output == Command(goto="right", update={"x": 2})
    finally:
        dbg.resume()
        run.result(T)


def test_command_to_the_parent_graph_completes_the_subgraph_node(dbg: flowdbg.Debugger) -> None:
    """``Command(graph=Command.PARENT)`` is how a subgraph node finishes by routing its parent:
    the node and the subgraph node holding it completed, and the subgraph run did not fail."""
    expected = lg.parent_command().invoke({"x": 1})
    assert expected == {"x": 101, "side": "R"}
    app = dbg.attach(lg.parent_command())
    assert app.invoke({"x": 1}) == expected
    (log,) = dbg.runs
    (child,) = log.children
    assert [(s.node, s.status) for s in child.steps] == [("hop", "completed")]
    assert child.run.status == "completed", child.run.error
    assert [(s.node, s.status) for s in log.steps] == [("sub", "completed"), ("right", "completed")]


def test_break_after_a_node_commanding_the_parent_graph_stops(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.parent_command())
    dbg.break_after("hop")
    run = dbg.start(app.invoke, {"x": 1})
    stop = dbg.wait_for_stop(T)
    if stop is not None:
        dbg.resume()
    assert run.result(T) == {"x": 101, "side": "R"}
    assert stop is not None, "no after stop at 'hop'"
    assert stop.location.path == ("sub",)
    assert stop.output == Command(graph=Command.PARENT, goto="right", update={"x": 101})


# -- subgraphs ---------------------------------------------------------------------------------

SUBGRAPHS = {
    # graph builder, node holding the subgraph, subgraph name, its nodes, result of {"x": 1}
    "compiled_node": (lg.nested, "sub", "child", ["c1", "c2"], {"x": 20, "z": 21, "done": True}),
    "function_node": (
        lg.calling,
        "call",
        "text",
        ["t1", "t2"],
        {"x": 2, "out": "xx!2", "done": True},
    ),
}


@pytest.mark.parametrize("kind", list(SUBGRAPHS))
def test_subgraph_nodes_are_units_of_a_child_run(dbg: flowdbg.Debugger, kind: str) -> None:
    build, holder, name, nodes, result = SUBGRAPHS[kind]
    app = dbg.attach(build())
    dbg.break_before(nodes[1])
    run = dbg.start(app.invoke, {"x": 1})
    stop = wait(dbg, nodes[1])
    loc = stop.location
    assert loc.path == (holder,) and loc.depth == 1
    (root,) = dbg.active_runs
    assert loc.parent_run_id == root.run_id and loc.run_id != root.run_id
    dbg.resume()
    assert run.result(T) == result
    (log,) = dbg.runs
    (child,) = log.children
    assert child.run.name == name and child.run.framework == "langgraph"
    assert child.run.parent_run_id == log.run.run_id and child.run.path == (holder,)
    assert [s.node for s in child.steps] == nodes
    assert [s.node for s in log.steps] == ["pre", holder, "post"]
    holder_step = log.steps[1]
    assert child.run.parent_step == holder_step.step
    assert holder_step.child_run_id == child.run.run_id


@pytest.mark.parametrize("kind", list(SUBGRAPHS))
def test_step_into_enters_the_subgraph_and_step_over_skips_it(
    dbg: flowdbg.Debugger, kind: str
) -> None:
    build, holder, _, nodes, result = SUBGRAPHS[kind]
    app = dbg.attach(build())
    dbg.break_before(holder)
    run = dbg.start(app.invoke, {"x": 1})
    wait(dbg, holder)
    dbg.step_into()
    stop = wait(dbg, nodes[0])
    assert stop.location.path == (holder,) and stop.reason == flowdbg.StopReason.STEP
    dbg.step_into()
    assert wait(dbg, nodes[1]).location.depth == 1
    dbg.step_over()  # the last node of the subgraph: next is back in the parent
    assert wait(dbg, "post").location.depth == 0
    dbg.resume()
    assert run.result(T) == result

    run = dbg.start(app.invoke, {"x": 1})
    wait(dbg, holder)
    dbg.step_over()
    assert wait(dbg, "post").location.depth == 0
    dbg.resume()
    assert run.result(T) == result


def test_edit_inside_a_compiled_subgraph_reaches_the_parent(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.nested())
    dbg.break_before("c2")
    run = dbg.start(app.invoke, {"x": 1})
    stop = wait(dbg, "c2")
    assert dbg.inspect("scratch") == "seen 2"  # a key of the subgraph's own state
    dbg.set("x", 5)
    assert stop.input == {"x": 5, "scratch": "seen 2"}
    dbg.resume()
    # the subgraph's state kept the edit, and its output carries it to the parent's
    assert run.result(T) == {"x": 5, "z": 6, "done": True}


# -- retries -----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_retried_attempts_are_units_with_their_attempt(dbg: flowdbg.Debugger, how: str) -> None:
    calls: list[int] = []
    app = dbg.attach(lg.retry_graph(calls))
    assert dbg.start(getattr(app, how), {"x": 1}).result(T) == {"x": 2, "ok": True}
    assert calls == [1, 2]
    (log,) = dbg.runs
    flaky = [s for s in log.steps if s.node == "flaky"]
    assert [(s.attempt, s.status) for s in flaky] == [(1, "failed"), (2, "completed")]
    assert flaky[0].error is not None and flaky[0].error.type == "ConnectionError"
    assert flaky[0].branch == flaky[1].branch  # the same task, run again
    assert flaky[0].superstep == flaky[1].superstep == 1
    assert log.run.status == "completed"


def test_exception_breakpoint_stops_the_first_attempt_then_it_retries(
    dbg: flowdbg.Debugger,
) -> None:
    calls: list[int] = []
    app = dbg.attach(lg.retry_graph(calls))
    dbg.break_on_exception(ConnectionError)
    run = dbg.start(app.invoke, {"x": 1})
    stop = wait(dbg, "flaky", "error")
    assert isinstance(stop.exception, ConnectionError)
    assert str(stop.exception) == "flaky call 1"
    assert stop.location.attempt == 1 and calls == [1]
    dbg.resume()
    assert run.result(T) == {"x": 2, "ok": True}
    assert calls == [1, 2]


@pytest.mark.parametrize("where", ["error", "before"])
def test_terminate_in_a_retried_node_is_not_retried(dbg: flowdbg.Debugger, where: str) -> None:
    calls: list[int] = []
    app = dbg.attach(lg.retry_graph(calls))
    if where == "error":
        dbg.break_on_exception(ConnectionError)
    else:
        dbg.break_before("flaky")
    run = dbg.start(app.invoke, {"x": 1})
    wait(dbg, "flaky", where)
    dbg.terminate()
    with pytest.raises(flowdbg.Terminated):
        run.result(T)
    assert calls == ([1] if where == "error" else [])  # no further attempt
    (log,) = dbg.runs
    assert log.run.status == "terminated"
    assert [s.node for s in log.steps] == ["flaky"]


# -- state schemas -----------------------------------------------------------------------------


def test_pydantic_state_is_inspected_and_edited(dbg: flowdbg.Debugger) -> None:
    assert lg.pydantic_graph().invoke({"x": 1}) == {"x": 2, "tag": "x=2"}
    app = dbg.attach(lg.pydantic_graph())
    dbg.break_before("b")
    dbg.break_after("b")
    run = dbg.start(app.invoke, {"x": 1})
    stop = wait(dbg, "b")
    assert isinstance(stop.state, lg.Model)
    assert dbg.inspect("x") == 2
    dbg.set("x", 40)
    assert stop.input == lg.Model(x=40)
    dbg.resume()
    stop = wait(dbg, "b", "after")
    assert stop.output == {"tag": "x=40"}  # the node saw the edited state
    dbg.set("tag", "edited")
    dbg.resume()
    assert run.result(T) == {"x": 40, "tag": "edited"}  # the state kept the input edit


def test_dataclass_state_is_inspected_and_edited(dbg: flowdbg.Debugger) -> None:
    assert lg.dataclass_graph().invoke({"x": 1}) == {"x": 2, "items": [2]}
    app = dbg.attach(lg.dataclass_graph())
    dbg.break_before("b")
    run = dbg.start(app.invoke, {"x": 1})
    stop = wait(dbg, "b")
    assert stop.state == lg.Data(x=2, items=[])
    assert dbg.inspect("x") == 2
    dbg.set("x", 7)
    dbg.resume()
    assert run.result(T) == {"x": 7, "items": [7]}


def test_messages_state_is_inspected_and_edited(dbg: flowdbg.Debugger) -> None:
    expected = lg.messages_graph().invoke(lg.messages_input())
    assert [m.content for m in expected["messages"]] == ["bob", "hi bob", "echo: hi bob"]
    app = dbg.attach(lg.messages_graph())
    dbg.break_before("echo")
    dbg.break_after("echo")
    run = dbg.start(app.invoke, lg.messages_input())
    wait(dbg, "echo")
    assert dbg.inspect("messages[-1].content") == "hi bob"
    assert dbg.inspect("messages[0].id") == "human-1"
    dbg.set("messages[-1].content", "HI")
    dbg.resume()
    stop = wait(dbg, "echo", "after")
    assert dbg.inspect("messages[-1].content", source="output") == "echo: HI"
    # the element shown was edited, in the state the run keeps, and no other one
    assert [m.content for m in stop.state["messages"]] == ["bob", "HI", "echo: HI"]
    dbg.resume()
    result = run.result(T)
    assert [m.content for m in result["messages"]] == ["bob", "HI", "echo: HI"]
    assert [m.id for m in result["messages"]] == ["human-1", "ai-1", "ai-2"]


# -- edits -------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_edit_at_an_after_stop_changes_the_committed_update(
    dbg: flowdbg.Debugger, how: str
) -> None:
    app = dbg.attach(lg.linear())
    dbg.break_after("b")
    dbg.break_before("c")
    run = dbg.start(getattr(app, how), {"x": 1})
    stop = wait(dbg, "b", "after")
    assert stop.output == {"x": 20} and stop.state == {"x": 20}
    assert stop.decision == ["c"]
    dbg.set("x", 3)
    assert stop.output == {"x": 3}
    dbg.resume()
    stop = wait(dbg, "c")
    assert stop.state == {"x": 3}  # the edited update was committed
    dbg.resume()
    assert run.result(T) == {"x": 3, "y": 4}
    b = dbg.runs[-1].steps[1]
    assert (b.node, b.output, b.state) == ("b", {"x": 3}, {"x": 3})


def test_edit_at_an_after_stop_goes_through_the_reducer(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.parallel())
    dbg.break_after("p1")
    run = dbg.start(app.invoke, {"items": []})
    stop = wait(dbg, "p1", "after")
    assert stop.output == {"items": ["p1"]} and stop.decision == ["join"]
    dbg.set("items", ["x", "y"])
    dbg.resume()
    assert run.result(T) == {"items": ["x", "y", "p2"], "total": 3}


def test_edit_at_an_after_stop_changes_the_route(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.branch())
    dbg.break_after("start")
    run = dbg.start(app.invoke, {"x": 5})
    stop = wait(dbg, "start", "after")
    assert stop.decision == ["pos"]
    dbg.set("x", -5)  # the router reads x from the state the update makes
    dbg.resume()
    assert run.result(T) == {"x": -5, "seen": True, "sign": "-"}
    assert dbg.runs[-1].steps[0].decision == ["neg"]


def test_edit_of_a_key_outside_the_schema_is_refused(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.linear())
    dbg.break_after("b")
    run = dbg.start(app.invoke, {"x": 1})
    stop = wait(dbg, "b", "after")
    with pytest.raises(flowdbg.EditRefused, match="'bogus'"):
        dbg.set("bogus", 1)
    assert stop.output == {"x": 20}  # left as it was
    dbg.set("y", 0)  # a key of the schema the node did not write is fine
    dbg.resume()
    assert run.result(T) == {"x": 20, "y": 21}  # c overwrote y


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_edit_at_a_before_stop_is_kept_in_the_state(dbg: flowdbg.Debugger, how: str) -> None:
    app = dbg.attach(lg.linear())
    dbg.break_before("c")
    run = dbg.start(getattr(app, how), {"x": 1})
    stop = wait(dbg, "c")
    dbg.set("x", 100)  # c does not write x: the run keeps the edit all the same
    with pytest.raises(flowdbg.EditRefused, match=r"no key 'extra'.*its keys are x, y"):
        dbg.set("extra", "free-form input")  # the state has no such key to keep
    assert stop.input == {"x": 100}
    dbg.resume()
    assert run.result(T) == {"x": 100, "y": 101}
    c = dbg.runs[-1].steps[-1]
    assert (c.node, c.input, c.state) == ("c", {"x": 100}, {"x": 100, "y": 101})


def test_a_key_the_node_writes_too_takes_its_write_after_the_edit(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.linear())
    dbg.break_before("b")  # b: x * 10
    run = dbg.start(app.invoke, {"x": 1})
    wait(dbg, "b")
    dbg.set("x", 7)
    dbg.resume()
    assert run.result(T) == {"x": 70, "y": 71}


def test_an_edit_langgraph_could_not_keep_is_refused(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.parallel())
    dbg.break_before("p1")
    dbg.break_before("p2")
    run = dbg.start(app.invoke, {"items": []})
    stops = dbg.wait_for_stops(2, T)
    p1 = next(s for s in stops if s.location.node == "p1")
    with pytest.raises(flowdbg.EditRefused, match=r"'items' has a reducer.* where 'p2' also runs"):
        dbg.set("items", ["z"], stop=p1.id)
    with pytest.raises(flowdbg.EditRefused, match=r"cannot remove the value of state key 'items'"):
        dbg.delete("items", stop=p1.id)
    assert dbg.inspect("items", stop=p1.id) == []  # both refusals left the input as it was
    assert p1.unit is not None and p1.unit.input_edits == ()
    for stop in stops:
        dbg.resume(stop.id)
    assert run.result(T) == {"items": ["p1", "p2"], "total": 2}


def test_an_edit_of_a_send_packet_stays_in_its_branch(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.map_reduce())
    dbg.break_before("work", condition="input['item'] == 'b'")
    run = dbg.start(app.invoke, ITEMS)
    wait(dbg, "work")
    dbg.set("item", "zz")  # the packet is the branch's own, not the state
    dbg.resume()
    assert run.result(T) == {"items": ["a", "b", "c"], "results": ["A", "ZZ", "C"]}


def test_watch_stops_after_the_node_changing_a_key(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.loop())
    dbg.watch("finished")
    run = dbg.start(app.invoke, {"count": 0})
    stop = wait(dbg, "done", "after")
    assert stop.reason == flowdbg.StopReason.WATCH
    assert stop.state == {"count": 5, "finished": True}
    dbg.resume()
    assert run.result(T) == {"count": 5, "finished": True}
    assert [s.node for s in dbg.runs[-1].steps] == ["inc"] * 5 + ["done"]


def test_conditional_breakpoint_sees_the_state(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.loop())
    dbg.break_before("inc", condition="state['count'] == 3")
    run = dbg.start(app.invoke, {"count": 0})
    stop = wait(dbg, "inc")
    assert stop.state == {"count": 3} and stop.location.superstep == 4
    dbg.resume()
    assert run.result(T) == {"count": 5, "finished": True}
    assert dbg.wait_for_stop(0.2) is None


def test_an_edit_a_pydantic_state_refuses_is_refused_at_set_time() -> None:
    with flowdbg.Debugger(record=False) as dbg:
        app = dbg.attach(lg.pydantic_graph())
        dbg.break_before("b")
        run = dbg.start(app.invoke, {"x": 1})
        stop = dbg.wait_for_stop(T)
        assert stop is not None
        with pytest.raises(flowdbg.EditRefused, match=r"refuses the edit: x: Input should be"):
            dbg.set("x", "abc")
        assert dbg.inspect("x") == 2  # unchanged
        dbg.set("x", 41)  # a valid edit is taken
        dbg.resume()
        assert run.result(T) == {"x": 41, "tag": "x=41"}
