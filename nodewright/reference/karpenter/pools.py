"""A NodePool's launchable instance types as vectors, as Karpenter's scheduler filters them. Pure.

`Pool` holds the types a NodePool's requirements and offerings allow, their allocatable minus
the pool's daemonset overhead (Karpenter's per-template daemonOverhead) and their capacity, and
the pool's remaining limits; claims narrow their type set with `mask` and price with `cheapest`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from nodewright.engine.scheduling.types import PoolCapacity, SchedulingInput
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, Offering
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources
from nodewright.model.taints import BLOCKING, Taint, Toleration

NODES = "nodes"  # limits.nodes: a count of nodes, not a resource of the instance type
ONE_NODE = 1000  # one node, in the thousandths quantities are held in
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
CAPACITY_PRIORITY = MappingProxyType({"reserved": 0, "spot": 1, "on-demand": 2})


class Pool:
    """A NodePool's launchable instance types as vectors, and the masks its claims filter with."""

    def __init__(self, pc: PoolCapacity, inp: SchedulingInput, names: Sequence[str]) -> None:
        np_ = pc.nodepool
        self.name = np_.name
        self.weight = np_.weight
        self.taints = np_.taints
        self.requirements = np_.requirements.intersection(Requirements.from_labels(np_.labels)).intersection(
            Requirements([Requirement.new(wk.NODEPOOL, "In", [np_.name])])
        )
        self.blocked = inp.blocked
        # Karpenter's daemonOverhead: one sum per NodeClaimTemplate of the daemonsets that would run there.
        overhead = Resources()
        for ds in inp.daemonsets:
            if tolerated(ds.template.tolerations, self.taints, prefer=False) and any(
                self.requirements.compatible(alt) for alt in ds.template.node_requirements()
            ):
                overhead = overhead + ds.template.requests
        self.overhead = overhead
        self.types: list[InstanceType] = [
            it
            for it in pc.instance_types
            if it.requirements.intersects(self.requirements) and self._allowed(it, self.requirements)
        ]
        self.alloc: IntArray = np.array(
            [[(it.allocatable - overhead)[n] for n in names] for it in self.types], dtype=np.int64
        ).reshape(len(self.types), len(names))
        self.capacity: IntArray = np.array(
            [[ONE_NODE if n == NODES else it.capacity[n] for n in names] for it in self.types], dtype=np.int64
        ).reshape(len(self.types), len(names))
        self._limits = np_.limits
        self._names = tuple(names)
        self.remaining: IntArray | None = self._remaining(inp)
        self._masks: dict[Requirements, BoolArray] = {}
        self._cheapest: dict[tuple[Requirement | None, Requirement | None], list[Offering | None]] = {}

    def _remaining(self, inp: SchedulingInput) -> IntArray | None:
        """What the pool's limits leave after `inp.used` (None: no limits)."""
        limits = self._limits
        if limits is None:
            return None
        used = inp.used.get(self.name, Resources())
        return np.array([limits[n] - used[n] if n in limits else 1 << 62 for n in self._names], dtype=np.int64)

    def again(self, inp: SchedulingInput) -> Pool:
        """This pool for another schedule of the same NodePools, daemonsets and blocked offerings
        (`PreparedPools`): its types, vectors and caches shared, its remaining limits from `inp.used`.
        A schedule only replaces `remaining` (never changes it in place), and the caches are
        functions of the types, the blocked offerings and their key.
        """
        twin = copy.copy(self)
        twin.remaining = self._remaining(inp)
        return twin

    def _allowed(self, it: InstanceType, reqs: Requirements) -> bool:
        return bool(self.offerings(it, reqs))

    def offerings(self, it: InstanceType, reqs: Requirements) -> list[Offering]:
        """Available, unblocked offerings of `it` whose zone and capacity type `reqs` allow."""
        zone, ct = reqs.get(wk.ZONE), reqs.get(wk.CAPACITY_TYPE)
        return [
            o
            for o in it.offerings
            if o.available
            and (o.capacity_type, it.name, o.zone) not in self.blocked
            and (zone is None or zone.has(o.zone))
            and (ct is None or ct.has(o.capacity_type))
        ]

    def mask(self, reqs: Requirements) -> BoolArray:
        """Which types are compatible with `reqs` and still have an offering it allows (cached)."""
        hit = self._masks.get(reqs)
        if hit is None:
            hit = np.array(
                [it.requirements.intersects(reqs) and self._allowed(it, reqs) for it in self.types], dtype=bool
            ).reshape(len(self.types))
            self._masks[reqs] = hit
        return hit

    def cheapest(self, reqs: Requirements) -> list[Offering | None]:
        """Per type, the cheapest offering `reqs` allow (cached by zone and capacity type)."""
        key = (reqs.get(wk.ZONE), reqs.get(wk.CAPACITY_TYPE))
        hit = self._cheapest.get(key)
        if hit is None:
            hit = []
            for it in self.types:
                offers = self.offerings(it, reqs)
                hit.append(min(offers, key=offering_order) if offers else None)
            self._cheapest[key] = hit
        return hit


class PreparedPools:
    """The `Pool`s of many schedules over the same NodePools, daemonsets and blocked offerings
    (one disruption pass's simulations), prepared once per set of resource names: filtering a
    NodePool's types and building their vectors is most of a small schedule's work. Owned by its
    caller, for as long as those inputs stay the same objects (checked on every use).
    """

    def __init__(self) -> None:
        self._by_names: dict[tuple[str, ...], tuple[SchedulingInput, list[Pool]]] = {}

    def pools(self, inp: SchedulingInput, names: tuple[str, ...], make: Callable[[], list[Pool]]) -> list[Pool]:
        """`make()`'s pools for `inp` and `names`, or the ones made before for the same inputs."""
        hit = self._by_names.get(names)
        if hit is not None:
            first, pools = hit
            if first.pools is inp.pools and first.daemonsets is inp.daemonsets and first.blocked is inp.blocked:
                return [pool.again(inp) for pool in pools]
        pools = make()
        self._by_names[names] = (inp, pools)
        return [pool.again(inp) for pool in pools]


def offering_order(o: Offering) -> tuple[float, int, str]:
    return (o.price, CAPACITY_PRIORITY.get(o.capacity_type, 3), o.zone)


def tolerated(tolerations: Iterable[Toleration], taints: Iterable[Taint], *, prefer: bool) -> bool:
    """Every NoSchedule/NoExecute taint (and PreferNoSchedule when `prefer`) is tolerated."""
    tols = tuple(tolerations)
    for taint in taints:
        if taint.effect not in BLOCKING and not (prefer and taint.effect == "PreferNoSchedule"):
            continue
        if not any(t.tolerates(taint) for t in tols):
            return False
    return True
