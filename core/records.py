"""Records of what ran: one :class:`RunRecord` per run, one :class:`StepRecord` per unit.

They are what the recorder writes to a store, what the run log keeps in memory, and what store
queries return. Values (``input``, ``output``, ``state``, ``decision``) are the framework's own
objects when a record is built live, and plain JSON values when it is read back from a store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flowdbg.events import ErrorInfo

__all__ = ["ORIGINS", "RUN_STATUSES", "STEP_STATUSES", "RunRecord", "StepRecord"]

#: ``interrupted``: the run was left ``running`` by a process that no longer exists;
#: ``suspended``: it ended waiting for the framework's own resume (a LangGraph ``interrupt()``).
RUN_STATUSES = ("running", "completed", "failed", "terminated", "interrupted", "suspended")
#: ``completed``: the unit returned; ``failed``: it raised; ``running``: it had not finished;
#: ``suspended``: the framework's own control flow left it to run again later (a LangGraph
#: ``interrupt()`` waiting for ``Command(resume=...)``); ``terminated``: the debugger ended
#: the run while the unit ran or was stopped (not an error of the unit).
STEP_STATUSES = ("running", "completed", "failed", "suspended", "terminated")
#: how a run can come from another: ``fork``: started from the state after one of its steps
#: (``flowdbg runs fork``); ``rerun``: run again from its input; ``rewind``: a branch restarted
#: from an earlier step while the run was live
ORIGINS = ("fork", "rerun", "rewind")


@dataclass(slots=True)
class StepRecord:
    """One execution of a unit (node, tool call, model call, handoff) and its outcome."""

    run_id: str
    step: int
    node: str
    kind: str = "node"
    path: tuple[str, ...] = ()
    superstep: int | None = None
    branch: str | None = None
    attempt: int = 1
    status: str = "completed"
    started_at: float = 0.0
    ended_at: float | None = None
    input: Any = None
    output: Any = None
    #: the state after the unit (None where the framework shows none)
    state: Any = None
    decision: Any = None
    error: ErrorInfo | None = None
    #: some value could not be serialized and was stored as a typed repr
    partial: bool = False
    #: id of the child run this unit started (a subgraph, a nested workflow), if any
    child_run_id: str | None = None
    #: a rerun served the unit's output from the recorded run instead of running it
    cached: bool = False

    @property
    def duration(self) -> float | None:
        """Seconds the unit took, or ``None`` if it had not finished."""
        return None if self.ended_at is None else self.ended_at - self.started_at

    @property
    def depth(self) -> int:
        """Nesting depth (0 in a top-level run)."""
        return len(self.path)


@dataclass(slots=True)
class RunRecord:
    """One run: a top-level invocation or a nested one (``parent_run_id`` set)."""

    run_id: str
    framework: str
    name: str
    parent_run_id: str | None = None
    root_run_id: str | None = None
    #: the unit of the parent run that started this run (its step index there)
    parent_step: int | None = None
    path: tuple[str, ...] = ()
    status: str = "running"
    started_at: float = 0.0
    ended_at: float | None = None
    input: Any = None
    output: Any = None
    error: ErrorInfo | None = None
    tags: dict[str, str] = field(default_factory=dict)
    #: process that recorded the run (to tell a dead process's run from a live one)
    pid: int | None = None
    host: str | None = None
    #: the number of steps recorded (filled by stores)
    step_count: int | None = None
    #: how to import the target again (``path/to/file.py:obj`` or ``package.module:obj``)
    target: str | None = None
    #: ``"fork"``, ``"rerun"`` or ``"rewind"`` for a run made from another one (see
    #: :data:`ORIGINS`), else ``None``
    origin: str | None = None
    #: the run this one was made from, and the step of it that this one starts after
    forked_from: str | None = None
    fork_step: int | None = None
    #: the config the run was started with (``flowdbg run --config``, a server's start with
    #: a config), secrets redacted as in values; ``None`` when none was given or known.
    #: :meth:`flowdbg.Debugger.rerun` starts with it again.
    config: Any = None
    #: the run's state before its first unit, where the adapter shows one (a LlamaIndex
    #: context's store as the run got it, an agent's run context): what no step of the run
    #: wrote (:meth:`flowdbg.store.Store.last_writers`); ``None`` when not known (the run's
    #: input stands for it then)
    initial_state: Any = None

    @property
    def duration(self) -> float | None:
        """Seconds from start to end, or ``None`` while running."""
        return None if self.ended_at is None else self.ended_at - self.started_at
