"""Scalar values of a scenario: durations, bounded numbers and lists of known names.

Each reader takes the `At` of the field it reads and reports a problem there (naming the field;
the file and line are added when the reader collects the problems) instead of raising, so one
pass over a scenario reports every problem at once. None means absent or invalid.
"""

from __future__ import annotations

from typing import Any

from nodewright.config import fields as f
from nodewright.config.problems import At, show
from nodewright.model.duration import parse_duration
from nodewright.model.errors import InvalidValue


def read_duration(at: At, value: Any, *, positive: bool = False) -> float | None:
    """Seconds from a duration such as 90s, 15m or 24h (or a number of seconds)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        at.error(f"must be a duration such as 90s, 15m or 24h, got {show(value)}")
        return None
    try:
        seconds = parse_duration(value, allow_never=False)
    except InvalidValue as error:
        at.error(str(error))
        return None
    if seconds is None or seconds < 0 or (positive and seconds <= 0):
        at.error(f"must be a {'positive' if positive else 'non-negative'} duration, got {show(value)}")
        return None
    return seconds


def read_number(at: At, value: Any, *, low: float, high: float) -> float | None:
    """A number between `low` and `high` (inclusive)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        at.error(f"must be a number, got {show(value)}")
        return None
    if not low <= value <= high:
        at.error(f"must be between {low:g} and {high:g}, got {value}")
        return None
    return float(value)


def read_choices(at: At, raw: Any, known: tuple[str, ...]) -> tuple[str, ...] | None:
    """A non-empty list of distinct names from `known`."""
    names = f.string_list(at, raw, min_items=1)
    if names is None:
        return None
    ok = True
    for index, name in enumerate(names):
        if name not in known:
            (at / index).error(f"{show(name)} is not one of {', '.join(known)}")
            ok = False
    if len(set(names)) != len(names):
        at.error("names a value more than once")
        ok = False
    return names if ok else None
