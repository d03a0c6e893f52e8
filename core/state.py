"""Reading, editing and comparing the state a debugged node sees.

A stop hands the debugger the state of the node it stopped in: most often a ``dict``, but also a
pydantic model, a dataclass, lists and tuples, or a nested mix of them holding framework objects
such as chat messages. This module gives that state one small vocabulary:

* **paths** name a value inside the state: ``count``, ``messages[-1].content``,
  ``config['user id']``. :func:`parse_path` and :func:`format_path` convert between the text form
  and a tuple of parts; :func:`get_path`, :func:`set_path` and :func:`delete_path` follow them.
  Paths arrive over the network, so parts starting with ``_`` are refused outright: no path can
  reach ``__class__``, ``__globals__`` or a private attribute.
* **diffs**: :func:`diff` compares the state before and after a node and returns a
  :class:`StateDiff` of added, removed and changed paths.
* **display**: :func:`to_plain` turns a value into a JSON-like view, :func:`summarize` gives one row
  per top-level key and :func:`short_repr` truncates a ``repr`` without ever building it in full.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import decimal
import enum
import functools
import pathlib
import re
import types
import uuid
from collections.abc import Iterable, Mapping, MutableMapping, MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from flowdbg.errors import PathError

__all__ = [
    "Change",
    "KeySummary",
    "PathPart",
    "StateDiff",
    "delete_path",
    "diff",
    "format_path",
    "get_path",
    "parse_path",
    "set_path",
    "short_repr",
    "summarize",
    "to_plain",
]

PathPart: TypeAlias = str | int
"""One step of a state path: a mapping key or attribute name (``str``) or an index (``int``)."""

_ELLIPSIS = "\u2026"
_NAME_RE = re.compile(r"\w+")
_INDEX_RE = re.compile(r"-?\d+")
_MAX_INDEX_DIGITS = 18
_MAX_LISTED_NAMES = 30
_DIFF_MAX_DEPTH = 100
_REPR_MAX_LEVEL = 6

# Objects whose attributes lead into the interpreter rather than into the state.
_OPAQUE_TYPES = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.MethodWrapperType,
    types.CodeType,
    types.FrameType,
    types.TracebackType,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
    functools.partial,
)
_REFUSED_ATTRIBUTES = frozenset(
    {
        "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code",
        "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "tb_frame", "tb_next",
    }
)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Paths: parsing and formatting
# --------------------------------------------------------------------------------------------


def _is_name(key: str) -> bool:
    """Whether ``key`` can be written bare in a path (``a.key``) rather than quoted."""
    match = _NAME_RE.fullmatch(key)
    return match is not None and key.isidentifier()


def _malformed(path: str, position: int, reason: str) -> PathError:
    return PathError(f"state path {path!r} is malformed at position {position}: {reason}")


def _refused(path: str, position: int, part: str) -> PathError:
    return PathError(
        f"state path {path!r} is refused at position {position}: {part!r} starts with '_', "
        "and names starting with '_' are never accessible"
    )


def _skip_spaces(text: str, i: int, end: int) -> int:
    while i < end and text[i].isspace():
        i += 1
    return i


def _parse_bracket(path: str, i: int, end: int) -> tuple[PathPart, int]:
    """Parse ``[...]`` starting at ``path[i] == '['``; return the part and the index after ``]``."""
    j = _skip_spaces(path, i + 1, end)
    if j < end and path[j] in "'\"":
        quote = path[j]
        k = j + 1
        chars: list[str] = []
        while k < end and path[k] != quote:
            if path[k] == "\\":
                if k + 1 >= end:
                    break
                k += 1
            chars.append(path[k])
            k += 1
        if k >= end:
            raise _malformed(path, j, f"the quoted key starting here has no closing {quote}")
        key = "".join(chars)
        if key.startswith("_"):
            raise _refused(path, j, key)
        k = _skip_spaces(path, k + 1, end)
        if k >= end or path[k] != "]":
            raise _malformed(path, k, "expected ']' after the quoted key")
        return key, k + 1
    match = _INDEX_RE.match(path, j, end)
    if match is None:
        reason = "expected an index or a quoted key after '['"
        word = _NAME_RE.match(path, j, end)
        if word is not None:
            reason += f" (write [{word.group()!r}] for a key)"
        raise _malformed(path, j, reason)
    digits = match.group().lstrip("-")
    if len(digits) > _MAX_INDEX_DIGITS:
        raise _malformed(path, j, "the index is too large")
    k = _skip_spaces(path, match.end(), end)
    if k >= end or path[k] != "]":
        raise _malformed(path, k, "expected ']' after the index")
    return int(match.group()), k + 1


def _parse_name(path: str, i: int, end: int, after_dot: bool) -> tuple[str, int]:
    match = _NAME_RE.match(path, i, end)
    if match is None:
        if after_dot:
            raise _malformed(path, i, "expected a name after '.'")
        raise _malformed(path, i, f"unexpected character {path[i]!r}")
    name = match.group()
    if not name.isidentifier():
        raise _malformed(
            path,
            i,
            f"{name!r} is not a name; write [{name}] for an index or [{name!r}] for a key",
        )
    if name.startswith("_"):
        raise _refused(path, i, name)
    return name, match.end()


def _check_parts(parts: Iterable[object]) -> tuple[PathPart, ...]:
    checked: list[PathPart] = []
    for part in parts:
        if isinstance(part, bool) or not isinstance(part, str | int):
            raise PathError(
                f"a state path part must be a str or an int, not {type(part).__name__} ({part!r})"
            )
        if isinstance(part, str) and part.startswith("_"):
            raise PathError(
                f"state path part {part!r} is refused: it starts with '_', "
                "and names starting with '_' are never accessible"
            )
        checked.append(part)
    return tuple(checked)


def parse_path(path: str | Sequence[PathPart]) -> tuple[PathPart, ...]:
    """Split a state path into its parts.

    ``"messages[-1].content"`` gives ``("messages", -1, "content")``. Names are written bare and
    joined with ``.``; indexes (negative allowed) and keys that are not identifiers go in brackets,
    keys quoted with ``'`` or ``"`` (a backslash escapes the next character):
    ``config['user id']``. A leading ``.`` is allowed, and ``""`` or ``"."`` is the root (``()``).
    A tuple or list of parts is checked and returned as a tuple.

    :param path: the path text, or a sequence of parts.
    :returns: the parts, outermost first.
    :raises PathError: if the path is malformed (the message gives the position) or a part starts
        with ``_``: such names are refused because paths arrive from remote clients.
    """
    if not isinstance(path, str):
        if not isinstance(path, Sequence):
            raise PathError(
                f"a state path must be a str or a sequence of parts, not {type(path).__name__}"
            )
        return _check_parts(path)
    end = len(path.rstrip())
    i = len(path) - len(path.lstrip())
    parts: list[PathPart] = []
    leading_dot = False
    if i < end and path[i] == ".":
        leading_dot = True
        i += 1
    while i < end:
        char = path[i]
        if char == "[":
            part, i = _parse_bracket(path, i, end)
            parts.append(part)
        elif char == ".":
            if not parts:
                raise _malformed(path, i, "expected a name or '[' here, not '.'")
            name, i = _parse_name(path, i + 1, end, after_dot=True)
            parts.append(name)
        elif not parts:
            name, i = _parse_name(path, i, end, after_dot=leading_dot)
            parts.append(name)
        elif char == "]":
            raise _malformed(path, i, "unexpected ']' without a matching '['")
        else:
            raise _malformed(path, i, f"expected '.' or '[' before {char!r}")
    return tuple(parts)


def _quote_key(key: str) -> str:
    escaped = key.replace("\\", "\\\\").replace("'", "\\'")
    return f"['{escaped}']"


def _format_parts(parts: Iterable[object]) -> str:
    """Format parts, writing any key that is neither a str nor an int as ``[repr]``."""
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, str):
            if _is_name(part):
                pieces.append(f".{part}" if pieces else part)
            else:
                pieces.append(_quote_key(part))
        elif isinstance(part, int) and not isinstance(part, bool):
            pieces.append(f"[{part}]")
        else:
            pieces.append(f"[{short_repr(part, 40)}]")
    return "".join(pieces)


def format_path(parts: Sequence[PathPart]) -> str:
    """Write path parts as text; the inverse of :func:`parse_path`.

    ``("messages", -1, "content")`` gives ``"messages[-1].content"`` and ``("key with space",)``
    gives ``"['key with space']"``. The root, ``()``, is ``""``.

    :param parts: the parts, outermost first.
    :returns: the path text.
    :raises PathError: if a part is neither a str nor an int.
    """
    for part in parts:
        if isinstance(part, bool) or not isinstance(part, str | int):
            raise PathError(
                f"a state path part must be a str or an int, not {type(part).__name__} ({part!r})"
            )
    return _format_parts(parts)


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


def _is_sequence(obj: object) -> bool:
    """Sequences indexed by position (strings and bytes included)."""
    return isinstance(obj, Sequence)


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


def _attribute_names(obj: object) -> list[str]:
    """Public attribute names worth suggesting in an error message."""
    if _is_pydantic_model(obj):
        names = _model_field_names(obj)
    elif _is_dataclass_instance(obj):
        names = [f.name for f in dataclasses.fields(obj)]  # type: ignore[arg-type]
    elif _is_namedtuple(obj):
        names = list(type(obj)._fields)  # type: ignore[attr-defined]
    else:
        try:
            names = list(vars(obj))
        except TypeError:
            names = []
        for klass in type(obj).__mro__:
            slots = klass.__dict__.get("__slots__", ())
            names.extend([slots] if isinstance(slots, str) else list(slots))
    seen: dict[str, None] = {}
    for name in names:
        if isinstance(name, str) and not name.startswith("_"):
            seen.setdefault(name, None)
    return list(seen)


def _listing(names: Iterable[object]) -> str:
    shown: list[str] = []
    total = 0
    for name in names:
        total += 1
        if len(shown) < _MAX_LISTED_NAMES:
            shown.append(name if isinstance(name, str) else short_repr(name, 40))
    if not shown:
        return "(none)"
    text = ", ".join(shown)
    if total > len(shown):
        text += f", {_ELLIPSIS} ({total - len(shown)} more)"
    return text


def _where(parts: tuple[PathPart, ...], upto: int) -> str:
    """``at 'a.b'`` for the failing prefix, plus the full path when it is longer."""
    text = f"at {_format_parts(parts[: upto + 1])!r}"
    if upto + 1 < len(parts):
        text += f" in {_format_parts(parts)!r}"
    return text


def _index_error(seq: Sequence[Any], parts: tuple[PathPart, ...], upto: int) -> PathError:
    return PathError(f"index {parts[upto]} out of range {_where(parts, upto)} (length {len(seq)})")


def _normalize_index(
    seq: Sequence[Any], part: PathPart, parts: tuple[PathPart, ...], upto: int, what: str = "state"
) -> int:
    if not isinstance(part, int):
        if _is_namedtuple(seq):
            raise PathError(
                f"{what} has no field {part!r} {_where(parts, upto)}; "
                f"available fields: {_listing(_attribute_names(seq))}"
            )
        raise PathError(
            f"cannot look up {part!r} {_where(parts, upto)}: a {type(seq).__name__} is indexed "
            "by position, e.g. [0] or [-1]"
        )
    index = part + len(seq) if part < 0 else part
    if not 0 <= index < len(seq):
        raise _index_error(seq, parts, upto)
    return index


def _missing_key(
    mapping: Mapping[Any, Any], parts: tuple[PathPart, ...], upto: int, what: str = "state"
) -> PathError:
    part = parts[upto]
    message = (
        f"{what} has no key {part!r} {_where(parts, upto)}; available keys: {_listing(mapping)}"
    )
    if isinstance(part, int) and str(part) in mapping:
        message += f" (the key is the string {str(part)!r}: write [{str(part)!r}])"
    return PathError(message)


def _get_child(obj: Any, parts: tuple[PathPart, ...], upto: int, what: str = "state") -> Any:
    """The child of ``obj`` at ``parts[upto]``; ``what`` names the root in errors."""
    part = parts[upto]
    if isinstance(obj, Mapping):
        if part in obj:
            return obj[part]
        raise _missing_key(obj, parts, upto, what)
    if _is_sequence(obj):
        if isinstance(part, str) and _is_namedtuple(obj) and part in type(obj)._fields:
            return getattr(obj, part)
        return obj[_normalize_index(obj, part, parts, upto, what)]
    if not isinstance(part, str):
        raise PathError(
            f"cannot index a value of type {type(obj).__name__} with [{part}] "
            f"{_where(parts, upto)}: it is neither a mapping nor a sequence; "
            f"attributes: {_listing(_attribute_names(obj))}"
        )
    _check_attribute_access(obj, part, parts, upto)
    try:
        return getattr(obj, part)
    except AttributeError:
        pass
    except Exception as exc:
        raise PathError(
            f"reading attribute {part!r} {_where(parts, upto)} raised {type(exc).__name__}: {exc}"
        ) from exc
    raise PathError(
        f"{what} has no attribute {part!r} {_where(parts, upto)}; "
        f"available attributes: {_listing(_attribute_names(obj))}"
    )


def _check_attribute_access(obj: Any, name: str, parts: tuple[PathPart, ...], upto: int) -> None:
    """Refuse attribute steps that could lead out of the state into the interpreter.

    ``_`` names are refused by :func:`parse_path` already; this also keeps paths from walking
    through modules, functions, classes, frames and generators (``gen.gi_frame.f_globals``),
    which would reach module globals without any ``_`` name.
    """
    if name.startswith("_") or name in _REFUSED_ATTRIBUTES or isinstance(obj, _OPAQUE_TYPES):
        raise PathError(
            f"attribute {name!r} {_where(parts, upto)} is refused: paths cannot reach private "
            f"names or look inside a {type(obj).__name__}"
        )


def _walk(obj: Any, parts: tuple[PathPart, ...]) -> list[Any]:
    """The containers along ``parts``: ``[obj, child, ..., parent of the last part]``."""
    chain = [obj]
    for upto in range(len(parts) - 1):
        chain.append(_get_child(chain[-1], parts, upto))
    return chain


# --------------------------------------------------------------------------------------------
# Paths: get, set, delete
# --------------------------------------------------------------------------------------------


def get_path(obj: Any, path: str | Sequence[PathPart], *, what: str = "state") -> Any:
    """Follow a path into the state and return the value found there.

    A mapping is looked up by key (an int part works on int keys), a sequence by index (negative
    indexes count from the end) and anything else by attribute, which covers pydantic models,
    dataclasses and plain objects such as chat messages.

    :param obj: the state (the root of the path).
    :param path: a path as accepted by :func:`parse_path`.
    :param what: what ``obj`` is, as errors name it (``"state"``, ``"input"``...).
    :returns: the value; ``obj`` itself for the root path.
    :raises PathError: if the path is malformed or refused, or leads nowhere; the message names
        the failing part and what is available there.
    """
    parts = parse_path(path)
    value = obj
    for upto in range(len(parts)):
        value = _get_child(value, parts, upto, what)
    return value


def _rebuilt_sequence(seq: Sequence[Any], items: list[Any], what: str) -> Any:
    if isinstance(seq, str):
        if not all(isinstance(item, str) for item in items):
            raise PathError(f"cannot {what}: a str can only hold str pieces")
        return "".join(items)
    try:
        if _is_namedtuple(seq):
            return type(seq)._make(items)  # type: ignore[attr-defined]
        return type(seq)(items)  # type: ignore[call-arg]
    except Exception as exc:
        raise PathError(
            f"cannot {what}: a {type(seq).__name__} is immutable and could not be rebuilt "
            f"({type(exc).__name__}: {exc})"
        ) from exc


def _rebuilt_mapping(mapping: Mapping[Any, Any], items: dict[Any, Any], what: str) -> Any:
    try:
        return type(mapping)(items)  # type: ignore[call-arg]
    except Exception as exc:
        raise PathError(
            f"cannot {what}: a {type(mapping).__name__} is immutable and could not be rebuilt "
            f"({type(exc).__name__}: {exc})"
        ) from exc


def _pydantic_field_frozen(model: Any, name: str) -> bool:
    config = getattr(type(model), "model_config", {})
    if isinstance(config, Mapping) and config.get("frozen"):
        return True
    info = getattr(type(model), "__pydantic_fields__", {}).get(name)
    return bool(getattr(info, "frozen", False))


def _set_attribute(obj: Any, name: str, value: Any, parts: tuple[PathPart, ...], upto: int) -> Any:
    where = _where(parts, upto)
    if _is_pydantic_model(obj):
        if name not in _model_field_names(obj):
            raise PathError(
                f"state has no field {name!r} {where}; "
                f"available fields: {_listing(_attribute_names(obj))}"
            )
        if _pydantic_field_frozen(obj, name):
            return obj.model_copy(update={name: value})
        setattr(obj, name, value)  # pydantic validates here when validate_assignment is on
        return obj
    if _is_dataclass_instance(obj):
        names = {f.name: f for f in dataclasses.fields(obj)}
        if name not in names:
            raise PathError(
                f"state has no field {name!r} {where}; "
                f"available fields: {_listing(_attribute_names(obj))}"
            )
        try:
            setattr(obj, name, value)
            return obj
        except dataclasses.FrozenInstanceError:
            if not names[name].init:
                raise PathError(
                    f"cannot set {name!r} {where}: the dataclass is frozen and the field is not "
                    "an __init__ argument, so the instance cannot be rebuilt"
                ) from None
            return dataclasses.replace(obj, **{name: value})
    try:
        getattr(obj, name)
    except AttributeError:
        raise PathError(
            f"state has no attribute {name!r} {where}; set_path only changes existing "
            f"attributes; available attributes: {_listing(_attribute_names(obj))}"
        ) from None
    except Exception:
        pass  # a property that fails to read can still be assignable
    try:
        setattr(obj, name, value)
    except (AttributeError, TypeError) as exc:
        raise PathError(
            f"cannot set attribute {name!r} {where} on a {type(obj).__name__}: {exc}"
        ) from exc
    return obj


def _set_child(obj: Any, value: Any, parts: tuple[PathPart, ...], upto: int) -> Any:
    """Set ``parts[upto]`` of ``obj`` to ``value``; return ``obj`` or a rebuilt copy of it."""
    part = parts[upto]
    what = f"set {_format_parts(parts[: upto + 1])!r}"
    if isinstance(obj, MutableMapping):
        obj[part] = value
        return obj
    if isinstance(obj, Mapping):
        items = dict(obj)
        items[part] = value
        return _rebuilt_mapping(obj, items, what)
    if _is_sequence(obj):
        if isinstance(part, str) and _is_namedtuple(obj) and part in type(obj)._fields:
            return obj._replace(**{part: value})
        if isinstance(part, int) and not -len(obj) <= part < len(obj):
            raise PathError(
                f"index {part} out of range {_where(parts, upto)} (length {len(obj)}); "
                "set_path only replaces existing elements: to append, set the whole list"
            )
        index = _normalize_index(obj, part, parts, upto)
        if isinstance(obj, MutableSequence):
            obj[index] = value
            return obj
        elements = list(obj)
        elements[index] = value
        return _rebuilt_sequence(obj, elements, what)
    if not isinstance(part, str):
        raise PathError(
            f"cannot index a value of type {type(obj).__name__} with [{part}] "
            f"{_where(parts, upto)}: it is neither a mapping nor a sequence"
        )
    _check_attribute_access(obj, part, parts, upto)
    return _set_attribute(obj, part, value, parts, upto)


def _propagate(chain: list[Any], parts: tuple[PathPart, ...], new_parent: Any) -> Any:
    """Put a rebuilt container back into its parents, rebuilding those that are immutable too."""
    for upto in range(len(parts) - 1, 0, -1):
        if new_parent is chain[upto]:
            return chain[0]
        new_parent = _set_child(chain[upto - 1], new_parent, parts, upto - 1)
    return new_parent


def set_path(obj: Any, path: str | Sequence[PathPart], value: Any) -> Any:
    """Set the value at a path and return the root, which callers must keep.

    Mutable containers are changed in place: dicts (a missing key is added), lists (existing
    indexes only), pydantic models (by ``setattr``, so pydantic validates when the model asks for
    it), dataclasses and plain objects (existing attributes only). Immutable ones (tuples, strings,
    frozen dataclasses, frozen pydantic models) are rebuilt, and so is every immutable container
    above them, so the root may be a new object: write ``root = set_path(root, path, value)``.

    :param obj: the state (the root of the path).
    :param path: a path as accepted by :func:`parse_path`.
    :param value: the new value.
    :returns: the root: ``obj`` itself when it was changed in place, else its rebuilt copy;
        ``value`` for the root path.
    :raises PathError: if the path is malformed or refused, a container on the way is missing, the
        index is out of range, the attribute does not exist or cannot be set.
    :raises pydantic.ValidationError: if a pydantic model validates the assignment and rejects it.
    """
    parts = parse_path(path)
    if not parts:
        return value
    chain = _walk(obj, parts)
    new_parent = _set_child(chain[-1], value, parts, len(parts) - 1)
    return _propagate(chain, parts, new_parent)


def _delete_child(obj: Any, parts: tuple[PathPart, ...], upto: int) -> Any:
    part = parts[upto]
    what = f"delete {_format_parts(parts[: upto + 1])!r}"
    if isinstance(obj, Mapping):
        if part not in obj:
            raise _missing_key(obj, parts, upto)
        if isinstance(obj, MutableMapping):
            del obj[part]
            return obj
        items = dict(obj)
        del items[part]
        return _rebuilt_mapping(obj, items, what)
    if _is_sequence(obj) and not (isinstance(part, str) and _is_namedtuple(obj)):
        index = _normalize_index(obj, part, parts, upto)
        if isinstance(obj, MutableSequence):
            del obj[index]
            return obj
        elements = list(obj)
        del elements[index]
        return _rebuilt_sequence(obj, elements, what)
    raise PathError(
        f"cannot {what}: only mapping keys and sequence elements can be deleted, and this is "
        f"{'a field' if isinstance(part, str) else 'an index'} of a {type(obj).__name__}; "
        "set it to a new value instead"
    )


def delete_path(obj: Any, path: str | Sequence[PathPart]) -> Any:
    """Remove a mapping key or sequence element and return the root, which callers must keep.

    The same in-place or rebuild rule as :func:`set_path` applies.

    :param obj: the state (the root of the path).
    :param path: a path as accepted by :func:`parse_path`; it must not be the root.
    :returns: the root: ``obj`` itself when it was changed in place, else its rebuilt copy.
    :raises PathError: if the path is the root, malformed or refused, the key or index does not
        exist, or the path ends in an attribute.
    """
    parts = parse_path(path)
    if not parts:
        raise PathError("cannot delete the root of the state; delete one of its keys instead")
    chain = _walk(obj, parts)
    new_parent = _delete_child(chain[-1], parts, len(parts) - 1)
    return _propagate(chain, parts, new_parent)


# --------------------------------------------------------------------------------------------
# Display: plain values, short reprs, summaries
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
    ) -> None:
        """Put a bracketed, comma-separated run of items, stopping where the budget runs out.

        ``style`` says what each item is: a value, a ``(key, value)`` pair shown ``key: value``,
        or a ``(name, value)`` field shown ``name=value``.
        """
        opener, closer = brackets
        self.put(opener)
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
                    self.emit(item[1], depth + 1)
            elif style == "fields":
                self.put(f"{item[0]}=")
                self.emit(item[1], depth + 1)
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
        if kind is list or (isinstance(value, list) and kind.__repr__ is list.__repr__):
            self.put_items(value, len(value), ("[", "]"), depth)
        elif kind is tuple or (isinstance(value, tuple) and kind.__repr__ is tuple.__repr__):
            closer = ",)" if len(value) == 1 else ")"
            self.put_items(value, len(value), ("(", closer), depth)
        elif isinstance(value, dict) and kind.__repr__ is dict.__repr__:
            self.put_items(value.items(), len(value), ("{", "}"), depth, "pairs")
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
            self.put_items(value.items(), len(value), (f"{kind.__name__}({{", "})"), depth, "pairs")
        elif isinstance(value, bytearray):
            self.put(f"{kind.__name__}(")
            self.put_string(bytes(value[: self.room(depth) + 1]), depth + 1)
            self.put(")")
        elif _is_collection_sequence(value) and not isinstance(value, range):
            self.put_items(value, len(value), (f"{kind.__name__}([", "])"), depth)
        else:
            self.put_clipped(_safe_repr(value), depth)


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
    own ``repr``. This function never raises: a failing ``__repr__`` gives ``"<unreprable Foo>"``.

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
    return [
        KeySummary(
            key=key,
            type=_type_name(value),
            size=_size_of(value),
            preview=short_repr(value, preview_chars),
        )
        for key, value in rows
    ]


# --------------------------------------------------------------------------------------------
# Diffs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One difference between two states. ``old`` is ``None`` when added, ``new`` when removed."""

    path: str
    kind: Literal["added", "removed", "changed"]
    old: Any
    new: Any


_NATURAL_RE = re.compile(r"(\d+)")


def _natural_key(path: str) -> list[str | int]:
    """Sort key putting ``items[2]`` before ``items[10]``."""
    pieces: list[str | int] = []
    for index, piece in enumerate(_NATURAL_RE.split(path)):
        pieces.append(int(piece) if index % 2 else piece)
    return pieces


@dataclass
class StateDiff:
    """What changed between two states, keyed by path (see :func:`diff`)."""

    added: dict[str, Any] = field(default_factory=dict)
    """Paths that exist only after, with their new value."""
    removed: dict[str, Any] = field(default_factory=dict)
    """Paths that existed only before, with their old value."""
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Paths present in both whose value changed, with ``(old, new)``."""

    def __bool__(self) -> bool:
        """Whether anything changed."""
        return bool(self.added or self.removed or self.changed)

    @property
    def paths(self) -> list[str]:
        """Every changed path, in natural order (``items[2]`` before ``items[10]``)."""
        return sorted({*self.added, *self.removed, *self.changed}, key=_natural_key)

    def changes(self) -> list[Change]:
        """Every change as a :class:`Change`, ordered by path.

        :returns: the changes.
        """
        out: list[Change] = []
        for path in self.paths:
            if path in self.removed:
                out.append(Change(path, "removed", self.removed[path], None))
            if path in self.added:
                out.append(Change(path, "added", None, self.added[path]))
            if path in self.changed:
                old, new = self.changed[path]
                out.append(Change(path, "changed", old, new))
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly form, with values passed through :func:`to_plain`.

        :returns: ``{"added": {path: new}, "removed": {path: old},
            "changed": {path: {"old": old, "new": new}}}``, each ordered by path.
        """
        return {
            "added": {p: to_plain(self.added[p]) for p in sorted(self.added, key=_natural_key)},
            "removed": {
                p: to_plain(self.removed[p]) for p in sorted(self.removed, key=_natural_key)
            },
            "changed": {
                p: {"old": to_plain(self.changed[p][0]), "new": to_plain(self.changed[p][1])}
                for p in sorted(self.changed, key=_natural_key)
            },
        }

    def __str__(self) -> str:
        """One line per change: ``+ y = 21``, ``- tmp = 'x'``, ``~ x: 2 -> 20``."""
        lines: list[str] = []
        for change in self.changes():
            path = change.path or "<root>"
            if change.kind == "added":
                lines.append(f"+ {path} = {short_repr(change.new)}")
            elif change.kind == "removed":
                lines.append(f"- {path} = {short_repr(change.old)}")
            else:
                lines.append(f"~ {path}: {short_repr(change.old)} -> {short_repr(change.new)}")
        return "\n".join(lines) if lines else "(no changes)"


def _same(before: Any, after: Any) -> bool:
    """Identical or equal; values whose comparison fails count as different."""
    if before is after:
        return True
    try:
        return bool(before == after)
    except Exception:
        return False


def _record_fields(before: Any, after: Any) -> tuple[dict[Any, Any], dict[Any, Any]] | None:
    """Field dicts to recurse into, when both sides are mappings or models of one type."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        return dict(before), dict(after)
    if type(before) is not type(after):
        return None
    before_fields = _fields_of(before)
    if before_fields is None:
        return None
    after_fields = _fields_of(after)
    return None if after_fields is None else (before_fields, after_fields)


class _Differ:
    def __init__(self) -> None:
        self.result = StateDiff()

    def walk(self, before: Any, after: Any, parts: tuple[Any, ...]) -> None:
        if before is after:
            return
        if len(parts) < _DIFF_MAX_DEPTH:
            records = _record_fields(before, after)
            if records is not None:
                self.walk_fields(*records, parts)
                return
            if (
                type(before) is type(after)
                and _is_collection_sequence(before)
                and not isinstance(before, range)
            ):
                self.walk_sequences(before, after, parts)
                return
        if not _same(before, after):
            self.result.changed[_format_parts(parts)] = (before, after)

    def walk_fields(
        self, before: dict[Any, Any], after: dict[Any, Any], parts: tuple[Any, ...]
    ) -> None:
        for key, old in before.items():
            if key not in after:
                self.result.removed[_format_parts((*parts, key))] = old
        for key, new in after.items():
            if key in before:
                self.walk(before[key], new, (*parts, key))
            else:
                self.result.added[_format_parts((*parts, key))] = new

    def walk_sequences(
        self, before: Sequence[Any], after: Sequence[Any], parts: tuple[Any, ...]
    ) -> None:
        shorter = min(len(before), len(after))
        if len(before) == len(after):
            for index in range(shorter):
                self.walk(before[index], after[index], (*parts, index))
            return
        if all(_same(before[index], after[index]) for index in range(shorter)):
            for index in range(shorter, len(after)):
                self.result.added[_format_parts((*parts, index))] = after[index]
            for index in range(shorter, len(before)):
                self.result.removed[_format_parts((*parts, index))] = before[index]
            return
        self.result.changed[_format_parts(parts)] = (before, after)


def diff(before: Any, after: Any) -> StateDiff:
    """Compare two states and report what changed, path by path.

    Mappings are compared key by key, and so are pydantic models and dataclasses of the same type
    (field by field), recursively. Sequences of the same type are compared index by index when
    their lengths match; when one is the other plus elements at the end (a message list that grew,
    or one cut short) those elements are reported as added (``messages[3]``) or removed; any other
    change of length reports the whole sequence as changed. Everything else is compared with
    ``is`` and then ``==``; a comparison that raises counts as a change. The reported values are
    the states' own objects, not copies.

    :param before: the state before (a snapshot: changes made in place to a shared object are
        invisible if ``before`` and ``after`` are the same object).
    :param after: the state after.
    :returns: the differences; falsy when there are none. A change of the root itself is reported
        at the path ``""``.
    """
    differ = _Differ()
    differ.walk(before, after, ())
    return differ.result
