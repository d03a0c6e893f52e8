"""The plugin contract: entry-point loading, adapter selection, observer hooks."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import click
import pluggy
import pytest

import flowdbg
from flowdbg import plugins
from flowdbg.adapters.stategraph import END, StateGraph


@pytest.fixture(autouse=True)
def _fresh_discovery() -> Any:
    plugins.discover(refresh=True)
    yield
    plugins.discover(refresh=True)


def linear_graph() -> Any:
    g = StateGraph(name="linear")
    g.add_node("a", lambda s: {"x": s["x"] + 1})
    g.add_node("b", lambda s: {"x": s["x"] * 10})
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile()


def _with_entry_points(monkeypatch: pytest.MonkeyPatch, extra: list[Any]) -> None:
    real = importlib.metadata.entry_points

    def fake(**kwargs: Any) -> Any:
        eps = list(real(**kwargs))
        if kwargs.get("group") == plugins.ENTRY_POINT_GROUP:
            eps += extra
        return eps

    monkeypatch.setattr(importlib.metadata, "entry_points", fake)
    plugins.discover(refresh=True)


def test_stategraph_adapter_is_registered_and_available() -> None:
    info = flowdbg.Debugger().adapters["stategraph"]
    assert info.available and info.reason is None
    assert flowdbg.Capability.PARALLEL_BRANCHES in info.capabilities
    assert info.to_dict()["name"] == "stategraph"


def test_broken_entry_point_is_unavailable_and_others_still_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broken = importlib.metadata.EntryPoint(
        name="broken", value="flowdbg_tests_no_such_module_xyz", group="flowdbg"
    )
    _with_entry_points(monkeypatch, [broken])
    adapters = flowdbg.Debugger().adapters
    assert adapters["stategraph"].available
    assert not adapters["broken"].available
    assert "flowdbg_tests_no_such_module_xyz" in (adapters["broken"].reason or "")


def test_disable_env_blocks_an_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWDBG_DISABLE_ADAPTERS", "stategraph, other")
    dbg = flowdbg.Debugger()
    info = dbg.adapters["stategraph"]
    assert not info.available
    assert "FLOWDBG_DISABLE_ADAPTERS" in (info.reason or "")
    with pytest.raises(flowdbg.AdapterNotFound, match="FLOWDBG_DISABLE_ADAPTERS"):
        dbg.attach(linear_graph())


def test_misspelled_hookimpl_fails_loudly() -> None:
    class Typo:
        @flowdbg.hookimpl
        def flowdbg_on_evnt(self, event: Any) -> None:  # misspelled on purpose
            pass

    with pytest.raises(pluggy.PluginValidationError, match="flowdbg_on_evnt"):
        flowdbg.Debugger(plugins=[Typo()])


class _Marker:
    """A target only the fake adapter below accepts."""


class _FakeAdapter(flowdbg.Adapter):
    name = "fakefw"
    extra = "fakefw"
    requires = ("flowdbg-no-such-distribution>=1.0",)

    def matches(self, target: Any) -> bool:
        return isinstance(target, _Marker)

    def attach(self, target: Any, debugger: Any) -> None:  # pragma: no cover - unavailable
        raise AssertionError("an unavailable adapter must not attach")

    def detach(self, target: Any) -> None:  # pragma: no cover
        pass


class _FakePlugin:
    @flowdbg.hookimpl
    def flowdbg_register_adapters(self, register: Any) -> None:
        register(_FakeAdapter())


def test_adapter_with_missing_framework_is_unavailable_with_install_hint() -> None:
    dbg = flowdbg.Debugger(plugins=[_FakePlugin()])
    info = dbg.adapters["fakefw"]
    assert not info.available
    assert "pip install 'flowdbg[fakefw]'" in (info.reason or "")
    with pytest.raises(flowdbg.AdapterUnavailable, match=r"flowdbg\[fakefw\]"):
        dbg.attach(_Marker())


def test_unknown_target_lists_available_adapters() -> None:
    dbg = flowdbg.Debugger()
    usable = sorted(name for name, info in dbg.adapters.items() if info.available)
    assert "stategraph" in usable  # and langgraph where its extra is installed
    with pytest.raises(flowdbg.AdapterNotFound, match=f"available adapters: {', '.join(usable)}"):
        dbg.attach(object())


def test_attach_is_idempotent_and_detach_restores_exactly() -> None:
    app = linear_graph()
    before_dict = dict(app.__dict__)
    before_nodes = dict(app.nodes)
    dbg = flowdbg.Debugger()
    dbg.attach(app)
    hooked = dict(app.nodes)
    dbg.attach(app)  # no-op
    assert app.nodes == hooked
    assert all(hooked[n] is not before_nodes[n] for n in before_nodes)
    assert app.invoke({"x": 1}) == {"x": 20}
    dbg.detach(app)
    assert app.__dict__.keys() == before_dict.keys()
    assert all(app.__dict__[k] is before_dict[k] for k in before_dict)
    assert all(app.nodes[n] is before_nodes[n] for n in before_nodes)
    assert app.invoke({"x": 1}) == {"x": 20}


def test_attach_to_second_debugger_is_refused() -> None:
    app = linear_graph()
    flowdbg.Debugger().attach(app)
    with pytest.raises(flowdbg.AdapterError, match="already attached to another Debugger"):
        flowdbg.Debugger().attach(app)


class Recorder:
    """Records every observation hook call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    @flowdbg.hookimpl
    def flowdbg_on_run_start(self, debugger: Any, run: Any) -> None:
        self.calls.append(("run_start", run.name))

    @flowdbg.hookimpl
    def flowdbg_on_event(self, event: Any) -> None:
        self.calls.append(("event", (event.location.node, event.location.position)))

    @flowdbg.hookimpl
    def flowdbg_on_stop(self, stop: Any) -> None:
        self.calls.append(("stop", stop.location.node))

    @flowdbg.hookimpl
    def flowdbg_on_resume(self, stop: Any, action: str) -> None:
        self.calls.append(("resume", action))

    @flowdbg.hookimpl
    def flowdbg_on_log(self, breakpoint: Any, message: str) -> None:
        self.calls.append(("log", message))

    @flowdbg.hookimpl
    def flowdbg_on_run_end(self, run: Any) -> None:
        self.calls.append(("run_end", run.status.value))


def test_observer_hooks_see_the_run_in_order() -> None:
    rec = Recorder()
    dbg = flowdbg.Debugger(plugins=[rec])
    app = dbg.attach(linear_graph())
    dbg.break_before("b")
    dbg.logpoint("a", "x={state[x]}")
    run = dbg.start(app.invoke, {"x": 1})
    stop = dbg.wait_for_stop(10)
    assert stop is not None
    dbg.resume()
    assert run.result(10) == {"x": 20}
    assert rec.calls == [
        ("run_start", "linear"),
        ("event", ("a", "before")),
        ("log", "x=1"),
        ("event", ("a", "after")),
        ("event", ("b", "before")),
        ("stop", "b"),
        ("resume", "continue"),
        ("event", ("b", "after")),
        ("run_end", "completed"),
    ]


def test_register_plugin_later_turns_observation_on() -> None:
    dbg = flowdbg.Debugger()
    app = dbg.attach(linear_graph())
    assert dbg._ctl.quiet
    rec = Recorder()
    dbg.register_plugin(rec)
    assert not dbg._ctl.quiet
    app.invoke({"x": 1})
    assert ("run_end", "completed") in rec.calls


def test_register_commands_hook_adds_cli_commands() -> None:
    class Commands:
        @flowdbg.hookimpl
        def flowdbg_register_commands(self, cli: click.Group) -> None:
            @cli.command()
            def hello() -> None:
                click.echo("hi")

    dbg = flowdbg.Debugger(plugins=[Commands()])
    group = click.Group("flowdbg")
    dbg._hooks.register_commands(group)
    assert "hello" in group.commands


def test_a_failing_observer_is_logged_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken:
        @flowdbg.hookimpl
        def flowdbg_on_event(self, event: Any) -> None:
            raise RuntimeError("observer bug")

    dbg = flowdbg.Debugger(plugins=[Broken()])
    app = dbg.attach(linear_graph())
    assert app.invoke({"x": 1}) == {"x": 20}
    assert caplog.text.count("failed in flowdbg_on_event") == 1
