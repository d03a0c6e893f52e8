"""Stops: why and where a branch of execution is held, and what can be done there."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from flowdbg._json import jsonable
from flowdbg._redact import redact, redact_text
from flowdbg._views import editable_now
from flowdbg.errors import EditRefused, PathError, validation_details
from flowdbg.events import ErrorInfo, Location, Position

if TYPE_CHECKING:
    from flowdbg._diff import StateDiff
    from flowdbg.runtime import Unit

__all__ = ["Status", "Stop", "StopReason"]


class StopReason(str, Enum):
    """Why a branch stopped."""

    BREAKPOINT = "breakpoint"
    STEP = "step"
    EXCEPTION = "exception"
    PAUSE = "pause"
    ENTRY = "entry"
    WATCH = "watch"

    def __str__(self) -> str:
        return self.value


class Action(str, Enum):
    """How a stopped branch goes on (internal)."""

    CONTINUE = "continue"
    STEP_OVER = "step_over"
    STEP_INTO = "step_into"
    STEP_OUT = "step_out"
    TERMINATE = "terminate"


_NOT_EDITED = object()

#: other names of views at the stops of a tool or an LLM call
_VIEW_ALIASES = {"args": "input", "result": "output"}
_ALIASED_KINDS = ("tool", "llm")


@dataclass(eq=False)
class Stop:
    """A branch held at a point, with everything known there.

    A stop has named views (:attr:`views`): ``state`` (the framework's state as the stop found
    it), ``input`` (what the unit receives; at an ``after`` stop, what it received), ``output``
    (what it returns, at an ``after`` stop) and ``error`` (the exception, at an ``error``
    stop); at a tool or LLM stop ``args`` is the input and ``result`` the output. A path reads
    and edits the :attr:`default_view` unless a ``view:`` prefix names another. Edits made
    through :meth:`flowdbg.Debugger.set` while the stop is open change the default view only
    (``input`` before, ``output`` after) and are applied when the branch resumes; ``input``
    and ``output`` show them, ``state`` does not. Where a unit receives the run's state, an
    edit of its input is kept in the run's state (the unit's own update applied after it), or
    refused with the reason.
    """

    id: str
    reason: StopReason
    location: Location
    breakpoints: tuple[str, ...] = ()
    hits: dict[str, int] = field(default_factory=dict)
    state: Any = None
    input: Any = None
    output: Any = None
    exception: BaseException | None = None
    decision: Any = None
    message: str | None = None
    created_at: float = field(default_factory=time.time)
    #: state before the unit ran (for :meth:`diff`); set at ``after`` and ``error`` stops
    state_before: Any = field(default=None, repr=False)
    #: the watches that stopped here: breakpoint id -> the path it watches (see
    #: :meth:`watch_changes`)
    watches: dict[str, str] = field(default_factory=dict, repr=False)

    # -- internals used by the controller --
    _unit: Unit | None = field(default=None, repr=False)
    _event: threading.Event = field(default_factory=threading.Event, repr=False)
    _action: Action = field(default=Action.CONTINUE, repr=False)
    _edited: bool = field(default=False, repr=False)
    _published: bool = field(default=False, repr=False)  # open: the controller holds it
    _wakers: list[Any] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    resumed_at: float | None = field(default=None, repr=False)

    @property
    def unit(self) -> Unit | None:
        """The unit held at this stop (what an adapter reported), or ``None``."""
        return self._unit

    @property
    def error(self) -> ErrorInfo | None:
        """The exception at an ``error`` stop, as type, message and traceback text."""
        return None if self.exception is None else ErrorInfo.from_exception(self.exception)

    @property
    def is_open(self) -> bool:
        """Whether the branch is still held here."""
        return not self._event.is_set()

    @property
    def editable(self) -> str | None:
        """What an edit changes here: ``"input"`` (before), ``"output"`` (after), or ``None``."""
        if self.location.position == Position.BEFORE:
            return "input"
        if self.location.position == Position.AFTER:
            return "output"
        return None

    # -- views --

    @property
    def default_view(self) -> str:
        """The view a path without a ``view:`` prefix reads and edits: ``input`` at a before
        stop (what the unit receives), ``output`` at an after stop (what it commits), ``state``
        at an error stop."""
        position = self.location.position
        if position == Position.BEFORE:
            return "input"
        if position == Position.AFTER:
            return "output"
        return "state"

    @property
    def views(self) -> tuple[str, ...]:
        """The names of the views of this stop: ``state`` and ``input`` everywhere (at an after
        stop the input the unit received, read-only), ``output`` at an after stop, ``error`` at
        an error stop; at a tool or LLM stop also ``args`` (the input) and ``result`` (the
        output)."""
        position = self.location.position
        names = ["state", "input"]
        if position == Position.AFTER:
            names.append("output")
        if position == Position.ERROR:
            names.append("error")
        if self.location.kind in _ALIASED_KINDS:
            names += [alias for alias, view in _VIEW_ALIASES.items() if view in names]
        return tuple(names)

    def view_name(self, name: str | None) -> str:
        """The view ``name`` stands for here (``args`` -> ``input`` at a tool stop), or the
        default view for ``None``.

        :raises PathError: when this stop has no view ``name``; the message lists its views.
        """
        if name is None:
            return self.default_view
        if name in self.views:
            return _VIEW_ALIASES.get(name, name)
        listed = ", ".join(self.views)
        position = self.location.position
        aliased = self.location.kind in _ALIASED_KINDS and name in _VIEW_ALIASES
        if (name == "output" or aliased) and position == Position.BEFORE:
            why = "the unit has not run yet at a before stop (its output is there after it)"
        elif name in ("output", "error") or aliased:
            why = f"the unit has no {_VIEW_ALIASES.get(name, name)} at this {position} stop"
        elif name in _VIEW_ALIASES:
            why = f"{name!r} names a view at tool and LLM stops only"
        else:
            why = f"there is no view {name!r}"
        raise PathError(f"{self.id} has no {name} view: {why}; its views are {listed}")

    def view(self, name: str | None = None) -> Any:
        """The object the view ``name`` shows (see :attr:`views`); the default view for
        ``None``. ``input`` and ``output`` show the edits made at this stop, ``state`` the
        framework's state as the stop found it.

        :raises PathError: when this stop has no view ``name``; the message lists its views.
        """
        which = self.view_name(name)
        if which == "error":
            return self.exception
        return getattr(self, which)

    # -- editing --

    def _refuse_view(self, name: str, path: str) -> EditRefused:
        """Why an edit of the view ``name`` (not the editable one) is refused, and what to edit."""
        which = self.view_name(name)
        node = self.location.node
        target = f"{self.default_view}:{path}"
        position = self.location.position
        if position == Position.ERROR:
            return EditRefused(
                f"{self.id} is at an error point of {node!r}, where nothing can be edited; "
                "edit at a before or after stop instead"
            )
        if which == "input" and position == Position.AFTER:
            return EditRefused(
                f"{node!r} has received its {name} already (edit it at a before stop): edit "
                f"{target} (what {node!r} commits) instead"
            )
        if which == "state" and position == Position.AFTER:
            return EditRefused(
                f"the state after {node!r} is what the framework computes from its update: "
                f"edit {target} (what {node!r} commits) instead, where its output is an update "
                "of the state (a graph node's); an emitted event or a tool's result is not"
            )
        if which == "state":
            received = self.view(self.default_view)
            key = _first_key(path)
            if key is not None and isinstance(received, Mapping) and key not in received:
                # the unit receives no such key: pointing at input:key would add one to what
                # it receives (an event, arguments), which is not the run's state
                keys = ", ".join(map(repr, list(received)[:8])) or "none"
                return EditRefused(
                    f"the state view shows the run's state as this stop found it and is not "
                    f"edited, and {node!r} does not receive {key!r} (its {self.default_view} "
                    f"has {keys}): the state cannot be edited at this stop"
                )
            return EditRefused(
                f"the state view shows the run's state as this stop found it and is not edited: "
                f"edit {target} (what {node!r} receives) instead; where {node!r} receives "
                "the run's state, the run keeps that edit"
            )
        return EditRefused(
            f"the {name} view cannot be edited at this {position} stop of {node!r}: "
            f"edit {target} instead"
        )

    def _edit(self, apply: Any, *, view: str | None = None, path: str = "") -> None:
        """Apply ``apply(root) -> new_root`` to the editable payload (a private copy).

        Only the default view (:attr:`default_view`) is edited: ``input`` at a before stop,
        ``output`` at an after stop. The ``state`` view is never edited here, so it keeps
        showing the framework's state as the stop found it. An input edit names its top-level
        key in ``Unit.input_edits``, for the adapter to keep in the run's state where the input
        is the state (or to refuse in ``check_edit``).
        """
        which = self.editable
        if which is None or self.view_name(view) != which:
            raise self._refuse_view(view or self.default_view, path)
        current = getattr(self, which)
        # Edit a copy: the framework's own object stays untouched, and a refused edit (below)
        # leaves the payload as it was.
        candidate = apply(_copy(current))
        _validate(candidate, self.location.node, which)
        unit = self._unit
        kept = () if unit is None else unit.input_edits
        if unit is not None and which == "input":
            # the keys the adapter keeps in the run's state where the input is the state; its
            # check (below) sees the key being edited among them
            unit.input_edits = _with_keys(kept, _edited_keys(path, current, candidate))
        try:
            if unit is not None and unit.check_edit is not None:
                unit.check_edit(unit, which, candidate)  # raises EditRefused with the reason
        except BaseException:
            if unit is not None:
                unit.input_edits = kept
            raise
        self._edited = True
        setattr(self, which, candidate)

    def diff(self) -> StateDiff:
        """What the unit changed: its state before versus the ``state`` view of this stop (the
        framework's state: an edit of the output made here is not in it)."""
        from flowdbg._diff import diff

        return diff(self.state_before, self.state)

    def watch_changes(self) -> list[WatchChange]:
        """What each watch that stopped here saw change (as gdb shows a watchpoint's old and new
        value): its path in the state before the unit and in this stop's state."""
        from flowdbg._paths import get_path, parse_path, split_view

        changes = []
        for bp_id, path in self.watches.items():
            _, inner = split_view(path)
            parts = parse_path(inner)
            seen: list[tuple[bool, Any]] = []
            for root in (self.state_before, self.state):
                try:
                    seen.append((True, get_path(root, parts)))
                except Exception:  # the path does not resolve there: added or removed
                    seen.append((False, None))
            (had, old), (has, new) = seen
            changes.append(WatchChange(bp_id, inner, old, new, added=not had, removed=not has))
        return changes

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable description of the stop, secrets redacted (the values by
        :func:`~flowdbg._json.jsonable`; the error's message and traceback and the message, which
        may quote a URL with its password or a token, by value)."""
        err = self.error
        return {
            "id": self.id,
            "reason": self.reason.value,
            "location": self.location.to_dict(),
            "breakpoints": list(self.breakpoints),
            "hits": dict(self.hits),
            "state": jsonable(self.state),
            "input": jsonable(self.input),
            "output": jsonable(self.output),
            "error": None if err is None else redact(err.to_dict()),
            "decision": jsonable(self.decision),
            "message": None if self.message is None else redact_text(self.message),
            "created_at": self.created_at,
            "default_view": self.default_view,
            "views": list(self.views),
            "editable": editable_now(self),
            "edited": self._edited,
            "watched": [change.to_dict() for change in self.watch_changes()],
        }

    def __str__(self) -> str:
        bps = f" [{', '.join(self.breakpoints)}]" if self.breakpoints else ""
        return f"{self.id}: {self.reason.value}{bps} at {self.location}"


@dataclass(frozen=True)
class WatchChange:
    """A watched path's change at a watch stop (:meth:`Stop.watch_changes`)."""

    #: the watch breakpoint's id
    breakpoint: str
    #: the watched path in the state
    path: str
    #: its value before the unit (``None`` where it was ``added``)
    old: Any
    #: its value in the stop's state (``None`` where it was ``removed``)
    new: Any
    #: the path did not resolve before the unit
    added: bool = False
    #: the path does not resolve in the stop's state
    removed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable form, secrets redacted (see :meth:`Stop.to_dict`)."""
        return {
            "breakpoint": self.breakpoint,
            "path": self.path,
            "old": jsonable(self.old),
            "new": jsonable(self.new),
            "added": self.added,
            "removed": self.removed,
        }


def _validate(candidate: Any, node: str, which: str) -> None:
    """Refuse an edit that leaves a pydantic model invalid, with pydantic's own message:
    setting a field does not validate it, so the run would fail later, far from the edit."""
    model_type = type(candidate)
    validate = getattr(model_type, "model_validate", None)
    fields = getattr(model_type, "model_fields", None)
    if validate is None or not isinstance(fields, dict):
        return
    try:
        validate({name: getattr(candidate, name) for name in fields if hasattr(candidate, name)})
    except Exception as exc:  # pydantic.ValidationError, without importing pydantic here
        details = validation_details(exc)
        raise EditRefused(
            f"the {which} of {node!r} is a {model_type.__name__}, which refuses the edit: {details}"
        ) from exc


def _top_keys(value: Any) -> list[Any]:
    """The top-level keys of a payload: a mapping's keys, a model's or dataclass's fields."""
    from collections.abc import Mapping

    if isinstance(value, Mapping):
        return list(value)
    fields = getattr(type(value), "model_fields", None)
    if isinstance(fields, dict):
        return list(fields)
    fields = getattr(value, "__dataclass_fields__", None)
    if isinstance(fields, dict):
        return list(fields)
    return []


def _edited_keys(path: str, before: Any, after: Any) -> list[Any]:
    """The top-level keys an edit at ``path`` changes: its first part, or every key of the
    payload before and after when the whole payload is replaced."""
    from flowdbg._paths import parse_path

    parts = parse_path(path)
    if parts:
        return [parts[0]]
    return _top_keys(before) + _top_keys(after)


def _with_keys(keys: tuple[Any, ...], more: list[Any]) -> tuple[Any, ...]:
    """``keys`` followed by those of ``more`` not among them yet."""
    added = list(keys)
    for key in more:
        if key not in added:
            added.append(key)
    return tuple(added)


def _first_key(path: str) -> Any:
    """The first part of a path (``count`` of ``count.n``), or ``None`` for the whole value or
    a path that does not parse."""
    from flowdbg._paths import parse_path

    try:
        parts = parse_path(path)
    except Exception:
        return None
    return parts[0] if parts else None


def _copy(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except Exception:
        try:
            return copy.copy(value)
        except Exception:
            return value


@dataclass
class Status:
    """A snapshot of the debugger: its state, open stops and active runs."""

    state: str
    stops: list[Stop]
    selected: str | None
    runs: list[str]
    attached: list[str]
    #: units running now (not held at a stop), longest running first: ``run_id``, ``node``,
    #: ``kind``, ``step``, ``superstep``, ``branch``, ``path`` and ``seconds`` since their
    #: before point
    running: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        return {
            "state": self.state,
            "stops": [s.to_dict() for s in self.stops],
            "selected": self.selected,
            "runs": list(self.runs),
            "attached": list(self.attached),
            "running": [dict(unit) for unit in self.running],
        }
