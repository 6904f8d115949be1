"""A capacity block's end: EC2's expiration warning drains every node of the block in time.

Faked: the cluster (in-memory), EC2 (`FakeCloudProvider`), the state store, the provisioner
trigger, as in tests/controllers/test_interruption.py, whose `World` this reuses. The event is
EC2's "Capacity Block Reservation Expiration Warning" as the EC2 guide prints it, routed by the
stack's rule and parsed by the real `parse`.
Observed: the Message, the Action, the rule pattern, and which nodes the controller cordons and
drains (and that no pod is lost).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from nodewright.engine.interruption import (
    CAPACITY_BLOCK_EXPIRING,
    CAPACITY_RESERVATION,
    CONTINUATION,
    MalformedEvent,
    action_for,
    parse,
)
from nodewright.engine.interruption.actions import DEFAULT_MARGIN, DRAIN_NOW
from nodewright.engine.interruption.rules import interruption_rules
from nodewright.engine.reservations import EC2_RECLAIM_LEAD_SECONDS, EXPIRY_LEAD_SECONDS
from nodewright.model import labels as wk
from tests.controllers.test_interruption import START, ZONE, World

BLOCK = "cr-0123456789abcdef0"
END = START + EXPIRY_LEAD_SECONDS  # the warning comes 40 minutes before the end


def warning(detail_type: str = "Capacity Block Reservation Expiration Warning", **detail: Any) -> dict[str, Any]:
    """EC2's event, as the EC2 guide's "Monitor Capacity Blocks using EventBridge" shows it."""
    end = datetime.fromtimestamp(END, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "version": "0",
        "id": "7bf73129-1428-4cd3-a780-95db273d1602",
        "detail-type": detail_type,
        "source": "aws.ec2",
        "account": "111122223333",
        "time": datetime.fromtimestamp(START, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-east-1",
        "resources": [f"arn:aws:ec2:us-east-1:111122223333:capacity-reservation/{BLOCK}"],
        "detail": {"capacity-reservation-id": BLOCK, "end-date": end, **detail},
    }


@pytest.mark.parametrize(
    "detail_type",
    ["Capacity Block Reservation Expiration Warning", "Capacity Block Expiration Warning"],
    ids=["reservation", "short"],
)
def test_the_warning_names_the_block_and_ec2s_reclaim_time(detail_type: str) -> None:
    message = parse(json.dumps(warning(detail_type)))
    assert (message.kind, message.reservation_id, message.instance_ids) == (CAPACITY_BLOCK_EXPIRING, BLOCK, ())
    assert message.action_time == END - EC2_RECLAIM_LEAD_SECONDS
    pattern = interruption_rules()["CapacityBlockExpirationRule"]
    assert pattern["source"] == ["aws.ec2"]
    assert detail_type in pattern["detail-type"]


def test_without_an_end_date_ec2_reclaims_ten_minutes_after_the_warning() -> None:
    event = warning()
    del event["detail"]["end-date"]
    assert parse(event).action_time == START + 600


def test_a_warning_without_a_reservation_id_is_malformed() -> None:
    with pytest.raises(MalformedEvent, match="capacity-reservation-id"):
        parse(warning(**{"capacity-reservation-id": "i-0abc"}))


def test_the_action_drains_now_and_is_over_before_ec2_reclaims() -> None:
    action = action_for(parse(warning()), "ReplaceThenDrain", now=START)
    assert (action.cordon, action.replace, action.drain) == (True, True, DRAIN_NOW)
    assert action.deadline == END - EC2_RECLAIM_LEAD_SECONDS - DEFAULT_MARGIN
    assert action.reason == f"capacity block {BLOCK} ends"


def test_every_node_of_the_block_is_drained_and_no_pod_is_lost() -> None:
    world = World()
    in_block = [world.spot_node(f"block-{i}", pods=8, capacity_type="reserved") for i in range(2)]
    other = world.spot_node("elsewhere", pods=8, capacity_type="on-demand")
    for node in in_block:
        labels = {**node.labels, wk.CAPACITY_RESERVATION_ID: BLOCK, wk.CAPACITY_RESERVATION_TYPE: "capacity-block"}
        world.cluster.replace_node(replace(node, labels=labels))

    handled = world.controller.handle(parse(warning()))

    assert sorted(handled.instances) == ["i-block-0", "i-block-1"]
    cordoned = {c.name for c in world.cluster.changes_of("node_cordoned")}
    assert cordoned == {"block-0", "block-1"}
    assert world.cluster.get_node(other.name) is not None
    world.tick(120)
    assert world.cluster.lost_pods() == []
    assert all(p.node_name and not p.node_name.startswith("block-") for p in world.workload_pods())
    decisions = [d for d in world.observer.of("interruption") if d["event"] != CONTINUATION]
    assert {d["reason"] for d in decisions} == {f"capacity block {BLOCK} ends"}


def test_an_interruptible_reservations_warning_blocks_its_reserved_offering_only() -> None:
    world = World()
    world.spot_node("reserved-1", pods=4, capacity_type="reserved")
    world.spot_node("od-1", pods=4, capacity_type="on-demand")
    world.controller.handle(world.message(CAPACITY_RESERVATION, "i-reserved-1"))
    world.controller.handle(world.message(CAPACITY_RESERVATION, "i-od-1"))

    blocked = world.store.blocked_offerings(world.clock.now())
    assert ("reserved", "m5.4xlarge", ZONE) in blocked
    assert not any(o[0] == "on-demand" for o in blocked)
    world.tick(120)
    assert world.cluster.lost_pods() == []
