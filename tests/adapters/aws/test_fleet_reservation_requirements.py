"""A claim that requires the reservation labels launches only into the reservations they allow.

Faked: EC2 by moto in-process (subnets, AMIs, launch templates, CreateFleet) with the requests
recorded (`IdempotentEc2`), as in the reserved launch tests; `plan_fleet` runs on builder types.
Observed: the fleet plan (capacity type, reservations) and the CreateFleet overrides sent.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nodewright.adapters.aws.ec2 import plan_fleet
from nodewright.engine.reservations import with_reservations
from nodewright.model import labels as wk
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.requirements import Requirements
from tests.adapters.aws import test_ec2_launch as base
from tests.adapters.aws import test_ec2_reserved_launch as reserved
from tests.adapters.aws.fakes import IdempotentEc2
from tests.adapters.aws.test_ec2_launch import NOW, OPTIONS, provider, request

moto_ec2 = base.moto_ec2
public_images = base.public_images
network = base.network
ec2 = base.ec2
nodeclass = base.nodeclass

ODCR, BLOCK = reserved.ODCR, reserved.BLOCK
SMALL = replace(ODCR, id="cr-0aaaaaaaaaaaaaaa2", available=1)


def claim_requiring(*terms: dict[str, Any]) -> Any:
    return replace(
        reserved.reserved_claim("general-q1"), requirements=Requirements.parse([reserved.ANY_CAPACITY, *terms])
    )


def plan_for(*terms: dict[str, Any]) -> Any:
    options = tuple(with_reservations(OPTIONS, (ODCR, SMALL, BLOCK), NOW))
    return plan_fleet(
        request(EC2NodeClass(name="default"), claim_requiring(*terms), options=options), base.resolved_for()
    )


def test_a_required_reservation_id_is_the_only_one_asked_for() -> None:
    # Unconstrained, the ODCR with most left wins the (type, zone); required by id, the small one.
    assert [o.reservation_id for o in plan_for().overrides] == [ODCR.id]
    plan = plan_for({"key": wk.CAPACITY_RESERVATION_ID, "operator": "In", "values": [SMALL.id]})
    assert (plan.capacity_type, [o.reservation_id for o in plan.overrides]) == ("reserved", [SMALL.id])


def test_a_required_reservation_type_picks_the_capacity_block_over_a_cheaper_odcr() -> None:
    plan = plan_for({"key": wk.CAPACITY_RESERVATION_TYPE, "operator": "In", "values": ["capacity-block"]})
    assert (plan.reservation_type, [o.reservation_id for o in plan.overrides]) == ("capacity-block", [BLOCK.id])


def test_does_not_exist_launches_outside_every_reservation() -> None:
    plan = plan_for({"key": wk.CAPACITY_RESERVATION_ID, "operator": "DoesNotExist"})
    assert plan.capacity_type == "spot"
    assert all(not o.reservation_id for o in plan.overrides)


def test_a_launch_for_a_claim_requiring_a_reservation_sends_only_that_reservation(
    ec2: IdempotentEc2, nodeclass: EC2NodeClass
) -> None:
    options = tuple(with_reservations(OPTIONS, (ODCR, SMALL), NOW))
    required = claim_requiring({"key": wk.CAPACITY_RESERVATION_ID, "operator": "In", "values": [SMALL.id]})
    instance = provider(ec2).launch(request(reserved.reserving(nodeclass), required, options=options))
    assert instance.capacity_type == "reserved"
    (template,) = ec2.template_requests
    target = template["LaunchTemplateData"]["CapacityReservationSpecification"]["CapacityReservationTarget"]
    assert target == {"CapacityReservationId": SMALL.id}
