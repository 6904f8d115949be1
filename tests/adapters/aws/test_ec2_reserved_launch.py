"""Launches into capacity reservations: the launch template and fleet Karpenter sends, and fallback.

Faked: EC2 by moto in-process (subnets, AMIs, launch templates, CreateFleet) with the requests
recorded (`IdempotentEc2`); a capacity block's CreateFleet and EC2's ReservationCapacityExceeded
by botocore's Stubber on a real client (moto has neither), on EC2's documented response shape.
Observed: the CreateLaunchTemplate and CreateFleet requests sent, the Instance returned, the
InsufficientCapacity raised and the reservation counts left.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import pytest
from botocore.stub import ANY, Stubber

from nodewright.adapters.aws.ec2 import plan_fleet
from nodewright.adapters.aws.reservations import CapacityReservations
from nodewright.engine.reservations import with_reservations
from nodewright.inmemory.clock import VirtualClock
from nodewright.model import labels as wk
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import CapacityReservation, EC2NodeClass, SelectorTerm
from nodewright.model.requirements import Requirements
from nodewright.ports import InsufficientCapacity
from tests.adapters.aws import test_ec2_launch as base
from tests.adapters.aws.fakes import IdempotentEc2
from tests.adapters.aws.test_ec2_launch import NOW, OPTIONS, claim, provider, request

# The EC2 launch tests' fixtures: moto's EC2 with a network and Amazon's images.
moto_ec2 = base.moto_ec2
public_images = base.public_images
network = base.network
ec2 = base.ec2
nodeclass = base.nodeclass
stubbed = base.stubbed

ANY_CAPACITY = {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["reserved", "spot", "on-demand"]}
ODCR = CapacityReservation(
    id="cr-0aaaaaaaaaaaaaaa1", instance_type="m5.large", zone="us-east-1a", owner_id="111122223333", available=2
)
BLOCK = CapacityReservation(
    id="cr-0bbbbbbbbbbbbbbb1",
    instance_type="m5.xlarge",
    zone="us-east-1b",
    owner_id="111122223333",
    reservation_type="capacity-block",
    available=1,
    end_time=NOW + 6 * 3600,
)


def reserving(nodeclass: EC2NodeClass) -> EC2NodeClass:
    return replace(nodeclass, capacity_reservation_selector_terms=(SelectorTerm(tags={"team": "ml"}),))


def reserved_claim(name: str) -> NodeClaim:
    """A claim of a NodePool that allows reserved, spot and on-demand capacity."""
    return replace(claim(name), requirements=Requirements.parse([ANY_CAPACITY]))


def reserved_request(nodeclass: EC2NodeClass, *reservations: CapacityReservation) -> Any:
    options = tuple(with_reservations(OPTIONS, reservations, NOW))
    the_claim = reserved_claim("general-r1")
    return request(reserving(nodeclass), the_claim, options=options)


class OneReservation:
    """DescribeCapacityReservations answering one active ODCR of m5.large in us-east-1a."""

    def __init__(self, ident: str, left: int) -> None:
        self.item = {
            "CapacityReservationId": ident,
            "OwnerId": "111122223333",
            "InstanceType": "m5.large",
            "AvailabilityZone": "us-east-1a",
            "AvailableInstanceCount": left,
            "InstanceMatchCriteria": "open",
            "State": "active",
        }

    def get_paginator(self, name: str) -> OneReservation:
        assert name == "describe_capacity_reservations"
        return self

    def paginate(self, **query: Any) -> list[dict[str, Any]]:
        return [{"CapacityReservations": [self.item]}]


def user_data(template: dict[str, Any]) -> str:
    return base64.b64decode(template["LaunchTemplateData"]["UserData"]).decode()


def test_a_reserved_launch_targets_the_reservation_and_labels_the_node(
    ec2: IdempotentEc2, nodeclass: EC2NodeClass
) -> None:
    reservations = CapacityReservations(ec2, VirtualClock(NOW))
    instance = provider(ec2, reservations=reservations).launch(reserved_request(nodeclass, ODCR))

    assert (instance.capacity_type, instance.instance_type, instance.zone) == ("reserved", "m5.large", "us-east-1a")
    assert instance.price == pytest.approx(0.096 / 10_000_000)
    (template,) = ec2.template_requests
    assert template["LaunchTemplateData"]["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0aaaaaaaaaaaaaaa1"},
    }
    assert "InstanceMarketOptions" not in template["LaunchTemplateData"]
    text = user_data(template)
    assert "karpenter.sh/capacity-type=reserved" in text
    assert "karpenter.k8s.aws/capacity-reservation-id=cr-0aaaaaaaaaaaaaaa1" in text
    assert "karpenter.k8s.aws/capacity-reservation-type=default" in text
    (fleet,) = ec2.fleet_requests
    assert fleet["TargetCapacitySpecification"] == {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "on-demand"}
    assert fleet["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    overrides = [o for c in fleet["LaunchTemplateConfigs"] for o in c["Overrides"]]
    assert [(o["InstanceType"], o["AvailabilityZone"]) for o in overrides] == [("m5.large", "us-east-1a")]
    assert reservations.remaining() == {}  # never read from EC2: nothing to count down from


def test_a_launch_counts_the_reservation_down_and_a_full_one_falls_back_to_spot(
    ec2: IdempotentEc2, nodeclass: EC2NodeClass
) -> None:
    reservations = CapacityReservations(OneReservation(ODCR.id, left=1), VirtualClock(NOW))
    (one_left,) = reservations.select([SelectorTerm(id=ODCR.id)])
    cloud = provider(ec2, reservations=reservations)
    first = cloud.launch(reserved_request(nodeclass, one_left))
    assert first.capacity_type == "reserved"
    assert reservations.remaining() == {ODCR.id: 0}
    second_claim = reserved_claim("general-r2")
    second = cloud.launch(
        request(reserving(nodeclass), second_claim, options=tuple(with_reservations(OPTIONS, [one_left], NOW)))
    )
    assert second.capacity_type == "spot"
    # A NodeClass that selects reservations launches everything else with preference `none`.
    assert ec2.template_requests[-1]["LaunchTemplateData"]["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "none"
    }


def test_a_capacity_block_launch_uses_its_market_and_only_that_block(
    stubbed: tuple[Any, Stubber], moto_ec2: Any, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    client, stubber = stubbed
    stubber.add_response(
        "create_fleet",
        {
            "FleetId": "fleet-11111111-2222-3333-4444-555555555555",
            "Errors": [],
            "Instances": [
                {
                    "LaunchTemplateAndOverrides": {
                        "LaunchTemplateSpecification": {"LaunchTemplateName": "nodewright-block", "Version": "1"},
                        "Overrides": {
                            "InstanceType": "m5.xlarge",
                            "SubnetId": network["us-east-1b"],
                            "AvailabilityZone": "us-east-1b",
                        },
                    },
                    "Lifecycle": "on-demand",
                    "InstanceIds": ["i-0123456789abcdef0"],
                    "InstanceType": "m5.xlarge",
                }
            ],
        },
        {
            "Type": "instant",
            "ClientToken": ANY,
            "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "capacity-block"},
            "LaunchTemplateConfigs": [
                {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": ANY, "Version": "$Latest"},
                    "Overrides": [
                        {
                            "InstanceType": "m5.xlarge",
                            "SubnetId": network["us-east-1b"],
                            "AvailabilityZone": "us-east-1b",
                        }
                    ],
                }
            ],
            "TagSpecifications": ANY,
        },
    )
    recorder = IdempotentEc2(moto_ec2)
    instance = provider(client, resolver_ec2=recorder).launch(reserved_request(nodeclass, BLOCK))

    assert (instance.capacity_type, instance.instance_type) == ("reserved", "m5.xlarge")
    stubber.assert_no_pending_responses()
    (template,) = recorder.template_requests
    data = template["LaunchTemplateData"]
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": "cr-0bbbbbbbbbbbbbbb1"
    }
    assert "karpenter.k8s.aws/capacity-reservation-type=capacity-block" in user_data(template)


def test_reservation_capacity_exceeded_blocks_the_reserved_offering_and_zeroes_the_count(
    stubbed: tuple[Any, Stubber], moto_ec2: Any, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    client, stubber = stubbed
    stubber.add_response(
        "create_fleet",
        {
            "FleetId": "fleet-11111111-2222-3333-4444-555555555556",
            "Errors": [
                {
                    "LaunchTemplateAndOverrides": {
                        "LaunchTemplateSpecification": {"LaunchTemplateName": "nodewright-odcr", "Version": "1"},
                        "Overrides": {"InstanceType": "m5.large", "SubnetId": network["us-east-1a"]},
                    },
                    "Lifecycle": "on-demand",
                    "ErrorCode": "ReservationCapacityExceeded",
                    "ErrorMessage": "The requested reservation does not have sufficient available capacity.",
                }
            ],
            "Instances": [],
        },
    )
    reservations = CapacityReservations(client, VirtualClock(NOW))
    with pytest.raises(InsufficientCapacity, match="ReservationCapacityExceeded") as raised:
        provider(client, resolver_ec2=IdempotentEc2(moto_ec2), reservations=reservations).launch(
            reserved_request(nodeclass, ODCR)
        )
    assert raised.value.offerings == (("reserved", "m5.large", "us-east-1a"),)
    assert reservations.remaining() == {ODCR.id: 0}


# --- plan_fleet, pure: which reservations one fleet asks for -----------------------------------


def plan_for(*reservations: CapacityReservation, remaining: dict[str, int] | None = None) -> Any:
    options = tuple(with_reservations(OPTIONS, reservations, NOW))
    req = request(EC2NodeClass(name="default"), reserved_claim("general-p1"), options=options)
    return plan_fleet(req, base.resolved_for(), remaining)


def test_one_reservation_per_type_and_zone_the_one_with_most_left() -> None:
    small = replace(ODCR, id="cr-0aaaaaaaaaaaaaaa2", available=1)
    plan = plan_for(ODCR, small)
    assert plan.capacity_type == "reserved"
    assert [(o.instance_type, o.zone, o.reservation_id) for o in plan.overrides] == [
        ("m5.large", "us-east-1a", "cr-0aaaaaaaaaaaaaaa1")
    ]
    # The adapter's own count after its launches decides, not the catalog's.
    plan = plan_for(ODCR, small, remaining={ODCR.id: 0, small.id: 1})
    assert [o.reservation_id for o in plan.overrides] == ["cr-0aaaaaaaaaaaaaaa2"]


def test_odcrs_and_blocks_never_share_a_fleet_and_a_full_reservation_leaves_spot() -> None:
    plan = plan_for(ODCR, BLOCK)  # the ODCR's m5.large is the cheaper reserved offering
    assert (plan.capacity_type, plan.reservation_type) == ("reserved", "default")
    assert {o.reservation_id for o in plan.overrides} == {ODCR.id}
    plan = plan_for(ODCR, BLOCK, remaining={ODCR.id: 0, BLOCK.id: 1})
    assert (plan.reservation_type, [o.reservation_id for o in plan.overrides]) == ("capacity-block", [BLOCK.id])
    plan = plan_for(ODCR, BLOCK, remaining={ODCR.id: 0, BLOCK.id: 0})
    assert plan.capacity_type == "spot"
