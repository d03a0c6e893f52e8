"""The adapter-facing runtime and the controller, driven directly as an adapter would."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import flowdbg
from flowdbg.controller import _same_branch

T = 10.0  # generous timeout for every wait; tests never sleep and hope


@pytest.fixture
def dbg() -> Any:
    d = flowdbg.Debugger()
    yield d
    if d.stops or d.active_runs:
        d.terminate()


def run_units(
    dbg: flowdbg.Debugger,
    names: list[str],
    state: dict[str, Any],
    *,
    kind: str = "node",
    inputs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A tiny sequential 'framework': each unit increments state[name]."""
    scope = dbg.begin_run(framework="manual", name="seq", input=state)
    try:
        for i, name in enumerate(names, 1):
            unit = scope.unit(name, kind=kind, superstep=i, branch=f"{i}:{name}")
            given = (inputs or {}).get(name, state)
            got = unit.before(state=state, input=given)
            if given is state:
                state = dict(got)
            new = dict(state)
            new[name] = new.get(name, 0) + 1
            out = unit.after(output={name: new[name]}, state=new)
            state = {**state, **out}
    except BaseException as exc:
        scope.end(error=exc)
        raise
    scope.end(output=state)
    return state


def test_quiet_fast_path_returns_input_unchanged(dbg: flowdbg.Debugger) -> None:
    assert dbg._ctl.quiet
    assert run_units(dbg, ["a", "b"], {}) == {"a": 1, "b": 1}
    dbg.break_before("zzz")
    assert not dbg._ctl.quiet
    dbg.clear()
    assert dbg._ctl.quiet


def test_wait_for_stop_before_any_run_waits_for_timeout(dbg: flowdbg.Debugger) -> None:
    assert dbg.wait_for_stop(0.05) is None
    assert dbg.status().state == "idle"


def test_sync_stop_blocks_only_its_thread_and_edits_reach_the_unit(
    dbg: flowdbg.Debugger,
) -> None:
    dbg.break_before("b")
    run = dbg.start(run_units, dbg, ["a", "b", "c"], {})
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "b"
    assert dbg.status().state == "stopped"
    assert not run.done()
    assert dbg.wait_for_stop(0) is stop  # returns at once while open
    dbg.set("extra", 5)
    assert dbg.inspect("extra") == 5
    dbg.resume()
    assert run.result(T) == {"a": 1, "extra": 5, "b": 1, "c": 1}
    assert dbg.wait_for_stop(T) is None
    assert run.run_id is not None


def test_stop_to_dict_is_json(dbg: flowdbg.Debugger) -> None:
    dbg.break_after("a")
    run = dbg.start(run_units, dbg, ["a"], {"obj": object()})
    stop = dbg.wait_for_stop(T)
    assert stop is not None
    data = json.loads(json.dumps(stop.to_dict()))
    assert data["reason"] == "breakpoint"
    assert data["location"]["node"] == "a" and data["location"]["position"] == "after"
    assert data["breakpoints"] == ["bp-1"]
    assert data["editable"] == "output"
    dbg.resume()
    run.result(T)


def test_async_stop_suspends_only_its_task() -> None:
    dbg = flowdbg.Debugger()
    dbg.break_before("b")
    ticks = 0

    async def unit_task() -> Any:
        scope = dbg.begin_run(framework="manual", name="async", input={})
        unit = scope.unit("b")
        got = await unit.abefore(state={"v": 1})
        out = await unit.aafter(output={"v": got["v"] + 1})
        scope.end(output=out)
        return out

    async def ticker(stop_seen: anyio.Event) -> None:
        nonlocal ticks
        while not stop_seen.is_set():
            ticks += 1
            await anyio.sleep(0)

    async def main() -> Any:
        stop_seen = anyio.Event()
        result: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:

            async def run_it() -> None:
                result["v"] = await unit_task()

            tg.start_soon(run_it)
            tg.start_soon(ticker, stop_seen)
            stop = await dbg.wait_for_stop_async(T)
            assert stop is not None and stop.location.node == "b"
            before = ticks
            await anyio.sleep(0.01)
            assert ticks > before  # the loop kept running while the task was stopped
            dbg.set("v", 41)
            stop_seen.set()
            dbg.resume()
        return result["v"]

    assert anyio.run(main) == {"v": 42}


def test_async_stop_under_trio() -> None:
    pytest.importorskip("trio")
    dbg = flowdbg.Debugger()
    dbg.break_before("b")

    async def main() -> Any:
        out: dict[str, Any] = {}

        async def run_it() -> None:
            scope = dbg.begin_run(framework="manual", name="trio", input={})
            unit = scope.unit("b")
            got = await unit.abefore(state={"v": 1})
            out["v"] = await unit.aafter(output=got)
            scope.end(output=out["v"])

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_it)
            stop = await dbg.wait_for_stop_async(T)
            assert stop is not None
            # resume from another thread: the trio task must be woken thread-safely
            await anyio.to_thread.run_sync(dbg.resume)
        return out["v"]

    assert anyio.run(main, backend="trio") == {"v": 1}


def test_cancelled_stopped_task_closes_its_stop() -> None:
    dbg = flowdbg.Debugger()
    dbg.break_before("b")

    async def main() -> None:
        scope = dbg.begin_run(framework="manual", name="c", input={})
        task = asyncio.ensure_future(scope.unit("b").abefore(state={}))
        stop = await dbg.wait_for_stop_async(T)
        assert stop is not None and dbg.stops == [stop]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert dbg.stops == []
        scope.end(output=None)

    asyncio.run(main())


def test_idle_timeout_auto_resumes(caplog: pytest.LogCaptureFixture) -> None:
    dbg = flowdbg.Debugger(idle_timeout=0.05)
    dbg.break_before("a")
    with caplog.at_level(logging.WARNING, logger="flowdbg"):
        assert run_units(dbg, ["a"], {}) == {"a": 1}
    assert "idle" in caplog.text
    assert dbg.stops == []


def test_terminate_at_a_stop_raises_terminated_in_the_run(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("b")
    run = dbg.start(run_units, dbg, ["a", "b", "c"], {})
    assert dbg.wait_for_stop(T) is not None
    assert dbg.terminate() == [run.run_id]
    with pytest.raises(flowdbg.Terminated):
        run.result(T)
    assert dbg.status().state == "terminated"
    dbg.clear()
    assert run_units(dbg, ["a"], {}) == {"a": 1}  # the next run is unaffected
    assert dbg.status().state == "idle"


def test_the_unit_held_when_a_run_is_terminated_is_no_error(tmp_path: Any) -> None:
    dbg = flowdbg.Debugger(db=tmp_path / "t.db")
    dbg.break_before("b")
    run = dbg.start(run_units, dbg, ["a", "b", "c"], {})
    assert dbg.wait_for_stop(T) is not None
    dbg.terminate()
    with pytest.raises(flowdbg.Terminated):
        run.result(T)
    log = run.log
    assert [(s.node, s.status) for s in log.steps] == [("a", "completed"), ("b", "terminated")]
    assert log.errors == []
    assert ", 0 errors" in log.summary()
    assert dbg.flush(T)
    assert dbg.store is not None
    recorded = dbg.store.get_steps(run.run_id or "")
    assert [(s.node, s.status) for s in recorded] == [("a", "completed"), ("b", "terminated")]
    assert recorded[1].error is not None and recorded[1].error.type == "Terminated"
    dbg.close()


def test_terminated_passes_through_except_exception(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("b")

    def framework_that_catches_everything() -> str:
        try:
            run_units(dbg, ["a", "b"], {})
        except Exception:  # a framework's broad handler must not swallow Terminated
            return "swallowed"
        return "finished"

    run = dbg.start(framework_that_catches_everything)
    assert dbg.wait_for_stop(T) is not None
    dbg.terminate()
    with pytest.raises(flowdbg.Terminated):
        run.result(T)


def test_tool_breakpoint_matches_serialized_arguments(dbg: flowdbg.Debugger) -> None:
    dbg.break_on_tool("shell", args_pattern=r"rm\s+-rf")
    args = {"shell": {"cmd": "rm -rf /tmp/x"}}
    run = dbg.start(run_units, dbg, ["ls_tool", "shell"], {}, kind="tool", inputs=args)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "shell"
    assert stop.location.kind == "tool"
    assert dbg.inspect("cmd", source="input") == "rm -rf /tmp/x"
    dbg.set("cmd", "ls /tmp/x")
    dbg.resume()
    run.result(T)


def test_inspect_names_the_source_it_reads_in_errors(dbg: flowdbg.Debugger) -> None:
    dbg.break_on_tool("shell")
    args = {"shell": {"cmd": "rm -rf /tmp/x"}}
    run = dbg.start(run_units, dbg, ["shell"], {}, kind="tool", inputs=args)
    assert dbg.wait_for_stop(T) is not None
    with pytest.raises(flowdbg.PathError, match=r"^input has no key 'nosuch' "):
        dbg.inspect("nosuch", source="input")
    with pytest.raises(
        flowdbg.PathError,
        match=r"^stop-1 has no output view: the unit has not run yet at a before stop .*; "
        r"its views are state, input, args$",
    ):
        dbg.inspect("x", source="output")
    with pytest.raises(flowdbg.PathError, match=r"has no error view: the unit has no error"):
        dbg.inspect("x", source="error")
    dbg.resume()
    run.result(T)


def test_tool_breakpoint_ignores_non_matching_arguments(dbg: flowdbg.Debugger) -> None:
    dbg.break_on_tool("shell", args_pattern=r"rm\s+-rf")
    args = {"shell": {"cmd": "ls"}}
    assert run_units(dbg, ["shell"], {}, kind="tool", inputs=args) == {"shell": 1}
    assert dbg.breakpoints[0].hits == 0


def test_handoff_breakpoint_matches_target(dbg: flowdbg.Debugger) -> None:
    dbg.break_on_handoff(to="billing")
    assert run_units(dbg, ["support"], {}, kind="handoff") == {"support": 1}
    run = dbg.start(run_units, dbg, ["support", "billing"], {}, kind="handoff")
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.node == "billing"
    dbg.resume()
    run.result(T)


def test_break_on_event_single_steps_everything(dbg: flowdbg.Debugger) -> None:
    dbg.break_on_event("*")
    run = dbg.start(run_units, dbg, ["a", "b", "c"], {})
    seen = []
    for _ in range(3):
        stop = dbg.wait_for_stop(T)
        assert stop is not None
        seen.append((stop.location.node, stop.location.position))
        dbg.resume()
    run.result(T)
    assert seen == [("a", "before"), ("b", "before"), ("c", "before")]


def test_condition_error_counts_as_false_and_warns_once(
    dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture
) -> None:
    dbg.break_before("*", condition="state['missing'] > 1")
    with caplog.at_level(logging.WARNING, logger="flowdbg"):
        assert run_units(dbg, ["a", "b"], {}) == {"a": 1, "b": 1}
    assert caplog.text.count("condition of bp-1 failed") == 1


def test_callable_condition_and_serialization(dbg: flowdbg.Debugger) -> None:
    bp = dbg.break_before("b", condition=lambda ns: ns.state.get("a") == 1)
    data = bp.model_dump()
    assert data["has_callable_condition"] is True and data["condition"] is None
    with pytest.raises(flowdbg.BreakpointError, match="callable"):
        dbg.add_breakpoint(data)
    saved = dbg.break_after("c", condition="state['a'] == 1", hit_condition=">=2").model_dump()
    restored = flowdbg.Debugger().add_breakpoint(json.loads(json.dumps(saved)))
    assert restored.condition == "state['a'] == 1" and restored.hit_condition == ">=2"
    run = dbg.start(run_units, dbg, ["a", "b"], {})
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.breakpoints == (bp.id,)
    dbg.resume()
    run.result(T)


@pytest.mark.parametrize(
    "expr",
    [
        "().__class__.__bases__[0].__subclasses__()",
        "__import__('os')",
        "open('/etc/passwd')",
        "9**9**9**9",
        "state[",
        "cuont > 1",
    ],
)
def test_dangerous_or_malformed_conditions_are_refused_at_set_time(
    dbg: flowdbg.Debugger, expr: str
) -> None:
    with pytest.raises(flowdbg.ExpressionError):
        dbg.break_before("a", condition=expr)
    assert dbg.breakpoints == []


@pytest.mark.parametrize("bad", ["abc", "", ">=", "%0", "=3x"])
def test_bad_hit_conditions_are_refused(dbg: flowdbg.Debugger, bad: str) -> None:
    with pytest.raises(flowdbg.BreakpointError, match="hit condition"):
        dbg.break_before("a", hit_condition=bad)


def test_remove_unknown_breakpoint_lists_ids(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("a")
    with pytest.raises(flowdbg.BreakpointError, match="bp-1"):
        dbg.remove("bp-9")
    dbg.remove("bp-1")
    assert dbg.breakpoints == []


def test_breakpoint_ids_count_only_breakpoints_that_were_set(dbg: flowdbg.Debugger) -> None:
    with pytest.raises(flowdbg.ExpressionError):
        dbg.break_before("a", condition="x ==")
    with pytest.raises(flowdbg.BreakpointError):
        dbg.break_before("a", hit_condition="often")
    assert dbg.break_before("a").id == "bp-1"
    loaded = dbg.add_breakpoint({"type": "node", "node": "b", "id": "bp-5"})
    assert loaded.id == "bp-5"
    assert dbg.break_before("c").id == "bp-6"  # never one in use


def test_breakpoints_set_from_many_threads_get_distinct_ids(dbg: flowdbg.Debugger) -> None:
    barrier = threading.Barrier(8)

    def add() -> None:
        barrier.wait(T)
        for _ in range(25):
            dbg.break_before("a")

    threads = [threading.Thread(target=add) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(T)
    ids = [bp.id for bp in dbg.breakpoints]
    assert len(ids) == len(set(ids)) == 200
    assert set(ids) == {f"bp-{n}" for n in range(1, 201)}


def test_operations_without_a_stop_say_so(dbg: flowdbg.Debugger) -> None:
    with pytest.raises(flowdbg.NotStoppedError, match="nothing is stopped"):
        dbg.inspect("x")
    with pytest.raises(flowdbg.NotStoppedError):
        dbg.resume()
    with pytest.raises(flowdbg.StopNotFound, match="stop-7"):
        dbg.select("stop-7")


def test_exception_breakpoint_by_name_matches_base_classes(dbg: flowdbg.Debugger) -> None:
    dbg.break_on_exception("LookupError")

    def failing() -> None:
        scope = dbg.begin_run(framework="manual", name="f", input=None)
        unit = scope.unit("k")
        unit.before(state={})
        try:
            raise KeyError("missing")
        except Exception as exc:
            unit.error(exc, state={})
            scope.end(error=exc)
            raise

    run = dbg.start(failing)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.reason == flowdbg.StopReason.EXCEPTION
    assert stop.error is not None and stop.error.type == "KeyError"
    assert "KeyError" in stop.error.traceback
    original = stop.exception
    dbg.resume()
    with pytest.raises(KeyError) as info:
        run.result(T)
    assert info.value is original


def test_same_branch_rules() -> None:
    root = "r"
    a = ((root, 1, "1:a", 1),)
    b = ((root, 2, "2:b", 2),)
    p1 = ((root, 3, "3:p1", 3),)
    p2 = ((root, 4, "3:p2", 3),)
    inner = ((root, 1, "1:a", 1), ("child", 1, "1:x", 1))
    assert _same_branch(a, b)  # later superstep continues the line
    assert not _same_branch(p1, p2)  # a parallel sibling is another branch
    assert _same_branch(a, inner)  # inside the origin
    assert _same_branch(inner, b)  # after the enclosing unit
    assert _same_branch(((root, 5, None, None),), ((root, 6, None, None),))


def test_many_threads_stop_independently(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("b")
    runs = [dbg.start(run_units, dbg, ["a", "b"], {"i": i}) for i in range(4)]
    stops = dbg.wait_for_stops(4, T)
    assert len(stops) == 4
    assert len({s.location.run_id for s in stops}) == 4
    dbg.resume(stops[2].id)
    assert runs[[r.run_id for r in runs].index(stops[2].location.run_id)].result(T)["b"] == 1
    assert len(dbg.stops) == 3
    dbg.resume_all()
    assert [r.result(T)["i"] for r in runs] == [0, 1, 2, 3]


def test_status_lists_stops_and_runs(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("a")
    ready = threading.Event()

    def go() -> Any:
        ready.set()
        return run_units(dbg, ["a"], {})

    run = dbg.start(go)
    stop = dbg.wait_for_stop(T)
    assert ready.is_set() and stop is not None
    status = dbg.status()
    assert status.state == "stopped" and status.selected == stop.id
    assert status.runs == [run.run_id]
    assert json.loads(json.dumps(status.to_dict()))["stops"][0]["id"] == stop.id
    dbg.resume()
    run.result(T)


def test_summary_lists_keys_with_type_and_size(dbg: flowdbg.Debugger) -> None:
    dbg.break_before("a")
    run = dbg.start(run_units, dbg, ["a"], {"msgs": ["hi"] * 3, "big": "x" * 100_000})
    assert dbg.wait_for_stop(T) is not None
    rows = {r.key: r for r in dbg.summary()}
    assert rows["msgs"].type == "list" and rows["msgs"].size == 3
    assert rows["big"].size == 100_000 and len(rows["big"].preview) < 200
    dbg.resume()
    run.result(T)


# -- the shared machinery adapters build on ----------------------------------------------------


def test_a_run_scope_closes_itself_as_a_context_manager(dbg: flowdbg.Debugger) -> None:
    with dbg.begin_run(framework="t", name="ok", input=1) as scope:
        scope.unit("a").call(lambda x: x + 1, 1)
        scope.end(output=2)
    with pytest.raises(ValueError, match="boom"), dbg.begin_run(framework="t", name="failing"):
        raise ValueError("boom")
    with dbg.begin_run(framework="t", name="silent", input=1):
        pass
    ok, failing, silent = (log.run for log in dbg.runs)
    assert (ok.status, ok.output) == ("completed", 2)
    assert failing.status == "failed" and failing.error is not None
    assert failing.error.type == "ValueError"
    assert (silent.status, silent.output) == ("completed", None)


def test_unit_call_reports_before_call_and_after_with_edits(dbg: flowdbg.Debugger) -> None:
    seen: list[Any] = []

    def tool(args: dict[str, Any]) -> str:
        seen.append(args)
        return f"ran {args['cmd']}"

    def play() -> Any:
        with dbg.begin_run(framework="t", name="r", input=None) as scope:
            return scope.unit("shell", kind="tool").call(
                tool, {"cmd": "rm -rf /"}, state={"s": 1}, decide=lambda r: r.upper()
            )

    dbg.break_on_tool("shell")
    dbg.break_after("shell", kind="tool")
    run = dbg.start(play)
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.position == "before" and seen == []
    dbg.set("cmd", "ls")
    dbg.resume()
    stop = dbg.wait_for_stop(T)
    assert stop is not None and stop.location.position == "after"
    assert (stop.output, stop.decision, stop.state) == ("ran ls", "RAN LS", {"s": 1})
    dbg.set(".", "edited")
    dbg.resume()
    assert run.result(T) == "edited"
    assert seen == [{"cmd": "ls"}]


def test_unit_call_errors_and_pauses(dbg: flowdbg.Debugger) -> None:
    class Pause(Exception):
        """A framework's control flow: run the call again later."""

    def fail(_: Any) -> Any:
        raise KeyError("missing")

    def pause(_: Any) -> Any:
        raise Pause()

    dbg.break_on_exception()
    with dbg.begin_run(framework="t", name="r", input=None) as scope:
        with pytest.raises(Pause):  # control flow: no exception stop, status suspended
            scope.unit("p").call(pause, None, suspend_on=(Pause,))
        unit = scope.unit("f")
        run = dbg.start(unit.call, fail, None)
        stop = dbg.wait_for_stop(T)
        assert stop is not None and isinstance(stop.exception, KeyError)
        dbg.resume()
        assert isinstance(run.exception(T), KeyError)  # the original goes on
        scope.end()
    paused, failed = dbg.runs[-1].steps
    assert (paused.status, failed.status) == ("suspended", "failed")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_unit_acall_awaits_the_call(dbg: flowdbg.Debugger, backend: str) -> None:
    async def model(prompt: str) -> str:
        await anyio.lowlevel.checkpoint()
        return prompt + "!"

    async def main() -> Any:
        async with dbg.begin_run(framework="t", name="r", input=None) as scope:
            got = await scope.unit("llm", kind="llm").acall(model, "hi")
            sync = await scope.unit("tool", kind="tool").acall(lambda x: x * 2, 4)
            scope.end(output=(got, sync))
        return got, sync

    assert anyio.run(main, backend=backend) == ("hi!", 8)
    assert [(s.node, s.output) for s in dbg.runs[-1].steps] == [("llm", "hi!"), ("tool", 8)]


def test_a_call_held_when_its_units_task_is_cancelled_by_terminate_is_terminated(
    dbg: flowdbg.Debugger,
) -> None:
    # A call a unit makes runs in the unit's task; terminate() cancels the task of the running
    # unit, which the held call may see before its stop hands it Terminated.
    dbg.break_before("chat", kind="llm")

    async def main() -> None:
        async with dbg.begin_run(framework="t", name="r", input=None) as scope:
            agent = scope.unit("agent")
            await agent.abefore(state={})
            try:
                await agent.frame().unit("chat", kind="llm").acall(lambda x: x, "hi")
            except BaseException as exc:
                raise agent.discard(exc) or exc from exc
            await agent.aafter(output={})

    run = dbg.start(main)
    assert dbg.wait_for_stop(T) is not None
    dbg.terminate()
    with pytest.raises(flowdbg.Terminated):
        run.result(T)
    steps = {s.node: s for s in dbg.runs[-1].steps}
    assert (steps["agent"].status, steps["chat"].status) == ("terminated", "terminated")
    assert steps["chat"].error is not None and steps["chat"].error.type == "Terminated"
