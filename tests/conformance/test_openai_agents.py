"""The conformance suites run against real OpenAI Agents SDK agents (tox env ``openai_agents``).

Offline: every model is the SDK's own ``agents.testing.ScriptedModel``, tracing is disabled.

How an agent run maps the canonical scenarios (see :class:`OpenAIAgentsFixtures`): the state is
the run context, the units are an agent's tool calls and its model is the router.
"""

from __future__ import annotations

import ast
import itertools
import json
import threading
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

import oa_helpers as oa
from agents import Agent, AgentHooks, RunContextWrapper, Runner, function_tool, handoff
from agents.testing import ModelStep, assistant_message, function_call
from pydantic import BaseModel

import flowdbg
from flowdbg.testing import ALL_SUITES, AdapterFixtures, Placement, Scenario

#: Longest a slow tool waits for release() before giving up on its own.
SLOW_LIMIT = 10.0
#: Model turns a scripted router may answer (more than any scenario takes, also when an edit
#: sends a loop round again).
TURNS = 40

# Why tests that build a scenario cannot hold for an agent run (OpenAIAgentsFixtures.excluded).
_OUTPUT_NOT_COMMITTED = (
    "a tool writes the run context itself and returns its update to the model: an edit of its "
    "output at the after stop changes what the model receives, not the state the test reads"
)
_TOOL_INPUT = (
    "a tool's input is its arguments, not the run context: an edit of x at c's before stop "
    "reaches c as its argument (c returns y = x + 1 from it) but not the context's x, which c "
    "does not write; and a key the tool takes no argument for ('w') is refused"
)
_ROUTED_BY_MODEL = (
    "the route after a tool call is the next model turn's choice: the decision is at that llm "
    "unit's after stop (the calls it plans), not at the tool's"
)
_NO_ARGUMENTS = (
    "the parallel scenario's tools take no arguments (they read the run context), so the state "
    "is not their input: an edit there is refused as an argument the tool does not take, not "
    "for the reason the test checks"
)
_CALLS_WRITE = (
    "the test holds a call to commit nothing (the state at its step is the one its unit "
    "started from, and only units write keys), but an agent's calls write the run context "
    "themselves: the store gives each call step the context after it (Frame."
    "calls_write_state), so the state at the first model turn is the context, not the run's "
    "input (the user's message), and the handoff to 'done', whose callback wrote 'found' and "
    "'ran', is their writer, not the agent"
)

Ctx = RunContextWrapper[dict[str, Any]]
#: what the router model does next: ``plan(known state, tool calls made so far)`` gives the
#: calls of the next turn as ``(tool, arguments)``, or a final answer
Plan = Callable[[dict[str, Any], list[str]], "list[tuple[str, dict[str, Any]]] | str"]


class Topic(BaseModel):
    topic: str


class Findings(BaseModel):
    reply: str
    found: str
    ran: str


def _parsed(text: Any) -> Any:
    """A tool output or an input message as a value (the SDK gives the model ``str(output)``)."""
    if not isinstance(text, str):
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError):
            continue
    return None


def _known(call: Any) -> tuple[dict[str, Any], list[str]]:
    """What the model knows from its input: the state the user message states (JSON), updated
    by each tool output since, in order; and the names of the tools called so far."""
    known: dict[str, Any] = {}
    called: list[str] = []
    for item in call.input if isinstance(call.input, list) else [call.input]:
        if isinstance(item, str) or (isinstance(item, dict) and item.get("role") == "user"):
            value = _parsed(item if isinstance(item, str) else item.get("content"))
        elif isinstance(item, dict) and item.get("type") == "function_call":
            called.append(str(item.get("name")))
            continue
        elif isinstance(item, dict) and item.get("type") == "function_call_output":
            value = _parsed(item.get("output"))
        else:
            continue
        if isinstance(value, dict):
            known.update(value)
    return known, called


def router(name: str, plan: Plan, effects: list[str] | None = None) -> oa.Scripted:
    """A scripted model named ``name`` that routes like a graph's edges: each turn it reads the
    state from its input and calls the tools ``plan`` names (several in one turn run as
    parallel calls), or answers."""
    ids = itertools.count(1)

    def respond(call: Any) -> list[Any]:
        known, called = _known(call)
        nxt = plan(known, called)
        if effects is not None:
            effects.append(f"route {called[-1] if called else '-'} -> {nxt}")
        if isinstance(nxt, str):
            return [assistant_message(nxt)]
        return [function_call(tool, args, call_id=f"call-{next(ids)}") for tool, args in nxt]

    return oa.Scripted([ModelStep.respond(respond)] * TURNS, name=name)


def _text(message: Any) -> str:
    """The text of an assistant message (an output item or its dict form)."""
    content = message.get("content") if isinstance(message, dict) else message.content
    if isinstance(content, str):
        return content
    parts = [p.get("text") if isinstance(p, dict) else getattr(p, "text", None) for p in content]
    return "".join(p for p in parts if isinstance(p, str))


def _items(result: Any) -> list[str]:
    return list(result.context_wrapper.context["items"])


def _state_scenario(agent: Agent[Any], input: dict[str, Any], **extra: Any) -> Scenario:
    """A scenario whose state is the run context: the run starts with the state as both the
    context and the user message (JSON), and its result is the context after the run."""
    # the entry points are looked up at call time: attach patches the SDK's runner
    return Scenario(
        target=agent,
        run=lambda s: oa.run_sync(agent, json.dumps(s), context=dict(s)),
        arun=lambda s: Runner.run(agent, json.dumps(s), context=dict(s)),
        input=input,
        normalize=lambda r: dict(r.context_wrapper.context),
        **extra,
    )


def _scenario(agent: Agent[Any], input: Any, **extra: Any) -> Scenario:
    return Scenario(
        target=agent,
        run=lambda s: oa.run_sync(agent, s["q"]),
        arun=lambda s: Runner.run(agent, s["q"]),
        input=input,
        **extra,
    )


class _Context:
    """A recorded run context standing for the result the scenarios normalize (their
    ``normalize`` reads ``result.context_wrapper.context``)."""

    def __init__(self, context: Any) -> None:
        self.context_wrapper = self
        self.context = dict(context)


class OpenAIAgentsFixtures(AdapterFixtures):
    """The canonical scenarios as OpenAI Agents SDK runs.

    How an agent run maps a scenario:

    - **state**: the run context, a dict (``Runner.run(agent, json.dumps(state),
      context=dict(state))``); the adapter shows a mapping context as the run's ``state``. The
      normalized result is the context after the run.
    - **units**: the scenario's units are the tool calls of one agent named ``agent`` (kind
      ``tool``, one level inside it): a tool's arguments are its input, its body writes the
      keys it sets into the run context (``ctx.context``), and it returns the update it made,
      its output (the model receives it as text).
    - **routing**: the agent's model (scripted, named ``chat``) is the router: each turn it reads
      the state from the conversation (the user message, then the tool outputs) and calls the
      next tool, as the graph's edges would; two calls in one turn are parallel branches. It
      answers when the scenario is done.
    - **nesting**: an agent used as a tool (``Agent.as_tool``) is a child run sharing the
      context.
    - **parallel**: ``p1`` and ``p2`` are two calls of one model turn; they write ``items`` in
      the order they finish, so the result lists them sorted.
    - **tools** (an agent scenario): ``agent``'s model ``chat`` answers "search, then clean up"
      with the call of ``search``, then calls ``shell``, then hands off to ``done`` with what it
      got (reply, found, ran): the handoff's own callback writes that into the context, and
      ``done``'s agent hooks set ``finished``. ``found`` and ``ran`` are thus the tool results
      as the model received them (edits included).
    - **failing** is not built (the builder says why); **handoff** is the agents' own
      scenario.

    What such a run does that a graph does not: the units sit one level inside the agent,
    between its model turns (:meth:`placement`: the suites place depths and paths there, step
    past the agent and its turns, and leave them out of lists of stops); a tool's input is its
    arguments and it writes the state itself, so an edit of its output changes what the model
    receives, not the state, and the route is the next model turn's choice. The tests that
    hold the units to a graph's shape anyway are listed in :attr:`excluded`, each with its
    reason.
    """

    adapter = "openai_agents"
    unit_kind = "agent"
    llm_messages = "input"  # the model receives the run's items, the user message first
    excluded = MappingProxyType(
        {
            **dict.fromkeys(
                (
                    "test_edit_after_a_unit_changes_the_route",
                    "test_edit_at_one_parallel_branch_affects_only_that_branch",
                    "test_edit_output_after_a_unit",
                    "test_after_a_unit_a_path_reads_and_edits_its_output",
                    "test_add_a_key_to_what_a_unit_commits",
                    "test_delete_a_key_from_what_a_unit_commits",
                ),
                _OUTPUT_NOT_COMMITTED,
            ),
            **dict.fromkeys(
                (
                    "test_the_unit_sees_an_edit_made_before_it",
                    "test_an_edit_of_the_state_a_unit_receives_is_kept_or_refused",
                ),
                _TOOL_INPUT,
            ),
            "test_after_stop_reports_the_routing_decision": _ROUTED_BY_MODEL,
            **dict.fromkeys(
                (
                    "test_an_edit_of_a_reducer_list_at_a_before_stop_changes_the_element_shown",
                    "test_an_edit_at_a_before_stop_beside_a_parallel_branch_is_kept_or_refused",
                ),
                _NO_ARGUMENTS,
            ),
            "test_recorded_state_changes_only_at_the_units_that_commit_it": _CALLS_WRITE,
            "test_a_fork_holds_at_breakpoints_and_takes_edits_there": (
                "the fork holds before c, whose input is its arguments: the edit of x there "
                "reaches c (y = 4) but not the run context's x, which c does not write, where "
                "the test reads x = 3 in the result (the fork holding and taking the edit is "
                "tested in tests/adapters/openai_agents/test_agents_fork.py)"
            ),
            "test_a_call_inside_a_unit_is_refused": (
                "an agent run's state is whole after the tool call that ends a model turn, so a "
                "fork starts there: the tools scenario's first call (search) is forkable; the "
                "steps refused (a turn that planned calls, a call with siblings to come, the "
                "agent) are tested in tests/adapters/openai_agents/test_agents_fork.py"
            ),
            "test_a_model_reply_edited_after_the_call_is_what_the_unit_gets": (
                "the SDK rejects a changed model response (it checks tool call ids against "
                "it), so the adapter refuses an edit of an llm unit's output with EditRefused "
                "(the model input is editable at the before stop instead); the test replaces "
                "the first turn's whole output, its 'search' call too, with a text, after "
                "which the run would never reach the handoff whose callback writes 'reply'"
            ),
        }
    )

    # the tools scenario's calls: the agent's model turn before each tool call and before the
    # handoff, then the turn of the agent it hands off to
    tools_call_kinds = ("llm", "tool", "llm", "tool", "llm", "llm")
    # an agent receives the conversation the SDK built, which no edit reaches: the question is
    # changed in the user message its first model turn receives
    tools_question = ("*", "llm", "input[0].content")

    def rerun_config(self, scn: Scenario) -> dict[str, Any]:
        # the scenario's entry point gives the run its state as the run context
        return {"context": dict(scn.input)}

    def rerun_result(
        self, dbg: flowdbg.Debugger, scn: Scenario, rerun: flowdbg.RunHandle, timeout: float
    ) -> dict[str, Any]:
        # a rerun's result is the final output; the scenario's result is the run context, which
        # the record keeps as the state after the last step
        assert rerun.result(timeout) == "finished"
        assert dbg.flush(timeout) and dbg.store is not None and rerun.run_id is not None
        return dict(dbg.store.get_state(rerun.run_id))

    def fork_edits(self, edits: dict[str, Any]) -> dict[str, Any]:
        # the router model reads the state from the conversation, where the forked tool
        # call's result says what it wrote: an edit names both the run context and that result
        return {**edits, **{f"output:{path}": value for path, value in edits.items()}}

    def fork_result(
        self, dbg: flowdbg.Debugger, scn: Scenario, fork: flowdbg.RunHandle, timeout: float
    ) -> dict[str, Any]:
        # a fork's result is the final output (as Adapter.invoke's); the scenario's result is
        # the run context, which the record keeps as the state after the last step
        fork.result(timeout)
        assert dbg.flush(timeout) and dbg.store is not None and fork.run_id is not None
        return scn.normalize(_Context(dbg.store.get_state(fork.run_id)))

    def placement(self, scenario: str) -> Placement:
        if scenario in ("tools", "handoff"):  # the agents' own scenarios: agents are the units
            return Placement(kind="agent")
        # the tool calls of the agent "agent", between its model turns; the nested scenario's
        # inner units are the tool calls of the agent used as the tool "sub"
        return Placement(path=("agent",), kind="tool", nested=("sub", "sub_agent"))

    # ------------------------------------------------------------------ not agent scenarios

    # ------------------------------------------------------------------ tool scenarios

    def build_linear(self) -> Scenario:
        effects: list[str] = []

        @function_tool
        def a(ctx: Ctx, x: int) -> dict[str, int]:
            """Add one to x."""
            ctx.context["x"] = x + 1
            return {"x": x + 1}

        @function_tool
        def b(ctx: Ctx, x: int) -> dict[str, int]:
            """Multiply x by ten."""
            ctx.context["x"] = x * 10
            return {"x": x * 10}

        @function_tool
        def c(ctx: Ctx, x: int) -> dict[str, int]:
            """Set y to x + 1."""
            ctx.context["y"] = x + 1
            return {"y": x + 1}

        def plan(known: dict[str, Any], called: list[str]) -> Any:
            following = {0: "a", 1: "b", 2: "c"}.get(len(called))
            return [(following, {"x": known["x"]})] if following else "done"

        agent = Agent(name="agent", model=router("chat", plan, effects), tools=[a, b, c])
        return _state_scenario(agent, {"x": 1}, effects=effects)

    def build_branch(self, positive: bool) -> Scenario:
        @function_tool
        def start(ctx: Ctx, x: int) -> dict[str, bool]:
            """Note that the branch was seen."""
            ctx.context["seen"] = True
            return {"seen": True}

        @function_tool
        def pos(ctx: Ctx) -> dict[str, str]:
            """The positive branch."""
            ctx.context["sign"] = "+"
            return {"sign": "+"}

        @function_tool
        def neg(ctx: Ctx) -> dict[str, str]:
            """The negative branch."""
            ctx.context["sign"] = "-"
            return {"sign": "-"}

        def plan(known: dict[str, Any], called: list[str]) -> Any:
            if not called:
                return [("start", {"x": known["x"]})]
            if len(called) == 1:
                return [("pos" if known["x"] > 0 else "neg", {})]
            return "done"

        agent = Agent(name="agent", model=router("chat", plan), tools=[start, pos, neg])
        return _state_scenario(agent, {"x": 1 if positive else -1})

    def build_loop(self) -> Scenario:
        effects: list[str] = []

        @function_tool
        def inc(ctx: Ctx, count: int) -> dict[str, int]:
            """Add one to the count."""
            ctx.context["count"] = count + 1
            return {"count": count + 1}

        @function_tool
        def done(ctx: Ctx) -> dict[str, bool]:
            """Finish."""
            ctx.context["finished"] = True
            return {"finished": True}

        def plan(known: dict[str, Any], called: list[str]) -> Any:
            if known.get("finished"):
                return "finished"
            count = known["count"]
            return [("inc", {"count": count})] if count < 5 else [("done", {})]

        agent = Agent(name="agent", model=router("chat", plan, effects), tools=[inc, done])
        return _state_scenario(agent, {"count": 0}, effects=effects)

    def build_parallel(self) -> Scenario:
        effects: list[str] = []

        def add(ctx: Ctx, name: str) -> dict[str, list[str]]:
            # the list-add reducer: every branch's item is kept, whichever finishes first
            effects.append(f"reduce {[name]}")
            ctx.context["items"] = [*ctx.context.get("items", []), name]
            return {"items": [name]}

        @function_tool
        async def fan(ctx: Ctx) -> dict[str, Any]:
            """Start both branches."""
            return {}

        @function_tool
        async def p1(ctx: Ctx) -> dict[str, list[str]]:
            """Branch one."""
            return add(ctx, "p1")

        @function_tool
        async def p2(ctx: Ctx) -> dict[str, list[str]]:
            """Branch two."""
            return add(ctx, "p2")

        @function_tool
        async def join(ctx: Ctx) -> dict[str, int]:
            """Count the items."""
            ctx.context["total"] = len(ctx.context["items"])
            return {"total": ctx.context["total"]}

        def plan(known: dict[str, Any], called: list[str]) -> Any:
            if not called:
                return [("fan", {})]
            if called == ["fan"]:
                return [("p1", {}), ("p2", {})]
            if "join" not in called:
                return [("join", {})]
            return "joined"

        agent = Agent(name="agent", model=router("chat", plan), tools=[fan, p1, p2, join])
        scn = _state_scenario(agent, {"items": []}, effects=effects)
        # parallel tool calls write the context in the order they finish (a held branch
        # finishes last), where a graph's reducer applies the branches in their order
        scn.normalize = lambda r: {**r.context_wrapper.context, "items": sorted(_items(r))}
        return scn

    def build_nested(self) -> Scenario:
        @function_tool
        def pre(ctx: Ctx, x: int) -> dict[str, int]:
            """Add one to x."""
            ctx.context["x"] = x + 1
            return {"x": x + 1}

        @function_tool
        def inner1(ctx: Ctx, x: int) -> dict[str, int]:
            """Multiply x by ten."""
            ctx.context["x"] = x * 10
            return {"x": x * 10}

        @function_tool
        def inner2(ctx: Ctx, x: int) -> dict[str, int]:
            """Set z to x + 1."""
            ctx.context["z"] = x + 1
            return {"z": x + 1}

        @function_tool
        def post(ctx: Ctx) -> dict[str, bool]:
            """Finish."""
            ctx.context["done"] = True
            return {"done": True}

        def inner_plan(known: dict[str, Any], called: list[str]) -> Any:
            if not called:
                return [("inner1", {"x": known["x"]})]
            if called == ["inner1"]:
                return [("inner2", {"x": known["x"]})]
            return json.dumps({"x": known["x"], "z": known["z"]})

        # the agent used as the tool "sub" has a name of its own: its unit, which starts the
        # child run, is the framework's (Placement.nested), not the scenario's "sub"
        sub = Agent(name="sub_agent", model=router("chat", inner_plan), tools=[inner1, inner2])

        def plan(known: dict[str, Any], called: list[str]) -> Any:
            if not called:
                return [("pre", {"x": known["x"]})]
            if called == ["pre"]:
                return [("sub", {"input": json.dumps({"x": known["x"]})})]
            if called == ["pre", "sub"]:
                return [("post", {})]
            return "done"

        agent = Agent(
            name="agent",
            model=router("chat", plan),
            tools=[pre, sub.as_tool(tool_name="sub", tool_description="The nested agent."), post],
        )
        return _state_scenario(agent, {"x": 1})

    def build_failing(self) -> Scenario:
        raise NotImplementedError(
            "a tool's exception never reaches the caller of an agent run as it is: by default "
            "the SDK hands the model an error message and the run goes on, and with "
            "failure_error_function=None it raises UserError('Error running tool boom: ...') "
            "from it; what propagates unchanged (a model's or a hook's exception) is no "
            "scenario unit. The error stop at a failing tool (the real exception) is tested in "
            "tests/adapters/openai_agents"
        )

    def build_slow(self) -> Scenario:
        started = threading.Event()
        gate = threading.Event()

        @function_tool
        def slow(ctx: Ctx, x: int) -> dict[str, int]:
            """Wait for the gate, then add one to x."""
            started.set()
            gate.wait(SLOW_LIMIT)
            ctx.context["x"] = x + 1
            return {"x": x + 1}

        @function_tool
        def after(ctx: Ctx) -> dict[str, int]:
            """Set y."""
            ctx.context["y"] = 1
            return {"y": 1}

        def plan(known: dict[str, Any], called: list[str]) -> Any:
            if not called:
                return [("slow", {"x": known["x"]})]
            if called == ["slow"]:
                return [("after", {})]
            return "done"

        agent = Agent(name="agent", model=router("chat", plan), tools=[slow, after])
        return _state_scenario(agent, {"x": 1}, started=started, release=gate.set)

    # ------------------------------------------------------------------ agent scenarios

    def build_tools(self) -> Scenario:
        @function_tool
        def search(query: str) -> str:
            """Search the web."""
            return f"results for {query}"

        @function_tool
        def shell(cmd: str) -> str:
            """Run a shell command."""
            return f"ran {cmd}"

        async def commit(ctx: Ctx, findings: Findings) -> None:
            # the agent hands over what it got from its model and tools: that is its update
            ctx.context.update(findings.model_dump())

        class Finish(AgentHooks[Any]):
            async def on_start(self, context: Ctx, agent: Any) -> None:
                context.context["finished"] = True

        done = Agent(name="done", model=oa.Scripted([oa.say("finished")] * 3), hooks=Finish())

        def respond(call: Any) -> list[Any]:
            # the same reply to the same input, call ids too (a rerun whose model turns run
            # live gets the calls the record has)
            items = [i for i in call.input if isinstance(i, dict)]
            said = [i for i in items if i.get("role") == "assistant" or i.get("type") == "message"]
            outputs = oa.outputs(call)
            call_id = f"call-{len(outputs) + 1}"
            if not outputs:
                q = str(items[-1].get("content"))
                return [
                    assistant_message("search, then clean up"),
                    function_call("search", {"query": q}, call_id=call_id),
                ]
            if len(outputs) == 1:
                cmd = {"cmd": "rm -rf /tmp/cache"}
                return [function_call("shell", cmd, call_id=call_id)]
            reply = _text(said[0]) if said else ""
            findings = {"reply": reply, "found": outputs[0], "ran": outputs[1]}
            return [function_call("transfer_to_done", findings, call_id=call_id)]

        agent = Agent(
            name="agent",
            model=oa.Scripted([ModelStep.respond(respond)] * TURNS),
            tools=[search, shell],
            handoffs=[handoff(done, input_type=Findings, on_handoff=commit)],
        )
        return Scenario(
            target=agent,
            run=lambda s: oa.run_sync(agent, s["q"], context=dict(s)),
            arun=lambda s: Runner.run(agent, s["q"], context=dict(s)),
            input={"q": "flights"},
            normalize=lambda r: dict(r.context_wrapper.context),
        )

    def reply_text(self, output: Any) -> Any:
        # an llm unit's output is {"output": [items], "usage": ...}: the text of its message
        for item in (output or {}).get("output") or ():
            if getattr(item, "type", None) == "message":
                return _text(item)
        return output

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
