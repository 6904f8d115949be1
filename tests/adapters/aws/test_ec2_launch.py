"""The EC2 cloud provider: CreateFleet launches, listing and terminating our instances.

Faked:
- EC2 by moto in-process (`mock_aws`): subnets, security groups, AMIs, launch templates,
  CreateFleet `instant` (spot and on-demand), DescribeInstances, TerminateInstances.
- SSM's public AMI parameters by `PublicParameters` (moto refuses to store /aws/service/ names).
- What moto lacks, added in `IdempotentEc2` (tests/adapters/aws/fakes.py) on top of it:
  CreateFleet's ClientToken idempotency as EC2 documents it (same token and request -> the stored
  answer; same token, other request -> IdempotentParameterMismatch). moto also ignores volume
  tags and does not apply the template's metadata options, so those are checked on the requests
  we send.
- Capacity errors and throttling by botocore's Stubber on a real client, answering with the
  recorded response shapes in `fixtures/ec2_create_fleet_capacity_errors.json`.
Observed: the Instance returned, the instances moto holds, and the requests we sent.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws

from nodewright.adapters.aws.ec2 import (
    MAX_INSTANCE_TYPES,
    Ec2CloudProvider,
    client_token,
    plan_fleet,
)
from nodewright.adapters.aws.launch_template import LaunchTemplates
from nodewright.adapters.aws.nodeclass_resolver import (
    Image,
    NodeClassResolver,
    ResolvedNodeClass,
    Subnet,
    alias_parameters,
)
from nodewright.adapters.aws.retry import Backoff, is_throttle
from nodewright.inmemory.clock import VirtualClock
from nodewright.model import labels as wk
from nodewright.model.cluster import ClusterInfo
from nodewright.model.instancetype import InstanceType, OfferingKey
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import AMIAlias, AMISelectorTerm, EC2NodeClass, SelectorTerm
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Taint
from nodewright.ports import InsufficientCapacity, LaunchError, LaunchRequest
from tests.adapters.aws.fakes import IdempotentEc2, PublicParameters, amazon_images, create_network
from tests.builders import instance_type, node_pool

FIXTURES = Path(__file__).parent / "fixtures"
CLUSTER = ClusterInfo(
    name="prod",
    endpoint="https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
    certificate_authority="LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    version="1.31",
)
DISCOVERY = {"karpenter.sh/discovery": "prod"}
NOW = 1_763_640_000.0
PROFILE = "prod-nodewright-node"

OPTIONS = (
    instance_type("m6g.large", arch="arm64", price=0.077, spot_price=0.030),
    instance_type("m5.large", price=0.096, spot_price=0.040),
    instance_type("m5.xlarge", price=0.192, spot_price=0.080),
)


@pytest.fixture
def moto_ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


@pytest.fixture
def public_images(moto_ec2: Any) -> dict[str, list[str]]:
    return amazon_images(moto_ec2)


@pytest.fixture
def network(moto_ec2: Any, public_images: dict[str, list[str]]) -> dict[str, str]:
    """Two subnets in 1a (the /20 has more free IPs), one in 1b, none in 1c; one security group."""
    subnets = (
        ("small-1a", "10.0.0.0/24", "us-east-1a"),
        ("us-east-1a", "10.0.16.0/20", "us-east-1a"),
        ("us-east-1b", "10.0.1.0/24", "us-east-1b"),
    )
    ids = create_network(moto_ec2, subnets, DISCOVERY)
    for arch in ("x86_64", "arm64"):
        ids[arch] = public_images[arch][0]
    return ids


@pytest.fixture
def ec2(moto_ec2: Any, network: dict[str, str]) -> IdempotentEc2:
    return IdempotentEc2(moto_ec2)


@pytest.fixture
def nodeclass(network: dict[str, str]) -> EC2NodeClass:
    return EC2NodeClass(
        name="default",
        subnet_selector_terms=(SelectorTerm(tags=DISCOVERY),),
        security_group_selector_terms=(SelectorTerm(tags=DISCOVERY),),
        ami_selector_terms=(AMISelectorTerm(id=network["x86_64"]), AMISelectorTerm(id=network["arm64"])),
        ami_family="AL2023",
        role="KarpenterNodeRole-prod",
        tags={"cost-center": "1234"},
    )


def claim(name: str = "general-x7k2p", *requirements: dict[str, Any]) -> NodeClaim:
    return NodeClaim(
        name=name,
        nodepool="general",
        requirements=Requirements.parse(
            [{"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]}, *requirements]
        ),
        taints=(Taint("dedicated", "NoSchedule", "payments"),),
        startup_taints=(Taint("node.cilium.io/agent-not-ready", "NoExecute"),),
    )


def request(
    nodeclass: EC2NodeClass,
    the_claim: NodeClaim | None = None,
    *,
    options: tuple[InstanceType, ...] = OPTIONS,
    blocked: frozenset[OfferingKey] = frozenset(),
) -> LaunchRequest:
    return LaunchRequest(
        claim=the_claim or claim(),
        nodepool=node_pool("general", labels={"team": "payments"}),
        nodeclass=nodeclass,
        options=options,
        blocked=blocked,
    )


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def provider(
    ec2: Any, *, resolver_ec2: Any = None, ssm: Any = None, sleeps: Sleeps | None = None, **options: Any
) -> Ec2CloudProvider:
    clock = VirtualClock(NOW)
    backoff = Backoff(sleep=sleeps if sleeps is not None else Sleeps(), random=lambda: 1.0)
    plain = resolver_ec2 or ec2
    return Ec2CloudProvider(
        ec2,
        ssm,
        CLUSTER,
        instance_profile=PROFILE,
        clock=clock,
        backoff=backoff,
        resolver=NodeClassResolver(plain, ssm, CLUSTER, clock=clock, backoff=backoff),
        templates=LaunchTemplates(plain, CLUSTER.name, backoff=backoff),
        **options,
    )


def tags_of(item: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in item.get("Tags", [])}


def overrides_of(fleet_request: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted(
        (o["InstanceType"], o["AvailabilityZone"])
        for config in fleet_request["LaunchTemplateConfigs"]
        for o in config["Overrides"]
    )


# --- a launch --------------------------------------------------------------------------------


def test_launch_returns_the_cheapest_spot_instance_with_its_price(ec2: IdempotentEc2, nodeclass: EC2NodeClass) -> None:
    instance = provider(ec2).launch(request(nodeclass))

    assert instance.instance_id.startswith("i-")
    assert (instance.capacity_type, instance.state, instance.launched_at) == ("spot", "pending", NOW)
    assert (instance.nodeclaim, instance.nodepool) == ("general-x7k2p", "general")
    assert instance.zone in ("us-east-1a", "us-east-1b")
    offered = {
        (o.zone, o.capacity_type): o.price for t in OPTIONS if t.name == instance.instance_type for o in t.offerings
    }
    assert instance.price == offered[(instance.zone, "spot")]
    (fleet,) = ec2.fleet_requests
    assert fleet["Type"] == "instant"
    assert fleet["TargetCapacitySpecification"] == {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "spot"}
    assert fleet["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    assert "OnDemandOptions" not in fleet


def test_a_launch_tags_the_instance_volumes_interfaces_fleet_and_template(
    ec2: IdempotentEc2, moto_ec2: Any, nodeclass: EC2NodeClass
) -> None:
    instance = provider(ec2).launch(request(nodeclass))

    expected = {
        "nodewright.io/cluster": "prod",
        "nodewright.io/nodepool": "general",
        "nodewright.io/nodeclaim": "general-x7k2p",
        "karpenter.sh/nodepool": "general",
        "kubernetes.io/cluster/prod": "owned",
        "Name": "general/general-x7k2p",
        "cost-center": "1234",
    }
    described = moto_ec2.describe_instances(InstanceIds=[instance.instance_id])["Reservations"][0]["Instances"][0]
    assert tags_of(described) == expected
    (fleet,) = ec2.fleet_requests
    assert {spec["ResourceType"]: tags_of(spec) for spec in fleet["TagSpecifications"]} == {
        "instance": expected,
        "volume": expected,
        "fleet": expected,
    }
    for template in ec2.template_requests:
        assert tags_of(template["TagSpecifications"][0])["nodewright.io/cluster"] == "prod"
        (interfaces,) = template["LaunchTemplateData"]["TagSpecifications"]
        assert interfaces["ResourceType"] == "network-interface"
        assert tags_of(interfaces)["nodewright.io/cluster"] == "prod"


def test_the_launch_template_requires_imdsv2_and_boots_the_node_with_its_labels_and_taints(
    ec2: IdempotentEc2, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    provider(ec2).launch(request(nodeclass))

    by_image = {t["LaunchTemplateData"]["ImageId"]: t for t in ec2.template_requests}
    assert set(by_image) == {network["x86_64"], network["arm64"]}  # one template per architecture
    data = by_image[network["x86_64"]]["LaunchTemplateData"]
    assert data["MetadataOptions"] == {
        "HttpEndpoint": "enabled",
        "HttpProtocolIpv6": "disabled",
        "HttpPutResponseHopLimit": 1,
        "HttpTokens": "required",
    }
    assert data["BlockDeviceMappings"] == [
        {
            "DeviceName": "/dev/xvda",
            "Ebs": {"VolumeSize": 20, "VolumeType": "gp3", "Encrypted": True, "DeleteOnTermination": True},
        }
    ]
    assert data["IamInstanceProfile"] == {"Name": PROFILE}
    assert data["SecurityGroupIds"] == [network["sg"]]
    user_data = base64.b64decode(data["UserData"]).decode()
    assert "nodewright.io/nodeclaim=general-x7k2p" in user_data
    assert "karpenter.sh/capacity-type=spot" in user_data
    assert "team=payments" in user_data
    assert "key: dedicated" in user_data
    assert "node.cilium.io/agent-not-ready" in user_data


def test_overrides_use_the_subnet_with_most_free_ips_and_skip_zones_without_one(
    ec2: IdempotentEc2, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    provider(ec2).launch(request(nodeclass))

    (fleet,) = ec2.fleet_requests
    subnets = {o["AvailabilityZone"]: o["SubnetId"] for c in fleet["LaunchTemplateConfigs"] for o in c["Overrides"]}
    assert subnets == {"us-east-1a": network["us-east-1a"], "us-east-1b": network["us-east-1b"]}


# --- idempotency -----------------------------------------------------------------------------


def test_the_same_claim_launched_twice_yields_one_instance(ec2: IdempotentEc2, nodeclass: EC2NodeClass) -> None:
    first = provider(ec2).launch(request(nodeclass))
    # A new process (a Lambda retry after a crash): fresh caches, same claim.
    again = provider(ec2).launch(request(nodeclass))

    assert again.instance_id == first.instance_id
    assert [i.instance_id for i in provider(ec2).instances()] == [first.instance_id]
    tokens = {r["ClientToken"] for r in ec2.fleet_requests}
    assert tokens == {client_token("prod", "general-x7k2p")}


def test_a_replanned_retry_of_a_launched_claim_returns_its_instance(
    ec2: IdempotentEc2, nodeclass: EC2NodeClass
) -> None:
    first = provider(ec2).launch(request(nodeclass))
    replanned = request(nodeclass, blocked=frozenset({("spot", "m6g.large", "us-east-1a")}))

    again = provider(ec2).launch(replanned)

    assert again.instance_id == first.instance_id
    assert len(provider(ec2).instances()) == 1


def test_client_tokens_are_short_stable_and_per_cluster() -> None:
    token = client_token("prod", "general-x7k2p")
    assert token == client_token("prod", "general-x7k2p")
    assert token != client_token("staging", "general-x7k2p")
    assert len(client_token("c" * 100, "n" * 253, "variant")) <= 64


# --- choosing offerings ----------------------------------------------------------------------


def test_blocked_offerings_are_left_out_of_the_overrides(ec2: IdempotentEc2, nodeclass: EC2NodeClass) -> None:
    blocked = frozenset({("spot", "m6g.large", "us-east-1a"), ("spot", "m5.large", "us-east-1b")})
    provider(ec2).launch(request(nodeclass, blocked=blocked))

    (fleet,) = ec2.fleet_requests
    offered = overrides_of(fleet)
    assert ("m6g.large", "us-east-1a") not in offered
    assert ("m5.large", "us-east-1b") not in offered
    assert ("m6g.large", "us-east-1b") in offered


def test_with_every_spot_offering_blocked_on_demand_is_launched(ec2: IdempotentEc2, nodeclass: EC2NodeClass) -> None:
    blocked = frozenset(("spot", t.name, zone) for t in OPTIONS for zone in ("us-east-1a", "us-east-1b", "us-east-1c"))
    instance = provider(ec2).launch(request(nodeclass, blocked=blocked))

    assert instance.capacity_type == "on-demand"
    (fleet,) = ec2.fleet_requests
    assert fleet["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    assert fleet["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}


def test_the_claims_requirements_narrow_zones_types_and_capacity_type(
    ec2: IdempotentEc2, nodeclass: EC2NodeClass
) -> None:
    narrow = NodeClaim(
        name="narrow",
        nodepool="general",
        requirements=Requirements.parse(
            [
                {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]},
                {"key": wk.ZONE, "operator": "In", "values": ["us-east-1b"]},
                {"key": wk.INSTANCE_TYPE, "operator": "NotIn", "values": ["m6g.large"]},
            ]
        ),
    )
    provider(ec2).launch(request(nodeclass, narrow))

    (fleet,) = ec2.fleet_requests
    assert overrides_of(fleet) == [("m5.large", "us-east-1b"), ("m5.xlarge", "us-east-1b")]
    assert fleet["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"


def resolved_for(zones: tuple[str, ...] = ("us-east-1a", "us-east-1b")) -> ResolvedNodeClass:
    return ResolvedNodeClass(
        nodeclass=EC2NodeClass(name="default"),
        subnets={z: Subnet(f"subnet-{z}", z, 100) for z in zones},
        security_groups=("sg-1",),
        images={("amd64", ""): Image("ami-amd", "amd64"), ("arm64", ""): Image("ami-arm", "arm64")},
    )


def test_spot_dearer_than_the_cheapest_on_demand_offering_is_dropped() -> None:
    options = (
        instance_type("c5.large", price=0.085, spot_price=0.090),
        instance_type("m5.large", price=0.096, spot_price=0.040),
    )
    plan = plan_fleet(request(EC2NodeClass(name="default"), options=options), resolved_for())
    assert plan is not None
    assert plan.capacity_type == "spot"
    assert {o.instance_type for o in plan.overrides} == {"m5.large"}


def test_at_most_sixty_instance_types_are_offered_cheapest_first() -> None:
    options = tuple(instance_type(f"m5.{n}xlarge", price=0.1 + n / 1000) for n in range(70))
    plan = plan_fleet(request(EC2NodeClass(name="default"), options=options), resolved_for())
    assert plan is not None
    types = list(dict.fromkeys(o.instance_type for o in plan.overrides))
    assert len(types) == MAX_INSTANCE_TYPES
    assert types[0] == "m5.0xlarge"
    assert "m5.69xlarge" not in types


def test_nothing_left_to_launch_raises_insufficient_capacity_without_calling_ec2(
    ec2: IdempotentEc2, nodeclass: EC2NodeClass
) -> None:
    blocked = frozenset(
        (ct, t.name, z) for t in OPTIONS for ct in ("spot", "on-demand") for z in ("us-east-1a", "us-east-1b")
    )
    with pytest.raises(InsufficientCapacity) as raised:
        provider(ec2).launch(request(nodeclass, blocked=blocked))
    assert raised.value.offerings == ()
    assert ec2.fleet_requests == []


# --- AMI variants: GPU and Neuron types boot their own AMI --------------------------------------

GPU = instance_type("g5.xlarge", cpu="4", memory="16Gi", price=1.006, spot_price=0.0350, extra={"nvidia.com/gpu": "1"})
NEURON = instance_type(
    "inf2.xlarge", cpu="4", memory="16Gi", price=0.758, spot_price=0.0360, extra={"aws.amazon.com/neuron": "1"}
)


@pytest.fixture
def al2023(network: dict[str, str], public_images: dict[str, list[str]]) -> tuple[EC2NodeClass, PublicParameters]:
    """An al2023@latest NodeClass, and the public parameters giving each (arch, variant) its own
    moto AMI (no arm64 Neuron AMI exists).
    """
    alias = AMIAlias.parse("al2023@latest")
    amd, arm = public_images["x86_64"], public_images["arm64"]
    images = {
        ("amd64", "standard"): amd[0],
        ("amd64", "nvidia"): amd[1],
        ("amd64", "neuron"): amd[2],
        ("arm64", "standard"): arm[0],
        ("arm64", "nvidia"): arm[1],
    }
    ssm = PublicParameters(
        {alias_parameters(alias, CLUSTER.version, variant)[arch]: image for (arch, variant), image in images.items()}
    )
    nodeclass = EC2NodeClass(
        name="default",
        subnet_selector_terms=(SelectorTerm(tags=DISCOVERY),),
        security_group_selector_terms=(SelectorTerm(tags=DISCOVERY),),
        ami_selector_terms=(AMISelectorTerm(alias=alias),),
        role="KarpenterNodeRole-prod",
    )
    return nodeclass, ssm


def images_of(ssm: PublicParameters) -> dict[tuple[str, str], str]:
    alias = AMIAlias.parse("al2023@latest")
    return {
        (arch, variant): ssm.values[path]
        for variant in ("standard", "nvidia", "neuron")
        for arch, path in alias_parameters(alias, CLUSTER.version, variant).items()
        if path in ssm.values
    }


def test_a_claim_mixing_gpu_and_standard_types_gets_one_template_per_variant(
    ec2: IdempotentEc2, al2023: tuple[EC2NodeClass, PublicParameters]
) -> None:
    nodeclass, ssm = al2023
    images = images_of(ssm)

    provider(ec2, ssm=ssm).launch(request(nodeclass, options=(*OPTIONS, GPU, NEURON)))

    (fleet,) = ec2.fleet_requests
    template_image = {t["LaunchTemplateName"]: t["LaunchTemplateData"]["ImageId"] for t in ec2.template_requests}
    types_by_image = {
        template_image[config["LaunchTemplateSpecification"]["LaunchTemplateName"]]: sorted(
            {o["InstanceType"] for o in config["Overrides"]}
        )
        for config in fleet["LaunchTemplateConfigs"]
    }
    assert types_by_image == {
        images[("amd64", "standard")]: ["m5.large"],  # m5.xlarge's spot is dearer than on-demand m6g
        images[("arm64", "standard")]: ["m6g.large"],
        images[("amd64", "nvidia")]: ["g5.xlarge"],
        images[("amd64", "neuron")]: ["inf2.xlarge"],
    }


def test_a_gpu_claim_boots_the_nvidia_ami_and_reads_only_the_parameters_it_needs(
    ec2: IdempotentEc2, moto_ec2: Any, al2023: tuple[EC2NodeClass, PublicParameters]
) -> None:
    nodeclass, ssm = al2023

    instance = provider(ec2, ssm=ssm).launch(request(nodeclass, options=(GPU,)))

    nvidia = images_of(ssm)[("amd64", "nvidia")]
    described = moto_ec2.describe_instances(InstanceIds=[instance.instance_id])["Reservations"][0]["Instances"][0]
    assert (instance.instance_type, instance.image_id, described["ImageId"]) == ("g5.xlarge", nvidia, nvidia)
    assert all("/nvidia/" in name for name in ssm.asked)  # no standard look-up for a GPU-only claim


def test_a_neuron_claim_boots_the_neuron_ami(
    ec2: IdempotentEc2, moto_ec2: Any, al2023: tuple[EC2NodeClass, PublicParameters]
) -> None:
    nodeclass, ssm = al2023

    instance = provider(ec2, ssm=ssm).launch(request(nodeclass, options=(NEURON,)))

    assert instance.image_id == images_of(ssm)[("amd64", "neuron")]


def test_types_whose_variant_has_no_ami_are_left_out_and_alone_cannot_launch(
    ec2: IdempotentEc2, al2023: tuple[EC2NodeClass, PublicParameters]
) -> None:
    nodeclass, ssm = al2023
    for path in [p for p in ssm.values if "/nvidia/" in p]:
        del ssm.values[path]

    instance = provider(ec2, ssm=ssm).launch(request(nodeclass, options=(GPU, *OPTIONS)))
    assert "g5.xlarge" not in {t for t, _ in overrides_of(ec2.fleet_requests[0])}
    assert instance.instance_type != "g5.xlarge"

    with pytest.raises(LaunchError, match="no amd64 or arm64 AMI for the nvidia variant") as raised:
        provider(ec2, ssm=ssm).launch(request(nodeclass, claim("gpu-only"), options=(GPU,)))
    assert not isinstance(raised.value, InsufficientCapacity)
    # An arm64 GPU type while only the amd64 nvidia AMI exists: resolved, yet nothing to boot it.
    arm_gpu = instance_type("g5g.xlarge", arch="arm64", price=0.42, extra={"nvidia.com/gpu": "1"})
    ssm.values[alias_parameters(AMIAlias.parse("al2023@latest"), CLUSTER.version, "nvidia")["amd64"]] = "ami-x"
    with pytest.raises(LaunchError, match="no AMI for the nvidia variant of any instance type option"):
        provider(ec2, ssm=ssm).launch(request(nodeclass, claim("arm-gpu"), options=(arm_gpu,)))
    assert len(ec2.fleet_requests) == 1


def test_amis_named_by_id_launch_gpu_types_with_that_ami(
    ec2: IdempotentEc2, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    instance = provider(ec2).launch(request(nodeclass, options=(GPU,)))
    assert instance.image_id == network["x86_64"]


# --- capacity errors and throttling (Stubber: moto never runs out of capacity) ------------------


@pytest.fixture
def stubbed(moto_ec2: Any) -> Iterator[tuple[Any, Stubber]]:
    client = botocore.session.get_session().create_client(
        "ec2", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    with Stubber(client) as stubber:
        yield client, stubber


def recorded(name: str, network: dict[str, str]) -> dict[str, Any]:
    text = (FIXTURES / "ec2_create_fleet_capacity_errors.json").read_text()
    for zone in ("us-east-1a", "us-east-1b"):
        text = text.replace(f"{{subnet:{zone}}}", network[zone])
    response: dict[str, Any] = json.loads(text)[name]
    return response


def test_capacity_errors_become_insufficient_capacity_with_the_failed_offerings(
    stubbed: tuple[Any, Stubber], moto_ec2: Any, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    client, stubber = stubbed
    stubber.add_response("create_fleet", recorded("spot_ice", network))

    with pytest.raises(InsufficientCapacity) as raised:
        provider(client, resolver_ec2=moto_ec2).launch(request(nodeclass))

    # The second error names only the subnet: its zone comes from the plan's subnet.
    assert raised.value.offerings == (("spot", "m5.large", "us-east-1b"), ("spot", "m6g.large", "us-east-1a"))
    assert raised.value.reason == "InsufficientInstanceCapacity, UnfulfillableCapacity"


def test_a_capacity_error_without_overrides_blocks_every_offering_asked_for(
    stubbed: tuple[Any, Stubber], moto_ec2: Any, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    client, stubber = stubbed
    stubber.add_response("create_fleet", recorded("spot_limit", network))

    with pytest.raises(InsufficientCapacity, match="MaxSpotInstanceCountExceeded") as raised:
        provider(client, resolver_ec2=moto_ec2).launch(request(nodeclass))

    # Every spot offering asked for: two types in two zones (m5.xlarge's spot price is above
    # the cheapest on-demand price, so it was never asked for).
    assert raised.value.offerings == tuple(
        ("spot", t, z) for t in ("m5.large", "m6g.large") for z in ("us-east-1a", "us-east-1b")
    )


def test_a_full_subnet_is_a_capacity_error_of_that_offering(
    stubbed: tuple[Any, Stubber], moto_ec2: Any, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    client, stubber = stubbed
    stubber.add_response("create_fleet", recorded("subnet_full", network))
    with pytest.raises(InsufficientCapacity) as raised:
        provider(client, resolver_ec2=moto_ec2).launch(request(nodeclass))
    assert raised.value.offerings == (("on-demand", "m5.large", "us-east-1a"),)


def test_other_fleet_errors_become_a_launch_error_naming_the_cause(
    stubbed: tuple[Any, Stubber], moto_ec2: Any, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    client, stubber = stubbed
    stubber.add_response("create_fleet", recorded("bad_configuration", network))
    with pytest.raises(LaunchError, match=r"InvalidParameterValue: .*Invalid IAM Instance Profile name") as raised:
        provider(client, resolver_ec2=moto_ec2).launch(request(nodeclass))
    assert not isinstance(raised.value, InsufficientCapacity)


def test_a_refused_call_becomes_a_launch_error(
    stubbed: tuple[Any, Stubber], moto_ec2: Any, nodeclass: EC2NodeClass
) -> None:
    client, stubber = stubbed
    stubber.add_client_error("create_fleet", "UnauthorizedOperation", "You are not authorized", 403)
    with pytest.raises(LaunchError, match="general-x7k2p: CreateFleet failed: UnauthorizedOperation"):
        provider(client, resolver_ec2=moto_ec2).launch(request(nodeclass))


def test_a_launch_after_some_capacity_errors_returns_the_instance(
    stubbed: tuple[Any, Stubber], moto_ec2: Any, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    client, stubber = stubbed
    stubber.add_response("create_fleet", recorded("launched", network))
    instance = provider(client, resolver_ec2=moto_ec2).launch(request(nodeclass))
    assert (instance.instance_id, instance.instance_type, instance.zone) == (
        "i-0123456789abcdef0",
        "m5.large",
        "us-east-1b",
    )
    assert (instance.capacity_type, instance.price) == ("spot", 0.040)


def test_throttling_is_retried_with_jittered_backoff(
    stubbed: tuple[Any, Stubber], moto_ec2: Any, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    client, stubber = stubbed
    stubber.add_client_error("create_fleet", "RequestLimitExceeded", "Request limit exceeded.", 503)
    stubber.add_client_error("create_fleet", "RequestLimitExceeded", "Request limit exceeded.", 503)
    stubber.add_response("create_fleet", recorded("launched", network))
    sleeps = Sleeps()

    instance = provider(client, resolver_ec2=moto_ec2, sleeps=sleeps).launch(request(nodeclass))

    assert instance.instance_id == "i-0123456789abcdef0"
    assert sleeps == [0.2, 0.4]  # random() is pinned to 1.0: the full exponential step
    stubber.assert_no_pending_responses()


def test_backoff_gives_up_after_its_attempts_and_never_retries_other_errors() -> None:
    sleeps = Sleeps()
    backoff = Backoff(attempts=3, base=1.0, cap=1.5, sleep=sleeps, random=lambda: 0.5)
    calls: list[int] = []

    def throttled() -> None:
        calls.append(1)
        raise ClientError({"Error": {"Code": "Throttling", "Message": "slow down"}}, "Describe")

    with pytest.raises(ClientError):
        backoff.call(throttled)
    assert (len(calls), sleeps) == (3, [0.5, 0.75])  # capped at 1.5, times the jitter 0.5

    def broken() -> None:
        raise ClientError({"Error": {"Code": "InvalidParameterValue", "Message": "no"}}, "Describe")

    with pytest.raises(ClientError):
        backoff.call(broken)
    assert len(sleeps) == 2
    assert not is_throttle(ValueError("Throttling"))


# --- launch templates ------------------------------------------------------------------------


def test_per_claim_templates_are_deleted_after_the_launch(
    ec2: IdempotentEc2, moto_ec2: Any, nodeclass: EC2NodeClass
) -> None:
    provider(ec2).launch(request(nodeclass))
    assert moto_ec2.describe_launch_templates()["LaunchTemplates"] == []


def test_without_the_claim_label_templates_are_shared_and_kept(
    ec2: IdempotentEc2, moto_ec2: Any, nodeclass: EC2NodeClass
) -> None:
    shared = provider(ec2, claim_label=False)
    shared.launch(request(nodeclass, claim("first")))
    shared.launch(request(nodeclass, claim("second")))
    provider(ec2, claim_label=False).launch(request(nodeclass, claim("third")))  # another process

    names = sorted(t["LaunchTemplateName"] for t in moto_ec2.describe_launch_templates()["LaunchTemplates"])
    assert len(names) == 2  # amd64 and arm64, created once; the race loser's "already exists" is fine
    assert all(name.startswith("nodewright/prod/") for name in names)
    assert len(ec2.template_requests) == 4  # two per process, none repeated within one
    assert len(ec2.fleet_requests) == 3


def test_a_template_deleted_behind_our_back_is_recreated(
    ec2: IdempotentEc2, moto_ec2: Any, nodeclass: EC2NodeClass
) -> None:
    shared = provider(ec2, claim_label=False)
    shared.launch(request(nodeclass, claim("first")))
    for template in moto_ec2.describe_launch_templates()["LaunchTemplates"]:
        moto_ec2.delete_launch_template(LaunchTemplateName=template["LaunchTemplateName"])

    instance = shared.launch(request(nodeclass, claim("second")))

    assert instance.nodeclaim == "second"
    assert len(moto_ec2.describe_launch_templates()["LaunchTemplates"]) == 2
    assert len(ec2.fleet_requests) == 3  # the failed attempt, then the retry with recreated templates


def test_prune_deletes_templates_older_than_the_limit(
    ec2: IdempotentEc2, moto_ec2: Any, nodeclass: EC2NodeClass
) -> None:
    shared = provider(ec2, claim_label=False)
    shared.launch(request(nodeclass))
    created = moto_ec2.describe_launch_templates()["LaunchTemplates"][0]["CreateTime"].timestamp()

    young = Ec2CloudProvider(ec2, None, CLUSTER, instance_profile=PROFILE, clock=VirtualClock(created + 10))
    assert young.prune_launch_templates(older_than=3600) == []
    old = Ec2CloudProvider(ec2, None, CLUSTER, instance_profile=PROFILE, clock=VirtualClock(created + 7200))
    assert len(old.prune_launch_templates(older_than=3600)) == 2
    assert moto_ec2.describe_launch_templates()["LaunchTemplates"] == []


# --- listing and terminating -----------------------------------------------------------------


def test_instances_lists_only_this_clusters_live_instances(
    ec2: IdempotentEc2, moto_ec2: Any, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    ours = provider(ec2).launch(request(nodeclass))
    gone = provider(ec2).launch(request(nodeclass, claim("gone")))
    moto_ec2.terminate_instances(InstanceIds=[gone.instance_id])
    other_tags = [{"ResourceType": "instance", "Tags": [{"Key": "nodewright.io/cluster", "Value": "staging"}]}]
    moto_ec2.run_instances(
        ImageId=network["x86_64"], MinCount=1, MaxCount=1, InstanceType="m5.large", TagSpecifications=other_tags
    )

    (listed,) = provider(ec2).instances()

    assert listed.instance_id == ours.instance_id
    assert (listed.nodeclaim, listed.nodepool, listed.capacity_type) == ("general-x7k2p", "general", "spot")
    assert listed.instance_type == ours.instance_type
    assert listed.zone == ours.zone
    assert listed.launched_at > 0


def test_terminate_works_in_batches_and_counts_unknown_ids_as_terminated(
    ec2: IdempotentEc2, moto_ec2: Any, nodeclass: EC2NodeClass
) -> None:
    launched = [provider(ec2).launch(request(nodeclass, claim(f"c{n}"))).instance_id for n in range(3)]

    provider(ec2, terminate_batch=2).terminate(["i-0123456789abcdef0", *launched, launched[0]])

    assert provider(ec2).instances() == []
    states = {
        i["InstanceId"]: i["State"]["Name"]
        for r in moto_ec2.describe_instances(InstanceIds=launched)["Reservations"]
        for i in r["Instances"]
    }
    assert set(states.values()) == {"terminated"}
