"""``flowdbg run``: how the final result is shown (whole, or cut when long), ``--output``, and
the run log's count of nodes and calls."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from cli_helpers import Cli

NO_REC = "--no-record"

BIG = textwrap.dedent(
    """
    from flowdbg.adapters.stategraph import END, StateGraph


    def _big():
        g = StateGraph(name="big")
        g.add_node(
            "make",
            lambda s: {
                "blob": "a" * s["size"],
                "rows": [{"id": i, "text": "x" * 20} for i in range(s["rows"])],
                "count": 7,
            },
        )
        g.set_entry_point("make")
        g.add_edge("make", END)
        return g.compile()


    big = _big()


    def _wide():
        g = StateGraph(name="wide")
        g.add_node("fill", lambda s: {f"key{i:03d}": "v" * 40 for i in range(60)})
        g.set_entry_point("fill")
        g.add_edge("fill", END)
        return g.compile()


    wide = _wide()
    """
)


@pytest.fixture
def big_graphs(graphs: Path) -> Path:
    (graphs / "big.py").write_text(BIG, encoding="utf-8")
    return graphs


def test_a_short_result_is_printed_whole_as_json(run_cli: Cli) -> None:
    out = run_cli("run", "graphs.py:app", "--input", '{"x": 1}', NO_REC).stdout
    assert json.loads(out.split("run completed; result:\n")[1].split("\n\n")[0]) == {
        "x": 20,
        "y": 21,
    }
    assert "left out" not in out


def test_a_long_result_is_cut_with_what_was_left_out(run_cli: Cli, big_graphs: Path) -> None:
    size = 10_000_000
    out = run_cli(
        "run", "big.py:big", "--input", json.dumps({"size": size, "rows": 500}), NO_REC
    ).stdout
    assert len(out) < 5_000  # not 10 MB of a's
    whole = json.dumps(
        {
            "size": size,
            "rows": [{"id": i, "text": "x" * 20} for i in range(500)],
            "blob": "a" * size,
            "count": 7,
        },
        indent=2,
    )
    head = f"run completed; result (cut: it is {len(whole):,} characters as JSON):"
    assert head in out
    table = out.split(head + "\n")[1]
    assert re.search(r"^  key\s+type\s+size\s+preview$", table, flags=re.M)
    assert re.search(r"^  blob\s+str\s+10000000\s+'aaaa+\S*' \(10,000,000 chars\)$", table, re.M)
    assert re.search(r"^  rows\s+list\s+500\s+\[\{'id': 0, .*\(500 items\)$", table, re.M)
    assert re.search(r"^  count\s+int\s+7$", table, flags=re.M)
    assert (
        "  left out: every value past its first 100 characters; see all of it with --output FILE "
        "(JSON)\n" in out
    )


def test_the_note_names_the_recorded_run_too(run_cli: Cli, big_graphs: Path) -> None:
    out = run_cli("run", "big.py:big", "--input", '{"size": 5000, "rows": 1}').stdout
    run_id = re.search(r"look at it with: flowdbg runs show (\w{8})$", out, flags=re.M)
    assert run_id is not None
    assert (
        "see all of it with --output FILE (JSON) or "
        f"flowdbg runs show {run_id.group(1)} --json" in out
    )
    shown = run_cli("runs", "show", run_id.group(1), "--json").stdout
    assert json.loads(shown)["data"]["run"]["output"]["blob"] == "a" * 5000


def test_many_keys_are_listed_up_to_twenty(run_cli: Cli, big_graphs: Path) -> None:
    out = run_cli("run", "big.py:wide", NO_REC).stdout
    listed = re.findall(r"^  (key\d{3})\s+str\s+40\s", out, flags=re.M)
    assert listed == [f"key{i:03d}" for i in range(20)]
    assert "  left out: every value past its first 100 characters and 40 of its 60 keys;" in out


def test_output_writes_the_whole_result_as_strict_json(
    run_cli: Cli, big_graphs: Path, tmp_path: Path
) -> None:
    target = tmp_path / "result.json"
    out = run_cli(
        "run", "big.py:big", "--input", '{"size": 3000, "rows": 2}', "--output", str(target), NO_REC
    ).stdout
    data = json.loads(target.read_text(encoding="utf-8"))
    assert data["blob"] == "a" * 3000
    assert data["rows"] == [{"id": 0, "text": "x" * 20}, {"id": 1, "text": "x" * 20}]
    assert f"left out: every value past its first 100 characters; all of it is in {target}" in out

    small = tmp_path / "small.json"
    out = run_cli("run", "graphs.py:app", "--input", '{"x": 1}', "--output", str(small), NO_REC)
    assert json.loads(small.read_text(encoding="utf-8")) == {"x": 20, "y": 21}
    assert f"  (written to {small} as JSON)" in out.stdout


def test_output_of_a_non_finite_number_is_strict_json(run_cli: Cli, graphs: Path) -> None:
    (graphs / "nan.py").write_text(
        textwrap.dedent(
            """
            from flowdbg.adapters.stategraph import END, StateGraph

            g = StateGraph(name="nan")
            g.add_node("n", lambda s: {"score": float("nan"), "top": float("inf")})
            g.set_entry_point("n")
            g.add_edge("n", END)
            graph = g.compile()
            """
        ),
        encoding="utf-8",
    )
    target = graphs / "out.json"
    run_cli("run", "nan.py:graph", "--output", "out.json", NO_REC)
    text = target.read_text(encoding="utf-8")
    assert json.loads(text) == {"score": "NaN", "top": "Infinity"}
    assert "NaN," not in text.replace('"NaN"', "")


def test_output_is_refused_before_the_run_when_it_cannot_be_written(
    run_cli: Cli, graphs: Path
) -> None:
    message = run_cli.error("run", "graphs.py:app", "--output", "no/such/folder.json", NO_REC)
    assert (
        message
        == "error: --output no/such/folder.json: there is no folder 'no/such'; create it first"
    )
    message = run_cli.error("run", "graphs.py:app", "--output", ".", NO_REC)
    assert message.startswith("error: --output . is a folder; give a file")


def test_no_result_is_written_for_a_failed_run(run_cli: Cli, graphs: Path) -> None:
    out = run_cli(
        "run", "graphs.py:failing", "--input", '{"x": 1}', "--output", "r.json", NO_REC, code=1
    ).stdout
    assert "no result: r.json not written" in out
    assert not (graphs / "r.json").exists()


def test_the_summary_counts_tool_calls_apart_from_nodes(run_cli: Cli, db: Path) -> None:
    out = run_cli("run", "graphs.py:shell_agent", "--input", '{"cmds": ["ls", "pwd"]}').stdout
    summary = "shell-agent (stategraph) completed: 3 steps: 1 over 1 node, 2 tool calls in "
    assert summary in out
    run_id = re.search(r"flowdbg runs show (\w{8})$", out, flags=re.M)
    assert run_id is not None
    assert summary in run_cli("runs", "show", run_id.group(1)).stdout


def test_a_result_that_cannot_be_written_is_still_shown(run_cli: Cli, graphs: Path) -> None:
    # the node makes a folder where the file should go, after --output was checked
    (graphs / "late.py").write_text(
        textwrap.dedent(
            """
            import os

            from flowdbg.adapters.stategraph import END, StateGraph

            g = StateGraph(name="late")
            g.add_node("n", lambda s: os.makedirs("late.json") or {"done": True})
            g.set_entry_point("n")
            g.add_edge("n", END)
            graph = g.compile()
            """
        ),
        encoding="utf-8",
    )
    result = run_cli("run", "late.py:graph", "--output", "late.json", NO_REC, code=1)
    assert result.stderr.startswith("error: cannot write the result to --output late.json: ")
    assert '"done": true' in result.stdout
