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
from flowdbg.errors import EditRefused, FlowdbgError
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


@dataclass(eq=False)
class Stop:
    """A branch held at a point, with everything known there.

    Edits made through :meth:`flowdbg.Debugger.set` while the stop is open are applied when the
    branch resumes: at a ``before`` stop to the unit's input, at an ``after`` stop to the update
    it commits. ``state``, ``input`` and ``output`` show the edits already made.
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

    # -- editing --

    def _editable_here(self) -> str | None:
        """:attr:`editable`, or ``None`` where the adapter refuses every edit (a tool call
        seen through callbacks, say): its check is tried on the payload as it is."""
        which = self.editable
        unit = self._unit
        if which is None or unit is None or unit.check_edit is None:
            return which
        try:
            unit.check_edit(unit, which, getattr(self, which))
        except EditRefused:
            return None
        return which

    def _edit(self, apply: Any) -> None:
        """Apply ``apply(root) -> new_root`` to the editable payload (a private copy)."""
        which = self.editable
        if which is None:
            raise FlowdbgError(
                f"stop {self.id} is at an error point, where there is nothing to edit; "
                "edit at a before or after stop instead"
            )
        current = getattr(self, which)
        shared_state = self.state is current
        # Edit a copy: the framework's own object stays untouched, and a refused edit (below)
        # leaves the payload as it was.
        candidate = apply(_copy(current))
        unit = self._unit
        if unit is not None and unit.check_edit is not None:
            unit.check_edit(unit, which, candidate)  # raises EditRefused with the reason
        if not self._edited:
            if not shared_state:
                self.state = _copy(self.state)
            self._edited = True
        setattr(self, which, candidate)
        if shared_state:
            self.state = getattr(self, which)
        elif isinstance(self.state, Mapping) and isinstance(candidate, Mapping):
            # Mirror the edit of an update (a mapping of state keys) onto the displayed state so
            # that inspect() shows it; best effort, the state view is for display and the
            # payload is what the framework receives. (Another payload, a tool's arguments or a
            # LangGraph Command, has keys that are not state keys.)
            try:
                self.state = apply(self.state)
            except Exception:
                pass

    def diff(self) -> StateDiff:
        """What the unit changed: its state before versus the state shown at this stop."""
        from flowdbg._diff import diff

        return diff(self.state_before, self.state)

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
            "editable": self._editable_here(),
            "edited": self._edited,
        }

    def __str__(self) -> str:
        bps = f" [{', '.join(self.breakpoints)}]" if self.breakpoints else ""
        return f"{self.id}: {self.reason.value}{bps} at {self.location}"


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
    #: ``kind``, ``step``, ``path`` and ``seconds`` since their before point
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
