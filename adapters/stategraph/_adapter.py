"""The StateGraph adapter: instruments a compiled graph from outside, like a framework adapter.

How it hooks in (the pattern other adapters follow):

- ``invoke``/``ainvoke`` are overridden on the *instance* to open a run around the original
  method (:meth:`flowdbg.Debugger.begin_run`); a graph invoked inside a node of another attached
  graph becomes its child run, because the node's unit is current in that context.
- every entry of ``CompiledGraph.nodes`` is replaced by a wrapper with the same interface that
  reports ``before``/``after``/``error`` of a :class:`flowdbg.Unit`, taking superstep, branch and
  attempt from the engine's task context, and the routing decision from ``Task.route``.
- detach puts the original node objects back and deletes the instance attributes, so the graph
  is exactly as before.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

from flowdbg.adapter import Adapter, Capability
from flowdbg.adapters.stategraph import _graph
from flowdbg.errors import AdapterError
from flowdbg.runtime import Unit

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger
    from flowdbg.runtime import RunScope

__all__ = ["StateGraphAdapter"]

_RUN: contextvars.ContextVar[RunScope | None] = contextvars.ContextVar(
    "flowdbg_stategraph_run", default=None
)
_MARK = "_flowdbg_attachment"


class _Attachment:
    """What attach changed on one compiled graph, to undo it exactly."""

    def __init__(self, debugger: Debugger, nodes: dict[str, Any], owned_subgraphs: list[Any]):
        self.debugger = debugger
        self.original_nodes = nodes
        self.owned_subgraphs = owned_subgraphs


class _NodeHook:
    """Stands in for an engine ``Node`` and reports each call as a unit."""

    def __init__(self, inner: Any, debugger: Debugger) -> None:
        self.inner = inner
        self.name = inner.name
        self.fn = inner.fn
        self.retry = inner.retry
        self.retry_on = inner.retry_on
        self.subgraph = inner.subgraph
        self._ctl = debugger._ctl

    def _decision(self, task: Any, out: Any) -> tuple[Any, Any]:
        """The state with ``out`` applied and the next nodes, for the after point."""
        try:
            return task.preview(out), list(task.route(out))
        except Exception:  # a bad update or a failing router: the engine reports it next
            return None, None

    # The two methods below are the per-node hot path: keep them flat.

    def invoke(self, state: dict[str, Any]) -> Any:
        scope = _RUN.get()
        task = _graph.CURRENT_TASK.get()
        if scope is None or task is None:
            return self.inner.invoke(state)
        unit = Unit(
            scope,
            self.name,
            "node",
            next(scope._counter),
            task.superstep,
            task.branch,
            task.attempt,
        )
        state = unit.before(state=state)
        try:
            out = self.inner.invoke(state)
        except Exception as exc:
            unit.error(exc, state=state)
            raise
        except BaseException:
            unit.discard()
            raise
        if not self._ctl.wants_after_state:
            return unit.after(output=out)
        preview, decision = self._decision(task, out)
        return unit.after(output=out, state=preview, decision=decision)

    async def ainvoke(self, state: dict[str, Any]) -> Any:
        scope = _RUN.get()
        task = _graph.CURRENT_TASK.get()
        if scope is None or task is None:
            return await self.inner.ainvoke(state)
        unit = Unit(
            scope,
            self.name,
            "node",
            next(scope._counter),
            task.superstep,
            task.branch,
            task.attempt,
        )
        state = await unit.abefore(state=state)
        try:
            out = await self.inner.ainvoke(state)
        except Exception as exc:
            await unit.aerror(exc, state=state)
            raise
        except BaseException:
            unit.discard()
            raise
        if not self._ctl.wants_after_state:
            return await unit.aafter(output=out)
        preview, decision = self._decision(task, out)
        return await unit.aafter(output=out, state=preview, decision=decision)

    def __repr__(self) -> str:
        return f"<flowdbg node hook {self.name!r} around {self.inner!r}>"


class StateGraphAdapter(Adapter):
    """Adapter for :class:`flowdbg.adapters.stategraph.CompiledGraph`."""

    name = "stategraph"
    extra = ""
    requires = ()
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
        }
    )

    def matches(self, target: Any) -> bool:
        return isinstance(target, _graph.CompiledGraph)

    def attach(self, target: Any, debugger: Debugger) -> None:
        existing: _Attachment | None = target.__dict__.get(_MARK)
        if existing is not None:
            if existing.debugger is debugger:
                return
            raise AdapterError(
                f"graph {target.name!r} is already attached to another Debugger; "
                "detach it there first (dbg.detach(graph))"
            )
        owned = []
        for node in target.nodes.values():
            sub = getattr(node, "subgraph", None)
            if sub is not None and _MARK not in sub.__dict__:
                self.attach(sub, debugger)
                owned.append(sub)
        original = dict(target.nodes)
        for name, node in original.items():
            target.nodes[name] = _NodeHook(node, debugger)
        target.__dict__[_MARK] = _Attachment(debugger, original, owned)
        target.invoke = _run_wrapper(target, debugger, type(target).invoke.__get__(target))
        target.ainvoke = _arun_wrapper(target, debugger, type(target).ainvoke.__get__(target))

    def detach(self, target: Any) -> None:
        att: _Attachment | None = target.__dict__.pop(_MARK, None)
        if att is None:
            return
        target.nodes.clear()
        target.nodes.update(att.original_nodes)
        target.__dict__.pop("invoke", None)
        target.__dict__.pop("ainvoke", None)
        for sub in att.owned_subgraphs:
            self.detach(sub)

    def describe(self, target: Any) -> dict[str, Any]:
        description: dict[str, Any] = target.describe()
        return description


def _run_wrapper(graph: Any, debugger: Debugger, original: Any) -> Any:
    def invoke(state: Any, *args: Any, **kwargs: Any) -> Any:
        scope = debugger.begin_run(framework="stategraph", name=graph.name, input=state)
        token = _RUN.set(scope)
        try:
            out = original(state, *args, **kwargs)
        except BaseException as exc:
            scope.end(error=exc)
            raise
        finally:
            _RUN.reset(token)
        scope.end(output=out)
        return out

    invoke.__wrapped__ = original  # type: ignore[attr-defined]
    invoke.__doc__ = original.__doc__
    return invoke


def _arun_wrapper(graph: Any, debugger: Debugger, original: Any) -> Any:
    async def ainvoke(state: Any, *args: Any, **kwargs: Any) -> Any:
        scope = debugger.begin_run(framework="stategraph", name=graph.name, input=state)
        token = _RUN.set(scope)
        try:
            out = await original(state, *args, **kwargs)
        except BaseException as exc:
            scope.end(error=exc)
            raise
        finally:
            _RUN.reset(token)
        scope.end(output=out)
        return out

    ainvoke.__wrapped__ = original  # type: ignore[attr-defined]
    ainvoke.__doc__ = original.__doc__
    return ainvoke
