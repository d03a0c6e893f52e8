"""Parsing the times given to ``--since``, ``--until`` and ``--older-than``."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import click

__all__ = ["ACCEPTED_FORMS", "WHEN", "WhenType", "parse_when"]

ACCEPTED_FORMS = (
    "an ISO date (2024-05-01), an ISO datetime (2024-05-01T14:30, 2024-05-01 14:30:00, "
    "2024-05-01T12:30Z, 2024-05-01T14:30+02:00), 'now', 'today', 'yesterday', or an age "
    "such as '90s ago', '30m ago', '1h ago', '2d ago', '1w ago'"
)

_UNITS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
    "w": 604800,
    "week": 604800,
    "weeks": 604800,
}
_AGO_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)\s+ago")


def _local_midnight(day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day).astimezone()


def parse_when(text: str, *, now: dt.datetime | None = None) -> dt.datetime:
    """Parse a point in time as the command line accepts it.

    Dates and datetimes without an offset are local time; ``today`` and ``yesterday`` are local
    midnight.

    :param text: e.g. ``2024-05-01``, ``2024-05-01T14:30Z``, ``now``, ``yesterday``, ``2h ago``.
    :param now: the current time (for tests); default the clock.
    :returns: an aware datetime.
    :raises ValueError: naming the accepted forms, when ``text`` is none of them.
    """
    if now is None:
        now = dt.datetime.now().astimezone()
    raw = text.strip().lower()
    if raw == "now":
        return now
    if raw == "today":
        return _local_midnight(now.astimezone().date())
    if raw == "yesterday":
        return _local_midnight(now.astimezone().date() - dt.timedelta(days=1))
    match = _AGO_RE.fullmatch(raw)
    if match is not None:
        unit = _UNITS.get(match.group(2))
        if unit is not None:
            return now - dt.timedelta(seconds=float(match.group(1)) * unit)
    value = text.strip()
    if value[-1:] in ("z", "Z"):
        value = value[:-1] + "+00:00"
    parsed: dt.datetime | None = None
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        try:
            day = dt.date.fromisoformat(value)
        except ValueError:
            parsed = None
        else:
            return _local_midnight(day)
    if parsed is None:
        raise ValueError(f"{text!r} is not a time; use {ACCEPTED_FORMS}")
    if parsed.tzinfo is None:
        parsed = parsed.astimezone()
    return parsed


class WhenType(click.ParamType):
    """A click parameter type for :func:`parse_when`; converts to an aware datetime."""

    name = "WHEN"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Convert ``value``, failing with the accepted forms."""
        if isinstance(value, dt.datetime):
            return value
        try:
            return parse_when(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


WHEN = WhenType()
