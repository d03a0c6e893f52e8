"""Attaching instruments a compiled graph in place and detaching restores it exactly; copies,
second debuggers, lazy imports and ``describe``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

import lg_helpers as lg
from langgraph.graph import END, START, StateGraph
from lg_helpers import T

import flowdbg

_MISSING = object()


def node_dicts(app: Any) -> dict[str, dict[str, Any]]:
    """Every PregelNode's ``__dict__`` (a shallow copy) of ``app`` and of its subgraphs, by
    ``<graph name>/<node name>``."""
    found: dict[str, dict[str, Any]] = {}
    for name, node in app.nodes.items():
        found[f"{app.name}/{name}"] = dict(node.__dict__)
        for sub in node.subgraphs:
            found.update(node_dicts(sub))
    return found


def assert_same_nodes(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> None:
    assert before.keys() == after.keys()
    for where, attrs in before.items():
        assert sorted(after[where]) == sorted(attrs), f"{where}: other attributes after detach"
        for key, value in attrs.items():
            assert after[where][key] is value, f"{where}.{key} is not the object it was"


def stop_at(dbg: flowdbg.Debugger, node: str) -> flowdbg.Stop:
    stop = dbg.wait_for_stop(T)
    assert stop is not None, f"no stop at {node!r}"
    assert stop.location.node == node
    return stop


@pytest.mark.parametrize("warm", [False, True], ids=["never_run", "run_before_attach"])
def test_detach_restores_class_and_every_node_exactly(dbg: flowdbg.Debugger, warm: bool) -> None:
    app = lg.nested()
    expected = {"x": 20, "z": 21, "done": True}
    if warm:  # fills the cached ``node``/``flat_writers`` of every node, subgraph's included
        assert app.invoke({"x": 1}) == expected
    cls, sub_cls = type(app), type(app.nodes["sub"].subgraphs[0])
    before = node_dicts(app)
    assert ("node" in before["child/c1"]) is warm

    dbg.attach(app)
    assert type(app) is not cls and isinstance(app, cls)
    assert node_dicts(app)["nested/pre"]["node"] is not before["nested/pre"].get("node")
    if warm:  # run under a breakpoint in the subgraph while attached
        dbg.break_before("c2")
        run = dbg.start(app.invoke, {"x": 1})
        stop_at(dbg, "c2")
        dbg.resume()
        assert run.result(T) == expected
    dbg.detach(app)

    assert type(app) is cls
    assert type(app.nodes["sub"].subgraphs[0]) is sub_cls
    assert_same_nodes(before, node_dicts(app))
    dbg.break_before("*")
    assert app.invoke({"x": 1}) == expected
    assert dbg.stops == [] and dbg.attached == []


def test_attach_twice_is_a_no_op(dbg: flowdbg.Debugger) -> None:
    app = lg.linear()
    assert dbg.attach(app) is app
    hooks = {name: node.__dict__.get("node") for name, node in app.nodes.items()}
    cls = type(app)
    assert dbg.attach(app) is app
    assert type(app) is cls
    assert {name: node.__dict__.get("node") for name, node in app.nodes.items()} == hooks
    dbg.break_before("b")
    run = dbg.start(app.invoke, {"x": 1})
    stop_at(dbg, "b")
    dbg.resume()
    assert run.result(T) == {"x": 20, "y": 21}
    assert dbg.wait_for_stop(0.5) is None  # one hook per node: b stopped once
    assert [s.node for s in dbg.runs[-1].steps] == ["a", "b", "c"]


def test_attaching_to_a_second_debugger_is_refused(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.linear())
    other = flowdbg.Debugger(record=False)
    with pytest.raises(flowdbg.AdapterError, match="'linear' is already attached"):
        other.attach(app)
    assert other.attached == []
    dbg.break_before("c")  # still the first debugger's
    run = dbg.start(app.invoke, {"x": 1})
    assert stop_at(dbg, "c").state == {"x": 20}
    dbg.resume()
    assert run.result(T) == {"x": 20, "y": 21}
    dbg.detach(app)
    other.attach(app)  # free again once detached
    other.break_before("a")
    run = other.start(app.invoke, {"x": 1})
    assert stop_at(other, "a").state == {"x": 1}
    other.resume()
    assert run.result(T) == {"x": 20, "y": 21}
    other.close()


def test_copies_made_while_attached_are_debugged(dbg: flowdbg.Debugger) -> None:
    app = dbg.attach(lg.linear())
    configured = app.with_config(recursion_limit=7, tags=["copy"])
    assert configured is not app
    dbg.break_before("b")
    run = dbg.start(configured.invoke, {"x": 1})
    stop = stop_at(dbg, "b")
    assert stop.state == {"x": 2}
    dbg.set("x", 5)
    dbg.resume()
    assert run.result(T) == {"x": 50, "y": 51}
    assert dbg.runs[-1].run.name == "linear"

    copied = app.copy()
    run = dbg.start(copied.invoke, {"x": 1})
    stop_at(dbg, "b")
    dbg.resume()
    assert run.result(T) == {"x": 20, "y": 21}

    dbg.detach(app)  # copies made while attached then behave like the original class
    assert configured.invoke({"x": 1}) == {"x": 20, "y": 21}
    assert copied.invoke({"x": 2}) == {"x": 30, "y": 31}
    assert dbg.stops == []


def test_detach_all_restores_nodes_shared_with_a_copy(dbg: flowdbg.Debugger) -> None:
    """``with_config`` copies share their PregelNode objects with the original: attaching the
    original and a copy made before attach, then ``dbg.detach()``, must leave no hook behind."""
    app = lg.linear()
    configured = app.with_config(tags=["copy"])  # made before attach: same PregelNodes
    assert configured.invoke({"x": 1}) == {"x": 20, "y": 21}  # fills LangGraph's own caches
    before = node_dicts(app)
    dbg.attach(app)
    dbg.attach(configured)
    dbg.break_before("b")
    run = dbg.start(configured.invoke, {"x": 1})
    stop_at(dbg, "b")
    dbg.resume()
    assert run.result(T) == {"x": 20, "y": 21}
    dbg.detach()
    assert_same_nodes(before, node_dicts(app))


def test_subgraph_shared_by_two_graphs_stays_debugged_while_one_is_attached(
    dbg: flowdbg.Debugger,
) -> None:
    """One compiled subgraph used by two attached graphs: detaching one graph must not detach
    the subgraph from the other."""
    shared = lg.child()

    def parent(name: str) -> Any:
        g = StateGraph(lg.Parent)
        g.add_node("pre", lambda s: {"x": s["x"] + 1})
        g.add_node("sub", shared)
        g.add_edge(START, "pre")
        g.add_edge("pre", "sub")
        g.add_edge("sub", END)
        return g.compile(name=name)

    first, second = dbg.attach(parent("first")), dbg.attach(parent("second"))
    dbg.detach(first)
    dbg.break_before("c2")
    run = dbg.start(second.invoke, {"x": 1})
    stop = dbg.wait_for_stop(T)
    assert stop is not None, "the subgraph of the still attached graph is no longer debugged"
    assert stop.location.path == ("sub",)
    dbg.resume()
    assert run.result(T) == {"x": 20, "z": 21}


def test_a_refused_attach_changes_nothing(dbg: flowdbg.Debugger) -> None:
    """Attach fails when a subgraph is attached to another debugger: the parent graph must be
    left exactly as it was (no node half instrumented)."""
    app = lg.nested()
    before = node_dicts(app)
    cls = type(app)
    sub = app.nodes["sub"].subgraphs[0]
    dbg.attach(sub)
    other = flowdbg.Debugger(record=False)
    with pytest.raises(flowdbg.AdapterError, match="'child' is already attached"):
        other.attach(app)
    assert type(app) is cls
    dbg.detach(sub)
    assert_same_nodes(before, node_dicts(app))
    other.close()


def test_importing_flowdbg_does_not_import_langgraph(tmp_path: Path) -> None:
    code = (
        "import sys, flowdbg, flowdbg.adapters.langgraph\n"
        "flowdbg.Debugger()\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langgraph', 'langchain_core', 'langsmith'))\n"
        "assert not loaded, loaded\n"
    )
    env = {**os.environ, "FLOWDBG_DB": str(tmp_path / "x.db"), "LANGSMITH_TRACING": "false"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_graph_not_attached_is_not_debugged(dbg: flowdbg.Debugger) -> None:
    dbg.attach(lg.linear())
    other = lg.linear()
    dbg.break_before("*")
    assert other.invoke({"x": 1}) == {"x": 20, "y": 21}
    assert dbg.stops == [] and dbg.runs == []


def test_describe_lists_nodes_edges_routers_and_subgraphs(dbg: flowdbg.Debugger) -> None:
    app = lg.nested()
    desc = dbg.describe(app)
    assert desc["name"] == "nested"
    assert desc["entry"] == ["pre"]
    assert [n["name"] for n in desc["nodes"]] == ["pre", "sub", "post"]
    sub = desc["nodes"][1]["subgraph"]
    assert sub["name"] == "child"
    assert [n["name"] for n in sub["nodes"]] == ["c1", "c2"]
    assert {"source": "c1", "target": "c2"} in sub["edges"]
    assert {"source": "pre", "target": "sub"} in desc["edges"]
    assert {"source": "post", "target": "__end__"} in desc["edges"]
    assert desc["conditional_edges"] == []
    dbg.attach(app)
    assert dbg.describe(app) == desc  # instrumenting does not change the structure

    branchy = lg.branch()
    desc = dbg.describe(branchy)
    (cond,) = desc["conditional_edges"]
    assert cond["source"] == "start"
    assert cond["targets"] == ["neg", "pos"]
    assert cond["router"] == "condition"  # LangGraph's name for a lambda router
    assert {"source": "pos", "target": "__end__"} in desc["edges"]

    desc = dbg.describe(lg.parallel())
    assert desc["reducers"] == ["items"]
    assert {"source": "fan", "target": "p1"} in desc["edges"]
    assert {"source": "p2", "target": "join"} in desc["edges"]

    retried = dbg.describe(lg.retry_graph([]))
    assert [(n["name"], n["retry"]) for n in retried["nodes"]] == [("flaky", 2), ("post", 0)]

    routed = dbg.describe(lg.command())
    targets = {e["source"]: e["targets"] for e in routed["conditional_edges"]}
    assert targets == {"decide": ["left", "right"]}

    sent = dbg.describe(lg.map_reduce())
    assert sent["conditional_edges"] == [{"source": "fan", "router": "route", "targets": ["work"]}]

    looped = dbg.describe(lg.loop())
    assert looped["conditional_edges"][0]["targets"] == ["done", "inc"]


def test_a_graph_without_nodes_yet_is_refused_and_left_as_it_was() -> None:
    # LangGraph fills a compiled graph's nodes after constructing it (compile() calls
    # attach_node for each): attached in between there would be nothing to instrument.
    builder = StateGraph(lg.Linear)
    builder.add_node("a", lambda s: {"x": s["x"] + 1})
    builder.add_edge(START, "a")
    empty = builder.compile()  # as it is between the constructor and the first node's turn
    start = empty.nodes["__start__"]
    empty.nodes.clear()
    empty.nodes["__start__"] = start
    before = (type(empty), dict(empty.nodes))
    with flowdbg.Debugger(record=False) as dbg:
        with pytest.raises(
            flowdbg.AdapterError, match=r"has no nodes yet.*after StateGraph\.compile"
        ):
            dbg.attach(empty)
        assert (type(empty), dict(empty.nodes)) == before
        assert dbg.attached == []
        # the built graph attaches as usual
        app = dbg.attach(builder.compile())
        dbg.break_before("a")
        run = dbg.start(app.invoke, {"x": 1})
        stop = dbg.wait_for_stop(T)
        assert stop is not None and stop.location.node == "a"
        dbg.resume()
        assert run.result(T) == {"x": 2}
