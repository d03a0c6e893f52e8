"""Helpers of the command-line tests: the test graphs and a runner that checks every
``--json`` output against its documented schema."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from flowdbg.cli import cli
from flowdbg.cli._schemas import ENVELOPE, SCHEMAS, validate

GRAPHS = textwrap.dedent(
    '''
    """Graphs the command-line tests debug."""
    import operator

    from flowdbg.adapters.stategraph import END, StateGraph, Tool, tool


    def _linear():
        g = StateGraph(name="linear")
        g.add_node("alpha", lambda s: {"x": s["x"] + 1})
        g.add_node("beta", lambda s: {"x": s["x"] * 10})
        g.add_node("gamma", lambda s: {"y": s["x"] + 1})
        g.set_entry_point("alpha")
        g.add_edge("alpha", "beta")
        g.add_edge("beta", "gamma")
        g.add_edge("gamma", END)
        return g.compile()


    app = _linear()


    def build_support():
        g = StateGraph(name="support")
        g.add_node("classify", lambda s: {"intent": "refund", "confidence": 0.62})
        g.add_node("refund", lambda s: {"reply": "refund opened"})
        g.add_node("answer", lambda s: {"reply": "here is how"})
        g.set_entry_point("classify")
        g.add_conditional_edges(
            "classify", lambda s: s["intent"], {"refund": "refund", "question": "answer"}
        )
        g.add_edge("refund", END)
        g.add_edge("answer", END)
        return g.compile()


    def _boom(state):
        raise ValueError(f"boom at x={state['x']}")


    def _failing():
        g = StateGraph(name="failing")
        g.add_node("ok", lambda s: {"x": s["x"] + 1})
        g.add_node("boom", _boom)
        g.set_entry_point("ok")
        g.add_edge("ok", "boom")
        g.add_edge("boom", END)
        return g.compile()


    failing = _failing()


    def _shell_agent():
        shell = Tool(lambda cmd: f"ran {cmd}", name="shell")
        g = StateGraph(name="shell-agent")
        g.add_node("act", lambda s: {"ran": [shell(cmd=c) for c in s["cmds"]]})
        g.set_entry_point("act")
        g.add_edge("act", END)
        return g.compile()


    shell_agent = _shell_agent()


    def _fan():
        inner = StateGraph(name="inner")
        inner.add_node("inner1", lambda s: {"x": s["x"] * 10})
        inner.add_node("inner2", lambda s: {"z": s["x"] + 1})
        inner.set_entry_point("inner1")
        inner.add_edge("inner1", "inner2")
        inner.add_edge("inner2", END)
        g = StateGraph(reducers={"items": operator.add}, name="fan")
        g.add_node("fan", lambda s: {"x": 1})
        g.add_node("left", lambda s: {"items": ["left"]})
        g.add_node("right", lambda s: {"items": ["right"]})
        g.add_node("sub", inner.compile())
        g.set_entry_point("fan")
        g.add_conditional_edges(
            "fan", lambda s: ["left", "right"], {"left": "left", "right": "right"}
        )
        g.add_node("done", lambda s: {"done": True})
        g.add_edge("left", "sub")
        g.add_edge("right", "sub")
        g.add_edge("sub", "done")
        g.add_edge("done", END)
        return g.compile()


    fan = _fan()


    @tool
    def search(query):
        return [query + " result"]


    def _tools():
        g = StateGraph(name="tools")
        g.add_node("agent", lambda s: {"results": search(query=s["q"])})
        g.set_entry_point("agent")
        g.add_edge("agent", END)
        return g.compile()


    tools = _tools()

    not_a_graph = 42


    def needs_arguments(a, b):
        return a + b
    '''
)


#: an OpenAI agent whose tool reads the run context (``support.py:build``; needs the extra)
SUPPORT_AGENT = textwrap.dedent(
    """
    import os

    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

    from agents import Agent, RunContextWrapper, function_tool, set_tracing_disabled
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)


    @function_tool
    def account(ctx: RunContextWrapper[dict]) -> str:
        \"\"\"The account of the user the run is for.\"\"\"
        ctx.context["asked"] = ctx.context.get("asked", 0) + 1  # changes the context in place
        return f"account of {ctx.context['user']}"


    def _answer(call):
        found = [i["output"] for i in call.input if isinstance(i, dict) and "output" in i]
        return [assistant_message("; ".join(map(str, found)))]


    def build():
        return Agent(
            name="support",
            tools=[account],
            # a turn asking for the account, then the answer: for each of up to 10 runs
            model=ScriptedModel(
                [[function_call("account", {}, call_id="c1")], ModelStep.respond(_answer)] * 10
            ),
        )
    """
)


def _is_under(module: object, folder: Path) -> bool:
    file = getattr(module, "__file__", None)
    return file is not None and Path(file).resolve().is_relative_to(folder.resolve())


class Cli:
    """Runs ``flowdbg`` in-process and checks what it printed."""

    def __init__(self, cwd: Path) -> None:
        self.runner = CliRunner()
        self.cwd = cwd

    def __call__(self, *args: str, input: str | None = None, code: int | None = 0) -> Result:
        old, path, modules = os.getcwd(), list(sys.path), set(sys.modules)
        os.chdir(self.cwd)
        try:
            result = self.runner.invoke(cli, list(args), input=input, catch_exceptions=False)
        finally:
            os.chdir(old)
            # targets are imported in this process: forget them, as a new process would
            sys.path[:] = path
            for name in set(sys.modules) - modules:
                if name.startswith("_flowdbg_target_") or _is_under(sys.modules[name], self.cwd):
                    del sys.modules[name]
        # (stdout may show the recorded traceback of a failed step, on purpose)
        assert "Traceback" not in result.stderr, result.stderr
        if code is not None:
            assert result.exit_code == code, (result.exit_code, result.output)
        return result

    def error(self, *args: str, input: str | None = None, code: int = 1) -> str:
        """Run a command that must fail; return its one-line error message."""
        result = self(*args, input=input, code=code)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        if code == 1:
            assert len(lines) == 1, result.stderr
            assert lines[0].startswith("error: "), lines
        return "\n".join(lines)

    def json(self, *args: str, command: str) -> Any:
        """Run a ``--json`` command, validate the envelope and the data; return the data."""
        result = self(*args, "--json")
        envelope = json.loads(result.stdout)
        assert validate(envelope, ENVELOPE) == []
        assert envelope["command"] == command
        assert envelope["schema_version"] == 1
        problems = validate(envelope["data"], SCHEMAS[command])
        assert problems == [], problems
        return envelope["data"]


def record_graph_runs(graphs: Path, db: Path, runs: list[tuple[str, str, Any]]) -> dict[str, str]:
    """Run graphs of ``graphs.py`` under a recording debugger: ``runs`` holds (name, the graph's
    attribute, input); returns the run ids by name, everything flushed to ``db``."""
    import flowdbg

    sys.path.insert(0, str(graphs))
    try:
        import graphs as module

        ids: dict[str, str] = {}
        dbg = flowdbg.Debugger(record=True, db=db)
        try:
            for name, attribute, value in runs:
                target = getattr(module, attribute)
                dbg.attach(target)
                handle = dbg.start(target.invoke, value)
                handle.exception(timeout=10.0)
                assert handle.run_id is not None
                ids[name] = handle.run_id
            assert dbg.flush(timeout=10.0)
        finally:
            dbg.close()
    finally:
        sys.path.remove(str(graphs))
        sys.modules.pop("graphs", None)
    return ids
