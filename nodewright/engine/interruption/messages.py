"""What an interruption event says, once parsed: the Message the decisions work from. Pure data.

Kinds (one per EventBridge rule of the stack, plus our own drain continuations):
SPOT_INTERRUPTION ("EC2 Spot Instance Interruption Warning"), REBALANCE ("EC2 Instance Rebalance
Recommendation"), STATE_CHANGE ("EC2 Instance State-change Notification"), CAPACITY_RESERVATION
("EC2 Capacity Reservation Instance Interruption Warning"), CAPACITY_BLOCK_EXPIRING ("Capacity
Block Reservation Expiration Warning": it names a reservation, not instances; the controller finds
the nodes labelled with it), SCHEDULED_CHANGE ("AWS Health Event", EC2 scheduledChange),
CONTINUATION (a delayed message the interruption function sends itself to carry a drain that did
not fit in one invocation) and UNKNOWN (anything else: no action).
"""

from __future__ import annotations

from dataclasses import dataclass

SPOT_INTERRUPTION = "SpotInterruption"
REBALANCE = "RebalanceRecommendation"
STATE_CHANGE = "StateChange"
CAPACITY_RESERVATION = "CapacityReservationInterruption"
CAPACITY_BLOCK_EXPIRING = "CapacityBlockExpiring"
SCHEDULED_CHANGE = "ScheduledChange"
CONTINUATION = "DrainContinuation"
UNKNOWN = "Unknown"
KINDS = (
    SPOT_INTERRUPTION,
    REBALANCE,
    STATE_CHANGE,
    CAPACITY_RESERVATION,
    CAPACITY_BLOCK_EXPIRING,
    SCHEDULED_CHANGE,
    CONTINUATION,
    UNKNOWN,
)

# EventBridge source and detail-type of the continuation events (never published on a bus: they
# go straight to the interruption queue with a delay).
CONTINUATION_SOURCE = "nodewright"
CONTINUATION_DETAIL_TYPE = "Nodewright Drain Continuation"


class MalformedEvent(ValueError):
    """The body is not an EventBridge event (not JSON, not an object, no id/source/detail-type...).
    The message says what is wrong; the handler logs it and acknowledges the record.
    """


@dataclass(frozen=True, slots=True)
class Continuation:
    """A drain still in progress, carried from one invocation to the next.

    `node` and `instance_id` name the node being drained; `drain` is "now" or "after-replacement"
    (wait until the replacement capacity is ready, up to `replace_by`); `deadline` is when the
    drain must be over (epoch seconds; 0.0 when it has none); `started` is when handling of the original event began;
    `origin` is the kind of the event that started it; `attempt` counts continuations;
    `verified` is False for a drain started by a message EC2 did not confirm (it never ends in a
    termination with pods left: `verification`).
    """

    node: str
    instance_id: str
    drain: str
    deadline: float
    started: float
    origin: str
    replace_by: float | None = None
    attempt: int = 1
    verified: bool = True


@dataclass(frozen=True, slots=True)
class Message:
    """One parsed event.

    `id` is the EventBridge event id (the deduplication key); `time` the event's time in epoch
    seconds (0.0 when absent); `instance_ids` the affected instances (from `detail.instance-id`,
    `resources` or the Health event's `affectedEntities`); `state` the new state of a STATE_CHANGE,
    lower case; `action_time` when the interruption will happen, if the event says (the spot
    warning's `instance-action` time, the Health event's `startTime`); `status` the Health event's
    `statusCode` (`upcoming`, `open`, `closed`), lower case, "" when absent; `code` what kind of
    change it is (the Health `eventTypeCode`, e.g. AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED, or the
    spot warning's `instance-action`), for the decision log; `continuation` is set for CONTINUATION;
    `reservation_id` is the capacity reservation a CAPACITY_BLOCK_EXPIRING names.
    """

    id: str
    kind: str
    source: str
    detail_type: str
    time: float = 0.0
    instance_ids: tuple[str, ...] = ()
    state: str = ""
    action_time: float | None = None
    status: str = ""
    code: str = ""
    continuation: Continuation | None = None
    reservation_id: str = ""
