"""Interruptible capacity reservations: launched as Karpenter launches them.

Faked: EC2's CreateFleet by botocore's Stubber on a real client (moto knows neither the
`reserved-capacity` target nor interruptible reservations), on EC2's documented response shape;
subnets, AMIs and launch templates by moto with the requests recorded (`IdempotentEc2`), as in
test_ec2_reserved_launch.py, whose fixtures this reuses. `plan_fleet` runs on builder types.
Observed: the CreateFleet request sent (checked by the Stubber), the launch template's market
type, the node's labels in the user data, and the fleet plans chosen.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from botocore.stub import ANY, Stubber

from nodewright.adapters.aws.ec2 import plan_fleet
from nodewright.engine.reservations import with_reservations
from nodewright.model import labels as wk
from nodewright.model.nodeclass import EC2NodeClass
from tests.adapters.aws import test_ec2_launch as base
from tests.adapters.aws import test_ec2_reserved_launch as reserved
from tests.adapters.aws.fakes import IdempotentEc2
from tests.adapters.aws.test_ec2_launch import NOW, OPTIONS, provider, request
from tests.adapters.aws.test_fleet_reservation_requirements import claim_requiring

moto_ec2 = base.moto_ec2
public_images = base.public_images
network = base.network
nodeclass = base.nodeclass
stubbed = base.stubbed

INTERRUPTIBLE = replace(reserved.ODCR, id="cr-0ccccccccccccccc1", interruptible=True)


def test_an_interruptible_reservation_launches_with_its_market_type_and_fleet_target(
    stubbed: tuple[Any, Stubber], moto_ec2: Any, nodeclass: EC2NodeClass, network: dict[str, str]
) -> None:
    client, stubber = stubbed
    override = {"InstanceType": "m5.large", "SubnetId": network["us-east-1a"], "AvailabilityZone": "us-east-1a"}
    stubber.add_response(
        "create_fleet",
        {
            "FleetId": "fleet-11111111-2222-3333-4444-555555555555",
            "Errors": [],
            "Instances": [
                {
                    "LaunchTemplateAndOverrides": {
                        "LaunchTemplateSpecification": {"LaunchTemplateName": "nodewright-icr", "Version": "1"},
                        "Overrides": override,
                    },
                    "Lifecycle": "on-demand",
                    "InstanceIds": ["i-0123456789abcdef1"],
                    "InstanceType": "m5.large",
                }
            ],
        },
        {
            "Type": "instant",
            "ClientToken": ANY,
            "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "reserved-capacity"},
            "ReservedCapacityOptions": {"ReservationTypes": ["interruptible-capacity-reservation"]},
            "LaunchTemplateConfigs": [
                {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": ANY, "Version": "$Latest"},
                    "Overrides": [override],
                }
            ],
            "TagSpecifications": ANY,
        },
    )
    recorder = IdempotentEc2(moto_ec2)
    instance = provider(client, resolver_ec2=recorder).launch(reserved.reserved_request(nodeclass, INTERRUPTIBLE))

    assert (instance.capacity_type, instance.instance_type) == ("reserved", "m5.large")
    stubber.assert_no_pending_responses()
    (template,) = recorder.template_requests
    data = template["LaunchTemplateData"]
    assert data["InstanceMarketOptions"] == {"MarketType": "interruptible-capacity-reservation"}
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": INTERRUPTIBLE.id
    }
    text = reserved.user_data(template)
    assert "karpenter.k8s.aws/capacity-reservation-interruptible=true" in text
    assert "karpenter.k8s.aws/capacity-reservation-type=default" in text


def test_a_plain_odcr_launch_labels_its_node_not_interruptible(ec2: IdempotentEc2, nodeclass: EC2NodeClass) -> None:
    provider(ec2).launch(reserved.reserved_request(nodeclass, reserved.ODCR))
    (template,) = ec2.template_requests
    assert "InstanceMarketOptions" not in template["LaunchTemplateData"]
    assert "karpenter.k8s.aws/capacity-reservation-interruptible=false" in reserved.user_data(template)


ec2 = base.ec2


def plan_for(*terms: dict[str, Any]) -> Any:
    return plan_fleet(
        request(
            EC2NodeClass(name="default"),
            claim_requiring(*terms),
            options=tuple(with_reservations(OPTIONS, (reserved.ODCR, INTERRUPTIBLE), NOW)),
        ),
        base.resolved_for(),
    )


def test_at_equal_price_a_plain_odcr_goes_before_an_interruptible_one_and_never_shares_its_fleet() -> None:
    plan = plan_for()
    assert (plan.reservation_type, plan.reservation_interruptible) == ("default", False)
    assert [o.reservation_id for o in plan.overrides] == [reserved.ODCR.id]


def test_requiring_the_interruptible_label_selects_the_interruptible_reservation() -> None:
    plan = plan_for({"key": wk.CAPACITY_RESERVATION_INTERRUPTIBLE, "operator": "In", "values": ["true"]})
    assert plan.reservation_interruptible
    assert [o.reservation_id for o in plan.overrides] == [INTERRUPTIBLE.id]
