"""Breakpoint names checked against what the attached targets describe, unit kinds and
exception names checked when a breakpoint is set (``flowdbg.errors.BreakpointWarning``,
``strict=True``)."""

from __future__ import annotations

import itertools
import json
import re
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph
from flowdbg.errors import BreakpointWarning


def _graph(name: str, *nodes: str, sub: Any = None) -> Any:
    g = StateGraph(name=name)
    for node in nodes:
        g.add_node(node, lambda s: {})
    if sub is not None:
        g.add_node("sub", sub)
    order = [*nodes, *(["sub"] if sub is not None else [])]
    g.set_entry_point(order[0])
    for first, then in itertools.pairwise(order):
        g.add_edge(first, then)
    g.add_edge(order[-1], END)
    return g.compile()


@pytest.fixture
def dbg() -> Iterator[flowdbg.Debugger]:
    d = flowdbg.Debugger(record=False)
    yield d
    d.close()


@pytest.fixture
def graph(dbg: flowdbg.Debugger) -> Any:
    inner = _graph("inner", "inner1", "inner2")
    return dbg.attach(_graph("outer", "alpha", "beta", "gamma", "delta", sub=inner))


def _one_warning(record: pytest.WarningsRecorder) -> str:
    assert [w.category for w in record] == [BreakpointWarning]
    assert record[0].filename == __file__  # points at the user's call, not into flowdbg
    return str(record[0].message)


# ------------------------------------------------------------------------------ node names


def test_an_unknown_node_warns_with_the_nodes_closest_first(
    dbg: flowdbg.Debugger, graph: Any
) -> None:
    with pytest.warns(BreakpointWarning) as record:
        bp = dbg.break_before("gama")
    message = _one_warning(record)
    assert message.startswith(
        "unknown node 'gama'; nodes: gamma, alpha, beta, delta, sub, inner1, inner2; check the "
        "spelling, or give kind='tool' or kind='llm' for a call a node makes"
    )
    assert "bp-1 is set all the same" in message and "strict=True refuses it" in message
    assert dbg.breakpoints == [bp]  # set all the same: a later target may have the name


def test_names_that_exist_do_not_warn(dbg: flowdbg.Debugger, graph: Any) -> None:
    # pytest turns any warning into an error: each call passes only without one
    dbg.break_before("alpha")
    dbg.break_after("inner2")  # a subgraph's node
    dbg.break_before("sub")
    dbg.break_before("*")
    dbg.break_before("[ab]*")
    dbg.break_on_event("g*")
    dbg.logpoint("beta", "x")
    dbg.watch("x", node="delta")
    dbg.break_on_exception(ValueError, node="inner*")
    dbg.break_on_handoff(to="gamma")
    assert len(dbg.breakpoints) == 10


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "problem"),
    [
        ("break_after", ("nope",), {}, "unknown node 'nope'"),
        ("break_before", ("nope",), {"kind": "node"}, "unknown node 'nope'; nodes: alpha"),
        ("break_on_event", ("zz*",), {}, "unknown node 'zz*'"),
        ("logpoint", ("nope", "x is {state[x]}"), {}, "unknown node 'nope'"),
        ("watch", ("x",), {"node": "nope"}, "unknown node 'nope'"),
        ("break_on_exception", (), {"node": "nope"}, "unknown node 'nope'"),
        ("break_on_handoff", (), {"to": "nope"}, "unknown handoff target 'nope'; nodes: alpha"),
    ],
)
def test_every_breakpoint_method_checks_its_name(
    dbg: flowdbg.Debugger,
    graph: Any,
    method: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    problem: str,
) -> None:
    set_it = getattr(dbg, method)
    with pytest.warns(BreakpointWarning, match=re.escape(problem)):
        set_it(*args, **kwargs)
    with pytest.raises(flowdbg.BreakpointError, match=re.escape(problem)):
        set_it(*args, strict=True, **kwargs)
    assert len(dbg.breakpoints) == 1  # the strict one was refused


def test_strict_refuses_without_taking_an_id(dbg: flowdbg.Debugger, graph: Any) -> None:
    with pytest.raises(flowdbg.BreakpointError, match=r"^unknown node 'nope'; nodes: alpha, "):
        dbg.break_before("nope", strict=True)
    assert dbg.breakpoints == []
    assert dbg.break_before("alpha", strict=True).id == "bp-1"


def test_names_no_description_lists_are_not_checked(dbg: flowdbg.Debugger, graph: Any) -> None:
    dbg.break_before("gpt-4o", kind="llm")
    dbg.break_before("search", kind="tool")  # the StateGraph does not list its tools
    dbg.break_on_tool("search")
    dbg.break_on_tool("search", strict=True)
    assert len(dbg.breakpoints) == 4


def test_breakpoints_set_before_anything_is_attached_are_not_checked(
    dbg: flowdbg.Debugger,
) -> None:
    bp = dbg.break_before("nope", strict=True)
    dbg.attach(_graph("g", "alpha"))  # and not at attach time either
    assert dbg.breakpoints == [bp]


def test_a_name_of_any_attached_target_is_known(dbg: flowdbg.Debugger) -> None:
    dbg.attach(_graph("one", "alpha"))
    dbg.attach(_graph("two", "omega"))
    dbg.break_before("omega")
    with pytest.warns(BreakpointWarning, match="nodes: alpha, omega"):
        dbg.break_before("nope")


def test_a_stop_still_comes_at_a_unit_of_a_warned_name(dbg: flowdbg.Debugger) -> None:
    # the name is unknown to the target attached when it is set, and known to a later one
    dbg.attach(_graph("first", "alpha"))
    with pytest.warns(BreakpointWarning, match="in a target attached later"):
        dbg.break_before("omega")
    later = dbg.attach(_graph("second", "omega"))
    handle = dbg.start(later.invoke, {})
    stop = dbg.wait_for_stop(10.0)
    assert stop is not None and stop.location.node == "omega"
    dbg.resume()
    handle.result(10.0)


# ------------------------------------------------------------- descriptions of other shapes


class _Described:
    """A target whose description the test gives."""

    def __init__(self, description: dict[str, Any]) -> None:
        self.description = description


class _DescribedAdapter(flowdbg.Adapter):
    name = "described"
    capabilities = frozenset({flowdbg.Capability.DESCRIBE})

    def matches(self, target: Any) -> bool:
        return isinstance(target, _Described)

    def attach(self, target: Any, debugger: Any) -> None:
        pass

    def detach(self, target: Any) -> None:
        pass

    def describe(self, target: Any) -> dict[str, Any]:
        return dict(target.description)


class _Silent:
    """A target whose adapter gives no description."""


class _SilentAdapter(flowdbg.Adapter):
    name = "silent"

    def matches(self, target: Any) -> bool:
        return isinstance(target, _Silent)

    def attach(self, target: Any, debugger: Any) -> None:
        pass

    def detach(self, target: Any) -> None:
        pass


class _Plugin:
    @flowdbg.hookimpl
    def flowdbg_register_adapters(self, register: Any) -> None:
        register(_DescribedAdapter())
        register(_SilentAdapter())


@pytest.fixture
def pdbg() -> Iterator[flowdbg.Debugger]:
    d = flowdbg.Debugger(record=False, plugins=[_Plugin()])
    yield d
    d.close()


AGENT = {
    "name": "agent",
    "nodes": [{"name": "model"}, {"name": "tools", "tools": ["search_flights", "shell"]}],
}


def test_tools_a_description_lists_are_checked(pdbg: flowdbg.Debugger) -> None:
    pdbg.attach(_Described(AGENT))
    pdbg.break_on_tool("shell")
    pdbg.break_on_tool("search_*")
    pdbg.break_before("shell")  # a name without a kind may be a tool's
    with pytest.warns(BreakpointWarning) as record:
        pdbg.break_on_tool("shel")
    assert _one_warning(record).startswith(
        "unknown tool 'shel'; tools: shell, search_flights; check the spelling ("
    )
    with pytest.warns(BreakpointWarning, match=r"^unknown node or tool 'nope'; nodes: model, "):
        pdbg.break_before("nope")
    with pytest.raises(flowdbg.BreakpointError, match=r"^unknown tool 'shel'"):
        pdbg.break_on_tool("shel", strict=True)


def test_an_agents_model_is_a_known_name(pdbg: flowdbg.Debugger) -> None:
    # an agent's model turns run as units named after its model
    pdbg.attach(_Described({"name": "a", "nodes": [{"name": "triage", "model": "gpt-x"}]}))
    pdbg.break_before("gpt-x")
    pdbg.break_after("gpt-*")
    with pytest.warns(BreakpointWarning, match=r"^unknown node 'gpt-y'; nodes: gpt-x, "):
        pdbg.break_before("gpt-y")


def test_tools_listed_at_the_top_and_none_listed(pdbg: flowdbg.Debugger) -> None:
    pdbg.attach(_Described({"name": "a", "nodes": ["n"], "tools": [{"name": "lookup"}]}))
    pdbg.break_on_tool("lookup")
    pdbg.attach(_Described({"name": "b", "nodes": ["m"], "tools": []}))
    with pytest.warns(BreakpointWarning, match=r"^unknown tool 'x'; tools: lookup;"):
        pdbg.break_on_tool("x")


def test_an_open_description_never_warns(pdbg: flowdbg.Debugger) -> None:
    pdbg.attach(_Described({"name": "flow", "open": True, "nodes": [{"name": "flow"}]}))
    pdbg.break_before("a_task_it_calls", strict=True)
    nested = {"name": "g", "nodes": [{"name": "n", "subgraph": {"open": True, "nodes": []}}]}
    pdbg.attach(_Described(nested))
    pdbg.break_before("elsewhere", strict=True)
    assert len(pdbg.breakpoints) == 2


def test_a_target_without_a_description_checks_nothing(pdbg: flowdbg.Debugger) -> None:
    pdbg.attach(_Described(AGENT))
    pdbg.attach(_Silent())  # its units may have any name
    pdbg.break_before("anything", strict=True)


# ---------------------------------------------------------------------------------- kinds


@pytest.mark.parametrize(
    "set_it",
    [
        lambda d: d.break_before("*", kind="bogus"),
        lambda d: d.break_after("a", kind=["node", "bogus"]),
        lambda d: d.break_on_event(kind="Node"),
        lambda d: d.logpoint("a", "x", kind="bogus"),
        lambda d: d.add_breakpoint({"id": "bp-7", "type": "node", "kinds": ["bogus"]}),
    ],
)
def test_an_unknown_kind_is_refused_at_once(dbg: flowdbg.Debugger, set_it: Any) -> None:
    with pytest.raises(
        flowdbg.BreakpointError,
        match=r"is not one of 'node', 'tool', 'llm', 'handoff', 'agent'; give one of those",
    ):
        set_it(dbg)
    assert dbg.breakpoints == []


# ---------------------------------------------------------------------- saved breakpoints


def test_a_saved_breakpoint_is_checked_like_a_new_one(dbg: flowdbg.Debugger, graph: Any) -> None:
    saved = flowdbg.Breakpoint.create("bp-4", flowdbg.BreakpointType.NODE, pattern="nope")
    with pytest.raises(flowdbg.BreakpointError, match=r"^unknown node 'nope'"):
        dbg.add_breakpoint(saved, strict=True)
    data = json.loads(saved.model_dump_json())
    with pytest.warns(BreakpointWarning) as record:
        added = dbg.add_breakpoint(data)
    assert _one_warning(record).startswith("unknown node 'nope'; nodes: alpha")
    assert added.id == "bp-4"
    ok = flowdbg.Breakpoint.create("bp-5", flowdbg.BreakpointType.NODE, pattern="beta")
    assert dbg.add_breakpoint(ok.model_dump()).pattern == "beta"


# ------------------------------------------------------------------------ exception names


class _LocalHalt(Exception):
    """An exception class of the user's, named like no convention."""


@pytest.mark.parametrize(
    "name",
    [
        "ValueError",
        "TimeoutError",
        "KeyboardInterrupt",
        "SystemExit",
        "_LocalHalt",  # defined, whatever its name
        "MyAppRateLimitError",  # not defined yet, named like an exception class
        "NotAnException",
        "some.module.ReadTimeout",  # a module not imported: nothing is imported to check
        "json.JSONDecodeError",
        "flowdbg.errors.BreakpointError",
        "Terminated",
    ],
)
def test_exception_names_that_may_be_right_do_not_warn(dbg: flowdbg.Debugger, name: str) -> None:
    bp = dbg.break_on_exception(name, strict=True)
    assert bp.exception_types == (name,)


def test_exception_classes_do_not_warn(dbg: flowdbg.Debugger) -> None:
    class Local(Exception):  # its qualified name has <locals> in it
        pass

    bp = dbg.break_on_exception(Local, ValueError, strict=True)
    assert len(bp.exception_types) == 2


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("str", "exception name 'str' is the builtin type 'str', not an exception class"),
        ("print", "is the builtin builtin_function_or_method 'print', not an exception class"),
        (
            "valueerror",
            "exception name 'valueerror' is the name of no exception class defined so far and "
            "does not end like one (Error, Exception, Exit, Interrupt, Warning, Timeout, "
            "Cancelled, Exceeded); check the spelling (closest: 'ValueError'",
        ),
        ("ValeuError", "but one letter away from 'ValueError'; check the spelling"),
        ("KeyErorr", "closest: 'KeyError'"),
        ("Halt", "is the name of no exception class defined so far"),
        ("json.loads", "exception name 'json.loads' names function"),
        ("json.NoSuchError", "names nothing: module 'json' has no 'NoSuchError'"),
    ],
)
def test_exception_names_that_look_wrong_warn(
    dbg: flowdbg.Debugger, name: str, problem: str
) -> None:
    with pytest.warns(BreakpointWarning) as record:
        bp = dbg.break_on_exception(name)
    message = _one_warning(record)
    assert problem in message and "(bp-1 is set all the same; strict=True refuses it)" in message
    assert dbg.breakpoints == [bp]
    with pytest.raises(flowdbg.BreakpointError) as refused:
        dbg.break_on_exception(name, strict=True)
    assert problem in str(refused.value)


@pytest.mark.parametrize(
    "name", ["Value Error", "ValueError()", "1Error", "a..b", "x.", "Bad-Error"]
)
def test_an_exception_name_that_is_no_class_name_is_refused(
    dbg: flowdbg.Debugger, name: str
) -> None:
    with pytest.raises(flowdbg.BreakpointError, match=f"exception name {name!r:.6}.* is not a"):
        dbg.break_on_exception(name)
    assert dbg.breakpoints == []


def test_warnings_can_be_silenced_by_category(dbg: flowdbg.Debugger, graph: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BreakpointWarning)
        bp = dbg.break_before("nope")
    assert bp.pattern == "nope"
