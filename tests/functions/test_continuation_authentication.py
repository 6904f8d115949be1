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

import copy
import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from bench.harness.cluster_actors import pdb
from functions.interruption import handler as interruption_handler
from nodewright.adapters.aws.state_store import DynamoStateStore, create_table
from nodewright.engine.interruption import SPOT_INTERRUPTION, Continuation, continuation_event, parse
from nodewright.engine.interruption.actions import DRAIN_NOW
from nodewright.ports import DrainRecord
from tests.controllers.test_interruption import START, World
from tests.events import load, sqs_event
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
    world.store = store  # type: ignore[assignment]
    controller = world.controller
    controller.claim_records = controller.drain_records = controller.offering_blocks = store
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


def chain_of(event: dict[str, Any]) -> str:
    """The drain chain a continuation event belongs to (the key of its record)."""
    cont = parse(json.loads(json.dumps(event))).continuation
    assert cont is not None
    fields = (cont.instance_id, cont.node, cont.drain, cont.deadline, cont.started, cont.origin, cont.replace_by)
    return DrainRecord(*fields, expires=0.0).chain


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
    # A PDB holds the drain open, so a real chain is in flight. The forgery is the strongest there
    # is: a copy of the real pending continuation (same node, instance, origin and start, as if
    # its sender had read it) with the deadline moved into the past, which would terminate at once.
    world.spot_node(pods=4)
    world.cluster.add_pdb(pdb("web", "web", min_available=3))
    invoke(spot_warning("i-spot-1"))
    (_, real) = world.continuations.sent[0]
    assert world.store.drain_record(chain_of(real), world.clock.now()) is not None
    forgery = copy.deepcopy(real)
    forgery["id"] = "forged-2"
    forgery["detail"]["deadline"] = START - 1
    before = effects(world)
    assert invoke(forgery) == {"batchItemFailures": []}
    assert effects(world) == before
    assert world.cluster.get_node("spot-1") is not None
    assert "does not match its drain record" in str(world.observer.of(REJECTED)[0]["reason"])
    # The real chain is untouched and finishes the drain.
    run_chain(world)
    assert len(world.cluster.changes_of("pod_evicted")) == 4
    assert world.cluster.get_node("spot-1") is None
    assert world.cluster.lost_pods() == []


def test_the_drain_record_is_removed_when_the_drain_ends_and_a_late_copy_is_dropped(dynamo_world: World) -> None:
    world = dynamo_world
    world.spot_node(pods=4)
    world.cluster.add_pdb(pdb("web", "web", min_available=3))
    invoke(spot_warning("i-spot-1"))
    chain = chain_of(world.continuations.sent[0][1])
    record = world.store.drain_record(chain, world.clock.now())
    assert record is not None
    assert record.node == "spot-1"
    # It outlives the next message's delay and its retries, and no more: TTL cleans up a dead chain.
    assert world.clock.now() + 900 < record.expires <= world.clock.now() + 900 + 3600
    delivered = run_chain(world)
    assert len(delivered) >= 2
    assert world.store.drain_record(chain, world.clock.now()) is None
    assert world.observer.of(REJECTED) == []
    # A copy of the last message arriving after the end (SQS delivers at least once; a new id
    # gets past the deduplication) finds no record: it is dropped, and dropping it twice is fine.
    last = dict(delivered[-1], id="late-copy")
    terminated = effects(world)
    assert invoke(last) == {"batchItemFailures": []}
    assert invoke(dict(last, id="late-copy-2")) == {"batchItemFailures": []}
    assert effects(world) == terminated
    assert len(world.observer.of(REJECTED)) == 2


def rebalance(instance_id: str) -> dict[str, Any]:
    event = load("rebalance_recommendation")
    event["detail"]["instance-id"] = instance_id
    event["resources"] = [f"arn:aws:ec2:us-east-1:123456789012:instance/{instance_id}"]
    event["time"] = datetime.fromtimestamp(START, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return event


def test_a_later_event_for_the_same_instance_does_not_silence_the_running_drain(dynamo_world: World) -> None:
    # Delivered out of order: the spot warning's forced drain is running when the gentler
    # rebalance drain starts. Each chain has its own record, so the warning still ends the node.
    world = dynamo_world
    world.spot_node(pods=4)
    world.cluster.add_pdb(pdb("web", "web", min_available=3))
    invoke(spot_warning("i-spot-1"))
    invoke(rebalance("i-spot-1"))
    chains = {chain_of(event) for _, event in world.continuations.sent}
    assert len(chains) == 2
    run_chain(world)
    assert world.observer.of(REJECTED) == []
    assert world.cluster.get_node("spot-1") is None
    assert all(world.store.drain_record(chain, world.clock.now()) is None for chain in chains)
