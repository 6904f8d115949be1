"""A timeline: what happens in the world while a controller sleeps on a virtual clock.

Role: tests hand `Timeline.sleep` to a controller as its `sleep` (the simulator has its own
event loop, `nodewright.simulator.standins.lambdas`). The controller's sleep then moves the
clock through every event due by the time it wakes, running each at its own time, in time
order (ties: the order they were scheduled): pods created by a Deployment, a kube-scheduler
marking them unschedulable, a node registering, ...
What is faked: the passage of time and the world's activity during it. What is observed:
nothing; events are the caller's callbacks.

Contract: `at(t, action)` schedules `action()` at time `t` (a `t` already past runs at the next
`sleep` or `run_due`, at the then current time). `sleep(seconds)` returns with the clock exactly
`seconds` later, unless something else moved it further (a clock that also moves by itself).
Actions may schedule further events; those due within the sleep run in the same sleep.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


class SettableClock(Protocol):
    """A clock its owner moves: `nodewright.inmemory.clock.VirtualClock` and the like."""

    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def advance_to(self, t: float) -> float:
        """Move forward to `t`; ValueError when `t` is in the past."""
        ...


class Timeline:
    """Events at virtual times, run as the clock passes them (see the module docstring)."""

    def __init__(self, clock: SettableClock) -> None:
        self.clock = clock
        self._events: list[tuple[float, int, Callable[[], object]]] = []
        self._order = itertools.count()

    def at(self, t: float, action: Callable[[], object]) -> None:
        """Run `action()` when the clock reaches `t`."""
        heapq.heappush(self._events, (t, next(self._order), action))

    def sleep(self, seconds: float, woken: Callable[[], bool] | None = None) -> None:
        """Move the clock `seconds` forward, running every event due on the way at its time; with
        `woken`, stop at the first event after which it is true (a wait a watch event ends).
        """
        target = self.clock.now() + seconds
        while self._events and self._events[0][0] <= target:
            t, _, action = heapq.heappop(self._events)
            self.clock.advance_to(max(t, self.clock.now()))
            action()
            if woken is not None and woken():
                return
        self.clock.advance_to(max(target, self.clock.now()))

    def run_due(self) -> int:
        """Run the events due by now without moving the clock; return how many ran."""
        ran = 0
        while self._events and self._events[0][0] <= self.clock.now():
            _, _, action = heapq.heappop(self._events)
            action()
            ran += 1
        return ran

    @property
    def next_time(self) -> float | None:
        """When the next event is due, or None when none is left."""
        return self._events[0][0] if self._events else None

    def __len__(self) -> int:
        return len(self._events)


# --- measuring what a provisioner did ----------------------------------------------------------


def capacity_committed(decisions: Iterable[Mapping[str, object]]) -> dict[str, float]:
    """Pod key -> when capacity was first committed to it, from a provisioner's decisions (a
    RecordingObserver's): a `launch` (CreateFleet for a claim holding the pod) or a `nominate`
    (the pod given a place on a node already launched), each stamped with its time `at`.
    """
    committed: dict[str, float] = {}
    for decision in decisions:
        if decision.get("decision") not in ("launch", "nominate"):
            continue
        at = decision.get("at")
        pods = decision.get("pods")
        if not isinstance(at, (int, float)) or not isinstance(pods, (list, tuple)):
            continue
        for key in pods:
            committed.setdefault(str(key), float(at))
    return committed


@dataclass(frozen=True, slots=True)
class Waits:
    """Order statistics of waiting times, in seconds (nearest-rank percentiles)."""

    count: int
    median: float
    p99: float
    max: float

    @classmethod
    def of(cls, waits: Sequence[float]) -> Waits:
        """The statistics of `waits` (all zero when there are none)."""
        if not waits:
            return cls(0, 0.0, 0.0, 0.0)
        ordered = sorted(waits)
        return cls(len(ordered), percentile(ordered, 50), percentile(ordered, 99), ordered[-1])


def percentile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank `q`-th percentile of sorted values (the smallest value with at least q%
    of the values at or below it); the median of an even count is the mean of the middle two.
    """
    n = len(ordered)
    if n == 0:
        raise ValueError("no values")
    if q == 50 and n % 2 == 0:
        return (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    rank = max(1, -(-q * n // 100))  # ceil(q n / 100)
    return ordered[min(n, int(rank)) - 1]
