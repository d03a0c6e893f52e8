"""Tests for the state a stop shows: paths and get/set/delete (flowdbg._paths), to_plain,
short_repr and summarize (flowdbg._values), and diff (flowdbg._diff)."""

from __future__ import annotations

import dataclasses
import types
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Any

import pydantic
import pytest

from flowdbg._diff import Change, StateDiff, diff
from flowdbg._paths import delete_path, format_path, get_path, parse_path, set_path, split_view
from flowdbg._values import KeySummary, short_repr, summarize, to_plain
from flowdbg.errors import PathError

ELLIPSIS = "\u2026"


# --- fixtures: the kinds of state a node sees ------------------------------------------------


class Message:
    """Stands in for a chat message object (attributes, not a mapping)."""

    def __init__(self, type: str, content: str) -> None:
        self.type = type
        self.content = content

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Message) and (self.type, self.content) == (
            other.type,
            other.content,
        )

    __hash__ = None  # type: ignore[assignment]


class Item(pydantic.BaseModel):
    name: str
    qty: int = 1


class Order(pydantic.BaseModel):
    id: int
    items: list[Item] = []
    notes: dict[str, str] = {}


class FrozenPoint(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True)

    x: int
    y: int


class Validated(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(validate_assignment=True)

    count: int


@dataclass
class Config:
    name: str
    tags: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Frozen:
    a: int
    inner: tuple[int, ...] = (1, 2)


Pair = namedtuple("Pair", ["left", "right"])


class BaseMessage(pydantic.BaseModel):
    """Shaped like LangChain's messages, which are pydantic models named BaseMessage."""

    content: str
    type: str
    additional_kwargs: dict[str, Any] = {}
    tool_calls: list[dict[str, Any]] = []


class AIMessage(BaseMessage):
    type: str = "ai"


# --- parse_path / format_path ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("count", ("count",)),
        ("messages[-1].content", ("messages", -1, "content")),
        ("a.b[2]", ("a", "b", 2)),
        ("['key with space']", ("key with space",)),
        ('a["x.y"]', ("a", "x.y")),
        ("a['it\\'s']", ("a", "it's")),
        ("a[ 3 ]", ("a", 3)),
        ("[0][1]", (0, 1)),
        (".count", ("count",)),
        ("", ()),
        (".", ()),
        ("  count  ", ("count",)),
    ],
)
def test_parse_path(text: str, parts: tuple[Any, ...]) -> None:
    assert parse_path(text) == parts


@pytest.mark.parametrize(
    ("parts", "text"),
    [
        ((), ""),
        (("count",), "count"),
        (("messages", -1, "content"), "messages[-1].content"),
        (("key with space",), "['key with space']"),
        (("a", "x.y"), "a['x.y']"),
        (("a", "it's", "back\\slash"), "a['it\\'s']['back\\\\slash']"),
        ((0, "a"), "[0].a"),
        (("a", "1x"), "a['1x']"),
        (("a", ""), "a['']"),
    ],
)
def test_format_path_and_round_trip(parts: tuple[Any, ...], text: str) -> None:
    assert format_path(parts) == text
    assert parse_path(text) == parts


def test_parse_path_accepts_sequences_of_parts() -> None:
    assert parse_path(["messages", -1, "content"]) == ("messages", -1, "content")
    assert parse_path(("a",)) == ("a",)
    with pytest.raises(PathError, match="must be a str or an int"):
        parse_path(("a", 1.5))
    with pytest.raises(PathError, match="must be a str or an int"):
        parse_path(("a", True))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "a[",
            "state path 'a[' is malformed at position 2: "
            "expected an index or a quoted key after '['",
        ),
        ("a..b", "state path 'a..b' is malformed at position 2: expected a name after '.'"),
        ("a.", "state path 'a.' is malformed at position 2: expected a name after '.'"),
        ("a[0", "state path 'a[0' is malformed at position 3: expected ']' after the index"),
        ("a]", "state path 'a]' is malformed at position 1: unexpected ']'"),
        ("a[0]b", "state path 'a[0]b' is malformed at position 4: expected '.' or '['"),
        ("a b", "state path 'a b' is malformed at position 1: expected '.' or '['"),
        ("a['x", 'state path "a[\'x" is malformed at position 2: the quoted key'),
        ("a[abc]", "(write ['abc'] for a key)"),
        ("a.0", "'0' is not a name; write [0] for an index or ['0'] for a key"),
        (
            "1bad",
            "state path '1bad' is malformed at position 0: '1bad' is not a name; a name is "
            "letters, digits and _ not starting with a digit (e.g. messages[0].content); write "
            "['1bad'] for a key spelled so",
        ),
        ("a.2x", "'2x' is not a name; a name is letters, digits and _ not starting with a"),
        ("..a", "malformed at position 1"),
        ("a[-]", "malformed at position 2"),
    ],
)
def test_malformed_paths_say_where(text: str, message: str) -> None:
    with pytest.raises(PathError) as info:
        parse_path(text)
    assert message in str(info.value)


@pytest.mark.parametrize("text", ["_x", "a._b", "a['_b']", "a.__class__", "__dict__"])
def test_underscore_parts_are_refused(text: str) -> None:
    with pytest.raises(PathError, match="refused"):
        parse_path(text)
    with pytest.raises(PathError, match="refused"):
        get_path({"a": {"_b": 1}, "_x": 1}, text)


def test_underscore_parts_refused_in_sequences_of_parts() -> None:
    with pytest.raises(PathError, match="refused"):
        get_path(Message("ai", "x"), ["__class__"])
    with pytest.raises(PathError, match="refused"):
        set_path({"a": 1}, ("_a",), 2)


def test_path_error_is_a_lookup_error() -> None:
    with pytest.raises(LookupError):
        get_path({}, "missing")


# --- get_path ----------------------------------------------------------------------------------


def test_get_path_dicts_lists_and_attributes() -> None:
    state = {
        "count": 3,
        "messages": [Message("human", "hi"), Message("ai", "hello")],
        "nested": {"a": [{"b": 7}]},
        "by_id": {1: "one"},
    }
    assert get_path(state, "count") == 3
    assert get_path(state, "messages[-1].content") == "hello"
    assert get_path(state, "messages[0].type") == "human"
    assert get_path(state, "nested.a[0].b") == 7
    assert get_path(state, "by_id[1]") == "one"
    assert get_path(state, "") is state
    assert get_path(state, ("messages", -2, "content")) == "hi"


def test_get_path_pydantic_dataclass_tuple_namedtuple() -> None:
    order = Order(id=1, items=[Item(name="pen", qty=2)], notes={"gift wrap": "yes"})
    assert get_path(order, "items[0].qty") == 2
    assert get_path(order, "notes['gift wrap']") == "yes"
    config = Config(name="c", tags=["x", "y"])
    assert get_path(config, "tags[-1]") == "y"
    assert get_path({"t": (1, (2, 3))}, "t[1][0]") == 2
    assert get_path({"p": Pair(1, 2)}, "p.right") == 2
    assert get_path({"p": Pair(1, 2)}, "p[0]") == 1


def test_get_path_missing_key_lists_available_keys() -> None:
    state = {"count": 1, "items": [1, 2]}
    with pytest.raises(PathError) as info:
        get_path(state, "cuont")
    assert str(info.value) == "state has no key 'cuont' at 'cuont'; available keys: count, items"


def test_get_path_index_out_of_range() -> None:
    state = {"count": 1, "items": [1, 2]}
    with pytest.raises(PathError) as info:
        get_path(state, "items[5]")
    assert str(info.value) == "index 5 out of range at 'items[5]' (length 2)"
    with pytest.raises(PathError, match=r"index -3 out of range at 'items\[-3\]'"):
        get_path(state, "items[-3]")


def test_get_path_error_names_failing_prefix_and_full_path() -> None:
    with pytest.raises(PathError) as info:
        get_path({"a": {"b": 1, "c": 2}}, "a.x.y")
    assert str(info.value) == "state has no key 'x' at 'a.x' in 'a.x.y'; available keys: b, c"


def test_get_path_missing_attribute_lists_attributes() -> None:
    with pytest.raises(PathError) as info:
        get_path({"m": Message("ai", "x")}, "m.text")
    assert "no attribute 'text' at 'm.text'" in str(info.value)
    assert "available attributes: type, content" in str(info.value)
    with pytest.raises(PathError, match="available attributes: id, items, notes"):
        get_path(Order(id=1), "itmes")


def test_get_path_wrong_kind_of_part() -> None:
    with pytest.raises(PathError, match="a list is indexed by position"):
        get_path({"items": [1]}, "items.first")
    with pytest.raises(PathError, match="cannot index a value of type Message with \\[0\\]"):
        get_path({"m": Message("ai", "x")}, "m[0]")
    with pytest.raises(PathError, match=r"the key is the string '0'"):
        get_path({"d": {"0": 1}}, "d[0]")


def test_get_path_many_keys_are_listed_with_a_count() -> None:
    state = {f"k{i}": i for i in range(40)}
    with pytest.raises(PathError, match=r"\(10 more\)"):
        get_path(state, "nope")


def test_get_path_does_not_walk_into_the_interpreter() -> None:
    def gen() -> Any:
        yield 1

    state = {"g": gen(), "mod": types, "fn": test_get_path_does_not_walk_into_the_interpreter}
    for path in ["g.gi_frame", "mod.ModuleType", "fn.func"]:
        with pytest.raises(PathError, match="refused"):
            get_path(state, path)


def test_get_path_wraps_failing_properties() -> None:
    class Broken:
        @property
        def value(self) -> int:
            raise RuntimeError("boom")

    with pytest.raises(PathError, match="reading attribute 'value' at 'value' raised RuntimeError"):
        get_path(Broken(), "value")


# --- set_path ----------------------------------------------------------------------------------


def test_set_path_in_place_on_dicts_and_lists() -> None:
    state: dict[str, Any] = {"count": 1, "items": [1, 2, 3], "nested": {"a": {}}}
    root = set_path(state, "count", 2)
    assert root is state
    assert state["count"] == 2
    assert set_path(state, "items[-1]", 30) is state
    assert state["items"] == [1, 2, 30]
    assert set_path(state, "nested.a.new_key", "v") is state
    assert state["nested"]["a"] == {"new_key": "v"}
    assert set_path(state, "added", [0]) is state
    assert state["added"] == [0]


def test_set_path_list_index_must_exist() -> None:
    state = {"items": [1, 2]}
    with pytest.raises(PathError) as info:
        set_path(state, "items[2]", 3)
    message = str(info.value)
    assert "index 2 out of range at 'items[2]' (length 2)" in message
    assert "only replaces existing elements" in message
    assert state == {"items": [1, 2]}


def test_set_path_missing_parent_fails() -> None:
    with pytest.raises(PathError, match=r"no key 'missing' at 'missing' in 'missing\.x'"):
        set_path({"a": 1}, "missing.x", 1)


def test_set_path_root_returns_the_value() -> None:
    assert set_path({"a": 1}, "", {"b": 2}) == {"b": 2}
    assert set_path({"a": 1}, ".", 5) == 5


def test_set_path_on_message_objects() -> None:
    state = {"messages": [Message("human", "hi")]}
    assert set_path(state, "messages[0].content", "edited") is state
    assert state["messages"][0].content == "edited"
    with pytest.raises(PathError, match="only changes existing attributes"):
        set_path(state, "messages[0].contnet", "typo")


def test_set_path_on_pydantic_models() -> None:
    order = Order(id=1, items=[Item(name="pen")])
    assert set_path(order, "items[0].qty", 5) is order
    assert order.items[0].qty == 5
    assert set_path(order, "notes.k", "v") is order
    assert order.notes == {"k": "v"}
    with pytest.raises(PathError, match="no field 'nope'"):
        set_path(order, "nope", 1)


class Blocks(pydantic.BaseModel):
    """A message whose text is a property over its blocks (as LlamaIndex's ChatMessage)."""

    blocks: list[str] = []

    @property
    def content(self) -> str:
        return "".join(self.blocks)

    @content.setter
    def content(self, text: str) -> None:
        if len(self.blocks) > 1:
            raise ValueError("several blocks: set blocks instead")
        self.blocks = [text]

    @property
    def size(self) -> int:
        return len(self.blocks)


def test_set_path_sets_a_pydantic_property_through_its_setter() -> None:
    message = Blocks(blocks=["hi"])
    assert set_path({"m": [message]}, "m[0].content", "hello")["m"][0] is message
    assert message.blocks == ["hello"]
    with pytest.raises(PathError, match="several blocks: set blocks instead"):
        set_path(Blocks(blocks=["a", "b"]), "content", "x")
    with pytest.raises(PathError, match="no field 'size'"):  # a property with no setter
        set_path(message, "size", 3)


def test_set_path_pydantic_validation_is_left_to_pydantic() -> None:
    model = Validated(count=1)
    set_path(model, "count", "7")
    assert model.count == 7
    with pytest.raises(pydantic.ValidationError):
        set_path(model, "count", "not a number")


def test_set_path_rebuilds_frozen_pydantic_models() -> None:
    point = FrozenPoint(x=1, y=2)
    state = {"p": point}
    root = set_path(state, "p.x", 10)
    assert root is state
    assert state["p"] == FrozenPoint(x=10, y=2)
    assert point.x == 1
    new_point = set_path(point, "y", 3)
    assert new_point == FrozenPoint(x=1, y=3)
    assert new_point is not point


def test_set_path_dataclasses_mutable_and_frozen() -> None:
    config = Config(name="a")
    assert set_path(config, "name", "b") is config
    assert config.name == "b"

    frozen = Frozen(a=1)
    rebuilt = set_path(frozen, "a", 2)
    assert rebuilt == Frozen(a=2)
    assert rebuilt is not frozen
    assert frozen.a == 1
    with pytest.raises(PathError, match="no field 'b'"):
        set_path(frozen, "b", 1)


def test_set_path_rebuilds_immutable_containers_up_to_the_root() -> None:
    frozen = Frozen(a=1, inner=(1, 2))
    rebuilt = set_path(frozen, "inner[0]", 100)
    assert rebuilt == Frozen(a=1, inner=(100, 2))
    assert frozen.inner == (1, 2)

    state = {"t": (1, (2, 3))}
    root = set_path(state, "t[1][1]", 30)
    assert root is state
    assert state["t"] == (1, (2, 30))

    assert set_path((1, 2), "[0]", 9) == (9, 2)
    assert set_path({"s": "abc"}, "s[1]", "X") == {"s": "aXc"}
    assert set_path({"p": Pair(1, 2)}, "p.left", 5)["p"] == Pair(5, 2)
    assert set_path(Pair(1, 2), "[1]", 5) == Pair(1, 5)

    proxy = types.MappingProxyType({"a": 1})
    new_proxy = set_path(proxy, "a", 2)
    assert dict(new_proxy) == {"a": 2}
    assert proxy["a"] == 1


def test_set_path_read_only_attribute() -> None:
    class ReadOnly:
        @property
        def value(self) -> int:
            return 1

    with pytest.raises(PathError, match="cannot set attribute 'value'"):
        set_path(ReadOnly(), "value", 2)


# --- delete_path -------------------------------------------------------------------------------


def test_delete_path_keys_and_list_elements() -> None:
    state: dict[str, Any] = {"a": {"b": 1, "c": 2}, "items": [1, 2, 3]}
    assert delete_path(state, "a.b") is state
    assert state["a"] == {"c": 2}
    assert delete_path(state, "items[-1]") is state
    assert state["items"] == [1, 2]
    assert delete_path(state, "items[0]") is state
    assert state["items"] == [2]


def test_delete_path_missing_key_and_index() -> None:
    state = {"a": {"b": 1}, "items": [1]}
    with pytest.raises(PathError) as info:
        delete_path(state, "a.x")
    assert str(info.value) == "state has no key 'x' at 'a.x'; available keys: b"
    with pytest.raises(PathError, match="index 3 out of range"):
        delete_path(state, "items[3]")
    with pytest.raises(PathError, match="cannot delete the root"):
        delete_path(state, "")


def test_delete_path_rebuilds_tuples_and_refuses_attributes() -> None:
    state = {"t": (1, 2, 3)}
    assert delete_path(state, "t[1]") is state
    assert state["t"] == (1, 3)
    frozen = Frozen(a=1, inner=(1, 2))
    assert delete_path(frozen, "inner[0]") == Frozen(a=1, inner=(2,))
    with pytest.raises(PathError, match="only mapping keys and sequence elements"):
        delete_path(Config(name="x"), "name")


def test_delete_path_on_pydantic_field_dict() -> None:
    order = Order(id=1, notes={"a": "1", "b": "2"})
    assert delete_path(order, "notes.a") is order
    assert order.notes == {"b": "2"}


# --- to_plain ----------------------------------------------------------------------------------


def test_to_plain_structures() -> None:
    state = {
        "order": Order(id=1, items=[Item(name="pen")]),
        "config": Config(name="c", tags=["t"]),
        "tuple": (1, 2),
        "set": {3, 1, 2},
        "mixed_set": {1, "a"},
        "msg": Message("ai", "hello"),
        "bytes": b"ab",
        7: "int key",
    }
    plain = to_plain(state)
    assert plain["order"] == {"id": 1, "items": [{"name": "pen", "qty": 1}], "notes": {}}
    assert plain["config"] == {"name": "c", "tags": ["t"]}
    assert plain["tuple"] == [1, 2]
    assert plain["set"] == [1, 2, 3]
    assert sorted(plain["mixed_set"], key=str) == [1, "a"]
    assert plain["msg"] == {"type": "ai", "content": "hello"}
    assert plain["bytes"] == "b'ab'"
    assert plain[7] == "int key"


def test_pydantic_chat_messages() -> None:
    state = {"messages": [AIMessage(content="hi")]}
    assert to_plain(state) == {"messages": [{"type": "ai", "content": "hi"}]}
    with_tools = AIMessage(content="", tool_calls=[{"name": "search"}])
    assert to_plain(with_tools) == {"type": "ai", "content": "", "tool_calls": [{"name": "search"}]}
    assert get_path(state, "messages[-1].content") == "hi"
    assert set_path(state, "messages[-1].content", "edited") is state
    assert state["messages"][-1].content == "edited"
    before = {"messages": [AIMessage(content="a")]}
    after = {"messages": [AIMessage(content="b")]}
    assert diff(before, after).changed == {"messages[0].content": ("a", "b")}


def test_to_plain_other_objects_become_their_repr() -> None:
    class Thing:
        def __repr__(self) -> str:
            return "<thing>"

    assert to_plain({"t": Thing()}) == {"t": "<thing>"}


def test_to_plain_depth_and_cycles() -> None:
    deep: Any = []
    node = deep
    for _ in range(10):
        node.append([])
        node = node[0]
    plain = to_plain(deep, max_depth=3)
    assert isinstance(plain[0][0][0], str)

    loop: list[Any] = [1]
    loop.append(loop)
    assert to_plain(loop) == [1, "<cycle: list>"]


def test_to_plain_does_not_change_the_value() -> None:
    order = Order(id=1)
    to_plain(order)
    assert isinstance(order, Order)


# --- short_repr --------------------------------------------------------------------------------


def test_short_repr_small_values_are_plain_reprs() -> None:
    assert short_repr(21) == "21"
    assert short_repr("x") == "'x'"
    assert short_repr({"a": [1, 2]}) == "{'a': [1, 2]}"
    assert short_repr((1,)) == "(1,)"
    assert short_repr(set()) == "set()"
    assert short_repr(Item(name="pen")) == "Item(name='pen', qty=1)"
    assert short_repr(Config(name="c")) == "Config(name='c', tags=[])"


def test_short_repr_huge_string_is_cheap_and_short() -> None:
    text = short_repr("a" * 10_000_000)
    assert len(text) <= 80
    assert text.startswith("'aaaa")
    assert text.endswith(f"{ELLIPSIS}' (10,000,000 chars)")


def test_short_repr_huge_list_is_cheap_and_short() -> None:
    text = short_repr(list(range(1_000_000)))
    assert len(text) <= 80
    assert text.startswith("[0, 1, 2, 3, ")
    assert text.endswith(f", {ELLIPSIS}] (1,000,000 items)")


def test_short_repr_nested_and_limits() -> None:
    value = {"a": "x" * 1000, "b": [1, 2, 3]}
    text = short_repr(value, 40)
    assert len(text) <= 40
    assert text.endswith(f"{ELLIPSIS}', {ELLIPSIS}}} (2 items)")
    assert len(short_repr([["a" * 100] * 3] * 3, 20)) <= 20
    assert len(short_repr("\x00" * 1000)) <= 80


def test_short_repr_never_raises() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise ValueError("no")

    assert short_repr(Broken()) == "<unreprable Broken>"
    assert short_repr([Broken()]) == "[<unreprable Broken>]"
    huge_int = 10**100_000
    assert "bits" in short_repr(huge_int)


def test_short_repr_long_object_repr_is_clipped() -> None:
    class Long:
        def __repr__(self) -> str:
            return "L" * 500

    text = short_repr(Long())
    assert len(text) <= 80
    assert text.endswith(ELLIPSIS)


def test_short_repr_cycles() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert short_repr(loop) == "[1, <cycle: list>]"


# --- short_repr of stored typed objects -------------------------------------------------------

SEND = "langgraph.types.Send"
COMMAND = "langgraph.types.Command"


@dataclass
class Send:
    """The live counterpart of a stored ``Send``, to compare renderings with."""

    node: str
    arg: Any


@dataclass
class Command:
    graph: Any
    update: Any
    resume: Any
    goto: Any


def stored_send(node: str, arg: Any) -> dict[str, Any]:
    return {"__type__": SEND, "node": node, "arg": arg}


def stored_command(goto: Any) -> dict[str, Any]:
    return {"__type__": COMMAND, "graph": None, "update": {"phase": "go"}, "resume": None,
            "goto": goto}  # fmt: skip


def test_short_repr_shows_a_typed_object_as_its_class_and_fields() -> None:
    assert short_repr(stored_send("work", {"item": "a"})) == "Send(node='work', arg={'item': 'a'})"
    assert short_repr({"__type__": "pkg.mod.Outer.Empty"}) == "Empty()"
    assert short_repr([stored_send("a", 1), stored_send("b", [2])]) == (
        "[Send(node='a', arg=1), Send(node='b', arg=[2])]"
    )


@pytest.mark.parametrize("limit", [10, 20, 30, 40, 60, 80, 120, 200])
def test_short_repr_cuts_a_typed_object_as_it_cuts_the_live_object(limit: int) -> None:
    stored = stored_command([stored_send("work", {"item": "a" * 50}), stored_send("check", {})])
    live = Command(
        None, {"phase": "go"}, None, [Send("work", {"item": "a" * 50}), Send("check", {})]
    )
    assert short_repr(stored, limit) == short_repr(live, limit)
    if limit == 200:
        assert short_repr(stored, limit) == (
            f"Command(graph=None, update={{'phase': 'go'}}, resume=None, goto=[Send(node='work', "
            f"arg={{'item': '{'a' * 50}'}}), Send(node='check', arg={{}})])"
        )


def test_short_repr_of_a_huge_typed_object_is_cheap_and_has_no_item_count() -> None:
    text = short_repr(stored_send("work", list(range(1_000_000))), 40)
    assert text == short_repr(Send("work", list(range(1_000_000))), 40)
    assert text.startswith("Send(node='work', arg=[0, 1, ")
    assert text.endswith(f"{ELLIPSIS}])")
    assert len(text) <= 40


@pytest.mark.parametrize(
    "value",
    [
        {"__repr__": "<Handle fd=3>", "__type__": "app.Handle"},  # an opaque value
        {"__type__": 3, "node": "work"},
        {"__type__": "app.not a name", "node": "work"},
        {"type": SEND, "node": "work"},
    ],
    ids=["opaque", "type-not-text", "type-not-a-class-name", "no-type-key"],
)
def test_short_repr_shows_other_dicts_as_dicts(value: dict[str, Any]) -> None:
    assert short_repr(value) == repr(value)


def test_typed_objects_in_summaries_and_diffs() -> None:
    before = {"out": stored_send("work", 1)}
    after = {"out": stored_send("work", stored_command("end"))}
    (row,) = summarize(before)
    assert row.preview == "Send(node='work', arg=1)"
    assert str(diff(before, after)) == (
        "~ out.arg: 1 -> Command(graph=None, update={'phase': 'go'}, resume=None, goto='end')"
    )


# --- summarize ---------------------------------------------------------------------------------


def test_summarize_dict() -> None:
    rows = summarize({"count": 3, "items": [1, 2, 3], "name": "x" * 500})
    assert rows[0] == KeySummary(key="count", type="int", size=None, preview="3")
    assert rows[1] == KeySummary(key="items", type="list", size=3, preview="[1, 2, 3]")
    assert rows[2].key == "name"
    assert rows[2].type == "str"
    assert rows[2].size == 500
    assert len(rows[2].preview) <= 60
    assert "(500 chars)" in rows[2].preview


def test_summarize_pydantic_model_and_dataclass() -> None:
    rows = summarize(Order(id=4, items=[Item(name="a"), Item(name="b")]), preview_chars=30)
    assert [(r.key, r.type, r.size) for r in rows] == [
        ("id", "int", None),
        ("items", "list", 2),
        ("notes", "dict", 0),
    ]
    assert all(len(r.preview) <= 30 for r in rows)
    assert [r.key for r in summarize(Config(name="c"))] == ["name", "tags"]


def test_summarize_non_mapping_state_is_one_root_row() -> None:
    rows = summarize([1, 2])
    assert rows == [KeySummary(key=".", type="list", size=2, preview="[1, 2]")]


# --- diff ----------------------------------------------------------------------------------------


def test_diff_nested_added_removed_changed() -> None:
    result = diff({"a": {"b": 1, "c": 2}, "tmp": "x"}, {"a": {"b": 1, "c": 3, "d": 4}, "y": 21})
    assert result.changed == {"a.c": (2, 3)}
    assert result.added == {"a.d": 4, "y": 21}
    assert result.removed == {"tmp": "x"}
    assert result.paths == ["a.c", "a.d", "tmp", "y"]
    assert bool(result)


def test_diff_spec_example() -> None:
    result = diff({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3, "d": 4}})
    assert result.changes() == [
        Change("a.c", "changed", 2, 3),
        Change("a.d", "added", None, 4),
    ]


def test_diff_no_change_is_falsy() -> None:
    state = {"a": [1, {"b": 2}], "m": Order(id=1)}
    twin = {"a": [1, {"b": 2}], "m": Order(id=1)}
    assert not diff(state, twin)
    assert not diff(state, state)
    assert str(diff(state, twin)) == "(no changes)"
    assert diff(state, twin).paths == []


def test_diff_growing_message_list_reports_appended_elements() -> None:
    before: dict[str, Any] = {"messages": [Message("human", "hi")], "step": 1}
    after: dict[str, Any] = {
        "messages": [Message("human", "hi"), Message("ai", "hello"), Message("human", "thanks")],
        "step": 1,
    }
    result = diff(before, after)
    assert list(result.added) == ["messages[1]", "messages[2]"]
    assert result.added["messages[1]"] is after["messages"][1]
    assert not result.changed
    assert not result.removed


def test_diff_list_orders_paths_naturally() -> None:
    result = diff({"m": [0]}, {"m": list(range(12))})
    assert result.paths[:3] == ["m[1]", "m[2]", "m[3]"]
    assert result.paths[-1] == "m[11]"


def test_diff_lists_per_index_and_whole() -> None:
    same_length = diff({"l": [1, {"x": 1}, 3]}, {"l": [1, {"x": 2}, 4]})
    assert same_length.changed == {"l[1].x": (1, 2), "l[2]": (3, 4)}

    reordered = diff({"l": [1, 2, 3]}, {"l": [3, 1]})
    assert reordered.changed == {"l": ([1, 2, 3], [3, 1])}

    grown_but_changed = diff({"l": [1, 2]}, {"l": [9, 2, 3]})
    assert grown_but_changed.changed == {"l": ([1, 2], [9, 2, 3])}


def test_diff_list_cut_short_reports_removed_tail() -> None:
    result = diff({"l": [1, 2, 3]}, {"l": [1]})
    assert result.removed == {"l[1]": 2, "l[2]": 3}
    assert not result.added
    assert not result.changed


def test_diff_pydantic_models() -> None:
    before = Order(id=1, items=[Item(name="pen")], notes={"a": "1"})
    after = Order(id=1, items=[Item(name="pen", qty=3)], notes={"b": "2"})
    result = diff(before, after)
    assert result.changed == {"items[0].qty": (1, 3)}
    assert result.added == {"notes.b": "2"}
    assert result.removed == {"notes.a": "1"}


def test_diff_dataclasses_and_type_changes() -> None:
    assert diff(Config(name="a"), Config(name="b")).changed == {"name": ("a", "b")}
    changed_type = diff({"v": [1, 2]}, {"v": (1, 2)})
    assert changed_type.changed == {"v": ([1, 2], (1, 2))}
    model_vs_dict = diff({"m": Item(name="a")}, {"m": {"name": "a", "qty": 1}})
    assert list(model_vs_dict.changed) == ["m"]


def test_diff_root_change_and_odd_keys() -> None:
    assert diff(1, 2).changed == {"": (1, 2)}
    assert str(diff(1, 2)) == "~ <root>: 1 -> 2"
    result = diff({"key with space": 1, 3: "a"}, {"key with space": 2, 3: "b"})
    assert result.changed == {"['key with space']": (1, 2), "[3]": ("a", "b")}
    assert get_path({"key with space": 1}, "['key with space']") == 1


def test_diff_values_that_cannot_be_compared() -> None:
    class Uncomparable:
        def __eq__(self, other: object) -> bool:
            raise TypeError("no comparing")

        __hash__ = object.__hash__

    thing = Uncomparable()
    assert not diff({"x": thing}, {"x": thing})
    other = Uncomparable()
    result = diff({"x": thing}, {"x": other})
    assert result.changed == {"x": (thing, other)}


def test_state_diff_str_and_to_dict() -> None:
    result = diff(
        {"x": 2, "tmp": "x", "big": "a"},
        {"x": 20, "y": 21, "big": "b" * 1000, "order": Item(name="n")},
    )
    lines = str(result).splitlines()
    assert "~ x: 2 -> 20" in lines
    assert "+ y = 21" in lines
    assert "- tmp = 'x'" in lines
    big_line = next(line for line in lines if line.startswith("~ big"))
    assert len(big_line) < 120
    assert result.to_dict() == {
        "added": {"order": {"name": "n", "qty": 1}, "y": 21},
        "removed": {"tmp": "x"},
        "changed": {"big": {"old": "a", "new": "b" * 1000}, "x": {"old": 2, "new": 20}},
    }


def test_state_diff_empty_and_manual_construction() -> None:
    empty = StateDiff()
    assert not empty
    assert empty.to_dict() == {"added": {}, "removed": {}, "changed": {}}
    manual = StateDiff(changed={"a": (1, 2)})
    assert manual
    assert manual.changes() == [Change("a", "changed", 1, 2)]


def test_change_is_frozen() -> None:
    change = Change("a", "added", None, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        change.path = "b"  # type: ignore[misc,unused-ignore]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("state:messages[-1].content", ("state", "messages[-1].content")),
        (" output : x ", ("output", "x")),
        ("input:", ("input", "")),
        ("count", (None, "count")),
        ("['a:b']", (None, "['a:b']")),
        ("config['a:b'].c", (None, "config['a:b'].c")),
        ("state:['a:b']", ("state", "['a:b']")),
    ],
)
def test_split_view_takes_only_a_leading_name(text: str, expected: tuple[Any, str]) -> None:
    assert split_view(text) == expected


def test_a_key_with_a_colon_is_reached_in_brackets() -> None:
    state = {"a:b": 1, "config": {"a:b": 2}}
    view, path = split_view("['a:b']")
    assert view is None and get_path(state, path) == 1
    assert get_path(state, split_view("config['a:b']")[1]) == 2
    assert set_path(state, split_view("['a:b']")[1], 5)["a:b"] == 5


def test_summarize_shows_no_size_of_a_secret() -> None:
    rows = summarize({"api_key": "sk-" + "x" * 40, "password": "[REDACTED]", "n": "abc"})
    assert [(r.key, r.size, r.preview) for r in rows] == [
        ("api_key", None, "'[REDACTED]'"),  # its length would tell something of it
        ("password", None, "'[REDACTED]'"),  # as recorded: the same, not 10
        ("n", 3, "'abc'"),
    ]
