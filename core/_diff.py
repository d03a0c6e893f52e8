"""State diffs: what changed between the state before a node and the state after it.

:func:`diff` compares two states and returns a :class:`StateDiff` of added, removed and changed
paths (written as :mod:`flowdbg._paths` writes them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from flowdbg._paths import _format_parts
from flowdbg._values import _fields_of, _is_collection_sequence, short_repr, to_plain

__all__ = ["Change", "StateDiff", "diff"]

_DIFF_MAX_DEPTH = 100


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
