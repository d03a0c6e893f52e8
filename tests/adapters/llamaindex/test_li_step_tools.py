"""Tools a workflow's own step calls (``await tool.acall(...)``, as a workflow written from
scratch does) are ``tool`` units one level inside that step (tox env ``llamaindex_core``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="llama-index-core is not installed")

from llama_index.core.tools import FunctionTool
from workflows import Context, Workflow, step
from workflows.events import StartEvent, StopEvent

import flowdbg
from flowdbg import StopReason

WAIT = 10.0


def make_tools(calls: list[tuple[str, Any]]) -> dict[str, FunctionTool]:
    async def search(query: str, limit: int = 3) -> str:
        """Search the web."""
        calls.append(("search", (query, limit)))
        return f"{limit} results for {query}"

    async def remember(ctx: Context, key: str) -> str:
        """Store a key in the run's store."""
        await ctx.store.set("remembered", key)
        calls.append(("remember", key))
        return f"kept {key}"

    async def broken(path: str) -> str:
        """Read a file."""
        raise PermissionError(f"cannot read {path}")

    # LlamaIndex finds a tool's context parameter by its annotation, which it does not resolve
    # from a string (this module's annotations are strings)
    remember.__annotations__["ctx"] = Context
    return {
        "search": FunctionTool.from_defaults(async_fn=search, name="search"),
        "remember": FunctionTool.from_defaults(async_fn=remember, name="remember"),
        "broken": FunctionTool.from_defaults(async_fn=broken, name="broken"),
    }


class Research(Workflow):
    """One step that calls the tools it holds itself."""

    def __init__(self, tools: dict[str, FunctionTool], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tools = tools

    @step
    async def research(self, ctx: Context, ev: StartEvent) -> StopEvent:
        mode = ev.get("mode", "keywords")
        if mode == "positional":
            found = await self.tools["search"].acall("flowdbg")
        elif mode == "broken":
            found = await self.tools["broken"].acall(path="/etc/shadow")
        elif mode == "context":
            found = await self.tools["remember"].acall(ctx=ctx, key="alpha")
        elif mode == "sync":
            found = self.tools["search"].call(query="flowdbg")
        elif mode == "unheld":  # a tool made in the step: no attached workflow holds it
            made = FunctionTool.from_defaults(async_fn=self.tools["search"].async_fn)
            found = await made.acall(query="flowdbg")
        else:
            found = await self.tools["search"].acall(query="flowdbg", limit=3)
        return StopEvent(result={"content": found.content, "raw": found.raw_output})


def start(dbg: flowdbg.Debugger, wf: Workflow, **kwargs: Any) -> flowdbg.RunHandle:
    async def go() -> Any:
        return await wf.run(**kwargs)

    return dbg.start(lambda: asyncio.run(go()))


@pytest.fixture
def calls() -> list[tuple[str, Any]]:
    return []


@pytest.fixture
def wf(calls: list[tuple[str, Any]]) -> Research:
    return Research(make_tools(calls), timeout=30)


def test_a_tool_call_is_held_before_its_body_and_edits_reach_it_and_the_step(
    dbg: flowdbg.Debugger, wf: Research, calls: list[tuple[str, Any]]
) -> None:
    dbg.attach(wf)
    dbg.break_on_tool("search", args_pattern='"limit": 3')
    dbg.break_after("search", kind="tool")
    run = start(dbg, wf)
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.reason == StopReason.BREAKPOINT
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        "search",
        "tool",
        "before",
    )
    assert stop.location.path == ("research",)
    assert calls == []  # held before the tool's body
    assert dbg.inspect("", source="input") == {"query": "flowdbg", "limit": 3}
    dbg.set("limit", 7)
    dbg.resume()
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.position == "after"
    assert calls == [("search", ("flowdbg", 7))]
    assert stop.output == "7 results for flowdbg"
    dbg.set("", "nothing found")
    dbg.resume()
    assert dbg.wait_for_stop(1.0) is None
    # the step gets a ToolOutput with the edited result, as text too
    assert run.result(WAIT) == {"content": "nothing found", "raw": "nothing found"}
    (log,) = dbg.runs
    assert [(s.node, s.kind, s.status) for s in log.steps] == [
        ("research", "node", "completed"),
        ("search", "tool", "completed"),
    ]


def test_edits_the_tools_signature_refuses_are_refused_with_the_reason(
    dbg: flowdbg.Debugger, wf: Research, calls: list[tuple[str, Any]]
) -> None:
    dbg.attach(wf)
    dbg.break_on_tool("search")
    run = start(dbg, wf)
    assert dbg.wait_for_stop(WAIT) is not None
    with pytest.raises(flowdbg.EditRefused, match="takes no argument 'limt'"):
        dbg.set("limt", 7)
    with pytest.raises(flowdbg.EditRefused, match="do not fit its signature"):
        dbg.set("limit", "seven")
    assert dbg.inspect("", source="input") == {"query": "flowdbg", "limit": 3}
    dbg.resume()
    assert run.result(WAIT) == {"content": "3 results for flowdbg", "raw": "3 results for flowdbg"}
    assert calls == [("search", ("flowdbg", 3))]


@pytest.mark.parametrize(
    ("mode", "tool", "shown", "edit", "raw", "called"),
    [
        # positional arguments are shown by the names of the tool's schema, and an edit passes
        # them by name
        (
            "positional",
            "search",
            {"query": "flowdbg"},
            ("query", "agents"),
            "3 results for agents",
            ("search", ("agents", 3)),
        ),
        # the run context a tool takes is no argument, and is passed on after an edit
        (
            "context",
            "remember",
            {"key": "alpha"},
            ("key", "beta"),
            "kept beta",
            ("remember", "beta"),
        ),
    ],
    ids=["positional", "context"],
)
def test_the_arguments_shown_are_the_ones_an_edit_passes_back(
    dbg: flowdbg.Debugger,
    wf: Research,
    calls: list[tuple[str, Any]],
    mode: str,
    tool: str,
    shown: dict[str, Any],
    edit: tuple[str, Any],
    raw: str,
    called: tuple[str, Any],
) -> None:
    dbg.attach(wf)
    dbg.break_on_tool(tool)
    run = start(dbg, wf, mode=mode)
    assert dbg.wait_for_stop(WAIT) is not None
    assert dbg.inspect("", source="input") == shown
    dbg.set(*edit)
    dbg.resume()
    assert run.result(WAIT)["raw"] == raw
    assert calls == [called]


def test_a_tool_that_raises_stops_at_its_error_point_with_the_real_exception(
    dbg: flowdbg.Debugger, wf: Research
) -> None:
    dbg.attach(wf)
    dbg.break_on_exception(PermissionError)
    run = start(dbg, wf, mode="broken")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.reason == StopReason.EXCEPTION
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        "broken",
        "tool",
        "error",
    )
    raised = stop.exception
    assert isinstance(raised, PermissionError)
    dbg.resume()
    # the exception goes on unchanged to the step, which fails with it: its error point too
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        "research",
        "node",
        "error",
    )
    assert stop.exception is raised
    dbg.resume()
    with pytest.raises(Exception, match="cannot read /etc/shadow"):
        run.result(WAIT)


@pytest.mark.parametrize("mode", ["sync", "unheld"])
def test_calls_that_cannot_be_held_or_are_not_the_workflows_are_no_units(
    dbg: flowdbg.Debugger, wf: Research, calls: list[tuple[str, Any]], mode: str
) -> None:
    # A sync call runs on the event loop's thread (holding it would stall every run on the
    # loop); a tool made inside the step is no tool the workflow holds.
    dbg.attach(wf)
    dbg.break_on_tool("*")
    run = start(dbg, wf, mode=mode)
    assert dbg.wait_for_stop(1.0) is None
    assert run.result(WAIT)["raw"] == "3 results for flowdbg"
    (log,) = dbg.runs
    assert [s.kind for s in log.steps] == ["node"]


def test_describe_lists_the_tools_so_a_misspelled_tool_breakpoint_warns(
    dbg: flowdbg.Debugger, wf: Research
) -> None:
    dbg.attach(wf)
    with pytest.warns(UserWarning, match="unknown tool 'serch'; tools: search, remember, broken"):
        dbg.break_on_tool("serch")


def test_detach_puts_the_tool_class_back_and_a_detached_run_calls_the_tool_directly(
    dbg: flowdbg.Debugger, wf: Research, calls: list[tuple[str, Any]]
) -> None:
    original = FunctionTool.__dict__["acall"]
    dbg.attach(wf)
    assert FunctionTool.__dict__["acall"] is not original
    other = Research(make_tools(calls), timeout=30)
    dbg.attach(other)  # one patch shared by both
    dbg.detach(wf)
    assert FunctionTool.__dict__["acall"] is not original
    dbg.detach(other)
    assert FunctionTool.__dict__["acall"] is original
    dbg.break_on_tool("*")

    async def go() -> Any:
        return await wf.run()

    assert asyncio.run(go())["raw"] == "3 results for flowdbg"
    assert dbg.wait_for_stop(0.2) is None


def test_a_tool_of_ones_own_that_returns_a_plain_value_gets_the_edited_value(
    dbg: flowdbg.Debugger,
) -> None:
    from llama_index.core.tools import ToolMetadata
    from llama_index.core.tools.types import AsyncBaseTool

    class Upper(AsyncBaseTool):
        @property
        def metadata(self) -> ToolMetadata:
            return ToolMetadata(name="upper", description="Upper-case a text.")

        def call(self, input: Any) -> Any:
            return str(input).upper()

        async def acall(self, input: Any) -> Any:
            return str(input).upper()  # not a ToolOutput

    class Shout(Workflow):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.upper = Upper()

        @step
        async def shout(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result=await self.upper.acall(input="hey"))

    wf = Shout(timeout=30)
    dbg.attach(wf)
    dbg.break_after("upper", kind="tool")
    run = start(dbg, wf)
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.output == "HEY"
    dbg.set("", "quiet")
    dbg.resume()
    assert run.result(WAIT) == "quiet"


def test_a_tool_over_keyword_arguments_takes_any_argument_edit(dbg: flowdbg.Debugger) -> None:
    # LlamaIndex's schema of a function over **kwargs lists none of them: nothing to refuse
    def anything(**kwargs: Any) -> str:
        """Takes anything."""
        return ",".join(f"{k}={v}" for k, v in sorted(kwargs.items()))

    class Any_(Workflow):
        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self.tool = FunctionTool.from_defaults(fn=anything)

        @step
        async def go(self, ev: StartEvent) -> StopEvent:
            return StopEvent(result=(await self.tool.acall(x=1, y=2)).raw_output)

    wf = Any_(timeout=30)
    dbg.attach(wf)
    dbg.break_on_tool("anything")
    run = start(dbg, wf)
    assert dbg.wait_for_stop(WAIT) is not None
    assert dbg.inspect("", source="input") == {"x": 1, "y": 2}
    dbg.set("x", 5)
    dbg.set("z", 9)
    dbg.resume()
    assert run.result(WAIT) == "x=5,y=2,z=9"
