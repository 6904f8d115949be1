"""EC2NodeClass fields that shape the launch template, from the YAML a user writes to what EC2 stores.

Each test parses an EC2NodeClass manifest with `nodewright.config.parse_yaml` (Karpenter's v1
field names), launches one claim through `Ec2CloudProvider.launch` and reads the launch
template back from moto with DescribeLaunchTemplateVersions: botocore validated the request
against EC2's model on the way in, and the assertions are on what moto stored, not on what we
meant to send.

Faked: EC2 by moto in-process (subnets, security groups, AMIs, launch templates, CreateFleet);
SSM's public AMI parameters by `PublicParameters`. Templates are shared per NodePool
(`claim_label=False`) so they outlive the launch and can be read back.
"""

from __future__ import annotations

import base64
import textwrap
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodewright.adapters.aws.ec2 import Ec2CloudProvider
from nodewright.adapters.aws.nodeclass_resolver import alias_parameters
from nodewright.adapters.aws.retry import Backoff
from nodewright.config import parse_yaml
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.cluster import ClusterInfo
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import AMIAlias, EC2NodeClass
from nodewright.model.requirements import Requirements
from nodewright.ports import LaunchRequest
from tests.adapters.aws.fakes import PublicParameters, amazon_images, create_network
from tests.builders import instance_type, node_pool

CLUSTER = ClusterInfo(
    name="prod",
    endpoint="https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
    certificate_authority="LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    version="1.31",
)
DISCOVERY = "prod"
OPTIONS = (instance_type("m5.large", price=0.096, spot_price=0.040),)


@pytest.fixture
def moto_ec2() -> Iterator[Any]:
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        create_network(ec2, (("a", "10.0.0.0/24", "us-east-1a"),), {"karpenter.sh/discovery": DISCOVERY})
        yield ec2


@pytest.fixture
def image(moto_ec2: Any) -> str:
    return amazon_images(moto_ec2)["x86_64"][0]


def nodeclass(spec: str, image: str) -> EC2NodeClass:
    """An EC2NodeClass from YAML: the common selectors, then `spec` (indented as spec's children)."""
    text = textwrap.dedent(
        f"""\
        apiVersion: karpenter.k8s.aws/v1
        kind: EC2NodeClass
        metadata:
          name: default
        spec:
          role: KarpenterNodeRole-prod
          subnetSelectorTerms:
            - tags:
                karpenter.sh/discovery: {DISCOVERY}
          securityGroupSelectorTerms:
            - tags:
                karpenter.sh/discovery: {DISCOVERY}
        """
    ) + textwrap.indent(textwrap.dedent(spec).replace("IMAGE", image), "  ")
    loaded = parse_yaml(text, "nodeclass.yaml")
    (document,) = loaded.require()
    assert loaded.warnings == (), [w.detail for w in loaded.warnings]
    assert isinstance(document.model, EC2NodeClass)
    return document.model


def launch_and_read_template(
    moto_ec2: Any, the_nodeclass: EC2NodeClass, *, cluster: ClusterInfo = CLUSTER, ssm: Any = None
) -> dict[str, Any]:
    """Launch one claim with `the_nodeclass`; the LaunchTemplateData moto stored for it."""
    clock = VirtualClock(1_763_640_000.0)
    provider = Ec2CloudProvider(
        moto_ec2,
        ssm,
        cluster,
        instance_profile="prod-nodewright-node",
        clock=clock,
        backoff=Backoff(sleep=lambda _: None, random=lambda: 1.0),
        claim_label=False,
    )
    claim = NodeClaim(
        name="general-x7k2p",
        nodepool="general",
        requirements=Requirements.parse([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]),
    )
    request = LaunchRequest(claim=claim, nodepool=node_pool("general"), nodeclass=the_nodeclass, options=OPTIONS)
    instance = provider.launch(request)
    assert instance.instance_id.startswith("i-")
    (template,) = moto_ec2.describe_launch_templates()["LaunchTemplates"]
    (version,) = moto_ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])[
        "LaunchTemplateVersions"
    ]
    data: dict[str, Any] = version["LaunchTemplateData"]
    return data


def security_group(moto_ec2: Any) -> str:
    (group,) = moto_ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": ["nodes"]}])[
        "SecurityGroups"
    ]
    return str(group["GroupId"])


def test_without_network_fields_the_groups_go_on_the_instance_and_no_interface_is_described(
    moto_ec2: Any, image: str
) -> None:
    data = launch_and_read_template(moto_ec2, nodeclass("amiFamily: AL2023\namiSelectorTerms: [{id: IMAGE}]\n", image))

    assert data["SecurityGroupIds"] == [security_group(moto_ec2)]
    assert "NetworkInterfaces" not in data
    assert "Placement" not in data
    assert "CpuOptions" not in data


def test_placement_group_by_name_goes_into_the_launch_template(moto_ec2: Any, image: str) -> None:
    spec = """\
        amiFamily: AL2023
        amiSelectorTerms: [{id: IMAGE}]
        placementGroupSelector:
          name: training
        """
    data = launch_and_read_template(moto_ec2, nodeclass(spec, image))

    assert data["Placement"] == {"GroupName": "training"}


def test_placement_group_by_id_goes_into_the_launch_template(moto_ec2: Any, image: str) -> None:
    spec = """\
        amiFamily: AL2023
        amiSelectorTerms: [{id: IMAGE}]
        placementGroupSelector:
          id: pg-0123456789abcdef0
        """
    data = launch_and_read_template(moto_ec2, nodeclass(spec, image))

    assert data["Placement"] == {"GroupId": "pg-0123456789abcdef0"}


def test_connection_tracking_and_ip_prefixes_go_on_one_primary_interface_with_the_groups(
    moto_ec2: Any, image: str
) -> None:
    spec = """\
        amiFamily: AL2023
        amiSelectorTerms: [{id: IMAGE}]
        connectionTracking:
          tcpEstablishedTimeout: 3600
          udpTimeout: 30
        ipPrefixCount: 2
        cpuOptions:
          nestedVirtualization: enabled
        """
    data = launch_and_read_template(moto_ec2, nodeclass(spec, image))

    assert "SecurityGroupIds" not in data
    assert data["NetworkInterfaces"] == [
        {
            "DeviceIndex": 0,
            "Groups": [security_group(moto_ec2)],
            "Ipv4PrefixCount": 2,
            "ConnectionTrackingSpecification": {"TcpEstablishedTimeout": 3600, "UdpTimeout": 30},
        }
    ]
    assert data["CpuOptions"] == {"NestedVirtualization": "enabled"}


def test_ip_prefixes_are_ipv6_prefixes_on_an_ipv6_cluster(moto_ec2: Any, image: str) -> None:
    spec = """\
        amiFamily: AL2023
        amiSelectorTerms: [{id: IMAGE}]
        ipPrefixCount: 1
        """
    ipv6 = ClusterInfo(
        name="prod",
        endpoint=CLUSTER.endpoint,
        certificate_authority=CLUSTER.certificate_authority,
        version="1.31",
        service_cidr="fd00:10:96::/112",
        ip_family="ipv6",
    )
    data = launch_and_read_template(moto_ec2, nodeclass(spec, image), cluster=ipv6)

    (interface,) = data["NetworkInterfaces"]
    assert interface["Ipv6PrefixCount"] == 1
    assert "Ipv4PrefixCount" not in interface


def test_network_interfaces_are_described_one_by_one_and_efa_only_ones_carry_no_addresses(
    moto_ec2: Any, image: str
) -> None:
    spec = """\
        amiFamily: AL2023
        amiSelectorTerms: [{id: IMAGE}]
        associatePublicIPAddress: false
        connectionTracking:
          udpStreamTimeout: 120
        networkInterfaces:
          - networkCardIndex: 0
            deviceIndex: 0
            interfaceType: interface
          - networkCardIndex: 1
            deviceIndex: 0
            interfaceType: efa-only
        """
    data = launch_and_read_template(moto_ec2, nodeclass(spec, image))

    group = security_group(moto_ec2)
    assert "SecurityGroupIds" not in data
    assert data["NetworkInterfaces"] == [
        {
            "NetworkCardIndex": 0,
            "DeviceIndex": 0,
            "InterfaceType": "interface",
            "Groups": [group],
            "AssociatePublicIpAddress": False,
            "ConnectionTrackingSpecification": {"UdpStreamTimeout": 120},
        },
        {"NetworkCardIndex": 1, "DeviceIndex": 0, "InterfaceType": "efa-only", "Groups": [group]},
    ]


def test_custom_family_with_an_alias_boots_the_alias_ami_with_the_user_data_unchanged(
    moto_ec2: Any, image: str
) -> None:
    # Karpenter's custom-family-with-alias: the alias pins the AMI, the user bootstraps the node.
    user_data = "[settings.kubernetes]\ncluster-name = 'prod'\n"
    spec = """\
        amiFamily: Custom
        amiSelectorTerms:
          - alias: bottlerocket@latest
        userData: |
          [settings.kubernetes]
          cluster-name = 'prod'
        """
    parameters = alias_parameters(AMIAlias("bottlerocket", "latest"), CLUSTER.version)
    ssm = PublicParameters({parameters["amd64"]: image})

    data = launch_and_read_template(moto_ec2, nodeclass(spec, image), ssm=ssm)

    assert data["ImageId"] == image
    assert base64.b64decode(data["UserData"]).decode() == user_data
    assert "BlockDeviceMappings" not in data  # a custom family brings its own devices
