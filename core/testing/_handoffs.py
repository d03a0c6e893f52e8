"""Handoffs between agents (or nodes): breakpoints on them, redirects, stepping, the record."""

from __future__ import annotations

import json
from typing import Any

import flowdbg
from flowdbg._values import to_plain
from flowdbg.adapter import Capability
from flowdbg.stops import StopReason
from flowdbg.testing._base import WAIT, SuiteBase, requires
from flowdbg.testing._fixtures import EXPECTED

__all__ = ["AbstractHandoffTests"]

#: The handoff scenario's result when its handoff is redirected to ``billing``.
_REDIRECTED = {"agent": "billing", "answer": "billing: refund"}
#: What the scenario's handoff carries, as its ``input`` (and ``output``) shows it.
_HANDOFF = {"to": "specialist", "payload": {"topic": "refund"}}
#: Kinds of the other calls a unit may make besides its handoff (an agent's model turns and
#: tool calls): the handoff contract leaves them out.
_CALLS = ("llm", "tool")


def _plain(value: Any) -> Any:
    """A payload as plain JSON (what the store keeps and a client sees)."""
    return json.loads(json.dumps(to_plain(value), default=repr))


@requires(Capability.HANDOFFS)
class AbstractHandoffTests(SuiteBase):
    """A handoff is a unit of kind ``handoff``: one unit hands the run over to another.

    The contract every adapter declaring ``handoffs`` implements (the scenario: ``triage``
    hands off to ``specialist``, see :class:`flowdbg.testing.AdapterFixtures`):

    - **where**: the handoff is a call the handing-off unit makes, like a tool call: a unit of
      kind ``handoff`` one level inside that unit (``location.path`` ends with its name), in the
      same run, numbered (``location.step``) after it and before the target's unit.
    - **name**: ``location.node`` is the target's name. :meth:`flowdbg.Debugger.break_on_handoff`
      matches it with ``to``; a name breakpoint such as ``break_before("specialist")`` matches
      both the handoff and the target's own unit, ``kind=`` tells them apart.
    - **before**: reported before the handoff takes effect (no unit of the target has started).
      ``input`` is ``{"to": <target name>, "payload": <mapping or None>}``; the payload is what
      the handoff carries to the target (the arguments of an agent SDK's handoff call, the
      update a graph commits with it). ``state`` is the state the handing-off unit started
      from. Setting ``to`` there redirects the handoff where the framework can; where it cannot,
      the adapter refuses the edit with :class:`flowdbg.EditRefused`, never ignores it.
    - **after**: ``output`` is ``{"to": ..., "payload": ...}`` as the handoff resolved (edits
      included) and ``decision`` the name of the target it resolved to (a string), which the
      record keeps.
    - **then** the target runs as the next unit, of the scenario units' kind
      (:attr:`~flowdbg.testing.AdapterFixtures.unit_kind`), at the handing-off unit's depth.
    """

    def _rows(self, run: flowdbg.RunHandle) -> list[tuple[str, str, str]]:
        """(node, kind, status) of the run's steps so far, in step order."""
        return [(s.node, s.kind, s.status) for s in run.log.steps]

    def test_attached_the_scenario_gives_its_undebugged_result(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        expected = self.undebugged(self.scenario("handoff"), mode)
        assert expected == dict(EXPECTED["handoff"])
        scn = self.scenario("handoff")
        run = self.launch(dbg, scn, mode)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == expected

    def test_break_on_handoff_stops_before_the_handoff_takes_effect(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        scn = self.scenario("handoff")
        bp = dbg.break_on_handoff(to="specialist")
        run = self.launch(dbg, scn, mode)

        stop = self.wait_stop(dbg)
        self.assert_at(stop, "specialist", "before", StopReason.BREAKPOINT, depth=1)
        assert stop.location.kind == "handoff"
        assert stop.location.path == ("triage",)
        assert stop.breakpoints == (bp.id,)
        assert _plain(stop.input) == _HANDOFF
        assert dbg.inspect("to", source="input") == "specialist"
        rows = self._rows(run)
        assert ("triage", self.unit_kind, "running") in rows, rows
        assert ("specialist", "handoff", "running") in rows, rows
        assert not [r for r in rows if r[1] == self.unit_kind and r[0] != "triage"], (
            f"a unit after the handoff started although the handoff is held: {rows}"
        )
        assert not run.done()

        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["handoff"])

    def test_a_handoff_to_another_target_does_not_stop(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("handoff")
        bp = dbg.break_on_handoff(to="billing")
        run = self.launch(dbg, scn)
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["handoff"])
        assert bp.hits == 0

    def test_any_handoff_with_a_condition_on_its_payload(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("handoff")
        other = dbg.break_on_handoff(condition="input['payload']['topic'] == 'invoice'")
        glob = dbg.break_on_handoff(to="spec*", condition="input['payload']['topic'] == 'refund'")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "specialist", "before", StopReason.BREAKPOINT)
        assert stop.breakpoints == (glob.id,)
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["handoff"])
        assert (glob.hits, other.hits) == (1, 0)

    def test_after_the_handoff_output_and_decision_name_the_target(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("handoff")
        dbg.break_after("specialist", kind="handoff")
        run = self.launch(dbg, scn)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "specialist", "after", StopReason.BREAKPOINT, depth=1)
        assert stop.location.kind == "handoff"
        assert _plain(stop.output) == _HANDOFF
        assert stop.decision == "specialist"
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["handoff"])

    def test_redirecting_the_handoff_at_its_stop(self, dbg: flowdbg.Debugger, mode: str) -> None:
        scn = self.scenario("handoff")
        dbg.break_on_handoff(to="specialist")
        run = self.launch(dbg, scn, mode)
        self.wait_stop(dbg)
        try:
            dbg.set("to", "billing")
        except flowdbg.EditRefused:
            # The framework cannot redirect: the refusal leaves the handoff as it was.
            assert dbg.inspect("to", source="input") == "specialist"
            dbg.resume()
            self.wait_no_stop(dbg)
            assert self.finish(run, scn) == dict(EXPECTED["handoff"])
            return
        assert dbg.inspect("to", source="input") == "billing"
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == _REDIRECTED
        units = [r[0] for r in self._rows(run) if r[1] == self.unit_kind]
        assert units == ["triage", "billing"], units
        assert dbg.flush(WAIT)
        store = dbg.store
        assert store is not None
        (handoff,) = store.get_steps(run.run_id or "", kind="handoff")
        assert handoff.node == "specialist"  # the handoff as requested...
        assert _plain(handoff.decision) == "billing"  # ...and where it went

    def test_break_before_the_target_stops_after_the_handoff(
        self, dbg: flowdbg.Debugger, mode: str
    ) -> None:
        scn = self.scenario("handoff")
        dbg.break_before("specialist", kind=self.unit_kind)
        run = self.launch(dbg, scn, mode)
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "specialist", "before", StopReason.BREAKPOINT, depth=0)
        assert stop.location.kind == self.unit_kind
        rows = self._rows(run)
        assert ("triage", self.unit_kind, "completed") in rows, rows
        assert ("specialist", "handoff", "completed") in rows, rows
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["handoff"])

    def test_a_name_breakpoint_matches_the_handoff_and_then_its_target(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("handoff")
        dbg.break_before("specialist")
        run = self.launch(dbg, scn)
        seen = []
        while (stop := dbg.wait_for_stop(WAIT)) is not None:
            seen.append((stop.location.node, stop.location.kind, stop.location.depth))
            dbg.resume()
        assert seen == [("specialist", "handoff", 1), ("specialist", self.unit_kind, 0)]
        assert self.finish(run, scn) == dict(EXPECTED["handoff"])

    def test_step_into_from_the_handing_off_unit_reaches_the_handoff(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("handoff")
        dbg.break_before("triage")
        run = self.launch(dbg, scn)
        self.assert_at(self.wait_stop(dbg), "triage", "before", depth=0)
        seen: list[tuple[str, str, int]] = []
        while len(seen) < 2:
            dbg.step_into()
            stop = self.wait_stop(dbg)
            assert stop.reason == StopReason.STEP
            if stop.location.kind in _CALLS:  # an agent's model turn before it hands off
                continue
            seen.append((stop.location.node, stop.location.kind, stop.location.depth))
        assert seen == [("specialist", "handoff", 1), ("specialist", self.unit_kind, 0)]
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["handoff"])

    def test_step_over_the_handing_off_unit_lands_on_the_target(
        self, dbg: flowdbg.Debugger
    ) -> None:
        scn = self.scenario("handoff")
        dbg.break_before("triage")
        run = self.launch(dbg, scn)
        self.wait_stop(dbg)
        dbg.step_over()
        stop = self.wait_stop(dbg)
        self.assert_at(stop, "specialist", "before", StopReason.STEP, depth=0)
        assert stop.location.kind == self.unit_kind
        dbg.resume()
        self.wait_no_stop(dbg)
        assert self.finish(run, scn) == dict(EXPECTED["handoff"])

    def test_the_handoff_is_recorded_as_a_step_of_kind_handoff(self, dbg: flowdbg.Debugger) -> None:
        scn = self.scenario("handoff")
        run = self.launch(dbg, scn)
        assert self.finish(run, scn) == dict(EXPECTED["handoff"])
        assert [(node, kind) for node, kind, _ in self._rows(run) if kind not in _CALLS] == [
            ("triage", self.unit_kind),
            ("specialist", "handoff"),
            ("specialist", self.unit_kind),
        ]
        assert dbg.flush(WAIT)
        store = dbg.store
        assert store is not None
        steps = store.get_steps(run.run_id or "")
        (handoff,) = [s for s in steps if s.kind == "handoff"]
        assert (handoff.node, handoff.status, handoff.path) == (
            "specialist",
            "completed",
            ("triage",),
        )
        assert _plain(handoff.input) == _HANDOFF
        assert _plain(handoff.output) == _HANDOFF
        assert _plain(handoff.decision) == "specialist"
        units = {s.node: s.step for s in steps if s.kind == self.unit_kind}
        assert set(units) == {"triage", "specialist"}, units
        assert units["triage"] < handoff.step < units["specialist"]
