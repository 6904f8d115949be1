"""The verification decisions: freshness by kind, the Node a claim owns, EC2's word, gentle actions."""

from __future__ import annotations

import pytest

from infra.config import QUEUE_RETENTION_SECONDS
from nodewright.engine.interruption import (
    CAPACITY_RESERVATION,
    CONTINUATION,
    REBALANCE,
    SCHEDULED_CHANGE,
    SPOT_INTERRUPTION,
    STATE_CHANGE,
    Action,
    Message,
)
from nodewright.engine.interruption.actions import DRAIN_NOW
from nodewright.engine.interruption.verification import (
    ACT,
    DROP,
    GENTLE,
    QUEUE_RETENTION,
    gentle,
    owned_node,
    staleness,
    unverified_drain_over,
    verdict,
)
from nodewright.model.instance import InstanceFacts
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim

NOW = 1_800_000_000.0
INSTANCE = "i-0123456789abcdef0"


def message(kind: str, *, age: float = 1.0, **fields: object) -> Message:
    return Message(
        id="e", kind=kind, source="aws.ec2", detail_type=kind, time=NOW - age, instance_ids=(INSTANCE,), **fields
    )  # type: ignore[arg-type]


def test_the_retention_the_decisions_assume_is_the_queues() -> None:
    assert QUEUE_RETENTION == QUEUE_RETENTION_SECONDS


@pytest.mark.parametrize(
    ("kind", "age", "fields", "stale"),
    [
        pytest.param(SPOT_INTERRUPTION, 1, {}, "", id="spot-fresh"),
        pytest.param(SPOT_INTERRUPTION, 119, {}, "", id="spot-in-its-notice"),
        pytest.param(SPOT_INTERRUPTION, 121, {}, "notice ran out", id="spot-past-its-notice"),
        pytest.param(SPOT_INTERRUPTION, 10, {"action_time": NOW - 1}, "notice ran out", id="spot-action-time-past"),
        pytest.param(CAPACITY_RESERVATION, 130, {}, "notice ran out", id="reservation-past-its-notice"),
        pytest.param(SCHEDULED_CHANGE, 250, {"action_time": NOW + 86400}, "", id="health-within-retention"),
        pytest.param(STATE_CHANGE, 301, {"state": "terminated"}, "longer than the queue keeps", id="state-too-old"),
        pytest.param(REBALANCE, -120, {}, "in the future", id="from-the-future"),
        pytest.param(REBALANCE, -30, {}, "", id="clock-skew-tolerated"),
        pytest.param(REBALANCE, NOW, {}, "no time", id="no-time"),
    ],
)
def test_freshness_depends_on_the_kind(kind: str, age: float, fields: dict[str, object], stale: str) -> None:
    found = staleness(message(kind, age=age, **fields), NOW)
    assert (stale in found) if stale else found == ""


def test_a_continuation_is_left_to_its_drain_record() -> None:
    assert staleness(message(CONTINUATION, age=10_000), NOW) == ""
    assert verdict(message(CONTINUATION), None).outcome == ACT


def facts(state: str = "running", *, known: bool = True, spot: bool = True, status: str = "") -> InstanceFacts:
    return InstanceFacts(INSTANCE, known, state, spot, status)


@pytest.mark.parametrize(
    ("kind", "fields", "ec2", "outcome"),
    [
        pytest.param(STATE_CHANGE, {"state": "terminated"}, facts("running"), DROP, id="terminated-but-running"),
        pytest.param(STATE_CHANGE, {"state": "terminated"}, facts("terminated"), ACT, id="terminated-confirmed"),
        pytest.param(STATE_CHANGE, {"state": "terminated"}, facts("shutting-down"), ACT, id="shutting-down"),
        pytest.param(STATE_CHANGE, {"state": "terminated"}, facts(known=False), ACT, id="unknown-to-ec2"),
        pytest.param(STATE_CHANGE, {"state": "terminated"}, facts("stopped"), DROP, id="terminated-but-stopped"),
        pytest.param(STATE_CHANGE, {"state": "stopping"}, facts("running"), DROP, id="stopping-but-running"),
        pytest.param(STATE_CHANGE, {"state": "stopping"}, facts("stopped"), ACT, id="stopping-confirmed"),
        pytest.param(SPOT_INTERRUPTION, {}, facts(status="marked-for-termination"), ACT, id="spot-marked"),
        pytest.param(SPOT_INTERRUPTION, {}, facts(status="fulfilled"), GENTLE, id="spot-not-marked"),
        pytest.param(SPOT_INTERRUPTION, {}, facts(status=""), GENTLE, id="spot-no-request-exposed"),
        pytest.param(SPOT_INTERRUPTION, {}, facts(spot=False), DROP, id="spot-warning-for-on-demand"),
        pytest.param(SPOT_INTERRUPTION, {}, facts("terminated"), DROP, id="spot-warning-instance-gone"),
        pytest.param(SPOT_INTERRUPTION, {}, None, GENTLE, id="ec2-not-asked"),
        pytest.param(SCHEDULED_CHANGE, {}, facts(spot=False), GENTLE, id="health-unconfirmed"),
        pytest.param(REBALANCE, {}, facts(), GENTLE, id="rebalance-unconfirmed"),
    ],
)
def test_what_ec2_says_decides(kind: str, fields: dict[str, object], ec2: InstanceFacts | None, outcome: str) -> None:
    assert verdict(message(kind, **fields), ec2).outcome == outcome


def test_the_gentle_action_deletes_nothing_and_is_marked_unverified() -> None:
    action = Action(cordon=True, replace=True, drain=DRAIN_NOW, delete=True, deadline=NOW + 100, reason="x")
    soft = gentle(action)
    assert (soft.cordon, soft.replace, soft.drain, soft.deadline) == (True, True, DRAIN_NOW, NOW + 100)
    assert soft.delete is False
    assert soft.verified is False
    assert gentle(Action(reason="nothing")) == Action(reason="nothing")


def test_an_unverified_drain_stops_an_hour_past_its_deadline_or_start() -> None:
    assert not unverified_drain_over(NOW, NOW - 10, NOW + 3599)
    assert unverified_drain_over(NOW, NOW - 10, NOW + 3600)
    assert unverified_drain_over(0.0, NOW, NOW + 3600)


def claim(node_name: str = "n1") -> NodeClaim:
    return NodeClaim(name="default-0123456789", nodepool="default", instance_id=INSTANCE, node_name=node_name)


@pytest.mark.parametrize(
    ("node", "node_name", "owned"),
    [
        pytest.param(Node("n1", provider_id=f"aws:///us-east-1a/{INSTANCE}"), "n1", True, id="the-claims-node"),
        pytest.param(Node("n1", provider_id=f"aws:///us-east-1a/{INSTANCE}"), "", True, id="not-registered-yet"),
        pytest.param(Node("other", provider_id=f"aws:///us-east-1a/{INSTANCE}"), "n1", False, id="impostor-name"),
        pytest.param(Node("n1", provider_id="aws:///us-east-1a/i-0ffffffffffffffff"), "n1", False, id="other-instance"),
        pytest.param(None, "n1", False, id="no-node"),
    ],
)
def test_a_node_is_the_claims_only_by_provider_id_and_name(node: Node | None, node_name: str, owned: bool) -> None:
    assert (owned_node(node, claim(node_name)) is not None) is owned
