"""Reserved offerings: what a selected capacity reservation does to the catalog and to `solve()`.

Faked: nothing; the real `with_reservations` and `solve()` run on builder instance types.
Observed: the offerings the types get, and the claims `solve()` plans (offering, capacity type,
reservation) for pods that need one node each.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from nodewright.engine.reservations import EXPIRY_LEAD_SECONDS, RESERVED_PRICE_DIVISOR, with_reservations
from nodewright.engine.scheduling import solve
from nodewright.engine.scheduling.types import PoolCapacity, SchedulingInput
from nodewright.model import labels as wk
from nodewright.model.nodeclass import CapacityReservation
from tests.builders import instance_type, node_pool, pod

NOW = 1_800_000_000.0
ALL_TYPES = {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["reserved", "spot", "on-demand"]}
TYPES = (
    instance_type("m5.xlarge", cpu="4", memory="16Gi", price=0.192, spot_price=0.08),
    instance_type("m5.2xlarge", cpu="8", memory="32Gi", price=0.384, spot_price=0.16),
)


def reservation(ident: str = "cr-0aaaaaaaaaaaaaaa1", available: int = 2, **fields: object) -> CapacityReservation:
    values: dict[str, object] = {"instance_type": "m5.xlarge", "zone": "us-east-1a", "owner_id": "111122223333"}
    values.update(fields)
    return CapacityReservation(id=ident, available=available, **values)  # type: ignore[arg-type]


def plan(types: object, *requirements: Mapping[str, object], pods: int = 4) -> list[tuple[str, str, str]]:
    pool = node_pool(requirements=requirements or (ALL_TYPES,))
    inp = SchedulingInput(
        pods=tuple(pod(f"p-{i}", cpu="3") for i in range(pods)),
        pools=(PoolCapacity(pool, tuple(types)),),  # type: ignore[arg-type]
    )
    result = solve(inp)
    assert not result.unschedulable
    return sorted((c.offering.capacity_type, c.offering.reservation_id, c.options[0].name) for c in result.claims)


def test_a_reservation_becomes_a_nearly_free_reserved_offering_in_its_zone() -> None:
    (xlarge, large2) = with_reservations(TYPES, [reservation()], NOW)
    reserved = [o for o in xlarge.offerings if o.capacity_type == "reserved"]
    assert [(o.zone, o.reservation_id, o.reservation_capacity, o.available) for o in reserved] == [
        ("us-east-1a", "cr-0aaaaaaaaaaaaaaa1", 2, True)
    ]
    assert reserved[0].price == pytest.approx(0.192 / RESERVED_PRICE_DIVISOR)
    assert xlarge.requirements[wk.CAPACITY_TYPE].has("reserved")
    assert large2 is TYPES[1]


def test_solve_uses_the_reservation_first_and_no_more_than_its_remaining_count() -> None:
    types = with_reservations(TYPES, [reservation(available=2)], NOW)
    assert plan(types) == [
        ("reserved", "cr-0aaaaaaaaaaaaaaa1", "m5.xlarge"),
        ("reserved", "cr-0aaaaaaaaaaaaaaa1", "m5.xlarge"),
        ("spot", "", "m5.xlarge"),
        ("spot", "", "m5.xlarge"),
    ]


def test_the_adapters_count_after_its_own_launches_overrides_ec2s() -> None:
    types = with_reservations(TYPES, [reservation(available=2)], NOW, remaining={"cr-0aaaaaaaaaaaaaaa1": 1})
    assert [c[0] for c in plan(types)].count("reserved") == 1


def test_a_nodepool_that_does_not_allow_reserved_never_uses_a_reservation() -> None:
    types = with_reservations(TYPES, [reservation()], NOW)
    only = {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]}
    assert {c[0] for c in plan(types, only)} == {"spot"}


def test_a_reserved_only_nodepool_reports_pods_beyond_the_reservation_unschedulable() -> None:
    types = with_reservations(TYPES, [reservation(available=1)], NOW)
    pool = node_pool(requirements=({"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["reserved"]},))
    result = solve(
        SchedulingInput(pods=tuple(pod(f"p-{i}", cpu="3") for i in range(3)), pools=(PoolCapacity(pool, tuple(types)),))
    )
    assert [c.offering.reservation_id for c in result.claims] == ["cr-0aaaaaaaaaaaaaaa1"]
    assert len(result.unschedulable) == 2
    assert all("capacity reservations have no instance left" in why for why in result.unschedulable.values())


def test_a_capacity_block_within_forty_minutes_of_its_end_is_no_longer_offered() -> None:
    end = NOW + 3 * 3600
    block = reservation(reservation_type="capacity-block", end_time=end)
    (early, _) = with_reservations(TYPES, [block], end - EXPIRY_LEAD_SECONDS - 1)
    (late, _) = with_reservations(TYPES, [block], end - EXPIRY_LEAD_SECONDS)
    assert [o.available for o in early.offerings if o.capacity_type == "reserved"] == [True]
    assert [o.available for o in late.offerings if o.capacity_type == "reserved"] == [False]
    assert not late.requirements[wk.CAPACITY_TYPE].has("reserved")


def test_a_reservation_in_a_zone_the_type_is_not_offered_in_adds_nothing() -> None:
    types = with_reservations(TYPES, [reservation(zone="us-west-2a")], NOW)
    assert types[0] is TYPES[0]
