"""Time travel: forks and reruns of recorded runs, and their timeline.

A fork starts a new run of the *current* code of a run's target from the state the record
holds after one of its steps, under the debugger like any run
(:meth:`flowdbg.Debugger.fork`, ``flowdbg runs fork``). The core reads the record and decides
where a run can be forked (:func:`plan_fork`); the target's adapter starts its framework there
(:meth:`flowdbg.Adapter.fork`, capability :attr:`flowdbg.Capability.FORK`).

A rerun runs a recorded run again from its input with the current code, its model and tool
calls served from the record while they match it (:class:`RecordedCalls`,
:meth:`flowdbg.Debugger.rerun`, ``flowdbg runs rerun``; adapters ask
:meth:`flowdbg.Unit.recorded`, capability :attr:`flowdbg.Capability.CACHED_CALLS`).
:func:`timeline` gives a run with the runs made from it (``flowdbg runs timeline``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flowdbg._paths import parse_path, set_path, split_view
from flowdbg.errors import FlowdbgError, Terminated

if TYPE_CHECKING:
    from flowdbg.records import RunRecord, StepRecord
    from flowdbg.store import Store

__all__ = [
    "CACHED_CALLS",
    "END_NAMES",
    "CallsReport",
    "Diverged",
    "DivergenceReport",
    "ForkError",
    "ForkPoint",
    "LiveCall",
    "RecordedCalls",
    "RestartTicket",
    "Rewound",
    "TimelineEntry",
    "divergence",
    "forkable_steps",
    "plan_fork",
    "source_of",
    "timeline",
]

#: the names by which frameworks record "the run ends here" in a decision
END_NAMES = frozenset({"__end__", "END"})


class ForkError(FlowdbgError, ValueError):
    """A run cannot be forked as asked (the step, its values, the target or its adapter);
    the message says why and, for a step, which steps can be forked from."""


@dataclass(frozen=True)
class ForkPoint:
    """Where a fork starts: what :meth:`flowdbg.Adapter.fork` is given.

    Values are as the store gives them back: plain JSON values (a framework's objects, such as
    chat messages, as the mappings they were recorded as).
    """

    #: the recorded run
    run: RunRecord
    #: the step the fork starts after; ``0`` starts from the run's input
    step: int
    #: the state to start from, with the edits applied (for step 0: the run's input; a fork
    #: or rewind of another run goes on, from its step 0, where it started: :attr:`node` then
    #: names the node of its source's step it started after)
    state: Any
    #: the nodes the record says came next (the step's decision), in its order: what runs
    #: first when the current graph has no route of its own from :attr:`node` (a node that
    #: chose its successor itself); ``None`` for step 0 (the graph's own entry); ``()`` when
    #: the run ended after the step
    next: tuple[str, ...] | None
    #: the node of the step (``None`` for step 0 of a run started afresh: the graph's entry)
    node: str | None = None
    #: the step's superstep, where the framework has one
    superstep: int | None = None
    #: the edits applied to :attr:`state`, path -> value
    edits: Mapping[str, Any] = field(default_factory=dict)
    #: what the step returned, as recorded (``None`` for step 0 of a run started afresh): an
    #: event-driven framework starts its next steps from it (a LlamaIndex step's events)
    output: Any = None
    #: the step's decision as recorded (:attr:`next` is its list of nodes), ``None`` for step
    #: 0 of a run started afresh (a LlamaIndex step's ``{step: event type}``)
    decision: Any = None
    #: the store holding the run, for an adapter that rebuilds more than the step's own
    #: values from the record (an agent run's conversation, from its model turns and calls)
    store: Store | None = field(default=None, compare=False, repr=False)

    def state_keys(self) -> dict[str, Any]:
        """The top-level state key each edit of :attr:`edits` sets, by the edit's path
        (``messages`` for ``messages[-1].content`` or ``state:messages[-1].content``), for an
        adapter whose framework keeps only the keys it declares to refuse an edit of another.
        Edits of another view (``output:``) and of the whole state are left out."""
        from flowdbg.errors import PathError

        keys: dict[str, Any] = {}
        for path in self.edits:
            view, inner = split_view(str(path))
            if view not in (None, "state"):
                continue
            try:
                parts = parse_path(inner)
            except PathError:
                continue  # plan_fork refused it already
            if parts:
                keys[str(path)] = parts[0]
        return keys

    def with_output(self, output: Any) -> ForkPoint:
        """This point with ``output`` as what the step returned, the ``output:`` edits of
        :attr:`edits` applied to a copy of it: for an adapter that finds what a fork started
        from in a record other than the step's (the fork's own first units, for step 0 of a
        fork of a fork whose output was edited).

        :raises ForkError: when an edit does not fit ``output``.
        """
        import dataclasses

        from flowdbg.errors import PathError

        output = copy.deepcopy(output)
        for path, value in self.edits.items():
            view, inner = split_view(path)
            if view != "output":
                continue
            try:
                output = set_path({} if output is None else output, inner, value, what="output")
            except PathError as exc:
                raise ForkError(
                    f"cannot apply the edit {path!r} to the output the fork started from: {exc}"
                ) from exc
        return dataclasses.replace(self, output=output)


#: ``problems(store, run, steps)``: the steps of ``run`` an adapter cannot fork from, beyond
#: the core's rules, each with the reason (:meth:`flowdbg.Adapter.fork_problems`)
Problems = Callable[["Store", "RunRecord", Sequence["StepRecord"]], Mapping[int, str]]


def _top_level(run: RunRecord, step: StepRecord) -> bool:
    return tuple(step.path) == tuple(run.path) and step.kind == "node"


def _next_nodes(step: StepRecord) -> tuple[str, ...] | None:
    """The node names a step's decision routes to, or ``None`` when the decision is not a
    list of names (a ``Send`` packet, a handoff payload: nothing a fork can start from)."""
    decision = step.decision
    if decision is None:
        return ()
    if isinstance(decision, str):
        decision = [decision]
    elif isinstance(decision, Mapping):  # {node: what it was given} (a LlamaIndex step's)
        decision = list(decision)
    if not isinstance(decision, Sequence) or not all(isinstance(d, str) for d in decision):
        return None
    return tuple(dict.fromkeys(d for d in decision if d not in END_NAMES))


def _supersteps(run: RunRecord, steps: Sequence[StepRecord]) -> dict[int, list[StepRecord]]:
    """The run's own units by superstep (one pass: a run may have thousands of steps)."""
    groups: dict[int, list[StepRecord]] = {}
    for s in steps:
        if s.superstep is not None and _top_level(run, s):
            groups.setdefault(s.superstep, []).append(s)
    return groups


def _problem(
    run: RunRecord,
    steps: Sequence[StepRecord],
    index: int,
    groups: dict[int, list[StepRecord]] | None = None,
    any_unit: bool = False,
) -> str | None:
    """Why the run cannot be forked after ``steps[index]``, or ``None`` when it can (with
    ``any_unit``, a unit inside another is left for the adapter to judge)."""
    step = steps[index]
    if not any_unit and not _top_level(run, step):
        where = "/".join((*step.path, step.node))
        what = {"llm": "model call", "tool": "tool call"}.get(step.kind, f"{step.kind} unit")
        return (
            f"step {step.step} is a {what} inside a node ({where}); a fork starts between "
            "the run's own nodes"
        )
    if step.status != "completed":
        return f"step {step.step} ({step.node}) did not complete (it is {step.status})"
    if step.partial:
        return (
            f"step {step.step} ({step.node}) has values recorded partial (some could not be "
            "serialized and were stored as a repr), so its state cannot be rebuilt"
        )
    if step.superstep is not None:
        if groups is None:
            groups = _supersteps(run, steps)
        group = groups.get(step.superstep, [])
        branches = {s.branch for s in group}
        if len(branches) > 1:
            names = ", ".join(f"{s.step} ({s.node})" for s in group)
            return (
                f"step {step.step} ({step.node}) ran beside other nodes in superstep "
                f"{step.superstep} (steps {names}); the state between parallel branches is "
                "not one the graph ever had"
            )
        if group and group[-1] is not step:
            return f"step {step.step} ({step.node}) was retried: fork after step {group[-1].step}"
    if _next_nodes(step) is None:
        return (
            f"step {step.step} ({step.node}) routed to {step.decision!r}, which is not a list "
            "of nodes a fork can start"
        )
    return None


def _started_after(store: Store, run: RunRecord) -> StepRecord:
    """Where a fork (or rewind) of another run started: the step of its source it started
    after (its input is the state it started from)."""
    short = run.run_id[:8]
    source = run.forked_from or ""
    try:
        found = store.get_steps(source, from_step=run.fork_step, to_step=run.fork_step)
    except Exception:
        found = []
    if not found:
        raise ForkError(
            f"run {short} started after step {run.fork_step} of run {source[:8]}, which the "
            f"store no longer has; fork run {short} after one of its own steps instead"
        )
    return found[0]


def forkable_steps(
    run: RunRecord,
    steps: Sequence[StepRecord],
    refused: Mapping[int, str] | None = None,
    *,
    any_unit: bool = False,
) -> list[int]:
    """The steps of ``run`` a fork can start after (``0``: from its input), in order.

    :param steps: the run's steps (values are not needed).
    :param refused: steps the run's adapter cannot fork from besides (see
        :meth:`flowdbg.Adapter.fork_problems`), step -> reason.
    :param any_unit: the adapter judges the units inside others too
        (:attr:`flowdbg.Adapter.fork_any_unit`).
    """
    groups = _supersteps(run, steps)
    refused = refused or {}
    return [0] + [
        s.step
        for i, s in enumerate(steps)
        if s.step not in refused and _problem(run, steps, i, groups, any_unit) is None
    ]


def _redacted_paths(value: Any) -> list[str]:
    """The paths (``context.api_key``) of ``value`` where the store redacted a secret: a fork
    or rerun cannot start with what was not kept."""
    from flowdbg._paths import format_path
    from flowdbg._redact import REDACTED

    found: list[str] = []

    def walk(item: Any, parts: tuple[Any, ...]) -> None:
        if isinstance(item, str):
            if REDACTED in item:
                found.append(format_path(parts) or "(the whole value)")
        elif isinstance(item, Mapping):
            for key, child in item.items():
                walk(child, (*parts, key))
        elif isinstance(item, (list, tuple)):
            for index, child in enumerate(item):
                walk(child, (*parts, index))

    walk(value, ())
    return found


def _listing(numbers: Sequence[int]) -> str:
    """``0, 1, 2, 3, 5`` as ``0..3, 5``: three consecutive steps or more as a range."""
    parts: list[str] = []
    start = prev = None
    for n in [*numbers, None]:
        if start is not None and (n is None or n != prev + 1):  # type: ignore[operator]
            if prev - start >= 2:  # type: ignore[operator]
                parts.append(f"{start}..{prev}")
            else:
                parts.extend(str(k) for k in range(start, prev + 1))  # type: ignore[operator]
            start = None
        if n is not None and start is None:
            start = n
        prev = n
    return ", ".join(parts)


def plan_fork(
    store: Store,
    run_id: str,
    step: int,
    edits: Mapping[str, Any] | None = None,
    *,
    problems: Problems | None = None,
    views: Sequence[str] = (),
    any_unit: bool = False,
) -> ForkPoint:
    """Read where a fork of ``run_id`` after ``step`` starts, with ``edits`` applied.

    :param store: the store holding the run.
    :param run_id: the run's id or a unique prefix.
    :param step: the step to start after (``0``: from the run's input).
    :param edits: path -> new value, paths as ``dbg.set`` takes them (``messages[-1].content``),
        applied in order to a copy of the recorded state.
    :param problems: the steps the run's adapter cannot fork from besides the core's rules
        (:meth:`flowdbg.Adapter.fork_problems`), asked only for a step the core accepts.
    :param views: the views besides the state that edits may name (``"output"``: what the
        step returned, :attr:`ForkPoint.output`), as the adapter starts from them
        (:attr:`flowdbg.Adapter.fork_views`); an edit naming another view is refused.
    :param any_unit: ``problems`` judges the units inside others too, which the core would
        refuse as calls inside a node (:attr:`flowdbg.Adapter.fork_any_unit`).
    :raises flowdbg.store.RunNotFound: for an unknown run.
    :raises ForkError: for a nested run, or a step that is unknown or cannot be forked from
        (the message names the steps that can), or an edit whose path does not fit the state.
    """
    from flowdbg.errors import PathError

    run = store.get_run(run_id)
    short = run.run_id[:8]
    if run.parent_run_id is not None:
        raise ForkError(
            f"run {short} is nested in run {run.parent_run_id[:8]} (at its step "
            f"{run.parent_step}); fork the top-level run instead"
        )
    steps = store.get_steps(run.run_id, values=False)
    if isinstance(step, bool) or not isinstance(step, int):
        raise ForkError(f"step must be a step number, not {step!r}")
    if step == 0 and run.origin in ("fork", "rewind") and run.fork_step:
        # its input is the state it started from, after a step of its source: it goes on from
        # there as that step's node went on (not from the graph's entry)
        chosen = _started_after(store, run)
        state, next_nodes, node = run.input, _next_nodes(chosen), chosen.node
        superstep, output, decision = chosen.superstep, chosen.output, chosen.decision
    elif step == 0:
        state, next_nodes, node, superstep = run.input, None, None, None
        output = decision = None
    else:

        def forkable() -> str:
            refused = {} if problems is None else problems(store, run, steps)
            return _listing(forkable_steps(run, steps, refused, any_unit=any_unit))

        found = [i for i, s in enumerate(steps) if s.step == step]
        if not found:
            last = steps[-1].step if steps else 0
            raise ForkError(
                f"run {short} has no step {step} (its steps are 1..{last}); it can be forked "
                f"after steps {forkable()}"
            )
        problem = _problem(run, steps, found[0], any_unit=any_unit)
        if (
            problem is not None
            and steps[found[0]].partial
            and steps[found[0]].status == "completed"
        ):
            opaque = _opaque_paths(store.get_state(run.run_id, step))
            if opaque:
                problem += f" (in the state: {', '.join(opaque)})"
        if problem is None and problems is not None:
            problem = problems(store, run, steps).get(step)
        if problem is not None:
            raise ForkError(
                f"cannot fork run {short} after step {step}: {problem}; it can be forked after "
                f"steps {forkable()}"
            )
        chosen = store.get_steps(run.run_id, from_step=step, to_step=step)[0]  # with values
        state = store.get_state(run.run_id, step)
        next_nodes, node, superstep = _next_nodes(chosen), chosen.node, chosen.superstep
        output, decision = chosen.output, chosen.decision
    state, output = copy.deepcopy(state), copy.deepcopy(output)
    applied: dict[str, Any] = {}
    for path, value in (edits or {}).items():
        view, inner = split_view(path) if isinstance(path, str) else (None, path)
        if view not in (None, "state", *views):
            known = ", ".join(f"'{v}:'" for v in ("state", *views))
            raise ForkError(
                f"the edit {path!r} names the view {view!r}, which a fork of a {run.framework} "
                f"run cannot edit: edit the state (a path alone, or {known})"
            )
        try:
            if view == "output":
                output = set_path({} if output is None else output, inner, value, what="output")
            else:
                state = set_path({} if state is None else state, inner, value)
        except PathError as exc:
            hint = ""
            if view is None and isinstance(path, str):
                # ``output[1].text`` where ``output:[1].text`` was meant (a view is named with
                # a colon)
                named = next((v for v in views if re.match(rf"{v}(?:[.\[]|$)", path)), None)
                if named is not None:
                    rest = path[len(named) :].lstrip(".")
                    hint = f"; to edit the step's {named}, name the view: {named}:{rest}"
            raise ForkError(
                f"cannot apply the edit {path!r} to the {view or 'state'} after step {step} of "
                f"run {short}: {exc}{hint}"
            ) from exc
        applied[path] = value
    return ForkPoint(
        run=run,
        step=step,
        state=state,
        next=next_nodes,
        node=node,
        superstep=superstep,
        edits=applied,
        output=output,
        decision=decision,
        store=store,
    )


def _opaque_paths(value: Any, limit: int = 3) -> list[str]:
    """Where ``value`` (as recorded) holds values stored as their repr, each with its type:
    ``memory.tokenizer_fn (functools.partial)``; at most ``limit``."""
    found: list[str] = []

    def walk(item: Any, path: str) -> None:
        if len(found) >= limit:
            return
        if isinstance(item, Mapping):
            if "__repr__" in item:
                found.append(f"{path or '(the state)'} ({item.get('__type__', '?')})")
                return
            for key, child in item.items():
                walk(child, f"{path}.{key}" if path else str(key))
        elif isinstance(item, list):
            for index, child in enumerate(item):
                walk(child, f"{path}[{index}]")

    walk(value, "")
    return found


class Rewound(Terminated):
    """What the branches of a run rewound at a stop raise (:meth:`flowdbg.Debugger.rewind`):
    a :class:`flowdbg.Terminated`, so the run ends ``terminated`` with this error, and the
    adapter that started the run goes on from :attr:`point` in the same call.

    An adapter with :attr:`flowdbg.Capability.REWIND` catches it where its top-level run
    leaves the framework (when :attr:`run_id` is that run's id: a nested run lets it pass)
    and, inside ``with rewound.lineage():``, starts the framework from :attr:`point` as
    :meth:`flowdbg.Adapter.fork` does, returning (or streaming) that run's result to the
    caller of the rewound run. The new run is recorded as a ``rewind`` of the old one, after
    the step rewound to.
    """

    def __init__(
        self, run_id: str, point: ForkPoint, ref: str | None, ticket: RestartTicket | None = None
    ) -> None:
        super().__init__(
            f"run {run_id[:8]} was rewound to the state after step {point.step}: it goes on as "
            f"a new run (flowdbg runs timeline {run_id[:8]})"
        )
        #: the rewound run
        self.run_id = run_id
        #: where it goes on: the recorded state after the step (edited), the nodes next
        self.point = point
        #: the target's reference, recorded with the new run
        self.ref = ref
        self._ticket = ticket

    def __reduce__(self) -> Any:
        return (type(self), (self.run_id, self.point, self.ref))

    def lineage(self) -> Any:
        """A context manager under which the next top-level run started in this context
        (thread or task) is recorded as the rewind of :attr:`run_id`.

        Until it exits, the debugger counts the restart as a run to come, so that waiting for
        a stop does not read the moment between the two runs as "every run ended". Entering
        it raises :class:`flowdbg.Terminated` (from this exception) when the debugger was told
        to terminate its runs after the rewind: the run then ends instead of going on."""
        import contextlib

        from flowdbg.runtime import _REWIND

        @contextlib.contextmanager
        def restarting() -> Any:
            ticket = self._ticket
            if ticket is not None and ticket.cancelled:
                ticket.close()
                raise Terminated() from self
            made_from = ("rewind", self.run_id, self.point.step)
            token = _REWIND.set([(self.ref, made_from, (self.point.state,))])
            try:
                yield
            finally:
                _REWIND.reset(token)
                if ticket is not None:
                    ticket.close()

        return restarting()


class RestartTicket:
    """A rewound run's restart, from :meth:`flowdbg.Debugger.rewind` until the run that goes on
    has ended: counted by the debugger as a run to come (``opened``/``closed``, once each), and
    cancelled by :meth:`flowdbg.Debugger.terminate`."""

    def __init__(self, opened: Any, closed: Any) -> None:
        import threading

        self._closed = closed
        self._lock = threading.Lock()
        self._open = True
        #: terminate() came after the rewind: the run is not to go on
        self.cancelled = False
        opened()

    def close(self) -> None:
        """Stop counting the restart (idempotent)."""
        with self._lock:
            if not self._open:
                return
            self._open = False
        self._closed()


# --------------------------------------------------------------------------------------------
# Reruns with recorded calls
# --------------------------------------------------------------------------------------------

#: ``cached_calls`` of a rerun -> the unit kinds served from the record
CACHED_CALLS: Mapping[str, frozenset[str]] = {
    "all": frozenset({"llm", "tool"}),
    "llm": frozenset({"llm"}),
    "tool": frozenset({"tool"}),
    "none": frozenset(),
}


class Diverged(Terminated):
    """Ends a rerun with ``until_divergence`` at its first call that differs from the record
    (a :class:`flowdbg.Terminated`: the run ends ``terminated``, the call is not made)."""


@dataclass(frozen=True)
class LiveCall:
    """The first call of a branch that ran live in a rerun although the record had a call at
    its position: what it was and what the record had there."""

    #: the branch: the units the call is inside, from the run down (``("agent",)``)
    branch: tuple[str, ...]
    #: the call's kind and name in the rerun
    kind: str
    name: str
    #: what the record has at that position (``None``: the recorded branch had no more calls)
    recorded_name: str | None
    recorded_step: int | None
    #: why it ran live: ``"input"`` (its input differs), ``"name"`` (another call),
    #: ``"partial"`` (the recorded values are incomplete), ``"extra"`` (no recorded call left)
    reason: str
    #: the call's input in the rerun and in the record (plain values)
    input: Any = None
    recorded_input: Any = None

    @classmethod
    def against(
        cls,
        branch: tuple[str, ...],
        kind: str,
        name: str,
        reason: str,
        input: Any,
        recorded: StepRecord | None,
    ) -> LiveCall:
        """The call ``kind``/``name`` with ``input``, and the recorded call at its position
        (``None``: the record had none there)."""
        return cls(
            branch=branch,
            kind=kind,
            name=name,
            recorded_name=None if recorded is None else recorded.node,
            recorded_step=None if recorded is None else recorded.step,
            reason=reason,
            input=input,
            recorded_input=None if recorded is None else recorded.input,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "branch": list(self.branch),
            "kind": self.kind,
            "name": self.name,
            "recorded_name": self.recorded_name,
            "recorded_step": self.recorded_step,
            "reason": self.reason,
            "input": self.input,
            "recorded_input": self.recorded_input,
        }


class RecordedCalls:
    """The model and tool calls of a recorded run, served to a rerun of it.

    A call of the rerun is matched with the call at the same position of its *branch* in the
    record: the branch is where the call is made (the units it is inside, ``unit.run.path``:
    the node making it, with the subgraph nodes above), and the position counts the calls made
    there in order, whatever their kind. A call of a served kind (``kinds``) whose name and
    input (as the store keeps values: plain JSON, secrets redacted) equal the recorded one's
    gets the recorded output without running. The first call of a branch that does not match
    runs live, and so does every later call of that branch.

    Thread-safe: parallel branches call :meth:`serve` at once.

    :param steps: the recorded run's steps and those of its nested runs, with their values.
    :param kinds: the unit kinds to serve (``{"llm", "tool"}`` for all).
    :param redact: the store's key patterns, to encode live inputs as the record has them.
    :param until_divergence: end the run (:class:`Diverged`) at the first call that differs,
        instead of running it live.
    """

    def __init__(
        self,
        steps: Sequence[StepRecord],
        kinds: frozenset[str],
        redact: Any = None,
        *,
        until_divergence: bool = False,
    ) -> None:
        import collections
        import threading

        from flowdbg.store._encode import DEFAULT_REDACT, compile_redact

        self.kinds = kinds
        self.until_divergence = until_divergence
        self._redact = compile_redact(DEFAULT_REDACT if redact is None else redact)
        self._lock = threading.Lock()
        self._queues: dict[tuple[str, ...], collections.deque[StepRecord]] = {}
        for step in sorted(steps, key=lambda s: (s.started_at, s.step)):
            if step.kind in CACHED_CALLS["all"] and step.status == "completed":
                self._queues.setdefault(tuple(step.path), collections.deque()).append(step)
        self._live: set[tuple[str, ...]] = set()
        self._asked: set[int] = set()  # the units that asked (alive while their run is)
        #: the recorded state after each served call, by the serving unit's id (see
        #: :meth:`served_state`)
        self._served_states: dict[int, Any] = {}
        #: how many calls were served from the record, and how many ran live
        self.served = 0
        self.live = 0
        #: what the served calls took in the recorded run: seconds, and the tokens their
        #: replies report (``usage_metadata.total_tokens``, ``usage.total_tokens``)
        self.saved_seconds = 0.0
        self.saved_tokens = 0
        #: the first call of each branch that ran live where the record had one, in order
        self.diverged: list[LiveCall] = []

    @property
    def recorded(self) -> int:
        """How many calls the record has."""
        return sum(len(q) for q in self._queues.values()) + self.served

    def __repr__(self) -> str:
        kinds = "+".join(sorted(self.kinds))
        until = ", until divergence" if self.until_divergence else ""
        return (
            f"<RecordedCalls {kinds}: {self.recorded} recorded, {self.served} served, "
            f"{self.live} live, {len(self.diverged)} diverged{until}>"
        )

    def served_state(self, unit: Any) -> Any:
        """The state the record keeps after the call ``unit`` was served (a copy; ``None``
        when it was not served, or its record keeps no state: see
        :attr:`flowdbg.runtime.Frame.calls_write_state`)."""
        with self._lock:
            state = self._served_states.get(id(unit))
        return None if state is None else copy.deepcopy(state)

    def serve(self, unit: Any, input: Any, *, servable: bool = True) -> tuple[bool, Any]:
        """``(True, recorded output)`` to serve the call ``unit`` makes with ``input``, else
        ``(False, None)`` (see the class). A unit asks once; asking again answers
        ``(False, None)`` and changes nothing.

        :param servable: ``False`` for a call the adapter cannot give a result (it only
            observes it): its position is taken and compared, but it runs live.
        """
        from flowdbg.store._encode import Encoder

        branch = tuple(unit.run.path)
        with self._lock:
            if id(unit) in self._asked:
                return False, None
            self._asked.add(id(unit))
            # a new encoder each time: one remembers the lists it encoded by identity, and a
            # node may pass the same list, grown since, to its next call
            plain, partial = Encoder(self._redact).encode(input)
            if branch in self._live:
                self.live += 1
                return False, None
            queue = self._queues.get(branch)
            recorded = queue.popleft() if queue else None
            reason = _difference(unit.node, unit.kind, partial, _plain(plain), recorded)
            if reason is None and unit.kind in self.kinds and servable:
                assert recorded is not None
                self.served += 1
                self.saved_seconds += recorded.duration or 0.0
                self.saved_tokens += _tokens(recorded.output)
                if recorded.state is not None:
                    self._served_states[id(unit)] = recorded.state
                return True, copy.deepcopy(recorded.output)
            if reason is not None:
                self._live.add(branch)
                if recorded is not None or self._queues.get(branch) is not None:
                    live = LiveCall.against(
                        branch, unit.kind, unit.node, reason, _plain(plain), recorded
                    )
                    self.diverged.append(live)
                    if self.until_divergence:
                        where = "/".join(branch) or "the run"
                        raise Diverged(
                            f"stopped at the first call that differs from the record: "
                            f"{unit.kind} {unit.node!r} in {where} ({reason} differs from "
                            f"step {live.recorded_step} of the recorded run)"
                            if live.recorded_step is not None
                            else f"stopped at the first call that differs from the record: "
                            f"{unit.kind} {unit.node!r} in {where} (the record has no more "
                            "calls there)"
                        )
            self.live += 1
            return False, None


def _tokens(output: Any) -> int:
    """The total tokens a recorded model reply reports, or 0."""
    if not isinstance(output, dict):
        return 0
    for key in ("usage_metadata", "usage"):
        usage = output.get(key)
        if isinstance(usage, dict):
            total = usage.get("total_tokens")
            if isinstance(total, int) and not isinstance(total, bool):
                return total
    return 0


#: what a call's input may differ in and still be served: a provider's bookkeeping on the
#: messages it holds (token usage, response metadata), which a served reply does not repeat
_BOOKKEEPING = ("**.usage_metadata", "**.response_metadata")


def _difference(
    node: str, kind: str, partial: bool, plain_input: Any, recorded: StepRecord | None
) -> str | None:
    """Why a call differs from the recorded call at its position (a :attr:`LiveCall.reason`),
    or ``None`` when it matches: the name, then incomplete values, then the input."""
    if recorded is None:
        return "extra"
    if recorded.node != node or recorded.kind != kind:
        return "name"
    if recorded.partial or partial:
        return "partial"
    if not _same(plain_input, recorded.input):
        return "input"
    return None


def _same(live: Any, recorded: Any) -> bool:
    """Whether a call's input equals the recorded one, leaving out the values that are new on
    every run (LangChain message ids, generated ids, timestamps: as ``runs diff`` does) and
    a provider's bookkeeping on messages."""
    from flowdbg.store._ignore import IgnoreRules

    if live == recorded:
        return True
    a, b = IgnoreRules(_BOOKKEEPING).normalize(live, recorded)
    return bool(a == b)


def _plain(value: Any) -> Any:
    """A plain value as the store gives it back (tuples as lists)."""
    import json

    return json.loads(json.dumps(value))


# --------------------------------------------------------------------------------------------
# The divergence report of a run made from another
# --------------------------------------------------------------------------------------------


@dataclass
class CallsReport:
    """The model and tool calls of a run made from another, compared with the other's calls
    at the same positions (the branch: the units a call is inside; the position: how many
    calls that branch made before it), as a rerun serves them."""

    #: the calls the source run made in the part compared (after the fork step, for a fork)
    recorded: int = 0
    #: the new run's calls given their recorded output (steps marked ``cached``)
    served: int = 0
    #: the new run's calls that ran
    live: int = 0
    #: what the served calls took in the source run: seconds, and the tokens their replies report
    saved_seconds: float = 0.0
    saved_tokens: int = 0
    #: per branch, the first call of the new run that differs from the source's call at its
    #: position (its name or input), or that the source did not make; in the order they ran
    diverged: list[LiveCall] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "recorded": self.recorded,
            "served": self.served,
            "live": self.live,
            "saved_seconds": self.saved_seconds,
            "saved_tokens": self.saved_tokens,
            "diverged": [live.to_dict() for live in self.diverged],
        }


@dataclass
class DivergenceReport:
    """How run ``b`` departs from run ``a``: typically a fork or rerun (``b``) of a recorded run
    (``a``). See :func:`divergence`."""

    a: RunRecord
    b: RunRecord
    #: ``b``'s origin when it was made from ``a`` (``"fork"``, ``"rerun"``, ``"rewind"``), else
    #: ``None`` (two runs compared from their first steps)
    origin: str | None
    #: the step of ``a`` after which ``b`` started (a fork's step); 0: from the input
    from_step: int
    #: for a fork: the state paths where its input differs from ``a``'s state after
    #: ``from_step`` (the edits it was made with)
    edited: list[str]
    #: the first place where ``b`` departs from ``a`` after ``from_step`` (``None``: the same
    #: units ran with the same states and outcomes)
    first: Any
    #: for a ``state`` divergence: the value at its first path in ``a``'s state and in ``b``'s
    old: Any
    new: Any
    calls: CallsReport
    #: the wall time of the compared part of ``a`` (after its fork step) and of ``b``
    seconds_a: float | None
    seconds_b: float | None
    #: differences left out (volatile values, ``ignore`` globs) up to the first divergence
    ignored: list[Any] = field(default_factory=list)
    #: the ``ignore`` globs given, and whether volatile values were compared
    ignore: list[str] = field(default_factory=list)
    strict: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_dict(self, run_dict: Any = None) -> dict[str, Any]:
        """A JSON-ready dict (runs shown by ``run_dict(record)``, by default their ids)."""
        show = run_dict or (lambda run: run.run_id)
        return {
            "a": show(self.a),
            "b": show(self.b),
            "origin": self.origin,
            "from_step": self.from_step,
            "edited": list(self.edited),
            "first_divergence": None if self.first is None else self.first.to_dict(),
            "old": self.old,
            "new": self.new,
            "calls": self.calls.to_dict(),
            "seconds_a": self.seconds_a,
            "seconds_b": self.seconds_b,
            "ignored": [item.to_dict() for item in self.ignored],
            "ignore": list(self.ignore),
            "strict": self.strict,
            "warnings": list(self.warnings),
        }


def source_of(run: RunRecord, hint: str) -> str:
    """The id of the run ``run`` was made from (a fork, rerun or rewind of it).

    :param hint: what to do instead, for the error.
    :raises ForkError: for a run started afresh.
    """
    if run.forked_from is None:
        raise ForkError(
            f"run {run.run_id[:8]} was not made from another run (no fork, rerun or rewind): {hint}"
        )
    return run.forked_from


def _descendant_steps(store: Store, run_id: str, *, values: bool = True) -> list[StepRecord]:
    """The steps of a run and of its nested runs, with their values (unless ``values`` is
    false)."""
    steps: list[StepRecord] = []
    pending = [run_id]
    while pending:
        current = pending.pop()
        steps.extend(store.get_steps(current, values=values))
        pending.extend(child.run_id for child in store.list_runs(parent=current, limit=None))
    return steps


def _calls_by_branch(steps: Sequence[StepRecord]) -> dict[tuple[str, ...], list[StepRecord]]:
    branches: dict[tuple[str, ...], list[StepRecord]] = {}
    for step in sorted(steps, key=lambda s: (s.started_at, s.step)):
        if step.kind in CACHED_CALLS["all"]:
            branches.setdefault(tuple(step.path), []).append(step)
    return branches


def _compare_calls(source: Sequence[StepRecord], made: Sequence[StepRecord]) -> CallsReport:
    """The calls of ``made`` matched with those of ``source`` at their positions."""
    report = CallsReport()
    recorded = _calls_by_branch(source)
    report.recorded = sum(len(calls) for calls in recorded.values())
    firsts: list[tuple[float, LiveCall]] = []
    for branch, calls in _calls_by_branch(made).items():
        theirs = recorded.get(branch, [])
        departed = False
        for position, call in enumerate(calls):
            if call.cached:
                report.served += 1
                if position < len(theirs):
                    report.saved_seconds += theirs[position].duration or 0.0
                    report.saved_tokens += _tokens(theirs[position].output)
            else:
                report.live += 1
            if departed:
                continue
            other = theirs[position] if position < len(theirs) else None
            # the rule a rerun serves by, so that the report says what the rerun decided
            reason = _difference(call.node, call.kind, call.partial, call.input, other)
            if reason is None:
                continue
            departed = True
            if other is None and not theirs:
                continue  # a branch the source did not have: nothing to depart from
            live = LiveCall.against(branch, call.kind, call.node, reason, call.input, other)
            firsts.append((call.started_at, live))
    report.diverged = [live for _, live in sorted(firsts, key=lambda item: item[0])]
    return report


def divergence(
    store: Store, a: str, b: str, *, ignore: Sequence[str] = (), strict: bool = False
) -> DivergenceReport:
    """How run ``b`` departs from run ``a`` (:meth:`flowdbg.store.Store.divergence`).

    When ``b`` is a fork of ``a``, its steps are compared with ``a``'s steps after the fork
    step (a fork's first unit is the one after it); otherwise (a rerun, or any two runs) from
    the first steps. The report names the first divergence (as :meth:`Store.diff_runs` finds
    it: another unit ran, a unit ended otherwise, it left another state, or, the state the
    same, it returned something else) with the old and new value at its first path, compares
    the model and tool calls at their positions (how many ``b`` was served from the record
    and ran live, what the served ones took in ``a``, and per branch the first call that
    differs, by the rule a rerun serves calls by), and gives both runs' wall times.

    :param ignore: globs of state paths to leave out (``messages[*].id``) of the states
        compared (calls are compared as a rerun compares them).
    :param strict: compare volatile values of the states too (message ids, generated ids,
        timestamps).
    :raises flowdbg.store.RunNotFound: if a run is unknown.
    """
    from flowdbg._diff import diff as state_diff
    from flowdbg.store._base import Divergence, _aligned, _value_at, graph_warnings
    from flowdbg.store._ignore import IgnoreRules

    rules = IgnoreRules(ignore, strict=strict)
    run_a, run_b = store.get_run(a), store.get_run(b)
    origin = run_b.origin if run_b.forked_from == run_a.run_id else None
    from_step = (run_b.fork_step or 0) if origin in ("fork", "rewind") else 0
    rows_a = _aligned(store._diff_rows(run_a.run_id))
    cut: float | None = None
    if origin == "rewind":
        # the units the rewind cut off (held or running then) end there: compare what ran
        rows_a = [row for row in rows_a if row.step.status != "terminated"]
    if from_step:
        forked = next((row.step for row in rows_a if row.step.step == from_step), None)
        if forked is not None:
            # the units after the fork step: those that started once it had ended (the calls
            # inside it are numbered after it but belong to it), and those it ran inside (a
            # fork after a call inside a unit, an agent's tool call, runs that unit again)
            cut = forked.ended_at if forked.ended_at is not None else forked.started_at
            later = {tuple(row.step.path) for row in rows_a if row.step.started_at >= cut}
            around = tuple(forked.path)

            def goes_on(step: StepRecord) -> bool:
                # a unit the fork step ran inside, with units of its own after it
                own = (*step.path, step.node)
                return own == around[: len(own)] and any(p[: len(own)] == own for p in later)

            rows_a = [row for row in rows_a if row.step.started_at >= cut or goes_on(row.step)]
    edited: list[str] = []
    if origin in ("fork", "rewind"):
        # the fork's input is the state it started from: where it differs, it was edited
        start = store.get_state(run_a.run_id, from_step) if from_step else run_a.input
        before, after = rules.normalize(start, run_b.input)
        edited = state_diff(before, after).paths
    rows_b = _aligned(store._diff_rows(run_b.run_id))
    if origin == "rewind":
        # past where the rewound run was cut off, the run that went on has nothing to match
        rows_b = rows_b[: len(rows_a)]
    first = store._first_divergence(rows_a, rows_b, rules)
    old = new = None
    if first is None and run_a.status == run_b.status == "completed":
        # the same units with the same outcomes, and yet another result: a fork whose edit
        # reached the result without a unit after its step (an edit of the stop event a
        # LlamaIndex step returned), or a framework whose result is more than its last unit's
        result_a, result_b = rules.normalize(run_a.output, run_b.output)
        changed = state_diff(result_a, result_b).paths
        if changed:
            first = Divergence(
                kind="state",
                step_a=None,
                step_b=None,
                node_a=None,
                node_b=None,
                detail="the runs' results differ",
                paths=[f"result.{p}" if p else "result" for p in changed],
            )
            inner = changed[0]
            old = _value_at(run_a.output, inner, None) if inner else run_a.output
            new = _value_at(run_b.output, inner, None) if inner else run_b.output
    elif first is not None and first.kind == "state" and first.paths:
        path = first.paths[0]
        values: list[Any] = []
        for run_id, step in ((run_a.run_id, first.step_a), (run_b.run_id, first.step_b)):
            if step is None:
                values.append(None)
            elif path == "output" or path.startswith(("output.", "output[")):
                found = store.get_steps(run_id, from_step=step, to_step=step)
                rest = path[len("output") :].lstrip(".")
                output = found[0].output if found else None
                values.append(output if not rest else _value_at(output, rest, None))
            else:
                values.append(_value_at(store.get_state(run_id, step), path, None))
        old, new = values
    source_steps = _descendant_steps(store, run_a.run_id)
    if origin == "rewind":
        source_steps = [s for s in source_steps if s.status != "terminated"]
    if cut is not None:
        source_steps = [s for s in source_steps if s.started_at >= cut]
    calls = _compare_calls(source_steps, _descendant_steps(store, run_b.run_id))
    seconds_a = run_a.duration
    if cut is not None and run_a.ended_at is not None:
        seconds_a = max(0.0, run_a.ended_at - cut)
    return DivergenceReport(
        a=run_a,
        b=run_b,
        origin=origin,
        from_step=from_step,
        edited=edited,
        first=first,
        old=old,
        new=new,
        calls=calls,
        seconds_a=seconds_a,
        seconds_b=run_b.duration,
        ignored=rules.ignored,
        ignore=list(rules.patterns),
        strict=strict,
        warnings=graph_warnings(run_a, run_b),
    )


# --------------------------------------------------------------------------------------------
# The timeline of a run
# --------------------------------------------------------------------------------------------


@dataclass
class TimelineEntry:
    """A run and the runs made from it (forks, reruns), each with where it departs from it."""

    run: RunRecord
    #: how many calls a rerun served from the record (in it and in its nested runs)
    cached: int = 0
    #: where it departs from the run it was made from: a fork's first step is the one after
    #: its fork step, so for forks this is the fork point; a rerun's is the first divergence
    #: ``runs diff`` finds (``None``: it took the same path with the same states)
    divergence: Any = None
    made: list[TimelineEntry] = field(default_factory=list)

    def to_dict(self, run_dict: Any) -> dict[str, Any]:
        """A JSON-ready dict, runs shown by ``run_dict(record)``."""
        return {
            "run": run_dict(self.run),
            "cached": self.cached,
            "divergence": None if self.divergence is None else self.divergence.to_dict(),
            "made": [entry.to_dict(run_dict) for entry in self.made],
        }


def timeline(store: Store, run_id: str, *, depth: int = 20) -> TimelineEntry:
    """The run ``run_id``, the runs made from it (forks, reruns) and the runs made from those,
    oldest first at each level, each with its outcome and where it departs from its source.

    :param depth: how many levels of runs made from runs to follow.
    :raises flowdbg.store.RunNotFound: for an unknown run.
    """

    def entry(run: RunRecord, source: RunRecord | None, level: int) -> TimelineEntry:
        # the calls its nested runs (subgraphs, workflows run in a step) served count too
        cached = sum(s.cached for s in _descendant_steps(store, run.run_id, values=False))
        divergence = None
        if source is not None and run.origin == "rerun":
            divergence = store.diff_runs(source.run_id, run.run_id).first_divergence
        made = (
            [entry(child, run, level + 1) for child in store.list_forks(run.run_id)]
            if level < depth
            else []
        )
        return TimelineEntry(run=run, cached=cached, divergence=divergence, made=made)

    return entry(store.get_run(run_id), None, 0)
