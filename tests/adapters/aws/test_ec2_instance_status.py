"""The EC2 cloud provider's status checks (node repair's input): DescribeInstanceStatus.

Faked: EC2 by moto in-process (`mock_aws`: RunInstances, TerminateInstances, DescribeInstanceStatus,
which reports every running instance's checks "ok"); an impaired instance, which moto cannot
produce, by botocore's Stubber answering with DescribeInstanceStatus's documented response
shape. Observed: the InstanceStatus values returned and the requests sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from nodewright.adapters.aws.ec2 import STATUS_BATCH, Ec2CloudProvider, instance_status_from_description
from nodewright.adapters.aws.retry import Backoff
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.cluster import ClusterInfo
from nodewright.model.instance import InstanceStatus

CLUSTER = ClusterInfo("prod", "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com", "LS0t", "1.31")
SINCE = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)


def provider(ec2: Any) -> Ec2CloudProvider:
    clock = VirtualClock(SINCE.timestamp())
    return Ec2CloudProvider(
        ec2, None, CLUSTER, instance_profile="p", clock=clock, backoff=Backoff(sleep=lambda _: None)
    )


@pytest.fixture
def moto_ec2() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


def run(ec2: Any, count: int) -> list[str]:
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    answer = ec2.run_instances(ImageId=image, MinCount=count, MaxCount=count, InstanceType="m5.large")
    return [i["InstanceId"] for i in answer["Instances"]]


def test_healthy_and_terminated_instances_report_nothing(moto_ec2: Any) -> None:
    ids = run(moto_ec2, 3)
    moto_ec2.terminate_instances(InstanceIds=[ids[0]])
    sent: list[list[str]] = []
    moto_ec2.meta.events.register(
        "provide-client-params.ec2.DescribeInstanceStatus", lambda params, **_: sent.append(list(params["InstanceIds"]))
    )
    assert provider(moto_ec2).instance_statuses([*ids, ids[1]]) == []
    assert sent == [ids]  # one call, each id once; moto answers the running ones "ok"
    answer = moto_ec2.describe_instance_status(InstanceIds=ids[1:])
    assert {s["InstanceStatus"]["Status"] for s in answer["InstanceStatuses"]} == {"ok"}


def test_no_ids_make_no_call() -> None:
    client = botocore.session.get_session().create_client("ec2", region_name="us-east-1")
    with Stubber(client) as stub:
        assert provider(client).instance_statuses([]) == []
        stub.assert_no_pending_responses()


def _impaired(instance_id: str, *, system: str = "ok", instance: str = "ok", ebs: str | None = None) -> dict[str, Any]:
    def block(status: str) -> dict[str, Any]:
        details: dict[str, Any] = {"Name": "reachability", "Status": "failed" if status == "impaired" else "passed"}
        if status == "impaired":
            details["ImpairedSince"] = SINCE
        return {"Status": status, "Details": [details]}

    item = {
        "InstanceId": instance_id,
        "AvailabilityZone": "us-east-1a",
        "InstanceState": {"Code": 16, "Name": "running"},
        "SystemStatus": block(system),
        "InstanceStatus": block(instance),
    }
    if ebs is not None:
        item["AttachedEbsStatus"] = block(ebs)
    return item


def test_impaired_checks_are_reported_with_their_start_in_batches_of_a_hundred() -> None:
    client = botocore.session.get_session().create_client(
        "ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    ids = [f"i-{n:017x}" for n in range(STATUS_BATCH + 5)]
    with Stubber(client) as stub:
        stub.add_response(
            "describe_instance_status",
            {"InstanceStatuses": [_impaired(ids[3], system="impaired"), _impaired(ids[4])]},
            {"InstanceIds": ids[:STATUS_BATCH]},
        )
        stub.add_response(
            "describe_instance_status",
            {"InstanceStatuses": [_impaired(ids[-1], instance="impaired", ebs="impaired")]},
            {"InstanceIds": ids[STATUS_BATCH:]},
        )
        statuses = provider(client).instance_statuses(ids)
        stub.assert_no_pending_responses()
    assert statuses == [
        InstanceStatus(ids[3], ("system",), SINCE.timestamp()),
        InstanceStatus(ids[-1], ("instance", "ebs"), SINCE.timestamp()),
    ]


def test_an_unknown_id_is_dropped_and_the_others_asked_again() -> None:
    client = botocore.session.get_session().create_client(
        "ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    gone, alive = "i-0000000000000dead", "i-00000000000000a1e"
    with Stubber(client) as stub:
        stub.add_client_error(
            "describe_instance_status",
            service_error_code="InvalidInstanceID.NotFound",
            service_message=f"The instance ID '{gone}' does not exist",
            expected_params={"InstanceIds": [gone, alive]},
        )
        stub.add_response(
            "describe_instance_status",
            {"InstanceStatuses": [_impaired(alive, system="impaired")]},
            {"InstanceIds": [alive]},
        )
        assert [s.instance_id for s in provider(client).instance_statuses([gone, alive])] == [alive]


def test_an_impaired_check_without_a_start_says_so_and_insufficient_data_is_not_impaired() -> None:
    item = {"InstanceId": "i-1", "SystemStatus": {"Status": "impaired"}, "InstanceStatus": {"Status": "ok"}}
    assert instance_status_from_description(item) == InstanceStatus("i-1", ("system",), 0.0)
    waiting = {"InstanceId": "i-2", "SystemStatus": {"Status": "insufficient-data"}}
    assert instance_status_from_description(waiting) is None
