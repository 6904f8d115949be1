"""`engine.interruption.drainstep`: what a drain does next, and how a finished drain ends."""

from __future__ import annotations

import pytest

from nodewright.engine.drain import DrainPlan
from nodewright.engine.interruption import REBALANCE, SCHEDULED_CHANGE, SPOT_INTERRUPTION, STATE_CHANGE, Continuation
from nodewright.engine.interruption.actions import DEFAULT_MARGIN, DRAIN_AFTER_REPLACEMENT, DRAIN_NOW
from nodewright.engine.interruption.drainstep import (
    EVICT,
    EVICT_PAST_DEADLINE,
    EVICT_UNCONFIRMED,
    FINISH,
    KEEP_BY_POLICY,
    KEEP_DO_NOT_DISRUPT,
    STOP_UNCONFIRMED,
    TERMINATE,
    DrainNext,
    ending,
    next_step,
    waits_for_replacement,
)
from nodewright.engine.interruption.verification import UNVERIFIED_DRAIN_LIMIT

DEADLINE = 1000.0
KEPT = (("default/db-0", "do-not-disrupt"),)
EMPTY = DrainPlan(tier="", evict=(), terminating=0, later=0, kept=KEPT)
BUSY = DrainPlan(tier="", evict=(), terminating=1, later=0, kept=())


def cont(
    origin: str = SPOT_INTERRUPTION, *, attempt: int = 1, verified: bool = True, deadline: float = DEADLINE
) -> Continuation:
    return Continuation(
        "n1", "i-1", DRAIN_NOW, deadline, started=900.0, origin=origin, attempt=attempt, verified=verified
    )


# (case, continuation, plan, now, expected)
NEXT = [
    ("nothing left: finished, drained", cont(), EMPTY, 950.0, DrainNext(FINISH, None, drained=True, kept=KEPT)),
    ("before the deadline: evict, first retry", cont(), BUSY, 950.0, DrainNext(EVICT, 1.0)),
    ("the retry grows with the attempt", cont(attempt=3), BUSY, 950.0, DrainNext(EVICT, 4.0)),
    ("the retry stops growing", cont(attempt=9), BUSY, 950.0, DrainNext(EVICT, 5.0)),
    (
        "past the deadline, AWS takes it later: evict until then",
        cont(),
        BUSY,
        DEADLINE + 5.0,
        DrainNext(EVICT_PAST_DEADLINE, 1.0),
    ),
    (
        "the successor is due no later than the taking",
        cont(attempt=4),
        BUSY,
        DEADLINE + DEFAULT_MARGIN - 2.0,
        DrainNext(EVICT_PAST_DEADLINE, 2.0),
    ),
    ("past the taking: finished, not drained", cont(), BUSY, DEADLINE + DEFAULT_MARGIN, DrainNext(FINISH, None)),
    (
        "a scheduled change is taken at a known time too",
        cont(SCHEDULED_CHANGE),
        BUSY,
        DEADLINE + 1,
        DrainNext(EVICT_PAST_DEADLINE, 1.0),
    ),
    ("a state change's deadline is the end", cont(STATE_CHANGE), BUSY, DEADLINE, DrainNext(FINISH, None)),
    (
        "unconfirmed, past the deadline: evict a while longer",
        cont(verified=False),
        BUSY,
        DEADLINE + 1,
        DrainNext(EVICT_UNCONFIRMED, 1.0),
    ),
    (
        "unconfirmed, its grace over: stop, the node kept",
        cont(verified=False),
        BUSY,
        DEADLINE + UNVERIFIED_DRAIN_LIMIT,
        DrainNext(STOP_UNCONFIRMED, None),
    ),
    ("no deadline: evict on", cont(STATE_CHANGE, deadline=0.0), BUSY, 1e9, DrainNext(EVICT, 1.0)),
]


@pytest.mark.parametrize(("case", "continuation", "plan", "now", "expected"), NEXT, ids=[c[0] for c in NEXT])
def test_next_step(case: str, continuation: Continuation, plan: DrainPlan, now: float, expected: DrainNext) -> None:
    assert next_step(continuation, plan, now) == expected


def test_only_replace_then_drain_before_its_deadline_waits_for_a_replacement() -> None:
    waiting = Continuation("n1", "i-1", DRAIN_AFTER_REPLACEMENT, DEADLINE, started=900.0, origin=REBALANCE)
    assert waits_for_replacement(waiting, DEADLINE - 1)
    assert not waits_for_replacement(waiting, DEADLINE)
    assert not waits_for_replacement(cont(), 950.0)


# (case, continuation, rebalance policy, pods kept, expected)
ENDINGS = [
    ("an interruption terminates", cont(), "ReplaceThenDrain", {}, TERMINATE),
    (
        "a forced drain terminates with a do-not-disrupt pod",
        cont(),
        "ReplaceThenDrain",
        {"p": "do-not-disrupt"},
        TERMINATE,
    ),
    ("a rebalance under Cordon keeps the node", cont(REBALANCE), "Cordon", {}, KEEP_BY_POLICY),
    ("a rebalance under CordonAndDrain keeps the node", cont(REBALANCE), "CordonAndDrain", {}, KEEP_BY_POLICY),
    ("a rebalance under ReplaceThenDrain terminates", cont(REBALANCE), "ReplaceThenDrain", {}, TERMINATE),
    (
        "a voluntary drain keeps a do-not-disrupt pod's node",
        cont(REBALANCE),
        "ReplaceThenDrain",
        {"p": "do-not-disrupt"},
        KEEP_DO_NOT_DISRUPT,
    ),
    (
        "an unconfirmed drain keeps a do-not-disrupt pod's node",
        cont(verified=False),
        "ReplaceThenDrain",
        {"p": "do-not-disrupt"},
        KEEP_DO_NOT_DISRUPT,
    ),
    (
        "a pod kept for another reason does not keep the node",
        cont(REBALANCE),
        "ReplaceThenDrain",
        {"p": "daemon"},
        TERMINATE,
    ),
]


@pytest.mark.parametrize(("case", "continuation", "policy", "kept", "expected"), ENDINGS, ids=[c[0] for c in ENDINGS])
def test_ending(case: str, continuation: Continuation, policy: str, kept: dict[str, str], expected: str) -> None:
    assert ending(continuation, policy, kept) == expected
