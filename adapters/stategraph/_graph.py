"""flowdbg's reference StateGraph engine.

A small, self-contained graph engine that runs nodes in Pregel-style *supersteps* over a dict
state. It has no dependency on the debugger: the debugger adapter instruments it from outside, by
reading :data:`CURRENT_TASK` while a node runs and by replacing entries of
:attr:`CompiledGraph.nodes` with wrappers that have the same interface as :class:`Node`.

Execution model:

* The state is a ``dict[str, Any]``. A node is a function ``fn(state)`` (sync or ``async def``)
  that returns a partial update (a mapping) or ``None``; a :class:`CompiledGraph` can be a node too
  (a *subgraph*).
* Superstep 1 runs the entry node(s). Every node active in a superstep receives its own shallow
  copy of the same state snapshot; the nodes of a superstep run concurrently (threads under
  :meth:`CompiledGraph.invoke`, tasks under :meth:`CompiledGraph.ainvoke`).
* After the superstep the updates are merged in superstep order: keys with a reducer go through
  ``reducer(old, new)``; a key without a reducer written by two nodes of the same superstep is an
  :class:`InvalidUpdateError`.
* The next superstep runs the union of the successors of the nodes that ran (static edges and
  router results, each router evaluated on the state as its node sees it after its own update);
  a node reached several times runs once. The run ends when no node is active.
* A node may instead hand the run over: it returns :func:`handoff` ``(to, **payload)``, a
  :class:`Goto` update, and only node ``to`` follows it (its edges and routers are not followed),
  the way an agent hands a conversation over to another agent.

Example::

    graph = StateGraph(reducers={"log": operator.add})
    graph.add_node("a", lambda s: {"log": ["a"]}).add_node("b", lambda s: {"log": ["b"]})
    graph.add_edge(START, "a").add_edge("a", "b")
    graph.compile().invoke({"log": []})  # {'log': ['a', 'b']}
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import anyio.to_thread

from flowdbg.errors import FlowdbgError

__all__ = [
    "CALL_INTERCEPTOR",
    "CURRENT_TASK",
    "END",
    "START",
    "Branch",
    "Call",
    "CallInterceptor",
    "CompiledGraph",
    "Goto",
    "GraphRecursionError",
    "Handoff",
    "InvalidGraphError",
    "InvalidUpdateError",
    "Model",
    "Node",
    "NodeLike",
    "RunInterceptor",
    "StateGraph",
    "StateGraphError",
    "Task",
    "Tool",
    "ahandoff",
    "handoff",
    "tool",
]

START = "__start__"
"""Virtual source node: edges from it name the entry node(s) of a graph."""

END = "__end__"
"""Virtual target node: routing a branch to it ends that branch."""

_RESERVED = frozenset({START, END})
_ROUTE_CACHE_SIZE = 4
#: the value of a key a task removed from the state (see Task.remove)
_REMOVED: Any = object()

Reducer = Callable[[Any, Any], Any]
Router = Callable[[dict[str, Any]], Any]
_Outcome = tuple[Mapping[str, Any] | None, BaseException | None]


# --------------------------------------------------------------------------------------- errors


class StateGraphError(FlowdbgError):
    """Base class of the errors raised by the StateGraph engine."""


class InvalidGraphError(StateGraphError, ValueError):
    """The graph is malformed.

    Raised while building or compiling a graph (unknown node names, missing entry point, reserved or
    duplicate names, ...), and at run time when a router returns something that is not a node of
    the graph.
    """


class InvalidUpdateError(StateGraphError):
    """A node returned a bad update, or parallel nodes wrote the same key without a reducer."""


class GraphRecursionError(StateGraphError, RecursionError):
    """A run needed more supersteps than its step limit allows."""


# ---------------------------------------------------------------------------------- the task


@dataclass(eq=False, slots=True)
class Task:
    """One execution of one node in one superstep, as seen from inside the node.

    The engine creates a task per active node and superstep, and sets :data:`CURRENT_TASK` to it
    in the thread or async task that runs the node (for the node call, its retries and the
    evaluation of its routers).

    :param graph: the compiled graph running the node.
    :param node: the node's name.
    :param superstep: the 1-based superstep number within this run.
    :param branch: an id unique within one run, ``f"{superstep}:{node}"``.
    :param attempt: the 1-based attempt number; the engine increments it before each retry.
    :param state: the state the node receives: the very dict object passed to the node's
        ``invoke``/``ainvoke`` (a shallow copy of the superstep snapshot, private to this task;
        the same object is passed again on retries).
    :param base: the committed state at the start of the superstep, shared by all tasks of the
        superstep and never mutated; :meth:`preview` merges updates into a copy of it. ``None``
        means "use :attr:`state`".
    :param parent: the task of the enclosing graph when this graph runs as a subgraph node,
        else ``None``.
    """

    graph: CompiledGraph
    node: str
    superstep: int
    branch: str
    attempt: int
    state: dict[str, Any]
    base: Mapping[str, Any] | None = field(default=None, repr=False)
    parent: Task | None = field(default=None, repr=False)
    # The route cache (see route): the last update and its routes, older ones in _older.
    _route_for: object = field(default=None, init=False, repr=False)
    _route: tuple[str, ...] | None = field(default=None, init=False, repr=False)
    _older: list[tuple[object, tuple[str, ...]]] | None = field(
        default=None, init=False, repr=False
    )
    #: keys of the run's state this task replaced (:meth:`replace`), ``_REMOVED`` for removed
    replaced: dict[str, Any] | None = field(default=None, init=False, repr=False)

    def replace(self, key: str, value: Any) -> None:
        """Replace ``key`` of the run's state for this superstep and after: the node receives
        ``value`` (on retries too), and the superstep's updates, this task's own among them,
        are merged on top of it. A debugger calls this when the state a node receives is
        edited before the node runs, so that the run keeps the edit.

        :raises InvalidUpdateError: if ``key`` is not a string.
        """
        if not isinstance(key, str):
            raise InvalidUpdateError(f"state keys are strings; cannot replace key {key!r}")
        if self.replaced is None:
            self.replaced = {}
        self.replaced[key] = value
        self.state[key] = value

    def remove(self, key: str) -> None:
        """Remove ``key`` from the run's state for this superstep and after (see
        :meth:`replace`); an update of the superstep writing it adds it again."""
        if self.replaced is None:
            self.replaced = {}
        self.replaced[key] = _REMOVED
        self.state.pop(key, None)

    def preview(self, update: Mapping[str, Any] | None) -> dict[str, Any]:
        """Return the state as it would be after applying ``update`` alone (nothing is committed).

        :param update: an update as returned by the node, or ``None``.
        :returns: a new dict: the superstep snapshot with ``update`` merged through the graph's
            reducers.
        :raises InvalidUpdateError: if ``update`` is not a mapping with string keys, or a reducer
            fails on it.
        """
        base = self.state if self.base is None else self.base
        checked = _check_update(self.node, update)
        result = dict(base)
        if self.replaced:
            _replace(result, self.replaced)
        if checked:
            _apply(self.graph.reducers, result, checked, self.node, self.superstep)
        return result

    def route(self, update: Mapping[str, Any] | None) -> tuple[str, ...]:
        """Return the nodes this task leads to if the node returns ``update``.

        Static edge targets come first, then router results evaluated on
        :meth:`preview` ``(update)``; :data:`END` is included when a branch goes there, and
        duplicates are dropped. A :class:`Goto` update leads to its target alone. Results are
        cached by the identity of ``update``: a second call with the same object returns the
        cached tuple without running the routers again (the engine schedules the next superstep
        with ``task.route(final_update)``).

        :param update: an update as returned by the node, or ``None``.
        :returns: the successor node names, in deterministic order.
        :raises InvalidUpdateError: if ``update`` is not a valid update.
        :raises InvalidGraphError: if a router returns, or a :class:`Goto` names, something that
            is not a node of the graph.
        """
        last = self._route
        if last is not None:
            if self._route_for is update:
                return last
            older = self._older
            if older is not None:
                for cached_update, cached in older:
                    if cached_update is update:
                        return cached
        if isinstance(update, Goto):
            routes = self.graph._handed_to(self.node, update)
        else:
            routes = self.graph.successors(self.node, self.preview(update))
        if last is not None:  # keep the previous one too (an edited update and the original)
            if self._older is None:
                self._older = []
            self._older.append((self._route_for, last))
            del self._older[: -(_ROUTE_CACHE_SIZE - 1)]
        self._route_for = update
        self._route = routes
        return routes

    def routed(self, update: Mapping[str, Any] | None) -> list[str] | None:
        """The nodes :meth:`route` found for ``update``, if it was asked; computes nothing (so
        it runs no reducer or router and may be asked from any thread once the task is done).

        :returns: a new list of the successor names, or ``None`` when ``update`` was not routed.
        """
        if self._route is not None:
            if self._route_for is update:
                return list(self._route)
            for cached_update, cached in self._older or ():
                if cached_update is update:
                    return list(cached)
        return None

    def details(self, update: Mapping[str, Any] | None) -> tuple[Any, Any]:
        """``(preview(update), list(route(update)))``, or ``(None, None)`` for an update the
        engine will reject itself (observers call this; it never raises)."""
        try:
            return self.preview(update), list(self.route(update))
        except Exception:
            return None, None


CURRENT_TASK: contextvars.ContextVar[Task | None] = contextvars.ContextVar(
    "flowdbg_stategraph_current_task", default=None
)
"""The :class:`Task` whose node is running in the current context, or ``None``."""


# ---------------------------------------------------------------------------------- the nodes


class NodeLike(Protocol):
    """The interface the engine needs from an entry of :attr:`CompiledGraph.nodes`.

    :class:`Node` implements it; the debugger replaces nodes by wrappers implementing it too.
    """

    @property
    def name(self) -> str:
        """The node's name."""
        ...

    @property
    def retry(self) -> int:
        """How many extra attempts the engine makes when the node fails."""
        ...

    @property
    def retry_on(self) -> tuple[type[BaseException], ...]:
        """The exception types that trigger a retry."""
        ...

    @property
    def subgraph(self) -> CompiledGraph | None:
        """The compiled graph the node runs, if it is a subgraph node."""
        ...

    def invoke(self, state: dict[str, Any]) -> Any:
        """Run the node once, synchronously, and return its update."""
        ...

    async def ainvoke(self, state: dict[str, Any]) -> Any:
        """Run the node once, asynchronously, and return its update."""
        ...


class Node:
    """One compiled node: a function (sync or async) or a subgraph.

    :param name: the node's name.
    :param fn: ``fn(state)`` returning an update mapping or ``None`` (plain or ``async def``), or
        a :class:`CompiledGraph` (the node is then a subgraph: it receives the parent state and
        its update is the part of the subgraph's final state that differs from that input).
    :param retry: extra attempts the engine makes when ``fn`` raises one of ``retry_on``.
    :param retry_on: exception types that trigger a retry (only :class:`Exception` subclasses
        are ever retried).
    """

    def __init__(
        self,
        name: str,
        fn: Any,
        *,
        retry: int = 0,
        retry_on: tuple[type[BaseException], ...] = (Exception,),
    ) -> None:
        self.name = name
        self.fn = fn
        self.retry = retry
        self.retry_on = retry_on
        self.subgraph: CompiledGraph | None = fn if isinstance(fn, CompiledGraph) else None
        self.is_async = self.subgraph is None and _is_async_callable(fn)

    def __repr__(self) -> str:
        kind = "subgraph" if self.subgraph is not None else "async" if self.is_async else "sync"
        return f"Node({self.name!r}, {kind}, retry={self.retry})"

    def invoke(self, state: dict[str, Any]) -> Any:
        """Run the node once in the calling thread (retries are the engine's job).

        A sync function is called directly; an async one is run with :func:`asyncio.run`, which
        needs the thread to have no running event loop; a subgraph runs through
        ``self.subgraph.invoke`` (looked up at call time).

        :param state: the state the node receives.
        :returns: the node's update (whatever ``fn`` returned; the engine validates it).
        :raises StateGraphError: if the node is async and an event loop is running in this
            thread.
        """
        if self.subgraph is not None:
            return _changed_keys(state, self.subgraph.invoke(state))
        if self.is_async:
            self._refuse_in_loop()
            return asyncio.run(self.fn(state))
        result = self.fn(state)
        if inspect.iscoroutine(result):
            if _event_loop_running():
                result.close()
                self._refuse_in_loop()
            return asyncio.run(result)
        return result

    async def ainvoke(self, state: dict[str, Any]) -> Any:
        """Run the node once from async code (retries are the engine's job).

        An async function is awaited; a sync one runs in a worker thread
        (:func:`anyio.to_thread.run_sync`) with a copy of the caller's context variables; a
        subgraph runs through ``await self.subgraph.ainvoke`` (looked up at call time).

        :param state: the state the node receives.
        :returns: the node's update (whatever ``fn`` returned; the engine validates it).
        """
        if self.subgraph is not None:
            return _changed_keys(state, await self.subgraph.ainvoke(state))
        if self.is_async:
            return await self.fn(state)
        context = contextvars.copy_context()
        result = await anyio.to_thread.run_sync(context.run, self.fn, state)
        if inspect.isawaitable(result):
            result = await result
        return result

    def _refuse_in_loop(self) -> None:
        if _event_loop_running():
            raise StateGraphError(
                f"async node {self.name!r} cannot run under invoke() while an event loop is "
                "running in this thread; call 'await graph.ainvoke(...)' instead"
            )


@dataclass(frozen=True, eq=False)
class Branch:
    """A conditional edge: a router function and an optional mapping of its results.

    :param router: ``router(state)`` returning a node name, :data:`END`, or a list/tuple of
        them (fan-out); with ``mapping``, the returned value(s) are keys of ``mapping``.
    :param mapping: translates router results to node names (or :data:`END`).
    """

    router: Router
    mapping: Mapping[Any, str] | None = None

    @property
    def name(self) -> str:
        """The router's ``__name__`` (or its type name for callables without one)."""
        return str(getattr(self.router, "__name__", type(self.router).__name__))

    @property
    def targets(self) -> tuple[str, ...] | None:
        """The possible targets when a mapping is known (without duplicates), else ``None``."""
        if self.mapping is None:
            return None
        return tuple(dict.fromkeys(self.mapping.values()))

    def resolve(self, source: str, state: dict[str, Any]) -> tuple[str, ...]:
        """Run the router on ``state`` and return the target names (mapped when needed).

        :param source: the node the branch starts from (for error messages).
        :param state: the state given to the router.
        :returns: the target names in the router's order (not checked against the graph).
        :raises InvalidGraphError: if the result is not a name (or list of names), or is missing
            from the mapping.
        """
        result = self.router(state)
        if self.mapping is not None and _is_key_of(result, self.mapping):
            values: Sequence[Any] = (result,)
        elif isinstance(result, (list, tuple)):
            values = result
        else:
            values = (result,)
        names: list[str] = []
        for value in values:
            if self.mapping is not None:
                if not _is_key_of(value, self.mapping):
                    known = ", ".join(repr(key) for key in self.mapping)
                    raise InvalidGraphError(
                        f"router {self.name!r} of node {source!r} returned {value!r}, which is not "
                        f"a key of its mapping; return one of {known} or add it to the mapping"
                    )
                value = self.mapping[value]
            if not isinstance(value, str):
                raise InvalidGraphError(
                    f"router {self.name!r} of node {source!r} returned {value!r}; return a node "
                    "name, END, or a list of them (or pass a mapping to add_conditional_edges)"
                )
            names.append(value)
        return tuple(names)


# ---------------------------------------------------------------------------------- the graph


class CompiledGraph:
    """A validated, runnable graph, produced by :meth:`StateGraph.compile`.

    Its attributes are plain data the debugger may inspect; entries of :attr:`nodes` may be
    replaced by wrappers (the engine looks nodes up at call time).

    :param name: the graph's name.
    :param nodes: node name -> node.
    :param edges: static edges ``(source, target)``, including those from :data:`START` and to
        :data:`END`.
    :param branches: source node (or :data:`START`) -> its conditional edges.
    :param reducers: state key -> ``reducer(old, new)``.
    :param step_limit: the default maximum number of supersteps of a run.
    """

    def __init__(
        self,
        *,
        name: str,
        nodes: Mapping[str, NodeLike],
        edges: Iterable[tuple[str, str]],
        branches: Mapping[str, Iterable[Branch]],
        reducers: Mapping[str, Reducer],
        step_limit: int,
    ) -> None:
        self.name = name
        self.nodes: dict[str, NodeLike] = dict(nodes)
        self.edges: list[tuple[str, str]] = list(edges)
        self.branches: dict[str, list[Branch]] = {src: list(bs) for src, bs in branches.items()}
        self.reducers: dict[str, Reducer] = dict(reducers)
        self.step_limit = step_limit
        #: wraps every invoke/ainvoke of this graph (an observer such as the debugger sets it);
        #: it lives on the instance, so even ``run = app.invoke`` taken earlier goes through it
        self.interceptor: RunInterceptor | None = None
        self.entry: tuple[str, ...] = tuple(dst for src, dst in self.edges if src == START)
        static: dict[str, list[str]] = {}
        for src, dst in self.edges:
            static.setdefault(src, []).append(dst)
        self._static: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in static.items()}

    def __repr__(self) -> str:
        return f"CompiledGraph({self.name!r}, nodes={list(self.nodes)})"

    # -- structure --------------------------------------------------------------------------

    def successors(self, node: str, state: dict[str, Any]) -> tuple[str, ...]:
        """Return where ``node`` leads given ``state``: static targets, then router results.

        :param node: a node name or :data:`START`.
        :param state: the state the routers see.
        :returns: target names (may include :data:`END`), without duplicates, in first-seen order.
        :raises InvalidGraphError: if a router names a node the graph does not have.
        """
        found: dict[str, None] = dict.fromkeys(self._static.get(node, ()))
        for branch in self.branches.get(node, ()):
            for target in branch.resolve(node, state):
                if target != END and target not in self.nodes:
                    raise InvalidGraphError(
                        f"router {branch.name!r} of node {node!r} routed to {target!r}, which is "
                        f"not a node of graph {self.name!r}; route to one of "
                        f"{_names(self.nodes)} or END"
                    )
                found.setdefault(target)
        return tuple(found)

    def _handed_to(self, node: str, goto: Goto) -> tuple[str, ...]:
        _check_update(node, goto)
        target = goto.to
        if target != END and target not in self.nodes:
            raise InvalidGraphError(
                f"node {node!r} handed off to {target!r}, which is not a node of graph "
                f"{self.name!r}; hand off to one of {_names(self.nodes)} or END"
            )
        return (target,)

    def describe(self) -> dict[str, Any]:
        """Describe the graph's structure as JSON-compatible data.

        :returns: ``{"name", "entry", "nodes", "edges", "conditional_edges", "reducers"}``;
            each node is ``{"name", "subgraph", "retry"}`` where ``subgraph`` is the nested
            description or ``None``; each conditional edge is ``{"source", "router", "targets"}``
            where ``targets`` is ``None`` when the router has no mapping.
        """
        nodes = []
        for name, node in self.nodes.items():
            sub = getattr(node, "subgraph", None)
            nodes.append(
                {
                    "name": name,
                    "subgraph": sub.describe() if isinstance(sub, CompiledGraph) else None,
                    "retry": int(getattr(node, "retry", 0)),
                }
            )
        conditional = [
            {
                "source": src,
                "router": branch.name,
                "targets": None if branch.targets is None else list(branch.targets),
            }
            for src, branches in self.branches.items()
            for branch in branches
        ]
        return {
            "name": self.name,
            "entry": list(self.entry),
            "nodes": nodes,
            "edges": [{"source": src, "target": dst} for src, dst in self.edges],
            "conditional_edges": conditional,
            "reducers": list(self.reducers),
        }

    # -- running ----------------------------------------------------------------------------

    def invoke(
        self,
        state: Mapping[str, Any],
        *,
        step_limit: int | None = None,
        start_at: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Run the graph to completion in the calling thread.

        A superstep with one node runs it inline; several nodes run concurrently in worker
        threads, each with a copy of the caller's context variables.

        :param state: the input state (copied, never mutated).
        :param step_limit: overrides the compiled step limit for this run.
        :param start_at: the nodes of the first superstep instead of the entry's (a run that
            goes on from a state the graph had: a fork); ``()`` runs none and returns the state.
        :returns: the final state.
        :raises GraphRecursionError: if the run needs more supersteps than the limit.
        :raises InvalidUpdateError: if a node returns a bad update or parallel writes conflict.
        :raises InvalidGraphError: if ``start_at`` names a node the graph does not have.
        :raises BaseException: the exception of the first failing node of a superstep (in
            superstep order), unchanged, after all nodes of that superstep finished.
        """
        first = self._check_start(start_at)
        interceptor = self.interceptor
        if interceptor is None:
            return self._invoke(state, step_limit, first)
        return interceptor.run(self, state, lambda s: self._invoke(s, step_limit, first))

    def _check_start(self, start_at: Sequence[str] | None) -> list[str] | None:
        if start_at is None:
            return None
        if isinstance(start_at, str):
            start_at = [start_at]
        unknown = [name for name in start_at if name not in self.nodes]
        if unknown:
            raise InvalidGraphError(
                f"graph {self.name!r} has no node {unknown[0]!r} to start at; its nodes are "
                f"{_names(self.nodes)}"
            )
        return list(dict.fromkeys(start_at))

    def _invoke(
        self, state: Mapping[str, Any], step_limit: int | None, first: list[str] | None = None
    ) -> dict[str, Any]:
        limit = self._resolve_limit(step_limit)
        values = _input_state(state)
        parent = CURRENT_TASK.get()
        active = self._first_nodes(values) if first is None else list(first)
        superstep = 0
        while active:
            superstep += 1
            self._check_limit(superstep, limit)
            tasks = self._make_tasks(values, active, superstep, parent)
            if len(tasks) == 1:
                updates = [self._execute_sync(tasks[0])]
            else:
                updates = _raise_first(self._run_threads(tasks))
            values, active = self._advance(values, tasks, updates, superstep)
        return values

    async def ainvoke(
        self,
        state: Mapping[str, Any],
        *,
        step_limit: int | None = None,
        start_at: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Run the graph to completion from async code (asyncio or trio, through anyio).

        A superstep with one node runs it inline in the calling task; several nodes run
        concurrently as tasks of an anyio task group. Sync node functions run in worker threads.

        :param state: the input state (copied, never mutated).
        :param step_limit: overrides the compiled step limit for this run.
        :param start_at: the nodes of the first superstep, as :meth:`invoke` takes them.
        :returns: the final state.
        :raises GraphRecursionError: if the run needs more supersteps than the limit.
        :raises InvalidUpdateError: if a node returns a bad update or parallel writes conflict.
        :raises BaseException: the exception of the first failing node of a superstep (in
            superstep order), unchanged, after all nodes of that superstep finished.
        """
        first = self._check_start(start_at)
        interceptor = self.interceptor
        if interceptor is None:
            return await self._ainvoke(state, step_limit, first)
        return await interceptor.arun(self, state, lambda s: self._ainvoke(s, step_limit, first))

    async def _ainvoke(
        self, state: Mapping[str, Any], step_limit: int | None, first: list[str] | None = None
    ) -> dict[str, Any]:
        limit = self._resolve_limit(step_limit)
        values = _input_state(state)
        parent = CURRENT_TASK.get()
        active = self._first_nodes(values) if first is None else list(first)
        superstep = 0
        while active:
            superstep += 1
            self._check_limit(superstep, limit)
            tasks = self._make_tasks(values, active, superstep, parent)
            if len(tasks) == 1:
                updates = [await self._execute_async(tasks[0])]
            else:
                updates = _raise_first(await self._run_task_group(tasks))
            values, active = self._advance(values, tasks, updates, superstep)
        return values

    # -- internals --------------------------------------------------------------------------

    def _resolve_limit(self, step_limit: int | None) -> int:
        if step_limit is None:
            return self.step_limit
        if isinstance(step_limit, bool) or not isinstance(step_limit, int) or step_limit < 1:
            raise ValueError(f"step_limit must be a positive int, got {step_limit!r}")
        return step_limit

    def _check_limit(self, superstep: int, limit: int) -> None:
        if superstep > limit:
            raise GraphRecursionError(
                f"graph {self.name!r} did not finish within its step limit of {limit} supersteps; "
                "if the loop is intended, raise it with compile(step_limit=...) or "
                "invoke(..., step_limit=...), otherwise fix the loop's exit condition"
            )

    def _first_nodes(self, values: dict[str, Any]) -> list[str]:
        return [name for name in self.successors(START, dict(values)) if name != END]

    def _make_tasks(
        self, values: dict[str, Any], active: list[str], superstep: int, parent: Task | None
    ) -> list[Task]:
        return [
            Task(
                graph=self,
                node=name,
                superstep=superstep,
                branch=f"{superstep}:{name}",
                attempt=1,
                state=dict(values),
                base=values,
                parent=parent,
            )
            for name in active
        ]

    def _should_retry(self, node: NodeLike, task: Task, exc: Exception) -> bool:
        retry = getattr(node, "retry", 0)
        retry_on = getattr(node, "retry_on", (Exception,))
        return task.attempt <= retry and isinstance(exc, retry_on)

    def _execute_sync(self, task: Task) -> Mapping[str, Any] | None:
        token = CURRENT_TASK.set(task)
        try:
            while True:
                node = self.nodes[task.node]
                try:
                    raw = node.invoke(task.state)
                    break
                except Exception as exc:
                    if not self._should_retry(node, task, exc):
                        raise
                task.attempt += 1
            update = _check_update(task.node, raw)
            task.route(update)
            return update
        finally:
            CURRENT_TASK.reset(token)

    async def _execute_async(self, task: Task) -> Mapping[str, Any] | None:
        token = CURRENT_TASK.set(task)
        try:
            while True:
                node = self.nodes[task.node]
                try:
                    raw = await node.ainvoke(task.state)
                    break
                except Exception as exc:
                    if not self._should_retry(node, task, exc):
                        raise
                task.attempt += 1
            update = _check_update(task.node, raw)
            task.route(update)
            return update
        finally:
            CURRENT_TASK.reset(token)

    def _capture_sync(self, task: Task) -> _Outcome:
        try:
            return (self._execute_sync(task), None)
        except BaseException as exc:  # re-raised by the caller after the superstep
            return (None, exc)

    def _run_threads(self, tasks: list[Task]) -> list[_Outcome]:
        with ThreadPoolExecutor(
            max_workers=len(tasks), thread_name_prefix=f"flowdbg-{self.name}"
        ) as pool:
            futures = [
                pool.submit(contextvars.copy_context().run, self._capture_sync, task)
                for task in tasks
            ]
        return [future.result() for future in futures]

    async def _run_task_group(self, tasks: list[Task]) -> list[_Outcome]:
        outcomes: list[_Outcome] = [(None, None)] * len(tasks)
        cancelled = anyio.get_cancelled_exc_class()

        async def run_one(index: int, task: Task) -> None:
            try:
                outcomes[index] = (await self._execute_async(task), None)
            except cancelled:
                raise
            except BaseException as exc:  # re-raised after the group, unwrapped
                outcomes[index] = (None, exc)

        async with anyio.create_task_group() as group:
            for index, task in enumerate(tasks):
                group.start_soon(run_one, index, task, name=task.branch)
        return outcomes

    def _advance(
        self,
        values: dict[str, Any],
        tasks: list[Task],
        updates: list[Mapping[str, Any] | None],
        superstep: int,
    ) -> tuple[dict[str, Any], list[str]]:
        merged = dict(values)
        replacers: dict[str, str] = {}
        for task in tasks:
            if task.replaced:
                for key in task.replaced:
                    if key in replacers:
                        raise InvalidUpdateError(
                            f"the state key {key!r} was replaced for both {replacers[key]!r} "
                            f"and {task.node!r} in superstep {superstep}; replace it for one "
                            "node of a superstep only"
                        )
                    replacers[key] = task.node
                _replace(merged, task.replaced)
        writers: dict[str, str] = {}
        for task, update in zip(tasks, updates, strict=True):
            if not update:
                continue
            for key in update:
                if key in self.reducers:
                    continue
                if key in writers:
                    raise InvalidUpdateError(
                        f"nodes {writers[key]!r} and {task.node!r} both wrote key {key!r} in "
                        f"superstep {superstep}; declare a reducer for it: "
                        f"StateGraph(reducers={{{key!r}: operator.add}})"
                    )
                writers[key] = task.node
            _apply(self.reducers, merged, update, task.node, superstep)
        following: dict[str, None] = {}
        for task, update in zip(tasks, updates, strict=True):
            for target in task.route(update):
                if target != END:
                    following.setdefault(target)
        return merged, list(following)


# -------------------------------------------------------------------------------- the builder


class StateGraph:
    """Builder of a graph: add nodes and edges, then :meth:`compile` it.

    :param reducers: state key -> ``reducer(old, new)`` combining the current value with a
        node's update (e.g. ``operator.add`` to append lists); keys without a reducer are
        overwritten, and may be written by only one node per superstep.
    :param name: the graph's default name (used by :meth:`compile` when it gets none).
    :raises InvalidGraphError: if a reducer key is not a string or a reducer is not callable.
    """

    def __init__(
        self, reducers: Mapping[str, Reducer] | None = None, *, name: str | None = None
    ) -> None:
        self.name = name
        self.reducers: dict[str, Reducer] = {}
        for key, reducer in (reducers or {}).items():
            if not isinstance(key, str):
                raise InvalidGraphError(f"reducer key {key!r} is not a string; use the state key")
            if not callable(reducer):
                raise InvalidGraphError(
                    f"reducer for key {key!r} is not callable; pass a function of (old, new)"
                )
            self.reducers[key] = reducer
        self._nodes: dict[str, tuple[Any, int, tuple[type[BaseException], ...]]] = {}
        self._edges: list[tuple[str, str]] = []
        self._branches: dict[str, list[Branch]] = {}

    def __repr__(self) -> str:
        return f"StateGraph({self.name!r}, nodes={list(self._nodes)})"

    def add_node(
        self,
        name: str,
        fn: Callable[[dict[str, Any]], Any] | CompiledGraph,
        *,
        retry: int = 0,
        retry_on: tuple[type[BaseException], ...] = (Exception,),
    ) -> StateGraph:
        """Add a node.

        :param name: a unique name, not :data:`START` or :data:`END`.
        :param fn: ``fn(state)`` returning a partial update dict or ``None`` (sync or
            ``async def``), or a :class:`CompiledGraph` to run as a subgraph.
        :param retry: extra attempts when ``fn`` raises one of ``retry_on``.
        :param retry_on: exception types to retry on (``BaseException``-only errors such as
            :class:`KeyboardInterrupt` are never retried).
        :returns: this builder.
        :raises InvalidGraphError: on a bad, reserved or duplicate name, a non-callable ``fn``,
            or bad retry settings.
        """
        if not isinstance(name, str) or not name:
            raise InvalidGraphError(f"node name {name!r} is not a non-empty string; pass a str")
        if name in _RESERVED:
            raise InvalidGraphError(
                f"node name {name!r} is reserved for the virtual start/end nodes; choose another"
            )
        if name in self._nodes:
            raise InvalidGraphError(
                f"node {name!r} is already in graph {self._label()}; give the new node another name"
            )
        if isinstance(fn, StateGraph):
            raise InvalidGraphError(
                f"node {name!r} is an uncompiled StateGraph; pass graph.compile() instead"
            )
        if not isinstance(fn, CompiledGraph) and not callable(fn):
            raise InvalidGraphError(
                f"node {name!r} has a non-callable {type(fn).__name__}; pass a function of state "
                "or a CompiledGraph"
            )
        if isinstance(retry, bool) or not isinstance(retry, int) or retry < 0:
            raise InvalidGraphError(
                f"node {name!r} has retry={retry!r}; pass a non-negative int of extra attempts"
            )
        if not isinstance(retry_on, tuple) or not all(
            isinstance(t, type) and issubclass(t, BaseException) for t in retry_on
        ):
            raise InvalidGraphError(
                f"node {name!r} has retry_on={retry_on!r}; pass a tuple of exception classes"
            )
        self._nodes[name] = (fn, retry, retry_on)
        return self

    def add_edge(self, src: str, dst: str) -> StateGraph:
        """Add a static edge: after ``src`` runs, ``dst`` runs in the next superstep.

        :param src: a node name or :data:`START` (``dst`` is then an entry point).
        :param dst: a node name or :data:`END`.
        :returns: this builder.
        :raises InvalidGraphError: if ``src`` is :data:`END`, ``dst`` is :data:`START`, or the
            edge goes from :data:`START` straight to :data:`END`.
        """
        if src == END:
            raise InvalidGraphError("END cannot be the source of an edge; use a node or START")
        if dst == START:
            raise InvalidGraphError("START cannot be the target of an edge; use a node or END")
        if src == START and dst == END:
            raise InvalidGraphError("an edge from START to END would run nothing; name a node")
        if (src, dst) not in self._edges:
            self._edges.append((src, dst))
        return self

    def add_conditional_edges(
        self,
        src: str,
        router: Router,
        mapping: Mapping[Any, str] | None = None,
    ) -> StateGraph:
        """Add a conditional edge: after ``src`` runs, ``router`` decides where to go.

        :param src: a node name or :data:`START` (the router then picks the entry nodes from
            the input state).
        :param router: a plain (not async) function ``router(state)`` returning a node name,
            :data:`END`, or a list/tuple of them (all run in the next superstep, concurrently).
            It sees the state after ``src``'s own update is applied.
        :param mapping: translates the router's return value(s) to node names.
        :returns: this builder.
        :raises InvalidGraphError: if ``src`` is :data:`END`, ``router`` is not a plain
            callable, or ``mapping`` is not a mapping.
        """
        if src == END:
            raise InvalidGraphError("END cannot be the source of an edge; use a node or START")
        if not callable(router) or _is_async_callable(router):
            raise InvalidGraphError(
                f"router {router!r} of node {src!r} must be a plain (not async) function of state"
            )
        if mapping is not None and not isinstance(mapping, Mapping):
            raise InvalidGraphError(
                f"mapping of the router of node {src!r} is a {type(mapping).__name__}; pass a "
                "dict from router results to node names"
            )
        branch = Branch(router, None if mapping is None else dict(mapping))
        self._branches.setdefault(src, []).append(branch)
        return self

    def set_entry_point(self, name: str) -> StateGraph:
        """Make ``name`` an entry node; same as ``add_edge(START, name)``.

        :param name: a node name.
        :returns: this builder.
        """
        return self.add_edge(START, name)

    def set_finish_point(self, name: str) -> StateGraph:
        """Make ``name`` lead to :data:`END`; same as ``add_edge(name, END)``.

        :param name: a node name.
        :returns: this builder.
        """
        return self.add_edge(name, END)

    def compile(self, *, name: str | None = None, step_limit: int = 25) -> CompiledGraph:
        """Validate the graph and return a runnable :class:`CompiledGraph`.

        A node without outgoing edges is allowed: its branch simply ends after it. The compiled
        graph gets fresh :class:`Node` objects and copies of the structure, so later changes to
        this builder do not affect it.

        :param name: the compiled graph's name (defaults to the builder's name, else "graph").
        :param step_limit: the maximum number of supersteps of a run.
        :returns: the compiled graph.
        :raises InvalidGraphError: if the graph has no nodes or no entry point, an edge or
            mapping names an unknown node, or ``step_limit`` is not a positive int.
        """
        graph_name = name or self.name or "graph"
        label = repr(graph_name)
        if isinstance(step_limit, bool) or not isinstance(step_limit, int) or step_limit < 1:
            raise InvalidGraphError(
                f"step_limit={step_limit!r} for graph {label} is invalid; pass a positive int"
            )
        if not self._nodes:
            raise InvalidGraphError(f"graph {label} has no nodes; add one with add_node(...)")
        known = _names(self._nodes)
        for src, dst in self._edges:
            for end, value in (("source", src), ("target", dst)):
                if value not in self._nodes and value not in _RESERVED:
                    raise InvalidGraphError(
                        f"edge {src!r} -> {dst!r} of graph {label} has unknown {end} {value!r}; "
                        f"add it with add_node({value!r}, ...) or use one of {known}"
                    )
        for src, branches in self._branches.items():
            if src != START and src not in self._nodes:
                raise InvalidGraphError(
                    f"conditional edge of graph {label} starts at unknown node {src!r}; add it "
                    f"with add_node({src!r}, ...) or use one of {known}"
                )
            for branch in branches:
                for key, target in (branch.mapping or {}).items():
                    if target != END and target not in self._nodes:
                        raise InvalidGraphError(
                            f"mapping of router {branch.name!r} of node {src!r} sends {key!r} to "
                            f"unknown node {target!r}; use one of {known} or END"
                        )
        if not any(src == START for src, _ in self._edges) and START not in self._branches:
            raise InvalidGraphError(
                f"graph {label} has no entry point; add one with set_entry_point('node') or "
                "add_edge(START, 'node')"
            )
        nodes = {
            node_name: Node(node_name, fn, retry=retry, retry_on=retry_on)
            for node_name, (fn, retry, retry_on) in self._nodes.items()
        }
        return CompiledGraph(
            name=graph_name,
            nodes=nodes,
            edges=self._edges,
            branches=self._branches,
            reducers=self.reducers,
            step_limit=step_limit,
        )

    def _label(self) -> str:
        return repr(self.name or "graph")


# ---------------------------------------------------------------------------------- helpers


def _names(names: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in names) or "(none)"


def _is_async_callable(fn: Any) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def _is_key_of(value: Any, mapping: Mapping[Any, str]) -> bool:
    try:
        return value in mapping
    except TypeError:  # unhashable
        return False


def _event_loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return True
    trio = sys.modules.get("trio")
    in_trio_run = getattr(getattr(trio, "lowlevel", None), "in_trio_run", None)
    return bool(in_trio_run is not None and in_trio_run())


def _input_state(state: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(state, Mapping):
        raise TypeError(
            f"the input state is a {type(state).__name__}; pass a dict (or other Mapping)"
        )
    return dict(state)


def _check_update(node: str, update: Any) -> Mapping[str, Any] | None:
    if update is None:
        return None
    if not isinstance(update, Mapping):
        raise InvalidUpdateError(
            f"node {node!r} returned a {type(update).__name__}; return a dict of state updates "
            "or None"
        )
    for key in update:
        if not isinstance(key, str):
            raise InvalidUpdateError(
                f"node {node!r} returned an update with non-string key {key!r}; state keys "
                "must be strings"
            )
    return update


def _replace(target: dict[str, Any], replaced: Mapping[str, Any]) -> None:
    for key, value in replaced.items():
        if value is _REMOVED:
            target.pop(key, None)
        else:
            target[key] = value


def _apply(
    reducers: Mapping[str, Reducer],
    target: dict[str, Any],
    update: Mapping[str, Any],
    node: str,
    superstep: int,
) -> None:
    for key, value in update.items():
        reducer = reducers.get(key)
        if reducer is None or key not in target:
            target[key] = value
            continue
        try:
            target[key] = reducer(target[key], value)
        except Exception as exc:
            raise InvalidUpdateError(
                f"the reducer of key {key!r} failed on the update of node {node!r} in superstep "
                f"{superstep} ({type(exc).__name__}: {exc}); return a value the reducer accepts"
            ) from exc


def _changed_keys(state: Mapping[str, Any], result: Any) -> Any:
    """Keep the keys of a subgraph's final state that are new or not the same object."""
    if not isinstance(result, Mapping):
        return result
    return {
        key: value for key, value in result.items() if key not in state or state[key] is not value
    }


def _raise_first(outcomes: list[_Outcome]) -> list[Mapping[str, Any] | None]:
    for _, exc in outcomes:
        if exc is not None:
            raise exc
    return [update for update, _ in outcomes]


# ---------------------------------------------------------------------------------------------
# Tools and models: what a node calls. Observers (the debugger) see each call through the
# CALL_INTERCEPTOR context variable, the way LangChain callbacks see tool and model calls.
# ---------------------------------------------------------------------------------------------


class RunInterceptor(Protocol):
    """Wraps every run of one :class:`CompiledGraph` (see :attr:`CompiledGraph.interceptor`)."""

    def run(
        self,
        graph: CompiledGraph,
        state: Mapping[str, Any],
        proceed: Callable[[Mapping[str, Any]], dict[str, Any]],
    ) -> Any:
        """Run ``proceed(state)`` and return its result."""
        ...

    async def arun(
        self,
        graph: CompiledGraph,
        state: Mapping[str, Any],
        proceed: Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]],
    ) -> Any:
        """Async form of :meth:`run`."""
        ...


class CallInterceptor(Protocol):
    """Wraps every :class:`Tool`, :class:`Model` and :class:`Handoff` call made in its
    context."""

    def call(
        self, target: Call, args: dict[str, Any], proceed: Callable[[dict[str, Any]], Any]
    ) -> Any:
        """Run ``proceed(args)`` (maybe with other arguments) and return its result."""
        ...

    async def acall(
        self,
        target: Call,
        args: dict[str, Any],
        proceed: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        """Async form of :meth:`call`."""
        ...


#: The interceptor for tool, model and handoff calls made in this context, if any.
CALL_INTERCEPTOR: contextvars.ContextVar[CallInterceptor | None] = contextvars.ContextVar(
    "stategraph_call_interceptor", default=None
)


class Call:
    """Something a node calls with keyword arguments: a tool, a model, or a handoff.

    :param fn: the function, called as ``fn(**args)``; sync or ``async def``.
    :param name: the call's name (default: ``fn.__name__``).
    """

    #: unit kind reported to observers
    kind = "call"

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"{type(self).__name__} needs a callable, got {fn!r}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", type(self).__name__.lower())
        self.is_async = _is_async_callable(fn)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def __call__(self, **args: Any) -> Any:
        """Call synchronously: ``search(query="x")``."""
        return self.invoke(args)

    def invoke(self, args: Mapping[str, Any]) -> Any:
        """Call synchronously with an argument mapping."""
        interceptor = CALL_INTERCEPTOR.get()
        if interceptor is None:
            return self._run(dict(args))
        return interceptor.call(self, dict(args), self._run)

    async def ainvoke(self, args: Mapping[str, Any]) -> Any:
        """Call from async code with an argument mapping."""
        interceptor = CALL_INTERCEPTOR.get()
        if interceptor is None:
            return await self._arun(dict(args))
        return await interceptor.acall(self, dict(args), self._arun)

    def _run(self, args: dict[str, Any]) -> Any:
        if self.is_async:
            if _event_loop_running():
                raise StateGraphError(
                    f"{type(self).__name__.lower()} {self.name!r} is async; "
                    "call it with `await ainvoke(args)` inside async nodes"
                )
            return asyncio.run(self.fn(**args))
        return self.fn(**args)

    async def _arun(self, args: dict[str, Any]) -> Any:
        if self.is_async:
            return await self.fn(**args)
        return self.fn(**args)


class Tool(Call):
    """A tool a node calls, e.g. ``search(query="flights")``; observers see kind ``tool``."""

    kind = "tool"


class Model(Call):
    """A chat model a node calls, e.g. ``llm(messages=[...])``; observers see kind ``llm``.

    Any function of ``messages`` will do, so examples and tests use scripted stand-ins.
    """

    kind = "llm"


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Decorator making a function a :class:`Tool` (``@tool`` or ``@tool(name="x")``)."""
    if fn is None:
        return lambda f: Tool(f, name=name)
    return Tool(fn, name=name)


# ---------------------------------------------------------------------------------------------
# Handoffs: a node hands the run over to another node. The handoff is a call like a tool call,
# so observers see it (kind "handoff") and may change where it goes before it takes effect.
# ---------------------------------------------------------------------------------------------


class Goto(dict[str, Any]):
    """An update that also names the node the run goes to next; made by :func:`handoff`.

    A node returns it like any update: the engine commits its items, then runs :attr:`to`
    next, and only it (the node's static edges and routers are not followed).

    :param to: the node that runs next, or :data:`END` to end the branch.
    :param update: the update committed with the handoff.
    """

    __slots__ = ("to",)

    def __init__(self, to: str, update: Mapping[str, Any] | None = None) -> None:
        super().__init__(update or {})
        self.to = to

    def __repr__(self) -> str:
        return f"Goto({self.to!r}, {dict(self)!r})"


def _handoff_args(to: str, payload: Mapping[str, Any] | None) -> dict[str, Any]:
    return {"to": to, "payload": payload}


class Handoff(Call):
    """A handoff to node ``to``, which a node makes and returns: ``return handoff("billing",
    topic=q)``. Observers see a call of kind ``handoff`` named after ``to``.

    Its arguments, and its result, are ``{"to": node, "payload": update}``; an observer may
    change either (send the run elsewhere, or carry another update). The call returns the
    :class:`Goto` built from the result.

    :param to: the node that runs next, or :data:`END`.
    :raises InvalidGraphError: if ``to`` is not a non-empty string.
    """

    kind = "handoff"

    def __init__(self, to: str) -> None:
        if not isinstance(to, str) or not to:
            raise InvalidGraphError(f"handoff target {to!r} is not a node name; pass a str")
        super().__init__(_handoff_args, name=to)

    def __call__(self, **payload: Any) -> Goto:
        """Hand off synchronously, committing ``payload`` as the update."""
        return self.invoke({"to": self.name, "payload": payload})

    def invoke(self, args: Mapping[str, Any]) -> Goto:
        """Hand off synchronously with the arguments ``{"to": ..., "payload": ...}``."""
        return self._goto(super().invoke(args))

    async def ainvoke(self, args: Mapping[str, Any]) -> Goto:
        """Hand off from async code with the arguments ``{"to": ..., "payload": ...}``."""
        return self._goto(await super().ainvoke(args))

    def _goto(self, result: Any) -> Goto:
        to = result.get("to") if isinstance(result, Mapping) else None
        payload = result.get("payload") if isinstance(result, Mapping) else None
        if not isinstance(to, str) or not (payload is None or isinstance(payload, Mapping)):
            raise InvalidUpdateError(
                f"handoff {self.name!r} resolved to {result!r}; an observer must give back "
                "{'to': node name, 'payload': dict or None}"
            )
        return Goto(to, payload)


def handoff(to: str, /, **payload: Any) -> Goto:
    """Hand the run over to node ``to``, committing ``payload`` as the update; a node returns
    the result: ``return handoff("specialist", topic=state["q"])``.

    :param to: the node that runs next, or :data:`END`.
    :returns: the :class:`Goto` the node returns.
    """
    return Handoff(to)(**payload)


async def ahandoff(to: str, /, **payload: Any) -> Goto:
    """Async form of :func:`handoff`, for ``async def`` nodes (an observer's stop then suspends
    only the node's task)."""
    return await Handoff(to).ainvoke({"to": to, "payload": payload})
