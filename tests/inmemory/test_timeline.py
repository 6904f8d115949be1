"""The timeline (events run as a virtual clock passes them) and the wait statistics."""

from __future__ import annotations

import pytest

from nodewright.inmemory.catalog import FixedCatalog
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.timeline import Timeline, Waits, capacity_committed, percentile
from tests.builders import instance_type


def test_sleep_runs_each_due_event_at_its_time_in_order() -> None:
    clock = VirtualClock(100.0)
    timeline = Timeline(clock)
    seen: list[tuple[str, float]] = []
    timeline.at(103.0, lambda: seen.append(("late", clock.now())))
    timeline.at(101.5, lambda: seen.append(("early", clock.now())))
    timeline.at(101.5, lambda: seen.append(("early, second", clock.now())))
    timeline.at(120.0, lambda: seen.append(("not yet", clock.now())))

    timeline.sleep(5)

    assert seen == [("early", 101.5), ("early, second", 101.5), ("late", 103.0)]
    assert clock.now() == 105.0
    assert (len(timeline), timeline.next_time) == (1, 120.0)


def test_events_an_event_schedules_run_in_the_same_sleep_when_due() -> None:
    clock = VirtualClock(0.0)
    timeline = Timeline(clock)
    seen: list[float] = []
    timeline.at(1.0, lambda: timeline.at(2.0, lambda: seen.append(clock.now())))
    timeline.sleep(3)
    assert seen == [2.0]


def test_run_due_runs_past_events_without_moving_the_clock() -> None:
    clock = VirtualClock(10.0)
    timeline = Timeline(clock)
    seen: list[float] = []
    timeline.at(5.0, lambda: seen.append(clock.now()))
    timeline.at(11.0, lambda: seen.append(clock.now()))
    assert timeline.run_due() == 1
    assert seen == [10.0]
    assert clock.now() == 10.0


def test_capacity_is_committed_at_the_first_launch_or_nomination_of_a_pod() -> None:
    decisions = [
        {"decision": "unschedulable", "pod": "default/a", "at": 1.0},
        {"decision": "launch", "pods": ["default/a", "default/b"], "at": 3.0},
        {"decision": "nominate", "pods": ["default/c"], "at": 4.0},
        {"decision": "launch", "pods": ["default/a"], "at": 9.0},
    ]
    assert capacity_committed(decisions) == {"default/a": 3.0, "default/b": 3.0, "default/c": 4.0}


def test_waits_report_nearest_rank_percentiles() -> None:
    waits = Waits.of([float(n) for n in range(100, 0, -1)])
    assert (waits.count, waits.median, waits.p99, waits.max) == (100, 50.5, 99.0, 100.0)
    assert Waits.of([]) == Waits(0, 0.0, 0.0, 0.0)
    assert percentile([1.0, 2.0, 3.0], 50) == 2.0
    with pytest.raises(ValueError, match="no values"):
        percentile([], 99)


def test_a_fixed_catalog_offers_the_same_types_for_every_nodeclass() -> None:
    types = (instance_type("m5.large"),)
    assert FixedCatalog(types).instance_types(None) == types
