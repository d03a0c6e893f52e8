"""One debugged agent run: the units it reports and where they hold.

The SDK awaits its run hooks inline, so a stop inside a hook holds the run exactly there: the
next model call, tool body or agent waits for it (a stream consumer does not, which is why
flowdbg never stops on stream events). Each unit is reported where the SDK gives both a blocking
place and the data:

- an agent activation (kind ``agent``): ``on_agent_start`` .. ``on_handoff`` / ``on_agent_end``;
- a model turn (kind ``llm``): ``on_llm_start`` (the input items the model receives, editable in
  place) .. ``on_llm_end`` (the planned output);
- a local function tool call (kind ``tool``): a wrapper around ``FunctionTool.on_invoke_tool``,
  which runs in the tool call's own task (so a nested run of an agent used as a tool is a child
  of this unit, and parallel calls hold independently); the real exception of a failing tool
  comes from ``RunConfig.tool_error_formatter``, which the SDK calls with it before it turns it
  into a message for the model;
- a handoff (kind ``handoff``): ``on_handoff``, after the SDK resolved the target and before it
  starts (the target cannot be changed there: an edit of ``to`` is refused).

Each unit's cause is the unit before it on its line, except that a model turn (or a turn's
handoff) follows the tool calls made since the turn before, all of them: it receives their
results, so stepping over any call, a parallel one too, lands on it. Tools write the run
context themselves, so the calls in an agent's frame record the context after them
(``Frame.calls_write_state``).

Only public names of flowdbg are used here (``tests/test_meta.py`` checks it).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import importlib
import json
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from flowdbg.errors import EditRefused, Terminated, refuse_unknown_arguments, validation_details

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger
    from flowdbg.runtime import RunScope, Unit

__all__ = ["ACTIVE", "AgentRun", "make_hooks_class", "wrap_invoke"]

FRAMEWORK = "openai_agents"

#: the debugged run whose code runs in this context (the SDK copies the context into the tasks
#: it creates, so tool bodies and nested runs see the run that started them)
ACTIVE: contextvars.ContextVar[AgentRun | None] = contextvars.ContextVar(
    "flowdbg_openai_agents_run", default=None
)
_UNSET: Any = object()
_T = TypeVar("_T")


class HoldClock:
    """The time the body of a timed tool call spends held at stops of runs nested in it (an
    agent used as a tool, a tool awaiting ``Runner.run``): that time is not the tool's, as the
    tool's own stops are not (see :func:`wrap_invoke`). Stops may come from another thread (a
    nested ``run_sync``), hence the lock."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lock = threading.Lock()
        self.holding = 0
        self.since = 0.0
        self.held = 0.0
        self.wake: asyncio.Future[None] | None = None

    def pause(self) -> None:
        with self.lock:
            if self.holding == 0:
                self.since = time.monotonic()
            self.holding += 1

    def resume(self) -> None:
        with self.lock:
            self.holding -= 1
            if self.holding == 0:
                self.held += time.monotonic() - self.since
            wake = self.wake
        if wake is not None:
            self.loop.call_soon_threadsafe(_wake, wake)

    def used(self) -> tuple[float, bool]:
        """Seconds held so far, and whether a stop holds now."""
        with self.lock:
            return self.held, self.holding > 0


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


#: the clocks of the timed tool calls this code runs inside (innermost last)
CLOCKS: contextvars.ContextVar[tuple[HoldClock, ...]] = contextvars.ContextVar(
    "flowdbg_openai_agents_clocks", default=()
)


def _held(point: Awaitable[_T]) -> Awaitable[_T]:
    """A unit's point to await; a stop there pauses the clocks of the timed tool calls around
    (outside any: the point itself, no coroutine more per point)."""
    clocks = CLOCKS.get()
    if not clocks:
        return point
    return _held_by(point, clocks)


async def _held_by(point: Awaitable[_T], clocks: tuple[HoldClock, ...]) -> _T:
    for clock in clocks:
        clock.pause()
    try:
        return await point
    finally:
        for clock in clocks:
            clock.resume()


def _planned(item: Any) -> Any:
    """A model output item as the model gave it: a function call is copied (its arguments
    may be edited in place later), any other item is itself."""
    if getattr(item, "type", None) == "function_call":
        copy = getattr(item, "model_copy", None)
        if callable(copy):
            return copy()
    return item


def _write_again(unit: Unit, ctx: Any) -> None:
    """Make again the writes a served tool call made to a mapping run context, from the
    state the record keeps after it: a key whose recorded value differs from the live one (as
    the store encodes it) gets the recorded value (plain JSON, as the record keeps it), a key
    the record no longer has is removed. Keys whose recorded value was redacted are left as
    they are."""
    from collections.abc import MutableMapping

    from flowdbg.store import REDACTED, encode_value

    recorded = unit.served_state()
    context = getattr(ctx, "context", None)
    if not isinstance(recorded, Mapping) or not isinstance(context, MutableMapping):
        return
    for key, value in recorded.items():
        if REDACTED in repr(value):
            continue
        live = context.get(key, _UNSET) if isinstance(key, str) else _UNSET
        if live is _UNSET or encode_value(live)[0] != value:
            context[key] = value
    for key in [k for k in context if isinstance(k, str) and k not in recorded]:
        del context[key]


def _json_args(text: str) -> Any:
    """A tool call's JSON arguments as a value (the text itself when it is not JSON)."""
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text


def _schema_problem(schema: Mapping[str, Any], args: Any, tool: str) -> str | None:
    """Why ``args`` do not fit a tool's parameter schema, or ``None``: the top level first
    (unknown, missing and mistyped arguments, named plainly), then the whole schema.

    The SDK checks a function tool's arguments with the pydantic model of its parameters, kept
    in a closure of ``function_tool`` (tool.py, ``_prepare_arguments``) and out of flowdbg's
    reach; a failure there is a ``ModelBehaviorError`` of the tool call. The tool's
    ``params_json_schema`` is that model's JSON schema (nested models under ``$defs``), the one
    the model is held to, so an edit is checked against it with ``jsonschema`` (a dependency
    of the SDK, through ``mcp``, and of the openai-agents extra).
    """
    if not isinstance(args, Mapping):
        return f"tool {tool!r} takes a JSON object of arguments, not {type(args).__name__}"
    props = schema.get("properties") or {}
    if schema.get("additionalProperties") is False or props:
        try:
            refuse_unknown_arguments(f"tool {tool!r}", args, list(props))
        except EditRefused as exc:
            return str(exc)
    missing = [k for k in schema.get("required") or () if k not in args]
    if missing:
        return f"tool {tool!r} needs its argument {missing[0]!r}"
    types: dict[str, type | tuple[type, ...]] = {
        "string": str,
        "integer": int,
        "number": (int, float),
        "boolean": bool,
        "array": list,
        "object": dict,
    }
    for key, value in args.items():
        want = (props.get(key) or {}).get("type")
        if isinstance(want, str) and want in types:
            ok = isinstance(value, types[want]) and not (
                want in ("integer", "number") and isinstance(value, bool)
            )
            if not ok:
                return f"tool {tool!r} argument {key!r} must be of JSON type {want!r}"
    return _nested_problem(schema, args, tool)


def _nested_problem(schema: Mapping[str, Any], args: Any, tool: str) -> str | None:
    # (imported by name: jsonschema has no type stubs, and flowdbg does not need them)
    jsonschema = importlib.import_module("jsonschema")
    validator_class = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
    try:
        error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(args))
    except jsonschema.exceptions.SchemaError:
        # a hand-written FunctionTool's schema jsonschema cannot read: the top-level checks
        # above are all that can be said, and the SDK's own check still comes
        return None
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path)
    if not where:
        return f"tool {tool!r} refuses these arguments: {error.message}"
    return f"tool {tool!r} argument {where!r}: {error.message}"


def _model_name(agent: Any, run_config: Any) -> str:
    """The name a model turn's unit takes: the model the agent runs with."""
    model = getattr(run_config, "model", None) or getattr(agent, "model", None)
    if isinstance(model, str):
        return model
    if model is not None:
        name = getattr(model, "model", None) or getattr(model, "name", None)
        return name if isinstance(name, str) else type(model).__name__
    try:
        from agents.models import get_default_model

        return str(get_default_model())
    except Exception:  # an older SDK without a default model helper
        return "model"


def _handoff_targets(agent: Any) -> list[tuple[str, str]]:
    """``(tool name, target agent name)`` of each handoff ``agent`` offers."""
    from agents import Agent, Handoff

    out = []
    for item in getattr(agent, "handoffs", None) or ():
        if isinstance(item, Handoff):
            out.append((item.tool_name, item.agent_name))
        elif isinstance(item, Agent):
            out.append((Handoff.default_tool_name(item), item.name))
    return out


class AgentRun:
    """The flowdbg side of one ``Runner`` run: its scope and the units open in it."""

    def __init__(
        self,
        debugger: Debugger,
        scope: RunScope,
        *,
        streamed: bool,
        run_config: Any,
    ) -> None:
        self.debugger = debugger
        self.scope = scope
        self.streamed = streamed
        self.run_config = run_config
        self.agent_unit: Unit | None = None
        self.frame: RunScope | None = None
        self.llm_unit: Unit | None = None
        #: the unit the next one follows (stepping walks these links)
        self.last: Unit | None = None
        #: the tool calls made since the last model turn, in the order they started: the next
        #: turn (or the handoff of this one) receives their results
        self.tool_units: list[Unit] = []
        self.agent_name: str | None = None
        self.turn = 0
        #: call ids of this turn's local tool calls when there are several: parallel branches
        self.parallel: frozenset[str] = frozenset()
        #: arguments of this turn's calls by tool name (the handoff's payload is among them)
        self.calls: dict[str, str] = {}
        #: real exceptions of failing tools, by call id (from the tool error formatter)
        self.tool_errors: dict[str, BaseException] = {}
        #: ids of exceptions an error point has shown already
        self.reported: set[int] = set()
        self.final_output: Any = _UNSET
        #: (context, final output) of an agent whose after point waits for its output
        #: guardrails (see agent_ended)
        self.pending_end: tuple[Any, Any] | None = None
        #: the run's context wrapper, as a hook last gave it (an error point has none)
        self.context: Any = None
        #: a streamed run's ``RunResultStreaming``, once ``run_streamed`` returned it
        self.result: Any = None
        #: a rerun with recorded calls: its model turns and tool calls ask the record first
        self.serving = scope.root.calls is not None
        #: the models of this rerun's agents, each wrapped once to be served (see _served.py),
        #: by the agent's and the run config's ids (the wrapper keeps both alive)
        self.models: dict[tuple[int, int], Any] = {}
        #: the model turn that asked the record last, and the answer (see served_turn)
        self.asked: tuple[Unit, bool, Any] | None = None
        #: the provider keeps the conversation (previous_response_id, conversation_id): a
        #: served turn would leave it out of that history, so every turn runs live
        self.server_history = False

    # ------------------------------------------------------------------ views

    def state(self, context: Any = None) -> dict[str, Any]:
        """The run's state as stops show it: the run context the user passed
        (``Runner.run(..., context=...)``), which is the state an agent's tools and hooks read
        and write. A mapping context is shown as a copy of its items taken at the point (the
        values are not copied: the recorder takes them as each unit ends, the run being
        flagged ``values_change_in_place``, see _adapter._begin); any other context as
        ``{"agent": <agent running>, "turn": <as the SDK counts them>, "context": <the
        context>}``."""
        wrapper = self.context if context is None else context
        self.context = wrapper
        ctx = getattr(wrapper, "context", None)
        if isinstance(ctx, Mapping):
            return dict(ctx)
        return {"agent": self.agent_name, "turn": self.turn, "context": ctx}

    def _follows(self) -> Unit | tuple[Unit, ...] | None:
        """The cause of the next model turn or handoff: the tool calls made since the last
        turn (the SDK runs them before it, and the model receives their results; parallel
        calls are several causes, so stepping from any of them lands here), else the unit
        before it."""
        made, self.tool_units = self.tool_units, []
        if not made:
            return self.last
        return made[0] if len(made) == 1 else tuple(made)

    # ------------------------------------------------------------------ agents

    async def agent_started(self, context: Any, agent: Any) -> None:
        if self.agent_unit is not None:  # an activation the SDK left without a hook
            self.agent_unit.discard()
        self.agent_name = agent.name
        unit = self.scope.unit(
            agent.name, kind="agent", cause=self.last, check_edit=_agent_edit(agent)
        )
        self.agent_unit = unit
        self.frame = unit.frame()
        # a tool writes the run context itself (and a handoff's callback, a hook may too): the
        # record of each call keeps the context after it, as its after point shows it
        self.frame.calls_write_state = True
        self.last = unit
        turn_input = getattr(context, "turn_input", None)
        await _held(
            unit.abefore(state=self.state(context), input={"input": list(turn_input or ())})
        )

    async def agent_ended(self, context: Any, agent: Any, output: Any) -> Any:
        unit = self.agent_unit
        if unit is None:
            return output
        guardrails = _output_guardrail_names(agent, self.run_config)
        if guardrails and not self.streamed:
            # The SDK calls on_agent_end with the final output, then checks it with the output
            # guardrails (run.py, AgentRunner.run: run_output_guardrails on
            # turn_result.next_step.output, made before this hook from the same value, so what
            # a hook returns never reaches them) and raises OutputGuardrailTripwireTriggered
            # when one trips. The agent's after point is put off until the run has returned
            # (settle): a tripwire then ends the agent at an error point, like max turns, and
            # the after stop shows an output the guardrails let through. Its edit is refused:
            # it would bypass them. A streamed run's end is seen in a done callback of its task,
            # which cannot hold, and the SDK has no hook after the guardrails
            # (run_loop.py, _finalize_streamed_final_output): there the after point stays
            # here, before them, and a tripwire fails the run only.
            self.pending_end = (context, output)
            unit.check_edit = _guarded_output_edit(guardrails)
            return output
        self.agent_unit = None
        if self.streamed:
            unit.check_edit = _streamed_output_edit
        edited = await _held(unit.aafter(output=output, state=self.state(context)))
        if edited is not output:
            # the edit was checked against the output type (_agent_edit): the caller gets an
            # object of that type, as the SDK would have made it from the model's JSON
            edited = final_output_of(agent, edited)
            self.final_output = edited
        return edited

    # ------------------------------------------------------------------ model turns

    async def llm_started(self, context: Any, agent: Any, instructions: Any, items: Any) -> None:
        self.turn += 1
        frame = self.frame or self.scope
        unit = frame.unit(
            _model_name(agent, self.run_config),
            kind="llm",
            cause=self._follows(),
            check_edit=_llm_edit(instructions, self.turn),
        )
        self.llm_unit = unit
        self.last = unit
        payload = {"turn": self.turn, "instructions": instructions, "input": list(items)}
        edited = await _held(unit.abefore(state=self.state(context), input=payload))
        if edited is not payload and isinstance(items, list):
            # on_llm_start gets the very list the model is called with (run_loop.py,
            # get_new_response: filtered.input): replacing its contents is what the model sees
            items[:] = list(edited.get("input") or ())

    async def llm_ended(self, context: Any, agent: Any, response: Any) -> None:
        from agents import FunctionTool

        output = list(getattr(response, "output", None) or ())
        calls = [item for item in output if getattr(item, "type", None) == "function_call"]
        local = {t.name for t in getattr(agent, "tools", None) or () if isinstance(t, FunctionTool)}
        ids = [c.call_id for c in calls if c.name in local]
        self.parallel = frozenset(ids) if len(ids) > 1 else frozenset()
        self.calls = {c.name: c.arguments for c in calls}
        unit, self.llm_unit = self.llm_unit, None
        if unit is not None:
            # the calls as the model planned them: an edit of a call's arguments at its tool's
            # stop changes the planned call object itself (see call_tool), which the record of
            # this turn (encoded later, by the writer) must not show, nor serve to a rerun
            output = [_planned(item) for item in output]
            usage = getattr(response, "usage", None)
            await _held(
                unit.aafter(output={"output": output, "usage": usage}, state=self.state(context))
            )

    def recorded_model(self, agent: Any, run_config: Any, resolve: Callable[[], Any]) -> Any:
        """The model of ``agent``'s turns in this rerun: one that serves them from the record
        where they match it, and asks the model ``resolve()`` makes otherwise (one per agent
        and config: the SDK keeps the models a run used, to clean them up when it ends)."""
        from flowdbg.adapters.openai_agents._served import recorded_model_class

        key = (id(agent), id(run_config))
        wrapped = self.models.get(key)
        if wrapped is None:
            wrapped = self.models[key] = recorded_model_class()(resolve, self)
        return wrapped

    def served_turn(self) -> tuple[bool, Any]:
        """Whether the record serves the model turn about to be made (the llm unit that
        ``on_llm_start`` opened, with its input as its before point left it), and the recorded
        output if so (asked once per turn: the answer is kept for the turn's call, and for its
        retries, which run live as the turn did when it was not served).

        :raises flowdbg.timetravel.Diverged: in a rerun ``until_divergence``, at the first
            turn that differs from the record (the run then ends at :meth:`failed`, which
            ends this unit ``terminated``).
        """
        unit = self.llm_unit
        if unit is None:
            return False, None
        asked = self.asked
        if asked is not None and asked[0] is unit:  # (the turn's prompt cache key asked first)
            return asked[1], asked[2]
        served, recorded = unit.recorded(unit.record_value("input"), serve=not self.server_history)
        self.asked = (unit, served, recorded)
        return served, recorded

    # ------------------------------------------------------------------ handoffs

    async def handed_off(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        target = to_agent.name
        payload = None
        for tool_name, agent_name in _handoff_targets(from_agent):
            if agent_name == target and tool_name in self.calls:
                payload = _json_args(self.calls[tool_name]) or None
                break
        frame = self.frame or self.scope
        unit = frame.unit(target, kind="handoff", cause=self._follows(), check_edit=_handoff_edit)
        self.last = unit
        value = {"to": target, "payload": payload}
        await _held(unit.abefore(state=self.state(context), input=value))
        await _held(unit.aafter(output=value, state=self.state(context), decision=target))
        agent_unit, self.agent_unit = self.agent_unit, None
        if agent_unit is not None:
            agent_unit.check_edit = _handoff_agent_edit
            await _held(
                agent_unit.aafter(
                    output={"handoff": target}, state=self.state(context), decision=target
                )
            )

    # ------------------------------------------------------------------ tools

    def tool_failed(self, call_id: Any, error: BaseException) -> None:
        if isinstance(call_id, str):
            self.tool_errors[call_id] = error

    async def call_tool(self, tool: Any, invoke: Callable[..., Any], ctx: Any, args: str) -> Any:
        call_id = getattr(ctx, "tool_call_id", None)
        frame = self.frame or self.scope
        unit = frame.unit(
            tool.name,
            kind="tool",
            branch=call_id if call_id in self.parallel else None,
            cause=self.last,
            check_edit=_tool_edit(tool),
        )
        self.tool_units.append(unit)
        value = _json_args(args)
        edited = await _held(unit.abefore(state=self.state(ctx), input=value))
        if edited is not value:
            args = json.dumps(edited)
            call = getattr(ctx, "tool_call", None)
            if call is not None:
                # the ToolCallItem of the history holds this very object: the edit shows there
                call.arguments = args
        try:
            served = False
            if self.serving:
                # a rerun with recorded calls: the recorded result of the same call, without
                # running the tool (asked here, inside the call's handling, so that a rerun
                # ending at its first divergence ends this unit, not leaves it running)
                served, result = unit.recorded(unit.record_value("input"))
                if served:
                    _write_again(unit, ctx)
            if not served:
                result = await invoke(ctx, args)
        except Exception as exc:
            self.reported.add(id(exc))
            await _held(unit.aerror(exc, state=self.state(ctx)))
            raise
        except BaseException as exc:  # flowdbg.Terminated, a cancellation
            raised = unit.discard(exc)
            if raised is exc or raised is None:
                raise
            raise raised from exc
        error = self.tool_errors.pop(call_id, None) if isinstance(call_id, str) else None
        if error is not None:
            # the SDK turned the exception into a message for the model: the error point shows
            # the exception itself, and the run goes on with the message, as it would
            self.reported.add(id(error))
            await _held(unit.aerror(error, state=self.state(ctx)))
            return result
        return await _held(unit.aafter(output=result, state=self.state(ctx)))

    # ------------------------------------------------------------------ the end

    async def failed(self, exc: BaseException) -> BaseException:
        """The run raised ``exc``: an error point at the unit it left (a model call that
        failed, else the agent), then the run ends. Returns what the caller gets."""
        raised = self.scope.converted(exc)
        if raised is exc and isinstance(exc, Exception):
            seen = id(exc) in self.reported or id(exc.__cause__) in self.reported
            llm, self.llm_unit = self.llm_unit, None
            agent, self.agent_unit = self.agent_unit, None
            try:
                if llm is not None:
                    if seen:
                        llm.discard(exc)
                    else:
                        seen = True
                        await _held(llm.aerror(exc, state=self.state()))
                if agent is not None:
                    if seen:
                        agent.discard(exc)
                    else:
                        await _held(agent.aerror(exc, state=self.state()))
            except BaseException as other:  # terminated at the error stop
                raised = self.scope.converted(other)
                self.scope.end(error=raised)
                return raised
        else:
            for unit in (self.llm_unit, self.agent_unit):
                if unit is not None:
                    unit.discard(raised)
            stopped = None if raised is not exc else self.scope.stopped_by_caller(exc)
            if stopped is not None:  # a run nested in a streamed run its consumer cancelled
                self.scope.end(error=stopped)
                return raised
        self.scope.end(error=raised)
        return raised

    async def settle(self) -> None:
        """The run returned: the after point of an agent whose output guardrails have passed
        (put off by :meth:`agent_ended`)."""
        pending, self.pending_end = self.pending_end, None
        unit = self.agent_unit
        if pending is None or unit is None:
            return
        self.agent_unit = None
        context, output = pending
        await _held(unit.aafter(output=output, state=self.state(context)))

    def finished(self, result: Any) -> Any:
        """The run returned ``result``: an agent waiting on a tool approval leaves the run
        ``suspended`` (resuming it is a run of its own); an edited final output is applied."""
        if self.final_output is not _UNSET and not self.streamed:
            result.final_output = self.final_output
        suspended = bool(getattr(result, "interruptions", None))
        for unit in (self.llm_unit, self.agent_unit):
            if unit is not None:
                unit.discard(status="suspended" if suspended else "failed")
        self.scope.end(output=getattr(result, "final_output", None), suspended=suspended)
        return result

    def cancelled(self, exc: BaseException | None) -> BaseException | None:
        """What a streamed run its consumer cancelled (``result.cancel()``) ends with, as
        ``exc`` (a cancellation, or ``None`` when the run loop stopped on its own) leaves the
        run or one of its units; ``None`` when it is no such cancellation.

        ``RunResultStreaming.cancel(mode)`` notes the mode on the result (result.py,
        ``_cancel_mode``), then, ``"immediate"`` (the default), cancels the run-loop task and
        the tool calls in it; ``"after_turn"`` lets the turn finish and the loop return with no
        final output (run_loop.py, ``start_streaming``). Either way the consumer's
        ``stream_events()`` just ends: the run stopped on purpose, which the store calls
        ``terminated``, with a :class:`flowdbg.Terminated` saying who stopped it and how (it is
        recorded, never raised: the SDK goes on with its own cancellation). A cancellation by
        the debugger (``terminate()``) keeps its own outcome. It is the run's
        :attr:`flowdbg.runtime.RunScope.cancelled_by_caller`, so that the units the
        cancellation goes through (a tool call, one held at a stop) end ``terminated`` too."""
        result = self.result
        mode = getattr(result, "_cancel_mode", None)
        if mode not in ("immediate", "after_turn") or self.scope.root.terminated:
            return None
        if exc is not None and not isinstance(exc, asyncio.CancelledError):
            return None
        if exc is None and (
            getattr(result, "final_output", None) is not None
            or getattr(result, "interruptions", None)
        ):
            return None  # the run had finished when the consumer cancelled it
        return Terminated(
            f"the run was cancelled by the consumer of its stream (result.cancel(mode={mode!r}))"
        )

    def abandoned(self, exc: BaseException | None, result: Any) -> None:
        """A streamed run's task ended (the consumer may never have read the stream): the run
        fails with what the consumer's ``stream_events()`` raises, which is not always the
        task's own exception (see :func:`streamed_error`), and ends ``terminated`` when the
        consumer cancelled it (see :meth:`cancelled`)."""
        consumer = streamed_error(result)
        if consumer is not None:
            exc = consumer
        stopped = None if consumer is not None else self.cancelled(exc)
        if stopped is not None:
            for unit in (self.llm_unit, self.agent_unit):
                if unit is not None:
                    unit.discard(stopped)
            self.llm_unit = self.agent_unit = None
            self.scope.end(error=stopped)
        elif exc is not None:
            raised = self.scope.converted(exc)
            for unit in (self.llm_unit, self.agent_unit):
                if unit is not None:
                    unit.discard(raised)
            self.scope.end(error=raised)
        else:
            self.finished(result)


def streamed_error(result: Any) -> BaseException | None:
    """The exception the consumer of a streamed run whose task has ended gets from
    ``stream_events()``, or ``None`` when it gets none other than the task's own.

    In a streamed run the SDK's run-loop task can end normally and still fail the run for its
    consumer: ``RunResultStreaming.stream_events`` calls ``_check_errors`` (result.py), which
    raises a ``MaxTurnsExceeded`` it makes itself when ``current_turn`` passed ``max_turns``
    unhandled (start_streaming only puts the end sentinel on the queue and breaks), an
    ``InputGuardrailTripwireTriggered`` for a tripping result it takes off the input guardrail
    queue, the input guardrail task's own exception, or ``_stored_exception``, which the run loop
    sets instead of raising (a cancelled session write, a tool failure whose task was
    cancelled). ``_check_errors`` is not called here: it drains the guardrail queue and stores
    its exception on the result, which would change what the consumer gets. The same tests
    are made on what it reads, in its order (each later finding replaces the one before, as
    there). When the consumer has not made its ``MaxTurnsExceeded`` or tripwire exception yet,
    the run records an equal one of its own; once it has, ``_stored_exception`` holds it (and
    ``_max_turns_handled`` is set), and the run records that very object.
    """
    if result is None:
        return None
    from agents.exceptions import InputGuardrailTripwireTriggered, MaxTurnsExceeded

    found: BaseException | None = getattr(result, "_stored_exception", None)
    max_turns = getattr(result, "max_turns", None)
    turn = getattr(result, "current_turn", 0)
    if (
        isinstance(max_turns, int)
        and isinstance(turn, int)
        and turn > max_turns
        and not getattr(result, "_max_turns_handled", False)
    ):
        found = MaxTurnsExceeded(f"Max turns ({max_turns}) exceeded")
    tool_error_selected = getattr(result, "_tool_error_selected", False)
    if not tool_error_selected and not isinstance(found, InputGuardrailTripwireTriggered):
        # the queue holds what input_guardrail_results holds (guardrails.py,
        # run_input_guardrails_with_queue publishes each result to both)
        for guardrail in getattr(result, "input_guardrail_results", None) or ():
            if guardrail.output.tripwire_triggered:
                found = InputGuardrailTripwireTriggered(guardrail)
                break
    task = getattr(result, "run_loop_task", None)
    if task is not None and task.done() and not task.cancelled():
        found = task.exception() or found
    guard = getattr(result, "_input_guardrails_task", None)
    if not tool_error_selected and guard is not None and guard.done() and not guard.cancelled():
        guard_exc = guard.exception()
        if isinstance(guard_exc, Exception):
            found = guard_exc
    return found


# ---------------------------------------------------------------------- edit rules


def _agent_edit(agent: Any) -> Callable[[Unit, str, Any], None]:
    def check(unit: Unit, what: str, payload: Any) -> None:
        if what == "input":
            raise EditRefused(
                f"agent {unit.node!r} receives the conversation the SDK built, which a hook "
                "cannot replace; edit the model input at its llm stop instead (a breakpoint "
                "before the model calls: b llm:* at the prompt, break_before('*', kind='llm') "
                "in Python)"
            )
        final_output_of(agent, payload)

    return check


def final_output_of(agent: Any, payload: Any) -> Any:
    """``payload`` as the final output of ``agent``: what the SDK makes of a model answer that
    is ``payload`` as JSON, checked against the agent's ``output_type``.

    The SDK takes a final output through the agent's output schema
    (turn_preparation.get_output_schema: none for ``str`` or no output type, the agent's own
    ``AgentOutputSchemaBase``, else ``AgentOutputSchema(output_type)``), whose
    ``validate_json`` validates the model's text with a pydantic ``TypeAdapter``, strict when the
    schema is (agent_output.py, util/_json.py). For an ``AgentOutputSchema`` the same
    validation is made here with a ``TypeAdapter`` of the output type itself (its
    ``validate_json`` would also mark the current trace span as failed for a refused edit);
    a schema of the user's own is asked through its ``validate_json``.

    :raises EditRefused: the payload is not a value of the output type, with the reason.
    """
    from agents import AgentOutputSchema, AgentOutputSchemaBase
    from pydantic import TypeAdapter
    from pydantic_core import to_json

    output_type = getattr(agent, "output_type", None)
    if output_type is None or output_type is str:
        if not isinstance(payload, str):
            raise EditRefused(
                f"agent {agent.name!r} answers in plain text (it has no output_type): its final "
                f"output must be a string, not {type(payload).__name__}"
            )
        return payload
    try:
        text = to_json(payload).decode()
    except Exception as exc:
        raise EditRefused(
            f"the final output of agent {agent.name!r} must be JSON data of its output type: {exc}"
        ) from exc
    if isinstance(output_type, AgentOutputSchemaBase) and not isinstance(
        output_type, AgentOutputSchema
    ):
        try:
            return output_type.validate_json(text)
        except Exception as exc:
            raise EditRefused(
                f"the output schema {output_type.name()} of agent {agent.name!r} refuses the "
                f"edit: {exc}"
            ) from exc
    schema = output_type if isinstance(output_type, AgentOutputSchema) else None
    wanted = schema.output_type if schema is not None else output_type
    strict = schema.is_strict_json_schema() if schema is not None else True
    try:
        return TypeAdapter(wanted).validate_json(text, strict=True if strict else None)
    except Exception as exc:
        name = getattr(wanted, "__name__", None) or str(wanted)
        raise EditRefused(
            f"the final output of agent {agent.name!r} must fit its output_type {name}, "
            f"which refuses the edit: {validation_details(exc)}"
        ) from exc


def _streamed_output_edit(unit: Unit, what: str, payload: Any) -> None:
    if what == "output":
        raise EditRefused(
            f"the final output of agent {unit.node!r} in a streamed run has already been "
            "streamed to the consumer; edit it in a run started with Runner.run or run_sync"
        )


def _output_guardrail_names(agent: Any, run_config: Any) -> list[str]:
    """Names of the output guardrails the SDK runs on ``agent``'s final output (the agent's
    own and the run config's, as run.py adds them)."""
    guardrails = [
        *(getattr(agent, "output_guardrails", None) or ()),
        *(getattr(run_config, "output_guardrails", None) or ()),
    ]
    names = []
    for guardrail in guardrails:
        get_name = getattr(guardrail, "get_name", None)
        names.append(str(get_name()) if callable(get_name) else type(guardrail).__name__)
    return names


def _guarded_output_edit(guardrails: list[str]) -> Callable[[Unit, str, Any], None]:
    def check(unit: Unit, what: str, payload: Any) -> None:
        if what == "output":
            raise EditRefused(
                f"the final output of agent {unit.node!r} has passed its output guardrails "
                f"({', '.join(guardrails)}), which the SDK runs on the model's output after "
                "every hook: an edited output would bypass them; change what the model answers "
                "instead (the input at the llm stop)"
            )

    return check


def _handoff_agent_edit(unit: Unit, what: str, payload: Any) -> None:
    if what == "output":
        raise EditRefused(
            f"agent {unit.node!r} ended with a handoff the SDK has resolved; its output is not "
            "a value the run uses"
        )


def _handoff_edit(unit: Unit, what: str, payload: Any) -> None:
    raise EditRefused(
        f"the SDK calls its handoff hooks after it resolved the handoff to {unit.node!r} and ran "
        "the handoff's own on_handoff callback: neither the target nor the payload can change "
        "there; edit the planned handoff call in the model output instead"
    )


def _llm_edit(instructions: Any, turn: int) -> Callable[[Unit, str, Any], None]:
    def check(unit: Unit, what: str, payload: Any) -> None:
        if what == "output":
            raise EditRefused(
                f"the SDK rejects a changed response of model turn {unit.node!r} (tool call ids "
                "are checked against it); edit the tool arguments at the tool's stop instead"
            )
        if not isinstance(payload, Mapping) or not isinstance(payload.get("input"), list):
            raise EditRefused("a model turn's input must stay a mapping with an 'input' list")
        if payload.get("instructions") != instructions:
            raise EditRefused(
                "the SDK hands run hooks the instructions as a string it has already fixed; "
                "set them on the agent, or in RunConfig(call_model_input_filter=...)"
            )
        if payload.get("turn") != turn:
            raise EditRefused(
                f"'turn' is the SDK's turn number ({turn}), which it counts itself: not an input"
            )
        extra = [key for key in payload if key not in ("turn", "instructions", "input")]
        if extra:
            raise EditRefused(
                f"a model turn's input has no {extra[0]!r}: the model receives the 'input' items "
                "(edit them, e.g. input[-1].content) and the agent's instructions"
            )

    return check


def _tool_edit(tool: Any) -> Callable[[Unit, str, Any], None]:
    def check(unit: Unit, what: str, payload: Any) -> None:
        if what != "input":
            return
        if getattr(tool, "needs_approval", False):
            raise EditRefused(
                f"tool {tool.name!r} needs approval: the SDK checks the approved arguments "
                "against the call and would reject edited ones"
            )
        problem = _schema_problem(
            getattr(tool, "params_json_schema", None) or {}, payload, tool.name
        )
        if problem is not None:
            raise EditRefused(problem)

    return check


# ---------------------------------------------------------------------- SDK objects


def wrap_invoke(tool: Any, original: Callable[..., Any], timed: Any) -> Callable[..., Any]:
    """The ``on_invoke_tool`` of an attached tool: a tool unit when a debugged run calls it.

    :param timed: a copy of the tool with its own ``timeout_seconds``, when it has one: the
        timeout then applies to the tool body only (through the SDK's own
        ``invoke_function_tool``), never to the time a stop holds it.
    """

    async def invoke(ctx: Any, args: str) -> Any:
        run = ACTIVE.get()
        if timed is not None:

            def call(c: Any, a: str) -> Any:
                return _timed_call(timed, original, c, a)
        else:
            call = original
        if run is None or run.scope.root.released:  # (detached or uninstalled meanwhile)
            return await call(ctx, args)
        return await run.call_tool(tool, call, ctx, args)

    # The SDK reads the invoker's signature (inspect.signature, which follows __wrapped__) and
    # its type hints (typing.get_type_hints, which reads the wrapper's own __annotations__ and
    # resolves them in the unwrapped function's globals) at every call to choose the context it
    # passes (tool.py, _get_function_tool_invoke_context): the wrapper carries the original's
    # annotations, or none for an invoker without any (the SDK's own is a callable object, whose
    # hints cannot be read): the same choice as without flowdbg, and no annotation of this
    # module compiled at each call.
    functools.update_wrapper(invoke, original, assigned=("__doc__",), updated=())
    invoke.__annotations__ = dict(getattr(original, "__annotations__", None) or {})
    invoke.__wrapped__ = original  # type: ignore[attr-defined]
    return invoke


async def _timed_call(timed: Any, original: Callable[..., Any], ctx: Any, args: str) -> Any:
    """Run a tool's body under the SDK's own timeout (``invoke_function_tool`` on ``timed``, a
    copy of the tool keeping its ``timeout_seconds``), less the time stops of runs nested in the
    body held it.

    The SDK times the body with ``asyncio.wait_for(task, timeout_seconds)``
    (tool.py, ``_invoke_function_tool_with_metadata``), which cannot be paused: at its end it
    cancels the task and, if the task still returns a value, returns it (3.11's ``wait_for``
    returns ``fut.result()`` after cancelling; 3.12's ``timeout()`` raises only when the
    awaited task raised the cancellation). So the body runs in a task of its own, under a
    stand-in the SDK times: when the SDK's time runs out after nested stops held the body, the
    stand-in waits on for the time they held, then returns the body's value, or cancels the
    body and lets the cancellation through, upon which the SDK makes its own timeout outcome
    (message, ``timeout_error_function`` or ``ToolTimeoutError``). A cancellation that comes
    before the tool's time is up, or when nothing was held, goes through at once.
    """
    from agents import tool as sdk_tool

    limit = float(timed.timeout_seconds)
    clock = HoldClock(asyncio.get_running_loop())
    start = time.monotonic()
    # the context the SDK would give the body of ``timed`` (its invoker's signature decides:
    # tool.py, _get_function_tool_invoke_context); the stand-in takes any and passes this one
    choose = getattr(sdk_tool, "_get_function_tool_invoke_context", None)
    body_ctx = choose(timed, ctx) if callable(choose) else ctx

    async def stand_in(ctx: Any, args: str) -> Any:
        token = CLOCKS.set((*CLOCKS.get(), clock))
        try:
            body = asyncio.ensure_future(original(body_ctx, args))
        finally:
            CLOCKS.reset(token)
        return await _outlast(body, clock, start, limit)

    clocked = dataclasses.replace(timed, on_invoke_tool=stand_in)
    return await sdk_tool.invoke_function_tool(function_tool=clocked, context=ctx, arguments=args)


async def _outlast(body: asyncio.Future[Any], clock: HoldClock, start: float, limit: float) -> Any:
    """``body``'s value; see :func:`_timed_call` for the SDK's timeout cancelling this."""
    try:
        await asyncio.wait({body})
    except asyncio.CancelledError:
        held, holding = clock.used()
        if not (held or holding) or time.monotonic() - start < limit:
            body.cancel()
            await asyncio.wait({body})
            raise
        task = asyncio.current_task()
        uncancel = getattr(task, "uncancel", None)  # Python 3.11+
        if uncancel is not None:
            uncancel()
        try:
            while not body.done():
                loop = asyncio.get_running_loop()
                wake: asyncio.Future[None] = loop.create_future()
                clock.wake = wake
                held, holding = clock.used()
                wait: float | None = None
                if not holding:
                    wait = start + limit + held - time.monotonic()
                    if wait <= 0:
                        break
                await asyncio.wait({body, wake}, timeout=wait, return_when="FIRST_COMPLETED")
        except asyncio.CancelledError:  # cancelled again: not by the SDK's timeout
            pass
        finally:
            clock.wake = None
        if not body.done():
            body.cancel()
            await asyncio.wait({body})
            raise asyncio.CancelledError from None
    return body.result()


def compose_run_config(run_config: Any, run: AgentRun) -> Any:
    """``run_config`` with a tool error formatter that tells ``run`` the real exception, then
    asks the user's own formatter (if any) for the message, as the SDK would."""
    from agents import RunConfig

    if run_config is None:
        run_config = RunConfig()
    elif isinstance(run_config, Mapping):
        run_config = RunConfig(**run_config)
    user = run_config.tool_error_formatter

    def formatter(args: Any) -> Any:
        run.tool_failed(getattr(args, "call_id", None), args.error)
        return None if user is None else user(args)

    return dataclasses.replace(run_config, tool_error_formatter=formatter)


def make_hooks_class() -> type:
    """The ``RunHooks`` subclass flowdbg passes to a debugged run (built on first use: the SDK
    is imported lazily). Each hook reports to the run, then calls the user's own hook."""
    from agents import RunHooks

    class DebugHooks(RunHooks):
        def __init__(self, run: AgentRun, user: Any) -> None:
            self.flowdbg_run = run
            self.user = user

        async def on_agent_start(self, context: Any, agent: Any) -> None:
            await self.flowdbg_run.agent_started(context, agent)
            if self.user is not None:
                await self.user.on_agent_start(context, agent)

        async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
            output = await self.flowdbg_run.agent_ended(context, agent, output)
            if self.user is not None:
                await self.user.on_agent_end(context, agent, output)

        async def on_llm_start(
            self, context: Any, agent: Any, system_prompt: Any, input_items: Any
        ) -> None:
            await self.flowdbg_run.llm_started(context, agent, system_prompt, input_items)
            if self.user is not None:
                await self.user.on_llm_start(context, agent, system_prompt, input_items)

        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            await self.flowdbg_run.llm_ended(context, agent, response)
            if self.user is not None:
                await self.user.on_llm_end(context, agent, response)

        # the SDK calls on_handoff with keyword arguments (turn_resolution.py)
        async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
            await self.flowdbg_run.handed_off(context, from_agent, to_agent)
            if self.user is not None:
                await self.user.on_handoff(
                    context=context, from_agent=from_agent, to_agent=to_agent
                )

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            if self.user is not None:
                await self.user.on_tool_start(context, agent, tool)

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            if self.user is not None:
                await self.user.on_tool_end(context, agent, tool, result)

    return DebugHooks
