"""The WHEN parser of --since, --until and --older-than."""

from __future__ import annotations

import datetime as dt

import pytest

from flowdbg.cli._time import ACCEPTED_FORMS, parse_when

NOW = dt.datetime(2024, 5, 10, 15, 30, tzinfo=dt.timezone.utc).astimezone()


def local_midnight(year: int, month: int, day: int) -> dt.datetime:
    return dt.datetime(year, month, day).astimezone()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("now", NOW),
        ("NOW", NOW),
        ("1h ago", NOW - dt.timedelta(hours=1)),
        ("30m ago", NOW - dt.timedelta(minutes=30)),
        ("2d ago", NOW - dt.timedelta(days=2)),
        ("90s ago", NOW - dt.timedelta(seconds=90)),
        ("1w ago", NOW - dt.timedelta(weeks=1)),
        ("3 hours ago", NOW - dt.timedelta(hours=3)),
        ("1.5h ago", NOW - dt.timedelta(minutes=90)),
        ("2024-05-01", local_midnight(2024, 5, 1)),
        ("2024-05-01T12:30:00Z", dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.timezone.utc)),
        (
            "2024-05-01T14:30+02:00",
            dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.timezone.utc),
        ),
        ("2024-05-01 14:30", dt.datetime(2024, 5, 1, 14, 30).astimezone()),
    ],
)
def test_accepted_forms(text: str, expected: dt.datetime) -> None:
    assert parse_when(text, now=NOW) == expected


def test_today_and_yesterday_are_local_midnight() -> None:
    today = NOW.astimezone().date()
    assert parse_when("today", now=NOW) == local_midnight(today.year, today.month, today.day)
    yesterday = today - dt.timedelta(days=1)
    expected = local_midnight(yesterday.year, yesterday.month, yesterday.day)
    assert parse_when("yesterday", now=NOW) == expected


def test_results_are_aware() -> None:
    for text in ("now", "today", "2024-05-01", "2024-05-01T10:00", "5m ago"):
        assert parse_when(text, now=NOW).tzinfo is not None


@pytest.mark.parametrize("text", ["", "soon", "1 fortnight ago", "ago", "2024-13-01", "1h"])
def test_bad_input_lists_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_when(text, now=NOW)
    assert str(info.value) == f"{text!r} is not a time; use {ACCEPTED_FORMS}"
    assert "'1h ago'" in str(info.value) and "yesterday" in str(info.value)
