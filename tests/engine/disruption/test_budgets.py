"""Disruption budgets: counts and percentages (rounded up), cron windows in UTC, reasons, the minimum
of the active budgets, nodes already disrupting, and misconfigured budgets allowing nothing.

Faked: nothing; `allowed_disruptions` is a pure function of a NodePool, counts and the time.
NOW is Sunday 2025-06-15 15:06:40 UTC.
"""

from __future__ import annotations

import pytest

from nodewright.engine.disruption import allowed_disruptions
from nodewright.engine.disruption.budgets import UNLIMITED
from nodewright.model.nodepool import Budget, Disruption, NodePool
from tests.engine.disruption.scenario import NOW

HOUR = 3600.0


def pool(*budgets: Budget) -> NodePool:
    return NodePool("default", disruption=Disruption(budgets=budgets))


@pytest.mark.parametrize(
    ("budgets", "nodes", "disrupting", "reason", "allowed"),
    [
        pytest.param((Budget(),), 10, 0, "Underutilized", 1, id="default-10%-of-10"),
        pytest.param((Budget(),), 11, 0, "Underutilized", 2, id="percent-rounds-up"),
        pytest.param((Budget(),), 1, 0, "Underutilized", 1, id="10%-of-one-node-is-one"),
        pytest.param((Budget(),), 0, 0, "Underutilized", 0, id="empty-pool"),
        pytest.param((Budget("100%"),), 7, 0, "Empty", 7, id="all-nodes"),
        pytest.param((Budget("3"),), 50, 0, "Drifted", 3, id="count"),
        pytest.param((Budget("0"),), 50, 0, "Drifted", 0, id="zero-blocks"),
        pytest.param((Budget("3"),), 50, 2, "Drifted", 1, id="disrupting-nodes-count-against-it"),
        pytest.param((Budget("3"),), 50, 5, "Drifted", 0, id="never-below-zero"),
        pytest.param((Budget("5"), Budget("2")), 50, 0, "Empty", 2, id="minimum-of-active-budgets"),
        pytest.param((), 50, 3, "Empty", UNLIMITED - 3, id="no-budget-no-limit"),
        pytest.param(
            (Budget("0", reasons=("Drifted",)), Budget("50%")), 10, 0, "Drifted", 0, id="reason-listed-applies"
        ),
        pytest.param(
            (Budget("0", reasons=("Drifted",)), Budget("50%")), 10, 0, "Underutilized", 5, id="other-reason-skips-it"
        ),
        pytest.param(
            (Budget("0", reasons=("Drifted",)),), 10, 0, "Empty", UNLIMITED, id="only-budget-for-other-reason"
        ),
    ],
)
def test_budgets_limit_disruptions_by_count_percentage_and_reason(
    budgets: tuple[Budget, ...], nodes: int, disrupting: int, reason: str, allowed: int
) -> None:
    assert allowed_disruptions(pool(*budgets), nodes, disrupting, reason, NOW) == allowed


@pytest.mark.parametrize(
    ("schedule", "duration", "allowed"),
    [
        pytest.param("0 15 * * *", HOUR, 0, id="fired-at-15:00-for-an-hour"),
        pytest.param("0 15 * * *", 300, 2, id="fired-at-15:00-for-five-minutes-over"),
        pytest.param("0 9 * * *", HOUR, 2, id="morning-window-over"),
        pytest.param("0 22 * * *", 18 * HOUR, 0, id="window-from-last-night"),
        pytest.param("0 0 * * mon-fri", 24 * HOUR, 2, id="weekdays-only-and-today-is-sunday"),
        pytest.param("0 0 * * sun", 24 * HOUR, 0, id="sundays"),
        pytest.param("@daily", 16 * HOUR, 0, id="macro"),
        pytest.param("6 15 15 6 *", 60, 0, id="fired-this-very-minute"),
        pytest.param("7 15 15 6 *", 3600, 2, id="fires-next-minute"),
    ],
)
def test_a_scheduled_budget_applies_only_inside_its_window(schedule: str, duration: float, allowed: int) -> None:
    budgets = (Budget("0", schedule=schedule, duration=duration), Budget("20%"))

    assert allowed_disruptions(pool(*budgets), 10, 0, "Underutilized", NOW) == allowed


@pytest.mark.parametrize(
    "budget",
    [
        pytest.param(Budget("ten"), id="nodes-not-a-number"),
        pytest.param(Budget("-1"), id="negative-nodes"),
        pytest.param(Budget("150%"), id="percent-over-100"),
        pytest.param(Budget("5", schedule="61 * * * *", duration=HOUR), id="bad-cron"),
        pytest.param(Budget("5", schedule="0 9 * * *"), id="schedule-without-duration"),
        pytest.param(Budget("5", duration=HOUR), id="duration-without-schedule"),
    ],
)
def test_a_misconfigured_budget_allows_nothing(budget: Budget) -> None:
    assert allowed_disruptions(pool(budget, Budget("100%")), 10, 0, "Underutilized", NOW) == 0
