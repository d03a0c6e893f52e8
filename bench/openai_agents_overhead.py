"""Cost of flowdbg on a real OpenAI Agents SDK run. Prints JSON.

    python bench/openai_agents_overhead.py [--runs 100] [--rounds 5] [--latency MS] [--context]
        [--count]

A scripted run (``agents.testing.ScriptedModel``, offline, tracing disabled): ``triage`` calls
two tools in two turns, then hands off to ``refunds``, which answers (4 model turns, 2 tool
calls, 1 handoff). Each is run with ``Runner.run`` and with ``Runner.run_streamed`` (consuming
every event) in three variants, interleaved in rounds within one process (the machine is shared
and noisy: compare the ratios, taken within one run):

- ``bare``: the agents, nothing attached;
- ``attached``: attached to a Debugger, no breakpoints, recording off;
- ``recording``: attached with recording on (SQLite in a temporary directory), including the
  recorder's writer catching up (``dbg.flush()`` after each round).

Each figure is the median over the rounds of µs per run; ratios are to ``bare``.

``--context`` gives every run (bare too) a small run context, as an application passing its
session does: the adapter then has the recorder take each unit's values as the unit ends
(``RunScope.values_change_in_place``: tools may change the context in place).

``--latency MS`` makes each model turn wait MS milliseconds first (``asyncio.sleep``), as a
model served over a network does: the recorder's writer then works while the run waits, as it
does in real runs, where scripted turns that cost nothing make every microsecond of it the
run's (the interpreter lock: see bench/RESULTS.md).

``--count`` counts instead of timing: the bytecodes each variant executes per run on the run's
own thread (a ``sys.settrace`` opcode counter over at most 20 runs, after 10 warm-up runs; the
recorder's writer thread is not counted), a figure that does not move between runs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

import agents
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from bytecodes import counting  # bench/bytecodes.py

import flowdbg

set_tracing_disabled(True)


@function_tool
def lookup(order_id: int) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


@function_tool
def policy(topic: str) -> str:
    """Read a policy."""
    return f"policy on {topic}: 30 days"


class SlowModel(ScriptedModel):
    """A scripted model that waits ``latency`` seconds before each turn (the network)."""

    latency = 0.0

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(self.latency)
        return await super().get_response(*args, **kwargs)

    async def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(self.latency)
        async for event in super().stream_response(*args, **kwargs):
            yield event


def build(runs: int, latency: float = 0.0) -> Agent[Any]:
    """Agents whose scripted models can serve ``runs`` runs, each turn after ``latency`` s."""

    def model(turns: list[Any]) -> ScriptedModel:
        scripted = SlowModel(turns)
        scripted.latency = latency
        return scripted

    refunds = Agent(name="refunds", model=model([[assistant_message("refunded")]] * runs))
    turns = [
        [function_call("lookup", {"order_id": 7}, call_id="c1")],
        [function_call("policy", {"topic": "refunds"}, call_id="c2")],
        [function_call("transfer_to_refunds", {}, call_id="c3")],
    ]
    return Agent(
        name="triage",
        tools=[lookup, policy],
        handoffs=[refunds],
        model=model(turns * runs),
    )


#: the run context each run is given (``--context``; None: none)
CONTEXT: dict[str, Any] | None = None


async def once(agent: Agent[Any], streamed: bool) -> None:
    context = None if CONTEXT is None else dict(CONTEXT)
    if streamed:
        result = Runner.run_streamed(agent, "refund order 7", context=context)
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, "refund order 7", context=context)
    assert result.final_output == "refunded"


async def measure(agent: Agent[Any], streamed: bool, runs: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(runs):
        await once(agent, streamed)
    return (time.perf_counter() - start) / runs * 1e6


async def main(runs: int, rounds: int, latency: float = 0.0) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="flowdbg-bench-")
    variants: dict[str, tuple[Agent[Any], flowdbg.Debugger | None]] = {}
    total = runs * rounds * 2 + 4
    variants["bare"] = (build(total, latency), None)
    quiet = flowdbg.Debugger(record=False)
    variants["attached"] = (quiet.attach(build(total, latency)), quiet)
    recording = flowdbg.Debugger(db=os.path.join(tmp, "flowdbg.db"))
    variants["recording"] = (recording.attach(build(total, latency)), recording)
    for agent, _ in variants.values():  # warm up: the first runs build pydantic schemas
        await once(agent, False)
        await once(agent, True)
    samples: dict[str, list[float]] = {}
    for _ in range(rounds):
        for mode in ("run", "streamed"):
            for name, (agent, dbg) in variants.items():
                value = await measure(agent, mode == "streamed", runs)
                if dbg is not None and dbg.store is not None:
                    start = time.perf_counter()
                    assert dbg.flush(60)  # the writer's catching up is part of recording's cost
                    value += (time.perf_counter() - start) / runs * 1e6
                samples.setdefault(f"{mode}/{name}", []).append(value)
    quiet.close()
    recording.close()
    medians = {key: statistics.median(values) for key, values in samples.items()}
    ratios = {
        key: medians[key] / medians[f"{key.split('/')[0]}/bare"]
        for key in medians
        if not key.endswith("/bare")
    }
    return {
        "python": platform.python_version(),
        "openai_agents": agents.__version__,
        "runs_per_round": runs,
        "rounds": rounds,
        "model_latency_ms": latency * 1000,
        "context": CONTEXT is not None,
        "us_per_run": {k: round(v, 1) for k, v in medians.items()},
        "ratio_to_bare": {k: round(v, 3) for k, v in ratios.items()},
    }


async def count(runs: int) -> dict[str, Any]:
    """Bytecodes executed on the run's thread per run, for each variant and mode (``--count``):
    a count, not a time, the same on every run of the benchmark (the recorder's writer thread
    is not counted: ``bench/writer.py`` measures it)."""
    tmp = tempfile.mkdtemp(prefix="flowdbg-bench-")
    quiet = flowdbg.Debugger(record=False)
    recording = flowdbg.Debugger(db=os.path.join(tmp, "flowdbg.db"))
    total = 2 * (runs + 10)
    variants: dict[str, Agent[Any]] = {
        "bare": build(total),
        "attached": quiet.attach(build(total)),
        "recording": recording.attach(build(total)),
    }
    per_run: dict[str, float] = {}
    try:
        for mode in ("run", "streamed"):
            for name, agent in variants.items():
                for _ in range(10):  # warm up: the first runs build pydantic schemas
                    await once(agent, mode == "streamed")
                with counting() as count:
                    for _ in range(runs):
                        await once(agent, mode == "streamed")
                per_run[f"{mode}/{name}"] = count.executed / runs
    finally:
        quiet.close()
        recording.close()
    return {
        "python": platform.python_version(),
        "openai_agents": agents.__version__,
        "runs": runs,
        "context": CONTEXT is not None,
        "bytecodes_per_run": {k: round(v, 1) for k, v in per_run.items()},
        "ratio_to_bare": {
            k: round(v / per_run[f"{k.split('/')[0]}/bare"], 3)
            for k, v in per_run.items()
            if not k.endswith("/bare")
        },
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--latency", type=float, default=0.0, metavar="MS", help="wait before each model turn"
    )
    parser.add_argument(
        "--context",
        action="store_true",
        help="give each run a context (the recorder then takes each unit's values as it ends)",
    )
    parser.add_argument(
        "--count",
        action="store_true",
        help="count the bytecodes each variant executes per run on the run's thread "
        "(deterministic; at most 20 runs) instead of timing them",
    )
    args = parser.parse_args()
    if args.context:
        CONTEXT = {"user": "ana", "order": 7, "notes": ["asked for a refund"]}
    if args.count:
        report = asyncio.run(count(min(args.runs, 20)))
    else:
        report = asyncio.run(main(args.runs, args.rounds, args.latency / 1000))
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
