# ruff: noqa: F811 - the fixtures of test_ec2_launch.py are imported by name and taken as arguments
"""A launch whose options a NodeOverlay priced lets EC2 follow Nodewright's order.

EC2's `lowest-price` (on-demand) and `price-capacity-optimized` (spot) rank overrides by EC2's own
list prices, which know nothing of a Savings Plan or a discount; Karpenter's AWS provider then asks
for `prioritized` / `capacity-optimized-prioritized` with the overrides in its price order. Faked:
EC2 (moto, through the recording `IdempotentEc2` of test_ec2_launch.py). Observed: the CreateFleet
request and the price recorded for the instance.
"""

from __future__ import annotations

import pytest

from nodewright.config import parse_yaml
from nodewright.engine.overlay import apply_overlays
from nodewright.engine.scheduling import PoolCapacity
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from tests.adapters.aws.fakes import IdempotentEc2
from tests.adapters.aws.test_ec2_launch import (  # noqa: F401  (fixtures)
    claim,
    ec2,
    moto_ec2,
    network,
    nodeclass,
    provider,
    public_images,
    request,
)
from tests.builders import instance_type, node_pool

LISTED = (
    instance_type("m5.xlarge", price=0.192, spot_price=0.080),
    instance_type("m7i.xlarge", price=0.2016, spot_price=0.085),
)
SAVINGS_PLAN = """\
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: savings-plan}
spec:
  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i]}]
  priceAdjustment: "-28%"
"""
ON_DEMAND = {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}


def overlaid() -> tuple[InstanceType, ...]:
    overlays = [d.model for d in parse_yaml(SAVINGS_PLAN, "o.yaml").require() if isinstance(d.model, NodeOverlay)]
    (pool,) = apply_overlays((PoolCapacity(node_pool("general"), LISTED),), overlays).pools
    return tuple(sorted(pool.instance_types, key=lambda t: min(o.price for o in t.offerings)))


def test_an_overlaid_on_demand_launch_is_prioritized_in_effective_price_order(
    ec2: IdempotentEc2, nodeclass: EC2NodeClass
) -> None:
    options = overlaid()
    instance = provider(ec2).launch(request(nodeclass, claim("general-a", ON_DEMAND), options=options))

    (fleet,) = ec2.fleet_requests
    assert fleet["OnDemandOptions"] == {"AllocationStrategy": "prioritized"}
    ranked = sorted(
        (o["Priority"], o["InstanceType"]) for config in fleet["LaunchTemplateConfigs"] for o in config["Overrides"]
    )
    assert ranked[0][1] == "m7i.xlarge"  # $0.1452 effective: first, though dearer at list prices
    assert {name for _, name in ranked} == {"m5.xlarge", "m7i.xlarge"}
    if instance.instance_type == "m7i.xlarge":
        assert instance.price == pytest.approx(0.2016 * 0.72)


def test_a_spot_launch_with_an_overlay_asks_for_capacity_optimized_prioritized(
    ec2: IdempotentEc2, nodeclass: EC2NodeClass
) -> None:
    provider(ec2).launch(request(nodeclass, options=overlaid()))

    (fleet,) = ec2.fleet_requests
    assert fleet["SpotOptions"] == {"AllocationStrategy": "capacity-optimized-prioritized"}


def test_without_an_overlay_ec2_keeps_its_own_price_order(ec2: IdempotentEc2, nodeclass: EC2NodeClass) -> None:
    provider(ec2).launch(request(nodeclass, claim("general-b", ON_DEMAND), options=LISTED))

    (fleet,) = ec2.fleet_requests
    assert fleet["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    assert all("Priority" not in o for config in fleet["LaunchTemplateConfigs"] for o in config["Overrides"])
