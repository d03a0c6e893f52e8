"""From live values to stored ones: plain JSON first, then content-addressed blobs.

**Plain values.** :class:`Encoder` (and :func:`encode_value`) turns whatever a framework hands
over into JSON values: pydantic models (``model_dump(mode="json")``), dataclasses (their
fields), enums (their value), dates and times (ISO text), UUIDs, decimals and paths (text),
sets (sorted lists), tuples (lists), bytes (``{"__bytes__": base64}``). Secrets become
``"[REDACTED]"`` at any depth, by key and by value, under the rules of :mod:`flowdbg._redact`
(the same rules the ``--json`` output, the terminal and logpoints apply): the values of mapping
keys that match a redaction pattern, of name/value records and pairs naming a secret, and the
secret parts of strings (URL passwords, bearer tokens, known token formats).

**Typed objects.** A framework value whose class matters (LangGraph's ``Send``, ``Command``,
``Interrupt``) is stored as an object of its fields under the key ``"__type__"``, the qualified
name of its class: ``{"__type__": "langgraph.types.Send", "node": "work", "arg": {...}}``. Its
fields are encoded like the values of a dict (recursively, redacted by field name). The classes
stored so are those registered with :func:`register_structural` (by class or by qualified name,
so that registering needs no import of the framework; a subclass of a registered class is
stored so too), and the classes whose instances hold only ``__slots__`` with public names (no
instance ``__dict__``, no slot starting with ``_``), which would otherwise be opaque.

**Opaque values.** Anything else becomes ``{"__repr__": repr, "__type__": "module.Class"}`` and
makes the value *partial*. A reader tells the two apart by the ``"__repr__"`` key: a dict with
``"__type__"`` and no ``"__repr__"`` is a typed object, every other key of it a field.

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
import binascii
import dataclasses
import datetime
import decimal
import enum
import hashlib
import json
import pathlib
import re
import threading
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from typing import Any

from flowdbg._redact import (
    _MIN_TEXT,
    DEFAULT_REDACT,
    REDACTED,
    Redactor,
    compile_redact,
    redactor,
)
from flowdbg._values import short_repr

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
    "register_structural",
    "to_json",
    "top_level",
]

#: values whose JSON is at most this many characters are stored inside their parent
INLINE_MAX = 64
#: items per chunk and children per interior node of a big list or dict
FANOUT = 16
#: blobs at least this big are compressed when that saves space
COMPRESS_MIN = 2048
#: strings at least this long are remembered by identity by a store's packers (see Packer)
LONG_MIN = 4096
#: strings at least this long are hashed and compressed piece by piece (see Packer)
STREAM_MIN = 1 << 20
_PIECE = 1 << 18
_LONG_ENTRIES = 256

_MAX_DEPTH = 200
_BYTES_KEY = "__bytes__"
_REPR_KEY = "__repr__"
_TYPE_KEY = "__type__"


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _compact_json(ensure_ascii: bool) -> Callable[[Any], str]:
    """``json.JSONEncoder(ensure_ascii=..., separators=(",", ":"), check_circular=False,
    allow_nan=True).encode``, the same text, without the encoder that ``encode`` builds for
    each call: the C encoder is made once (about 0.6 µs saved per value; the writer encodes
    dozens per step). A C encoder keeps no state between calls when it checks no cycles."""
    encode = json.JSONEncoder(
        ensure_ascii=ensure_ascii, separators=(",", ":"), check_circular=False, allow_nan=True
    ).encode
    make = getattr(json.encoder, "c_make_encoder", None)
    quote = (
        getattr(json.encoder, "c_encode_basestring_ascii", None)
        if ensure_ascii
        else getattr(json.encoder, "c_encode_basestring", None)
    )
    if make is None or quote is None:
        return encode
    try:
        encoder = make(None, _not_json, quote, None, ":", ",", False, False, True)
    except TypeError:  # another signature: the standard way
        return encode
    join = "".join

    def dumps(value: Any) -> str:
        return join(encoder(value, 0))

    return dumps


_dumps = _compact_json(ensure_ascii=False)
#: compact JSON text of a plain value, ASCII only (what table columns hold)
to_json = _compact_json(ensure_ascii=True)


# --------------------------------------------------------------------------------------------
# Plain values
# --------------------------------------------------------------------------------------------


def _class_name(klass: type) -> str:
    module = getattr(klass, "__module__", None) or "builtins"
    return f"{module}.{getattr(klass, '__qualname__', klass.__name__)}"


def _type_name(value: object) -> str:
    return _class_name(type(value))


def _is_pydantic_model(value: object) -> bool:
    fields = getattr(type(value), "__pydantic_fields__", None)
    return isinstance(fields, dict) and callable(getattr(value, "model_dump", None))


# -- typed objects --


class _Plan:
    """How the instances of one class are stored as typed objects."""

    __slots__ = ("fields", "name", "registered")

    def __init__(self, name: str, fields: tuple[str, ...] | None, registered: bool) -> None:
        self.name = name  # the stored "__type__"
        self.fields = fields  # the attributes to read; None: the public ones of each instance
        self.registered = registered  # False: found by the __slots__ rule


#: qualified class name -> the fields its instances are stored with (``None``: the class's own).
#: Adapters register their framework's values that steer a run (LangGraph's ``Send`` and
#: ``Command``), by name, so that they are readable in the store rather than reprs.
_structural: dict[str, tuple[str, ...] | None] = {}
_structural_lock = threading.Lock()
#: class -> its plan (``None``: not a typed object); filled as classes are met, emptied when the
#: registry changes. Replaced, never cleared in place, so an encoder on another thread reads
#: either the old cache or the new one.
_plans: dict[type, _Plan | None] = {}
_PLANS_MAX = 4096
_UNSEEN: Any = object()
#: class -> how its instances are encoded, for the classes :meth:`Encoder._other` found to be
#: pydantic models (``None``) or dataclasses (their field names), which are most of the
#: framework objects a run records (messages, model replies, usage); emptied with ``_plans``
_routes: dict[type, tuple[str, ...] | None] = {}
_RESERVED = frozenset({_TYPE_KEY, _REPR_KEY})


def register_structural(cls: type | str, fields: Iterable[str] | None = None) -> None:
    """Store the instances of a class as typed objects instead of opaque reprs.

    A typed object is stored as ``{"__type__": "module.Class", field: value, ...}``: the
    qualified name of the instance's class, then its fields, each encoded like any value (so
    nested values are plain JSON and redaction applies to field names). Instances of
    subclasses are stored so too, under their own class name. Registering a class again
    replaces its fields. Registering takes effect for values encoded afterwards; values already
    stored keep their form.

    :param cls: the class, or its qualified name (``"package.module.Class"``, the
        ``__module__`` and ``__qualname__`` of the class), which lets an adapter register a
        framework's classes without importing the framework.
    :param fields: the attribute names to store, in order; ``None`` for the class's own: its
        dataclass, pydantic or named-tuple fields, else its public ``__slots__``, else the
        public attributes of each instance. An attribute an instance lacks is left out.
    :raises TypeError: if ``cls`` is neither a class nor a string, or a field name is not a
        string.
    :raises ValueError: if the name has no module part, or a field is named ``__type__`` or
        ``__repr__``.
    """
    global _plans, _routes, _structural
    if isinstance(cls, type):
        name = _class_name(cls)
    elif isinstance(cls, str):
        name = cls
        if "." not in name.strip(".") or name != name.strip():
            raise ValueError(
                f"{name!r} is not a qualified class name; pass 'module.Class' (the class's "
                "__module__ and __qualname__) or the class itself"
            )
    else:
        raise TypeError(f"cannot register {cls!r}; pass a class or its qualified name")
    names: tuple[str, ...] | None = None
    if fields is not None:
        if isinstance(fields, str):
            fields = (fields,)
        names = tuple(fields)
        for field in names:
            if not isinstance(field, str):
                raise TypeError(f"field {field!r} of {name} is not an attribute name; pass strings")
            if field in _RESERVED:
                raise ValueError(
                    f"field {field!r} of {name} would clash with the stored type marker; "
                    "store that attribute under another name"
                )
    with _structural_lock:
        _structural = {**_structural, name: names}  # a new dict: readers hold the old one
        _plans = {}
        _routes = {}


def _plan_of(kind: type) -> _Plan | None:
    # The cache first: register_structural swaps the registry before the cache, so a plan made
    # from an old registry can only land in an old cache.
    plans = _plans
    registry = _structural
    plan: _Plan | None = None
    for klass in getattr(kind, "__mro__", (kind,)):
        name = _class_name(klass)
        if name in registry:
            plan = _registered_plan(kind, registry[name])
            break
    else:
        slots = _slot_names(kind)
        if slots and not any(slot.startswith("_") for slot in slots):
            plan = _Plan(_class_name(kind), slots, registered=False)
    if len(plans) >= _PLANS_MAX:  # classes made on the fly (in a loop, say) must not pile up
        plans.clear()
    plans[kind] = plan
    return plan


def _remember_route(routes: dict[type, Any], kind: type, route: tuple[str, ...] | None) -> None:
    if len(routes) >= _PLANS_MAX:  # classes made on the fly must not pile up
        routes.clear()
    routes[kind] = route


def _registered_plan(kind: type, fields: tuple[str, ...] | None) -> _Plan:
    # Fields left None are read from each instance: a pydantic model's dump (its serializers
    # apply), or the public attributes of a plain object.
    if fields is None and not isinstance(getattr(kind, "__pydantic_fields__", None), dict):
        named = getattr(kind, "_fields", None)
        if dataclasses.is_dataclass(kind):
            fields = tuple(field.name for field in dataclasses.fields(kind))
        elif issubclass(kind, tuple) and isinstance(named, tuple):
            fields = named  # a named tuple
        else:
            slots = _slot_names(kind)
            if slots is not None:
                fields = tuple(slot for slot in slots if not slot.startswith("_"))
    if fields is not None:
        fields = tuple(field for field in fields if field not in _RESERVED)
    return _Plan(_class_name(kind), fields, registered=True)


def _slot_names(kind: type) -> tuple[str, ...] | None:
    """The slots of a class whose instances have no ``__dict__``; ``None`` for other classes."""
    names: list[str] = []
    for klass in reversed(getattr(kind, "__mro__", ())):
        if klass is object:
            continue
        declared = klass.__dict__.get("__slots__")
        if declared is None:
            return None  # a class without __slots__ (or a built-in one): instances differ
        for slot in (declared,) if isinstance(declared, str) else declared:
            if slot == "__dict__":
                return None
            if slot != "__weakref__" and slot not in names:
                names.append(slot)
    return tuple(names)


class Encoder:
    """Turns live values into plain, redacted JSON values.

    One encoder may encode many values, one at a time (it is not thread-safe).

    :param redact: key patterns whose values are replaced by ``"[REDACTED]"`` (see
        :func:`compile_redact`).
    """

    def __init__(self, redact: Sequence[str] | re.Pattern[str] | None = DEFAULT_REDACT) -> None:
        self._redact = compile_redact(redact)
        self._rules: Redactor | None = redactor(self._redact)
        self._active: set[int] = set()
        # id -> (object, plain value, failures): a container met again (the same message in
        # the input and the state of many steps of one batch) is encoded once. The object is
        # kept so that its id cannot be reused while the encoder lives.
        self._memo: dict[int, tuple[Any, Any, tuple[str, ...]]] = {}
        #: type names of the values the last :meth:`encode` stored as a repr
        self.failures: list[str] = []

    def forget(self) -> None:
        """Forget the containers encoded so far (the memo shares them between the values of
        one batch): the next values are read anew, and no object is kept alive."""
        self._memo.clear()

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
        if kind is str:
            rules = self._rules
            # short strings (names, ids, statuses) hold no secret shape: skip the call
            return value if rules is None or len(value) < _MIN_TEXT else rules.text(value)
        if kind is int or kind is float or kind is bool or value is None:
            return value
        if kind is dict:
            return self._container(value, depth, self._mapping)
        if kind is list or kind is tuple:
            return self._container(value, depth, self._sequence)
        return self._other(value, depth)

    def _other(self, value: Any, depth: int) -> Any:
        routes = _routes
        route = routes.get(type(value), _UNSEEN)
        if route is not _UNSEEN:
            if route is None:
                return self._container(value, depth, self._model)
            return self._container(value, depth, lambda v, d: self._dataclass(v, d, route))
        if isinstance(value, enum.Enum):
            return self._value(value.value, depth + 1)
        if isinstance(value, str):
            return self._value(str.__str__(value), depth)
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
        kind = type(value)
        plan = _plans.get(kind, _UNSEEN)
        if plan is _UNSEEN:
            plan = _plan_of(kind)
        if plan is not None and plan.registered:
            return self._typed_object(value, depth, plan)
        if _is_pydantic_model(value):
            _remember_route(routes, kind, None)
            return self._container(value, depth, self._model)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            names = tuple(f.name for f in dataclasses.fields(value))
            _remember_route(routes, kind, names)
            return self._container(value, depth, lambda v, d: self._dataclass(v, d, names))
        if isinstance(value, Mapping):
            return self._container(value, depth, self._mapping)
        if isinstance(value, Set):
            return self._container(value, depth, self._set)
        if isinstance(value, Sequence) and not isinstance(value, range):
            return self._container(value, depth, self._sequence)
        if plan is not None:  # an object of public __slots__
            return self._typed_object(value, depth, plan)
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

    def _mapping(
        self,
        value: Mapping[Any, Any],
        depth: int,
        walk: Callable[[Any, int], Any] | None = None,
    ) -> dict[str, Any]:
        """``value`` as a dict, redacted by key; its items encoded by ``walk`` (:meth:`_value`,
        or :meth:`_dumped` for what pydantic dumped)."""
        out: dict[str, Any] = {}
        rules = self._rules
        if walk is None:
            walk = self._value
        if rules is None:
            for key, item in value.items():
                out[key if type(key) is str else self._key(key)] = walk(item, depth)
            return out
        # {"name": "token", "value": ...}
        record = "value" in value and rules.record_secret(value)
        keys = rules.key_cache  # read inline: this runs for every mapping of every step
        for key, item in value.items():
            name = key if type(key) is str else self._key(key)
            name, secret = keys.get(name) or rules.key(name)
            if item is not None and (secret or (record and name == "value")):
                out[name] = REDACTED
            else:
                out[name] = walk(item, depth)
        return out

    def _is_secret(self, name: str) -> bool:
        return self._rules is not None and self._rules.is_secret_key(name)

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
        if len(value) == 2 and self._rules is not None and self._rules.pair_secret(value):
            return [self._value(value[0], depth), REDACTED]  # ("API_KEY", "...")
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
            return self._mapping({name: getattr(value, name, None) for name in names}, depth)
        if type(dumped) is not dict:
            return self._dumped(dumped, depth)  # a RootModel
        return self._dumped_mapping(dumped, depth)

    # -- what pydantic dumped in JSON mode: new dicts and lists of JSON values, shared with
    # nothing, so walked without _container's memo, cycle and failure bookkeeping; _dumped and
    # _dumped_sequence mirror _value and _sequence and hand anything else to the general walk

    def _dumped(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if kind is str:
            rules = self._rules
            return value if rules is None or len(value) < _MIN_TEXT else rules.text(value)
        if kind is int or kind is float or kind is bool or value is None:
            return value
        if depth < _MAX_DEPTH:  # (_container's limit: the general way stores a repr past it)
            if kind is dict:
                return self._dumped_mapping(value, depth + 1)
            if kind is list:
                return self._dumped_sequence(value, depth + 1)
        return self._value(value, depth)

    def _dumped_mapping(self, value: dict[Any, Any], depth: int) -> dict[str, Any]:
        return self._mapping(value, depth, self._dumped)

    def _dumped_sequence(self, value: list[Any], depth: int) -> list[Any]:
        if len(value) == 2 and self._rules is not None and self._rules.pair_secret(value):
            return [self._dumped(value[0], depth), REDACTED]
        return [self._dumped(item, depth) for item in value]

    def _dataclass(self, value: Any, depth: int, names: tuple[str, ...]) -> dict[str, Any]:
        return self._mapping({name: getattr(value, name, None) for name in names}, depth)

    def _typed_object(self, value: Any, depth: int, plan: _Plan) -> Any:
        return self._container(value, depth, lambda v, d: self._fields(v, d, plan))

    def _fields(self, value: Any, depth: int, plan: _Plan) -> dict[str, Any]:
        out: dict[str, Any] = {_TYPE_KEY: plan.name}
        names = plan.fields
        if names is None:
            if _is_pydantic_model(value):
                dumped = self._model(value, depth)
                out.update(dumped if type(dumped) is dict else {"root": dumped})
                return out
            try:
                names = tuple(name for name in vars(value) if type(name) is str and name[:1] != "_")
            except TypeError:  # no __dict__
                names = ()
        attributes: dict[str, Any] = {}
        for name in names:
            try:
                attributes[name] = getattr(value, name)
            except AttributeError:
                continue  # an unset slot, or a field this version of the class lacks
            except Exception:
                # A property that raised: the field is missing from the record, so say so.
                self.failures.append(plan.name)
        out.update(self._mapping(attributes, depth))
        return out

    # -- the rest --

    def _opaque(self, value: Any, *, short: bool = False) -> dict[str, str]:
        name = _type_name(value)
        try:
            text = short_repr(value, 200) if short else repr(value)
        except Exception as exc:
            text = f"<{name} object; its repr raised {type(exc).__name__}>"
        if self._rules is not None:
            text = self._rules.text(text)  # a repr shows its fields: Client(api_key='...')
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
    rules = encoder._rules
    if rules is not None and rules.record_secret(value):
        return None
    for key, item in value.items():
        kind = type(item)
        if type(key) is not str or not (
            kind is int
            or kind is float
            or kind is bool
            or item is None
            or (kind is str and len(item) <= INLINE_MAX)
        ):
            return None
        if rules is not None and (
            (item is not None and rules.is_secret_key(key))
            or rules.text(key) is not key
            or (kind is str and rules.text(item) is not item)
        ):
            return None  # something to redact: the general way does it
    text = to_json(value)
    if len(text) > INLINE_MAX:
        return None  # long: stored as a blob, the general way
    return "[" + text + "]"


_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _key_of(data: bytes) -> str:
    return _digest_key(hashlib.blake2b(data, digest_size=16).digest())


def _digest_key(digest: bytes) -> str:
    # base64.urlsafe_b64encode, without its two Python-level calls (one per blob)
    return binascii.b2a_base64(digest, newline=False)[:22].translate(_URLSAFE).decode("ascii")


class Packer:
    """Turns plain values into entries, collecting the blobs they need in :attr:`blobs`.

    A packer remembers the containers it packed by identity, so the values given to it must not
    change while it is in use (a store uses one packer per batch, on values it made itself).
    """

    def __init__(
        self,
        long_keys: dict[tuple[int, int, int], str] | None = None,
        known: Mapping[str, Any] | None = None,
    ) -> None:
        #: key -> uncompressed blob, for every blob an entry made so far refers to
        self.blobs: dict[str, bytes] = {}
        #: key -> string, for the blobs of long strings met before and stored already, whose
        #: blob is not in :attr:`blobs` (see ``long_keys``)
        self.reused: dict[str, str] = {}
        #: key -> the blob as stored (compressed), for very long strings: made piece by piece,
        #: so that no uncompressed copy of the whole value is ever held (see _stream_blob)
        self.ready: dict[str, bytes | bytearray] = {}
        # id -> (container, entry, size): plain containers shared between values (as the
        # encoder shares them) are packed once
        self._memo: dict[int, tuple[Any, Any, int]] = {}
        # (id, length, hash) of a long string -> its blob key, across packers (a store's):
        # a long value that stays in the state is dumped and hashed once, not at every step;
        # ``known`` holds the keys the store has written
        self._long = long_keys
        self._known = known

    def column(self, plain: Any) -> str | None:
        """The text a table column holds for ``plain``: its entry as JSON, ``None`` for None.

        :param plain: a plain value.
        :returns: ``'[value]'`` for a small value, ``'"key"'`` for a blob, or ``None``.
        """
        if plain is None:
            return None
        entry, _ = self._put(plain)
        return to_json(entry)

    def reused_blob(self, key: str) -> bytes:
        """The uncompressed blob of a long string in :attr:`reused`, made again."""
        return b"v" + _dumps(self.reused[key]).encode("utf-8", "surrogatepass")

    def _stream_blob(self, value: str) -> str:
        """The key of the ``v`` blob of a very long string, its stored form in :attr:`ready`:
        hashed and compressed a piece at a time (JSON escapes one character at a time, so the
        pieces' JSON joins into the whole string's)."""
        hasher = hashlib.blake2b(digest_size=16)
        squeeze = zlib.compressobj(6)
        packed = bytearray(b"z")  # grown in place: no second copy of the compressed value
        total = 0
        for piece in _json_pieces(value):
            hasher.update(piece)
            packed += squeeze.compress(piece)
            total += len(piece)
        packed += squeeze.flush()
        key = _digest_key(hasher.digest())
        if key not in self.ready and key not in self.blobs:
            if len(packed) < total * 0.9:
                self.ready[key] = packed  # (SQLite takes any buffer)
            else:  # not worth compressing (text that is random already): stored as it is
                del packed
                self.blobs[key] = b"".join(_json_pieces(value))
        return key

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
            long = self._long
            if long is None or size < LONG_MIN:
                return self._blob(b"v", _dumps(value)), size
            ident = (id(value), size, hash(value))
            key = long.get(ident)
            if key is not None:
                if key in self.blobs or key in self.ready:  # met earlier in this batch
                    return key, size
                if self._known is not None and key in self._known:
                    self.reused[key] = value
                    return key, size
            if size >= STREAM_MIN:
                key = self._stream_blob(value)
            else:
                key = self._blob(b"v", _dumps(value))
            if len(long) >= _LONG_ENTRIES:
                long.clear()
            long[ident] = key
            return key, size
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
        if len(items) <= FANOUT:  # one leaf (most values): no chunks
            return self._blob(leaf, _dumps(dict(items) if leaf == b"d" else items))
        keys = [
            self._blob(leaf, _dumps(dict(chunk) if leaf == b"d" else chunk))
            for chunk in _chunks(items)
        ]
        while len(keys) > 1:
            keys = [self._blob(interior, _dumps(chunk)) for chunk in _chunks(keys)]
        return keys[0]


def _json_pieces(value: str) -> Iterator[bytes]:
    """The ``v`` blob of a string, as pieces of bytes: the tag, then its JSON text."""
    yield b"v"
    yield b'"'
    for start in range(0, len(value), _PIECE):
        yield _dumps(value[start : start + _PIECE])[1:-1].encode("utf-8", "surrogatepass")
    yield b'"'


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
