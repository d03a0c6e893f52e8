"""Model calls of LlamaIndex agents as flowdbg units of kind ``llm`` (imports ``workflows``:
loaded by ``attach``; LlamaIndex's own model classes, from llama-index-core, only once an
attached workflow holds one).

Where the hook sits, and why there. An agent's step calls its model itself, through four async
methods of the ``LLM`` object it holds (checked in llama-index-core 0.14.25):
``FunctionAgent`` calls ``achat_with_tools`` or ``astream_chat_with_tools``
(``agent/workflow/function_agent.py``); ``ReActAgent`` and ``AgentWorkflow``'s own steps call
``achat`` or ``astream_chat`` (``react_agent.py``, ``base_agent.py`` and
``multi_agent_workflow.py`` ``_get_llm_response``). Agents stream by default
(``BaseWorkflowAgent.streaming``). A workflow of one's own that holds a model usually asks it
for a completion (``await self.llm.acomplete(prompt)``, ``astream_complete``, as LlamaIndex's
workflow examples do): those two are units too, their input ``{"prompt": text}`` and their
output the reply's text.

The sync methods (``chat``, ``complete``...) are not units: called in a step, they run on the
event loop's thread, where holding them would stall every step of every run on that loop.

LlamaIndex's instrumentation (``llama_index_instrumentation`` dispatcher: ``LLMChatStartEvent``,
span handlers) reports these calls but cannot hold them: its handlers are sync and called on the
event loop (a handler that waits stalls every run on the loop), and the messages it reports are
not what the model receives if changed. So flowdbg replaces those methods on the model's class
(:func:`flowdbg.patching.patch`: shared, counted, put back exactly by the last holder), for as
long as a workflow holding a model of that class is attached. The replacement runs in the
calling step's task, before the model is called: it opens the unit, awaits its ``before`` point
(which may hold only that task), calls the model with the messages as edited there, and awaits
the ``after`` point with the reply. A call becomes a unit only when it is made on one of the
model objects an attached workflow holds, inside one of its steps; every other call of the class
goes straight to the original method.

The class rather than the object: an LLM is a pydantic model, whose copies (``model_copy``,
``copy.deepcopy``) would carry a method set on the object (in its ``__dict__``) and call the
original object's model from the copy; pickling it would fail. Patched on the class, the object
itself is never changed.

Only the outermost of these methods in a call is a unit (``achat_with_tools`` calls ``achat``;
a model may implement ``achat`` with ``achat`` of another model): :data:`_CALLING` marks the
task while a unit's model call runs.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from flowdbg.adapters.llamaindex._holding import Holding, call_branch, is_core, like, objects_of
from flowdbg.adapters.llamaindex._hooks import RUN, _held
from flowdbg.errors import EditRefused

if TYPE_CHECKING:
    from flowdbg.adapters.llamaindex._hooks import _Run
    from flowdbg.patching import Patch
    from flowdbg.runtime import Unit

__all__ = ["hold_llms", "is_llm", "llms_of", "release_llms"]

#: the model methods that are units (the chat methods agents call, the completions of one's own
#: steps), and whether each streams
_METHODS = {
    "achat": False,
    "astream_chat": True,
    "achat_with_tools": False,
    "astream_chat_with_tools": True,
    "acomplete": False,
    "astream_complete": True,
}
_WITH_TOOLS = ("achat_with_tools", "astream_chat_with_tools")
_COMPLETION = ("acomplete", "astream_complete")

#: the models attached workflows hold
_HELD = Holding()

#: set while the model call of an llm unit runs in this task: inner chat calls are not units
_CALLING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "flowdbg_llamaindex_llm_call", default=False
)


# -- which objects are models ------------------------------------------------------------------


def is_llm(obj: Any) -> bool:
    """Whether ``obj`` is a LlamaIndex model (``llama_index.core``'s ``BaseLLM``)."""
    return is_core(obj, "BaseLLM")


def llms_of(workflow: Any) -> list[Any]:
    """The models ``workflow`` holds: its attributes that are models (an agent's ``llm``), and
    those of the agents it keeps in a mapping or a list (``AgentWorkflow.agents``)."""
    return objects_of(workflow, is_llm, "llm")


# -- attaching ---------------------------------------------------------------------------------


def hold_llms(llms: list[Any]) -> list[Patch]:
    """Count ``llms`` as held by one more attached workflow, with their classes' chat methods
    replaced (call under :data:`flowdbg.patching.LOCK`). Returns the patches to let go of."""
    methods = {name: _replacement(name, streams) for name, streams in _METHODS.items()}
    return _HELD.hold(llms, methods)


def release_llms(llms: list[Any], patches: list[Patch]) -> None:
    """Undo :func:`hold_llms` (under :data:`flowdbg.patching.LOCK`)."""
    _HELD.release(llms, patches)


def _replacement(name: str, streams: bool) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        if streams:

            async def stream_method(self: Any, *args: Any, **kwargs: Any) -> Any:
                caller = _caller(self)
                bound = original.__get__(self, type(self))
                if caller is None:
                    return await bound(*args, **kwargs)
                return await _call(*caller, self, name, bound, args, kwargs, streamed=True)

            method = stream_method
        else:

            async def chat_method(self: Any, *args: Any, **kwargs: Any) -> Any:
                caller = _caller(self)
                bound = original.__get__(self, type(self))
                if caller is None:
                    return await bound(*args, **kwargs)
                return await _call(*caller, self, name, bound, args, kwargs)

            method = chat_method
        return like(method, original, name)

    return make


# -- one call ----------------------------------------------------------------------------------


def _caller(llm: Any) -> tuple[_Run, Unit] | None:
    """The workflow run, and the step (or tool) unit in it, making a call on ``llm``, when the
    call is to be a unit."""
    if llm not in _HELD or _CALLING.get():
        return None
    run = RUN.get()
    if run is None or not run.runtime.active:
        return None
    parent = run.runtime.debugger.current_unit()
    return None if parent is None else (run, parent)


def label(llm: Any) -> str:
    """An llm unit's name: the model's name where it reports one, else its class name."""
    try:
        name = llm.metadata.model_name
    except Exception:
        name = None
    if isinstance(name, str) and name and name != "unknown":
        return name
    return type(llm).__name__


class _Arguments:
    """The arguments of a model call: where its messages (or a completion's prompt) are, and
    the call with others."""

    __slots__ = ("args", "completion", "kwargs", "messages", "prompt", "with_tools")

    def __init__(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.args = args
        self.kwargs = kwargs
        self.with_tools = name in _WITH_TOOLS
        self.completion = name in _COMPLETION
        self.messages: list[Any] = []
        self.prompt: Any = None
        if self.completion:  # (prompt, formatted=False, **kwargs)
            self.prompt = self._get(0, "prompt")
        elif self.with_tools:
            # (tools, user_msg=None, chat_history=None, ...): FunctionCallingLLM's signature;
            # the model receives the history, then the user message
            history = self._get(2, "chat_history") or []
            user = self._get(1, "user_msg")
            self.messages = [*history, *([] if user is None else [_message(user, "user")])]
        else:
            self.messages = list(self._get(0, "messages") or [])

    def _get(self, index: int, key: str) -> Any:
        if len(self.args) > index:
            return self.args[index]
        return self.kwargs.get(key)

    def _set(
        self, args: list[Any], kwargs: dict[str, Any], index: int, key: str, value: Any
    ) -> None:
        if len(args) > index:
            args[index] = value
        else:
            kwargs[key] = value

    @property
    def shown(self) -> dict[str, Any]:
        """The unit's input: what the model receives."""
        return {"prompt": self.prompt} if self.completion else {"messages": self.messages}

    def edited(self, payload: Any, node: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call's arguments for the input edited at the before stop."""
        if self.completion:
            return self.replaced(_edited_prompt(payload, node))
        return self.replaced(_edited_messages(payload, self.messages, node))

    def replaced(self, messages: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call's arguments with ``messages`` (a completion's prompt) instead of its own."""
        args, kwargs = list(self.args), dict(self.kwargs)
        if self.completion:
            self._set(args, kwargs, 0, "prompt", messages)
        elif self.with_tools:
            self._set(args, kwargs, 2, "chat_history", messages)
            if self._get(1, "user_msg") is not None:  # now the last of the messages
                self._set(args, kwargs, 1, "user_msg", None)
        else:
            self._set(args, kwargs, 0, "messages", messages)
        return tuple(args), kwargs


def _message(value: Any, role: str) -> Any:
    """``value`` as a ``ChatMessage``: a message as it is, text as a message of ``role``, a
    mapping validated as one.

    :raises EditRefused: for anything else, or a mapping that is no message.
    """
    from llama_index.core.base.llms.types import ChatMessage

    if isinstance(value, ChatMessage):
        return value
    if isinstance(value, str):
        return ChatMessage(role=role, content=value)
    if isinstance(value, Mapping):
        try:
            return ChatMessage.model_validate(dict(value))
        except Exception as exc:  # pydantic.ValidationError
            raise EditRefused(f"{dict(value)!r} is not a ChatMessage: {exc}") from exc
    raise EditRefused(
        f"a message is a ChatMessage, its text, or a mapping of its fields, not a "
        f"{type(value).__name__}"
    )


def _edited_messages(payload: Any, original: list[Any], node: str) -> list[Any]:
    """The messages of an edited input ``{"messages": [...]}``; text keeps the role of the
    message it replaces (``user`` for one added)."""
    if not isinstance(payload, Mapping) or set(payload) != {"messages"}:
        keys = sorted(payload) if isinstance(payload, Mapping) else type(payload).__name__
        raise EditRefused(
            f"the input of model call {node!r} is {{'messages': [...]}}, the messages the model "
            f"receives (not {keys}): edit messages[i] (a message, or its text), "
            "messages[i].content or messages[i].blocks[j].text"
        )
    messages = payload["messages"]
    if not isinstance(messages, (list, tuple)):
        raise EditRefused(
            f"the messages of model call {node!r} are a list, not a {type(messages).__name__}"
        )
    out = []
    for index, value in enumerate(messages):
        role = getattr(original[index], "role", "user") if index < len(original) else "user"
        out.append(_message(value, str(getattr(role, "value", role))))
    return out


def _edited_prompt(payload: Any, node: str) -> str:
    """The prompt of an edited completion input ``{"prompt": text}``."""
    if not isinstance(payload, Mapping) or set(payload) != {"prompt"}:
        keys = sorted(payload) if isinstance(payload, Mapping) else type(payload).__name__
        raise EditRefused(
            f"the input of model call {node!r} is {{'prompt': text}}, the prompt the model "
            f"completes (not {keys}): edit prompt"
        )
    prompt = payload["prompt"]
    if not isinstance(prompt, str):
        raise EditRefused(
            f"the prompt of model call {node!r} is text, not a {type(prompt).__name__}"
        )
    return prompt


def _edited_text(payload: Any, node: str) -> str:
    """The reply text an edit of a completion's output gives."""
    if not isinstance(payload, str):
        raise EditRefused(
            f"the output of model call {node!r} is the completion's text, not a "
            f"{type(payload).__name__}: set it to a string"
        )
    return payload


def _edited_reply(payload: Any, reply: Any) -> Any:
    """The reply message an edit of an llm unit's output gives: a message, a mapping of its
    fields, or text (a reply of just that text: tool calls the model asked for go with it)."""
    role = getattr(reply, "role", "assistant")
    return _message(payload, str(getattr(role, "value", role)))


def _checker(arguments: _Arguments) -> Callable[[Unit, str, Any], None]:
    def check_edit(unit: Unit, which: str, payload: Any) -> None:
        if which == "input":
            arguments.edited(payload, unit.node)
        elif arguments.completion:
            _edited_text(payload, unit.node)
        else:
            _edited_reply(payload, None)

    return check_edit


def _reply_of(response: Any, completion: bool) -> Any:
    """What an llm unit's output shows of a response: the reply message of a chat, the text of
    a completion."""
    return getattr(response, "text" if completion else "message", None)


def _with_reply(response: Any, reply: Any, completion: bool) -> Any:
    """``response`` (a ``ChatResponse`` or ``CompletionResponse``) carrying ``reply`` instead of
    its own."""
    return response.model_copy(update={"text" if completion else "message": reply})


def _edited_output(arguments: _Arguments, edited: Any, reply: Any, node: str) -> Any:
    if arguments.completion:
        return _edited_text(edited, node)
    return _edited_reply(edited, reply)


def _open(
    parent: Unit, llm: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Unit, _Arguments]:
    arguments = _Arguments(name, args, kwargs)
    unit = parent.frame().unit(
        label(llm), kind="llm", branch=call_branch(parent), check_edit=_checker(arguments)
    )
    note = getattr(parent, "note", None)  # the workflow's timeout stands still here too
    if note:
        unit.note = note
    return unit, arguments


async def _before(
    run: _Run, unit: Unit, arguments: _Arguments, state: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The before point; the call's arguments, with the messages (prompt) as edited there."""
    shown = arguments.shown
    edited = await _held(run, unit.abefore(state=state, input=shown))
    if edited is shown:
        return arguments.args, arguments.kwargs
    return arguments.edited(edited, unit.node)


async def _failed(run: _Run, unit: Unit, exc: BaseException, state: Any) -> BaseException:
    """Report a model call that raised; the exception to raise on."""
    if isinstance(exc, Exception):
        await _held(run, unit.aerror(exc, state=state))
        return exc
    raised = unit.discard(exc)  # terminate() cancelled the call: Terminated
    return exc if raised is None else raised


async def _call(
    run: _Run,
    parent: Unit,
    llm: Any,
    name: str,
    method: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    streamed: bool = False,
) -> Any:
    """One model call as a unit: its before point, the call, then its after point (for a
    streamed call, once the stream ends: see _streamed)."""
    unit, arguments = _open(parent, llm, name, args, kwargs)
    state = parent.state_before
    args, kwargs = await _before(run, unit, arguments, state)
    completion = arguments.completion
    token = _CALLING.set(True)
    try:
        # a rerun with recorded calls: the recorded reply to the same messages, without the
        # model (a rerun ending at its first divergence raises here, at the call's error point)
        served, recorded = unit.recorded(unit.record_value("input"))
        if served:
            response = _served_response(recorded, completion)
            await asyncio.sleep(0)  # a turn of the loop, as the call would give (_tools.py)
        else:
            response = await method(*args, **kwargs)
    except BaseException as exc:
        raised = await _failed(run, unit, exc, state)
        if raised is exc:
            raise
        raise raised from exc
    finally:
        _CALLING.reset(token)
    if served and streamed:
        return _streamed(run, unit, _one_chunk(response), state, arguments)
    if streamed:
        return _streamed(run, unit, response, state, arguments)
    reply = _reply_of(response, completion)
    edited = await _held(run, unit.aafter(output=reply, state=state))
    if edited is reply:
        return response
    return _with_reply(response, _edited_output(arguments, edited, reply, unit.node), completion)


def _served_response(recorded: Any, completion: bool) -> Any:
    """A model's response carrying a recorded reply (as the store gives it back: a message's
    fields, or a completion's text)."""
    from llama_index.core.base.llms.types import ChatResponse, CompletionResponse

    if completion:
        return CompletionResponse(text="" if recorded is None else str(recorded))
    if isinstance(recorded, Mapping):
        message = _message(recorded, "assistant")
    else:
        message = _message("" if recorded is None else str(recorded), "assistant")
    return ChatResponse(message=message)


async def _one_chunk(response: Any) -> AsyncIterator[Any]:
    """A served reply as a stream of one chunk holding the whole of it."""
    text = getattr(response, "text", None)
    if text is None:
        text = str(getattr(response.message, "content", None) or "")
    yield response.model_copy(update={"delta": text})


async def _streamed(
    run: _Run, unit: Unit, stream: Any, state: Any, arguments: _Arguments
) -> AsyncIterator[Any]:
    """The model's stream, chunk for chunk; when it ends, the unit's after point with the last
    chunk's message (the reply, as the agent takes it), or its text for a completion (each
    chunk's text is the reply so far). An edit of the reply there comes as one more chunk, with
    no text of its own (``delta=""``) and the edited message or text."""
    last = None
    try:
        while True:
            token = _CALLING.set(True)
            try:
                chunk = await stream.__anext__()
            except StopAsyncIteration:
                break
            finally:
                _CALLING.reset(token)
            last = chunk
            yield chunk
    except GeneratorExit as exc:  # the caller stopped reading: no reply to show
        unit.discard(exc)
        raise
    except BaseException as exc:
        raised = await _failed(run, unit, exc, state)
        if raised is exc:
            raise
        raise raised from exc
    completion = arguments.completion
    reply = _reply_of(last, completion)
    edited = await _held(run, unit.aafter(output=reply, state=state))
    if edited is not reply:
        new = _edited_output(arguments, edited, reply, unit.node)
        field = "text" if completion else "message"
        if last is None:
            from llama_index.core.base.llms.types import ChatResponse, CompletionResponse

            yield (CompletionResponse if completion else ChatResponse)(**{field: new}, delta="")
        else:
            yield last.model_copy(update={field: new, "delta": ""})
