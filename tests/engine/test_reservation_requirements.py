"""The reservation labels as requirements: a NodePool or pod requiring
`karpenter.k8s.aws/capacity-reservation-id` / `-type` selects reserved offerings by them.

Faked: nothing; the real `with_reservations` and `solve()` run on builder instance types and nodes.
Observed: the claims `solve()` plans (capacity type, reservation) and the pods it leaves
unschedulable or places on existing nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodewright.engine.reservations import with_reservations
from nodewright.engine.scheduling import solve
from nodewright.engine.scheduling.types import PoolCapacity, SchedulingInput
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodeclass import RESERVATION_CAPACITY_BLOCK, CapacityReservation
from nodewright.model.pod import Pod
from tests.builders import instance_type, node, node_pool, pod

NOW = 1_800_000_000.0
ODCR, BLOCK = "cr-0aaaaaaaaaaaaaaa1", "cr-0bbbbbbbbbbbbbbb2"
ALL_TYPES = {"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["reserved", "spot", "on-demand"]}
TYPES = (instance_type("m5.xlarge", cpu="4", memory="16Gi", price=0.192, spot_price=0.08),)


def catalog() -> list[InstanceType]:
    """m5.xlarge with an ODCR of 1 and a capacity block of 1, both in us-east-1a."""

    def one(ident: str, kind: str = "default", end_time: float | None = None) -> CapacityReservation:
        return CapacityReservation(
            id=ident,
            available=1,
            instance_type="m5.xlarge",
            zone="us-east-1a",
            owner_id="111122223333",
            reservation_type=kind,
            end_time=end_time,
        )

    return with_reservations(
        TYPES,
        [one(ODCR), one(BLOCK, RESERVATION_CAPACITY_BLOCK, NOW + 86_400)],
        NOW,
    )


def solve_for(
    pods: Sequence[Pod], *requirements: Mapping[str, object], nodes: Sequence[object] = ()
) -> tuple[list[tuple[str, str]], list[str], dict[str, str]]:
    """(capacity type, reservation id) of each planned claim, the unschedulable pods, and where
    pods were placed on `nodes`.
    """
    pool = node_pool(requirements=(ALL_TYPES, *requirements))
    result = solve(
        SchedulingInput(
            pods=tuple(pods),
            pools=(PoolCapacity(pool, tuple(catalog())),),
            nodes=tuple(nodes),  # type: ignore[arg-type]
        )
    )
    claims = sorted((c.offering.capacity_type, c.offering.reservation_id) for c in result.claims)
    placed = {p: name for name, keys in result.existing.items() for p in keys}
    return claims, sorted(result.unschedulable), placed


def pods(n: int, **fields: object) -> list[Pod]:
    return [pod(f"p-{i}", cpu="3", **fields) for i in range(n)]  # type: ignore[arg-type]


def test_a_nodepool_requiring_a_reservation_id_launches_into_that_reservation_only() -> None:
    claims, unschedulable, _ = solve_for(
        pods(3), {"key": wk.CAPACITY_RESERVATION_ID, "operator": "In", "values": [BLOCK]}
    )
    assert claims == [("reserved", BLOCK)]
    assert len(unschedulable) == 2  # the block has one instance; nothing else has its id


def test_a_nodepool_requiring_a_reservation_type_uses_reservations_of_that_type() -> None:
    claims, unschedulable, _ = solve_for(
        pods(2), {"key": wk.CAPACITY_RESERVATION_TYPE, "operator": "In", "values": ["default"]}
    )
    assert claims == [("reserved", ODCR)]
    assert len(unschedulable) == 1


def test_a_pod_requiring_a_reservation_id_gets_it_while_the_others_use_any_offering() -> None:
    wants = pod("wants-block", cpu="3", node_selector={wk.CAPACITY_RESERVATION_ID: BLOCK})
    claims, unschedulable, _ = solve_for([wants, *pods(3)])
    assert not unschedulable
    assert claims.count(("reserved", BLOCK)) == 1
    assert ("reserved", ODCR) in claims
    assert claims.count(("spot", "")) == 2


def test_does_not_exist_keeps_a_nodepool_off_every_reservation() -> None:
    claims, unschedulable, _ = solve_for(pods(3), {"key": wk.CAPACITY_RESERVATION_ID, "operator": "DoesNotExist"})
    assert not unschedulable
    assert claims == [("spot", "")] * 3


def test_not_in_excludes_only_the_named_reservation() -> None:
    claims, _, _ = solve_for(pods(3), {"key": wk.CAPACITY_RESERVATION_ID, "operator": "NotIn", "values": [ODCR]})
    assert claims == [("reserved", BLOCK), ("spot", ""), ("spot", "")]


def test_a_pod_requiring_a_reservation_does_not_land_on_a_node_outside_it() -> None:
    spot_node = node("spot-1", cpu="4", memory="16Gi", labels={wk.CAPACITY_TYPE: "spot", wk.ZONE: "us-east-1a"})
    in_block = node(
        "block-1",
        cpu="4",
        memory="16Gi",
        labels={
            wk.CAPACITY_TYPE: "reserved",
            wk.ZONE: "us-east-1a",
            wk.CAPACITY_RESERVATION_ID: BLOCK,
            wk.CAPACITY_RESERVATION_TYPE: RESERVATION_CAPACITY_BLOCK,
        },
    )
    wants = pod("wants-block", cpu="3", node_selector={wk.CAPACITY_RESERVATION_ID: BLOCK})
    claims, unschedulable, placed = solve_for([wants], nodes=[spot_node])
    assert placed == {}
    assert claims == [("reserved", BLOCK)]
    assert not unschedulable
    claims, _, placed = solve_for([wants], nodes=[spot_node, in_block])
    assert list(placed.values()) == ["block-1"]
    assert claims == []
