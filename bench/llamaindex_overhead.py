"""Cost of flowdbg on real LlamaIndex workflows. Prints JSON.

    python bench/llamaindex_overhead.py [--runs 200] [--rounds 5] [--variants bare,attached]
        [--latency MS] [--clock wall|cpu] [--count]

Two workflows of trivial async steps:

- ``linear``: 10 steps in a row (``StartEvent`` -> s0 -> ... -> s9 -> ``StopEvent``);
- ``fanout``: one step sends 8 events to a step with 4 workers, a fan-in step gathers them with
  ``ctx.collect_events`` (10 step invocations per run besides the fan-in's, which runs once per
  arriving event).

each run in these variants, measured in interleaved rounds within one process (the machine is
shared and noisy: compare the ratios, which are taken within one run):

- ``bare``: the workflow as built;
- ``attached``: attached to a Debugger, no breakpoints, recording off;
- ``recording``: attached with recording on (SQLite in a temporary directory), including the
  recorder's writer thread catching up (``dbg.flush()`` after each round);
- ``attached_keep1`` (only when asked for with ``--variants``): attached to a Debugger that
  keeps one finished run in memory (``keep_runs=1``) instead of 20: what the run log's
  history costs in garbage collection;
- ``bare_again`` (only when asked for): a second bare workflow, measured like the others: its
  ratio to ``bare`` is the benchmark's own spread on this machine (an A/A comparison), against
  which to read the others.

Each figure is the median over the rounds of µs per step invocation; ratios are to ``bare``.
``--latency MS`` makes every step wait MS milliseconds (``asyncio.sleep``), as a step that
calls a model or a service does: the recorder's writer then works while the run waits.
``--variants`` measures some of them only (``bare`` always): the recording variant's garbage
and writer thread weigh on the rounds of the others in the same process. ``--clock cpu``
measures the process's CPU time (``time.process_time``: every thread, the recorder's writer
included) instead of wall time: on a shared machine, time taken by other processes then does
not count. ``--count`` counts instead of timing: the bytecodes each variant executes per step
on the run's own thread (a ``sys.settrace`` opcode counter, over at most 20 runs after 20
warm-up runs; the recorder's writer thread is not counted). A count does not move between
runs: it shows a change of flowdbg's own work that the timed ratios, on a noisy machine,
cannot resolve (bench/RESULTS.md, "Counted, not timed").
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bytecodes import counting  # bench/bytecodes.py
from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StopEvent

import flowdbg

STEPS = 10
FANOUT = 8
#: seconds each step waits first (--latency)
LATENCY = 0.0
#: what a round is timed with (--clock)
CLOCK = time.perf_counter


class E1(Event):
    x: int


class E2(Event):
    x: int


class E3(Event):
    x: int


class E4(Event):
    x: int


class E5(Event):
    x: int


class E6(Event):
    x: int


class E7(Event):
    x: int


class E8(Event):
    x: int


class E9(Event):
    x: int


class Linear(Workflow):
    """STEPS steps in a row."""

    @step
    async def s0(self, ev: StartEvent) -> E1:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        return E1(x=ev.x + 1)

    @step
    async def s1(self, ev: E1) -> E2:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        return E2(x=ev.x + 1)

    @step
    async def s2(self, ev: E2) -> E3:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        return E3(x=ev.x + 1)

    @step
    async def s3(self, ev: E3) -> E4:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        return E4(x=ev.x + 1)

    @step
    async def s4(self, ev: E4) -> E5:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        return E5(x=ev.x + 1)

    @step
    async def s5(self, ev: E5) -> E6:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        return E6(x=ev.x + 1)

    @step
    async def s6(self, ev: E6) -> E7:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        return E7(x=ev.x + 1)

    @step
    async def s7(self, ev: E7) -> E8:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        return E8(x=ev.x + 1)

    @step
    async def s8(self, ev: E8) -> E9:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        return E9(x=ev.x + 1)

    @step
    async def s9(self, ev: E9) -> StopEvent:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        return StopEvent(result=ev.x + 1)


class Item(Event):
    n: int


class Done(Event):
    n: int


class FanOut(Workflow):
    @step
    async def fan(self, ctx: Context, ev: StartEvent) -> Item | None:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        for n in range(FANOUT):
            ctx.send_event(Item(n=n))
        return None

    @step(num_workers=4)
    async def work(self, ev: Item) -> Done:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        return Done(n=ev.n + 1)

    @step
    async def gather(self, ctx: Context, ev: Done) -> StopEvent | None:
        if LATENCY:
            await asyncio.sleep(LATENCY)
        got = ctx.collect_events(ev, [Done] * FANOUT)
        return None if got is None else StopEvent(result=sum(d.n for d in got))


def measure(
    runs: int, rounds: int, workdir: Path, wanted: tuple[str, ...] = ("attached", "recording")
) -> dict[str, Any]:
    builders: dict[str, tuple[Callable[[], Workflow], dict[str, Any], int]] = {
        "linear": (lambda: Linear(timeout=None), {"x": 0}, STEPS),
        # fan, 8 workers, and the fan-in once per arriving event (LlamaIndex may add one)
        "fanout": (lambda: FanOut(timeout=None), {}, 1 + FANOUT + FANOUT),
    }
    dbg_plain = flowdbg.Debugger(record=False)
    dbg_keep1 = flowdbg.Debugger(record=False, keep_runs=1)
    dbg_rec = flowdbg.Debugger(db=workdir / "flowdbg.db")
    loop = asyncio.new_event_loop()
    out: dict[str, Any] = {}
    try:
        for name, (build, kwargs, steps) in builders.items():
            variants: dict[str, tuple[Workflow, Callable[[], Any] | None]] = {}
            variants["bare"] = (build(), None)
            if "bare_again" in wanted:
                variants["bare_again"] = (build(), None)
            if "attached" in wanted:
                attached = build()
                dbg_plain.attach(attached)
                variants["attached"] = (attached, None)
            if "attached_keep1" in wanted:
                kept = build()
                dbg_keep1.attach(kept)
                variants["attached_keep1"] = (kept, None)
            if "recording" in wanted:
                recorded = build()
                dbg_rec.attach(recorded)
                variants["recording"] = (recorded, dbg_rec.flush)
            per: dict[str, list[float]] = {}
            for round_ in range(rounds + 1):  # the first round warms up and is dropped
                for variant, (wf, after) in variants.items():
                    gc.collect()

                    async def many(wf: Workflow = wf, kwargs: dict[str, Any] = kwargs) -> None:
                        for _ in range(runs):
                            await wf.run(**kwargs)

                    start = CLOCK()
                    loop.run_until_complete(many())
                    if after is not None:
                        after()
                    us = (CLOCK() - start) / (runs * steps) * 1e6
                    if round_:
                        per.setdefault(variant, []).append(us)
            medians = {variant: statistics.median(values) for variant, values in per.items()}
            bare = medians["bare"]
            out[name] = {
                variant: {
                    "us_per_step": round(value, 2),
                    "ratio": round(value / bare, 3),
                    "added_us_per_step": round(value - bare, 2),
                }
                for variant, value in medians.items()
            }
    finally:
        loop.close()
        dbg_plain.close()
        dbg_keep1.close()
        dbg_rec.close()
    return out


def count(runs: int, workdir: Path, wanted: tuple[str, ...]) -> dict[str, Any]:
    """Bytecodes executed on the run's thread per step, for each variant (``--count``): a
    count, not a time, so it does not move between runs and shows a change of a few
    bytecodes in one comparison. The recorder's writer thread is not counted (its work is
    measured by ``bench/writer.py``)."""
    builders: dict[str, tuple[Callable[[], Workflow], dict[str, Any], int]] = {
        "linear": (lambda: Linear(timeout=None), {"x": 0}, STEPS),
        "fanout": (lambda: FanOut(timeout=None), {}, 1 + FANOUT + FANOUT),
    }
    debuggers = {
        "attached": flowdbg.Debugger(record=False),
        "attached_keep1": flowdbg.Debugger(record=False, keep_runs=1),
        "recording": flowdbg.Debugger(db=workdir / "count.db"),
    }
    loop = asyncio.new_event_loop()
    out: dict[str, Any] = {}
    try:
        for name, (build, kwargs, steps) in builders.items():
            figures: dict[str, float] = {}
            for variant in ("bare", *wanted):
                wf = build()
                debugger = debuggers.get(variant)
                if debugger is not None:
                    debugger.attach(wf)

                async def many(n: int, wf: Workflow = wf, kwargs: dict[str, Any] = kwargs) -> None:
                    for _ in range(n):
                        await wf.run(**kwargs)

                loop.run_until_complete(many(20))  # warm-up: caches filled, history full
                with counting() as count:
                    loop.run_until_complete(many(runs))
                figures[variant] = count.executed / (runs * steps)
            bare = figures["bare"]
            out[name] = {
                variant: {"bytecodes_per_step": round(value, 1), "ratio": round(value / bare, 3)}
                for variant, value in figures.items()
            }
    finally:
        loop.close()
        for debugger in debuggers.values():
            debugger.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="runs per variant and round")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds (medians)")
    parser.add_argument(
        "--variants",
        default="bare,attached,recording",
        help="comma-separated variants to measure (bare is always measured)",
    )
    parser.add_argument(
        "--latency", type=float, default=0.0, metavar="MS", help="wait in every step first"
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time rounds by the wall clock or by the process's CPU time",
    )
    parser.add_argument(
        "--count",
        action="store_true",
        help="count the bytecodes each variant executes per step on the run's thread "
        "(deterministic) instead of timing them",
    )
    args = parser.parse_args(argv)
    global LATENCY, CLOCK
    LATENCY = args.latency / 1000
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    wanted = tuple(v for v in args.variants.split(",") if v and v != "bare")
    unknown = set(wanted) - {"attached", "recording", "attached_keep1", "bare_again"}
    if unknown:
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.count:
            figures = count(min(args.runs, 20), Path(tmp), wanted)
        else:
            figures = measure(args.runs, args.rounds, Path(tmp), wanted)
    report = {
        "benchmark": "llamaindex_overhead",
        "python": platform.python_version(),
        "llama_index_workflows": _version("llama-index-workflows"),
        "runs": args.runs,
        "rounds": args.rounds,
        "step_latency_ms": args.latency,
        "clock": "bytecodes" if args.count else args.clock,
        "variants": ["bare", *wanted],
        "budgets": {"attached_ratio_max": 1.03, "recording_ratio_max": 1.10},
        **figures,
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
