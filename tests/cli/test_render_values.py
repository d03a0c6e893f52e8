"""How the commands print a recorded value in full (``runs state --values``, ``--key``): as
strict JSON text that any UTF-8 terminal or pipe can take."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

import flowdbg
from flowdbg.adapters.stategraph import END, StateGraph
from flowdbg.cli import _render, cli

T = 10.0
LONE = "name-\udc80\udcff.txt"  # what os.fsdecode makes of a file name that is not UTF-8
LONE_SHOWN = "name-\\udc80\\udcff.txt"


def test_as_json_text_shows_a_lone_surrogate_as_its_escape() -> None:
    text = _render.as_json_text({"file": LONE, "caf\u00e9": [math.nan, -math.inf, 1.5], 3: None})
    text.encode("utf-8")  # raises UnicodeEncodeError while a lone surrogate is left in
    assert json.loads(text) == {
        "file": LONE_SHOWN,
        "caf\u00e9": ["NaN", "-Infinity", 1.5],
        "3": None,
    }
    assert "caf\u00e9" in text  # text UTF-8 can hold stays as it is, not \\u escapes
    assert text.startswith("{\n  ")  # indented for reading


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str]:
    """A database holding one run whose state holds a lone surrogate and NaN."""
    db = tmp_path / "flowdbg.db"
    g = StateGraph(name="files")
    g.add_node("scan", lambda s: {"file": LONE, "score": math.nan})
    g.set_entry_point("scan")
    g.add_edge("scan", END)
    dbg = flowdbg.Debugger(record=True, db=db)
    try:
        handle = dbg.start(dbg.attach(g.compile()).invoke, {"x": 1})
        handle.result(timeout=T)
        assert handle.run_id is not None
        assert dbg.flush(timeout=T)
    finally:
        dbg.close()
    return db, handle.run_id


def runs_state(db: Path, run_id: str, *options: str) -> str:
    args = ["runs", "state", run_id, "--db", str(db), *options]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout_bytes.decode("utf-8")  # valid UTF-8, or this raises


def test_runs_state_values_prints_a_lone_surrogate(recorded: tuple[Path, str]) -> None:
    out = runs_state(*recorded, "--values")
    assert f"file:\n  {json.dumps(LONE_SHOWN)}\n" in out
    assert 'score:\n  "NaN"\n' in out


def test_runs_state_key_prints_a_lone_surrogate(recorded: tuple[Path, str]) -> None:
    assert json.loads(runs_state(*recorded, "--key", "file")) == LONE_SHOWN
