"""``flowdbg runs fork``: interactive like ``flowdbg run``, --json, lineage in ``runs ls``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cli_helpers import Cli


def recorded(
    run_cli: Cli, target: str = "graphs.py:build_support", value: str = '{"ticket": "t1"}'
) -> dict[str, Any]:
    run_cli("run", target, "--input", value, input="")
    runs = run_cli.json("runs", "ls", command="runs ls")["runs"]
    return dict(runs[0])


def test_fork_debugs_the_new_run_from_the_recorded_step(run_cli: Cli, graphs: Path) -> None:
    original = recorded(run_cli)
    result = run_cli(
        "runs",
        "fork",
        original["short_id"],
        "--step",
        "1",
        "--set",
        'intent="question"',
        "-b",
        "answer",
        input="p intent\nc\n",
    )
    out = result.stdout
    assert f"forking run {original['short_id']} after step 1 with {graphs}/graphs.py:" in out
    assert "stop-1: breakpoint [bp-1] at before node 'answer' (step 1, superstep 1)" in out
    assert "(flowdbg) p intent\n'question'" in out
    assert '"reply": "here is how"' in out
    runs = run_cli.json("runs", "ls", command="runs ls")["runs"]
    fork = runs[0]
    assert (fork["origin"], fork["forked_from"], fork["fork_step"]) == (
        "fork",
        original["run_id"],
        1,
    )
    assert fork["steps"] == 1
    shown = run_cli("runs", "show", fork["short_id"]).stdout.splitlines()[0]
    assert f"fork of {original['short_id']} at step 1" in shown


def test_fork_json_runs_to_the_end_and_prints_the_new_run(run_cli: Cli) -> None:
    original = recorded(run_cli, "graphs.py:app", '{"x": 1}')
    data = run_cli.json(
        "runs", "fork", original["short_id"], "--step", "2", "--set", "x=7", command="runs fork"
    )
    assert data["run"]["output"] == {"x": 7, "y": 8}
    assert data["run"]["input"] == {"x": 7}
    assert data["run"]["forked_from"] == original["run_id"]
    assert [s["node"] for s in data["steps"]] == ["gamma"]
    assert data["edits"] == {"x": 7}


def test_ls_tree_lists_forks_under_their_run(run_cli: Cli) -> None:
    original = recorded(run_cli, "graphs.py:app", '{"x": 1}')
    for step in ("1", "2"):
        run_cli.json("runs", "fork", original["short_id"], "--step", step, command="runs fork")
    out = run_cli("runs", "ls", "--tree").stdout.splitlines()
    assert out[0].split()[-1] == "from"
    assert out[1].split()[0] == original["short_id"]
    assert [line.split()[0] for line in out[2:]] == ["└", "└"]
    assert [" ".join(line.split()[-6:]) for line in out[2:]] == [
        f"fork of {original['short_id']} at step 1",
        f"fork of {original['short_id']} at step 2",
    ]
    data = run_cli.json("runs", "ls", "--tree", command="runs ls")
    (root,) = data["tree"]
    assert root["run_id"] == original["run_id"]
    assert len(root["forks"]) == 2 and all(f["forks"] == [] for f in root["forks"])


def test_fork_refusals_are_one_line(run_cli: Cli) -> None:
    original = recorded(run_cli, "graphs.py:app", '{"x": 1}')
    short = original["short_id"]
    assert run_cli.error("runs", "fork", short, "--step", "9") == (
        f"error: run {short} has no step 9 (its steps are 1..3); it can be forked after steps 0..3"
    )
    assert "--set takes PATH=VALUE" in run_cli.error(
        "runs", "fork", short, "--step", "1", "--set", "x"
    )
    usage = run_cli("runs", "fork", short, "--step", "1", "-b", "beta", "--json", code=2)
    assert "--json runs the fork without stopping" in usage.stderr
    message = run_cli.error(
        "runs", "fork", short, "--step", "1", "--target", "graphs.py:build_support"
    )
    assert message.startswith(
        "error: the record routes from step 1 to 'beta', which graph 'support' no longer has"
    )


def test_timeline_shows_forks_and_reruns_under_the_run(run_cli: Cli) -> None:
    original = recorded(run_cli, "graphs.py:app", '{"x": 1}')
    short = original["short_id"]
    fork = run_cli.json("runs", "fork", short, "--step", "1", "--set", "x=5", command="runs fork")[
        "run"
    ]
    rerun = run_cli.json("runs", "rerun", short, command="runs rerun")["run"]
    out = run_cli("runs", "timeline", short).stdout.splitlines()
    assert out[0] == f"{short}  linear (stategraph) completed, 3 steps"
    assert (
        out[1] == f"└ fork {fork['short_id']} after step 1  linear (stategraph) completed, 2 steps"
    )
    assert out[2] == (
        f"└ rerun {rerun['short_id']}  linear (stategraph) completed, 3 steps; same path and "
        "states as the run"
    )
    data = run_cli.json("runs", "timeline", short, command="runs timeline")
    assert data["run"]["run_id"] == original["run_id"]
    assert [m["run"]["origin"] for m in data["made"]] == ["fork", "rerun"]
    assert data["made"][1]["divergence"] is None
    message = run_cli.error("runs", "rerun", fork["short_id"])
    assert f"is a fork of run {short} after step 1" in message


def test_divergence_of_a_fork_starts_after_its_fork_step(run_cli: Cli) -> None:
    original = recorded(run_cli, "graphs.py:app", '{"x": 1}')
    short = original["short_id"]
    fork = run_cli.json("runs", "fork", short, "--step", "1", "--set", "x=5", command="runs fork")
    assert fork["first_divergence"]["kind"] == "state"
    data = run_cli.json("runs", "divergence", fork["run"]["short_id"], command="runs divergence")
    assert (data["origin"], data["from_step"], data["edited"]) == ("fork", 1, ["x"])
    first = data["first_divergence"]
    # the fork's first step is compared with the run's second (its fork step is the first)
    assert (first["step_a"], first["step_b"], first["node_a"], first["node_b"]) == (
        2,
        1,
        "beta",
        "beta",
    )
    assert data["calls"] == {
        "recorded": 0,
        "served": 0,
        "live": 0,
        "saved_seconds": 0.0,
        "saved_tokens": 0,
        "diverged": [],
    }
    unchanged = run_cli.json("runs", "fork", short, "--step", "2", command="runs fork")
    assert unchanged["first_divergence"] is None
    out = run_cli("runs", "divergence", unchanged["run"]["short_id"]).stdout.splitlines()
    assert out[0] == f"{unchanged['run']['short_id']}: fork of {short} at step 2, completed"
    assert out[1] == "  no divergence: the same units ran with the same states and outcomes"


def test_rewind_at_the_prompt_goes_on_from_an_earlier_step(run_cli: Cli) -> None:
    result = run_cli(
        "run",
        "graphs.py:app",
        "--input",
        '{"x": 1}',
        "-b",
        "gamma",
        input="rewind 3\nrewind one\nrewind 1 x=5\np x\nc\n",
    )
    out = result.stdout
    assert (
        "error: run " in out and "cannot be rewound to step 3: step 3 (node 'gamma') has not" in out
    )
    assert "error: usage: rewind STEP [PATH=VALUE ...]" in out
    assert "to the state after step 1, with x edited; it goes on as a new run" in out
    assert "(flowdbg) p x\n50" in out  # beta ran again on the edited state
    assert '"y": 51' in out  # the session's result is the run that went on
    runs = run_cli.json("runs", "ls", command="runs ls")["runs"]
    new, old = runs[0], runs[1]
    assert (new["origin"], new["forked_from"], new["fork_step"]) == ("rewind", old["run_id"], 1)
    assert (old["status"], old["error"]["type"]) == ("terminated", "Rewound")
    timeline = run_cli("runs", "timeline", old["short_id"]).stdout.splitlines()
    assert timeline[0].startswith(f"{old['short_id']}  linear (stategraph) terminated")
    assert timeline[1] == (
        f"└ rewind {new['short_id']} after step 1  linear (stategraph) completed, 2 steps"
    )
