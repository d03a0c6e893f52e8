"""The errors a store raises."""

from __future__ import annotations

from flowdbg.errors import FlowdbgError

__all__ = ["RunNotFound", "StepNotFound", "StoreError"]


class StoreError(FlowdbgError):
    """The database cannot be used: it is not a flowdbg database, it was written by a newer
    flowdbg, its path cannot be written, it is open read-only, or it is damaged."""


class RunNotFound(StoreError, LookupError):
    """A run id (or id prefix) names no run, or more than one."""


class StepNotFound(StoreError, LookupError):
    """A step number is outside the steps a run recorded."""
