"""Records and helpers shared by the store tests."""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import IO, Any

from flowdbg.records import RunRecord, StepRecord

HOST = socket.gethostname()
T0 = 1_700_000_000.0  # 2023-11-14
TIMEOUT = 60.0


def run_id(n: int) -> str:
    """A run id like the recorder's (32 hex digits), distinct per ``n``."""
    return f"{n:04x}" + "%028x" % (n * 2654435761 % 16**28)


def run(n: int = 1, **fields: Any) -> RunRecord:
    values: dict[str, Any] = {
        "run_id": run_id(n),
        "framework": "stategraph",
        "name": f"graph{n}",
        "started_at": T0 + n,
        "pid": os.getpid(),
        "host": HOST,
    }
    values.update(fields)
    return RunRecord(**values)


def step(rid: str, n: int, **fields: Any) -> StepRecord:
    values: dict[str, Any] = {
        "run_id": rid,
        "step": n,
        "node": f"node{n}",
        "started_at": T0 + n,
        "ended_at": T0 + n + 0.5,
    }
    values.update(fields)
    return StepRecord(**values)


def counting_steps(rid: str, count: int, *, first: int = 1) -> list[StepRecord]:
    """Steps of a loop: step i sets ``count`` to i."""
    return [
        step(rid, i, node="inc", state={"count": i}, input={"count": i - 1}, output={"count": i})
        for i in range(first, first + count)
    ]


def script(tmp_path: Path, name: str, code: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(code), encoding="utf-8")
    return path


def spawn(path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(path), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


class Lines:
    """A child's output, line by line, read by a thread so that waits can time out."""

    def __init__(self, stream: IO[str] | None) -> None:
        assert stream is not None
        self._queue: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line.strip())
        self._queue.put("<EOF>")

    def next(self, timeout: float = TIMEOUT) -> str:
        """The next line, waiting at most ``timeout`` seconds for it."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no output from the child process within {timeout} s") from None
