"""How long the command line takes to start. Prints JSON.

    python bench/cli_startup.py [--runs 15]

Runs ``flowdbg --help`` and ``flowdbg runs ls`` (on a small database recorded first) as new
processes, after one run that writes the bytecode caches, as a user's second call finds them;
medians in seconds. Goal: both under 0.15 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def command() -> list[str]:
    found = shutil.which("flowdbg", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "flowdbg.cli"]


def seconds(args: list[str], runs: int, env: dict[str, str]) -> float:
    subprocess.run(args, check=True, capture_output=True, env=env)  # bytecode caches written
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True, env=env)
        samples.append(time.perf_counter() - start)
    return round(statistics.median(samples), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "small.db"
        record = (
            "import flowdbg\n"
            "from flowdbg.adapters.stategraph import END, StateGraph\n"
            "g = StateGraph(name='small'); g.add_node('a', lambda s: {'x': 1})\n"
            "g.set_entry_point('a'); g.add_edge('a', END); app = g.compile()\n"
            f"dbg = flowdbg.Debugger(db={str(db)!r}); dbg.attach(app)\n"
            "for _ in range(20): app.invoke({})\n"
            "dbg.flush()\n"
        )
        subprocess.run([sys.executable, "-c", record], check=True, env=env)
        flowdbg = command()
        result = {
            "benchmark": "cli_startup",
            "python": sys.version.split()[0],
            "help_s": seconds([*flowdbg, "--help"], args.runs, env),
            "runs_ls_s": seconds([*flowdbg, "runs", "ls", "--db", str(db)], args.runs, env),
            "goal_s": 0.15,
        }
    result["met"] = result["help_s"] < 0.15 and result["runs_ls_s"] < 0.15
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
