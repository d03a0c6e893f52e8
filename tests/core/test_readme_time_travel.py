"""The Time travel section of the README runs as written: the Python example, then its
command lines on the run the example recorded."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## Time travel", 1)[1].split("\n## ", 1)[0]


def test_the_time_travel_example_and_its_commands_run_as_written(tmp_path: Path) -> None:
    (code,) = re.findall(r"```python\n(.*?)```", _section(), flags=re.DOTALL)
    script = tmp_path / "readme_time_travel.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "FLOWDBG_DB": str(tmp_path / "flowdbg.db")}
    env.pop("FLOWDBG_RECORD", None)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "refund opened for ana",
        "answer question",
        "how-to sent to ana",
        "fork True 1",
        "refund opened for ana 1 1",
    ]

    def flowdbg(*args: str, stdin: str = "") -> str:
        ran = subprocess.run(
            [sys.executable, "-m", "flowdbg.cli", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            cwd=tmp_path,
        )
        assert ran.returncode == 0, ran.stderr
        return ran.stdout

    listed = flowdbg("runs", "ls", "--json")  # newest first: the example's run comes last
    first_id = re.findall(r'"run_id": "([0-9a-f]{32})"', listed)[-1]
    (bash,) = re.findall(r"```bash\n(.*?)```", _section(), flags=re.DOTALL)
    outputs = []
    fork_id = None
    for line in bash.strip().splitlines():
        command = line.split("#", 1)[0].replace("3f2a91c0", first_id[:8])
        if fork_id is not None:
            command = command.replace("5a0c21de", fork_id[:8])
        words = shlex.split(command)
        assert words[0] == "flowdbg"
        out = flowdbg(*words[1:], stdin="c\n")
        outputs.append(out)
        if "--json" in words:
            fork_id = re.findall(r'"run_id": "([0-9a-f]{32})"', out)[0]
    debugged, as_json, rerun, tree, timeline, divergence, shown = outputs
    assert (
        divergence.splitlines()[0] == f"{fork_id[:8]}: fork of {first_id[:8]} at step 1, completed"
    )
    assert "no divergence: the same units ran" in divergence  # a fork without edits
    assert timeline.splitlines()[0].startswith(f"{first_id[:8]}  support (stategraph) completed")
    assert len(timeline.splitlines()) == 6  # the run; the forks and reruns of the example and above
    assert "calls served from the record: 1, run live: 0" in rerun
    assert "stop-1: breakpoint [bp-1] at before node 'answer'" in debugged
    assert "how-to sent to ana" in debugged
    assert '"origin": "fork"' in as_json
    assert tree.count(f"fork of {first_id[:8]} at step 1") == 3  # the example's fork too
    assert tree.count(f"rerun of {first_id[:8]}") == 2
    assert f"fork of {first_id[:8]} at step 1" in shown.splitlines()[0]
