"""The idempotency layer's in-progress write, when its answer is lost, through the real handler.

Real: the interruption handler, Powertools idempotency and DynamoDB (moto), the controller.
Faked: the Kubernetes API (in-memory cluster), EC2 (the fake cloud), time. The fault is DynamoDB's
as the SDK meets it: the in-progress put is written, its response never arrives, and the SDK's
retry of the same request fails its condition on the record the first attempt wrote.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from functions.interruption import handler as interruption_handler
from nodewright.adapters.idempotency import EventDeduplicator, event_key
from tests.controllers.test_interruption import World
from tests.functions.test_interruption_handler import TABLE, invoke, spot_warning, world

__all__ = ["world"]
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


class LostAnswers:
    """A DynamoDB client whose in-progress puts lose their answer `times` times: the item is
    written, then the same request is sent again (the SDK's retry) and its error raised.
    """

    def __init__(self, client: Any, times: int = 1) -> None:
        self._client = client
        self.times = times

    def put_item(self, **request: Any) -> Any:
        inprogress = request["Item"].get("status", {}).get("S") == "INPROGRESS"
        if inprogress and self.times > 0:
            self.times -= 1
            self._client.put_item(**request)
        return self._client.put_item(**request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_a_lost_answer_on_the_in_progress_write_does_not_fail_the_record(world: World) -> None:
    client = LostAnswers(boto3.client("dynamodb"))
    interruption_handler.configure(EventDeduplicator(world.controller.process, table=TABLE, client=client))
    world.spot_node(pods=3)
    world.cloud.mark_spot("i-spot-1")
    assert invoke(spot_warning("i-spot-1")) == {"batchItemFailures": []}
    assert client.times == 0, "the fault was injected"
    assert world.cluster.changes_of("node_cordoned")
    assert len(world.cluster.changes_of("pod_evicted")) == 3
    # Done once: the record is complete, so a redelivery acts no more.
    assert invoke(spot_warning("i-spot-1")) == {"batchItemFailures": []}
    assert world.observer.total("InterruptionsReceived") == 1


class TakenBefore(LostAnswers):
    """A DynamoDB client whose in-progress put finds the record already written by another
    invocation (another owner token): a real lock, which must still hold.
    """

    def put_item(self, **request: Any) -> Any:
        item = request["Item"]
        if item.get("status", {}).get("S") == "INPROGRESS" and self.times > 0:
            self.times -= 1
            self._client.put_item(TableName=request["TableName"], Item={**item, "owner": {"S": "another"}})
        return self._client.put_item(**request)


def test_a_record_another_invocation_holds_still_blocks(world: World) -> None:
    client = TakenBefore(boto3.client("dynamodb"))
    interruption_handler.configure(EventDeduplicator(world.controller.process, table=TABLE, client=client))
    world.spot_node(pods=3)
    response = invoke(spot_warning("i-spot-1"))
    assert client.times == 0
    assert len(response["batchItemFailures"]) == 1
    assert world.cluster.changes_of("node_cordoned") == []


def test_a_body_with_a_reused_id_is_a_different_event() -> None:
    event = spot_warning("i-spot-1")
    other = {**event, "detail": {**event["detail"], "instance-id": "i-spot-2"}}
    assert event_key(event) != event_key(other)
    assert event_key(event) == event_key(dict(event))
