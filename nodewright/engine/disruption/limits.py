"""Consolidation against NodePool limits: what a move may do in a NodePool its limit binds. Pure.

A NodePool's limit counts every node and claim, the candidates of a move included, since the
replacements launch before the candidates go (`simulate.py`; a NodePool never goes past its
limit, not even for a moment). So when a NodePool is at its limit, the solver cannot place a
replacement for its nodes in it, and the plan it finds opens the replacement in a NodePool of
lower weight: N spot nodes of the preferred NodePool replaced by one on-demand node of the
fallback. Karpenter's simulation does not count the candidates (its cluster state leaves them
out), so its replacement would stay in the preferred NodePool; and Karpenter's scheduler tries
NodePools by weight, the user's order of preference. Nodewright cannot do what Karpenter does
there without going past the limit. When the fallback is a `WhenEmpty` NodePool (or a static
one), it does not make the move: the pods would stay there, as no consolidation moves pods off a
non-empty node of it, while the room freed in the preferred NodePool is refilled by the
provisioner as the load rises. Generated seed 8 (a spot NodePool capped at 181 cpu, an on-demand
`WhenEmpty` fallback): five such moves, one saving $0.0022/h, while the load rose. A fallback
that re-packs may take the move (generated seed 7: an arm64 spot fallback, where refusing them
cost 0.6% more).

The second rule is for replacements inside a NodePool whose limit binds: its limit on one
resource (say cpu) is then a budget, and what the NodePool holds of the others (memory) per unit
of that budget is what it can host without spilling to the fallback. A replacement that keeps the
cpu and drops the memory (r8i.xlarge, 4 cpu and 32 GiB, replaced by a c6a.xlarge, 4 cpu and
8 GiB) saves now and costs later: the next memory-heavy pods find the NodePool at its limit and go
to the fallback at 2-3 times the price per GiB. So each instance type a replacement may launch in
such a NodePool must hold at least as much of every other resource, per unit of the limited one,
as the candidates it replaces there did.

A limit *binds* a move when what is left of it (limit - usage, `usage.pool_usage`) is less than
what the move's candidates in that NodePool hold of the resource (the NodePool could not hold the
candidates again), or less than `NEAR_LIMIT` of the limit (a replacement may still fit in what is
left, but the NodePool is about to spill: on seed 8 the c6a.xlarge came with 13 of 181 cpu left).
Far from its limit a NodePool can grow, and neither rule applies. Deletes are never affected: they
free the limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from nodewright.engine.disruption.candidates import Candidate
from nodewright.engine.disruption.methods.shared import UNDERUTILIZED_POLICIES
from nodewright.engine.scheduling import PlannedClaim, PoolCapacity
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodepool import NodePool
from nodewright.model.resources import CPU, MEMORY, Resources

# The resources whose balance a binding limit protects: what pods request and nodes carry together.
SHAPE = (CPU, MEMORY)
# A NodePool with less than this share of a limit left is at that limit (see the module docstring).
NEAR_LIMIT = 0.1


@dataclass(frozen=True, slots=True)
class Bound:
    """A NodePool whose limit the move binds: its weight, and per limited resource `r` the
    candidates' capacity there (a replacement's type must keep its other resources per unit of `r`).
    """

    pool: str
    weight: int
    limited: tuple[str, ...]
    held: Resources  # the candidates' capacity in this NodePool

    def keeps_shape(self, it: InstanceType) -> bool:
        """True when `it` holds at least the candidates' share of every other resource per unit of
        each limited one (integer cross-multiplication, so no rounding decides it).
        """
        for r in self.limited:
            for s in SHAPE:
                if s != r and it.capacity[s] * self.held[r] < self.held[s] * it.capacity[r]:
                    return False
        return True


class PoolLimits:
    """The NodePools' weights, limits and usage for one pass; `bound` says which a move binds."""

    def __init__(self, pools: Iterable[PoolCapacity], used: Mapping[str, Resources]) -> None:
        self._pools: dict[str, NodePool] = {pc.nodepool.name: pc.nodepool for pc in pools}
        self._used = used

    def weight(self, pool: str) -> int:
        """The NodePool's weight (0 when it is not known)."""
        np_ = self._pools.get(pool)
        return np_.weight if np_ is not None else 0

    def repacks(self, pool: str) -> bool:
        """True when consolidation may move pods off the NodePool's non-empty nodes again (a policy
        that consolidates underutilized nodes, and not a static NodePool).
        """
        np_ = self._pools.get(pool)
        return (
            np_ is not None and np_.replicas is None and np_.disruption.consolidation_policy in UNDERUTILIZED_POLICIES
        )

    def bound(self, candidates: Sequence[Candidate]) -> list[Bound]:
        """The candidates' NodePools whose limits the move binds (see the module docstring)."""
        held: dict[str, Resources] = {}
        for c in candidates:
            held[c.pool.name] = held.get(c.pool.name, Resources()) + c.node.capacity
        out: list[Bound] = []
        for name, capacity in sorted(held.items()):
            pool = self._pools.get(name)
            if pool is None or pool.limits is None:
                continue
            used = self._used.get(name, Resources())
            limited = tuple(
                r
                for r in SHAPE
                if r in pool.limits
                and capacity[r] > 0
                and pool.limits[r] - used[r] < max(capacity[r], NEAR_LIMIT * pool.limits[r])
            )
            if limited:
                out.append(Bound(name, pool.weight, limited, capacity))
        return out


def spills(bound: Sequence[Bound], claim: PlannedClaim, limits: PoolLimits) -> str:
    """Why `claim` may not replace candidates of the `bound` NodePools ('' when it may): it opens
    in a NodePool of lower weight, or its planned type shrinks the NodePool's shape.
    """
    for b in bound:
        if limits.weight(claim.nodepool) < b.weight and not limits.repacks(claim.nodepool):
            return (
                f"its pods would leave NodePool {b.pool} (weight {b.weight}, at its {'/'.join(b.limited)} limit) "
                f"for a new node of NodePool {claim.nodepool} (weight {limits.weight(claim.nodepool)}), "
                "which never re-packs them (consolidationPolicy WhenEmpty)"
            )
        if claim.nodepool == b.pool and not b.keeps_shape(claim.instance_type):
            return (
                f"a {claim.instance_type.name} in NodePool {b.pool}, at its {'/'.join(b.limited)} limit, "
                f"holds less per unit of the limit than the nodes it replaces"
            )
    return ""


def allowed(bound: Sequence[Bound], pool: str, it: InstanceType) -> bool:
    """True when a replacement in `pool` may launch `it`: it keeps the shape of every bound
    NodePool it would open in.
    """
    return all(b.keeps_shape(it) for b in bound if b.pool == pool)
