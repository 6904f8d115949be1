"""A NodePool that requires a capacity reservation id launches into that reservation, through the
provisioner.

Faked: the cluster (in-memory), EC2 (`FakeCloudProvider`), the state store and the clock, as in
tests/controllers/test_provisioning.py, whose `World` this reuses; the catalog offers m5.large
with an ODCR of 1 in us-east-1a. Observed: the claims recorded (capacity type) and the pods the
provisioner reports it could not place.
"""

from __future__ import annotations

from nodewright.engine.reservations import with_reservations
from nodewright.model import labels as wk
from nodewright.model.nodeclass import CapacityReservation
from tests.builders import node_pool
from tests.controllers.test_provisioning import START, TYPES, FixedCatalog, World

RESERVATION = "cr-0aaaaaaaaaaaaaaa1"
ANY_CAPACITY = {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["reserved", "spot", "on-demand"]}


def reserved_catalog() -> FixedCatalog:
    """The test types with one m5.large ODCR in us-east-1a."""
    reservation = CapacityReservation(
        id=RESERVATION, instance_type="m5.large", zone="us-east-1a", owner_id="111122223333", available=1
    )
    return FixedCatalog(tuple(with_reservations(TYPES, [reservation], START)))


def run_with(requirement: dict[str, object]) -> tuple[list[str], dict[str, object]]:
    world = World(pools=(node_pool(requirements=[ANY_CAPACITY, requirement]),), catalog=reserved_catalog())
    world.pending(1)
    report = world.run()
    return [c.capacity_type for c in world.store.claims()], report


def test_a_nodepool_requiring_the_reservation_id_launches_reserved() -> None:
    capacity, _ = run_with({"key": wk.CAPACITY_RESERVATION_ID, "operator": "In", "values": [RESERVATION]})
    assert capacity == ["reserved"]


def test_a_nodepool_requiring_another_reservation_launches_nothing() -> None:
    capacity, report = run_with(
        {"key": wk.CAPACITY_RESERVATION_ID, "operator": "In", "values": ["cr-0ffffffffffffff99"]}
    )
    assert capacity == []
    assert report["launched"] == []


def test_a_nodepool_that_keeps_off_reservations_launches_spot() -> None:
    capacity, _ = run_with({"key": wk.CAPACITY_RESERVATION_ID, "operator": "DoesNotExist"})
    assert capacity == ["spot"]
