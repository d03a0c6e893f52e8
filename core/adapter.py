"""The adapter contract: what an integration with one framework provides."""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Final

from flowdbg.errors import AdapterError, RunOptionError

if TYPE_CHECKING:
    import click
    from packaging.requirements import Requirement

    from flowdbg.debugger import Debugger
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.store import Store
    from flowdbg.timetravel import ForkPoint

__all__ = ["NOT_RESUMING", "Adapter", "AdapterInfo", "Capability", "Demo", "RunOptions"]


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
    #: :meth:`Adapter.fork` starts a run from a recorded state and the nodes that came next
    FORK = "fork"
    #: in a rerun, ``llm`` and ``tool`` units ask :meth:`flowdbg.Unit.recorded` and, when told
    #: to, return the recorded output without running the call
    CACHED_CALLS = "cached_calls"
    #: a run rewound at a stop (:meth:`flowdbg.Debugger.rewind`) goes on in the same call: the
    #: adapter catches :class:`flowdbg.timetravel.Rewound` where its top-level runs leave the
    #: framework and starts it again from the rewind's point, as :meth:`Adapter.fork` does
    REWIND = "rewind"

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
    import importlib.metadata  # (not at import: it costs 10 ms)

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


class _NotResuming:
    """The type of :data:`NOT_RESUMING`."""

    def __repr__(self) -> str:
        return "NOT_RESUMING"

    def __reduce__(self) -> str:
        return "NOT_RESUMING"  # one object, also after a copy or a pickle


#: :attr:`RunOptions.resume` of a run that starts afresh (``None`` may be a resume value)
NOT_RESUMING: Final[Any] = _NotResuming()


@dataclass(frozen=True)
class RunOptions:
    """How to run a target besides its input: what :meth:`Adapter.invoke` is given.

    The fields are framework-neutral; each adapter maps them onto its framework, and refuses
    what it cannot honour with :class:`flowdbg.errors.RunOptionError`. Framework-specific
    settings (LangGraph's checkpointer thread) are the adapter's own command-line options and
    arrive in :attr:`extra`.
    """

    #: the framework's per-run configuration (``flowdbg run --config``), a JSON object passed
    #: along with the input (LangGraph: its ``RunnableConfig``); ``None`` when none was given.
    #: Adapters copy it before adding to it.
    config: Mapping[str, Any] | None = None
    #: a value resuming a run the framework suspended waiting for one (``flowdbg run
    #: --resume``), given instead of an input; :data:`NOT_RESUMING` to start a new run
    resume: Any = NOT_RESUMING
    #: the values of the adapter's own command-line options (:meth:`Adapter.cli_options`) that
    #: were given, by parameter name (LangGraph: ``{"thread": "t1"}``)
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: the run is a rerun of a recorded one (:meth:`flowdbg.Debugger.rerun`): it starts from
    #: its input alone, and must neither go on from nor change what the framework keeps
    #: between runs and the recorded run may have changed since (LangGraph: the thread of a
    #: checkpointer, which a rerun must not resume nor add to)
    fresh: bool = False
    #: of a rerun (:attr:`fresh`): the state the recorded run started from, as its record
    #: keeps it (the state before its first unit: what the framework kept between runs with
    #: the input applied, e.g. a LangGraph thread's earlier turns and the new message), or
    #: ``None`` when the record has none or a secret in it was redacted. An adapter whose
    #: framework keeps state between runs starts the rerun from it (LangGraph, on a thread of
    #: a checkpointer of its own); others start from the input alone, as the run did.
    start_state: Any = None

    @property
    def resuming(self) -> bool:
        """Whether the run resumes a suspended one (:attr:`resume` is set)."""
        return self.resume is not NOT_RESUMING


@dataclass(frozen=True)
class Demo:
    """An offline example of an adapter's framework, for ``flowdbg demo --framework NAME``.

    The demo prints and runs ``flowdbg run TARGET --stop-on-entry --input INPUT``, then types
    :attr:`script` at the prompt (or lets the user type, with ``--interactive``).
    """

    #: the ``flowdbg run`` target, ``package.module:obj``: a graph, workflow or agent, or a
    #: function taking no arguments that builds one. Its module may import the framework
    #: (it is imported only when the demo runs); it must need no network and no API key.
    target: str
    #: the run's input, JSON-serializable (it is shown as ``--input`` and read back from there)
    input: Any
    #: the commands the tour types at the prompt, in order; lines starting with ``#`` are
    #: narration, printed as they are
    script: tuple[str, ...]
    #: what to try, shown before the prompt of ``flowdbg demo --interactive``
    hint: str
    #: what the example shows, in one line, for ``flowdbg demo --help``
    summary: str = ""


def _takes_config(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` (a target's run method) takes a second positional argument, the config."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature to read: let the call say
        return True
    kinds = [p.kind for p in params]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return True
    named = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(kind in named for kind in kinds) >= 2


class Adapter(abc.ABC):
    """Integration of one framework with the debugger.

    Subclasses set the class attributes and implement the methods. ``matches`` must not import
    the framework (compare module names of the target's type); ``attach`` imports it lazily.

    ``flowdbg run`` runs a target through :meth:`invoke` or :meth:`ainvoke` (as
    :meth:`is_async` says), with a :class:`RunOptions` it builds from its options and the
    adapter's own (:meth:`cli_options`), checked first by :meth:`check_run`; a failed run's
    message may get a remedy from :meth:`failure_hint`. ``flowdbg demo`` runs :meth:`demo`.
    The defaults suit a target with ``invoke(input[, config])``/``ainvoke``/``run``.
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

    def install(self, debugger: Debugger) -> None:
        """Instrument the framework library-wide for ``debugger``, for runs that start from
        the framework's own entry points rather than from a target (``Runner.run(agent, ...)``
        with agents built on the fly). Called by :meth:`flowdbg.Debugger.install`, once per
        debugger, under :data:`flowdbg.patching.LOCK`; patch with :func:`flowdbg.patching.patch`
        so that several debuggers share one patch. The default refuses.

        :raises AdapterError: the adapter has no library-wide instrumentation.
        """
        raise AdapterError(
            f"adapter {self.name!r} has no library-wide instrumentation; attach a target "
            "instead (dbg.attach(...))"
        )

    def uninstall(self, debugger: Debugger) -> None:  # noqa: B027 - optional, like install
        """Undo :meth:`install` for ``debugger`` (the last debugger to let go restores the
        framework exactly). Called once per install."""

    def describe(self, target: Any) -> dict[str, Any]:
        """Nodes, edges, conditional edges and subgraphs of ``target`` (for graph views).

        :returns: ``{"name": ..., "nodes": [...], "edges": [...], ...}``.
        """
        return {"name": type(target).__name__, "nodes": [], "edges": []}

    # -- running a target: what ``flowdbg run`` and ``flowdbg demo`` use --

    def is_async(self, target: Any) -> bool:
        """Whether ``target`` is run with :meth:`ainvoke` (``True``) or :meth:`invoke`.

        The default: ``True`` when the target has no ``invoke()`` but an ``ainvoke()``, or when
        its ``run()`` is a coroutine function. An adapter overrides it for targets that only run
        under an event loop in ways this cannot see (LangGraph: a graph with an async-only node;
        a ``run()`` that returns an awaitable handler).

        :param target: an object this adapter :meth:`matches`.
        """
        if callable(getattr(target, "invoke", None)):
            return False
        if callable(getattr(target, "ainvoke", None)):
            return True
        return inspect.iscoroutinefunction(getattr(target, "run", None))

    def check_run(self, target: Any, options: RunOptions) -> None:
        """Refuse, before anything runs, options that :meth:`invoke` could not honour.

        ``flowdbg run`` calls it before it starts the run, so that a mistake is one line of
        error and no failed run; :meth:`invoke` and :meth:`ainvoke` call it too. The default
        refuses a key of ``options.extra`` that is not one of :meth:`cli_options`, any
        ``options.resume`` (it knows no resume), and a ``config`` when the method it would call
        takes no argument after the input.

        :raises flowdbg.errors.RunOptionError: naming the option and this adapter.
        :raises flowdbg.errors.AdapterError: when the target has no method to run it with.
        """
        self.check_own_options(target, options)
        if options.resuming:
            raise RunOptionError(
                "resume",
                f"adapter {self.name!r} cannot resume a run of a {type(target).__name__} with "
                "a value; start a new run with an input instead",
            )
        method = self._run_method(target, asynchronous=self.is_async(target))
        if options.config is not None and not _takes_config(method):
            raise RunOptionError(
                "config",
                f"{type(target).__name__}.{getattr(method, '__name__', 'invoke')}() takes no "
                f"config after the input, so adapter {self.name!r} cannot pass one; run it "
                "without --config",
            )

    def check_input(self, target: Any, input: Any) -> None:
        """Refuse, before anything runs, an input :meth:`invoke` could not start ``target``
        with (``flowdbg run`` calls it with ``--input``'s value; a fresh run only). The
        default accepts any input.

        :raises flowdbg.errors.RunOptionError: for the option ``input``, saying what the
            target takes.
        """
        return None  # (an adapter that knows what its targets take overrides this)

    def check_own_options(self, target: Any, options: RunOptions) -> None:
        """Refuse a key of ``options.extra`` that is none of :meth:`cli_options` (for an
        adapter's own :meth:`check_run`).

        :raises flowdbg.errors.RunOptionError: naming the option and this adapter.
        """
        own = {param.name for param in self.cli_options()}
        for key in options.extra:
            if key not in own:
                raise RunOptionError(
                    key,
                    f"adapter {self.name!r} takes no such option for a "
                    f"{type(target).__name__}; run it without it",
                )

    def invoke(self, target: Any, input: Any, options: RunOptions | None = None) -> Any:
        """Run ``target`` once with ``input`` in this thread, and return its result.

        The default calls :meth:`check_run`, then ``target.invoke(input)`` (else
        ``target.run(input)``), with ``options.config`` as a second argument when one is given.

        :param target: an object this adapter :meth:`matches`, attached or not.
        :param input: the run's input (``flowdbg run --input``), as the framework takes it.
        :param options: how to run it; ``None`` for :class:`RunOptions` with nothing set.
        :returns: what the framework's run returns.
        :raises flowdbg.errors.RunOptionError: for options it cannot honour (nothing ran).
        """
        options = RunOptions() if options is None else options
        self.check_run(target, options)
        method = self._run_method(target, asynchronous=False)
        return method(input) if options.config is None else method(input, options.config)

    async def ainvoke(self, target: Any, input: Any, options: RunOptions | None = None) -> Any:
        """Run ``target`` once with ``input`` in the running event loop (the async form of
        :meth:`invoke`; the one ``flowdbg run`` uses when :meth:`is_async` says so).

        The default calls :meth:`check_run`, then awaits ``target.ainvoke(input)`` (else
        ``target.run(input)``, awaiting what it returns if that is awaitable).

        :raises flowdbg.errors.RunOptionError: for options it cannot honour (nothing ran).
        """
        options = RunOptions() if options is None else options
        self.check_run(target, options)
        method = self._run_method(target, asynchronous=True)
        result = method(input) if options.config is None else method(input, options.config)
        if inspect.isawaitable(result):
            result = await result
        return result

    def _run_method(self, target: Any, *, asynchronous: bool) -> Callable[..., Any]:
        names = ("ainvoke", "run") if asynchronous else ("invoke", "run")
        for name in names:
            method = getattr(target, name, None)
            if callable(method):
                return method
        raise AdapterError(
            f"adapter {self.name!r} does not know how to run a {type(target).__name__} "
            f"{'under an event loop' if asynchronous else 'synchronously'}: it has no "
            f"{names[0]}() or run() method; pass a compiled graph, workflow or agent"
        )

    # -- time travel: what ``Debugger.fork`` and ``flowdbg runs fork`` use --

    def check_fork(self, target: Any, point: ForkPoint) -> None:
        """Refuse, before anything runs, a fork :meth:`fork` could not start on ``target``
        (a node the record names that the current graph no longer has, say).

        :meth:`flowdbg.Debugger.fork` calls it before starting the run (the core has already
        checked the record: see :func:`flowdbg.timetravel.plan_fork`). The default refuses
        unless the adapter declares :attr:`Capability.FORK`.

        :raises flowdbg.timetravel.ForkError: naming what does not fit and what to do.
        """
        from flowdbg.timetravel import ForkError

        if Capability.FORK not in self.capabilities:
            raise ForkError(
                f"adapter {self.name!r} cannot fork runs (no capability 'fork'); rerun the "
                "target with its input instead"
            )

    #: the views of a step, besides its state, that the edits of a fork may name
    #: (``"output:text"``): those :meth:`fork` starts from (``"output"``,
    #: :attr:`flowdbg.timetravel.ForkPoint.output`, for a framework whose next steps start from
    #: what the step returned); other views are refused before anything runs
    fork_views: ClassVar[frozenset[str]] = frozenset()

    #: whether :meth:`fork_problems` judges every unit of a run, the units inside others
    #: included: the core then leaves out its rule that a fork starts only after one of the
    #: run's own nodes (a unit of kind ``node`` at its top level) and keeps its others (the
    #: step completed, its values are whole). For a framework whose state is whole between
    #: calls inside a unit rather than between its top-level units (an agent run's
    #: conversation, after a tool call of the agent's)
    fork_any_unit: ClassVar[bool] = False

    def fork_problems(
        self, store: Store, run: RunRecord, steps: Sequence[StepRecord]
    ) -> Mapping[int, str]:
        """The steps of a recorded run of this adapter that a fork cannot start after, beyond
        what the core refuses for every framework (calls inside a node, parallel branches of
        a superstep, steps that did not complete), each with the reason: for a framework
        whose record tells more about when its state was one the run really had (events in
        flight between steps, say). :func:`flowdbg.timetravel.plan_fork` asks it, and leaves
        these steps out of the forkable ones it names. The default refuses none.

        :param store: the store holding the run (for values the adapter needs).
        :param run: the top-level run.
        :param steps: its steps, without values (``store.get_steps(run_id, values=False)``).
        :returns: step number -> why it cannot be forked from (one clause, such as "it ran
            beside steps 3, 4").
        """
        return {}

    def fork(self, target: Any, point: ForkPoint, options: RunOptions | None = None) -> Any:
        """Run ``target`` once in this thread, starting from ``point``: its state
        (``point.state``, with the user's edits applied) as the state the framework holds
        after ``point.step``, on to the end; return what the framework's run returns.

        What runs first is what the current code routes to from the forked node
        (``point.node``) given that state, as if the node had just written it (so an edit of
        a routing key changes the route); for a node that chose its successor itself (a
        ``Command(goto=...)``, a handoff) the nodes the record says came next
        (``point.next``). From step 0 (``point.node`` ``None``) the run starts at the graph's
        entry with the run's input.

        The run reports to the debugger like any run of an attached target (breakpoints,
        stepping, recording): ``target`` is attached before the call, and the debugger records
        the new run's lineage itself. The state is as the store gives it back (plain JSON
        values): an adapter turns it into the framework's own objects where it can. It must
        not need anything of the original run's process (a checkpointer, a thread).

        The default refuses (:meth:`check_fork`).

        :raises flowdbg.timetravel.ForkError: when the fork cannot be started.
        """
        self.check_fork(target, point)
        raise NotImplementedError(f"adapter {self.name!r} declares 'fork' but has no fork()")

    async def afork(self, target: Any, point: ForkPoint, options: RunOptions | None = None) -> Any:
        """The async form of :meth:`fork`, used when :meth:`is_async` says so. The default runs
        :meth:`fork` (in the event loop's thread: override it for frameworks that need the
        loop)."""
        return self.fork(target, point, options)

    def cli_options(self) -> Sequence[click.Parameter]:
        """Options this adapter adds to ``flowdbg run`` (``click.Option`` objects).

        Their values reach :meth:`invoke` in ``options.extra`` under the parameter's name, and
        only when the user gave them; a target of another adapter refuses them. An option whose
        name a core option (or an earlier adapter's differently spelled option) already has is
        left out with a warning; adapters may offer the same option. Create the objects once:
        the command line asks more than once. The default adds none.
        """
        return ()

    def recorded_config(self, run: RunRecord) -> Mapping[str, Any] | None:
        """The config a rerun of ``run`` starts with when the record keeps none (a run
        started from Python, whose config flowdbg does not see), made from what the record
        does keep: the OpenAI Agents adapter gives the run context the run started with
        (``run.initial_state``, a mapping). ``None`` (the default): no config."""
        return None

    def config_example(self, target: Any) -> str | None:
        """A config ``target``'s run takes, as JSON text, for the messages that refuse a
        ``--config`` that is no JSON object (LangGraph: ``{"configurable": {"thread_id":
        "1"}}``).

        :returns: the example, or ``None`` (the default): the message then gives no
            framework's keys.
        """
        return None

    def failure_hint(self, target: Any, error: BaseException, options: RunOptions) -> str | None:
        """What to do about a failed run, when the failure comes from how it was run (an option
        the framework needed); ``flowdbg run`` adds it in parentheses to its error line.

        :param error: the exception the run raised.
        :returns: a short remedy (``"give the run a checkpointer thread with --thread ID"``),
            or ``None`` (the default).
        """
        return None

    def demo(self) -> Demo | None:
        """The offline example ``flowdbg demo --framework NAME`` debugs, or ``None`` (the
        default: the adapter offers none). It must not import the framework: the demo command
        lists the demos of unavailable adapters too, and says what to install."""
        return None

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
        import importlib.metadata  # (not at import: it costs 10 ms)

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
