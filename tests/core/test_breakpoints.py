"""Breakpoint matching, driven through the runtime directly (no graph engine).

Each test plays a short script of units the way an adapter reports them (``before``, then
``after`` or ``error``) on a worker thread, collects every stop in order, and checks that a
breakpoint stops exactly at the points it names and nowhere else.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

import flowdbg
from flowdbg import Breakpoint, BreakpointType, StopReason

T = 10.0  # seconds any wait may take before the test fails; nothing waits on a sleep

_SAME: Any = object()


@dataclass(frozen=True)
class U:
    """One unit of a script: what it is given, and what it produces or raises."""

    name: str
    kind: str = "node"
    state: Any = None
    input: Any = _SAME
    output: Any = None
    after: Any = None  # the state with the output applied
    error: BaseException | None = None
    decision: Any = None
    superstep: int | None = None
    branch: str | None = None
    attempt: int = 1
    inner: tuple[U, ...] = ()  # units run in this unit's frame (one level deeper)


Point = tuple[str, str]  # (node, position)


def play(dbg: flowdbg.Debugger, units: Sequence[U], scope: flowdbg.RunScope | None = None) -> None:
    """Report ``units`` in order as one run (or inside ``scope``)."""
    own = scope is None
    if scope is None:
        scope = dbg.begin_run(framework="test", name="t", input=None)
    try:
        for spec in units:
            unit = scope.unit(
                spec.name,
                kind=spec.kind,
                superstep=spec.superstep,
                branch=spec.branch,
                attempt=spec.attempt,
            )
            if spec.input is _SAME:
                unit.before(state=spec.state)
            else:
                unit.before(state=spec.state, input=spec.input)
            if spec.inner:
                play(dbg, spec.inner, unit.frame())
            if spec.error is not None:
                unit.error(spec.error, state=spec.state)
            else:
                unit.after(output=spec.output, state=spec.after, decision=spec.decision)
    except BaseException as exc:
        if own:
            scope.end(error=exc)
        raise
    if own:
        scope.end(output=None)


def collect(
    dbg: flowdbg.Debugger,
    units: Sequence[U],
    at_stop: Callable[[flowdbg.Stop], None] | None = None,
) -> list[flowdbg.Stop]:
    """Play ``units`` on a worker thread, resume every stop, and return the stops in order."""
    handle = dbg.start(play, dbg, units)
    stops = []
    while True:
        stop = dbg.wait_for_stop(T)
        if stop is None:
            break
        stops.append(stop)
        if at_stop is not None:
            at_stop(stop)
        dbg.resume(stop.id)
    handle.result(T)  # the run finished (a TimeoutError here means it hung)
    return stops


def where(stops: Sequence[flowdbg.Stop]) -> list[Point]:
    return [(s.location.node, s.location.position) for s in stops]


def everywhere(bp_type: BreakpointType = BreakpointType.NODE, **kwargs: Any) -> Breakpoint:
    """A breakpoint on every position, for tests of what conditions see at each point."""
    return Breakpoint.create("bp-1", bp_type, positions=("before", "after", "error"), **kwargs)


@pytest.fixture
def dbg() -> Iterator[flowdbg.Debugger]:
    d = flowdbg.Debugger(record=False)
    yield d
    d.close()  # ends whatever a failed test left held


# ---------------------------------------------------------------------------- names and globs

NAMES = [U("plan"), U("plan_b"), U("replan"), U("Plan"), U("planner", kind="tool")]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("plan", ["plan"]),
        ("plan*", ["plan", "plan_b", "planner"]),
        ("*plan", ["plan", "replan"]),
        ("?lan", ["plan", "Plan"]),
        ("[pP]lan", ["plan", "Plan"]),
        ("plan?b", ["plan_b"]),
        ("*", ["plan", "plan_b", "replan", "Plan", "planner"]),
        ("lan", []),
    ],
)
def test_name_glob_matches_whole_names_case_sensitively(
    dbg: flowdbg.Debugger, pattern: str, expected: list[str]
) -> None:
    dbg.break_before(pattern)
    assert where(collect(dbg, NAMES)) == [(name, "before") for name in expected]


KINDS = [
    U("n", kind="node"),
    U("t", kind="tool"),
    U("m", kind="llm"),
    U("h", kind="handoff"),
    U("g", kind="agent"),
]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (None, ["n", "t", "m", "h", "g"]),
        ("tool", ["t"]),
        (["tool", "llm"], ["t", "m"]),
        (flowdbg.Kind.AGENT, ["g"]),
    ],
)
def test_kind_filter(dbg: flowdbg.Debugger, kind: Any, expected: list[str]) -> None:
    dbg.break_before("*", kind=kind)
    stops = collect(dbg, KINDS)
    assert where(stops) == [(name, "before") for name in expected]
    assert all(s.reason == StopReason.BREAKPOINT for s in stops)


# -------------------------------------------------------------------------------- positions

POSITIONS = [U("a", output={"x": 1}), U("a", error=ValueError("bad")), U("b", output={"x": 2})]


def test_break_before_stops_only_at_before_points(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("a")
    assert where(collect(dbg, POSITIONS)) == [("a", "before"), ("a", "before")]


def test_break_after_stops_only_at_after_points(dbg: flowdbg.Debugger) -> None:
    dbg.break_after("a")
    stops = collect(dbg, POSITIONS)
    assert where(stops) == [("a", "after")]  # the failing unit has no after point
    assert stops[0].output == {"x": 1}


def test_breakpoint_on_several_positions(dbg: flowdbg.Debugger) -> None:
    bp = Breakpoint.create("bp-1", BreakpointType.NODE, pattern="a", positions=("after", "error"))
    dbg.add_breakpoint(bp)
    stops = collect(dbg, POSITIONS)
    assert where(stops) == [("a", "after"), ("a", "error")]
    assert [s.hits for s in stops] == [{"bp-1": 1}, {"bp-1": 2}]


def test_unknown_position_is_refused_when_set() -> None:
    with pytest.raises(flowdbg.BreakpointError, match="'during'"):
        Breakpoint.create("bp-1", BreakpointType.NODE, positions=("during",))


def test_break_on_event_stops_before_every_unit_of_its_kind(dbg: flowdbg.Debugger) -> None:
    bp = dbg.break_on_event(kind="llm")
    stops = collect(dbg, [*KINDS, U("m2", kind="llm", error=RuntimeError("x"))])
    assert where(stops) == [("m", "before"), ("m2", "before")]
    assert all(s.breakpoints == (bp.id,) for s in stops)


def test_several_breakpoints_at_one_point_make_one_stop(dbg: flowdbg.Debugger) -> None:
    first = dbg.break_before("a")
    second = dbg.break_before("*", hit_condition=">=1")
    other = dbg.break_before("b")
    stops = collect(dbg, [U("a"), U("b")])
    assert where(stops) == [("a", "before"), ("b", "before")]
    assert stops[0].breakpoints == (first.id, second.id)
    assert stops[0].hits == {first.id: 1, second.id: 1}
    assert stops[1].breakpoints == (second.id, other.id)
    assert stops[1].hits == {second.id: 2, other.id: 1}


# -------------------------------------------------------------------------------- exceptions


class Boom(RuntimeError):
    """An exception class of this module, to match by qualified name."""


FAILING = [
    U("ok", output=1),
    U("key", error=KeyError("k")),
    U("val", error=ValueError("v")),
    U("boom", error=Boom("b")),
    U("key2", error=KeyError("k2")),
]


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        ((), ["key", "val", "boom", "key2"]),
        ((KeyError,), ["key", "key2"]),
        (("KeyError",), ["key", "key2"]),
        (("builtins.KeyError",), ["key", "key2"]),
        (("LookupError",), ["key", "key2"]),  # a base class by name
        ((Exception,), ["key", "val", "boom", "key2"]),  # a base class
        ((RuntimeError,), ["boom"]),
        (("Boom",), ["boom"]),
        ((f"{Boom.__module__}.Boom",), ["boom"]),
        ((ValueError, "Boom"), ["val", "boom"]),
        (("TimeoutError",), []),
    ],
)
def test_exception_breakpoint_types(
    dbg: flowdbg.Debugger, types: tuple[Any, ...], expected: list[str]
) -> None:
    bp = dbg.break_on_exception(*types)
    stops = collect(dbg, FAILING)
    assert where(stops) == [(name, "error") for name in expected]
    assert all(s.reason == StopReason.EXCEPTION for s in stops)
    assert all(s.breakpoints == (bp.id,) for s in stops)
    assert [s.error.type if s.error else None for s in stops] == [
        type(u.error).__name__ for u in FAILING if u.name in expected
    ]


def test_exception_breakpoint_node_filter(dbg: flowdbg.Debugger) -> None:
    dbg.break_on_exception(node="key*")
    assert where(collect(dbg, FAILING)) == [("key", "error"), ("key2", "error")]


def test_exception_breakpoint_by_bad_type_is_refused(dbg: flowdbg.Debugger) -> None:
    with pytest.raises(flowdbg.BreakpointError, match="not an exception class"):
        dbg.break_on_exception(int)  # type: ignore[arg-type]
    with pytest.raises(flowdbg.BreakpointError, match="must not be empty"):
        dbg.break_on_exception("")
    assert dbg.breakpoints == []


# ------------------------------------------------------------------------------------ watches


def test_watch_stops_after_units_that_changed_the_value(dbg: flowdbg.Debugger) -> None:
    bp = dbg.watch("count")
    script = [
        U("same", state={"count": 1}, after={"count": 1}),
        U("bump", state={"count": 1}, after={"count": 2}),
        U("equal_copy", state={"count": [1]}, after={"count": [1]}),  # equal, another object
        U("other_key", state={"count": 2, "x": 0}, after={"count": 2, "x": 1}),
        U("appear", state={}, after={"count": 5}),
        U("remove", state={"count": 5}, after={}),
        U("fail", state={"count": 1}, error=ValueError("x")),  # a watch is an after point
        U("absent", state={}, after={"x": 1}),
    ]
    stops = collect(dbg, script)
    assert where(stops) == [("bump", "after"), ("appear", "after"), ("remove", "after")]
    assert all(s.reason == StopReason.WATCH and s.breakpoints == (bp.id,) for s in stops)
    assert bp.hits == 3


def test_watch_a_nested_path_with_a_condition_on_value(dbg: flowdbg.Debugger) -> None:
    dbg.watch("msgs[-1].text", condition="value.startswith('error')")
    script = [
        U("a", state={"msgs": []}, after={"msgs": [{"text": "hello"}]}),
        U("b", state={"msgs": [{"text": "hello"}]}, after={"msgs": [{"text": "error: x"}]}),
        U("c", state={"msgs": [{"text": "error: x"}]}, after={"msgs": [{"text": "error: x"}]}),
        U("d", state={"msgs": [{"text": "error: x"}]}, after={"msgs": [{"text": "error: y"}]}),
    ]
    assert where(collect(dbg, script)) == [("b", "after"), ("d", "after")]


def test_watch_takes_the_state_view_prefix_and_refuses_other_views(dbg: flowdbg.Debugger) -> None:
    dbg.watch("state:count")  # as inspect names the state
    script = [
        U("same", state={"count": 1}, after={"count": 1}),
        U("bump", state={"count": 1}, after={"count": 2}),
    ]
    assert where(collect(dbg, script)) == [("bump", "after")]
    with pytest.raises(flowdbg.BreakpointError, match=r"names the view 'input'.*e\.g\. 'x'"):
        dbg.watch("input:x")


def test_watch_node_filter(dbg: flowdbg.Debugger) -> None:
    dbg.watch("n", node="w*")
    script = [
        U("a", state={"n": 0}, after={"n": 1}),
        U("writer", state={"n": 1}, after={"n": 2}),
        U("reader", state={"n": 2}, after={"n": 2}),
    ]
    assert where(collect(dbg, script)) == [("writer", "after")]


def test_watch_compares_with_the_state_the_unit_started_from(dbg: flowdbg.Debugger) -> None:
    dbg.watch("n")
    # the after state of the first unit differs from what the second starts from (another
    # branch wrote in between): each unit is judged by its own before and after
    script = [
        U("a", state={"n": 0}, after={"n": 0}),
        U("b", state={"n": 3}, after={"n": 3}),
    ]
    assert collect(dbg, script) == []


def test_watch_does_not_stop_where_the_after_state_is_unknown(dbg: flowdbg.Debugger) -> None:
    dbg.watch("count")
    # Unit.after documents state as "where the framework can show it": None means unknown
    script = [U("a", state={"count": 1}, output={"note": "x"}, after=None)]
    assert collect(dbg, script) == []


@pytest.mark.parametrize("path", ["a[", "_private", "a..b"])
def test_malformed_watch_path_is_refused_when_set(dbg: flowdbg.Debugger, path: str) -> None:
    with pytest.raises(flowdbg.FlowdbgError, match=re.escape(repr(path))):
        dbg.watch(path)
    assert dbg.breakpoints == []
    assert dbg.break_before("a").id == "bp-1"  # the refused watch took no id


def test_malformed_watch_path_is_a_breakpoint_error(dbg: flowdbg.Debugger) -> None:
    with pytest.raises(flowdbg.BreakpointError):
        dbg.watch("a[")


# -------------------------------------------------------------------------------------- tools

TOOLS = [
    U("search", kind="node", input={"q": "rm -rf /"}),  # a node named like the tool
    U("search", kind="tool", input={"q": "weather", "n": 3}),
    U("search", kind="tool", input={"q": "rm -rf /"}),
    U("shell", kind="tool", input="rm -rf /tmp"),  # arguments given as text
    U("search_web", kind="tool", input={"q": "x"}),
    U("search", kind="tool", input={"q": "x"}, error=OSError("offline")),
]


@pytest.mark.parametrize(
    ("name", "args_pattern", "expected"),
    [
        ("search", None, [1, 2, 5]),
        ("search*", None, [1, 2, 4, 5]),
        ("*", r"rm\s+-rf", [2, 3]),
        ("search", r'"n": 3', [1]),  # JSON with sorted keys, searched anywhere
        ("search", r"^\{", [1, 2, 5]),
        ("shell", r"^rm -rf /tmp$", [3]),  # text arguments are matched as they are
        ("search", "nothing-like-this", []),
    ],
)
def test_tool_breakpoint(
    dbg: flowdbg.Debugger, name: str, args_pattern: str | None, expected: list[int]
) -> None:
    bp = dbg.break_on_tool(name, args_pattern=args_pattern)
    stops = collect(dbg, TOOLS)
    assert [s.location.step for s in stops] == [i + 1 for i in expected]
    assert all(s.location.kind == "tool" and s.location.position == "before" for s in stops)
    assert bp.hits == len(expected)


def test_tool_breakpoint_bad_regex_is_refused(dbg: flowdbg.Debugger) -> None:
    with pytest.raises(flowdbg.BreakpointError, match="args_pattern"):
        dbg.break_on_tool("x", args_pattern="(")


def test_tool_breakpoint_condition_sees_args(dbg: flowdbg.Debugger) -> None:
    dbg.break_on_tool(condition="args.get('q') == 'x'")
    stops = collect(dbg, TOOLS)
    assert [s.location.step for s in stops] == [5, 6]
    assert stops[0].input == {"q": "x"}


# ----------------------------------------------------------------------------------- handoffs

HANDOFFS = [
    U("billing", kind="node"),
    U("billing", kind="handoff"),
    U("support", kind="handoff"),
    U("billing_eu", kind="handoff"),
    U("billing", kind="agent"),
]


@pytest.mark.parametrize(
    ("to", "expected"),
    [("billing", [2]), ("billing*", [2, 4]), ("*", [2, 3, 4]), ("sales", [])],
)
def test_handoff_breakpoint(dbg: flowdbg.Debugger, to: str, expected: list[int]) -> None:
    dbg.break_on_handoff(to)
    stops = collect(dbg, HANDOFFS)
    assert [s.location.step for s in stops] == expected
    assert all(s.location.kind == "handoff" for s in stops)


def test_handoff_breakpoint_at_an_after_point_matches_the_target_decided(
    dbg: flowdbg.Debugger,
) -> None:
    # where a handoff unit is named after its source and reports its target as the decision
    dbg.add_breakpoint(
        Breakpoint.create(
            "bp-1",
            BreakpointType.HANDOFF,
            pattern="billing",
            positions=("after",),
            kinds=("handoff",),
        )
    )
    script = [
        U("transfer", kind="handoff", decision="billing"),
        U("billing", kind="handoff", decision="support"),
        U("transfer", kind="handoff", decision=["billing"]),  # not a name: the unit's own
    ]
    assert [s.location.step for s in collect(dbg, script)] == [1]


# ---------------------------------------------------------------------------------- conditions

#: one unit of each sort, with distinct payloads at each point
COND = [
    U(
        "a",
        state={"n": 1},
        input={"q": "x"},
        output={"r": 1},
        after={"n": 1, "r": 1},
        decision="t",
        superstep=1,
        branch="b1",
    ),
    U(
        "t",
        kind="tool",
        state={"n": 2},
        input={"cmd": "ls"},
        output={"r": 2},
        after={"n": 2},
        superstep=2,
        branch="b1",
        attempt=2,
    ),
    U(
        "c",
        state={"n": 3},
        input={"q": "y"},
        error=ValueError("boom"),
        superstep=3,
        inner=(U("i", kind="llm", state={"n": 3}, input={"q": "z"}, output="o", after={"n": 3}),),
    ),
]
ALL: list[Point] = [
    ("a", "before"),
    ("a", "after"),
    ("t", "before"),
    ("t", "after"),
    ("c", "before"),
    ("i", "before"),
    ("i", "after"),
    ("c", "error"),
]


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("state['n'] == 2", [("t", "before"), ("t", "after")]),
        ("state == {'n': 1, 'r': 1}", [("a", "after")]),  # the state after the unit
        ("input == {'q': 'x'}", [("a", "before"), ("a", "after")]),  # after: what it received
        ("input == {'q': 'y'}", [("c", "before"), ("c", "error")]),  # error points see it too
        ("output == {'r': 1}", [("a", "after")]),
        ("output == 'o'", [("i", "after")]),
        ("args == {'cmd': 'ls'}", [("t", "before"), ("t", "after")]),
        ("args is not None", [("t", "before"), ("t", "after")]),  # a tool call's input only
        ("'boom' in str(error)", [("c", "error")]),
        ("error is not None and position != 'error'", []),
        ("node == 'i'", [("i", "before"), ("i", "after")]),
        ("step == 2", [("t", "before"), ("t", "after")]),
        ("step == 4", [("i", "before"), ("i", "after")]),  # a frame shares the step counter
        ("kind == 'llm'", [("i", "before"), ("i", "after")]),
        ("position == 'error'", [("c", "error")]),
        ("superstep == 3", [("c", "before"), ("c", "error")]),
        ("branch == 'b1'", ALL[:4]),
        ("attempt == 2", [("t", "before"), ("t", "after")]),
        ("path == ['c']", [("i", "before"), ("i", "after")]),
        ("decision == 't'", [("a", "after")]),
        ("value is None", ALL),  # only a watch binds a value
        ("hits < 3", ALL[:3]),  # hits counts the earlier matches of this breakpoint
        ("True", ALL),
        ("False", []),
    ],
)
def test_condition_names(dbg: flowdbg.Debugger, condition: str, expected: list[Point]) -> None:
    dbg.add_breakpoint(everywhere(condition=condition))
    assert where(collect(dbg, COND)) == expected


def test_callable_condition_sees_the_same_names(dbg: flowdbg.Debugger) -> None:
    seen: list[tuple[Any, ...]] = []

    def condition(ns: Any) -> bool:
        seen.append((ns.node, ns.position, ns["step"], ns.args, ns.hits))
        return bool(ns.kind == "tool")

    dbg.add_breakpoint(everywhere(condition=condition))
    assert where(collect(dbg, COND)) == [("t", "before"), ("t", "after")]
    assert seen[2:4] == [("t", "before", 2, {"cmd": "ls"}, 0), ("t", "after", 2, {"cmd": "ls"}, 1)]
    assert len(seen) == len(ALL)


def test_watch_condition_sees_value(dbg: flowdbg.Debugger) -> None:
    dbg.watch("n", condition="value > 1 and state['n'] == value")
    script = [
        U("a", state={"n": 0}, after={"n": 1}),
        U("b", state={"n": 1}, after={"n": 2}),
        U("c", state={"n": 2}, after={"n": 0}),
    ]
    assert where(collect(dbg, script)) == [("b", "after")]


def test_condition_that_raises_counts_as_false_and_is_reported_once(
    dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture
) -> None:
    failing = dbg.break_before("*", condition="state['missing'] > 1")
    plain = dbg.break_before("b")
    script = [U("a", state={}), U("b", state={}), U("c", state={})]
    with caplog.at_level(logging.WARNING, logger="flowdbg"):
        stops = collect(dbg, script)
    assert where(stops) == [("b", "before")]
    assert stops[0].breakpoints == (plain.id,)  # the failing one is not among them
    assert failing.hits == 0
    warnings = [r.getMessage() for r in caplog.records if r.name == "flowdbg"]
    assert len(warnings) == 1  # once per breakpoint and kind of failure, not at every point
    assert warnings[0].startswith(f"condition of {failing.id} failed at before node 'a'")
    assert "counts as false" in warnings[0] and "missing" in warnings[0]


def test_condition_failing_in_several_ways_is_reported_once(
    dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture
) -> None:
    bp = dbg.break_before("*", condition="state['n'] + 1 > 5")
    script = [
        U("a", state={}),  # a missing key
        U("b", state={"n": "x"}),  # a type error
        U("c", state={"n": 9}),  # true
    ]
    with caplog.at_level(logging.WARNING, logger="flowdbg"):
        stops = collect(dbg, script)
    assert where(stops) == [("c", "before")]
    assert stops[0].hits == {bp.id: 1}
    messages = [r.getMessage() for r in caplog.records if r.name == "flowdbg"]
    assert len(messages) == 1 and "before node 'a'" in messages[0]


def test_callable_condition_that_raises_counts_as_false(
    dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture
) -> None:
    def condition(ns: Any) -> bool:
        if ns.node.startswith("k"):
            raise KeyError(ns.node)
        if ns.node.startswith("t"):
            raise TypeError(ns.node)
        return True

    bp = dbg.break_before("*", condition=condition)
    script = [U("k1"), U("k2"), U("t1"), U("ok"), U("t2")]
    with caplog.at_level(logging.WARNING, logger="flowdbg"):
        stops = collect(dbg, script)
    assert where(stops) == [("ok", "before")]
    assert bp.hits == 1
    # a Python callable is reported once for each type of exception it raises
    messages = [r.getMessage() for r in caplog.records if r.name == "flowdbg"]
    assert [m.split(" failed at ")[1].split(" (")[0] for m in messages] == [
        "before node 'k1'",
        "before node 't1'",
    ]


# ------------------------------------------------------------------------------- hit conditions


@pytest.mark.parametrize(
    ("hit_condition", "stopping_hits"),
    [
        ("3", [3]),
        ("==3", [3]),
        (" >= 3 ", [3, 4, 5, 6]),
        (">3", [4, 5, 6]),
        ("<3", [1, 2]),
        ("<=3", [1, 2, 3]),
        ("%2", [2, 4, 6]),
        ("%1", [1, 2, 3, 4, 5, 6]),
        (2, [2]),
        ("7", []),
    ],
)
def test_hit_condition(
    dbg: flowdbg.Debugger, hit_condition: str | int, stopping_hits: list[int]
) -> None:
    bp = dbg.break_before("loop", hit_condition=hit_condition)
    stops = collect(dbg, [U("loop", state={"i": i}) for i in range(1, 7)])
    assert [s.hits[bp.id] for s in stops] == stopping_hits
    assert [s.state["i"] for s in stops] == stopping_hits  # the n-th unit is the n-th hit
    assert bp.hits == 6  # every match counts, stopping or not


def test_hit_condition_counts_only_points_where_the_condition_holds(
    dbg: flowdbg.Debugger,
) -> None:
    bp = dbg.break_before("*", condition="state['i'] % 2 == 0", hit_condition="2")
    stops = collect(dbg, [U("n", state={"i": i}) for i in range(1, 7)])
    assert [s.state["i"] for s in stops] == [4]  # the second even one
    assert bp.hits == 3


# ---------------------------------------------------------------------- temporary and disabled


def test_temporary_breakpoint_is_removed_after_its_first_stop(dbg: flowdbg.Debugger) -> None:
    temp = dbg.break_before("a", temporary=True)
    keep = dbg.break_before("b")
    stops = collect(dbg, [U("a"), U("b"), U("a"), U("b")])
    assert where(stops) == [("a", "before"), ("b", "before"), ("b", "before")]
    assert stops[0].breakpoints == (temp.id,)
    assert dbg.breakpoints == [keep]


def test_temporary_breakpoint_stays_until_it_actually_stops(dbg: flowdbg.Debugger) -> None:
    temp = dbg.break_before("a", temporary=True, hit_condition="2")
    seen: list[list[str]] = []
    stops = collect(
        dbg,
        [U("a", state={"i": i}) for i in range(1, 5)],
        at_stop=lambda s: seen.append([b.id for b in dbg.breakpoints]),
    )
    assert [s.state["i"] for s in stops] == [2]
    assert seen == [[]]  # already gone while its stop is open
    assert temp.hits == 2


def test_temporary_breakpoint_not_matching_stays(dbg: flowdbg.Debugger) -> None:
    temp = dbg.break_before("a", temporary=True, condition="state['go']")
    stops = collect(dbg, [U("a", state={"go": False}), U("a", state={"go": True}), U("a")])
    assert [s.location.step for s in stops] == [2]
    assert temp not in dbg.breakpoints


class StopCounter:
    """An observer plugin: notifies ``progress`` at every stop."""

    def __init__(self, progress: threading.Condition) -> None:
        self.progress = progress

    @flowdbg.hookimpl
    def flowdbg_on_stop(self, stop: flowdbg.Stop) -> None:
        with self.progress:
            self.progress.notify_all()


def test_temporary_breakpoint_stops_once_across_parallel_branches() -> None:
    progress = threading.Condition()
    dbg = flowdbg.Debugger(record=False, plugins=[StopCounter(progress)])
    both_matching = threading.Barrier(2)

    def condition(ns: Any) -> bool:
        # hold each branch inside matching until the other is there too, so that both have
        # seen the breakpoint before either stops
        both_matching.wait(T)
        return True

    dbg.break_before("p*", temporary=True, condition=condition)
    scope = dbg.begin_run(framework="test", name="t", input=None)
    finished: list[str] = []

    def branch(name: str) -> None:
        try:
            unit = scope.unit(name, superstep=1, branch=name)
            unit.before(state={})
            unit.after(output=None)
        finally:
            with progress:
                finished.append(name)
                progress.notify_all()

    threads = [threading.Thread(target=branch, args=(n,), daemon=True) for n in ("p1", "p2")]
    for thread in threads:
        thread.start()
    # each branch either stops or runs to its end: wait until both have done one or the other
    with progress:
        assert progress.wait_for(lambda: len(dbg.stops) + len(finished) == 2, T)
    stopped = len(dbg.stops)
    dbg.resume_all()
    for thread in threads:
        thread.join(T)
    scope.end(output=None)
    dbg.close()
    assert sorted(finished) == ["p1", "p2"]
    assert stopped == 1


def test_disabled_breakpoint_neither_stops_nor_counts(dbg: flowdbg.Debugger) -> None:
    off = dbg.break_before("a", enabled=False)
    on = dbg.break_after("a")
    stops = collect(dbg, [U("a"), U("a")])
    assert where(stops) == [("a", "after"), ("a", "after")]
    assert all(s.breakpoints == (on.id,) for s in stops)
    assert off.hits == 0
    assert "disabled" in off.describe()


def test_disabling_and_enabling_while_a_run_goes_on(dbg: flowdbg.Debugger) -> None:
    bp = dbg.break_before("a")

    def toggle(stop: flowdbg.Stop) -> None:
        if stop.location.step == 1:
            bp.enabled = False
        elif stop.location.step == 3:
            bp.enabled = True

    other = dbg.break_before("b")
    script = [U("a"), U("a"), U("b"), U("a"), U("a")]
    stops = collect(dbg, script, at_stop=toggle)
    assert [s.location.step for s in stops] == [1, 3, 4, 5]
    assert [s.breakpoints for s in stops] == [(bp.id,), (other.id,), (bp.id,), (bp.id,)]
    assert [s.hits.get(bp.id) for s in stops] == [1, None, 2, 3]  # no hit counted while off


# ----------------------------------------------------------------------------------- logpoints


class LogSink:
    """An observer plugin recording every logpoint message."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, str, str]] = []

    @flowdbg.hookimpl
    def flowdbg_on_log(self, breakpoint: Breakpoint, event: flowdbg.Event, message: str) -> None:
        self.messages.append((breakpoint.id, event.location.node, message))


def test_logpoint_logs_and_never_stops(caplog: pytest.LogCaptureFixture) -> None:
    sink = LogSink()
    dbg = flowdbg.Debugger(record=False, plugins=[sink])
    try:
        lp = dbg.logpoint("*", "{node}: n={state[n]} hit {hits}", condition="state['n'] > 0")
        script = [U("a", state={"n": 0}), U("b", state={"n": 1}), U("c", state={"n": 2})]
        with caplog.at_level(logging.INFO, logger="flowdbg.logpoint"):
            assert collect(dbg, script) == []
    finally:
        dbg.close()
    expected = ["b: n=1 hit 1", "c: n=2 hit 2"]
    assert [r.getMessage() for r in caplog.records if r.name == "flowdbg.logpoint"] == expected
    assert sink.messages == [(lp.id, "b", expected[0]), (lp.id, "c", expected[1])]
    assert lp.hits == 2


def test_logpoint_position_and_hit_condition(caplog: pytest.LogCaptureFixture) -> None:
    dbg = flowdbg.Debugger(record=False)
    try:
        dbg.logpoint("a", "out={output}", position="after", hit_condition="%2")
        script = [U("a", output=i) for i in range(1, 5)]
        with caplog.at_level(logging.INFO, logger="flowdbg.logpoint"):
            assert collect(dbg, script) == []
    finally:
        dbg.close()
    assert [r.getMessage() for r in caplog.records if r.name == "flowdbg.logpoint"] == [
        "out=2",
        "out=4",
    ]


def test_logpoint_next_to_a_breakpoint_is_not_a_reason_to_stop(
    dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture
) -> None:
    lp = dbg.logpoint("*", "at {node}")
    bp = dbg.break_before("b")
    with caplog.at_level(logging.INFO, logger="flowdbg.logpoint"):
        stops = collect(dbg, [U("a"), U("b")])
    assert where(stops) == [("b", "before")]
    assert stops[0].breakpoints == (bp.id,) and lp.id not in stops[0].hits
    assert [r.getMessage() for r in caplog.records if r.name == "flowdbg.logpoint"] == [
        "at a",
        "at b",
    ]


def test_logpoint_field_that_fails_renders_as_an_error(
    dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture
) -> None:
    dbg.logpoint("a", "x={state[x]} node={node}")
    with caplog.at_level(logging.INFO, logger="flowdbg.logpoint"):
        assert collect(dbg, [U("a", state={})]) == []
    assert [r.getMessage() for r in caplog.records if r.name == "flowdbg.logpoint"] == [
        "x=<error: KeyError 'x'> node=a"
    ]
