"""Foreign instances and forged labels through the provisioner and consolidator handlers, over moto
and the API emulator: tags and labels anyone can write move nothing.

Real: functions/provisioner/handler.py and functions/consolidator/handler.py (Powertools
decorators), the provisioner's housekeeping (orphan collector, stale-node cleanup), the
consolidator's disruption pass, the EC2 adapter (`Ec2CloudProvider`: DescribeInstances by tag and
by id, TerminateInstances) and the DynamoDB state store on moto, the Kubernetes adapter
(`KubeCluster` over HTTP) against the API emulator serving the in-memory cluster. Faked: the
cluster behind the emulator, SSM's public parameters, time (a virtual clock ten minutes ahead of
the wall clock, so every instance moto launches is past the orphan collector's grace period).

The attacker can run instances in the account with the cluster tag (and any tag it likes) and
can label its own Node (a kubelet may). Observed: which instances EC2 still runs, which Nodes the
cluster still holds, and the decisions explaining what was left alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from functions.consolidator import handler as consolidator_handler
from nodewright.adapters.aws.ec2 import CLUSTER_TAG, NODECLAIM_TAG, NODEPOOL_TAG, Ec2CloudProvider
from nodewright.adapters.aws.state_store import DynamoStateStore
from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.disruption import Consolidator
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import StaticConfiguration
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model import labels as wk
from nodewright.model.cluster import ClusterInfo
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.resources import Resources
from tests.adapters.aws.fakes import PublicParameters
from tests.builders import node_pool, pod
from tests.controllers.test_provisioning import FixedCatalog
from tests.events.test_corpus import served_adapter

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

CLUSTER = ClusterInfo("my-cluster", "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com", "LS0tLS1CRUdJTi0t", "1.31")
PROFILE = "my-cluster-nodewright-node"
ZONE = "us-east-1a"


class Context:
    """The parts of a Lambda context the handlers and Powertools read."""

    memory_limit_in_mb = 1024
    aws_request_id = "0d9c3b1e-6f2a-4c8e-9d1b-7a5e3f2c1b0a"

    def __init__(self, function: str, seconds: float) -> None:
        self.function_name = f"nodewright-{function}"
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"
        self.seconds = seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(self.seconds * 1000)


@dataclass
class Account:
    """moto EC2 and DynamoDB, the served cluster, and the functions' controllers over them."""

    ec2: Any
    store: DynamoStateStore
    clock: VirtualClock
    cluster: InMemoryCluster
    kube: KubeCluster
    observer: RecordingObserver
    cloud: Ec2CloudProvider

    def provisioner(self) -> Provisioner:
        return build_provisioner(
            cluster=self.kube,
            cloud=self.cloud,
            store=self.store,
            clock=self.clock,
            config=StaticConfiguration((node_pool(),)),
            catalog=FixedCatalog(),
            observer=self.observer,
            sleep=self.clock.advance,
        )

    def run(self, tags: dict[str, str], profile: str = "") -> str:
        """An instance someone started in the account, with `tags` and instance profile `profile`."""
        listed = [{"Key": k, "Value": v} for k, v in tags.items()]
        reply = self.ec2.run_instances(
            ImageId="ami-12c6146b",
            InstanceType="m5.large",
            MinCount=1,
            MaxCount=1,
            Placement={"AvailabilityZone": ZONE},
            **({"TagSpecifications": [{"ResourceType": "instance", "Tags": listed}]} if listed else {}),
            **({"IamInstanceProfile": {"Name": profile}} if profile else {}),
        )
        return str(reply["Instances"][0]["InstanceId"])

    def ours(self, pods: int = 3) -> tuple[str, str, str]:
        """One of Nodewright's nodes: instance, claim record, Node and `pods` pods of 500m.
        Returns (instance id, claim name, node name)."""
        claim = "default-0a1b2c3d4e"
        instance_id = self.run({CLUSTER_TAG: CLUSTER.name, NODECLAIM_TAG: claim, NODEPOOL_TAG: "default"}, PROFILE)
        name = "ip-10-0-1-7.ec2.internal"
        provider_id = f"aws:///{ZONE}/{instance_id}"
        self.store.create_claim(
            NodeClaim(
                name=claim,
                nodepool="default",
                state="initialized",
                instance_type="m5.large",
                capacity_type="spot",
                zone=ZONE,
                price=0.04,
                instance_id=instance_id,
                provider_id=provider_id,
                node_name=name,
                created_at=self.clock.now() - 3600,
            )
        )
        self.node(name, provider_id, {wk.NW_NODECLAIM: claim}, cpu="2")
        for i in range(pods):
            self.cluster.bind(self.cluster.add_pod(pod(f"web-{i}", cpu="500m", labels={"app": "web"})), name)
        return instance_id, claim, name

    def node(self, name: str, provider_id: str, labels: dict[str, str], cpu: str = "1") -> None:
        """A registered, ready Node labelled as Nodewright labels its nodes (plus `labels`)."""
        capacity = Resources.of(cpu=cpu, memory="8Gi", pods=29)
        base = {
            wk.HOSTNAME: name,
            wk.NODEPOOL: "default",
            wk.NW_NODEPOOL: "default",
            wk.INSTANCE_TYPE: "m5.large",
            wk.CAPACITY_TYPE: "spot",
            wk.ZONE: ZONE,
        }
        self.cluster.add_node(
            Node(name, base | labels, capacity=capacity, allocatable=capacity, provider_id=provider_id, ready=True)
        )

    def state(self, instance_id: str) -> str:
        reply = self.ec2.describe_instances(InstanceIds=[instance_id])
        return str(reply["Reservations"][0]["Instances"][0]["State"]["Name"])


@pytest.fixture
def account(aws: None, dynamodb: Any) -> Iterator[Account]:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    iam = boto3.client("iam", region_name="us-east-1")
    for profile in (PROFILE, "someone-elses"):
        iam.create_instance_profile(InstanceProfileName=profile)
    clock = VirtualClock(time.time() + 600.0)
    cluster = InMemoryCluster(clock)
    server = ApiServer(cluster)
    kube = served_adapter(server)
    cloud = Ec2CloudProvider(ec2, PublicParameters(), CLUSTER, instance_profile=PROFILE, clock=clock)
    try:
        yield Account(ec2, DynamoStateStore(dynamodb, "state"), clock, cluster, kube, RecordingObserver(), cloud)
    finally:
        kube.close()
        server.stop()


@pytest.fixture
def provision(invoke: Callable[[Provisioner, str], dict[str, Any]]) -> Callable[[Account], dict[str, Any]]:
    """One provisioner handler invocation (its housekeeping included)."""
    return lambda account: invoke(account.provisioner(), "housekeeping-1")


FOREIGN = [
    pytest.param({}, "", "not a claim name the functions issue", id="cluster-tag-only"),
    pytest.param({NODECLAIM_TAG: "web-1"}, "", "not a claim name the functions issue", id="implausible-nodeclaim-tag"),
    pytest.param(
        {NODECLAIM_TAG: "default-0123456789", NODEPOOL_TAG: "default"},
        "someone-elses",
        "instance profile",
        id="plausible-nodeclaim-tag-naming-no-claim",
    ),
    pytest.param(
        {NODECLAIM_TAG: "default-0123456789", NODEPOOL_TAG: "default"},
        "",
        "instance profile",
        id="plausible-nodeclaim-tag-no-profile",
    ),
]


@pytest.mark.parametrize(("tags", "profile", "missing"), FOREIGN)
def test_the_provisioner_handler_never_terminates_a_foreign_instance_with_the_cluster_tag(
    account: Account, provision: Callable[[Account], dict[str, Any]], tags: dict[str, str], profile: str, missing: str
) -> None:
    ours, _, node = account.ours()
    foreign = account.run({CLUSTER_TAG: CLUSTER.name, **tags}, profile)
    report = provision(account)
    assert account.state(foreign) == "running"
    assert report["housekeeping"]["orphans"] == 0
    [left] = account.observer.of("orphan-left-alone")
    assert left["instance_id"] == foreign
    assert missing in str(left["missing"])
    assert account.observer.total("OrphansLeftAlone") == 1
    assert account.state(ours) == "running"
    assert account.cluster.get_node(node) is not None


def test_the_provisioner_handler_terminates_an_orphan_with_the_evidence_of_a_nodewright_launch(
    account: Account, provision: Callable[[Account], dict[str, Any]]
) -> None:
    account.ours()
    orphan = account.run(
        {CLUSTER_TAG: CLUSTER.name, NODECLAIM_TAG: "default-0123456789", NODEPOOL_TAG: "default"}, PROFILE
    )
    report = provision(account)
    assert report["housekeeping"]["orphans"] == 1
    assert account.state(orphan) in ("shutting-down", "terminated")


def test_a_kubelet_labelling_its_own_node_gets_it_neither_deleted_nor_its_instance_terminated(
    account: Account, provision: Callable[[Account], dict[str, Any]]
) -> None:
    ours, claim, _ = account.ours()
    theirs = account.run({})  # a managed node group's instance, say: no claim names it
    # Its kubelet labels the Node as Nodewright's, naming our real claim as well.
    account.node("theirs", f"aws:///{ZONE}/{theirs}", {wk.NW_NODECLAIM: claim})
    account.cluster.bind(account.cluster.add_pod(pod("their-pod", cpu="100m")), "theirs")
    # And a Node whose instance EC2 does not know at all, labelled the same way.
    account.node("ghost", f"aws:///{ZONE}/i-0123456789abcdef0", {})
    provision(account)
    assert account.cluster.get_node("theirs") is not None
    assert account.cluster.get_node("ghost") is not None
    assert account.state(theirs) == account.state(ours) == "running"
    assert account.cluster.lost_pods() == []


def test_the_consolidator_handler_does_not_take_a_node_labelled_with_a_real_claims_name_for_that_claim(
    account: Account,
) -> None:
    ours, claim, node = account.ours()
    theirs = account.run({})
    # An empty Node labelled with our claim's name: were it the claim's node, emptiness would
    # delete the claim and terminate the claim's instance, ours.
    account.node("impostor", f"aws:///{ZONE}/{theirs}", {wk.NW_NODECLAIM: claim})
    provisioner = account.provisioner()
    consolidator = Consolidator(
        cluster=account.kube,
        cloud=account.cloud,
        claim_records=account.store,
        command_records=account.store,
        leases=account.store,
        offering_blocks=account.store,
        clock=account.clock,
        config=StaticConfiguration((node_pool(),)),
        catalog=FixedCatalog(),
        observer=account.observer,
        launcher=provisioner,
        sleep=account.clock.advance,
    )
    consolidator_handler.configure(consolidator)
    try:
        for _ in range(3):  # decide, validate, act: three schedule ticks
            consolidator_handler.handler({}, Context("consolidator", 120.0))
    finally:
        consolidator_handler.configure(None)
    assert account.state(ours) == account.state(theirs) == "running"
    assert account.cluster.get_node("impostor") is not None
    assert account.cluster.get_node(node) is not None
    assert {c.name for c in account.store.claims()} == {claim}
    assert account.cluster.changes_of("node_cordoned") == []
    assert account.cluster.lost_pods() == []
