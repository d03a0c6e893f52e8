"""The MCP server over stdio, driven by the ``mcp`` SDK's own client session."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import _server_required  # noqa: F401  (skips the module without the server extra)
import pytest

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from server_helpers import build_counter  # noqa: E402

import flowdbg  # noqa: E402
from flowdbg.server._mcp import VALUE_LIMIT, value_view  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

REFUNDS = """
from flowdbg.adapters.stategraph import END, StateGraph

LIMIT = 500


def intake(state):
    return {"amount": float(state["amount"]), "customer": state.get("customer", "anon")}


def triage(state):
    # refunds above the limit must go to a manager; this sends them to be paid at once
    return {"route": "auto_refund" if state["amount"] > LIMIT else "manager_review"}


def auto_refund(state):
    return {"outcome": "refunded automatically"}


def manager_review(state):
    return {"outcome": "queued for a manager"}


def build():
    g = StateGraph(name="refunds")
    g.add_node("intake", intake)
    g.add_node("triage", triage)
    g.add_node("auto_refund", auto_refund)
    g.add_node("manager_review", manager_review)
    g.set_entry_point("intake")
    g.add_edge("intake", "triage")
    g.add_conditional_edges(
        "triage",
        lambda s: s["route"],
        {"auto_refund": "auto_refund", "manager_review": "manager_review"},
    )
    g.add_edge("auto_refund", END)
    g.add_edge("manager_review", END)
    return g.compile()
"""


class Agent:
    """A scripted MCP client that counts its tool calls."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.calls: list[str] = []

    async def __call__(self, name: str, **arguments: Any) -> dict[str, Any]:
        self.calls.append(name)
        result = await self.session.call_tool(name, arguments)
        if result.is_error:
            text = " ".join(getattr(c, "text", "") for c in result.content)
            return {"error": text}
        assert result.structured_content is not None, name
        return dict(result.structured_content)


def _params(tmp_path: Path) -> StdioServerParameters:
    (tmp_path / "refunds.py").write_text(REFUNDS, encoding="utf-8")
    env = {**os.environ, "FLOWDBG_DB": str(tmp_path / "mcp.db")}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "flowdbg.cli", "mcp", "--target", "refunds.py:build()"],
        env=env,
        cwd=str(tmp_path),
    )


def test_an_agent_finds_and_fixes_the_misrouted_refund(tmp_path: Path) -> None:
    found: dict[str, Any] = {}

    async def debug() -> list[str]:
        async with (
            stdio_client(_params(tmp_path)) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            assert "wait_for_stop" in (init.instructions or "")
            agent = Agent(session)
            with anyio.fail_after(30):  # it must not wait its 300 s
                early = await session.call_tool("wait_for_stop", {"timeout": 300})
            assert early.structured_content is not None
            assert early.structured_content["outcome"] == "ended"  # at once: nothing runs
            target = await agent("describe_target")
            nodes = [n["name"] for n in target["graph"]["nodes"]]
            assert "triage" in nodes
            await agent("set_breakpoint", pattern="*", type="after")
            await agent("start_run", input={"amount": 900})
            while True:
                waited = await agent("wait_for_stop", timeout=30)
                if waited["outcome"] == "ended":
                    break
                assert waited["outcome"] == "stopped", waited
                stop = waited["stop"]
                amount = stop["state"]["value"]["amount"]
                output = stop.get("output", {}).get("value") or {}
                if output.get("route") == "auto_refund" and amount > 500:
                    # the node that sends a large refund to be paid, and the key it sets
                    found.update(node=stop["node"], path="route")
                    edited = await agent(
                        "set_value",
                        stop_id=stop["stop_id"],
                        path="route",
                        value="manager_review",
                    )
                    assert edited["now"] == {"value": "manager_review"}
                await agent("resume", stop_id=stop["stop_id"], action="continue")
            stale = await agent("resume", stop_id="stop-1")
            assert "has already resumed" in stale["error"]
            runs = await agent("list_runs", limit=1)
            assert runs["runs"][0]["status"] == "completed"
            steps = await agent("list_steps", run_id=runs["runs"][0]["run_id"])
            found["nodes"] = [s["node"] for s in steps["steps"]]
            # the same record as resources
            listed = await session.read_resource("flowdbg://runs")
            newest = json.loads(listed.contents[0].text)["runs"][0]
            one = await session.read_resource(f"flowdbg://runs/{newest['run_id']}")
            record = json.loads(one.contents[0].text)
            found["resource_nodes"] = [s["node"] for s in record["steps"]]
            found["final_keys"] = [k["key"] for k in record["final_state"]]
            return agent.calls

    calls = anyio.run(debug)
    assert found["node"] == "triage" and found["path"] == "route"
    assert found["nodes"] == ["intake", "triage", "manager_review"]
    assert found["resource_nodes"] == found["nodes"]
    assert "outcome" in found["final_keys"]
    # describe, set, start, 3 stops (wait + resume each), the fix, the last wait, the stale
    # resume, runs and steps
    assert len(calls) == 14, calls


def test_tools_are_described_for_an_agent(tmp_path: Path) -> None:
    async def listing() -> dict[str, Any]:
        async with (
            stdio_client(_params(tmp_path)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return {t.name: t for t in (await session.list_tools()).tools}

    tools = anyio.run(listing)
    for name in (
        "set_breakpoint",
        "list_breakpoints",
        "remove_breakpoint",
        "start_run",
        "wait_for_stop",
        "inspect",
        "set_value",
        "resume",
        "terminate",
        "list_runs",
        "list_steps",
        "get_run_state",
        "compare_runs",
        "rewind",
        "fork_run",
        "rerun_run",
        "run_divergence",
    ):
        assert len(tools[name].description or "") > 40, name
    # a run starts from any JSON its framework takes (an agent's message is a string), with
    # the config flowdbg run --config takes (an agent's run context)
    start = tools["start_run"].input_schema["properties"]
    assert "type" not in start["input"] or start["input"]["type"] != "object"
    assert "config" in start
    schema = tools["resume"].input_schema
    assert schema["properties"]["action"]["enum"] == [
        "continue",
        "step_over",
        "step_into",
        "step_out",
    ]


def test_a_large_value_is_summarized_with_paths_to_read_its_parts() -> None:
    state = {"messages": [{"role": "user", "content": "x" * 300} for _ in range(50)], "n": 1}
    shown = value_view(state, "state:")
    assert "value" not in shown
    paths = [row["path"] for row in shown["summary"]]
    assert paths == ["state:messages", "state:n"]
    assert shown["summary"][0]["size"] == 50
    inner = value_view(state["messages"], "state:messages")
    assert inner["summary"][0]["path"] == "state:messages[0]"
    assert inner["summary"][-1]["path"] == "state:messages[49]"
    assert len(inner["summary"]) == 20
    small = value_view({"n": 1}, "state:")
    assert small == {"value": {"n": 1}}
    assert len(json.dumps(value_view(state, "state:"))) < VALUE_LIMIT


def test_the_debug_server_serves_the_mcp_tools_over_http(server: Any) -> None:
    import httpx
    from mcp.client.streamable_http import streamable_http_client

    refused = httpx.post(f"{server.base_url}/mcp", json={})
    assert refused.status_code == 401
    cross = httpx.post(
        f"{server.base_url}/mcp",
        params={"token": server.token},
        headers={"Origin": "https://evil.example"},
        json={},
    )
    assert cross.status_code == 403

    async def session() -> tuple[list[str], dict[str, Any]]:
        url = f"{server.base_url}/mcp?token={server.token}"
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()
            names = [t.name for t in (await mcp.list_tools()).tools]
            await mcp.call_tool("set_breakpoint", {"pattern": "b"})
            await mcp.call_tool("start_run", {"input": {"n": 1}})
            waited = await mcp.call_tool("wait_for_stop", {"timeout": 10})
            await mcp.call_tool("terminate", {})
            assert waited.structured_content is not None
            return names, dict(waited.structured_content)

    names, waited = anyio.run(session)
    assert "wait_for_stop" in names
    assert waited["stop"]["node"] == "b" and waited["stop"]["state"]["value"] == {"n": 2}


_T = TypeVar("_T")
Call = Callable[..., Awaitable[dict[str, Any]]]


def _over_http(server: Any, script: Callable[[Call], Awaitable[_T]]) -> _T:
    """Run ``script`` with a ``call(tool, **arguments)`` on an MCP session over the debug
    server's /mcp; each call's structured result is returned."""
    from mcp.client.streamable_http import streamable_http_client

    async def session() -> _T:
        url = f"{server.base_url}/mcp?token={server.token}"
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()

            async def call(name: str, **arguments: Any) -> dict[str, Any]:
                result = await mcp.call_tool(name, arguments)
                if result.is_error:
                    return {"error": " ".join(getattr(c, "text", "") for c in result.content)}
                assert result.structured_content is not None, (name, result.content)
                return dict(result.structured_content)

            return await script(call)

    return anyio.run(session)


def test_a_breakpoint_warning_advises_the_tools_strict_argument(server: Any) -> None:
    async def script(call: Call) -> tuple[dict[str, Any], ...]:
        loose = await call("set_breakpoint", pattern="nope")
        strict = await call("set_breakpoint", pattern="nope", strict=True)
        model = await call("set_breakpoint", pattern="gpt-*", kind=["llm"], strict=True)
        return loose, strict, model

    loose, strict, model = _over_http(server, script)
    # what the remedy advises is there: a model call's name is taken with kind llm
    assert model["breakpoint"]["kinds"] == ["llm"] and model["warnings"] == []
    (warning,) = loose["warnings"]
    assert "unknown node 'nope'" in warning
    assert "strict=True" not in warning and '"strict": true' in warning
    assert "BreakpointError: unknown node 'nope'" in strict["error"]
    # its remedy names the tool's arguments, not the Python API's keywords
    assert "kind=" not in strict["error"] and '"kind": ["tool"]' in strict["error"]


def test_the_listing_tools_page_like_the_api(server: Any, dbg: Any) -> None:
    for node in ("a", "b", "a"):
        dbg.break_before(node)
    app = dbg.attach(build_counter())
    handles = [dbg.start(app.invoke, {"n": n}) for n in range(3)]
    assert len(dbg.wait_for_stops(3, timeout=30)) == 3

    async def pages(call: Call) -> list[dict[str, Any]]:
        return [
            await call("status", limit=2),
            await call("status", offset=2, limit=2),
            await call("status"),
            await call("list_breakpoints", limit=2),
            await call("list_breakpoints", offset=2, limit=2),
        ]

    first, rest, whole, bps, bps_rest = _over_http(server, pages)
    dbg.terminate()
    for handle in handles:
        handle.exception(10)
    assert [s["stop_id"] for s in first["stops"]] == ["stop-1", "stop-2"]
    assert first["next_offset"] == 2
    assert [s["stop_id"] for s in rest["stops"]] == ["stop-3"] and rest["next_offset"] is None
    assert len(whole["stops"]) == 3 and whole["next_offset"] is None
    assert [b["pattern"] for b in bps["breakpoints"]] == ["a", "b"] and bps["next_offset"] == 2
    assert [b["pattern"] for b in bps_rest["breakpoints"]] == ["a"]
    assert bps_rest["next_offset"] is None


def test_wait_for_stop_tells_how_the_last_run_ended(server: Any) -> None:
    async def outcomes(call: Call) -> list[dict[str, Any]]:
        seen = [await call("wait_for_stop", timeout=0)]
        await call("start_run", input={"m": 1})  # node a reads n: a KeyError
        seen.append(await call("wait_for_stop", timeout=10))
        await call("start_run", input={"n": 1})
        seen.append(await call("wait_for_stop", timeout=10))
        await call("set_breakpoint", pattern="b")
        await call("start_run", input={"n": 1})
        seen.append(await call("wait_for_stop", timeout=10))
        await call("terminate")
        seen.append(await call("wait_for_stop", timeout=10))
        return seen

    nothing, failed, completed, stopped, terminated = _over_http(server, outcomes)
    assert nothing["outcome"] == "ended" and "start_run" in nothing["hint"]
    assert failed["outcome"] == "failed"
    assert failed["error"] == {"type": "KeyError", "message": "'n'"}
    assert "list_steps" in failed["hint"]
    assert completed["outcome"] == "ended" and "error" not in completed
    assert completed["run_id"] != failed["run_id"]
    assert stopped["outcome"] == "stopped"
    assert terminated["outcome"] == "terminated"
    assert terminated["run_id"] == stopped["stop"]["run_id"]


def test_a_watch_stop_tells_an_agent_what_changed(server: Any) -> None:
    async def watched(call: Call) -> list[dict[str, Any]]:
        await call("set_breakpoint", pattern="*", type="watch", path="n")
        await call("start_run", input={"n": 1})
        seen = [await call("wait_for_stop", timeout=10)]
        await call("resume", stop_id=seen[0]["stop"]["stop_id"], action="continue")
        seen.append(await call("wait_for_stop", timeout=10))
        await call("terminate")
        return seen

    after_a, after_b = _over_http(server, watched)
    for got, node, old, new in ((after_a, "a", 1, 2), (after_b, "b", 2, 4)):
        stop = got["stop"]
        assert (stop["reason"], stop["node"]) == ("watch", node)
        assert stop["watched"] == [
            {
                "breakpoint": stop["breakpoints"][0],
                "path": "n",
                "old": old,
                "new": new,
                "added": False,
                "removed": False,
            }
        ]


class _RawClient:
    """``flowdbg mcp`` in a subprocess spoken to in JSON-RPC lines, so that the test closes its
    stdin itself (the SDK's client also ends the process when it leaves)."""

    def __init__(self, tmp_path: Path, *options: str) -> None:
        (tmp_path / "refunds.py").write_text(REFUNDS, encoding="utf-8")
        self.db = tmp_path / "mcp.db"
        env = {**os.environ, "FLOWDBG_DB": str(self.db), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flowdbg.cli",
                "mcp",
                "--target",
                "refunds.py:build()",
                *options,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(tmp_path),
        )
        self._id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        self._send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # notifications (logs) may come first
            answer = json.loads(line)
            if answer.get("id") == self._id:
                assert "error" not in answer, answer
                return dict(answer["result"])
        raise AssertionError(f"flowdbg mcp ended: {self.proc.stderr.read()}")  # type: ignore[union-attr]

    def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        assert not result.get("isError"), result
        return dict(result["structuredContent"])

    def close_stdin(self) -> None:
        """Close stdin: the client disconnects."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.stdin = None  # closed: communicate() must not flush it

    def end(self, timeout: float = 60) -> tuple[int, str]:
        """Wait for the process to end (killed when it does not): its code and stderr."""
        try:
            _, err = self.proc.communicate(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.communicate(timeout=30)
        return self.proc.returncode, err


def _hold_a_refund(client: _RawClient) -> str:
    client.tool("set_breakpoint", pattern="triage", type="after")
    client.tool("set_breakpoint", pattern="auto_refund", type="before")
    client.tool("start_run", input={"amount": 900})
    waited = client.tool("wait_for_stop", timeout=30)
    assert waited["outcome"] == "stopped" and waited["stop"]["node"] == "triage"
    return str(waited["stop"]["run_id"])


def test_a_stdio_client_that_disconnects_lets_held_runs_go_after_the_grace(
    tmp_path: Path,
) -> None:
    client = _RawClient(tmp_path, "--grace", "0.2")
    try:
        run_id = _hold_a_refund(client)
        client.close_stdin()
    finally:
        code, err = client.end()
    assert code == 0, err
    assert "the MCP client disconnected with stop-1 held" in err
    assert "resuming what is held in 0.2 s (--grace)" in err
    # the stop held then, and the breakpoint the run reached after it, with no client left
    assert "released stop-1: no client connected for 0.2 s" in err
    assert "released stop-2: no client connected for 0.2 s" in err
    with flowdbg.Debugger(db=client.db) as dbg:
        assert dbg.store is not None
        run = dbg.store.get_run(run_id)
        steps = [s.node for s in dbg.store.get_steps(run.run_id)]
    assert run.status == "completed"
    assert steps == ["intake", "triage", "auto_refund"]


def test_with_keep_a_stdio_disconnect_holds_runs_until_the_process_is_stopped(
    tmp_path: Path,
) -> None:
    client = _RawClient(tmp_path, "--on-disconnect", "keep", "--grace", "0")
    try:
        run_id = _hold_a_refund(client)
        assert client.proc.stderr is not None
        client.close_stdin()
        told = next(line for line in client.proc.stderr if "disconnected" in line)
        assert "disconnected with stop-1 held; they stay held until this process is" in told
        assert client.proc.poll() is None  # still holding, past its grace of 0 s
        client.proc.send_signal(signal.SIGTERM)
    finally:
        code, err = client.end()
    assert code == 0, err
    with flowdbg.Debugger(db=client.db) as dbg:
        assert dbg.store is not None
        assert dbg.store.get_run(run_id).status == "terminated"


def test_an_agent_rewinds_a_held_run_and_reads_where_it_departs(server: Any) -> None:
    async def script(call: Call) -> tuple[dict[str, Any], dict[str, Any]]:
        await call("set_breakpoint", pattern="b")
        await call("start_run", input={"n": 1})
        held = await call("wait_for_stop", timeout=10)
        rewound = await call("rewind", stop_id=held["stop"]["stop_id"], step=0, edits={"n": 3})
        again = await call("wait_for_stop", timeout=10)
        await call("resume", stop_id=again["stop"]["stop_id"])
        ended = await call("wait_for_stop", timeout=10)
        assert ended["outcome"] == "ended", ended
        report = await call("run_divergence", run_id=again["stop"]["run_id"])
        return rewound, report

    rewound, report = _over_http(server, script)
    assert rewound["step"] == 0
    assert (report["origin"], report["from_step"]) == ("rewind", 0)
    first = report["first_divergence"]
    assert first["kind"] == "state" and first["paths"] == ["n"]
    assert (report["old"], report["new"]) == ({"value": 2}, {"value": 4})


def test_an_agent_reruns_a_recorded_run_and_reads_that_nothing_departed(server: Any) -> None:
    async def script(call: Call) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        await call("start_run", input={"n": 1})
        first = await call("wait_for_stop", timeout=10)
        assert first["outcome"] == "ended", first
        started = await call("rerun_run", run_id=first["run_id"], cached_calls="all")
        ended = await call("wait_for_stop", timeout=10)
        assert ended["outcome"] == "ended", ended
        report = await call("run_divergence", run_id=started["run_id"])
        refused = await call("rerun_run", run_id="zzzzzzzz")
        return started, report, refused

    started, report, refused = _over_http(server, script)
    assert started["run_id"]
    assert (report["origin"], report["first_divergence"]) == ("rerun", None)
    assert "no run 'zzzzzzzz'" in refused["error"]
