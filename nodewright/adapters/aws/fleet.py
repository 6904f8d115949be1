"""The CreateFleet request for one claim, planned and read back without I/O.

Role: the pure half of the EC2 cloud provider (`nodewright.adapters.aws.ec2`, whose docstring is
the theory of operation of a launch): which offerings the fleet may launch (`plan_fleet`:
capacity type by Karpenter's priority, reserved, then spot, then on-demand; at most the 60
cheapest types), the ClientToken and tags, the CreateFleet arguments (`fleet_request`), and the
fleet's errors sorted into capacity errors and others (`classify_errors`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.adapters.aws.launch_template import NOT_FOUND_CODES
from nodewright.adapters.aws.nodeclass_resolver import (
    ResolvedNodeClass,
)
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, OfferingKey
from nodewright.model.nodeclass import RESERVATION_CAPACITY_BLOCK
from nodewright.ports import LaunchRequest

CLUSTER_TAG = "nodewright.io/cluster"
NODEPOOL_TAG = wk.NW_NODEPOOL
NODECLAIM_TAG = wk.NW_NODECLAIM
MAX_INSTANCE_TYPES = 60
# Fleet errors that mean "no capacity for this offering now": block it and try elsewhere.
CAPACITY_ERROR_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientCapacity",
        "UnfulfillableCapacity",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
        "InsufficientFreeAddressesInSubnet",
        "ReservationCapacityExceeded",
        "SpotMaxPriceTooLow",
        "Unsupported",
    }
)


@dataclass(frozen=True, slots=True)
class Override:
    """One (instance type, zone) the fleet may launch, with the subnet, architecture, price and
    the AMI the type boots (its launch template).
    """

    instance_type: str
    zone: str
    subnet_id: str
    arch: str
    price: float
    image_id: str = ""
    reservation_id: str = ""
    reservation_type: str = ""
    reservation_left: int = 0
    reservation_interruptible: bool = False

    @property
    def template_key(self) -> tuple[str, str]:
        """The launch template this override launches with: its AMI and its reservation."""
        return (self.image_id, self.reservation_id)

    def offering(self, capacity_type: str) -> OfferingKey:
        """The (capacity type, instance type, zone) key of this override."""
        return (capacity_type, self.instance_type, self.zone)


@dataclass(frozen=True, slots=True)
class FleetPlan:
    """The capacity type to launch and the overrides to offer EC2, cheapest first.

    `reservation_type` is the kind of a reserved plan (`default` or `capacity-block`), else "";
    `reservation_interruptible`: the plan's reservations are interruptible ODCRs.
    """

    capacity_type: str
    overrides: tuple[Override, ...]
    reservation_type: str = ""
    reservation_interruptible: bool = False
    # A NodeOverlay priced some option: EC2 must follow the overrides' order (their `Priority`),
    # not its own list prices, as Karpenter's AWS provider does for an overlaid claim.
    prioritized: bool = False

    @property
    def offerings(self) -> tuple[OfferingKey, ...]:
        """Every offering the plan asks for."""
        return tuple(o.offering(self.capacity_type) for o in self.overrides)


# --- pure planning -----------------------------------------------------------------------------


def candidate_overrides(
    request: LaunchRequest, resolved: ResolvedNodeClass, remaining: Mapping[str, int] | None = None
) -> dict[str, list[Override]]:
    """Capacity type -> the overrides of every offering the request allows, in option order.

    A reserved offering is left out when `remaining` (reservation id -> instances left, the
    adapter's count) says its reservation is full; without `remaining` its own count decides.
    """
    requirements = request.claim.requirements
    type_req = requirements.get(wk.INSTANCE_TYPE)
    out: dict[str, list[Override]] = {}
    for option in request.options:
        if type_req is not None and not type_req.has(option.name):
            continue
        image = resolved.image_for(option)
        if image is None:
            continue
        for offer in sorted(option.available_offerings(), key=lambda o: (o.price, o.zone, o.capacity_type)):
            if not offer.allowed_by(requirements):  # zone, capacity type, reservation id and type
                continue
            subnet = resolved.subnets.get(offer.zone)
            if subnet is None or (offer.capacity_type, option.name, offer.zone) in request.blocked:
                continue
            left = offer.reservation_capacity
            if offer.reservation_id:
                left = remaining.get(offer.reservation_id, left) if remaining is not None else left
                if left <= 0:
                    continue
            out.setdefault(offer.capacity_type, []).append(
                Override(
                    option.name,
                    offer.zone,
                    subnet.id,
                    option.arch,
                    offer.price,
                    image.id,
                    reservation_id=offer.reservation_id,
                    reservation_type=offer.reservation_type,
                    reservation_left=left if offer.reservation_id else 0,
                    reservation_interruptible=offer.reservation_interruptible,
                )
            )
    return out


def _reserved_overrides(reserved: Sequence[Override]) -> tuple[tuple[str, bool], list[Override]]:
    """The kind (type, interruptible) and overrides of a reserved plan: the cheapest override's
    kind only (CreateFleet takes one market type; on a price tie Karpenter's order: ODCR, capacity
    block, interruptible ODCR), one reservation per (type, zone), the one with most left (one
    offering per pool), and for a capacity block only the cheapest (one block per request).
    """
    cheapest = min(
        reserved,
        key=lambda o: (o.price, _kind_rank(o), o.instance_type, o.zone, o.reservation_id),
    )
    kind = (cheapest.reservation_type, cheapest.reservation_interruptible)
    best: dict[tuple[str, str], Override] = {}
    for override in reserved:
        if (override.reservation_type, override.reservation_interruptible) != kind:
            continue
        key = (override.instance_type, override.zone)
        held = best.get(key)
        if held is None or (-override.reservation_left, override.reservation_id) < (
            -held.reservation_left,
            held.reservation_id,
        ):
            best[key] = override
    chosen = [cheapest] if kind[0] == RESERVATION_CAPACITY_BLOCK else list(best.values())
    return kind, chosen


def _kind_rank(override: Override) -> int:
    """Karpenter's preference between reservation kinds of equal price (lower first)."""
    if override.reservation_interruptible:
        return 2
    return 1 if override.reservation_type == RESERVATION_CAPACITY_BLOCK else 0


def plan_fleet(
    request: LaunchRequest, resolved: ResolvedNodeClass, remaining: Mapping[str, int] | None = None
) -> FleetPlan | None:
    """What to ask CreateFleet for, or None when no allowed offering remains."""
    candidates = candidate_overrides(request, resolved, remaining)
    if candidates.get("reserved"):
        (kind, interruptible), reserved = _reserved_overrides(candidates["reserved"])
        ordered = sorted(reserved, key=lambda o: (o.price, o.instance_type, o.zone))
        return FleetPlan(
            "reserved",
            tuple(ordered[:MAX_INSTANCE_TYPES]),
            reservation_type=kind,
            reservation_interruptible=interruptible,
        )
    spot = candidates.get("spot", [])
    on_demand = candidates.get("on-demand", [])
    if spot and on_demand:
        # Karpenter: spot dearer than on-demand is never worth its interruptions.
        cheapest = min(o.price for o in on_demand)
        spot = [o for o in spot if o.price <= cheapest]
    capacity_type, chosen = ("spot", spot) if spot else ("on-demand", on_demand)
    if not chosen:
        return None
    types: list[str] = []
    for override in chosen:
        if override.instance_type not in types:
            types.append(override.instance_type)
    kept = set(types[:MAX_INSTANCE_TYPES])
    overrides = sorted((o for o in chosen if o.instance_type in kept), key=lambda o: (o.price, o.instance_type, o.zone))
    overlaid = any(t.price_overlaid for t in request.options)
    return FleetPlan(capacity_type, tuple(overrides), prioritized=overlaid)


def client_token(cluster: str, claim: str, variant: str = "") -> str:
    """The CreateFleet ClientToken for a claim (<= 64 characters, stable across retries).

    With `variant` (the request's content) the token also depends on what is asked for: used only
    after EC2 reported the claim's plain token spent on a different request.
    """
    token = "nw-" + hashlib.sha256(f"{cluster}/{claim}".encode()).hexdigest()[:32]
    if variant:
        token += "-" + hashlib.sha256(variant.encode()).hexdigest()[:24]
    return token


def resource_tags(cluster: str, request: LaunchRequest) -> dict[str, str]:
    """Tags of every resource a launch creates: the NodeClass's tags, then ours (which win)."""
    claim = request.claim
    return {
        **request.nodeclass.tags,
        f"kubernetes.io/cluster/{cluster}": "owned",
        CLUSTER_TAG: cluster,
        NODEPOOL_TAG: request.nodepool.name,
        NODECLAIM_TAG: claim.name,
        wk.NODEPOOL: request.nodepool.name,
        "Name": f"{request.nodepool.name}/{claim.name}",
    }


def tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    """`tags` as EC2's TagSpecifications want them: `[{"Key": k, "Value": v}]`, sorted by key."""
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def fleet_request(
    plan: FleetPlan, templates: Mapping[tuple[str, str], str], tags: Mapping[str, str], token: str
) -> dict[str, Any]:
    """The CreateFleet arguments: one launch template config per (AMI, reservation) (`templates`:
    `Override.template_key` -> template name).
    """
    configs = []
    for key in sorted({o.template_key for o in plan.overrides}):
        configs.append(
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": templates[key], "Version": "$Latest"},
                "Overrides": [
                    {
                        "InstanceType": o.instance_type,
                        "SubnetId": o.subnet_id,
                        "AvailabilityZone": o.zone,
                        # 0 is EC2's highest priority: the overrides are cheapest first at effective prices.
                        **({"Priority": float(rank)} if plan.prioritized else {}),
                    }
                    for rank, o in enumerate(plan.overrides)
                    if o.template_key == key
                ],
            }
        )
    target_type = plan.capacity_type
    if plan.capacity_type == "reserved":
        # EC2 has no `reserved` target: an ODCR is on-demand capacity, a block its own market, an
        # interruptible ODCR `reserved-capacity` of that reservation type.
        target_type = "capacity-block" if plan.reservation_type == RESERVATION_CAPACITY_BLOCK else "on-demand"
        if plan.reservation_interruptible:
            target_type = "reserved-capacity"
    request: dict[str, Any] = {
        "Type": "instant",
        "ClientToken": token,
        "TargetCapacitySpecification": {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": target_type},
        "LaunchTemplateConfigs": configs,
        "TagSpecifications": [
            {"ResourceType": kind, "Tags": tag_list(tags)} for kind in ("instance", "volume", "fleet")
        ],
    }
    if plan.capacity_type == "spot":
        strategy = "capacity-optimized-prioritized" if plan.prioritized else "price-capacity-optimized"
        request["SpotOptions"] = {"AllocationStrategy": strategy}
    elif target_type == "reserved-capacity":
        request["ReservedCapacityOptions"] = {"ReservationTypes": ["interruptible-capacity-reservation"]}
    elif target_type == "on-demand":
        request["OnDemandOptions"] = {"AllocationStrategy": "prioritized" if plan.prioritized else "lowest-price"}
    return request


@dataclass(frozen=True, slots=True)
class FleetErrors:
    """The Errors of a CreateFleet response, split into capacity errors and the rest."""

    capacity: tuple[OfferingKey, ...]
    other: tuple[str, ...]
    template_missing: bool
    reason: str


def classify_errors(errors: Iterable[Mapping[str, Any]], plan: FleetPlan) -> FleetErrors:
    """Sort fleet errors: capacity errors -> the offerings they hit; the rest -> messages."""
    zone_of_subnet = {o.subnet_id: o.zone for o in plan.overrides}
    capacity: list[OfferingKey] = []
    other: list[str] = []
    codes: list[str] = []
    missing = False
    for error in errors:
        code = str(error.get("ErrorCode", ""))
        message = str(error.get("ErrorMessage", ""))
        codes.append(code)
        overrides = (error.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
        # EC2 reports a reserved launch's lifecycle as on-demand: the offering that failed is ours.
        capacity_type = (
            plan.capacity_type
            if plan.capacity_type == "reserved"
            else str(error.get("Lifecycle") or plan.capacity_type)
        )
        if code in CAPACITY_ERROR_CODES:
            instance_type = overrides.get("InstanceType")
            zone = overrides.get("AvailabilityZone") or zone_of_subnet.get(str(overrides.get("SubnetId", "")))
            if instance_type and zone:
                capacity.append((capacity_type, str(instance_type), str(zone)))
            else:
                capacity.extend(plan.offerings)
        else:
            missing = missing or code in NOT_FOUND_CODES
            other.append(f"{code}: {message}" if message else code)
    unique_codes = sorted(set(codes))
    return FleetErrors(
        capacity=tuple(sorted(set(capacity))),
        other=tuple(dict.fromkeys(other)),
        template_missing=missing,
        reason=", ".join(unique_codes) or "no instance launched",
    )


def offering_price(options: Sequence[InstanceType], capacity_type: str, instance_type: str, zone: str) -> float:
    """$/h of the offering (`capacity_type`, `zone`) of `instance_type` among `options`; 0.0 when absent."""
    for option in options:
        if option.name == instance_type:
            for offer in option.offerings:
                if offer.capacity_type == capacity_type and offer.zone == zone:
                    return offer.price
    return 0.0
