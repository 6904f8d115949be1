"""Instance profiles from an EC2NodeClass's `role` or `instanceProfile`, as Karpenter chooses them.

Faked: IAM and EC2 by moto in-process (`mock_aws`), with the fixtures of test_ec2_launch (network,
AMIs, CreateFleet idempotency). Observed: the profiles IAM holds afterwards (name, path, tags,
role), the launch template's IamInstanceProfile and the LaunchError a refused role raises.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from nodewright.adapters.aws.instance_profiles import InstanceProfiles, profile_name, profile_path
from nodewright.adapters.aws.retry import Backoff
from nodewright.config.noderoles import NodeRoles
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.ports import LaunchError
from tests.adapters.aws.fakes import IdempotentEc2
from tests.adapters.aws.test_ec2_launch import (  # noqa: F401 (fixtures)
    NOW,
    PROFILE,
    ec2,
    moto_ec2,
    network,
    nodeclass,
    provider,
    public_images,
    request,
)

ROLES = NodeRoles.of("arn:aws:iam::123456789012:role/prod-nodewright-node-role", ["KarpenterNodeRole-prod"])
TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }
)


@pytest.fixture
def iam(moto_ec2: Any) -> Any:  # noqa: F811 (fixture)
    client = boto3.client("iam", region_name="us-east-1")
    for role in ("KarpenterNodeRole-prod", "SomeOtherRole", "prod-nodewright-node-role"):
        client.create_role(RoleName=role, AssumeRolePolicyDocument=TRUST)
    return client


def profiles(iam: Any, clock: VirtualClock | None = None) -> InstanceProfiles:
    return InstanceProfiles(
        iam,
        cluster="prod",
        region="us-east-1",
        roles=ROLES,
        own_profile=PROFILE,
        clock=clock or VirtualClock(NOW),
        backoff=Backoff(sleep=lambda _: None),
    )


def test_a_listed_role_gets_an_instance_profile_created_tagged_and_reused(iam: Any) -> None:
    chooser = profiles(iam)
    karpenter = EC2NodeClass("default", role="KarpenterNodeRole-prod")

    name = chooser.for_nodeclass(karpenter)
    assert name == profile_name("prod", "us-east-1", "KarpenterNodeRole-prod")
    held = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
    assert held["Path"] == profile_path("prod")
    assert [r["RoleName"] for r in held["Roles"]] == ["KarpenterNodeRole-prod"]
    tags = {t["Key"]: t["Value"] for t in held["Tags"]}
    assert tags["nodewright.io/cluster"] == "prod"

    # Another container (nothing remembered) finds it and creates nothing.
    assert profiles(iam).for_nodeclass(EC2NodeClass("other", role="KarpenterNodeRole-prod")) == name
    assert len(iam.list_instance_profiles(PathPrefix="/nodewright/")["InstanceProfiles"]) == 1


def test_a_profile_left_half_made_gets_its_role(iam: Any) -> None:
    name = profile_name("prod", "us-east-1", "KarpenterNodeRole-prod")
    iam.create_instance_profile(InstanceProfileName=name, Path=profile_path("prod"))  # died before AddRole

    assert profiles(iam).for_nodeclass(EC2NodeClass("default", role="KarpenterNodeRole-prod")) == name
    held = iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
    assert [r["RoleName"] for r in held["Roles"]] == ["KarpenterNodeRole-prod"]


def test_the_stacks_own_role_uses_the_stacks_profile(iam: Any) -> None:
    own = EC2NodeClass("default", role="prod-nodewright-node-role")
    assert profiles(iam).for_nodeclass(own) == PROFILE
    assert iam.list_instance_profiles()["InstanceProfiles"] == []


def test_a_role_outside_the_list_is_refused_by_name_never_replaced(iam: Any) -> None:
    with pytest.raises(LaunchError, match="node role 'SomeOtherRole' is not one this deployment may pass"):
        profiles(iam).for_nodeclass(EC2NodeClass("outsider", role="SomeOtherRole"))
    assert iam.list_instance_profiles()["InstanceProfiles"] == []


def test_an_instance_profile_is_used_as_it_is_when_its_role_is_allowed(iam: Any) -> None:
    iam.create_instance_profile(InstanceProfileName="theirs")
    iam.add_role_to_instance_profile(InstanceProfileName="theirs", RoleName="KarpenterNodeRole-prod")
    iam.create_instance_profile(InstanceProfileName="foreign")
    iam.add_role_to_instance_profile(InstanceProfileName="foreign", RoleName="SomeOtherRole")

    assert profiles(iam).for_nodeclass(EC2NodeClass("a", instance_profile="theirs")) == "theirs"
    with pytest.raises(LaunchError, match="instance profile 'foreign' holds a node role 'SomeOtherRole'"):
        profiles(iam).for_nodeclass(EC2NodeClass("b", instance_profile="foreign"))
    with pytest.raises(LaunchError, match="instance profile 'missing' does not exist"):
        profiles(iam).for_nodeclass(EC2NodeClass("c", instance_profile="missing"))


def test_a_launch_of_a_listed_role_names_its_profile_in_the_launch_template(
    ec2: IdempotentEc2,  # noqa: F811 (fixture)
    nodeclass: EC2NodeClass,  # noqa: F811 (fixture)
    iam: Any,
) -> None:
    cloud = provider(ec2, profiles=profiles(iam))
    cloud.launch(request(nodeclass))  # role KarpenterNodeRole-prod

    expected = {"Name": profile_name("prod", "us-east-1", "KarpenterNodeRole-prod")}
    assert ec2.template_requests
    assert all(t["LaunchTemplateData"]["IamInstanceProfile"] == expected for t in ec2.template_requests)
