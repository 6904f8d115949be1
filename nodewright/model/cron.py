"""Five-field cron schedules for disruption budgets, parsed and matched. Pure.

Karpenter reads budget schedules with the standard cron syntax (minute hour day-of-month month
day-of-week, in UTC) plus the `@yearly`-style macros. This is a small, strict parser of that
syntax: lists (`1,15`), ranges (`1-5`), steps (`*/15`, `10-50/10`, `5/10`), `*` and `?`, month
and weekday names (`JAN`, `mon-fri`); Sunday is 0 or 7. Anything else is an error naming the
field. A parsed schedule can tell whether a minute matches it and when it first fires inside a
window, which is how the disruption engine decides whether a scheduled budget is active.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

from nodewright.model.errors import InvalidValue

MACROS = MappingProxyType(
    {
        "@yearly": "0 0 1 1 *",
        "@annually": "0 0 1 1 *",
        "@monthly": "0 0 1 * *",
        "@weekly": "0 0 * * 0",
        "@daily": "0 0 * * *",
        "@midnight": "0 0 * * *",
        "@hourly": "0 * * * *",
    }
)
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
# (field name, lowest, highest, names mapped to numbers)
_FIELDS: tuple[tuple[str, int, int, Mapping[str, int]], ...] = (
    ("minute", 0, 59, MappingProxyType({})),
    ("hour", 0, 23, MappingProxyType({})),
    ("day of month", 1, 31, MappingProxyType({})),
    ("month", 1, 12, MappingProxyType({name: i + 1 for i, name in enumerate(_MONTHS)})),
    ("day of week", 0, 7, MappingProxyType({name: i for i, name in enumerate(_DAYS)})),
)


@dataclass(frozen=True, slots=True)
class CronSchedule:
    """The minutes a schedule fires on, as the allowed values of each field."""

    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    # cron's rule: when both day fields are restricted, a day matching either one fires.
    day_of_month_star: bool
    day_of_week_star: bool

    def matches(self, when: datetime) -> bool:
        """True when the schedule fires at the minute of `when` (taken as UTC)."""
        return when.minute in self.minutes and when.hour in self.hours and self._day_matches(when)

    def _day_matches(self, when: datetime) -> bool:
        if when.month not in self.months:
            return False
        dom = when.day in self.days_of_month
        dow = (when.isoweekday() % 7) in self.days_of_week
        if self.day_of_month_star or self.day_of_week_star:
            return dom and dow
        return dom or dow

    def first_fire_between(self, start: datetime, end: datetime) -> datetime | None:
        """The first minute the schedule fires at in the window (start, end], or None.

        Both ends are taken as UTC. Walks the window day by day, then only the hours and minutes
        the schedule names, so a window of weeks costs a few hundred steps, not one per minute.
        """
        start, end = start.astimezone(UTC), end.astimezone(UTC)
        if end <= start:
            return None
        hours, minutes = sorted(self.hours), sorted(self.minutes)
        day = start.replace(hour=0, minute=0, second=0, microsecond=0)
        while day <= end:
            if self._day_matches(day):
                for hour in hours:
                    for minute in minutes:
                        fire = day.replace(hour=hour, minute=minute)
                        if fire > end:
                            return None
                        if fire > start:
                            return fire
            day += timedelta(days=1)
        return None

    def active(self, now: datetime, duration: float) -> bool:
        """True when `now` lies within `duration` seconds of the latest firing: the schedule fired
        at some minute in (now - duration, now] (Karpenter's rule for scheduled budgets).
        """
        if duration <= 0:
            return False
        return self.first_fire_between(now - timedelta(seconds=duration), now) is not None


def _number(text: str, low: int, high: int, names: Mapping[str, int], field: str) -> int:
    upper = text.upper()
    if upper in names:
        return names[upper]
    if not text.isdigit():
        raise InvalidValue(f"{field} field: {text!r} is not a number" + (" or a name" if names else ""))
    value = int(text)
    if not low <= value <= high:
        raise InvalidValue(f"{field} field: {value} is outside {low}-{high}")
    return value


def _parse_field(text: str, low: int, high: int, names: Mapping[str, int], field: str) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise InvalidValue(f"{field} field: empty list item in {text!r}")
        span, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) == 0:
                raise InvalidValue(f"{field} field: step {step_text!r} must be a positive number")
            step = int(step_text)
        if span in ("*", "?"):
            start, end = low, high
        elif "-" in span:
            first, _, last = span.partition("-")
            start = _number(first, low, high, names, field)
            end = _number(last, low, high, names, field)
            if start > end:
                raise InvalidValue(f"{field} field: range {span!r} runs backwards")
        else:
            start = _number(span, low, high, names, field)
            # "5/10" means from 5 to the end of the range in steps of 10.
            end = high if slash else start
        values.update(range(start, end + 1, step))
    return frozenset(values)


def parse_cron(expression: str) -> CronSchedule:
    """Parse a 5-field cron expression or macro; raise InvalidValue naming the bad field."""
    text = expression.strip()
    if text.startswith("@"):
        if text not in MACROS:
            raise InvalidValue(f"{expression!r} is not one of the macros {', '.join(MACROS)}")
        text = MACROS[text]
    parts = text.split()
    if len(parts) != 5:
        raise InvalidValue(
            f"{expression!r} has {len(parts)} fields; expected 5 (minute hour day-of-month month day-of-week)"
        )
    sets = [_parse_field(part, *spec[1:3], spec[3], spec[0]) for part, spec in zip(parts, _FIELDS, strict=True)]
    days_of_week = frozenset(0 if d == 7 else d for d in sets[4])
    return CronSchedule(
        expression=expression,
        minutes=sets[0],
        hours=sets[1],
        days_of_month=sets[2],
        months=sets[3],
        days_of_week=days_of_week,
        day_of_month_star=parts[2] in ("*", "?"),
        day_of_week_star=parts[4] in ("*", "?"),
    )
