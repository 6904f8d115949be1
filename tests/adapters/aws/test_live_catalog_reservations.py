"""The live catalog offers a NodeClass's capacity reservations as `reserved` offerings.

Faked: EC2's instance types by moto; DescribeCapacityReservations (moto lacks it) by botocore's
Stubber on a real client, answering EC2's CapacityReservation shape.
Observed: the offerings `LiveCatalog.instance_types` returns per NodeClass, and the counts after
a launch the cloud provider reports.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from botocore.stub import Stubber

from nodewright.adapters.aws.catalog import LiveCatalog
from nodewright.adapters.aws.pricing import PriceCache, Prices
from nodewright.adapters.aws.reservations import CapacityReservations, queries
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.nodeclass import EC2NodeClass, SelectorTerm
from tests.adapters.aws import test_live_catalog as live

TERMS = (SelectorTerm(id="cr-0aaaaaaaaaaaaaaa1"),)
RESERVATION = {
    "CapacityReservationId": "cr-0aaaaaaaaaaaaaaa1",
    "OwnerId": "111122223333",
    "InstanceType": "m5.xlarge",
    "AvailabilityZone": "us-east-1a",
    "AvailableInstanceCount": 2,
    "TotalInstanceCount": 2,
    "InstanceMatchCriteria": "targeted",
    "State": "active",
}


# The live catalog tests' moto EC2 fixture.
ec2 = live.ec2


@pytest.fixture
def described() -> Iterator[tuple[Any, Stubber]]:
    client = botocore.session.get_session().create_client(
        "ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stub:
        yield client, stub


def catalog(ec2: Any, reservations: CapacityReservations, clock: VirtualClock) -> LiveCatalog:
    prices = PriceCache(
        "us-east-1",
        pricing=live.UnreachablePricing(),
        ec2=ec2,
        clock=clock,
        initial=Prices(on_demand={"m5.large": 0.096, "m5.xlarge": 0.192}),
    )
    return LiveCatalog(ec2, prices, clock, zones=["us-east-1a", "us-east-1b"], reservations=reservations)


def reserved(types: Any) -> list[tuple[str, str, int, bool]]:
    return [
        (t.name, o.reservation_id, o.reservation_capacity, o.available)
        for t in types
        for o in t.offerings
        if o.capacity_type == "reserved"
    ]


def test_a_nodeclass_selecting_a_reservation_gets_its_reserved_offering_and_count(
    ec2: Any, described: tuple[Any, Stubber]
) -> None:
    client, stub = described
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": [RESERVATION]}, queries(TERMS)[0])
    clock = VirtualClock(1_800_000_000)
    reservations = CapacityReservations(client, clock)
    live = catalog(ec2, reservations, clock)

    assert reserved(live.instance_types(EC2NodeClass("ml", capacity_reservation_selector_terms=TERMS))) == [
        ("m5.xlarge", "cr-0aaaaaaaaaaaaaaa1", 2, True)
    ]
    assert reserved(live.instance_types(EC2NodeClass("plain"))) == []
    reservations.mark_launched("cr-0aaaaaaaaaaaaaaa1")
    reservations.mark_launched("cr-0aaaaaaaaaaaaaaa1")
    assert reserved(live.instance_types(EC2NodeClass("ml", capacity_reservation_selector_terms=TERMS))) == [
        ("m5.xlarge", "cr-0aaaaaaaaaaaaaaa1", 0, False)
    ]
    stub.assert_no_pending_responses()  # one read of EC2 within the minute


def test_when_ec2_cannot_be_asked_the_types_are_offered_without_reservations(
    ec2: Any, described: tuple[Any, Stubber], caplog: pytest.LogCaptureFixture
) -> None:
    client, stub = described
    stub.add_client_error("describe_capacity_reservations", "UnauthorizedOperation", http_status_code=403)
    clock = VirtualClock(1_800_000_000)
    types = catalog(ec2, CapacityReservations(client, clock), clock).instance_types(
        EC2NodeClass("ml", capacity_reservation_selector_terms=TERMS)
    )
    assert {"m5.large", "m5.xlarge"} <= {t.name for t in types}
    assert reserved(types) == []
    assert "EC2NodeClass ml: capacity reservations not read" in caplog.text
