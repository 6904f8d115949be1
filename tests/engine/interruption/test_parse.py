"""`parse`: EventBridge events (as the interruption queue delivers them) -> Message.

The fixtures in tests/events are AWS's documented event shapes; the tables below say what each one
means to us. Malformed bodies must raise MalformedEvent naming the fault, and nothing - not
arbitrary JSON, not arbitrary text - may raise anything else or make an unknown event act.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.engine.interruption import (
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
    action_for,
    continuation_event,
    parse,
)
from nodewright.engine.interruption.actions import DRAIN_AFTER_REPLACEMENT, DRAIN_NOW
from nodewright.engine.interruption.messages import CONTINUATION_DETAIL_TYPE, CONTINUATION_SOURCE
from nodewright.engine.interruption.parse import PARSERS
from tests.events import QUEUE_ARN, load, sqs_event

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
DELETE = object()


def at(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def altered(name: str, **paths: Any) -> dict[str, Any]:
    """Fixture `name` with dotted paths ("detail.instance-id") set to new values, or removed by DELETE."""
    event = load(name)
    for path, value in paths.items():
        *parents, key = path.replace("__", "-").split(".")
        target = event
        for parent in parents:
            target = target[parent]
        if value is DELETE:
            target.pop(key, None)
        else:
            target[key] = value
    return event


# --- every fixture ------------------------------------------------------------------------------

FIXTURES = [
    pytest.param(
        "spot_interruption_warning", SPOT_INTERRUPTION, ("i-0a1b2c3d4e5f60718",), "",
        at("2026-11-21T10:02:00+00:00"),  # event time + the documented two minutes
        id="spot-warning-interrupts-two-minutes-after-its-time",
    ),
    pytest.param(
        "rebalance_recommendation", REBALANCE, ("i-0f9e8d7c6b5a40312",), "", None,
        id="rebalance-recommendation-has-no-interruption-time",
    ),
    pytest.param(
        "state_change_stopping", STATE_CHANGE, ("i-04c5d6e7f8a9b0c1d",), "stopping", None,
        id="stopping-state-change",
    ),
    pytest.param(
        "state_change_terminated", STATE_CHANGE, ("i-0a1b2c3d4e5f60718",), "terminated", None,
        id="terminated-state-change",
    ),
    pytest.param(
        "state_change_running", STATE_CHANGE, ("i-0123456789abcdef0",), "running", None,
        id="running-state-change-still-parses",
    ),
    pytest.param(
        "capacity_reservation_interruption", CAPACITY_RESERVATION, ("i-06f1e2d3c4b5a6978",), "",
        at("2026-11-21T11:32:00+00:00"),  # detail.instance-termination-time
        id="capacity-reservation-warning-carries-its-termination-time",
    ),
    pytest.param(
        "health_scheduled_change", SCHEDULED_CHANGE, ("i-0b1c2d3e4f5a69788", "i-0d3e4f5a6b7c8d9e0"), "",
        at("2026-12-05T14:00:00+00:00"),  # "Sat, 05 Dec 2026 14:00 GMT"
        id="health-scheduled-change-names-sorted-instances-and-start-time",
    ),
    pytest.param(
        "capacity_reservation_interruption_interruptible", CAPACITY_RESERVATION, ("i-0c3b2a1f0e9d8c7b6",), "",
        at("2026-11-21T11:47:00+00:00"),
        id="interruptible-capacity-reservation-warning-is-the-same-kind",
    ),
    pytest.param(
        "health_other_service", UNKNOWN, (), "", None,
        id="health-event-for-rds-is-unknown",
    ),
    pytest.param(
        "capacity_block_expiration_warning", CAPACITY_BLOCK_EXPIRING, (), "",
        at("2026-11-21T11:30:00+00:00"),  # EC2 reclaims 30 minutes before detail.end-date
        id="capacity-block-warning-names-the-block-and-ec2s-reclaim-time",
    ),
    pytest.param(
        "capacity_block_expiration_warning_short", CAPACITY_BLOCK_EXPIRING, (), "",
        at("2026-11-21T11:30:00+00:00"),
        id="capacity-block-warning-by-its-other-name",
    ),
]  # fmt: skip


# What the decision log shows beside the kind: the spot warning's instance-action, the Health
# event's statusCode and eventTypeCode.
STATUS_AND_CODE = {
    "spot_interruption_warning": {"code": "terminate"},
    "health_scheduled_change": {"status": "upcoming", "code": "AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED"},
    "capacity_block_expiration_warning": {"reservation_id": "cr-0a1b2c3d4e5f60718"},
    "capacity_block_expiration_warning_short": {"reservation_id": "cr-0a1b2c3d4e5f60718"},
}


@pytest.mark.parametrize(("name", "kind", "instance_ids", "state", "action_time"), FIXTURES)
def test_each_documented_event_parses_to_its_kind(
    name: str, kind: str, instance_ids: tuple[str, ...], state: str, action_time: float | None
) -> None:
    event = load(name)

    message = parse(json.dumps(event))

    assert message == Message(
        id=event["id"],
        kind=kind,
        source=event["source"],
        detail_type=event["detail-type"],
        time=at(event["time"]),
        instance_ids=instance_ids,
        state=state,
        action_time=action_time,
        **STATUS_AND_CODE.get(name, {}),
    )


@pytest.mark.parametrize("name", [param.values[0] for param in FIXTURES])
def test_text_bytes_and_decoded_bodies_parse_alike(name: str) -> None:
    event = load(name)
    text = json.dumps(event)

    assert parse(text) == parse(text.encode()) == parse(event)


def test_every_record_of_the_sqs_envelope_carries_a_parseable_event() -> None:
    envelope = load("sqs_envelope")

    kinds = [parse(record["body"]).kind for record in envelope["Records"]]

    assert kinds == [SPOT_INTERRUPTION, REBALANCE]
    for record in envelope["Records"]:
        assert record["md5OfBody"] == hashlib.md5(record["body"].encode()).hexdigest()
        assert record["eventSource"] == "aws:sqs"


def test_sqs_event_wraps_dicts_and_raw_strings_like_the_real_envelope() -> None:
    real = load("sqs_envelope")["Records"][0]

    records = sqs_event(load("spot_interruption_warning"), "not json", queue_arn=QUEUE_ARN)["Records"]

    assert [set(record) for record in records] == [set(real), set(real)]
    assert [set(record["attributes"]) for record in records] == [set(real["attributes"])] * 2
    assert records[0]["body"] == real["body"]
    assert records[1]["body"] == "not json"
    assert records[0]["messageId"] != records[1]["messageId"]
    assert all(record["md5OfBody"] == hashlib.md5(record["body"].encode()).hexdigest() for record in records)
    assert {record["eventSourceARN"] for record in records} == {QUEUE_ARN}


def test_sqs_event_takes_the_region_from_the_queue_arn() -> None:
    arn = "arn:aws:sqs:eu-west-1:123456789012:other"

    (record,) = sqs_event(load("rebalance_recommendation"), queue_arn=arn)["Records"]

    assert (record["awsRegion"], record["eventSourceARN"]) == ("eu-west-1", arn)


def test_message_ids_stay_unique_across_calls() -> None:
    first = sqs_event(load("rebalance_recommendation"))["Records"][0]["messageId"]
    second = sqs_event(load("rebalance_recommendation"))["Records"][0]["messageId"]

    assert first != second


# --- details of the kinds -----------------------------------------------------------------------


def test_spot_warning_without_a_time_leaves_the_interruption_time_to_the_decision() -> None:
    message = parse(altered("spot_interruption_warning", time=DELETE))

    assert (message.time, message.action_time) == (0.0, None)


@pytest.mark.parametrize("action", ["terminate", "stop", "hibernate"])
def test_spot_warning_means_interruption_whatever_the_instance_action(action: str) -> None:
    message = parse(altered("spot_interruption_warning", **{"detail.instance__action": action}))

    assert message.kind == SPOT_INTERRUPTION


def test_capacity_reservation_instances_come_from_detail_and_resource_arns() -> None:
    event = altered(
        "capacity_reservation_interruption",
        resources=[
            "arn:aws:ec2:us-east-1:123456789012:instance/i-0ffff000011112222",
            "arn:aws:ec2:us-east-1:123456789012:instance/i-06f1e2d3c4b5a6978",
            "arn:aws:ec2:us-east-1:123456789012:capacity-reservation/cr-0123456789abcdef0",
        ],
    )

    assert parse(event).instance_ids == ("i-06f1e2d3c4b5a6978", "i-0ffff000011112222")


def test_capacity_reservation_without_detail_instance_uses_the_resources_alone() -> None:
    # The EC2 docs print `resources` as one bare ARN string rather than a list.
    event = altered(
        "capacity_reservation_interruption",
        resources="arn:aws:ec2:us-east-1:123456789012:instance/i-0aaaabbbbccccdddd",
        **{"detail.instance__id": DELETE, "detail.instance__termination__time": DELETE},
    )

    message = parse(event)

    assert (message.instance_ids, message.action_time) == (("i-0aaaabbbbccccdddd",), None)


def test_health_event_keeps_only_instances_deduplicated_and_sorted() -> None:
    event = altered(
        "health_scheduled_change",
        resources=["arn:aws:ec2:us-east-1:123456789012:instance/i-0d3e4f5a6b7c8d9e0", "vol-0123456789abcdef0"],
        **{
            "detail.affectedEntities": [
                {"entityValue": "i-0d3e4f5a6b7c8d9e0"},
                {"entityValue": "h-0123456789abcdef0"},
                {"entityValue": "i-0000aaaa1111bbbb2"},
                {"entityValue": 7},
                "not an entity",
            ]
        },
    )

    assert parse(event).instance_ids == ("i-0000aaaa1111bbbb2", "i-0d3e4f5a6b7c8d9e0")


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        pytest.param("Sat, 05 Dec 2026 14:00 GMT", at("2026-12-05T14:00:00+00:00"), id="rfc1123-without-seconds"),
        pytest.param("Sat, 05 Dec 2026 14:00:30 GMT", at("2026-12-05T14:00:30+00:00"), id="rfc1123-with-seconds"),
        pytest.param("05 Dec 2026 15:00 +0100", at("2026-12-05T14:00:00+00:00"), id="rfc1123-offset-no-weekday"),
        pytest.param("2026-12-05T14:00:00Z", at("2026-12-05T14:00:00+00:00"), id="iso-8601"),
        pytest.param("2026-12-05T14:00:00", at("2026-12-05T14:00:00+00:00"), id="naive-iso-is-utc"),
        pytest.param("next Saturday", None, id="unreadable-loses-only-the-deadline"),
        pytest.param("Sat, 31 Feb 2026 14:00 GMT", None, id="impossible-date"),
        pytest.param("Sat, 05 Foo 2026 14:00 GMT", None, id="unknown-month"),
        pytest.param(1796479200, None, id="number"),
        pytest.param(DELETE, None, id="absent"),
    ],
)
def test_health_start_time_reads_rfc1123_and_iso(start: object, expected: float | None) -> None:
    message = parse(altered("health_scheduled_change", **{"detail.startTime": start}))

    assert (message.kind, message.action_time) == (SCHEDULED_CHANGE, expected)


HEALTH = [
    pytest.param(
        "health_instance_stop_scheduled", "upcoming", "AWS_EC2_INSTANCE_STOP_SCHEDULED",
        ("i-0a9b8c7d6e5f40312", "i-0b8c7d6e5f4a30291", "i-0d6e5f4a3b2c1f0e9"),
        id="stop-every-pending-entity-not-the-resolved-one",
    ),
    pytest.param(
        "health_instance_retirement_scheduled", "open", "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
        ("i-0e5f4a3b2c1d0e9f8", "i-0f4a3b2c1d0e9f8a7"), id="retirement-open-impaired-entities",
    ),
    pytest.param(
        "health_system_reboot_maintenance_scheduled", "upcoming", "AWS_EC2_SYSTEM_REBOOT_MAINTENANCE_SCHEDULED",
        ("i-01a2b3c4d5e6f7a8b", "i-02b3c4d5e6f7a8b9c", "i-03c4d5e6f7a8b9c0d"), id="system-reboot-three-instances",
    ),
    pytest.param(
        "health_system_maintenance_event", "", "AWS_EC2_SYSTEM_MAINTENANCE_EVENT",
        ("i-04d5e6f7a8b9c0d1e", "i-05e6f7a8b9c0d1e2f"), id="system-maintenance-older-shape",
    ),
    pytest.param(
        "health_scheduled_change_closed", "closed", "AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED", (),
        id="closed-with-resolved-entities-names-none",
    ),
    pytest.param(
        "health_scheduled_change_closed_entities_pending", "closed", "AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED",
        ("i-0b1c2d3e4f5a69788", "i-0d3e4f5a6b7c8d9e0"), id="closed-with-pending-entities-names-them",
    ),
    pytest.param("health_public_event", "upcoming", "AWS_EC2_MAINTENANCE_SCHEDULED", (), id="public-names-none"),
    pytest.param(
        "health_dedicated_host_retirement", "upcoming", "AWS_EC2_DEDICATED_HOST_RETIREMENT_SCHEDULED", (),
        id="a-host-is-no-instance",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "status", "code", "instance_ids"), HEALTH)
def test_health_events_name_their_instances_status_and_code(
    name: str, status: str, code: str, instance_ids: tuple[str, ...]
) -> None:
    message = parse(load(name))

    assert (message.kind, message.status, message.code, message.instance_ids) == (
        SCHEDULED_CHANGE, status, code, instance_ids,
    )  # fmt: skip


def test_a_closed_health_event_does_nothing_whatever_its_entities_say() -> None:
    message = parse(load("health_scheduled_change_closed_entities_pending"))

    assert not action_for(message, "ReplaceThenDrain", now=at("2026-12-05T16:00:05+00:00")).acts


@pytest.mark.parametrize(
    ("entities", "resources", "expected"),
    [
        pytest.param(DELETE, ["i-0aaaabbbbccccdddd"], ("i-0aaaabbbbccccdddd",), id="no-entities-reads-resources"),
        pytest.param(None, ["i-0aaaabbbbccccdddd"], ("i-0aaaabbbbccccdddd",), id="null-entities-reads-resources"),
        pytest.param(
            [{"entityValue": "i-0aaaabbbbccccdddd", "status": "resolved"}],
            ["i-0aaaabbbbccccdddd"],
            (),
            id="a-resolved-entity-is-not-read-back-from-resources",
        ),
        pytest.param(
            [{"entityValue": "i-0aaaabbbbccccdddd", "status": 3}, {"entityValue": "i-0eeeeffff00001111"}],
            [],
            ("i-0aaaabbbbccccdddd", "i-0eeeeffff00001111"),
            id="an-odd-entity-status-still-drains",
        ),
    ],
)
def test_health_entities_decide_and_resources_only_stand_in(
    entities: object, resources: list[str], expected: tuple[str, ...]
) -> None:
    event = altered("health_scheduled_change", resources=resources, **{"detail.affectedEntities": entities})

    assert parse(event).instance_ids == expected


@pytest.mark.parametrize("field", ["statusCode", "eventScopeCode", "eventTypeCode"])
def test_odd_health_refinements_read_as_absent_and_still_drain(field: str) -> None:
    message = parse(altered("health_scheduled_change", **{f"detail.{field}": ["closed", "PUBLIC"]}))

    assert message.instance_ids == ("i-0b1c2d3e4f5a69788", "i-0d3e4f5a6b7c8d9e0")
    assert action_for(message, "Ignore", now=at("2026-11-21T08:15:00+00:00")).drain == DRAIN_NOW


@pytest.mark.parametrize("state", ["Stopping", "STOPPED", "Shutting-Down", "Terminated"])
def test_a_state_is_read_in_any_case(state: str) -> None:
    message = parse(altered("state_change_stopping", **{"detail.state": state}))

    assert message.state == state.lower()
    assert action_for(message, "Ignore", now=at("2026-11-21T10:03:45+00:00")).acts


def test_an_sns_notification_is_read_as_the_event_it_carries() -> None:
    notification = load("sns_spot_interruption_warning")
    inner = json.loads(notification["Message"])

    assert parse(notification) == parse(inner) == parse(json.dumps(notification).encode())
    assert parse(notification).instance_ids == ("i-0c9d8e7f6a5b4c3d2",)


def test_an_event_with_a_type_field_is_not_taken_for_an_sns_notification() -> None:
    event = altered("spot_interruption_warning", Type="Notification", Message="not the event")

    assert parse(event).kind == SPOT_INTERRUPTION


@pytest.mark.parametrize(
    ("message", "words"),
    [
        pytest.param(7, "'Message' is not a string", id="number"),
        pytest.param("[1, 2]", "'Message' is JSON list", id="array"),
        pytest.param('{"a": NaN}', "NaN is not a JSON number", id="nan"),
        pytest.param("{" * 3, "'Message' is not JSON", id="broken"),
    ],
)
def test_an_sns_notification_not_carrying_an_event_object_is_malformed(message: object, words: str) -> None:
    notification = load("sns_spot_interruption_warning")
    notification["Message"] = message

    with pytest.raises(MalformedEvent, match=words):
        parse(notification)


@pytest.mark.parametrize(
    ("service", "category"),
    [("RDS", "scheduledChange"), ("EC2", "issue"), ("EC2", "accountNotification"), (None, None)],
)
def test_health_events_other_than_ec2_scheduled_changes_are_unknown(service: object, category: object) -> None:
    event = altered("health_scheduled_change", **{"detail.service": service, "detail.eventTypeCategory": category})

    assert parse(event).kind == UNKNOWN


# --- unknown kinds ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"source": "aws.autoscaling"}, id="other-source"),
        pytest.param({"detail__type": "EC2 Instance Launch Successful"}, id="other-detail-type"),
        pytest.param({"version": "1"}, id="other-version"),
        pytest.param(
            {"detail__type": "EC2 Fleet Spot Instance Interruption Warning", "detail": 7, "resources": {"odd": 1}},
            id="unknown-kinds-detail-and-resources-are-not-read",
        ),
        pytest.param({"detail__type": "EC2 Spot Instance Request Fulfillment"}, id="spot-fulfillment"),
    ],
)
def test_well_formed_events_of_other_kinds_are_unknown_and_do_nothing(changes: dict[str, Any]) -> None:
    message = parse(altered("spot_interruption_warning", **changes))

    assert message.kind == UNKNOWN
    assert message.id == "3e1c6a2f-8d4b-4f0e-9a51-7c2b9d0e4f13"
    assert not action_for(message, "ReplaceThenDrain", now=at("2026-11-21T10:00:05+00:00")).acts


def test_absent_version_reads_as_eventbridges_zero() -> None:
    assert parse(altered("rebalance_recommendation", version=DELETE)).kind == REBALANCE


def test_the_registry_has_one_reader_per_kind_but_unknown() -> None:
    handled = [str(param.values[0]) for param in FIXTURES if param.values[1] != UNKNOWN]
    fixtures = [load(name) for name in handled] + [continuation_event(CONT, event_id="c-1", now=NOW)]
    kinds = {
        key: parse(event).kind
        for event in fixtures
        if (key := (event["source"], event["detail-type"], event["version"])) in PARSERS
    }

    assert set(kinds) == set(PARSERS)
    assert set(kinds.values()) | {UNKNOWN} == set(KINDS)


# --- malformed ----------------------------------------------------------------------------------

MALFORMED = [
    pytest.param("not json at all", "body is not JSON", id="text"),
    pytest.param("", "body is not JSON", id="empty"),
    pytest.param(b"\xff\xfe\x00garbage", "body is not JSON", id="undecodable-bytes"),
    pytest.param(
        '{"id": "a", "source": "aws.ec2", "detail-type": "x", "n": NaN}', "NaN is not a JSON number", id="nan"
    ),
    pytest.param("[" * 100_000, "body is not JSON", id="nested-too-deep"),
    pytest.param("[1, 2]", "not an object", id="list"),
    pytest.param("null", "not an object", id="null"),
    pytest.param('"an event"', "not an object", id="string"),
    pytest.param("42", "not an object", id="number"),
    pytest.param(altered("spot_interruption_warning", id=DELETE), "event has no 'id'", id="no-id"),
    pytest.param(altered("spot_interruption_warning", id=""), "event has no 'id'", id="empty-id"),
    pytest.param(altered("spot_interruption_warning", id=7), "event 'id' is not a string", id="numeric-id"),
    pytest.param(altered("spot_interruption_warning", source=DELETE), "event has no 'source'", id="no-source"),
    pytest.param(
        altered("spot_interruption_warning", source=["aws.ec2"]), "'source' is not a string", id="list-source"
    ),
    pytest.param(
        altered("spot_interruption_warning", detail__type=DELETE), "event has no 'detail-type'", id="no-detail-type"
    ),
    pytest.param(altered("spot_interruption_warning", version=0), "'version' is not a string", id="numeric-version"),
    pytest.param(altered("spot_interruption_warning", time="yesterday"), "not ISO-8601", id="unreadable-time"),
    pytest.param(altered("spot_interruption_warning", time=1795255200), "'time' is not a string", id="numeric-time"),
    pytest.param(altered("spot_interruption_warning", detail=DELETE), "has no 'detail'", id="spot-no-detail"),
    pytest.param(altered("spot_interruption_warning", detail=[]), "'detail' is not an object", id="spot-list-detail"),
    pytest.param(
        altered("spot_interruption_warning", **{"detail.instance__id": DELETE}),
        "detail.instance-id is missing",
        id="spot-no-instance",
    ),
    pytest.param(
        altered("spot_interruption_warning", **{"detail.instance__id": 12}),
        "detail.instance-id is not a string",
        id="spot-numeric-instance",
    ),
    pytest.param(
        altered("spot_interruption_warning", **{"detail.instance__action": {"terminate": True}}),
        "detail.instance-action is not a string",
        id="spot-object-action",
    ),
    pytest.param(
        altered("rebalance_recommendation", **{"detail.instance__id": ""}),
        "detail.instance-id is missing",
        id="rebalance-empty-instance",
    ),
    pytest.param(
        altered("state_change_stopping", **{"detail.state": DELETE}), "detail.state is missing", id="state-missing"
    ),
    pytest.param(
        altered("state_change_stopping", **{"detail.state": 80}), "detail.state is not a string", id="state-code"
    ),
    pytest.param(
        altered("capacity_reservation_interruption", resources=[], **{"detail.instance__id": DELETE}),
        "names no instance",
        id="capacity-reservation-no-instance",
    ),
    pytest.param(
        altered("capacity_reservation_interruption", resources={"arn": "x"}),
        "'resources' is not a list",
        id="capacity-reservation-object-resources",
    ),
    pytest.param(
        altered("health_scheduled_change", **{"detail.affectedEntities": "i-0b1c2d3e4f5a69788"}),
        "detail.affectedEntities is not a list",
        id="health-entities-not-list",
    ),
    pytest.param(
        altered("health_scheduled_change", resources=7), "'resources' is not a list", id="health-numeric-resources"
    ),
]


@pytest.mark.parametrize(("body", "words"), MALFORMED)
def test_malformed_bodies_raise_malformed_event_naming_the_fault(
    body: str | bytes | dict[str, Any], words: str
) -> None:
    with pytest.raises(MalformedEvent, match=words):
        parse(body if isinstance(body, str | bytes) else json.dumps(body))


def test_a_decoded_body_that_is_not_a_mapping_is_malformed() -> None:
    with pytest.raises(MalformedEvent, match="not JSON text"):
        parse(["not", "an", "event"])  # type: ignore[arg-type]


# --- continuations ------------------------------------------------------------------------------

NOW = at("2026-11-21T10:00:07+00:00")
CONT = Continuation(
    node="ip-10-0-12-34.ec2.internal",
    instance_id="i-0f9e8d7c6b5a40312",
    drain=DRAIN_AFTER_REPLACEMENT,
    deadline=NOW + 3600,
    started=NOW - 840.5,
    origin=REBALANCE,
    replace_by=NOW + 300,
    attempt=3,
)


@pytest.mark.parametrize(
    "continuation",
    [
        pytest.param(CONT, id="after-replacement"),
        pytest.param(
            Continuation(
                "ip-10-0-1-2.ec2.internal", "i-0a1b2c3d4e5f60718", DRAIN_NOW, NOW + 95, NOW, SPOT_INTERRUPTION
            ),
            id="drain-now-first-attempt-no-replace-by",
        ),
    ],
)
def test_continuation_event_round_trips_through_the_queue(continuation: Continuation) -> None:
    event = continuation_event(continuation, event_id="0d5c7e9a-continuation-2", now=NOW)
    (record,) = sqs_event(event)["Records"]

    message = parse(record["body"])

    assert message.kind == CONTINUATION
    assert message.continuation == continuation
    assert (message.id, message.source, message.detail_type) == (
        "0d5c7e9a-continuation-2",
        CONTINUATION_SOURCE,
        CONTINUATION_DETAIL_TYPE,
    )
    assert message.time == math.floor(NOW)
    assert message.instance_ids == (continuation.instance_id,)


def test_continuation_event_is_shaped_like_an_eventbridge_event() -> None:
    event = continuation_event(CONT, event_id="e-1", now=at("2026-11-21T10:00:00+00:00"))

    assert {key: event[key] for key in ("version", "id", "source", "detail-type", "time")} == {
        "version": "0",
        "id": "e-1",
        "source": CONTINUATION_SOURCE,
        "detail-type": CONTINUATION_DETAIL_TYPE,
        "time": "2026-11-21T10:00:00Z",
    }


def _continuation_with(**detail: Any) -> dict[str, Any]:
    event = continuation_event(CONT, event_id="e-2", now=NOW)
    for key, value in detail.items():
        if value is DELETE:
            event["detail"].pop(key.replace("_", "-"))
        else:
            event["detail"][key.replace("_", "-")] = value
    return event


@pytest.mark.parametrize(
    ("detail", "words"),
    [
        pytest.param({"drain": "none"}, "detail.drain is 'none'", id="drain-that-does-nothing"),
        pytest.param({"drain": 1}, "detail.drain is not a string", id="numeric-drain"),
        pytest.param({"node": DELETE}, "detail.node is missing", id="no-node"),
        pytest.param({"instance_id": DELETE}, "detail.instance-id is missing", id="no-instance"),
        pytest.param({"origin": ""}, "detail.origin is missing", id="empty-origin"),
        pytest.param({"deadline": DELETE}, "detail.deadline is missing", id="no-deadline"),
        pytest.param({"deadline": "soon"}, "detail.deadline is not a number", id="text-deadline"),
        pytest.param({"deadline": True}, "detail.deadline is not a number", id="boolean-deadline"),
        pytest.param({"deadline": 10**400}, "detail.deadline is out of range", id="huge-deadline"),
        pytest.param({"started": [1]}, "detail.started is not a number", id="list-started"),
        pytest.param({"replace_by": "later"}, "detail.replace-by is not a number", id="text-replace-by"),
        pytest.param({"attempt": 1.5}, "detail.attempt is not an integer", id="fractional-attempt"),
        pytest.param({"attempt": False}, "detail.attempt is not an integer", id="boolean-attempt"),
    ],
)
def test_malformed_continuations_are_refused(detail: dict[str, Any], words: str) -> None:
    with pytest.raises(MalformedEvent, match=words):
        parse(json.dumps(_continuation_with(**detail)))


def test_continuation_with_an_infinite_deadline_is_refused() -> None:
    # Python's json reads 1e400 as inf without calling parse_constant.
    body = json.dumps(_continuation_with(deadline=1.0)).replace('"deadline": 1.0', '"deadline": 1e400')

    with pytest.raises(MalformedEvent, match=r"detail\.deadline is not finite"):
        parse(body)


def test_continuation_without_attempt_or_replace_by_defaults_them() -> None:
    message = parse(_continuation_with(attempt=DELETE, replace_by=DELETE))

    assert message.continuation is not None
    assert (message.continuation.attempt, message.continuation.replace_by) == (1, None)


finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)
continuations = st.builds(
    Continuation,
    node=st.text(min_size=1),
    instance_id=st.text(min_size=1),
    drain=st.sampled_from([DRAIN_NOW, DRAIN_AFTER_REPLACEMENT]),
    deadline=finite,
    started=finite,
    origin=st.sampled_from(KINDS),
    replace_by=st.none() | finite,
    attempt=st.integers(min_value=1, max_value=10**6),
)


@FUZZ
@given(continuation=continuations, event_id=st.text(min_size=1), now=st.floats(min_value=0, max_value=4e9))
def test_any_continuation_round_trips(continuation: Continuation, event_id: str, now: float) -> None:
    message = parse(json.dumps(continuation_event(continuation, event_id=event_id, now=now)))

    assert (message.kind, message.id, message.continuation) == (CONTINUATION, event_id, continuation)


# --- fuzzing ------------------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
KNOWN_KEYS = list(PARSERS) + [("aws.health", "AWS Health Event", "0")] * 2 + [("aws.ec2", "EC2 Other", "0")]
DETAIL_FIELDS = [
    "instance-id", "instance-action", "state", "instance-termination-time", "service", "eventTypeCategory",
    "affectedEntities", "startTime", "node", "drain", "deadline", "started", "origin", "replace-by", "attempt",
]  # fmt: skip
iso_times = st.sampled_from(["2026-11-21T10:00:00Z", "2026-11-21T10:00:00.123+01:00"])
times = iso_times | st.just("Sat, 05 Dec 2026 14:00 GMT")
USUALLY = st.sampled_from([True] * 9 + [False])  # a right value nine times in ten
plausible = {
    "instance-id": st.sampled_from(["i-0a1b2c3d4e5f60718", "i-1", ""]),
    "instance-action": st.sampled_from(["terminate", "stop", "hibernate"]),
    "state": st.sampled_from(["stopping", "stopped", "shutting-down", "terminated", "running"]),
    "instance-termination-time": times,
    "service": st.sampled_from(["EC2", "RDS"]),
    "eventTypeCategory": st.sampled_from(["scheduledChange", "issue"]),
    "affectedEntities": st.lists(st.fixed_dictionaries({"entityValue": st.just("i-0d3e") | json_scalars}), max_size=3),
    "startTime": times | st.just("Sun, 99 Dec 2026 99:99 GMT"),
    "node": st.text(max_size=20),
    "drain": st.sampled_from([DRAIN_NOW, DRAIN_AFTER_REPLACEMENT, "none"]),
    "deadline": st.floats(),
    "started": st.floats(),
    "origin": st.sampled_from(KINDS),
    "replace-by": st.none() | st.floats(),
    "attempt": st.integers(min_value=-1, max_value=5),
}


@st.composite
def event_like(draw: st.DrawFn) -> dict[str, Any]:
    """Dicts shaped like our events: each field mostly plausible, sometimes any JSON value, sometimes absent."""

    def mostly(right: st.SearchStrategy[Any]) -> Any:
        return draw(right) if draw(USUALLY) else draw(json_values)

    source, detail_type, version = draw(st.sampled_from(KNOWN_KEYS))
    detail = {field: mostly(plausible[field]) for field in DETAIL_FIELDS if draw(USUALLY)}
    event: dict[str, Any] = {
        "version": mostly(st.just(version)),
        "id": mostly(st.text(min_size=1, max_size=8)),
        "source": mostly(st.just(source)),
        "detail-type": mostly(st.just(detail_type)),
        "time": mostly(iso_times),
        "resources": mostly(st.lists(st.sampled_from(["arn:aws:ec2:us-east-1:123456789012:instance/i-0a1b", "i-0c"]))),
        "detail": mostly(st.just(detail)),
    }
    if not draw(USUALLY):
        for key in draw(st.lists(st.sampled_from(sorted(event)), unique=True, max_size=2)):
            del event[key]
    return event


def parses_or_is_malformed(body: Any) -> Message | None:
    """The parse contract under fuzzing: a sound Message, or MalformedEvent - nothing else."""
    try:
        message = parse(body)
    except MalformedEvent:
        return None
    assert message.kind in KINDS
    assert isinstance(message.id, str)
    assert message.id
    assert all(isinstance(instance_id, str) for instance_id in message.instance_ids)
    assert math.isfinite(message.time)
    action = action_for(message, "ReplaceThenDrain", now=NOW, grace=600.0)
    if message.kind == UNKNOWN:
        assert not action.acts
    assert action.deadline is None or math.isfinite(action.deadline)
    return message


@FUZZ
@given(value=json_values)
def test_arbitrary_json_parses_or_is_malformed(value: Any) -> None:
    parses_or_is_malformed(json.dumps(value))
    if isinstance(value, dict):
        parses_or_is_malformed(value)


@FUZZ
@given(text=st.text())
def test_arbitrary_text_parses_or_is_malformed(text: str) -> None:
    parses_or_is_malformed(text)


@FUZZ
@given(data=st.binary())
def test_arbitrary_bytes_parse_or_are_malformed(data: bytes) -> None:
    parses_or_is_malformed(data)


@FUZZ
@given(event=event_like())
def test_event_like_dicts_with_fields_of_any_type_parse_or_are_malformed(event: dict[str, Any]) -> None:
    parses_or_is_malformed(json.dumps(event))
    parses_or_is_malformed(event)


@FUZZ
@given(
    source=st.text(min_size=1),
    detail_type=st.text(min_size=1),
    detail=json_values,
    resources=json_values,
)
def test_events_of_unknown_kinds_never_act(source: str, detail_type: str, detail: Any, resources: Any) -> None:
    event = {"version": "0", "id": "e", "source": source, "detail-type": detail_type, "detail": detail}
    event["resources"] = resources

    message = parses_or_is_malformed(json.dumps(event))

    if (source, detail_type, "0") not in PARSERS:
        assert message is not None
        assert message.kind == UNKNOWN
