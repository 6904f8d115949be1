"""Drain continuations are authenticated by the state table, end to end through the Lambda handler.

Real: the interruption handler with its Powertools decorators, BatchProcessor and idempotency
table, the parser, the controller, and the DynamoDB state store on a state table (both tables in
moto). Faked: the Kubernetes API (in-memory cluster), EC2 (the fake cloud), the provisioner invoke
and the delayed SQS sends (recorded), time (a virtual clock).

Observed: what a continuation does to the cluster and the cloud (cordons, evictions, deleted
nodes, terminated instances), the drain record in the state table, and the decision records.
A forged message is one written by someone allowed to send to the queue: it has the shape of a
real continuation, but no drain record of the function admits it.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from functions.interruption import handler as interruption_handler
from nodewright.adapters.aws.state_store import DynamoStateStore, create_table
from nodewright.engine.interruption import SPOT_INTERRUPTION, Continuation, continuation_event
from nodewright.engine.interruption.actions import DRAIN_NOW
from tests.controllers.test_interruption import START, World, _pdb
from tests.events import sqs_event
from tests.functions.test_interruption_handler import Context, spot_warning, world

STATE_TABLE = "nodewright-state"
__all__ = ["world"]  # the handler tests' fixture, extended below
REJECTED = "interruption-continuation-rejected"
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


@pytest.fixture
def dynamo_world(world: World) -> World:
    """The handler tests' world (inside moto, idempotency table made), its state in DynamoDB."""
    client = boto3.client("dynamodb")
    create_table(client, STATE_TABLE)
    store = DynamoStateStore(client, STATE_TABLE)
    world.store = world.controller.store = store  # type: ignore[assignment]
    world.deliver_continuations = False
    return world


def invoke(body: dict[str, Any]) -> dict[str, Any]:
    # Through JSON and an SQS envelope, as the queue delivers it.
    return interruption_handler.handler(sqs_event(json.loads(json.dumps(body))), Context())


def forged(node: str, instance_id: str, *, deadline: float, event_id: str = "forged-1") -> dict[str, Any]:
    """A continuation as anyone allowed to send to the queue could write it: drain now, deadline past."""
    cont = Continuation(
        node=node,
        instance_id=instance_id,
        drain=DRAIN_NOW,
        deadline=deadline,
        started=START - 600,
        origin=SPOT_INTERRUPTION,
    )
    return continuation_event(cont, event_id=event_id, now=START)


def effects(world: World) -> dict[str, int]:
    return {kind: len(world.cluster.changes_of(kind)) for kind in ("node_cordoned", "pod_evicted", "node_deleted")} | {
        "terminated": sum(1 for i in world.cloud.instances() if i.state != "running")
    }


def run_chain(world: World, limit: int = 60) -> list[dict[str, Any]]:
    """Deliver the recorded continuations as SQS would, until the chain ends; returns them."""
    delivered: list[dict[str, Any]] = []
    while world.continuations.sent and len(delivered) < limit:
        due, _event = world.continuations.sent[0]
        world.tick(max(1.0, due - world.clock.now()))
        for ready in world.continuations.due(world.clock.now()):
            assert invoke(ready) == {"batchItemFailures": []}
            delivered.append(ready)
    return delivered


def test_a_forged_continuation_for_a_node_nobody_drains_has_no_effect(dynamo_world: World) -> None:
    world = dynamo_world
    world.spot_node(pods=4)
    before = effects(world)
    assert invoke(forged("spot-1", "i-spot-1", deadline=START - 1)) == {"batchItemFailures": []}
    assert effects(world) == before == {"node_cordoned": 0, "pod_evicted": 0, "node_deleted": 0, "terminated": 0}
    assert world.cluster.get_node("spot-1") is not None
    assert world.continuations.sent == []
    [rejected] = world.observer.of(REJECTED)
    assert rejected["instance_id"] == "i-spot-1"
    assert str(rejected["reason"]).startswith("no drain record")


def test_a_forged_continuation_cannot_cut_a_real_drain_short(dynamo_world: World) -> None:
    world = dynamo_world
    # A PDB holds the drain open, so a real chain is in flight; the forgery names the same node
    # and instance with its deadline already past, which would terminate the node at once.
    world.spot_node(pods=4)
    world.cluster.add_pdb(_pdb("web", "web", min_available=3))
    invoke(spot_warning("i-spot-1"))
    assert world.store.drain_record("i-spot-1", world.clock.now()) is not None
    before = effects(world)
    assert invoke(forged("spot-1", "i-spot-1", deadline=START - 1, event_id="forged-2")) == {"batchItemFailures": []}
    assert effects(world) == before
    assert world.cluster.get_node("spot-1") is not None
    assert "does not match the drain record" in str(world.observer.of(REJECTED)[0]["reason"])
    # The real chain is untouched and finishes the drain.
    run_chain(world)
    assert len(world.cluster.changes_of("pod_evicted")) == 4
    assert world.cluster.get_node("spot-1") is None
    assert world.cluster.lost_pods() == []


def test_the_drain_record_is_removed_when_the_drain_ends_and_a_late_copy_is_dropped(dynamo_world: World) -> None:
    world = dynamo_world
    world.spot_node(pods=4)
    world.cluster.add_pdb(_pdb("web", "web", min_available=3))
    invoke(spot_warning("i-spot-1"))
    record = world.store.drain_record("i-spot-1", world.clock.now())
    assert record is not None
    assert record.node == "spot-1"
    # It outlives the next message's delay and its retries, and no more: TTL cleans up a dead chain.
    assert world.clock.now() + 900 < record.expires <= world.clock.now() + 900 + 3600
    delivered = run_chain(world)
    assert len(delivered) >= 2
    assert world.store.drain_record("i-spot-1", world.clock.now()) is None
    assert world.observer.of(REJECTED) == []
    # A copy of the last message arriving after the end (SQS delivers at least once; a new id
    # gets past the deduplication) finds no record: it is dropped, and dropping it twice is fine.
    last = dict(delivered[-1], id="late-copy")
    terminated = effects(world)
    assert invoke(last) == {"batchItemFailures": []}
    assert invoke(dict(last, id="late-copy-2")) == {"batchItemFailures": []}
    assert effects(world) == terminated
    assert len(world.observer.of(REJECTED)) == 2
