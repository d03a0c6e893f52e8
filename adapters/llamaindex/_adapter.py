"""The LlamaIndex adapter class (imports nothing of LlamaIndex until a workflow is attached)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flowdbg.adapter import Adapter, Capability, Demo, RunOptions
from flowdbg.errors import AdapterError, RunOptionError
from flowdbg.patching import LOCK

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.store import Store
    from flowdbg.timetravel import ForkPoint

__all__ = ["LlamaIndexAdapter"]


def _is_workflow(target: Any) -> bool:
    """Whether ``target`` is a LlamaIndex ``Workflow`` (``llama_index.core.workflow.Workflow``
    is the same class), judged by class names only."""
    return any(
        cls.__name__ == "Workflow" and cls.__module__.startswith("workflows.")
        for cls in type(target).__mro__
    )


def workflow_name(workflow: Any) -> str:
    """The name runs of ``workflow`` get: its class name (LlamaIndex's ``workflow_name`` is
    module-qualified unless set, which is long for a run list), or the explicit name."""
    explicit = vars(workflow).get("_workflow_name")
    return str(explicit) if explicit else type(workflow).__name__


class _Held:
    """An attached workflow: its debugger, the runtime it had, who attached it."""

    def __init__(self, workflow: Any, debugger: Debugger, original: Any, runtime: Any) -> None:
        self.workflow = workflow  # kept alive while attached, so its id stays its own
        self.debugger = debugger
        self.original = original
        self.runtime = runtime
        self.owners: set[Any] = set()
        self.children: list[Any] = []
        #: the models the workflow holds (an agent's llm), and the patches that make their
        #: calls units (see _llm.py)
        self.llms: list[Any] = []
        self.patches: list[Any] = []
        #: the tools it holds, and the patches that make the calls its steps make units
        #: (see _tools.py)
        self.tools: list[Any] = []
        self.tool_patches: list[Any] = []


_HELD: dict[int, _Held] = {}
_USER = "user"


def _children(workflow: Any) -> list[Any]:
    """Workflows held by ``workflow``'s attributes (a nested workflow its step runs)."""
    return [
        value for value in vars(workflow).values() if _is_workflow(value) and value is not workflow
    ]


class LlamaIndexAdapter(Adapter):
    """Adapter for LlamaIndex Workflows (``workflows.Workflow``, also imported as
    ``llama_index.core.workflow.Workflow``), agents built on them included."""

    name = "llamaindex"
    extra = "llamaindex"
    # 2.26.0 is the first release whose step workers return the events a step sent with
    # ctx.send_event (runtime/types/results.py SentEvent; 2.25 has none); the runtime decorator
    # API is semi-internal (not in __all__), hence the cap below the next major release.
    requires = ("llama-index-workflows>=2.26,<3",)
    capabilities = frozenset(
        {
            Capability.SYNC,
            Capability.ASYNC,
            Capability.STATE_EDITING,
            Capability.PARALLEL_BRANCHES,
            Capability.NESTING,
            Capability.DECISIONS,
            Capability.RETRIES,
            Capability.EXCEPTIONS,
            Capability.TERMINATE,
            Capability.PAUSE,
            Capability.DESCRIBE,
            # an agent's tool call (its call_tool step, given a ToolCall event) is a tool unit
            # inside that step, and so is a call a step makes itself (await tool.acall on a
            # tool the workflow holds: _tools.py): arguments editable before, the result after
            Capability.TOOL_CALLS,
            Capability.TOOL_ARG_EDITING,
            # a model call an agent's step makes on the model it holds is an llm unit inside
            # that step: messages editable before the call, the reply after it (_llm.py)
            Capability.LLM_CALLS,
            # a rerun serves the model calls and the tool calls a step makes itself from the
            # record (an agent's call_tool step runs live: its result is an event it makes)
            Capability.CACHED_CALLS,
            # a fork starts a run of the current workflow from the recorded store and the
            # events the step emitted (a serialized context with pending deliveries: _fork.py)
            Capability.FORK,
            # a run rewound at a stop ends cancelled for LlamaIndex, and its handler's result is
            # that of its fork from the step gone back to (_hooks._go_on)
            Capability.REWIND,
        }
    )

    def matches(self, target: Any) -> bool:
        return _is_workflow(target)

    # -- attaching --

    def attach(self, target: Any, debugger: Debugger) -> None:
        with LOCK:  # _HELD is the process's (see flowdbg.patching)
            self._check(target, debugger, set())
            self._acquire(target, debugger, _USER, set())

    def _check(self, workflow: Any, debugger: Debugger, seen: set[int]) -> None:
        if id(workflow) in seen:
            return
        seen.add(id(workflow))
        held = _HELD.get(id(workflow))
        if held is not None:
            if held.debugger is not debugger:
                raise AdapterError(
                    f"workflow {workflow_name(workflow)!r} is already attached to another "
                    "Debugger; detach it there first (dbg.detach(workflow))"
                )
        else:
            runtime = workflow._runtime
            if workflow._runtime_locked and runtime.get_registered(workflow) is not None:
                raise AdapterError(
                    f"workflow {workflow_name(workflow)!r} runs on {type(runtime).__name__}, "
                    "which registered its steps when it launched; attach the workflow before "
                    "its runtime launches"
                )
        for child in _children(workflow):
            self._check(child, debugger, seen)

    def _acquire(self, workflow: Any, debugger: Debugger, owner: Any, seen: set[int]) -> None:
        from flowdbg.adapters.llamaindex._hooks import DebugRuntime
        from flowdbg.adapters.llamaindex._llm import hold_llms, llms_of
        from flowdbg.adapters.llamaindex._tools import hold_tools, tools_of

        if id(workflow) in seen:
            return
        seen.add(id(workflow))
        held = _HELD.get(id(workflow))
        if held is not None:
            held.owners.add(owner)
            return
        original = vars(workflow)["_runtime"]
        runtime = DebugRuntime(original, debugger, workflow)
        held = _HELD[id(workflow)] = _Held(workflow, debugger, original, runtime)
        held.owners.add(owner)
        # LlamaIndex re-reads workflow._runtime at every run; Workflow._switch_runtime would
        # refuse once a run locked the runtime, which matters for runtimes that register at
        # launch (refused in _check), not for one that registers per run.
        workflow._runtime = runtime
        held.llms = llms_of(workflow)
        held.patches = hold_llms(held.llms)
        held.tools = tools_of(workflow)
        held.tool_patches = hold_tools(held.tools)
        for child in _children(workflow):
            self._acquire(child, debugger, id(workflow), seen)
            held.children.append(child)

    def detach(self, target: Any) -> None:
        with LOCK:
            self._release(target, _USER)

    def _release(self, workflow: Any, owner: Any) -> None:
        held = _HELD.get(id(workflow))
        if held is None or owner not in held.owners:
            return
        held.owners.discard(owner)
        if held.owners:
            return
        del _HELD[id(workflow)]
        held.runtime.active = False
        if vars(workflow).get("_runtime") is held.runtime:
            workflow._runtime = held.original
        if held.llms:
            from flowdbg.adapters.llamaindex._llm import release_llms

            release_llms(held.llms, held.patches)
        if held.tools:
            from flowdbg.adapters.llamaindex._tools import release_tools

            release_tools(held.tools, held.tool_patches)
        for child in held.children:
            self._release(child, id(workflow))

    # -- describing --

    def describe(self, target: Any) -> dict[str, Any]:
        from flowdbg.adapters.llamaindex._describe import describe

        return describe(target)

    # -- running a workflow (flowdbg run, flowdbg demo) --

    def is_async(self, target: Any) -> bool:
        return True  # wf.run() needs an event loop

    def check_run(self, target: Any, options: RunOptions) -> None:
        self.check_own_options(target, options)
        if options.resuming:
            raise RunOptionError(
                "resume",
                f"adapter {self.name!r} cannot resume a workflow run with a value; start a new "
                "run with --input (its keys are the start event's fields)",
            )
        if options.config is not None:
            raise RunOptionError(
                "config",
                "a LlamaIndex workflow takes no config besides its start event; put the values "
                "in --input",
            )

    def check_input(self, target: Any, input: Any) -> None:
        if input is not None and not isinstance(input, dict):
            raise RunOptionError(
                "input",
                "a LlamaIndex workflow starts from keyword arguments (the start event's fields): "
                'give a JSON object such as \'{"topic": "x"}\'',
            )

    async def ainvoke(self, target: Any, input: Any, options: RunOptions | None = None) -> Any:
        options = RunOptions() if options is None else options
        self.check_run(target, options)
        self.check_input(target, input)
        return await target.run(**(input or {}))

    def invoke(self, target: Any, input: Any, options: RunOptions | None = None) -> Any:
        return asyncio.run(self.ainvoke(target, input, options))

    # -- forks (see _fork.py): the recorded store and the step's events, in a new context --

    # an edit may name the events the step emitted (output:text), which the fork starts from
    fork_views = frozenset({"output"})

    def fork_problems(
        self, store: Store, run: RunRecord, steps: Sequence[StepRecord]
    ) -> Mapping[int, str]:
        from flowdbg.adapters.llamaindex import _fork

        return _fork.fork_problems(store, run, steps)

    def check_fork(self, target: Any, point: ForkPoint) -> None:
        from flowdbg.adapters.llamaindex import _fork

        super().check_fork(target, point)
        _fork.check_fork(target, point)

    async def afork(self, target: Any, point: ForkPoint, options: RunOptions | None = None) -> Any:
        from flowdbg.adapters.llamaindex import _fork

        self.check_fork(target, point)
        if options is not None:
            self.check_run(target, options)
        return await _fork.afork(target, point, options)

    def fork(self, target: Any, point: ForkPoint, options: RunOptions | None = None) -> Any:
        return asyncio.run(self.afork(target, point, options))

    def demo(self) -> Demo:
        from flowdbg.adapters.llamaindex._demo import DEMO

        return DEMO
