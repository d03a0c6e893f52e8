"""Forks of recorded LangGraph runs, built without the user's checkpointer.

A fork runs a copy of the graph (``Pregel.copy``: it shares the attached graph's instrumented
nodes, so the run is debugged like any) compiled with an in-memory checkpointer of its own, on
a thread of its own, seeded from the record:

1. ``update_state(values, as_node=NODE)``: the recorded (and edited) state, written as the
   node of the forked step wrote its update. On a fresh thread every channel is empty, so a
   reducer channel (``operator.add``, ``add_messages``) ends up holding the recorded value
   itself; NODE's edges and routers run on it, as LangGraph runs them after NODE, and schedule
   the nodes the current code routes to.
2. ``invoke(None)`` runs them. When they schedule nothing but the record has nodes next (NODE
   chose them itself with ``Command(goto=...)``, which the update cannot repeat),
   ``invoke(Command(goto=NEXT))`` starts those instead.

A fork from step 0 runs the copy from the run's input.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from flowdbg.adapter import RunOptions

if TYPE_CHECKING:
    from flowdbg.timetravel import ForkPoint

__all__ = ["afork", "apart", "astream", "check_fork", "fork", "revived", "stream"]


def check_fork(target: Any, point: ForkPoint) -> None:
    """Refuse what the current graph cannot start from (see the module's docstring)."""
    from flowdbg.timetravel import ForkError

    nodes = [name for name in target.nodes if name != "__start__"]
    wanted = [*([point.node] if point.node is not None else []), *(point.next or ())]
    missing = [name for name in wanted if name not in target.nodes]
    if missing:
        raise ForkError(
            f"the record of step {point.step} names node {missing[0]!r}, which graph "
            f"{getattr(target, 'name', '?')!r} no longer has (its nodes: {', '.join(nodes)}); "
            "fork after another step, or give the graph that has it (--target)"
        )
    keys = getattr(target, "stream_channels", None)
    if point.edits and isinstance(keys, list | tuple):
        # LangGraph writes the state back through the graph's channels: a key outside them
        # would be dropped without a word
        for path, first in point.state_keys().items():
            if first not in keys:
                raise ForkError(
                    f"the edit {path!r} sets {first!r}, which graph "
                    f"{getattr(target, 'name', '?')!r} has no state key for (its keys: "
                    f"{', '.join(keys)}); LangGraph would drop it"
                )
    if point.node is not None and not isinstance(point.state, dict):
        raise ForkError(
            f"the state after step {point.step} was recorded as a "
            f"{type(point.state).__name__}, not the mapping of channels a fork writes back"
        )


def _start(target: Any, point: ForkPoint, options: RunOptions | None) -> tuple[Any, Any]:
    """The graph copy to run and its config (on a new thread of an in-memory checkpointer)."""
    return apart(target, options, "fork")


def apart(target: Any, options: RunOptions | None, what: str = "rerun") -> tuple[Any, Any]:
    """A copy of ``target`` with an in-memory checkpointer of its own, and the config of
    ``options`` on a new thread of it: a run there neither reads nor writes the threads of the
    user's checkpointer (a fork, a rerun).

    ``Pregel.copy`` keeps the attached graph's instrumented nodes, so the copy is debugged."""
    from langgraph.checkpoint.memory import InMemorySaver

    graph = target.copy(update={"checkpointer": InMemorySaver()})
    config = dict((options.config if options is not None else None) or {})
    configurable = dict(config.get("configurable") or {})
    configurable["thread_id"] = f"flowdbg-{what}-{uuid.uuid4().hex}"
    configurable.pop("checkpoint_id", None)  # a checkpoint of the user's, not of this thread
    config["configurable"] = configurable
    return graph, config


#: the ``type`` of each LangChain message class (``BaseMessage.model_dump()`` writes it)
_MESSAGE_TYPES = frozenset({"human", "ai", "system", "tool", "function", "chat", "remove"})


def revived(graph: Any, state: Any) -> Any:
    """``state`` as recorded, with the messages of ``add_messages`` channels made messages
    again: the record keeps a message as its fields (``model_dump()``), which LangChain's
    ``messages_from_dict`` rebuilds exactly, where ``add_messages`` given the mapping itself
    would put the fields it does not take (an AI message's ``tool_calls`` and
    ``usage_metadata``) into ``additional_kwargs``, so that a model asked again would not be
    asked what it was (a rerun's served call would not match). Other values are left as they
    are; a mapping that is no message stays a mapping."""
    if not isinstance(state, dict):
        return state
    from langchain_core.messages import messages_from_dict
    from langgraph.graph.message import add_messages

    channels = getattr(graph, "channels", None) or {}
    out = dict(state)
    for key, value in state.items():
        if getattr(channels.get(key), "operator", None) is not add_messages:
            continue
        if not isinstance(value, list):
            continue
        items = []
        for item in value:
            if isinstance(item, dict) and item.get("type") in _MESSAGE_TYPES and "content" in item:
                try:
                    (item,) = messages_from_dict([{"type": item["type"], "data": item}])
                except Exception:  # not a message after all: add_messages reads it as it can
                    pass
            items.append(item)
        out[key] = items
    return out


def _first(point: ForkPoint, scheduled: Any) -> Any:
    from langgraph.types import Command

    if not scheduled and point.next:
        return Command(goto=list(point.next))
    return None


def fork(target: Any, point: ForkPoint, options: RunOptions | None) -> Any:
    """Run the fork in this thread (see the module's docstring)."""
    graph, config = _start(target, point, options)
    if point.node is None:  # from the run's input (step 0 of a run started afresh)
        return graph.invoke(point.state, config)
    graph.update_state(config, revived(graph, point.state), as_node=point.node)
    return graph.invoke(_first(point, graph.get_state(config).next), config)


async def afork(target: Any, point: ForkPoint, options: RunOptions | None) -> Any:
    """The async form of :func:`fork`."""
    graph, config = _start(target, point, options)
    if point.node is None:  # from the run's input (step 0 of a run started afresh)
        return await graph.ainvoke(point.state, config)
    await graph.aupdate_state(config, revived(graph, point.state), as_node=point.node)
    snapshot = await graph.aget_state(config)
    return await graph.ainvoke(_first(point, snapshot.next), config)


def stream(target: Any, point: ForkPoint, config: Any, kwargs: dict[str, Any]) -> Iterator[Any]:
    """The fork as ``target.stream(..., **kwargs)`` would give its chunks: how a run rewound
    at a stop goes on in the stream (or ``invoke``, which reads a stream) of its caller.
    ``config`` is the caller's (its thread and checkpoint are the fork's own)."""
    graph, config = _start(target, point, RunOptions(config=config))
    if point.node is None:  # from the run's input (step 0 of a run started afresh)
        yield from graph.stream(point.state, config, **kwargs)
        return
    graph.update_state(config, revived(graph, point.state), as_node=point.node)
    yield from graph.stream(_first(point, graph.get_state(config).next), config, **kwargs)


async def astream(
    target: Any, point: ForkPoint, config: Any, kwargs: dict[str, Any]
) -> AsyncIterator[Any]:
    """The async form of :func:`stream`."""
    graph, config = _start(target, point, RunOptions(config=config))
    if point.node is None:  # from the run's input (step 0 of a run started afresh)
        async for chunk in graph.astream(point.state, config, **kwargs):
            yield chunk
        return
    await graph.aupdate_state(config, revived(graph, point.state), as_node=point.node)
    snapshot = await graph.aget_state(config)
    async for chunk in graph.astream(_first(point, snapshot.next), config, **kwargs):
        yield chunk
