"""Parsing interruption events: one SQS message body (an EventBridge event) -> Message. Pure.

Theory of operation: a body that is an SNS notification (a topic between the rule and the
queue, raw message delivery off: `{"Type": "Notification", "Message": "<the event as text>"}`) is
unwrapped first, one level; then the envelope (`id`, `source`, `detail-type`, `version`, `time`)
is read and checked once; then `PARSERS`, keyed by (source, detail-type, version), picks the one small function
that reads the `detail` of that kind. A well-formed event of any other key is a Message of kind
UNKNOWN (the handler acknowledges it and does nothing), so a new kind of event on the bus never
fails a batch. Anything that is not an event at all, or a known kind missing a field its decision
needs, raises MalformedEvent and nothing else, whatever the input: the handler logs and drops it.

Lenient or strict, field by field:
- `time` is written by EventBridge itself as `2026-11-21T10:00:00Z`; absent or null reads as 0.0,
  anything else that is not ISO-8601 is MalformedEvent (the body is then no EventBridge event).
- `version` absent reads as "0" (EventBridge always sends it; hand-written events often omit it).
- Times inside `detail` that only refine a deadline (the Health `startTime`, the capacity
  reservation's `instance-termination-time`) read as None when absent or unreadable: a date format
  we do not know must not stop the cordon and drain, it only loses the deadline.
- `detail.instance-id` is taken as sent when it looks like an instance id (`i-...`), and is
  MalformedEvent otherwise; from `resources` and Health `affectedEntities` only values that are
  instance ids or instance ARNs count (Health also lists volumes and hosts there).
- `detail.state` of a state change is read in any case (Karpenter lower-cases it too).
- A capacity block expiration warning must name its reservation (`detail.capacity-reservation-id`,
  `cr-...`); its `end-date` only refines the deadline (EC2 reclaims 30 minutes before the end).
- AWS Health scheduled changes: every affected entity counts, not just the first, except those
  whose `status` is RESOLVED (that instance is done with); `resources` is read only when there are
  no `affectedEntities`; a PUBLIC event (`eventScopeCode`) names no instance of this account.
  `statusCode` (upcoming, open, closed) is passed on for the decision (closed: nothing to do).
  These refining fields read as "" when absent or not strings: an odd value must not cost the
  drain of a node that is about to be retired.

No I/O, no clock: `continuation_event` takes `now` from its caller.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

from nodewright.engine.interruption.actions import DRAIN_AFTER_REPLACEMENT, DRAIN_NOW, SPOT_NOTICE
from nodewright.engine.interruption.messages import (
    CAPACITY_BLOCK_EXPIRING,
    CAPACITY_RESERVATION,
    CONTINUATION,
    CONTINUATION_DETAIL_TYPE,
    CONTINUATION_SOURCE,
    REBALANCE,
    SCHEDULED_CHANGE,
    SPOT_INTERRUPTION,
    STATE_CHANGE,
    UNKNOWN,
    Continuation,
    MalformedEvent,
    Message,
)
from nodewright.engine.reservations import EC2_RECLAIM_LEAD_SECONDS, EXPIRY_LEAD_SECONDS, reclaim_time

EVENT_VERSION = "0"
# The body SNS delivers to a queue when raw message delivery is off: the event is `Message`, as text.
SNS_NOTIFICATION = "Notification"
# Health entity statuses that mean this entity needs nothing more (the API also lists IMPAIRED,
# UNIMPAIRED, UNKNOWN and PENDING: all of them still drain, as Karpenter drains every entity).
_SETTLED_ENTITY_STATUSES = frozenset({"RESOLVED"})
PUBLIC_SCOPE = "PUBLIC"
# Health events name instances bare ("i-0abc..."), EC2 events as ARNs; both forms are accepted
# wherever a list of resources is read. Any partition (aws, aws-cn, aws-us-gov).
_INSTANCE_ID = re.compile(r"i-[0-9A-Za-z]+")
_INSTANCE_ARN = re.compile(r"arn:[^:]+:ec2:[^/]*:instance/(i-[0-9A-Za-z]+)")
# What `detail.instance-id` must look like (EC2 ids are hex; tests and simulations name theirs).
_NAMED_INSTANCE = re.compile(r"i-[0-9A-Za-z][0-9A-Za-z-]{0,62}")
# What AWS Health sends: RFC 1123 ("Sat, 05 Jun 2021 14:00 GMT"), seconds optional.
_RFC1123 = re.compile(
    r"(?:[A-Za-z]{3},\s*)?(\d{1,2})\s+([A-Za-z]{3})\s+(\d{4})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(GMT|UTC|UT|Z|[+-]\d{4})"
)
_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTHS = MappingProxyType({name: number for number, name in enumerate(_MONTH_NAMES, 1)})
_DRAINS = (DRAIN_NOW, DRAIN_AFTER_REPLACEMENT)
_RESERVATION_ID = re.compile(r"cr-[0-9a-z]+")


@dataclass(frozen=True, slots=True)
class Event:
    """The checked envelope of one event; `detail` and `resources` are still raw JSON values."""

    id: str
    source: str
    detail_type: str
    version: str
    time: float
    resources: object
    detail: object

    def message(
        self,
        kind: str,
        *,
        instance_ids: tuple[str, ...] = (),
        state: str = "",
        action_time: float | None = None,
        status: str = "",
        code: str = "",
        continuation: Continuation | None = None,
        reservation_id: str = "",
    ) -> Message:
        """A Message of `kind` carrying this envelope's id, source, detail-type and time."""
        return Message(
            id=self.id,
            kind=kind,
            source=self.source,
            detail_type=self.detail_type,
            time=self.time,
            instance_ids=instance_ids,
            state=state,
            action_time=action_time,
            status=status,
            code=code,
            continuation=continuation,
            reservation_id=reservation_id,
        )


@dataclass(frozen=True, slots=True)
class Received:
    """One SQS message body, parsed once: the event it carries (SNS unwrapped), as decoded, which
    the deduplicator keys on, and its `Message`, which the controller acts on.
    """

    event: Mapping[str, Any]
    message: Message


def receive(body: str | bytes | Mapping[str, Any]) -> Received:
    """The event and the Message in one SQS message body: JSON text (str or bytes) or an already
    decoded object. Raises MalformedEvent (never anything else) as `parse` does.
    """
    raw = unwrap_sns(_decode(body))
    event = _envelope(raw)
    reader = PARSERS.get((event.source, event.detail_type, event.version), _unknown)
    return Received(raw, reader(event))


def parse(body: str | bytes | Mapping[str, Any]) -> Message:
    """The Message in one SQS message body: JSON text (str or bytes) or an already decoded object.

    Returns a Message of kind UNKNOWN for a well-formed event of a kind we do not handle; raises
    MalformedEvent (never anything else) when the body is not an event or a known kind lacks a field.
    """
    return receive(body).message


def unwrap_sns(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """The event inside an SNS notification body (decoded), or `value` itself when it is not one.

    Raises MalformedEvent when it is a notification whose `Message` is not an event object.
    Only one level: SNS never delivers to SNS, so a notification inside one is malformed.
    """
    if value.get("Type") != SNS_NOTIFICATION or "Message" not in value or "detail-type" in value:
        return value
    inner = value["Message"]
    if not isinstance(inner, str):
        raise MalformedEvent("SNS notification 'Message' is not a string")
    try:
        event = json.loads(inner, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:
        raise MalformedEvent(f"SNS notification 'Message' is not JSON: {_short(error)}") from None
    if not isinstance(event, dict):
        raise MalformedEvent(f"SNS notification 'Message' is JSON {type(event).__name__}, not an object")
    return event


def continuation_event(continuation: Continuation, *, event_id: str, now: float) -> dict[str, Any]:
    """The EventBridge-shaped event that carries `continuation` to the next invocation.

    `parse` turns it back into a CONTINUATION Message whose `continuation` equals this one and whose
    id is `event_id` (the deduplication key: give each continuation its own). `now` (epoch seconds)
    becomes the event time, to the second as EventBridge writes it.
    """
    return {
        "version": EVENT_VERSION,
        "id": event_id,
        "detail-type": CONTINUATION_DETAIL_TYPE,
        "source": CONTINUATION_SOURCE,
        "time": datetime.fromtimestamp(now, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "resources": [],
        "detail": {
            "node": continuation.node,
            "instance-id": continuation.instance_id,
            "drain": continuation.drain,
            "deadline": continuation.deadline,
            "started": continuation.started,
            "origin": continuation.origin,
            "replace-by": continuation.replace_by,
            "attempt": continuation.attempt,
            "verified": continuation.verified,
        },
    }


# --- one reader per kind ------------------------------------------------------------------------


def _spot_interruption(event: Event) -> Message:
    detail = _detail(event)
    instance_id = _instance_id(detail)
    action = _optional_string(detail, "instance-action")  # terminate, stop or hibernate: the node goes all the same
    # The event does not carry the interruption time (only IMDS does); AWS documents two minutes.
    at = event.time + SPOT_NOTICE if event.time else None
    return event.message(SPOT_INTERRUPTION, instance_ids=(instance_id,), action_time=at, code=action)


def _rebalance(event: Event) -> Message:
    return event.message(REBALANCE, instance_ids=(_instance_id(_detail(event)),))


def _state_change(event: Event) -> Message:
    detail = _detail(event)
    instance_id = _instance_id(detail)
    state = _required_string(detail, "state").lower()
    return event.message(STATE_CHANGE, instance_ids=(instance_id,), state=state)


def _capacity_reservation(event: Event) -> Message:
    detail = _detail(event)
    named = _instance_id(detail) if detail.get("instance-id") not in (None, "") else ""
    instance_ids = _instance_ids([named] if named else [], _resources(event))
    if not instance_ids:
        raise MalformedEvent("capacity reservation interruption names no instance (detail.instance-id, resources)")
    at = _lenient_time(detail.get("instance-termination-time"))
    return event.message(CAPACITY_RESERVATION, instance_ids=instance_ids, action_time=at)


def _capacity_block_expiring(event: Event) -> Message:
    detail = _detail(event)
    reservation = _required_string(detail, "capacity-reservation-id")
    if not _RESERVATION_ID.fullmatch(reservation):
        raise MalformedEvent(f"detail.capacity-reservation-id {reservation!r} is not a capacity reservation id")
    end = _lenient_time(detail.get("end-date"))
    # EC2 starts terminating the block's instances 30 minutes before its end; the warning comes 40
    # minutes before it, so without an end date the instances go 10 minutes after the event.
    if end is not None:
        at: float | None = reclaim_time(end)
    else:
        at = event.time + EXPIRY_LEAD_SECONDS - EC2_RECLAIM_LEAD_SECONDS if event.time else None
    return event.message(CAPACITY_BLOCK_EXPIRING, action_time=at, reservation_id=reservation)


def _health(event: Event) -> Message:
    detail = _detail(event)
    # The rule already filters on these; a queue can still receive others (a test, a widened rule).
    if detail.get("service") != "EC2" or detail.get("eventTypeCategory") != "scheduledChange":
        return _unknown(event)
    entities = detail.get("affectedEntities")
    if entities is None:
        entities = []
    if not isinstance(entities, list):
        raise MalformedEvent("detail.affectedEntities is not a list")
    values = [
        entity.get("entityValue")
        for entity in entities
        if isinstance(entity, Mapping) and _lenient_string(entity, "status").upper() not in _SETTLED_ENTITY_STATUSES
    ]
    resources = _resources(event)  # checked whatever the entities say: a broken envelope is malformed
    if _lenient_string(detail, "eventScopeCode").upper() == PUBLIC_SCOPE:
        instance_ids: tuple[str, ...] = ()
    else:
        instance_ids = _instance_ids(values) if entities else _instance_ids(resources)
    start = detail.get("startTime")
    if isinstance(start, list):  # one value in every example; take the first if ever a list
        start = start[0] if start else None
    return event.message(
        SCHEDULED_CHANGE,
        instance_ids=instance_ids,
        action_time=_lenient_time(start),
        status=_lenient_string(detail, "statusCode").lower(),
        code=_lenient_string(detail, "eventTypeCode"),
    )


def _continuation(event: Event) -> Message:
    detail = _detail(event)
    drain = _required_string(detail, "drain")
    if drain not in _DRAINS:
        raise MalformedEvent(f"detail.drain is {drain!r}, not one of {', '.join(_DRAINS)}")
    replace_by = detail.get("replace-by")
    attempt = detail.get("attempt", 1)
    if isinstance(attempt, bool) or not isinstance(attempt, int):
        raise MalformedEvent("detail.attempt is not an integer")
    verified = detail.get("verified", True)
    if not isinstance(verified, bool):
        raise MalformedEvent("detail.verified is not a boolean")
    continuation = Continuation(
        node=_required_string(detail, "node"),
        instance_id=_required_string(detail, "instance-id"),
        drain=drain,
        deadline=_required_number(detail, "deadline"),
        started=_required_number(detail, "started"),
        origin=_required_string(detail, "origin"),
        replace_by=None if replace_by is None else _required_number(detail, "replace-by"),
        attempt=attempt,
        verified=verified,
    )
    # instance_ids too, so the handler finds the node the same way for every kind.
    return event.message(CONTINUATION, instance_ids=(continuation.instance_id,), continuation=continuation)


def _unknown(event: Event) -> Message:
    return event.message(UNKNOWN)


PARSERS: Mapping[tuple[str, str, str], Callable[[Event], Message]] = MappingProxyType(
    {
        ("aws.ec2", "EC2 Spot Instance Interruption Warning", EVENT_VERSION): _spot_interruption,
        ("aws.ec2", "EC2 Instance Rebalance Recommendation", EVENT_VERSION): _rebalance,
        ("aws.ec2", "EC2 Instance State-change Notification", EVENT_VERSION): _state_change,
        ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", EVENT_VERSION): _capacity_reservation,
        # The EC2 guide prints this detail-type for interruptible reservations in some of its versions.
        ("aws.ec2", "EC2 Interruptible Capacity Reservation Instance Interruption Warning", EVENT_VERSION): (
            _capacity_reservation
        ),
        ("aws.ec2", "Capacity Block Reservation Expiration Warning", EVENT_VERSION): _capacity_block_expiring,
        ("aws.ec2", "Capacity Block Expiration Warning", EVENT_VERSION): _capacity_block_expiring,
        ("aws.health", "AWS Health Event", EVENT_VERSION): _health,
        (CONTINUATION_SOURCE, CONTINUATION_DETAIL_TYPE, EVENT_VERSION): _continuation,
    }
)


# --- envelope and fields ------------------------------------------------------------------------


def _decode(body: str | bytes | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(body, Mapping):
        return body
    if not isinstance(body, str | bytes | bytearray):
        raise MalformedEvent(f"body is a {type(body).__name__}, not JSON text")
    try:
        # NaN and Infinity are not JSON; refused so no non-finite number reaches a deadline.
        value = json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise MalformedEvent(f"body is not JSON: {_short(error)}") from None
    if not isinstance(value, dict):
        raise MalformedEvent(f"body is JSON {type(value).__name__}, not an object")
    return value


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def _envelope(raw: Mapping[str, Any]) -> Event:
    identity = {key: _required_string(raw, key, where="event") for key in ("id", "source", "detail-type")}
    version = raw.get("version", EVENT_VERSION)
    if not isinstance(version, str):
        raise MalformedEvent("event 'version' is not a string")
    return Event(
        id=identity["id"],
        source=identity["source"],
        detail_type=identity["detail-type"],
        version=version,
        time=_event_time(raw.get("time")),
        resources=raw.get("resources", []),
        detail=raw.get("detail"),
    )


def _event_time(value: object) -> float:
    if value is None:
        return 0.0
    if not isinstance(value, str):
        raise MalformedEvent("event 'time' is not a string")
    at = _iso_time(value)
    if at is None:
        raise MalformedEvent(f"event 'time' is not ISO-8601: {value[:40]!r}")
    return at


def _detail(event: Event) -> Mapping[str, Any]:
    if event.detail is None:
        raise MalformedEvent(f"event has no 'detail' (a {event.detail_type} needs one)")
    if not isinstance(event.detail, Mapping):
        raise MalformedEvent("event 'detail' is not an object")
    return event.detail


def _resources(event: Event) -> list[object]:
    resources = event.resources
    if resources is None:
        return []
    if isinstance(resources, str):  # the capacity reservation example in the EC2 docs shows one ARN bare
        return [resources]
    if not isinstance(resources, list):
        raise MalformedEvent("event 'resources' is not a list")
    return resources


def _instance_ids(*groups: list[object]) -> tuple[str, ...]:
    found: set[str] = set()
    for group in groups:
        for value in group:
            if not isinstance(value, str):
                continue
            arn = _INSTANCE_ARN.fullmatch(value)
            if arn:
                found.add(arn.group(1))
            elif _INSTANCE_ID.fullmatch(value):
                found.add(value)
    return tuple(sorted(found))


def _required_string(fields: Mapping[str, Any], key: str, *, where: str = "detail") -> str:
    value = fields.get(key)
    if value is None or value == "":
        raise MalformedEvent(f"event has no {key!r}" if where == "event" else f"{where}.{key} is missing")
    if not isinstance(value, str):
        raise MalformedEvent(f"event {key!r} is not a string" if where == "event" else f"{where}.{key} is not a string")
    return value


def _instance_id(detail: Mapping[str, Any]) -> str:
    value = _required_string(detail, "instance-id")
    if not _NAMED_INSTANCE.fullmatch(value):
        raise MalformedEvent(f"detail.instance-id {value[:40]!r} is not an instance id")
    return value


def _optional_string(fields: Mapping[str, Any], key: str) -> str:
    value = fields.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedEvent(f"detail.{key} is not a string")
    return value


def _lenient_string(fields: Mapping[str, Any], key: str) -> str:
    """The string at `key`, or "" when absent or not a string."""
    value = fields.get(key)
    return value if isinstance(value, str) else ""


def _required_number(fields: Mapping[str, Any], key: str) -> float:
    value = fields.get(key)
    if value is None:
        raise MalformedEvent(f"detail.{key} is missing")
    # bool is an int to Python, never a time to us.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedEvent(f"detail.{key} is not a number")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        raise MalformedEvent(f"detail.{key} is out of range") from None
    if not math.isfinite(number):
        raise MalformedEvent(f"detail.{key} is not finite")
    return number


# --- times --------------------------------------------------------------------------------------


def _lenient_time(value: object) -> float | None:
    """Epoch seconds of an RFC 1123 or ISO-8601 time; None when absent or unreadable."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return _rfc1123_time(text) if _RFC1123.fullmatch(text) else _iso_time(text)


def _iso_time(text: str) -> float | None:
    """Epoch seconds of an ISO-8601 time; naive times are UTC. None when unreadable."""
    try:
        at = datetime.fromisoformat(text)
        if at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        return at.timestamp()
    except (ValueError, OverflowError):
        return None


def _rfc1123_time(text: str) -> float | None:
    """Epoch seconds of "Sat, 05 Jun 2021 14:00 GMT" (seconds optional); None when impossible."""
    match = _RFC1123.fullmatch(text)
    if match is None:
        return None
    day, month_name, year, hour, minute, second, zone = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        return None
    offset = timedelta()
    if zone[0] in "+-":
        offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5])) * (-1 if zone[0] == "-" else 1)
    try:
        tz = timezone(offset)
        at = datetime(int(year), month, int(day), int(hour), int(minute), int(second or 0), tzinfo=tz)
        return at.timestamp()
    except (ValueError, OverflowError):
        return None


def _short(error: BaseException) -> str:
    text = str(error)
    return text if len(text) <= 120 else text[:117] + "..."
