"""`action_for`: the decision table of actions.py, row by row, for every kind and rebalance policy.

Times are offsets from NOW (when the handler runs); EVENT is the event's own time, a few seconds
earlier. The default margin (20 s) and the spot notice (120 s) come from actions.py.
"""

from __future__ import annotations

import pytest

from nodewright.engine.interruption import (
    CAPACITY_RESERVATION,
    CONTINUATION,
    KINDS,
    REBALANCE,
    SCHEDULED_CHANGE,
    SPOT_INTERRUPTION,
    STATE_CHANGE,
    UNKNOWN,
    Action,
    Continuation,
    Message,
    action_for,
)
from nodewright.engine.interruption.actions import (
    DEFAULT_MARGIN,
    DRAIN_AFTER_REPLACEMENT,
    DRAIN_NOW,
    NO_DRAIN,
    REPLACEMENT_WAIT,
    SPOT_NOTICE,
)

NOW = 1_795_255_205.0  # 2026-11-21T10:00:05Z
EVENT = NOW - 5
POLICIES = ("Ignore", "Cordon", "CordonAndDrain", "ReplaceThenDrain")
INSTANCE = ("i-0a1b2c3d4e5f60718",)


def message(kind: str, *, time: float = EVENT, **fields: object) -> Message:
    return Message(id="e-1", kind=kind, source="aws.ec2", detail_type="x", time=time, instance_ids=INSTANCE, **fields)  # type: ignore[arg-type]


def drain_now(deadline: float | None, reason: str, *, block_offering: bool = False) -> Action:
    return Action(
        cordon=True, replace=True, drain=DRAIN_NOW, block_offering=block_offering, deadline=deadline, reason=reason
    )


SPOT = "spot interruption warning"
RESERVATION = "capacity reservation interruption"
MAINTENANCE = "scheduled maintenance"

# (message, grace, margin, expected): every kind but rebalance, whose action ignores the policy.
TABLE = [
    # Spot: drain by the warning's time less the margin, and block the offering.
    pytest.param(
        message(SPOT_INTERRUPTION, action_time=EVENT + 120), None, DEFAULT_MARGIN,
        drain_now(EVENT + 100, SPOT, block_offering=True), id="spot-drains-by-warning-time-less-margin",
    ),
    pytest.param(
        message(SPOT_INTERRUPTION), None, DEFAULT_MARGIN,
        drain_now(EVENT + SPOT_NOTICE - DEFAULT_MARGIN, SPOT, block_offering=True),
        id="spot-without-action-time-counts-two-minutes-from-the-event",
    ),
    pytest.param(
        message(SPOT_INTERRUPTION, time=0.0), None, DEFAULT_MARGIN,
        drain_now(NOW + SPOT_NOTICE - DEFAULT_MARGIN, SPOT, block_offering=True),
        id="spot-without-any-time-counts-two-minutes-from-now",
    ),
    pytest.param(
        message(SPOT_INTERRUPTION, action_time=EVENT + 120), 30.0, DEFAULT_MARGIN,
        drain_now(NOW + 30, SPOT, block_offering=True), id="spot-grace-shorter-than-the-warning-bounds-the-drain",
    ),
    pytest.param(
        message(SPOT_INTERRUPTION, action_time=EVENT + 120), 3600.0, DEFAULT_MARGIN,
        drain_now(EVENT + 100, SPOT, block_offering=True), id="spot-longer-grace-changes-nothing",
    ),
    pytest.param(
        message(SPOT_INTERRUPTION, action_time=EVENT + 120), None, 45.0,
        drain_now(EVENT + 75, SPOT, block_offering=True), id="spot-custom-margin",
    ),
    pytest.param(
        message(SPOT_INTERRUPTION, action_time=NOW - 10), None, DEFAULT_MARGIN,
        drain_now(NOW - 30, SPOT, block_offering=True), id="spot-warning-handled-late-has-a-past-deadline",
    ),
    # Capacity reservation: two minutes from the event, like spot; the reservation's offering is
    # blocked (Karpenter marks the reservation unavailable).
    pytest.param(
        message(CAPACITY_RESERVATION), None, DEFAULT_MARGIN,
        drain_now(EVENT + SPOT_NOTICE - DEFAULT_MARGIN, RESERVATION, block_offering=True),
        id="reservation-drains-two-minutes-from-event",
    ),
    pytest.param(
        message(CAPACITY_RESERVATION, time=0.0), None, DEFAULT_MARGIN,
        drain_now(NOW + SPOT_NOTICE - DEFAULT_MARGIN, RESERVATION, block_offering=True),
        id="reservation-without-time-counts-from-now",
    ),
    pytest.param(
        message(CAPACITY_RESERVATION), 60.0, DEFAULT_MARGIN,
        drain_now(NOW + 60, RESERVATION, block_offering=True), id="reservation-grace-bounds-the-drain",
    ),
    # Scheduled maintenance: by its start time; no start time means only the grace bounds it.
    pytest.param(
        message(SCHEDULED_CHANGE, action_time=NOW + 86_400), None, DEFAULT_MARGIN,
        drain_now(NOW + 86_400 - DEFAULT_MARGIN, MAINTENANCE), id="maintenance-drains-by-its-start-less-margin",
    ),
    pytest.param(
        message(SCHEDULED_CHANGE, action_time=NOW + 86_400), 900.0, DEFAULT_MARGIN,
        drain_now(NOW + 900, MAINTENANCE), id="maintenance-far-off-is-bounded-by-grace",
    ),
    pytest.param(
        message(SCHEDULED_CHANGE), None, DEFAULT_MARGIN,
        drain_now(None, MAINTENANCE), id="maintenance-without-start-drains-until-done",
    ),
    pytest.param(
        message(SCHEDULED_CHANGE), 900.0, DEFAULT_MARGIN,
        drain_now(NOW + 900, MAINTENANCE), id="maintenance-without-start-is-bounded-by-grace",
    ),
    pytest.param(
        message(SCHEDULED_CHANGE, status="open", code="AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"), None, DEFAULT_MARGIN,
        drain_now(None, f"{MAINTENANCE} AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"),
        id="maintenance-in-progress-drains-and-names-its-code",
    ),
    pytest.param(
        message(SCHEDULED_CHANGE, status="closed", code="AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED"), 900.0,
        DEFAULT_MARGIN,
        Action(reason=f"{MAINTENANCE} AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED closed: nothing to do"),
        id="closed-maintenance-needs-nothing",
    ),
    pytest.param(
        message(SCHEDULED_CHANGE, status="closed", action_time=NOW + 60), None, DEFAULT_MARGIN,
        Action(reason=f"{MAINTENANCE} closed: nothing to do"), id="closed-maintenance-without-code-needs-nothing",
    ),
    # State changes: those that take the node away drain it; terminated deletes; others nothing.
    *[
        pytest.param(
            message(STATE_CHANGE, state=state), grace, DEFAULT_MARGIN,
            drain_now(None if grace is None else NOW + grace, f"instance {state}"), id=f"{state}-grace-{grace}",
        )
        for state in ("stopping", "stopped", "shutting-down")
        for grace in (None, 600.0)
    ],
    pytest.param(
        message(STATE_CHANGE, state="terminated"), 600.0, DEFAULT_MARGIN,
        Action(delete=True, reason="instance terminated"), id="terminated-deletes-node-and-claim-only",
    ),
    pytest.param(
        message(STATE_CHANGE, state="running"), None, DEFAULT_MARGIN,
        Action(reason="state running needs nothing"), id="running-needs-nothing",
    ),
    pytest.param(
        message(STATE_CHANGE, state="pending"), None, DEFAULT_MARGIN,
        Action(reason="state pending needs nothing"), id="pending-needs-nothing",
    ),
    pytest.param(
        message(STATE_CHANGE), None, DEFAULT_MARGIN,
        Action(reason="state ? needs nothing"), id="no-state-needs-nothing",
    ),
    # Unknown events, and a continuation message that lost its continuation: nothing.
    pytest.param(
        message(UNKNOWN), 600.0, DEFAULT_MARGIN,
        Action(reason="Unknown events need no action"), id="unknown-needs-nothing",
    ),
    pytest.param(
        message(CONTINUATION), 600.0, DEFAULT_MARGIN,
        Action(reason="DrainContinuation events need no action"), id="continuation-without-payload-needs-nothing",
    ),
]  # fmt: skip


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(("msg", "grace", "margin", "expected"), TABLE)
def test_action_for_each_kind_whatever_the_rebalance_policy(
    msg: Message, grace: float | None, margin: float, expected: Action, policy: str
) -> None:
    assert action_for(msg, policy, now=NOW, grace=grace, margin=margin) == expected


REBALANCE_REASON = "rebalance recommendation, policy {}"
REBALANCE_TABLE = [
    pytest.param("Ignore", None, Action(), id="ignore-does-nothing-as-karpenter"),
    pytest.param("Ignore", 600.0, Action(), id="ignore-with-grace-does-nothing"),
    pytest.param("Cordon", None, Action(cordon=True), id="cordon-only"),
    pytest.param("Cordon", 600.0, Action(cordon=True), id="cordon-ignores-grace"),
    pytest.param(
        "CordonAndDrain", None, Action(cordon=True, replace=True, drain=DRAIN_NOW),
        id="cordon-and-drain-now-like-node-termination-handler",
    ),
    pytest.param(
        "CordonAndDrain", 600.0, Action(cordon=True, replace=True, drain=DRAIN_NOW, deadline=NOW + 600),
        id="cordon-and-drain-bounded-by-grace",
    ),
    pytest.param(
        "ReplaceThenDrain", None,
        Action(cordon=True, replace=True, drain=DRAIN_AFTER_REPLACEMENT, replace_by=NOW + REPLACEMENT_WAIT),
        id="replace-then-drain-waits-for-replacement",
    ),
    pytest.param(
        "ReplaceThenDrain", 600.0,
        Action(
            cordon=True, replace=True, drain=DRAIN_AFTER_REPLACEMENT, deadline=NOW + 600,
            replace_by=NOW + REPLACEMENT_WAIT,
        ),
        id="replace-then-drain-bounded-by-grace",
    ),
    pytest.param("cordon", None, Action(), id="unknown-policy-spelling-is-ignore"),
]  # fmt: skip


@pytest.mark.parametrize(("policy", "grace", "expected"), REBALANCE_TABLE)
def test_rebalance_follows_the_nodepool_policy(policy: str, grace: float | None, expected: Action) -> None:
    action = action_for(message(REBALANCE), policy, now=NOW, grace=grace)

    assert action == Action(
        cordon=expected.cordon,
        replace=expected.replace,
        drain=expected.drain,
        deadline=expected.deadline,
        replace_by=expected.replace_by,
        reason=REBALANCE_REASON.format(policy),
    )


def test_rebalance_ignores_the_margin() -> None:
    assert action_for(message(REBALANCE), "CordonAndDrain", now=NOW, grace=600.0, margin=90.0).deadline == NOW + 600


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "continuation",
    [
        pytest.param(
            Continuation("ip-10-0-1-2.ec2.internal", INSTANCE[0], DRAIN_NOW, NOW + 95, NOW - 60, SPOT_INTERRUPTION),
            id="drain-now",
        ),
        pytest.param(
            Continuation(
                "ip-10-0-1-2.ec2.internal", INSTANCE[0], DRAIN_AFTER_REPLACEMENT, NOW + 3600, NOW - 60, REBALANCE,
                replace_by=NOW + 240, attempt=2,
            ),
            id="after-replacement",
        ),
    ],
)  # fmt: skip
def test_continuation_carries_its_drain_deadline_and_replace_by(continuation: Continuation, policy: str) -> None:
    msg = message(CONTINUATION, continuation=continuation)

    action = action_for(msg, policy, now=NOW, grace=30.0)

    assert action == Action(
        drain=continuation.drain,
        deadline=continuation.deadline,
        replace_by=continuation.replace_by,
        reason="drain continues",
    )
    assert action.acts


@pytest.mark.parametrize(
    ("action", "acts"),
    [
        pytest.param(Action(), False, id="nothing"),
        pytest.param(Action(reason="only words", deadline=NOW, replace_by=NOW), False, id="times-alone-do-nothing"),
        pytest.param(Action(cordon=True), True, id="cordon"),
        pytest.param(Action(replace=True), True, id="replace"),
        pytest.param(Action(drain=DRAIN_NOW), True, id="drain"),
        pytest.param(Action(drain=NO_DRAIN, block_offering=True), True, id="block-offering"),
        pytest.param(Action(delete=True), True, id="delete"),
    ],
)
def test_an_action_acts_when_it_changes_anything(action: Action, acts: bool) -> None:
    assert action.acts is acts


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("kind", KINDS)
def test_only_rebalance_depends_on_the_policy(kind: str, policy: str) -> None:
    msg = message(kind, state="stopping", action_time=NOW + 120)
    baseline = action_for(msg, "ReplaceThenDrain", now=NOW, grace=600.0)

    action = action_for(msg, policy, now=NOW, grace=600.0)

    assert (action == baseline) or kind == REBALANCE


@pytest.mark.parametrize("kind", [SPOT_INTERRUPTION, CAPACITY_RESERVATION, SCHEDULED_CHANGE])
@pytest.mark.parametrize("grace", [None, 0.0, 45.0, 10_000.0])
def test_a_deadline_is_never_later_than_grace_allows(kind: str, grace: float | None) -> None:
    action = action_for(message(kind, action_time=NOW + 120), "Ignore", now=NOW, grace=grace)

    assert action.deadline is not None
    assert grace is None or action.deadline <= NOW + grace
    assert action.deadline <= NOW + 120 - DEFAULT_MARGIN
