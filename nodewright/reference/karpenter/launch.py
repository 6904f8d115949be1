"""What Karpenter sends to EC2 for a claim, and when it starts a pass: its launch and batching. Pure.

Launch (karpenter-provider-aws pkg/providers/instance/instance.go, launch; core
pkg/cloudprovider/types.go for the capacity-type order): a claim's capacity type is the first of
reserved > spot > on-demand that one of its instance types offers within its requirements; spot
offerings dearer than the cheapest compatible on-demand offering are dropped; the 60 cheapest
types are sent to one `instant` CreateFleet, spot with `price-capacity-optimized`, on-demand with
`lowest-price` (EC2 then picks the override: the cheapest for on-demand, a deep and cheap pool for
spot). `launch` returns that request as data; the priced offering is the cheapest the request
allows, which is what on-demand pays and a lower bound of what spot pays.

Batching (core pkg/controllers/provisioning/batcher.go, options BatchIdleDuration and
BatchMaxDuration): a pass starts 1 s after the last new pending pod, at most 10 s after the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from nodewright.engine.scheduling.types import PlannedClaim
from nodewright.model.instancetype import InstanceType, Offering, OfferingKey

BATCH_IDLE_SECONDS = 1.0
BATCH_MAX_SECONDS = 10.0
MAX_TYPES_SENT = 60
CAPACITY_TYPE_ORDER = ("reserved", "spot", "on-demand")
STRATEGIES = MappingProxyType(
    {"spot": "price-capacity-optimized", "on-demand": "lowest-price", "reserved": "prioritized"}
)


@dataclass(frozen=True, slots=True)
class Launch:
    """One CreateFleet request: capacity type, allocation strategy, the types sent (cheapest
    first) and the cheapest offering among them.
    """

    capacity_type: str
    strategy: str
    types: tuple[str, ...]
    offering: Offering
    instance_type: InstanceType


def launch(claim: PlannedClaim, blocked: frozenset[OfferingKey] = frozenset()) -> Launch | None:
    """The request Karpenter would send for `claim` (None: none of its types has an offering)."""
    offers: dict[str, list[tuple[Offering, InstanceType]]] = {}
    for it in claim.options:
        for o in it.offerings:
            if o.available and (o.capacity_type, it.name, o.zone) not in blocked and o.allowed_by(claim.requirements):
                offers.setdefault(o.capacity_type, []).append((o, it))
    on_demand = min((o.price for o, _ in offers.get("on-demand", ())), default=float("inf"))
    if "spot" in offers:
        offers["spot"] = [(o, it) for o, it in offers["spot"] if o.price <= on_demand]
    for capacity_type in CAPACITY_TYPE_ORDER:
        found = offers.get(capacity_type)
        if not found:
            continue
        cheapest: dict[str, tuple[Offering, InstanceType]] = {}
        for o, it in found:
            if it.name not in cheapest or (o.price, o.zone) < (cheapest[it.name][0].price, cheapest[it.name][0].zone):
                cheapest[it.name] = (o, it)
        ranked = sorted(cheapest.values(), key=lambda pair: (pair[0].price, pair[1].name))[:MAX_TYPES_SENT]
        offering, first = ranked[0]
        return Launch(
            capacity_type=capacity_type,
            strategy=STRATEGIES[capacity_type],
            types=tuple(it.name for _, it in ranked),
            offering=offering,
            instance_type=first,
        )
    return None
