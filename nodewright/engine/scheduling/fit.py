"""Fit checks: whether pods of a class may go to a bin, and putting them there. Pure.

The questions every fill asks, class by class (never pod by pod): how many of a class fit a bin
(`fits`), which pool is its first choice (`home_pool`) and with which capacity types, and
`assign_pods`, the one place that changes a bin and the topology counts. Answers that depend only
on values are remembered in the pass (`state.Pass`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from nodewright.engine.scheduling.classes import PodClass
from nodewright.engine.scheduling.prepare import Pool, add, tolerated
from nodewright.engine.scheduling.state import Bin, Pass
from nodewright.model import labels as wk
from nodewright.model.pod import AffinityTerm, Pod, SpreadConstraint
from nodewright.model.requirements import Requirements, label_matches
from nodewright.model.resources import CPU, PODS


def fits(p: Pass, cls: PodClass, req: tuple[int, ...], b: Bin, want: int) -> int:
    """How many of `want` pods of `cls` (each requesting `req`) `b` takes now: room, taints,
    node requirements, capacity types and topology all allow them; 0 when none.
    """
    if b.kind == "claim":
        if claim_alternative(p, cls, b) is None:
            return 0
    elif not bin_tolerates(p, cls, b) or not any(bin_compatible(p, b, alt) for alt in cls.alternatives):
        return 0
    n = want
    free = b.free
    for f, r in zip(free, req, strict=True):
        if r:
            q = f // r
            if q < n:
                if q <= 0:
                    return 0
                n = q
    ports = cls.sample.host_ports
    if ports:
        n = min(n, p.ports.room(b.name, b.pool if b.kind != "node" else None, ports))
        if n == 0:
            return 0
    limit = p.topology.bin_limit(cls.sample, cls.spread, cls.affinity, cls.anti_affinity, b.name)
    return min(n, limit)


def claim_alternative(p: Pass, cls: PodClass, b: Bin) -> Requirements | None:
    """For a claim of this pass: the class's first alternative compatible with the claim, when
    the class tolerates its taints and may use its capacity types (a pod that may run on spot
    must not be packed onto an on-demand-only claim, nor the reverse: either would pay on-demand
    prices for capacity spot could serve); None when it may not go there. Nothing else of the
    claim decides it, so the answer is remembered by the identity of the class's facts (shared by
    the classes of one spec: a class's parts per domain, `Pass.facts`) and of what the claim holds
    (each entry holds them, so the ids stay their own): the value-keyed memos hash requirements at
    every look-up, and a large pass asks this of every claim with room.
    """
    last = b.last_alternative
    if last is not None and last[0] is cls and last[1] is b.requirements and last[2] is b.target:
        # The claim's taints, pool and capacity types are its own for the pass.
        return last[3]
    facts = p.facts(cls)
    key = (id(facts), id(b.requirements), id(b.target), id(b.taints), id(b.pool), b.capacity_types)
    hit = p.claim_alts.get(key)
    if (
        hit is not None
        and hit[0] is facts
        and hit[1] is b.requirements
        and hit[2] is b.target
        and hit[3] is b.taints
        and hit[4] is b.pool
    ):
        b.last_alternative = (cls, b.requirements, b.target, hit[5])
        return hit[5]
    found: Requirements | None = None
    if bin_tolerates(p, cls, b) and capacity_types(p, cls, b.pool) == b.capacity_types:
        found = next((alt for alt in cls.alternatives if bin_compatible(p, b, alt)), None)
    p.claim_alts[key] = (facts, b.requirements, b.target, b.taints, b.pool, found)
    b.last_alternative = (cls, b.requirements, b.target, found)
    return found


def bin_compatible(p: Pass, b: Bin, alt: Requirements) -> bool:
    """True when a pod needing `alt` may go to `b` (an existing node by its labels, a claim by
    its requirements and its target's offerings).
    """
    if b.labels is not None:
        node_key = (b.name, alt)
        hit = p.node_fits.get(node_key)
        if hit is None:
            hit = p.node_fits[node_key] = label_matches(alt, b.labels)
        return hit
    assert b.target is not None
    if pins_hostname(alt) and not (b.kind == "inflight" and alt[wk.HOSTNAME].has(b.name)):
        return False
    claim_key = (b.requirements, alt, b.target.it.name)
    hit = p.claim_fits.get(claim_key)
    if hit is None:
        hit = b.requirements.compatible(alt) and b.target.offer_reqs.intersects(alt)
        p.claim_fits[claim_key] = hit
    return hit


def pins_hostname(alt: Requirements) -> bool:
    """True when `alt` names the hosts it accepts (`kubernetes.io/hostname In [...]`): a new
    node's name is unknown until it registers, so such a pod goes to one of those nodes or nowhere.
    """
    pinned = alt.get(wk.HOSTNAME)
    return pinned is not None and not pinned.complement


def bin_tolerates(p: Pass, cls: PodClass, b: Bin) -> bool:
    """True when the class tolerates `b`'s taints."""
    key = (p.facts(cls).tolerations, cls.tolerate_prefer_no_schedule, b.taints)
    hit = p.tolerates.get(key)
    if hit is None:
        hit = tolerated(cls.sample.tolerations, b.taints, prefer=not cls.tolerate_prefer_no_schedule)
        p.tolerates[key] = hit
    return hit


def remaining_demand(p: Pass, pool: Pool, cts: frozenset[str]) -> list[int]:
    """What is still unplaced of the pods whose first choice is `pool`, for these capacity types."""
    demand = pool.demand.get(cts)
    if demand is None:  # not `setdefault`: it would build a list at every placement
        demand = pool.demand[cts] = [0] * len(p.names)
    return demand


def capacity_types(p: Pass, cls: PodClass, pool: Pool | None) -> frozenset[str]:
    """The capacity types the class may use in `pool` (its first compatible alternative)."""
    assert pool is not None
    facts = p.facts(cls).cts
    known = facts.get(pool.name)
    if known is not None:
        return known
    key = (cls.alternatives, pool.name)
    hit = p.cts.get(key)
    if hit is None:
        hit = frozenset()
        for alt in cls.alternatives:
            if pool.requirements.compatible(alt):
                req = pool.requirements.intersection(alt).get(wk.CAPACITY_TYPE)
                hit = frozenset(ct for ct in wk.CAPACITY_TYPES if req is None or req.has(ct))
                break
        p.cts[key] = hit
    facts[pool.name] = hit
    return hit


def pool_conflicts(p: Pass, pool: Pool, alt: Requirements) -> list[str]:
    """`pool.requirements.conflicts(alt)`, remembered by the identity of both (the entry holds
    them): asked at every new claim and every domain a spread weighs. Shared: never change it.
    """
    key = (id(pool.requirements), id(alt))
    hit = p.pool_conflicts.get(key)
    if hit is not None and hit[0] is pool.requirements and hit[1] is alt:
        return hit[2]
    found = pool.requirements.conflicts(alt)
    p.pool_conflicts[key] = (pool.requirements, alt, found)
    return found


def pool_tolerates(p: Pass, cls: PodClass, pool: Pool) -> bool:
    """True when the class tolerates the pool's taints."""
    return tolerated(cls.sample.tolerations, pool.taints, prefer=not cls.tolerate_prefer_no_schedule)


def assign_pods(p: Pass, cls: PodClass, b: Bin, pods: Sequence[Pod], req: tuple[int, ...]) -> None:
    """Put `pods` of `cls` on `b`: take their room, narrow a claim's requirements to the
    class's, close a claim that is full, count the pods for topology and take them off the demand.
    """
    count = len(pods)
    free = b.free
    for i, r in enumerate(req):
        if r:
            free[i] -= r * count
    if b.kind == "claim":
        alt = claim_alternative(p, cls, b)
        if alt is None:  # a caller that placed without `fits` (shape mixing, a planned fill)
            alt = next(a for a in cls.alternatives if bin_compatible(p, b, a))
        b.requirements = narrow(p, b.requirements, alt)
        if free[p.index[CPU]] < p.min_cpu or free[p.index[PODS]] < 1000:
            _close(p, b)
    b.pods.extend(pods)
    if cls.sample.host_ports:
        p.ports.take(b.name, b.pool if b.kind != "node" else None, cls.sample.host_ports * count)
    b.movable = b.movable and not hostname_bound(p, cls)
    domains = b.domains
    if domains is None or b.domains_of is not b.requirements:
        domains = b.domains = {key: b.domain(key) for key in p.topology_keys}
        b.domains_of = b.requirements
    p.topology.record(cls.sample, domains, count)
    home = home_pool(p, cls)
    if home is not None:
        add(remaining_demand(p, home, capacity_types(p, cls, home)), req, -count)


def narrow(p: Pass, reqs: Requirements, alt: Requirements) -> Requirements:
    """A claim's requirements `reqs` narrowed to a pod's alternative `alt`: `reqs` itself when
    that changes nothing. Remembered by both objects' identity (the entry holds them), so claims
    narrowed alike share one object and later look-ups keyed by it find it by identity.
    """
    key = (id(reqs), id(alt))
    hit = p.narrowed.get(key)
    if hit is not None and hit[0] is reqs and hit[1] is alt:
        return hit[2]
    narrowed = reqs.intersection(alt)
    if narrowed == reqs:
        narrowed = reqs
    p.narrowed[key] = (reqs, alt, narrowed)
    return narrowed


def _close(p: Pass, b: Bin) -> None:
    """Take a full claim off `p.open`. The list is in the order claims were opened (but after a
    limits pass reopened one), so the claim is found by its number: `list.remove` compares every
    claim before it, and the forced-first pass closes claims all along thousands of open ones.
    """
    opened = p.open
    i = bisect.bisect_left(opened, b.seq, key=lambda c: c.seq)
    if i < len(opened) and opened[i] is b:
        del opened[i]
    else:
        opened.remove(b)


def hostname_bound(p: Pass, cls: PodClass) -> bool:
    """True when moving the class's pods between nodes could change a hostname-keyed count:
    it has a hostname constraint, or some hostname group or anti-affinity counts it.
    """
    facts = p.facts(cls)
    if facts.bound is not None:
        return facts.bound
    facts.bound = _hostname_bound(p, cls)
    return facts.bound


def _hostname_bound(p: Pass, cls: PodClass) -> bool:
    """`hostname_bound`, remembered by the class's values."""
    key = (
        cls.sample.namespace,
        tuple(sorted(cls.sample.labels.items())),
        cls.spread,
        cls.affinity,
        cls.anti_affinity,
    )
    hit = p.bound_cache.get(key)
    if hit is not None:
        return hit
    constraints: tuple[SpreadConstraint | AffinityTerm, ...] = (*cls.spread, *cls.affinity, *cls.anti_affinity)
    hit = p.bound_cache[key] = any(c.topology_key == wk.HOSTNAME for c in constraints) or p.topology.counts_on(
        cls.sample, wk.HOSTNAME
    )
    return hit


def home_pool(p: Pass, cls: PodClass) -> Pool | None:
    """The first pool (by weight) whose taints and requirements the class allows and that has an
    instance type one pod fits; when no pool has such a type, the first that allows the class
    (its claims fail there with the reason); None when none allows it.

    The home pool is where the class's demand is counted, and a new claim's target serves its
    pool's demand (`targets.py`): counted in a pool that cannot hold one pod (a heavier-weighted
    pool of small sizes), the demand was invisible to the pool the pods go to, whose claims then
    aimed at the smallest type that fits one pod (81 eight-cpu pods on 81 nodes of 16 cpus).
    """
    facts = p.facts(cls)
    if not facts.homed:
        facts.home, facts.homed = _home_pool(p, cls, facts.tolerations), True
    return facts.home


def _home_pool(p: Pass, cls: PodClass, tolerations: int) -> Pool | None:
    """`home_pool`, remembered by the class's values."""
    key = (cls.alternatives, tolerations, cls.tolerate_prefer_no_schedule, cls.requests)
    if key not in p.homes:
        req = p.vec(cls.requests)
        # A pod larger than every catalog's largest type fits no pool: then the first that allows
        # the class is the answer, without preparing each pool's types (thousands of NodePools).
        fits_some = all(r <= c for r, c in zip(req, p.catalog_peak, strict=True))
        first: Pool | None = None
        found: Pool | None = None
        for pool in p.pools:
            if not pool_tolerates(p, cls, pool):
                continue
            alts = [a for a in cls.alternatives if pool.requirements.compatible(a) and not pins_hostname(a)]
            if not alts:
                continue
            first = first or pool
            if not fits_some:
                break
            if any(pool.prepared.targets(pool.types, a, req).fitting for a in alts):
                found = pool
                break
        p.homes[key] = found or first
    return p.homes[key]
