"""Small passes try every fill strategy and keep the best plan."""

from __future__ import annotations

import pytest

from nodewright.engine.scheduling import PORTFOLIO, SchedulingResult, Strategy, solve
from tests.engine.scheduling.scenario import pods, scheduling_input, term

# Hostname anti-affinity forces one node per "solo" pod; where the generic pods go then decides
# the bill: first fit piles them on the oldest claims, emptiest-first spreads them like Karpenter.
FORCED = [*pods(6, "solo", cpu="1500m", memory="1Gi", labels={"app": "solo"}, anti_affinity=(term("solo"),))]
WORKLOADS = {
    "forced-nodes": FORCED + pods(12, "web", cpu="500m", memory="512Mi"),
    "uniform": pods(40, "web", cpu="1", memory="2Gi"),
    "mixed": pods(10, "cpu", cpu="2", memory="1Gi") + pods(10, "mem", cpu="250m", memory="6Gi"),
}


def _key(result: SchedulingResult) -> tuple[int, float]:
    return len(result.unschedulable), round(result.price_per_hour, 9)


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_the_chosen_plan_is_never_worse_than_any_single_strategy(workload: str) -> None:
    inp = scheduling_input(WORKLOADS[workload])
    chosen = solve(inp)
    for strategy in PORTFOLIO:
        assert _key(chosen) <= _key(solve(inp, strategy)), strategy


def test_a_given_strategy_runs_alone_and_places_every_pod() -> None:
    result = solve(scheduling_input(WORKLOADS["forced-nodes"]), Strategy(emptiest_first=True))
    assert not result.unschedulable
    assert sum(len(c.pods) for c in result.claims) == len(WORKLOADS["forced-nodes"])
    assert len(result.claims) >= 6  # one node per solo pod at least
