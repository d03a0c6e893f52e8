"""flowdbg on OpenAI Agents SDK agents: hold a refund before it is paid, look, fix it, go on.

Run it with ``python examples/openai_agents_support.py`` (needs
``pip install 'flowdbg[openai-agents]'``). ``triage_agent`` hands refund requests to
``refunds_agent``, which calls the ``refund`` tool. The models are the SDK's own
``agents.testing.ScriptedModel``, so it runs offline with no API key. The session below holds the
run before a refund of four digits, lowers the amount, and lets the agents finish -- with the
call site ``Runner.run_sync(triage_agent, ...)`` unchanged.

The same agents can be debugged from the terminal:
``flowdbg run examples/openai_agents_support.py:triage_agent --input '"refund my order"' -b refund``
"""

from __future__ import annotations

from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

import flowdbg

set_tracing_disabled(True)  # offline: no trace export, whatever the environment

paid: list[int] = []


@function_tool
def refund(order_id: int, amount: int) -> str:
    """Refund an order."""
    paid.append(amount)
    return f"refunded {amount} EUR for order {order_id}"


def _answer(call: Any) -> Any:
    outputs = [
        i for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    return [assistant_message(f"Done: {outputs[-1]['output']}.")]


refunds_agent = Agent(
    name="refunds",
    instructions="Refund orders.",
    tools=[refund],
    model=ScriptedModel(
        [
            [function_call("refund", {"order_id": 1042, "amount": 1999}, call_id="c1")],
            ModelStep.respond(_answer),
        ]
    ),
)
triage_agent = Agent(
    name="triage",
    instructions="Send refund requests to the refunds agent.",
    handoffs=[refunds_agent],
    model=ScriptedModel([[function_call("transfer_to_refunds", {}, call_id="c0")]]),
)


def main() -> None:
    dbg = flowdbg.Debugger(record=False)
    dbg.attach(triage_agent)  # follows its handoffs; Runner.run_sync below is unchanged
    dbg.break_on_tool("refund", args_pattern=r'"amount": *[0-9]{4,}')
    run = dbg.start(lambda text: Runner.run_sync(triage_agent, text), "refund my order")

    stop = dbg.wait_for_stop(timeout=10)
    assert stop is not None
    print(stop)  # before tool 'refunds/refund'
    print("amount asked:", dbg.inspect("amount"))  # 1999
    print("paid so far:", paid)  # [] -- the tool body has not run
    dbg.set("amount", 50)
    dbg.resume()

    print(run.result(timeout=10).final_output)  # Done: refunded 50 EUR for order 1042.
    print(run.log)


if __name__ == "__main__":
    main()
