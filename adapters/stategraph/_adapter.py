"""The StateGraph adapter: instruments a compiled graph from outside, like a framework adapter.

How it hooks in (the pattern other adapters follow):

- the graph's run interceptor (``CompiledGraph.interceptor``, the engine's counterpart of a
  framework callback) opens a run around every ``invoke``/``ainvoke``
  (:meth:`flowdbg.Debugger.begin_run`); a graph invoked inside a node of another attached graph
  becomes its child run, because the node's unit is current in that context. Being consulted by
  the engine, it also catches ``run = app.invoke`` bound before attaching.
- every entry of ``CompiledGraph.nodes`` is replaced by a wrapper with the same interface that
  reports ``before``/``after``/``error`` of a :class:`flowdbg.Unit`, taking superstep, branch and
  attempt from the engine's task context, and the routing decision from ``Task.route``.
- during a run, the engine's call interceptor reports every :class:`Tool` and :class:`Model`
  call a node makes as a unit of kind ``tool`` or ``llm`` in the node's frame (one level deeper),
  with the arguments as its editable input.
- detach puts the original node objects back and clears the interceptor, so the graph is
  exactly as before.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from flowdbg.adapter import Adapter, Capability, Demo, RunOptions
from flowdbg.adapters.stategraph import _graph
from flowdbg.errors import AdapterError
from flowdbg.timetravel import Rewound

if TYPE_CHECKING:
    from flowdbg import Debugger, RunScope, Unit
    from flowdbg.timetravel import ForkPoint

__all__ = ["StateGraphAdapter"]

_RUN: contextvars.ContextVar[RunScope | None] = contextvars.ContextVar(
    "flowdbg_stategraph_run", default=None
)
_MARK = "_flowdbg_attachment"


class _Attachment:
    """What attach changed on one compiled graph, to undo it exactly."""

    def __init__(
        self,
        debugger: Debugger,
        nodes: dict[str, Any],
        owned_subgraphs: list[Any],
        interceptor: Any,
    ) -> None:
        self.debugger = debugger
        self.original_nodes = nodes
        self.owned_subgraphs = owned_subgraphs
        self.original_interceptor = interceptor


class _NodeHook:
    """Stands in for an engine ``Node`` and reports each call as a unit."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.fn = inner.fn
        self.retry = inner.retry
        self.retry_on = inner.retry_on
        self.subgraph = inner.subgraph

    # The two methods below are the per-node hot path: keep them flat.
    #
    # The state after a node is the engine's to compute: a task's ``details`` (its update
    # merged through the reducers, and its routes) is asked for only while a point is open and
    # someone looks. What the record keeps is the state the engine committed: each task of a
    # superstep receives it as its input (``settle``), the run's output is the last one; and
    # the routes the engine found for the update (``Task.routed``, a cache read).

    def invoke(self, state: dict[str, Any]) -> Any:
        scope = _RUN.get()
        task = _graph.CURRENT_TASK.get()
        if scope is None or task is None:
            return self.inner.invoke(state)
        scope.settle(state, superstep=task.superstep)  # (returns at once when nothing waits)
        unit = scope.unit(
            self.name, superstep=task.superstep, branch=task.branch, attempt=task.attempt
        )
        state = unit.before(state=state)
        if unit.input_edits:  # edited at the stop: the run's state keeps the edit
            _keep(task, unit.input_edits, state)
        try:
            out = self.inner.invoke(state)
        except Exception as exc:
            unit.error(exc, state=state)
            raise
        except BaseException as exc:
            unit.discard(exc)
            raise
        return unit.after(output=out, resolve=task.details, deferred=True, decide=task.routed)

    async def ainvoke(self, state: dict[str, Any]) -> Any:
        scope = _RUN.get()
        task = _graph.CURRENT_TASK.get()
        if scope is None or task is None:
            return await self.inner.ainvoke(state)
        scope.settle(state, superstep=task.superstep)  # (returns at once when nothing waits)
        unit = scope.unit(
            self.name, superstep=task.superstep, branch=task.branch, attempt=task.attempt
        )
        state = await unit.abefore(state=state)
        if unit.input_edits:
            _keep(task, unit.input_edits, state)
        try:
            out = await self.inner.ainvoke(state)
        except Exception as exc:
            await unit.aerror(exc, state=state)
            raise
        except BaseException as exc:
            raised = unit.discard(exc)  # terminate() cancelled it: Terminated
            if raised is exc or raised is None:
                raise
            raise raised from exc
        return await unit.aafter(
            output=out, resolve=task.details, deferred=True, decide=task.routed
        )

    def __repr__(self) -> str:
        return f"<flowdbg node hook {self.name!r} around {self.inner!r}>"


_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _check_arguments(target: Any, unit: Unit, which: str, payload: Any) -> None:
    """The ``check_edit`` of a tool or model call: edited arguments must be what its function
    takes (``fn(**args)``): no unknown name (unless it takes ``**kwargs``), every required one,
    and values of the annotated types, checked strictly with pydantic since the engine passes
    them on unconverted. Checked only when an edit is made (no cost to a run)."""
    from flowdbg.errors import EditRefused, refuse_unknown_arguments

    if which != "input" or not isinstance(payload, dict):
        return
    try:
        params = inspect.signature(target.fn).parameters
    except (TypeError, ValueError):  # a builtin or C function: nothing to check against
        return
    named = [name for name, p in params.items() if p.kind in _NAMED]
    what = f"{target.kind} {unit.node!r}"
    if not any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values()):
        refuse_unknown_arguments(what, payload, named)
    missing = [
        name
        for name in named
        if params[name].default is inspect.Parameter.empty and name not in payload
    ]
    if missing:
        raise EditRefused(
            f"{what} needs the argument {missing[0]!r}; set it instead of deleting it"
        )
    try:
        import typing

        hints = typing.get_type_hints(target.fn)
    except Exception:  # an annotation that does not resolve: types unchecked
        hints = {}
    problems = []
    for name, value in payload.items():
        hint = hints.get(name)
        if hint is None:
            continue
        try:
            _adapter_for(hint).validate_python(value, strict=True)
        except Exception as exc:  # pydantic.ValidationError; or a type pydantic cannot check
            errors = getattr(exc, "errors", None)
            if not callable(errors):
                continue
            problems += [f"{name}: {e.get('msg')}" for e in errors()]
    if problems:
        raise EditRefused(f"{what} refuses these arguments: {'; '.join(problems)}")


@functools.lru_cache(maxsize=256)
def _adapter_for(hint: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(hint)


def _keep(task: _graph.Task, keys: tuple[Any, ...], state: Any) -> None:
    """Keep the keys of the state edited at a node's before stop in the run's state: the
    engine replaces them for the superstep, and the superstep's updates apply after them."""
    for key in keys:
        if isinstance(state, dict) and key in state:
            task.replace(key, state[key])
        else:
            task.remove(key)


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
            Capability.TOOL_CALLS,
            Capability.TOOL_ARG_EDITING,
            Capability.LLM_CALLS,
            Capability.HANDOFFS,
            Capability.SUPERSTEPS,
            Capability.FORK,
            Capability.REWIND,
            Capability.CACHED_CALLS,  # its Tool and Model calls go through Unit.call
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
            target.nodes[name] = _NodeHook(node)
        target.__dict__[_MARK] = _Attachment(debugger, original, owned, target.interceptor)
        target.interceptor = _Reporter(debugger)

    def detach(self, target: Any) -> None:
        att: _Attachment | None = target.__dict__.pop(_MARK, None)
        if att is None:
            return
        target.nodes.clear()
        target.nodes.update(att.original_nodes)
        target.interceptor = att.original_interceptor
        for sub in att.owned_subgraphs:
            self.detach(sub)

    def describe(self, target: Any) -> dict[str, Any]:
        description: dict[str, Any] = target.describe()
        return description

    # -- forks: the state after the step, then the nodes the record routed to --

    def check_fork(self, target: Any, point: ForkPoint) -> None:
        from flowdbg.timetravel import ForkError

        missing = [name for name in point.next or () if name not in target.nodes]
        if missing:
            raise ForkError(
                f"the record routes from step {point.step} to {missing[0]!r}, which graph "
                f"{target.name!r} no longer has (its nodes: {', '.join(target.nodes)}); fork "
                "after another step, or run the graph that has it (--target)"
            )
        if point.state is not None and not isinstance(point.state, Mapping):
            raise ForkError(
                f"the state after step {point.step} is a {type(point.state).__name__}, not the "
                "mapping a StateGraph holds"
            )

    def fork(self, target: Any, point: ForkPoint, options: RunOptions | None = None) -> Any:
        self.check_fork(target, point)
        state = dict(point.state or {})
        return target.invoke(state, start_at=_fork_start(target, point, state))

    async def afork(self, target: Any, point: ForkPoint, options: RunOptions | None = None) -> Any:
        self.check_fork(target, point)
        state = dict(point.state or {})
        return await target.ainvoke(state, start_at=_fork_start(target, point, state))

    def demo(self) -> Demo:
        # The support-ticket graph lives beside the command line (flowdbg.cli._demo), which
        # also names it in its documentation; the tour is the adapter's, like any adapter's.
        return Demo(
            target="flowdbg.cli._demo:build_graph",
            input={"ticket": "My app crashes on start, I want my money back or a fix"},
            script=(
                "# stopped on entry, before the first node; where are we in the graph?",
                "l",
                "# break after the classifier, then continue to it",
                "b classify:after",
                "c",
                "p intent",
                "diff",
                "# the 'model' is only 62% sure, and the customer asks for a fix: answer, "
                "don't refund",
                'set intent = "question"',
                "n",
                "l",
                "log",
                "c",
            ),
            hint='try l, b classify:after, c, p intent, diff, set intent = "question", n, log, '
            "c (h for help)",
            summary="a support-ticket graph whose route changes when the state is edited",
        )


def _fork_start(target: Any, point: ForkPoint, state: dict[str, Any]) -> list[str] | None:
    """The nodes a fork runs first: where the current graph routes from the forked node given
    the (edited) state, or, for a node that chose its successor itself (a ``Goto``), the
    nodes the record says came next; ``None`` (the entry) for a fork from the input."""
    if point.node is None:
        return None
    routed = point.node in target.branches or any(src == point.node for src, _ in target.edges)
    if point.node in target.nodes and routed:
        return [name for name in target.successors(point.node, dict(state)) if name != _graph.END]
    return list(point.next or ())


class _Reporter:
    """The run and call interceptor the adapter installs on an attached graph."""

    def __init__(self, debugger: Debugger) -> None:
        self._dbg = debugger

    # -- runs --

    def run(self, graph: Any, state: Any, proceed: Callable[[Any], Any]) -> Any:
        try:
            with self._dbg.begin_run(
                framework="stategraph", name=graph.name, input=state, target=graph
            ) as scope:
                token = _RUN.set(scope)
                calls = _graph.CALL_INTERCEPTOR.set(self)
                try:
                    out = proceed(state)
                finally:
                    _graph.CALL_INTERCEPTOR.reset(calls)
                    _RUN.reset(token)
                scope.settle(out)  # the final state: what the last superstep committed
                scope.end(output=out)
        except Rewound as rewound:  # rewound at a stop: go on from its point in this call
            if rewound.run_id != scope.run_id:
                raise  # a nested run: its top-level run goes on
            with rewound.lineage():
                return self._dbg.adapter_for(graph).fork(graph, rewound.point)
        return out

    async def arun(self, graph: Any, state: Any, proceed: Callable[[Any], Any]) -> Any:
        try:
            async with self._dbg.begin_run(
                framework="stategraph", name=graph.name, input=state, target=graph
            ) as scope:
                token = _RUN.set(scope)
                calls = _graph.CALL_INTERCEPTOR.set(self)
                try:
                    out = await proceed(state)
                finally:
                    _graph.CALL_INTERCEPTOR.reset(calls)
                    _RUN.reset(token)
                scope.settle(out)
                scope.end(output=out)
        except Rewound as rewound:
            if rewound.run_id != scope.run_id:
                raise
            with rewound.lineage():
                return await self._dbg.adapter_for(graph).afork(graph, rewound.point)
        return out

    # -- tool and model calls made by a node --

    def _call_unit(self, target: Any) -> tuple[Unit, Unit] | None:
        parent = self._dbg.current_unit()
        if parent is None:
            return None
        if target.kind == "handoff":
            check: Any = self._check_handoff_edit
        else:  # a tool's or a model's arguments: what its function's signature takes
            check = functools.partial(_check_arguments, target)
        return parent.frame().unit(target.name, kind=target.kind, check_edit=check), parent

    def call(self, target: Any, args: dict[str, Any], proceed: Callable[[Any], Any]) -> Any:
        found = self._call_unit(target)
        if found is None:
            return proceed(args)
        unit, parent = found
        decide = self._handed_to if target.kind == "handoff" else None
        return unit.call(proceed, args, state=parent.state_before, decide=decide)

    async def acall(self, target: Any, args: dict[str, Any], proceed: Callable[[Any], Any]) -> Any:
        found = self._call_unit(target)
        if found is None:
            return await proceed(args)
        unit, parent = found
        decide = self._handed_to if target.kind == "handoff" else None
        return await unit.acall(proceed, args, state=parent.state_before, decide=decide)

    # -- handoffs: calls of kind "handoff", whose arguments and result are {"to", "payload"} --

    @staticmethod
    def _handed_to(result: Any) -> str | None:
        """A handoff's decision: the node it hands the run over to."""
        if not isinstance(result, dict):
            return None
        to = result.get("to")
        return to if isinstance(to, str) else None

    @staticmethod
    def _check_handoff_edit(unit: Unit, which: str, payload: Any) -> None:
        """The ``check_edit`` of a handoff: refuses an edit the engine could not follow. At
        the before stop the target and the payload may change; at the after stop the handoff
        has resolved its target, so only the payload."""
        from flowdbg.errors import EditRefused

        if (
            not isinstance(payload, dict)
            or set(payload) != {"to", "payload"}
            or not isinstance(payload["to"], str)
            or not (payload["payload"] is None or isinstance(payload["payload"], dict))
        ):
            raise EditRefused(
                f"handoff {unit.node!r} takes {{'to': node name, 'payload': dict or None}}; "
                "set 'to' to a node name, or keys inside 'payload'"
            )
        requested = unit.record_value("input")
        if which == "output" and isinstance(requested, dict) and payload["to"] != requested["to"]:
            raise EditRefused(
                f"handoff {unit.node!r} has resolved its target {requested['to']!r} at its after "
                "stop; change 'to' at its before stop instead (a handoff breakpoint: b "
                "handoff:NAME at the prompt, break_on_handoff in Python)"
            )
