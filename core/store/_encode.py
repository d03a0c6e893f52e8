"""From live values to stored ones: plain JSON first, then content-addressed blobs.

**Plain values.** :class:`Encoder` (and :func:`encode_value`) turns whatever a framework hands
over into JSON values: pydantic models (``model_dump(mode="json")``), dataclasses (their
fields), enums (their value), dates and times (ISO text), UUIDs, decimals and paths (text),
sets (sorted lists), tuples (lists), bytes (``{"__bytes__": base64}``). Anything else becomes
``{"__repr__": repr, "__type__": "module.Class"}`` and makes the value *partial*. The values of
mapping keys that match a redaction pattern become ``"[REDACTED]"``, at any depth.

**Blobs.** :class:`Packer` stores a plain value as a tree of blobs so that what did not change
between two steps is stored once. A parent holds each child as an *entry*: ``[value]`` (a
one-element list) holds a small value inline, a string is the key of a blob. A blob is a tag
byte and JSON text:

``v``  a JSON value (a long string)
``l``  a list of entries: the elements of a list, or one chunk of them
``L``  a list of blob keys of ``l``/``L`` blobs: concatenated, their elements make the list
``d``  an object of key -> entry: the items of a dict, or one chunk of them
``D``  a list of blob keys of ``d``/``D`` blobs: merged in order, their items make the dict
``z``  any of the above, zlib-compressed (big blobs only; the key is that of the original)

Values whose JSON is at most :data:`INLINE_MAX` characters are inline, everything bigger has its
own blob, and containers with more than :data:`FANOUT` items are cut into chunks of
:data:`FANOUT` at fixed positions, with interior nodes above them. So when an agent's message list
grows by one message, only the new message, the last chunk and the nodes on the path to the root
are new: storage grows with ``FANOUT * log(n)`` per step instead of ``n``. The tree depends only
on the value, so equal values have equal entries (which is how diffs compare states cheaply).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import enum
import functools
import hashlib
import json
import pathlib
import re
import uuid
import zlib
from collections.abc import Iterator, Mapping, Sequence, Set
from typing import Any

from flowdbg.state import short_repr

__all__ = [
    "DEFAULT_REDACT",
    "FANOUT",
    "INLINE_MAX",
    "REDACTED",
    "Encoder",
    "Packer",
    "build",
    "child_keys",
    "compile_redact",
    "compress",
    "encode_value",
    "flat_column",
    "parse_blob",
    "to_json",
    "top_level",
]

#: Key patterns whose values are not stored (case-insensitive regular expressions, searched
#: anywhere in the key). ``token`` leaves token *counts* alone: ``max_tokens``, ``total_tokens``,
#: ``token_count``, ``token_usage`` and ``tokenizer`` are kept.
DEFAULT_REDACT: tuple[str, ...] = (
    r"api[-_]?key",
    r"token(?!s|_?count|_?usage|izer)",
    r"secret",
    r"passw(?:or)?d",
    r"authorization",
    r"cookie",
    r"private[-_]?key",
    r"access[-_]?key",
    r"credential",
)

#: what a redacted value is replaced with
REDACTED = "[REDACTED]"
#: values whose JSON is at most this many characters are stored inside their parent
INLINE_MAX = 64
#: items per chunk and children per interior node of a big list or dict
FANOUT = 16
#: blobs at least this big are compressed when that saves space
COMPRESS_MIN = 2048

_MAX_DEPTH = 200
_BYTES_KEY = "__bytes__"
_REPR_KEY = "__repr__"
_TYPE_KEY = "__type__"

_dumps = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), check_circular=False, allow_nan=True
).encode
#: compact JSON text of a plain value, ASCII only (what table columns hold)
to_json = json.JSONEncoder(
    ensure_ascii=True, separators=(",", ":"), check_circular=False, allow_nan=True
).encode


# --------------------------------------------------------------------------------------------
# Plain values
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def _compile(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    parts: list[str] = []
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error:
            pattern = re.escape(pattern)  # not a regular expression: a plain substring
        parts.append(f"(?:{pattern})")
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


def compile_redact(redact: Sequence[str] | re.Pattern[str] | None) -> re.Pattern[str] | None:
    """One case-insensitive regular expression matching any of ``redact``.

    :param redact: key patterns (regular expressions; a pattern that is not a valid regular
        expression is matched as a plain substring), a compiled pattern, or ``None``.
    :returns: the pattern, or ``None`` when nothing is redacted.
    """
    if redact is None or isinstance(redact, re.Pattern):
        return redact
    if isinstance(redact, str):
        redact = (redact,)
    return _compile(tuple(redact))


def _type_name(value: object) -> str:
    klass = type(value)
    module = getattr(klass, "__module__", None) or "builtins"
    return f"{module}.{getattr(klass, '__qualname__', klass.__name__)}"


def _is_pydantic_model(value: object) -> bool:
    fields = getattr(type(value), "__pydantic_fields__", None)
    return isinstance(fields, dict) and callable(getattr(value, "model_dump", None))


class Encoder:
    """Turns live values into plain, redacted JSON values.

    One encoder may encode many values, one at a time (it is not thread-safe).

    :param redact: key patterns whose values are replaced by ``"[REDACTED]"`` (see
        :func:`compile_redact`).
    """

    def __init__(self, redact: Sequence[str] | re.Pattern[str] | None = DEFAULT_REDACT) -> None:
        self._redact = compile_redact(redact)
        self._redacted_keys: dict[str, bool] = {}
        self._active: set[int] = set()
        # id -> (object, plain value, failures): a container met again (the same message in
        # the input and the state of many steps of one batch) is encoded once. The object is
        # kept so that its id cannot be reused while the encoder lives.
        self._memo: dict[int, tuple[Any, Any, tuple[str, ...]]] = {}
        #: type names of the values the last :meth:`encode` stored as a repr
        self.failures: list[str] = []

    def encode(self, value: Any) -> tuple[Any, bool]:
        """Encode one value.

        :param value: any value.
        :returns: the plain value and whether some part of it was stored as a typed repr.
        """
        self.failures = []
        self._active = set()
        try:
            plain = self._value(value, 0)
        except Exception:
            # The value changed while it was read (another thread mutated a dict, say): read
            # it once more, and store its repr if that fails too.
            self.failures = []
            self._active = set()
            self._memo.clear()
            try:
                plain = self._value(value, 0)
            except Exception:
                self.failures = []
                plain = self._opaque(value)
        return plain, bool(self.failures)

    # -- dispatch --

    def _value(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if kind is str or kind is int or kind is float or kind is bool or value is None:
            return value
        if kind is dict:
            return self._container(value, depth, self._mapping)
        if kind is list or kind is tuple:
            return self._container(value, depth, self._sequence)
        return self._other(value, depth)

    def _other(self, value: Any, depth: int) -> Any:
        if isinstance(value, enum.Enum):
            return self._value(value.value, depth + 1)
        if isinstance(value, str):
            return str(value)
        if isinstance(value, bool):
            return bool(value)
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            return float(value)
        if isinstance(value, bytes | bytearray | memoryview):
            return {_BYTES_KEY: base64.b64encode(bytes(value)).decode("ascii")}
        if isinstance(value, datetime.date | datetime.time):
            return value.isoformat()
        if isinstance(value, datetime.timedelta):
            return value.total_seconds()
        if isinstance(value, uuid.UUID | decimal.Decimal | pathlib.PurePath):
            return str(value)
        if _is_pydantic_model(value):
            return self._container(value, depth, self._model)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self._container(value, depth, self._dataclass)
        if isinstance(value, Mapping):
            return self._container(value, depth, self._mapping)
        if isinstance(value, Set):
            return self._container(value, depth, self._set)
        if isinstance(value, Sequence) and not isinstance(value, range):
            return self._container(value, depth, self._sequence)
        return self._opaque(value)

    def _container(self, value: Any, depth: int, convert: Any) -> Any:
        key = id(value)
        seen = self._memo.get(key)
        if seen is not None and seen[0] is value:
            self.failures.extend(seen[2])
            return seen[1]
        if depth >= _MAX_DEPTH or key in self._active:
            return self._opaque(value, short=True)
        self._active.add(key)
        mark = len(self.failures)
        try:
            plain = convert(value, depth + 1)
        finally:
            self._active.discard(key)
        self._memo[key] = (value, plain, tuple(self.failures[mark:]))
        return plain

    # -- containers --

    def _mapping(self, value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        redact = self._redact
        for key, item in value.items():
            name = key if type(key) is str else self._key(key)
            if redact is not None and item is not None and self._is_secret(name):
                out[name] = REDACTED
            else:
                out[name] = self._value(item, depth)
        return out

    def _is_secret(self, name: str) -> bool:
        found = self._redacted_keys.get(name)
        if found is None:
            assert self._redact is not None
            found = self._redact.search(name) is not None
            if len(self._redacted_keys) < 10_000:
                self._redacted_keys[name] = found
        return found

    def _key(self, key: Any) -> str:
        if isinstance(key, enum.Enum):
            key = key.value
        if isinstance(key, str):
            return str(key)
        if key is None or isinstance(key, bool | int | float):
            return json.dumps(key)
        if isinstance(key, datetime.date | datetime.time):
            return key.isoformat()
        try:
            return str(key)
        except Exception:
            return f"<{_type_name(key)}>"

    def _sequence(self, value: Sequence[Any], depth: int) -> list[Any]:
        out: list[Any] = []
        memo = self._memo
        for item in value:
            # the memo check inline: long lists of shared messages are the common case
            seen = memo.get(id(item))
            if seen is not None and seen[0] is item:
                if seen[2]:
                    self.failures.extend(seen[2])
                out.append(seen[1])
            else:
                out.append(self._value(item, depth))
        return out

    def _set(self, value: Set[Any], depth: int) -> list[Any]:
        try:
            ordered = sorted(value)
        except Exception:
            items = [self._value(item, depth) for item in value]
            # not sortable as they are: sort by their JSON so that equal sets store alike
            return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=str))
        return [self._value(item, depth) for item in ordered]

    def _model(self, value: Any, depth: int) -> dict[str, Any]:
        try:
            dumped = value.model_dump(mode="json", warnings=False)
        except Exception:
            # A field pydantic cannot serialize: encode field by field, so that only that field
            # is stored as a repr.
            names = list(type(value).__pydantic_fields__)
            extra = getattr(value, "__pydantic_extra__", None)
            if isinstance(extra, dict):
                names += [name for name in extra if isinstance(name, str)]
            dumped = {name: getattr(value, name, None) for name in names}
        if not isinstance(dumped, Mapping):
            return self._value(dumped, depth)  # a RootModel
        return self._mapping(dumped, depth)

    def _dataclass(self, value: Any, depth: int) -> dict[str, Any]:
        fields = {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
        return self._mapping(fields, depth)

    # -- the rest --

    def _opaque(self, value: Any, *, short: bool = False) -> dict[str, str]:
        name = _type_name(value)
        try:
            text = short_repr(value, 200) if short else repr(value)
        except Exception as exc:
            text = f"<{name} object; its repr raised {type(exc).__name__}>"
        self.failures.append(name)
        return {_REPR_KEY: text, _TYPE_KEY: name}


def encode_value(
    value: Any, *, redact: Sequence[str] | re.Pattern[str] | None = DEFAULT_REDACT
) -> tuple[Any, bool]:
    """Turn a value into plain JSON values, the way stores keep it.

    :param value: any value.
    :param redact: key patterns whose values are replaced by ``"[REDACTED]"``; ``None`` or
        ``()`` to keep everything.
    :returns: the plain value (dicts, lists, str, int, float, bool, None) and whether part of it
        could not be serialized and was stored as ``{"__repr__": ..., "__type__": ...}``.
    """
    return Encoder(redact).encode(value)


# --------------------------------------------------------------------------------------------
# Blobs
# --------------------------------------------------------------------------------------------


#: most keys a dict may have for :func:`flat_column`
_FLAT_KEYS = 8


def flat_column(encoder: Encoder, value: Any) -> str | None:
    """The column text of a small dict of plain scalars, made in one step; ``None`` for any
    other value, which goes the general way (:meth:`Encoder.encode`, then
    :meth:`Packer.column`) to a column that reads back the same.

    Small updates and states (a counter, a flag, a short string) are most of what a run of
    small nodes records, and the general way walks such a dict twice in Python.
    """
    if type(value) is not dict or len(value) > _FLAT_KEYS:
        return None
    redact = encoder._redact
    for key, item in value.items():
        kind = type(item)
        if type(key) is not str or not (
            kind is int or kind is str or kind is float or kind is bool or item is None
        ):
            return None
        if redact is not None and item is not None and encoder._is_secret(key):
            return None
    text = to_json(value)
    if len(text) > INLINE_MAX:
        return None  # long: stored as a blob, the general way
    return "[" + text + "]"


def _key_of(data: bytes) -> str:
    digest = hashlib.blake2b(data, digest_size=16).digest()
    return base64.urlsafe_b64encode(digest)[:22].decode("ascii")


class Packer:
    """Turns plain values into entries, collecting the blobs they need in :attr:`blobs`.

    A packer remembers the containers it packed by identity, so the values given to it must not
    change while it is in use (a store uses one packer per batch, on values it made itself).
    """

    def __init__(self) -> None:
        #: key -> uncompressed blob, for every blob an entry made so far refers to
        self.blobs: dict[str, bytes] = {}
        # id -> (container, entry, size): plain containers shared between values (as the
        # encoder shares them) are packed once
        self._memo: dict[int, tuple[Any, Any, int]] = {}

    def column(self, plain: Any) -> str | None:
        """The text a table column holds for ``plain``: its entry as JSON, ``None`` for None.

        :param plain: a plain value.
        :returns: ``'[value]'`` for a small value, ``'"key"'`` for a blob, or ``None``.
        """
        if plain is None:
            return None
        entry, _ = self._put(plain)
        return to_json(entry)

    def _blob(self, tag: bytes, text: str) -> str:
        data = tag + text.encode("utf-8", "surrogatepass")
        key = _key_of(data)
        self.blobs.setdefault(key, data)
        return key

    def _put(self, value: Any) -> tuple[Any, int]:
        """``(entry, size)``: size is the (approximate) length of the value's JSON."""
        kind = type(value)
        if kind is str:
            size = len(value) + 2
            if size <= INLINE_MAX:
                return [value], size
            return self._blob(b"v", _dumps(value)), size
        if kind is dict or kind is list:
            seen = self._memo.get(id(value))
            if seen is not None and seen[0] is value:
                return seen[1], seen[2]
            packed = self._container(value, kind is dict)
            self._memo[id(value)] = (value, *packed)
            return packed
        if value is None or kind is bool:
            return [value], 5
        return [value], len(repr(value))

    def _container(self, value: Any, is_dict: bool) -> tuple[Any, int]:
        if is_dict:
            items: dict[str, Any] = {}
            size = 1
            for key, item in value.items():
                items[key], item_size = self._put(item)
                size += len(key) + 4 + item_size
            if size <= INLINE_MAX:
                return [value], size
            return self._tree(b"d", b"D", list(items.items())), size
        elements: list[Any] = []
        size = 1
        memo = self._memo
        for item in value:
            seen = memo.get(id(item))
            if seen is not None and seen[0] is item:
                entry, item_size = seen[1], seen[2]
            else:
                entry, item_size = self._put(item)
            elements.append(entry)
            size += item_size + 1
        if size <= INLINE_MAX:
            return [value], size
        return self._tree(b"l", b"L", elements), size

    def _tree(self, leaf: bytes, interior: bytes, items: list[Any]) -> str:
        keys = [
            self._blob(leaf, _dumps(dict(chunk) if leaf == b"d" else chunk))
            for chunk in _chunks(items)
        ]
        while len(keys) > 1:
            keys = [self._blob(interior, _dumps(chunk)) for chunk in _chunks(keys)]
        return keys[0]


def _chunks(items: list[Any]) -> Iterator[list[Any]]:
    if not items:
        yield items
    for start in range(0, len(items), FANOUT):
        yield items[start : start + FANOUT]


def compress(data: bytes) -> bytes:
    """The form of a blob to store: zlib-compressed (tag ``z``) when big and worth it.

    :param data: an uncompressed blob.
    :returns: the bytes to store.
    """
    if len(data) >= COMPRESS_MIN:
        packed = zlib.compress(data, 6)
        if len(packed) + 1 < len(data) * 0.9:
            return b"z" + packed
    return data


def parse_blob(data: bytes) -> tuple[int, Any]:
    """Read a stored blob.

    :param data: the stored bytes.
    :returns: the tag (an ASCII code) and the parsed JSON payload.
    """
    if data[:1] == b"z":
        data = zlib.decompress(data[1:])
    return data[0], json.loads(data[1:].decode("utf-8", "surrogatepass"))


_V, _LEAF_LIST, _NODE_LIST, _LEAF_DICT, _NODE_DICT = (ord(c) for c in "vlLdD")


def child_keys(tag: int, payload: Any) -> list[str]:
    """The keys of the blobs a parsed blob refers to.

    :param tag: the blob's tag.
    :param payload: its parsed payload.
    :returns: the keys (with repeats).
    """
    if tag == _LEAF_LIST:
        return [entry for entry in payload if type(entry) is str]
    if tag == _LEAF_DICT:
        return [entry for entry in payload.values() if type(entry) is str]
    if tag in (_NODE_LIST, _NODE_DICT):
        return list(payload)
    return []


def _fresh(value: Any) -> Any:
    """A copy of an inline container, so that two uses of one blob share no objects."""
    kind = type(value)
    if kind is dict:
        return {key: _fresh(item) for key, item in value.items()}
    if kind is list:
        return [_fresh(item) for item in value]
    return value


def build(entry: Any, blobs: Mapping[str, tuple[int, Any]]) -> Any:
    """The value an entry stands for.

    :param entry: ``[value]`` or a blob key.
    :param blobs: parsed blobs by key, holding every blob the entry reaches.
    :returns: a new plain value.
    :raises KeyError: if a blob is missing from ``blobs``.
    """
    if type(entry) is list:
        return _fresh(entry[0])
    tag, payload = blobs[entry]
    if tag == _V:
        return payload
    if tag == _LEAF_LIST:
        return [build(item, blobs) for item in payload]
    if tag == _LEAF_DICT:
        return {key: build(item, blobs) for key, item in payload.items()}
    if tag == _NODE_LIST:
        out: list[Any] = []
        for key in payload:
            out.extend(build(key, blobs))
        return out
    if tag == _NODE_DICT:
        merged: dict[str, Any] = {}
        for key in payload:
            merged.update(build(key, blobs))
        return merged
    raise ValueError(f"unknown blob tag {chr(tag)!r}")


def top_level(entry: Any, blobs: Mapping[str, tuple[int, Any]]) -> dict[str, Any] | None:
    """The entries of the top-level keys of a dict value, without building the values.

    :param entry: the value's entry.
    :param blobs: parsed blobs by key (those of the dict's own nodes suffice).
    :returns: key -> entry, or ``None`` if the value is not a dict.
    """
    if type(entry) is list:
        value = entry[0]
        if type(value) is not dict:
            return None
        return {key: [item] for key, item in value.items()}
    tag, payload = blobs[entry]
    if tag == _LEAF_DICT:
        return dict(payload)
    if tag == _NODE_DICT:
        merged: dict[str, Any] = {}
        for key in payload:
            part = top_level(key, blobs)
            if part is not None:
                merged.update(part)
        return merged
    return None
