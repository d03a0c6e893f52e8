"""An attached, recording debugger changes nothing a user of the SDK can see: final outputs, the
run's items and the stream's events are those of the same run undebugged."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

import oa_helpers as oa
from agents import (
    Agent,
    FunctionTool,
    GuardrailFunctionOutput,
    RunContextWrapper,
    Runner,
    function_tool,
    handoff,
    output_guardrail,
)
from pydantic import BaseModel

import flowdbg


def _one_answer() -> tuple[Agent[Any], dict[str, Any]]:
    return oa.agent("a", oa.answer(lambda c: "hi there", 2)), {}


def _tool(name: str, fn: Callable[..., Any], **kwargs: Any) -> Any:
    return function_tool(fn, name_override=name, **kwargs)


def _one_tool() -> tuple[Agent[Any], dict[str, Any]]:
    def lookup(city: str) -> str:
        return f"sunny in {city}"

    return oa.agent(
        "weather",
        [oa.calls(("lookup", {"city": "Oslo"}, "c1")), *oa.answer(lambda c: oa.outputs(c)[-1])],
        tools=[_tool("lookup", lookup)],
    ), {}


def _two_turns_of_tools() -> tuple[Agent[Any], dict[str, Any]]:
    def add(a: int, b: int) -> int:
        return a + b

    return oa.agent(
        "calc",
        [
            oa.calls(("add", {"a": 1, "b": 2}, "c1")),
            oa.calls(("add", {"a": 3, "b": 4}, "c2")),
            *oa.answer(lambda c: ",".join(oa.outputs(c))),
        ],
        tools=[_tool("add", add)],
    ), {}


def _parallel() -> tuple[Agent[Any], dict[str, Any]]:
    async def fetch(url: str) -> str:
        await asyncio.sleep(0)
        return f"<{url}>"

    return oa.agent(
        "fetcher",
        [
            oa.calls(("fetch", {"url": "a"}, "c1"), ("fetch", {"url": "b"}, "c2")),
            *oa.answer(lambda c: "".join(oa.outputs(c))),
        ],
        tools=[_tool("fetch", fetch)],
    ), {}


def _handoff() -> tuple[Agent[Any], dict[str, Any]]:
    refunds = oa.agent("refunds", oa.answer(lambda c: "refunded", 2))
    return oa.agent("triage", [oa.calls(("transfer_to_refunds", {}, "h1"))], handoffs=[refunds]), {}


class Reason(BaseModel):
    reason: str


def _handoff_with_payload() -> tuple[Agent[Any], dict[str, Any]]:
    noted: list[str] = []

    async def note(ctx: Any, data: Reason) -> None:
        noted.append(data.reason)

    billing = oa.agent("billing", oa.answer(lambda c: f"billing: {oa.handoff_args(c)}", 2))
    return oa.agent(
        "triage",
        [oa.calls(("transfer_to_billing", {"reason": "invoice"}, "h1"))],
        handoffs=[handoff(billing, input_type=Reason, on_handoff=note)],
    ), {}


def _tool_error() -> tuple[Agent[Any], dict[str, Any]]:
    def charge(amount: int) -> str:
        raise ValueError("declined")

    return oa.agent(
        "pay",
        [oa.calls(("charge", {"amount": 3}, "c1")), *oa.answer(lambda c: oa.outputs(c)[-1])],
        tools=[_tool("charge", charge)],
    ), {}


def _as_tool() -> tuple[Agent[Any], dict[str, Any]]:
    inner = oa.agent("translator", oa.answer(lambda c: "hola", 2))
    return oa.agent(
        "outer",
        [
            oa.calls(("translate", {"input": "hello"}, "c1")),
            *oa.answer(lambda c: "said " + oa.outputs(c)[-1]),
        ],
        tools=[inner.as_tool(tool_name="translate", tool_description="Translate.")],
    ), {}


def _context() -> tuple[Agent[Any], dict[str, Any]]:
    def remember(ctx: RunContextWrapper[dict[str, Any]], fact: str) -> str:
        ctx.context.setdefault("facts", []).append(fact)
        return f"{len(ctx.context['facts'])} facts"

    return oa.agent(
        "memory",
        [
            oa.calls(("remember", {"fact": "x"}, "c1"), ("remember", {"fact": "y"}, "c2")),
            *oa.answer(lambda c: oa.outputs(c)[-1]),
        ],
        tools=[_tool("remember", remember)],
    ), {"context": {"facts": []}}


def _timeout() -> tuple[Agent[Any], dict[str, Any]]:
    async def slow(n: int) -> str:
        await asyncio.sleep(0)
        return str(n)

    return oa.agent(
        "timed",
        [oa.calls(("slow", {"n": 7}, "c1")), *oa.answer(lambda c: oa.outputs(c)[-1])],
        tools=[_tool("slow", slow, timeout=5.0)],
    ), {}


class Verdict(BaseModel):
    ok: bool
    note: str


def _structured() -> tuple[Agent[Any], dict[str, Any]]:
    return oa.agent(
        "judge",
        oa.answer(lambda c: '{"ok": true, "note": "fine"}', 2),
        output_type=Verdict,
    ), {}


def _output_guardrail() -> tuple[Agent[Any], dict[str, Any]]:
    @output_guardrail
    async def short(ctx: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=len(output), tripwire_triggered=False)

    return oa.agent("checked", oa.answer(lambda c: "fine", 2), output_guardrails=[short]), {}


def _approval() -> tuple[Agent[Any], dict[str, Any]]:
    def wipe(path: str) -> str:
        return f"wiped {path}"

    return oa.agent(
        "careful",
        [oa.calls(("wipe", {"path": "/tmp"}, "c1")), *oa.answer(lambda c: "?")],
        tools=[_tool("wipe", wipe, needs_approval=True)],
    ), {}


def _max_turns_handled() -> tuple[Agent[Any], dict[str, Any]]:
    from agents import RunErrorHandlerResult

    def again() -> str:
        return "again"

    return oa.agent(
        "looper",
        [oa.calls(("again", {}, f"c{i}")) for i in range(4)],
        tools=[_tool("again", again)],
    ), {
        "max_turns": 2,
        "error_handlers": {"max_turns": lambda data: RunErrorHandlerResult(final_output="gave up")},
    }


def _narrow_invoker() -> tuple[Agent[Any], dict[str, Any]]:
    # A tool whose invoker declares the narrower RunContextWrapper contract: the SDK reads the
    # invoker's signature and type hints at each call (tool.py,
    # _get_function_tool_invoke_context) and passes it a plain RunContextWrapper, not the
    # ToolContext; a wrapper around the invoker must lead it to the same choice.
    async def invoke(ctx: RunContextWrapper[Any], args: str) -> str:
        return type(ctx).__name__

    tool = FunctionTool(
        name="kind",
        description="The kind of context the tool gets.",
        params_json_schema={"type": "object", "properties": {}, "additionalProperties": False},
        on_invoke_tool=invoke,
    )
    return oa.agent(
        "narrow",
        [oa.calls(("kind", {}, "c1")), *oa.answer(lambda c: oa.outputs(c)[-1])],
        tools=[tool],
    ), {}


SCENARIOS: dict[str, Callable[[], tuple[Agent[Any], dict[str, Any]]]] = {
    "one_answer": _one_answer,
    "one_tool": _one_tool,
    "two_turns_of_tools": _two_turns_of_tools,
    "parallel": _parallel,
    "handoff": _handoff,
    "handoff_with_payload": _handoff_with_payload,
    "tool_error": _tool_error,
    "as_tool": _as_tool,
    "context": _context,
    "timeout": _timeout,
    "structured": _structured,
    "output_guardrail": _output_guardrail,
    "approval": _approval,
    "max_turns_handled": _max_turns_handled,
    "narrow_invoker": _narrow_invoker,
}


def _plain(item: Any) -> Any:
    try:
        return item.to_input_item()
    except Exception:  # an approval request is no input item
        return (type(item).__name__, repr(getattr(item, "raw_item", item)))


def _event(event: Any) -> tuple[Any, ...]:
    if event.type == "run_item_stream_event":
        return (event.type, event.name, _plain(event.item))
    if event.type == "agent_updated_stream_event":
        return (event.type, event.new_agent.name)
    return (event.type, getattr(event.data, "type", None))


def _outcome(result: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    final = result.final_output
    return {
        "final": final.model_dump() if isinstance(final, BaseModel) else final,
        "items": [_plain(i) for i in result.new_items],
        "input_list": result.to_input_list(),
        "last_agent": result.last_agent.name,
        "interruptions": [i.raw_item.call_id for i in result.interruptions],
        "context": kwargs.get("context"),
    }


def _run(
    build: Callable[[], tuple[Agent[Any], dict[str, Any]]],
    streamed: bool,
    dbg: flowdbg.Debugger | None,
    how: str = "attach",
) -> dict[str, Any]:
    agent, kwargs = build()
    if dbg is not None:
        if how == "attach":
            dbg.attach(agent)
        else:
            dbg.install("openai_agents")
    try:
        if not streamed:
            return _outcome(oa.run_sync(agent, "go", **kwargs), kwargs)

        async def main() -> dict[str, Any]:
            result = Runner.run_streamed(agent, "go", **kwargs)
            events = [_event(e) async for e in result.stream_events()]
            return {**_outcome(result, kwargs), "events": events}

        return asyncio.run(main())
    finally:
        if dbg is not None:
            dbg.detach(agent)
            dbg.uninstall()


@pytest.mark.parametrize("how", ["attach", "install"])
@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_debugged_recorded_run_is_the_undebugged_run(name: str, streamed: bool, how: str) -> None:
    build = SCENARIOS[name]
    bare = _run(build, streamed, None)
    with tempfile.TemporaryDirectory() as tmp:
        dbg = flowdbg.Debugger(db=os.path.join(tmp, "flowdbg.db"))
        try:
            dbg.break_on_tool("*", args_pattern="NEVER-MATCHES-ANYTHING")
            dbg.break_before("*", kind="llm", condition="False")
            debugged = _run(build, streamed, dbg, how)
            assert dbg.flush(10)
            store = dbg.store
            assert store is not None
            runs = store.list_runs()
            assert runs, "the debugged run was not recorded"
        finally:
            dbg.close()
    assert debugged == bare
