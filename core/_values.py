"""Values as the debugger shows them: plain views and short, bounded renderings.

A stop's state holds whatever the framework put there: dicts, pydantic models, dataclasses,
lists and tuples, chat messages, and stored values read back from a recorded run.

* :func:`to_plain` turns a value into a JSON-like view (dicts, lists and scalars).
* :func:`short_repr` renders a value in about ``limit`` characters without ever building its
  full ``repr``: a 10 MB string or a million-element list costs no more than a small one.
* :func:`summarize` gives one :class:`KeySummary` row per top-level key of a state.

What :func:`short_repr` and :func:`summarize` show is redacted under :mod:`flowdbg._redact`'s
rules (secret keys, name/value records and pairs, secret parts of strings), as the store keeps
it: the terminal shows no secret the recording would not keep. :func:`to_plain` keeps values
as they are (its callers that write, such as :func:`flowdbg._json.jsonable`, redact).

The structure helpers here (what counts as a model, a record, a sequence) are shared with
:mod:`flowdbg._paths` and :mod:`flowdbg._diff`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import decimal
import enum
import pathlib
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from flowdbg._redact import REDACTED, Redactor, redactor

__all__ = ["KeySummary", "short_repr", "summarize", "to_plain"]

_ELLIPSIS = "\u2026"
#: how far past what is shown a string is searched for secrets, so that a secret cut at the
#: edge of a short repr is recognised (and not shown in part)
_REDACT_MARGIN = 512
_REPR_MAX_LEVEL = 6
# The keys of a stored typed or opaque object (flowdbg.store._encode writes them).
_TYPE_KEY = "__type__"
_REPR_KEY = "__repr__"


# --------------------------------------------------------------------------------------------
# Structure helpers
# --------------------------------------------------------------------------------------------


def _is_pydantic_model(obj: object) -> bool:
    """Whether ``obj`` is a pydantic v2 model instance (checked without importing pydantic)."""
    if isinstance(obj, type):
        return False
    fields = getattr(type(obj), "__pydantic_fields__", None)
    return isinstance(fields, dict) and callable(getattr(obj, "model_dump", None))


def _is_dataclass_instance(obj: object) -> bool:
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type)


def _is_namedtuple(obj: object) -> bool:
    return isinstance(obj, tuple) and isinstance(getattr(type(obj), "_fields", None), tuple)


def _is_collection_sequence(obj: object) -> bool:
    """Sequences of items: lists, tuples, ... but not strings or bytes."""
    return isinstance(obj, Sequence) and not isinstance(obj, str | bytes | bytearray)


def _model_field_names(obj: object) -> list[str]:
    names = list(getattr(type(obj), "__pydantic_fields__", {}))
    extra = getattr(obj, "__pydantic_extra__", None)
    if isinstance(extra, dict):
        names.extend(key for key in extra if isinstance(key, str))
    return names


def _fields_of(obj: object) -> dict[Any, Any] | None:
    """The shallow fields of a mapping, pydantic model or dataclass; ``None`` for anything else."""
    if isinstance(obj, Mapping):
        return dict(obj)
    if _is_pydantic_model(obj):
        return {name: getattr(obj, name, None) for name in _model_field_names(obj)}
    if _is_dataclass_instance(obj):
        return {f.name: getattr(obj, f.name, None) for f in dataclasses.fields(obj)}  # type: ignore[arg-type]
    return None


# --------------------------------------------------------------------------------------------
# Plain values
# --------------------------------------------------------------------------------------------


def _safe_repr(value: object) -> str:
    try:
        text = repr(value)
    except Exception:
        return f"<unreprable {_type_name(value)}>"
    return text if isinstance(text, str) else f"<unreprable {_type_name(value)}>"


def _type_name(value: object) -> str:
    try:
        return type(value).__name__
    except Exception:  # pragma: no cover - type() of an object always has a name
        return "object"


def _safe_getattr(obj: object, name: str) -> tuple[bool, Any]:
    try:
        return True, getattr(obj, name)
    except Exception:
        return False, None


def _is_message_like(value: object) -> bool:
    """Chat-message objects: a ``type`` and a ``content`` attribute (LangChain messages et al.)."""
    if isinstance(value, type | Mapping):
        return False
    # Models are shown field by field, except messages (LangChain's are pydantic models).
    is_model = _is_pydantic_model(value) or _is_dataclass_instance(value)
    if is_model and not any(klass.__name__ == "BaseMessage" for klass in type(value).__mro__):
        return False
    has_type, kind = _safe_getattr(value, "type")
    has_content, _ = _safe_getattr(value, "content")
    return has_type and has_content and isinstance(kind, str)


_MESSAGE_EXTRAS = ("name", "tool_calls", "tool_call_id")


def _plain(value: Any, depth: int, max_depth: int, active: set[int]) -> Any:
    if value is None or isinstance(value, bool | float):
        return value
    if isinstance(value, enum.Enum):
        return _plain(value.value, depth, max_depth, active)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return _safe_repr(bytes(value))
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID | decimal.Decimal | pathlib.PurePath):
        return str(value)
    if depth >= max_depth:
        return short_repr(value)
    if id(value) in active:
        return f"<cycle: {_type_name(value)}>"
    active.add(id(value))
    try:
        return _plain_container(value, depth, max_depth, active)
    finally:
        active.discard(id(value))


def _plain_container(value: Any, depth: int, max_depth: int, active: set[int]) -> Any:
    below = depth + 1
    if isinstance(value, Mapping):
        return {key: _plain(item, below, max_depth, active) for key, item in value.items()}
    if _is_message_like(value):
        out = {
            "type": _plain(getattr(value, "type"), below, max_depth, active),  # noqa: B009
            "content": _plain(getattr(value, "content"), below, max_depth, active),  # noqa: B009
        }
        for name in _MESSAGE_EXTRAS:
            found, extra = _safe_getattr(value, name)
            if found and extra:
                out[name] = _plain(extra, below, max_depth, active)
        return out
    fields = _fields_of(value)
    if fields is not None:
        return {key: _plain(item, below, max_depth, active) for key, item in fields.items()}
    if isinstance(value, set | frozenset):
        items = list(value)
        with contextlib.suppress(Exception):
            items.sort()
        return [_plain(item, below, max_depth, active) for item in items]
    if _is_collection_sequence(value) and not isinstance(value, range):
        return [_plain(item, below, max_depth, active) for item in value]
    return _safe_repr(value)


def to_plain(value: Any, *, max_depth: int = 50) -> Any:
    """A JSON-like view of a value, for display and for :meth:`StateDiff.to_dict`.

    Mappings become dicts (keys kept as they are), pydantic models and dataclasses dicts of their
    fields, lists and tuples lists, sets sorted lists (when their items sort). Chat-message objects
    (with a str ``type`` and a ``content``, such as LangChain messages) become
    ``{"type": ..., "content": ...}`` plus ``name``, ``tool_calls`` and ``tool_call_id`` when set.
    Enums become their value; dates ISO strings; UUIDs, decimals and paths strings; bytes and any
    other object their ``repr``. The value itself is never changed.

    :param value: the value to convert.
    :param max_depth: nesting depth below which values are replaced by their :func:`short_repr`;
        reference cycles become ``"<cycle: TYPE>"``.
    :returns: a structure of dicts, lists, str, int, float, bool and None.
    """
    return _plain(value, 0, max_depth, set())


# --------------------------------------------------------------------------------------------
# Short reprs
# --------------------------------------------------------------------------------------------


class _BoundedRepr:
    """Builds a ``repr`` of at most about ``budget`` characters, visiting only what it shows."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.pieces: list[str] = []
        self.size = 0
        self.cut = False
        self.active: set[int] = set()

    def room(self, depth: int) -> int:
        return self.budget - self.size - depth

    def put(self, text: str) -> None:
        self.pieces.append(text)
        self.size += len(text)

    def text(self) -> str:
        return "".join(self.pieces)

    def put_clipped(self, text: str, depth: int) -> None:
        """Put an opaque piece of text, clipping it if it does not fit."""
        room = self.room(depth)
        if len(text) <= room:
            self.put(text)
            return
        self.put(text[: max(room - 1, 1)] + _ELLIPSIS)
        self.cut = True

    def put_string(self, value: str | bytes, depth: int) -> None:
        room = self.room(depth)
        if isinstance(value, str):
            # Only the part that can be shown is searched, so a huge string stays cheap.
            reach = max(room, 0) + _REDACT_MARGIN
            shown = value if len(value) <= reach else value[:reach]
            redacted = _rules().text(shown)
            if redacted is not shown:
                value = redacted if shown is value else redacted + value[reach:]
        if len(value) + 2 <= room:  # cheap pre-check: most strings fit and need no slicing
            text = _safe_repr(value)
            if len(text) <= room:
                self.put(text)
                return
        if room < 4:
            self.put(_ELLIPSIS)
            self.cut = True
            return
        # Shorten the slice until its repr, plus the ellipsis, fits. Slicing (rather than cutting
        # the repr) never splits an escape; scaling by the repr's length handles escape-heavy text.
        keep = max(room, 1)
        head = _safe_repr(value[:keep])
        while len(head) + 1 > room and keep > 0:
            keep = min(keep - 1, keep * max(room - 4, 0) // max(len(head) - 3, 1))
            head = _safe_repr(value[: max(keep, 0)])
        self.put(head[:-1] + _ELLIPSIS + head[-1])
        self.cut = True

    def put_items(
        self,
        items: Iterable[Any],
        count: int,
        brackets: tuple[str, str],
        depth: int,
        style: Literal["items", "pairs", "fields"] = "items",
        record_of: Mapping[Any, Any] | None = None,
    ) -> None:
        """Put a bracketed, comma-separated run of items, stopping where the budget runs out.

        ``style`` says what each item is: a value, a ``(key, value)`` pair shown ``key: value``,
        or a ``(name, value)`` field shown ``name=value``; the values of secret keys are shown
        redacted, and so is the ``"value"`` of ``record_of`` when it is a name/value record of
        a secret.
        """
        opener, closer = brackets
        self.put(opener)
        record = record_of is not None and _rules().record_secret(record_of)
        if depth >= _REPR_MAX_LEVEL and count:
            self.put(_ELLIPSIS + closer)
            return
        for index, item in enumerate(items):
            if index:
                if self.cut or self.room(depth) < 4:
                    self.put(", " + _ELLIPSIS)
                    self.cut = True
                    break
                self.put(", ")
            if style == "pairs":
                self.emit(item[0], depth + 1)
                self.put(": ")
                if self.cut:
                    self.put(_ELLIPSIS)
                else:
                    self.emit(_shown_item(item, record), depth + 1)
            elif style == "fields":
                self.put(f"{item[0]}=")
                self.emit(_shown_item(item, record), depth + 1)
            else:
                self.emit(item, depth + 1)
            if self.cut:
                if index + 1 < count:
                    self.put(", " + _ELLIPSIS)
                break
        self.put(closer)

    def emit(self, value: Any, depth: int) -> None:
        if self.cut:
            return
        if isinstance(value, str | bytes):
            self.put_string(value, depth)
            return
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 10_000:
            self.put_clipped(f"<int of {value.bit_length():,} bits>", depth)
            return
        kind = type(value)
        if id(value) in self.active:
            self.put(f"<cycle: {kind.__name__}>")
            return
        self.active.add(id(value))
        try:
            self.emit_container(value, kind, depth)
        finally:
            self.active.discard(id(value))

    def emit_container(self, value: Any, kind: type, depth: int) -> None:
        if isinstance(value, list | tuple) and _rules().pair_secret(value):
            value = (value[0], REDACTED) if isinstance(value, tuple) else [value[0], REDACTED]
            kind = type(value)
        if kind is list or (isinstance(value, list) and kind.__repr__ is list.__repr__):
            self.put_items(value, len(value), ("[", "]"), depth)
        elif kind is tuple or (isinstance(value, tuple) and kind.__repr__ is tuple.__repr__):
            closer = ",)" if len(value) == 1 else ")"
            self.put_items(value, len(value), ("(", closer), depth)
        elif isinstance(value, dict) and kind.__repr__ is dict.__repr__:
            name = _typed_object_name(value)
            if name is None:
                self.put_items(value.items(), len(value), ("{", "}"), depth, "pairs", value)
            else:
                typed = _typed_object_fields(value)
                self.put_items(typed, len(value) - 1, (f"{name}(", ")"), depth, "fields")
        elif isinstance(value, set | frozenset) and kind.__repr__ in (
            set.__repr__,
            frozenset.__repr__,
        ):
            if not value:
                self.put(f"{kind.__name__}()")
            elif kind is set:
                self.put_items(value, len(value), ("{", "}"), depth)
            else:
                self.put_items(value, len(value), (f"{kind.__name__}({{", "})"), depth)
        elif _is_namedtuple(value) or _is_pydantic_model(value) or _is_dataclass_instance(value):
            fields = _repr_fields(value)
            self.put_items(fields, len(fields), (f"{kind.__name__}(", ")"), depth, "fields")
        elif isinstance(value, Mapping):
            brackets = (f"{kind.__name__}({{", "})")
            self.put_items(value.items(), len(value), brackets, depth, "pairs", value)
        elif isinstance(value, bytearray):
            self.put(f"{kind.__name__}(")
            self.put_string(bytes(value[: self.room(depth) + 1]), depth + 1)
            self.put(")")
        elif _is_collection_sequence(value) and not isinstance(value, range):
            self.put_items(value, len(value), (f"{kind.__name__}([", "])"), depth)
        else:
            self.put_clipped(_rules().text(_safe_repr(value)), depth)


_redactor: Redactor | None = None


def _rules() -> Redactor:
    """The default redaction rules (made on first use, not at import)."""
    global _redactor
    if _redactor is None:
        _redactor = redactor()
        assert _redactor is not None
    return _redactor


def _shown_item(item: tuple[Any, Any], record: bool) -> Any:
    """The value of a ``(key, value)`` item as shown: redacted under a secret key."""
    key, value = item
    if (
        value is not None
        and type(key) is str
        and (_rules().is_secret_key(key) or (record and key == "value"))
    ):
        return REDACTED
    return value


def _typed_object_name(value: dict[Any, Any]) -> str | None:
    """The short class name of a stored typed object, ``None`` for any other dict.

    The store keeps a framework object whose class matters (LangGraph's ``Send``) as
    ``{"__type__": "langgraph.types.Send", "node": ..., "arg": ...}``, and an opaque one with a
    ``"__repr__"`` key as well (see :mod:`flowdbg.store._encode`); only the former is a typed
    object, shown as ``Send(node=..., arg=...)``.
    """
    qualified = value.get(_TYPE_KEY)
    if type(qualified) is not str or _REPR_KEY in value:
        return None
    name = qualified.rpartition(".")[2]
    return name if name.isidentifier() else None


def _typed_object_fields(value: dict[Any, Any]) -> Iterator[tuple[str, Any]]:
    # A generator, so that only the fields shown are visited.
    for key, item in value.items():
        if key != _TYPE_KEY:
            yield (key if isinstance(key, str) else _safe_repr(key)), item


def _repr_fields(value: Any) -> list[tuple[str, Any]]:
    if _is_namedtuple(value):
        return list(zip(type(value)._fields, value, strict=False))
    if _is_pydantic_model(value):
        infos = getattr(type(value), "__pydantic_fields__", {})
        names = [n for n in _model_field_names(value) if getattr(infos.get(n), "repr", True)]
    else:
        names = [f.name for f in dataclasses.fields(value) if f.repr]
    return [(name, _safe_getattr(value, name)[1]) for name in names]


def _size_note(value: Any) -> str | None:
    """``(N chars)`` or ``(N items)`` for values whose length is cheap and meaningful."""
    if isinstance(value, str):
        return f"({len(value):,} chars)"
    if isinstance(value, bytes | bytearray):
        return f"({len(value):,} bytes)"
    if (
        isinstance(value, dict)
        and type(value).__repr__ is dict.__repr__
        and _typed_object_name(value) is not None
    ):
        return None  # an object, not a container: no count, as for a dataclass
    if isinstance(value, Mapping | set | frozenset) or _is_collection_sequence(value):
        try:
            count = len(value)
        except Exception:
            return None
        return f"({count:,} item{'' if count == 1 else 's'})"
    return None


def short_repr(value: Any, limit: int = 80) -> str:
    """A ``repr`` cut to about ``limit`` characters, for display.

    A truncated result ends with an ellipsis and, for strings and containers, a note of the full
    size: ``"'aaaa…' (10,000 chars)"``, ``"[1, 2, 3, …] (500 items)"``. Strings, containers,
    pydantic models and dataclasses are rendered piece by piece and only as far as shown, so a
    10 MB string or a million-element list costs no more than a small one; other objects use their
    own ``repr``. A stored typed object, a dict with a ``"__type__"`` key (its qualified class
    name) and no ``"__repr__"`` key, is shown as its class with its fields, like a dataclass:
    ``{"__type__": "langgraph.types.Send", "node": "work", "arg": {}}`` gives
    ``"Send(node='work', arg={})"``. This function never raises: a failing ``__repr__`` gives
    ``"<unreprable Foo>"``.

    :param value: the value to show.
    :param limit: the wanted length (at least 10 is used).
    :returns: the text.
    """
    limit = max(limit, 10)
    try:
        text, cut = _render(value, limit)
        if not cut:
            return text
        note = _size_note(value)
        if note:
            text, cut = _fit(value, limit - len(note) - 1)
            if len(text) + len(note) + 1 <= limit:
                return f"{text} {note}" if cut else text
        # No note, or no room for one next to the smallest rendering of the value.
        return _fit(value, limit)[0]
    except Exception:
        return f"<unreprable {_type_name(value)}>"


def _render(value: Any, budget: int) -> tuple[str, bool]:
    builder = _BoundedRepr(budget)
    builder.emit(value, 0)
    return builder.text(), builder.cut


def _fit(value: Any, target: int) -> tuple[str, bool]:
    """Render within ``target`` characters when possible (brackets are not budgeted exactly)."""
    budget = max(target, 4)
    text, cut = _render(value, budget)
    for _ in range(4):
        if len(text) <= target or budget <= 4:
            break
        budget = max(budget - (len(text) - target), 4)
        text, cut = _render(value, budget)
    return text, cut


# --------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeySummary:
    """One row of :func:`summarize`: a top-level key of the state."""

    key: str
    """The key or field name (``"."`` when the state has no keys and the row is the root)."""
    type: str
    """The value's type name, e.g. ``"int"``, ``"list"`` or a model class name."""
    size: int | None
    """``len()`` of the value, or ``None`` when it has no length."""
    preview: str
    """The value's :func:`short_repr`."""


_SCALARS = str | bytes | bytearray | int | float | complex | enum.Enum


def _top_level(state: Any) -> list[tuple[str, Any]] | None:
    fields = _fields_of(state)
    if fields is not None:
        return [(key if isinstance(key, str) else _safe_repr(key), v) for key, v in fields.items()]
    if (
        state is None
        or isinstance(state, _SCALARS | Sequence | set | frozenset)
        or _is_message_like(state)
    ):
        return None
    try:
        attributes = vars(state)
    except TypeError:
        return None
    return [(k, v) for k, v in attributes.items() if isinstance(k, str) and not k.startswith("_")]


def _size_of(value: Any) -> int | None:
    if not hasattr(type(value), "__len__"):
        return None
    try:
        size = len(value)
    except Exception:
        return None
    return size if isinstance(size, int) else None


def summarize(state: Any, *, preview_chars: int = 60) -> list[KeySummary]:
    """One row per top-level key of the state, for an overview of a stop.

    Rows come from mapping keys, pydantic model fields, dataclass fields or the public attributes
    of a plain object, in their own order. Any other state (a list, a scalar, a message) gives a
    single row for the root, keyed ``"."``.

    :param state: the state.
    :param preview_chars: the length of each row's preview.
    :returns: the rows.
    """
    rows = _top_level(state)
    if rows is None:
        rows = [(".", state)]
    out = []
    for key, value in rows:
        shown = _shown_item((key, value), False)
        out.append(
            KeySummary(
                key=key,
                type=_type_name(value),
                # a secret's size is not shown either: its length says something of it
                size=None if shown is REDACTED else _size_of(value),
                preview=short_repr(shown, preview_chars),
            )
        )
    return out
