"""``flowdbg graph inspect``, ``flowdbg adapters``, plugin commands and the group itself."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from cli_helpers import Cli
from click.testing import CliRunner

import flowdbg
from flowdbg.cli import make_cli


def test_graph_inspect_text(run_cli: Cli) -> None:
    out = run_cli("graph", "inspect", "graphs.py:fan").stdout
    assert out.splitlines()[0] == "graph 'fan' (stategraph)"
    for line in (
        "├── entry: fan",
        "│   ├── sub  (subgraph 'inner')",
        "│   │   ├── nodes",
        "│   │   │   ├── inner1",
        "│   │       ├── inner1 -> inner2",
        "│   └── done",
        "│   ├── START -> fan",
        "│   ├── sub -> done",
        "│   └── fan -?-> left, right  (router <lambda>)",
        "└── reducers: items",
    ):
        assert line in out, line


def test_graph_inspect_json(run_cli: Cli) -> None:
    data = run_cli.json("graph", "inspect", "graphs.py:build_support()", command="graph inspect")
    assert data["target"] == "graphs.py:build_support()"
    assert data["adapter"] == "stategraph"
    graph = data["graph"]
    assert graph["name"] == "support"
    assert [n["name"] for n in graph["nodes"]] == ["classify", "refund", "answer"]
    assert {"source": "refund", "target": "__end__"} in graph["edges"]
    (cond,) = graph["conditional_edges"]
    assert cond["source"] == "classify" and cond["targets"] == ["refund", "answer"]


def test_graph_inspect_draws_mermaid_and_dot(run_cli: Cli) -> None:
    mermaid = run_cli("graph", "inspect", "graphs.py:build_support()", "--format", "mermaid").stdout
    lines = mermaid.splitlines()
    assert lines[0] == "flowchart TD"
    ids = dict(re.findall(r'^  (n\d+)(?:\(\[|\[)"(\w+)"', mermaid, flags=re.M))
    names = {name: node for node, name in ids.items()}
    assert sorted(names) == ["END", "START", "answer", "classify", "refund"]
    assert (
        f'  {names["classify"]} -.->|"<lambda>"| {names["refund"]}'.replace(
            "<lambda>", "#lt;lambda#gt;"
        )
        in lines
    )
    assert f"  {names['refund']} --> {names['END']}" in lines

    dot = run_cli("graph", "inspect", "graphs.py:fan", "--format", "dot").stdout
    assert dot.startswith('digraph "fan" {\n') and dot.endswith("}\n")
    assert "subgraph cluster_" in dot and 'label="sub: inner";' in dot
    assert re.search(r'n\d+ -> n\d+ \[style=dashed, label="<lambda>"\];', dot)


def test_graph_inspect_format_and_json_do_not_mix(run_cli: Cli) -> None:
    message = run_cli.error(
        "graph", "inspect", "graphs.py:fan", "--format", "dot", "--json", code=2
    )
    assert "give --json or --format dot, not both" in message


def test_graph_inspect_bad_targets(run_cli: Cli) -> None:
    assert run_cli.error("graph", "inspect", "graphs.py:not_a_graph").startswith(
        "error: graphs.py:not_a_graph is not supported: no flowdbg adapter accepts a builtins.int"
    )
    assert run_cli.error("graph", "inspect", "broken.py:x").startswith(
        "error: cannot import 'broken.py': ModuleNotFoundError"
    )


def test_adapters_text_and_json(run_cli: Cli) -> None:
    out = run_cli("adapters").stdout
    lines = out.splitlines()
    assert lines[0].split() == ["adapter", "available", "version", "capabilities", "/", "reason"]
    stategraph = next(line for line in lines if line.startswith("stategraph"))
    assert stategraph.split()[1] == "yes"
    assert "state_editing" in stategraph and "parallel_branches" in stategraph
    data = run_cli.json("adapters", command="adapters")
    info = next(a for a in data["adapters"] if a["name"] == "stategraph")
    assert info["available"] is True and info["reason"] is None
    assert "describe" in info["capabilities"]


def test_adapters_shows_why_an_adapter_is_unavailable(
    run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWDBG_DISABLE_ADAPTERS", "stategraph")
    data = run_cli.json("adapters", command="adapters")
    info = next(a for a in data["adapters"] if a["name"] == "stategraph")
    assert info["available"] is False
    assert "FLOWDBG_DISABLE_ADAPTERS" in info["reason"]
    line = run_cli.error("graph", "inspect", "graphs.py:app")
    assert "no flowdbg adapter accepts" in line


class CommandsPlugin:
    """A plugin adding a command through the hook."""

    @flowdbg.hookimpl
    def flowdbg_register_commands(self, cli: click.Group) -> None:
        @cli.command("hello")
        @click.argument("name")
        def hello(name: str) -> None:
            """Say hello."""
            click.echo(f"hello {name}")


class BrokenPlugin:
    @flowdbg.hookimpl
    def flowdbg_register_commands(self, cli: click.Group) -> None:
        raise RuntimeError("plugin bug")


def test_plugins_add_commands_through_the_hook() -> None:
    group = make_cli([CommandsPlugin()])
    runner = CliRunner()
    result = runner.invoke(group, ["--help"])
    assert "  hello " in result.output
    result = runner.invoke(group, ["hello", "world"])
    assert result.exit_code == 0 and result.output == "hello world\n"


def test_a_broken_plugin_does_not_break_the_command_line() -> None:
    group = make_cli([BrokenPlugin()])
    result = CliRunner().invoke(group, ["adapters", "--json"])
    assert result.exit_code == 0
    assert result.stderr == (
        "warning: a plugin failed to add its commands: RuntimeError: plugin bug\n"
    )


def test_usage_errors_exit_2(run_cli: Cli) -> None:
    result = run_cli("runs", "ls", "--limit", "0", code=2)
    assert "Invalid value for '--limit'" in result.stderr
    result = run_cli("nope", code=2)
    assert "No such command 'nope'" in result.stderr


def test_version() -> None:
    result = CliRunner().invoke(make_cli(), ["--version"])
    assert result.output == f"flowdbg, version {flowdbg.__version__}\n"


def test_a_tree_names_the_tools_a_target_lists_and_no_missing_router() -> None:
    from rich.console import Console

    from flowdbg.cli._render import graph_tree

    description = {
        "name": "agent",
        "entry": ["think"],
        "nodes": [{"name": "think", "model": ["gpt-a", "gpt-b"]}, {"name": "act"}],
        "conditional_edges": [{"source": "think", "targets": ["act", "__end__"]}],
        "tools": [{"name": "search"}, "shell"],  # listed by the target, by no node
    }
    console = Console(width=100, record=True)
    console.print(graph_tree(description))
    text = console.export_text()
    assert "think  (model gpt-a, gpt-b)" in text
    assert "think -?-> act, END\n" in text  # no "(router None)"
    assert "tools: search, shell" in text


LLAMA_TOOLS = """
from llama_index.core.tools import FunctionTool
from workflows import Workflow, step
from workflows.events import StartEvent, StopEvent


def add(a: int, b: int) -> int:
    return a + b


class Calc(Workflow):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.tools = [FunctionTool.from_defaults(fn=add)]

    @step
    async def compute(self, ev: StartEvent) -> StopEvent:
        out = await self.tools[0].acall(a=ev.a, b=ev.b)
        return StopEvent(result=out.raw_output)


wf = Calc(timeout=10)
"""


def test_a_workflows_held_tools_are_in_its_pictures_as_in_its_listing(
    run_cli: Cli, graphs: Path
) -> None:
    pytest.importorskip("llama_index.core", reason="llama-index-core is not installed")
    (graphs / "calc.py").write_text(LLAMA_TOOLS, encoding="utf-8")
    assert "└── tools: add" in run_cli("graph", "inspect", "calc.py:wf").stdout
    mermaid = run_cli("graph", "inspect", "calc.py:wf", "--format", "mermaid").stdout
    assert re.search(r'^  subgraph n\d+\["tools"\]\n    n\d+\[\["add"\]\]\n  end$', mermaid, re.M)
    dot = run_cli("graph", "inspect", "calc.py:wf", "--format", "dot").stdout
    assert 'label="tools";' in dot and 'label="add", shape=component' in dot


LLAMA_MODEL = """
from llama_index.core.llms import MockLLM
from workflows import Workflow, step
from workflows.events import StartEvent, StopEvent


class Asker(Workflow):
    llm = MockLLM()  # a model the workflow holds in its class; its step asks it

    @step
    async def ask(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=str(await self.llm.acomplete("hi")))


wf = Asker(timeout=10)
"""


def test_a_workflows_held_models_are_listed_and_drawn(run_cli: Cli, graphs: Path) -> None:
    pytest.importorskip("llama_index.core", reason="llama-index-core is not installed")
    (graphs / "asker.py").write_text(LLAMA_MODEL, encoding="utf-8")
    assert "└── models: MockLLM" in run_cli("graph", "inspect", "asker.py:wf").stdout
    mermaid = run_cli("graph", "inspect", "asker.py:wf", "--format", "mermaid").stdout
    assert re.search(
        r'^  subgraph n\d+\["models"\]\n    n\d+\{\{"MockLLM"\}\}\n  end$', mermaid, re.M
    )
    data = run_cli.json("graph", "inspect", "asker.py:wf", command="graph inspect")
    assert data["graph"]["models"] == ["MockLLM"]
