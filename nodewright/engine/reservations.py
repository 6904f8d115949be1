"""Capacity reservations as offerings: what a selected reservation adds to the catalog. Pure.

Role: the EC2 adapter (`nodewright.adapters.aws.reservations`) reads the reservations an
EC2NodeClass's `capacityReservationSelectorTerms` select; this module turns them into
`karpenter.sh/capacity-type: reserved` offerings of the instance types the solver plans with, and
says when a capacity block's nodes must go. No I/O, no clock: `now` is passed in.

Facts, from Karpenter's AWS provider (providers/capacityreservation, the reserved capacity
offering resolver, the launch template and fleet builders, the capacity reservation expiration
controller) and the EC2 user guide; Nodewright does the same unless a line says otherwise:

- Selector terms: `id` alone, or `tags` and/or `instanceMatchCriteria` with an optional
  `ownerID`. Terms are ORed, a term's fields ANDed; a tag value `*` means "has the tag".
- Query: DescribeCapacityReservations, always filtered `state=active`; ids by
  `CapacityReservationIds`, the rest by `owner-id`, `tag:K` / `tag-key` and
  `instance-match-criteria` filters. Unique by id; a reservation past its end date is dropped.
- Type: EC2's `ReservationType` `odcr` (or absent) is Karpenter's `default`, `capacity-block` is
  `capacity-block`; anything else (and a match criteria not `open`/`targeted`) is skipped, named.
- Match criteria: `open` and `targeted` are both launched into by targeting the id; Karpenter
  does no open matching, and gives non-reserved launch templates the preference `none` so an
  on-demand launch never silently fills an open reservation. Nodewright does both.
- Offering: one per reservation of the type, in the reservation's zone, capacity type
  `reserved`; the node gets `karpenter.k8s.aws/capacity-reservation-id` and `-type` labels.
- Price: on-demand price / 10,000,000 (`RESERVED_PRICE_DIVISOR`): already paid for, so free,
  yet still ordered by size for consolidation; 0 when no on-demand price is known.
- Available: remaining count > 0, in a zone the type is offered in, not expiring. Preference is
  reserved, then spot, then on-demand (reserved wins on price).
- Count: a launch takes one from the cached count; EC2's fleet error
  `ReservationCapacityExceeded` sets it to 0 and is a capacity error like an ICE (here: the
  capacity-error cache blocks the reserved offering and the next solve falls back). In one
  solve, no more claims are priced on a reservation than it has instances left.
- Launch: the launch template's `CapacityReservationSpecification` is preference
  `capacity-reservations-only` with the reservation id as target; a capacity block also gets
  market type `capacity-block` and the fleet `DefaultTargetCapacityType: capacity-block` without
  OnDemandOptions; a default reservation launches `on-demand` with `lowest-price`. One
  reservation per (type, zone), one capacity block per request, never both kinds in one fleet.
- Capacity block end: EC2 starts terminating its instances 30 minutes before the end (60 for
  UltraServers). Within 40 minutes of the end (`EXPIRY_LEAD_SECONDS`) Karpenter marks it
  `expiring`, stops offering it, and a 1-minute controller deletes (drains) its nodes: 10 minutes
  before EC2 starts. EC2 also sends "Capacity Block Reservation Expiration Warning" 40 minutes
  before the end; Nodewright drains on that event (`engine/interruption`) and stops offering the
  block at the same time.
- Interruptible reservations' "EC2 Capacity Reservation Instance Interruption Warning": cordon
  and drain, and the reservation is marked unavailable (here: its reserved offering is blocked
  in the capacity-error cache, `engine/interruption` `CAPACITY_RESERVATION`). Karpenter also
  launches into interruptible reservations, and so does Nodewright: the launch template's market
  type `interruptible-capacity-reservation`, the fleet's target `reserved-capacity` with
  ReservedCapacityOptions `interruptible-capacity-reservation` (no OnDemandOptions); every
  reserved node is labelled `karpenter.k8s.aws/capacity-reservation-interruptible` `true` or
  `false` (a requirement like the id and type); at an equal price a plain ODCR goes first, then
  a capacity block, then an interruptible ODCR, never two kinds in one fleet.
- Requirements: `karpenter.k8s.aws/capacity-reservation-id` and `-type` are well-known labels a
  NodePool or pod may require. Each offering decides them (`Offering.allowed_by`): a reserved
  offering has its reservation's values, any other has neither (Karpenter's offerings say
  `DoesNotExist`), so `In` / `Exists` select reserved offerings only, `NotIn` / `DoesNotExist`
  also allow spot and on-demand; the fleet of a claim asks only for the offerings its
  requirements allow. A node without the labels is taken to have none (a pod requiring a
  reservation does not land on it), and claims that require a reservation label take their
  reservations first in a pass.
- Reservation ended: an ODCR that expires or is cancelled leaves its instances running as
  on-demand ones. Karpenter's capacity type controller then relabels the NodeClaim and Node
  `karpenter.sh/capacity-type: on-demand` and drops the reservation labels; Nodewright's
  provisioner housekeeping does the same when EC2 says a node's reservation is no longer active
  (`CapacityReservations.ended`): the claim record becomes on-demand at its type's on-demand
  price (`demoted`), the node's labels are patched (`ENDED_LABELS`), so consolidation prices and
  replaces it as on-demand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, Offering
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import RESERVATION_CAPACITY_BLOCK, CapacityReservation
from nodewright.model.requirements import Requirement, Requirements

__all__ = [
    "EC2_RECLAIM_LEAD_SECONDS",
    "ENDED_LABELS",
    "EXPIRY_LEAD_SECONDS",
    "RESERVED",
    "RESERVED_PRICE_DIVISOR",
    "demoted",
    "expiring",
    "on_demand_price",
    "reclaim_time",
    "reserved_node_reservation",
    "reserved_price",
    "with_reservations",
]

RESERVED = "reserved"
ON_DEMAND = "on-demand"
# Karpenter divides the on-demand price by this: a reservation is paid for whether used or not, so
# it costs nothing more to use, yet reservations of bigger types still rank above smaller ones.
RESERVED_PRICE_DIVISOR = 10_000_000.0
# EC2 begins terminating a capacity block's instances this long before its end ...
EC2_RECLAIM_LEAD_SECONDS = 30 * 60
# ... and Karpenter stops offering it, and drains its nodes, 10 minutes before that.
EXPIRY_LEAD_SECONDS = 40 * 60


def expiring(reservation: CapacityReservation, now: float) -> bool:
    """True when `reservation` is a capacity block within EXPIRY_LEAD_SECONDS of its end."""
    return (
        reservation.reservation_type == RESERVATION_CAPACITY_BLOCK
        and reservation.end_time is not None
        and now >= reservation.end_time - EXPIRY_LEAD_SECONDS
    )


def reclaim_time(end_time: float) -> float:
    """When EC2 starts terminating the instances of a capacity block ending at `end_time`."""
    return end_time - EC2_RECLAIM_LEAD_SECONDS


def reserved_price(instance_type: InstanceType, zone: str) -> float:
    """Karpenter's price of a reservation of `instance_type`: its on-demand price (in `zone`, else
    anywhere) / RESERVED_PRICE_DIVISOR; 0.0 when no on-demand price is known.
    """
    price = on_demand_price(instance_type, zone)
    return 0.0 if price is None else price / RESERVED_PRICE_DIVISOR


def on_demand_price(instance_type: InstanceType | None, zone: str) -> float | None:
    """`instance_type`'s cheapest on-demand price in `zone`, else anywhere; None when it has none."""
    offers = [o for o in (instance_type.offerings if instance_type else ()) if o.capacity_type == ON_DEMAND]
    chosen = [o.price for o in offers if o.zone == zone] or [o.price for o in offers]
    return min(chosen) if chosen else None


def with_reservations(
    types: Sequence[InstanceType],
    reservations: Iterable[CapacityReservation],
    now: float,
    remaining: Mapping[str, int] | None = None,
) -> list[InstanceType]:
    """`types` with one `reserved` offering per reservation of each type (module docstring).

    `remaining` (reservation id -> instances it can still start) overrides a reservation's own
    `available` count: the adapter's count after the launches it made since it last read EC2.
    A reservation of a type not in `types`, or in a zone the type is not offered in (e.g. no
    subnet of the NodeClass there), adds nothing. Types without reservations are returned as is.
    """
    by_type: dict[str, list[CapacityReservation]] = {}
    for reservation in sorted(reservations, key=lambda r: r.id):
        by_type.setdefault(reservation.instance_type, []).append(reservation)
    out: list[InstanceType] = []
    for it in types:
        mine = by_type.get(it.name)
        if not mine:
            out.append(it)
            continue
        zones = {o.zone for o in it.offerings if o.capacity_type != RESERVED}
        added: list[Offering] = []
        for reservation in mine:
            if reservation.zone not in zones:
                continue
            count = reservation.available if remaining is None else remaining.get(reservation.id, reservation.available)
            added.append(
                Offering(
                    zone=reservation.zone,
                    capacity_type=RESERVED,
                    price=reserved_price(it, reservation.zone),
                    available=count > 0 and not expiring(reservation, now),
                    reservation_id=reservation.id,
                    reservation_type=reservation.reservation_type,
                    reservation_capacity=max(0, count),
                    reservation_interruptible=reservation.interruptible,
                )
            )
        if not added:
            out.append(it)
            continue
        offerings = tuple(o for o in it.offerings if o.capacity_type != RESERVED) + tuple(added)
        out.append(replace(it, offerings=offerings, requirements=_offered(it.requirements, offerings)))
    return out


def reserved_node_reservation(labels: Mapping[str, str]) -> str:
    """The reservation a node's labels say it runs in ("" when it is not labelled reserved)."""
    if labels.get(wk.CAPACITY_TYPE) != RESERVED:
        return ""
    return labels.get(wk.CAPACITY_RESERVATION_ID, "")


# The node labels of a node whose reservation ended: on-demand, and no reservation labels.
ENDED_LABELS: Mapping[str, str | None] = MappingProxyType(
    {wk.CAPACITY_TYPE: ON_DEMAND, **dict.fromkeys(wk.RESERVATION_LABELS)}
)


def demoted(claim: NodeClaim, instance_type: InstanceType | None) -> NodeClaim:
    """`claim` after its reservation ended: capacity type on-demand, priced at its type's on-demand
    price in its zone (else anywhere; its recorded price when the catalog has none), without the
    reservation labels. A claim that is not reserved is returned as is (idempotent).
    """
    if claim.capacity_type != RESERVED:
        return claim
    price = on_demand_price(instance_type, claim.zone)
    labels = {k: v for k, v in claim.labels.items() if k not in wk.RESERVATION_LABELS}
    if wk.CAPACITY_TYPE in labels:
        labels[wk.CAPACITY_TYPE] = ON_DEMAND
    return claim.with_changes(capacity_type=ON_DEMAND, price=claim.price if price is None else price, labels=labels)


def _offered(requirements: Requirements, offerings: Sequence[Offering]) -> Requirements:
    """`requirements` with zone and capacity type `In` the values of the available offerings."""
    available = [o for o in offerings if o.available]
    fixed = {
        wk.ZONE: frozenset(o.zone for o in available),
        wk.CAPACITY_TYPE: frozenset(o.capacity_type for o in available),
    }
    kept = [r for key, r in requirements.items() if key not in fixed]
    return Requirements([*kept, *(Requirement(key, False, values) for key, values in fixed.items())])
