"""What ``flowdbg run`` records of its target, and how ``runs show``/``runs ls`` show lineage."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import Cli


def test_run_records_its_target_as_an_absolute_reference(
    run_cli: Cli, graphs: Path, db: Path
) -> None:
    run_cli("run", "graphs.py:app", "--input", '{"x": 1}', input="")
    data = run_cli.json("runs", "ls", command="runs ls")
    (run,) = data["runs"]
    assert run["target"] == f"{graphs / 'graphs.py'}:app"
    assert (run["origin"], run["forked_from"], run["fork_step"]) == (None, None, None)
    out = run_cli("runs", "show", run["short_id"]).stdout
    assert out.splitlines()[0].endswith(f"target {graphs / 'graphs.py'}:app")
