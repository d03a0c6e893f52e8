"""How the command line runs a target through its adapter (``flowdbg.Adapter.invoke``,
``ainvoke``, ``check_run``, ``cli_options``, ``failure_hint``, ``demo``), on a small framework
of this file's own: a pipeline of steps over one value, with a sync and an async-only form."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

import flowdbg
from flowdbg.adapter import NOT_RESUMING, Demo, RunOptions
from flowdbg.cli import make_cli
from flowdbg.errors import AdapterError, RunOptionError

#: the framework, a module the targets import (the adapter recognises its classes by module)
TOYFLOW = textwrap.dedent(
    '''
    """A pipeline of named steps over one value; a debugger, when attached, sees each step."""


    class Pipeline:
        def __init__(self, name, steps):
            self.name = name
            self.steps = steps
            self.debugger = None
            self.waiting = None  # a run suspended before its last step, waiting for a value

        def _run(self, value, steps, prefix):
            scope = None
            if self.debugger is not None:
                scope = self.debugger.begin_run(framework="toy", name=self.name, input=value)
            try:
                for name, fn in steps:
                    if scope is not None:
                        unit = scope.unit(name)
                        value = unit.before(state=value)
                        value = unit.after(output=fn(value), state=None)
                    else:
                        value = fn(value)
            except BaseException as exc:
                if scope is not None:
                    scope.end(error=exc)
                raise
            result = f"{prefix}{value}"
            if scope is not None:
                scope.end(output=result)
            return result

        def invoke(self, value, *, prefix=""):
            return self._run(value, self.steps, prefix)

        def resume(self, value):
            return self._run(value, self.steps[-1:], "")


    class AsyncPipeline(Pipeline):
        invoke = None  # runs only under an event loop

        async def ainvoke(self, value):
            return self._run(value, self.steps, "")
    '''
)

APP = textwrap.dedent(
    """
    from toyflow import AsyncPipeline, Pipeline


    def _fail(value):
        raise ValueError("no prefix given")


    pipe = Pipeline("pipe", [("double", lambda v: v * 2), ("inc", lambda v: v + 1)])
    apipe = AsyncPipeline("apipe", [("double", lambda v: v * 2), ("inc", lambda v: v + 1)])
    failing = Pipeline("failing", [("fail", _fail)])
    """
)


class ToyAdapter(flowdbg.Adapter):
    """The adapter of the toy framework: ``--prefix`` and a resume of its own."""

    name = "toy"
    capabilities = frozenset({flowdbg.Capability.SYNC, flowdbg.Capability.ASYNC})
    _options = (click.Option(["--prefix"], metavar="TEXT", help="put TEXT before the result"),)

    def matches(self, target: Any) -> bool:
        return type(target).__module__ == "toyflow"

    def attach(self, target: Any, debugger: flowdbg.Debugger) -> None:
        target.debugger = debugger

    def detach(self, target: Any) -> None:
        target.debugger = None

    def cli_options(self) -> Sequence[click.Parameter]:
        return self._options

    def check_run(self, target: Any, options: RunOptions) -> None:
        if options.resuming:
            if "prefix" in options.extra:
                raise RunOptionError("prefix", "a resumed pipeline keeps its first prefix")
            return
        super().check_run(target, options)

    def invoke(self, target: Any, input: Any, options: RunOptions | None = None) -> Any:
        options = options or RunOptions()
        self.check_run(target, options)
        if options.resuming:
            return target.resume(options.resume)
        if "prefix" in options.extra:
            return target.invoke(input, prefix=options.extra["prefix"])
        return super().invoke(target, input, options)

    def failure_hint(self, target: Any, error: BaseException, options: RunOptions) -> str | None:
        if "prefix" in str(error) and "prefix" not in options.extra:
            return "give one with --prefix TEXT"
        return None

    def demo(self) -> Demo:
        return Demo(
            target="toyapp:pipe",
            input=4,
            script=("# the first step, then its result", "b double:after", "c", "p .", "c"),
            hint="try b inc, c, p .",
            summary="a two-step pipeline over a number",
        )


class MissingAdapter(ToyAdapter):
    """An adapter whose framework is not installed: its demo is listed and refused."""

    name = "missing"
    extra = "missing"
    requires = ("flowdbg-no-such-framework>=1",)

    def matches(self, target: Any) -> bool:
        return False

    def cli_options(self) -> Sequence[click.Parameter]:
        return ()

    def demo(self) -> Demo:
        return Demo(target="nowhere:app", input={}, script=(), hint="", summary="never runs")


class ToyPlugin:
    @flowdbg.hookimpl
    def flowdbg_register_adapters(self, register: Any) -> None:
        register(ToyAdapter())
        register(MissingAdapter())


@pytest.fixture
def folder(graphs: Path, db: Path) -> Path:
    (graphs / "toyflow.py").write_text(TOYFLOW, encoding="utf-8")
    (graphs / "toyapp.py").write_text(APP, encoding="utf-8")
    return graphs


@pytest.fixture
def flowdbg_cli(folder: Path) -> Iterator[Any]:
    """``flowdbg`` with the toy adapter, run in the folder of the targets."""
    group = make_cli([ToyPlugin()])

    def run(*args: str, input: str | None = None, code: int = 0) -> Result:
        old, path, modules = os.getcwd(), list(sys.path), set(sys.modules)
        os.chdir(folder)
        try:
            result = CliRunner().invoke(group, list(args), input=input, catch_exceptions=False)
        finally:
            os.chdir(old)
            sys.path[:] = path
            for name in set(sys.modules) - modules:
                if name.startswith(("_flowdbg_target_", "toyflow", "toyapp")):
                    del sys.modules[name]
        assert "Traceback" not in result.stderr, result.stderr
        assert result.exit_code == code, (result.exit_code, result.output)
        return result

    yield run


@pytest.fixture
def toyapp(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The targets' module, imported here (for the Python API)."""
    import importlib

    monkeypatch.syspath_prepend(str(folder))
    yield importlib.import_module("toyapp")
    for name in ("toyapp", "toyflow"):
        sys.modules.pop(name, None)


def result_of(out: str) -> Any:
    return json.loads(out.split("result:")[1].split("\n\n")[0])


def test_a_target_without_async_runs_under_invoke_and_stops(flowdbg_cli: Any) -> None:
    out = flowdbg_cli("run", "toyapp.py:pipe", "--input", "3", "-b", "inc", input="p .\nc\n").stdout
    assert "stop-1: breakpoint [bp-1] at before node 'inc'" in out
    assert out.split("(flowdbg) p .\n")[1].startswith("6\n")
    assert result_of(out) == "7"
    assert "pipe (toy) completed: 2 steps over 2 nodes" in out


def test_an_async_only_target_runs_under_ainvoke(flowdbg_cli: Any) -> None:
    assert ToyAdapter().is_async(object()) is False
    out = flowdbg_cli("run", "toyapp.py:apipe", "--input", "5", "-b", "double", input="c\n").stdout
    assert "stop-1: breakpoint [bp-1] at before node 'double'" in out
    assert result_of(out) == "11"


def test_an_adapter_option_reaches_the_run(flowdbg_cli: Any) -> None:
    out = flowdbg_cli("run", "toyapp.py:pipe", "--input", "1", "--prefix", "n=").stdout
    assert result_of(out) == "n=3"
    help_text = flowdbg_cli("run", "--help").stdout
    assert "--prefix TEXT" in help_text and "put TEXT before the result" in help_text
    # the option of another adapter is refused by name, before anything runs
    message = flowdbg_cli("run", "graphs.py:app", "--prefix", "x", code=1).stderr
    assert message == (
        "error: --prefix is an option of adapter 'toy', and graphs.py:app is run by adapter "
        "'stategraph'; run it without --prefix\n"
    )
    message = flowdbg_cli("run", "toyapp.py:pipe", "--thread", "t", code=1).stderr
    assert "error: --thread is an option of adapter 'langgraph', and toyapp.py:pipe is run by " \
        "adapter 'toy'; run it without --thread" in message  # fmt: skip


def test_options_the_adapter_cannot_honour_are_refused_with_their_name(
    flowdbg_cli: Any, toyapp: Any
) -> None:
    message = flowdbg_cli("run", "toyapp.py:pipe", "--config", '{"a": 1}', code=1).stderr
    assert message == (
        "error: --config: Pipeline.invoke() takes no config after the input, so adapter 'toy' "
        "cannot pass one; run it without --config\n"
    )
    message = flowdbg_cli("run", "toyapp.py:pipe", "--resume", "1", "--prefix", "p", code=1)
    assert message.stderr == "error: --prefix: a resumed pipeline keeps its first prefix\n"
    # the same refusals through the Python API, as flowdbg errors
    pipe, apipe = toyapp.pipe, toyapp.apipe
    with pytest.raises(RunOptionError) as refused:
        ToyAdapter().invoke(pipe, 1, RunOptions(config={}))
    assert refused.value.option == "config"
    assert isinstance(refused.value, flowdbg.AdapterError)
    with pytest.raises(RunOptionError, match=r"^--colour: adapter 'toy' takes no such option"):
        ToyAdapter().check_run(pipe, RunOptions(extra={"colour": "red"}))
    with pytest.raises(AdapterError, match="has no invoke\\(\\) or run\\(\\) method"):
        ToyAdapter().invoke(apipe, 1)


def test_the_default_refuses_a_resume(flowdbg_cli: Any) -> None:
    message = flowdbg_cli("run", "graphs.py:app", "--resume", '"yes"', code=1).stderr
    assert message == (
        "error: --resume: adapter 'stategraph' cannot resume a run of a CompiledGraph with a "
        "value; start a new run with an input instead\n"
    )


def test_resume_goes_through_the_options(flowdbg_cli: Any) -> None:
    # the toy resume runs the last step on the value given
    out = flowdbg_cli("run", "toyapp.py:pipe", "--resume", "41", "-b", "inc", input="p .\nc\n")
    assert "stop-1: breakpoint [bp-1] at before node 'inc'" in out.stdout
    assert out.stdout.split("(flowdbg) p .\n")[1].startswith("41\n")
    assert result_of(out.stdout) == "42"
    assert RunOptions().resume is NOT_RESUMING and not RunOptions().resuming
    assert RunOptions(resume=None).resuming  # None is a value like any other


def test_a_failed_run_gets_the_adapters_hint(flowdbg_cli: Any) -> None:
    result = flowdbg_cli("run", "toyapp.py:failing", code=1)
    assert result.stderr == (
        "error: the run failed: ValueError: no prefix given (give one with --prefix TEXT)\n"
    )


def test_an_adapter_brings_its_demo(flowdbg_cli: Any) -> None:
    out = flowdbg_cli("demo", "--framework", "toy").stdout
    assert out.startswith("$ flowdbg run toyapp:pipe --stop-on-entry --input 4\n")
    assert "# the first step, then its result\n(flowdbg) b double:after\n" in out
    assert "stop-2: breakpoint [bp-1] at after node 'double'" in out
    assert out.split("(flowdbg) p .\n")[1].startswith("8\n")
    assert result_of(out) == "9"
    interactive = flowdbg_cli("demo", "--framework", "toy", "--interactive", input="q\n", code=1)
    assert "# your turn: try b inc, c, p ." in interactive.stdout
    help_text = flowdbg_cli("demo", "--help").stdout
    assert "toy" in help_text and "a two-step pipeline over a number" in help_text
    assert "missing" in help_text and "never runs (not available: adapter 'missing' needs" in (
        " ".join(help_text.split())
    )
    refused = flowdbg_cli("demo", "--framework", "missing", code=1).stderr
    assert refused.startswith(
        "error: the missing demo cannot run here: adapter 'missing' needs "
        "flowdbg-no-such-framework>=1 (not installed). Install it with: "
        "pip install 'flowdbg[missing]'"
    )
    usage = flowdbg_cli("demo", "--framework", "nope", code=2).stderr
    assert "Invalid value for '--framework': 'nope' is not one of 'stategraph'," in usage
    assert "'toy'" in usage


class ClashingAdapter(MissingAdapter):
    """Offers an option spelled like a built-in one, and one like the toy adapter's."""

    name = "clashing"
    _clashing = (
        click.Option(["--input"], help="not flowdbg's"),
        click.Option(["--prefix", "prefix_text"], help="another --prefix"),
        click.Option(["--colour"], help="its own"),
    )

    def cli_options(self) -> Sequence[click.Parameter]:
        return self._clashing


class ClashingPlugin:
    @flowdbg.hookimpl
    def flowdbg_register_adapters(self, register: Any) -> None:
        register(ToyAdapter())
        register(ClashingAdapter())


def test_an_option_spelled_like_another_is_left_out_with_a_warning(folder: Path) -> None:
    result = CliRunner().invoke(make_cli([ClashingPlugin()]), ["run", "--help"])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "warning: adapter 'clashing' offers --input to flowdbg run, an option flowdbg run or "
        "another adapter already has; it is left out",
        # adapters are asked in name order: the first keeps the spelling
        "warning: adapter 'toy' offers --prefix to flowdbg run, an option flowdbg run or "
        "another adapter already has; it is left out",
    ]
    assert "--colour TEXT" in result.stdout and "another --prefix" in result.stdout
    assert "put TEXT before the result" not in result.stdout
    assert "the run's input as JSON" in result.stdout and "not flowdbg's" not in result.stdout
