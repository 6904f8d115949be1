"""A virtual clock: time that moves only when a test or the simulator moves it.

Role: the `nodewright.ports.Clock` used by tests and `nodewright simulate`, so that timeouts
(launch 5 min, registration 15 min, ICE cache 3 min, consolidateAfter, ...) can be crossed in
microseconds and every run is repeatable. What is faked: the wall clock. What is observed:
nothing; the clock has no side effects besides its own reading.

Contract: `now()` never goes backwards. `advance` and `advance_to` refuse to move the clock into
the past (or by a non-finite amount) with ValueError rather than clamping, because a test that
tries it has a bug worth hearing about.
"""

from __future__ import annotations

import math


class VirtualClock:
    """A Clock whose time is set by its owner; starts at `start` seconds since the epoch."""

    __slots__ = ("_now",)

    def __init__(self, start: float = 0.0) -> None:
        if not math.isfinite(start):
            raise ValueError(f"a clock must start at a finite time, got {start!r}")
        self._now = float(start)

    def now(self) -> float:
        """Seconds since the epoch, as last set."""
        return self._now

    def advance(self, seconds: float) -> float:
        """Move forward by `seconds` (0 is allowed) and return the new time.

        Raises ValueError for a negative or non-finite step.
        """
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"the clock only moves forward by a finite step, got {seconds!r}")
        self._now += seconds
        return self._now

    def advance_to(self, t: float) -> float:
        """Move forward to time `t` (staying put when `t` is now) and return it.

        Raises ValueError when `t` is in the past or not finite.
        """
        if not math.isfinite(t):
            raise ValueError(f"the clock cannot move to {t!r}")
        if t < self._now:
            raise ValueError(f"the clock never goes backwards: it is {self._now}, asked for {t}")
        self._now = float(t)
        return self._now

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now})"
