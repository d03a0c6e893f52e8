"""The event journal: what the debugger's hooks report, numbered, for the WebSocket clients.

The hooks run on the debugged program's threads, so :class:`EventJournal` only appends a small
dict to a bounded ring under a lock and wakes the waiting connections; it never waits for a
client. Each connection keeps its own cursor (the last ``seq`` it sent) and reads the ring at
its own pace; one that falls further behind than the ring holds is told so with a ``gap``
event instead of slowing the run down.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any

from flowdbg._redact import redact_text
from flowdbg.plugins import hookimpl

if TYPE_CHECKING:
    from flowdbg.breakpoints import Breakpoint
    from flowdbg.events import Event, RunInfo
    from flowdbg.runtime import Unit
    from flowdbg.stops import Stop

__all__ = ["EventJournal"]


class EventJournal:
    """A plugin that numbers the debugger's events and keeps the last ``size`` of them.

    :param size: how many events are kept for clients that reconnect.
    """

    def __init__(self, size: int = 10_000) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size!r}")
        self._lock = threading.Lock()
        self._ring: deque[dict[str, Any]] = deque(maxlen=size)
        self._seq = 0
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        #: stop id -> the action it was let go with (the last ``size``), however it was: a
        #: command for a stop that has resumed can say so
        self.resumed: OrderedDict[str, str] = OrderedDict()
        self._size = size

    @property
    def last_seq(self) -> int:
        """The newest event's number (0 before the first)."""
        return self._seq

    def publish(self, type: str, data: dict[str, Any]) -> int:
        """Append an event and wake the connections waiting for one; returns its ``seq``."""
        with self._lock:
            self._seq += 1
            seq = self._seq
            self._ring.append({"seq": seq, "type": type, "time": time.time(), "data": data})
            waiters = list(self._waiters)
        for loop, event in waiters:
            # a connection already woken reads this event too (it was appended first, and it
            # clears its flag before it reads): waking it again would only cost a syscall
            if event.is_set():
                continue
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that loop is closed: its connection is gone
                self._waiters.discard((loop, event))
        return seq

    def since(self, seq: int) -> tuple[list[dict[str, Any]], int | None]:
        """The events after ``seq``, and the first kept ``seq`` when some after it were
        dropped (``None`` when nothing is missing)."""
        with self._lock:
            items = [item for item in self._ring if item["seq"] > seq] if self._ring else []
            first = self._ring[0]["seq"] if self._ring else self._seq + 1
        missing = first if seq + 1 < first and seq < self._seq else None
        return items, missing

    def register(self, loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
        """Wake ``event`` (on ``loop``) at every new event."""
        with self._lock:
            self._waiters.add((loop, event))

    def unregister(self, loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
        """Stop waking ``event``."""
        with self._lock:
            self._waiters.discard((loop, event))

    # ------------------------------------------------------------- the hooks

    @hookimpl
    def flowdbg_on_run_start(self, run: RunInfo) -> None:
        """Publish ``run_start``."""
        self.publish("run_start", _run(run))

    @hookimpl
    def flowdbg_on_run_end(self, run: RunInfo) -> None:
        """Publish ``run_end`` (with the error's type and message when it failed)."""
        data = _run(run)
        error = run.error
        if isinstance(error, BaseException):
            data["error"] = {"type": type(error).__name__, "message": redact_text(str(error))}
        elif error is not None:
            data["error"] = {"type": error.type, "message": redact_text(error.message)}
        self.publish("run_end", data)

    @hookimpl
    def flowdbg_on_stop(self, stop: Stop) -> None:
        """Publish ``stop`` with the stop's brief (the values are fetched on demand)."""
        self.publish("stop", brief(stop))

    @hookimpl
    def flowdbg_on_resume(self, stop: Stop, action: str) -> None:
        """Publish ``resume``."""
        with self._lock:
            self.resumed[stop.id] = str(action)
            while len(self.resumed) > self._size:
                self.resumed.popitem(last=False)
        self.publish("resume", {"stop": stop.id, "action": str(action)})

    @hookimpl
    def flowdbg_on_log(self, breakpoint: Breakpoint, event: Event, message: str) -> None:
        """Publish ``log`` with the logpoint's rendered (redacted) message."""
        self.publish(
            "log",
            {"breakpoint": breakpoint.id, "message": message, "location": event.location.to_dict()},
        )

    @hookimpl
    def flowdbg_on_step(self, unit: Unit) -> None:
        """Publish ``step``: which unit finished and how (no values: they are in the record),
        where (its run's path of nodes, its branch) and when."""
        self.publish(
            "step",
            {
                "run_id": unit.run.run_id,
                "parent_run_id": unit.run.info.parent_run_id,
                "step": unit.step,
                "node": unit.node,
                "kind": unit.kind,
                "status": unit.status,
                "path": list(unit.run.path),
                "branch": unit.branch,
                "superstep": unit.superstep,
                "started_at": _time(unit, "started_at"),
                "ended_at": _time(unit, "ended_at"),
            },
        )


def _time(unit: Unit, name: str) -> float | None:
    value = unit.record_value(name)  # None when the adapter did not get that far
    return value if isinstance(value, float) else None


def _run(run: RunInfo) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "name": run.name,
        "framework": run.framework,
        "status": str(run.status),
        "parent_run_id": run.parent_run_id,
    }


def brief(stop: Stop) -> dict[str, Any]:
    """A stop without its values: id, reason, location, breakpoints and message."""
    return {
        "id": stop.id,
        "reason": stop.reason.value,
        "location": stop.location.to_dict(),
        "breakpoints": list(stop.breakpoints),
        "message": None if stop.message is None else redact_text(stop.message),
    }
