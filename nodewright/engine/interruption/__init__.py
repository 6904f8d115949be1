"""Interruption decisions, pure: parse an EventBridge event (as the SQS queue delivers it) into a
Message, then decide the Action for it under a NodePool's rebalance policy.

`parse` reads the event inside an SNS notification as well (`unwrap_sns`); it never raises for an
event of an unknown kind (it returns a Message of kind UNKNOWN, which maps to no action); it raises
MalformedEvent for a body that is not an event at all.
"""

from nodewright.engine.interruption.actions import Action, action_for
from nodewright.engine.interruption.messages import (
    CAPACITY_BLOCK_EXPIRING,
    CAPACITY_RESERVATION,
    CONTINUATION,
    KINDS,
    REBALANCE,
    SCHEDULED_CHANGE,
    SPOT_INTERRUPTION,
    STATE_CHANGE,
    UNKNOWN,
    Continuation,
    MalformedEvent,
    Message,
)
from nodewright.engine.interruption.parse import Received, continuation_event, parse, receive, unwrap_sns

__all__ = [
    "CAPACITY_BLOCK_EXPIRING",
    "CAPACITY_RESERVATION",
    "CONTINUATION",
    "KINDS",
    "REBALANCE",
    "SCHEDULED_CHANGE",
    "SPOT_INTERRUPTION",
    "STATE_CHANGE",
    "UNKNOWN",
    "Action",
    "Continuation",
    "MalformedEvent",
    "Message",
    "Received",
    "action_for",
    "continuation_event",
    "parse",
    "receive",
    "unwrap_sns",
]
