"""Unchanged values and repeated list elements are stored once: storage grows linearly."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from store_helpers import T0, run, run_id

from flowdbg.records import StepRecord
from flowdbg.store import SQLiteStore

BUDGET = 2048  # bytes per step for a history growing by one 200-byte message per step


def message(i: int) -> dict[str, Any]:
    text = f"message {i}: " + "lorem ipsum dolor sit amet " * 8
    return {"role": "user" if i % 2 else "assistant", "content": text[:170], "id": f"m{i}"}


def file_bytes(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())


def blob_bytes(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT coalesce(sum(length(data)), 0) FROM blobs").fetchone()[0])
    finally:
        conn.close()


def record_history(path: Path, steps: int) -> tuple[int, int]:
    """A chat whose state gains one message per step; (file bytes, blob bytes) it added."""
    rid = run_id(1)
    with SQLiteStore(path) as store:
        store.write_batch(runs=[run(1)])
    empty_file, empty_blobs = file_bytes(path), blob_bytes(path)
    with SQLiteStore(path) as store:
        messages: list[dict[str, Any]] = []
        batch: list[StepRecord] = []
        for i in range(1, steps + 1):
            before = {"messages": list(messages), "turn": i - 1}
            messages.append(message(i))
            batch.append(
                StepRecord(
                    run_id=rid,
                    step=i,
                    node="chat",
                    started_at=T0 + i,
                    ended_at=T0 + i + 1,
                    input=before,
                    output={"messages": [messages[-1]]},
                    state={"messages": list(messages), "turn": i},
                )
            )
            if len(batch) == 50:
                store.write_batch(steps=batch)
                batch = []
        store.write_batch(steps=batch)
        assert store.get_state(rid, steps // 2) == {
            "messages": messages[: steps // 2],
            "turn": steps // 2,
        }
    return file_bytes(path) - empty_file, blob_bytes(path) - empty_blobs


def test_a_growing_message_history_grows_storage_linearly(tmp_path: Path) -> None:
    file_1k, blobs_1k = record_history(tmp_path / "1k.db", 1000)
    file_2k, blobs_2k = record_history(tmp_path / "2k.db", 2000)
    assert file_1k / 1000 <= BUDGET, file_1k / 1000
    assert file_2k / 2000 <= BUDGET, file_2k / 2000
    # Stored whole, the states alone would take about 100 KB per step at 1,000 steps, and
    # twice the steps would take four times the bytes.
    assert 1.8 <= blobs_2k / blobs_1k <= 2.3, blobs_2k / blobs_1k
    assert 1.8 <= file_2k / file_1k <= 2.3, file_2k / file_1k


def test_an_unchanged_state_is_stored_once(store: SQLiteStore, db: Path) -> None:
    rid = run_id(1)
    state = {"docs": [f"document {i} " * 30 for i in range(200)], "n": 0}
    step = StepRecord(run_id=rid, step=1, node="read", state=state, input=state, output=state)
    store.write_batch(runs=[run(1)], steps=[step])
    once = blob_bytes(db)
    assert once > 200 * 300
    more = [
        StepRecord(run_id=rid, step=n, node="noop", input=state, state=state, output=state)
        for n in range(2, 102)
    ]
    store.write_batch(steps=more)
    assert blob_bytes(db) == once
    assert store.get_state(rid, 77) == state


def test_repeated_elements_and_values_shared_across_runs_are_stored_once(
    store: SQLiteStore, db: Path
) -> None:
    long_doc = "the same long document " * 500
    store.write_batch(runs=[run(1)], steps=[_doc_step(run_id(1), [long_doc] * 50)])
    first = blob_bytes(db)
    assert first < len(long_doc) * 2
    store.write_batch(runs=[run(2)], steps=[_doc_step(run_id(2), [long_doc])])
    assert blob_bytes(db) - first < 200
    assert store.get_state(run_id(1)) == {"docs": [long_doc] * 50}


def _doc_step(rid: str, docs: list[str]) -> StepRecord:
    return StepRecord(run_id=rid, step=1, node="load", state={"docs": docs})


def test_a_small_change_deep_in_a_big_state_stores_only_the_change(
    store: SQLiteStore, db: Path
) -> None:
    rid = run_id(1)
    state: dict[str, Any] = {
        f"section{i}": {f"field{j}": f"value {i}/{j} " * 10 for j in range(30)} for i in range(30)
    }
    store.write_batch(runs=[run(1)], steps=[StepRecord(run_id=rid, step=1, node="a", state=state)])
    before = blob_bytes(db)
    state["section7"]["field3"] = "changed " * 20
    store.write_batch(steps=[StepRecord(run_id=rid, step=2, node="b", state=state)])
    assert blob_bytes(db) - before < 3000  # the new value and the nodes above it
    assert store.get_state(rid, 2)["section7"]["field3"] == "changed " * 20
    assert store.get_state(rid, 1)["section7"]["field3"] == "value 7/3 " * 10


def test_a_long_value_that_stays_in_the_state_is_encoded_once(
    tmp_path: Path, monkeypatch: Any
) -> None:
    import flowdbg._redact as redact_module
    from flowdbg.store import _encode

    doc = "a long document " * 40_000  # 640 kB: scanned for secrets and dumped once
    dumped: list[int] = []
    scanned: list[int] = []
    real_dumps, real_scan = _encode._dumps, redact_module.Redactor._scan

    def counting_dumps(value: Any) -> str:
        if value is doc:
            dumped.append(1)
        return real_dumps(value)

    def counting_scan(self: Any, text: str) -> str:
        if text is doc:
            scanned.append(1)
        return real_scan(self, text)

    monkeypatch.setattr(_encode, "_dumps", counting_dumps)
    monkeypatch.setattr(redact_module.Redactor, "_scan", counting_scan)
    with SQLiteStore(tmp_path / "f.db") as store:
        rid = run_id(1)
        store.write_batch(runs=[run(1)])
        for batch in range(3):  # three batches of ten steps, each holding the document
            steps = [
                StepRecord(
                    run_id=rid,
                    step=batch * 10 + n,
                    node="n",
                    kind="node",
                    path=(),
                    started_at=T0,
                    ended_at=T0 + 1,
                    status="completed",
                    input={"doc": doc, "i": n},
                    state={"doc": doc, "i": n + 1},
                )
                for n in range(1, 11)
            ]
            store.write_batch(steps=steps)
        assert store.get_state(rid, step=25) == {"doc": doc, "i": 6}
    assert dumped == [1] and scanned == [1]


def test_a_very_long_string_is_stored_piece_by_piece_and_reads_back(tmp_path: Path) -> None:
    import random

    from flowdbg.store import _encode

    rng = random.Random(7)
    alphabet = 'ab"\\\n\t\x00é€😀\u2028 '  # escapes, multi-byte and astral characters
    text = "".join(rng.choice(alphabet) for _ in range(_encode.STREAM_MIN + 12_345))
    assert b"".join(_encode._json_pieces(text)) == b"v" + _encode._dumps(text).encode()
    with SQLiteStore(tmp_path / "long.db") as store:
        rid = run_id(1)
        store.write_batch(runs=[run(1)])
        steps = [
            StepRecord(
                run_id=rid,
                step=n,
                node="n",
                kind="node",
                path=(),
                started_at=T0,
                ended_at=T0 + 1,
                status="completed",
                state={"text": text, "n": n},
            )
            for n in (1, 2)
        ]
        store.write_batch(steps=steps)
        assert store.get_state(rid, step=1) == {"text": text, "n": 1}
        assert store.get_state(rid, step=2) == {"text": text, "n": 2}
