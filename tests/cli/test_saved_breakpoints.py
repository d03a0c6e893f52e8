"""``flowdbg run`` remembers a target's breakpoints between sessions, beside the database."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_helpers import Cli

NO_REC = "--no-record"


def run(cli: Cli, *args: str, commands: str = "", code: int = 0) -> str:
    return cli("run", *args, input=commands, code=code).stdout


def stops(out: str) -> list[str]:
    return re.findall(r"^stop-\d+: (.*) \(step", out, flags=re.M)


def test_breakpoints_set_in_a_session_stop_the_next_run(run_cli: Cli, db: Path) -> None:
    first = run(
        run_cli, "graphs.py:app", "--stop-on-entry", "--input", '{"x": 1}', NO_REC,
        commands="b beta if state['x'] > 1\nb gamma:after\ndisable bp-2\nc\nc\n",
    )  # fmt: skip
    saved_file = db.parent / "breakpoints.json"
    assert f"saved 2 breakpoints for graphs.py:app to {saved_file}" in first
    data = json.loads(saved_file.read_text(encoding="utf-8"))
    # keyed by the file relative to the folder holding the database's folder
    (beta, gamma) = data["targets"]["project/graphs.py:app"]
    assert beta["pattern"] == "beta" and beta["condition"] == "state['x'] > 1"
    assert (gamma["pattern"], gamma["positions"], gamma["enabled"]) == ("gamma", ["after"], False)

    second = run(run_cli, "graphs.py:app", "--input", '{"x": 1}', NO_REC, commands="c\n")
    assert (
        "restored 2 breakpoints saved for graphs.py:app (--no-saved-breakpoints starts without "
        "them):\n  bp-1 node 'beta' before if state['x'] > 1 (0 hits)\n"
        "  bp-2 node 'gamma' after disabled (0 hits)\n" in second
    )
    assert stops(second) == ["breakpoint [bp-1] at before node 'beta'"]
    assert "saved" not in second.split("run completed")[1]  # nothing changed, nothing said


def test_no_saved_breakpoints_starts_clean_and_keeps_them(run_cli: Cli, db: Path) -> None:
    run(run_cli, "graphs.py:app", "-b", "beta", "--input", '{"x": 1}', NO_REC, commands="c\n")
    clean = run(run_cli, "graphs.py:app", "--no-saved-breakpoints", "--input", '{"x": 1}', NO_REC)
    assert "restored" not in clean and stops(clean) == []
    again = run(run_cli, "graphs.py:app", "--input", '{"x": 1}', NO_REC, commands="c\n")
    assert stops(again) == ["breakpoint [bp-1] at before node 'beta'"]


def test_a_breakpoint_given_again_is_not_set_twice(run_cli: Cli, db: Path) -> None:
    args = ("graphs.py:app", "-b", "beta", "--input", '{"x": 1}', NO_REC)
    run(run_cli, *args, commands="c\n")
    out = run(run_cli, *args, commands="c\n")
    assert "set bp-1 node 'beta' before (0 hits)" in out
    assert "restored" not in out
    assert stops(out) == ["breakpoint [bp-1] at before node 'beta'"]


def test_deleting_every_breakpoint_forgets_them(run_cli: Cli, db: Path) -> None:
    run(run_cli, "graphs.py:app", "-b", "beta", "--input", '{"x": 1}', NO_REC, commands="c\n")
    out = run(run_cli, "graphs.py:app", "--input", '{"x": 1}', NO_REC, commands="clear\nc\n")
    assert "no breakpoints left: forgot those saved for graphs.py:app" in out
    saved = json.loads((db.parent / "breakpoints.json").read_text(encoding="utf-8"))
    assert saved["targets"] == {}
    assert stops(run(run_cli, "graphs.py:app", "--input", '{"x": 1}', NO_REC)) == []


def test_each_target_has_its_own(run_cli: Cli, db: Path) -> None:
    run(run_cli, "graphs.py:app", "-b", "beta", "--input", '{"x": 1}', NO_REC, commands="c\n")
    run(run_cli, "graphs.py:fan", "-b", "done", NO_REC, commands="c\n")
    data = json.loads((db.parent / "breakpoints.json").read_text(encoding="utf-8"))
    assert sorted(data["targets"]) == ["project/graphs.py:app", "project/graphs.py:fan"]
    out = run(run_cli, "graphs.py:fan", NO_REC, commands="c\n")
    assert stops(out) == ["breakpoint [bp-1] at before node 'done'"]


def test_the_target_is_the_same_from_another_folder(run_cli: Cli, graphs: Path) -> None:
    # the default database: ./.flowdbg/flowdbg.db, keyed relative to the folder holding it
    (graphs / "sub").mkdir()
    run(run_cli, "graphs.py:app", "-b", "beta", "--db", ".flowdbg/flowdbg.db", NO_REC,
        "--input", '{"x": 1}', commands="c\n")  # fmt: skip
    data = json.loads((graphs / ".flowdbg" / "breakpoints.json").read_text(encoding="utf-8"))
    assert list(data["targets"]) == ["graphs.py:app"]
    elsewhere = Cli(graphs / "sub")
    out = run(elsewhere, "../graphs.py:app", "--db", "../.flowdbg/flowdbg.db", NO_REC,
              "--input", '{"x": 1}', commands="c\n")  # fmt: skip
    assert "restored 1 breakpoint saved for ../graphs.py:app" in out


def test_a_damaged_file_is_said_and_replaced(run_cli: Cli, db: Path) -> None:
    db.parent.mkdir(parents=True)
    (db.parent / "breakpoints.json").write_text("{not json", encoding="utf-8")
    result = run_cli("run", "graphs.py:app", "-b", "beta", "--input", '{"x": 1}', NO_REC,
                     input="c\n")  # fmt: skip
    assert result.stderr.startswith("warning: ")
    assert "is not a breakpoints file (not JSON" in result.stderr
    assert "starting without saved breakpoints" in result.stderr
    data = json.loads((db.parent / "breakpoints.json").read_text(encoding="utf-8"))
    assert [bp["pattern"] for bp in data["targets"]["project/graphs.py:app"]] == ["beta"]


def test_the_demo_neither_restores_nor_saves(run_cli: Cli, db: Path) -> None:
    run_cli("demo")
    assert not (db.parent / "breakpoints.json").exists()
