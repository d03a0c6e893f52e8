"""Which differences a diff of runs or steps leaves out.

Two runs of one graph on one input still differ in values that are new on every run: LangChain
message ids, run ids, tool-call ids, timestamps. A diff that reported them would find a
"divergence" at the first message of every LangGraph run and hide the real ones. So, unless
``strict`` is set, a value is ignored where both runs hold a *volatile* value and they differ:

``message id``
    the ``id`` of a LangChain message (a dict with ``type``, ``content`` and
    ``additional_kwargs`` or ``response_metadata``), whatever it looks like;
``generated id``
    a key ``id``, ``*_id``, ``*-id`` or ``*Id`` (``run_id``, ``tool_call_id``, ``runId``) whose two
    values are both generated identifiers: text holding a UUID, 32 hex digits, or a provider's
    prefixed token (``run-…``, ``lc_run--…``, ``call_…``, ``toolu_…``, ``chatcmpl-…``, ``msg_…``,
    ``resp_…``, ``req_…``, and the Responses API's function call and reasoning items' ``fc_…``,
    ``rs_…``, at least 8 characters after the prefix);
``timestamp``
    a key ``timestamp``, ``ts``, ``time``, ``date``, ``created``, or ending in ``_at``, ``_time``,
    ``_ts``, ``_date`` or ``_timestamp`` (``created_at``) whose two values are both times: ISO 8601
    text, or numbers of seconds, milliseconds or nanoseconds since 1970 after September 2001.

An id that one run holds as a UUID and the other as ``"user-42"`` is a real difference and is
reported. ``ignore`` globs name more paths to leave out (and everything below them); they are
matched against the whole path as diffs write it (``messages[3].content``):

``*``   any characters of one key (not ``.`` or ``[``)
``?``   one such character
``[*]`` any list index (``[3]`` only index 3)
``**``  anything, across keys; a leading ``**.`` also matches at the top (``**.id`` matches ``id``)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from flowdbg._paths import format_path

__all__ = ["DEFAULT_RULES", "IgnoreRules", "Ignored"]

#: the rules that leave out volatile values unless ``strict`` is set, by the name diffs report
DEFAULT_RULES = ("message id", "generated id", "timestamp")

# stands for an ignored value on both sides, so that the two compare equal
_IGNORED = "<ignored>"

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_HEX32 = re.compile(r"[0-9a-f]{32}", re.I)
_TOKEN = re.compile(r"(?:run|lc_run|call|toolu|chatcmpl|msg|resp|req|fc|rs)[-_]+[A-Za-z0-9_-]{8,}")
_ISO = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?", re.I
)
_TIME_KEYS = frozenset({"timestamp", "ts", "time", "date", "created"})
_TIME_SUFFIXES = ("_at", "_time", "_ts", "_date", "_timestamp")
_INDEX = re.compile(r"\[-?\d+\]")


def _is_id_key(key: object) -> bool:
    if not isinstance(key, str):
        return False
    lower = key.lower()
    return lower == "id" or lower.endswith(("_id", "-id")) or (len(key) > 2 and key[-2:] == "Id")


def _generated(value: object) -> bool:
    if not isinstance(value, str):
        return False
    return bool(_UUID.search(value) or _HEX32.fullmatch(value) or _TOKEN.fullmatch(value))


def _is_time_key(key: object) -> bool:
    if not isinstance(key, str):
        return False
    lower = key.lower()
    return lower in _TIME_KEYS or lower.endswith(_TIME_SUFFIXES)


def _moment(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return 1e9 <= value < 1e19  # seconds, milliseconds or nanoseconds since 2001-09-09
    return isinstance(value, str) and _ISO.fullmatch(value) is not None


def _is_message(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("type"), str)
        and "content" in value
        and ("additional_kwargs" in value or "response_metadata" in value)
    )


def _rule(key: object, a: object, b: object, parents: tuple[object, object] | None) -> str | None:
    """The default rule under which two different leaf values at ``key`` are volatile."""
    if key == "id" and parents is not None and all(_is_message(p) for p in parents):
        return "message id"
    if _is_id_key(key) and _generated(a) and _generated(b):
        return "generated id"
    if _is_time_key(key) and _moment(a) and _moment(b):
        return "timestamp"
    return None


def _compile(pattern: str) -> re.Pattern[str]:
    if not pattern.strip():
        raise ValueError("an ignore pattern must not be empty; give a path glob such as '**.id'")
    out: list[str] = []
    rest = pattern
    if rest.startswith("**."):
        out.append(r"(?:.*\.)?")
        rest = rest[3:]
    index = 0
    while index < len(rest):
        if rest.startswith("**", index):
            out.append(".*")
            index += 2
        elif rest.startswith("[*]", index):
            out.append(r"\[-?\d+\]")
            index += 3
        elif rest[index] == "*":
            out.append(r"[^.\[\]]*")
            index += 1
        elif rest[index] == "?":
            out.append(r"[^.\[\]]")
            index += 1
        else:
            out.append(re.escape(rest[index]))
            index += 1
    # a pattern naming a container leaves out everything in it too
    return re.compile("".join(out) + r"(?:[.\[].*)?", re.S)


def generalized(path: str) -> str:
    """``path`` with every list index written ``[*]``: ``messages[*].id``."""
    return _INDEX.sub("[*]", path)


@dataclass
class Ignored:
    """Differences a diff left out at one path (list indices written ``[*]``)."""

    path: str
    #: ``message id``, ``generated id``, ``timestamp``, or the ``ignore`` glob that matched
    rule: str
    #: how many differing values were left out there (over every step compared)
    count: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"path": self.path, "rule": self.rule, "count": self.count}


class IgnoreRules:
    """What a diff leaves out, and a tally of what it left out.

    :param ignore: path globs to leave out (see the module's documentation).
    :param strict: leave out no volatile value (``ignore`` globs still apply).
    :raises ValueError: if a glob is empty.
    """

    def __init__(self, ignore: Iterable[str] = (), *, strict: bool = False) -> None:
        self.patterns = tuple(ignore)
        self.strict = strict
        self._compiled = [(_compile(p), p) for p in self.patterns]
        self._ignored: dict[tuple[str, str], Ignored] = {}

    @property
    def ignored(self) -> list[Ignored]:
        """What was left out so far, in the order it was first met."""
        return list(self._ignored.values())

    def normalize(self, a: Any, b: Any, prefix: tuple[str | int, ...] = ()) -> tuple[Any, Any]:
        """Copies of two plain JSON values in which every ignored difference is made equal.

        :param a: a value (dicts, lists and scalars, as the store returns them).
        :param b: the value to compare it with.
        :param prefix: the path of the values, for globs and the tally (``("output",)``).
        :returns: ``(a, b)`` with ignored values replaced by one placeholder on both sides;
            the parts that were not changed are the given objects.
        """
        return self._walk(a, b, prefix, None)

    def _walk(
        self,
        a: Any,
        b: Any,
        parts: tuple[str | int, ...],
        parents: tuple[object, object] | None,
    ) -> tuple[Any, Any]:
        if a is b or _equal(a, b):
            return a, b
        if self._compiled:
            path = format_path(parts)
            for regex, pattern in self._compiled:
                if regex.fullmatch(path):
                    self._count(path, pattern)
                    return _IGNORED, _IGNORED
        if type(a) is dict and type(b) is dict:
            out_a, out_b = dict(a), dict(b)
            for key in a:
                if key in b:
                    out_a[key], out_b[key] = self._walk(a[key], b[key], (*parts, key), (a, b))
            if self._compiled:
                # a key on one side only (added or removed) is left out where a glob names it
                for side, other, out in ((a, b, out_a), (b, a, out_b)):
                    for key in side:
                        if key not in other and self._named((*parts, key)):
                            del out[key]
            return out_a, out_b
        if type(a) is list and type(b) is list:
            list_a, list_b = list(a), list(b)
            common = min(len(a), len(b))
            for index in range(common):
                list_a[index], list_b[index] = self._walk(a[index], b[index], (*parts, index), None)
            if self._compiled and len(a) != len(b):
                # the elements past the other's end (added or removed) where a glob names them
                longer = list_a if len(a) > len(b) else list_b
                longer[common:] = [
                    item
                    for index, item in enumerate(longer[common:], common)
                    if not self._named((*parts, index))
                ]
            return list_a, list_b
        if not self.strict and parts:
            rule = _rule(parts[-1], a, b, parents)
            if rule is not None:
                self._count(format_path(parts), rule)
                return _IGNORED, _IGNORED
        return a, b

    def _named(self, parts: tuple[str | int, ...]) -> bool:
        """Whether an ignore glob names the path ``parts`` (counted as left out if so)."""
        path = format_path(parts)
        for regex, pattern in self._compiled:
            if regex.fullmatch(path):
                self._count(path, pattern)
                return True
        return False

    def _count(self, path: str, rule: str) -> None:
        key = (generalized(path), rule)
        entry = self._ignored.get(key)
        if entry is None:
            entry = self._ignored[key] = Ignored(key[0], rule)
        entry.count += 1


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a value whose comparison fails is a difference
        return False
