"""Pictures of graph descriptions: Mermaid and Graphviz text, and the describe() result that
draws itself in a notebook."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from flowdbg import Debugger
from flowdbg._diagram import GraphDescription, draw, to_dot, to_mermaid
from flowdbg.cli._demo import build_graph

Edges = set[tuple[str, str, str, str]]

_MERMAID_NODE = re.compile(r'^\s*(n\d+)(?:\[\[|\(\[|\[|\{\{|\{)"(.*)"(?:\]\]|\]\)|\]|\}\}|\})$')
_MERMAID_BOX = re.compile(r'^\s*subgraph (n\d+)\["(.*)"\]$')
_MERMAID_EDGE = re.compile(r'^\s*(n\d+) (-->|-\.->)(?:\|"(.*)"\|)? (n\d+)$')


def mermaid_edges(text: str) -> tuple[dict[str, str], Edges]:
    """The labels of the drawn nodes by id, and the edges as (source, target, style, label)."""
    labels: dict[str, str] = {}
    edges: Edges = set()
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    for line in lines[1:]:
        if line.strip().startswith("%%") or line.strip() == "end":
            continue
        node = _MERMAID_NODE.match(line) or _MERMAID_BOX.match(line)
        if node:
            labels[node.group(1)] = node.group(2)
            continue
        edge = _MERMAID_EDGE.match(line)
        assert edge, f"not a node, box or edge: {line!r}"
        source, arrow, label, target = edge.groups()
        style = "solid" if arrow == "-->" else "dashed"
        edges.add((labels[source], labels[target], style, label or ""))
    return labels, edges


_DOT_NODE = re.compile(r'^\s*(n\d+) \[label="(.*?)", (.*)\];$')
_DOT_EDGE = re.compile(r"^\s*(n\d+) -> (n\d+)(?: \[(.*)\])?;$")


def dot_edges(text: str) -> tuple[dict[str, str], Edges]:
    labels: dict[str, str] = {}
    edges: Edges = set()
    lines = text.splitlines()
    assert lines[0].startswith("digraph ") and lines[-1] == "}"
    clusters: dict[str, str] = {}
    for line in lines:
        node = _DOT_NODE.match(line)
        if node:
            labels[node.group(1)] = node.group(2)
        box = re.match(r"^\s*subgraph cluster_(n\d+) \{$", line)
        if box:
            clusters[box.group(1)] = ""
    for line in lines:
        edge = _DOT_EDGE.match(line)
        if not edge:
            continue
        source, target, attrs = edge.groups()
        attrs = attrs or ""
        tail = re.search(r"ltail=cluster_(n\d+)", attrs)
        head = re.search(r"lhead=cluster_(n\d+)", attrs)
        style = re.search(r"style=(\w+)", attrs)
        label = re.search(r'label="(.*?)"', attrs)
        edges.add(
            (
                f"cluster {tail.group(1)}" if tail else labels[source],
                f"cluster {head.group(1)}" if head else labels[target],
                style.group(1) if style else "solid",
                label.group(1) if label else "",
            )
        )
    return labels, edges


SUPPORT: Edges = {
    ("START", "classify", "solid", ""),
    ("classify", "refund", "dashed", "route"),
    ("classify", "answer", "dashed", "route"),
    ("refund", "sign", "solid", ""),
    ("answer", "sign", "solid", ""),
    ("sign", "END", "solid", ""),
}


@pytest.mark.parametrize("parse", [mermaid_edges, dot_edges])
def test_the_support_graph_with_its_conditional_edges_dashed(
    parse: Callable[[str], tuple[dict[str, str], Edges]],
) -> None:
    description = build_graph().describe()
    text = to_mermaid(description) if parse is mermaid_edges else to_dot(description)
    labels, edges = parse(text)
    assert sorted(labels.values()) == ["END", "START", "answer", "classify", "refund", "sign"]
    assert edges == SUPPORT


def fan_description() -> dict[str, Any]:
    inner = {
        "name": "inner",
        "entry": ["inner1"],
        "nodes": [{"name": "inner1", "subgraph": None}, {"name": "inner2", "subgraph": None}],
        "edges": [
            {"source": "__start__", "target": "inner1"},
            {"source": "inner1", "target": "inner2"},
            {"source": "inner2", "target": "__end__"},
        ],
        "conditional_edges": [],
    }
    return {
        "name": "fan",
        "entry": ["fan"],
        "nodes": [
            {"name": "fan", "subgraph": None},
            {"name": "sub", "subgraph": inner},
            {"name": "done", "subgraph": None},
        ],
        "edges": [
            {"source": "__start__", "target": "fan"},
            {"source": "sub", "target": "done"},
            {"source": "done", "target": "__end__"},
        ],
        "conditional_edges": [{"source": "fan", "router": "split", "targets": ["sub", "__end__"]}],
    }


def test_a_subgraph_is_a_box_around_its_nodes_in_mermaid() -> None:
    text = to_mermaid(fan_description())
    labels, edges = mermaid_edges(text)
    box = next(i for i, label in labels.items() if label == "sub: inner")
    lines = text.splitlines()
    start, end = lines.index(f'  subgraph {box}["sub: inner"]'), lines.index("  end")
    inside = "\n".join(lines[start:end])
    assert '"inner1"' in inside and '"inner2"' in inside and '"fan"' not in inside
    assert ("fan", "sub: inner", "dashed", "split") in edges
    assert ("sub: inner", "done", "solid", "") in edges
    assert ("inner1", "inner2", "solid", "") in edges


def test_a_subgraph_is_a_cluster_in_dot_that_edges_meet_at_its_border() -> None:
    text = to_dot(fan_description())
    _, edges = dot_edges(text)
    box = re.search(r"subgraph cluster_(n\d+) \{", text)
    assert box is not None
    assert 'label="sub: inner";' in text
    assert ("fan", f"cluster {box.group(1)}", "dashed", "split") in edges
    assert (f"cluster {box.group(1)}", "done", "solid", "") in edges
    assert ("fan", "END", "dashed", "split") in edges


def test_tasks_routers_without_targets_and_awkward_names() -> None:
    description = {
        "name": 'say "hi"',
        "entry": ["main"],
        "open": True,
        "nodes": [
            {"name": "main", "subgraph": None, "tasks": ["fetch"], "tools": [{"name": "pay"}]},
            {"name": "end", "subgraph": None},  # a node may be named like Mermaid's keyword
            {"name": 'a "b" <c> #1', "subgraph": None},
        ],
        "edges": [{"source": "__start__", "target": "main"}],
        "conditional_edges": [{"source": "main", "router": "pick", "targets": None}],
    }
    labels, edges = mermaid_edges(to_mermaid(description))
    assert ("main", "fetch", "dashed", "task") in edges
    assert ("main", "pay", "dashed", "tool") in edges  # an agent's tool beside it
    assert ("main", "any node", "dashed", "pick") in edges
    assert "a #quot;b#quot; #lt;c#gt; #35;1" in labels.values()
    assert not any(re.match(r"^\s*end\b.*\[", line) for line in to_mermaid(description).split("\n"))
    dot = to_dot(description)
    assert dot.startswith('digraph "say \\"hi\\"" {')
    assert 'label="a \\"b\\" <c> #1"' in dot
    _, dot_found = dot_edges(dot)
    assert ("main", "fetch", "dotted", "task") in dot_found
    with pytest.raises(ValueError, match="unknown picture format 'png'; use one of mermaid, dot"):
        draw(description, "png")


def test_the_tools_a_target_holds_and_a_steps_model_are_drawn() -> None:
    # a LlamaIndex workflow's description: the tools it holds (its steps call them; no node
    # lists them) and the model of the step that asks it
    description = {
        "name": "Calc",
        "entry": ["compute"],
        "nodes": [
            {"name": "compute", "subgraph": None},
            {"name": "run_agent_step", "subgraph": None, "model": "MockLLM"},
        ],
        "edges": [
            {"source": "__start__", "target": "compute"},
            {"source": "compute", "target": "run_agent_step"},
            {"source": "run_agent_step", "target": "__end__"},
        ],
        "conditional_edges": [],
        "tools": [{"name": "add"}, {"name": "boom"}],
    }
    mermaid = to_mermaid(description)
    _, edges = mermaid_edges(mermaid)
    assert ("run_agent_step", "MockLLM", "dashed", "model") in edges
    assert re.search(r'^  n\d+\{\{"MockLLM"\}\}$', mermaid, flags=re.M)  # a hexagon
    box = re.search(r'^  subgraph (n\d+)\["tools"\]\n((?:    .*\n)+)  end$', mermaid, flags=re.M)
    assert box is not None, mermaid
    assert re.findall(r'\[\["(\w+)"\]\]', box.group(2)) == ["add", "boom"]
    dot = to_dot(description)
    _, dot_found = dot_edges(dot)
    assert ("run_agent_step", "MockLLM", "dotted", "model") in dot_found
    assert 'label="MockLLM", shape=hexagon' in dot
    cluster = dot.split('label="tools";')[1].split("}")[0]
    assert 'label="add", shape=component' in cluster and 'label="boom"' in cluster
    # a node listing its tools (an agent's) has them beside it, and no box
    description["nodes"][0]["tools"] = [{"name": "add"}]
    assert '["tools"]' not in to_mermaid(description)
    listing = GraphDescription(description)._repr_markdown_()
    assert "- node `run_agent_step` (model `MockLLM`)" in listing


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed here")
def test_graphviz_reads_the_dot_text() -> None:
    for description in (build_graph().describe(), fan_description()):
        done = subprocess.run(
            ["dot", "-Tsvg"], input=to_dot(description), capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        assert "<svg" in done.stdout


def test_describe_returns_a_dict_that_draws_itself_in_a_notebook() -> None:
    graph = build_graph()
    with Debugger(record=False) as dbg:
        description = dbg.describe(graph)
    assert isinstance(description, GraphDescription) and isinstance(description, dict)
    assert description == graph.describe()
    assert json.loads(json.dumps(description)) == graph.describe()
    markdown = description._repr_markdown_()
    assert markdown.startswith("```mermaid\nflowchart TD\n")
    _, edges = mermaid_edges(markdown.split("```mermaid\n")[1].split("```")[0])
    assert edges == SUPPORT
    # readable where Mermaid is not drawn: the nodes and edges, in a list that opens on a click
    listing = markdown.split("<details>")[1]
    assert "- node `classify`" in listing
    assert "- `classify` ⇢ `refund`, `answer` (router `route`)" in listing
    assert "- `sign` → `END`" in listing
    # front ends prefer HTML to Markdown: an HTML form would hide the picture
    assert not hasattr(description, "_repr_html_")
    assert description.dot() == to_dot(graph.describe())
