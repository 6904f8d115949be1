"""The EC2 cloud provider's stop and start of standby instances, and the AMIs a NodeClass resolves to.

Faked: EC2 by moto in-process (`mock_aws`: RunInstances, StopInstances, StartInstances,
DescribeInstances, DescribeImages); SSM's public AMI parameters by `PublicParameters`; EC2's
capacity error on StartInstances, which moto cannot produce, by botocore's Stubber answering with
the documented error code. Observed: the instance states moto holds, the requests sent, what the
provider raises and the AMI ids it reports.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from nodewright.adapters.aws.ec2 import Ec2CloudProvider
from nodewright.adapters.aws.nodeclass_resolver import DEFAULT_TTL_SECONDS, alias_parameters
from nodewright.adapters.aws.retry import Backoff
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.cluster import ClusterInfo
from nodewright.model.nodeclass import AMIAlias, AMISelectorTerm, EC2NodeClass
from nodewright.ports import InsufficientCapacity, LaunchError
from tests.adapters.aws.fakes import PublicParameters, amazon_images

CLUSTER = ClusterInfo("prod", "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com", "LS0t", "1.31")
OFFERING = ("on-demand", "m5.large", "us-east-1a")


def provider(ec2: Any) -> Ec2CloudProvider:
    return Ec2CloudProvider(
        ec2, None, CLUSTER, instance_profile="p", clock=VirtualClock(0.0), backoff=Backoff(sleep=lambda _: None)
    )


@pytest.fixture
def moto_ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


def run(ec2: Any, count: int) -> list[str]:
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    answer = ec2.run_instances(ImageId=image, MinCount=count, MaxCount=count, InstanceType="m5.large")
    return [i["InstanceId"] for i in answer["Instances"]]


def state(ec2: Any, instance_id: str) -> str:
    described = ec2.describe_instances(InstanceIds=[instance_id])
    return str(described["Reservations"][0]["Instances"][0]["State"]["Name"])


def test_stop_stops_each_instance_once_and_again_is_a_no_op(moto_ec2: Any) -> None:
    ids = run(moto_ec2, 2)
    sent: list[list[str]] = []
    moto_ec2.meta.events.register(
        "provide-client-params.ec2.StopInstances", lambda params, **_: sent.append(list(params["InstanceIds"]))
    )

    provider(moto_ec2).stop([*ids, ids[0]])
    provider(moto_ec2).stop(ids)  # a retry after a crash

    assert [state(moto_ec2, i) for i in ids] == ["stopped", "stopped"]
    assert sent == [ids, ids]  # each id once per call


def test_stop_skips_ids_ec2_does_not_know(moto_ec2: Any) -> None:
    ids = run(moto_ec2, 1)

    provider(moto_ec2).stop(["i-0123456789abcdef0", *ids])

    assert state(moto_ec2, ids[0]) == "stopped"


def test_start_starts_a_stopped_instance_and_is_a_no_op_on_a_running_one(moto_ec2: Any) -> None:
    ids = run(moto_ec2, 1)
    cloud = provider(moto_ec2)
    cloud.stop(ids)

    cloud.start(ids[0], OFFERING)
    cloud.start(ids[0], OFFERING)

    assert state(moto_ec2, ids[0]) == "running"


def test_a_capacity_error_on_start_names_the_instances_offering() -> None:
    client = botocore.session.get_session().create_client("ec2", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_client_error(
            "start_instances",
            service_error_code="InsufficientInstanceCapacity",
            service_message="We currently do not have sufficient m5.large capacity in the Availability Zone.",
            expected_params={"InstanceIds": ["i-0abc"]},
        )
        with pytest.raises(InsufficientCapacity) as raised:
            provider(client).start("i-0abc", OFFERING)
    assert raised.value.offerings == (OFFERING,)
    assert raised.value.reason == "InsufficientInstanceCapacity"


def test_another_error_on_start_is_a_launch_error(moto_ec2: Any) -> None:
    with pytest.raises(LaunchError, match="InvalidInstanceID"):
        provider(moto_ec2).start("i-0123456789abcdef0", OFFERING)


def test_image_ids_follow_the_ami_an_alias_resolves_to_once_the_cache_expires(moto_ec2: Any) -> None:
    public = amazon_images(moto_ec2)
    alias = AMIAlias.parse("al2023@latest")
    parameters = alias_parameters(alias, CLUSTER.version)
    ssm = PublicParameters({parameters["amd64"]: public["x86_64"][0], parameters["arm64"]: public["arm64"][0]})
    clock = VirtualClock(0.0)
    cloud = Ec2CloudProvider(moto_ec2, ssm, CLUSTER, instance_profile="p", clock=clock)
    nodeclasses = {"default": EC2NodeClass("default", ami_selector_terms=(AMISelectorTerm(alias=alias),))}

    before = cloud.image_ids(nodeclasses)
    ssm.values[parameters["amd64"]] = public["x86_64"][1]  # a new AMI is published
    clock.advance(DEFAULT_TTL_SECONDS + 1)
    after = cloud.image_ids(nodeclasses)

    assert before == {"default": frozenset({public["x86_64"][0], public["arm64"][0]})}
    assert after == {"default": frozenset({public["x86_64"][1], public["arm64"][0]})}
