"""Values as the store keeps them: plain JSON, redacted, and packed into shared blobs."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import pathlib
import random
import uuid
from collections import OrderedDict, deque, namedtuple
from typing import Any

import pydantic
import pytest
from store_helpers import run, run_id, step

from flowdbg.store import DEFAULT_REDACT, REDACTED, SQLiteStore, encode_value, register_structural
from flowdbg.store import _encode as encode_module
from flowdbg.store._encode import (
    FANOUT,
    INLINE_MAX,
    Encoder,
    Packer,
    build,
    child_keys,
    compress,
    flat_column,
    parse_blob,
)


class Color(enum.Enum):
    RED = "red"
    BLUE = 2


class Level(enum.IntEnum):
    LOW = 1


@dataclasses.dataclass
class Point:
    x: int
    y: int
    label: Color = Color.RED


class Message(pydantic.BaseModel):
    role: str
    content: str
    sent: datetime.datetime
    meta: dict[str, Any] = {}


class Handle:
    """An object no serializer knows."""

    def __repr__(self) -> str:
        return "<Handle fd=3>"


class HoldsHandle(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
    name: str
    handle: Handle


Pair = namedtuple("Pair", "left right")


def test_plain_values_come_back_unchanged() -> None:
    value = {"s": "text", "i": 3, "f": 1.5, "b": True, "n": None, "l": [1, [2, {"x": "y"}]]}
    assert encode_value(value) == (value, False)


@pytest.mark.parametrize(
    "value, expected",
    [
        ((1, (2, 3)), [1, [2, 3]]),
        (Pair(1, 2), [1, 2]),
        ({3, 1, 2}, [1, 2, 3]),
        (frozenset({"b", "a"}), ["a", "b"]),
        (b"\x00\xffhi", {"__bytes__": "AP9oaQ=="}),
        (bytearray(b"hi"), {"__bytes__": "aGk="}),
        (
            datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone.utc),
            "2024-05-01T12:30:00+00:00",
        ),
        (datetime.date(2024, 5, 1), "2024-05-01"),
        (datetime.time(7, 5), "07:05:00"),
        (datetime.timedelta(minutes=2), 120.0),
        (Color.RED, "red"),
        (Color.BLUE, 2),
        (Level.LOW, 1),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        (decimal.Decimal("1.10"), "1.10"),
        (pathlib.PurePosixPath("/tmp/x"), "/tmp/x"),
        (Point(1, 2), {"x": 1, "y": 2, "label": "red"}),
        (OrderedDict([("b", 1), ("a", 2)]), {"b": 1, "a": 2}),
        (deque([1, 2]), [1, 2]),
        (
            {7: "seven", None: "none", True: "yes", 2.5: "x"},
            {"7": "seven", "null": "none", "true": "yes", "2.5": "x"},
        ),
    ],
)
def test_values_of_every_kind_become_json(value: Any, expected: Any) -> None:
    plain, partial = encode_value(value)
    assert plain == expected
    assert not partial
    assert json.loads(json.dumps(plain)) == expected


def test_pydantic_models_are_dumped_in_json_mode() -> None:
    sent = datetime.datetime(2024, 1, 2, 3, 4, 5)
    message = Message(role="user", content="hi", sent=sent, meta={"tags": {"a"}})
    plain, partial = encode_value([message])
    assert plain == [
        {"role": "user", "content": "hi", "sent": "2024-01-02T03:04:05", "meta": {"tags": ["a"]}}
    ]
    assert not partial


def test_sets_that_do_not_sort_are_stored_in_a_stable_order() -> None:
    first, _ = encode_value({1, "a", (2, 3)})
    second, _ = encode_value({(2, 3), "a", 1})
    assert first == second
    assert sorted(map(json.dumps, first)) == sorted(map(json.dumps, [1, "a", [2, 3]]))


def test_unknown_objects_are_stored_as_a_typed_repr_and_flag_the_value_partial() -> None:
    plain, partial = encode_value({"ok": 1, "h": Handle(), "gen": (i for i in range(3))})
    assert partial
    assert plain["ok"] == 1
    assert plain["h"] == {"__repr__": "<Handle fd=3>", "__type__": f"{__name__}.Handle"}
    assert plain["gen"]["__type__"] == "builtins.generator"


def test_a_model_with_an_unserializable_field_keeps_its_other_fields() -> None:
    plain, partial = encode_value(HoldsHandle(name="db", handle=Handle()))
    assert partial
    assert plain == {
        "name": "db",
        "handle": {"__repr__": "<Handle fd=3>", "__type__": f"{__name__}.Handle"},
    }


def test_a_repr_that_raises_does_not_raise() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    plain, partial = encode_value(Broken())
    assert partial
    assert "repr raised RuntimeError" in plain["__repr__"]


def test_cycles_and_very_deep_values_are_cut_not_fatal() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    plain, partial = encode_value({"loop": loop})
    assert partial and plain["loop"][0] == 1
    assert plain["loop"][1]["__type__"] == "builtins.list"
    deep: list[Any] = []
    cursor = deep
    for _ in range(5000):
        cursor.append([])
        cursor = cursor[0]
    plain, partial = encode_value(deep)
    assert partial
    json.dumps(plain)  # still plain JSON, and not too deep for json


def test_large_values_are_kept_whole() -> None:
    text = "x" * 2_000_000
    plain, partial = encode_value({"doc": text})
    assert plain["doc"] == text and not partial


# -- redaction ------------------------------------------------------------------------------


def test_secret_keys_are_redacted_at_any_depth() -> None:
    value = {
        "user": "ana",
        "api_key": "sk-1",
        "config": {"OpenAI-API-Key": "sk-2", "nested": [{"password": "hunter2"}]},
        "headers": {"Authorization": "Bearer x", "Cookie": "s=1", "accept": "json"},
        "auth": {"access_token": "t", "refresh_token": "r", "client_secret": "c"},
        "aws": {"aws_access_key_id": "AK", "private_key": "PK", "credentials": {"u": 1}},
        "passwd": "p",
    }
    plain, partial = encode_value(value)
    assert not partial
    assert plain == {
        "user": "ana",
        "api_key": REDACTED,
        "config": {"OpenAI-API-Key": REDACTED, "nested": [{"password": REDACTED}]},
        "headers": {"Authorization": REDACTED, "Cookie": REDACTED, "accept": "json"},
        "auth": {"access_token": REDACTED, "refresh_token": REDACTED, "client_secret": REDACTED},
        "aws": {"aws_access_key_id": REDACTED, "private_key": REDACTED, "credentials": REDACTED},
        "passwd": REDACTED,
    }


def test_redaction_reaches_into_models_and_dataclasses() -> None:
    @dataclasses.dataclass
    class Settings:
        endpoint: str
        api_key: str

    class Client(pydantic.BaseModel):
        settings: dict[str, Any]
        token: str

    plain, _ = encode_value(
        [Settings("https://x", "sk"), Client(settings={"secret": 1}, token="t")]
    )
    assert plain == [
        {"endpoint": "https://x", "api_key": REDACTED},
        {"settings": {"secret": REDACTED}, "token": REDACTED},
    ]


def test_token_counts_and_absent_secrets_are_kept() -> None:
    usage = {"max_tokens": 100, "total_tokens": 42, "input_tokens": 3, "token_count": 5}
    plain, _ = encode_value({"usage": usage, "api_key": None, "tokenizer": "bpe"})
    assert plain == {"usage": usage, "api_key": None, "tokenizer": "bpe"}


def test_redaction_patterns_can_be_chosen_or_turned_off() -> None:
    value = {"api_key": "sk", "ssn": "123", "a.b": 1}
    assert encode_value(value, redact=())[0] == value
    assert encode_value(value, redact=None)[0] == value
    # regular expressions, case-insensitive; a pattern that is not one is a plain substring
    plain, _ = encode_value(value, redact=["^SSN$", "a.b", "(unclosed"])
    assert plain == {"api_key": "sk", "ssn": REDACTED, "a.b": REDACTED}
    assert encode_value({"x(unclosed": 1}, redact=["(unclosed"])[0] == {"x(unclosed": REDACTED}
    assert "credential" in DEFAULT_REDACT


def test_encoding_never_changes_the_value() -> None:
    value = {"api_key": "sk", "items": {3, 1}, "t": (1, 2)}
    encode_value(value)
    assert value == {"api_key": "sk", "items": {1, 3}, "t": (1, 2)}


# -- typed objects --------------------------------------------------------------------------


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test end with it."""
    monkeypatch.setattr(encode_module, "_structural", dict(encode_module._structural))
    monkeypatch.setattr(encode_module, "_plans", {})
    monkeypatch.setattr(encode_module, "_routes", {})


class Packet:
    """A routing packet, as frameworks define them: public ``__slots__``, nothing else."""

    __slots__ = ("arg", "node")

    def __init__(self, node: str, arg: Any) -> None:
        self.node = node
        self.arg = arg


class Hidden:
    """Slots that are the object's own business: stored as a repr, as before."""

    __slots__ = ("_fd", "mode")

    def __init__(self) -> None:
        self._fd = 3
        self.mode = "r"

    def __repr__(self) -> str:
        return "<Hidden fd=3>"


class Order:
    """A plain object with a ``__dict__``: opaque unless registered."""

    def __init__(self, item: str, api_key: str) -> None:
        self.item = item
        self.api_key = api_key
        self._cache = object()

    def __repr__(self) -> str:
        return f"Order({self.item!r})"


@dataclasses.dataclass
class Route:
    goto: Any
    update: Any = None


def fake_framework_class(module: str, name: str) -> type:
    """A class that says it lives in a framework's module (which is not imported)."""
    klass = type(name, (), {"__slots__": ("value", "_secret_state"), "__module__": module})
    klass.__qualname__ = name
    return klass


def test_objects_of_public_slots_are_stored_as_typed_objects() -> None:
    packet = Packet("work", {"item": Point(1, 2), "api_key": "sk", "tags": {"b", "a"}})
    plain, partial = encode_value({"sent": [packet]})
    assert not partial
    assert plain == {
        "sent": [
            {
                "__type__": f"{__name__}.Packet",
                "node": "work",
                "arg": {
                    "item": {"x": 1, "y": 2, "label": "red"},
                    "api_key": REDACTED,
                    "tags": ["a", "b"],
                },
            }
        ]
    }
    assert json.loads(json.dumps(plain)) == plain


def test_objects_with_private_slots_or_a_dict_stay_opaque() -> None:
    plain, partial = encode_value([Hidden(), Order("tea", "sk")])
    assert partial
    assert plain == [
        {"__repr__": "<Hidden fd=3>", "__type__": f"{__name__}.Hidden"},
        {"__repr__": "Order('tea')", "__type__": f"{__name__}.Order"},
    ]


@pytest.mark.usefixtures("registry")
def test_a_class_registered_by_name_is_stored_by_its_fields() -> None:
    before, partial = encode_value(Order("tea", "sk"))
    assert partial and "__repr__" in before
    register_structural(f"{__name__}.Order")  # the cache of classes already seen is refreshed
    plain, partial = encode_value({"order": Order("tea", "sk")})
    assert not partial
    # its public attributes, redacted by name like a dict's keys; _cache is private
    assert plain == {"order": {"__type__": f"{__name__}.Order", "item": "tea", "api_key": REDACTED}}


@pytest.mark.usefixtures("registry")
def test_a_registered_dataclass_keeps_its_type_and_its_nested_objects() -> None:
    assert encode_value(Route("left"))[0] == {"goto": "left", "update": None}
    register_structural(Route)
    plain, partial = encode_value(
        Route(goto=[Packet("a", 1), Packet("b", (2, 3))], update={"n": 1})
    )
    assert not partial
    assert plain == {
        "__type__": f"{__name__}.Route",
        "goto": [
            {"__type__": f"{__name__}.Packet", "node": "a", "arg": 1},
            {"__type__": f"{__name__}.Packet", "node": "b", "arg": [2, 3]},
        ],
        "update": {"n": 1},
    }


@pytest.mark.usefixtures("registry")
def test_explicit_fields_choose_and_order_what_is_stored() -> None:
    register_structural(Order, fields=["api_key", "item", "missing"])
    plain, partial = encode_value(Order("tea", "sk"))
    assert not partial  # an attribute the object lacks is left out, not an error
    assert list(plain) == ["__type__", "api_key", "item"]
    assert plain["api_key"] == REDACTED


@pytest.mark.usefixtures("registry")
def test_subclasses_of_a_registered_class_are_stored_under_their_own_name() -> None:
    class Urgent(Order):
        def __init__(self, item: str) -> None:
            super().__init__(item, "")
            self.level = 3

    register_structural(Order)
    plain, _ = encode_value(Urgent("tea"))
    assert plain == {
        "__type__": f"{__name__}.{Urgent.__qualname__}",
        "item": "tea",
        "api_key": REDACTED,
        "level": 3,
    }


@pytest.mark.usefixtures("registry")
def test_registered_models_and_named_tuples_keep_their_type() -> None:
    register_structural(Message)
    register_structural(Pair)
    sent = datetime.datetime(2024, 1, 2)
    plain, partial = encode_value([Message(role="ai", content="hi", sent=sent), Pair(1, "x")])
    assert not partial
    assert plain == [
        {
            "__type__": f"{__name__}.Message",
            "role": "ai",
            "content": "hi",
            "sent": "2024-01-02T00:00:00",
            "meta": {},
        },
        {"__type__": f"{__name__}.Pair", "left": 1, "right": "x"},
    ]


def test_classes_registered_by_name_need_no_import() -> None:
    # how an adapter registers its framework's values (LangGraph's: adapters/langgraph/_hooks.py;
    # the real classes are tested with LangGraph in tests/adapters/langgraph/test_values.py)
    register_structural("framework.types.Send")
    send = fake_framework_class("framework.types", "Send")()
    send.value = {"item": "a"}  # type: ignore[attr-defined]
    send._secret_state = "not for the record"  # type: ignore[attr-defined]
    plain, partial = encode_value(send)
    assert not partial
    assert plain == {"__type__": "framework.types.Send", "value": {"item": "a"}}
    other = fake_framework_class("somewhere.else", "Send")()
    other.value = 1  # type: ignore[attr-defined]
    assert encode_value(other)[1], "an unregistered class with private slots stays opaque"


def test_an_unset_slot_is_left_out() -> None:
    packet = Packet.__new__(Packet)
    packet.node = "work"
    assert encode_value(packet) == ({"__type__": f"{__name__}.Packet", "node": "work"}, False)


@pytest.mark.usefixtures("registry")
def test_a_field_that_raises_is_left_out_and_flags_the_value_partial() -> None:
    class Lazy:
        name = "lazy"

        @property
        def size(self) -> int:
            raise RuntimeError("not loaded")

    register_structural(Lazy, fields=("name", "size"))
    plain, partial = encode_value(Lazy())
    assert partial
    assert plain == {"__type__": f"{__name__}.{Lazy.__qualname__}", "name": "lazy"}


def test_a_typed_object_that_contains_itself_is_cut_not_fatal() -> None:
    packet = Packet("loop", None)
    packet.arg = [packet]
    plain, partial = encode_value(packet)
    assert partial
    assert plain["node"] == "loop"
    assert plain["arg"][0]["__type__"] == f"{__name__}.Packet" and "__repr__" in plain["arg"][0]


@pytest.mark.parametrize(
    "cls, fields, error",
    [
        (42, None, TypeError),
        ("Order", None, ValueError),  # no module part
        (" pkg.Order", None, ValueError),
        (Order, ["item", 3], TypeError),
        (Order, ["__type__"], ValueError),
        (Order, ["__repr__"], ValueError),
    ],
)
@pytest.mark.usefixtures("registry")
def test_bad_registrations_are_refused(cls: Any, fields: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match=r"Order|42"):
        register_structural(cls, fields)
    assert encode_value(Order("tea", "sk"))[1], "a refused registration changes nothing"


def test_stored_typed_objects_and_reprs_read_back_alike(store: SQLiteStore) -> None:
    rid = run_id(1)
    sent = [Packet("work", {"item": f"item {i} " * 5}) for i in range(20)]
    store.write_batch(
        runs=[run(1)],
        steps=[
            step(rid, 1, input={"items": 20}, output={"sent": sent}, state={"sent": sent}),
            step(rid, 2, output={"handle": Handle()}, state={"sent": sent, "handle": Handle()}),
        ],
    )
    first, second = store.get_steps(rid)
    assert not first.partial and second.partial
    assert first.output["sent"][19] == {
        "__type__": f"{__name__}.Packet",
        "node": "work",
        "arg": {"item": "item 19 " * 5},
    }
    assert second.output == {
        "handle": {"__repr__": "<Handle fd=3>", "__type__": f"{__name__}.Handle"}
    }
    state = store.get_state(rid, step=2)
    assert state["sent"] == first.output["sent"]
    assert state["handle"] == second.output["handle"]


# -- blobs ----------------------------------------------------------------------------------


def _roundtrip(value: Any) -> tuple[Any, Packer]:
    packer = Packer()
    column = packer.column(value)
    assert column is not None
    blobs = {key: parse_blob(compress(data)) for key, data in packer.blobs.items()}
    return build(json.loads(column), blobs), packer


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        return rng.choice([None, True, 1, -7, 2.5, "s", "long " * rng.randint(1, 40), "é\u2603"])
    if roll < 0.65:
        return [
            _random_value(rng, depth + 1) for _ in range(rng.randint(0, 60 // (depth + 1) ** 2))
        ]
    return {
        f"k{i}": _random_value(rng, depth + 1)
        for i in range(rng.randint(0, 40 // (depth + 1) ** 2))
    }


@pytest.mark.parametrize("seed", range(25))
def test_packed_values_build_back_to_themselves(seed: int) -> None:
    value = _random_value(random.Random(seed))
    if value is None:
        value = {"v": None}
    assert _roundtrip(value)[0] == value


def test_special_text_survives_packing() -> None:
    value = {"lone surrogate": "a\ud800b" * 40, "nan": float("inf"), "keys \u2603": ["\x00" * 100]}
    assert _roundtrip(value)[0] == value


def test_small_values_are_inline_and_big_ones_are_blobs() -> None:
    packer = Packer()
    assert packer.column({"count": 3}) == '[{"count":3}]'
    assert not packer.blobs
    assert packer.column(None) is None
    column = packer.column("x" * (INLINE_MAX + 1))
    assert column is not None and column.startswith('"') and len(packer.blobs) == 1


FLAT = [
    {},
    {"x": 1},
    {"count": 3, "done": True, "note": None, "ratio": 0.5, "name": "ann"},
    {"text": 'é\u2603 quote" back\\slash'},
    {"inf": float("inf"), "neg": -0.0, "big": 10**20},
    {"token": None},  # a secret key with nothing in it
]
NOT_FLAT = [
    {"api_key": "sk-123"},  # redacted: the general way
    {"password": "hunter2", "x": 1},
    {"x": [1, 2]},  # a container inside
    {"when": datetime.date(2024, 1, 1)},
    {1: "int key"},
    {f"k{i}": i for i in range(20)},  # many keys
    {"long": "y" * INLINE_MAX},  # too long to be inline
    OrderedDict(x=1),  # not a plain dict
    Level.LOW,
    [1, 2, 3],
    "text",
]


@pytest.mark.parametrize("value", FLAT + NOT_FLAT)
def test_the_flat_fast_path_reads_back_like_the_general_way(value: Any) -> None:
    encoder = Encoder(DEFAULT_REDACT)
    fast = flat_column(encoder, value)
    plain, partial = Encoder(DEFAULT_REDACT).encode(value)
    general = Packer().column(plain)
    if any(value is flat for flat in FLAT):
        assert fast is not None and fast == general
        assert json.loads(fast) == [json.loads(json.dumps(value))]
    else:
        assert fast is None  # left to the general way (redaction, nesting, other types)
    assert not partial


def test_equal_values_pack_to_equal_entries() -> None:
    value = {"messages": [{"role": "user", "content": f"message {i} " * 10} for i in range(100)]}
    copy = json.loads(json.dumps(value))
    assert Packer().column(value) == Packer().column(copy)


def test_appending_to_a_long_list_adds_only_a_few_small_blobs() -> None:
    messages = [{"role": "user", "content": f"message number {i} " * 10} for i in range(1000)]
    before = Packer()
    before.column({"messages": messages})
    after = Packer()
    after.column({"messages": [*messages, {"role": "user", "content": "the new one " * 10}]})
    new = set(after.blobs) - set(before.blobs)
    new_bytes = sum(len(after.blobs[key]) for key in new)
    # the message (its node and its text), one chunk and its interior nodes, the state's node
    assert len(new) <= 8
    assert new_bytes < 2000, new_bytes


def test_big_lists_are_cut_into_chunks_of_fanout() -> None:
    items = [f"item {i:04d} " * 8 for i in range(FANOUT * FANOUT + 3)]
    value, packer = _roundtrip(items)
    assert value == items
    sizes = sorted(
        len(child_keys(*parse_blob(data))) for data in packer.blobs.values() if data[:1] in b"lL"
    )
    assert max(sizes) == FANOUT


def test_big_blobs_are_compressed_only_when_it_pays() -> None:
    text = b"v" + json.dumps("abc" * 5000).encode()
    packed = compress(text)
    assert packed.startswith(b"z") and len(packed) < len(text) // 10
    assert parse_blob(packed) == (ord("v"), "abc" * 5000)
    noise = b"v" + json.dumps(random.Random(1).randbytes(5000).hex()).encode()
    assert len(compress(noise)) <= len(noise)
    assert compress(b'v"short"') == b'v"short"'


@pytest.mark.usefixtures("registry")
def test_classes_met_before_are_encoded_the_same_and_registering_one_changes_its_form() -> None:
    # the encoder remembers which classes are models and dataclasses (and a dataclass's
    # fields); what it remembers must give what the first encoding gave, until a class is
    # registered
    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    class Reply(pydantic.BaseModel):
        text: str
        api_key: str

    value = {"p": Point(1, 2), "r": Reply(text="hi", api_key="k"), "more": [Point(3, 4)]}
    first = encode_value(value)
    assert first == encode_value(value)
    assert first[0] == {
        "p": {"x": 1, "y": 2},
        "r": {"text": "hi", "api_key": REDACTED},
        "more": [{"x": 3, "y": 4}],
    }
    register_structural(Point, ["x"])
    register_structural(Reply)
    plain, _ = encode_value(value)
    assert plain["p"] == {"__type__": encode_module._class_name(Point), "x": 1}
    assert plain["r"] == {
        "__type__": encode_module._class_name(Reply),
        "text": "hi",
        "api_key": REDACTED,
    }


def test_the_json_text_and_blob_keys_are_those_of_the_standard_library() -> None:
    # A blob's key is the hash of its JSON text, and columns are compared as text: the
    # encoder made once must write exactly what json.JSONEncoder(...).encode writes.
    import base64
    import hashlib

    standard = {
        ascii_only: json.JSONEncoder(
            ensure_ascii=ascii_only, separators=(",", ":"), check_circular=False, allow_nan=True
        ).encode
        for ascii_only in (False, True)
    }
    values: list[Any] = [
        None,
        True,
        0,
        -(10**40),
        1.5,
        -0.0,
        1e300,
        float("nan"),
        float("inf"),
        float("-inf"),
        "",
        'quote " backslash \\ tab \t nul \x00 line-sep \u2028 é 日本 \U0001f600',
        [],
        {},
        {"a": [1, {"b": None}], "é": "x", "": [[], {}]},
        [{"k": "v", "n": 2}] * 3,
    ]
    for value in values:
        assert encode_module._dumps(value) == standard[False](value)
        assert encode_module.to_json(value) == standard[True](value)
    with pytest.raises(TypeError):
        encode_module._dumps({"x": object()})
    data = b"d" + encode_module._dumps({"a": 1}).encode()
    digest = hashlib.blake2b(data, digest_size=16).digest()
    assert encode_module._key_of(data) == base64.urlsafe_b64encode(digest)[:22].decode()


def test_what_pydantic_dumps_is_encoded_as_the_general_way_encodes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the walk of a model's JSON dump skips the general walk's bookkeeping: same plain values,
    # redaction by key, name/value record, pair and shape included
    class Inner(pydantic.BaseModel):
        api_key: str = "sk-abc"
        note: str = "call me: Bearer abcdefghijklmnop1234"
        pair: list[str] = ["Authorization", "Bearer abcdefghijklmnop1234"]
        record: dict[str, Any] = {"name": "password", "value": "hunter2"}
        nums: list[float] = [1.5, float("nan")]

    class Outer(pydantic.BaseModel):
        inner: Inner = Inner()
        many: list[Inner] = [Inner(), Inner(api_key="x")]
        deep: Any = {"a": [{"b": [{"token": "t0ken-value"}]}]}
        empty: dict[str, Any] = {}
        none: Any = None

    class Root(pydantic.RootModel[list[dict[str, Any]]]):
        pass

    values = [
        Outer(),
        Root([{"secret": "s", "ok": 1}, {"url": "postgres://u:pw@host/db"}]),
        {"nested": [Outer(), Inner()]},
    ]
    fast = [encode_value(v) for v in values]
    encoder = encode_module.Encoder
    monkeypatch.setattr(encoder, "_dumped_mapping", encoder._mapping)
    monkeypatch.setattr(encoder, "_dumped", encoder._value)
    general = [encode_value(v) for v in values]
    assert json.dumps(fast) == json.dumps(general)
    assert REDACTED in json.dumps(fast) and "hunter2" not in json.dumps(fast)
