"""Tests of flowdbg's reference StateGraph engine (no debugger involved)."""

from __future__ import annotations

import contextvars
import importlib.util
import operator
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from flowdbg.adapters.stategraph._graph import (
    CURRENT_TASK,
    END,
    START,
    CompiledGraph,
    GraphRecursionError,
    InvalidGraphError,
    InvalidUpdateError,
    Node,
    StateGraph,
    StateGraphError,
    Task,
)
from flowdbg.errors import FlowdbgError, Terminated

TIMEOUT = 5.0
HAS_TRIO = importlib.util.find_spec("trio") is not None

State = dict[str, Any]


@pytest.fixture(
    params=[
        "asyncio",
        pytest.param(
            "trio",
            marks=pytest.mark.skipif(not HAS_TRIO, reason="trio is not installed"),
        ),
    ]
)
def backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs under asyncio and (when installed) trio."""
    return str(request.param)


def run_async(backend: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``fn()`` under the given anyio backend and return its result."""
    return anyio.run(fn, backend=backend)


def append(name: str) -> Callable[[State], State]:
    """A node appending its name to ``state["log"]`` (needs the operator.add reducer)."""

    def node(state: State) -> State:
        return {"log": [name]}

    node.__name__ = name
    return node


def current() -> Task:
    task = CURRENT_TASK.get()
    assert task is not None
    return task


# ------------------------------------------------------------------------------ basic runs


def test_linear_graph() -> None:
    graph = StateGraph()
    graph.add_node("a", lambda s: {"x": s["x"] + 1})
    graph.add_node("b", lambda s: {"x": s["x"] * 10})
    graph.add_node("c", lambda s: {"y": s["x"] - 1})
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").set_finish_point("c")
    app = graph.compile()
    initial = {"x": 1}
    assert app.invoke(initial) == {"x": 20, "y": 19}
    assert initial == {"x": 1}, "the input state must not be mutated"


def test_none_update_and_node_without_outgoing_edge() -> None:
    graph = StateGraph()
    graph.add_node("a", lambda s: None).set_entry_point("a")
    assert graph.compile().invoke({"k": 1}) == {"k": 1}


def test_fan_out_with_reducer() -> None:
    graph = StateGraph(reducers={"log": operator.add})
    for name in ("a", "p1", "p2", "z"):
        graph.add_node(name, append(name))
    graph.add_edge(START, "a").add_edge("a", "p1").add_edge("a", "p2")
    graph.add_edge("p1", "z").add_edge("p2", "z")
    assert graph.compile().invoke({"log": []}) == {"log": ["a", "p1", "p2", "z"]}


def test_reducer_with_missing_key_uses_value_as_is() -> None:
    graph = StateGraph(reducers={"log": operator.add})
    graph.add_node("a", append("a")).set_entry_point("a")
    assert graph.compile().invoke({}) == {"log": ["a"]}


def test_parallel_conflict_without_reducer() -> None:
    graph = StateGraph()
    graph.add_node("a", lambda s: None)
    graph.add_node("p1", lambda s: {"items": [1]})
    graph.add_node("p2", lambda s: {"items": [2]})
    graph.add_edge(START, "a").add_edge("a", "p1").add_edge("a", "p2")
    with pytest.raises(InvalidUpdateError) as info:
        graph.compile().invoke({})
    message = str(info.value)
    assert "'p1'" in message and "'p2'" in message and "'items'" in message
    assert "superstep 2" in message and "reducers=" in message
    assert isinstance(info.value, StateGraphError) and isinstance(info.value, FlowdbgError)


def test_conditional_edges_with_mapping_and_end() -> None:
    def route(state: State) -> str:
        return "big" if state["n"] > 10 else "small"

    graph = StateGraph(reducers={"log": operator.add})
    graph.add_node("check", append("check"))
    graph.add_node("shrink", lambda s: {"n": s["n"] // 2, "log": ["shrink"]})
    graph.set_entry_point("check")
    graph.add_conditional_edges("check", route, {"big": "shrink", "small": END})
    graph.add_edge("shrink", "check")
    app = graph.compile()
    assert app.invoke({"n": 3, "log": []}) == {"n": 3, "log": ["check"]}
    assert app.invoke({"n": 40, "log": []}) == {
        "n": 10,
        "log": ["check", "shrink", "check", "shrink", "check"],
    }


def test_loop_with_counter_until_condition() -> None:
    graph = StateGraph()
    graph.add_node("inc", lambda s: {"count": s["count"] + 1})
    graph.set_entry_point("inc")
    graph.add_conditional_edges("inc", lambda s: END if s["count"] >= 7 else "inc")
    assert graph.compile().invoke({"count": 0}) == {"count": 7}


def test_router_fan_out_and_router_sees_own_update() -> None:
    seen: list[State] = []

    def route(state: State) -> list[str]:
        seen.append(dict(state))
        return ["x", "y"]

    graph = StateGraph(reducers={"log": operator.add})
    for name in ("a", "x", "y"):
        graph.add_node(name, append(name))
    graph.set_entry_point("a")
    graph.add_conditional_edges("a", route)
    assert graph.compile().invoke({"log": ["start"]}) == {"log": ["start", "a", "x", "y"]}
    assert seen == [{"log": ["start", "a"]}]


def test_conditional_edges_from_start() -> None:
    graph = StateGraph()
    graph.add_node("left", lambda s: {"side": "L"})
    graph.add_node("right", lambda s: {"side": "R"})
    graph.add_conditional_edges(START, lambda s: s["go"])
    app = graph.compile()
    assert app.invoke({"go": "left"}) == {"go": "left", "side": "L"}
    assert app.invoke({"go": "right"}) == {"go": "right", "side": "R"}


def test_join_runs_once() -> None:
    calls: list[str] = []
    lock = threading.Lock()

    def make(name: str) -> Callable[[State], None]:
        def node(state: State) -> None:
            with lock:
                calls.append(name)

        return node

    graph = StateGraph()
    for name in ("a", "b", "c", "d"):
        graph.add_node(name, make(name))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("a", "c")
    graph.add_edge("b", "d").add_edge("c", "d")
    graph.compile().invoke({})
    assert calls.count("d") == 1
    assert calls[0] == "a" and calls[-1] == "d" and sorted(calls[1:3]) == ["b", "c"]


def test_parallel_updates_are_merged_in_superstep_order() -> None:
    graph = StateGraph(reducers={"log": operator.add})
    started = threading.Event()

    def slow(state: State) -> State:
        assert started.wait(TIMEOUT)
        return {"log": ["slow"]}

    def fast(state: State) -> State:
        started.set()
        return {"log": ["fast"]}

    graph.add_node("slow", slow).add_node("fast", fast)
    graph.add_edge(START, "slow").add_edge(START, "fast")
    assert graph.compile().invoke({"log": []}) == {"log": ["slow", "fast"]}


# ----------------------------------------------------------------------------- concurrency


def _rendezvous_graph(first: Callable[[State], Any], second: Callable[[State], Any]) -> StateGraph:
    graph = StateGraph(reducers={"met": operator.add})
    graph.add_node("first", first).add_node("second", second)
    graph.add_edge(START, "first").add_edge(START, "second")
    return graph


def test_fan_out_runs_concurrently_under_invoke() -> None:
    first_in, second_in = threading.Event(), threading.Event()

    def first(state: State) -> State:
        first_in.set()
        assert second_in.wait(TIMEOUT), "'second' did not run while 'first' was running"
        return {"met": ["first"]}

    def second(state: State) -> State:
        second_in.set()
        assert first_in.wait(TIMEOUT), "'first' did not run while 'second' was running"
        return {"met": ["second"]}

    app = _rendezvous_graph(first, second).compile()
    assert app.invoke({"met": []}) == {"met": ["first", "second"]}


def test_fan_out_runs_concurrently_under_ainvoke(backend: str) -> None:
    async def main() -> State:
        first_in, second_in = anyio.Event(), anyio.Event()

        async def first(state: State) -> State:
            first_in.set()
            with anyio.fail_after(TIMEOUT):
                await second_in.wait()
            return {"met": ["first"]}

        async def second(state: State) -> State:
            second_in.set()
            with anyio.fail_after(TIMEOUT):
                await first_in.wait()
            return {"met": ["second"]}

        return await _rendezvous_graph(first, second).compile().ainvoke({"met": []})

    assert run_async(backend, main) == {"met": ["first", "second"]}


def test_sync_fan_out_runs_concurrently_under_ainvoke(backend: str) -> None:
    first_in, second_in = threading.Event(), threading.Event()

    def first(state: State) -> State:
        first_in.set()
        assert second_in.wait(TIMEOUT)
        return {"met": ["first"]}

    def second(state: State) -> State:
        second_in.set()
        assert first_in.wait(TIMEOUT)
        return {"met": ["second"]}

    app = _rendezvous_graph(first, second).compile()

    async def main() -> State:
        return await app.ainvoke({"met": []})

    assert run_async(backend, main) == {"met": ["first", "second"]}


def test_context_variables_propagate_into_parallel_threads() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    graph = StateGraph(reducers={"seen": operator.add})
    graph.add_node("p1", lambda s: {"seen": [var.get()]})
    graph.add_node("p2", lambda s: {"seen": [var.get()]})
    graph.add_edge(START, "p1").add_edge(START, "p2")
    token = var.set("caller")
    try:
        assert graph.compile().invoke({"seen": []}) == {"seen": ["caller", "caller"]}
    finally:
        var.reset(token)


# ------------------------------------------------------------------------------ task context


def test_current_task_inside_nodes() -> None:
    seen: list[tuple[str, int, str, int, bool, bool]] = []
    lock = threading.Lock()
    graph_box: list[CompiledGraph] = []

    def make(name: str) -> Callable[[State], None]:
        def node(state: State) -> None:
            task = current()
            with lock:
                seen.append(
                    (
                        task.node,
                        task.superstep,
                        task.branch,
                        task.attempt,
                        task.state is state,
                        task.graph is graph_box[0],
                    )
                )

        return node

    graph = StateGraph(name="ctx")
    for name in ("a", "b", "c"):
        graph.add_node(name, make(name))
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("a", "c")
    app = graph.compile()
    graph_box.append(app)
    assert CURRENT_TASK.get() is None
    app.invoke({})
    assert CURRENT_TASK.get() is None
    assert sorted(seen) == [
        ("a", 1, "1:a", 1, True, True),
        ("b", 2, "2:b", 1, True, True),
        ("c", 2, "2:c", 1, True, True),
    ]


def test_each_node_gets_its_own_copy_of_the_snapshot() -> None:
    states: list[State] = []
    lock = threading.Lock()

    def node(state: State) -> None:
        with lock:
            states.append(state)
        state["scribble"] = True  # must not leak into the committed state

    graph = StateGraph()
    graph.add_node("p1", node).add_node("p2", node)
    graph.add_edge(START, "p1").add_edge(START, "p2")
    assert graph.compile().invoke({"k": 1}) == {"k": 1}
    assert len(states) == 2 and states[0] is not states[1]


def test_task_preview_and_route() -> None:
    results: dict[str, Any] = {}

    def a(state: State) -> State:
        task = current()
        update = {"log": ["a"], "flag": True}
        results["preview"] = task.preview(update)
        results["route_none"] = task.route(None)
        results["route"] = task.route(update)
        results["state_after"] = dict(task.state)
        return update

    graph = StateGraph(reducers={"log": operator.add})
    graph.add_node("a", a).add_node("b", append("b"))
    graph.set_entry_point("a").add_edge("a", "b")
    graph.add_conditional_edges("a", lambda s: END if s.get("flag") else "b")
    assert graph.compile().invoke({"log": ["0"]}) == {"log": ["0", "a", "b"], "flag": True}
    assert results["preview"] == {"log": ["0", "a"], "flag": True}
    assert results["state_after"] == {"log": ["0"]}, "preview must not commit"
    assert results["route_none"] == ("b",)
    assert results["route"] == ("b", END)


def test_task_route_is_cached_per_update_object() -> None:
    calls: list[str] = []

    def router(state: State) -> str:
        calls.append(current().branch)
        return END

    def a(state: State) -> State:
        task = current()
        update = {"v": 1}
        assert task.route(update) == (END,)
        assert task.route(update) == (END,)
        assert calls == ["1:a"]
        assert task.route({"v": 1}) == (END,)  # another object: evaluated again
        assert calls == ["1:a", "1:a"]
        return update

    graph = StateGraph()
    graph.add_node("a", a).set_entry_point("a")
    graph.add_conditional_edges("a", router)
    graph.compile().invoke({})
    assert calls == ["1:a", "1:a"], "the engine must reuse the cached route"


def test_router_runs_once_per_task() -> None:
    calls: list[tuple[str, int]] = []

    def router(state: State) -> str:
        task = current()
        calls.append((task.node, task.superstep))
        return END if state["n"] >= 3 else "inc"

    graph = StateGraph()
    graph.add_node("inc", lambda s: {"n": s["n"] + 1}).set_entry_point("inc")
    graph.add_conditional_edges("inc", router)
    assert graph.compile().invoke({"n": 0}) == {"n": 3}
    assert calls == [("inc", 1), ("inc", 2), ("inc", 3)]


def test_router_returning_unknown_node() -> None:
    graph = StateGraph()
    graph.add_node("a", lambda s: None).set_entry_point("a")
    graph.add_conditional_edges("a", lambda s: "nowhere")
    with pytest.raises(InvalidGraphError, match=r"'nowhere'.*'a'"):
        graph.compile().invoke({})


def test_router_value_missing_from_mapping() -> None:
    graph = StateGraph()
    graph.add_node("a", lambda s: None).set_entry_point("a")
    graph.add_conditional_edges("a", lambda s: "maybe", {"yes": END})
    with pytest.raises(InvalidGraphError, match=r"'maybe'.*'yes'"):
        graph.compile().invoke({})


# -------------------------------------------------------------------------------- subgraphs


def _subgraph() -> CompiledGraph:
    sub = StateGraph(reducers={"log": operator.add}, name="inner")
    sub.add_node("s1", lambda s: {"log": ["s1"], "inner": s["x"] * 2})
    sub.add_node("s2", lambda s: {"log": ["s2"]})
    sub.set_entry_point("s1").add_edge("s1", "s2")
    return sub.compile()


def test_subgraph_as_node() -> None:
    parents: list[Task | None] = []

    def probe(state: State) -> None:
        parents.append(current().parent)

    sub_builder = StateGraph(name="probe-sub")
    sub_builder.add_node("probe", probe).set_entry_point("probe")
    graph = StateGraph(name="outer")
    graph.add_node("prep", lambda s: {"x": 21})
    graph.add_node("sub", _subgraph())
    graph.add_node("probed", sub_builder.compile())
    graph.set_entry_point("prep").add_edge("prep", "sub").add_edge("sub", "probed")
    app = graph.compile()
    result = app.invoke({"log": []})
    assert result == {"log": ["s1", "s2"], "x": 21, "inner": 42}
    assert len(parents) == 1 and parents[0] is not None
    assert parents[0].node == "probed" and parents[0].graph is app
    assert app.nodes["sub"].subgraph is not None
    description = app.describe()
    nested = description["nodes"][1]
    assert nested["name"] == "sub"
    assert nested["subgraph"]["name"] == "inner"
    assert [n["name"] for n in nested["subgraph"]["nodes"]] == ["s1", "s2"]


def test_subgraph_update_contains_only_changed_keys() -> None:
    sub = StateGraph(name="inner")
    sub.add_node("s", lambda s: {"from_sub": 1}).set_entry_point("s")
    graph = StateGraph()
    graph.add_node("sub", sub.compile())
    graph.add_node("sibling", lambda s: {"shared": "sibling"})
    graph.add_edge(START, "sub").add_edge(START, "sibling")
    # 'shared' is in the subgraph's final state but unchanged: it must not conflict.
    assert graph.compile().invoke({"shared": "input"}) == {"shared": "sibling", "from_sub": 1}


def test_subgraph_under_ainvoke(backend: str) -> None:
    graph = StateGraph()
    graph.add_node("sub", _subgraph()).set_entry_point("sub")
    app = graph.compile()

    async def main() -> State:
        return await app.ainvoke({"x": 1, "log": []})

    assert run_async(backend, main) == {"x": 1, "log": ["s1", "s2"], "inner": 2}


def test_subgraph_instance_invoke_override_is_honoured(backend: str) -> None:
    sub = _subgraph()
    calls: list[str] = []
    original_invoke, original_ainvoke = sub.invoke, sub.ainvoke

    def invoke(state: State, **kwargs: Any) -> State:
        calls.append("invoke")
        return original_invoke(state, **kwargs)

    async def ainvoke(state: State, **kwargs: Any) -> State:
        calls.append("ainvoke")
        return await original_ainvoke(state, **kwargs)

    graph = StateGraph()
    graph.add_node("sub", sub).set_entry_point("sub")
    app = graph.compile()
    sub.invoke = invoke  # type: ignore[method-assign,assignment]
    sub.ainvoke = ainvoke  # type: ignore[method-assign,assignment]
    assert app.invoke({"x": 1, "log": []})["inner"] == 2

    async def main() -> State:
        return await app.ainvoke({"x": 1, "log": []})

    assert run_async(backend, main)["inner"] == 2
    assert calls == ["invoke", "ainvoke"]


# ---------------------------------------------------------------------- sync / async nodes


async def _async_double(state: State) -> State:
    await anyio.sleep(0)
    return {"x": state["x"] * 2, "task": current().branch}


def _async_graph() -> CompiledGraph:
    graph = StateGraph()
    graph.add_node("double", _async_double).set_entry_point("double")
    graph.add_node("p1", _async_double_key("p1")).add_node("p2", _async_double_key("p2"))
    graph.add_edge("double", "p1").add_edge("double", "p2")
    return graph.compile()


def _async_double_key(key: str) -> Callable[[State], Awaitable[State]]:
    async def node(state: State) -> State:
        await anyio.sleep(0)
        return {key: state["x"] * 2}

    return node


def test_async_nodes_under_ainvoke(backend: str) -> None:
    app = _async_graph()

    async def main() -> State:
        return await app.ainvoke({"x": 3})

    assert run_async(backend, main) == {"x": 6, "task": "1:double", "p1": 12, "p2": 12}


def test_async_nodes_under_invoke() -> None:
    # the single-node superstep runs with asyncio.run inline, the parallel one in threads
    assert _async_graph().invoke({"x": 3}) == {"x": 6, "task": "1:double", "p1": 12, "p2": 12}


def test_async_node_under_invoke_inside_event_loop_is_refused(backend: str) -> None:
    app = _async_graph()

    async def main() -> None:
        with pytest.raises(StateGraphError, match=r"ainvoke"):
            app.invoke({"x": 3})

    run_async(backend, main)


def test_sync_function_returning_coroutine_inside_event_loop_is_refused() -> None:
    graph = StateGraph()
    graph.add_node("a", lambda s: _async_double(s)).set_entry_point("a")
    app = graph.compile()
    assert app.invoke({"x": 2}) == {"x": 4, "task": "1:a"}

    async def main() -> None:
        with pytest.raises(StateGraphError, match=r"ainvoke"):
            app.invoke({"x": 3})

    run_async("asyncio", main)


def test_sync_nodes_under_ainvoke_run_in_worker_thread(backend: str) -> None:
    seen: list[tuple[int, str]] = []

    def node(state: State) -> State:
        seen.append((threading.get_ident(), current().branch))
        return {"done": True}

    graph = StateGraph()
    graph.add_node("a", node).set_entry_point("a")
    app = graph.compile()

    async def main() -> tuple[State, int]:
        return await app.ainvoke({}), threading.get_ident()

    result, loop_thread = run_async(backend, main)
    assert result == {"done": True}
    assert len(seen) == 1
    assert seen[0][0] != loop_thread and seen[0][1] == "1:a"


def test_async_callable_object_is_detected() -> None:
    class Doubler:
        async def __call__(self, state: State) -> State:
            return {"x": state["x"] * 2}

    node = Node("d", Doubler())
    assert node.is_async
    graph = StateGraph()
    graph.add_node("d", Doubler()).set_entry_point("d")
    assert graph.compile().invoke({"x": 5}) == {"x": 10}


# ------------------------------------------------------------------------------------ retry


class Flaky:
    """Fails ``failures`` times with ``exc_type``, then returns the attempts seen."""

    def __init__(self, failures: int, exc_type: type[BaseException] = ValueError) -> None:
        self.failures = failures
        self.exc_type = exc_type
        self.attempts: list[int] = []

    def __call__(self, state: State) -> State:
        self.attempts.append(current().attempt)
        if len(self.attempts) <= self.failures:
            raise self.exc_type(f"failure {len(self.attempts)}")
        return {"attempts": list(self.attempts)}


def _flaky_graph(flaky: Any, **kwargs: Any) -> CompiledGraph:
    graph = StateGraph()
    graph.add_node("flaky", flaky, **kwargs).set_entry_point("flaky")
    return graph.compile()


def test_retry_flaky_node_under_invoke() -> None:
    flaky = Flaky(2)
    assert _flaky_graph(flaky, retry=2).invoke({}) == {"attempts": [1, 2, 3]}


def test_retry_flaky_node_under_ainvoke(backend: str) -> None:
    attempts: list[int] = []

    async def flaky(state: State) -> State:
        attempts.append(current().attempt)
        if len(attempts) < 3:
            raise ConnectionError("flaky")
        return {"ok": True}

    app = _flaky_graph(flaky, retry=3, retry_on=(ConnectionError,))

    async def main() -> State:
        return await app.ainvoke({})

    assert run_async(backend, main) == {"ok": True}
    assert attempts == [1, 2, 3]


def test_retry_exhausted_raises_last_exception() -> None:
    flaky = Flaky(5)
    with pytest.raises(ValueError, match="failure 3"):
        _flaky_graph(flaky, retry=2).invoke({})
    assert flaky.attempts == [1, 2, 3]


def test_no_retry_on_other_exception_types() -> None:
    flaky = Flaky(1, KeyError)
    with pytest.raises(KeyError):
        _flaky_graph(flaky, retry=3, retry_on=(ValueError,)).invoke({})
    assert flaky.attempts == [1]


def test_base_exception_is_never_retried() -> None:
    flaky = Flaky(1, Terminated)
    with pytest.raises(Terminated):
        _flaky_graph(flaky, retry=3, retry_on=(BaseException,)).invoke({})
    assert flaky.attempts == [1]


# ------------------------------------------------------------------------------- exceptions


def test_node_exception_reaches_caller_unchanged() -> None:
    error = RuntimeError("boom")

    def fail(state: State) -> None:
        raise error

    graph = StateGraph()
    graph.add_node("fail", fail).set_entry_point("fail")
    with pytest.raises(RuntimeError) as info:
        graph.compile().invoke({})
    assert info.value is error


def _parallel_failure_graph(errors: dict[str, BaseException], finished: list[str]) -> CompiledGraph:
    lock = threading.Lock()

    def make(name: str) -> Callable[[State], None]:
        def node(state: State) -> None:
            if name in errors:
                raise errors[name]
            with lock:
                finished.append(name)

        return node

    graph = StateGraph()
    for name in ("p1", "p2", "p3"):
        graph.add_node(name, make(name)).add_edge(START, name)
    return graph.compile()


def test_first_failing_node_of_parallel_superstep_wins() -> None:
    first, second = ValueError("p1 failed"), KeyError("p3 failed")
    finished: list[str] = []
    with pytest.raises(ValueError) as info:
        _parallel_failure_graph({"p1": first, "p3": second}, finished).invoke({})
    assert info.value is first
    assert finished == ["p2"], "all nodes of the superstep must finish before raising"


def test_parallel_exception_unchanged_under_ainvoke(backend: str) -> None:
    error = ValueError("p2 failed")
    finished: list[str] = []
    app = _parallel_failure_graph({"p2": error}, finished)

    async def main() -> BaseException | None:
        try:
            await app.ainvoke({})
        except ValueError as exc:
            return exc
        return None

    assert run_async(backend, main) is error
    assert sorted(finished) == ["p1", "p3"]


def test_base_exception_in_parallel_branch_under_invoke() -> None:
    terminated = Terminated()
    finished: list[str] = []
    with pytest.raises(Terminated) as info:
        _parallel_failure_graph({"p2": terminated}, finished).invoke({})
    assert info.value is terminated
    assert sorted(finished) == ["p1", "p3"]


def test_base_exception_in_parallel_branch_under_ainvoke(backend: str) -> None:
    terminated = Terminated()

    async def ok(state: State) -> State:
        await anyio.sleep(0)
        return {"ok": True}

    async def stop(state: State) -> None:
        await anyio.sleep(0)
        raise terminated

    graph = StateGraph()
    graph.add_node("ok", ok).add_node("stop", stop)
    graph.add_edge(START, "ok").add_edge(START, "stop")
    app = graph.compile()

    async def main() -> BaseException | None:
        try:
            await app.ainvoke({})
        except Terminated as exc:
            return exc
        return None

    assert run_async(backend, main) is terminated


def test_step_limit() -> None:
    graph = StateGraph()
    graph.add_node("spin", lambda s: {"n": s["n"] + 1}).set_entry_point("spin")
    graph.add_edge("spin", "spin")
    app = graph.compile(step_limit=5)
    with pytest.raises(GraphRecursionError, match=r"5 supersteps.*step_limit") as info:
        app.invoke({"n": 0})
    assert isinstance(info.value, RecursionError)
    with pytest.raises(GraphRecursionError, match="3 supersteps"):
        app.invoke({"n": 0}, step_limit=3)


def test_step_limit_is_not_hit_by_exactly_limit_supersteps() -> None:
    graph = StateGraph()
    graph.add_node("inc", lambda s: {"n": s["n"] + 1}).set_entry_point("inc")
    graph.add_conditional_edges("inc", lambda s: END if s["n"] >= 4 else "inc")
    assert graph.compile(step_limit=4).invoke({"n": 0}) == {"n": 4}


def test_step_limit_under_ainvoke(backend: str) -> None:
    graph = StateGraph()
    graph.add_node("spin", lambda s: None).set_entry_point("spin").add_edge("spin", "spin")
    app = graph.compile()

    async def main() -> None:
        with pytest.raises(GraphRecursionError, match="2 supersteps"):
            await app.ainvoke({}, step_limit=2)

    run_async(backend, main)


@pytest.mark.parametrize(
    ("update", "match"),
    [
        (42, r"node 'bad' returned a int"),
        (["x"], r"node 'bad' returned a list"),
        ({1: "x"}, r"non-string key 1"),
    ],
)
def test_invalid_update(update: Any, match: str) -> None:
    graph = StateGraph()
    graph.add_node("bad", lambda s: update).set_entry_point("bad")
    with pytest.raises(InvalidUpdateError, match=match):
        graph.compile().invoke({})


def test_failing_reducer_is_reported() -> None:
    graph = StateGraph(reducers={"log": operator.add})
    graph.add_node("bad", lambda s: {"log": "not a list"}).set_entry_point("bad")
    with pytest.raises(InvalidUpdateError, match=r"reducer of key 'log'.*'bad'") as info:
        graph.compile().invoke({"log": []})
    assert isinstance(info.value.__cause__, TypeError)


def test_bad_input_state() -> None:
    graph = StateGraph()
    graph.add_node("a", lambda s: None).set_entry_point("a")
    with pytest.raises(TypeError, match="Mapping"):
        graph.compile().invoke(["not", "a", "mapping"])  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- validation


def _noop(state: State) -> None:
    return None


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda g: g.compile(), "has no nodes"),
        (lambda g: g.add_node("a", _noop).compile(), "no entry point"),
        (
            lambda g: g.add_node("a", _noop).set_entry_point("a").add_edge("a", "b").compile(),
            r"unknown target 'b'.*'a'",
        ),
        (
            lambda g: g.add_node("a", _noop).add_edge(START, "x").compile(),
            r"unknown target 'x'; add it with add_node\('x', \.\.\.\) or use one of 'a'",
        ),
        (
            lambda g: g.add_node("a", _noop).set_entry_point("a").add_edge("zz", "a").compile(),
            "unknown source 'zz'",
        ),
        (
            lambda g: (
                g.add_node("a", _noop)
                .set_entry_point("a")
                .add_conditional_edges("a", _noop, {"k": "ghost"})
                .compile()
            ),
            r"'k' to unknown node 'ghost'",
        ),
        (
            lambda g: (
                g.add_node("a", _noop)
                .set_entry_point("a")
                .add_conditional_edges("ghost", _noop)
                .compile()
            ),
            "unknown node 'ghost'",
        ),
        (lambda g: g.add_node(START, _noop), "reserved"),
        (lambda g: g.add_node(END, _noop), "reserved"),
        (lambda g: g.add_node("", _noop), "non-empty string"),
        (lambda g: g.add_node("a", _noop).add_node("a", _noop), "already in graph"),
        (lambda g: g.add_node("a", 42), "non-callable int"),
        (lambda g: g.add_node("a", StateGraph()), "uncompiled StateGraph"),
        (lambda g: g.add_node("a", _noop, retry=-1), "retry=-1"),
        (lambda g: g.add_node("a", _noop, retry_on=ValueError), "retry_on="),
        (lambda g: g.add_edge(END, "a"), "END cannot be the source"),
        (lambda g: g.add_edge("a", START), "START cannot be the target"),
        (lambda g: g.add_edge(START, END), "would run nothing"),
        (lambda g: g.add_conditional_edges("a", "not callable"), "plain"),
        (lambda g: g.add_conditional_edges("a", _async_double), "plain"),
        (
            lambda g: g.add_node("a", _noop).set_entry_point("a").compile(step_limit=0),
            "step_limit=0",
        ),
    ],
)
def test_validation_errors(build: Callable[[StateGraph], Any], match: str) -> None:
    with pytest.raises(InvalidGraphError, match=match) as info:
        build(StateGraph())
    assert isinstance(info.value, ValueError)


def test_bad_reducers() -> None:
    with pytest.raises(InvalidGraphError, match="not callable"):
        StateGraph(reducers={"log": "add"})  # type: ignore[dict-item]


def test_compiled_graph_is_independent_of_builder() -> None:
    graph = StateGraph()
    graph.add_node("a", lambda s: {"a": 1}).set_entry_point("a")
    app = graph.compile()
    graph.add_node("b", lambda s: {"b": 1}).add_edge("a", "b")
    assert app.invoke({}) == {"a": 1}
    assert graph.compile().invoke({}) == {"a": 1, "b": 1}


# ---------------------------------------------------------------------- replaced nodes


class RecordingWrapper:
    """A stand-in node, as the debugger installs them: same duck-typed interface as Node."""

    def __init__(self, inner: Any, calls: list[str]) -> None:
        self.inner = inner
        self.name = inner.name
        self.fn = inner.fn
        self.retry = inner.retry
        self.retry_on = inner.retry_on
        self.subgraph = inner.subgraph
        self.calls = calls

    def invoke(self, state: State) -> Any:
        self.calls.append(f"invoke {self.name} {current().branch}")
        update = self.inner.invoke(state)
        current().route(update)  # the debugger may look ahead; the engine reuses the result
        return update

    async def ainvoke(self, state: State) -> Any:
        self.calls.append(f"ainvoke {self.name} {current().branch}")
        return await self.inner.ainvoke(state)


def test_replaced_node_is_used(backend: str) -> None:
    routed: list[int] = []

    def router(state: State) -> str:
        routed.append(1)
        return END

    graph = StateGraph()
    graph.add_node("a", lambda s: {"a": 1}).add_node("b", lambda s: {"b": 2})
    graph.set_entry_point("a").add_edge("a", "b")
    graph.add_conditional_edges("b", router)
    app = graph.compile()
    calls: list[str] = []
    app.nodes["b"] = RecordingWrapper(app.nodes["b"], calls)
    assert app.invoke({}) == {"a": 1, "b": 2}
    assert routed == [1], "the route computed by the wrapper must be reused"

    async def main() -> State:
        return await app.ainvoke({})

    assert run_async(backend, main) == {"a": 1, "b": 2}
    assert calls == ["invoke b 2:b", "ainvoke b 2:b"]


def test_replacing_node_between_retries_is_honoured() -> None:
    flaky = Flaky(1)
    app = _flaky_graph(flaky, retry=1)
    calls: list[str] = []
    original = app.nodes["flaky"]

    class SwapOnFailure(RecordingWrapper):
        def invoke(self, state: State) -> Any:
            app.nodes["flaky"] = RecordingWrapper(original, calls)
            return super().invoke(state)

    app.nodes["flaky"] = SwapOnFailure(original, calls)
    assert app.invoke({}) == {"attempts": [1, 2]}
    assert calls == ["invoke flaky 1:flaky", "invoke flaky 1:flaky"]
    assert type(app.nodes["flaky"]) is RecordingWrapper


# -------------------------------------------------------------------------------- describe


def test_describe() -> None:
    def route(state: State) -> str:
        return END

    graph = StateGraph(reducers={"items": operator.add}, name="builder-name")
    graph.add_node("a", _noop, retry=2).add_node("b", _noop).add_node("sub", _subgraph())
    graph.set_entry_point("a").add_edge("a", "b").add_edge("a", "sub").set_finish_point("b")
    graph.add_conditional_edges("sub", route, {"again": "a", "stop": END, "halt": END})
    graph.add_conditional_edges("b", lambda s: END)
    description = graph.compile(name="demo").describe()
    inner = _subgraph().describe()
    assert inner == {
        "name": "inner",
        "entry": ["s1"],
        "nodes": [
            {"name": "s1", "subgraph": None, "retry": 0},
            {"name": "s2", "subgraph": None, "retry": 0},
        ],
        "edges": [
            {"source": START, "target": "s1"},
            {"source": "s1", "target": "s2"},
        ],
        "conditional_edges": [],
        "reducers": ["log"],
    }
    assert description == {
        "name": "demo",
        "entry": ["a"],
        "nodes": [
            {"name": "a", "subgraph": None, "retry": 2},
            {"name": "b", "subgraph": None, "retry": 0},
            {"name": "sub", "subgraph": inner, "retry": 0},
        ],
        "edges": [
            {"source": START, "target": "a"},
            {"source": "a", "target": "b"},
            {"source": "a", "target": "sub"},
            {"source": "b", "target": END},
        ],
        "conditional_edges": [
            {"source": "sub", "router": "route", "targets": ["a", END]},
            {"source": "b", "router": "<lambda>", "targets": None},
        ],
        "reducers": ["items"],
    }


def test_default_names() -> None:
    graph = StateGraph(name="mine")
    graph.add_node("a", _noop).set_entry_point("a")
    assert graph.compile().name == "mine"
    assert graph.compile(name="other").name == "other"
    assert StateGraph().add_node("a", _noop).set_entry_point("a").compile().name == "graph"


# ------------------------------------------------------------------------------------ trio


def test_trio_backend_ainvoke() -> None:
    if not HAS_TRIO:
        pytest.skip("trio is not installed; pip install trio to test the trio backend")
    graph = StateGraph(reducers={"log": operator.add})
    graph.add_node("sync", append("sync"))
    graph.add_node("async", _async_double_key("double"))
    graph.add_edge(START, "sync").add_edge(START, "async")

    async def main() -> State:
        return await graph.compile().ainvoke({"log": [], "x": 2})

    assert anyio.run(main, backend="trio") == {"log": ["sync"], "x": 2, "double": 4}
