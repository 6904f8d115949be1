"""Budget schedules: the five-field cron syntax Karpenter accepts is parsed; anything else is refused
with the field that is wrong; a parsed schedule tells which minutes it fires on.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nodewright.model.cron import parse_cron
from nodewright.model.errors import InvalidValue


@pytest.mark.parametrize(
    ("expression", "fires", "quiet"),
    [
        pytest.param("0 9 * * mon-fri", "2024-06-03 09:00", "2024-06-01 09:00", id="weekday-mornings"),
        pytest.param("*/15 * * * *", "2024-06-01 10:45", "2024-06-01 10:44", id="every-quarter-hour"),
        pytest.param("@daily", "2024-06-01 00:00", "2024-06-01 00:01", id="daily-macro"),
        pytest.param("@hourly", "2024-06-01 13:00", "2024-06-01 13:30", id="hourly-macro"),
        pytest.param("0 0 1,15 * *", "2024-06-15 00:00", "2024-06-14 00:00", id="day-of-month-list"),
        pytest.param("0 0 * JAN-MAR ?", "2024-02-10 00:00", "2024-04-10 00:00", id="month-names-and-question-mark"),
        pytest.param("0 0 * * 7", "2024-06-02 00:00", "2024-06-03 00:00", id="sunday-as-seven"),
        pytest.param("5/20 * * * *", "2024-06-01 00:45", "2024-06-01 00:50", id="start-with-step"),
        # Both day fields restricted: either one matching fires (classic cron).
        pytest.param("0 0 13 * 5", "2024-06-14 00:00", "2024-06-12 00:00", id="day-fields-are-ored"),
    ],
)
def test_a_schedule_fires_on_the_minutes_it_names(expression: str, fires: str, quiet: str) -> None:
    schedule = parse_cron(expression)

    assert schedule.matches(datetime.fromisoformat(fires).replace(tzinfo=UTC))
    assert not schedule.matches(datetime.fromisoformat(quiet).replace(tzinfo=UTC))


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param("0 9 * *", "'0 9 * *' has 4 fields; expected 5", id="four-fields"),
        pytest.param("0 9 * * * *", "'0 9 * * * *' has 6 fields; expected 5", id="six-fields"),
        pytest.param("60 * * * *", "minute field: 60 is outside 0-59", id="minute-out-of-range"),
        pytest.param("0 24 * * *", "hour field: 24 is outside 0-23", id="hour-out-of-range"),
        pytest.param("0 0 0 * *", "day of month field: 0 is outside 1-31", id="day-zero"),
        pytest.param("0 0 * 13 *", "month field: 13 is outside 1-12", id="month-13"),
        pytest.param("0 0 * * FUNDAY", "day of week field: 'FUNDAY' is not a number or a name", id="bad-day-name"),
        pytest.param("0 0 * * 5-1", "day of week field: range '5-1' runs backwards", id="backwards-range"),
        pytest.param("*/0 * * * *", "minute field: step '0' must be a positive number", id="zero-step"),
        pytest.param("1,,2 * * * *", "minute field: empty list item in '1,,2'", id="empty-list-item"),
        pytest.param("@fortnightly", "'@fortnightly' is not one of the macros", id="unknown-macro"),
    ],
)
def test_a_malformed_schedule_names_the_field_at_fault(expression: str, message: str) -> None:
    with pytest.raises(InvalidValue) as raised:
        parse_cron(expression)

    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(
    ("expression", "start", "end", "first"),
    [
        pytest.param("0 9 * * *", "2024-06-01 08:00", "2024-06-01 10:00", "2024-06-01 09:00", id="inside"),
        pytest.param("0 9 * * *", "2024-06-01 09:00", "2024-06-01 10:00", None, id="start-is-excluded"),
        pytest.param("0 9 * * *", "2024-06-01 08:00", "2024-06-01 09:00", "2024-06-01 09:00", id="end-is-included"),
        pytest.param("0 0 * * *", "2024-06-01 23:30", "2024-06-02 00:30", "2024-06-02 00:00", id="across-midnight"),
        pytest.param("0 0 1 * *", "2024-06-02 00:00", "2024-07-15 00:00", "2024-07-01 00:00", id="weeks-long-window"),
        pytest.param("0 0 30 2 *", "2024-01-01 00:00", "2024-12-31 00:00", None, id="never-fires"),
        pytest.param("*/15 * * * *", "2024-06-01 10:01", "2024-06-01 10:20", "2024-06-01 10:15", id="step"),
    ],
)
def test_the_first_firing_in_a_window_is_found(expression: str, start: str, end: str, first: str | None) -> None:
    def at(text: str) -> datetime:
        return datetime.fromisoformat(text).replace(tzinfo=UTC)

    found = parse_cron(expression).first_fire_between(at(start), at(end))

    assert found == (at(first) if first else None)


@pytest.mark.parametrize(
    ("now", "duration", "active"),
    [
        pytest.param("2024-06-03 09:00", 3600, True, id="at-the-firing"),
        pytest.param("2024-06-03 09:59", 3600, True, id="inside-the-window"),
        pytest.param("2024-06-03 10:00", 3600, False, id="window-is-half-open"),
        pytest.param("2024-06-03 08:59", 3600, False, id="before-the-firing"),
        pytest.param("2024-06-04 08:00", 86400, True, id="long-window-spans-the-night"),
        pytest.param("2024-06-03 09:00", 0, False, id="zero-duration"),
    ],
)
def test_a_schedule_is_active_from_each_firing_for_its_duration(now: str, duration: float, active: bool) -> None:
    schedule = parse_cron("0 9 * * mon-fri")

    assert schedule.active(datetime.fromisoformat(now).replace(tzinfo=UTC), duration) is active
