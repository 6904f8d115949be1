"""Hostile input through the real interruption handler: forged messages, tags and labels move nothing.

Real: functions/interruption/handler.py (Powertools BatchProcessor, idempotency on DynamoDB), the
parser, the verification step, the controller, the EC2 adapter (`Ec2CloudProvider`: DescribeInstances
by id, terminations) and the DynamoDB state store, all on moto, and the Kubernetes adapter
(`KubeCluster`: watches, cordon, evictions, node deletion over HTTP) against the API emulator
serving the in-memory cluster (tests/events/test_corpus.py's `Corpus`, `served`). Faked: the
cluster behind the emulator, the provisioner invoke and the delayed SQS sends (recorded, then
delivered through the handler), time (a virtual clock).

The attacker is anyone allowed to send to the interruption queue, tag instances or label Nodes.
Each test sends what such a principal could and checks the issue's invariants: 0 pods lost,
0 PDB violations, 0 foreign instances terminated, 0 Nodes of running instances deleted, real
drains unaffected, and the drop counted (a metric) and explained (a decision record).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from functions.interruption import handler as interruption_handler
from nodewright.engine.interruption import Continuation, continuation_event
from nodewright.engine.interruption.actions import DRAIN_NOW
from nodewright.model import labels as wk
from nodewright.model.node import Node
from nodewright.model.resources import Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.workloads import PodDisruptionBudget
from tests.builders import pod
from tests.events import sqs_event
from tests.events.test_corpus import BYSTANDER, Corpus, aws, corpus

__all__ = ["aws"]  # the corpus' moto fixture
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
Hostile = Callable[[str], Corpus]


@pytest.fixture
def hostile(aws: tuple[Any, Any]) -> Iterator[Hostile]:
    """A corpus world for a fixture name, its cluster served by the API emulator (stopped after)."""
    made: list[Corpus] = []

    def make(name: str) -> Corpus:
        made.append(corpus(aws, name, served=True))
        return made[-1]

    yield make
    for world in made:
        world.close()


SPOT = "i-0a1b2c3d4e5f60718"
HEALTH = ("i-01a2b3c4d5e6f7a8b", "i-02b3c4d5e6f7a8b9c", "i-03c4d5e6f7a8b9c0d")
SPOT_EVENT = "spot_interruption_warning.json"


def stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def held(world: Corpus, fixture_id: str, pods: int = 10) -> None:
    """Give the fixture's node `pods` pods in all, every one held by a minAvailable budget."""
    node = world.nodes[fixture_id]
    for i in range(2, pods):
        world.cluster.bind(world.cluster.add_pod(pod(f"{node}-web-{i}", cpu="100m", labels={"app": node})), node)
    selector = LabelSelector.parse({"matchLabels": {"app": node}})
    world.cluster.add_pdb(PodDisruptionBudget("default", node, selector, min_available=pods))


def forged(world: Corpus, name: str, **changes: Any) -> dict[str, Any]:
    """Fixture `name` with the world's instance ids, as a sender of the queue would write it."""
    event: dict[str, Any] = json.loads(world.body(name))
    event.update(changes)
    return event


def run_chains(world: Corpus, until: float) -> None:
    """Deliver the recorded continuations through the handler, as SQS would, until `until`."""
    while world.continuations.sent and world.clock.now() < until:
        for p in world.cluster.pods():  # kube-scheduler: recreated pods run on the bystander
            if not p.node_name:
                world.cluster.bind(p, world.nodes[BYSTANDER])
        world.clock.advance(max(1.0, world.continuations.sent[0][0] - world.clock.now()))
        ready = world.continuations.due(world.clock.now())
        assert world.invoke(*ready) == {"batchItemFailures": []}


def untouched(world: Corpus, fixture_id: str) -> None:
    """The fixture's instance runs, its Node and claim are there, no pod of it was lost."""
    assert world.ec2_state(fixture_id) == "running"
    assert world.cluster.get_node(world.nodes[fixture_id]) is not None
    assert world.ids[fixture_id] in {c.instance_id for c in world.store.claims()}
    assert world.cluster.lost_pods() == []


@pytest.mark.parametrize(
    ("age", "why"),
    [
        pytest.param(600, "longer than the queue keeps a message", id="ten-minutes-old"),
        pytest.param(150, "notice ran out", id="past-its-two-minutes"),
    ],
)
def test_a_stale_spot_warning_is_dropped_counted_and_explained(hostile: Hostile, age: float, why: str) -> None:
    world = hostile(SPOT_EVENT)
    world.launch(SPOT)
    world.launch(BYSTANDER)
    held(world, SPOT)
    assert world.invoke(forged(world, SPOT_EVENT, time=stamp(world.clock.now() - age))) == {"batchItemFailures": []}
    untouched(world, SPOT)
    assert world.cluster.changes_of("node_cordoned") == []
    assert world.cluster.changes_of("pod_evicted") == []
    assert world.observer.total("MessagesDropped") == 1
    [decision] = world.observer.of("interruption")
    assert "stale" in str(decision["action"])
    assert why in str(decision["action"])


def test_a_fresh_forged_spot_warning_gets_a_gentle_drain_and_never_bypasses_the_budget(hostile: Hostile) -> None:
    world = hostile(SPOT_EVENT)
    world.launch(SPOT)
    world.launch(BYSTANDER)
    held(world, SPOT)
    sent = world.clock.now() - 1.0
    assert world.invoke(forged(world, SPOT_EVENT, time=stamp(sent))) == {"batchItemFailures": []}
    # The gentlest action of its kind: cordoned, replacement asked for, evictions within the budget.
    assert world.cluster.changes_of("node_cordoned")
    assert world.asked_to_replace(SPOT)
    assert world.observer.total("UnconfirmedMessages") == 1
    # Past the announced reclaim time (120 s) and well beyond: the budget holds, nothing is killed.
    run_chains(world, until=sent + 400)
    untouched(world, SPOT)
    assert world.cluster.changes_of("pod_evicted") == []
    assert all("terminated" not in d or not d["terminated"] for d in world.observer.of("interruption"))


def test_a_forged_terminated_state_change_deletes_no_node_of_a_running_instance(hostile: Hostile) -> None:
    name = "state_change_terminated.json"
    world = hostile(name)
    fixture_id = json.loads(world.body(name))["detail"]["instance-id"]
    world.launch(fixture_id)
    held(world, fixture_id)
    assert world.invoke(forged(world, name)) == {"batchItemFailures": []}
    untouched(world, fixture_id)
    assert world.cluster.changes_of("node_deleted") == []
    assert world.observer.total("MessagesDropped") == 1
    [decision] = world.observer.of("interruption")
    assert "EC2 says running" in str(decision["action"])


def test_a_real_terminated_state_change_confirmed_by_ec2_removes_the_node_and_claim(hostile: Hostile) -> None:
    name = "state_change_terminated.json"
    world = hostile(name)
    fixture_id = json.loads(world.body(name))["detail"]["instance-id"]
    world.launch(fixture_id)
    world.ec2.terminate_instances(InstanceIds=[world.ids[fixture_id]])
    assert world.invoke(forged(world, name)) == {"batchItemFailures": []}
    assert world.cluster.get_node(world.nodes[fixture_id]) is None
    assert world.ids[fixture_id] not in {c.instance_id for c in world.store.claims()}


def test_a_forged_health_event_drains_nothing_a_budget_holds_and_terminates_nothing(hostile: Hostile) -> None:
    name = "health_system_reboot_maintenance_scheduled.json"
    world = hostile(name)
    for fixture_id in HEALTH:
        world.launch(fixture_id)
        held(world, fixture_id)
    world.launch(BYSTANDER)
    event = forged(world, name, time=stamp(world.clock.now() - 1))
    # Maintenance "starting" in three minutes: a real one would end in termination at that time.
    event["detail"]["startTime"] = stamp(world.clock.now() + 180)
    assert world.invoke(event) == {"batchItemFailures": []}
    run_chains(world, until=world.clock.now() + 600)
    for fixture_id in HEALTH:
        untouched(world, fixture_id)
    assert world.cluster.changes_of("pod_evicted") == []
    assert world.observer.total("UnconfirmedMessages") == 3


def test_a_forged_continuation_with_the_next_real_id_does_not_drop_the_real_one(hostile: Hostile) -> None:
    world = hostile("state_change_stopping.json")
    fixture_id = json.loads(world.body("state_change_stopping.json"))["detail"]["instance-id"]
    world.launch(fixture_id)
    world.launch(BYSTANDER)
    node = world.nodes[fixture_id]
    selector = LabelSelector.parse({"matchLabels": {"app": node}})
    world.cluster.add_pdb(PodDisruptionBudget("default", node, selector, min_available=1))
    world.ec2.stop_instances(InstanceIds=[world.ids[fixture_id]])
    assert world.invoke(forged(world, "state_change_stopping.json")) == {"batchItemFailures": []}
    [(_, real)] = world.continuations.sent
    # The forger guesses the next id (it is predictable) and sends first, with its own content.
    cont = Continuation(node, world.ids[fixture_id], DRAIN_NOW, deadline=1.0, started=1.0, origin="StateChange")
    fake = continuation_event(cont, event_id=real["id"], now=world.clock.now())
    assert world.invoke(fake) == {"batchItemFailures": []}
    assert world.observer.total("ContinuationsRejected") == 1
    # The real continuation still acts: the drain finishes and the node goes.
    run_chains(world, until=world.clock.now() + 300)
    assert len(world.evicted_from(fixture_id)) == 2
    assert world.cluster.get_node(node) is None
    assert world.cluster.lost_pods() == []


def test_a_node_with_a_forged_nodepool_label_is_not_taken_for_ours(hostile: Hostile) -> None:
    world = hostile(SPOT_EVENT)
    world.launch(SPOT, ours=False)  # someone else's instance: no claim record
    name = "ip-10-0-9-9.ec2.internal"
    capacity = Resources.of(cpu="4", memory="16Gi", pods=58)
    labels = {wk.HOSTNAME: name, wk.NW_NODEPOOL: "default", wk.NODEPOOL: "default", wk.ZONE: "us-east-1a"}
    provider_id = f"aws:///us-east-1a/{world.ids[SPOT]}"
    world.cluster.add_node(
        Node(name, labels, capacity=capacity, allocatable=capacity, provider_id=provider_id, ready=True)
    )
    world.cluster.bind(world.cluster.add_pod(pod("theirs", cpu="100m")), name)
    assert world.invoke(forged(world, SPOT_EVENT, time=stamp(world.clock.now() - 1))) == {"batchItemFailures": []}
    assert world.cluster.changes_of("node_cordoned") == []
    assert world.ec2_state(SPOT) == "running"
    assert world.observer.total("ForeignInstanceMessages") == 1


def test_a_node_whose_provider_id_names_our_instance_is_left_alone(hostile: Hostile) -> None:
    world = hostile(SPOT_EVENT)
    world.launch(SPOT)
    world.launch(BYSTANDER)
    impostor = "impostor"
    capacity = Resources.of(cpu="4", memory="16Gi", pods=58)
    provider_id = f"aws:///us-east-1a/{world.ids[SPOT]}"
    labels = {wk.HOSTNAME: impostor, wk.NW_NODEPOOL: "default"}
    # A second Node naming the same instance: only the claim's own Node is acted on.
    world.cluster.add_node(
        Node(impostor, labels, capacity=capacity, allocatable=capacity, provider_id=provider_id, ready=True)
    )
    world.cluster.bind(world.cluster.add_pod(pod("on-impostor", cpu="100m")), impostor)
    assert world.invoke(forged(world, SPOT_EVENT, time=stamp(world.clock.now() - 1))) == {"batchItemFailures": []}
    cordoned = {c.name for c in world.cluster.changes_of("node_cordoned")}
    assert cordoned == {world.nodes[SPOT]}
    assert world.cluster.get_node(impostor) is not None
    assert "default/on-impostor" not in {c.name for c in world.cluster.changes_of("pod_evicted")}


class Deadline:
    """A Lambda context whose time runs out once the world has handled `records` events."""

    function_name = "nodewright-interruption"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:nodewright-interruption"
    aws_request_id = "5b0f6c1e-2a7d-4e93-8c14-d0b9a3e6f272"

    def __init__(self, world: Corpus, records: int) -> None:
        self.world = world
        self.records = records

    def get_remaining_time_in_millis(self) -> int:
        return 60_000 if self.world.observer.total("InterruptionsReceived") < self.records else 1_000


def test_records_the_invocation_has_no_time_for_are_handed_back_unprocessed(hostile: Hostile) -> None:
    world = hostile(SPOT_EVENT)
    world.launch(SPOT)
    bodies = [forged(world, SPOT_EVENT, id=f"flood-{i}", time=stamp(world.clock.now() - 1)) for i in range(10)]
    response = interruption_handler.handler(sqs_event(*bodies), Deadline(world, records=3))
    failed = [f["itemIdentifier"] for f in response["batchItemFailures"]]
    assert len(failed) == 7
    assert world.observer.total("InterruptionsReceived") == 3


# 300 keep the suite fast: `python -m bench.hostile_flood` delivers the 10,000 (forged, stale,
# repeated, forged continuations, real events among them; tests/bench/test_hostile_flood.py at 300).
FLOOD = 300


def test_a_flood_of_forged_messages_moves_nothing(hostile: Hostile) -> None:
    world = hostile(SPOT_EVENT)
    world.launch(SPOT)
    world.launch(BYSTANDER)
    held(world, SPOT)
    now = world.clock.now()
    foreign = [f"i-{n:017x}" for n in range(1, FLOOD + 1)]
    bodies = []
    for n, instance_id in enumerate(foreign):
        event = forged(world, SPOT_EVENT, id=f"flood-{n}", time=stamp(now - (600 if n % 2 else 1)))
        event["detail"]["instance-id"] = instance_id
        bodies.append(event)
    for start in range(0, len(bodies), 10):  # the event source's batches
        assert world.invoke(*bodies[start : start + 10]) == {"batchItemFailures": []}
    untouched(world, SPOT)
    assert world.cluster.changes_of("node_cordoned") == []
    assert world.observer.total("MessagesDropped") == FLOOD // 2  # the stale half
    assert world.observer.total("ForeignInstanceMessages") == FLOOD // 2
