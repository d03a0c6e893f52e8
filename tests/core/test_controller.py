"""The execution controller, driven through the runtime directly (no graph engine).

Branches are threads (a stop blocks the calling thread) or asyncio/trio tasks (a stop suspends
the calling task); every wait has a timeout, and branches are sequenced with events, never with
sleeps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import flowdbg
from flowdbg import Breakpoint, BreakpointType, StopReason

T = 10.0  # seconds any wait may take before the test fails

_SAME: Any = object()


@pytest.fixture
def dbg() -> Iterator[flowdbg.Debugger]:
    d = flowdbg.Debugger(record=False)
    yield d
    d.close()  # a failed test may leave branches held: they end with Terminated


class Worker:
    """Runs ``fn(*args, **kwargs)`` on its own thread and keeps what it returned or raised."""

    def __init__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.value: Any = None
        self.exc: BaseException | None = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(fn, args, kwargs), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            self.value = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the test, which checks it
            self.exc = exc
        finally:
            self.done.set()

    def result(self) -> Any:
        assert self.done.wait(T), "the branch did not finish"
        if self.exc is not None:
            raise self.exc
        return self.value

    def exception(self) -> BaseException | None:
        assert self.done.wait(T), "the branch did not finish"
        return self.exc


def through(
    scope: flowdbg.RunScope,
    name: str,
    *,
    state: Any = None,
    input: Any = _SAME,
    output: Any = None,
    after: Any = None,
    kind: str = "node",
    superstep: int | None = None,
    branch: str | None = None,
    between: Callable[[flowdbg.Unit], None] | None = None,
) -> tuple[Any, Any]:
    """Report one unit; returns what ``before`` and ``after`` gave back."""
    unit = scope.unit(name, kind=kind, superstep=superstep, branch=branch)
    if input is _SAME:
        got = unit.before(state=state)
    else:
        got = unit.before(state=state, input=input)
    if between is not None:
        between(unit)
    try:
        out = unit.after(output=output, state=after)
    except BaseException as exc:
        unit.discard(exc)
        raise
    return got, out


def run_of(dbg: flowdbg.Debugger, *names: str) -> Callable[[], None]:
    """A sequential run of units called ``names``."""

    def play() -> None:
        scope = dbg.begin_run(framework="test", name="t", input=None)
        try:
            for i, name in enumerate(names, 1):
                through(scope, name, state={"i": i}, superstep=i)
        except BaseException as exc:
            scope.end(error=exc)
            raise
        scope.end(output=None)

    return play


def gate_wait(gate: threading.Event) -> None:
    assert gate.wait(T), "the test never opened the gate"


# ------------------------------------------------------------------------------ reason strength


def failing_unit(dbg: flowdbg.Debugger) -> None:
    scope = dbg.begin_run(framework="test", name="t", input=None)
    unit = scope.unit("f")
    unit.before(state={"n": 0})
    exc = ValueError("bad")
    try:
        unit.error(exc, state={"n": 1})
    except BaseException as other:  # Terminated
        scope.end(error=other)
        raise
    scope.end(error=exc)
    raise exc  # as an adapter does after the error point


def _error_bp(which: str, bp_id: str) -> Breakpoint:
    if which == "exception":
        return Breakpoint.create(bp_id, BreakpointType.EXCEPTION, positions=("error",))
    if which == "watch":
        return Breakpoint.create(bp_id, BreakpointType.WATCH, watch_path="n", positions=("error",))
    return Breakpoint.create(bp_id, BreakpointType.NODE, positions=("error",))


@pytest.mark.parametrize(
    ("kinds", "reason"),
    [
        (["exception", "watch", "node"], StopReason.EXCEPTION),
        (["node", "watch", "exception"], StopReason.EXCEPTION),
        (["node", "exception"], StopReason.EXCEPTION),
        (["watch", "exception"], StopReason.EXCEPTION),
        (["watch", "node"], StopReason.WATCH),
        (["node", "watch"], StopReason.WATCH),
        (["node"], StopReason.BREAKPOINT),
    ],
)
def test_strongest_breakpoint_reason_wins_whatever_the_order(
    dbg: flowdbg.Debugger, kinds: list[str], reason: StopReason
) -> None:
    ids = [dbg.add_breakpoint(_error_bp(k, f"bp-{i}")).id for i, k in enumerate(kinds, 1)]
    handle = dbg.start(failing_unit, dbg)
    stop = dbg.wait_for_stop(T)
    assert stop is not None
    assert stop.reason == reason
    assert stop.breakpoints == tuple(ids)  # every matching breakpoint is named
    dbg.resume()
    with pytest.raises(ValueError, match="bad"):
        handle.result(T)


def test_breakpoint_is_stronger_than_step(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("a")
    bp = dbg.break_before("b")
    handle = dbg.start(run_of(dbg, "a", "b", "c"))
    assert (first := dbg.wait_for_stop(T)) is not None and first.location.node == "a"
    dbg.step_over()
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "b"
    assert stop.reason == StopReason.BREAKPOINT and stop.breakpoints == (bp.id,)
    dbg.resume()  # the stop at b ended the step: c does not stop
    assert dbg.wait_for_stop(T) is None
    handle.result(T)


def test_step_is_stronger_than_pause(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("a")
    between_units = threading.Event()
    gate = threading.Event()

    def play() -> None:
        scope = dbg.begin_run(framework="test", name="t", input=None)
        through(scope, "a", superstep=1)
        between_units.set()
        gate_wait(gate)
        through(scope, "b", superstep=2)
        scope.end(output=None)

    handle = dbg.start(play)
    assert dbg.wait_for_stop(T) is not None
    dbg.step_over()
    assert between_units.wait(T)  # past a's after point, where a pause alone would stop
    dbg.pause()  # both the step and the pause apply at b
    gate.set()
    stop = dbg.wait_for_stop(T)
    assert stop is not None and (stop.location.node, stop.location.position) == ("b", "before")
    assert stop.reason == StopReason.STEP
    dbg.resume()
    handle.result(T)


def test_pause_is_stronger_than_entry() -> None:
    dbg = flowdbg.Debugger(record=False, stop_on_entry=True)
    try:
        scope = dbg.begin_run(framework="test", name="t", input=None)
        dbg.pause()
        worker = Worker(lambda: (through(scope, "a"), through(scope, "b")))
        stop = dbg.wait_for_stop(T)
        assert stop is not None and stop.location.node == "a"
        assert stop.reason == StopReason.PAUSE
        dbg.resume()  # ends the pause, and the run has had its entry stop
        worker.result()
        scope.end(output=None)
        assert dbg.stops == []
    finally:
        dbg.close()


def test_entry_stops_once_per_top_level_run_and_yields_to_breakpoints() -> None:
    dbg = flowdbg.Debugger(record=False, stop_on_entry=True)
    try:

        def play() -> None:
            scope = dbg.begin_run(framework="test", name="t", input=None)
            outer = scope.unit("outer")
            outer.before(state={})
            child = dbg.begin_run(framework="test", name="child", input=None)
            through(child, "inner")  # a child run has no entry stop of its own
            child.end(output=None)
            outer.after(output=None)
            through(scope, "b")
            scope.end(output=None)

        reasons = []
        for _ in range(2):  # each new top-level run stops at its entry again
            handle = dbg.start(play)
            while (stop := dbg.wait_for_stop(T)) is not None:
                reasons.append((stop.location.node, stop.reason))
                dbg.resume()
            handle.result(T)
        assert reasons == [("outer", StopReason.ENTRY)] * 2
        bp = dbg.break_before("outer")
        handle = dbg.start(play)
        stop = dbg.wait_for_stop(T)
        assert stop is not None and stop.reason == StopReason.BREAKPOINT
        assert stop.breakpoints == (bp.id,)
        dbg.resume()
        assert dbg.wait_for_stop(T) is None  # no second stop for the entry
        handle.result(T)
    finally:
        dbg.close()


# ------------------------------------------------------------------- several stops at once


def parallel(
    dbg: flowdbg.Debugger, names: tuple[str, ...], **kwargs: Any
) -> tuple[flowdbg.RunScope, dict[str, Worker]]:
    """Begin a run and report one unit per name, each on its own branch and thread."""
    scope = dbg.begin_run(framework="test", name="t", input=None)
    workers = {
        name: Worker(through, scope, name, state={"who": name}, superstep=1, branch=name, **kwargs)
        for name in names
    }
    return scope, workers


def test_parallel_branches_stop_at_once_and_resume_one_by_one(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("p*")
    scope, workers = parallel(dbg, ("p1", "p2", "p3"))
    stops = dbg.wait_for_stops(3, T)
    assert len(stops) == 3
    by_node = {s.location.node: s for s in stops}
    assert set(by_node) == {"p1", "p2", "p3"}
    assert {s.location.branch for s in stops} == {"p1", "p2", "p3"}
    assert len({s.id for s in stops}) == 3
    # the oldest stop is selected; select() changes what inspect, set and resume act on
    assert dbg.stop is stops[0] and dbg.wait_for_stop(0) is stops[0]
    assert dbg.select(by_node["p2"].id) is by_node["p2"]
    assert dbg.stop is by_node["p2"] and dbg.status().selected == by_node["p2"].id
    assert dbg.inspect("who") == "p2"
    dbg.set("who", "edited")
    assert dbg.resume() is by_node["p2"]
    assert workers["p2"].result()[0] == {"who": "edited"}
    assert not by_node["p2"].is_open
    # the others are still held, and a remaining stop is selected again
    assert by_node["p1"].is_open and by_node["p3"].is_open
    assert not workers["p1"].done.is_set() and not workers["p3"].done.is_set()
    assert dbg.stop in (by_node["p1"], by_node["p3"])
    # resume a stop by id that is not the selected one
    dbg.select(by_node["p1"].id)
    dbg.resume(by_node["p3"].id)
    assert workers["p3"].result()[0] == {"who": "p3"}
    assert dbg.stop is by_node["p1"] and by_node["p1"].is_open
    with pytest.raises(flowdbg.StopNotFound, match=by_node["p1"].id):
        dbg.resume(by_node["p3"].id)  # closed: the message lists the open ones
    assert dbg.resume_all() == [by_node["p1"]]
    assert workers["p1"].result()[0] == {"who": "p1"}
    assert dbg.stops == [] and dbg.stop is None
    scope.end(output=None)


def test_resume_all_releases_every_branch(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("p*")
    scope, workers = parallel(dbg, ("p1", "p2"))
    stops = dbg.wait_for_stops(2, T)
    assert len(stops) == 2
    assert sorted(s.location.node for s in dbg.resume_all()) == ["p1", "p2"]
    assert [w.result()[0] for w in workers.values()] == [{"who": "p1"}, {"who": "p2"}]
    assert dbg.resume_all() == []
    scope.end(output=None)
    assert dbg.status().state == "idle"


def test_edits_go_to_the_branch_of_the_stop_named(dbg: flowdbg.Debugger) -> None:
    dbg.break_after("p*")
    scope, workers = parallel(dbg, ("p1", "p2"), output={"v": 0})
    stops = {s.location.node: s for s in dbg.wait_for_stops(2, T)}
    assert len(stops) == 2
    dbg.set("v", 1, stop=stops["p1"].id)
    dbg.set("v", 2, stop=stops["p2"].id)
    dbg.delete("v", stop=stops["p2"].id)
    dbg.set("w", 3, stop=stops["p2"].id)
    dbg.resume_all()
    assert workers["p1"].result()[1] == {"v": 1}
    assert workers["p2"].result()[1] == {"w": 3}
    scope.end(output=None)


def test_wait_for_stops_returns_what_is_open_on_timeout(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("p1")
    scope, workers = parallel(dbg, ("p1", "p2"))
    workers["p2"].result()  # p2 does not stop
    stops = dbg.wait_for_stops(2, 0.05)
    assert [s.location.node for s in stops] == ["p1"]
    dbg.resume()
    workers["p1"].result()
    scope.end(output=None)


# ------------------------------------------------------------------------------------ edits


def test_before_returns_the_input_edited_at_its_stop(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("a")
    state = {"x": 1, "nested": {"y": 2}}
    scope = dbg.begin_run(framework="test", name="t", input=None)
    worker = Worker(through, scope, "a", state=state)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.editable == "input"
    dbg.set("nested.y", 20)
    dbg.set("added", True)
    assert dbg.inspect("nested.y") == 20  # shown at once
    dbg.resume()
    got, _ = worker.result()
    assert got == {"x": 1, "nested": {"y": 20}, "added": True}
    assert state == {"x": 1, "nested": {"y": 2}}  # the caller's object is left alone
    scope.end(output=None)


def test_before_returns_the_very_same_input_when_nothing_was_edited(
    dbg: flowdbg.Debugger,
) -> None:
    dbg.break_before("a")
    dbg.break_after("a")
    payload, output = {"q": 1}, {"r": 2}
    scope = dbg.begin_run(framework="test", name="t", input=None)
    worker = Worker(through, scope, "a", state={}, input=payload, output=output)
    for _ in range(2):
        assert dbg.wait_for_stop(T) is not None
        dbg.resume()
    got, out = worker.result()
    assert got is payload and out is output
    scope.end(output=None)


def test_before_with_its_own_input_edits_the_input(dbg: flowdbg.Debugger) -> None:
    dbg.break_on_tool("search")
    state, args = {"messages": 3}, {"q": "old"}
    scope = dbg.begin_run(framework="test", name="t", input=None)
    worker = Worker(through, scope, "search", kind="tool", state=state, input=args)
    assert dbg.wait_for_stop(T) is not None
    dbg.set("q", "new")
    assert dbg.inspect("q", source="input") == "new"
    assert dbg.inspect("args:q") == dbg.inspect("q") == "new"  # a tool's input is its args
    assert dbg.inspect("state:messages") == 3  # the state is shown, unedited
    # (input:messages would add an argument: the tool does not receive the state)
    with pytest.raises(
        flowdbg.EditRefused,
        match=r"and 'search' does not receive 'messages' \(its input has 'q'\): the state "
        r"cannot be edited at this stop$",
    ):
        dbg.set("state:messages", 4)
    with pytest.raises(flowdbg.PathError, match=r"the unit has not run yet at a before stop"):
        dbg.inspect("result:")  # a tool's result, at its before stop
    # a path error names the view it failed in
    with pytest.raises(flowdbg.PathError, match=r"^input has no key 'zz' at 'zz'; available"):
        dbg.delete("zz")
    with pytest.raises(flowdbg.PathError, match=r"^input has no key 'zz' at 'zz' in 'zz.a'"):
        dbg.set("zz.a", 1)
    dbg.resume()
    got, _ = worker.result()
    assert got == {"q": "new"}
    assert args == {"q": "old"} and state == {"messages": 3}
    scope.end(output=None)


def test_a_key_with_a_colon_is_read_and_edited_in_brackets(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("a")
    scope = dbg.begin_run(framework="test", name="t", input=None)
    worker = Worker(through, scope, "a", state={"a:b": 1})
    assert dbg.wait_for_stop(T) is not None
    assert dbg.inspect("['a:b']") == dbg.inspect("input:['a:b']") == 1
    dbg.set("['a:b']", 2)
    assert dbg.inspect("['a:b']") == 2
    dbg.resume()
    got, _ = worker.result()
    assert got == {"a:b": 2}
    scope.end(output=None)


@pytest.mark.parametrize(
    ("output", "edit", "expected"),
    [
        ({"v": 1}, ("set", "v", 5), {"v": 5}),
        ({"v": 1, "w": 2}, ("delete", "w", None), {"v": 1}),
        (None, ("set", "v", 5), {"v": 5}),  # a unit that returned nothing gets an update
        ([1, 2], ("set", "[0]", 9), [9, 2]),
    ],
)
def test_after_returns_the_output_edited_at_its_stop(
    dbg: flowdbg.Debugger, output: Any, edit: tuple[str, str, Any], expected: Any
) -> None:
    dbg.break_after("a")
    scope = dbg.begin_run(framework="test", name="t", input=None)
    worker = Worker(through, scope, "a", state={"v": 0}, output=output, after={"v": 0})
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.editable == "output"
    how, path, value = edit
    if how == "set":
        dbg.set(path, value)
    else:
        dbg.delete(path)
    assert stop.output == expected
    dbg.resume()
    assert worker.result()[1] == expected
    scope.end(output=None)


def test_error_stop_refuses_edits_and_the_original_exception_goes_on(
    dbg: flowdbg.Debugger,
) -> None:
    dbg.break_on_exception()
    handle = dbg.start(failing_unit, dbg)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.editable is None
    original = stop.exception
    with pytest.raises(flowdbg.FlowdbgError, match="error point"):
        dbg.set("n", 5)
    dbg.resume()
    with pytest.raises(ValueError) as info:
        handle.result(T)
    assert info.value is original


# --------------------------------------------------------------------------------- stepping


def nested(dbg: flowdbg.Debugger) -> None:
    """outer (calls call1, call2 in its frame, then runs the child run sub: s1, s2), next, last.

    Before points in order: outer, call1, call2, s1, s2, next, last.
    """
    scope = dbg.begin_run(framework="test", name="root", input=None)
    try:
        outer = scope.unit("outer", superstep=1)
        outer.before(state={})
        frame = outer.frame()
        for name in ("call1", "call2"):
            through(frame, name, kind="tool", input={"n": name})
        sub = dbg.begin_run(framework="test", name="sub", input=None)  # outer is current
        for i, name in enumerate(("s1", "s2"), 1):
            through(sub, name, superstep=i)
        sub.end(output=None)
        outer.after(output=None)
        through(scope, "next", superstep=2)
        through(scope, "last", superstep=3)
    except BaseException as exc:
        scope.end(error=exc)
        raise
    scope.end(output=None)


def drive(
    dbg: flowdbg.Debugger, fn: Callable[[flowdbg.Debugger], None], actions: list[str]
) -> list[str]:
    """Run ``fn`` and answer its stops with ``actions`` in turn (then ``resume``); returns
    ``node:position:depth:reason`` of every stop."""
    handle = dbg.start(fn, dbg)
    todo = list(actions)
    seen = []
    while (stop := dbg.wait_for_stop(T)) is not None:
        loc = stop.location
        seen.append(f"{loc.node}:{loc.position}:{loc.depth}:{stop.reason.value}")
        getattr(dbg, todo.pop(0) if todo else "resume")()
    handle.result(T)
    assert todo == [], f"the run ended with actions left: {todo}"
    return seen


B, S = "breakpoint", "step"


@pytest.mark.parametrize(
    ("bp", "actions", "expected"),
    [
        (
            "outer",
            ["step_over", "step_over", "step_over"],
            [f"outer:before:0:{B}", f"next:before:0:{S}", f"last:before:0:{S}"],
        ),
        (
            "outer",
            ["step_into"] * 6,
            [
                f"outer:before:0:{B}",
                f"call1:before:1:{S}",
                f"call2:before:1:{S}",
                f"s1:before:1:{S}",
                f"s2:before:1:{S}",
                f"next:before:0:{S}",
                f"last:before:0:{S}",
            ],
        ),
        ("call1", ["step_out"], [f"call1:before:1:{B}", f"next:before:0:{S}"]),
        (
            "call1",
            ["step_over", "step_over"],
            [f"call1:before:1:{B}", f"call2:before:1:{S}", f"s1:before:1:{S}"],
        ),
        ("s1", ["step_out"], [f"s1:before:1:{B}", f"next:before:0:{S}"]),
        ("s2", ["step_over"], [f"s2:before:1:{B}", f"next:before:0:{S}"]),
        ("s1", ["step_into"], [f"s1:before:1:{B}", f"s2:before:1:{S}"]),
        ("last", ["step_out"], [f"last:before:0:{B}"]),  # at the top level: to the end
        ("next", ["step_over", "step_over"], [f"next:before:0:{B}", f"last:before:0:{S}"]),
    ],
)
def test_stepping_across_frames_and_child_runs(
    dbg: flowdbg.Debugger, bp: str, actions: list[str], expected: list[str]
) -> None:
    dbg.break_before(bp)
    assert drive(dbg, nested, actions) == expected


def test_step_over_from_an_after_stop(dbg: flowdbg.Debugger) -> None:
    dbg.break_after("outer")
    assert drive(dbg, nested, ["step_over"]) == [f"outer:after:0:{B}", f"next:before:0:{S}"]


def test_stops_in_frames_and_child_runs_show_where_they_sit(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("outer")
    dbg.break_before("s1")
    dbg.break_before("call1")
    handle = dbg.start(nested, dbg)
    stops = []
    while (stop := dbg.wait_for_stop(T)) is not None:
        stops.append(stop)
        dbg.resume()
    handle.result(T)
    outer, call1, s1 = (s.location for s in stops)
    assert (outer.path, outer.parent_run_id) == ((), None)
    assert (call1.path, call1.run_id, call1.step) == (("outer",), outer.run_id, 2)
    assert s1.path == ("outer",) and s1.parent_run_id == outer.run_id
    assert s1.run_id != outer.run_id and s1.step == 1  # a child run counts its own steps
    children = dbg.run_log(outer.run_id).children
    assert [c.run.run_id for c in children] == [s1.run_id]


def test_a_breakpoint_hit_while_stepping_over_ends_the_step(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("outer")
    dbg.break_before("s1")
    # without the breakpoint at s1 the step would stop at next; with it, resuming at s1
    # lets the run go to its end
    assert drive(dbg, nested, ["step_over", "resume"]) == [
        f"outer:before:0:{B}",
        f"s1:before:1:{B}",
    ]


def test_step_over_stops_at_the_error_point_with_reason_step(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("f")
    handle = dbg.start(failing_unit, dbg)
    assert dbg.wait_for_stop(T) is not None
    dbg.step_over()
    stop = dbg.wait_for_stop(T)
    assert stop is not None
    assert (stop.location.node, stop.location.position, stop.reason) == (
        "f",
        "error",
        StopReason.STEP,
    )
    assert isinstance(stop.exception, ValueError)
    dbg.resume()
    with pytest.raises(ValueError):
        handle.result(T)


def test_stepping_one_branch_leaves_its_parallel_sibling_alone(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("p1")
    scope = dbg.begin_run(framework="test", name="t", input=None)
    p1 = Worker(through, scope, "p1", superstep=1, branch="p1")
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "p1"
    dbg.step_over()
    p1.result()
    # the sibling in the same superstep is another branch: the step does not stop it
    p2 = Worker(through, scope, "p2", superstep=1, branch="p2")
    p2.result()
    assert dbg.stops == []
    # the join in a later superstep continues p1's line: the step stops there
    join = Worker(through, scope, "join", superstep=2, branch="join")
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "join"
    assert stop.reason == StopReason.STEP
    dbg.resume()
    join.result()
    scope.end(output=None)


def test_stepping_follows_causes_where_there_are_no_supersteps(dbg: flowdbg.Debugger) -> None:
    # An event-driven framework: each step runs in its own worker (branch), without
    # supersteps; a step's cause is the step whose event started it.
    dbg.break_before("a")
    scope = dbg.begin_run(framework="test", name="t", input=None)
    first: list[flowdbg.Unit] = []

    def a() -> None:
        unit = scope.unit("a", branch="w1")
        unit.before(state={})
        first.append(unit)
        unit.after(output={"event": "go"})

    worker = Worker(a)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "a"
    dbg.step_over()
    worker.result()
    # a step of another line of execution (no cause, another worker) does not end the step
    other = scope.unit("x", branch="w3")
    other.before(state={})
    other.after(output=None)
    assert dbg.stops == []

    # the step the event of "a" started, in another worker, does
    def b() -> None:
        unit = scope.unit("b", branch="w2", cause=first[0])
        unit.before(state={})
        unit.after(output=None)

    worker = Worker(b)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "b"
    assert stop.reason == StopReason.STEP
    dbg.step_over()
    worker.result()

    # and so on down the chain of causes
    def c() -> None:
        unit = scope.unit("c", branch="w4", cause=scope.units[-1])
        unit.before(state={})
        unit.after(output=None)

    worker = Worker(c)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "c"
    dbg.resume()
    worker.result()
    scope.end(output=None)


@pytest.mark.parametrize("origin", ["p1", "p2"])
def test_stepping_from_either_of_two_causes_reaches_the_unit_they_start(
    dbg: flowdbg.Debugger, origin: str
) -> None:
    # A model turn receives the results of two parallel tool calls (branches, no supersteps):
    # its cause is both, so stepping over either lands on it.
    scope = dbg.begin_run(framework="test", name="t", input=None)
    fan = scope.unit("fan")
    fan.before(state={})
    fan.after(output=None)
    dbg.break_before(origin)
    branches: dict[str, flowdbg.Unit] = {}

    def branch(name: str) -> None:
        unit = branches[name] = scope.unit(name, branch=name, cause=fan)
        unit.before(state={})
        unit.after(output=None)

    held = Worker(branch, origin)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == origin
    dbg.step_over()
    held.result()
    branch("p2" if origin == "p1" else "p1")  # the sibling's line: no stop
    assert dbg.stops == []

    def turn() -> None:
        unit = scope.unit("turn", cause=(branches["p1"], branches["p2"]))
        unit.before(state={})
        unit.after(output=None)

    join = Worker(turn)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "turn"
    assert stop.reason == StopReason.STEP
    dbg.resume()
    join.result()
    scope.end(output=None)


# ------------------------------------------------------------------------------------ pause


def test_pause_stops_every_branch_at_its_next_point(dbg: flowdbg.Debugger) -> None:
    scope = dbg.begin_run(framework="test", name="t", input=None)
    arrived = {name: threading.Event() for name in ("p1", "p2", "p3")}
    gate = threading.Event()

    def branch(name: str, inside: bool) -> list[str]:
        def wait_in_unit(unit: flowdbg.Unit) -> None:
            if inside:  # held between the before and after points of a unit
                arrived[name].set()
                gate_wait(gate)

        through(scope, f"{name}.a", branch=name, superstep=1, between=wait_in_unit)
        if not inside:  # held between two units
            arrived[name].set()
            gate_wait(gate)
        through(scope, f"{name}.b", branch=name, superstep=2)
        return [name]

    workers = [Worker(branch, "p1", False), Worker(branch, "p2", False), Worker(branch, "p3", True)]
    assert all(event.wait(T) for event in arrived.values())
    assert dbg._ctl.quiet  # the points so far took the fast path: pause must turn it off
    dbg.pause()
    gate.set()
    stops = dbg.wait_for_stops(3, T)
    assert sorted((s.location.node, s.location.position) for s in stops) == [
        ("p1.b", "before"),
        ("p2.b", "before"),
        ("p3.a", "after"),
    ]
    assert all(s.reason == StopReason.PAUSE and s.breakpoints == () for s in stops)
    dbg.resume_all()
    # the pause is over: the remaining points do not stop
    assert [w.result() for w in workers] == [["p1"], ["p2"], ["p3"]]
    assert dbg.stops == []
    scope.end(output=None)


# -------------------------------------------------------------------------------- terminate


def test_terminate_ends_held_and_running_branches(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("held")
    scope = dbg.begin_run(framework="test", name="t", input=None)
    inside = threading.Event()
    gate = threading.Event()

    def running() -> None:
        def wait(unit: flowdbg.Unit) -> None:
            inside.set()
            gate_wait(gate)

        through(scope, "running", branch="r", superstep=1, between=wait)

    body_ran: list[str] = []
    held = Worker(
        through, scope, "held", branch="h", superstep=1, between=lambda u: body_ran.append("held")
    )
    run = Worker(running)
    assert dbg.wait_for_stop(T) is not None and inside.wait(T)
    assert dbg.terminate() == [scope.run_id]
    assert isinstance(held.exception(), flowdbg.Terminated)  # released at once
    assert body_ran == []  # raised at its before point: the held unit never runs
    assert dbg.stops == []
    assert not run.done.is_set()
    gate.set()  # the running branch reaches its after point, which ends it
    assert isinstance(run.exception(), flowdbg.Terminated)
    # a unit begun after terminate ends at its before point
    with pytest.raises(flowdbg.Terminated):
        through(scope, "later")
    scope.end(error=flowdbg.Terminated())
    assert scope.info.status == flowdbg.RunStatus.TERMINATED
    statuses = {u.node: u.status for u in scope.units}
    assert statuses == {"held": "terminated", "running": "terminated", "later": "terminated"}


def test_terminate_without_breakpoints_still_reaches_the_next_point(
    dbg: flowdbg.Debugger,
) -> None:
    # with nothing to stop at, points take the fast path: terminate must turn it off
    scope = dbg.begin_run(framework="test", name="t", input=None)
    assert dbg._ctl.quiet
    inside = threading.Event()
    gate = threading.Event()

    def play() -> None:
        outer = scope.unit("outer")
        outer.before(state={})
        child = dbg.begin_run(framework="test", name="child", input=None)
        through(child, "c1")
        inside.set()
        gate_wait(gate)
        try:
            through(child, "c2")
        except BaseException as exc:
            child.end(error=exc)
            outer.discard(exc)
            raise

    worker = Worker(play)
    assert inside.wait(T)
    dbg.terminate()
    assert not dbg._ctl.quiet
    gate.set()
    assert isinstance(worker.exception(), flowdbg.Terminated)
    scope.end(error=worker.exc)
    assert dbg._ctl.quiet  # the run has ended: the fast path is back
    assert run_of(dbg, "a")() is None  # and the next run is unaffected


# ---------------------------------------------------------------------------------- waiting


def test_wait_for_stop_returns_none_when_the_run_ends_first(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("nothing-matches")
    gate = threading.Event()
    scope = dbg.begin_run(framework="test", name="t", input=None)

    def play() -> None:
        gate_wait(gate)
        through(scope, "a")
        scope.end(output=None)

    worker = Worker(play)
    assert dbg.wait_for_stop(0.05) is None  # the run is still going: a timeout
    assert not worker.done.is_set()
    gate.set()
    started = time.monotonic()
    assert dbg.wait_for_stop(T) is None
    assert time.monotonic() - started < T / 2  # woken by the run's end, not the timeout
    worker.result()
    assert dbg.status().state == "idle"


def test_wait_for_stop_waits_for_a_run_still_to_begin(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("a")
    handle = dbg.start(run_of(dbg, "a"))  # counted from here, before its run begins
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "a"
    dbg.resume()
    assert dbg.wait_for_stop(T) is None
    handle.result(T)


# ----------------------------------------------------------------------- the fast-path flags


def flags(dbg: flowdbg.Debugger) -> bool:
    """Whether the debugger is on its fast path (nothing can stop, log or observe)."""
    return dbg._ctl.quiet


def test_fast_path_flags_follow_the_breakpoints(dbg: flowdbg.Debugger) -> None:
    assert flags(dbg) is True
    before = dbg.break_before("a")
    assert flags(dbg) is False  # something may stop
    after = dbg.break_after("a")
    assert flags(dbg) is False
    dbg.remove(after)
    assert flags(dbg) is False
    dbg.remove(before)
    assert flags(dbg) is True
    cases: list[tuple[Callable[[], Breakpoint], bool]] = [
        (lambda: dbg.watch("x"), False),
        (lambda: dbg.break_on_exception(), False),
        (lambda: dbg.break_on_tool(), False),
        (lambda: dbg.break_on_handoff(), False),
        (lambda: dbg.break_on_event(), False),
        (lambda: dbg.logpoint("a", "m"), False),
        (lambda: dbg.logpoint("a", "m", position="after"), False),
    ]
    for add, expected in cases:
        bp = add()
        assert flags(dbg) == expected, bp.describe()
        dbg.remove(bp)
        assert flags(dbg) is True
    dbg.break_after("a")
    dbg.break_before("b")
    dbg.clear()
    assert flags(dbg) is True


def test_a_temporary_breakpoint_going_away_restores_the_fast_path(dbg: flowdbg.Debugger) -> None:
    dbg.break_after("a", temporary=True)
    assert flags(dbg) is False
    handle = dbg.start(run_of(dbg, "a", "b"))
    assert dbg.wait_for_stop(T) is not None
    assert flags(dbg) is True  # removed when it stopped
    dbg.resume()
    handle.result(T)


def test_fast_path_flags_follow_pause_and_stepping(dbg: flowdbg.Debugger) -> None:
    scope = dbg.begin_run(framework="test", name="t", input=None)
    dbg.pause()
    assert flags(dbg) is False
    worker = Worker(through, scope, "a", superstep=1)
    assert dbg.wait_for_stop(T) is not None
    dbg.step_over()  # the pause ends, a step is pending
    worker.result()
    assert flags(dbg) is False
    scope.end(output=None)  # the run's end drops its pending step
    assert flags(dbg) is True
    dbg.pause()
    dbg.terminate()  # ends the pause too
    assert flags(dbg) is True


def test_a_pause_left_when_the_runs_end_does_not_stop_the_next_run(
    dbg: flowdbg.Debugger,
) -> None:
    scope = dbg.begin_run(framework="test", name="t", input=None)
    through(scope, "a")
    dbg.pause()  # asked for just as the run ends: no point of it is left
    scope.end(output=None)
    assert flags(dbg) is True
    handle = dbg.start(run_of(dbg, "b"))
    assert dbg.wait_for_stop(T) is None
    handle.result(T)


def test_fast_path_flags_with_entry_stops_and_observers() -> None:
    class EventObserver:
        @flowdbg.hookimpl
        def flowdbg_on_event(self, event: flowdbg.Event) -> None:
            pass

    with flowdbg.Debugger(record=False, stop_on_entry=True) as d:
        assert flags(d) is False
    with flowdbg.Debugger(record=False, plugins=[EventObserver()]) as d:
        assert flags(d) is False
    with flowdbg.Debugger(record=False) as d:
        d.register_plugin(EventObserver())
        assert flags(d) is False


def test_after_state_is_resolved_only_when_someone_looks(dbg: flowdbg.Debugger) -> None:
    calls: list[Any] = []

    def resolve(output: Any) -> tuple[Any, Any]:
        calls.append(output)
        return {"v": output["v"]}, "next"

    def play() -> Any:
        scope = dbg.begin_run(framework="test", name="t", input=None)
        unit = scope.unit("a")
        unit.before(state={"v": 0})
        out = unit.after(output={"v": 1}, resolve=resolve)
        scope.end(output=out)
        return out

    dbg.break_before("zzz")
    dbg.start(play).result(T)
    assert calls == []  # no breakpoint reads an after state
    dbg.clear()
    bp = dbg.break_after("a")
    handle = dbg.start(play)
    stop = dbg.wait_for_stop(T)
    assert stop is not None
    assert (stop.state, stop.decision) == ({"v": 1}, "next")  # a stop shows them
    assert calls == [{"v": 1}]
    dbg.resume()
    assert handle.result(T) == {"v": 1}
    dbg.remove(bp)
    assert dbg._ctl.quiet
    dbg.start(play).result(T)
    assert calls == [{"v": 1}]  # nothing looks again


# ------------------------------------------------------------------------------------ hooks


class Observer:
    """Records stops and resumes as an observer plugin sees them."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    @flowdbg.hookimpl
    def flowdbg_on_stop(self, stop: flowdbg.Stop) -> None:
        self.seen.append(("stop", stop.location.node))

    @flowdbg.hookimpl
    def flowdbg_on_resume(self, stop: flowdbg.Stop, action: str) -> None:
        self.seen.append((action, stop.location.node))


def test_observers_see_every_stop_and_how_it_was_left() -> None:
    observer = Observer()
    with flowdbg.Debugger(record=False, plugins=[observer]) as dbg:
        dbg.break_before("a")
        handle = dbg.start(run_of(dbg, "a", "b", "c"))
        for action in ("step_over", "step_into", "terminate"):
            assert dbg.wait_for_stop(T) is not None
            getattr(dbg, action)()
        with pytest.raises(flowdbg.Terminated):
            handle.result(T)
    assert observer.seen == [
        ("stop", "a"),
        ("step_over", "a"),
        ("stop", "b"),
        ("step_into", "b"),
        ("stop", "c"),
        ("terminate", "c"),
    ]


# ----------------------------------------------------------------------- asyncio and trio

BACKENDS = ["asyncio", "trio"]


class StopFeed:
    """An observer plugin counting stops, awaited by a test running on the same event loop.

    ``flowdbg_on_stop`` runs in the task that stops, on the loop's own thread, so setting an
    anyio event there is safe; only use it where every branch is a task of that loop.
    """

    def __init__(self) -> None:
        self.count = 0
        self._changed: anyio.Event | None = None

    @flowdbg.hookimpl
    def flowdbg_on_stop(self, stop: flowdbg.Stop) -> None:
        self.count += 1
        if self._changed is not None:
            self._changed.set()

    async def until(self, count: int) -> None:
        with anyio.fail_after(T):
            while self.count < count:
                self._changed = anyio.Event()
                await self._changed.wait()


async def athrough(
    scope: flowdbg.RunScope,
    name: str,
    *,
    state: Any = None,
    output: Any = None,
    branch: str | None = None,
    superstep: int | None = None,
    inside: Callable[[], Any] | None = None,
) -> tuple[Any, Any]:
    """Async form of :func:`through`; ``inside`` is awaited between the two points."""
    unit = scope.unit(name, superstep=superstep, branch=branch)
    got = await unit.abefore(state=state)
    if inside is not None:
        await inside()
    try:
        out = await unit.aafter(output=output, state=state)
    except BaseException as exc:
        unit.discard(exc)
        raise
    return got, out


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_branches_stop_edit_and_resume_one_by_one(backend: str) -> None:
    feed = StopFeed()
    dbg = flowdbg.Debugger(record=False, plugins=[feed])
    dbg.break_before("p*")
    dbg.break_after("p2")
    results: dict[str, Any] = {}

    async def branch(scope: flowdbg.RunScope, name: str) -> None:
        results[name] = await athrough(
            scope, name, state={"who": name}, output={"out": name}, branch=name, superstep=1
        )

    async def main() -> None:
        scope = dbg.begin_run(framework="test", name="t", input=None)
        async with anyio.create_task_group() as tg:
            tg.start_soon(branch, scope, "p1")
            tg.start_soon(branch, scope, "p2")
            await feed.until(2)
            stops = {s.location.node: s for s in dbg.stops}
            assert set(stops) == {"p1", "p2"}
            assert await dbg.wait_for_stop_async(T) is dbg.stops[0]  # the selected one
            dbg.set("who", "edited", stop=stops["p2"].id)
            dbg.resume(stops["p2"].id)
            await feed.until(3)  # p2 goes on to its after stop while p1 stays held
            assert stops["p1"].is_open and "p1" not in results
            p2_after = next(s for s in dbg.stops if s.location.node == "p2")
            assert p2_after.location.position == "after"
            dbg.set("out", "changed", stop=p2_after.id)
            assert len(dbg.resume_all()) == 2
        scope.end(output=None)

    try:
        anyio.run(main, backend=backend)
    finally:
        dbg.close()
    assert results == {
        "p1": ({"who": "p1"}, {"out": "p1"}),
        "p2": ({"who": "edited"}, {"out": "changed"}),
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_exception_stop_lets_the_original_exception_go_on(backend: str) -> None:
    dbg = flowdbg.Debugger(record=False)
    bp = dbg.break_on_exception(KeyError)
    error = KeyError("gone")

    async def failing(scope: flowdbg.RunScope) -> None:
        unit = scope.unit("f")
        await unit.abefore(state={"n": 1})
        try:
            raise error
        except KeyError as exc:
            await unit.aerror(exc, state={"n": 2})
            raise

    async def main() -> BaseException | None:
        scope = dbg.begin_run(framework="test", name="t", input=None)
        caught: BaseException | None = None

        async def run_it() -> None:
            nonlocal caught
            try:
                await failing(scope)
            except KeyError as exc:
                caught = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_it)
            stop = await dbg.wait_for_stop_async(T)
            assert stop is not None and stop.reason == StopReason.EXCEPTION
            assert stop.breakpoints == (bp.id,) and stop.exception is error
            assert (stop.state_before, stop.state) == ({"n": 1}, {"n": 2})
            dbg.resume()
        scope.end(error=caught)
        return caught

    try:
        assert anyio.run(main, backend=backend) is error
    finally:
        dbg.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_pause_and_terminate(backend: str) -> None:
    feed = StopFeed()
    dbg = flowdbg.Debugger(record=False, plugins=[feed])
    outcome: dict[str, BaseException | None] = {}

    async def main() -> None:
        scope = dbg.begin_run(framework="test", name="t", input=None)
        gate = anyio.Event()
        arrived = {"p1": anyio.Event(), "p2": anyio.Event(), "p3": anyio.Event()}
        finished = {name: anyio.Event() for name in arrived}

        async def branch(name: str) -> None:
            async def wait() -> None:
                arrived[name].set()
                await gate.wait()

            try:
                await athrough(scope, f"{name}.a", branch=name, superstep=1, inside=wait)
                await athrough(scope, f"{name}.b", branch=name, superstep=2)
                outcome[name] = None
            except BaseException as exc:  # Terminated, checked below
                outcome[name] = exc
                if not isinstance(exc, flowdbg.Terminated):
                    raise
            finally:
                finished[name].set()

        async with anyio.create_task_group() as tg:
            for name in arrived:
                tg.start_soon(branch, name)
            with anyio.fail_after(T):
                for event in arrived.values():
                    await event.wait()
            dbg.pause()
            gate.set()
            await feed.until(3)  # each task at its next point: the after point of its unit
            stops = dbg.stops
            assert sorted((s.location.node, s.location.position) for s in stops) == [
                ("p1.a", "after"),
                ("p2.a", "after"),
                ("p3.a", "after"),
            ]
            assert all(s.reason == StopReason.PAUSE for s in stops)
            p3 = next(s for s in stops if s.location.node == "p3.a")
            dbg.resume(p3.id)  # p3 runs to its end (the pause ended with this resume)
            with anyio.fail_after(T):
                await finished["p3"].wait()
            assert [s.is_open for s in stops if s is not p3] == [True, True]
            assert dbg.terminate() == [scope.run_id]  # ends the two tasks still held
        scope.end(error=flowdbg.Terminated())

    try:
        anyio.run(main, backend=backend)
    finally:
        dbg.close()
    assert outcome["p3"] is None
    assert isinstance(outcome["p1"], flowdbg.Terminated)
    assert isinstance(outcome["p2"], flowdbg.Terminated)


async def anested(dbg: flowdbg.Debugger) -> None:
    """Async form of :func:`nested`: outer (call1 in its frame, child run s1), next."""
    scope = dbg.begin_run(framework="test", name="root", input=None)
    outer = scope.unit("outer", superstep=1)
    await outer.abefore(state={})
    await athrough(outer.frame(), "call1")
    sub = dbg.begin_run(framework="test", name="sub", input=None)  # a child run of outer
    await athrough(sub, "s1", superstep=1)
    sub.end(output=None)
    await outer.aafter(output=None)
    await athrough(scope, "next", superstep=2)
    scope.end(output=None)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("actions", "expected"),
    [
        (["step_over"], ["outer:0", "next:0"]),
        (["step_into", "step_into", "step_into"], ["outer:0", "call1:1", "s1:1", "next:0"]),
        (["step_into", "step_out"], ["outer:0", "call1:1", "next:0"]),
    ],
)
def test_async_stepping(backend: str, actions: list[str], expected: list[str]) -> None:
    dbg = flowdbg.Debugger(record=False)
    dbg.break_before("outer")

    async def main() -> list[str]:
        seen = []
        todo = list(actions)
        async with anyio.create_task_group() as tg:
            tg.start_soon(anested, dbg)
            while (stop := await dbg.wait_for_stop_async(T)) is not None:
                seen.append(f"{stop.location.node}:{stop.location.depth}")
                getattr(dbg, todo.pop(0) if todo else "resume")()
        assert todo == []
        return seen

    try:
        assert anyio.run(main, backend=backend) == expected
    finally:
        dbg.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_wait_for_stop_returns_none_when_the_run_ends(backend: str) -> None:
    dbg = flowdbg.Debugger(record=False)
    dbg.break_before("nothing-matches")

    async def main() -> tuple[Any, float]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anested, dbg)
            started = time.monotonic()
            stop = await dbg.wait_for_stop_async(T)
        return stop, time.monotonic() - started

    try:
        stop, waited = anyio.run(main, backend=backend)
    finally:
        dbg.close()
    assert stop is None
    assert waited < T / 2  # woken by the run's end, not the timeout


# ----------------------------------------------------------------- state resolved on demand


def test_the_state_before_a_unit_is_resolved_only_when_someone_looks(
    dbg: flowdbg.Debugger,
) -> None:
    calls: list[str] = []

    def play(name: str) -> Any:
        def state() -> dict[str, Any]:
            calls.append(name)
            return {"n": len(calls)}

        scope = dbg.begin_run(framework="test", name="t", input=None)
        unit = scope.unit(name)
        got = unit.before(input={"arg": name}, resolve=state)
        unit.after(output=None)
        scope.end(output=None)
        return got

    dbg.start(play, "a").result(T)
    dbg.break_before("zzz")
    dbg.break_before("*", condition="input['arg'] == 'never'")  # reads the input, not the state
    dbg.start(play, "b").result(T)
    assert calls == []
    dbg.break_before("c", condition="state['n'] == 1")  # names the state: it is resolved
    handle = dbg.start(play, "c")
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.state == {"n": 1} and stop.input == {"arg": "c"}
    dbg.resume()
    assert handle.result(T) == {"arg": "c"}
    assert calls == ["c"]


def test_a_watch_resolves_the_state_before_the_unit_it_watches(dbg: flowdbg.Debugger) -> None:
    def play(before: int, after: int) -> None:
        scope = dbg.begin_run(framework="test", name="t", input=None)
        unit = scope.unit("w")
        unit.before(input=None, resolve=lambda: {"count": before})
        unit.after(output=None, resolve=lambda output: ({"count": after}, None))
        scope.end(output=None)

    dbg.watch("count")
    dbg.start(play, 1, 1).result(T)  # unchanged: no stop
    assert dbg.stops == []
    handle = dbg.start(play, 1, 2)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.reason == StopReason.WATCH
    assert (stop.state_before, stop.state) == ({"count": 1}, {"count": 2})
    dbg.resume()
    handle.result(T)


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_state_providers_are_awaited_only_where_a_stop_may_look(backend: str) -> None:
    feed = StopFeed()
    dbg = flowdbg.Debugger(record=False, plugins=[feed])
    awaited: list[str] = []

    async def store(name: str) -> dict[str, Any]:
        await anyio.lowlevel.checkpoint()  # a state that lives behind await
        awaited.append(name)
        return {"where": name}

    async def after_store(output: Any) -> tuple[Any, Any]:
        await anyio.lowlevel.checkpoint()
        awaited.append("after")
        return {"where": "after", "out": output}, "next"

    async def unit_of(scope: flowdbg.RunScope, name: str) -> Any:
        unit = scope.unit(name)
        await unit.abefore(input={"x": 1}, resolve=lambda: store(name))
        return await unit.aafter(output={"y": 2}, resolve=after_store)

    async def main() -> None:
        scope = dbg.begin_run(framework="test", name="t", input=None)
        await unit_of(scope, "quiet")
        dbg.break_before("other")
        await unit_of(scope, "unmatched")
        assert awaited == []  # nothing could look at these points
        dbg.break_before("held")
        dbg.break_after("held")
        async with anyio.create_task_group() as tg:
            tg.start_soon(unit_of, scope, "held")
            await feed.until(1)
            (stop,) = dbg.stops
            assert stop.state == {"where": "held"}
            dbg.resume()
            await feed.until(2)
            (stop,) = dbg.stops
            assert (stop.state, stop.decision) == ({"where": "after", "out": {"y": 2}}, "next")
            dbg.resume()
        scope.end(output=None)

    try:
        anyio.run(main, backend=backend)
    finally:
        dbg.close()
    assert awaited == ["held", "after"]


# ------------------------------------------------------------ what is running, and terminate


def test_a_unit_that_cannot_be_interrupted_is_named_and_recorded(tmp_path: Any) -> None:
    dbg = flowdbg.Debugger(db=tmp_path / "hung.db")
    started, release = threading.Event(), threading.Event()

    def play() -> None:
        with dbg.begin_run(framework="test", name="t", input=None) as scope:
            through(scope, "fast", state={})
            unit = scope.unit("boom")
            unit.before(state={})
            started.set()
            gate_wait(release)  # a sync call nothing can interrupt
            unit.after(output=None)  # raises Terminated: the run was terminated meanwhile
            scope.end(output=None)

    try:
        handle = dbg.start(play)
        assert started.wait(T)
        (running,) = dbg.status().running
        assert (running["node"], running["step"], running["kind"]) == ("boom", 2, "node")
        assert running["seconds"] >= 0
        assert dbg.terminate() == [handle.run_id]
        with pytest.raises(TimeoutError, match=r"terminated, but 'boom' \(step 2, .*is still"):
            handle.result(0.05)
        assert dbg.flush(T) and dbg.store is not None
        steps = dbg.store.get_steps(handle.run_id or "")
        assert [(s.node, s.status) for s in steps] == [("fast", "completed"), ("boom", "running")]
        release.set()
        assert isinstance(handle.exception(T), flowdbg.Terminated)
        assert dbg.status().running == []
        assert dbg.flush(T)
        assert dbg.store.get_steps(handle.run_id or "")[1].status == "terminated"
    finally:
        release.set()
        dbg.close()


def test_a_unit_held_at_a_stop_is_not_running(dbg: flowdbg.Debugger) -> None:
    dbg.break_after("a")
    handle = dbg.start(run_of(dbg, "a"))
    assert dbg.wait_for_stop(T) is not None
    assert dbg.status().running == []  # held, not running
    dbg.resume()
    handle.result(T)


def test_a_failed_run_with_calls_keeps_no_exception_alive() -> None:
    import gc

    dbg = flowdbg.Debugger(record=False)

    def play() -> None:
        with dbg.begin_run(framework="test", name="t", input=None) as scope:
            unit = scope.unit("node")
            unit.before(state={})
            unit.frame().unit("tool", kind="tool").call(lambda args: "ok", {"q": 1})
            error = ValueError("boom")
            unit.error(error, state={})
            raise error

    handle = dbg.start(play)
    error = handle.exception(T)
    assert isinstance(error, ValueError)
    gc.collect()
    holders = [
        type(holder).__name__
        for holder in gc.get_referrers(error)
        if type(holder).__module__.startswith("flowdbg.")
        and not isinstance(holder, flowdbg.RunHandle)
    ]
    assert holders == []
    dbg.close()


def test_a_pattern_with_a_path_stops_only_where_the_unit_runs(dbg: flowdbg.Debugger) -> None:
    # "agent/search": the tool search called by the unit agent, not a search run elsewhere
    bp = dbg.break_before("agent/search")
    after = dbg.break_after("*/sea*")

    def play() -> None:
        scope = dbg.begin_run(framework="test", name="t", input=None)
        through(scope, "search", kind="tool", input={"q": "top"})
        agent = scope.unit("agent", kind="agent")
        agent.before(input={})
        through(agent.frame(), "search", kind="tool", input={"q": "inner"})
        agent.after(output=None)
        scope.end(output=None)

    worker = Worker(play)
    stops = []
    while (stop := dbg.wait_for_stop(T)) is not None:
        loc = stop.location
        stops.append((loc.path, loc.node, loc.position, stop.breakpoints, dbg.inspect("input:q")))
        dbg.resume()
    worker.result()
    assert stops == [
        (("agent",), "search", "before", (bp.id,), "inner"),
        (("agent",), "search", "after", (after.id,), "inner"),
    ]


def test_a_unit_whose_own_name_has_a_slash_is_matched_by_its_name(dbg: flowdbg.Debugger) -> None:
    bp = dbg.break_before("tools/search")

    def play() -> None:
        scope = dbg.begin_run(framework="test", name="t", input=None)
        through(scope, "tools/search", input={"q": 1})
        scope.end(output=None)

    worker = Worker(play)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.breakpoints == (bp.id,)
    dbg.resume()
    worker.result()


def test_refuse_unknown_arguments_names_the_first_and_what_the_callee_takes() -> None:
    from flowdbg.errors import refuse_unknown_arguments

    refuse_unknown_arguments("tool 'search'", {"query": "x"}, ["query", "limit"])  # accepted
    with pytest.raises(flowdbg.EditRefused) as refused:
        refuse_unknown_arguments("tool 'search'", {"query": "x", "lmit": 3, "z": 1}, ["query"])
    assert str(refused.value) == "tool 'search' takes no argument 'lmit'; its arguments are query"
    with pytest.raises(flowdbg.EditRefused) as refused:
        refuse_unknown_arguments("tool 'now'", ["tz"], ())
    assert str(refused.value) == "tool 'now' takes no arguments, so it has no 'tz' to set"


def test_validation_details_list_each_error_with_its_path() -> None:
    from pydantic import BaseModel, ValidationError

    from flowdbg.errors import validation_details

    class Address(BaseModel):
        zip: int

    class Order(BaseModel):
        to: Address
        qty: int

    with pytest.raises(ValidationError) as caught:
        Order.model_validate({"to": {"zip": "x"}})
    assert validation_details(caught.value) == (
        "to.zip: Input should be a valid integer, unable to parse string as an integer; "
        "qty: Field required"
    )
    with pytest.raises(ValidationError) as whole:
        Address.model_validate("nope")
    assert validation_details(whole.value).startswith("(whole value): Input should be")
    assert validation_details(ValueError("plain")) == "plain"
