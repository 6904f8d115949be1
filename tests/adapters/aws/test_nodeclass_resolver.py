"""NodeClass resolution: subnets, security groups and AMIs from selector terms.

Faked: EC2 by moto in-process (`mock_aws`: real subnets with real free-IP counts, security groups,
its public AMI catalogue); SSM by botocore's Stubber, because moto refuses to store parameters
under /aws/service/ and the Stubber also checks the exact parameter paths we ask for, or by
`PublicParameters` (a dict that records what was asked) where the order of calls is not the point.
Observed: what `resolve` returns, and which SSM calls were made (cache behaviour).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from nodewright.adapters.aws.nodeclass_resolver import (
    Image,
    NodeClassNotResolved,
    NodeClassResolver,
    Subnet,
    alias_parameters,
    choose_images,
    choose_subnets,
    variant_of,
)
from nodewright.adapters.offline_catalog import DEFAULT_ZONES, load_catalog
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.cluster import ClusterInfo
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclass import AMIAlias, AMISelectorTerm, EC2NodeClass, SelectorTerm
from nodewright.ports import LaunchError
from tests.adapters.aws.fakes import PublicParameters, amazon_images
from tests.builders import instance_type

CLUSTER = ClusterInfo(name="prod", endpoint="https://example", certificate_authority="Q0E=", version="1.31")
DISCOVERY = {"karpenter.sh/discovery": "prod"}


@pytest.fixture
def ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


@pytest.fixture
def ssm() -> Iterator[tuple[Any, Stubber]]:
    client = botocore.session.get_session().create_client(
        "ssm", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    with Stubber(client) as stubber:
        yield client, stubber


@pytest.fixture
def network(ec2: Any) -> dict[str, str]:
    """Subnets: 1a small (/24) and large (/20), 1b one, 1c untagged; two security groups."""
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]

    def subnet(cidr: str, zone: str, tags: dict[str, str]) -> str:
        spec = [{"ResourceType": "subnet", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}] if tags else []
        return str(
            ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone, TagSpecifications=spec)["Subnet"][
                "SubnetId"
            ]
        )

    def group(name: str, tags: dict[str, str]) -> str:
        spec = [{"ResourceType": "security-group", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
        return str(
            ec2.create_security_group(GroupName=name, Description=name, VpcId=vpc, TagSpecifications=spec)["GroupId"]
        )

    return {
        "small-1a": subnet("10.0.0.0/24", "us-east-1a", {**DISCOVERY, "Name": "small-1a"}),
        "large-1a": subnet("10.0.16.0/20", "us-east-1a", {**DISCOVERY, "Name": "large-1a"}),
        "only-1b": subnet("10.0.1.0/24", "us-east-1b", {**DISCOVERY, "tier": "private"}),
        "untagged-1c": subnet("10.0.2.0/24", "us-east-1c", {}),
        "nodes-sg": group("nodes", DISCOVERY),
        "extra-sg": group("extra", {"role": "extra"}),
    }


def resolver(ec2: Any, ssm_client: Any, clock: VirtualClock | None = None, ttl: float = 300.0) -> NodeClassResolver:
    return NodeClassResolver(ec2, ssm_client, CLUSTER, clock=clock or VirtualClock(1_000.0), ttl=ttl)


def moto_image(ec2: Any, arch: str) -> str:
    return amazon_images(ec2)[arch][0]


# --- subnets and security groups --------------------------------------------------------------


def test_per_zone_the_subnet_with_the_most_free_ips_is_chosen(ec2: Any, ssm: Any, network: dict[str, str]) -> None:
    subnets = resolver(ec2, ssm[0]).subnets((SelectorTerm(tags=DISCOVERY),))
    assert {zone: s.id for zone, s in subnets.items()} == {
        "us-east-1a": network["large-1a"],
        "us-east-1b": network["only-1b"],
    }
    assert subnets["us-east-1a"].available_ips > subnets["us-east-1b"].available_ips


def test_subnet_terms_are_ored_and_match_by_id_name_and_any_tag_value(
    ec2: Any, ssm: Any, network: dict[str, str]
) -> None:
    terms = (
        SelectorTerm(id=network["untagged-1c"]),
        SelectorTerm(name="small-1a"),
        SelectorTerm(tags={"tier": "*"}),
    )
    subnets = resolver(ec2, ssm[0]).subnets(terms)
    assert {zone: s.id for zone, s in subnets.items()} == {
        "us-east-1a": network["small-1a"],
        "us-east-1b": network["only-1b"],
        "us-east-1c": network["untagged-1c"],
    }


def test_tags_within_one_term_must_all_match(ec2: Any, ssm: Any, network: dict[str, str]) -> None:
    subnets = resolver(ec2, ssm[0]).subnets((SelectorTerm(tags={**DISCOVERY, "tier": "private"}),))
    assert [s.id for s in subnets.values()] == [network["only-1b"]]


def test_security_groups_by_tags_id_and_name(ec2: Any, ssm: Any, network: dict[str, str]) -> None:
    resolve = resolver(ec2, ssm[0])
    assert resolve.security_groups((SelectorTerm(tags=DISCOVERY),)) == (network["nodes-sg"],)
    both = resolve.security_groups((SelectorTerm(name="nodes"), SelectorTerm(id=network["extra-sg"])))
    assert both == tuple(sorted((network["nodes-sg"], network["extra-sg"])))


def test_choose_subnets_breaks_ties_by_id_and_skips_full_subnets() -> None:
    chosen = choose_subnets(
        [
            Subnet("subnet-b", "us-east-1a", 100),
            Subnet("subnet-a", "us-east-1a", 100),
            Subnet("subnet-c", "us-east-1b", 0),
        ]
    )
    assert chosen == {"us-east-1a": Subnet("subnet-a", "us-east-1a", 100)}


# --- AMIs ----------------------------------------------------------------------------------------

PREFIX = "/aws/service/eks/optimized-ami/1.31"


@pytest.mark.parametrize(
    ("alias", "expected"),
    [
        (
            "al2023@latest",
            {
                "amd64": f"{PREFIX}/amazon-linux-2023/x86_64/standard/recommended/image_id",
                "arm64": f"{PREFIX}/amazon-linux-2023/arm64/standard/recommended/image_id",
            },
        ),
        (
            "al2023@v20240807",
            {
                "amd64": f"{PREFIX}/amazon-linux-2023/x86_64/standard/"
                "amazon-eks-node-al2023-x86_64-standard-1.31-v20240807/image_id",
                "arm64": f"{PREFIX}/amazon-linux-2023/arm64/standard/"
                "amazon-eks-node-al2023-arm64-standard-1.31-v20240807/image_id",
            },
        ),
        (
            "al2@latest",
            {
                "amd64": f"{PREFIX}/amazon-linux-2/recommended/image_id",
                "arm64": f"{PREFIX}/amazon-linux-2-arm64/recommended/image_id",
            },
        ),
        (
            "al2@v20240807",
            {
                "amd64": f"{PREFIX}/amazon-linux-2/amazon-eks-node-1.31-v20240807/image_id",
                "arm64": f"{PREFIX}/amazon-linux-2-arm64/amazon-eks-arm64-node-1.31-v20240807/image_id",
            },
        ),
        (
            "bottlerocket@latest",
            {
                "amd64": "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/latest/image_id",
                "arm64": "/aws/service/bottlerocket/aws-k8s-1.31/arm64/latest/image_id",
            },
        ),
        (
            "bottlerocket@v1.20.0",
            {
                "amd64": "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/1.20.0/image_id",
                "arm64": "/aws/service/bottlerocket/aws-k8s-1.31/arm64/1.20.0/image_id",
            },
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_alias_reads_the_public_ssm_parameter_karpenter_reads(alias: str, expected: dict[str, str]) -> None:
    assert alias_parameters(AMIAlias.parse(alias), "1.31") == expected


def _stub_parameter(stubber: Stubber, name: str, value: str | None) -> None:
    if value is None:
        stubber.add_client_error(
            "get_parameter", service_error_code="ParameterNotFound", expected_params={"Name": name}
        )
    else:
        stubber.add_response("get_parameter", {"Parameter": {"Name": name, "Value": value}}, {"Name": name})


def test_al2023_latest_resolves_one_ami_per_architecture(ec2: Any, ssm: tuple[Any, Stubber]) -> None:
    client, stubber = ssm
    paths = alias_parameters(AMIAlias.parse("al2023@latest"), "1.31")
    _stub_parameter(stubber, paths["amd64"], "ami-0amd")
    _stub_parameter(stubber, paths["arm64"], "ami-0arm")

    images = resolver(ec2, client).images((AMISelectorTerm(alias=AMIAlias.parse("al2023@latest")),))

    assert {key: image.id for key, image in images.items()} == {
        ("amd64", "standard"): "ami-0amd",
        ("arm64", "standard"): "ami-0arm",
    }
    stubber.assert_no_pending_responses()


def test_a_missing_parameter_only_drops_that_architecture(ec2: Any, ssm: tuple[Any, Stubber]) -> None:
    client, stubber = ssm
    paths = alias_parameters(AMIAlias.parse("bottlerocket@v1.20.0"), "1.31")
    _stub_parameter(stubber, paths["amd64"], "ami-0br")
    _stub_parameter(stubber, paths["arm64"], None)

    images = resolver(ec2, client).images((AMISelectorTerm(alias=AMIAlias.parse("bottlerocket@v1.20.0")),))

    assert list(images) == [("amd64", "standard")]


def test_amis_by_id_are_sorted_by_their_architecture(ec2: Any, ssm: Any) -> None:
    amd, arm = moto_image(ec2, "x86_64"), moto_image(ec2, "arm64")
    images = resolver(ec2, ssm[0]).images((AMISelectorTerm(id=amd), AMISelectorTerm(id=arm)))
    # Images a term names serve every variant of their architecture.
    assert {key: image.id for key, image in images.items()} == {("amd64", ""): amd, ("arm64", ""): arm}


def test_the_newest_non_deprecated_image_wins_per_architecture() -> None:
    chosen = choose_images(
        [
            Image("ami-old", "amd64", created="2024-01-01T00:00:00.000Z"),
            Image("ami-new", "amd64", created="2025-01-01T00:00:00.000Z"),
            Image("ami-newest-deprecated", "amd64", created="2025-06-01T00:00:00.000Z", deprecated=True),
            Image("ami-arm", "arm64", created="2023-01-01T00:00:00.000Z"),
        ]
    )
    assert {key: image.id for key, image in chosen.items()} == {("amd64", ""): "ami-new", ("arm64", ""): "ami-arm"}


# --- the whole NodeClass, caching, errors -------------------------------------------------------


def nodeclass(**changes: Any) -> EC2NodeClass:
    fields: dict[str, Any] = {
        "name": "default",
        "subnet_selector_terms": (SelectorTerm(tags=DISCOVERY),),
        "security_group_selector_terms": (SelectorTerm(tags=DISCOVERY),),
        "ami_selector_terms": (AMISelectorTerm(alias=AMIAlias.parse("al2023@latest")),),
        "role": "KarpenterNodeRole-prod",
    }
    fields.update(changes)
    return EC2NodeClass(**fields)


def test_results_are_cached_until_the_ttl_runs_out(ec2: Any, ssm: tuple[Any, Stubber], network: dict[str, str]) -> None:
    client, stubber = ssm
    paths = alias_parameters(AMIAlias.parse("al2023@latest"), "1.31")
    clock = VirtualClock(1_000.0)
    resolve = resolver(ec2, client, clock, ttl=300.0)
    _stub_parameter(stubber, paths["amd64"], "ami-1")
    _stub_parameter(stubber, paths["arm64"], "ami-2")

    first = resolve.resolve(nodeclass())
    clock.advance(299)
    assert resolve.resolve(nodeclass()) == first  # no SSM call: the Stubber would fail on one
    stubber.assert_no_pending_responses()

    clock.advance(1)
    _stub_parameter(stubber, paths["amd64"], "ami-3")
    _stub_parameter(stubber, paths["arm64"], "ami-4")
    assert resolve.resolve(nodeclass()).images[("amd64", "standard")].id == "ami-3"
    stubber.assert_no_pending_responses()


def test_a_nodeclass_matching_no_subnet_cannot_launch(ec2: Any, ssm: Any, network: dict[str, str]) -> None:
    broken = nodeclass(subnet_selector_terms=(SelectorTerm(tags={"karpenter.sh/discovery": "other"}),))
    with pytest.raises(NodeClassNotResolved, match="subnetSelectorTerms") as raised:
        resolver(ec2, ssm[0]).resolve(broken)
    assert isinstance(raised.value, LaunchError)


def test_windows_aliases_are_refused(ec2: Any, ssm: Any, network: dict[str, str]) -> None:
    windows = nodeclass(ami_selector_terms=(AMISelectorTerm(alias=AMIAlias.parse("windows2022@latest")),))
    with pytest.raises(NodeClassNotResolved, match="Windows"):
        resolver(ec2, ssm[0]).resolve(windows)


# --- AMI variants: GPU and Neuron instance types ------------------------------------------------

BR = "/aws/service/bottlerocket/aws-k8s-1.31"


@pytest.mark.parametrize(
    ("alias", "variant", "expected"),
    [
        (
            "al2023@latest",
            "nvidia",
            {
                "amd64": f"{PREFIX}/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
                "arm64": f"{PREFIX}/amazon-linux-2023/arm64/nvidia/recommended/image_id",
            },
        ),
        (
            "al2023@v20240807",
            "neuron",
            {
                "amd64": f"{PREFIX}/amazon-linux-2023/x86_64/neuron/"
                "amazon-eks-node-al2023-x86_64-neuron-1.31-v20240807/image_id",
                "arm64": f"{PREFIX}/amazon-linux-2023/arm64/neuron/"
                "amazon-eks-node-al2023-arm64-neuron-1.31-v20240807/image_id",
            },
        ),
        ("al2@latest", "nvidia", {"amd64": f"{PREFIX}/amazon-linux-2-gpu/recommended/image_id"}),
        (
            "al2@v20240807",
            "neuron",
            {"amd64": f"{PREFIX}/amazon-linux-2-gpu/amazon-eks-gpu-node-1.31-v20240807/image_id"},
        ),
        (
            "bottlerocket@latest",
            "nvidia",
            {"amd64": f"{BR}-nvidia/x86_64/latest/image_id", "arm64": f"{BR}-nvidia/arm64/latest/image_id"},
        ),
        # Bottlerocket's standard x86_64 image carries the Neuron driver; there is no arm64 Neuron.
        ("bottlerocket@v1.20.0", "neuron", {"amd64": f"{BR}/x86_64/1.20.0/image_id"}),
        ("al2023@latest", "amd", {}),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_each_variant_reads_its_own_public_parameter(alias: str, variant: str, expected: dict[str, str]) -> None:
    assert alias_parameters(AMIAlias.parse(alias), "1.31", variant) == expected


def test_instance_types_need_the_variant_of_their_accelerators() -> None:
    catalog = {t.name: t for t in load_catalog(DEFAULT_ZONES)}
    assert {name: variant_of(catalog[name]) for name in ("m5.large", "g5.xlarge", "g5g.xlarge", "inf2.xlarge")} == {
        "m5.large": "standard",
        "g5.xlarge": "nvidia",
        "g5g.xlarge": "nvidia",
        "inf2.xlarge": "neuron",
    }
    # Without the catalog's labels, the device resources decide.
    assert variant_of(instance_type("x.gpu", extra={"nvidia.com/gpu": "1"})) == "nvidia"
    assert variant_of(instance_type("x.inf", extra={"aws.amazon.com/neuron": "1"})) == "neuron"
    assert variant_of(instance_type("x.amd", extra={"amd.com/gpu": "1"})) == "amd"  # no alias publishes one


def public_parameters(alias: str, ids: dict[tuple[str, str], str]) -> PublicParameters:
    parsed = AMIAlias.parse(alias)
    return PublicParameters(
        {alias_parameters(parsed, "1.31", variant)[arch]: image for (arch, variant), image in ids.items()}
    )


def test_variants_are_read_only_when_asked_for_and_cached_each_on_its_own(ec2: Any) -> None:
    ssm = public_parameters(
        "al2023@latest",
        {("amd64", "standard"): "ami-std", ("arm64", "standard"): "ami-std-arm", ("amd64", "nvidia"): "ami-gpu"},
    )
    terms = (AMISelectorTerm(alias=AMIAlias.parse("al2023@latest")),)
    resolve = resolver(ec2, ssm)

    standard = resolve.images(terms)
    assert len(ssm.asked) == 2  # a cluster without GPUs reads the two standard parameters only
    both = resolve.images(terms, ["standard", "nvidia"])

    assert standard == {
        ("amd64", "standard"): Image("ami-std", "amd64", "al2023@latest", variant="standard"),
        ("arm64", "standard"): Image("ami-std-arm", "arm64", "al2023@latest", variant="standard"),
    }
    # The arm64 nvidia parameter is missing: arm64 GPU types have no AMI, the rest do.
    assert {key: image.id for key, image in both.items()} == {
        ("amd64", "nvidia"): "ami-gpu",
        ("amd64", "standard"): "ami-std",
        ("arm64", "standard"): "ami-std-arm",
    }
    assert len(ssm.asked) == 4  # standard came from the cache; nvidia cost its two parameters


def test_a_resolved_nodeclass_gives_each_type_the_ami_of_its_variant(ec2: Any, network: dict[str, str]) -> None:
    ssm = public_parameters(
        "bottlerocket@latest",
        {("amd64", "standard"): "ami-br", ("arm64", "standard"): "ami-br-arm", ("amd64", "nvidia"): "ami-br-gpu"},
    )
    bottlerocket = nodeclass(ami_selector_terms=(AMISelectorTerm(alias=AMIAlias.parse("bottlerocket@latest")),))

    resolved = resolver(ec2, ssm).resolve(bottlerocket, ["standard", "nvidia", "neuron"])

    def image(t: InstanceType) -> str | None:
        found = resolved.image_for(t)
        return found.id if found else None

    assert image(instance_type("m5.large")) == "ami-br"
    assert image(instance_type("m6g.large", arch="arm64")) == "ami-br-arm"
    assert image(instance_type("g5.xlarge", extra={"nvidia.com/gpu": "1"})) == "ami-br-gpu"
    assert image(instance_type("g5g.xlarge", arch="arm64", extra={"nvidia.com/gpu": "1"})) is None
    assert image(instance_type("inf2.xlarge", extra={"aws.amazon.com/neuron": "1"})) == "ami-br"


def test_amis_named_by_id_serve_gpu_types_too(ec2: Any, network: dict[str, str]) -> None:
    amd = moto_image(ec2, "x86_64")
    ssm = PublicParameters()
    by_id = nodeclass(ami_selector_terms=(AMISelectorTerm(id=amd),))

    resolved = resolver(ec2, ssm).resolve(by_id, ["standard", "nvidia"])

    found = resolved.image_for(instance_type("g5.xlarge", extra={"nvidia.com/gpu": "1"}))
    assert found is not None
    assert found.id == amd
    assert ssm.asked == []


def test_a_variant_without_any_ami_cannot_launch(ec2: Any, network: dict[str, str]) -> None:
    ssm = public_parameters("al2023@latest", {("amd64", "standard"): "ami-std"})
    with pytest.raises(NodeClassNotResolved, match="no amd64 or arm64 AMI for the neuron variant"):
        resolver(ec2, ssm).resolve(nodeclass(), ["neuron"])
