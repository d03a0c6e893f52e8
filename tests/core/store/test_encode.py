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

from flowdbg.store import DEFAULT_REDACT, REDACTED, encode_value
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
