"""Go-style durations as Karpenter's v1 schema writes them (expireAfter, consolidateAfter, ...)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.model.duration import format_duration, parse_duration
from nodewright.model.errors import InvalidValue


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("720h", 720 * 3600.0),
        ("1h30m", 5400.0),
        ("30s", 30.0),
        ("15m", 900.0),
        ("1.5h", 5400.0),
        (".5h", 1800.0),
        ("1.h", 3600.0),
        ("1m.5s", 60.5),
        ("2h45m30s", 9930.0),
        ("100ms", 0.1),
        ("250us", 0.00025),
        ("250µs", 0.00025),
        ("10ns", 1e-8),
        ("0", 0.0),
        ("0s", 0.0),
        (" 5m ", 300.0),
        (60, 60.0),
        (1.5, 1.5),
    ],
    ids=str,
)
def test_go_durations_parse_to_seconds(text: str | int | float, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


def test_never_means_no_limit_where_it_is_allowed() -> None:
    assert parse_duration("Never") is None
    with pytest.raises(InvalidValue, match="Never"):
        parse_duration("Never", allow_never=False)


@pytest.mark.parametrize(
    "garbage",
    ["", "abc", "10", "1d", "h", "5m3", "1h 30m", "m5", "never", "5 m", "1e3s"],
    ids=str,
)
def test_garbage_is_a_clear_error_naming_the_value(garbage: str) -> None:
    with pytest.raises(InvalidValue, match="is not a duration"):
        parse_duration(garbage)


def test_a_boolean_is_not_a_duration() -> None:
    with pytest.raises(InvalidValue, match="True"):
        parse_duration(True)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "Never"),
        (0, "0s"),
        (30, "30s"),
        (90, "1m30s"),
        (5400, "1h30m"),
        (720 * 3600, "720h"),
        (3601, "1h1s"),
        (1.5, "1.5s"),
    ],
    ids=str,
)
def test_durations_format_in_the_shortest_go_form(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text


@given(st.integers(min_value=0, max_value=10 * 365 * 24 * 3600))
def test_whole_seconds_round_trip_through_their_text(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds
