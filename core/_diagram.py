"""Pictures of a graph description: Mermaid and Graphviz text, and the dict that shows itself.

An adapter's ``describe()`` gives ``{"name", "entry", "nodes", "edges", "conditional_edges", ...}``
(see :class:`flowdbg.schemas.Graph`). :func:`to_mermaid` and :func:`to_dot` draw it: fixed edges
solid, conditional edges dashed and labelled with their router, a node's subgraph as a box
holding the nested graph, an ``@entrypoint``'s tasks as dotted calls, an agent's tools and model
beside it; the tools a target holds that no node lists (a LlamaIndex workflow's) in a box of
their own. Node names are only ever labels: every drawn node gets a generated id, so any name
(``end``, quotes, spaces) is safe.
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FORMATS", "GraphDescription", "to_dot", "to_mermaid"]

#: the picture formats :func:`draw` knows
FORMATS = ("mermaid", "dot")

_START = "__start__"
_END = "__end__"
_SHOWN = {_START: "START", _END: "END"}


# --------------------------------------------------------------------------------- the layout


@dataclass
class _Node:
    id: str
    label: str
    shape: str  # "node", "terminal", "task" (a node's task or tool), "model", "any"
    #: the nested graph this node runs, drawn as a box around its nodes
    inner: _Graph | None = None


@dataclass
class _Edge:
    source: str
    target: str
    style: str  # "solid", "dashed" (conditional), "dotted" (a task call)
    label: str = ""


@dataclass
class _Graph:
    nodes: list[_Node] = field(default_factory=list)
    edges: list[_Edge] = field(default_factory=list)


class _Layout:
    """A description turned into nodes with generated ids and edges between those ids."""

    def __init__(self) -> None:
        self._count = 0

    def new_id(self) -> str:
        self._count += 1
        return f"n{self._count}"

    def graph(self, description: Mapping[str, Any]) -> _Graph:
        graph = _Graph()
        ids: dict[str, str] = {}

        def node_id(name: str, shape: str = "node") -> str:
            if name not in ids:
                ids[name] = self.new_id()
                label = _SHOWN.get(name, name)
                graph.nodes.append(_Node(ids[name], label, "terminal" if name in _SHOWN else shape))
            return ids[name]

        edges = [e for e in description.get("edges") or () if isinstance(e, Mapping)]
        conditional = [
            c for c in description.get("conditional_edges") or () if isinstance(c, Mapping)
        ]
        has_start = any(str(e.get("source")) == _START for e in edges) or any(
            str(c.get("source")) == _START for c in conditional
        )
        entry = [str(name) for name in description.get("entry") or ()]
        if entry and not has_start:
            node_id(_START)
        for node in description.get("nodes") or ():
            name = str(node.get("name", "?")) if isinstance(node, Mapping) else str(node)
            if name in _SHOWN:
                continue
            this = node_id(name)
            if not isinstance(node, Mapping):
                continue
            sub = node.get("subgraph")
            if isinstance(sub, Mapping):
                graph.nodes[-1].inner = self.graph(sub)
                graph.nodes[-1].label = f"{name}: {sub.get('name', 'subgraph')}"
            for task in node.get("tasks") or ():
                task_id = self.new_id()
                graph.nodes.append(_Node(task_id, str(task), "task"))
                graph.edges.append(_Edge(this, task_id, "dotted", "task"))
            for tool in tool_names(node):  # an agent's tools, each drawn beside it
                tool_id = self.new_id()
                graph.nodes.append(_Node(tool_id, tool, "task"))
                graph.edges.append(_Edge(this, tool_id, "dotted", "tool"))
            for model in model_names(node):  # the model its turns ask (the text lists it)
                model_id = self.new_id()
                graph.nodes.append(_Node(model_id, model, "model"))
                graph.edges.append(_Edge(this, model_id, "dotted", "model"))
        held = held_tools(description)
        if held:
            # tools the target holds and its nodes call, no node saying which: in a box of
            # their own rather than joined to a node they may not belong to
            box = _Graph(nodes=[_Node(self.new_id(), tool, "task") for tool in held])
            graph.nodes.append(_Node(self.new_id(), "tools", "node", inner=box))
        models = held_models(description)
        if models:  # the same for the models it holds
            box = _Graph(nodes=[_Node(self.new_id(), model, "model") for model in models])
            graph.nodes.append(_Node(self.new_id(), "models", "node", inner=box))
        if entry and not has_start:
            for name in entry:
                graph.edges.append(_Edge(node_id(_START), node_id(name), "solid"))
        for edge in edges:
            source, target = str(edge.get("source")), str(edge.get("target"))
            graph.edges.append(_Edge(node_id(source), node_id(target), "solid"))
        for cond in conditional:
            source = node_id(str(cond.get("source")))
            router = str(cond.get("router") or "")
            targets = cond.get("targets")
            if targets is None:  # the router names its targets itself, at run time
                anywhere = self.new_id()
                graph.nodes.append(_Node(anywhere, "any node", "any"))
                graph.edges.append(_Edge(source, anywhere, "dashed", router))
                continue
            for target in targets:
                graph.edges.append(_Edge(source, node_id(str(target)), "dashed", router))
        return graph


def tool_names(node: Any) -> list[str]:
    """The names of the tools a node of a description lists (an agent's ``tools``: names or
    mappings with a ``name``)."""
    if not isinstance(node, Mapping):
        return []
    return [
        str(tool.get("name", "?")) if isinstance(tool, Mapping) else str(tool)
        for tool in node.get("tools") or ()
    ]


def model_names(node: Any) -> list[str]:
    """The model (or models) a node of a description names as its ``model``."""
    if not isinstance(node, Mapping):
        return []
    model = node.get("model")
    if not model:
        return []
    return [str(model)] if isinstance(model, str) else [str(m) for m in model]


def held_tools(description: Mapping[str, Any]) -> list[str]:
    """The tools a description lists for the whole target (``tools`` beside its nodes) when
    none of its nodes lists tools of its own: what a LlamaIndex workflow holds and its steps
    call."""
    listed = description.get("tools")
    if not listed or any(tool_names(node) for node in description.get("nodes") or ()):
        return []
    return tool_names({"tools": listed})


def held_models(description: Mapping[str, Any]) -> list[str]:
    """The models a description lists for the whole target (``models`` beside its nodes) when
    none of its nodes names a model of its own: what a LlamaIndex workflow holds and its steps
    ask."""
    listed = description.get("models")
    if not listed or any(model_names(node) for node in description.get("nodes") or ()):
        return []
    return [str(model) for model in listed]


def _walk(graph: _Graph) -> Iterator[_Node]:
    for node in graph.nodes:
        yield node
        if node.inner is not None:
            yield from _walk(node.inner)


# ---------------------------------------------------------------------------------- Mermaid


def _mermaid_text(text: str) -> str:
    """``text`` inside a quoted Mermaid label: quotes and markup characters as entities."""
    for char, entity in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(char, entity)
    return text


_MERMAID_SHAPES = {
    "node": '["{}"]',
    "terminal": '(["{}"])',
    "task": '[["{}"]]',
    "model": '{{{{"{}"}}}}',
    "any": '{{"{}"}}',
}
_MERMAID_ARROWS = {"solid": "-->", "dashed": "-.->", "dotted": "-.->"}


def to_mermaid(description: Mapping[str, Any]) -> str:
    """A Mermaid flowchart (``flowchart TD``) of a graph description.

    :param description: an adapter's ``describe()``.
    :returns: the text, ending with a newline; conditional edges are dashed and labelled with
        their router, a node's subgraph is a ``subgraph`` box around the nested nodes.
    """
    graph = _Layout().graph(description)
    lines = ["flowchart TD"]
    name = description.get("name")
    if name:
        lines.append(f"  %% graph {' '.join(str(name).split())}")
    _mermaid_graph(graph, lines, "  ")
    return "\n".join(lines) + "\n"


def _mermaid_graph(graph: _Graph, lines: list[str], indent: str) -> None:
    for node in graph.nodes:
        label = _mermaid_text(node.label)
        if node.inner is None:
            lines.append(indent + node.id + _MERMAID_SHAPES[node.shape].format(label))
            continue
        lines.append(f'{indent}subgraph {node.id}["{label}"]')
        _mermaid_graph(node.inner, lines, indent + "  ")
        lines.append(f"{indent}end")
    for edge in graph.edges:
        arrow = _MERMAID_ARROWS[edge.style]
        label = f'|"{_mermaid_text(edge.label)}"|' if edge.label else ""
        lines.append(f"{indent}{edge.source} {arrow}{label} {edge.target}")


# --------------------------------------------------------------------------------- Graphviz


def _dot_text(text: str) -> str:
    """``text`` as a double-quoted Graphviz string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


_DOT_SHAPES = {
    "node": "shape=box, style=rounded",
    "terminal": "shape=oval",
    "task": "shape=component",
    "model": "shape=hexagon",
    "any": "shape=diamond",
}


def to_dot(description: Mapping[str, Any]) -> str:
    """A Graphviz ``digraph`` of a graph description.

    :param description: an adapter's ``describe()``.
    :returns: the text, ending with a newline; conditional edges are dashed and labelled with
        their router, a node's subgraph is a cluster around the nested nodes (edges to and from
        that node meet the cluster's border).
    """
    graph = _Layout().graph(description)
    name = str(description.get("name") or "graph")
    lines = [f"digraph {_dot_text(name)} {{", "  compound=true;", "  rankdir=TB;"]
    anchors = {node.id: _anchors(node.inner) for node in _walk(graph) if node.inner is not None}
    _dot_graph(graph, lines, "  ", anchors)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _anchors(graph: _Graph) -> tuple[str, str]:
    """The drawn nodes of a cluster that edges into and out of it attach to: its START and END
    (else its first and last node)."""
    drawn = [node for node in graph.nodes if node.inner is None]
    if not drawn:  # only clusters inside: attach to the first one's
        inner = graph.nodes[0].inner if graph.nodes else None
        return _anchors(inner) if inner is not None else ("missing", "missing")
    terminals = {node.label: node.id for node in drawn if node.shape == "terminal"}
    return terminals.get("START", drawn[0].id), terminals.get("END", drawn[-1].id)


def _dot_graph(
    graph: _Graph, lines: list[str], indent: str, anchors: Mapping[str, tuple[str, str]]
) -> None:
    for node in graph.nodes:
        if node.inner is None:
            shape = _DOT_SHAPES[node.shape]
            lines.append(f"{indent}{node.id} [label={_dot_text(node.label)}, {shape}];")
            continue
        lines.append(f"{indent}subgraph cluster_{node.id} {{")
        lines.append(f"{indent}  label={_dot_text(node.label)};")
        lines.append(f"{indent}  style=rounded;")
        _dot_graph(node.inner, lines, indent + "  ", anchors)
        lines.append(f"{indent}}}")
    for edge in graph.edges:
        attrs = []
        source, target = edge.source, edge.target
        if source in anchors:  # an edge from a subgraph node leaves its cluster's border
            attrs.append(f"ltail=cluster_{source}")
            source = anchors[source][1]
        if target in anchors:
            attrs.append(f"lhead=cluster_{target}")
            target = anchors[target][0]
        if edge.style != "solid":
            attrs.append(f"style={edge.style}")
        if edge.label:
            attrs.append(f"label={_dot_text(edge.label)}")
        tail = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f"{indent}{source} -> {target}{tail};")


def draw(description: Mapping[str, Any], format: str) -> str:
    """A graph description as text in ``format`` (one of :data:`FORMATS`).

    :raises ValueError: for another format.
    """
    if format == "mermaid":
        return to_mermaid(description)
    if format == "dot":
        return to_dot(description)
    raise ValueError(f"unknown picture format {format!r}; use one of {', '.join(FORMATS)}")


# --------------------------------------------------------------------------------- notebooks


class GraphDescription(dict[str, Any]):
    """An adapter's ``describe()``: a plain dict (what callers and ``--json`` read) that draws
    itself in a notebook.

    In Jupyter it shows as a Mermaid picture (rendered in Markdown outputs by JupyterLab 4.1 and
    Notebook 7.1 on; older front ends show the Mermaid text), followed by the nodes and edges as a
    list that opens on a click. There is no ``_repr_html_``: front ends prefer HTML to Markdown,
    so one would hide the picture.
    """

    def mermaid(self) -> str:
        """The graph as a Mermaid flowchart (see :func:`to_mermaid`)."""
        return to_mermaid(self)

    def dot(self) -> str:
        """The graph as a Graphviz ``digraph`` (see :func:`to_dot`)."""
        return to_dot(self)

    def _repr_markdown_(self) -> str:
        listing = "\n".join(_listing(self, ""))
        return (
            f"```mermaid\n{self.mermaid()}```\n\n"
            f"<details><summary>graph {html.escape(str(self.get('name', '?')))}: nodes and edges"
            f"</summary>\n\n{listing}\n\n</details>\n"
        )


def _md(text: str) -> str:
    """``text`` as Markdown code, so that no name is read as markup."""
    return "`" + text.replace("`", "'") + "`"


def _listing(description: Mapping[str, Any], indent: str) -> Iterator[str]:
    entry = description.get("entry") or ()
    if entry:
        yield f"{indent}- entry: {', '.join(_md(str(n)) for n in entry)}"
    for node in description.get("nodes") or ():
        name = str(node.get("name", "?")) if isinstance(node, Mapping) else str(node)
        sub = node.get("subgraph") if isinstance(node, Mapping) else None
        tasks = node.get("tasks") if isinstance(node, Mapping) else None
        extra = f" (tasks: {', '.join(_md(str(t)) for t in tasks)})" if tasks else ""
        tools = tool_names(node)
        if tools:
            extra += f" (tools: {', '.join(_md(t) for t in tools)})"
        models = model_names(node)
        if models:
            extra += f" (model {', '.join(_md(m) for m in models)})"
        if isinstance(sub, Mapping):
            extra += f" runs subgraph {_md(str(sub.get('name', '?')))}:"
        yield f"{indent}- node {_md(name)}{extra}"
        if isinstance(sub, Mapping):
            yield from _listing(sub, indent + "  ")
    for edge in description.get("edges") or ():
        source = _SHOWN.get(str(edge.get("source")), str(edge.get("source")))
        target = _SHOWN.get(str(edge.get("target")), str(edge.get("target")))
        yield f"{indent}- {_md(source)} → {_md(target)}"
    for cond in description.get("conditional_edges") or ():
        source = _SHOWN.get(str(cond.get("source")), str(cond.get("source")))
        targets = cond.get("targets")
        shown = (
            "any node"
            if targets is None
            else ", ".join(_md(_SHOWN.get(str(t), str(t))) for t in targets)
        )
        router = f" (router {_md(str(cond['router']))})" if cond.get("router") else ""
        yield f"{indent}- {_md(source)} ⇢ {shown}{router}"
    held = held_tools(description)
    if held:
        yield f"{indent}- tools: {', '.join(_md(t) for t in held)}"
    models = held_models(description)
    if models:
        yield f"{indent}- models: {', '.join(_md(m) for m in models)}"
