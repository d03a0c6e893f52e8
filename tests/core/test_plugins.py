"""The plugin contract: entry-point loading, adapter requirements, adapter selection,
observer hooks."""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import pluggy
import pytest

import flowdbg
from flowdbg import patching, plugins
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


def test_unregister_plugin_stops_its_hooks_and_restores_the_quiet_path() -> None:
    dbg = flowdbg.Debugger(record=False)
    app = dbg.attach(linear_graph())
    rec = Recorder()
    dbg.register_plugin(rec)
    app.invoke({"x": 1})
    heard = len(rec.calls)
    dbg.unregister_plugin(rec)
    assert dbg._ctl.quiet
    app.invoke({"x": 1})
    assert len(rec.calls) == heard
    dbg.unregister_plugin(rec)  # again: nothing to do


class Exporter:
    """Observes finished units only, as an exporter would: keeps them, builds records later."""

    def __init__(self) -> None:
        self.units: list[Any] = []

    @flowdbg.hookimpl
    def flowdbg_on_step(self, unit: Any) -> None:
        self.units.append(unit)


def test_the_step_hook_gets_every_finished_unit_and_keeps_the_fast_path(tmp_path: Any) -> None:
    exporter = Exporter()
    dbg = flowdbg.Debugger(plugins=[exporter], db=tmp_path / "x.db")
    try:
        app = dbg.attach(linear_graph())
        assert dbg._ctl.quiet  # observing finished units costs no point of the run
        assert app.invoke({"x": 1}) == {"x": 20}
        records = [unit.record() for unit in exporter.units]
        assert [(r.node, r.status, r.output) for r in records] == [
            ("a", "completed", {"x": 2}),
            ("b", "completed", {"x": 20}),
        ]
        assert records[1].state == {"x": 20}  # the state the graph committed after b
        # the built-in recorder is a plugin of the same hook: it got the same units
        assert dbg.flush(10)
        assert dbg.store is not None
        (run,) = dbg.store.list_runs()
        assert [s.node for s in dbg.store.get_steps(run.run_id)] == ["a", "b"]
        assert dbg._pm.get_plugin("flowdbg.recorder") is not None
    finally:
        dbg.close()


def test_a_failing_step_observer_does_not_break_the_run(caplog: Any) -> None:
    class Broken:
        @flowdbg.hookimpl
        def flowdbg_on_step(self, debugger: Any, unit: Any) -> None:
            raise RuntimeError("exporter down")

    exporter = Exporter()
    dbg = flowdbg.Debugger(plugins=[Broken(), exporter], record=False)
    app = dbg.attach(linear_graph())
    assert app.invoke({"x": 1}) == {"x": 20}
    assert app.invoke({"x": 1}) == {"x": 20}
    assert len(exporter.units) == 4  # the other observer still saw every unit
    failures = [r for r in caplog.records if "flowdbg_on_step" in r.getMessage()]
    assert len(failures) == 1  # logged once, not per unit


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


# --------------------------------------------------------------------------------------------
# Adapter requirements: PEP 508 requirements checked against what is installed (PEP 440)
# --------------------------------------------------------------------------------------------


@dataclass
class FakeDist:
    """What the requirement check reads of an installed distribution."""

    version: str
    requires: list[str] | None = field(default_factory=list)


class _Target:
    """A target only the adapter below accepts."""


class FwAdapter(flowdbg.Adapter):
    name = "fw"
    extra = "fw"

    def matches(self, target: Any) -> bool:
        return isinstance(target, _Target)

    def attach(self, target: Any, debugger: Any) -> None:  # pragma: no cover - unavailable
        raise AssertionError("an unavailable adapter must not attach")

    def detach(self, target: Any) -> None:  # pragma: no cover
        pass


def adapter(*requires: str) -> FwAdapter:
    """The adapter above, declaring ``requires``."""
    return type("FwAdapterUnderTest", (FwAdapter,), {"requires": requires})()


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> dict[str, FakeDist]:
    """Distributions to pretend are installed, by name; others are looked up for real."""
    fakes: dict[str, FakeDist] = {}
    real_distribution = importlib.metadata.distribution
    real_version = importlib.metadata.version

    def distribution(name: str) -> Any:
        if name in fakes:
            return fakes[name]
        if name.startswith("fw"):
            raise importlib.metadata.PackageNotFoundError(name)
        return real_distribution(name)

    def version(name: str) -> str:
        if name in fakes:
            return fakes[name].version
        if name.startswith("fw"):
            raise importlib.metadata.PackageNotFoundError(name)
        return real_version(name)

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)
    monkeypatch.setattr(importlib.metadata, "version", version)
    return fakes


# --------------------------------------------------------------------------------------------
# Versions and specifiers
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requirement", "have", "ok"),
    [
        (">=1.1.5", "1.1.5", True),
        (">=1.1.5", "1.1.4", False),
        (">=1.1.5", "1.10.0", True),  # numeric, not text, order
        # ranges
        (">=1.1.5,<2", "1.9.3", True),
        (">=1.1.5,<2", "2.0", False),
        (">=1.1.5,<2", "2.0.0rc1", False),  # a pre-release of 2.0 is not "below 2"
        # compatible release
        ("~=1.1", "1.1", True),
        ("~=1.1", "1.7.2", True),
        ("~=1.1", "2.0", False),
        ("~=1.1", "1.0.9", False),
        ("~=1.1.2", "1.1.9", True),
        ("~=1.1.2", "1.2.0", False),
        # exclusions and wildcards
        ("!=1.3.0", "1.3.0", False),
        ("!=1.3.0", "1.3.1", True),
        ("==1.2.*", "1.2.7", True),
        ("==1.2.*", "1.3.0", False),
        # local versions meet the public version they build on
        ("==1.2.0", "1.2.0+patched", True),
    ],
)
def test_the_installed_version_is_judged_by_pep_440(
    installed: dict[str, FakeDist], requirement: str, have: str, ok: bool
) -> None:
    installed["fw"] = FakeDist(have)
    reason = adapter(f"fw{requirement}").unavailable_reason()
    if ok:
        assert reason is None
    else:
        assert reason is not None
        assert reason.startswith(f"adapter 'fw' needs fw{requirement} (fw {have}")
        assert reason.endswith("Install it with: pip install 'flowdbg[fw]'")


def test_a_release_candidate_of_the_floor_is_below_the_floor(
    installed: dict[str, FakeDist],
) -> None:
    installed["fw"] = FakeDist("1.1.5rc1")
    assert adapter("fw>=1.1.5").unavailable_reason() == (
        "adapter 'fw' needs fw>=1.1.5 (fw 1.1.5rc1, a pre-release, is installed). "
        "Install it with: pip install 'flowdbg[fw]'"
    )


@pytest.mark.parametrize("have", ["1.2.0rc1", "1.2.0.dev3", "1.1.6b2"])
def test_a_pre_release_above_the_floor_is_accepted(
    installed: dict[str, FakeDist], have: str
) -> None:
    installed["fw"] = FakeDist(have)
    a = adapter("fw>=1.1.5")
    assert a.unavailable_reason() is None
    assert a.framework_version() == have


def test_an_installed_version_that_is_not_pep_440_is_refused_with_it(
    installed: dict[str, FakeDist],
) -> None:
    installed["fw"] = FakeDist("2024-custom-build")
    reason = adapter("fw>=1").unavailable_reason() or ""
    assert "(fw 2024-custom-build is installed, which is not a PEP 440 version)" in reason
    # with no version asked for, any installed version will do
    assert adapter("fw").unavailable_reason() is None


def test_a_missing_distribution_says_how_to_install_it(installed: dict[str, FakeDist]) -> None:
    a = adapter("fw>=1.1")
    assert a.unavailable_reason() == (
        "adapter 'fw' needs fw>=1.1 (not installed). Install it with: pip install 'flowdbg[fw]'"
    )
    assert a.framework_version() is None


def test_every_requirement_is_checked_and_the_first_unmet_one_named(
    installed: dict[str, FakeDist],
) -> None:
    installed["fw"] = FakeDist("1.4")
    installed["fw-core"] = FakeDist("0.9")
    a = adapter("fw>=1.1", "fw-core>=1.0")
    assert "needs fw-core>=1.0 (fw-core 0.9 is installed)" in (a.unavailable_reason() or "")
    assert a.framework_version() == "1.4"  # the first requirement is the framework


def test_a_real_distribution_is_read_from_its_metadata() -> None:
    have = importlib.metadata.version("packaging")  # a dependency of flowdbg itself
    assert adapter("packaging>=20").unavailable_reason() is None
    assert adapter("packaging>=20").framework_version() == have
    reason = adapter("packaging<20").unavailable_reason() or ""
    assert f"needs packaging<20 (packaging {have} is installed)" in reason


# --------------------------------------------------------------------------------------------
# Markers and extras
# --------------------------------------------------------------------------------------------


def test_a_requirement_for_another_environment_is_skipped(installed: dict[str, FakeDist]) -> None:
    assert adapter('fw>=1; python_version < "3"').unavailable_reason() is None
    assert adapter('fw>=1; sys_platform == "no-such-platform"').unavailable_reason() is None
    reason = adapter('fw>=1; python_version >= "3"').unavailable_reason() or ""
    assert "(not installed)" in reason


def test_an_extra_needs_the_dependencies_it_adds(installed: dict[str, FakeDist]) -> None:
    installed["fw"] = FakeDist(
        "1.4",
        [
            "fw-base>=1",  # every install's dependency: not the extra's business
            'fw-audio>=2; extra == "voice"',
            'fw-win; extra == "voice" and sys_platform == "no-such-platform"',
            'fw-web; extra == "web"',
        ],
    )
    a = adapter("fw[voice]>=1.1")
    assert a.unavailable_reason() == (
        "adapter 'fw' needs fw[voice]>=1.1 (its extra 'voice' needs fw-audio>=2, not "
        "installed). Install it with: pip install 'flowdbg[fw]'"
    )
    installed["fw-audio"] = FakeDist("1.9")
    assert "(its extra 'voice' needs fw-audio>=2, fw-audio 1.9 is installed)" in (
        a.unavailable_reason() or ""
    )
    installed["fw-audio"] = FakeDist("2.3")
    assert a.unavailable_reason() is None
    assert a.framework_version() == "1.4"
    # the distribution's own version is still checked first
    assert "(fw 1.4 is installed)" in (adapter("fw[voice]>=2").unavailable_reason() or "")


def test_an_extra_the_distribution_does_not_declare_adds_nothing(
    installed: dict[str, FakeDist],
) -> None:
    installed["fw"] = FakeDist("1.4", None)  # metadata without Requires-Dist
    assert adapter("fw[nothing]>=1").unavailable_reason() is None


# --------------------------------------------------------------------------------------------
# Malformed requirements
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["fw =>1.0", "fw>=", "my framework>=1", "fw>=1.0 <2"])
def test_a_malformed_requirement_names_the_adapter_and_the_fix(text: str) -> None:
    a = adapter(text)
    reason = a.unavailable_reason() or ""
    assert reason.startswith(f"adapter 'fw' declares a malformed requirement {text!r} (")
    assert reason.endswith("write it as a PEP 508 requirement such as 'myframework>=1.2,<2'")
    assert "\n" not in reason
    assert a.framework_version() is None


def test_a_malformed_requirement_makes_the_adapter_unavailable_on_attach() -> None:
    class Plugin:
        @flowdbg.hookimpl
        def flowdbg_register_adapters(self, register: Any) -> None:
            register(adapter("fw =>1.0"))

    dbg = flowdbg.Debugger(plugins=[Plugin()])
    info = dbg.adapters["fw"]
    assert not info.available
    assert info.version is None
    assert "malformed requirement 'fw =>1.0'" in (info.reason or "")
    with pytest.raises(flowdbg.AdapterUnavailable, match=r"malformed requirement 'fw =>1\.0'"):
        dbg.attach(_Target())


# -- library-wide instrumentation: install / uninstall ------------------------------------------


class AgentRunner:
    """A framework whose runs start from a static method, as agent runners do."""

    @staticmethod
    def run(agent: Any, text: str) -> str:
        return str(agent(text))


class RunnerAdapter(flowdbg.Adapter):
    """Reports every ``AgentRunner.run`` to the debugger that installed it first."""

    name = "agentrunner"
    capabilities = frozenset({flowdbg.Capability.SYNC})

    def __init__(self) -> None:
        self.debuggers: list[flowdbg.Debugger] = []
        self.patch: Any = None

    def matches(self, target: Any) -> bool:
        return False  # nothing to attach: runs start from AgentRunner.run

    def attach(self, target: Any, debugger: flowdbg.Debugger) -> None:
        raise AssertionError("not a target adapter")

    def detach(self, target: Any) -> None:
        raise AssertionError("not a target adapter")

    def install(self, debugger: flowdbg.Debugger) -> None:
        def make(original: Any) -> Any:
            run = original.__func__

            def traced(agent: Any, text: str) -> str:
                with self.debuggers[0].begin_run(
                    framework=self.name, name="agent", input=text
                ) as scope:
                    reply = scope.unit("agent", kind="agent").call(lambda t: run(agent, t), text)
                    scope.end(output=reply)
                return str(reply)

            return staticmethod(traced)

        self.debuggers.append(debugger)
        self.patch = patching.patch(AgentRunner, "run", make)

    def uninstall(self, debugger: flowdbg.Debugger) -> None:
        self.debuggers.remove(debugger)
        patching.unpatch(self.patch)


class RunnerPlugin:
    def __init__(self) -> None:
        self.adapter = RunnerAdapter()

    @flowdbg.hookimpl
    def flowdbg_register_adapters(self, register: Any) -> None:
        register(self.adapter)


def test_install_debugs_runs_started_from_the_framework_itself() -> None:
    plugin = RunnerPlugin()
    stored = AgentRunner.__dict__["run"]
    dbg = flowdbg.Debugger(plugins=[plugin], record=False)
    dbg.install("agentrunner")
    dbg.install("agentrunner")  # idempotent
    assert dbg.installed == ["agentrunner"]
    assert patching.patched(AgentRunner, "run").refs == 1  # type: ignore[union-attr]
    dbg.break_before("agent", kind="agent")
    run = dbg.start(AgentRunner.run, str.upper, "hi")  # no target was attached
    stop = dbg.wait_for_stop(10)
    assert stop is not None and stop.location.framework == "agentrunner"
    dbg.set(".", "edited")
    dbg.resume()
    assert run.result(10) == "EDITED"

    other = flowdbg.Debugger(plugins=[plugin], record=False)
    other.install("agentrunner")
    assert patching.patched(AgentRunner, "run").refs == 2  # type: ignore[union-attr]
    dbg.close()  # uninstalls: the other debugger still holds the patch
    assert AgentRunner.__dict__["run"] is not stored
    other.uninstall("agentrunner")
    assert AgentRunner.__dict__["run"] is stored and other.installed == []
    assert AgentRunner.run(str.upper, "x") == "X"


def test_a_rewind_is_refused_by_an_adapter_without_it(tmp_path: Path) -> None:
    dbg = flowdbg.Debugger(plugins=[RunnerPlugin()], db=tmp_path / "flowdbg.db")
    try:
        dbg.install("agentrunner")
        dbg.break_before("agent", kind="agent")
        run = dbg.start(AgentRunner.run, str.upper, "hi")
        stop = dbg.wait_for_stop(10)
        assert stop is not None
        with pytest.raises(flowdbg.ForkError) as refused:
            dbg.rewind(0)
        assert str(refused.value) == (
            "adapter 'agentrunner' cannot rewind a run (no capability 'rewind'); set a "
            "breakpoint where you want to look, and run it again"
        )
        assert [s.id for s in dbg.stops] == [stop.id]  # the stop stays
        dbg.resume()
        assert run.result(10) == "HI"
    finally:
        dbg.close()


def test_install_is_refused_by_an_adapter_without_it() -> None:
    dbg = flowdbg.Debugger(record=False)
    with pytest.raises(flowdbg.AdapterError, match="'stategraph' has no library-wide"):
        dbg.install("stategraph")
    with pytest.raises(flowdbg.AdapterNotFound, match="no adapter 'nope'; adapters: "):
        dbg.install("nope")
    assert dbg.installed == []


def test_a_step_observer_that_raises_alone_does_not_break_the_run(caplog: Any) -> None:
    class Broken:
        @flowdbg.hookimpl
        def flowdbg_on_step(self, unit: Any) -> None:
            raise RuntimeError("exporter down")

    class Wrapping:
        seen: list[Any] = []

        @flowdbg.hookimpl(wrapper=True)
        def flowdbg_on_step(self, unit: Any) -> Any:
            self.seen.append(unit.node)
            return (yield)

    dbg = flowdbg.Debugger(plugins=[Broken()], record=False)
    app = dbg.attach(linear_graph())
    assert app.invoke({"x": 1}) == {"x": 20}
    assert any("flowdbg_on_step" in r.getMessage() for r in caplog.records)
    dbg.close()
    dbg = flowdbg.Debugger(plugins=[Wrapping()], record=False)
    app = dbg.attach(linear_graph())
    assert app.invoke({"x": 1}) == {"x": 20}
    assert Wrapping.seen == ["a", "b"]  # a wrapper is called as a wrapper
    dbg.close()


class Starts:
    """Observes units starting: what each received, as a copy."""

    def __init__(self) -> None:
        self.inputs: list[tuple[str, Any]] = []

    @flowdbg.hookimpl
    def flowdbg_on_unit_start(self, unit: Any) -> None:
        self.inputs.append((unit.node, list(unit.input["log"])))


@pytest.mark.parametrize("in_place", [True, False])
def test_unit_start_is_heard_only_where_values_change_in_place(in_place: bool) -> None:
    starts = Starts()
    dbg = flowdbg.Debugger(record=False, plugins=[starts])
    scope = dbg.begin_run(framework="test", name="t")
    scope.values_change_in_place = in_place
    log = ["a"]
    unit = scope.unit("agent", kind="agent")
    unit.before(input={"log": log})
    call = unit.frame().unit("tool", kind="tool")  # a frame takes the run's setting
    call.before(input={"log": log})
    log.append("b")
    call.after(output=None)
    unit.after(output=None)
    scope.end()
    assert starts.inputs == ([("agent", ["a"]), ("tool", ["a"])] if in_place else [])


class Kept:
    """A framework's own object that an adapter keeps as a unit's value on its fast path."""

    def __init__(self, n: int) -> None:
        self.n = n


def _present(value: Any) -> Any:
    if isinstance(value, Kept):
        if value.n < 0:
            raise ValueError("cannot show it")
        return {"n": value.n}
    return value


def test_the_run_log_presents_what_an_adapter_kept_as_it_was() -> None:
    dbg = flowdbg.Debugger(record=False)
    scope = dbg.begin_run(framework="test", name="t")
    scope.present = _present
    unit = scope.unit("step")
    unit.before(input=Kept(1))
    call = unit.frame().unit("tool", kind="tool")  # a frame takes the run's presenter
    call.before(input=Kept(2))
    call.after(output="plain")
    unit.after(output=Kept(3))
    odd = scope.unit("odd")
    odd.before(input=Kept(-1))
    odd.after(output=Kept(4))
    scope.end()
    (log,) = dbg.runs
    shown = {s.node: (s.input, s.output) for s in log.steps}
    assert shown["step"] == ({"n": 1}, {"n": 3})
    assert shown["tool"] == ({"n": 2}, "plain")
    # a value the presenter cannot show stays as the adapter kept it
    assert isinstance(shown["odd"][0], Kept)
    assert shown["odd"][1] == {"n": 4}
    # a finished run enters the history with its values converted (the framework's objects
    # are not kept as long as the run is; the run log shows the same), but for one the
    # presenter cannot show
    assert (unit.input, unit.output) == ({"n": 1}, {"n": 3})
    assert isinstance(odd.input, Kept)
