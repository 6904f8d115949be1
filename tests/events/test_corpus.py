"""The event corpus through the real interruption handler, over moto.

Each file in tests/events is one SQS body as the interruption queue receives it (the package
docstring says where the shapes come from); tests/events/malformed holds bodies that are not events.

Real: functions/interruption/handler.py (Powertools BatchProcessor, event-id idempotency on a
DynamoDB table), the parser, the controller, the EC2 adapter (`Ec2CloudProvider`: terminations)
and the DynamoDB state store (claims, blocked offerings), both on moto. Faked: the Kubernetes API
(the in-memory cluster), the provisioner invoke and the delayed SQS sends (recorded), time (a
virtual clock one second after the event's time).

Every instance an event names is launched in moto first (the fixture's id is replaced by moto's
in the body), as a node of ours with two pods, or as someone else's instance with no node. A
bystander node of ours that no event names must come through every event untouched.

The table says what becomes of each instance. It follows Karpenter's interruption controller
(aws/karpenter-provider-aws, pkg/controllers/interruption: every kind it parses deletes the
NodeClaim, i.e. cordon, drain, terminate; rebalance only records an event), except the rows
whose id ends in "-differs": docs/interruption.md says why Nodewright does otherwise there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from bench.harness.kube_manifests import DUMMY_CA
from functions.interruption import handler as interruption_handler
from nodewright.adapters.aws.ec2 import Ec2CloudProvider
from nodewright.adapters.aws.state_store import DynamoStateStore, create_table
from nodewright.adapters.idempotency import EventDeduplicator
from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.adapters.kube.store import KINDS
from nodewright.controllers.interruption import InterruptionController
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisionoptions import StaticConfiguration
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.inmemory.signals import RecordingContinuations, RecordingTrigger
from nodewright.model import labels as wk
from nodewright.model.cluster import ClusterInfo
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.resources import Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.workloads import PodDisruptionBudget
from nodewright.ports import Cluster
from tests.adapters.aws.fakes import PublicParameters
from tests.builders import node_pool, pod
from tests.events import EVENTS, sqs_event

# The emulator speaks plain HTTP: the CA is parsed, never used.
IDEMPOTENCY = "nodewright-idempotency"
STATE = "nodewright-state"
ZONE = "us-east-1a"
INSTANCE_TYPE = "m5.xlarge"
BYSTANDER = "i-0bb0bb0bb0bb0bb0b"
_INSTANCE = re.compile(r"\bi-[0-9a-f]{8,17}\b")
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

# What becomes of an instance an event names.
DRAINED = "cordoned, replacement asked for, drained, terminated; node and claim removed"
KEPT_DRAINED = "cordoned, replacement asked for, drained; node kept (CordonAndDrain)"
WAITING = "cordoned, replacement asked for; the drain waits for it (ReplaceThenDrain)"
CORDONED = "cordoned only"
REMOVED = "node and claim removed (the instance is gone already)"
UNTOUCHED = "ours, and left alone"
FOREIGN = "not ours: left alone, never terminated"


class Context:
    function_name = "nodewright-interruption"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:nodewright-interruption"
    aws_request_id = "5b0f6c1e-2a7d-4e93-8c14-d0b9a3e6f271"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def text_of(name: str) -> str:
    return (EVENTS / name).read_text()


def event_time(text: str) -> float:
    """The time of the event in `text` (inside an SNS notification too)."""
    event = json.loads(text)
    if "Message" in event:
        event = json.loads(event["Message"])
    return datetime.fromisoformat(event["time"]).timestamp()


@dataclass
class Corpus:
    """moto EC2 and DynamoDB, the in-memory cluster, and the controller the handler runs."""

    ec2: Any
    store: DynamoStateStore
    clock: VirtualClock
    policy: str = "ReplaceThenDrain"
    # True: the controller reaches the cluster through the Kubernetes adapter (`KubeCluster`) over
    # HTTP, the API emulator serving the in-memory cluster (`close()` stops it); else directly.
    served: bool = False
    ids: dict[str, str] = field(default_factory=dict)  # fixture instance id -> moto instance id
    nodes: dict[str, str] = field(default_factory=dict)  # fixture instance id -> node name

    def __post_init__(self) -> None:
        self.cluster = InMemoryCluster(self.clock, recreate_owned_pods=True)
        self.server: ApiServer | None = ApiServer(self.cluster) if self.served else None
        self.adapter: KubeCluster | None = None if self.server is None else served_adapter(self.server)
        kube: Cluster = self.cluster if self.adapter is None else self.adapter
        self.observer = RecordingObserver()
        self.trigger = RecordingTrigger(self.clock)
        self.continuations = RecordingContinuations(self.clock)
        cloud = Ec2CloudProvider(
            self.ec2,
            PublicParameters(),
            ClusterInfo("my-cluster", "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com", "LS0tLS1CRUdJTi0tLS0t", "1.31"),
            instance_profile="my-cluster-nodewright-node",
            clock=self.clock,
        )
        self.controller = InterruptionController(
            cluster=kube,
            claim_records=self.store,
            drain_records=self.store,
            offering_blocks=self.store,
            cloud=cloud,
            clock=self.clock,
            config=StaticConfiguration((node_pool(rebalance_policy=self.policy),)),
            observer=self.observer,
            continuations=self.continuations,
            provisioner=self.trigger,
        )
        interruption_handler.configure(EventDeduplicator(self.controller.process, table=IDEMPOTENCY))

    def launch(self, fixture_id: str, *, ours: bool = True, capacity_type: str = "spot") -> str:
        """An instance in moto standing for `fixture_id`; with `ours`, its claim, node and two pods."""
        reply = self.ec2.run_instances(
            ImageId="ami-0abcdef1234567890",
            InstanceType=INSTANCE_TYPE,
            MinCount=1,
            MaxCount=1,
            Placement={"AvailabilityZone": ZONE},
            # EC2 knows a spot instance as one: a spot warning for any other is not believed.
            **({"InstanceMarketOptions": {"MarketType": "spot"}} if capacity_type == "spot" else {}),
        )
        instance_id = str(reply["Instances"][0]["InstanceId"])
        self.ids[fixture_id] = instance_id
        if not ours:
            return instance_id
        name = f"ip-10-0-{len(self.nodes) + 1}-7.ec2.internal"
        self.nodes[fixture_id] = name
        pods = [f"{name}-web-{i}" for i in range(2)]
        provider_id = f"aws:///{ZONE}/{instance_id}"
        self.store.create_claim(
            NodeClaim(
                name=f"default-{instance_id[2:8]}",
                nodepool="default",
                state="initialized",
                instance_type=INSTANCE_TYPE,
                capacity_type=capacity_type,
                zone=ZONE,
                price=0.08,
                instance_id=instance_id,
                provider_id=provider_id,
                node_name=name,
                created_at=self.clock.now() - 3600,
                pods=tuple(f"default/{p}" for p in pods),
            )
        )
        capacity = Resources.of(cpu="4", memory="16Gi", pods=58)
        self.cluster.add_node(
            Node(
                name=name,
                labels={
                    wk.HOSTNAME: name,
                    wk.NODEPOOL: "default",
                    wk.NW_NODEPOOL: "default",
                    wk.INSTANCE_TYPE: INSTANCE_TYPE,
                    wk.ZONE: ZONE,
                    wk.CAPACITY_TYPE: capacity_type,
                },
                capacity=capacity,
                allocatable=capacity,
                provider_id=provider_id,
                ready=True,
            )
        )
        for p in pods:
            self.cluster.bind(self.cluster.add_pod(pod(p, cpu="500m", labels={"app": name})), name)
        return instance_id

    def close(self) -> None:
        """Close the adapter's watches and stop the API emulator, when served."""
        if self.adapter is not None:
            self.adapter.close()
        if self.server is not None:
            self.server.stop()

    def body(self, name: str) -> str:
        """Fixture `name` with each launched instance's id in place of the fixture's."""
        text = text_of(name)
        for fixture_id, instance_id in self.ids.items():
            text = text.replace(fixture_id, instance_id)
        return text

    def invoke(self, *bodies: str | dict[str, Any]) -> dict[str, Any]:
        return interruption_handler.handler(sqs_event(*bodies), Context())

    def ec2_state(self, fixture_id: str) -> str:
        reply = self.ec2.describe_instances(InstanceIds=[self.ids[fixture_id]])
        return str(reply["Reservations"][0]["Instances"][0]["State"]["Name"])

    def evicted_from(self, fixture_id: str) -> set[str]:
        prefix = f"default/{self.nodes[fixture_id]}-web-"
        return {c.name for c in self.cluster.changes_of("pod_evicted") if c.name.startswith(prefix)}

    def asked_to_replace(self, fixture_id: str) -> bool:
        return any(self.nodes[fixture_id] in reason for _, reason in self.trigger.requests)

    def finish_drains(self, *fixture_ids: str) -> None:
        """Deliver, once due, the continuations sent for these instances' drains: a step that
        evicted pods leaves the termination to its successor (intent before effects), which the
        queue hands back seconds later.
        """
        instances = {self.ids[i] for i in fixture_ids}
        for due, event in sorted(self.continuations.sent, key=lambda item: item[0]):
            if event["detail"]["instance-id"] in instances:
                self.clock.advance_to(max(due, self.clock.now()))
                assert self.invoke(event) == {"batchItemFailures": []}

    def continued(self, fixture_id: str) -> bool:
        return any(event["detail"]["instance-id"] == self.ids[fixture_id] for _, event in self.continuations.sent)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        dynamodb = boto3.client("dynamodb")
        dynamodb.create_table(
            TableName=IDEMPOTENCY,
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        create_table(dynamodb, STATE)
        try:
            yield boto3.client("ec2"), dynamodb
        finally:
            interruption_handler.configure(None)


def corpus(aws: tuple[Any, Any], name: str, policy: str = "ReplaceThenDrain", *, served: bool = False) -> Corpus:
    ec2, dynamodb = aws
    clock = VirtualClock(event_time(text_of(name)) + 1.0)
    return Corpus(ec2, DynamoStateStore(dynamodb, STATE), clock, policy=policy, served=served)


def served_adapter(server: ApiServer) -> KubeCluster:
    """Start `server` and return the Kubernetes adapter reaching it over HTTP. Its barrier waits,
    before each read, until the watches delivered the emulator's latest change of every kind, so
    what a test wrote to the in-memory cluster is what the handler reads.
    """
    server.start()
    info = ClusterInfo("emulated", server.url, DUMMY_CA, "1.31")
    return KubeCluster.connect(
        from_cluster_info(info, lambda: "token"),
        barrier=lambda: {kind: server.latest(kind) for kind in KINDS},
    )


# --- the corpus, event by event -------------------------------------------------------------------

SPOT_1 = "i-0a1b2c3d4e5f60718"
REBALANCED = "i-0f9e8d7c6b5a40312"
STOPPED = "i-04c5d6e7f8a9b0c1d"
REBOOTED = ("i-0b1c2d3e4f5a69788", "i-0d3e4f5a6b7c8d9e0")
CORPUS = [
    # EC2 Spot Instance Interruption Warning: whatever instance-action, the node goes; the offering
    # is blocked (Karpenter marks it unavailable in its ICE cache).
    pytest.param("spot_interruption_warning.json", "ReplaceThenDrain", {SPOT_1: DRAINED}, True, id="spot-warning"),
    pytest.param(
        "spot_interruption_warning_hibernate.json", "ReplaceThenDrain", {"i-07a8b9c0d1e2f3a4b": DRAINED}, True,
        id="spot-warning-hibernate",
    ),
    pytest.param(
        "spot_interruption_warning_not_ours.json", "ReplaceThenDrain", {"i-0fedcba9876543210": FOREIGN}, False,
        id="spot-warning-for-an-instance-not-ours",
    ),
    pytest.param(
        "sns_spot_interruption_warning.json", "ReplaceThenDrain", {"i-0c9d8e7f6a5b4c3d2": DRAINED}, True,
        id="spot-warning-wrapped-by-sns-differs",
    ),
    # EC2 Instance Rebalance Recommendation: Karpenter only records an event (Ignore).
    pytest.param("rebalance_recommendation.json", "Ignore", {REBALANCED: UNTOUCHED}, False, id="rebalance-ignore"),
    pytest.param(
        "rebalance_recommendation.json", "Cordon", {REBALANCED: CORDONED}, False, id="rebalance-cordon-differs"
    ),
    pytest.param(
        "rebalance_recommendation.json", "CordonAndDrain", {REBALANCED: KEPT_DRAINED}, False,
        id="rebalance-cordon-and-drain-differs",
    ),
    pytest.param(
        "rebalance_recommendation.json", "ReplaceThenDrain", {REBALANCED: WAITING}, False,
        id="rebalance-replace-then-drain-default-differs",
    ),
    # EC2 Instance State-change Notification: Karpenter acts on stopping, stopped, shutting-down
    # and terminated (the rule delivers only those), and parses pending/running as no-ops.
    pytest.param(
        "state_change_pending.json", "ReplaceThenDrain", {"i-0e5d4c3b2a1f09876": UNTOUCHED}, False, id="state-pending"
    ),
    pytest.param(
        "state_change_running.json", "ReplaceThenDrain", {"i-0123456789abcdef0": UNTOUCHED}, False, id="state-running"
    ),
    pytest.param("state_change_stopping.json", "ReplaceThenDrain", {STOPPED: DRAINED}, False, id="state-stopping"),
    pytest.param("state_change_stopped.json", "ReplaceThenDrain", {STOPPED: DRAINED}, False, id="state-stopped"),
    pytest.param(
        "state_change_shutting_down.json", "ReplaceThenDrain", {SPOT_1: DRAINED}, False, id="state-shutting-down"
    ),
    pytest.param(
        "state_change_terminated.json", "ReplaceThenDrain", {SPOT_1: REMOVED}, False, id="state-terminated-differs"
    ),
    # EC2 Capacity Reservation Instance Interruption Warning (both detail-types the EC2 guide prints).
    pytest.param(
        "capacity_reservation_interruption.json", "ReplaceThenDrain", {"i-06f1e2d3c4b5a6978": DRAINED}, False,
        id="capacity-reservation-warning",
    ),
    pytest.param(
        "capacity_reservation_interruption_interruptible.json", "ReplaceThenDrain", {"i-0c3b2a1f0e9d8c7b6": DRAINED},
        False, id="interruptible-capacity-reservation-warning-with-a-bare-resource-arn",
    ),
    # AWS Health scheduled changes for EC2: every affected instance, whatever the event type code.
    pytest.param(
        "health_scheduled_change.json", "ReplaceThenDrain", dict.fromkeys(REBOOTED, DRAINED), False,
        id="health-instance-reboot-maintenance-two-instances",
    ),
    pytest.param(
        "health_instance_stop_scheduled.json", "ReplaceThenDrain",
        {
            "i-0a9b8c7d6e5f40312": DRAINED,
            "i-0b8c7d6e5f4a30291": DRAINED,
            "i-0c7d6e5f4a3b20180": UNTOUCHED,  # its entity status is RESOLVED
            "i-0d6e5f4a3b2c1f0e9": FOREIGN,
        },
        False, id="health-instance-stop-mixed-entities-differs",
    ),
    pytest.param(
        "health_instance_retirement_scheduled.json", "ReplaceThenDrain",
        {"i-0e5f4a3b2c1d0e9f8": DRAINED, "i-0f4a3b2c1d0e9f8a7": DRAINED}, False,
        id="health-instance-retirement-open",
    ),
    pytest.param(
        "health_system_reboot_maintenance_scheduled.json", "ReplaceThenDrain",
        dict.fromkeys(("i-01a2b3c4d5e6f7a8b", "i-02b3c4d5e6f7a8b9c", "i-03c4d5e6f7a8b9c0d"), DRAINED), False,
        id="health-system-reboot-maintenance-three-instances",
    ),
    pytest.param(
        "health_system_maintenance_event.json", "ReplaceThenDrain",
        {"i-04d5e6f7a8b9c0d1e": DRAINED, "i-05e6f7a8b9c0d1e2f": DRAINED}, False,
        id="health-system-maintenance-older-shape-without-scope-or-status",
    ),
    pytest.param(
        "health_scheduled_change_closed.json", "ReplaceThenDrain", dict.fromkeys(REBOOTED, UNTOUCHED), False,
        id="health-closed-resolved-differs",
    ),
    pytest.param(
        "health_scheduled_change_closed_entities_pending.json", "ReplaceThenDrain",
        dict.fromkeys(REBOOTED, UNTOUCHED), False, id="health-closed-entities-still-pending-differs",
    ),
    pytest.param("health_public_event.json", "ReplaceThenDrain", {}, False, id="health-public-event"),
    # Capacity Block expiration warning (both names the EC2 guide prints): it names the block, not
    # instances; the nodes labelled with it are drained (tests/controllers/test_capacity_block_end.py).
    pytest.param("capacity_block_expiration_warning.json", "ReplaceThenDrain", {}, False, id="capacity-block-ends"),
    pytest.param(
        "capacity_block_expiration_warning_short.json", "ReplaceThenDrain", {}, False, id="capacity-block-ends-short"
    ),
    pytest.param("health_dedicated_host_retirement.json", "ReplaceThenDrain", {}, False, id="health-host-not-instance"),
    pytest.param("health_other_service.json", "ReplaceThenDrain", {}, False, id="health-rds-event"),
]  # fmt: skip


def _prepare(world: Corpus, name: str, expected: dict[str, str]) -> None:
    # Instances of a capacity reservation are on-demand capacity (Karpenter labels them reserved).
    capacity_type = "on-demand" if name.startswith("capacity_reservation") else "spot"
    for fixture_id, outcome in expected.items():
        world.launch(fixture_id, ours=outcome != FOREIGN, capacity_type=capacity_type)
    world.launch(BYSTANDER)
    # A state change reports what EC2 already did: put the instance in that state first.
    state = json.loads(text_of(name)).get("detail", {}).get("state", "") if name.startswith("state_") else ""
    named = [world.ids[i] for i in expected]
    if state in ("stopping", "stopped"):
        world.ec2.stop_instances(InstanceIds=named)
    elif state in ("shutting-down", "terminated"):
        world.ec2.terminate_instances(InstanceIds=named)


@pytest.mark.parametrize(("name", "policy", "expected", "blocked"), CORPUS)
def test_each_event_acts_on_every_named_instance_of_ours_as_karpenter_does(
    aws: tuple[Any, Any], name: str, policy: str, expected: dict[str, str], blocked: bool
) -> None:
    world = corpus(aws, name, policy)
    _prepare(world, name, expected)
    in_fixture = set(_INSTANCE.findall(text_of(name)))
    assert set(expected) <= in_fixture, "the table names only instances of the event"
    before = {fixture_id: world.ec2_state(fixture_id) for fixture_id in world.ids}

    response = world.invoke(world.body(name))

    assert response == {"batchItemFailures": []}
    assert world.observer.of("interruption-malformed") == []
    world.finish_drains(*(i for i, outcome in expected.items() if outcome == DRAINED))
    for fixture_id, outcome in {**expected, BYSTANDER: UNTOUCHED}.items():
        _expect(world, fixture_id, outcome, before[fixture_id])
    offering = ("spot", INSTANCE_TYPE, ZONE)
    assert (offering in world.store.blocked_offerings(world.clock.now())) is blocked
    # Pods die with an instance that is gone already; any other node was emptied before it went.
    gone = tuple(f"default/{world.nodes[i]}-" for i, outcome in expected.items() if outcome == REMOVED)
    assert [p for p in world.cluster.lost_pods() if not p.startswith(gone)] == []


def _expect(world: Corpus, fixture_id: str, outcome: str, ec2_before: str) -> None:
    node = world.cluster.get_node(world.nodes[fixture_id]) if fixture_id in world.nodes else None
    claims = {c.instance_id for c in world.store.claims()}
    instance_id = world.ids[fixture_id]
    if outcome == FOREIGN:
        assert world.ec2_state(fixture_id) == ec2_before == "running"
        return
    evicted = world.evicted_from(fixture_id)
    two = {f"default/{world.nodes[fixture_id]}-web-{i}" for i in range(2)}
    if outcome == DRAINED:
        assert evicted == two
        assert node is None
        assert instance_id not in claims
        assert world.ec2_state(fixture_id) in ("shutting-down", "terminated")
        assert world.asked_to_replace(fixture_id)
    elif outcome == KEPT_DRAINED:
        assert evicted == two
        assert node is not None
        assert node.unschedulable
        assert world.ec2_state(fixture_id) == "running"
        assert world.asked_to_replace(fixture_id)
    elif outcome == WAITING:
        assert evicted == set()
        assert node is not None
        assert node.unschedulable
        assert world.asked_to_replace(fixture_id)
        assert world.continued(fixture_id)
        assert world.ec2_state(fixture_id) == "running"
    elif outcome == CORDONED:
        assert evicted == set()
        assert node is not None
        assert node.unschedulable
        assert not world.asked_to_replace(fixture_id)
        assert world.ec2_state(fixture_id) == "running"
    elif outcome == REMOVED:
        assert node is None
        assert instance_id not in claims
        assert not world.asked_to_replace(fixture_id)
    else:
        assert outcome == UNTOUCHED
        assert evicted == set()
        assert node is not None
        assert not node.unschedulable
        assert instance_id in claims
        assert not world.asked_to_replace(fixture_id)
        assert world.ec2_state(fixture_id) == ec2_before


def test_the_table_covers_every_event_in_the_corpus() -> None:
    names = {p.name for p in EVENTS.glob("*.json")} - {"sqs_envelope.json"}
    assert names == {str(param.values[0]) for param in CORPUS}


def test_a_health_event_drains_every_instance_and_their_continuations_do_not_collide(aws: tuple[Any, Any]) -> None:
    """A PDB lets one pod per node go at a time: each node's drain continues in later invocations,
    through the handler's idempotency, until the evicted pods run elsewhere.
    """
    name = "health_system_reboot_maintenance_scheduled.json"
    world = corpus(aws, name)
    affected = ("i-01a2b3c4d5e6f7a8b", "i-02b3c4d5e6f7a8b9c", "i-03c4d5e6f7a8b9c0d")
    for fixture_id in affected:
        world.launch(fixture_id)
        app = world.nodes[fixture_id]
        selector = LabelSelector.parse({"matchLabels": {"app": app}})
        world.cluster.add_pdb(PodDisruptionBudget("default", app, selector, min_available=1))
    world.launch(BYSTANDER)
    bystander = world.nodes[BYSTANDER]

    assert world.invoke(world.body(name)) == {"batchItemFailures": []}
    assert all(len(world.evicted_from(f)) == 1 for f in affected)
    ids = [event["id"] for _, event in world.continuations.sent]
    assert len(ids) == len(set(ids)) == 3

    for _ in range(20):
        if not world.continuations.sent:
            break
        for p in world.cluster.pods():  # kube-scheduler: the recreated pods run on the bystander
            if not p.node_name:
                world.cluster.bind(p, bystander)
        world.clock.advance(max(1.0, world.continuations.sent[0][0] - world.clock.now()))
        ready = world.continuations.due(world.clock.now())
        assert world.invoke(*ready) == {"batchItemFailures": []}
    for fixture_id in affected:
        _expect(world, fixture_id, DRAINED, "running")
    _expect(world, BYSTANDER, UNTOUCHED, "running")


def test_the_same_event_through_sns_and_redelivered_acts_once(aws: tuple[Any, Any]) -> None:
    name = "sns_spot_interruption_warning.json"
    world = corpus(aws, name)
    world.launch("i-0c9d8e7f6a5b4c3d2")
    body = world.body(name)

    assert world.invoke(body, body) == {"batchItemFailures": []}
    assert world.invoke(body) == {"batchItemFailures": []}

    assert world.observer.total("InterruptionsReceived") == 1
    assert len(world.trigger.requests) == 1


# --- bodies that are not events --------------------------------------------------------------------

MALFORMED = [
    pytest.param("empty.txt", "body is not JSON", id="empty"),
    pytest.param("not_json.txt", "body is not JSON", id="text"),
    pytest.param("truncated.txt", "body is not JSON", id="truncated"),
    pytest.param("json_array.txt", "body is JSON list, not an object", id="array"),
    pytest.param("json_string.txt", "body is JSON str, not an object", id="encoded-twice"),
    pytest.param("no_id.txt", "event has no 'id'", id="no-id"),
    pytest.param("detail_not_object.txt", "'detail' is not an object", id="detail-string"),
    pytest.param("instance_id_number.txt", "detail.instance-id is not a string", id="instance-id-number"),
    pytest.param("time_not_iso.txt", "event 'time' is not ISO-8601", id="time-rfc1123"),
    pytest.param("state_change_without_state.txt", "detail.state is missing", id="state-missing"),
    pytest.param("nan_in_detail.txt", "NaN is not a JSON number", id="nan"),
    pytest.param("health_entities_not_a_list.txt", "detail.affectedEntities is not a list", id="entities-object"),
    pytest.param("sns_message_not_json.txt", "SNS notification 'Message' is not JSON", id="sns-message-text"),
    pytest.param("sns_inside_sns.txt", "event has no 'id'", id="sns-inside-sns"),
]


@pytest.mark.parametrize(("file", "words"), MALFORMED)
def test_a_malformed_body_is_acknowledged_and_its_fault_logged(aws: tuple[Any, Any], file: str, words: str) -> None:
    world = corpus(aws, "spot_interruption_warning.json")
    world.launch(SPOT_1)
    before = world.ec2_state(SPOT_1)

    response = world.invoke((EVENTS / "malformed" / file).read_text())

    assert response == {"batchItemFailures": []}  # retrying could not help
    [logged] = world.observer.of("interruption-malformed")
    assert words in str(logged["error"])
    assert world.observer.total("MalformedMessages") == 1
    _expect(world, SPOT_1, UNTOUCHED, before)


def test_every_malformed_body_in_the_corpus_has_a_row() -> None:
    assert {p.name for p in (EVENTS / "malformed").iterdir()} == {str(param.values[0]) for param in MALFORMED}


def test_malformed_bodies_in_a_batch_do_not_stop_the_events_beside_them(aws: tuple[Any, Any]) -> None:
    world = corpus(aws, "spot_interruption_warning.json")
    world.launch(SPOT_1)
    bodies = [(EVENTS / "malformed" / str(param.values[0])).read_text() for param in MALFORMED[:9]]

    response = world.invoke(*bodies[:4], world.body("spot_interruption_warning.json"), *bodies[4:])

    assert response == {"batchItemFailures": []}
    assert world.observer.total("MalformedMessages") == 9
    world.finish_drains(SPOT_1)
    _expect(world, SPOT_1, DRAINED, "running")
