"""Debugger.save_breakpoints and Debugger.load_breakpoints: breakpoints kept in a JSON file."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from flowdbg import Debugger
from flowdbg.adapters.stategraph import END, StateGraph
from flowdbg.errors import BreakpointError


def every_kind(dbg: Debugger) -> None:
    dbg.break_before("classify", condition="state['x'] > 1", hit_condition=">=2", kind="node")
    dbg.break_after("refund", temporary=True, enabled=False)
    dbg.break_on_exception(ValueError, "TimeoutError")
    dbg.watch("reply", condition="value is not None")
    dbg.break_on_tool("shell", args_pattern=r"rm\s+-rf")
    dbg.break_on_handoff("billing")
    dbg.logpoint("sign", "reply is {state[reply]}", position="after")


def described(dbg: Debugger) -> list[str]:
    """Each breakpoint as it describes itself, without its id."""
    return [bp.describe().split(" ", 1)[1] for bp in dbg.breakpoints]


def test_a_saved_set_loads_the_same_in_another_debugger(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "bps.json"
    with Debugger(record=False) as first, Debugger(record=False) as second:
        every_kind(first)
        first.breakpoints[0].hits = 5
        saved = first.save_breakpoints(path)
        assert len(saved) == 7
        added = second.load_breakpoints(path)
        assert [bp.id for bp in added] == [f"bp-{i}" for i in range(1, 8)]
        # the same breakpoints, their hits counted afresh
        assert described(first)[0].endswith("(5 hits)")
        assert described(second) == [
            line.replace("(5 hits)", "(0 hits)") for line in described(first)
        ]
        tool = second.breakpoints[4]
        assert (tool.args_pattern, tool.kinds) == (r"rm\s+-rf", ("tool",))
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["flowdbg_breakpoints"] == 1
    first_saved = data["breakpoints"][0]
    assert first_saved == {
        "type": "node",
        "pattern": "classify",
        "positions": ["before"],
        "kinds": ["node"],
        "condition": "state['x'] > 1",
        "hit_condition": ">=2",
        "message": None,
        "temporary": False,
        "enabled": True,
        "exception_types": [],
        "watch_path": None,
        "args_pattern": None,
    }
    assert data["breakpoints"][2]["exception_types"] == ["builtins.ValueError", "TimeoutError"]


def test_a_restored_exception_breakpoint_still_stops(tmp_path: Path) -> None:
    def boom(state: dict) -> dict:
        raise ValueError("boom")

    g = StateGraph(name="g")
    g.add_node("boom", boom)
    g.set_entry_point("boom")
    g.add_edge("boom", END)
    graph = g.compile()
    path = tmp_path / "bps.json"
    with Debugger(record=False) as first:
        first.break_on_exception(ValueError)
        first.save_breakpoints(path)
    with Debugger(record=False) as dbg:
        dbg.load_breakpoints(path)
        dbg.attach(graph)
        handle = dbg.start(graph.invoke, {})
        stop = dbg.wait_for_stop(timeout=10)
        assert stop is not None and stop.error is not None and stop.error.type == "ValueError"
        dbg.resume()
        assert isinstance(handle.exception(timeout=10), ValueError)


def test_a_callable_condition_is_left_out_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "bps.json"
    with Debugger(record=False) as dbg:
        dbg.break_before("a", condition=lambda names: True)
        dbg.break_before("b")
        with pytest.warns(UserWarning, match=r"node 'a' before .* Python callable condition"):
            saved = dbg.save_breakpoints(path)
        assert [bp.pattern for bp in saved] == ["b"]
    assert [bp["pattern"] for bp in json.loads(path.read_text())["breakpoints"]] == ["b"]


def test_loading_twice_sets_each_once(tmp_path: Path) -> None:
    path = tmp_path / "bps.json"
    with Debugger(record=False) as dbg:
        dbg.break_before("a")
        dbg.save_breakpoints(path)
        assert dbg.load_breakpoints(path) == []
        dbg.break_before("a", condition="step > 1")  # another breakpoint: not the same
        dbg.clear()
        assert [bp.pattern for bp in dbg.load_breakpoints(path)] == ["a"]
        assert dbg.load_breakpoints(path) == []
        assert len(dbg.breakpoints) == 1


def test_keys_keep_several_sets_in_one_file(tmp_path: Path) -> None:
    path = tmp_path / "bps.json"
    with Debugger(record=False) as dbg:
        dbg.break_before("a")
        dbg.save_breakpoints(path, key="one.py:graph")
        dbg.clear()
        dbg.break_after("b")
        dbg.save_breakpoints(path, key="two.py:graph")
    with Debugger(record=False) as dbg:
        assert [bp.pattern for bp in dbg.load_breakpoints(path, key="one.py:graph")] == ["a"]
        assert dbg.load_breakpoints(path, key="three.py:graph") == []
        dbg.clear()
        dbg.save_breakpoints(path, key="one.py:graph")  # none: the key goes
    assert list(json.loads(path.read_text())["targets"]) == ["two.py:graph"]


def test_a_breakpoint_that_no_longer_checks_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "bps.json"
    with Debugger(record=False) as dbg:
        dbg.break_before("a")
        dbg.break_before("b")
        dbg.save_breakpoints(path)
    data = json.loads(path.read_text())
    data["breakpoints"][0]["condition"] = "__import__('os')"
    path.write_text(json.dumps(data))
    with Debugger(record=False) as dbg, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        added = dbg.load_breakpoints(path)
    assert [bp.pattern for bp in added] == ["b"]
    (warning,) = caught
    assert "saved breakpoint 'node' 'a'" in str(warning.message)
    assert "cannot be set and is left out" in str(warning.message)


def test_missing_and_foreign_files_are_refused(tmp_path: Path) -> None:
    with Debugger(record=False) as dbg:
        with pytest.raises(BreakpointError, match=r"no saved breakpoints at '.*nothing.json'"):
            dbg.load_breakpoints(tmp_path / "nothing.json")
        other = tmp_path / "other.json"
        other.write_text('{"name": "not breakpoints"}')
        with pytest.raises(BreakpointError, match=r"is not a breakpoints file of this flowdbg"):
            dbg.load_breakpoints(other)
        other.write_text("[1, 2")
        with pytest.raises(BreakpointError, match=r"is not a breakpoints file \(not JSON"):
            dbg.load_breakpoints(other)
