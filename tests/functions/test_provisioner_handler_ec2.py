"""The provisioner Lambda handler with the real EC2 adapter, against moto.

Faked: EC2 and DynamoDB by moto (`mock_aws`: a VPC with subnets tagged for discovery in three
zones, a security group, moto's public AMIs; CreateFleet `instant`, DescribeInstances); SSM's
public EKS AMI parameters by `PublicParameters` (moto refuses to store /aws/service/ names); the
Kubernetes API by the in-memory cluster; time by a virtual clock the loop's sleep advances.
Real: the handler with its Powertools decorators, the controller, the solver, `Ec2CloudProvider`
(NodeClass resolution, launch templates, user data, CreateFleet) and `DynamoStateStore`.
Input: the examples (1,000 pending pods), and the plan `nodewright plan -f examples/` prints.
Observed: the instances moto holds (types, capacity types, zones, AMIs, tags), the claim records,
and the claims' states as nodes register.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from nodewright.adapters.aws.ec2 import Ec2CloudProvider
from nodewright.adapters.aws.nodeclass_resolver import alias_parameters
from nodewright.adapters.aws.state_store import DynamoStateStore
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model import labels as wk
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.cluster import ClusterInfo
from nodewright.model.node import Node
from nodewright.model.nodeclass import AMIAlias, EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from nodewright.model.resources import Resources
from nodewright.ports import Configuration
from tests.adapters.aws.fakes import IdempotentEc2, PublicParameters, amazon_images, create_network
from tests.functions.conftest import ZONES

if TYPE_CHECKING:
    from tests.functions.conftest import ExamplePlan

# The examples' EC2NodeClasses select subnets and security groups by this tag.
DISCOVERY = {"karpenter.sh/discovery": "my-cluster"}
CLUSTER = ClusterInfo(
    name="my-cluster",
    endpoint="https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
    certificate_authority="LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    version="1.31",
)
PROFILE = "my-cluster-nodewright-node"


@dataclass
class Documents:
    """The provisioner's configuration, which a test may replace (`current`) once it is built."""

    current: Configuration

    def load(self) -> tuple[list[NodePool], dict[str, EC2NodeClass]]:
        return self.current.load()

    def overlays(self) -> list[NodeOverlay]:
        return self.current.overlays()

    def buffers(self) -> tuple[tuple[CapacityBuffer, ...], tuple[PodTemplate, ...]]:
        return self.current.buffers()


@dataclass
class Ec2World:
    """The handler's dependencies: moto EC2 and DynamoDB, the in-memory cluster, a virtual clock."""

    ec2: IdempotentEc2
    moto: Any
    store: DynamoStateStore
    cluster: InMemoryCluster
    clock: VirtualClock
    provisioner: Provisioner
    images: dict[tuple[str, str], str]
    config: Documents

    def instances(self) -> list[dict[str, Any]]:
        pages = self.moto.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
        )
        return [i for page in pages for r in page["Reservations"] for i in r["Instances"]]


@pytest.fixture
def world(aws: None, dynamodb: Any, example_plan: ExamplePlan) -> Ec2World:
    moto = boto3.client("ec2", region_name="us-east-1")
    subnets = [(zone, f"10.0.{16 * i}.0/20", zone) for i, zone in enumerate(ZONES)]
    create_network(moto, subnets, DISCOVERY)
    # al2023@latest, as the examples' EC2NodeClasses say: one moto AMI per (arch, variant).
    public = amazon_images(moto)
    images = {
        ("amd64", "standard"): public["x86_64"][0],
        ("arm64", "standard"): public["arm64"][0],
        ("amd64", "nvidia"): public["x86_64"][1],
    }
    alias = AMIAlias.parse("al2023@latest")
    ssm = PublicParameters(
        {alias_parameters(alias, CLUSTER.version, variant)[arch]: image for (arch, variant), image in images.items()}
    )
    clock = VirtualClock(time.time())
    cluster = InMemoryCluster(clock)
    cluster.add_pods(example_plan.planned.pending)
    for daemonset in example_plan.planned.daemonsets:
        cluster.add_daemonset(daemonset)
    ec2 = IdempotentEc2(moto)
    store = DynamoStateStore(dynamodb, "state")
    config = Documents(example_plan.configuration)
    provisioner = build_provisioner(
        cluster=cluster,
        cloud=Ec2CloudProvider(ec2, ssm, CLUSTER, instance_profile=PROFILE, clock=clock),
        store=store,
        clock=clock,
        config=config,
        catalog=example_plan.catalog,
        observer=RecordingObserver(),
        sleep=clock.advance,
    )
    return Ec2World(ec2, moto, store, cluster, clock, provisioner, images, config)


def tags_of(item: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in item.get("Tags", [])}


def test_the_handler_launches_the_plan_on_ec2_records_every_claim_and_launches_nothing_more(
    world: Ec2World, example_plan: ExamplePlan, invoke: Callable[[Provisioner, str], dict[str, Any]]
) -> None:
    expected = example_plan.expected

    first = invoke(world.provisioner, "invocation-1")
    launched = world.instances()
    second = invoke(world.provisioner, "invocation-2")

    assert not expected.unschedulable
    assert first["passes"] == 1
    assert first["failed"] == {}
    # moto holds exactly the plan's nodes: one per claim, of the planned type, capacity type and zone.
    planned = collections.Counter(
        (c.instance_type.name, c.offering.capacity_type, c.offering.zone) for c in expected.claims
    )
    held = collections.Counter(
        (
            i["InstanceType"],
            "spot" if i.get("InstanceLifecycle") == "spot" else "on-demand",
            i["Placement"]["AvailabilityZone"],
        )
        for i in launched
    )
    assert held == planned
    assert len(world.ec2.fleet_requests) == len(expected.claims)
    # Every claim recorded, launched, holding the planned pods, pointing at its instance.
    claims = world.store.claims()
    assert sorted(sorted(c.pods) for c in claims) == sorted(sorted(p.key for p in c.pods) for c in expected.claims)
    by_id = {i["InstanceId"]: i for i in launched}
    for claim in claims:
        assert claim.state == "launched"
        instance = by_id[claim.instance_id]
        assert claim.provider_id == f"aws:///{instance['Placement']['AvailabilityZone']}/{claim.instance_id}"
        assert (claim.instance_type, claim.image_id) == (instance["InstanceType"], instance["ImageId"])
        arch = "arm64" if instance["Architecture"] == "arm64" else "amd64"
        assert instance["ImageId"] == world.images[(arch, "standard")]
        tags = tags_of(instance)
        assert tags["nodewright.io/cluster"] == "my-cluster"
        assert tags["kubernetes.io/cluster/my-cluster"] == "owned"
        assert tags["nodewright.io/nodeclaim"] == claim.name
        assert tags["nodewright.io/nodepool"] == tags["karpenter.sh/nodepool"] == claim.nodepool
        assert tags["Name"] == f"{claim.nodepool}/{claim.name}"
    # The examples' pools all use EC2NodeClass "default", whose tags every instance carries too.
    assert {tags_of(i)["team"] for i in launched} == {"platform"}
    # The second invocation launches nothing: no CreateFleet call, no new instance.
    assert second["launched"] == []
    assert len(world.ec2.fleet_requests) == len(expected.claims)
    assert {i["InstanceId"] for i in world.instances()} == set(by_id)
    assert second["housekeeping"]["orphans"] == 0


def test_a_registering_node_moves_its_claim_to_registered_then_initialized(
    world: Ec2World, invoke: Callable[[Provisioner, str], dict[str, Any]]
) -> None:
    invoke(world.provisioner, "invocation-1")
    claim = world.store.claims()[0]
    # The kubelet registers the node with the providerID the cloud provider gives it.
    name = f"ip-10-0-0-{claim.instance_id[-2:]}.ec2.internal"
    world.cluster.add_node(
        Node(
            name=name,
            labels={wk.HOSTNAME: name, wk.NODEPOOL: claim.nodepool, wk.NW_NODEPOOL: claim.nodepool},
            capacity=Resources.of(cpu="2", memory="8Gi", pods=29),
            allocatable=Resources.of(cpu="2", memory="8Gi", pods=29),
            provider_id=claim.provider_id,
            ready=False,
        )
    )

    registered = invoke(world.provisioner, "invocation-2")
    state = {c.name: c for c in world.store.claims()}[claim.name]
    assert registered["housekeeping"]["registered"] == 1
    assert (state.state, state.node_name) == ("registered", name)

    world.cluster.set_node_ready(name)
    initialized = invoke(world.provisioner, "invocation-3")
    assert initialized["housekeeping"]["initialized"] == 1
    assert {c.name: c.state for c in world.store.claims()}[claim.name] == "initialized"
    assert initialized["launched"] == []
