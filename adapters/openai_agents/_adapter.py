"""The OpenAI Agents SDK adapter class (imports nothing of the SDK until an agent is attached).

Runs start from the SDK's static entry points (``Runner.run(agent, ...)``, ``run_sync``,
``run_streamed``), so attaching an agent does two things:

- it patches ``AgentRunner.run`` and ``AgentRunner.run_streamed`` (through
  :mod:`flowdbg.patching`, shared and counted; ``Runner.run``/``run_sync``/``run_streamed``
  delegate to them), so that a run starting at an attached agent passes flowdbg's run hooks and
  tool error formatter along with the user's own; a run of any other agent goes through
  untouched;
- it wraps ``on_invoke_tool`` of the local function tools of the agent, of the agents it hands
  off to and of the agents it uses as tools (``Agent.as_tool``), so that their calls are units.

``Debugger.install`` patches the runner only: a run it debugs wraps the tools of the agents it
reaches when it starts, and puts them back when it ends.

Detach puts every wrapped attribute back and lets go of the patches.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from flowdbg.adapter import Adapter, Capability, Demo, RunOptions
from flowdbg.errors import AdapterError, RunOptionError
from flowdbg.patching import LOCK, Patch, patch, unpatch

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.store import Store
    from flowdbg.timetravel import ForkPoint

__all__ = ["OpenAIAgentsAdapter"]

log = logging.getLogger("flowdbg.adapters.openai_agents")


def _is_agent(target: Any) -> bool:
    """Whether ``target`` is an ``agents.Agent``, judged by class names only."""
    return any(
        cls.__name__ == "Agent" and cls.__module__.partition(".")[0] == "agents"
        for cls in type(target).__mro__
    )


class _Tool:
    """A function tool whose ``on_invoke_tool`` flowdbg wrapped (shared by the attached agents
    that use it: restored when the last lets go)."""

    def __init__(self, tool: Any, original: Any, timeout: Any) -> None:
        self.tool = tool
        self.original = original
        self.timeout = timeout
        self.replacement: Any = None
        self.refs = 0


class _Attached:
    """An attached agent: its debugger, the agents it reaches, the tools it wrapped."""

    def __init__(self, agent: Any, debugger: Debugger) -> None:
        self.agent = agent
        self.debugger = debugger
        self.agents: list[Any] = []
        self.tools: list[_Tool] = []
        self.patches: list[Patch] = []


#: attached agents by id; and every agent reached from one, by id, with the attachments
_ROOTS: dict[int, _Attached] = {}
_REACHED: dict[int, list[_Attached]] = {}
_TOOLS: dict[int, _Tool] = {}
#: debuggers that instrumented the runner library-wide (Debugger.install), with their patches
_INSTALLED: dict[int, tuple[Debugger, list[Patch]]] = {}
_HOOKS: list[type] = []


def _hooks_class() -> type:
    if not _HOOKS:
        from flowdbg.adapters.openai_agents._runtime import make_hooks_class

        _HOOKS.append(make_hooks_class())
    return _HOOKS[0]


def reached_agents(agent: Any) -> list[Any]:
    """``agent`` and every agent it reaches through handoffs and agents used as tools."""
    from agents import Agent, FunctionTool, Handoff

    seen: dict[int, Any] = {}
    todo = [agent]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen[id(current)] = current
        for item in getattr(current, "handoffs", None) or ():
            if isinstance(item, Agent):
                todo.append(item)
            elif isinstance(item, Handoff):
                ref = getattr(item, "_agent_ref", None)  # handoff(agent) keeps a weak reference
                target = ref() if callable(ref) else None
                if target is not None:
                    todo.append(target)
        for tool in getattr(current, "tools", None) or ():
            inner = (
                getattr(tool, "_agent_instance", None) if isinstance(tool, FunctionTool) else None
            )
            if inner is not None:  # Agent.as_tool() keeps the agent it runs
                todo.append(inner)
    return list(seen.values())


def _wrap_tool(tool: Any) -> _Tool:
    from flowdbg.adapters.openai_agents._runtime import wrap_invoke

    held = _TOOLS.get(id(tool))
    if held is None:
        timeout = getattr(tool, "timeout_seconds", None)
        timed = None
        if timeout is not None:
            # a copy keeping the tool's own invoker and timeout: the wrapper runs the body
            # through it, so that the time a stop holds the call is not the tool's
            timed = dataclasses.replace(tool)
        held = _Tool(tool, tool.on_invoke_tool, timeout)
        held.replacement = wrap_invoke(tool, held.original, timed)
        tool.on_invoke_tool = held.replacement
        if timeout is not None:
            tool.timeout_seconds = None
        _TOOLS[id(tool)] = held
    held.refs += 1
    return held


def _unwrap_tool(held: _Tool) -> None:
    held.refs -= 1
    if held.refs > 0:
        return
    _TOOLS.pop(id(held.tool), None)
    tool = held.tool
    if tool.on_invoke_tool is held.replacement:
        tool.on_invoke_tool = held.original
        if held.timeout is not None:
            tool.timeout_seconds = held.timeout
    else:
        log.warning(
            "on_invoke_tool of tool %r was replaced after flowdbg wrapped it; flowdbg leaves it "
            "as it is",
            tool.name,
        )


def _lookup(agent: Any) -> tuple[Debugger, Any, bool] | None:
    """The debugger a run starting at ``agent`` reports to, the attached target it runs, and
    whether the agent is attached (its tools are wrapped already; otherwise the run wraps
    them for its own duration, see :func:`_wrap_run_tools`)."""
    from flowdbg.adapters.openai_agents._runtime import ACTIVE

    attached = _REACHED.get(id(agent))
    if attached:
        return attached[0].debugger, attached[0].agent, True
    active = ACTIVE.get()
    if active is not None and not active.scope.root.released:
        # an agent built on the fly and run inside a debugged run (a tool running an agent)
        return active.debugger, active.scope.target, False
    for debugger, _ in _INSTALLED.values():
        return debugger, None, False
    return None


def _wrap_run_tools(agent: Any, attached: bool) -> list[_Tool]:
    """Wrap the function tools of the agents a run of an agent that is not attached reaches
    (an installed debugger's run, or a run nested in a debugged one): the agents are only
    known when the run starts. Shared with attachments and concurrent runs through the
    tools' counts; :func:`_unwrap_run_tools` lets go when the run ends. An uninstall (or a
    detach) while the run goes on releases it (``Debugger.uninstall``): the wrappers then
    pass its calls straight through until it ends and they are put back."""
    if attached:
        return []
    from agents import FunctionTool

    with LOCK:
        return [
            _wrap_tool(tool)
            for reached in reached_agents(agent)
            for tool in getattr(reached, "tools", None) or ()
            if isinstance(tool, FunctionTool)
        ]


def _unwrap_run_tools(held: list[_Tool]) -> None:
    if held:
        with LOCK:
            for tool in held:
                _unwrap_tool(tool)


def _thread_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop set for this thread, if any (without making one)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return None


def _run_input(input: Any) -> Any:
    from agents import RunState

    if isinstance(input, RunState):
        return {"resume": "RunState"}
    return input


def _begin(
    debugger: Debugger,
    target: Any,
    agent: Any,
    input: Any,
    kwargs: dict[str, Any],
    *,
    streamed: bool,
) -> Any:
    from flowdbg.adapters.openai_agents._runtime import FRAMEWORK, AgentRun, compose_run_config

    shown = _run_input(input)
    scope = debugger.begin_run(framework=FRAMEWORK, name=agent.name, input=shown, target=target)
    if kwargs.get("context") is not None or shown is not input:
        # The state shows the run context, which the user's tools change in place: record
        # each unit as it ended. (A resumed RunState carries its context. Without a context
        # the state is the agent's name and turn, which nothing changes.)
        scope.values_change_in_place = True
    run = AgentRun(debugger, scope, streamed=streamed, run_config=kwargs.get("run_config"))
    run.server_history = any(
        kwargs.get(key)
        for key in ("previous_response_id", "auto_previous_response_id", "conversation_id")
    )
    scope.cannot_rewind = _why_not_rewound(
        input, kwargs, streamed=streamed, server=run.server_history
    )
    if target is None and scope.cannot_rewind is None:
        # a run the installed runner reports (dbg.install): the core finds the agents a
        # rewind goes on with from the run's attached target, which it has not
        scope.cannot_rewind = (
            f"agent {agent.name!r} is not attached (the run was reported by the installed "
            "runner): attach it (dbg.attach) to rewind its runs, or fork this one once it has "
            "ended"
        )
    try:
        kwargs["hooks"] = _hooks_class()(run, kwargs.get("hooks"))
        kwargs["run_config"] = run.run_config = compose_run_config(kwargs.get("run_config"), run)
    except BaseException as exc:
        scope.end(error=exc)
        raise
    return run


def _why_not_rewound(
    input: Any, kwargs: dict[str, Any], *, streamed: bool, server: bool
) -> str | None:
    """Why a run the caller starts so cannot be rewound at a stop (``RunScope.cannot_rewind``),
    or ``None``: a rewound run goes on as a fork of its record (_go_on), in the caller's own
    ``Runner.run`` call, with the caller's arguments."""
    if streamed:
        return (
            "a streamed run (Runner.run_streamed) hands its caller a result the SDK fills as the "
            "run goes on, which a new run cannot take over; fork it once it has ended (flowdbg "
            "runs fork RUN --step N), or run it with Runner.run to rewind it"
        )
    if server:
        return (
            "its conversation is kept by the model provider (previous_response_id, "
            "conversation_id), which a rewind cannot take back; fork it once it has ended"
        )
    if _run_input(input) is not input:
        return "it resumes a RunState (a tool approval): rewind the run it resumes instead"
    context = kwargs.get("context")
    if context is not None and not isinstance(context, MutableMapping):
        return (
            f"its run context is a {type(context).__name__}, which the record keeps only as "
            "JSON, so the state after an earlier step cannot be given back to it; fork it once "
            "it has ended, giving the context again"
        )
    return None


def _make_run(original: Any) -> Any:
    """``AgentRunner.run`` reporting runs of attached agents (``run_sync`` calls it too)."""
    from flowdbg.adapters.openai_agents._runtime import ACTIVE

    async def run(self: Any, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        found = _lookup(starting_agent)
        if found is None:
            return await original(self, starting_agent, input, **kwargs)
        debugger, target, attached = found
        given = dict(kwargs)  # the caller's own arguments (a rewind's run goes on with them)
        agent_run = _begin(debugger, target, starting_agent, input, kwargs, streamed=False)
        tools: list[_Tool] = []
        token = ACTIVE.set(agent_run)
        rewound = None
        try:
            try:
                tools = _wrap_run_tools(starting_agent, attached)
                result = await original(self, starting_agent, input, **kwargs)
                await agent_run.settle()
            except BaseException as exc:
                raised = await agent_run.failed(exc)
                rewound = _rewound(raised, agent_run.scope)
                if rewound is None:
                    if raised is exc:
                        raise
                    raise raised from exc
            else:
                return agent_run.finished(result)
        finally:
            ACTIVE.reset(token)
            _unwrap_run_tools(tools)
        # rewound at a stop: the run goes on from the step it went back to, in this call
        with rewound.lineage():
            agent, start, again = _rewind_start(target, rewound.point, given)
            return await run(self, agent, start, **again)

    run.__wrapped__ = original  # type: ignore[attr-defined]
    return run


def _make_run_streamed(original: Any) -> Any:
    """``AgentRunner.run_streamed`` reporting streamed runs of attached agents."""
    from flowdbg.adapters.openai_agents._runtime import ACTIVE

    def run_streamed(self: Any, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        found = _lookup(starting_agent)
        if found is None:
            return original(self, starting_agent, input, **kwargs)
        debugger, target, attached = found
        agent_run = _begin(debugger, target, starting_agent, input, kwargs, streamed=True)
        tools: list[_Tool] = []
        # the SDK starts the run loop as a task inside run_streamed: it copies this context
        token = ACTIVE.set(agent_run)
        try:
            tools = _wrap_run_tools(starting_agent, attached)
            result = original(self, starting_agent, input, **kwargs)
        except BaseException as exc:
            _unwrap_run_tools(tools)
            agent_run.abandoned(exc, None)
            raise
        finally:
            ACTIVE.reset(token)
        agent_run.result = result
        # also for a run nested in a unit (a tool consuming a streamed run of its own): its
        # consumer's cancel() ends the units it goes through terminated, as at the top level
        agent_run.scope.cancelled_by_caller = agent_run.cancelled
        task = getattr(result, "run_loop_task", None)
        if task is None:  # an SDK without the public task: the run ends with the stream
            _unwrap_run_tools(tools)
            agent_run.scope.end()
            return result

        def done(task: asyncio.Task[Any]) -> None:
            _unwrap_run_tools(tools)
            exc = None if task.cancelled() else task.exception()
            if task.cancelled():
                exc = asyncio.CancelledError()
            agent_run.abandoned(exc, result)

        task.add_done_callback(done)
        return result

    run_streamed.__wrapped__ = original  # type: ignore[attr-defined]
    return run_streamed


def _rewound(exc: BaseException, scope: Any) -> Any:
    """``exc`` when it is the rewind of this top-level run (a nested run lets it pass)."""
    from flowdbg.timetravel import Rewound

    if isinstance(exc, Rewound) and exc.run_id == scope.run_id and scope.parent_unit is None:
        return exc
    return None


def _rewind_start(
    target: Any, point: Any, given: dict[str, Any]
) -> tuple[Any, Any, dict[str, Any]]:
    """What the run rewound to ``point`` goes on with, as its fork would start
    (``_fork.prepared``): the agent, the conversation so far and the caller's own arguments
    (``given``: hooks, run config, max turns...), the run context given back the recorded
    state: a mapping the caller gave is updated in place, so that the caller's object is the
    run's context still (see _why_not_rewound for the runs refused)."""
    from flowdbg.adapters.openai_agents._fork import prepared

    agent, start, kwargs = prepared(target, point, None)
    again = {**given, **{key: value for key, value in kwargs.items() if key != "context"}}
    context = kwargs.get("context")
    mine = given.get("context")
    if isinstance(mine, MutableMapping) and isinstance(context, Mapping):
        mine.clear()
        mine.update(context)
    elif context is not None:
        again["context"] = context
    return agent, start, again


def run_sync(runner: Any, agent: Any, input: Any, kwargs: dict[str, Any]) -> Any:
    """``runner.run_sync(agent, input, **kwargs)`` on a thread of flowdbg's own, closing the
    event loop it leaves: run_sync keeps the loop it made for the thread open on purpose, for
    the thread's next run_sync (run.py, _run_sync_impl); flowdbg's run is the thread's only one,
    so its loop is closed rather than left to the collector."""
    had_loop = _thread_loop() is not None
    try:
        return runner.run_sync(agent, input, **kwargs)
    finally:
        loop = None if had_loop else _thread_loop()
        if loop is not None and not loop.is_running():
            loop.close()
            asyncio.get_event_loop_policy().set_event_loop(None)


def _make_get_model(original: Any) -> Any:
    """The SDK's ``get_model`` (how a turn resolves its model): in a debugged rerun with
    recorded calls, a model serving the record, which resolves the model only for a turn that
    runs live (see :mod:`._served`); in every other run, the model itself."""
    from flowdbg.adapters.openai_agents._runtime import ACTIVE

    def get_model(agent: Any, run_config: Any) -> Any:
        run = ACTIVE.get()
        if run is None or not run.serving or run.scope.root.released:
            return original(agent, run_config)
        return run.recorded_model(agent, run_config, lambda: original(agent, run_config))

    get_model.__wrapped__ = original  # type: ignore[attr-defined]
    return get_model


def _patch_runner() -> list[Patch]:
    from agents.run import AgentRunner
    from agents.run_internal import run_loop

    patches = [
        patch(AgentRunner, "run", lambda original: _make_run(original)),
        patch(AgentRunner, "run_streamed", lambda original: _make_run_streamed(original)),
    ]
    # the turns of a run resolve their model through this name (run_loop.py imports it from
    # turn_preparation.py): a rerun serves recorded model turns through it
    if callable(getattr(run_loop, "get_model", None)):
        patches.append(patch(run_loop, "get_model", lambda original: _make_get_model(original)))
    return patches


def run_kwargs(options: RunOptions) -> dict[str, Any]:
    """``Runner.run``'s keyword arguments for ``options.config`` (``max_turns``, ``context``,
    the rest as ``run_config``)."""
    config = dict(options.config or {})
    kwargs: dict[str, Any] = {}
    for key in ("max_turns", "context"):
        if key in config:
            kwargs[key] = config.pop(key)
    if config:
        kwargs["run_config"] = config
    return kwargs


class OpenAIAgentsAdapter(Adapter):
    """Debug OpenAI Agents SDK agents: runs, model turns, tool calls and handoffs."""

    name = "openai_agents"
    extra = "openai-agents"
    requires = ("openai-agents>=0.24",)
    capabilities = frozenset(
        {
            Capability.SYNC,
            Capability.ASYNC,
            Capability.STATE_EDITING,
            Capability.PARALLEL_BRANCHES,
            Capability.NESTING,
            Capability.DECISIONS,
            Capability.EXCEPTIONS,
            Capability.TERMINATE,
            Capability.PAUSE,
            Capability.DESCRIBE,
            Capability.TOOL_CALLS,
            Capability.TOOL_ARG_EDITING,
            Capability.LLM_CALLS,
            Capability.HANDOFFS,
            Capability.CACHED_CALLS,
            Capability.FORK,
            # Runner.run (and run_sync) rewound at a stop go on with the fork of the step, in
            # the caller's call; a streamed run is refused (RunScope.cannot_rewind)
            Capability.REWIND,
        }
    )
    #: ``output:`` edits of a fork change the result of the tool call it starts after
    fork_views = frozenset({"output"})
    #: an agent run's conversation is whole after calls inside its agent's unit
    fork_any_unit = True

    def matches(self, target: Any) -> bool:
        return _is_agent(target)

    def attach(self, target: Any, debugger: Debugger) -> None:
        from agents import FunctionTool

        with LOCK:
            held = _ROOTS.get(id(target))
            if held is not None:
                if held.debugger is not debugger:
                    raise AdapterError(
                        f"agent {target.name!r} is attached to another Debugger; detach it "
                        "there first (dbg.detach(agent))"
                    )
                return
            attached = _Attached(target, debugger)
            attached.agents = reached_agents(target)
            for agent in attached.agents:
                others = _REACHED.get(id(agent))
                if others and others[0].debugger is not debugger:
                    raise AdapterError(
                        f"agent {agent.name!r}, reached from {target.name!r}, is attached to "
                        "another Debugger; detach it there first"
                    )
            attached.patches = _patch_runner()
            for agent in attached.agents:
                _REACHED.setdefault(id(agent), []).append(attached)
                for tool in getattr(agent, "tools", None) or ():
                    if isinstance(tool, FunctionTool):
                        attached.tools.append(_wrap_tool(tool))
            _ROOTS[id(target)] = attached

    def detach(self, target: Any) -> None:
        with LOCK:
            attached = _ROOTS.pop(id(target), None)
            if attached is None:
                return
            for agent in attached.agents:
                holders = _REACHED.get(id(agent), [])
                if attached in holders:
                    holders.remove(attached)
                if not holders:
                    _REACHED.pop(id(agent), None)
            for held in attached.tools:
                _unwrap_tool(held)
            for held_patch in attached.patches:
                unpatch(held_patch)

    def install(self, debugger: Debugger) -> None:
        with LOCK:
            if id(debugger) not in _INSTALLED:
                _INSTALLED[id(debugger)] = (debugger, _patch_runner())

    def uninstall(self, debugger: Debugger) -> None:
        with LOCK:
            entry = _INSTALLED.pop(id(debugger), None)
            if entry is not None:
                for held_patch in entry[1]:
                    unpatch(held_patch)

    def describe(self, target: Any) -> dict[str, Any]:
        from flowdbg.adapters.openai_agents._describe import describe

        return describe(target)

    # -- running an agent: what ``flowdbg run`` and ``flowdbg demo`` use --

    def recorded_config(self, run: RunRecord) -> Mapping[str, Any] | None:
        # a run started from Python (Runner.run(..., context={...})) records no config, but
        # its state before the first unit is its mapping context
        from flowdbg.adapters.openai_agents._fork import _opaque

        state = run.initial_state
        if isinstance(state, Mapping) and state and not _opaque(state):
            return {"context": dict(state)}
        return None

    def config_example(self, target: Any) -> str | None:
        # Runner.run's own keywords, the rest a RunConfig's fields (see _run_kwargs)
        return '{"context": {"user_id": "42"}, "max_turns": 5}'

    def is_async(self, target: Any) -> bool:
        return False

    def check_input(self, target: Any, input: Any) -> None:
        # Runner.run takes the user's message (a string) or a list of input items (the
        # Responses API's dicts); anything else fails deep in the SDK (an int has no .copy())
        if isinstance(input, str) or (
            isinstance(input, list) and all(isinstance(item, dict) for item in input)
        ):
            return
        if input == {}:  # flowdbg run's default
            raise RunOptionError(
                "input",
                "an agent needs an input: the user's message as a JSON string (--input "
                "'\"refund my order\"') or a list of input items (JSON objects)",
            )
        kinds = {bool: "true or false", int: "a number", float: "a number", dict: "an object"}
        given = "null" if input is None else kinds.get(type(input), f"a {type(input).__name__}")
        raise RunOptionError(
            "input",
            f"an agent's input is the user's message (a JSON string) or a list of input items "
            f"(JSON objects), not {given}: give --input '\"refund my order\"'",
        )

    def check_run(self, target: Any, options: RunOptions) -> None:
        self.check_own_options(target, options)
        if options.resuming:
            raise RunOptionError(
                "resume",
                f"adapter {self.name!r} resumes an agent run from its RunState, not from a "
                "value; resume it in Python with Runner.run(agent, state)",
            )
        if options.config is not None:
            from agents import RunConfig

            fields = {f.name for f in dataclasses.fields(RunConfig)}
            unknown = sorted(set(options.config) - fields - {"max_turns", "context"})
            if unknown:
                raise RunOptionError(
                    "config",
                    f"RunConfig has no field {unknown[0]!r}; give RunConfig fields (such as "
                    "'workflow_name'), 'max_turns' or 'context'",
                )

    def _kwargs(self, options: RunOptions) -> dict[str, Any]:
        return run_kwargs(options)

    def invoke(self, target: Any, input: Any, options: RunOptions | None = None) -> Any:
        from agents import Runner

        options = RunOptions() if options is None else options
        self.check_run(target, options)
        return run_sync(Runner, target, input, self._kwargs(options)).final_output

    async def ainvoke(self, target: Any, input: Any, options: RunOptions | None = None) -> Any:
        from agents import Runner

        options = RunOptions() if options is None else options
        self.check_run(target, options)
        result = await Runner.run(target, input, **self._kwargs(options))
        return result.final_output

    def cli_options(self) -> Sequence[Any]:
        return ()

    # -- forks: see _fork.py --

    def fork_problems(
        self, store: Store, run: RunRecord, steps: Sequence[StepRecord]
    ) -> Mapping[int, str]:
        from flowdbg.adapters.openai_agents._fork import fork_problems

        return fork_problems(store, run, steps)

    def check_fork(self, target: Any, point: ForkPoint) -> None:
        from flowdbg.adapters.openai_agents._fork import check_fork

        super().check_fork(target, point)
        check_fork(target, point)

    def fork(self, target: Any, point: ForkPoint, options: RunOptions | None = None) -> Any:
        from flowdbg.adapters.openai_agents._fork import fork

        return fork(target, point, options)

    async def afork(self, target: Any, point: ForkPoint, options: RunOptions | None = None) -> Any:
        from flowdbg.adapters.openai_agents._fork import afork

        return await afork(target, point, options)

    def demo(self) -> Demo | None:
        from flowdbg.adapters.openai_agents._demo import DEMO

        return DEMO
