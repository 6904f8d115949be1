"""What to do about an interruption Message: the Action, decided from the event and the node's
NodePool. Pure.

| kind                      | cordon | replace | drain                         | other              |
|---------------------------|--------|---------|-------------------------------|--------------------|
| spot warning              | yes    | yes     | now, by the warning's time    | block the offering |
| capacity-reservation      | yes    | yes     | now, by its termination time  | block the reservation's offering |
| capacity block expiring   | yes    | yes     | now, by EC2's reclaim (end-30m)| (every node of it) |
| scheduled change (Health) | yes    | yes     | now, by its start time        |                    |
| scheduled change, closed  |        |         |                               | (over: nothing)    |
| stopping/stopped/shutting | yes    | yes     | now                           |                    |
| terminated                |        |         |                               | delete node+claim  |
| pending/running           |        |         |                               |                    |
| rebalance, Ignore         |        |         |                               | (Karpenter)        |
| rebalance, Cordon         | yes    |         |                               |                    |
| rebalance, CordonAndDrain | yes    | yes     | now (Node Termination Handler)|                    |
| rebalance, ReplaceThenDrain (default) | yes | yes | once replacements are ready |                 |

Every kind but rebalance and a closed scheduled change is what Karpenter's interruption controller
does (it deletes the NodeClaim: cordon, drain, terminate); docs/interruption.md lists where
Nodewright differs and why.

Deadlines leave `margin` seconds before the interruption, so evicted pods get their grace period
on a node that still exists; a NodePool's terminationGracePeriod bounds drains that have no
interruption time. `deadline` None means: drain until done, PDBs permitting.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.engine.interruption.messages import (
    CAPACITY_BLOCK_EXPIRING,
    CAPACITY_RESERVATION,
    CONTINUATION,
    REBALANCE,
    SCHEDULED_CHANGE,
    SPOT_INTERRUPTION,
    STATE_CHANGE,
    Message,
)

# Seconds between the spot warning and the interruption when the event does not say.
SPOT_NOTICE = 120.0
# Seconds kept free before an interruption, so the last evicted pods can shut down gracefully.
DEFAULT_MARGIN = 20.0
# How long ReplaceThenDrain waits for replacement capacity before it drains anyway.
REPLACEMENT_WAIT = 300.0
STOPPING_STATES = ("stopping", "stopped", "shutting-down")
TERMINATED = "terminated"
# A Health event whose statusCode is closed is over: the maintenance happened or was cancelled.
CLOSED = "closed"

NO_DRAIN = "none"
DRAIN_NOW = "now"
DRAIN_AFTER_REPLACEMENT = "after-replacement"


@dataclass(frozen=True, slots=True)
class Action:
    """What the controller does for one instance of a message.

    `drain` is NO_DRAIN, DRAIN_NOW or DRAIN_AFTER_REPLACEMENT (wait for the replacement until
    `replace_by`, or until a spot warning arrives, then drain); `deadline` (epoch seconds) bounds
    the drain; `replace` asks the provisioner for capacity for the node's pods at once.
    `verified` is False when the message could not be confirmed (`verification.gentle`): the
    drain then never terminates the instance with pods left on it.
    """

    cordon: bool = False
    replace: bool = False
    drain: str = NO_DRAIN
    block_offering: bool = False
    delete: bool = False
    deadline: float | None = None
    replace_by: float | None = None
    reason: str = ""
    verified: bool = True

    @property
    def acts(self) -> bool:
        """True when the action changes anything."""
        return self.cordon or self.replace or self.drain != NO_DRAIN or self.block_offering or self.delete


def action_for(
    message: Message,
    policy: str,
    *,
    now: float,
    grace: float | None = None,
    margin: float = DEFAULT_MARGIN,
) -> Action:
    """The action for `message` on a node whose NodePool has rebalance `policy` and
    terminationGracePeriod `grace` (seconds, None when unset), handled at `now`.
    """
    bounded = None if grace is None else now + grace
    kind = message.kind
    if kind == SPOT_INTERRUPTION:
        at = message.action_time or (message.time or now) + SPOT_NOTICE
        return Action(
            cordon=True,
            replace=True,
            drain=DRAIN_NOW,
            block_offering=True,
            deadline=_earliest(at - margin, bounded),
            reason="spot interruption warning",
        )
    if kind == CAPACITY_RESERVATION:
        at = message.action_time or (message.time or now) + SPOT_NOTICE
        # Karpenter marks the reservation unavailable: EC2 is taking its capacity back.
        return _drain_before(at, margin, bounded, "capacity reservation interruption", block=True)
    if kind == CAPACITY_BLOCK_EXPIRING:
        # Karpenter deletes a block's nodes 40 minutes before its end, 10 before EC2 starts
        # terminating them (`action_time`): the drain must be over by then.
        return _drain_before(message.action_time, margin, bounded, f"capacity block {message.reservation_id} ends")
    if kind == SCHEDULED_CHANGE:
        what = f"scheduled maintenance {message.code}".rstrip()
        if message.status == CLOSED:
            return Action(reason=f"{what} closed: nothing to do")
        return _drain_before(message.action_time, margin, bounded, what)
    if kind == STATE_CHANGE:
        if message.state == TERMINATED:
            return Action(delete=True, reason="instance terminated")
        if message.state in STOPPING_STATES:
            return Action(
                cordon=True, replace=True, drain=DRAIN_NOW, deadline=bounded, reason=f"instance {message.state}"
            )
        return Action(reason=f"state {message.state or '?'} needs nothing")
    if kind == REBALANCE:
        return _rebalance(policy, now, bounded)
    if kind == CONTINUATION and message.continuation is not None:
        cont = message.continuation
        return Action(drain=cont.drain, deadline=cont.deadline, replace_by=cont.replace_by, reason="drain continues")
    return Action(reason=f"{kind} events need no action")


def _rebalance(policy: str, now: float, bounded: float | None) -> Action:
    reason = f"rebalance recommendation, policy {policy}"
    if policy == "Cordon":
        return Action(cordon=True, reason=reason)
    if policy == "CordonAndDrain":
        return Action(cordon=True, replace=True, drain=DRAIN_NOW, deadline=bounded, reason=reason)
    if policy == "ReplaceThenDrain":
        return Action(
            cordon=True,
            replace=True,
            drain=DRAIN_AFTER_REPLACEMENT,
            deadline=bounded,
            replace_by=now + REPLACEMENT_WAIT,
            reason=reason,
        )
    return Action(reason=reason)  # Ignore, as Karpenter does


def _drain_before(
    at: float | None, margin: float, bounded: float | None, reason: str, *, block: bool = False
) -> Action:
    """Cordon, replace and drain now, done `margin` seconds before `at` (when known) and within
    the NodePool's grace (`bounded`); `block` the node's offering too.
    """
    deadline = _earliest(None if at is None else at - margin, bounded)
    return Action(cordon=True, replace=True, drain=DRAIN_NOW, block_offering=block, deadline=deadline, reason=reason)


def _earliest(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)
