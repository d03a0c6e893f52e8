"""The bytecode counter of the benchmarks' ``--count`` option (a helper, not a benchmark).

A count of the bytecodes the calling thread executes does not move between runs, unlike a time
on a shared machine: it shows a change of a few bytecodes in flowdbg's own work in one
comparison (bench/RESULTS.md, "Counted, not timed"). Other threads are not counted.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Count:
    """What :func:`counting` counted so far."""

    executed = 0


@contextmanager
def counting() -> Iterator[Count]:
    """Count the bytecodes this thread executes inside the block (``sys.settrace`` with opcode
    events; about 50 times slower than running untraced)."""
    count = Count()

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            count.executed += 1
        return tracer

    sys.settrace(tracer)
    try:
        yield count
    finally:
        sys.settrace(None)
