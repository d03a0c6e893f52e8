"""Scenarios and the fixtures class every adapter fills in."""

from __future__ import annotations

import abc
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

import pytest

from flowdbg.adapter import AdapterInfo, Capability

if TYPE_CHECKING:
    from flowdbg.debugger import Debugger, RunHandle

__all__ = ["EXPECTED", "SCENARIO_CAPABILITIES", "AdapterFixtures", "Placement", "Scenario"]


@dataclass
class Scenario:
    """One canonical scenario, built natively in an adapter's framework.

    :param target: what :meth:`flowdbg.Debugger.attach` receives (a compiled graph, a workflow,
        an agent...).
    :param run: the synchronous entry point, ``run(input) -> raw result``, e.g.
        ``lambda s: app.invoke(s)``. Look the method up at call time: ``attach`` may instrument
        the target's own methods, which a bound method taken earlier would bypass.
    :param arun: the asynchronous entry point (e.g. ``lambda s: app.ainvoke(s)``), or ``None``
        when the framework has none.
    :param input: the canonical input.
    :param normalize: turns a raw result into the canonical ``dict`` that tests compare.
    :param started: slow scenario only: set once the slow unit has started.
    :param release: slow scenario only: lets the slow unit finish (idempotent).
    :param effects: where the fixtures can, the calls of the scenario's user code besides its
        units (reducers, routers), noted in order as they happen (e.g. ``"reduce items"``): the
        transparency suite checks that a debugged run makes exactly the same. ``None`` skips
        those checks for the scenario.
    """

    target: Any
    run: Callable[[Any], Any]
    arun: Callable[[Any], Awaitable[Any]] | None
    input: Any
    normalize: Callable[[Any], dict[str, Any]] = dict
    started: threading.Event | None = None
    release: Callable[[], None] | None = None
    effects: list[str] | None = None


@dataclass(frozen=True)
class Placement:
    """Where a framework runs a scenario's units, when not as a graph runs its nodes.

    The suites state depths and paths as a graph has them: the scenario's units at the top of
    the run (depth 0, path ``()``), the nested scenario's inner units one level down (path
    ``("sub",)``). An agent framework may run them as the tool calls of an agent instead, one
    level inside it, with its own units (the agent, its model turns) around them.

    :param path: the path above the scenario's top-level units (``("agent",)`` for the tool
        calls of an agent named ``agent``).
    :param kind: the kind of the scenario's units; units of other kinds are the framework's
        own (an agent, a model turn), which stepping passes and lists of stops leave out.
        ``None``: :attr:`AdapterFixtures.unit_kind`.
    :param nested: the nested scenario's inner units' path below ``path``: ``("sub",)`` for
        a nested graph run as unit ``sub``; an agent used as the tool ``sub`` adds its own unit.
    """

    path: tuple[str, ...] = ()
    kind: str | None = None
    nested: tuple[str, ...] = ("sub",)

    def depth(self, nominal: int) -> int:
        """The depth of a unit the suites place at ``nominal`` (0: the scenario's top level,
        1: inside the nested unit ``sub``, or a call inside a unit)."""
        return len(self.path) + (nominal and len(self.nested) + nominal - 1)

    def of(self, nominal: tuple[str, ...]) -> tuple[str, ...]:
        """The path of a unit the suites place at ``nominal`` (``()`` or ``("sub",)``)."""
        if nominal[:1] == ("sub",):
            return (*self.path, *self.nested, *nominal[1:])
        return (*self.path, *nominal)


def _frozen(**results: dict[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    return MappingProxyType({k: MappingProxyType(v) for k, v in results.items()})


#: The canonical result of every scenario (after ``Scenario.normalize``), by scenario name.
EXPECTED: Mapping[str, Mapping[str, Any]] = _frozen(
    linear={"x": 20, "y": 21},
    loop={"count": 5, "finished": True},
    branch_positive={"x": 1, "seen": True, "sign": "+"},
    branch_negative={"x": -1, "seen": True, "sign": "-"},
    parallel={"items": ["p1", "p2"], "total": 2},
    nested={"x": 20, "z": 21, "done": True},
    slow={"x": 2, "y": 1},
    tools={
        "q": "flights",
        "reply": "search, then clean up",
        "found": "results for flights",
        "ran": "ran rm -rf /tmp/cache",
        "finished": True,
    },
    handoff={"agent": "specialist", "answer": "specialist: refund"},
)

#: Scenarios that only make sense when the adapter declares a capability.
SCENARIO_CAPABILITIES: Mapping[str, Capability] = MappingProxyType(
    {
        "parallel": Capability.PARALLEL_BRANCHES,
        "nested": Capability.NESTING,
        "tools": Capability.TOOL_CALLS,
        "handoff": Capability.HANDOFFS,
    }
)

_INFO_CACHE: dict[str, AdapterInfo | None] = {}
_INFO_LOCK = threading.Lock()


def _adapter_info(name: str) -> AdapterInfo | None:
    with _INFO_LOCK:
        if name not in _INFO_CACHE:
            import flowdbg

            _INFO_CACHE[name] = flowdbg.Debugger().adapters.get(name)
        return _INFO_CACHE[name]


class AdapterFixtures(abc.ABC):
    """What an adapter provides to the conformance suites: the canonical scenarios.

    Subclass it once per adapter, set :attr:`adapter`, and build every scenario natively in the
    framework, fresh on every call (a new graph, workflow or agent each time, so that one test's
    attach or breakpoints never leak into another). Then compose it with the suites::

        class TestMyAdapterBreakpoints(MyAdapterFixtures, AbstractBreakpointTests):
            pass

    Canonical scenarios (results as ``Scenario.normalize`` gives them, see :data:`EXPECTED`):

    - linear: input ``{"x": 1}``; ``a``: x+1, ``b``: x*10, ``c``: y = x+1.
    - loop: input ``{"count": 0}``; ``inc``: count+1, back to ``inc`` while count < 5, else
      ``done``: finished = True.
    - branch: input ``{"x": 1}`` or ``{"x": -1}``; ``start``: seen = True; then ``pos``
      (sign "+") if x > 0 else ``neg`` (sign "-").
    - parallel: input ``{"items": []}``; ``fan`` -> ``p1`` and ``p2`` concurrently, each adding
      its name to ``items`` through a list-add reducer -> ``join``: total = len(items).
    - nested: input ``{"x": 1}``; ``pre``: x+1 -> ``sub``, a nested graph (``inner1``: x*10
      -> ``inner2``: z = x+1) -> ``post``: done = True.
    - failing: input ``{"x": 1}``; ``a``: x+1 -> ``boom`` raises ``ValueError(f"boom at x={x}")``.
    - slow: input ``{"x": 1}``; ``slow`` sets ``started``, blocks until ``release()`` (10 s at
      most), x+1 -> ``after``: y = 1.
    - tools (agent frameworks; optional): input ``{"q": "flights"}``; ``agent`` calls the model
      ``chat`` with ``messages=[{"role": "user", "content": q}]`` (a scripted model answering
      ``"search, then clean up"``: reply), then the tool ``search(query=q)`` (returns
      ``f"results for {query}"``: found), then the tool ``shell(cmd="rm -rf /tmp/cache")``
      (returns ``f"ran {cmd}"``: ran) -> ``done``: finished = True. An adapter without model
      units (no ``llm_calls``) may let ``agent`` call the model directly.
    - handoff (agent frameworks; optional): input ``{"q": "refund"}``; ``triage`` hands off to
      ``specialist`` with the payload ``{"topic": q}``; ``specialist`` answers
      ``f"specialist: {topic}"``. A third unit, ``billing``, answers ``f"billing: {topic}"``
      and runs only when a handoff is redirected to it. Normalized: ``{"agent": <the unit that
      answered>, "answer": <its answer>}``. What the handoff unit shows is the contract of
      :class:`flowdbg.testing.AbstractHandoffTests`.

    What the suites assume of every adapter (a framework whose units work otherwise maps them):
    ``stop.state`` and the ``state`` of events are a mapping holding the scenario's keys as the
    unit sees them (``dbg.inspect("x")``); a unit's input at a before stop is that state, or a
    mapping with the keys the unit reads; its output at an after stop is a mapping of the keys it
    writes, merged into the state (so deleting a key from it keeps the old value); and with
    ``decisions`` the decision after a unit names the units that run next.

    A builder may raise :class:`NotImplementedError` for a scenario its framework cannot express;
    tests needing it are then skipped with that reason.
    """

    #: the adapter's registered name, e.g. ``"stategraph"``
    adapter: ClassVar[str]
    #: whether the caller of a sync run receives the very exception object the unit raised
    #: (some frameworks wrap or copy exceptions; then only type and message are compared)
    exception_identity: ClassVar[bool] = True
    #: whether the framework's state has a fixed set of keys (a schema): an update can only
    #: write those, so an edit adding another key to what a unit commits must be refused with
    #: :class:`flowdbg.EditRefused` rather than silently dropped
    fixed_state_keys: ClassVar[bool] = False
    #: whether a unit's output is an update the framework merges into the state after the unit
    #: and routes on (graph frameworks): deleting a key from it keeps the old value, editing it
    #: can change the route, and a join receives the merged state. ``False`` for event-driven
    #: frameworks (LlamaIndex Workflows): a unit writes the state itself and picks its route in
    #: its own code, by the type of the event it emits; its output is that event, so an edit
    #: changes what the next unit receives (not the state, not the route), and a join receives
    #: the branches' events (a list of their mappings)
    merged_updates: ClassVar[bool] = True
    #: the kind of the scenarios' own units (``a``, ``inc``, ``triage``...): ``node`` for graph
    #: nodes and workflow steps, ``agent`` where the framework's units are agents
    unit_kind: ClassVar[str] = "node"
    #: where a model call's messages are in an ``llm`` unit's input (a path): ``messages`` for
    #: chat models called with a message list; an agent SDK may hand its model an item list
    llm_messages: ClassVar[str] = "messages"
    #: tests (by method name) that cannot hold for the framework however the scenarios are
    #: built, each with the reason, which they are skipped with (a requirement no capability
    #: names, in the habit of SQLAlchemy's exclusions); keep it short and every reason precise
    excluded: ClassVar[Mapping[str, str]] = MappingProxyType({})
    #: the kinds of the tools scenario's calls that a rerun with recorded calls can serve
    #: (capability ``cached_calls``): a call the adapter only observes (a LangGraph node
    #: calling a tool itself) runs live in its place
    served_call_kinds: ClassVar[frozenset[str]] = frozenset({"llm", "tool"})
    #: the kinds of the tools scenario's model and tool calls, in the order it makes them (an
    #: agent SDK asks its model again after each tool call, and at the agent it hands off to)
    tools_call_kinds: ClassVar[tuple[str, ...]] = ("llm", "tool", "tool")
    #: where the rerun suite changes the tools scenario's question (``q``) to ``"trains"``
    #: before its first model call: a breakpoint before units named ``[0]`` of kind ``[1]``
    #: (``None``: :attr:`unit_kind`), and the path set at its first stop. By default the
    #: agent's own input; an agent SDK whose agents receive a conversation no edit reaches
    #: changes the user message at the first model turn instead
    tools_question: ClassVar[tuple[str, str | None, str]] = ("agent", None, "q")

    def rerun_config(self, scn: Scenario) -> Mapping[str, Any] | None:
        """The config a rerun of the recorded tools scenario is given (``dbg.rerun(config=)``).
        A rerun runs the target through its adapter (``Adapter.invoke``) with the recorded
        input and the config the run was started with, which a run started from Python (the
        scenario's entry point) has not recorded: give here what that entry point gives the
        framework besides the input (an OpenAI agent's run context). ``None`` by default."""
        return None

    def rerun_result(
        self, dbg: Debugger, scn: Scenario, rerun: RunHandle, timeout: float
    ) -> dict[str, Any]:
        """The tools scenario's result, as :attr:`Scenario.normalize` gives it, of a rerun
        (whose result is what ``Adapter.invoke`` returns, not what the scenario's entry point
        does: an OpenAI agent's final output, where the scenario reads the run context),
        waiting at most ``timeout`` seconds."""
        return scn.normalize(rerun.result(timeout))

    @abc.abstractmethod
    def build_linear(self) -> Scenario:
        """Build the linear scenario: a -> b -> c."""

    @abc.abstractmethod
    def build_loop(self) -> Scenario:
        """Build the loop scenario: inc -> inc ... -> done."""

    @abc.abstractmethod
    def build_branch(self, positive: bool) -> Scenario:
        """Build the branch scenario with input x = 1 (``positive``) or x = -1."""

    @abc.abstractmethod
    def build_parallel(self) -> Scenario:
        """Build the parallel scenario: fan -> (p1 | p2) -> join."""

    @abc.abstractmethod
    def build_nested(self) -> Scenario:
        """Build the nested scenario: pre -> sub(inner1 -> inner2) -> post."""

    @abc.abstractmethod
    def build_failing(self) -> Scenario:
        """Build the failing scenario: a -> boom (raises ValueError)."""

    @abc.abstractmethod
    def build_slow(self) -> Scenario:
        """Build the slow scenario: slow (blocks until released) -> after."""

    def build_tools(self) -> Scenario:
        """Build the tools scenario: agent (chat, search, shell calls) -> done.

        Optional: the default raises :class:`NotImplementedError`, which skips the tool tests.
        """
        raise NotImplementedError("the fixtures build no tools scenario")

    def build_handoff(self) -> Scenario:
        """Build the handoff scenario: triage hands off to specialist (billing on redirect).

        Optional: the default raises :class:`NotImplementedError`, which skips the handoff
        tests.
        """
        raise NotImplementedError("the fixtures build no handoff scenario")

    def placement(self, scenario: str) -> Placement:
        """Where the framework runs the units of ``scenario`` (``linear``, ``branch_positive``,
        ...): by default as a graph runs its nodes, at the top of the run, of kind
        :attr:`unit_kind`."""
        return Placement(kind=self.unit_kind)

    def fork_edits(self, edits: dict[str, Any]) -> dict[str, Any]:
        """The edits of a fork or a rewind as the adapter takes them, given the canonical ones
        (paths of the scenario's state): the same by default. A framework whose next units
        start from what a unit returned as well as from its state (a LlamaIndex step's event
        carrying its update) names both (``{"x": 5, "output:x": 5}``)."""
        return edits

    def fork_result(
        self, dbg: Debugger, scn: Scenario, fork: RunHandle, timeout: float
    ) -> dict[str, Any]:
        """A scenario's result, as :attr:`Scenario.normalize` gives it, of a fork (whose
        result is what ``Adapter.fork`` returns, as ``Adapter.invoke`` would: an OpenAI
        agent's final output, where the scenario reads the run context), waiting at most
        ``timeout`` seconds."""
        return scn.normalize(fork.result(timeout))

    def reply_text(self, output: Any) -> Any:
        """The text of a model reply as an ``llm`` unit's output holds it (the output itself by
        default; a framework returning message objects gives their content)."""
        return output

    def adapter_info(self) -> AdapterInfo:
        """The registered adapter's :class:`flowdbg.AdapterInfo` (looked up once per name).

        :raises pytest.fail.Exception: when no adapter of that name is registered.
        """
        info = _adapter_info(self.adapter)
        if info is None:
            pytest.fail(
                f"no flowdbg adapter named {self.adapter!r} is registered; check the 'flowdbg' "
                "entry point of its distribution (is the project installed?)"
            )
        return info

    def capabilities(self) -> frozenset[Capability]:
        """What the adapter supports; by default what the registered adapter declares."""
        return self.adapter_info().capabilities
