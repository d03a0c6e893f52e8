"""Breakpoints: where and when a branch stops (or, for logpoints, logs).

A :class:`Breakpoint` is a pydantic model, so it can be saved and sent over a wire. A condition
is a sandboxed expression string checked when the breakpoint is set; a Python callable is
accepted too, in-process only (it is not serialized).

What a breakpoint is checked against:

- its arguments, always, when it is built (:meth:`Breakpoint.create`): globs, positions, unit
  kinds (one of :class:`flowdbg.events.Kind`), conditions, and exception names, which must be
  class names (``ValueError``, ``httpx.ReadTimeout``);
- its name pattern, against the names the attached targets' descriptions list
  (:class:`KnownNames`, :func:`unknown_name`), by the debugger when the breakpoint is set;
- its exception names, against the exception classes defined so far and the way exception
  classes are named (:func:`exception_name_problem`), by the debugger when it is set.
"""

from __future__ import annotations

import builtins
import difflib
import fnmatch
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr

from flowdbg._expr import Expression, compile_expression, render_template
from flowdbg._redact import redact, redact_text
from flowdbg.errors import BreakpointError, ExpressionError, PathError
from flowdbg.events import Event, Kind, Position

if TYPE_CHECKING:
    from flowdbg.runtime import Unit

__all__ = [
    "CONDITION_NAMES",
    "EXCEPTION_SUFFIXES",
    "Breakpoint",
    "BreakpointType",
    "HitCondition",
    "KnownNames",
    "exception_name_problem",
    "unknown_name",
]

#: Names a condition expression may use.
CONDITION_NAMES: frozenset[str] = frozenset(
    {
        "state",
        "input",
        "output",
        "args",
        "error",
        "node",
        "kind",
        "position",
        "step",
        "superstep",
        "branch",
        "attempt",
        "hits",
        "value",
        "path",
        "decision",
    }
)

_MISSING = object()


class BreakpointType(str, Enum):
    """The kinds of breakpoint."""

    NODE = "node"
    EXCEPTION = "exception"
    WATCH = "watch"
    TOOL = "tool"
    HANDOFF = "handoff"
    EVENT = "event"
    LOGPOINT = "logpoint"

    def __str__(self) -> str:
        return self.value


_HIT_RE = re.compile(r"^\s*(==|>=|<=|>|<|%)?\s*(\d+)\s*$")


class HitCondition:
    """A hit condition in the debug adapter protocol's habit.

    ``"3"`` (or ``"==3"``) matches the third hit only, ``">=3"`` the third and later, ``">3"``,
    ``"<3"`` and ``"<=3"`` likewise, ``"%2"`` every second hit.
    """

    __slots__ = ("number", "op", "source")

    def __init__(self, source: str) -> None:
        m = _HIT_RE.match(source) if isinstance(source, str) else None
        if m is None:
            raise BreakpointError(
                f"hit condition {source!r} is malformed; use a number ('3' stops on the third "
                "hit only), '>=3' (from the third on), '>3', '<3', '<=3' or '%2' (every second hit)"
            )
        self.source = source
        self.op = m.group(1) or "=="
        self.number = int(m.group(2))
        if self.op == "%" and self.number == 0:
            raise BreakpointError(f"hit condition {source!r} divides by zero; use '%1' or more")

    def __call__(self, hits: int) -> bool:
        n, op = self.number, self.op
        if op == "==":
            return hits == n
        if op == ">=":
            return hits >= n
        if op == ">":
            return hits > n
        if op == "<":
            return hits < n
        if op == "<=":
            return hits <= n
        return hits % n == 0


class Breakpoint(BaseModel):
    """One breakpoint, logpoint, watch or exception breakpoint.

    ``id`` is a stable short id (``bp-1``, ``bp-2``, ...) given by the debugger. ``hits`` counts
    the times its location and condition matched (the hit condition is applied to that count).
    Set ``enabled = False`` to keep it without it stopping or counting.
    """

    model_config = ConfigDict(validate_assignment=False, use_enum_values=False)

    id: str
    type: BreakpointType
    pattern: str = "*"
    positions: tuple[str, ...] = (Position.BEFORE.value,)
    kinds: tuple[str, ...] | None = None
    condition: str | None = None
    has_callable_condition: bool = False
    hit_condition: str | None = None
    temporary: bool = False
    enabled: bool = True
    hits: int = 0
    # type-specific
    exception_types: tuple[str, ...] = ()
    watch_path: str | None = None
    args_pattern: str | None = None
    message: str | None = None

    _c: _Compiled | None = PrivateAttr(default=None)
    _callable: Callable[..., Any] | None = PrivateAttr(default=None)
    _exc_classes: tuple[builtins.type[BaseException], ...] = PrivateAttr(default=())

    # -- construction --

    @classmethod
    def create(
        cls,
        bp_id: str,
        bp_type: BreakpointType,
        *,
        pattern: str = "*",
        positions: tuple[str, ...] = (Position.BEFORE.value,),
        kinds: tuple[str, ...] | None = None,
        condition: str | Callable[..., Any] | None = None,
        hit_condition: str | int | None = None,
        temporary: bool = False,
        enabled: bool = True,
        exception_types: tuple[builtins.type[BaseException] | str, ...] = (),
        watch_path: str | None = None,
        args_pattern: str | None = None,
        message: str | None = None,
    ) -> Breakpoint:
        """Build and check a breakpoint; every mistake is reported here, not when it is hit.

        :raises BreakpointError: for a bad glob, hit condition, regex or path.
        :raises ExpressionError: for a condition or message template that is malformed or
            uses something the sandbox does not allow.
        """
        if not isinstance(pattern, str) or not pattern:
            raise BreakpointError(
                f"breakpoint name pattern must be a non-empty string, got {pattern!r}"
            )
        for pos in positions:
            if pos not in (p.value for p in Position):
                raise BreakpointError(f"position {pos!r} is not one of 'before', 'after', 'error'")
        if kinds is not None:
            kinds = tuple(k.value if isinstance(k, Kind) else str(k) for k in kinds)
            _check_kinds(kinds)
        callable_cond = None
        cond_src: str | None = None
        if condition is not None:
            if callable(condition):
                callable_cond = condition
            elif isinstance(condition, str):
                cond_src = condition
            else:
                raise ExpressionError(
                    f"condition must be an expression string or a callable, got {condition!r}"
                )
        hit_src = None if hit_condition is None else str(hit_condition)
        type_names: list[str] = []
        classes: list[builtins.type[BaseException]] = []
        for t in exception_types:
            if isinstance(t, str):
                if not t:
                    raise BreakpointError("exception type names must not be empty")
                if not all(part.isidentifier() for part in t.split(".")):
                    raise BreakpointError(
                        f"exception name {t!r} is not a class name; give an exception class or "
                        "its name, such as 'ValueError' or 'httpx.ReadTimeout'"
                    )
                type_names.append(t)
            elif isinstance(t, type) and issubclass(t, BaseException):
                classes.append(t)
                type_names.append(f"{t.__module__}.{t.__qualname__}")
            else:
                raise BreakpointError(
                    f"{t!r} is not an exception class or a type name; pass e.g. ValueError "
                    "or 'TimeoutError'"
                )
        bp = cls(
            id=bp_id,
            type=bp_type,
            pattern=pattern,
            positions=tuple(str(p) for p in positions),
            kinds=kinds,
            condition=cond_src,
            has_callable_condition=callable_cond is not None,
            hit_condition=hit_src,
            temporary=temporary,
            enabled=enabled,
            exception_types=tuple(type_names),
            watch_path=watch_path,
            args_pattern=args_pattern,
            message=message,
        )
        bp._callable = callable_cond
        bp._exc_classes = tuple(classes)
        bp._compile()
        return bp

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Breakpoint:
        """Rebuild a breakpoint from :meth:`model_dump` output (conditions re-checked).

        :raises BreakpointError: when the data is not a valid breakpoint.
        """
        bp = cls.model_validate(dict(data))
        if bp.has_callable_condition:
            raise BreakpointError(
                f"breakpoint {bp.id} had a Python callable condition, which cannot be restored "
                "from saved data; give it an expression string instead"
            )
        bp._compile()
        return bp

    def _compile(self) -> None:
        self._c = _Compiled(self)

    # -- matching (hot path when breakpoints exist) --

    @property
    def compiled(self) -> _Compiled:
        """The checked, compiled form the controller matches with."""
        assert self._c is not None
        return self._c

    def matches(self, event: Event, unit: Unit) -> tuple[bool, Any]:
        """Whether this breakpoint's location and condition match ``event``.

        :returns: ``(matched, value)`` where ``value`` is the watched value for a watch.
        :raises flowdbg.errors.ExpressionError: when the condition fails to evaluate.
        """
        c = self.compiled
        loc = event.location
        if not c.may_match(loc.position, loc.kind, loc.node):
            return False, None
        return c.matches_payload(event, unit)

    def render(self, event: Event, value: Any = None) -> str:
        """Render a logpoint's message for ``event``, secrets redacted as the store redacts
        them: the values a template reads are redacted by key (``{state}`` shows
        ``'api_key': '[REDACTED]'``, and so does ``{state[api_key]}``), and the message by value
        (a token or a URL password that an object's repr shows).
        """
        assert self.message is not None
        names = condition_names(event, hits=self.hits, value=value)
        redacted = {name: redact(item) for name, item in names.items()}
        return redact_text(render_template(self.message, redacted))

    def describe(self) -> str:
        """One line describing the breakpoint, for listings."""
        parts = [self.id, self.type.value]
        if self.type == BreakpointType.WATCH:
            parts.append(repr(self.watch_path))
        elif self.type == BreakpointType.EXCEPTION:
            parts.append(",".join(self.exception_types) or "any")
            if self.pattern != "*":
                parts.append(f"in {self.pattern!r}")
        else:
            parts.append(repr(self.pattern))
            if self.type in (BreakpointType.NODE, BreakpointType.LOGPOINT):
                parts.append("/".join(self.positions))
                if self.kinds:
                    parts.append(f"kind {','.join(self.kinds)}")
        if self.args_pattern:
            parts.append(f"args~{self.args_pattern!r}")
        if self.condition:
            parts.append(f"if {self.condition}")
        elif self.has_callable_condition:
            parts.append("if <callable>")
        if self.hit_condition:
            parts.append(f"hits {self.hit_condition}")
        if self.message:
            parts.append(f"log {self.message!r}")
        if self.temporary:
            parts.append("temporary")
        if not self.enabled:
            parts.append("disabled")
        parts.append(f"({self.hits} hits)")
        return " ".join(parts)


class _Compiled:
    """A breakpoint checked and compiled for matching; plain slots, read on every point."""

    __slots__ = (
        "args_re",
        "bp",
        "callable",
        "exc_classes",
        "exc_names",
        "expr",
        "glob",
        "hit",
        "kinds",
        "match_all",
        "needs_resolve",
        "path_glob",
        "positions",
        "type",
        "watch_parts",
    )

    def __init__(self, bp: Breakpoint) -> None:
        if bp.kinds is not None:  # saved data (from_dict) is checked like a new breakpoint
            _check_kinds(bp.kinds)
        self.bp = bp
        self.type = bp.type
        self.positions = frozenset(bp.positions)
        self.kinds = None if bp.kinds is None else frozenset(bp.kinds)
        # A pattern with a "/" names a unit by where it runs as a stop shows it
        # ("outer/inner": the unit inner in the run nested in outer): its last part is matched
        # against the unit's name first, the whole against its path once that matched.
        # (a unit whose own name has a "/" is matched by the whole pattern too)
        self.path_glob: re.Pattern[str] | None = None
        if "/" in bp.pattern and bp.type != BreakpointType.HANDOFF:
            self.path_glob = re.compile(fnmatch.translate(bp.pattern))
            self.glob = re.compile(
                f"(?:{fnmatch.translate(unit_name_of(bp.pattern))})|(?:{self.path_glob.pattern})"
            )
        else:
            self.glob = re.compile(fnmatch.translate(bp.pattern))
        self.match_all = bp.pattern == "*" or bp.type == BreakpointType.HANDOFF
        self.expr: Expression | None = None
        self.callable = bp._callable
        self.exc_classes = bp._exc_classes
        self.exc_names = bp.exception_types
        self.hit: HitCondition | None = None
        self.args_re: re.Pattern[str] | None = None
        self.watch_parts: tuple[str | int, ...] = ()
        # Whether matching reads the state or decision of an after point, which an adapter may
        # only be able to give by computing it (see Unit.after's resolve): a watch, a callable,
        # a handoff target, or a condition or template naming them (a plain text test: a name
        # in a string literal only costs that computation, never a wrong match).
        self.needs_resolve = (
            bp.type in (BreakpointType.WATCH, BreakpointType.HANDOFF)
            or self.callable is not None
            or any(
                name in text
                for text in (bp.condition or "", bp.message or "")
                for name in ("state", "decision")
            )
        )
        if bp.condition is not None:
            self.expr = compile_expression(bp.condition, allowed_names=CONDITION_NAMES)
        if bp.hit_condition is not None:
            self.hit = HitCondition(bp.hit_condition)
        if bp.args_pattern is not None:
            try:
                self.args_re = re.compile(bp.args_pattern)
            except re.error as exc:
                raise BreakpointError(
                    f"args_pattern {bp.args_pattern!r} is not a valid regular expression: {exc}"
                ) from exc
        if bp.type == BreakpointType.WATCH:
            from flowdbg._paths import parse_path

            if not bp.watch_path:
                raise BreakpointError("a watch needs a state path, e.g. dbg.watch('count')")
            from flowdbg._paths import split_view

            # a watch reads the state: "state:summary" (as inspect takes it) is "summary"
            view, inner = split_view(bp.watch_path)
            if view not in (None, "state"):
                raise BreakpointError(
                    f"cannot watch {bp.watch_path!r}: a watch follows a path in the state, and "
                    f"this names the view {view!r}; watch a state path instead, e.g. "
                    f"{inner or 'count'!r}"
                )
            try:
                self.watch_parts = tuple(parse_path(inner))
            except PathError as exc:
                raise BreakpointError(f"cannot watch {bp.watch_path!r}: {exc}") from exc
        if bp.type == BreakpointType.LOGPOINT:
            from flowdbg._expr import check_template

            if not bp.message:
                raise BreakpointError("a logpoint needs a message template, e.g. 'x is {state[x]}'")
            check_template(bp.message, allowed_names=CONDITION_NAMES)

    def may_match(self, position: str, kind: str, node: str) -> bool:
        """Cheap pre-check on the location alone (no event needed)."""
        if position not in self.positions:
            return False
        if self.kinds is not None and kind not in self.kinds:
            return False
        return self.match_all or self.glob.match(node) is not None

    def matches_payload(self, event: Event, unit: Unit) -> tuple[bool, Any]:
        """The rest of the match, once :meth:`may_match` accepted the location."""
        bp = self.bp
        if self.type == BreakpointType.HANDOFF and bp.pattern != "*":
            target = event.decision if isinstance(event.decision, str) else event.location.node
            if self.glob.match(target) is None:
                return False, None
        if self.path_glob is not None:
            node = event.location.node
            where = "/".join((*event.location.path, node))
            if self.path_glob.match(where) is None and self.path_glob.match(node) is None:
                return False, None
        value: Any = None
        raw: Any = _MISSING  # a watch's new value, _MISSING where its path does not resolve
        if self.type == BreakpointType.EXCEPTION:
            if event.error is None or not self._exception_matches(event.error):
                return False, None
        elif self.type == BreakpointType.WATCH:
            changed, raw = self._watch_changed(unit, event)
            if not changed:
                return False, None
            value = None if raw is _MISSING else raw  # (a path gone: None to conditions)
            if self.expr is None and self.callable is None:
                _seen_inside(unit, bp.id, raw)
                return True, value
        elif (
            self.type == BreakpointType.TOOL
            and self.args_re is not None
            and self.args_re.search(_serialize_args(event.input)) is None
        ):
            return False, None
        if self.expr is None and self.callable is None:
            return True, value
        names = condition_names(event, hits=bp.hits, value=value)
        if self.callable is not None:
            matched = bool(self.callable(_Namespace(names)))
        else:
            assert self.expr is not None
            matched = bool(self.expr.evaluate(names))
        if matched and self.type == BreakpointType.WATCH:
            _seen_inside(unit, bp.id, raw)
        return matched, value

    def hit_allows(self, hits: int) -> bool:
        """Whether the hit condition lets hit number ``hits`` stop."""
        return self.hit is None or self.hit(hits)

    def _exception_matches(self, exc: BaseException) -> bool:
        if not self.exc_names:
            return True
        if self.exc_classes and isinstance(exc, self.exc_classes):
            return True
        for cls in type(exc).__mro__:
            qual = f"{cls.__module__}.{cls.__qualname__}"
            for name in self.exc_names:
                if name == cls.__name__ or name == qual or name == cls.__qualname__:
                    return True
        return False

    def _watch_changed(self, unit: Unit, event: Event) -> tuple[bool, Any]:
        """Whether the watched path changed over ``unit``, and its new value (``_MISSING``
        where the path does not resolve)."""
        from flowdbg._paths import get_path

        if event.state is None:  # the adapter cannot show the state here: nothing to compare
            return False, None
        if unit.state_before is None:
            # The state before the unit was not read: the watch was set while the unit ran,
            # past its before point (which reads it only when something can stop), so there is
            # nothing to compare the new value with; a missing old value would read as a change.
            return False, None

        try:
            new = get_path(event.state, self.watch_parts)
        except Exception:
            new = _MISSING
        try:
            old = get_path(unit.state_before, self.watch_parts)
        except Exception:
            old = _MISSING
        if new is _MISSING:
            changed = old is not _MISSING
        elif old is _MISSING:
            changed = True
        else:
            changed = _differ(old, new)
        if changed:
            # A change a unit inside this one (a tool call inside an agent's turn) already
            # matched for this watch is not matched again here: one change, one stop.
            seen = getattr(unit, "_watch_seen", None)
            if seen is not None and self.bp.id in seen and not _differ(seen[self.bp.id], new):
                changed = False
        return changed, new


def _differ(old: Any, new: Any) -> bool:
    if old is new:
        return False
    if old is _MISSING or new is _MISSING:
        return True
    try:
        return bool(old != new)
    except Exception:
        return True


def _seen_inside(unit: Unit, bp_id: str, value: Any) -> None:
    """Note on every unit enclosing ``unit`` that watch ``bp_id`` matched a change to
    ``value`` inside it (see ``_Compiled._watch_changed``)."""
    outer = unit.run.parent_unit
    while outer is not None:
        seen = getattr(outer, "_watch_seen", None)
        if seen is None:
            seen = outer._watch_seen = {}
        seen[bp_id] = value
        outer = outer.run.parent_unit


def _check_kinds(kinds: Iterable[str]) -> None:
    valid = [k.value for k in Kind]
    for kind in kinds:
        if kind not in valid:
            raise BreakpointError(
                f"unit kind {kind!r} is not one of {', '.join(map(repr, valid))}; give one of "
                "those (or none, for every kind)"
            )


# ------------------------------------------------------------- names the targets know


@dataclass(frozen=True)
class KnownNames:
    """The unit names the attached targets say they run, to check breakpoint patterns by.

    ``nodes`` holds the names of every node, subgraph node, listed task (an
    ``@entrypoint``'s ``tasks``) and agent model (a node's ``model``: its model turns' units
    take that name); ``tools`` the tool names, or ``None`` when a target's
    description lists no ``tools`` (then tool names cannot be checked).
    """

    nodes: tuple[str, ...]
    tools: tuple[str, ...] | None

    @classmethod
    def from_descriptions(cls, descriptions: Iterable[Mapping[str, Any]]) -> KnownNames | None:
        """The names of targets described by ``descriptions`` (``Adapter.describe`` output).

        A description has ``nodes`` (names or ``{"name", "subgraph", "tasks", "tools",
        "model"}`` mappings) and may have ``tools`` (names or ``{"name"}`` mappings) and ``open``.

        :returns: ``None`` when the names cannot be checked: a description is ``open`` (its
            target runs units it does not list, such as a LangGraph ``@entrypoint``'s tasks),
            or lists no node.
        """
        nodes: list[str] = []
        tools: list[str] | None = []
        for description in descriptions:
            if _is_open(description):
                return None
            found_nodes: list[str] = []
            found_tools: list[str] = []
            tools_listed = _collect(description, found_nodes, found_tools)
            if not found_nodes:
                return None
            nodes.extend(n for n in found_nodes if n not in nodes)
            if tools is not None and tools_listed:
                tools.extend(t for t in found_tools if t not in tools)
            else:
                tools = None
        return cls(tuple(nodes), None if tools is None else tuple(tools))


def _name_of(item: Any) -> str:
    return str(item.get("name", "?")) if isinstance(item, Mapping) else str(item)


def _collect(description: Mapping[str, Any], nodes: list[str], tools: list[str]) -> bool:
    """Add the node and tool names of ``description`` (and of its subgraphs); whether it lists
    tools anywhere."""
    listed = "tools" in description
    tools.extend(_name_of(t) for t in description.get("tools") or ())
    for node in description.get("nodes") or ():
        nodes.append(_name_of(node))
        if not isinstance(node, Mapping):
            continue
        nodes.extend(str(t) for t in node.get("tasks") or ())
        # an agent's model turns run as units of the model's name (several agents: a list)
        model = node.get("model")
        nodes.extend(m for m in ([model] if isinstance(model, str) else model or ()) if m)
        if "tools" in node:
            listed = True
            tools.extend(_name_of(t) for t in node.get("tools") or ())
        sub = node.get("subgraph")
        if isinstance(sub, Mapping):
            listed = _collect(sub, nodes, tools) or listed
    return listed


def _is_open(description: Mapping[str, Any]) -> bool:
    if description.get("open"):
        return True
    return any(
        isinstance(node, Mapping)
        and isinstance(node.get("subgraph"), Mapping)
        and _is_open(node["subgraph"])
        for node in description.get("nodes") or ()
    )


#: names of units whose names no description lists (model calls, handoffs, agents) are not
#: checked; a handoff's target, though, is a node
_UNDESCRIBED_KINDS = frozenset({Kind.LLM.value, Kind.HANDOFF.value, Kind.AGENT.value})
_SHOWN_NAMES = 20


def unit_name_of(pattern: str) -> str:
    """The part of a breakpoint's pattern that names the unit: the last of ``outer/inner``
    (a unit named by where it runs, as a stop shows it), or the whole pattern."""
    return pattern.rsplit("/", 1)[-1] if "/" in pattern else pattern


#: what an unknown name's message suggests where it may be that of a call (a tool or model
#: call no description lists): the terminal sets such a breakpoint for those kinds instead
CALL_KINDS_REMEDY = "give kind='tool' or kind='llm' for a call a node makes"


def unknown_name(bp: Breakpoint, known: KnownNames) -> tuple[str, str] | None:
    """Why the name pattern of ``bp`` matches no unit the targets of ``known`` run.

    Which names a pattern is checked against: a tool breakpoint's, the tools; a handoff's, the
    nodes; any other's, the nodes when it is restricted to ``kind="node"``, the tools with
    ``kind="tool"``, and both without a kind. A pattern that may name a model call, handoff or
    agent unit (``kind="llm"``...), or a tool when no description lists tools, is not checked
    (``None``): nothing lists those names.

    :returns: ``None`` when the pattern matches a known name or cannot be checked, else
        ``(problem, remedy)``: ``unknown node 'x'; nodes: ...`` (the names closest to the
        pattern first) and what to do about it.
    """
    pattern = bp.pattern if bp.type == BreakpointType.HANDOFF else unit_name_of(bp.pattern)
    if pattern == "*":
        return None
    if bp.type == BreakpointType.HANDOFF:
        kinds = {Kind.NODE.value}
        what = "handoff target"
    else:
        kinds = set(bp.kinds) if bp.kinds is not None else {Kind.NODE.value, Kind.TOOL.value}
        if kinds & _UNDESCRIBED_KINDS:
            return None
        what = ""
    unchecked_tools = Kind.TOOL.value in kinds and known.tools is None
    if unchecked_tools and (bp.kinds is not None or bp.type == BreakpointType.TOOL):
        return None  # given as a tool's: nothing lists the tools
    groups: list[tuple[str, tuple[str, ...]]] = []
    if Kind.NODE.value in kinds:
        groups.append(("nodes", known.nodes))
    if Kind.TOOL.value in kinds and known.tools is not None:
        groups.append(("tools", known.tools))
    globs = {pattern, bp.pattern}  # (a unit whose own name has a "/": the whole pattern)
    if any(fnmatch.fnmatchcase(name, g) for _, names in groups for name in names for g in globs):
        return None
    if not what:
        what = " or ".join(label[:-1] for label, _ in groups)
    listing = "; ".join(f"{label}: {_closest_first(pattern, names)}" for label, names in groups)
    remedy = "check the spelling"
    if unchecked_tools:
        remedy += ", or " + CALL_KINDS_REMEDY
    return f"unknown {what} {pattern!r}; {listing}", remedy


def _closest_first(pattern: str, names: tuple[str, ...]) -> str:
    if not names:
        return "none"
    close = difflib.get_close_matches(pattern, names, n=3, cutoff=0.6)
    ordered = [*close, *(n for n in names if n not in close)]
    shown = ", ".join(ordered[:_SHOWN_NAMES])
    if len(ordered) > _SHOWN_NAMES:
        shown += f", ... ({len(ordered) - _SHOWN_NAMES} more)"
    return shown


# ------------------------------------------------------------- exception names

#: how the names of exception classes end, by convention; a name ending otherwise, of no
#: exception class defined so far, is probably mistyped
EXCEPTION_SUFFIXES: tuple[str, ...] = (
    "Error",
    "Exception",
    "Exit",
    "Interrupt",
    "Warning",
    "Timeout",
    "Cancelled",
    "Exceeded",
)


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined so far in this process (builtins and every imported
    module's), by simple name."""
    found: dict[str, type[BaseException]] = {}
    seen: set[type[BaseException]] = set()
    stack: list[type[BaseException]] = [BaseException]
    while stack:
        cls = stack.pop()
        if cls in seen:  # a class with several exception bases is reached through each
            continue
        seen.add(cls)
        found.setdefault(cls.__name__, cls)
        stack.extend(type.__subclasses__(cls))
    return found


def exception_name_problem(name: str) -> str | None:
    """What looks wrong with an exception name given to ``break_on_exception``, or ``None``.

    The rule catches typos without refusing the names of exception classes that are not
    imported yet (a framework's, the user's own):

    - a dotted name whose module is already imported (``langgraph.errors.GraphRecursionError``)
      must name an exception class of that module;
    - otherwise its last part (or the simple name) is fine when it is the name of an exception
      class defined so far (builtins, and the classes of every imported module), or when it
      ends like exception class names do (:data:`EXCEPTION_SUFFIXES`: ``...Error``,
      ``...Exception``, ``...Exit``, ``...Interrupt``, ``...Warning``, ``...Timeout``...) and
      is not one letter away from a class defined so far (``ValeuError``, ``KeyErorr``);
    - a builtin that is no exception (``str``), and any other name, is a problem.

    So a name shaped like an exception class's (``NotAnException``, ``RateLimitError``) is
    taken on trust: its class may be imported later. Nothing is imported to check a name. To
    set a breakpoint on an exception class named otherwise before its module is imported, pass
    the class itself, or silence the :class:`flowdbg.errors.BreakpointWarning`.

    :param name: a name already checked to be a dotted path of identifiers.
    :returns: the problem, in words that end with the remedy.
    """
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        module = sys.modules.get(module_name)
        if module is None:
            continue
        value: Any = module
        for part in parts[cut:]:
            value = getattr(value, part, _MISSING)
            if value is _MISSING:
                return (
                    f"exception name {name!r} names nothing: module {module_name!r} has no "
                    f"{'.'.join(parts[cut:])!r}; check the spelling"
                )
        if isinstance(value, type) and issubclass(value, BaseException):
            return None
        return (
            f"exception name {name!r} names {type(value).__name__} {value!r:.60}, not an "
            "exception class; give an exception class"
        )
    simple = parts[-1]
    classes = _exception_classes()
    if simple in classes:
        return None
    builtin = getattr(builtins, simple, _MISSING)
    if builtin is not _MISSING:
        what = "type" if isinstance(builtin, type) else type(builtin).__name__
        return (
            f"exception name {name!r} is the builtin {what} {simple!r}, not an exception class; "
            "give an exception class, such as 'ValueError'"
        )
    if simple.endswith(EXCEPTION_SUFFIXES):
        typos = sorted(n for n in classes if _one_edit_apart(simple, n))
        if not typos:
            return None
        return (
            f"exception name {name!r} is the name of no exception class defined so far, but "
            f"one letter away from {' and '.join(map(repr, typos))}; check the spelling, or "
            "pass the class itself"
        )
    close = difflib.get_close_matches(simple, list(classes), n=3, cutoff=0.6)
    hint = f" (closest: {', '.join(map(repr, close))})" if close else ""
    return (
        f"exception name {name!r} is the name of no exception class defined so far and does "
        f"not end like one ({', '.join(EXCEPTION_SUFFIXES)}); check the spelling{hint}, or "
        "pass the class itself"
    )


def _one_edit_apart(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` with one letter added, removed, changed or swapped with the next."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    if len(a) == len(b):
        if a[start + 1 :] == b[start + 1 :]:
            return True  # one letter changed
        return (
            a[start : start + 2] == b[start : start + 2][::-1] and a[start + 2 :] == b[start + 2 :]
        )
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return longer[start + 1 :] == shorter[start:]


class _Namespace(dict[str, Any]):
    """The names of a condition, readable as keys or attributes by a callable condition."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def condition_names(event: Event, *, hits: int = 0, value: Any = None) -> dict[str, Any]:
    """The names available to a condition or logpoint template at ``event``."""
    loc = event.location
    return {
        "state": event.state,
        "input": event.input,
        "output": event.output,
        "args": event.input if loc.kind == Kind.TOOL.value else None,
        "error": event.error,
        "node": loc.node,
        "kind": loc.kind,
        "position": loc.position,
        "step": loc.step,
        "superstep": loc.superstep,
        "branch": loc.branch,
        "attempt": loc.attempt,
        "hits": hits,
        "value": value,
        "path": list(loc.path),
        "decision": event.decision,
    }


def _serialize_args(args: Any) -> str:
    if isinstance(args, str):
        return args
    try:
        return json.dumps(args, sort_keys=True, default=repr, ensure_ascii=False)
    except Exception:
        return repr(args)


PositionName = Literal["before", "after", "error"]
