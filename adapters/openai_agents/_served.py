"""Model turns of a rerun served from the record (capability ``cached_calls``).

The run hooks only observe a model call: ``on_llm_start`` comes before it, ``on_llm_end`` after,
and neither can keep it from being made. So in a rerun with recorded calls the model itself is
replaced, for that run only: the SDK resolves the model of each turn with ``get_model(agent,
run_config)`` (run_internal/turn_preparation.py, imported by name into run_loop.py, which calls
it in ``get_new_response`` and ``run_single_turn_streamed``), and the adapter's patch of that
name hands a debugged rerun a ``RecordedModel`` standing for the model it would resolve (one per
agent and run, which resolves the model only when a turn runs live: a rerun whose turns are
all served never makes the provider's model, nor needs its credentials). Every other run gets
the model itself, after one check.

The SDK calls ``on_llm_start`` between resolving the model and calling it, so when it next
asks the model anything for the turn (whether it takes a prompt cache key, then
``get_response`` or ``stream_response``) the turn's llm unit is open, with its input as its
before point left it (edits included). The wrapper asks the unit then whether the record serves
it (:meth:`flowdbg.runtime.Unit.recorded`, once per turn: see ``AgentRun.served_turn``) and
either returns the recorded reply rebuilt into the SDK's own objects, or calls the model.

What is rebuilt from the record (an llm unit's output is ``{"output": [items], "usage":
usage}``, stored as JSON):

- the output items, validated as the Responses API's ``ResponseOutputItem`` models. The store
  keeps every field of a pydantic model (``model_dump(mode="json")``), unset ones as ``null``;
  the SDK replays an item to the model as ``model_dump(exclude_unset=True)``
  (items.py, ``_output_item_to_input_item``), so a field given as ``None`` would appear in the
  next turn's input and make it differ from the record's. Keys holding ``null`` are left out:
  the rebuilt item replays as the model's own did (a model that sets a field to ``None``
  explicitly is the exception, and its next turn runs live);
- the usage the record kept (``agents.usage.Usage``), else zero;
- for a streamed turn, the events the SDK's streamed loop reads (run_loop.py,
  ``run_single_turn_streamed``): ``response.created``, then per output item
  ``response.output_item.added``, one ``response.output_text.delta`` with the whole text of
  each message part, ``response.output_item.done``, and ``response.completed`` carrying the
  response (the loop takes the turn's output, usage and id from it).

Only public names of flowdbg are used here (``tests/test_meta.py`` checks it).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowdbg.adapters.openai_agents._runtime import AgentRun

__all__ = ["model_response", "recorded_model_class", "stream_events"]

_CLASSES: list[type] = []


def recorded_model_class() -> type:
    """The SDK ``Model`` subclass a rerun's model turns go through (built on first use: the
    SDK is imported lazily)."""
    if _CLASSES:
        return _CLASSES[0]
    from agents.models.interface import Model

    class RecordedModel(Model):
        """A model of a rerun with recorded calls: a turn whose input matches the record's is
        answered from the record; any other is passed to the model."""

        def __init__(self, resolve: Callable[[], Any], run: AgentRun) -> None:
            self.flowdbg_resolve = resolve
            self.flowdbg_resolved: Any = None
            self.flowdbg_run = run

        @property
        def flowdbg_model(self) -> Any:
            """The model itself, resolved when first needed: a rerun whose turns are all served
            never makes it (a provider's model wants its client, and its credentials)."""
            if self.flowdbg_resolved is None:
                self.flowdbg_resolved = self.flowdbg_resolve()
            return self.flowdbg_resolved

        def __getattr__(self, name: str) -> Any:
            # what the SDK reads of a model besides its calls
            if name.startswith("flowdbg_"):  # (a copy being made: not set yet)
                raise AttributeError(name)
            return getattr(self.flowdbg_model, name)

        def _supports_default_prompt_cache_key(self) -> bool:
            # asked before every turn, once on_llm_start has opened it (run_loop.py,
            # prompt_cache_key.py): a served turn needs no key, and the model is not made for it
            served, _ = self.flowdbg_run.served_turn()
            if served:
                return False
            supports = getattr(self.flowdbg_model, "_supports_default_prompt_cache_key", None)
            return bool(supports()) if callable(supports) else False

        def __repr__(self) -> str:
            return f"<flowdbg recorded calls around {self.flowdbg_resolved!r}>"

        def get_retry_advice(self, request: Any) -> Any:
            return self.flowdbg_model.get_retry_advice(request)

        async def close(self) -> None:
            if self.flowdbg_resolved is not None:
                await self.flowdbg_resolved.close()

        async def _cleanup_on_run_end(self, owner: object) -> None:
            cleanup = getattr(self.flowdbg_resolved, "_cleanup_on_run_end", None)
            if cleanup is not None:
                await cleanup(owner)

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            served, recorded = self.flowdbg_run.served_turn()
            if served:
                return model_response(recorded)
            return await self.flowdbg_model.get_response(*args, **kwargs)

        def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            return self._stream(args, kwargs)

        async def _stream(
            self, args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> AsyncIterator[Any]:
            # asked when the SDK starts reading the stream: after on_llm_start, like a call
            served, recorded = self.flowdbg_run.served_turn()
            if served:
                for event in stream_events(model_response(recorded)):
                    yield event
                return
            stream = self.flowdbg_model.stream_response(*args, **kwargs)
            try:
                async for event in stream:
                    yield event
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()

    _CLASSES.append(RecordedModel)
    return RecordedModel


def _without_nulls(value: Any) -> Any:
    """``value`` with the mapping keys that hold ``None`` left out, at every depth."""
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _usage(recorded: Any) -> Any:
    """An ``agents.usage.Usage`` of the counts a recorded turn's usage kept (zero for any it
    did not)."""
    from agents.usage import Usage
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

    usage = recorded if isinstance(recorded, Mapping) else {}
    made = Usage(
        requests=_count(usage, "requests"),
        input_tokens=_count(usage, "input_tokens"),
        output_tokens=_count(usage, "output_tokens"),
        total_tokens=_count(usage, "total_tokens"),
    )
    for key, model in (
        ("input_tokens_details", InputTokensDetails),
        ("output_tokens_details", OutputTokensDetails),
    ):
        details = usage.get(key)
        if isinstance(details, Mapping):
            try:
                setattr(made, key, model.model_validate(details))
            except ValueError:  # fields of another version of openai: the zero counts stay
                pass
    return made


@functools.cache
def _output_items() -> Any:
    """The validator of the Responses API's output items, built once: pydantic builds a
    ``TypeAdapter`` of that union in about 13 ms, which each served model turn paid."""
    from openai.types.responses import ResponseOutputItem
    from pydantic import TypeAdapter

    return TypeAdapter(ResponseOutputItem)


def model_response(recorded: Any) -> Any:
    """The ``ModelResponse`` of a recorded model turn (an llm unit's output as the store gives
    it back: ``{"output": [items], "usage": usage}``).

    :raises ValueError: an item the Responses API's output item models refuse (a record made
        by another version of the SDK).
    """
    from agents.items import ModelResponse

    value = recorded if isinstance(recorded, Mapping) else {}
    items = value.get("output") or []
    adapter = _output_items()
    output = [adapter.validate_python(_without_nulls(item)) for item in items]
    return ModelResponse(
        output=output, usage=_usage(value.get("usage")), response_id=None, request_id=None
    )


def stream_events(response: Any) -> list[Any]:
    """The stream events of a served streamed turn (see the module's docstring)."""
    from openai.types.responses import (
        Response,
        ResponseCompletedEvent,
        ResponseCreatedEvent,
        ResponseOutputItemAddedEvent,
        ResponseOutputItemDoneEvent,
        ResponseTextDeltaEvent,
        ResponseUsage,
    )

    usage = response.usage
    full = Response(
        id="recorded",
        created_at=0,
        model="recorded",
        object="response",
        output=list(response.output),
        tool_choice="auto",
        tools=[],
        parallel_tool_calls=False,
        status="completed",
        usage=ResponseUsage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            total_tokens=usage.total_tokens,
            input_tokens_details=usage.input_tokens_details,
            output_tokens_details=usage.output_tokens_details,
        ),
    )
    # the served turn has no response id of the provider (as ModelResponse.response_id above):
    # the SDK takes None for one (its own scripted model gives it so)
    object.__setattr__(full, "id", None)
    started = full.model_copy(update={"output": [], "status": "in_progress", "usage": None})
    events: list[Any] = [
        ResponseCreatedEvent(type="response.created", response=started, sequence_number=0)
    ]
    for index, item in enumerate(response.output):
        events.append(
            ResponseOutputItemAddedEvent(
                type="response.output_item.added",
                item=item,
                output_index=index,
                sequence_number=len(events),
            )
        )
        if getattr(item, "type", None) == "message":
            for part, content in enumerate(getattr(item, "content", None) or ()):
                text = getattr(content, "text", None)
                if isinstance(text, str):
                    events.append(
                        ResponseTextDeltaEvent(
                            type="response.output_text.delta",
                            item_id=str(getattr(item, "id", "") or ""),
                            output_index=index,
                            content_index=part,
                            delta=text,
                            logprobs=[],
                            sequence_number=len(events),
                        )
                    )
        events.append(
            ResponseOutputItemDoneEvent(
                type="response.output_item.done",
                item=item,
                output_index=index,
                sequence_number=len(events),
            )
        )
    events.append(
        ResponseCompletedEvent(
            type="response.completed", response=full, sequence_number=len(events)
        )
    )
    return events
