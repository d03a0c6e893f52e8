"""Cost of flowdbg on a real OpenAI Agents SDK run. Prints JSON.

    python bench/openai_agents_overhead.py [--runs 100] [--rounds 5]

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


def build(runs: int) -> Agent[Any]:
    """Agents whose scripted models can serve ``runs`` runs."""
    refunds = Agent(name="refunds", model=ScriptedModel([[assistant_message("refunded")]] * runs))
    turns = [
        [function_call("lookup", {"order_id": 7}, call_id="c1")],
        [function_call("policy", {"topic": "refunds"}, call_id="c2")],
        [function_call("transfer_to_refunds", {}, call_id="c3")],
    ]
    return Agent(
        name="triage",
        tools=[lookup, policy],
        handoffs=[refunds],
        model=ScriptedModel(turns * runs),
    )


async def once(agent: Agent[Any], streamed: bool) -> None:
    if streamed:
        result = Runner.run_streamed(agent, "refund order 7")
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, "refund order 7")
    assert result.final_output == "refunded"


async def measure(agent: Agent[Any], streamed: bool, runs: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(runs):
        await once(agent, streamed)
    return (time.perf_counter() - start) / runs * 1e6


async def main(runs: int, rounds: int) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="flowdbg-bench-")
    variants: dict[str, tuple[Agent[Any], flowdbg.Debugger | None]] = {}
    total = runs * rounds * 2 + 4
    variants["bare"] = (build(total), None)
    quiet = flowdbg.Debugger(record=False)
    variants["attached"] = (quiet.attach(build(total)), quiet)
    recording = flowdbg.Debugger(db=os.path.join(tmp, "flowdbg.db"))
    variants["recording"] = (recording.attach(build(total)), recording)
    for agent, _ in variants.values():  # warm up: the first runs build pydantic schemas
        await once(agent, False)
        await once(agent, True)
    samples: dict[str, list[float]] = {}
    for _ in range(rounds):
        for mode in ("run", "streamed"):
            for name, (agent, dbg) in variants.items():
                value = await measure(agent, mode == "streamed", runs)
                if dbg is not None and dbg.store is not None:
                    assert dbg.flush(60)
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
        "us_per_run": {k: round(v, 1) for k, v in medians.items()},
        "ratio_to_bare": {k: round(v, 3) for k, v in ratios.items()},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    json.dump(asyncio.run(main(args.runs, args.rounds)), sys.stdout, indent=2)
    sys.stdout.write("\n")
