"""NodeOverlays applied to the NodePools' instance types: effective prices and extra capacity. Pure.

Role: the one place where `karpenter.sh/v1alpha1` NodeOverlays (Savings Plans, Reserved Instance
and enterprise discounts as `price` / `priceAdjustment`, extended resources as `capacity`) change
the catalog that `solve()`, consolidation and `plan` see. Callers (controllers.provisioning's
`pool_capacities`, `nodewright plan`, `nodewright catalog`) build each NodePool's instance types
as before and pass them here with the overlays; what comes back is the same pools with overlaid
offerings, plus what changed (list price -> effective price, by which overlay) and which overlays
were refused. No I/O, no clock.

Theory of operation (Karpenter's NodeOverlay controller and instance type store, in our words):

* Matching. An overlay's requirements are checked against what a node of the type in that
  NodePool would carry: the instance type's labels, `karpenter.sh/nodepool`, the NodePool's
  template labels and `karpenter.k8s.aws/ec2nodeclass`. A key the overlay requires (In, Exists,
  Gt, ...) that none of these define does not match; NotIn / DoesNotExist of an absent key
  does. Within a matching type, the overlay applies to the offerings whose zone and capacity type
  it allows. An overlay with no requirements matches everything.
* Order. Overlays are taken by weight, highest first (no weight counts as 0); at equal weight
  the name later in the alphabet goes first, as Karpenter sorts them.
* Price. Per offering, the first overlay in that order that sets a price wins; the others that
  match it change nothing there. `price` replaces the list price; `priceAdjustment` moves the
  list price (never the price another overlay set) by an amount or a percentage, not below 0.
* Capacity. Per instance type, each extended resource takes the first overlay's value that
  names it; resources no overlay names keep the type's own value.
* Conflicts. An overlay that would set a price (or a capacity resource) on an offering (type)
  that an overlay of the same weight has already touched is refused as a whole, on every
  NodePool, so a tie never depends on which pool is looked at first (Karpenter marks it
  `ValidationSucceeded=False`, reason Conflict). The refused overlays are returned with why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from nodewright.engine.scheduling.types import PoolCapacity
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, Offering
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources

NODECLASS_LABEL = "karpenter.k8s.aws/ec2nodeclass"
_NOTHING_UNDEFINED: frozenset[str] = frozenset()
K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class PriceChange:
    """One offering whose price an overlay changed: list price -> effective price."""

    nodepool: str
    instance_type: str
    zone: str
    capacity_type: str
    list_price: float
    price: float
    overlay: str


@dataclass(frozen=True, slots=True)
class Overlaid:
    """The pools with overlays applied, what changed, and the overlays refused (name -> why).

    `capacity` maps (NodePool, instance type) to the overlays whose extended resources it got.
    """

    pools: tuple[PoolCapacity, ...]
    prices: tuple[PriceChange, ...] = ()
    capacity: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    conflicts: Mapping[str, str] = field(default_factory=dict)

    def price_of(self, nodepool: str, instance_type: str, zone: str, capacity_type: str) -> PriceChange | None:
        """The change made to one offering, if any."""
        for change in self.prices:
            if (change.nodepool, change.instance_type, change.zone, change.capacity_type) == (
                nodepool,
                instance_type,
                zone,
                capacity_type,
            ):
                return change
        return None


def ordered(overlays: Sequence[NodeOverlay]) -> list[NodeOverlay]:
    """Overlays in the order they take effect: weight descending, then name descending."""
    by_name = sorted(overlays, key=lambda o: o.name, reverse=True)
    return sorted(by_name, key=lambda o: -o.weight)  # stable: equal weights keep the name order


def node_requirements(pool: NodePool, instance_type: InstanceType) -> Requirements:
    """The labels a node of `instance_type` launched by `pool` carries, for matching overlays."""
    labels = {**pool.labels, wk.NODEPOOL: pool.name, NODECLASS_LABEL: pool.node_class_ref.name}
    return instance_type.requirements.intersection(Requirements.from_labels(labels))


def matching_offerings(overlay: NodeOverlay, pool: NodePool, instance_type: InstanceType) -> tuple[int, ...]:
    """Indexes of `instance_type`'s offerings in `pool` that `overlay` applies to (empty: none)."""
    reqs = overlay.requirements
    if reqs and not node_requirements(pool, instance_type).compatible(reqs, _NOTHING_UNDEFINED):
        return ()
    zone = reqs.get(wk.ZONE)
    capacity_type = reqs.get(wk.CAPACITY_TYPE)
    return tuple(
        i
        for i, offering in enumerate(instance_type.offerings)
        if _allows(zone, offering.zone) and _allows(capacity_type, offering.capacity_type)
    )


def _allows(requirement: Requirement | None, value: str) -> bool:
    return requirement is None or requirement.has(value)


@dataclass(slots=True)
class _Touched:
    """Per offering (price) or per resource (capacity): the winning overlay and the last weight seen."""

    overlay: NodeOverlay
    last_weight: int


def apply_overlays(pools: Sequence[PoolCapacity], overlays: Sequence[NodeOverlay]) -> Overlaid:
    """Apply `overlays` to every pool's instance types (see the module docstring for the rules).

    Types and offerings no overlay changes are returned as the same objects, so a pass with no
    overlay, or none matching, costs one scan.
    """
    if not overlays:
        return Overlaid(tuple(pools))
    prices: dict[tuple[str, str, int], _Touched] = {}  # (pool, type, offering index)
    capacity: dict[tuple[str, str, str], _Touched] = {}  # (pool, type, resource)
    conflicts: dict[str, str] = {}
    for overlay in ordered(overlays):
        matches = [
            (pc.nodepool.name, it.name, found)
            for pc in pools
            for it in pc.instance_types
            if (found := matching_offerings(overlay, pc.nodepool, it))
        ]
        clash = _conflict(overlay, matches, prices, capacity)
        if clash is not None:
            conflicts[overlay.name] = clash
            continue
        for pool, type_name, found in matches:
            if overlay.sets_price:
                for index in found:
                    _touch(prices, (pool, type_name, index), overlay)
            for resource in overlay.capacity or ():
                _touch(capacity, (pool, type_name, resource), overlay)
    return _result(pools, prices, capacity, conflicts)


def _touch(seen: dict[K, _Touched], key: K, overlay: NodeOverlay) -> None:
    found = seen.get(key)
    if found is None:
        seen[key] = _Touched(overlay, overlay.weight)
    else:
        found.last_weight = overlay.weight  # a lower weight: changes nothing, but may tie with the next


def _conflict(
    overlay: NodeOverlay,
    matches: Sequence[tuple[str, str, tuple[int, ...]]],
    prices: Mapping[tuple[str, str, int], _Touched],
    capacity: Mapping[tuple[str, str, str], _Touched],
) -> str | None:
    for pool, type_name, found in matches:
        if overlay.sets_price:
            for index in found:
                other = prices.get((pool, type_name, index))
                if other is not None and other.last_weight == overlay.weight:
                    return (
                        f"conflicts with an overlay of the same weight ({overlay.weight}) on the price of "
                        f"{type_name} in NodePool {pool} (set by {other.overlay.name})"
                    )
        for resource in overlay.capacity or ():
            other = capacity.get((pool, type_name, resource))
            if other is not None and other.last_weight == overlay.weight:
                return (
                    f"conflicts with an overlay of the same weight ({overlay.weight}) on {resource} of "
                    f"{type_name} in NodePool {pool} (set by {other.overlay.name})"
                )
    return None


def _result(
    pools: Sequence[PoolCapacity],
    prices: Mapping[tuple[str, str, int], _Touched],
    capacity: Mapping[tuple[str, str, str], _Touched],
    conflicts: Mapping[str, str],
) -> Overlaid:
    by_type: dict[tuple[str, str], list[int]] = {}
    for pool, type_name, index in prices:
        by_type.setdefault((pool, type_name), []).append(index)
    extra: dict[tuple[str, str], dict[str, NodeOverlay]] = {}
    for pool, type_name, resource in capacity:
        extra.setdefault((pool, type_name), {})[resource] = capacity[pool, type_name, resource].overlay
    changes: list[PriceChange] = []
    capacity_from: dict[tuple[str, str], tuple[str, ...]] = {}
    out: list[PoolCapacity] = []
    for pc in pools:
        name = pc.nodepool.name
        types: list[InstanceType] = []
        for it in pc.instance_types:
            key = (name, it.name)
            if key not in by_type and key not in extra:
                types.append(it)
                continue
            offerings = list(it.offerings)
            for index in sorted(by_type.get(key, ())):
                offering = offerings[index]
                overlay = prices[name, it.name, index].overlay
                offerings[index] = _priced(offering, overlay)
                changes.append(
                    PriceChange(
                        name,
                        it.name,
                        offering.zone,
                        offering.capacity_type,
                        offering.price,
                        offerings[index].price,
                        overlay.name,
                    )
                )
            overlaid = replace(it, offerings=tuple(offerings), price_overlaid=it.price_overlaid or key in by_type)
            resources = extra.get(key)
            if resources:
                added = {r: (o.capacity or Resources())[r] for r, o in resources.items()}
                overlaid = replace(overlaid, capacity=Resources({**overlaid.capacity, **added}))
                capacity_from[key] = tuple(sorted({o.name for o in resources.values()}))
            types.append(overlaid)
        out.append(PoolCapacity(pc.nodepool, tuple(types)))
    return Overlaid(tuple(out), tuple(changes), capacity_from, dict(conflicts))


def _priced(offering: Offering, overlay: NodeOverlay) -> Offering:
    return replace(offering, price=overlay.priced(offering.price))
