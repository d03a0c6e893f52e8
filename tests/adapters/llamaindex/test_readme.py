"""The LlamaIndex section of the README runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("workflows", reason="the llamaindex extra is not installed")

README = Path(__file__).resolve().parents[3] / "README.md"


def _section_code() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## LlamaIndex Workflows", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    return code


def test_the_readme_example_runs_as_written(tmp_path: Path) -> None:
    script = tmp_path / "readme_llamaindex.py"
    script.write_text(_section_code(), encoding="utf-8")
    env = {**os.environ, "FLOWDBG_DB": str(tmp_path / "flowdbg.db")}
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["notes on flowdbg", "flowdbg", "EDITED NOTES"]
