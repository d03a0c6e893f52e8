"""Tool calls a workflow's own steps make as flowdbg units of kind ``tool``.

A LlamaIndex agent (``FunctionAgent``, ``ReActAgent``, ``AgentWorkflow``) calls each tool in a
``call_tool`` step that receives a ``ToolCall`` event: ``_hooks.py`` makes that step's tool unit
from the event. A workflow written from scratch calls the tools it holds itself, inside the
step that decided to (``await tool.acall(**tool_call.tool_kwargs)`` in an agent built from
scratch): those calls are units here, one level inside the step, the way model calls are
(``_llm.py``: the same reasoning for where the hook sits).

The hook: ``acall`` replaced on the classes of the tools an attached workflow holds
(:func:`flowdbg.patching.patch`: shared, counted, put back exactly by the last holder). The
replacement runs in the calling step's task before the tool: it opens the unit, awaits its
``before`` point (which holds only that task; the arguments are editable there and checked
against the tool's ``fn_schema``), calls the tool with the arguments as edited, and awaits the
``after`` point with the tool's result (``raw_output``; an edit there gives the caller a
``ToolOutput`` with the edited result). A call becomes a unit only when made on a tool an
attached workflow holds, inside one of its steps, and not inside another tool call (an agent's
``call_tool`` step is already the tool's unit). The sync ``call`` and ``__call__`` are not units:
called in an async step they run on the event loop's thread, where holding them would stall
every run on that loop (a sync step runs in a thread of its own, but LlamaIndex gives it no
way to tell).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flowdbg.adapters.llamaindex._holding import Holding, call_branch, is_core, like, objects_of
from flowdbg.adapters.llamaindex._hooks import RUN, _held, schema_checker, with_result
from flowdbg.errors import EditRefused

if TYPE_CHECKING:
    from flowdbg.adapters.llamaindex._hooks import _Run
    from flowdbg.patching import Patch
    from flowdbg.runtime import Unit

__all__ = ["hold_tools", "release_tools", "tool_name", "tools_of"]

#: the tools attached workflows hold
_HELD = Holding()

#: set while a tool unit's call runs in this task: a tool calling another is one unit
_CALLING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "flowdbg_llamaindex_tool_call", default=False
)


def is_tool(obj: Any) -> bool:
    """Whether ``obj`` is a LlamaIndex tool (``llama_index.core``'s ``BaseTool``)."""
    return is_core(obj, "BaseTool")


def tools_of(workflow: Any) -> list[Any]:
    """The tools ``workflow`` holds: its attributes that are tools, those in a list, tuple or
    mapping it keeps, and the ``tools`` of the agents it keeps that way
    (``AgentWorkflow.agents``)."""
    return objects_of(workflow, is_tool, "tools")


def hold_tools(tools: list[Any]) -> list[Patch]:
    """Count ``tools`` as held by one more attached workflow, with their classes' ``acall``
    replaced (call under :data:`flowdbg.patching.LOCK`). Returns the patches to let go of."""
    return _HELD.hold(tools, {"acall": _replacement})


def release_tools(tools: list[Any], patches: list[Patch]) -> None:
    """Undo :func:`hold_tools` (under :data:`flowdbg.patching.LOCK`)."""
    _HELD.release(tools, patches)


def _replacement(original: Any) -> Any:
    async def acall(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = original.__get__(self, type(self))
        caller = _caller(self)
        if caller is None:
            return await bound(*args, **kwargs)
        return await _call(*caller, self, bound, args, kwargs)

    return like(acall, original, "acall")


def _caller(tool: Any) -> tuple[_Run, Unit] | None:
    """The workflow run, and the step unit in it, making a call on ``tool``, when the call is
    to be a unit: not inside another tool call, nor inside an agent's ``call_tool`` step (whose
    unit is the tool's already)."""
    if tool not in _HELD or _CALLING.get():
        return None
    run = RUN.get()
    if run is None or not run.runtime.active:
        return None
    parent = run.runtime.debugger.current_unit()
    if parent is None or parent.kind == "tool":
        return None
    return run, parent


def tool_name(tool: Any) -> str:
    """A tool unit's name: the tool's own (``metadata.name``), else its class name."""
    metadata = getattr(tool, "metadata", None)
    name = getattr(metadata, "name", None)
    return name if isinstance(name, str) and name else type(tool).__name__


def _fields(tool: Any) -> list[str] | None:
    """The names of the tool's arguments, in order (its ``fn_schema``), or ``None``."""
    schema = getattr(getattr(tool, "metadata", None), "fn_schema", None)
    fields = getattr(schema, "model_fields", None)
    return list(fields) if isinstance(fields, dict) else None


def _arguments(tool: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The call's arguments by name (positional ones named after the tool's schema), without
    the run context a tool may take (``ctx_param_name``); ``None`` when they cannot be named."""
    shown = dict(kwargs)
    if args:
        fields = _fields(tool)
        if fields is None or len(args) > len(fields):
            return None
        named = dict(zip(fields, args, strict=False))
        if any(name in shown for name in named):
            return None
        shown = {**named, **shown}
    context = getattr(tool, "ctx_param_name", None)
    if isinstance(context, str):
        shown.pop(context, None)
    return shown


async def _call(
    run: _Run,
    parent: Unit,
    tool: Any,
    method: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """One tool call as a unit: its before point, the call, then its error or after point."""
    name = tool_name(tool)
    shown = _arguments(tool, args, kwargs)
    if shown is None:  # positional arguments the schema does not name: shown, not editable
        shown = {"args": list(args), **kwargs}
        check: Callable[[Unit, str, Any], None] = _positional
    elif _takes_any(tool):  # a function over **kwargs: its schema lists none of them
        check = schema_checker(name, lambda: None)
    else:
        metadata = getattr(tool, "metadata", None)
        check = schema_checker(name, lambda: getattr(metadata, "fn_schema", None))
    unit = parent.frame().unit(name, kind="tool", branch=call_branch(parent), check_edit=check)
    note = getattr(parent, "note", None)  # the workflow's timeout stands still here too
    if note:
        unit.note = note
    state = parent.state_before
    edited = await _held(run, unit.abefore(state=state, input=shown))
    if edited is not shown:
        context = getattr(tool, "ctx_param_name", None)
        kept = {context: kwargs[context]} if isinstance(context, str) and context in kwargs else {}
        args, kwargs = (), {**edited, **kept}
    token = _CALLING.set(True)
    try:
        # a rerun with recorded calls: the recorded result for the same arguments, without the
        # tool (a rerun ending at its first divergence raises here, at the call's error point)
        served, recorded = unit.recorded(edited)
        if served:
            output = _served_output(tool, name, recorded, args, kwargs)
            # one turn of the loop, as the call would give: calls the step made at once
            # (asyncio.gather) overlap as they did in the record, where a divergence report
            # takes them as concurrent (compared in any order), not as run one after the other
            await asyncio.sleep(0)
        else:
            output = await method(*args, **kwargs)
    except BaseException as exc:
        if not isinstance(exc, Exception):
            raised = unit.discard(exc)  # terminate() cancelled the call: Terminated
            if raised is None or raised is exc:
                raise
            raise raised from exc
        await _held(run, unit.aerror(exc, state=state))
        raise
    finally:
        _CALLING.reset(token)
    is_output = hasattr(output, "raw_output")  # a ToolOutput (a tool of one's own may differ)
    result = output.raw_output if is_output else output
    edited_result = await _held(run, unit.aafter(output=result, state=state))
    if edited_result is result:
        return output
    return with_result(output, edited_result) if is_output else edited_result


def _takes_any(tool: Any) -> bool:
    """Whether the function a ``FunctionTool`` wraps takes any keyword (``**kwargs``), which
    the schema LlamaIndex makes from its signature leaves out."""
    for attribute in ("async_fn", "fn"):
        try:
            function = getattr(tool, attribute, None)
            if function is None:
                continue
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError, AttributeError):
            continue
        return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
    return False


def _served_output(
    tool: Any, name: str, result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """What the tool's ``acall`` would have returned for a recorded ``result``: a
    ``ToolOutput`` (its text the result's), as ``FunctionTool`` makes one."""
    from llama_index.core.tools.types import ToolOutput

    context = getattr(tool, "ctx_param_name", None)
    shown = {k: v for k, v in kwargs.items() if k != context}
    return ToolOutput(
        content=str(result),
        tool_name=name,
        raw_input={"args": args, "kwargs": shown},
        raw_output=result,
    )


def _positional(unit: Unit, which: str, payload: Any) -> None:
    if which == "input":
        raise EditRefused(
            f"tool {unit.node!r} was called with positional arguments its schema does not "
            "name, which an edit cannot pass back; call it with keyword arguments to edit them"
        )
