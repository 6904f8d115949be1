"""The interruption Lambda handler, end to end through its real entry point.

Real: the handler with its Powertools decorators, BatchProcessor and idempotency on a DynamoDB
table (moto), the parser, the controller. Faked: the Kubernetes API (in-memory cluster), EC2 (the
fake cloud), the provisioner invoke and the delayed SQS sends (recorded), time (a virtual clock).
Events are the documented fixtures of tests/events, wrapped in real SQS envelopes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from bench.harness.cluster_actors import pdb
from functions.interruption import handler as interruption_handler
from nodewright.adapters.idempotency import EventDeduplicator
from nodewright.engine.interruption import SPOT_INTERRUPTION
from nodewright.inmemory.cluster import SimulatedApiError
from nodewright.model.standby import STANDBY_LABEL, STOPPED
from tests.controllers.test_interruption import START, World
from tests.events import load, sqs_event

TABLE = "nodewright-idempotency"
# The handler's metrics go to the recording observer here, so Powertools has none to flush.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


class Context:
    function_name = "nodewright-interruption"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:nodewright-interruption"
    aws_request_id = "c0ffee00-0000-4000-8000-000000000001"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        boto3.client("dynamodb").create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        world = World()
        interruption_handler.configure(EventDeduplicator(world.controller.process, table=TABLE))
        yield world
        interruption_handler.configure(None)


def spot_warning(instance_id: str, event_id: str = "3e1c6a2f-8d4b-4f0e-9a51-7c2b9d0e4f13") -> dict[str, Any]:
    event = load("spot_interruption_warning")
    event["id"] = event_id
    event["detail"]["instance-id"] = instance_id
    event["resources"] = [f"arn:aws:ec2:us-east-1:123456789012:instance/{instance_id}"]
    event["time"] = datetime.fromtimestamp(START, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # the world's now
    return event


def invoke(*bodies: dict[str, Any] | str) -> dict[str, Any]:
    return interruption_handler.handler(sqs_event(*bodies), Context())


def test_a_spot_warning_through_the_handler_cordons_and_drains(world: World) -> None:
    world.spot_node(pods=5)
    response = invoke(spot_warning("i-spot-1"))
    assert response == {"batchItemFailures": []}
    assert world.cluster.changes_of("node_cordoned")
    assert len(world.cluster.changes_of("pod_evicted")) == 5
    assert world.trigger.requests


def test_the_same_event_delivered_twice_acts_once(world: World) -> None:
    world.spot_node(pods=5)
    event = spot_warning("i-spot-1")
    assert invoke(event, event) == {"batchItemFailures": []}  # duplicated within one batch
    assert invoke(event) == {"batchItemFailures": []}  # and redelivered later
    received = [m for m in world.observer.metrics if m[0] == "InterruptionsReceived"]
    assert len(received) == 1
    assert len(world.trigger.requests) == 1


def test_a_malformed_message_is_acknowledged_and_logged(world: World) -> None:
    world.spot_node(pods=1)
    response = invoke("not json at all", {"no": "id"}, spot_warning("i-spot-1"))
    assert response == {"batchItemFailures": []}
    assert len(world.observer.of("interruption-malformed")) == 2
    assert len(world.cluster.changes_of("pod_evicted")) == 1


def test_an_unknown_event_kind_is_a_no_op(world: World) -> None:
    world.spot_node(pods=2)
    response = invoke(load("health_other_service"), load("state_change_running"))
    assert response == {"batchItemFailures": []}
    assert world.cluster.changes_of("node_cordoned") == []
    assert world.cluster.changes_of("pod_evicted") == []


def test_one_failing_record_does_not_redeliver_the_others(world: World) -> None:
    world.spot_node("spot-1", pods=2)
    world.spot_node("spot-2", pods=2, app="api")
    world.cluster.fail_next("cordon", error=SimulatedApiError("apiserver unavailable", 503))
    event = sqs_event(spot_warning("i-spot-1", "event-a"), spot_warning("i-spot-2", "event-b"))
    response = interruption_handler.handler(event, Context())
    failed = [f["itemIdentifier"] for f in response["batchItemFailures"]]
    assert failed == [event["Records"][0]["messageId"]]
    assert len([c for c in world.cluster.changes_of("pod_evicted") if "api" in c.name]) == 2  # spot-2 drained
    # The failed record's drain was recorded, and its first continuation sent, before the cordon
    # failed: the continuation cordons and drains spot-1 within seconds, without the redelivery.
    world.tick(5)
    assert world.cluster.get_node("spot-2") is None  # retired by its drain's last continuation
    assert world.cluster.get_node("spot-1") is None
    # The failed record's redelivery is harmless (no idempotency record was kept for a failure).
    assert invoke(spot_warning("i-spot-1", "event-a")) == {"batchItemFailures": []}


def test_a_drain_continues_across_invocations_through_delayed_messages(world: World) -> None:
    world.deliver_continuations = False
    world.spot_node(pods=4)
    world.cluster.add_pdb(pdb("web", "web", min_available=3))
    invoke(spot_warning("i-spot-1"))
    assert len(world.cluster.changes_of("pod_evicted")) == 1
    assert len(world.continuations.sent) == 1
    invocations = 1
    while world.continuations.sent and invocations < 60:
        due, _event = world.continuations.sent[0]
        world.tick(max(1.0, due - world.clock.now()))
        for ready in world.continuations.due(world.clock.now()):
            assert invoke(json.loads(json.dumps(ready))) == {"batchItemFailures": []}
            invocations += 1
    assert invocations > 2
    assert len(world.cluster.changes_of("pod_evicted")) == 4
    assert world.cluster.get_node("spot-1") is None
    assert world.cluster.lost_pods() == []
    assert world.observer.of("interruption")[0]["event"] == SPOT_INTERRUPTION


@pytest.mark.parametrize("state", ["stopping", "stopped"])
def test_a_standby_instance_the_provisioner_stopped_is_left_alone(world: World, state: str) -> None:
    node = world.spot_node("standby-1", pods=0, capacity_type="on-demand")
    (claim,) = world.store.claims()
    world.store.save_claim(claim.with_changes(state=STOPPED, labels={**claim.labels, STANDBY_LABEL: "default.warm"}))
    world.cloud.set_state(claim.instance_id, state)  # what EC2 confirms
    event = load(f"state_change_{state}")
    event["detail"]["instance-id"] = claim.instance_id
    event["resources"] = [f"arn:aws:ec2:us-east-1:123456789012:instance/{claim.instance_id}"]
    event["time"] = datetime.fromtimestamp(START, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    response = invoke(event)

    assert response == {"batchItemFailures": []}
    assert world.cluster.changes_of("node_cordoned") == []
    assert world.cluster.get_node(node.name) is not None
    assert [c.state for c in world.store.claims()] == [STOPPED]
    assert world.cloud.instance(claim.instance_id).state == state  # type: ignore[union-attr]
    assert world.trigger.requests == []
    assert "standby" in str(world.observer.of("interruption")[-1]["action"])
