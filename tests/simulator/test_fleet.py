"""The simulated EC2's CreateFleet chooses as EC2 does (nodewright/simulator/standins/fleet.py, standins/ec2.py).

Real: the EC2 cloud provider (`Ec2CloudProvider`, the production adapter: its fleet plan, launch
templates and request) and moto (in-process) for templates, subnets, AMIs and instances.
Faked: the world behind `SimulatedEc2`, by `PriceTable`: a price per offering and a spot depth per
pool (what a scenario draws). Observed: the instance the adapter returns, what moto holds, the
fleet calls reported for the audit, and the Errors entries of the raw CreateFleet answer.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodewright.adapters.aws.ec2 import Ec2CloudProvider
from nodewright.inmemory.clock import VirtualClock
from nodewright.model import labels as wk
from nodewright.model.instance import Instance
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.requirements import Requirements
from nodewright.ports import LaunchRequest
from nodewright.simulator.standins.account import (
    CLUSTER,
    NODE_INSTANCE_PROFILE,
    Account,
    Ec2Hooks,
    FleetCall,
    Launched,
    PublicParameters,
    SimulatedEc2,
)
from nodewright.simulator.standins.fleet import (
    PRICE_CAPACITY_OPTIMIZED,
    PRIORITIZED,
    Pool,
    allocate,
    depth,
)
from nodewright.simulator.standins.timewarp import moto_follows
from tests.builders import instance_type, node_pool
from tests.simulator.test_aws import NODECLASS, START

ZONES = ("us-east-1a", "us-east-1b")
CLAIMS = itertools.count()


class PriceTable(Ec2Hooks):
    """The scenario side of the simulated EC2: prices, spot depths; records what EC2 did."""

    def __init__(self, types: Sequence[InstanceType], depths: Mapping[tuple[str, str], int] | None = None) -> None:
        self.prices = {(t.name, o.zone, o.capacity_type): o.price for t in types for o in t.offerings}
        self.depths = dict(depths or {})
        self.calls: list[FleetCall] = []
        self.launches: list[Launched] = []

    def price(self, instance_type: str, zone: str, capacity_type: str) -> float | None:
        return self.prices.get((instance_type, zone, capacity_type))

    def spot_depth(self, instance_type: str, zone: str) -> int | None:
        return self.depths.get((instance_type, zone))

    def launched(self, instance: Launched) -> None:
        self.launches.append(instance)

    def fleet(self, call: FleetCall) -> None:
        self.calls.append(call)


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Account, VirtualClock]]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    clock = VirtualClock(START)
    with mock_aws(), moto_follows(clock):
        account = Account(boto3.session.Session(region_name="us-east-1"))
        account.create({"default": NODECLASS}, ZONES, interruption_timeout=60)
        yield account, clock


def launch(
    account: tuple[Account, VirtualClock], hooks: PriceTable, options: Sequence[InstanceType], *capacity_types: str
) -> Instance:
    """One claim launched by the production adapter through the simulated EC2."""
    acc, clock = account
    cloud = Ec2CloudProvider(
        SimulatedEc2(acc.ec2, hooks),
        PublicParameters(acc.ssm, acc.images),
        CLUSTER,
        instance_profile=NODE_INSTANCE_PROFILE,
        clock=clock,
    )
    claim = NodeClaim(
        name=f"default-{next(CLAIMS):05d}",
        nodepool="default",
        requirements=Requirements.parse(
            [{"key": wk.CAPACITY_TYPE, "operator": "In", "values": list(capacity_types or ("on-demand",))}]
        ),
    )
    request = LaunchRequest(claim, node_pool("default"), NODECLASS, tuple(options))
    return cloud.launch(request)


def amd64_first(account: tuple[Account, VirtualClock]) -> bool:
    """True when the adapter's first launch-template config is the amd64 AMI's (it sorts configs by AMI id)."""
    acc, _ = account
    return acc.images["x86_64"] < acc.images["arm64"]


@pytest.mark.parametrize("cheaper", ["arm64", "amd64"])
def test_a_mixed_architecture_on_demand_request_gets_the_cheapest_type_across_every_config(
    account: tuple[Account, VirtualClock], cheaper: str
) -> None:
    graviton = 0.0340 if cheaper == "arm64" else 0.0600
    options = (
        instance_type("c7a.medium", cpu="1", memory="2Gi", price=0.0513, zones=ZONES),
        instance_type("c6g.medium", cpu="1", memory="2Gi", arch="arm64", price=graviton, zones=ZONES),
    )
    hooks = PriceTable(options)
    instance = launch(account, hooks, options)
    assert instance.instance_type == ("c6g.medium" if cheaper == "arm64" else "c7a.medium")
    assert instance.capacity_type == "on-demand"
    # The adapter sent one config per AMI; moto alone would launch the first config's first type.
    (call,) = hooks.calls
    assert {p.config for p in call.allowed} == {0, 1}
    first = "c7a.medium" if amd64_first(account) else "c6g.medium"
    assert min((p.config, p.position) for p in call.allowed if p.instance_type == first)[0] == 0
    acc, _ = account
    (described,) = [
        i
        for r in acc.ec2.describe_instances()["Reservations"]
        for i in r["Instances"]
        if i["State"]["Name"] != "terminated"
    ]
    assert described["InstanceType"] == instance.instance_type
    expected_image = acc.images["arm64" if cheaper == "arm64" else "x86_64"]
    assert described["ImageId"] == expected_image  # the override's own config (its AMI) was launched


def test_a_deep_slightly_dearer_spot_pool_wins_over_a_shallow_cheap_one(account: tuple[Account, VirtualClock]) -> None:
    options = (
        instance_type("m6a.large", price=0.0864, spot_price=0.0300, zones=ZONES),
        instance_type("m5.large", price=0.0960, spot_price=0.0320, zones=ZONES),
    )
    depths = {("m6a.large", z): 3 for z in ZONES} | {("m5.large", z): 400 for z in ZONES}
    hooks = PriceTable(options, depths)
    instance = launch(account, hooks, options, "spot")
    assert (instance.instance_type, instance.capacity_type) == ("m5.large", "spot")
    (call,) = hooks.calls
    assert call.strategy == PRICE_CAPACITY_OPTIMIZED
    # Among deep pools price decides again: two deep pools, the cheaper one is taken.
    deep = PriceTable(options, dict.fromkeys(depths, 400))
    assert launch(account, deep, options, "spot").instance_type == "m6a.large"


def test_a_spot_pool_runs_short_as_instances_are_taken_and_refills_when_they_go(
    account: tuple[Account, VirtualClock],
) -> None:
    options = (instance_type("m6a.large", price=0.0864, spot_price=0.0300, zones=ZONES[:1]),)
    hooks = PriceTable(options, {("m6a.large", "us-east-1a"): 2})
    acc, _ = account
    ec2 = SimulatedEc2(acc.ec2, hooks)
    acc.ec2.create_launch_template(LaunchTemplateName="nodes", LaunchTemplateData={"ImageId": acc.images["x86_64"]})
    subnet = acc.ec2.describe_subnets(Filters=[{"Name": "availability-zone", "Values": ["us-east-1a"]}])["Subnets"][0]
    request: dict[str, Any] = {
        "Type": "instant",
        "TargetCapacitySpecification": {"TotalTargetCapacity": 3, "DefaultTargetCapacityType": "spot"},
        "SpotOptions": {"AllocationStrategy": PRICE_CAPACITY_OPTIMIZED},
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": "nodes", "Version": "$Latest"},
                "Overrides": [
                    {"InstanceType": "m6a.large", "SubnetId": subnet["SubnetId"], "AvailabilityZone": "us-east-1a"}
                ],
            }
        ],
    }
    first = ec2.create_fleet(**request)
    ids = [i for entry in first["Instances"] for i in entry["InstanceIds"]]
    assert len(ids) == 2  # partial fulfilment: the pool held two
    assert [e["ErrorCode"] for e in first["Errors"]] == ["InsufficientInstanceCapacity"]
    assert all(entry["Lifecycle"] == "spot" for entry in first["Instances"])
    empty = ec2.create_fleet(
        **{
            **request,
            "TargetCapacitySpecification": {**request["TargetCapacitySpecification"], "TotalTargetCapacity": 1},
        }
    )
    assert empty["Instances"] == []
    assert [e["ErrorCode"] for e in empty["Errors"]] == ["InsufficientInstanceCapacity"]
    ec2.terminate_instances(InstanceIds=ids[:1])
    assert ec2.in_pool("spot", "m6a.large", "us-east-1a") == 1
    again = ec2.create_fleet(
        **{
            **request,
            "TargetCapacitySpecification": {**request["TargetCapacitySpecification"], "TotalTargetCapacity": 1},
        }
    )
    assert len(again["Instances"]) == 1
    assert again["Errors"] == []


@pytest.mark.parametrize(
    ("strategy", "target", "expected"),
    [
        pytest.param("lowest-price", 4, [("big", 1)], id="lowest-price-per-unit-of-weighted-capacity"),
        pytest.param(PRIORITIZED, 4, [("small", 4)], id="prioritized-before-price"),
        pytest.param("lowest-price", 5, [("big", 2)], id="a-weight-rounds-the-instances-up"),
    ],
)
def test_allocation_follows_the_strategy_and_the_weights(
    strategy: str, target: int, expected: list[tuple[str, int]]
) -> None:
    pools = [
        Pool(0, 0, "small", "us-east-1a", price=0.05, weight=1, priority=0),
        Pool(1, 1, "big", "us-east-1a", price=0.16, weight=4, priority=1),
    ]
    allocation = allocate(pools, target, strategy)
    assert [(p.instance_type, n) for p, n in allocation.launches] == expected
    assert allocation.fulfilled >= target
    assert allocation.short == ()


def test_a_short_pool_passes_the_rest_of_the_target_on_and_is_reported() -> None:
    pools = [
        Pool(0, 0, "cheap", "us-east-1a", price=0.03, available=2),
        Pool(0, 1, "dear", "us-east-1a", price=0.04, available=1),
    ]
    allocation = allocate(pools, 5, "lowest-price")
    assert [(p.instance_type, n) for p, n in allocation.launches] == [("cheap", 2), ("dear", 1)]
    assert [p.instance_type for p in allocation.short] == ["cheap", "dear"]
    assert allocation.fulfilled == 3


def test_spot_depth_is_drawn_per_pool_from_the_seed_within_the_bounds() -> None:
    draws = {(t, z): depth(7, t, z, 5, 500) for t in ("m5.large", "c6g.medium", "r7a.xlarge") for z in ZONES}
    assert all(5 <= d <= 500 for d in draws.values())
    assert len(set(draws.values())) > 1
    assert draws == {(t, z): depth(7, t, z, 5, 500) for (t, z) in reversed(list(draws))}  # order-free
    assert any(depth(8, t, z, 5, 500) != d for (t, z), d in draws.items())  # another seed, another draw
