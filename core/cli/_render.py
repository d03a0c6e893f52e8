"""Rendering helpers shared by the commands: the console, tables, times, graphs."""

from __future__ import annotations

import datetime as dt
import json
import os
import pprint
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when something is printed: --help stays fast
    from rich.console import Console
    from rich.text import Text
    from rich.tree import Tree

from flowdbg._json import jsonable
from flowdbg._redact import redact, redact_text
from flowdbg._values import KeySummary, short_repr, to_plain
from flowdbg._views import short_id

__all__ = [
    "END_NAMES",
    "Out",
    "duration",
    "graph_tree",
    "local_time",
    "make_console",
    "neighbourhood",
    "node_names",
    "pretty",
    "short_id",
    "state_table",
    "text_table",
]

#: how graph descriptions name the start and end pseudo-nodes
END_NAMES = {"__end__": "END", "__start__": "START"}


def make_console(*, stderr: bool = False) -> Console:
    """A console writing to the current ``sys.stdout`` (or ``sys.stderr``) at print time.

    Off a terminal (pipes, files, test runners) lines are 120 columns wide unless ``COLUMNS``
    says otherwise, and colour follows rich's rules (``NO_COLOR``, ``TERM=dumb``).
    """
    stream = sys.stderr if stderr else sys.stdout
    width: int | None = None
    if not os.environ.get("COLUMNS"):
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        if not tty:
            width = 120
    from rich.console import Console

    return Console(
        stderr=stderr, width=width, highlight=False, markup=False, emoji=False, soft_wrap=False
    )


class Out:
    """Where a command prints: plain lines, styled text and rich renderables, in order.

    Lines are redacted (:func:`flowdbg._redact.redact_text`) as they are printed: an error
    message or a traceback may quote a URL with its password or a token, as values may.
    """

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or make_console()

    def line(self, text: str = "", style: str | None = None) -> None:
        """Print one line as is (never wrapped or interpreted as markup), secrets redacted."""
        from rich.text import Text

        self.console.print(Text(redact_text(text), style=style or ""), soft_wrap=True)

    def show(self, renderable: Any) -> None:
        """Print a rich renderable (a tree, a :class:`~rich.text.Text`: never wrapped)."""
        from rich.text import Text

        self.console.print(renderable, soft_wrap=isinstance(renderable, Text))

    def block(self, text: str, indent: str = "") -> None:
        """Print several lines, each indented (redacted whole: a private key spans lines)."""
        for piece in redact_text(text).splitlines() or [""]:
            self.line(indent + piece)


def local_time(timestamp: float | None, *, millis: bool = False) -> str:
    """An epoch timestamp in local time, ``2024-05-01 14:30:05`` (``-`` when unknown)."""
    if not timestamp:
        return "-"
    moment = dt.datetime.fromtimestamp(timestamp)
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    if millis:
        text += f".{moment.microsecond // 1000:03d}"
    return text


def duration(seconds: float | None) -> str:
    """A duration as the run log shows it (``-`` when unknown)."""
    if seconds is None:
        return "-"
    from flowdbg.runlog import format_duration

    return str(format_duration(seconds))


_BUILTIN_TYPES = (dict, list, tuple, set, frozenset, str, bytes, int, float, bool, complex)


def pretty(value: Any, width: int = 100) -> str:
    """A value pretty-printed over several lines (plain containers, framework objects as
    their fields), secrets redacted."""
    if _plain_data(value):  # kept as it is: a tuple prints as a tuple
        return pprint.pformat(redact(value), width=width, sort_dicts=False)
    # framework objects, also inside containers, print as their fields: a list of messages
    # prints like one message does
    plain = redact(to_plain(value))
    if isinstance(plain, str) and not isinstance(value, str):
        return plain
    return pprint.pformat(plain, width=width, sort_dicts=False)


def _plain_data(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` holds builtin values only (looked at a few levels deep)."""
    if value is None or isinstance(value, (str, int, float, bool, bytes)):
        return True
    if depth > 4 or type(value) not in _BUILTIN_TYPES:
        return False
    if isinstance(value, dict):
        items: Any = [*value.keys(), *value.values()]
    else:
        items = value
    return all(_plain_data(item, depth + 1) for item in list(items)[:200])


def as_json_text(value: Any) -> str:
    """A value as indented strict JSON text, under the policy of :mod:`flowdbg._json` (``NaN``
    as the string ``"NaN"``, a lone surrogate as its escape), so that any UTF-8 terminal or pipe
    can print it."""
    return json.dumps(jsonable(value), indent=2, ensure_ascii=False, allow_nan=False)


def text_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str | Text]],
    *,
    right: Iterable[int] = (),
    indent: int = 0,
) -> Text:
    """A borderless table as styled text: columns two spaces apart, no trailing spaces.

    Cells may be :class:`~rich.text.Text` to carry a style (a coloured status).
    """
    from rich.text import Text

    body = [[c if isinstance(c, Text) else Text(str(c)) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in body:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], cell.cell_len)
    aligned_right = set(right)
    out = Text()

    def emit(cells: Sequence[Text]) -> None:
        line = Text(" " * indent)
        for index, cell in enumerate(cells):
            pad = " " * (widths[index] - cell.cell_len)
            last = index == len(cells) - 1
            if index in aligned_right:
                line.append(pad)
                line.append_text(cell)
            else:
                line.append_text(cell)
                if not last:
                    line.append(pad)
            if not last:
                line.append("  ")
        line.rstrip()
        if len(out):
            out.append("\n")
        out.append_text(line)

    emit([Text(h, style="bold") for h in headers])
    for row in body:
        emit(row)
    return out


def state_table(
    rows: Sequence[KeySummary], writers: Mapping[str, Any] | None = None, *, indent: int = 2
) -> Text:
    """The compact per-key summary of a state: key, type, size, preview (and last writer)."""
    headers = ["key", "type", "size"]
    if writers is not None:
        headers.append("written by")
    headers.append("preview")
    body = []
    for row in rows:
        cells = [row.key, row.type, "" if row.size is None else str(row.size)]
        if writers is not None:
            writer = writers.get(row.key)
            cells.append("-" if writer is None else f"step {writer[0]} {writer[1]}")
        cells.append(row.preview)
        body.append(cells)
    return text_table(headers, body, right=[2], indent=indent)


# -------------------------------------------------------------------------------- graphs


def _name(node: Any) -> str:
    if isinstance(node, Mapping):
        return str(node.get("name", "?"))
    return str(node)


def _shown(name: str) -> str:
    return END_NAMES.get(name, name)


def node_names(description: Mapping[str, Any], *, nested: bool = True) -> list[str]:
    """Every node name of a graph description (with subgraph nodes when ``nested``)."""
    names: list[str] = []
    for node in description.get("nodes") or ():
        names.append(_name(node))
        if not isinstance(node, Mapping):
            continue
        sub = node.get("subgraph")
        if nested and isinstance(sub, Mapping):
            names.extend(n for n in node_names(sub) if n not in names)
        if nested:  # the units a node calls, such as an @entrypoint's @task functions
            names.extend(str(t) for t in node.get("tasks") or () if str(t) not in names)
    return names


def is_open(description: Mapping[str, Any]) -> bool:
    """Whether units other than the described nodes may run (an ``@entrypoint``'s @task
    calls), so a name missing from :func:`node_names` may still be a unit's."""
    from flowdbg.breakpoints import _is_open

    return _is_open(description)


def subgraph_at(description: Mapping[str, Any], path: Iterable[str]) -> Mapping[str, Any] | None:
    """The description of the subgraph reached by following node names ``path``."""
    current: Mapping[str, Any] | None = description
    for name in path:
        if current is None:
            return None
        found = None
        for node in current.get("nodes") or ():
            if isinstance(node, Mapping) and node.get("name") == name:
                found = node.get("subgraph")
        current = found if isinstance(found, Mapping) else None
    return current


def _conditional(description: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in description.get("conditional_edges") or () if isinstance(c, Mapping)]


def neighbourhood(description: Mapping[str, Any], node: str) -> tuple[list[str], list[str]]:
    """Predecessors and successors of ``node``, conditional ones suffixed with ``?``.

    ``START`` is a predecessor of the entry nodes; a router without a mapping shows as
    ``(any, via NAME)?``, and its source as a possible predecessor of nodes with no other.
    """
    preds: list[str] = []
    succs: list[str] = []
    if node in (description.get("entry") or ()):
        preds.append("START")
    for edge in description.get("edges") or ():
        src, dst = str(edge.get("source")), str(edge.get("target"))
        if dst == node and _shown(src) not in preds:
            preds.append(_shown(src))
        if src == node and _shown(dst) not in succs:
            succs.append(_shown(dst))
    for cond in _conditional(description):
        targets = cond.get("targets")
        src = str(cond.get("source"))
        if src == node:
            if targets is None:
                succs.append(f"(any, via {cond.get('router')})?")
            else:
                succs.extend(f"{_shown(str(t))}?" for t in targets)
        elif targets is not None and node in targets:
            preds.append(f"{_shown(src)}?")
    if not preds:
        # Only a router without a mapping can lead here.
        preds = [
            f"{_shown(str(c.get('source')))}?"
            for c in _conditional(description)
            if c.get("targets") is None
        ]
    return preds, succs


def graph_tree(description: Mapping[str, Any], title: str | None = None) -> Tree:
    """A tree of a graph description: entry, nodes (subgraphs nested), edges, conditional
    edges."""
    from rich.text import Text
    from rich.tree import Tree

    tree = Tree(Text(title or f"graph {description.get('name', '?')!r}", style="bold"))
    _fill(tree, description)
    return tree


def _fill(tree: Tree, description: Mapping[str, Any]) -> None:
    from flowdbg._diagram import held_models, held_tools, tool_names

    entry = description.get("entry")
    if entry:
        tree.add(f"entry: {', '.join(map(str, entry))}")
    nodes = tree.add("nodes")
    for node in description.get("nodes") or ():
        label = _name(node)
        sub = node.get("subgraph") if isinstance(node, Mapping) else None
        extras = []
        if isinstance(node, Mapping) and node.get("retry"):
            extras.append(f"retry {node['retry']}")
        if isinstance(node, Mapping) and node.get("tasks"):
            extras.append(f"tasks: {', '.join(map(str, node['tasks']))}")
        tools = tool_names(node)
        if tools:
            extras.append(f"tools: {', '.join(tools)}")
        model = node.get("model") if isinstance(node, Mapping) else None
        if model:  # the name its model turns run under (a list for several agents)
            extras.append(f"model {model if isinstance(model, str) else ', '.join(model)}")
        if isinstance(sub, Mapping):
            extras.append(f"subgraph {sub.get('name', '?')!r}")
        branch = nodes.add(label + (f"  ({', '.join(extras)})" if extras else ""))
        if isinstance(sub, Mapping):
            _fill(branch, sub)
    edges = description.get("edges") or ()
    if edges:
        branch = tree.add("edges")
        for edge in edges:
            branch.add(f"{_shown(str(edge.get('source')))} -> {_shown(str(edge.get('target')))}")
    conditional = _conditional(description)
    if conditional:
        branch = tree.add("conditional edges")
        for cond in conditional:
            targets = cond.get("targets")
            shown = "?" if targets is None else ", ".join(_shown(str(t)) for t in targets)
            router = f"  (router {cond['router']})" if cond.get("router") else ""
            branch.add(f"{_shown(str(cond.get('source')))} -?-> {shown}{router}")
    reducers = description.get("reducers")
    if reducers:
        tree.add(f"reducers: {', '.join(map(str, reducers))}")
    held = held_tools(description)
    if held:  # the tools the target calls, where no node lists them as its own
        tree.add(f"tools: {', '.join(held)}")
    models = held_models(description)
    if models:  # and the models it asks
        tree.add(f"models: {', '.join(models)}")


def preview(value: Any, limit: int = 60) -> str:
    """A one-line preview of a value (``-`` for ``None``)."""
    return "-" if value is None else short_repr(value, limit)
