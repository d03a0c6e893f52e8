"""Real LangGraph graphs for the adapter tests (plain function nodes: offline, no model), and
helpers to compare what they return and stream.

Every builder compiles a fresh graph, so a test can run one copy without flowdbg and one with it.
"""

from __future__ import annotations

import operator
import re
import threading
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, Interrupt, RetryPolicy, Send, interrupt
from pydantic import BaseModel

#: seconds any test waits for a stop or a result before failing
T = 10.0

# -- states ------------------------------------------------------------------------------------


class Linear(TypedDict, total=False):
    x: int
    y: int


class Loop(TypedDict, total=False):
    count: int
    finished: bool


class Branch(TypedDict, total=False):
    x: int
    seen: bool
    sign: str


class Parallel(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    total: int


class MapReduce(TypedDict, total=False):
    items: list[str]
    results: Annotated[list[str], operator.add]


class Parent(TypedDict, total=False):
    x: int
    z: int
    done: bool


class Child(TypedDict, total=False):
    """The state of the compiled-node subgraph: shares ``x`` and ``z`` with :class:`Parent`,
    adds ``scratch`` the parent does not have."""

    x: int
    z: int
    scratch: str


class Caller(TypedDict, total=False):
    x: int
    out: str
    done: bool


class Text(TypedDict, total=False):
    """The state of the subgraph a function node invokes: nothing in common with its caller."""

    text: str
    n: int


class Routed(TypedDict, total=False):
    x: int
    side: str


class Asked(TypedDict, total=False):
    x: int
    answer: str
    done: bool


class Flaky(TypedDict, total=False):
    x: int
    ok: bool


class Model(BaseModel):
    x: int = 0
    tag: str = ""


@dataclass
class Data:
    x: int = 0
    items: list[int] = field(default_factory=list)


# -- builders ----------------------------------------------------------------------------------


def linear() -> Any:
    """a: x+1, b: x*10, c: y = x+1. ``{"x": 1}`` gives ``{"x": 20, "y": 21}``."""
    g = StateGraph(Linear)
    g.add_node("a", lambda s: {"x": s["x"] + 1})
    g.add_node("b", lambda s: {"x": s["x"] * 10})
    g.add_node("c", lambda s: {"y": s["x"] + 1})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    return g.compile(name="linear")


def loop() -> Any:
    """inc runs until count is 5, then done. ``{"count": 0}``."""
    g = StateGraph(Loop)
    g.add_node("inc", lambda s: {"count": s["count"] + 1})
    g.add_node("done", lambda s: {"finished": True})
    g.add_edge(START, "inc")
    g.add_conditional_edges("inc", lambda s: "inc" if s["count"] < 5 else "done", ["inc", "done"])
    g.add_edge("done", END)
    return g.compile(name="loop")


def branch() -> Any:
    """start, then pos or neg by the sign of x."""
    g = StateGraph(Branch)
    g.add_node("start", lambda s: {"seen": True})
    g.add_node("pos", lambda s: {"sign": "+"})
    g.add_node("neg", lambda s: {"sign": "-"})
    g.add_edge(START, "start")
    g.add_conditional_edges(
        "start",
        lambda s: "positive" if s["x"] > 0 else "negative",
        {"positive": "pos", "negative": "neg"},
    )
    g.add_edge("pos", END)
    g.add_edge("neg", END)
    return g.compile(name="branch")


def parallel(state: Any = Parallel) -> Any:
    """fan, then p1 and p2 in one superstep appending to ``items``, then join. ``state``: the
    schema (``items`` with a list-appending reducer, ``total``)."""
    g = StateGraph(state)
    g.add_node("fan", lambda s: {})
    g.add_node("p1", lambda s: {"items": ["p1"]})
    g.add_node("p2", lambda s: {"items": ["p2"]})
    g.add_node("join", lambda s: {"total": len(s["items"])})
    g.add_edge(START, "fan")
    g.add_edge("fan", "p1")
    g.add_edge("fan", "p2")
    g.add_edge(["p1", "p2"], "join")
    g.add_edge("join", END)
    return g.compile(name="parallel")


def map_reduce() -> Any:
    """fan sends one ``work`` task per item; each appends its item upper-cased."""

    def route(s: MapReduce) -> list[Send]:
        return [Send("work", {"item": item}) for item in s["items"]]

    g = StateGraph(MapReduce)
    g.add_node("fan", lambda s: {})
    g.add_node("work", lambda p: {"results": [p["item"].upper()]})
    g.add_edge(START, "fan")
    g.add_conditional_edges("fan", route, ["work"])
    g.add_edge("work", END)
    return g.compile(name="mapreduce")


def child() -> Any:
    """The subgraph with its own state (:class:`Child`): c1 then c2."""
    g = StateGraph(Child)
    g.add_node("c1", lambda s: {"x": s["x"] * 10, "scratch": f"seen {s['x']}"})
    g.add_node("c2", lambda s: {"z": s["x"] + 1})
    g.add_edge(START, "c1")
    g.add_edge("c1", "c2")
    g.add_edge("c2", END)
    return g.compile(name="child")


def nested() -> Any:
    """pre, the compiled subgraph ``sub`` (:func:`child`), post. ``{"x": 1}`` gives
    ``{"x": 20, "z": 21, "done": True}``."""
    g = StateGraph(Parent)
    g.add_node("pre", lambda s: {"x": s["x"] + 1})
    g.add_node("sub", child())
    g.add_node("post", lambda s: {"done": True})
    g.add_edge(START, "pre")
    g.add_edge("pre", "sub")
    g.add_edge("sub", "post")
    g.add_edge("post", END)
    return g.compile(name="nested")


def text_graph() -> Any:
    """The subgraph a function node invokes (:class:`Text` state): t1 then t2."""
    g = StateGraph(Text)
    g.add_node("t1", lambda s: {"text": s["text"] + "!", "n": 1})
    g.add_node("t2", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "t1")
    g.add_edge("t1", "t2")
    g.add_edge("t2", END)
    return g.compile(name="text")


def calling() -> Any:
    """pre, a function node ``call`` invoking :func:`text_graph` with a state of its own, post.
    ``{"x": 1}`` gives ``{"x": 2, "out": "xx!2", "done": True}``."""
    sub = text_graph()

    def call(s: Caller) -> Caller:
        result = sub.invoke({"text": "x" * s["x"]})
        return {"out": f"{result['text']}{result['n']}"}

    g = StateGraph(Caller)
    g.add_node("pre", lambda s: {"x": s["x"] + 1})
    g.add_node("call", call)
    g.add_node("post", lambda s: {"done": True})
    g.add_edge(START, "pre")
    g.add_edge("pre", "call")
    g.add_edge("call", "post")
    g.add_edge("post", END)
    return g.compile(name="calling")


def command() -> Any:
    """decide doubles x and goes (``Command(goto=...)``) right when x > 0, else left."""

    def decide(s: Routed) -> Command[Literal["left", "right"]]:
        return Command(goto="right" if s["x"] > 0 else "left", update={"x": s["x"] * 2})

    g = StateGraph(Routed)
    g.add_node("decide", decide)
    g.add_node("left", lambda s: {"side": "L"})
    g.add_node("right", lambda s: {"side": "R"})
    g.add_edge(START, "decide")
    g.add_edge("left", END)
    g.add_edge("right", END)
    return g.compile(name="command")


def parent_command() -> Any:
    """The subgraph node ``hop`` jumps to the parent's ``right`` with
    ``Command(graph=Command.PARENT)``."""

    def hop(s: Routed) -> Command[Any]:
        return Command(graph=Command.PARENT, goto="right", update={"x": s["x"] + 100})

    sub = StateGraph(Routed)
    sub.add_node("hop", hop)
    sub.add_edge(START, "hop")
    g = StateGraph(Routed)
    g.add_node("sub", sub.compile(name="hopper"), destinations=("left", "right"))
    g.add_node("left", lambda s: {"side": "L"})
    g.add_node("right", lambda s: {"side": "R"})
    g.add_edge(START, "sub")
    g.add_edge("left", END)
    g.add_edge("right", END)
    return g.compile(name="parent_command")


def pydantic_graph() -> Any:
    """A :class:`Model` (pydantic) state: a: x+1, b: tag = "x=<x>"."""
    g = StateGraph(Model)
    g.add_node("a", lambda s: {"x": s.x + 1})
    g.add_node("b", lambda s: {"tag": f"x={s.x}"})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile(name="pydantic")


def dataclass_graph() -> Any:
    """A :class:`Data` (dataclass) state: a: x+1, b: items = [x]."""
    g = StateGraph(Data)
    g.add_node("a", lambda s: {"x": s.x + 1})
    g.add_node("b", lambda s: {"items": [s.x]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile(name="dataclass")


def messages_graph() -> Any:
    """``MessagesState`` (``add_messages``): bot greets the last message, echo repeats it."""

    def last(s: MessagesState) -> str:
        message: BaseMessage = s["messages"][-1]
        return str(message.content)

    g = StateGraph(MessagesState)
    g.add_node("bot", lambda s: {"messages": [AIMessage(f"hi {last(s)}", id="ai-1")]})
    g.add_node("echo", lambda s: {"messages": [AIMessage(f"echo: {last(s)}", id="ai-2")]})
    g.add_edge(START, "bot")
    g.add_edge("bot", "echo")
    g.add_edge("echo", END)
    return g.compile(name="messages")


def messages_input() -> dict[str, Any]:
    return {"messages": [HumanMessage("bob", id="human-1")]}


def retry_graph(calls: list[int]) -> Any:
    """``flaky`` raises ConnectionError on every odd call (so on the first attempt of each run)
    and is retried by its RetryPolicy; ``calls`` counts its calls."""

    def flaky(s: Flaky) -> Flaky:
        calls.append(len(calls) + 1)
        if len(calls) % 2:
            raise ConnectionError(f"flaky call {len(calls)}")
        return {"ok": True}

    policy = RetryPolicy(
        max_attempts=3, initial_interval=0.01, jitter=False, retry_on=ConnectionError
    )
    g = StateGraph(Flaky)
    g.add_node("flaky", flaky, retry_policy=policy)
    g.add_node("post", lambda s: {"x": s["x"] + 1})
    g.add_edge(START, "flaky")
    g.add_edge("flaky", "post")
    g.add_edge("post", END)
    return g.compile(name="retry")


def ask(s: Asked) -> Asked:
    return {"answer": interrupt({"question": "name?", "x": s["x"]})}


def hitl(checkpointer: Any) -> Any:
    """pre, ask (calls ``interrupt()``), post."""
    g = StateGraph(Asked)
    g.add_node("pre", lambda s: {"x": s["x"] + 1})
    g.add_node("ask", ask)
    g.add_node("post", lambda s: {"done": True})
    g.add_edge(START, "pre")
    g.add_edge("pre", "ask")
    g.add_edge("ask", "post")
    g.add_edge("post", END)
    return g.compile(checkpointer=checkpointer, name="hitl")


def hitl_nested(checkpointer: Any) -> Any:
    """The interrupt happens in a subgraph node: ``sub`` (c1, ask), then post."""
    sub = StateGraph(Asked)
    sub.add_node("c1", lambda s: {"x": s["x"] + 1})
    sub.add_node("ask", ask)
    sub.add_edge(START, "c1")
    sub.add_edge("c1", "ask")
    sub.add_edge("ask", END)
    g = StateGraph(Asked)
    g.add_node("sub", sub.compile(name="asker"))
    g.add_node("post", lambda s: {"done": True})
    g.add_edge(START, "sub")
    g.add_edge("sub", "post")
    g.add_edge("post", END)
    return g.compile(checkpointer=checkpointer, name="hitl_nested")


def checkpointed(checkpointer: Any, **compile_kwargs: Any) -> Any:
    """a: x+1, then b (x*10) or small (x-1) by x, then c: y = x+1; compiled with a saver."""
    g = StateGraph(Linear)
    g.add_node("a", lambda s: {"x": s["x"] + 1})
    g.add_node("b", lambda s: {"x": s["x"] * 10})
    g.add_node("small", lambda s: {"x": s["x"] - 1})
    g.add_node("c", lambda s: {"y": s["x"] + 1})
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "b" if s["x"] < 100 else "small", ["b", "small"])
    g.add_edge("b", "c")
    g.add_edge("small", "c")
    g.add_edge("c", END)
    return g.compile(checkpointer=checkpointer, name="checkpointed", **compile_kwargs)


# -- comparing ---------------------------------------------------------------------------------

_TASK_NS = re.compile(r"^([^:|]+):[0-9a-f-]{8,}$")


def norm(value: Any) -> Any:
    """``value`` with what differs between two equal runs taken out: interrupt ids (random per
    checkpoint) and the task ids in subgraph namespaces (``"sub:<task id>"`` -> ``"sub"``)."""
    if isinstance(value, Interrupt):
        return ("Interrupt", norm(value.value))
    if isinstance(value, str):
        found = _TASK_NS.match(value)
        return found.group(1) if found else value
    if isinstance(value, tuple):
        return tuple(norm(item) for item in value)
    if isinstance(value, list):
        return [norm(item) for item in value]
    if isinstance(value, dict):
        return {key: norm(item) for key, item in value.items()}
    return value


def thread(name: str) -> dict[str, Any]:
    """A config for the checkpointer thread ``name``."""
    return {"configurable": {"thread_id": name}}


class Gate:
    """Counts items and sets an event once ``count`` of them arrived (thread-safe)."""

    def __init__(self, count: int) -> None:
        self.items: list[Any] = []
        self.count = count
        self.reached = threading.Event()
        self._lock = threading.Lock()

    def add(self, item: Any) -> None:
        with self._lock:
            self.items.append(item)
            if len(self.items) >= self.count:
                self.reached.set()


def async_map_reduce() -> Any:
    """:func:`map_reduce` with ``async def`` nodes and router (runs under ainvoke/astream)."""

    async def fan(s: MapReduce) -> MapReduce:
        return {}

    async def work(p: dict[str, str]) -> MapReduce:
        return {"results": [p["item"].upper()]}

    async def route(s: MapReduce) -> list[Send]:
        return [Send("work", {"item": item}) for item in s["items"]]

    g = StateGraph(MapReduce)
    g.add_node("fan", fan)
    g.add_node("work", work)
    g.add_edge(START, "fan")
    g.add_conditional_edges("fan", route, ["work"])
    g.add_edge("work", END)
    return g.compile(name="async_mapreduce")


def functional(*, parallel: bool = True) -> Any:
    """A functional-API workflow: ``twice`` once, then twice (in parallel, or one after the
    other: parallel calls stream their updates in the order they finish), then ``plus``
    (``{"x": 3}`` -> ``{"x": 26}``)."""
    from langgraph.func import entrypoint, task

    @task
    def twice(x: int) -> int:
        return x * 2

    @task
    def plus(a: int, b: int) -> int:
        return a + b

    @entrypoint()
    def flow(inputs: dict[str, int]) -> dict[str, int]:
        d = twice(inputs["x"]).result()
        if parallel:
            pair = [twice(d), twice(d + 1)]
            results = [f.result() for f in pair]
        else:
            results = [twice(d).result(), twice(d + 1).result()]
        return {"x": plus(*results).result()}

    return flow


def functional_hitl(checkpointer: Any) -> Any:
    """A functional-API workflow whose task asks for a name with ``interrupt()``."""
    from langgraph.func import entrypoint, task

    @task
    def ask_name(greeting: str) -> str:
        return f"{greeting}, {interrupt('name?')}"

    @entrypoint(checkpointer=checkpointer)
    def greet(inputs: dict[str, str]) -> dict[str, str]:
        return {"text": ask_name(inputs["greeting"]).result()}

    return greet
