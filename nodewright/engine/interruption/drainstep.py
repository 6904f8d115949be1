"""What an interruption drain does next, and how it ends: pure decisions over one continuation.

A drain goes on by continuations (`Continuation`), one bounded step each. Each step first decides,
from reads alone, what it does and when its successor is due (`next_step`); then, when the chain
ends with a finished or timed-out drain, what becomes of the node (`ending`). The controller
(`controllers/interruption.py`) makes the reads, and acts on these decisions.

`next_step`, after the controller found ReplaceThenDrain's replacement ready (or not waiting):

    the node holds nothing left to evict                     FINISH, drained
    before the deadline                                      EVICT, successor in DRAIN_RETRY
    past it, message unconfirmed, within its grace           EVICT_UNCONFIRMED, successor
    past it, message unconfirmed, grace over                 STOP_UNCONFIRMED (node stays cordoned)
    past it, AWS takes the instance at a known later time    EVICT_PAST_DEADLINE until that time
    past it                                                  FINISH, not drained

`ending`, once a drain finished (FINISH):

    a rebalance recommendation under Cordon or CordonAndDrain    KEEP_BY_POLICY (as NTH does)
    a voluntary drain that leaves a do-not-disrupt pod           KEEP_DO_NOT_DISRUPT
    anything else                                                TERMINATE
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nodewright.engine.drain import DrainPlan
from nodewright.engine.interruption.actions import DEFAULT_MARGIN, DRAIN_AFTER_REPLACEMENT
from nodewright.engine.interruption.messages import (
    CAPACITY_RESERVATION,
    REBALANCE,
    SCHEDULED_CHANGE,
    SPOT_INTERRUPTION,
    Continuation,
)
from nodewright.engine.interruption.verification import unverified_drain_over

# Rebalance policies that stop at the node (as AWS Node Termination Handler does): no termination.
KEEP_NODE_POLICIES = ("Cordon", "CordonAndDrain")
# Kinds whose event says when AWS takes the instance: their drains end at that time, not before.
TAKEN_AT_A_KNOWN_TIME = (SPOT_INTERRUPTION, CAPACITY_RESERVATION, SCHEDULED_CHANGE)

# The wait before a drain's next step (by attempt). An interruption drain has a notice of minutes:
# a budget-blocked eviction is retried at most every 5 s (the Drainer's own backoff grows to
# 10 s). bench/crash_points.py's 6-pod strict-PDB spot drain ends 62 s into its 120 s notice with
# this, 95 s with the Drainer's; the slack is what two crashes (two redeliveries) cost.
DRAIN_RETRY = (1.0, 2.0, 4.0, 5.0)

# What a drain does next (DrainNext.what).
WAIT = "wait"  # for the replacement capacity (ReplaceThenDrain)
EVICT = "evict"  # a bounded eviction step, then the successor continues
EVICT_PAST_DEADLINE = "evict-past-deadline"  # AWS takes the instance later: evict what budgets allow
FINISH = "finish"  # nothing left to evict, or the deadline: terminate (or keep) and end the chain
# An unconfirmed message's drain (controllers/verification.py) never terminates with pods left:
EVICT_UNCONFIRMED = "evict-unconfirmed"  # past its deadline, evict what budgets allow a while longer
STOP_UNCONFIRMED = "stop-unconfirmed"  # then stop, the node left cordoned, the instance running

# How a finished drain ends (`ending`).
TERMINATE = "terminate"  # the instance is terminated, the Node and the claim removed
KEEP_BY_POLICY = "keep-by-policy"  # a rebalance policy that stops at the node
KEEP_DO_NOT_DISRUPT = "keep-do-not-disrupt"  # a voluntary drain never takes a do-not-disrupt pod down


@dataclass(frozen=True, slots=True)
class DrainNext:
    """What a drain does next, chosen from reads before any effect: `delay` is when its successor
    continuation is due (None: the chain ends with this step); on FINISH, `drained` when nothing
    was left to evict and `kept` the pods that stay (name -> why).
    """

    what: str
    delay: float | None
    drained: bool = False
    kept: tuple[tuple[str, str], ...] = ()


def past_deadline(cont: Continuation, now: float) -> bool:
    """Whether the drain `cont` carries is past its deadline (a drain without one never is)."""
    return bool(cont.deadline) and now >= cont.deadline


def waits_for_replacement(cont: Continuation, now: float) -> bool:
    """Whether the drain must first see its replacement ready (ReplaceThenDrain, before the deadline)."""
    return cont.drain == DRAIN_AFTER_REPLACEMENT and not past_deadline(cont, now)


def taken_at(cont: Continuation) -> float | None:
    """When AWS takes the instance whose drain `cont` carries, if its event said (the deadline is
    that time minus the margin), else None (a drain bounded only by terminationGracePeriod).
    """
    if cont.origin in TAKEN_AT_A_KNOWN_TIME and cont.deadline:
        return cont.deadline + DEFAULT_MARGIN
    return None


def forced(cont: Continuation) -> bool:
    """Whether the drain may take do-not-disrupt pods down: only a confirmed, involuntary one."""
    return cont.origin != REBALANCE and cont.verified


def next_step(cont: Continuation, plan: DrainPlan, now: float) -> DrainNext:
    """What the drain `cont` carries does next, given the node's drain `plan` now (see the module
    docstring; the wait for a replacement is decided before, `waits_for_replacement`).
    """
    if plan.done:
        return DrainNext(FINISH, None, drained=True, kept=plan.kept)
    retry = DRAIN_RETRY[min(cont.attempt, len(DRAIN_RETRY)) - 1]
    if not past_deadline(cont, now):
        return DrainNext(EVICT, retry)
    if not cont.verified:
        # Unconfirmed: never terminate with pods left on the instance; evict what the budgets
        # allow until the drain is over, then stop (the node stays cordoned; a real
        # interruption's state change removes it once EC2 confirms it).
        if not unverified_drain_over(cont.deadline, cont.started, now):
            return DrainNext(EVICT_UNCONFIRMED, retry)
        return DrainNext(STOP_UNCONFIRMED, None, kept=plan.kept)
    until = taken_at(cont)
    if until is not None and now < until:
        # Past the deadline, but AWS takes the instance only then: terminating now would kill the
        # pods a budget still holds on it 20 s early. Keep evicting what the budgets allow until
        # then; the instance goes with whatever is left.
        return DrainNext(EVICT_PAST_DEADLINE, min(retry, until - now))
    return DrainNext(FINISH, None, kept=plan.kept)


def ending(cont: Continuation, policy: str, kept: Mapping[str, str]) -> str:
    """How a finished drain ends under the NodePool's rebalance `policy`, `kept` the pods left
    on the node (name -> why): TERMINATE, KEEP_BY_POLICY or KEEP_DO_NOT_DISRUPT.
    """
    if cont.origin == REBALANCE and policy in KEEP_NODE_POLICIES:
        return KEEP_BY_POLICY
    if not forced(cont) and "do-not-disrupt" in kept.values():
        # The node stays cordoned until the pod finishes or a real interruption forces the issue.
        return KEEP_DO_NOT_DISRUPT
    return TERMINATE
