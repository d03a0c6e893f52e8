"""The structure of a LlamaIndex workflow, from its steps' signatures, in the shape every flowdbg
adapter describes."""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["describe"]

_START = "__start__"
_END = "__end__"


def _types(kinds: Any) -> list[type]:
    return [kind for kind in kinds or () if isinstance(kind, type)]


def describe(workflow: Any) -> dict[str, Any]:
    """Describe a workflow as JSON-compatible data.

    Each step is a node; an edge runs from a step to every step accepting an event type it
    declares it returns (``-> A | B``), from ``__start__`` to the steps accepting the start event
    and to ``__end__`` from the steps returning a stop event. Edges a step makes with
    ``ctx.send_event`` are not in its signature and so not drawn. Every edge is conditional
    unless the step returns a single event type: the step's own code picks the event.

    :returns: ``{"name", "entry", "nodes", "edges", "conditional_edges", "reducers"}``; each
        node is ``{"name", "subgraph", "retry", "accepts", "returns", "workers"}``. For a
        llama-index-core agent (or ``AgentWorkflow``) also ``tools`` (the tools it can call,
        unless a tool retriever picks them) and, on ``run_agent_step``, ``model`` (the name
        its model calls take; a list for several agents' models), and on ``call_tool`` the
        same ``tools`` (drawn beside the step that calls them); for another workflow that
        holds llama-index-core tools, ``tools`` (those its steps may call), and for one that
        holds models, ``models`` (the names their calls take).
    """
    from flowdbg.adapters.llamaindex._adapter import _children, workflow_name

    with warnings.catch_warnings():
        # LlamaIndex lists steps with inspect.getmembers, which reads a pydantic agent's
        # deprecated attributes (__fields__...): its warnings are not the user's concern
        warnings.simplefilter("ignore", DeprecationWarning)
        steps = workflow._get_steps()
    children = {id(child): child for child in _children(workflow)}
    nodes, entry, edges, conditional = _structure(steps)
    # A nested workflow held in an attribute is drawn inside the step whose code names that
    # attribute (self.sub.run(...)); one no step names makes the description open: its units'
    # names cannot all be listed.
    open_ = False
    for key, child in vars(workflow).items():
        if id(child) not in children:
            continue
        runner = next((n for n in steps if key in _names_in(steps[n])), None)
        if runner is None:
            open_ = True
            continue
        for node in nodes:
            if node["name"] == runner and node["subgraph"] is None:
                node["subgraph"] = describe(child)
                break
    # A workflow class a step's code names (built and run inside the step) is drawn there too,
    # from its class: its steps' names.
    for node in nodes:
        if node["subgraph"] is None:
            built = _workflow_classes(steps[node["name"]])
            if built:  # with its steps' edges, as an instance's (the signatures are the class's)
                node["subgraph"] = _describe_class(built[0])
    described: dict[str, Any] = {
        "name": workflow_name(workflow),
        "entry": entry,
        "nodes": nodes,
        "edges": edges,
        "conditional_edges": conditional,
        "reducers": [],
    }
    if open_:
        described["open"] = True
    agents = _agents(workflow)
    if agents is not None:
        tools, models = _calls(agents, handoffs=len(agents) > 1)
        if tools is not None:  # the tool calls its call_tool step makes
            described["tools"] = [{"name": name} for name in tools]
        for node in nodes:
            if node["name"] == "run_agent_step" and models:  # the step asking the model
                node["model"] = models[0] if len(models) == 1 else models
            if node["name"] == "call_tool" and tools:  # the step whose units the calls are
                node["tools"] = list(described["tools"])
    else:
        from flowdbg.adapters.llamaindex._tools import tool_name, tools_of

        held = list(dict.fromkeys(tool_name(tool) for tool in tools_of(workflow)))
        if held:  # the tools its steps call themselves (await tool.acall: _tools.py)
            described["tools"] = [{"name": name} for name in held]
        from flowdbg.adapters.llamaindex._llm import label, llms_of

        models = list(dict.fromkeys(label(llm) for llm in llms_of(workflow)))
        if models:  # the models its steps ask themselves (_llm.py), named as their calls are
            described["models"] = models
    return described


def _structure(
    steps: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]], list[dict[str, Any]]]:
    """The nodes, entry steps, edges and conditional edges of a workflow's ``steps`` (name ->
    step function), from the event types their signatures accept and return."""
    from workflows.events import StartEvent, StopEvent

    configs = {name: getattr(func, "_step_config", None) for name, func in steps.items()}
    accepts = {name: _types(getattr(c, "accepted_events", ())) for name, c in configs.items()}
    returns = {name: _types(getattr(c, "return_types", ())) for name, c in configs.items()}

    def receivers(kind: type) -> list[str]:
        return [name for name, kinds in accepts.items() if any(issubclass(kind, k) for k in kinds)]

    nodes = []
    for name in steps:
        config = configs[name]
        policy = getattr(config, "retry_policy", None)
        retries = getattr(policy, "maximum_attempts", None) or getattr(policy, "max_attempts", None)
        nodes.append(
            {
                "name": name,
                "subgraph": None,
                "retry": int(retries) - 1 if isinstance(retries, int) and retries > 1 else 0,
                "accepts": [kind.__name__ for kind in accepts[name]],
                "returns": [kind.__name__ for kind in returns[name]],
                "workers": getattr(config, "num_workers", 1),
            }
        )
    entry = sorted(
        {n for n, kinds in accepts.items() if any(issubclass(k, StartEvent) for k in kinds)}
    )
    edges: list[dict[str, Any]] = [{"source": _START, "target": name} for name in entry]
    conditional: list[dict[str, Any]] = []
    for name in steps:
        targets: list[str] = []
        for kind in returns[name]:
            if issubclass(kind, StopEvent):
                targets.append(_END)
            else:
                targets += [t for t in receivers(kind) if t not in targets]
        if len(returns[name]) <= 1 and len(targets) <= 1:
            edges += [{"source": name, "target": target} for target in targets]
        elif targets:
            conditional.append({"source": name, "targets": targets})
    return nodes, entry, edges, conditional


def _agents(workflow: Any) -> list[Any] | None:
    """The llama-index-core agents ``workflow`` runs (itself, or an ``AgentWorkflow``'s), or
    ``None`` for a workflow of another kind."""
    import sys

    module = sys.modules.get("llama_index.core.agent.workflow")
    if module is None:  # no agent exists where llama-index-core was never imported
        return None
    if isinstance(workflow, module.AgentWorkflow):
        return list(workflow.agents.values())
    if isinstance(workflow, module.BaseWorkflowAgent):
        return [workflow]
    return None


def _calls(agents: list[Any], *, handoffs: bool) -> tuple[list[str] | None, list[str]]:
    """The tool names the agents can call (``None`` when a tool retriever picks them as they
    run) and the names their model calls take (see ``_llm.label``)."""
    from flowdbg.adapters.llamaindex._llm import label

    tools: list[str] | None = []
    models: list[str] = []
    for agent in agents:
        llm = getattr(agent, "llm", None)
        if llm is not None and label(llm) not in models:
            models.append(label(llm))
        if getattr(agent, "tool_retriever", None) is not None:
            tools = None
        if tools is None:
            continue
        for tool in getattr(agent, "tools", None) or ():
            metadata = getattr(tool, "metadata", None)
            name = getattr(metadata, "name", None) or getattr(tool, "__name__", None)
            if isinstance(name, str) and name not in tools:
                tools.append(name)
    if tools is not None and handoffs:
        tools.append("handoff")  # AgentWorkflow's own tool for handing over to another agent
    return tools, models


def _names_in(func: Any) -> tuple[str, ...]:
    """The attribute and global names a step's code refers to."""
    code = getattr(getattr(func, "__func__", func), "__code__", None)
    return tuple(code.co_names) if code is not None else ()


def _workflow_classes(func: Any) -> list[type]:
    """The Workflow subclasses a step's code names (globals and closure)."""
    from workflows import Workflow

    func = getattr(func, "__func__", func)
    code = getattr(func, "__code__", None)
    if code is None:
        return []
    scope = dict(getattr(func, "__globals__", None) or {})
    for name, cell in zip(code.co_freevars, getattr(func, "__closure__", None) or (), strict=False):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    found = []
    for name in (*code.co_names, *code.co_freevars):
        value = scope.get(name)
        if isinstance(value, type) and issubclass(value, Workflow) and value not in found:
            found.append(value)
    return found


def _describe_class(cls: type) -> dict[str, Any]:
    """What can be told of a workflow class without an instance: its steps."""
    listing = getattr(cls, "_get_steps_from_class", None)
    steps = dict(listing()) if callable(listing) else {}
    if not steps:
        return {"name": cls.__name__, "entry": [], "nodes": [], "edges": [], "open": True}
    # the same structure as an instance's: the steps' signatures are the class's
    nodes, entry, edges, conditional = _structure(steps)
    return {
        "name": cls.__name__,
        "entry": entry,
        "nodes": nodes,
        "edges": edges,
        "conditional_edges": conditional,
        "reducers": [],
    }
