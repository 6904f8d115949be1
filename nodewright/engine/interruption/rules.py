"""The five EventBridge rules that feed the interruption queue, as plain event patterns. Pure data.

One source of truth for two users: the CDK stack (`infra/constructs/interruption.py`) turns each
pattern into an `events.EventPattern`, and `nodewright simulate` creates the same rules in moto's
EventBridge, so the events the simulator puts on the bus are routed exactly as in AWS.

Keys are the rule construct ids of the stack; field names are EventBridge's own (`detail-type`,
not `detailType`). The set is Karpenter's (reference/karpenter-facts.md): spot interruption
warnings, rebalance recommendations, instance state changes, capacity reservation interruption
warnings and AWS Health scheduled changes for EC2.
"""

from __future__ import annotations

from typing import Any

SOURCE_EC2 = "aws.ec2"
SOURCE_HEALTH = "aws.health"
SPOT_INTERRUPTION_WARNING = "EC2 Spot Instance Interruption Warning"
REBALANCE_RECOMMENDATION = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE_NOTIFICATION = "EC2 Instance State-change Notification"
CAPACITY_RESERVATION_WARNING = "EC2 Capacity Reservation Instance Interruption Warning"
HEALTH_EVENT = "AWS Health Event"
# pending/running follow every launch; only these states take a node away.
NODE_LOSING_STATES = ("stopping", "stopped", "shutting-down", "terminated")

INTERRUPTION_RULES: dict[str, dict[str, Any]] = {
    "SpotInterruptionRule": {"source": [SOURCE_EC2], "detail-type": [SPOT_INTERRUPTION_WARNING]},
    "RebalanceRule": {"source": [SOURCE_EC2], "detail-type": [REBALANCE_RECOMMENDATION]},
    "InstanceStateChangeRule": {
        "source": [SOURCE_EC2],
        "detail-type": [STATE_CHANGE_NOTIFICATION],
        "detail": {"state": list(NODE_LOSING_STATES)},
    },
    "CapacityReservationInterruptionRule": {"source": [SOURCE_EC2], "detail-type": [CAPACITY_RESERVATION_WARNING]},
    "ScheduledChangeRule": {
        "source": [SOURCE_HEALTH],
        "detail-type": [HEALTH_EVENT],
        "detail": {"service": ["EC2"], "eventTypeCategory": ["scheduledChange"]},
    },
}
