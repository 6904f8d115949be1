"""Disruption budgets: how many of a NodePool's nodes may be disrupted now, for a reason. Pure.

Karpenter's rules (karpenter-facts.md, Disruption): a budget's `nodes` is a count or a percentage
of the NodePool's nodes, rounded up; a budget with a cron `schedule` (UTC) and a `duration` is
active only from a firing of the schedule for `duration`; a budget with `reasons` applies only to
those reasons. The minimum over the active budgets that apply is the limit; nodes already being
disrupted count against it; a misconfigured budget (bad cron, bad `nodes`, a schedule without a
duration) allows nothing, so a typo never unleashes disruption.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from nodewright.model.cron import parse_cron
from nodewright.model.errors import InvalidValue
from nodewright.model.nodepool import Budget, NodePool

# No budget applies: nothing limits the count (Karpenter uses MaxInt32).
UNLIMITED = 1 << 31
_NODES = re.compile(r"^(\d+)(%?)$")


def budget_limit(budget: Budget, nodes_in_pool: int, reason: str, now: float) -> int | None:
    """What one budget allows for `reason` at `now`, or None when it does not apply (another
    reason, or outside its schedule window). Misconfigured budgets allow 0.
    """
    if budget.reasons and reason not in budget.reasons:
        return None
    match = _NODES.match(budget.nodes.strip())
    if match is None:
        return 0
    if (budget.schedule is None) != (budget.duration is None):
        return 0
    if budget.schedule is not None and budget.duration is not None:
        try:
            schedule = parse_cron(budget.schedule)
        except InvalidValue:
            return 0
        if not schedule.active(datetime.fromtimestamp(now, UTC), budget.duration):
            return None
    value = int(match[1])
    if match[2]:
        if value > 100:
            return 0
        return math.ceil(nodes_in_pool * value / 100)
    return value


def allowed_disruptions(pool: NodePool, nodes_in_pool: int, disrupting: int, reason: str, now: float) -> int:
    """How many more of `pool`'s nodes may be disrupted for `reason` now: the minimum over the
    active budgets for that reason, minus the `disrupting` nodes, never below 0.
    """
    limits = [
        limit
        for limit in (budget_limit(b, nodes_in_pool, reason, now) for b in pool.disruption.budgets)
        if limit is not None
    ]
    allowed = min(limits, default=UNLIMITED)
    return max(0, allowed - disrupting)
