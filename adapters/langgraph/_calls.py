"""Model and tool calls inside LangGraph nodes, as flowdbg units (through LangChain callbacks).

A node's chat-model and tool calls report to LangChain's callback handlers. The handler below
is added to the config of every attached graph run, so the calls of every node inherit it; it
opens a unit of kind ``llm`` or ``tool`` in the frame of the node's unit (one level deeper, same
run) at the call's start and closes it at its end or error.

Sync runs get :class:`CallHandler`, whose stops block the thread making the call; async runs get
:class:`AsyncCallHandler`, whose coroutines LangChain awaits in the calling task, so a stop
suspends only that task. An exception a handler raises reaches the call when ``raise_error`` is
set: a breakpoint holds the call and ``terminate()`` ends it (checked in langchain-core 1.7
``callbacks/manager.py``).

Tool calls a ``ToolNode`` makes (the tools node of a LangGraph agent) go through its
``wrap_tool_call`` hook instead (:class:`ToolNodeWrapper`), where arguments and results can be
edited; the callbacks of those calls are then skipped.

What can be edited at the other stops: callbacks see the call's arguments as a copy
(``BaseTool.run`` passes ``inputs=`` a filtered copy), so tool arguments cannot be changed from
there, and neither can a tool result the tool returns as a plain value. A model's reply arrives
as the very message object the caller receives, so an edit at the ``after`` stop of an ``llm``
unit is copied into it.
Edits that cannot reach LangGraph are refused with :class:`flowdbg.EditRefused`.
"""

from __future__ import annotations

import contextvars
import threading
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langgraph.errors import GraphBubbleUp

from flowdbg.errors import EditRefused, refuse_unknown_arguments, validation_details
from flowdbg.runtime import Unit

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger

__all__ = [
    "AsyncCallHandler",
    "AsyncTaskCallHandler",
    "CallHandler",
    "TaskCallHandler",
    "ToolNodeWrapper",
    "is_tool_node",
    "with_handler",
]


def _refuse_edit(unit: Unit, which: str, payload: Any) -> None:
    """The edit check of the calls seen through callbacks (ToolNode calls, whose wrapper passes
    edits on, accept every edit instead)."""
    if unit.kind == "llm" and which == "output":
        return  # copied into the reply message (see CallHandler.on_llm_end)
    if unit.kind == "node":  # a functional-API @task call (see TaskCallHandler)
        what = "arguments" if which == "input" else "result"
        raise EditRefused(
            f"the {what} of @task {unit.node!r} cannot be edited: flowdbg sees @task calls "
            "through LangChain callbacks, which get a copy of the arguments and see the result "
            "only after it is returned"
        )
    what = "arguments" if which == "input" else "result"
    raise EditRefused(
        f"the {what} of {unit.kind} call {unit.node!r} cannot be edited: LangChain callbacks, "
        "through which flowdbg sees calls a node makes itself, only get a copy of them"
    )


def _node_state(unit: Unit) -> Any:
    """The state of the node making the call (its frame's parent unit)."""
    parent = unit.run.parent_unit
    return None if parent is None else parent.state_before


def _message_of(response: Any) -> Any:
    generations = getattr(response, "generations", None) or [[]]
    first = generations[0][0] if generations and generations[0] else None
    return getattr(first, "message", None) if first is not None else None


def _copy_into(message: Any, edited: Any) -> None:
    """Make ``message`` (the reply the caller receives) carry the edit."""
    if isinstance(edited, str):
        message.content = edited
    elif type(edited) is type(message):
        for name in type(message).model_fields:
            setattr(message, name, getattr(edited, name))
    else:
        raise EditRefused(
            f"a model reply can be replaced by text or a {type(message).__name__}, not by "
            f"{type(edited).__name__}"
        )


def _llm_label(serialized: dict[str, Any] | None, name: str | None) -> str:
    return str(name or (serialized or {}).get("name") or "llm")


def _tool_args(inputs: dict[str, Any] | None, input_str: str) -> dict[str, Any]:
    return dict(inputs) if isinstance(inputs, dict) else {"input": input_str}


class _Calls:
    """What the sync and the async handler share: which units are open, and their edits."""

    raise_error = True  # a breakpoint's Terminated must reach the call
    tasks = False  # whether @task calls are reported too (see TaskCallHandler)

    def __init__(self, debugger: Debugger) -> None:
        self.debugger = debugger
        self._open: dict[UUID, Unit] = {}
        self._lock = threading.Lock()

    # Only model and tool events are wanted: LangChain skips the others for this handler.
    # (Tool events are gated by ignore_agent, so that one stays False.)
    @property
    def ignore_chain(self) -> bool:
        return True

    @property
    def ignore_retriever(self) -> bool:
        return True

    @property
    def ignore_custom_event(self) -> bool:
        return True

    def _unit(self, run_id: UUID, name: str, kind: str, **where: Any) -> Unit | None:
        """A unit for a call starting in the node executing here, if it is one of ours."""
        parent = self.debugger.current_unit()
        if parent is None:
            return None
        unit = parent.frame().unit(name, kind=kind, check_edit=_refuse_edit, **where)
        with self._lock:
            self._open[run_id] = unit
        return unit

    def _close(self, run_id: UUID) -> Unit | None:
        with self._lock:
            return self._open.pop(run_id, None)

    @staticmethod
    def _reply(response: Any) -> tuple[Any, Any]:
        """``(output, message)``: what an llm unit outputs, and the reply message if any."""
        message = _message_of(response)
        return (message if message is not None else response), message

    @staticmethod
    def _edited_reply(output: Any, message: Any, edited: Any) -> None:
        if edited is not output and message is not None:
            _copy_into(message, edited)

    def __repr__(self) -> str:
        return f"<flowdbg LangGraph {type(self).__name__}>"


class CallHandler(_Calls, BaseCallbackHandler):
    """Reports chat-model and tool calls made inside nodes of one debugger's sync runs."""

    run_inline = False  # a stray async caller waits in an executor thread, not on its loop

    # -- models --

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[Any]],
        *,
        run_id: UUID,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        unit = self._unit(run_id, _llm_label(serialized, name), "llm")
        if unit is not None:
            unit.before(state=_node_state(unit), input={"messages": messages[0]})

    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        unit = self._unit(run_id, _llm_label(serialized, name), "llm")
        if unit is not None:
            unit.before(state=_node_state(unit), input={"prompts": list(prompts)})

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            if unit.run.root.calls is not None:  # a rerun: a model that asked no cache ran
                unit.recorded(unit.record_value("input"), serve=False)  # live, in its place
            output, message = self._reply(response)
            edited = unit.after(output=output, state=unit.state_before)
            self._edited_reply(output, message, edited)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            unit.error(error, state=unit.state_before)

    # -- tools --

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        inputs: dict[str, Any] | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        if _WRAPPED.get():  # a ToolNode call: already a unit (ToolNodeWrapper)
            return
        unit = self._unit(run_id, str(name or (serialized or {}).get("name") or "tool"), "tool")
        if unit is not None:
            args = unit.before(state=_node_state(unit), input=_tool_args(inputs, input_str))
            if unit.run.root.calls is not None:  # a rerun: it runs live, in its position
                unit.recorded(args, serve=False)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            unit.after(output=output, state=unit.state_before)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            unit.error(error, state=unit.state_before)


class AsyncCallHandler(_Calls, AsyncCallbackHandler):
    """The same for async runs. Its methods are coroutines awaited inline on the loop
    (``run_inline``), so a stop suspends only the calling task, and LangChain does not start
    an asyncio task per callback event for it (it gathers non-inline handlers: in langgraph 1.2
    that cost about 70 µs per node)."""

    run_inline = True

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[Any]],
        *,
        run_id: UUID,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        unit = self._unit(run_id, _llm_label(serialized, name), "llm")
        if unit is not None:
            state = _node_state(unit)
            await unit.abefore(state=state, input={"messages": messages[0]})

    async def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        unit = self._unit(run_id, _llm_label(serialized, name), "llm")
        if unit is not None:
            state = _node_state(unit)
            await unit.abefore(state=state, input={"prompts": list(prompts)})

    async def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            if unit.run.root.calls is not None:
                unit.recorded(unit.record_value("input"), serve=False)
            output, message = self._reply(response)
            edited = await unit.aafter(output=output, state=unit.state_before)
            self._edited_reply(output, message, edited)

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            await unit.aerror(error, state=unit.state_before)

    async def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        inputs: dict[str, Any] | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        if _WRAPPED.get():
            return
        unit = self._unit(run_id, str(name or (serialized or {}).get("name") or "tool"), "tool")
        if unit is not None:
            state = _node_state(unit)
            args = await unit.abefore(state=state, input=_tool_args(inputs, input_str))
            if unit.run.root.calls is not None:
                unit.recorded(args, serve=False)

    async def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            await unit.aafter(output=output, state=unit.state_before)

    async def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            await unit.aerror(error, state=unit.state_before)


# -- functional-API @task calls ------------------------------------------------------------
#
# An @entrypoint runs each @task call as a task of its own (in an executor thread, or an asyncio
# task), outside any graph node flowdbg could wrap. Its runnable, a RunnableSeq named after the
# task, reports on_chain_start / on_chain_end / on_chain_error to the run's callback handlers in
# the thread or task that runs it, before and after the function (langgraph 1.1 and 1.2
# _internal/_runnable.py RunnableSeq.invoke), so a handler can hold it there. Its metadata's
# langgraph_path is (PUSH, the caller's path, index, True): the True marks a functional call
# (pregel/_algo.py prepare_push_task_functional). The arguments the handler gets are a dict
# built for tracing, and the result is reported after the task returned it, so neither can be
# edited from there.

_PUSH = "__pregel_push"


def _is_task_call(name: str | None, metadata: dict[str, Any] | None) -> bool:
    """Whether a starting chain is an @task call (not a node, not a chain run inside one)."""
    if not metadata or name is None:
        return False
    path = metadata.get("langgraph_path")
    return (
        type(path) is tuple
        and len(path) >= 4
        and path[0] == _PUSH
        and path[-1] is True
        and metadata.get("langgraph_node") == name
    )


def _where(metadata: dict[str, Any]) -> dict[str, Any]:
    # No branch of their own: like the calls a node makes, the tasks an entrypoint calls are one
    # line of execution for stepping (step from one task lands on the next), though those it
    # runs in parallel each hold their own thread or task at a stop.
    return {"superstep": metadata.get("langgraph_step")}


def _task_key(metadata: dict[str, Any]) -> Any:
    """What identifies one @task call across its retries: its checkpoint namespace (the task
    name and its id, which LangGraph derives from the call, so a retry has the same)."""
    return metadata.get("langgraph_checkpoint_ns")


class _Tasks:
    """Chain events, for the @task calls of an @entrypoint (its runs only: for other graphs
    LangChain skips chain events for flowdbg's handler, which keeps their runs cheaper)."""

    tasks = True

    def __init__(self, debugger: Debugger) -> None:
        super().__init__(debugger)  # type: ignore[call-arg]
        #: task call -> attempts that failed; open unit's run id -> its task call
        self._failed_tasks: dict[Any, int] = {}
        self._task_keys: dict[UUID, Any] = {}

    @property
    def ignore_chain(self) -> bool:
        return False

    def _task_unit(
        self: Any, run_id: UUID, parent_run_id: UUID | None, name: Any, metadata: Any
    ) -> Unit | None:
        if not _is_task_call(name, metadata) or parent_run_id in self._open:
            return None  # not a task, or a chain the task itself runs
        # a retry (retry_policy) runs the task's runnable again: count the failed attempts
        key = _task_key(metadata)
        with self._lock:
            attempt = self._failed_tasks.get(key, 0) + 1
        unit: Unit | None = self._unit(
            run_id, str(name), "node", attempt=attempt, **_where(metadata)
        )
        if unit is not None:
            with self._lock:
                self._task_keys[run_id] = key
        return unit

    def _task_done(self: Any, run_id: UUID, failed: bool) -> None:
        with self._lock:
            key = self._task_keys.pop(run_id, None)
            if failed:
                if len(self._failed_tasks) > 4096:  # tasks that failed for good
                    self._failed_tasks.clear()
                self._failed_tasks[key] = self._failed_tasks.get(key, 0) + 1
            else:
                self._failed_tasks.pop(key, None)


class TaskCallHandler(_Tasks, CallHandler):
    """:class:`CallHandler` that also reports an @entrypoint's @task calls, as units of kind
    ``node`` nested in the unit that calls them."""

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        unit = self._task_unit(run_id, parent_run_id, name, metadata)
        if unit is not None:
            unit.before(state=_node_state(unit), input=inputs)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            self._task_done(run_id, failed=False)
            unit.after(output=outputs, state=unit.state_before)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is None:
            return
        if isinstance(error, GraphBubbleUp):  # interrupt() in the task: it runs again later
            self._task_done(run_id, failed=False)
            unit.discard(error, status="suspended")
        else:
            self._task_done(run_id, failed=True)
            unit.error(error, state=unit.state_before)


class AsyncTaskCallHandler(_Tasks, AsyncCallHandler):
    """The same for async runs (a stop suspends only the task's coroutine)."""

    async def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        unit = self._task_unit(run_id, parent_run_id, name, metadata)
        if unit is not None:
            await unit.abefore(state=_node_state(unit), input=inputs)

    async def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is not None:
            self._task_done(run_id, failed=False)
            await unit.aafter(output=outputs, state=unit.state_before)

    async def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        unit = self._close(run_id)
        if unit is None:
            return
        if isinstance(error, GraphBubbleUp):
            self._task_done(run_id, failed=False)
            unit.discard(error, status="suspended")
        else:
            self._task_done(run_id, failed=True)
            await unit.aerror(error, state=unit.state_before)


def _same_debugger(handlers: list[Any], handler: Any) -> Any:
    """The handler of the same kind (sync or async) and debugger among ``handlers``, if any."""
    family = AsyncCallHandler if isinstance(handler, AsyncCallHandler) else CallHandler
    for present in handlers:
        if isinstance(present, family) and present.debugger is handler.debugger:
            return present
    return None


def with_handler(config: Any, handler: BaseCallbackHandler) -> Any:
    """``config`` with ``handler`` among its callbacks (inherited by every call of the run).

    One handler per debugger: a run already carrying this debugger's handler (a subgraph's run
    inherits its parent's) keeps it, unless ``handler`` also reports @task calls and that one
    does not; then it is swapped for ``handler``.
    """
    config = dict(config or {})
    callbacks = config.get("callbacks")
    if callbacks is None:
        config["callbacks"] = [handler]
        return config
    handlers = callbacks if isinstance(callbacks, list) else getattr(callbacks, "handlers", None)
    if handlers is None:
        return config
    present = _same_debugger(handlers, handler)
    if present is handler or (present is not None and getattr(present, "tasks", False)):
        return config
    if isinstance(callbacks, list):
        config["callbacks"] = [h for h in callbacks if h is not present] + [handler]
    else:
        manager = callbacks.copy()
        if present is not None:
            manager.remove_handler(present)
        manager.add_handler(handler, inherit=True)
        config["callbacks"] = manager
    return config


# -- tool calls through a ToolNode: editable ---------------------------------------------------

#: set while a ToolNode call is a unit, so its LangChain tool callbacks open no second one
_WRAPPED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "flowdbg_langgraph_wrapped_tool", default=False
)


def _arguments_check(schema: Any) -> Any:
    """The ``check_edit`` of a ToolNode call: edited arguments must be what the tool's pydantic
    argument schema takes (unknown names and wrong types are refused, with pydantic's message),
    as the tool itself would refuse them when it runs; no check without such a schema."""
    fields = getattr(schema, "model_fields", None)
    if not isinstance(fields, dict) or not hasattr(schema, "model_validate"):
        return None

    def check_edit(unit: Unit, which: str, payload: Any) -> None:
        if which != "input" or not isinstance(payload, dict):
            return
        refuse_unknown_arguments(f"tool {unit.node!r}", payload, fields)
        try:
            schema.model_validate(payload)
        except Exception as exc:  # pydantic.ValidationError
            raise EditRefused(
                f"tool {unit.node!r} refuses these arguments: {validation_details(exc)}"
            ) from exc

    return check_edit


#: LangGraph's control flow through a tool call (interrupt(), a Command to a parent graph):
#: the call is paused to run again, not failed
_PAUSING = (GraphBubbleUp,)


def _tool_result(original: Any, edited: Any) -> Any:
    """What an edit of a ToolNode call's result becomes: text replaces the message content."""
    if isinstance(edited, str) and hasattr(original, "model_copy"):
        return original.model_copy(update={"content": edited})
    return edited


def _served_tool_result(request: Any, recorded: Any) -> Any:
    """A ToolNode call's recorded result (a tool message as the store keeps it) as the
    ``ToolMessage`` this call returns: the recorded content, this call's tool-call id."""
    from langchain_core.messages import ToolMessage

    call = request.tool_call
    if isinstance(recorded, dict) and "content" in recorded:
        fields = {k: v for k, v in recorded.items() if k not in ("type", "id") and v is not None}
        fields["tool_call_id"] = call.get("id") or fields.get("tool_call_id", "")
        return ToolMessage.model_validate(fields)
    return ToolMessage(content=str(recorded), name=call.get("name"), tool_call_id=call.get("id"))


class ToolNodeWrapper:
    """``wrap_tool_call``/``awrap_tool_call`` of a ToolNode (langgraph.prebuilt): each call is a
    unit of kind ``tool`` whose arguments and result can be edited at its stops.

    ToolNode's wrapper hook is its documented interception point: the wrapper gets a
    ``ToolCallRequest`` (``request.override(tool_call=...)`` changes the arguments) and the
    ``execute`` callable, and what it returns is the call's result. A wrapper the user gave the
    ToolNode still runs, inside this one.
    """

    def __init__(self, debugger: Debugger, inner: Any, ainner: Any) -> None:
        self.debugger = debugger
        self.inner = inner
        self.ainner = ainner

    def _open(self, request: Any) -> Unit | None:
        parent = self.debugger.current_unit()
        if parent is None:
            return None
        call = request.tool_call
        # the wrapper passes edits of the arguments and the result on: an edit is accepted when
        # the tool's argument schema takes it
        check = _arguments_check(getattr(getattr(request, "tool", None), "args_schema", None))
        return parent.frame().unit(str(call.get("name") or "tool"), kind="tool", check_edit=check)

    @staticmethod
    def _request(request: Any, args: Any) -> Any:
        call = request.tool_call
        if args is call.get("args"):
            return request
        return request.override(tool_call={**call, "args": args})

    def __call__(self, request: Any, execute: Any) -> Any:
        unit = self._open(request)
        if unit is None:
            return self.inner(request, execute) if self.inner else execute(request)

        returned: list[Any] = []  # the tool's own result (an edit may replace it by text)

        def run(args: Any) -> Any:
            edited = self._request(request, args)
            token = _WRAPPED.set(True)
            try:
                returned.append(self.inner(edited, execute) if self.inner else execute(edited))
            finally:
                _WRAPPED.reset(token)
            return returned[0]

        state = unit.run.parent_unit.state_before if unit.run.parent_unit else None
        result = unit.call(run, request.tool_call.get("args"), state=state, suspend_on=_PAUSING)
        if not returned:  # a rerun served the recorded result (Unit.recorded)
            return _served_tool_result(request, result)
        return _tool_result(returned[0], result)

    async def acall(self, request: Any, execute: Any) -> Any:
        unit = self._open(request)
        inner = self.ainner
        if unit is None:
            if inner is not None:
                return await inner(request, execute)
            if self.inner is not None:  # ToolNode falls back to the sync wrapper likewise
                return self.inner(request, execute)
            return await execute(request)

        returned: list[Any] = []

        async def run(args: Any) -> Any:
            edited = self._request(request, args)
            token = _WRAPPED.set(True)
            try:
                if inner is not None:
                    returned.append(await inner(edited, execute))
                elif self.inner is not None:
                    returned.append(self.inner(edited, execute))
                else:
                    returned.append(await execute(edited))
            finally:
                _WRAPPED.reset(token)
            return returned[0]

        state = unit.run.parent_unit.state_before if unit.run.parent_unit else None
        result = await unit.acall(
            run, request.tool_call.get("args"), state=state, suspend_on=_PAUSING
        )
        if not returned:
            return _served_tool_result(request, result)
        return _tool_result(returned[0], result)


def is_tool_node(obj: Any) -> bool:
    """Whether ``obj`` is a ``langgraph.prebuilt`` ToolNode with the wrapper hook."""
    return any(
        cls.__name__ == "ToolNode" and cls.__module__.startswith("langgraph.prebuilt")
        for cls in type(obj).__mro__
    ) and hasattr(obj, "_wrap_tool_call")
