"""The six EventBridge rules that feed the interruption queues, as plain event patterns. Pure data.

One source of truth for two users: the CDK stack (`infra/constructs/interruption.py`) turns each
pattern into an `events.EventPattern`, and `nodewright simulate` creates the same rules in moto's
EventBridge, so the events the simulator puts on the bus are routed exactly as in AWS.

Keys are the rule construct ids of the stack; field names are EventBridge's own (`detail-type`,
not `detailType`). The set is Karpenter's (reference/karpenter-facts.md): spot interruption
warnings, rebalance recommendations, instance state changes, capacity reservation interruption
warnings (both detail-types EC2 documents for them) and AWS Health scheduled changes for EC2;
plus EC2's capacity block expiration warning, sent 40 minutes before a block ends (Karpenter
polls for the end instead, with the same 40 minutes: `nodewright.engine.reservations`).

Two queues (`routes_to_priority_queue`). EventBridge refuses PutEvents whose source begins with
`aws.` (NotAuthorizedForSourceException; the EventBridge User Guide: customer events may have any
source "as long as it doesn't begin with aws."), so a rule matching only `source: aws.ec2` can
only ever carry events EC2 itself sent. Those rules feed the priority queue, which nothing else
may send to, so no flood of forged messages stands in front of a real spot warning. AWS Health's
scheduled changes (announced days ahead) and the function's own drain continuations use the main
queue.
"""

from __future__ import annotations

from typing import Any

SOURCE_EC2 = "aws.ec2"
SOURCE_HEALTH = "aws.health"
SPOT_INTERRUPTION_WARNING = "EC2 Spot Instance Interruption Warning"
REBALANCE_RECOMMENDATION = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE_NOTIFICATION = "EC2 Instance State-change Notification"
CAPACITY_RESERVATION_WARNING = "EC2 Capacity Reservation Instance Interruption Warning"
# The EC2 guide's page on interruptible Capacity Reservations prints this detail-type in some of its
# versions and the one above in others; Karpenter's rule lists only the one above. Both are routed,
# so a reclaimed interruptible reservation drains its nodes whichever name EC2 sends.
INTERRUPTIBLE_CAPACITY_RESERVATION_WARNING = "EC2 Interruptible Capacity Reservation Instance Interruption Warning"
# The EC2 guide's "Monitor Capacity Blocks using EventBridge" prints both names for the warning
# sent 40 minutes before a block ends; both are routed.
CAPACITY_BLOCK_EXPIRATION_WARNING = "Capacity Block Reservation Expiration Warning"
CAPACITY_BLOCK_EXPIRATION_WARNING_SHORT = "Capacity Block Expiration Warning"
HEALTH_EVENT = "AWS Health Event"
# pending/running follow every launch; only these states take a node away.
NODE_LOSING_STATES = ("stopping", "stopped", "shutting-down", "terminated")


# The sources whose events only AWS can put on the bus and that are urgent: their rules feed the
# priority queue.
PRIORITY_SOURCES = frozenset({SOURCE_EC2})


def routes_to_priority_queue(pattern: dict[str, Any]) -> bool:
    """True when the rule with this event pattern feeds the priority queue: every source it
    matches is one of `PRIORITY_SOURCES` (a rule that could match another source feeds the main
    queue).
    """
    sources = pattern.get("source") or ()
    return bool(sources) and set(sources) <= PRIORITY_SOURCES


def interruption_rules() -> dict[str, dict[str, Any]]:
    """Rule id -> EventBridge event pattern (JSON data), a fresh copy per call: the CDK stack and
    the simulator's EventBridge build their rules from it, and a module-level dict would be state
    any importer could change.
    """
    return {
        "SpotInterruptionRule": {"source": [SOURCE_EC2], "detail-type": [SPOT_INTERRUPTION_WARNING]},
        "RebalanceRule": {"source": [SOURCE_EC2], "detail-type": [REBALANCE_RECOMMENDATION]},
        "InstanceStateChangeRule": {
            "source": [SOURCE_EC2],
            "detail-type": [STATE_CHANGE_NOTIFICATION],
            "detail": {"state": list(NODE_LOSING_STATES)},
        },
        "CapacityReservationInterruptionRule": {
            "source": [SOURCE_EC2],
            "detail-type": [CAPACITY_RESERVATION_WARNING, INTERRUPTIBLE_CAPACITY_RESERVATION_WARNING],
        },
        "CapacityBlockExpirationRule": {
            "source": [SOURCE_EC2],
            "detail-type": [CAPACITY_BLOCK_EXPIRATION_WARNING, CAPACITY_BLOCK_EXPIRATION_WARNING_SHORT],
        },
        "ScheduledChangeRule": {
            "source": [SOURCE_HEALTH],
            "detail-type": [HEALTH_EVENT],
            "detail": {"service": ["EC2"], "eventTypeCategory": ["scheduledChange"]},
        },
    }
