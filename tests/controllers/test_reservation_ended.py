"""A capacity reservation that ended: its nodes are relabelled and priced as on-demand.

Faked: the cluster (in-memory), EC2 (`FakeCloudProvider`), the state store and the clock, as in
tests/controllers/test_provisioning.py, whose `World` and `register` this reuses; which
reservations ended is a stand-in for the reservations adapter (its EC2 side is tested in
tests/adapters/aws/test_reservation_ends.py).
Observed: the claim record (capacity type, price, labels), the node's labels, the decision logged,
and what a second run changes (nothing).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import pytest

from nodewright.engine.reservations import with_reservations
from nodewright.model import labels as wk
from nodewright.model.nodeclass import CapacityReservation
from tests.builders import node_pool
from tests.controllers.test_provisioning import START, TYPES, FixedCatalog, World, register

RESERVATION = "cr-0aaaaaaaaaaaaaaa1"
ANY_CAPACITY = {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["reserved", "spot", "on-demand"]}


class Ends:
    """Which reservations EC2 says ended (all of `ended`), and the ids it was asked about."""

    def __init__(self, *ended: str, fail: bool = False) -> None:
        self.gone = frozenset(ended)
        self.fail = fail
        self.asked: list[list[str]] = []

    def ended(self, reservation_ids: Iterable[str]) -> frozenset[str]:
        ids = sorted(reservation_ids)
        self.asked.append(ids)
        if self.fail:
            raise RuntimeError("DescribeCapacityReservations: throttled")
        return self.gone.intersection(ids)


def reserved_catalog() -> FixedCatalog:
    """The test types with one m5.large ODCR in us-east-1a."""
    reservation = CapacityReservation(
        id=RESERVATION, instance_type="m5.large", zone="us-east-1a", owner_id="111122223333", available=1
    )
    return FixedCatalog(tuple(with_reservations(TYPES, [reservation], START)))


def ends_of(world: World) -> Ends:
    """The reservation-end answers the world's housekeeping asks."""
    assert isinstance(world.reservations, Ends)
    return world.reservations


def launched_into_the_reservation(ends: Ends) -> tuple[World, str]:
    world = World(pools=(node_pool(requirements=[ANY_CAPACITY]),), catalog=reserved_catalog(), reservations=ends)
    world.pending(1)
    world.run()
    (claim,) = world.store.claims()
    assert (claim.capacity_type, claim.zone) == ("reserved", "us-east-1a")
    node = register(world, claim, ready=True)
    reserved = {
        wk.CAPACITY_TYPE: "reserved",
        wk.CAPACITY_RESERVATION_ID: RESERVATION,
        wk.CAPACITY_RESERVATION_TYPE: "default",
    }
    world.cluster.label_node(node.name, reserved)
    return world, node.name


def test_a_node_whose_reservation_ended_is_relabelled_and_priced_on_demand() -> None:
    world, name = launched_into_the_reservation(Ends(RESERVATION))
    world.run(1)
    (claim,) = world.store.claims()
    assert claim.capacity_type == "on-demand"
    assert claim.price == pytest.approx(0.096)  # m5.large on-demand, was 0.096 / 10,000,000
    node = world.cluster.get_node(name)
    assert node is not None
    assert node.labels[wk.CAPACITY_TYPE] == "on-demand"
    assert not set(wk.RESERVATION_LABELS) & set(node.labels)
    (decision,) = world.observer.of("reservation-ended")
    assert decision["reservation_id"] == RESERVATION
    # Idempotent: nothing is left labelled reserved, so the next run asks EC2 nothing and changes nothing.
    asked = len(ends_of(world).asked)
    world.run(1)
    assert len(ends_of(world).asked) == asked
    (again,) = world.store.claims()
    assert (again.capacity_type, again.price) == (claim.capacity_type, claim.price)
    assert len(world.observer.of("reservation-ended")) == 1


def test_a_node_whose_reservation_is_active_stays_reserved() -> None:
    world, name = launched_into_the_reservation(Ends())
    world.run(1)
    assert ends_of(world).asked[-1] == [RESERVATION]
    assert world.store.claims()[0].capacity_type == "reserved"
    node = world.cluster.get_node(name)
    assert node is not None
    assert node.labels[wk.CAPACITY_RESERVATION_ID] == RESERVATION


def test_when_ec2_cannot_be_asked_nothing_is_demoted() -> None:
    world, name = launched_into_the_reservation(Ends(RESERVATION, fail=True))
    world.run(1)
    assert world.store.claims()[0].capacity_type == "reserved"
    node = world.cluster.get_node(name)
    assert node is not None
    assert node.labels[wk.CAPACITY_TYPE] == "reserved"


def test_a_crash_after_the_claim_was_saved_is_finished_by_the_next_run() -> None:
    world, name = launched_into_the_reservation(Ends(RESERVATION))
    (claim,) = world.store.claims()
    world.store.save_claim(replace(claim, capacity_type="on-demand", price=0.096))  # the first step only
    world.run(1)
    node = world.cluster.get_node(name)
    assert node is not None
    assert node.labels[wk.CAPACITY_TYPE] == "on-demand"
    assert world.store.claims()[0].price == pytest.approx(0.096)
