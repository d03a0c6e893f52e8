"""The structure of a compiled LangGraph graph, in the shape every flowdbg adapter describes."""

from __future__ import annotations

from typing import Any

__all__ = ["describe"]

_START = "__start__"


def _retry(node: Any) -> int:
    policy = getattr(node, "retry_policy", None)
    if isinstance(policy, (list, tuple)):
        policy = policy[0] if policy else None
    attempts = getattr(policy, "max_attempts", None)
    return int(attempts) - 1 if isinstance(attempts, int) and attempts > 1 else 0


def _reducers(graph: Any) -> list[str]:
    """State keys whose channel combines updates (a reducer) instead of keeping the last one."""
    keys = []
    builder = getattr(graph, "builder", None)
    for key, channel in (getattr(builder, "channels", None) or {}).items():
        if type(channel).__name__ in ("BinaryOperatorAggregate", "Topic"):
            keys.append(str(key))
    return keys


def _tasks(node: Any) -> list[str]:
    """The names of the @task functions an @entrypoint's function refers to by name (in its
    code, globals and closure). A static look: a task reached some other way (passed in, or
    called by a helper) runs as a unit all the same, but is not listed."""
    bound = getattr(node, "bound", None)
    func = getattr(bound, "func", None) or getattr(bound, "afunc", None)
    code = getattr(func, "__code__", None)
    if code is None:
        return []
    scope = dict(getattr(func, "__globals__", None) or {})
    for name, cell in zip(code.co_freevars, getattr(func, "__closure__", None) or (), strict=False):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    names = []
    for referred in (*code.co_names, *code.co_freevars):
        value = scope.get(referred)
        if type(value).__name__ == "_TaskFunction":
            task_name = getattr(getattr(value, "func", None), "__name__", None)
            if isinstance(task_name, str) and task_name not in names:
                names.append(task_name)
    return names


def describe(graph: Any) -> dict[str, Any]:
    """Describe a compiled LangGraph graph as JSON-compatible data.

    :returns: ``{"name", "entry", "nodes", "edges", "conditional_edges", "reducers"}`` like the
        reference StateGraph's ``describe()``; each node is ``{"name", "subgraph", "retry"}``.
        An ``@entrypoint`` adds ``"open": True`` (units other than its nodes run: its @task
        calls) and lists on its node the ``"tasks"`` its function refers to.
    """
    from flowdbg.adapters.langgraph._adapter import _is_entrypoint

    entrypoint = _is_entrypoint(graph)
    drawn = graph.get_graph()
    nodes = []
    for name, node in graph.nodes.items():
        if name == _START:
            continue
        subs = [sub for sub in getattr(node, "subgraphs", None) or () if hasattr(sub, "nodes")]
        described: dict[str, Any] = {
            "name": name,
            "subgraph": describe(subs[0]) if subs else None,
            "retry": _retry(node),
        }
        if entrypoint:
            described["tasks"] = _tasks(node)
        nodes.append(described)
    edges = []
    conditional: dict[str, list[str]] = {}
    for edge in drawn.edges:
        if edge.conditional:
            conditional.setdefault(edge.source, []).append(edge.target)
        else:
            edges.append({"source": edge.source, "target": edge.target})
    routers: dict[str, list[str]] = {}
    builder = getattr(graph, "builder", None)
    for source, specs in (getattr(builder, "branches", None) or {}).items():
        routers[source] = [str(name) for name in specs]
    conditional_edges = []
    for source, targets in conditional.items():
        names = routers.get(source) or ["router"]
        conditional_edges.append(
            {"source": source, "router": ", ".join(names), "targets": sorted(set(targets))}
        )
    entry = [edge["target"] for edge in edges if edge["source"] == _START]
    entry += conditional.get(_START, [])
    description: dict[str, Any] = {
        "name": str(getattr(graph, "name", None) or type(graph).__name__),
        "entry": entry,
        "nodes": nodes,
        "edges": edges,
        "conditional_edges": conditional_edges,
        "reducers": _reducers(graph),
    }
    if entrypoint:
        description["open"] = True
    return description
