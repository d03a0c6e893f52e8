"""State paths: naming a value inside a state, and reading, setting and deleting it there.

A path names a value inside the state: ``count``, ``messages[-1].content``,
``config['user id']``. :func:`parse_path` and :func:`format_path` convert between the text form
and a tuple of parts; :func:`get_path`, :func:`set_path` and :func:`delete_path` follow them.
Paths arrive over the network, so parts starting with ``_`` are refused outright: no path can
reach ``__class__``, ``__globals__`` or a private attribute.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
from collections.abc import Iterable, Mapping, MutableMapping, MutableSequence, Sequence
from typing import Any, TypeAlias

from flowdbg._values import (
    _ELLIPSIS,
    _is_dataclass_instance,
    _is_namedtuple,
    _is_pydantic_model,
    _model_field_names,
    short_repr,
)
from flowdbg.errors import PathError

__all__ = [
    "PathPart",
    "delete_path",
    "format_path",
    "get_path",
    "parse_path",
    "set_path",
    "split_view",
]

PathPart: TypeAlias = str | int
"""One step of a state path: a mapping key or attribute name (``str``) or an index (``int``)."""

_NAME_RE = re.compile(r"\w+")
_VIEW_PREFIX_RE = re.compile(r"\s*([A-Za-z]\w*)\s*:")
_INDEX_RE = re.compile(r"-?\d+")
_MAX_INDEX_DIGITS = 18
_MAX_LISTED_NAMES = 30

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
        if name.isdigit():
            hint = f"write [{name}] for an index or [{name!r}] for a key"
        else:  # e.g. 1bad: no index either, so only the quoted key form can name it
            hint = (
                "a name is letters, digits and _ not starting with a digit (e.g. "
                f"messages[0].content); write [{name!r}] for a key spelled so"
            )
        raise _malformed(path, i, f"{name!r} is not a name; {hint}")
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


def split_view(path: str) -> tuple[str | None, str]:
    """Split a ``view:`` prefix off a path: ``"state:messages[-1]"`` gives
    ``("state", "messages[-1]")``, ``"count"`` gives ``(None, "count")``.

    Only a name before the first character of the path counts as a view, so a key with a
    ``:`` in it stays reachable in brackets: ``['a:b']`` has no prefix.

    :param path: the path text, perhaps prefixed with a view name and ``:``.
    :returns: the view name (``None`` without a prefix) and the path after it, stripped.
    """
    match = _VIEW_PREFIX_RE.match(path)
    if match is None:
        return None, path.strip()
    return match.group(1), path[match.end() :].strip()


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
# Walking paths
# --------------------------------------------------------------------------------------------


def _is_sequence(obj: object) -> bool:
    """Sequences indexed by position (strings and bytes included)."""
    return isinstance(obj, Sequence)


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


def _walk(obj: Any, parts: tuple[PathPart, ...], what: str = "state") -> list[Any]:
    """The containers along ``parts``: ``[obj, child, ..., parent of the last part]``."""
    chain = [obj]
    for upto in range(len(parts) - 1):
        chain.append(_get_child(chain[-1], parts, upto, what))
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


def _property_setter(obj: Any, name: str) -> Any:
    """The setter of the property ``name`` of ``obj``'s class, if it has one."""
    found = getattr(type(obj), name, None)
    return found.fset if isinstance(found, property) else None


def _set_attribute(obj: Any, name: str, value: Any, parts: tuple[PathPart, ...], upto: int) -> Any:
    where = _where(parts, upto)
    if _is_pydantic_model(obj):
        setter = _property_setter(obj, name)
        if setter is not None and name not in _model_field_names(obj):
            # a property over the model's fields (LlamaIndex's ChatMessage.content, over its
            # blocks): set through it, as the model's own code would
            try:
                setattr(obj, name, value)
            except (AttributeError, TypeError, ValueError) as exc:
                raise PathError(
                    f"cannot set {name!r} {where} on a {type(obj).__name__}: {exc}"
                ) from exc
            return obj
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


def _named(what: str, exc: PathError) -> PathError:
    """``exc``, whose message names the value it failed in "state", naming ``what`` instead
    (the input or output of a stop, a tool's arguments)."""
    text = str(exc)
    if what == "state" or not text.startswith("state "):
        return exc
    return PathError(what + text[len("state") :])


def set_path(obj: Any, path: str | Sequence[PathPart], value: Any, *, what: str = "state") -> Any:
    """Set the value at a path and return the root, which callers must keep.

    Mutable containers are changed in place: dicts (a missing key is added), lists (existing
    indexes only), pydantic models (by ``setattr``, so pydantic validates when the model asks for
    it), dataclasses and plain objects (existing attributes only). Immutable ones (tuples, strings,
    frozen dataclasses, frozen pydantic models) are rebuilt, and so is every immutable container
    above them, so the root may be a new object: write ``root = set_path(root, path, value)``.

    :param obj: the state (the root of the path).
    :param path: a path as accepted by :func:`parse_path`.
    :param value: the new value.
    :param what: what ``obj`` is, for messages (``"input"``, ``"args"``).
    :returns: the root: ``obj`` itself when it was changed in place, else its rebuilt copy;
        ``value`` for the root path.
    :raises PathError: if the path is malformed or refused, a container on the way is missing, the
        index is out of range, the attribute does not exist or cannot be set.
    :raises pydantic.ValidationError: if a pydantic model validates the assignment and rejects it.
    """
    parts = parse_path(path)
    if not parts:
        return value
    try:
        chain = _walk(obj, parts, what)
        new_parent = _set_child(chain[-1], value, parts, len(parts) - 1)
        return _propagate(chain, parts, new_parent)
    except PathError as exc:
        raise _named(what, exc) from exc.__cause__


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


def delete_path(obj: Any, path: str | Sequence[PathPart], *, what: str = "state") -> Any:
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
        raise PathError(f"cannot delete the root of the {what}; delete one of its keys instead")
    try:
        chain = _walk(obj, parts, what)
        new_parent = _delete_child(chain[-1], parts, len(parts) - 1)
        return _propagate(chain, parts, new_parent)
    except PathError as exc:
        raise _named(what, exc) from exc.__cause__
