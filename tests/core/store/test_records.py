"""Runs and steps written with write_batch come back as they were, with plain values."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pydantic
import pytest
from store_helpers import T0, counting_steps, run, run_id, step

from flowdbg.events import ErrorInfo
from flowdbg.store import REDACTED, SQLiteStore


class Mood(enum.Enum):
    HAPPY = "happy"


@dataclasses.dataclass
class Doc:
    title: str
    pages: int


class Msg(pydantic.BaseModel):
    role: str
    content: str


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque 7>"


class Other:
    def __repr__(self) -> str:
        return "<Other>"


ERROR = ErrorInfo(
    type="ValueError",
    message="bad x=2",
    traceback="Traceback...\nValueError: bad x=2\n",
    module="builtins",
)

RICH_STATE = {
    "messages": [Msg(role="user", content="hi"), Msg(role="ai", content="hello " * 40)],
    "docs": (Doc("a", 3), Doc("b", 4)),
    "mood": Mood.HAPPY,
    "when": datetime.datetime(2024, 3, 1, 9, 0),
    "raw": b"\x01\x02",
    "seen": {"b", "a"},
    "big": "z" * 100_000,
    "nested": {"deeper": [{"k": i} for i in range(50)]},
}
RICH_PLAIN = {
    "messages": [{"role": "user", "content": "hi"}, {"role": "ai", "content": "hello " * 40}],
    "docs": [{"title": "a", "pages": 3}, {"title": "b", "pages": 4}],
    "mood": "happy",
    "when": "2024-03-01T09:00:00",
    "raw": {"__bytes__": "AQI="},
    "seen": ["a", "b"],
    "big": "z" * 100_000,
    "nested": {"deeper": [{"k": i} for i in range(50)]},
}


def test_a_run_and_its_steps_round_trip(store: SQLiteStore) -> None:
    parent = run(1, input={"question": "why?"}, tags={"env": "test"})
    rid = parent.run_id
    steps = [
        step(
            rid,
            1,
            node="plan",
            kind="llm",
            path=("outer", "inner"),
            superstep=0,
            branch="b1",
            attempt=2,
            input={"question": "why?"},
            output=RICH_STATE["messages"],
            state=RICH_STATE,
            decision=["act", "search"],
        ),
        step(rid, 2, node="act", kind="tool", status="failed", error=ERROR, child_run_id="c" * 32),
        step(rid, 3, node="wait", status="running", ended_at=None),
    ]
    store.write_batch(runs=[parent], steps=steps)
    ended = dataclasses.replace(
        parent, status="failed", ended_at=T0 + 10, output={"answer": 42}, error=ERROR
    )
    store.write_batch(ended=[ended])

    got = store.get_run(rid)
    assert got.status == "failed" and got.ended_at == T0 + 10 and got.duration == 9
    assert got.input == {"question": "why?"} and got.output == {"answer": 42}
    assert got.error == ERROR
    assert got.tags == {"env": "test"} and got.step_count == 3
    assert (got.pid, got.host, got.name, got.framework) == (
        parent.pid,
        parent.host,
        "graph1",
        "stategraph",
    )

    first, second, third = store.get_steps(rid)
    assert first.state == RICH_PLAIN
    assert first.output == RICH_PLAIN["messages"]
    assert first.input == {"question": "why?"}
    assert first.decision == ["act", "search"]
    assert (first.kind, first.path, first.superstep, first.branch, first.attempt) == (
        "llm",
        ("outer", "inner"),
        0,
        "b1",
        2,
    )
    assert first.duration == 0.5 and not first.partial
    assert second.status == "failed" and second.error == ERROR
    assert second.child_run_id == "c" * 32
    assert second.state is None and second.output is None
    assert third.status == "running" and third.ended_at is None and third.duration is None


def test_a_child_run_keeps_its_links(store: SQLiteStore) -> None:
    root = run(1)
    child = run(2, parent_run_id=root.run_id, root_run_id=root.run_id, parent_step=4, path=("sub",))
    store.write_batch(runs=[root, child])
    got = store.get_run(child.run_id)
    assert (got.parent_run_id, got.root_run_id, got.parent_step, got.path) == (
        root.run_id,
        root.run_id,
        4,
        ("sub",),
    )


def test_values_that_cannot_be_serialized_flag_the_step_and_warn_once_per_type(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    rid = run_id(1)
    with caplog.at_level(logging.WARNING, logger="flowdbg.store"):
        store.write_batch(
            runs=[run(1, input={"handle": Opaque()})],
            steps=[
                step(rid, 1, state={"h": Opaque(), "n": 1}),
                step(rid, 2, output=[Opaque(), Other()]),
                step(rid, 3, state={"n": 3}),
                step(rid, 4, decision=Other()),
            ],
        )
    steps = store.get_steps(rid)
    assert [s.partial for s in steps] == [True, True, False, True]
    assert steps[0].state == {
        "h": {"__repr__": "<Opaque 7>", "__type__": f"{__name__}.Opaque"},
        "n": 1,
    }
    assert steps[1].output[1] == {"__repr__": "<Other>", "__type__": f"{__name__}.Other"}
    assert store.get_run(rid).input["handle"]["__repr__"] == "<Opaque 7>"
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2, messages
    assert messages[0] == (
        f"flowdbg could not serialize a value of type {__name__}.Opaque in the input of run {rid}; "
        "stored its repr"
    )
    assert f"{__name__}.Other at step 2 of run {rid}" in messages[1]


def test_secrets_are_redacted_by_default_and_kept_when_asked(tmp_path: Path) -> None:
    state = {"llm": {"config": {"api_key": "sk-live", "model": "m"}}, "history": [{"token": "t"}]}
    rid = run_id(1)
    with SQLiteStore(tmp_path / "default.db") as store:
        store.write_batch(
            runs=[run(1, input={"password": "pw"})], steps=[step(rid, 1, state=state)]
        )
        assert store.get_state(rid) == {
            "llm": {"config": {"api_key": REDACTED, "model": "m"}},
            "history": [{"token": REDACTED}],
        }
        assert store.get_run(rid).input == {"password": REDACTED}
    with SQLiteStore(tmp_path / "all.db", redact=()) as store:
        store.write_batch(runs=[run(1)], steps=[step(rid, 1, state=state)])
        assert store.get_state(rid) == state
    raw = (tmp_path / "default.db").read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.glob("default.db-*")
    )
    assert b"sk-live" not in raw


def test_writing_the_same_records_again_changes_nothing(store: SQLiteStore, db: Path) -> None:
    rid = run_id(1)
    records = {"runs": [run(1)], "steps": counting_steps(rid, 20)}
    store.write_batch(**records)
    snapshot = _dump(db)
    store.write_batch(**records)
    store.write_batch(steps=records["steps"][5:10])
    assert _dump(db) == snapshot
    assert store.get_run(rid).step_count == 20


def test_a_rewritten_step_replaces_the_old_one(store: SQLiteStore) -> None:
    rid = run_id(1)
    store.write_batch(runs=[run(1)], steps=[step(rid, 1, status="running", ended_at=None)])
    store.write_batch(steps=[step(rid, 1, status="completed", output={"done": True})])
    (only,) = store.get_steps(rid)
    assert only.status == "completed" and only.output == {"done": True}
    assert store.get_run(rid).step_count == 1


def test_step_counts_are_right_whatever_order_records_arrive_in(store: SQLiteStore) -> None:
    rid = run_id(1)
    store.write_batch(steps=counting_steps(rid, 5))  # the run record comes later
    store.write_batch(runs=[run(1)], steps=counting_steps(rid, 5, first=6))
    store.write_batch(ended=[run(1, status="completed", ended_at=T0 + 9)])
    got = store.get_run(rid)
    assert got.step_count == 10 and got.status == "completed"


def test_a_late_start_record_does_not_reopen_an_ended_run(store: SQLiteStore) -> None:
    finished = run(1, status="completed", ended_at=T0 + 5, output={"ok": 1})
    store.write_batch(ended=[finished])  # never saw the start: inserted whole
    store.write_batch(runs=[run(1)])
    got = store.get_run(finished.run_id)
    assert (got.status, got.ended_at, got.output) == ("completed", T0 + 5, {"ok": 1})


def test_text_sqlite_cannot_store_is_escaped_not_fatal(store: SQLiteStore) -> None:
    rid = run_id(1)
    bad = "caf\udce9"
    error = ErrorInfo(type="UnicodeError", message=bad, traceback=bad)
    store.write_batch(
        runs=[run(1, name=bad)],
        steps=[step(rid, 1, node=bad, error=error, state={bad: bad * 30}, decision=[bad])],
    )
    (got,) = store.get_steps(rid)
    assert got.state == {bad: bad * 30} and got.decision == [bad]
    assert "caf" in got.node and got.error is not None and "caf" in got.error.message
    assert "caf" in store.get_run(rid).name


def test_an_empty_batch_is_a_no_op(store: SQLiteStore, db: Path) -> None:
    before = _dump(db)
    store.write_batch()
    assert _dump(db) == before


def _dump(db: Path) -> list[Any]:
    conn = sqlite3.connect(db)
    try:
        return [
            (table, conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall())
            for table in ("runs", "steps", "blobs", "meta")
        ]
    finally:
        conn.close()


def test_values_come_back_as_fresh_plain_objects(store: SQLiteStore) -> None:
    shared = {"k": [1, 2]}
    rid = run_id(1)
    store.write_batch(runs=[run(1)], steps=[step(rid, 1, state={"a": shared, "b": shared})])
    state = store.get_state(rid)
    state["a"]["k"].append(3)
    assert state["b"] == {"k": [1, 2]}
    assert json.loads(json.dumps(state)) == state


def test_a_batch_rewriting_one_step_counts_the_steps_of_every_run(store: SQLiteStore) -> None:
    a, b = run_id(1), run_id(2)
    store.write_batch(runs=[run(1), run(2)], steps=[step(a, 1, status="running", ended_at=None)])
    store.write_batch(steps=[step(a, 1), *counting_steps(b, 3), step(a, 2)])
    assert store.get_run(a).step_count == 2 and store.get_run(b).step_count == 3
    assert [s.status for s in store.get_steps(a)] == ["completed", "completed"]


def test_small_flat_values_met_again_keep_their_types(store: SQLiteStore) -> None:
    """Columns of small flat dicts are remembered by content: equal values of other types
    (True and 1, 1 and 1.0, -0.0 and 0.0) keep their own."""
    rid = run_id(1)
    states = [{"x": 1}, {"x": True}, {"x": 1.0}, {"x": 0.0}, {"x": -0.0}, {"x": 1}, {"x": True}]
    store.write_batch(
        runs=[run(1)], steps=[step(rid, n, state=state) for n, state in enumerate(states, 1)]
    )
    got = [store.get_state(rid, step=n) for n in range(1, len(states) + 1)]
    assert [(s["x"], type(s["x"])) for s in got] == [(s["x"], type(s["x"])) for s in states]
    assert str(got[4]["x"]) == "-0.0"


def test_small_values_met_again_with_other_keys_or_shapes_keep_their_own(
    store: SQLiteStore,
) -> None:
    """The remembered columns tell apart dicts whose items differ only in key order, in size,
    or in holding a container (a list is no flat value), and secrets stay redacted."""
    rid = run_id(1)
    states: list[dict[str, Any]] = [
        {"a": 1, "b": 2},
        {"b": 2, "a": 1},
        {"a": 1},
        {"a": [1], "b": 2},
        {"a": 1, "b": 2},
        {"a": 1, "api_key": "k-123456789"},
        {"a": 1, "api_key": "k-123456789"},
    ]
    store.write_batch(
        runs=[run(1)], steps=[step(rid, n, state=state) for n, state in enumerate(states, 1)]
    )
    got = [store.get_state(rid, step=n) for n in range(1, len(states) + 1)]
    assert [list(s.items()) for s in got[:5]] == [list(s.items()) for s in states[:5]]
    assert got[5] == got[6] == {"a": 1, "api_key": "[REDACTED]"}


def test_routing_decisions_of_names_and_of_other_values_read_back(store: SQLiteStore) -> None:
    rid = run_id(1)
    decisions: list[Any] = [["a"], ["b", "c"], ["a"], [{"node": "a", "arg": {"k": 1}}], ["a"]]
    store.write_batch(
        runs=[run(1)],
        steps=[step(rid, n, decision=decision) for n, decision in enumerate(decisions, 1)],
    )
    assert [s.decision for s in store.get_steps(rid)] == decisions


def test_decisions_mapping_names_to_names_read_back_and_keep_secrets_out(
    store: SQLiteStore,
) -> None:
    """A decision mapping step names to event type names (LlamaIndex's) is cached by its items;
    what it stores is the same as for any other value: a secret-shaped name is redacted, also
    the second time it is met, and mappings holding other values are not confused with it."""
    rid = run_id(1)
    secret = "sk-" + "a1B2c3D4" * 5
    decisions: list[Any] = [
        {"s1": "E1"},
        {"s1": "E1", "s2": "ProgressEvent"},
        {"s1": "E1"},
        {"s1": 1},
        {"leak": secret},
        {"leak": secret},
        {"__end__": "StopEvent"},
        [],  # an empty list and an empty mapping are two decisions
        {},
        [],
    ]
    store.write_batch(
        runs=[run(1)],
        steps=[step(rid, n, decision=decision) for n, decision in enumerate(decisions, 1)],
    )
    got = [s.decision for s in store.get_steps(rid)]
    assert got[:4] == decisions[:4]
    assert got[4] == got[5] == {"leak": "sk-[REDACTED]"}
    assert got[6:] == [{"__end__": "StopEvent"}, [], {}, []]
