"""Forks of recorded OpenAI Agents SDK runs (imports ``agents``: loaded by the adapter's fork
methods only).

The state of an agent run after one of its steps is three things: the conversation so far (the
input items the next model turn would receive), the agent that is active, and the run context.
The SDK takes the first two as a new run's arguments: ``Runner.run(agent, input=[items],
context=...)`` starts ``agent`` on that conversation as if it had built it itself (it keeps no
other history between turns: run.py, ``original_input`` plus the generated items). So a fork
of step N is ``Runner.run_sync`` (as ``flowdbg run`` runs an agent) of the *current* agent of
that name, found from the attached agent through its handoffs and agents used as tools, with
the conversation rebuilt from the record and the recorded run context (edited).

Where the conversation is whole, read from the record alone (:func:`fork_problems` refuses
the rest, saying why):

- after a tool call that ended its model turn (every call the turn planned has its result):
  the turn's input items, its planned output items (replayed as the SDK replays them:
  ``ModelResponse.to_input_items``), then a ``function_call_output`` for each planned call, in
  the planned order. An output is the very item the SDK made (found in a later turn's input,
  by call id) when the record has one, else made from the recorded result as the SDK makes it
  (``ItemHelpers.tool_call_output_item``, with the current tool's output schema). An
  ``output:`` edit changes the forked call's result: its item is made from the edited value;
- after a handoff: the same, then the handoff's own output (the transfer message of the
  current handoff), with the target agent going on. The SDK passes the conversation on as it
  is unless a handoff input filter or ``nest_handoff_history`` rewrites it, which the fork
  cannot repeat: such handoffs are refused;
- after a model turn that planned no call and no handoff but after which the agent went on:
  its input and output items;
- step 0: the run's input, with the context the run started with.

The run context: a mapping context is the state, as recorded after the step (edited); a
context of another type cannot be rebuilt from JSON, so the fork takes it from the config
(``config={"context": ...}``) and refuses to start without one. No context: none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flowdbg.adapter import RunOptions

if TYPE_CHECKING:
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.store import Store
    from flowdbg.timetravel import ForkPoint

__all__ = ["check_fork", "fork", "fork_problems", "prepared"]

#: the keys of the state of a run whose context is no mapping (see AgentRun.state)
_OPAQUE = frozenset({"agent", "turn", "context"})


# -- reading the record ------------------------------------------------------------------------


@dataclass
class _Turn:
    """A model turn of an agent and what its plan ran: its tool calls and its handoff."""

    llm: StepRecord
    tools: list[StepRecord] = field(default_factory=list)
    handoff: StepRecord | None = None
    #: planned function calls: call id -> (name, the tool step that ran it, or None)
    calls: dict[str, tuple[str, StepRecord | None]] = field(default_factory=dict)
    #: the call ids no tool step ran (a handoff's, a hosted or MCP tool's)
    unmatched: list[str] = field(default_factory=list)


def _planned(output: Any) -> list[Mapping[str, Any]]:
    """The output items of a recorded model turn (its output ``{"output": [items], ...}``)."""
    items = output.get("output") if isinstance(output, Mapping) else None
    return [item for item in items or () if isinstance(item, Mapping)]


def _function_calls(output: Any) -> list[Mapping[str, Any]]:
    return [item for item in _planned(output) if item.get("type") == "function_call"]


class _Record:
    """The units of a recorded top-level agent run, grouped by model turn."""

    def __init__(self, store: Store, run: RunRecord) -> None:
        self.store = store
        self.run = run
        depth = len(run.path)
        steps = store.get_steps(run.run_id, values=False)
        valued = {s.step: s for s in store.get_steps(run.run_id, kind="llm")}
        self.steps = {s.step: valued.get(s.step, s) for s in steps}
        self.agents = [s for s in steps if s.kind == "agent" and len(s.path) == depth]
        inner = [
            self.steps[s.step]
            for s in steps
            if len(s.path) == depth + 1 and s.kind in ("llm", "tool", "handoff")
        ]
        self.turns: list[_Turn] = []
        #: the turn of each llm, tool and handoff step
        self.turn_of: dict[int, _Turn] = {}
        current: _Turn | None = None
        for s in inner:
            if s.kind == "llm":
                current = _Turn(s)
                self.turns.append(current)
            elif current is None or tuple(current.llm.path) != tuple(s.path):
                continue  # (a call the record cannot place in a turn)
            elif s.kind == "tool":
                current.tools.append(s)
            elif current.handoff is None:
                current.handoff = s
            self.turn_of[s.step] = current
        for turn in self.turns:
            self._match(turn)

    @staticmethod
    def _match(turn: _Turn) -> None:
        calls = _function_calls(turn.llm.output)
        ids = [str(call.get("call_id")) for call in calls]
        names = {str(call.get("call_id")): str(call.get("name")) for call in calls}
        ran: dict[str, StepRecord] = {}
        for tool in turn.tools:
            if tool.branch in names and tool.branch not in ran:
                ran[tool.branch] = tool  # parallel calls run on the branch of their call id
                continue
            same = [i for i in ids if names[i] == tool.node and i not in ran]
            if same:
                ran[same[0]] = tool
        turn.calls = {i: (names[i], ran.get(i)) for i in ids}
        turn.unmatched = [i for i in ids if i not in ran]

    def later_turns(self, step: StepRecord) -> list[_Turn]:
        """The model turns that started after ``step`` ended, any agent's."""
        end = step.ended_at if step.ended_at is not None else step.started_at
        return [t for t in self.turns if t.llm.started_at >= end]

    def agent_around(self, step: StepRecord) -> StepRecord | None:
        """The agent activation ``step`` ran in."""
        for agent in self.agents:
            if agent.node != step.path[-1] or agent.started_at > step.started_at:
                continue
            if agent.ended_at is None or agent.ended_at >= step.started_at:
                return agent
        return None

    def went_on(self, step: StepRecord) -> bool:
        """Whether the agent ``step`` ran in asked its model again after it (else it ended:
        with its final output, a failure or the run's end)."""
        agent = self.agent_around(step)
        end = agent.ended_at if agent is not None else None
        return any(
            tuple(t.llm.path) == tuple(step.path) and (end is None or t.llm.started_at <= end)
            for t in self.later_turns(step)
        )

    def problem(self, step: StepRecord) -> str | None:
        """Why a fork cannot start after ``step``, or ``None`` (see the module's docstring)."""
        where = f"step {step.step} ({step.node})"
        if step.kind == "agent":
            return (
                f"{where} is agent {step.node!r}'s activation, which ends where the run ends or "
                "hands off; fork after one of its model turns, tool calls or its handoff"
            )
        turn = self.turn_of.get(step.step)
        if turn is None or step.kind not in ("llm", "tool", "handoff"):
            return f"{where} is a {step.kind} unit the record cannot place in a model turn"
        if step.kind == "llm":
            if turn.calls:
                last = turn.handoff or self.last_call(turn)
                after = (
                    f": fork after step {last.step} ({last.node}), once the turn's calls ran"
                    if last is not None
                    else ""
                )
                return (
                    f"{where} is a model turn that planned tool calls or a handoff, whose "
                    f"results are not part of the conversation yet{after}"
                )
            if not self.went_on(step):
                return f"{where} is a model turn that gave the agent's final output"
            return None
        other = [i for i in turn.unmatched if turn.handoff is None or len(turn.unmatched) > 1]
        if other:
            name = turn.calls[other[0]][0]
            return (
                f"its model turn (step {turn.llm.step}) also called {name!r}, which is no "
                "function tool unit (a hosted or MCP tool, or one of several handoffs): what "
                "it returned is not in the record"
            )
        failed = [t for t in turn.tools if t.status != "completed"]
        if failed:
            return (
                f"the call step {failed[0].step} ({failed[0].node}) of its model turn "
                f"{failed[0].status}: the message the model got instead of a result is not "
                "a value the record keeps"
            )
        if step.kind == "handoff":
            if len(turn.unmatched) != 1:
                return (
                    f"the record cannot tell which call of its model turn (step "
                    f"{turn.llm.step}) was the handoff"
                )
            return None
        if turn.handoff is not None:
            return (
                f"its model turn (step {turn.llm.step}) also handed off to "
                f"{turn.handoff.node!r} (step {turn.handoff.step}), which the SDK runs after "
                f"the tool calls: fork after step {turn.handoff.step}"
            )
        last = self.last_call(turn)
        if last is not None and last is not step:
            return (
                f"{where} ended before its sibling call step {last.step} ({last.node}) of the "
                f"same model turn: fork after step {last.step}, once every call of the turn "
                "has its result"
            )
        agent = self.agent_around(step)
        if (
            not self.went_on(step)
            and agent is not None
            and agent.status == "completed"
            and agent.decision is None
        ):
            return (
                f"agent {step.path[-1]!r} ended with the result of {where} (its "
                "tool_use_behavior): the run ended there"
            )
        return None

    @staticmethod
    def last_call(turn: _Turn) -> StepRecord | None:
        """The turn's tool call that ended last (its conversation is whole after it)."""
        ran = [t for t in turn.tools if t.ended_at is not None]
        return max(ran, key=lambda t: (t.ended_at, t.step)) if ran else None

    def sent(self, call_id: str, after: StepRecord) -> dict[str, Any] | None:
        """The ``function_call_output`` item of ``call_id`` as a later model turn got it."""
        for turn in self.later_turns(after):
            items = turn.llm.input.get("input") if isinstance(turn.llm.input, Mapping) else None
            for item in items or ():
                if (
                    isinstance(item, Mapping)
                    and item.get("type") == "function_call_output"
                    and item.get("call_id") == call_id
                ):
                    return dict(item)
        return None


def fork_problems(store: Store, run: RunRecord, steps: Sequence[StepRecord]) -> dict[int, str]:
    """The steps of a recorded agent run a fork cannot start after, with the reason (see the
    module's docstring); read from the record alone."""
    record = _Record(store, run)
    refused: dict[int, str] = {}
    for s in steps:
        if len(s.path) > len(run.path) + 1:
            continue  # (not in this run's record: nested runs are runs of their own)
        problem = record.problem(record.steps.get(s.step, s))
        if problem is not None:
            refused[s.step] = problem
    return refused


# -- rebuilding the start ------------------------------------------------------------------------


@dataclass
class _Start:
    """What a fork runs: the agent that goes on (by name) and the conversation (``None``: the
    run's input, from step 0)."""

    agent: str
    items: list[Any] | None
    #: the step whose turn the conversation was rebuilt from (``None``: from the input)
    step: StepRecord | None = None


def _agents_by_name(target: Any) -> dict[str, list[Any]]:
    from flowdbg.adapters.openai_agents._adapter import reached_agents

    found: dict[str, list[Any]] = {}
    for agent in reached_agents(target):
        found.setdefault(agent.name, []).append(agent)
    return found


def agent_named(target: Any, name: str) -> Any:
    """The current agent named ``name``, reached from ``target``.

    :raises ForkError: when none or several are.
    """
    from flowdbg.timetravel import ForkError

    found = _agents_by_name(target)
    agents = found.get(name, [])
    if len(agents) == 1:
        return agents[0]
    if not agents:
        raise ForkError(
            f"the record goes on with agent {name!r}, which agent {target.name!r} no longer "
            f"reaches (its agents: {', '.join(found)}); fork after another step, or give "
            "the agent that reaches it (--target)"
        )
    raise ForkError(
        f"agent {target.name!r} reaches {len(agents)} agents named {name!r}; a fork finds the "
        "agent that goes on by its name: give them names of their own"
    )


def _tool_of(agent: Any, name: str) -> Any:
    from agents import FunctionTool

    for tool in getattr(agent, "tools", None) or ():
        if isinstance(tool, FunctionTool) and tool.name == name:
            return tool
    return None


def _output_item(call: Mapping[str, Any], result: Any, tool: Any) -> dict[str, Any]:
    """The ``function_call_output`` item the SDK makes of ``result`` for ``call``."""
    from agents.items import ItemHelpers
    from openai.types.responses import ResponseFunctionToolCall

    from flowdbg.timetravel import ForkError

    made = ResponseFunctionToolCall.model_validate({k: v for k, v in call.items() if v is not None})
    try:
        item = ItemHelpers.tool_call_output_item(
            made,
            result,
            output_json_schema=getattr(tool, "output_json_schema", None),
            output_type_adapter=getattr(tool, "_output_type_adapter", None),
        )
    except Exception as exc:  # UserError: a result the tool's output schema refuses
        raise ForkError(
            f"the result of call {call.get('call_id')!r} ({call.get('name')}) does not fit "
            f"tool {call.get('name')!r}: {exc}"
        ) from exc
    return dict(item)


def _replayed(output: Any) -> list[Any]:
    """A recorded turn's output items as the SDK replays them to the model."""
    from flowdbg.adapters.openai_agents._served import model_response
    from flowdbg.timetravel import ForkError

    try:
        return list(model_response(output).to_input_items())
    except ValueError as exc:
        raise ForkError(
            f"the record of a model turn holds output items this version of the SDK refuses "
            f"({exc}); fork after another step"
        ) from exc


#: what :func:`_edits_output` gives the point's ``output:`` edits to change
_PROBE = {"flowdbg probe": True}


def _edits_output(point: ForkPoint) -> bool:
    """Whether the fork's edits name the ``output:`` view (those of the point's edits that do
    change a probe value given as the step's output)."""
    from flowdbg.timetravel import ForkError

    try:
        return bool(point.with_output(_PROBE).output != _PROBE)
    except ForkError:  # an edit that does not fit the probe: it names the output all the same
        return True


def _redacted(value: Any, path: str = "") -> list[str]:
    """The paths of ``value`` holding a secret the store did not keep."""
    from flowdbg.store import REDACTED

    if isinstance(value, str):
        return [path or "(the whole value)"] if REDACTED in value else []
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            found += _redacted(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _redacted(item, f"{path}[{index}]")
    return found


def _conversation(
    record: _Record, step: StepRecord, target: Any, point: ForkPoint | None
) -> _Start:
    """The conversation after ``step`` (a tool call ending its turn, a handoff, a model turn
    the agent went on from), and the agent that goes on; ``point`` carries the edits of the
    forked call's result (``None``: none)."""
    from flowdbg.timetravel import ForkError

    problem = record.problem(step)
    if problem is not None:
        raise ForkError(f"cannot fork after step {step.step}: {problem}")
    turn = record.turn_of[step.step]
    name = step.path[-1]
    agent = agent_named(target, name)
    items: list[Any] = list((turn.llm.input or {}).get("input") or ())
    items.extend(_replayed(turn.llm.output))
    if step.kind == "llm":
        return _Start(name, items, step)
    planned = {str(c.get("call_id")): c for c in _function_calls(turn.llm.output)}
    values = {
        s.step: s for s in record.store.get_steps(record.run.run_id, kind="tool")
    }  # (their results)
    edited = point is not None and step.kind == "tool" and _edits_output(point)
    for call_id, (tool_name, ran) in turn.calls.items():
        if ran is None:
            continue  # the handoff's call: its output comes last
        if edited and ran.step == step.step:
            assert point is not None
            items.append(_output_item(planned[call_id], point.output, _tool_of(agent, tool_name)))
            continue
        sent = record.sent(call_id, step)
        if sent is None:
            recorded = values.get(ran.step)
            result = None if recorded is None else recorded.output
            sent = _output_item(planned[call_id], result, _tool_of(agent, tool_name))
        items.append(sent)
    if step.kind == "tool":
        return _Start(name, items, step)
    # a handoff: its own output, and the agent it went to goes on
    call_id = turn.unmatched[0]
    handoff = _handoff_of(agent, step.node)
    target_agent = agent_named(target, step.node)
    sent = record.sent(call_id, step)
    if sent is None:
        message = handoff.get_transfer_message(target_agent) if handoff is not None else None
        if message is None:
            raise ForkError(
                f"agent {name!r} no longer hands off to {step.node!r}; fork after another step"
            )
        sent = {"call_id": call_id, "output": message, "type": "function_call_output"}
    items.append(sent)
    return _Start(step.node, items, step)


def _handoff_of(agent: Any, target_name: str) -> Any:
    """The current ``Handoff`` of ``agent`` to the agent named ``target_name`` (an agent given
    as a handoff is one made with the SDK's defaults), or ``None``."""
    from agents import Agent, Handoff, handoff

    for item in getattr(agent, "handoffs", None) or ():
        if isinstance(item, Handoff) and item.agent_name == target_name:
            return item
        if isinstance(item, Agent) and item.name == target_name:
            return handoff(item)
    return None


def _check_handoff(agent: Any, target_name: str, run_config: Any) -> None:
    """Refuse a handoff whose conversation the SDK rewrites (see the module's docstring)."""
    from flowdbg.timetravel import ForkError

    handoff = _handoff_of(agent, target_name)
    if handoff is None:
        raise ForkError(
            f"agent {agent.name!r} no longer hands off to {target_name!r}; fork after another step"
        )
    rewrites = []
    if handoff.input_filter is not None:
        rewrites.append("its handoff has an input_filter")
    if getattr(run_config, "handoff_input_filter", None) is not None:
        rewrites.append("the run config has a handoff_input_filter")
    nest = getattr(handoff, "nest_handoff_history", None)
    if nest is None:
        nest = getattr(run_config, "nest_handoff_history", False)
    if nest:
        rewrites.append("nest_handoff_history is on")
    if rewrites:
        raise ForkError(
            f"the SDK rewrites the conversation it hands from {agent.name!r} to "
            f"{target_name!r} ({', '.join(rewrites)}), which a fork cannot repeat; fork after "
            f"a later step of {target_name!r} (a tool call that ends its turn), or from step 0"
        )


def _record_of(point: ForkPoint) -> _Record:
    from flowdbg.timetravel import ForkError

    if point.store is None:
        raise ForkError("a fork of an agent run reads its record: the point has no store")
    return _Record(point.store, point.run)


def _plan(target: Any, point: ForkPoint) -> _Start:
    """Where the fork starts (see the module's docstring).

    :raises ForkError: what the record or the current agents cannot give.
    """
    from flowdbg.timetravel import ForkError

    if point.node is None:  # from the run's input
        if _edits_output(point):
            raise ForkError(
                "'output:' edits change the result of a tool call; a fork from step 0 starts "
                "from the run's input: edit it (a path alone, '[0].content' of a list of "
                "items), or fork after a tool call"
            )
        agent_named(target, point.run.name)
        return _Start(point.run.name, None)
    if point.step == 0:
        return _plan_again(target, point)
    record = _record_of(point)
    step = record.steps.get(point.step)
    if step is None:
        raise ForkError(f"run {point.run.run_id[:8]} has no step {point.step}")
    if _edits_output(point) and step.kind != "tool":
        raise ForkError(
            f"'output:' edits change the result of a tool call; step {point.step} is a "
            f"{step.kind} unit: edit the run context (a path alone), or fork after a tool call"
        )
    return _conversation(record, step, target, point)


def _plan_again(target: Any, point: ForkPoint) -> _Start:
    """Step 0 of a fork (or rewind) of another run: where that run started, as its first
    model turn got it (edits of a call's result it was made with are in it)."""
    from flowdbg.timetravel import ForkError

    short = point.run.run_id[:8]
    if _edits_output(point):
        raise ForkError(
            f"run {short} started from a conversation whose tool results it was given: to "
            f"change one, fork run {(point.run.forked_from or '?')[:8]} after step "
            f"{point.run.fork_step} again with the 'output:' edit"
        )
    record = _record_of(point)
    if not record.turns:
        raise ForkError(
            f"run {short} recorded no model turn, so the conversation it started from is not "
            f"known; fork run {(point.run.forked_from or '?')[:8]} after step "
            f"{point.run.fork_step} instead"
        )
    first = record.turns[0].llm
    # the agent that took the first turn: its unit, or, in a run still going (a rewind at one
    # of its stops), the last name in the path of the turn, made inside that agent
    name = record.agents[0].node if record.agents else str(first.path[-1])
    agent_named(target, name)
    items = (first.input or {}).get("input") if isinstance(first.input, Mapping) else None
    return _Start(name, list(items or ()))


def _opaque(state: Any) -> bool:
    """Whether ``state`` is that of a run whose context is no mapping."""
    return isinstance(state, Mapping) and set(state) == _OPAQUE


def _no_mapping(point: ForkPoint) -> bool:
    """Whether the run's context is no mapping: read from the state the run started with,
    which no edit of the fork has changed (else from the point's state)."""
    initial = point.run.initial_state
    return _opaque(point.state if initial is None else initial)


def check_fork(target: Any, point: ForkPoint) -> None:
    """Refuse what the record or the current agents cannot start from (see the module's
    docstring)."""
    from flowdbg.timetravel import ForkError

    start = _plan(target, point)
    if start.step is not None and start.step.kind == "handoff":
        # a handoff's own filter refuses here, before anything runs (a run config's filter,
        # which comes with the fork's options, is checked as the fork starts)
        _check_handoff(agent_named(target, start.step.path[-1]), start.agent, None)
    if start.items is None:
        from flowdbg.adapters.openai_agents._adapter import OpenAIAgentsAdapter
        from flowdbg.errors import RunOptionError

        try:
            OpenAIAgentsAdapter().check_input(target, point.state)
        except RunOptionError as exc:
            raise ForkError(f"the input of run {point.run.run_id[:8]}: {exc}") from exc
        return
    if _no_mapping(point):
        edited = [p for p in point.edits if not str(p).startswith("output:")]
        if edited:
            raise ForkError(
                f"the run context of run {point.run.run_id[:8]} is no mapping, so its state "
                f"({', '.join(sorted(_OPAQUE))}) is the SDK's, not an input: the edit "
                f"{edited[0]!r} has nothing to change; give the context with config= "
                "(--config '{\"context\": ...}')"
            )
        return
    hidden = _redacted(point.state)
    if hidden:
        raise ForkError(
            f"the run context after step {point.step} had secrets redacted in the record "
            f"({', '.join(hidden[:3])}): give them with edits (--set PATH=VALUE)"
        )


def _context(target: Any, point: ForkPoint, options: RunOptions) -> tuple[Any, dict[str, Any]]:
    """The run context and ``Runner.run``'s other arguments (see the module's docstring)."""
    from flowdbg.adapters.openai_agents._adapter import run_kwargs
    from flowdbg.timetravel import ForkError

    kwargs = run_kwargs(options)
    given = "context" in kwargs
    context = kwargs.pop("context", None)
    config = point.run.config
    recorded = config.get("context") if isinstance(config, Mapping) else None
    state = point.state if point.node is not None else point.run.initial_state
    if isinstance(state, Mapping) and not _no_mapping(point):
        if given and context != recorded and point.node is None:
            # step 0: paths edit the run's input, so a context of another content is given
            # with the config, as a rerun takes it
            return context, kwargs
        if given and context != recorded:
            raise ForkError(
                f"the run context of a fork after step {point.step} is the state the record "
                "holds (a mapping): edit it (--set PATH=VALUE, edits=) rather than give it in "
                "the config"
            )
        return dict(state), kwargs
    if given:
        return context, kwargs
    held = state.get("context") if isinstance(state, Mapping) else None
    if held is not None:
        raise ForkError(
            f"run {point.run.run_id[:8]} ran with a run context of its own type, which the "
            "record keeps only as JSON: give the context again (config={'context': ...} in "
            "Python; --config '{\"context\": ...}' for JSON data)"
        )
    return None, kwargs


def _run_config(kwargs: dict[str, Any]) -> Any:
    from agents import RunConfig

    config = kwargs.get("run_config")
    return RunConfig(**config) if isinstance(config, Mapping) else config


def prepared(
    target: Any, point: ForkPoint, options: RunOptions | None
) -> tuple[Any, Any, dict[str, Any]]:
    """The agent to run, its input and ``Runner.run``'s keyword arguments."""
    options = RunOptions() if options is None else options
    start = _plan(target, point)
    context, kwargs = _context(target, point, options)
    if start.step is not None and start.step.kind == "handoff":
        source = agent_named(target, start.step.path[-1])
        _check_handoff(source, start.agent, _run_config(kwargs))
    agent = agent_named(target, start.agent)
    if context is not None:
        kwargs["context"] = context
    return agent, point.state if start.items is None else start.items, kwargs


def fork(target: Any, point: ForkPoint, options: RunOptions | None) -> Any:
    """Run the fork in this thread (``Runner.run_sync``) and return its final output."""
    from agents import Runner

    from flowdbg.adapters.openai_agents._adapter import run_sync

    agent, input, kwargs = prepared(target, point, options)
    return run_sync(Runner, agent, input, kwargs).final_output


async def afork(target: Any, point: ForkPoint, options: RunOptions | None) -> Any:
    """The async form of :func:`fork` (``Runner.run``)."""
    from agents import Runner

    agent, input, kwargs = prepared(target, point, options)
    result = await Runner.run(agent, input, **kwargs)
    return result.final_output
