"""The terminal debugger's ``b`` and ``tool`` refuse names the attached targets do not have,
with the text of the Python API's warning; ``TARGET`` calls a factory written ``fn()``."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import Cli
from rich.console import Console

import flowdbg
from flowdbg.cli._render import Out
from flowdbg.cli._repl import EchoSource, Session
from flowdbg.cli._target import TargetError, load_target
from flowdbg.errors import BreakpointWarning

NO_REC = "--no-record"


@pytest.fixture
def graphs_module(graphs: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(graphs))
    import graphs as module  # the test graphs written by the fixture

    yield module
    sys.modules.pop("graphs", None)


@pytest.fixture
def dbg() -> Iterator[flowdbg.Debugger]:
    d = flowdbg.Debugger(record=False)
    yield d
    d.close()


def _session(dbg: flowdbg.Debugger, target: Any) -> tuple[Session, io.StringIO]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None, highlight=False, markup=False)
    out = Out(console)
    dbg.attach(target)
    return Session(dbg, out, description=dbg.describe(target), source=EchoSource([], out)), buffer


def _api_problem(dbg: flowdbg.Debugger, set_it: Any) -> str:
    """What the Python API warns of, without the note on the breakpoint it sets."""
    with pytest.warns(BreakpointWarning) as record:
        bp = set_it()
    dbg.remove(bp)
    return str(record[0].message).split(f" ({bp.id} is set all the same")[0]


def test_b_refuses_an_unknown_node_with_the_apis_text(
    dbg: flowdbg.Debugger, graphs_module: Any
) -> None:
    session, buffer = _session(dbg, graphs_module.app)
    session.onecmd("b nope")
    session.onecmd("b bta:after")
    session.onecmd("b beta:during")
    session.onecmd("tbreak gama if state['x'] > 1")
    problem = _api_problem(dbg, lambda: dbg.break_before("nope"))
    assert problem == (
        "unknown node 'nope'; nodes: alpha, beta, gamma; check the spelling, or give "
        "kind='tool' or kind='llm' for a call a node makes"
    )
    lines = buffer.getvalue().splitlines()
    # the API's text, with the prompt's way to name a call's kind
    assert lines[0] == (
        "error: unknown node 'nope'; nodes: alpha, beta, gamma; check the spelling, or write "
        "tool:NAME or llm:NAME for a call a node makes (b llm:NAME:after)"
    )
    assert lines[1].startswith("error: unknown node 'bta'; nodes: beta, alpha, gamma;")
    assert lines[2].startswith("error: unknown node 'beta:during'; nodes: alpha, beta, gamma;")
    assert lines[2].endswith("(a position after ':' is 'before' or 'after', not 'during')")
    assert lines[3].startswith("error: unknown node 'gama'; nodes: gamma, alpha, beta;")
    assert dbg.breakpoints == []


def test_b_and_tool_set_names_that_exist_without_a_word(
    dbg: flowdbg.Debugger, graphs_module: Any
) -> None:
    session, buffer = _session(dbg, graphs_module.tools)
    session.onecmd("b agent")
    session.onecmd("b ag*:after")
    # the StateGraph lists no tools: a tool name cannot be checked, and is taken as given
    session.onecmd("tool search ~flights")
    assert buffer.getvalue().splitlines() == [
        "set bp-1 node 'agent' before (0 hits)",
        "set bp-2 node 'ag*' after (0 hits)",
        "set bp-3 tool 'search' args~'flights' (0 hits)",
    ]


def test_b_takes_a_kind_for_the_calls_no_description_lists(
    dbg: flowdbg.Debugger, graphs_module: Any
) -> None:
    session, buffer = _session(dbg, graphs_module.tools)
    session.onecmd("b llm:chat-model:after")  # a model call the StateGraph does not list
    session.onecmd("tbreak tool:search")
    session.onecmd("b node:nope")  # a node's name is still checked
    session.onecmd("b llm:")  # no name: taken as a node named so, and refused
    lines = buffer.getvalue().splitlines()
    assert lines[:2] == [
        "set bp-1 node 'chat-model' after kind llm (0 hits)",
        "set bp-2 node 'search' before kind tool temporary (0 hits)",
    ]
    assert lines[2].startswith("error: unknown node 'nope'; nodes: agent")
    assert lines[3].startswith("error: unknown node 'llm:'")
    assert [(bp.pattern, bp.kinds) for bp in dbg.breakpoints] == [
        ("chat-model", ("llm",)),
        ("search", ("tool",)),
    ]


class _Agent:
    """A target whose description lists its tools."""


class _AgentAdapter(flowdbg.Adapter):
    name = "agentish"
    capabilities = frozenset({flowdbg.Capability.DESCRIBE})

    def matches(self, target: Any) -> bool:
        return isinstance(target, _Agent)

    def attach(self, target: Any, debugger: Any) -> None:
        pass

    def detach(self, target: Any) -> None:
        pass

    def describe(self, target: Any) -> dict[str, Any]:
        return {"name": "agent", "nodes": ["model", "tools"], "tools": ["search", "shell"]}


class _Plugin:
    @flowdbg.hookimpl
    def flowdbg_register_adapters(self, register: Any) -> None:
        register(_AgentAdapter())


def test_tool_refuses_a_tool_the_description_does_not_list() -> None:
    dbg = flowdbg.Debugger(record=False, plugins=[_Plugin()])
    try:
        session, buffer = _session(dbg, _Agent())
        session.onecmd("tool shel ~rm")
        session.onecmd("tool shell ~rm")
        problem = _api_problem(dbg, lambda: dbg.break_on_tool("shel"))
    finally:
        dbg.close()
    assert problem == "unknown tool 'shel'; tools: shell, search; check the spelling"
    assert buffer.getvalue().splitlines() == [
        f"error: {problem}",
        "set bp-1 tool 'shell' args~'rm' (0 hits)",
    ]


# ------------------------------------------------------------------------------ TARGET


def test_a_factory_is_called_when_written_with_parentheses(run_cli: Cli) -> None:
    out = run_cli("graph", "inspect", "graphs.py:build_support()").stdout
    assert "graph 'support' (stategraph)" in out
    out = run_cli("run", "graphs.py:build_support()", "--input", "{}", NO_REC).stdout
    assert "running 'support' (3 nodes)" in out and "run completed" in out


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            "graphs.py:not_a_graph()",
            "error: graphs.py:not_a_graph is an object of type 'int', which cannot be called; "
            "write graphs.py:not_a_graph without ()",
        ),
        (
            "graphs.py:needs_arguments()",
            "error: calling graphs.py:needs_arguments() without arguments failed: ",
        ),
        (
            "graphs.py:build_support(1)",
            "error: 'graphs.py:build_support(1)' passes arguments, which TARGET cannot; write "
            "graphs.py:FUNCTION() to call a function that takes none",
        ),
        (
            "graphs.py:app()",
            "error: graphs.py:app is an object of type 'CompiledGraph', which cannot be called; "
            "write graphs.py:app without ()",
        ),
    ],
)
def test_a_bad_call_in_target_is_one_line(run_cli: Cli, target: str, message: str) -> None:
    assert run_cli.error("graph", "inspect", target).startswith(message)
    assert run_cli.error("run", target, NO_REC).startswith(message)


def test_a_bare_factory_is_refused_where_calls_must_be_explicit(
    dbg: flowdbg.Debugger, graphs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(graphs)
    (graphs / "counted.py").write_text(
        "from graphs import build_support\n"
        "CALLS = []\n"
        "def build():\n"
        "    CALLS.append(1)\n"
        "    return build_support()\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(graphs))
    try:
        with pytest.raises(TargetError) as refused:
            load_target("counted.py:build", dbg, implicit_call=False)
        assert str(refused.value) == (
            "counted.py:build is a function, not a graph, workflow or agent; to look at what it "
            "builds, call it: 'counted.py:build()' (quoted for the shell)"
        )
        module = sys.modules["_flowdbg_target_counted"]
        assert module.CALLS == []  # refused without running it
        explicit = load_target("counted.py:build()", dbg, implicit_call=False)
        implicit = load_target("counted.py:build", dbg)  # flowdbg run's documented form
        assert dbg.describe(explicit)["name"] == dbg.describe(implicit)["name"] == "support"
        assert sys.modules["_flowdbg_target_counted"].CALLS == [1]
    finally:
        sys.modules.pop("_flowdbg_target_counted", None)
        sys.modules.pop("graphs", None)
