"""The adapter contract: what an integration with one framework provides."""

from __future__ import annotations

import abc
import importlib.metadata
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger

__all__ = ["Adapter", "AdapterInfo", "Capability"]


class Capability(str, Enum):
    """What an adapter can do; conformance tests needing a missing one skip with a reason."""

    SYNC = "sync"  #: sync runs; a stop blocks the run's thread
    ASYNC = "async"  #: async runs; a stop suspends only its task
    STATE_EDITING = "state_editing"  #: edits at before/after stops reach the framework
    PARALLEL_BRANCHES = "parallel_branches"  #: concurrent units stop independently
    NESTING = "nesting"  #: nested graphs/workflows/agents as child runs
    DECISIONS = "decisions"  #: routing decisions reported at after points
    RETRIES = "retries"  #: retry attempts reported
    EXCEPTIONS = "exceptions"  #: error points with the unit's real exception
    TERMINATE = "terminate"  #: terminate() reaches the caller as flowdbg.Terminated
    PAUSE = "pause"  #: pause() stops at the next point
    DESCRIBE = "describe"  #: describe() gives nodes and edges
    TOOL_CALLS = "tool_calls"  #: tool calls are units of kind "tool"
    #: tool calls editable: arguments at a before stop, the result at an after stop
    TOOL_ARG_EDITING = "tool_arg_editing"
    LLM_CALLS = "llm_calls"  #: model calls are units of kind "llm"
    HANDOFFS = "handoffs"  #: agent handoffs are units of kind "handoff"

    def __str__(self) -> str:
        return self.value


_REQ_RE = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(?:(>=|==|>)\s*([0-9][0-9A-Za-z.]*))?\s*$")


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
    return tuple(parts)


class Adapter(abc.ABC):
    """Integration of one framework with the debugger.

    Subclasses set the class attributes and implement the methods. ``matches`` must not import
    the framework (compare module names of the target's type); ``attach`` imports it lazily.
    """

    #: adapter name: equals its entry-point name and tox factor
    name: ClassVar[str]
    #: the extra that installs its framework (``pip install 'flowdbg[<extra>]'``); "" if none
    extra: ClassVar[str] = ""
    #: distribution requirements, e.g. ``("langgraph>=1.1",)``; only ``>=``, ``==``, ``>``
    requires: ClassVar[tuple[str, ...]] = ()
    #: what this adapter supports
    capabilities: ClassVar[frozenset[Capability]] = frozenset()

    @abc.abstractmethod
    def matches(self, target: Any) -> bool:
        """Whether ``target`` is an object of this adapter's framework.

        :param target: the object given to :meth:`flowdbg.Debugger.attach`.
        """

    @abc.abstractmethod
    def attach(self, target: Any, debugger: Debugger) -> None:
        """Instrument ``target`` so its execution reports to ``debugger``.

        Must be idempotent for the same debugger, and must raise
        :class:`flowdbg.errors.AdapterError` if ``target`` is attached to another debugger.
        """

    @abc.abstractmethod
    def detach(self, target: Any) -> None:
        """Remove the instrumentation, restoring ``target`` exactly as it was."""

    def describe(self, target: Any) -> dict[str, Any]:
        """Nodes, edges, conditional edges and subgraphs of ``target`` (for graph views).

        :returns: ``{"name": ..., "nodes": [...], "edges": [...], ...}``.
        """
        return {"name": type(target).__name__, "nodes": [], "edges": []}

    def run_method(self, target: Any) -> Callable[..., Any] | None:
        """The method ``flowdbg run`` calls with the input (and a config, if given); ``None``
        (the default) lets it take ``invoke``, else ``ainvoke``, else ``run``. An adapter
        returns ``ainvoke`` for a target that only runs under it (async-only nodes)."""
        return None

    def resume_input(self, target: Any, value: Any, config: Any = None) -> Any:
        """The input that resumes a run of ``target`` suspended by the framework's own pause
        (LangGraph: ``Command(resume=value)`` after an ``interrupt()``), for ``flowdbg run
        --resume``.

        :param config: the config the run gets (``--config``/``--thread``), to check that
            there is a paused run to resume.
        :raises NotImplementedError: when the framework has no such resume (the default).
        :raises ValueError: when there is nothing to resume (said in the message).
        """
        raise NotImplementedError(f"{self.name} runs cannot be resumed with a value")

    def unavailable_reason(self) -> str | None:
        """Why the adapter cannot be used here (its framework is missing), or ``None``."""
        for req in self.requires:
            m = _REQ_RE.match(req)
            if m is None:
                return f"adapter {self.name!r} declares a malformed requirement {req!r}"
            dist, op, wanted = m.groups()
            try:
                have = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                return f"adapter {self.name!r} needs {req} (not installed). {self._install_hint()}"
            if op is not None:
                h, w = _version_tuple(have), _version_tuple(wanted)
                ok = h >= w if op == ">=" else h == w if op == "==" else h > w
                if not ok:
                    return (
                        f"adapter {self.name!r} needs {req} ({dist} {have} is installed). "
                        f"{self._install_hint()}"
                    )
        return None

    def framework_version(self) -> str | None:
        """Installed version of the framework's first required distribution, if any."""
        if not self.requires:
            return None
        m = _REQ_RE.match(self.requires[0])
        if m is None:
            return None
        try:
            return importlib.metadata.version(m.group(1))
        except importlib.metadata.PackageNotFoundError:
            return None

    def _install_hint(self) -> str:
        if self.extra:
            return f"Install it with: pip install 'flowdbg[{self.extra}]'"
        return "Install the framework it needs."


@dataclass
class AdapterInfo:
    """A known adapter: usable or not, and why."""

    name: str
    available: bool
    reason: str | None = None
    adapter: Adapter | None = None
    capabilities: frozenset[Capability] = field(default_factory=frozenset)
    version: str | None = None
    extra: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        return {
            "name": self.name,
            "available": self.available,
            "reason": self.reason,
            "version": self.version,
            "extra": self.extra,
            "capabilities": sorted(c.value for c in self.capabilities),
        }
