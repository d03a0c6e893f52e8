"""flowdbg: one debugger for AI agent and workflow frameworks.

Importing flowdbg imports no framework and patches nothing.
"""

from __future__ import annotations

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
from flowdbg.stops import Status, Stop, StopReason

__version__ = "0.1.0.dev0"

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
    "__version__",
    "format_duration",
    "hookimpl",
]
