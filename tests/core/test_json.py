"""One conversion to strict JSON for every ``to_dict`` and every ``--json`` output."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import flowdbg
from flowdbg._json import jsonable, strict_json
from flowdbg.adapters.stategraph import END, StateGraph
from flowdbg.cli import cli
from flowdbg.cli._envelope import emit_json
from flowdbg.events import Event, Location, RunInfo
from flowdbg.records import RunRecord, StepRecord
from flowdbg.runlog import RunLog

T = 10.0
LONE = "name-\udc80\udcff.txt"  # what os.fsdecode makes of a file name that is not UTF-8


def strict_loads(text: str) -> Any:
    """``json.loads`` refusing what RFC 8259 refuses (Python's parser accepts ``NaN``)."""

    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Name(str, enum.Enum):
    ALPHA = "alpha"


# --------------------------------------------------------------------------------------------
# The policy
# --------------------------------------------------------------------------------------------


def test_non_finite_floats_become_the_strings_float_reads_back() -> None:
    value = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "ok": [1.5, -0.0, 1e308]}
    data = jsonable(value)
    assert data == {"nan": "NaN", "inf": "Infinity", "ninf": "-Infinity", "ok": [1.5, -0.0, 1e308]}
    assert strict_loads(dumps(data)) == data
    assert math.isnan(float(data["nan"]))
    assert float(data["inf"]) == math.inf and float(data["ninf"]) == -math.inf


def test_numbers_stay_numbers_of_their_base_type() -> None:
    class Ratio(float):
        pass

    data = jsonable([True, 0, 10**30, Level.HIGH, Ratio(0.5), Ratio("nan")])
    assert data == [True, 0, 10**30, 3, 0.5, "NaN"]
    assert [type(v) for v in data] == [bool, int, int, int, float, str]


def test_lone_surrogates_become_visible_escapes_and_valid_text_stays() -> None:
    data = jsonable({LONE: [LONE, "caf\u00e9 \u2603 \U0001f600"]})
    assert data == {
        "name-\\udc80\\udcff.txt": ["name-\\udc80\\udcff.txt", "caf\u00e9 \u2603 \U0001f600"]
    }
    dumps(data).encode("utf-8")  # would raise UnicodeEncodeError on a lone surrogate


def test_keys_become_text_and_values_plain() -> None:
    @dataclasses.dataclass
    class Point:
        x: int
        y: float

    data = jsonable(
        {
            1: "int key",
            Color.RED: "enum key",
            Level.HIGH: "int enum key",
            (1, 2): "tuple key",
            None: "none key",
            "p": Point(1, math.inf),
            "s": {3, 1, 2},
            "t": (Name.ALPHA, Color.RED),
            "o": Opaque(),
        }
    )
    assert data == {
        "1": "int key",
        "red": "enum key",
        "3": "int enum key",
        "(1, 2)": "tuple key",
        "None": "none key",
        "p": {"x": 1, "y": "Infinity"},
        "s": [1, 2, 3],
        "t": ["alpha", "red"],
        "o": "<Opaque>",
    }
    assert all(type(k) is str for k in data)
    assert type(data["t"][0]) is str  # not the str-mixin enum member


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque>"


def test_strict_json_of_plain_data_is_the_second_half_of_jsonable() -> None:
    plain: dict[str, Any] = {"a": [1, math.nan, {"b": LONE}], "c": None, "d": Color.RED}
    assert strict_json(plain) == jsonable(plain)
    assert strict_json(plain) == {
        "a": [1, "NaN", {"b": "name-\\udc80\\udcff.txt"}],
        "c": None,
        "d": "red",
    }
    assert plain["a"][1] != plain["a"][1]  # the input is not changed (still a NaN)


# --------------------------------------------------------------------------------------------
# Every to_dict and the --json outputs use it
# --------------------------------------------------------------------------------------------

VALUE = {"score": math.nan, "best": math.inf, "file": LONE, 7: Color.RED}
EXPECTED = {"score": "NaN", "best": "Infinity", "file": "name-\\udc80\\udcff.txt", "7": "red"}


def test_event_and_run_info_dicts_are_strict_json() -> None:
    loc = Location("stategraph", "r1", None, (), "n", "node", "after", 1)
    event = Event(loc, state=VALUE, input=VALUE, output=VALUE, decision=[VALUE])
    data = event.to_dict()
    assert data["state"] == data["input"] == data["output"] == EXPECTED
    assert data["decision"] == [EXPECTED]
    strict_loads(dumps(data))
    run = RunInfo("r1", "stategraph", "g", None, "r1", (), input=VALUE, output=VALUE)
    assert run.to_dict()["input"] == run.to_dict()["output"] == EXPECTED


def test_run_log_dict_is_strict_json() -> None:
    run_id = "r" * 32
    record = RunRecord(run_id, "stategraph", "g", root_run_id=run_id, status="completed",
                       started_at=1.0, ended_at=2.0, input=VALUE, output=VALUE)  # fmt: skip
    log = RunLog(record)
    log.add_step(StepRecord(run_id, 1, "n", started_at=1.0, ended_at=1.5, decision=VALUE))
    data = log.to_dict()
    assert data["input"] == data["output"] == data["steps"][0]["decision"] == EXPECTED
    strict_loads(dumps(data))


def graph() -> Any:
    g = StateGraph(name="scores")
    g.add_node("score", lambda s: {"score": math.nan, "best": math.inf, "file": LONE})
    g.add_node("check", _check)
    g.set_entry_point("score")
    g.add_edge("score", "check")
    g.add_edge("check", END)
    return g.compile()


def _check(state: dict[str, Any]) -> dict[str, Any]:
    raise ValueError(f"cannot open {state['file']}")


def test_a_stop_dict_is_strict_json() -> None:
    dbg = flowdbg.Debugger()
    app = dbg.attach(graph())
    dbg.break_before("check")
    run = dbg.start(app.invoke, {"x": 1})
    stop = dbg.wait_for_stop(T)
    assert stop is not None
    data = stop.to_dict()
    dbg.resume()
    run.exception(timeout=T)
    assert data["state"] == {"x": 1, **{k: v for k, v in EXPECTED.items() if k != "7"}}
    strict_loads(dumps(data))


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str]:
    """A database holding one failed run whose state holds NaN, inf and a lone surrogate."""
    db = tmp_path / "flowdbg.db"
    dbg = flowdbg.Debugger(record=True, db=db)
    try:
        app = dbg.attach(graph())
        handle = dbg.start(app.invoke, {"x": 1})
        assert isinstance(handle.exception(timeout=T), ValueError)
        assert handle.run_id is not None
        assert dbg.flush(timeout=T)
    finally:
        dbg.close()
    return db, handle.run_id


@pytest.mark.parametrize(
    "command",
    [("runs", "steps", "{run}", "--json"), ("runs", "show", "{run}", "--json")],
    ids=["steps", "show"],
)
def test_json_output_is_read_by_strict_parsers(
    recorded: tuple[Path, str], command: tuple[str, ...]
) -> None:
    db, run_id = recorded
    args = [arg.format(run=run_id) for arg in command]
    result = CliRunner().invoke(cli, [*args, "--db", str(db)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = result.stdout_bytes.decode("utf-8")  # valid UTF-8, or this raises
    data = strict_loads(text)
    if command[1] == "show":
        assert data["data"]["run"]["error"]["message"] == "cannot open name-\\udc80\\udcff.txt"
    else:
        assert data["data"]["steps"][0]["output"] == {
            "score": "NaN", "best": "Infinity", "file": "name-\\udc80\\udcff.txt",
        }  # fmt: skip
        assert data["data"]["steps"][1]["error"]["message"] == (
            "cannot open name-\\udc80\\udcff.txt"
        )
    jq = shutil.which("jq")
    if jq is not None:  # the consumer the --json outputs are for, where it is installed
        out = subprocess.run(
            [jq, "-c", ".data"], input=text.encode("utf-8"), capture_output=True, check=True
        )
        assert json.loads(out.stdout) == data["data"]


def test_emit_json_makes_fields_built_without_jsonable_strict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    emit_json("x", {"duration": math.nan, "error": {"message": f"bad {LONE}"}})
    data = strict_loads(capsys.readouterr().out)
    assert data["data"] == {
        "duration": "NaN",
        "error": {"message": "bad name-\\udc80\\udcff.txt"},
    }
