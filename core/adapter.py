"""The adapter contract: what an integration with one framework provides."""

from __future__ import annotations

import abc
import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from packaging.requirements import Requirement

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
    #: units carry the framework's superstep (``location.superstep``); without it, ``None``
    SUPERSTEPS = "supersteps"

    def __str__(self) -> str:
        return self.value


def _parse(text: str) -> Requirement:
    # Imported here: the parser costs about 20 ms, paid when adapters are checked, not by
    # ``import flowdbg``.
    from packaging.requirements import Requirement

    return Requirement(text)


def _version_problem(req: Requirement, have: str) -> str | None:
    """Why installed version ``have`` does not satisfy ``req``, or ``None`` if it does."""
    from packaging.version import InvalidVersion, Version

    if not req.specifier:
        return None
    try:
        version = Version(have)
    except InvalidVersion:
        return f"{req.name} {have} is installed, which is not a PEP 440 version"
    # prereleases=True: an installed pre-release is judged by PEP 440 order alone (1.2.0rc1 is
    # above 1.1, 1.1.5rc1 below 1.1.5); the default would refuse every pre-release whatever it is.
    if req.specifier.contains(version, prereleases=True):
        return None
    pre = ", a pre-release," if version.is_prerelease else ""
    return f"{req.name} {have}{pre} is installed"


def _unmet(req: Requirement) -> str | None:
    """Why ``req`` is not met here, as the words in the parentheses of
    ``needs REQ (...)``, or ``None`` when it is met."""
    try:
        dist = importlib.metadata.distribution(req.name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"
    problem = _version_problem(req, dist.version)
    if problem is not None:
        return problem
    # An extra is met when the dependencies it adds are: one level down, so that a cycle of
    # extras cannot loop and a missing optional package is still named.
    for extra in sorted(req.extras):
        for text in dist.requires or ():
            try:
                dep = _parse(text)
            except ValueError:
                continue  # a broken line in another package's metadata is not ours to judge
            marker = dep.marker
            if marker is None or not marker.evaluate({"extra": extra}):
                continue
            if marker.evaluate({"extra": ""}):
                continue  # a dependency of every install, not of this extra
            try:
                have = importlib.metadata.version(dep.name)
            except importlib.metadata.PackageNotFoundError:
                return f"its extra {extra!r} needs {dep.name}{dep.specifier}, not installed"
            problem = _version_problem(dep, have)
            if problem is not None:
                return f"its extra {extra!r} needs {dep.name}{dep.specifier}, {problem}"
    return None


class Adapter(abc.ABC):
    """Integration of one framework with the debugger.

    Subclasses set the class attributes and implement the methods. ``matches`` must not import
    the framework (compare module names of the target's type); ``attach`` imports it lazily.
    """

    #: adapter name: equals its entry-point name and tox factor
    name: ClassVar[str]
    #: the extra that installs its framework (``pip install 'flowdbg[<extra>]'``); "" if none
    extra: ClassVar[str] = ""
    #: distribution requirements, PEP 508, e.g. ``("langgraph>=1.1.5,<2",)``: any version
    #: specifiers (``>=``, ``<``, ``~=``, ``!=``, ``==1.*``), extras (the dependencies an extra
    #: adds are checked too) and environment markers (a requirement whose marker is false here
    #: is skipped). An installed pre-release counts by PEP 440 order: ``1.2.0rc1`` meets
    #: ``>=1.1``, ``1.1.5rc1`` does not meet ``>=1.1.5``. See :meth:`unavailable_reason`.
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
        """Why the adapter cannot be used here, or ``None`` when it can.

        Each of :attr:`requires` is read as a PEP 508 requirement and checked against the
        installed distributions, without importing them. A requirement whose environment marker
        is false here is skipped. The installed version must be in the specifier by PEP 440
        order, pre-releases included (``prereleases=True``): a framework's release candidate is
        accepted when it is above the floor (``1.2.0rc1`` for ``>=1.1``) and refused when it
        precedes it (``1.1.5rc1`` for ``>=1.1.5``). For an extra (``fw[voice]>=1``), the
        dependencies the extra adds must be installed in versions they accept.

        :returns: one sentence naming the adapter, the requirement and what is installed, with
            the remedy (the extra to install, or how to fix a malformed requirement).
        """
        from packaging.requirements import InvalidRequirement

        for text in self.requires:
            try:
                req = _parse(text)
            except InvalidRequirement as exc:
                # packaging's message runs over three lines (the text and a caret under it)
                why = str(exc).splitlines()[0]
                return (
                    f"adapter {self.name!r} declares a malformed requirement {text!r} ({why}); "
                    "write it as a PEP 508 requirement such as 'myframework>=1.2,<2'"
                )
            if req.marker is not None and not req.marker.evaluate():
                continue  # meant for another Python or platform
            problem = _unmet(req)
            if problem is not None:
                return f"adapter {self.name!r} needs {text} ({problem}). {self._install_hint()}"
        return None

    def framework_version(self) -> str | None:
        """Installed version of the framework's first required distribution, if any."""
        if not self.requires:
            return None
        try:
            name = _parse(self.requires[0]).name
        except ValueError:  # InvalidRequirement; unavailable_reason names the mistake
            return None
        try:
            return importlib.metadata.version(name)
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
