"""The simulated account: moto on the virtual clock, the interruption rules, capacity errors."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodewright.engine.interruption.rules import interruption_rules
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.nodeclass import AMIAlias, AMISelectorTerm, EC2NodeClass, SelectorTerm
from nodewright.simulator.standins.account import Account, Ec2Hooks, Launched, SimulatedEc2, instance_arn
from nodewright.simulator.standins.timewarp import moto_follows

START = 1_800_000_000.0
NODECLASS = EC2NodeClass(
    name="default",
    subnet_selector_terms=(SelectorTerm(tags={"karpenter.sh/discovery": "simulated"}),),
    security_group_selector_terms=(SelectorTerm(tags={"karpenter.sh/discovery": "simulated"}),),
    ami_selector_terms=(AMISelectorTerm(alias=AMIAlias("al2023", "latest")),),
    role="KarpenterNodeRole-simulated",
)


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Account, VirtualClock]]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    clock = VirtualClock(START)
    with mock_aws(), moto_follows(clock):
        account = Account(boto3.session.Session(region_name="us-east-1"))
        account.create({"default": NODECLASS}, ("us-east-1a", "us-east-1b"), interruption_timeout=60)
        yield account, clock


def put(account: Account, detail_type: str, detail: dict[str, Any], instance_id: str = "i-0abc") -> None:
    account.events.put_events(
        Entries=[
            {
                "Time": datetime.fromtimestamp(START, UTC),
                "Source": "aws.ec2",
                "DetailType": detail_type,
                "Detail": json.dumps(detail),
                "Resources": [instance_arn(instance_id)],
            }
        ]
    )


def bodies(account: Account, *, priority: bool = True) -> list[dict[str, Any]]:
    """What the priority queue (EC2's events) or else the main queue holds now."""
    url = account.priority_queue_url if priority else account.queue_url
    response = account.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    return [json.loads(m["Body"]) for m in response.get("Messages", [])]


def test_the_rules_route_what_the_stack_routes_and_nothing_else(account: tuple[Account, VirtualClock]) -> None:
    acc, _ = account
    assert set(acc.rules) == set(interruption_rules())
    put(acc, "EC2 Instance State-change Notification", {"instance-id": "i-0abc", "state": "running"})
    assert bodies(acc) == []
    put(acc, "EC2 Instance State-change Notification", {"instance-id": "i-0abc", "state": "terminated"})
    put(acc, "EC2 Spot Instance Interruption Warning", {"instance-id": "i-0abc", "instance-action": "terminate"})
    got = bodies(acc)
    assert sorted(b["detail-type"] for b in got) == [
        "EC2 Instance State-change Notification",
        "EC2 Spot Instance Interruption Warning",
    ]
    assert all(b["source"] == "aws.ec2" and b["resources"] == [instance_arn("i-0abc")] for b in got)
    assert bodies(acc, priority=False) == []  # EC2's events never wait on the main queue


def test_aws_health_scheduled_changes_use_the_main_queue(account: tuple[Account, VirtualClock]) -> None:
    acc, _ = account
    acc.events.put_events(
        Entries=[
            {
                "Time": datetime.fromtimestamp(START, UTC),
                "Source": "aws.health",
                "DetailType": "AWS Health Event",
                "Detail": json.dumps({"service": "EC2", "eventTypeCategory": "scheduledChange"}),
            }
        ]
    )
    assert [b["detail-type"] for b in bodies(acc, priority=False)] == ["AWS Health Event"]
    assert bodies(acc) == []


@pytest.mark.parametrize(
    "detail_type",
    [
        "EC2 Capacity Reservation Instance Interruption Warning",
        "EC2 Interruptible Capacity Reservation Instance Interruption Warning",
    ],
)
def test_both_capacity_reservation_warning_detail_types_reach_the_queue(
    account: tuple[Account, VirtualClock], detail_type: str
) -> None:
    acc, _ = account
    put(acc, detail_type, {"instance-id": "i-0abc", "instance-action": "terminate"})

    assert [b["detail-type"] for b in bodies(acc)] == [detail_type]


def test_sqs_delays_and_visibility_run_on_the_virtual_clock(account: tuple[Account, VirtualClock]) -> None:
    acc, clock = account
    acc.sqs.send_message(QueueUrl=acc.queue_url, MessageBody="{}", DelaySeconds=30)
    assert bodies(acc, priority=False) == []
    clock.advance(31)
    assert bodies(acc, priority=False) == [{}]
    assert bodies(acc, priority=False) == []  # invisible for the visibility timeout (60 s + 30 s margin)
    clock.advance(91)
    assert bodies(acc, priority=False) == [{}]


class Recorded(Ec2Hooks):
    def __init__(self) -> None:
        self.launches: list[Launched] = []
        self.terminations: list[Sequence[str]] = []
        self.reasons: list[str | None] = []

    def capacity_error(self, instance_type: str, zone: str, capacity_type: str) -> str | None:
        return "InsufficientInstanceCapacity" if (zone, capacity_type) == ("us-east-1a", "spot") else None

    def launched(self, instance: Launched) -> None:
        self.launches.append(instance)

    def terminated(self, instance_ids: Sequence[str], reason: str | None) -> None:
        self.terminations.append(instance_ids)
        self.reasons.append(reason)


def fleet(acc: Account, zones: Sequence[str]) -> dict[str, Any]:
    subnets = {s["AvailabilityZone"]: s["SubnetId"] for s in acc.ec2.describe_subnets()["Subnets"]}
    acc.ec2.create_launch_template(LaunchTemplateName="nodes", LaunchTemplateData={"ImageId": acc.images["x86_64"]})
    return {
        "Type": "instant",
        "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "spot"},
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": "nodes", "Version": "$Latest"},
                "Overrides": [
                    {"InstanceType": "m6a.large", "SubnetId": subnets[z], "AvailabilityZone": z} for z in zones
                ],
            }
        ],
        "TagSpecifications": [{"ResourceType": "instance", "Tags": [{"Key": "nodewright.io/nodepool", "Value": "a"}]}],
    }


def test_capacity_errors_answer_as_ec2_does_and_launch_from_the_rest(account: tuple[Account, VirtualClock]) -> None:
    acc, clock = account
    hooks = Recorded()
    ec2 = SimulatedEc2(acc.ec2, hooks)
    request = fleet(acc, ("us-east-1a", "us-east-1b"))
    response = ec2.create_fleet(**request)
    assert [e["ErrorCode"] for e in response["Errors"]] == ["InsufficientInstanceCapacity"]
    assert response["Errors"][0]["LaunchTemplateAndOverrides"]["Overrides"]["AvailabilityZone"] == "us-east-1a"
    (launched,) = hooks.launches
    assert (launched.zone, launched.capacity_type, launched.tags["nodewright.io/nodepool"]) == (
        "us-east-1b",
        "spot",
        "a",
    )
    described = acc.ec2.describe_instances(InstanceIds=[launched.instance_id])["Reservations"][0]["Instances"][0]
    assert described["LaunchTime"].timestamp() == pytest.approx(clock.now(), abs=1)  # moto follows the clock
    only_1a = {
        **request,
        "LaunchTemplateConfigs": [
            {**request["LaunchTemplateConfigs"][0], "Overrides": request["LaunchTemplateConfigs"][0]["Overrides"][:1]}
        ],
    }
    assert ec2.create_fleet(**only_1a)["Instances"] == []
    ec2.terminate_instances(InstanceIds=[launched.instance_id])
    assert hooks.terminations == [[launched.instance_id]]


def test_ec2s_own_reclaim_tells_the_world_why_and_a_callers_termination_does_not(
    account: tuple[Account, VirtualClock],
) -> None:
    acc, _ = account
    hooks = Recorded()
    ec2 = SimulatedEc2(acc.ec2, hooks)
    request = fleet(acc, ("us-east-1b",))
    first = ec2.create_fleet(**request)["Instances"][0]["InstanceIds"][0]
    second = ec2.create_fleet(**request)["Instances"][0]["InstanceIds"][0]
    ec2.reclaim([first], "spot-reclaimed")
    ec2.terminate_instances(InstanceIds=[second])
    assert hooks.terminations == [[first], [second]]
    assert hooks.reasons == ["spot-reclaimed", None]
    states = {
        i["InstanceId"]: i["State"]["Name"]
        for r in acc.ec2.describe_instances(InstanceIds=[first, second])["Reservations"]
        for i in r["Instances"]
    }
    assert states == {first: "terminated", second: "terminated"}
