"""The structure of an agent: the agents it reaches, their tools and handoffs."""

from __future__ import annotations

from typing import Any

__all__ = ["describe"]


def _tool(tool: Any) -> dict[str, Any]:
    inner = getattr(tool, "_agent_instance", None)  # Agent.as_tool() keeps the agent it runs
    out: dict[str, Any] = {"name": str(getattr(tool, "name", type(tool).__name__))}
    out["type"] = "agent" if inner is not None else type(tool).__name__
    if inner is not None:
        out["agent"] = inner.name
    if getattr(tool, "needs_approval", False):
        out["needs_approval"] = True
    return out


def describe(agent: Any) -> dict[str, Any]:
    """Describe ``agent`` and every agent it reaches (handoffs, agents used as tools).

    :returns: ``{"name", "entry", "nodes", "edges", "conditional_edges", "tools", "handoffs"}``:
        each agent is a node ``{"name", "kind": "agent", "tools", "handoffs", "model"}``; a
        handoff is a conditional edge from the agent (the model chooses it); an agent used as a
        tool is an edge labelled ``as_tool``.
    """
    from flowdbg.adapters.openai_agents._adapter import reached_agents
    from flowdbg.adapters.openai_agents._runtime import _handoff_targets, _model_name

    nodes = []
    edges = []
    conditional = []
    tools: list[dict[str, Any]] = []
    handoffs: list[dict[str, Any]] = []
    for current in reached_agents(agent):
        own_tools = [_tool(t) for t in getattr(current, "tools", None) or ()]
        targets = _handoff_targets(current)
        nodes.append(
            {
                "name": current.name,
                "kind": "agent",
                "model": _model_name(current, None),
                "tools": own_tools,
                "handoffs": [name for _, name in targets],
            }
        )
        for tool in own_tools:
            if tool not in tools:
                tools.append(tool)
            if "agent" in tool:
                edges.append({"source": current.name, "target": tool["agent"], "label": "as_tool"})
        if targets:
            conditional.append(
                {
                    "source": current.name,
                    "router": "model",
                    "targets": {name: name for _, name in targets},
                }
            )
        handoffs.extend({"from": current.name, "to": name, "tool": t} for t, name in targets)
    return {
        "name": agent.name,
        "entry": [agent.name],
        "nodes": nodes,
        "edges": edges,
        "conditional_edges": conditional,
        "tools": tools,
        "handoffs": handoffs,
    }
