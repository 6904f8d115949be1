"""Instance types and their offerings (where and how they can be bought, at what price). Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

from nodewright.model import labels as wk
from nodewright.model.requirements import Requirements
from nodewright.model.resources import EMPTY, Resources

# (capacity type, instance type, zone): one offering as a key, the way the capacity-error cache
# blocks it, CreateFleet's errors name it and the scheduler skips it. An `Offering` below is the
# full description (price, reservation) of one such key's zone and capacity type for one type.
OfferingKey = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Offering:
    """One way to buy an instance type: a zone and a capacity type, at a price per hour.

    A `reserved` offering is one capacity reservation (On-Demand Capacity Reservation or Capacity
    Block) of this type in this zone: `reservation_id` names it, `reservation_type` is Karpenter's
    `default` or `capacity-block`, and `reservation_capacity` is how many more instances it can
    start (a claim may not take more); `reservation_interruptible`: EC2 may interrupt it. Other
    capacity types leave the four empty.
    """

    zone: str
    capacity_type: str
    price: float
    available: bool = True
    reservation_id: str = ""
    reservation_type: str = ""
    reservation_capacity: int = 0
    reservation_interruptible: bool = False

    def allowed_by(self, requirements: Requirements) -> bool:
        """True when a node bought through this offering meets `requirements` on the labels the
        offering decides: zone, capacity type and, as Karpenter's offerings do, the reservation id,
        type and interruptible ("true" / "false") (a reserved offering has them, any other has
        none: `NotIn` / `DoesNotExist` allow it, `In` / `Exists` do not).
        """
        get = requirements.by_key().get
        req = get(wk.ZONE)
        if req is not None and not (req.has(self.zone) if self.zone else req.allows_absent()):
            return False
        req = get(wk.CAPACITY_TYPE)
        if req is not None and not (req.has(self.capacity_type) if self.capacity_type else req.allows_absent()):
            return False
        # The reservation labels: asked one by one (a solve asks this of every offering of every type).
        interruptible = ("true" if self.reservation_interruptible else "false") if self.reservation_id else ""
        for key, value in (
            (wk.CAPACITY_RESERVATION_ID, self.reservation_id),
            (wk.CAPACITY_RESERVATION_TYPE, self.reservation_type),
            (wk.CAPACITY_RESERVATION_INTERRUPTIBLE, interruptible),
        ):
            req = get(key)
            if req is not None and not (req.has(value) if value else req.allows_absent()):
                return False
        return True


@dataclass(frozen=True, slots=True)
class InstanceType:
    """An EC2 instance type as the scheduler sees it.

    `requirements` holds the labels a node of this type gets (arch, family, cpu, ... and the
    zones and capacity types it is offered in); `overhead` is kube-reserved + system-reserved +
    the eviction threshold, so `allocatable = capacity - overhead`. `price_overlaid`: a NodeOverlay
    set the price of some offering (`nodewright.engine.overlay`), so EC2's own list prices no longer
    rank the offerings: a launch then tells EC2 Nodewright's order (Karpenter's `prioritized`).
    """

    name: str
    requirements: Requirements
    capacity: Resources
    overhead: Resources = EMPTY
    offerings: tuple[Offering, ...] = ()
    price_estimated: bool = False
    price_overlaid: bool = False
    allocatable: Resources = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "allocatable", (self.capacity - self.overhead).clamped())

    def label(self, key: str) -> str | None:
        """The single value of a label this type fixes (e.g. its family), or None."""
        req = self.requirements.get(key)
        if req is None or req.complement or len(req.values) != 1:
            return None
        return next(iter(req.values))

    @property
    def arch(self) -> str:
        """The CPU architecture label (amd64 or arm64)."""
        return self.label(wk.ARCH) or "amd64"

    def available_offerings(self) -> tuple[Offering, ...]:
        """The offerings that can be bought now."""
        return tuple(o for o in self.offerings if o.available)

    def cheapest_offering(self) -> Offering | None:
        """The cheapest available offering, ties broken by capacity type then zone."""
        offers = self.available_offerings()
        return min(offers, key=lambda o: (o.price, o.capacity_type, o.zone)) if offers else None
