"""The conformance suites run against real OpenAI Agents SDK agents (tox env ``openai_agents``).

Offline: every model is the SDK's own ``agents.testing.ScriptedModel``, tracing is disabled.

The canonical scenarios are graphs over a shared state (``x``, ``count``, ``items``) whose units
return updates merged into it. An agent run has no such state: agents exchange a conversation,
and an agent's activation returns a final output or a handoff, not a state update. The builders
of those scenarios raise ``NotImplementedError`` with the reason, which skips their tests; the
agent behaviours they would cover (tools, parallel tool calls, nesting through agents used as
tools, repeated turns, failures) are tested in ``tests/adapters/openai_agents``. The handoff
scenario is an agent scenario and is built natively.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

import oa_helpers as oa
from agents import Agent, Runner, handoff
from pydantic import BaseModel

from flowdbg.testing import ALL_SUITES, AdapterFixtures, Scenario

_NO_STATE = (
    "an agent run has no shared state of keys that its agents update (agents exchange a "
    "conversation and end with an output or a handoff); the {what} is covered by "
    "tests/adapters/openai_agents"
)


class Topic(BaseModel):
    topic: str


def _scenario(agent: Agent[Any], input: Any, **extra: Any) -> Scenario:
    # the entry points are looked up at call time: attach patches the SDK's runner
    return Scenario(
        target=agent,
        run=lambda s: oa.run_sync(agent, s["q"]),
        arun=lambda s: Runner.run(agent, s["q"]),
        input=input,
        **extra,
    )


class OpenAIAgentsFixtures(AdapterFixtures):
    """The scenarios that are agent scenarios, built with the SDK's ``Agent`` and handoffs."""

    adapter = "openai_agents"
    unit_kind = "agent"

    def build_linear(self) -> Scenario:
        raise NotImplementedError(_NO_STATE.format(what="run of one agent after another"))

    def build_loop(self) -> Scenario:
        raise NotImplementedError(_NO_STATE.format(what="loop of model turns"))

    def build_branch(self, positive: bool) -> Scenario:
        raise NotImplementedError(_NO_STATE.format(what="choice between agents (a handoff)"))

    def build_parallel(self) -> Scenario:
        raise NotImplementedError(_NO_STATE.format(what="parallel tool calls of one turn"))

    def build_nested(self) -> Scenario:
        raise NotImplementedError(_NO_STATE.format(what="agent used as a tool (a child run)"))

    def build_failing(self) -> Scenario:
        raise NotImplementedError(_NO_STATE.format(what="failing tool and model"))

    def build_slow(self) -> Scenario:
        raise NotImplementedError(_NO_STATE.format(what="slow tool"))

    def build_tools(self) -> Scenario:
        raise NotImplementedError(
            "an agent calls its model again after every tool call (a model turn per step), so "
            "the scenario's one model call followed by two tool calls, and a state the agent "
            "commits, have no counterpart; tool calls are covered by tests/adapters/openai_agents"
        )

    def build_handoff(self) -> Scenario:
        def answer(name: str) -> Agent[Any]:
            return oa.agent(
                name, oa.answer(lambda call: f"{name}: {oa.handoff_args(call).get('topic')}", 3)
            )

        specialist = answer("specialist")
        billing = answer("billing")

        async def noted(ctx: Any, topic: Topic) -> None:
            return None

        triage = oa.agent(
            "triage",
            [oa.calls(("transfer_to_specialist", {"topic": "refund"}, "call-h"))] * 3,
            handoffs=[
                handoff(specialist, input_type=Topic, on_handoff=noted),
                handoff(billing, input_type=Topic, on_handoff=noted),
            ],
        )
        return _scenario(
            triage,
            {"q": "refund"},
            normalize=lambda r: {"agent": r.last_agent.name, "answer": r.final_output},
        )


class TestOpenAIAgentsAll(OpenAIAgentsFixtures, *ALL_SUITES):  # type: ignore[misc]
    pass
