"""The event model: where execution is (:class:`Location`) and what happened there (:class:`Event`).

Every adapter turns its framework's execution into events at points ``before``, ``after`` and
``error`` of a unit (a graph node, a workflow step, a tool call, an LLM call, a handoff). The
controller, the recorder and every observer see the same events, whatever the framework.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from flowdbg._json import jsonable

__all__ = [
    "ErrorInfo",
    "Event",
    "Kind",
    "Location",
    "Position",
    "RunInfo",
    "RunStatus",
]


class Kind(str, Enum):
    """What kind of unit an event belongs to."""

    NODE = "node"
    TOOL = "tool"
    LLM = "llm"
    HANDOFF = "handoff"
    AGENT = "agent"

    def __str__(self) -> str:
        return self.value


class Position(str, Enum):
    """Where in a unit an event happens."""

    BEFORE = "before"
    AFTER = "after"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


class RunStatus(str, Enum):
    """Status of a run."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    TERMINATED = "terminated"
    #: ended waiting for the framework's own resume (a LangGraph ``interrupt()``): not done,
    #: not an error; a later run goes on from there
    SUSPENDED = "suspended"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Location:
    """Where execution is: the unit, its nesting and its concurrency coordinates.

    ``path`` holds the names of the enclosing units from the root run down to (not including) this
    unit, so a node of a subgraph ``sub`` has ``path == ("sub",)`` and ``depth == 1``.
    """

    framework: str
    run_id: str
    parent_run_id: str | None
    path: tuple[str, ...]
    node: str
    kind: str
    position: str
    step: int
    superstep: int | None = None
    branch: str | None = None
    attempt: int = 1

    @property
    def depth(self) -> int:
        """Nesting depth: 0 for a unit of the top-level run."""
        return len(self.path)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict of every field (and ``depth``)."""
        return {
            "framework": self.framework,
            "run_id": self.run_id,
            "parent_run_id": self.parent_run_id,
            "path": list(self.path),
            "depth": self.depth,
            "node": self.node,
            "kind": self.kind,
            "position": self.position,
            "step": self.step,
            "superstep": self.superstep,
            "branch": self.branch,
            "attempt": self.attempt,
        }

    def __str__(self) -> str:
        where = "/".join((*self.path, self.node))
        extra = f", superstep {self.superstep}" if self.superstep is not None else ""
        return f"{self.position} {self.kind} {where!r} (step {self.step}{extra})"


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """A serializable description of an exception: type name, message and traceback text."""

    type: str
    message: str
    traceback: str
    module: str = ""

    @classmethod
    def from_exception(cls, exc: BaseException) -> ErrorInfo:
        """Describe ``exc``.

        :param exc: the exception.
        :returns: its type name, message and formatted traceback.
        """
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return cls(
            type=type(exc).__name__,
            message=str(exc),
            traceback=tb,
            module=type(exc).__module__,
        )

    @classmethod
    def of(cls, error: BaseException | ErrorInfo) -> ErrorInfo:
        """``error`` described: an exception as by :meth:`from_exception`, an
        :class:`ErrorInfo` as it is."""
        return error if isinstance(error, ErrorInfo) else cls.from_exception(error)

    def to_dict(self) -> dict[str, str]:
        """Return a JSON-serializable dict."""
        return {
            "type": self.type,
            "module": self.module,
            "message": self.message,
            "traceback": self.traceback,
        }


@dataclass(slots=True)
class Event:
    """One point of execution with its payloads.

    ``state`` is the framework's state as a mapping view, ``input`` what the unit receives (node
    input, input event, tool arguments), ``output`` what it returns (the update it commits, the tool
    result), ``error`` the exception at an ``error`` point, ``decision`` the routing result (next
    nodes, handoff target) where the framework makes one known.
    """

    location: Location
    state: Any = None
    input: Any = None
    output: Any = None
    error: BaseException | None = None
    decision: Any = None
    timestamp: float = field(default_factory=time.time)

    @property
    def error_info(self) -> ErrorInfo | None:
        """The error as an :class:`ErrorInfo`, or ``None``."""
        return None if self.error is None else ErrorInfo.from_exception(self.error)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict (payloads as plain values, as strict JSON)."""
        info = self.error_info
        return {
            "location": self.location.to_dict(),
            "state": jsonable(self.state),
            "input": jsonable(self.input),
            "output": jsonable(self.output),
            "error": None if info is None else info.to_dict(),
            "decision": jsonable(self.decision),
            "timestamp": self.timestamp,
        }


@dataclass(slots=True)
class RunInfo:
    """One run: a top-level invocation, or a nested one with a parent."""

    run_id: str
    framework: str
    name: str
    parent_run_id: str | None
    root_run_id: str
    path: tuple[str, ...]
    status: RunStatus = RunStatus.RUNNING
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    input: Any = None
    output: Any = None
    #: the exception that ended the run; once the run has ended and its observers were told,
    #: its :class:`ErrorInfo` (so that no frame of the run stays alive)
    error: BaseException | ErrorInfo | None = None
    #: labels an adapter gives the run (LangGraph: its checkpointer ``thread_id``), recorded
    tags: dict[str, str] = field(default_factory=dict)
    #: the step of the parent run's unit that started this run (``None`` for a top-level run)
    parent_step: int | None = None
    #: how to import the target again (``path/to/file.py:obj`` or ``package.module:obj``), for
    #: forks of the run; ``None`` when unknown (nested runs leave it to their top-level run)
    target: str | None = None
    #: how the run came about from another run: ``"fork"``, ``"rerun"`` or ``"rewind"``;
    #: ``None`` for a run started afresh
    origin: str | None = None
    #: the run it was made from (``origin`` says how), and the step of that run it starts after
    forked_from: str | None = None
    fork_step: int | None = None
    #: the config the run was started with, when the debugger started it with one
    #: (:class:`flowdbg.adapter.RunOptions` ``config``), recorded for reruns
    config: Any = None

    @property
    def duration(self) -> float | None:
        """Seconds from start to end, or ``None`` while running."""
        return None if self.ended_at is None else self.ended_at - self.started_at

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict (input and output as strict JSON)."""
        return {
            "run_id": self.run_id,
            "framework": self.framework,
            "name": self.name,
            "parent_run_id": self.parent_run_id,
            "root_run_id": self.root_run_id,
            "path": list(self.path),
            "status": self.status.value,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "input": jsonable(self.input),
            "output": jsonable(self.output),
            "error": None if self.error is None else ErrorInfo.of(self.error).to_dict(),
            "tags": dict(self.tags),
            "parent_step": self.parent_step,
            "target": self.target,
            "origin": self.origin,
            "forked_from": self.forked_from,
            "fork_step": self.fork_step,
        }
