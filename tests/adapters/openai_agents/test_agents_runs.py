"""The OpenAI Agents SDK adapter on real agents with scripted models: where runs hold, what
stops show, what edits reach."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

import oa_helpers as oa
from agents import (
    Agent,
    GuardrailFunctionOutput,
    InputGuardrailTripwireTriggered,
    MaxTurnsExceeded,
    OutputGuardrailTripwireTriggered,
    RunHooks,
    Runner,
    function_tool,
    input_guardrail,
    output_guardrail,
)
from agents.testing import ModelStep
from pydantic import BaseModel

import flowdbg
from flowdbg import StopReason

WAIT = 10.0


def shell_agent(effects: list[str], **tool_kwargs: Any) -> Agent[Any]:
    """An agent whose model calls ``shell(cmd="rm -rf /tmp/cache")`` then answers with the
    tool's output; ``effects`` notes every command the tool body really ran."""

    @function_tool(**tool_kwargs)
    async def shell(cmd: str) -> str:
        """Run a shell command."""
        effects.append(cmd)
        return f"ran {cmd}"

    return oa.agent(
        "agent",
        [
            oa.calls(("shell", {"cmd": "rm -rf /tmp/cache"}, "call-1")),
            *oa.answer(lambda call: "done: " + oa.outputs(call)[-1]),
        ],
        tools=[shell],
    )


def stops(dbg: flowdbg.Debugger) -> list[tuple[str, str, str]]:
    """Resume every stop until none comes; (node, kind, position) of each."""
    seen = []
    while (stop := dbg.wait_for_stop(WAIT)) is not None:
        seen.append((stop.location.node, stop.location.kind, stop.location.position))
        dbg.resume()
    return seen


# ---------------------------------------------------------------------------- tools


@pytest.mark.parametrize("entry", ["run_sync", "run"])
def test_a_tool_breakpoint_holds_before_the_body_runs(dbg: flowdbg.Debugger, entry: str) -> None:
    effects: list[str] = []
    agent = shell_agent(effects)
    dbg.attach(agent)
    bp = dbg.break_on_tool("shell", args_pattern=r"rm\s+-rf")
    if entry == "run_sync":
        run = dbg.start(lambda q: oa.run_sync(agent, q), "clean up")
    else:
        run = dbg.start(lambda q: Runner.run(agent, q), "clean up")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        "shell",
        "tool",
        "before",
    )
    assert stop.location.path == ("agent",)
    assert stop.breakpoints == (bp.id,)
    assert stop.input == {"cmd": "rm -rf /tmp/cache"}
    assert effects == [], "the tool body ran although the call is held"
    dbg.resume()
    assert run.result(WAIT).final_output == "done: ran rm -rf /tmp/cache"
    assert effects == ["rm -rf /tmp/cache"]


def test_edited_arguments_reach_the_body_and_the_history(dbg: flowdbg.Debugger) -> None:
    effects: list[str] = []
    agent = shell_agent(effects)
    dbg.attach(agent)
    dbg.break_on_tool("shell")
    run = dbg.start(lambda q: oa.run_sync(agent, q), "clean up")
    assert dbg.wait_for_stop(WAIT) is not None
    dbg.set("cmd", "ls /tmp/cache")
    dbg.resume()
    result = run.result(WAIT)
    assert effects == ["ls /tmp/cache"]
    assert result.final_output == "done: ran ls /tmp/cache"
    (call,) = [i for i in result.to_input_list() if i.get("type") == "function_call"]
    assert call["arguments"] == '{"cmd": "ls /tmp/cache"}'


def test_an_argument_the_tool_does_not_take_is_refused(dbg: flowdbg.Debugger) -> None:
    effects: list[str] = []
    agent = shell_agent(effects)
    dbg.attach(agent)
    dbg.break_on_tool("shell")
    run = dbg.start(lambda q: oa.run_sync(agent, q), "clean up")
    assert dbg.wait_for_stop(WAIT) is not None
    with pytest.raises(flowdbg.EditRefused) as refused:
        dbg.set("force", True)
    # worded as every adapter words it (flowdbg.errors.refuse_unknown_arguments)
    assert str(refused.value) == "tool 'shell' takes no argument 'force'; its arguments are cmd"
    with pytest.raises(flowdbg.EditRefused, match="JSON type 'string'"):
        dbg.set("cmd", 3)
    assert dbg.inspect("cmd") == "rm -rf /tmp/cache"
    dbg.resume()
    assert run.result(WAIT).final_output == "done: ran rm -rf /tmp/cache"


class Address(BaseModel):
    street: str
    zip: int


def test_nested_arguments_are_checked_against_the_tools_schema(dbg: flowdbg.Debugger) -> None:
    shipped: list[Address] = []

    @function_tool
    def ship(addr: Address, qty: int) -> str:
        """Ship a parcel."""
        shipped.append(addr)
        return f"shipped {qty} to {addr.zip}"

    agent = oa.agent(
        "shipper",
        [
            oa.calls(("ship", {"addr": {"street": "Main", "zip": 123}, "qty": 2}, "call-1")),
            *oa.answer(lambda call: oa.outputs(call)[-1]),
        ],
        tools=[ship],
    )
    dbg.attach(agent)
    dbg.break_on_tool("ship")
    run = dbg.start(lambda q: oa.run_sync(agent, q), "ship it")
    assert dbg.wait_for_stop(WAIT) is not None
    with pytest.raises(flowdbg.EditRefused, match=r"'addr\.zip': 'abc' is not of type 'integer'"):
        dbg.set("addr.zip", "abc")
    with pytest.raises(flowdbg.EditRefused, match=r"'addr': .*'country' was unexpected"):
        dbg.set("addr.country", "FR")
    with pytest.raises(flowdbg.EditRefused, match=r"'addr': 'str' is not of type 'object'"):
        dbg.set("addr", "str")
    with pytest.raises(flowdbg.EditRefused, match=r"'addr': 'street' is a required property"):
        dbg.delete("addr.street")
    assert dbg.inspect("") == {"addr": {"street": "Main", "zip": 123}, "qty": 2}
    dbg.set("addr.zip", 75001)
    dbg.resume()
    assert run.result(WAIT).final_output == "shipped 2 to 75001"
    assert shipped == [Address(street="Main", zip=75001)]


def test_an_edited_result_is_what_the_model_gets(dbg: flowdbg.Debugger) -> None:
    effects: list[str] = []
    agent = shell_agent(effects)
    dbg.attach(agent)
    dbg.break_after("shell", kind="tool")
    run = dbg.start(lambda q: oa.run_sync(agent, q), "clean up")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.output == "ran rm -rf /tmp/cache"
    dbg.set("", "nothing to clean")
    dbg.resume()
    assert run.result(WAIT).final_output == "done: nothing to clean"


def test_a_tool_exception_stops_with_the_real_exception(dbg: flowdbg.Debugger) -> None:
    @function_tool
    def charge(amount: int) -> str:
        """Charge a card."""
        raise PermissionError(f"card declined for {amount}")

    agent = oa.agent(
        "agent",
        [
            oa.calls(("charge", {"amount": 5}, "call-1")),
            *oa.answer(lambda call: "model saw: " + oa.outputs(call)[-1]),
        ],
        tools=[charge],
    )
    dbg.attach(agent)
    dbg.break_on_exception(PermissionError)
    run = dbg.start(lambda q: oa.run_sync(agent, q), "pay")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert stop.reason == StopReason.EXCEPTION
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        "charge",
        "tool",
        "error",
    )
    assert isinstance(stop.exception, PermissionError)
    assert str(stop.exception) == "card declined for 5"
    dbg.resume()
    # the SDK goes on as it would: the model gets its generic message, not the exception
    result = run.result(WAIT)
    assert result.final_output.startswith("model saw: An error occurred while running the tool")


def test_a_stop_does_not_count_against_the_tool_timeout(dbg: flowdbg.Debugger) -> None:
    effects: list[str] = []
    agent = shell_agent(effects, timeout=0.5)
    dbg.attach(agent)
    dbg.break_on_tool("shell")
    run = dbg.start(lambda q: oa.run_sync(agent, q), "clean up")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    # held for longer than the tool's timeout: wait on something that never comes
    assert not threading.Event().wait(1.0)
    dbg.resume()
    assert run.result(WAIT).final_output == "done: ran rm -rf /tmp/cache"
    (tool,) = [a.tools[0] for a in [agent]]
    dbg.detach(agent)
    assert tool.timeout_seconds == 0.5  # restored


def _asking(inner: Agent[Any], how: str, timeout: float, then: Any = None) -> Agent[Any]:
    """An agent whose model calls a tool with ``timeout`` that runs ``inner``: a function tool
    awaiting ``Runner.run`` (then awaiting ``then`` when given), or ``inner.as_tool``."""
    if how == "function":

        @function_tool(timeout=timeout)
        async def ask(input: str) -> str:
            """Ask the inner agent."""
            result = await Runner.run(inner, input)
            if then is not None:
                await then()
            return str(result.final_output)

        tool = ask
    else:
        tool = inner.as_tool(tool_name="ask", tool_description="Ask the inner agent.")
        tool.timeout_seconds = timeout  # as_tool takes no timeout: set on the FunctionTool
    return oa.agent(
        "outer",
        [oa.calls(("ask", {"input": "q"}, "call-1")), *oa.answer(lambda c: oa.outputs(c)[-1])],
        tools=[tool],
    )


@pytest.mark.parametrize("how", ["function", "as_tool"])
def test_a_stop_in_a_nested_run_does_not_count_against_the_tool_timeout(
    dbg: flowdbg.Debugger, how: str
) -> None:
    inner = oa.agent("inner", oa.answer(lambda call: "inner says hi", 2))
    outer = _asking(inner, how, 0.5)
    dbg.attach(outer)
    dbg.attach(inner)
    dbg.break_before("inner", kind="agent")
    run = dbg.start(lambda q: oa.run_sync(outer, q), "go")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.path == ("outer", "ask")
    # held for longer than the tool's timeout: wait on something that never comes
    assert not threading.Event().wait(1.0)
    dbg.resume()
    assert run.result(WAIT).final_output == "inner says hi"
    (tool,) = outer.tools
    dbg.detach()
    assert tool.timeout_seconds == 0.5


def test_a_tool_held_in_a_nested_run_still_times_out_on_its_own_time(
    dbg: flowdbg.Debugger,
) -> None:
    inner = oa.agent("inner", oa.answer(lambda call: "inner says hi", 2))

    async def hang() -> None:
        await asyncio.Event().wait()  # never set: only the timeout ends the call

    outer = _asking(inner, "function", 0.3, then=hang)
    dbg.attach(outer)
    dbg.attach(inner)
    dbg.break_before("inner", kind="agent")
    run = dbg.start(lambda q: oa.run_sync(outer, q), "go")
    assert dbg.wait_for_stop(WAIT) is not None
    assert not threading.Event().wait(0.5)
    dbg.resume()
    assert run.result(WAIT).final_output == "Tool 'ask' timed out after 0.3 seconds."


def test_parallel_tool_calls_stop_independently(dbg: flowdbg.Debugger) -> None:
    effects: list[str] = []

    @function_tool
    async def fetch(url: str) -> str:
        """Fetch a page."""
        effects.append(url)
        return f"page {url}"

    agent = oa.agent(
        "agent",
        [
            oa.calls(("fetch", {"url": "a"}, "call-a"), ("fetch", {"url": "b"}, "call-b")),
            *oa.answer(lambda call: " + ".join(oa.outputs(call))),
        ],
        tools=[fetch],
    )
    dbg.attach(agent)
    dbg.break_on_tool("fetch", condition="args['url'] == 'a'")
    run = dbg.start(lambda q: Runner.run(agent, q), "both")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.input == {"url": "a"}
    assert stop.location.branch == "call-a"
    deadline = threading.Event()
    for _ in range(100):  # the sibling call runs to its end while this one is held
        if effects == ["b"]:
            break
        deadline.wait(0.05)
    assert effects == ["b"]
    assert not run.done()
    dbg.resume()
    assert run.result(WAIT).final_output == "page a + page b"
    assert sorted(effects) == ["a", "b"]


@pytest.mark.parametrize("origin", ["a", "b"])
def test_stepping_over_a_parallel_tool_call_lands_on_the_next_model_turn(
    dbg: flowdbg.Debugger, origin: str
) -> None:
    # the next turn receives both calls' results: it follows each call's line
    @function_tool
    async def fetch(url: str) -> str:
        """Fetch a page."""
        return f"page {url}"

    agent = oa.agent(
        "agent",
        [
            oa.calls(("fetch", {"url": "a"}, "call-a"), ("fetch", {"url": "b"}, "call-b")),
            *oa.answer(lambda call: " + ".join(oa.outputs(call))),
        ],
        tools=[fetch],
    )
    dbg.attach(agent)
    dbg.break_on_tool("fetch", condition=f"args['url'] == {origin!r}")
    run = dbg.start(lambda q: Runner.run(agent, q), "both")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.branch == f"call-{origin}"
    dbg.clear()
    dbg.step_over()
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.reason == StopReason.STEP
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        "chat",
        "llm",
        "before",
    )
    assert dbg.inspect("turn") == 2
    assert [i["output"] for i in dbg.inspect("input") if "output" in i] == ["page a", "page b"]
    dbg.resume()
    assert run.result(WAIT).final_output == "page a + page b"


# ---------------------------------------------------------------------------- model turns


def test_model_turns_show_their_input_and_planned_output(dbg: flowdbg.Debugger) -> None:
    effects: list[str] = []
    agent = shell_agent(effects)
    dbg.attach(agent)
    dbg.break_before("chat", kind="llm")
    dbg.break_after("chat", kind="llm")
    run = dbg.start(lambda q: oa.run_sync(agent, q), "clean up")
    before = dbg.wait_for_stop(WAIT)
    assert before is not None and before.location.position == "before"
    assert dbg.inspect("input[-1].content") == "clean up"
    assert dbg.inspect("turn") == 1
    with pytest.raises(flowdbg.EditRefused, match=r"a model turn's input has no 'order'"):
        dbg.set("order", 2)  # the model would never receive it
    dbg.resume()
    after = dbg.wait_for_stop(WAIT)
    assert after is not None and after.location.position == "after"
    assert dbg.inspect("output[0].name") == "shell"
    with pytest.raises(flowdbg.EditRefused, match="tool call ids"):
        dbg.set("output", [])
    dbg.resume()
    second = dbg.wait_for_stop(WAIT)
    assert second is not None and dbg.inspect("turn") == 2
    dbg.clear()
    dbg.resume()
    assert run.result(WAIT).final_output == "done: ran rm -rf /tmp/cache"


def test_an_edit_of_the_model_input_reaches_the_model(dbg: flowdbg.Debugger) -> None:
    model = oa.Scripted(oa.answer(lambda call: f"you said {call.input[-1]['content']}"))
    agent = Agent(name="agent", model=model, instructions="Be brief.")
    dbg.attach(agent)
    dbg.break_before("*", kind="llm")
    run = dbg.start(lambda q: oa.run_sync(agent, q), "hello")
    assert dbg.wait_for_stop(WAIT) is not None
    dbg.set("input[-1].content", "goodbye")
    with pytest.raises(flowdbg.EditRefused, match="instructions"):
        dbg.set("instructions", "Be long.")
    for turn in (9, "abc"):  # any other turn number, not only one of another type
        with pytest.raises(flowdbg.EditRefused, match=r"'turn' is the SDK's turn number \(1\)"):
            dbg.set("turn", turn)
    dbg.resume()
    assert run.result(WAIT).final_output == "you said goodbye"
    assert model.calls[0].system_instructions == "Be brief."


# ---------------------------------------------------------------------------- agents


def handoff_agents() -> Agent[Any]:
    refunds = oa.agent("refunds", oa.answer(lambda call: "refunded", 2))
    return oa.agent(
        "triage",
        [oa.calls(("transfer_to_refunds", {}, "call-h"))],
        handoffs=[refunds],
    )


def test_a_handoff_stop_before_the_target_starts(dbg: flowdbg.Debugger) -> None:
    triage = handoff_agents()
    dbg.attach(triage)
    dbg.break_on_handoff(to="refunds")
    run = dbg.start(lambda q: Runner.run(triage, q), "refund")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.kind, stop.location.path) == (
        "refunds",
        "handoff",
        ("triage",),
    )
    assert stop.input == {"to": "refunds", "payload": None}
    assert [s.node for s in run.log.steps if s.kind == "agent"] == ["triage"]
    with pytest.raises(flowdbg.EditRefused, match="resolved the handoff"):
        dbg.set("to", "billing")
    dbg.resume()
    result = run.result(WAIT)
    assert (result.last_agent.name, result.final_output) == ("refunds", "refunded")


def test_max_turns_stops_at_the_agent_with_the_sdk_exception(dbg: flowdbg.Debugger) -> None:
    @function_tool
    def again() -> str:
        """Loop."""
        return "again"

    agent = oa.agent(
        "looper", [oa.calls(("again", {}, f"call-{i}")) for i in range(5)], tools=[again]
    )
    dbg.attach(agent)
    dbg.break_on_exception(MaxTurnsExceeded)
    run = dbg.start(lambda q: oa.run_sync(agent, q, max_turns=2), "go")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        "looper",
        "agent",
        "error",
    )
    assert isinstance(stop.exception, MaxTurnsExceeded)
    assert [s.node for s in run.log.steps if s.kind == "llm"] == ["chat", "chat"]
    dbg.resume()
    with pytest.raises(MaxTurnsExceeded):
        run.result(WAIT)


def test_a_guardrail_tripwire_stops_at_the_agent(dbg: flowdbg.Debugger) -> None:
    @input_guardrail
    async def no_secrets(ctx: Any, agent: Any, input: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered="secret" in str(input))

    agent = oa.agent("guarded", oa.answer(lambda call: "ok", 2), input_guardrails=[no_secrets])
    dbg.attach(agent)
    dbg.break_on_exception(InputGuardrailTripwireTriggered)
    run = dbg.start(lambda q: Runner.run(agent, q), "my secret")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert stop.location.position == "error"
    assert isinstance(stop.exception, InputGuardrailTripwireTriggered)
    dbg.resume()
    with pytest.raises(InputGuardrailTripwireTriggered):
        run.result(WAIT)


def _checked_agent(seen: list[Any], answer: str) -> Agent[Any]:
    @output_guardrail
    async def no_secrets(ctx: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
        seen.append(output)
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered="secret" in output)

    return oa.agent("checked", oa.answer(lambda call: answer, 2), output_guardrails=[no_secrets])


def test_an_output_guardrail_tripwire_stops_at_the_agent(dbg: flowdbg.Debugger) -> None:
    seen: list[Any] = []
    agent = _checked_agent(seen, "the secret")
    dbg.attach(agent)
    dbg.break_on_exception()
    run = dbg.start(lambda q: Runner.run(agent, q), "tell me")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        "checked",
        "agent",
        "error",
    )
    assert isinstance(stop.exception, OutputGuardrailTripwireTriggered)
    assert seen == ["the secret"]
    dbg.resume()
    with pytest.raises(OutputGuardrailTripwireTriggered):
        run.result(WAIT)
    assert [(s.kind, s.status) for s in run.log.steps] == [
        ("agent", "failed"),
        ("llm", "completed"),
    ]


def test_an_output_checked_by_guardrails_cannot_be_edited(dbg: flowdbg.Debugger) -> None:
    seen: list[Any] = []
    agent = _checked_agent(seen, "draft")
    dbg.attach(agent)
    dbg.break_after("checked", kind="agent")
    run = dbg.start(lambda q: oa.run_sync(agent, q), "write")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.output == "draft"
    assert seen == ["draft"]  # the stop comes after the guardrails passed
    with pytest.raises(flowdbg.EditRefused, match=r"output guardrails \(no_secrets\)"):
        dbg.set("", "the secret")
    dbg.resume()
    assert run.result(WAIT).final_output == "draft"


def test_a_model_error_stops_at_the_model_turn(dbg: flowdbg.Debugger) -> None:
    agent = oa.agent("agent", [ModelStep.raise_error(ConnectionError("provider down"))])
    dbg.attach(agent)
    dbg.break_on_exception()
    run = dbg.start(lambda q: Runner.run(agent, q), "hi")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.kind, stop.location.position) == ("llm", "error")
    assert isinstance(stop.exception, ConnectionError)
    dbg.resume()
    assert dbg.wait_for_stop(WAIT) is None  # the agent does not stop again for it
    with pytest.raises(ConnectionError, match="provider down"):
        run.result(WAIT)
    assert [(s.kind, s.status) for s in run.log.steps] == [("agent", "failed"), ("llm", "failed")]


def test_an_agent_used_as_a_tool_runs_as_a_child_run() -> None:
    dbg = flowdbg.Debugger()  # recording: child runs are recorded with their parent
    try:
        translator = oa.agent("translator", oa.answer(lambda call: "hola", 2))
        tool = translator.as_tool(tool_name="translate", tool_description="Translate.")
        agent = oa.agent(
            "agent",
            [
                oa.calls(("translate", {"input": "hello"}, "call-t")),
                *oa.answer(lambda call: "said " + oa.outputs(call)[-1]),
            ],
            tools=[tool],
        )
        dbg.attach(agent)
        dbg.break_before("translator", kind="agent")
        run = dbg.start(lambda q: oa.run_sync(agent, q), "translate hello")
        stop = dbg.wait_for_stop(WAIT)
        assert stop is not None
        assert stop.location.path == ("agent", "translate")
        assert stop.location.run_id != run.run_id
        dbg.resume()
        assert run.result(WAIT).final_output == "said hola"
        assert dbg.flush(WAIT)
        store = dbg.store
        assert store is not None
        (child,) = store.list_runs(parent=run.run_id)
        assert child.name == "translator"
    finally:
        dbg.close()


# ---------------------------------------------------------------------------- approvals


def test_an_approval_interruption_suspends_the_run_and_resuming_it_is_debugged(
    dbg: flowdbg.Debugger,
) -> None:
    effects: list[str] = []
    agent = shell_agent(effects, needs_approval=True)
    dbg.attach(agent)
    run = dbg.start(lambda q: oa.run_sync(agent, q), "clean up")
    first = run.result(WAIT)
    assert first.interruptions and effects == []
    assert dbg.status().state == "idle"
    assert dbg.run_log(run.run_id or "").run.status == "suspended"

    state = first.to_state()
    state.approve(first.interruptions[0])
    dbg.break_on_tool("shell")
    resumed = dbg.start(lambda s: oa.run_sync(agent, s), state)
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.node == "shell"
    assert effects == []
    with pytest.raises(flowdbg.EditRefused, match="needs approval"):
        dbg.set("cmd", "ls")
    dbg.resume()
    assert resumed.result(WAIT).final_output == "done: ran rm -rf /tmp/cache"
    assert effects == ["rm -rf /tmp/cache"]


# ---------------------------------------------------------------------------- control


def test_run_sync_in_the_users_own_thread_blocks_that_thread(dbg: flowdbg.Debugger) -> None:
    effects: list[str] = []
    agent = shell_agent(effects)
    dbg.attach(agent)
    dbg.break_on_tool("shell")
    box: dict[str, Any] = {}
    done = threading.Event()

    def user() -> None:
        try:
            box["result"] = oa.run_sync(agent, "clean up")
        finally:
            done.set()

    threading.Thread(target=user, daemon=True).start()
    assert dbg.wait_for_stop(WAIT) is not None
    assert not done.is_set()
    dbg.resume()
    assert done.wait(WAIT)
    assert box["result"].final_output == "done: ran rm -rf /tmp/cache"


def test_terminate_at_a_stop_reaches_the_caller(dbg: flowdbg.Debugger) -> None:
    effects: list[str] = []
    agent = shell_agent(effects)
    dbg.attach(agent)
    dbg.break_on_tool("shell")
    run = dbg.start(lambda q: Runner.run(agent, q), "clean up")
    assert dbg.wait_for_stop(WAIT) is not None
    dbg.terminate()
    with pytest.raises(flowdbg.Terminated):
        run.result(WAIT)
    assert effects == []


def test_detach_while_stopped_lets_the_run_go_on_and_restores_the_agent(
    dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture
) -> None:
    from agents.run import AgentRunner

    effects: list[str] = []
    agent = shell_agent(effects)
    tool = agent.tools[0]
    invoker = tool.on_invoke_tool
    runner_run = AgentRunner.__dict__["run"]
    dbg.attach(agent)
    assert tool.on_invoke_tool is not invoker
    assert AgentRunner.__dict__["run"] is not runner_run
    dbg.break_on_tool("shell")
    run = dbg.start(lambda q: oa.run_sync(agent, q), "clean up")
    assert dbg.wait_for_stop(WAIT) is not None
    with caplog.at_level("WARNING", logger="flowdbg"):
        dbg.detach(agent)
    assert run.result(WAIT).final_output == "done: ran rm -rf /tmp/cache"
    # the agent named by its name, not a repr cut in the middle
    assert any(
        r.getMessage().startswith(f"detached Agent {agent.name!r} while 1 of its runs' branches")
        for r in caplog.records
    )
    assert tool.on_invoke_tool is invoker
    assert AgentRunner.__dict__["run"] is runner_run
    assert "run" in AgentRunner.__dict__ and "run_streamed" in AgentRunner.__dict__


def test_the_users_hooks_are_called_in_order(dbg: flowdbg.Debugger) -> None:
    seen: list[str] = []

    class Mine(RunHooks[Any]):
        async def on_agent_start(self, context: Any, agent: Any) -> None:
            seen.append(f"start {agent.name}")

        async def on_llm_start(self, *args: Any) -> None:
            seen.append("llm")

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            seen.append(f"tool {tool.name}")

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            seen.append(f"result {result}")

        async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
            seen.append(f"end {output}")

    def run_with(agent: Agent[Any]) -> list[str]:
        seen.clear()
        oa.run_sync(agent, "clean up", hooks=Mine())
        return list(seen)

    bare = run_with(shell_agent([]))
    agent = shell_agent([])
    dbg.attach(agent)
    assert run_with(agent) == bare
    assert bare == [
        "start agent",
        "llm",
        "tool shell",
        "result ran rm -rf /tmp/cache",
        "llm",
        "end done: ran rm -rf /tmp/cache",
    ]


def test_an_unattached_agent_is_not_debugged(dbg: flowdbg.Debugger) -> None:
    attached = shell_agent([])
    other = shell_agent([])
    dbg.attach(attached)
    dbg.break_on_tool("shell")
    assert oa.run_sync(other, "clean up").final_output == "done: ran rm -rf /tmp/cache"
    assert dbg.runs == []


def test_the_final_output_edited_at_the_agents_after_stop(dbg: flowdbg.Debugger) -> None:
    agent = oa.agent("agent", oa.answer(lambda call: "draft", 2))
    dbg.attach(agent)
    dbg.break_after("agent", kind="agent")
    run = dbg.start(lambda q: oa.run_sync(agent, q), "write")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.output == "draft"
    dbg.set("", "final")
    dbg.resume()
    assert run.result(WAIT).final_output == "final"


class Scored(BaseModel):
    answer: str
    score: int


def test_the_whole_final_output_is_checked_against_the_output_type(
    dbg: flowdbg.Debugger,
) -> None:
    agent = oa.agent(
        "scorer", oa.answer(lambda call: '{"answer": "ok", "score": 9}', 2), output_type=Scored
    )
    dbg.attach(agent)
    dbg.break_after("scorer", kind="agent")
    run = dbg.start(lambda q: oa.run_sync(agent, q), "score it")
    assert dbg.wait_for_stop(WAIT) is not None
    with pytest.raises(
        flowdbg.EditRefused, match=r"must fit its output_type Scored, .*Input should be an object"
    ):
        dbg.set("", "plain string")
    with pytest.raises(flowdbg.EditRefused, match=r"score: Field required"):
        dbg.set("", {"answer": "x"})
    with pytest.raises(flowdbg.EditRefused, match=r"score: Input should be a valid integer"):
        dbg.set("", {"answer": "x", "score": "10"})  # the SDK validates strictly
    assert dbg.inspect("") == Scored(answer="ok", score=9)
    dbg.set("", {"answer": "better", "score": 10})
    dbg.resume()
    final = run.result(WAIT).final_output
    assert type(final) is Scored and final == Scored(answer="better", score=10)


def test_a_plain_text_agents_final_output_stays_a_string(dbg: flowdbg.Debugger) -> None:
    agent = oa.agent("agent", oa.answer(lambda call: "draft", 2))
    dbg.attach(agent)
    dbg.break_after("agent", kind="agent")
    run = dbg.start(lambda q: oa.run_sync(agent, q), "write")
    assert dbg.wait_for_stop(WAIT) is not None
    with pytest.raises(flowdbg.EditRefused, match="plain text"):
        dbg.set("", {"text": "final"})
    dbg.resume()
    assert run.result(WAIT).final_output == "draft"


# ---------------------------------------------------------------------------- streaming


def test_a_streamed_run_streams_until_the_stop_then_waits(dbg: flowdbg.Debugger) -> None:
    effects: list[str] = []
    agent = shell_agent(effects)
    dbg.attach(agent)
    dbg.break_on_tool("shell")
    names: list[str] = []
    got_call = threading.Event()

    async def consume(q: str) -> Any:
        result = Runner.run_streamed(agent, q)
        async for event in result.stream_events():
            if event.type == "run_item_stream_event":
                names.append(event.name)
                if event.name == "tool_called":
                    got_call.set()
        return result

    run = dbg.start(consume, "clean up")
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.node == "shell"
    # the consumer received what the run produced before the stop, and no tool output
    assert got_call.wait(WAIT)
    assert "tool_output" not in names and effects == []
    dbg.resume()
    result = run.result(WAIT)
    assert result.final_output == "done: ran rm -rf /tmp/cache"
    assert names[-2:] == ["tool_output", "message_output_created"]
    assert run.log.steps[0].status == "completed"


def test_a_streamed_run_in_a_task_of_the_users_own_loop(dbg: flowdbg.Debugger) -> None:
    agent = handoff_agents()
    dbg.attach(agent)
    dbg.break_before("refunds", kind="agent")

    async def main() -> tuple[str, list[str]]:
        result = Runner.run_streamed(agent, "refund")
        types = [e.type async for e in result.stream_events()]
        return result.final_output, types

    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.setdefault("out", asyncio.run(main())))
    thread.start()
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.location.kind == "agent"
    dbg.resume()
    thread.join(WAIT)
    output, types = box["out"]
    assert output == "refunded"
    assert "agent_updated_stream_event" in types


def _looper() -> Agent[Any]:
    @function_tool
    def again() -> str:
        """Loop."""
        return "again"

    return oa.agent(
        "looper", [oa.calls(("again", {}, f"call-{i}")) for i in range(5)], tools=[again]
    )


def _consume_streamed(agent: Agent[Any], **kwargs: Any) -> tuple[list[str], str]:
    """The event types a consumer of ``Runner.run_streamed(agent, "go")`` reads, and what its
    ``stream_events()`` raised (``"-"`` when nothing)."""

    async def main() -> tuple[list[str], str]:
        result = Runner.run_streamed(agent, "go", **kwargs)
        types: list[str] = []
        try:
            async for event in result.stream_events():
                types.append(event.type)
        except Exception as exc:
            return types, f"{type(exc).__name__}: {exc}"
        return types, "-"

    return asyncio.run(main())


def test_a_streamed_run_past_max_turns_is_recorded_failed(dbg: flowdbg.Debugger) -> None:
    # the SDK's run-loop task ends normally here: the consumer's stream_events() makes the error
    bare = _consume_streamed(_looper(), max_turns=1)
    assert bare[1] == "MaxTurnsExceeded: Max turns (1) exceeded"
    agent = _looper()
    dbg.attach(agent)
    assert _consume_streamed(agent, max_turns=1) == bare  # the consumer sees the same
    (log,) = dbg.runs
    assert log.run.status == "failed"
    assert log.run.error is not None
    assert (log.run.error.type, log.run.error.message) == (
        "MaxTurnsExceeded",
        "Max turns (1) exceeded",
    )
    assert [(s.kind, s.status) for s in log.steps if s.kind == "agent"] == [("agent", "failed")]


def _failing_tool() -> Agent[Any]:
    @function_tool(failure_error_function=None)  # the SDK raises instead of telling the model
    def charge(amount: int) -> str:
        """Charge a card."""
        raise PermissionError(f"card declined for {amount}")

    return oa.agent(
        "payer",
        [oa.calls(("charge", {"amount": 5}, "c1")), *oa.answer(lambda c: "?")],
        tools=[charge],
    )


def _tripping_output() -> Agent[Any]:
    return _checked_agent([], "the secret")


def _tripping_input() -> Agent[Any]:
    @input_guardrail
    async def no_secrets(ctx: Any, agent: Any, input: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    return oa.agent("guarded", oa.answer(lambda call: "ok", 2), input_guardrails=[no_secrets])


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (_failing_tool, "UserError"),
        (_tripping_output, "OutputGuardrailTripwireTriggered"),
        (_tripping_input, "InputGuardrailTripwireTriggered"),
    ],
    ids=["tool_error", "output_guardrail", "input_guardrail"],
)
def test_a_failed_streamed_run_is_recorded_with_the_consumers_error(
    dbg: flowdbg.Debugger, build: Any, error: str
) -> None:
    bare = _consume_streamed(build())
    assert bare[1].startswith(f"{error}: ")
    agent = build()
    dbg.attach(agent)
    assert _consume_streamed(agent) == bare
    (log,) = dbg.runs
    assert log.run.status == "failed"
    assert log.run.error is not None
    assert f"{log.run.error.type}: {log.run.error.message}" == bare[1]


def _cancelling_consumer(agent: Agent[Any], mode: str) -> tuple[list[str], str, Any]:
    """What a consumer of ``Runner.run_streamed(agent, "go")`` that calls
    ``result.cancel(mode)`` at the first tool call it reads sees: the event types, what
    ``stream_events()`` raised (``"-"`` when nothing) and the final output."""

    async def main() -> tuple[list[str], str, Any]:
        result = Runner.run_streamed(agent, "go")
        types: list[str] = []
        try:
            async for event in result.stream_events():
                types.append(event.type)
                if getattr(event, "name", None) == "tool_called":
                    result.cancel(mode=mode)
        except Exception as exc:
            return types, f"{type(exc).__name__}: {exc}", None
        return types, "-", result.final_output

    return asyncio.run(main())


@pytest.mark.parametrize("mode", ["immediate", "after_turn"])
def test_a_streamed_run_its_consumer_cancels_is_recorded_terminated(
    tmp_path: Any, mode: str
) -> None:
    bare = _cancelling_consumer(_looper(), mode)
    assert bare[1:] == ("-", None)  # the consumer sees no error: the run stopped on purpose
    recording = flowdbg.Debugger(db=tmp_path / "runs.db")
    try:
        agent = _looper()
        recording.attach(agent)
        assert _cancelling_consumer(agent, mode) == bare
        (log,) = recording.runs
        assert log.run.status == "terminated"
        assert log.run.error is not None
        assert log.run.error.type == "Terminated"
        assert f"result.cancel(mode={mode!r})" in log.run.error.message
        assert "failed" not in {step.status for step in log.steps}
        assert recording.flush(WAIT)
        store = recording.store
        assert store is not None
        (run,) = store.list_runs()
        assert run.status == "terminated"
        steps = store.get_steps(run.run_id)
        assert [s.status for s in steps if s.kind == "agent"] == ["terminated"]
    finally:
        recording.close()


@pytest.mark.parametrize("held", [False, True], ids=["running", "held_at_a_stop"])
def test_a_tool_call_the_consumer_cancels_ends_terminated(
    dbg: flowdbg.Debugger, held: bool
) -> None:
    started = threading.Event()

    @function_tool
    async def slow() -> str:
        """Take a long time."""
        started.set()
        await asyncio.sleep(WAIT * 3)
        return "late"

    agent = oa.agent("slowpoke", [oa.calls(("slow", {}, "c1")), *oa.answer(lambda c: "?")])
    agent.tools = [slow]
    dbg.attach(agent)
    if held:
        dbg.break_on_tool("slow")
    box: dict[str, Any] = {}
    ready = threading.Event()

    async def consume() -> tuple[Any, list[str]]:
        result = Runner.run_streamed(agent, "go")
        box["cancel"] = lambda: loop.call_soon_threadsafe(result.cancel)
        loop = asyncio.get_running_loop()
        ready.set()
        types = [event.type async for event in result.stream_events()]
        return result.final_output, types

    run = dbg.start(consume)
    assert ready.wait(WAIT)
    if held:
        stop = dbg.wait_for_stop(WAIT)
        assert stop is not None and stop.location.node == "slow"
    else:
        assert started.wait(WAIT)
    box["cancel"]()
    output, _ = run.result(WAIT)  # the consumer's stream ends, with no error
    assert output is None
    assert dbg.stops == []
    (log,) = dbg.runs
    assert log.run.status == "terminated"
    assert [(s.node, s.status) for s in log.steps if s.kind in ("tool", "agent")] == [
        ("slowpoke", "terminated"),
        ("slow", "terminated"),
    ]
    assert started.is_set() is not held  # held before its body: the body never ran


@pytest.mark.parametrize("held", [False, True], ids=["running", "held_at_a_stop"])
def test_a_streamed_run_nested_in_a_tool_that_its_consumer_cancels_ends_terminated(
    tmp_path: Any, held: bool
) -> None:
    started = threading.Event()
    ready = threading.Event()
    box: dict[str, Any] = {}

    @function_tool
    async def slow() -> str:
        """Take a long time."""
        started.set()
        await asyncio.sleep(WAIT * 3)
        return "late"

    inner = oa.agent("slowpoke", [oa.calls(("slow", {}, "c1")), *oa.answer(lambda c: "?")])
    inner.tools = [slow]

    @function_tool
    async def ask() -> str:
        """Ask another agent, reading its stream."""
        result = Runner.run_streamed(inner, "go")
        loop = asyncio.get_running_loop()
        box["cancel"] = lambda: loop.call_soon_threadsafe(result.cancel)
        ready.set()
        async for _ in result.stream_events():
            pass
        return f"it said {result.final_output}"

    outer = oa.agent(
        "asker", [oa.calls(("ask", {}, "o1")), *oa.answer(lambda c: oa.outputs(c)[-1])]
    )
    outer.tools = [ask]
    recording = flowdbg.Debugger(db=tmp_path / "runs.db")
    try:
        recording.attach(outer)
        if held:
            # (the agent the tool runs is built by the tool's code: attach cannot see it)
            with pytest.warns(flowdbg.errors.BreakpointWarning, match="unknown tool 'slow'"):
                recording.break_on_tool("slow")
        run = recording.start(lambda: oa.run_sync(outer, "hi"))
        assert ready.wait(WAIT)
        if held:
            stop = recording.wait_for_stop(WAIT)
            assert stop is not None and stop.location.node == "slow"
        else:
            assert started.wait(WAIT)
        box["cancel"]()
        # the tool's consumer stopped its stream on purpose: the outer run goes on
        assert run.result(WAIT).final_output == "it said None"
        assert recording.stops == []
        assert recording.flush(WAIT)
        store = recording.store
        assert store is not None
        (top,) = store.list_runs()
        assert top.status == "completed"
        (nested,) = store.list_runs(parent=top.run_id)
        assert nested.name == "slowpoke"
        assert nested.status == "terminated"
        assert nested.error is not None and nested.error.type == "Terminated"
        assert "result.cancel(mode='immediate')" in nested.error.message
        steps = store.get_steps(nested.run_id)
        assert [(s.node, s.status) for s in steps if s.kind in ("tool", "agent")] == [
            ("slowpoke", "terminated"),
            ("slow", "terminated"),
        ]
        assert started.is_set() is not held  # held before its body: the body never ran
    finally:
        recording.close()


# ---------------------------------------------------------------------------- install


def _weather(effects: list[str]) -> Agent[Any]:
    @function_tool(timeout=5.0)
    async def lookup(city: str) -> str:
        """Look up the weather."""
        effects.append(city)
        return f"sunny in {city}"

    @function_tool
    def charge(amount: int) -> str:
        """Charge a card."""
        raise PermissionError(f"card declined for {amount}")

    return oa.agent(
        "weather",
        [
            oa.calls(("lookup", {"city": "Oslo"}, "c1"), ("charge", {"amount": 5}, "c2")),
            *oa.answer(lambda call: " | ".join(oa.outputs(call))),
        ],
        tools=[lookup, charge],
    )


@pytest.mark.parametrize("entry", ["run_sync", "streamed"])
def test_an_installed_debugger_reports_tool_calls(dbg: flowdbg.Debugger, entry: str) -> None:
    def go(agent: Agent[Any]) -> Any:
        if entry == "run_sync":
            return oa.run_sync(agent, "weather?").final_output

        async def main() -> Any:
            result = Runner.run_streamed(agent, "weather?")
            async for _ in result.stream_events():
                pass
            return result.final_output

        return asyncio.run(main())

    bare_effects: list[str] = []
    bare = go(_weather(bare_effects))
    effects: list[str] = []
    agent = _weather(effects)  # built after install: never attached
    tools = {t.name: (t, t.on_invoke_tool, t.timeout_seconds) for t in agent.tools}
    dbg.install("openai_agents")
    dbg.break_on_tool("lookup")
    dbg.break_on_exception(PermissionError)
    run = dbg.start(go, agent)
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.kind, stop.location.position) == (
        "lookup",
        "tool",
        "before",
    )
    assert stop.input == {"city": "Oslo"}
    assert effects == []
    dbg.resume()
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None
    assert (stop.location.node, stop.location.position) == ("charge", "error")
    assert isinstance(stop.exception, PermissionError)
    dbg.resume()
    assert run.result(WAIT) == bare
    assert effects == bare_effects == ["Oslo"]
    (log,) = [r for r in dbg.runs if r.run.name == "weather"]
    assert sorted((s.node, s.status) for s in log.steps if s.kind == "tool") == [
        ("charge", "failed"),
        ("lookup", "completed"),
    ]
    # the run put the tools back as they were
    for tool, invoker, timeout in tools.values():
        assert (tool.on_invoke_tool, tool.timeout_seconds) == (invoker, timeout)
    dbg.uninstall()


def test_uninstalling_while_a_run_goes_on_lets_it_go_undebugged(
    dbg: flowdbg.Debugger, caplog: pytest.LogCaptureFixture
) -> None:
    effects: list[str] = []

    @function_tool
    def lookup(city: str) -> str:
        """Look up the weather."""
        effects.append(city)
        return f"sunny in {city}"

    agent = oa.agent(
        "weather",
        [
            oa.calls(("lookup", {"city": "Oslo"}, "c1")),
            oa.calls(("lookup", {"city": "Rome"}, "c2")),
            *oa.answer(lambda call: " | ".join(oa.outputs(call))),
        ],
        tools=[lookup],
    )
    invoker = lookup.on_invoke_tool
    dbg.install("openai_agents")
    dbg.break_on_tool("lookup")
    run = dbg.start(lambda: oa.run_sync(agent, "weather?"))
    stop = dbg.wait_for_stop(WAIT)
    assert stop is not None and stop.input == {"city": "Oslo"}
    with caplog.at_level("WARNING", logger="flowdbg"):
        dbg.uninstall()
    # the held call goes on at once, and the next one passes straight through the wrapper
    assert not stop.is_open
    assert f"uninstalled 'openai_agents' while 1 of its runs' branches were held ({stop.id})" in (
        caplog.text
    )
    assert run.result(WAIT).final_output == "sunny in Oslo | sunny in Rome"
    assert dbg.wait_for_stop(0.1) is None
    assert effects == ["Oslo", "Rome"]
    (log,) = dbg.runs
    assert [s.input for s in log.steps if s.kind == "tool"] == [{"city": "Oslo"}]
    assert lookup.on_invoke_tool is invoker  # put back when the run ended
