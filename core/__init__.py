"""flowdbg: one debugger for AI agent and workflow frameworks.

Importing flowdbg imports no framework and patches nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flowdbg._diff import StateDiff
    from flowdbg.adapter import NOT_RESUMING, Adapter, AdapterInfo, Capability, Demo, RunOptions
    from flowdbg.breakpoints import Breakpoint, BreakpointType
    from flowdbg.debugger import Debugger, RunHandle
    from flowdbg.errors import (
        AdapterError,
        AdapterNotFound,
        AdapterUnavailable,
        BreakpointError,
        BreakpointWarning,
        EditRefused,
        ExpressionError,
        FlowdbgError,
        NotStoppedError,
        PathError,
        RunOptionError,
        StopNotFound,
        Terminated,
    )
    from flowdbg.events import ErrorInfo, Event, Kind, Location, Position, RunInfo, RunStatus
    from flowdbg.plugins import hookimpl
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.runlog import NodeStats, RunLog, format_duration
    from flowdbg.runtime import Frame, RunScope, Unit
    from flowdbg.stops import Status, Stop, StopReason, WatchChange
    from flowdbg.timetravel import ForkError, ForkPoint

__version__ = "0.1.0.dev0"

#: public name -> the module defining it, imported on first use (so that ``import flowdbg``,
#: and the command line's ``--help``, stay fast)
_LAZY = {
    "StateDiff": "flowdbg._diff",
    "NOT_RESUMING": "flowdbg.adapter",
    "Adapter": "flowdbg.adapter",
    "AdapterInfo": "flowdbg.adapter",
    "Capability": "flowdbg.adapter",
    "Demo": "flowdbg.adapter",
    "RunOptions": "flowdbg.adapter",
    "Breakpoint": "flowdbg.breakpoints",
    "BreakpointType": "flowdbg.breakpoints",
    "Debugger": "flowdbg.debugger",
    "RunHandle": "flowdbg.debugger",
    "AdapterError": "flowdbg.errors",
    "AdapterNotFound": "flowdbg.errors",
    "AdapterUnavailable": "flowdbg.errors",
    "BreakpointError": "flowdbg.errors",
    "BreakpointWarning": "flowdbg.errors",
    "EditRefused": "flowdbg.errors",
    "ExpressionError": "flowdbg.errors",
    "FlowdbgError": "flowdbg.errors",
    "NotStoppedError": "flowdbg.errors",
    "PathError": "flowdbg.errors",
    "RunOptionError": "flowdbg.errors",
    "StopNotFound": "flowdbg.errors",
    "Terminated": "flowdbg.errors",
    "ErrorInfo": "flowdbg.events",
    "Event": "flowdbg.events",
    "Kind": "flowdbg.events",
    "Location": "flowdbg.events",
    "Position": "flowdbg.events",
    "RunInfo": "flowdbg.events",
    "RunStatus": "flowdbg.events",
    "hookimpl": "flowdbg.plugins",
    "RunRecord": "flowdbg.records",
    "StepRecord": "flowdbg.records",
    "NodeStats": "flowdbg.runlog",
    "RunLog": "flowdbg.runlog",
    "format_duration": "flowdbg.runlog",
    "Frame": "flowdbg.runtime",
    "RunScope": "flowdbg.runtime",
    "Unit": "flowdbg.runtime",
    "Status": "flowdbg.stops",
    "Stop": "flowdbg.stops",
    "StopReason": "flowdbg.stops",
    "WatchChange": "flowdbg.stops",
    "ForkError": "flowdbg.timetravel",
    "ForkPoint": "flowdbg.timetravel",
}

__all__ = [
    "NOT_RESUMING",
    "Adapter",
    "AdapterError",
    "AdapterInfo",
    "AdapterNotFound",
    "AdapterUnavailable",
    "Breakpoint",
    "BreakpointError",
    "BreakpointType",
    "BreakpointWarning",
    "Capability",
    "Debugger",
    "Demo",
    "EditRefused",
    "ErrorInfo",
    "Event",
    "ExpressionError",
    "FlowdbgError",
    "ForkError",
    "ForkPoint",
    "Frame",
    "Kind",
    "Location",
    "NodeStats",
    "NotStoppedError",
    "PathError",
    "Position",
    "RunHandle",
    "RunInfo",
    "RunLog",
    "RunOptionError",
    "RunOptions",
    "RunRecord",
    "RunScope",
    "RunStatus",
    "StateDiff",
    "Status",
    "StepRecord",
    "Stop",
    "StopNotFound",
    "StopReason",
    "Terminated",
    "Unit",
    "WatchChange",
    "__version__",
    "format_duration",
    "hookimpl",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'flowdbg' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain global
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
