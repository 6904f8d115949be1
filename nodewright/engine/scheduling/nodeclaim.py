"""New claims: opening one for a class, and the target it is filled up to. Pure.

A claim is opened in the first pool (by weight) whose taints and requirements a class allows and
that has a type one pod fits; it aims at a *target* type (`targets.py`: the type that serves the
pool's remaining demand most cheaply alone) and accepts pods while they fit the target, so claims
come out right-sized instead of growing to the largest type in the catalog. A target is chosen
again once the demand it was chosen for has shrunk (`targets.shrunk`). Pools with limits reserve a
claim's target capacity when it opens (`finalize.py` settles it on the claim's real options).
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.engine.scheduling.classes import PodClass, node_each
from nodewright.engine.scheduling.fit import (
    capacity_types,
    fits,
    narrow,
    pins_hostname,
    pool_conflicts,
    pool_tolerates,
    remaining_demand,
)
from nodewright.engine.scheduling.prepare import Pool, PoolType, add, tolerated
from nodewright.engine.scheduling.state import Bin, Pass
from nodewright.engine.scheduling.targets import best_target, priced, shrunk
from nodewright.model import labels as wk
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources

# What state.Pass puts in `remaining` for a resource the limits do not name (1 << 62), less slack.
UNLIMITED = 1 << 61


def open_claim(p: Pass, cls: PodClass, req: tuple[int, ...]) -> tuple[Bin | None, str]:
    """Open a claim for pods of `cls` (each requesting `req`) in the first pool that allows
    them and has a target type for them; or None and why no pool could, pool by pool.
    """
    if p.pools and any(r > most for r, most in zip(req, p.catalog_peak, strict=True)):
        # No pool has a type that holds one pod: one answer, before any pool prepares its types
        # (2,000 NodePools of as many shapes each prepared the catalog to find no type too).
        return None, too_big(p, req, p.catalog_peak, where=_of_pools(p))
    reasons: list[str] = []
    for pool in p.pools:
        if not pool_tolerates(p, cls, pool):
            taint = next(
                t
                for t in pool.taints
                if not tolerated(cls.sample.tolerations, (t,), prefer=not cls.tolerate_prefer_no_schedule)
            )
            reasons.append(f"nodepool {pool.name}: taint {taint} is not tolerated")
            continue
        conflicts = [pool_conflicts(p, pool, alt) for alt in cls.alternatives]
        alts = [alt for alt, c in zip(cls.alternatives, conflicts, strict=True) if not c and not pins_hostname(alt)]
        if not alts:
            problem = conflicts[0][0] if conflicts[0] else f"a new node cannot be the host {wk.HOSTNAME} selects"
            reasons.append(f"nodepool {pool.name}: {problem}")
            continue
        target: PoolType | None = None
        why = ""
        cts = capacity_types(p, cls, pool)
        share = forced_share(p, pool, cls, cts)
        for alt in alts:
            if share is not None:
                target, why = share_target(p, pool, alt, req, cts, share=share)
            else:
                target, why = claim_target(p, pool, alt, req, cts)
            if target is not None and gathered(p, cls):
                # Pods that must share a node (hostname affinity to themselves) get a target
                # that holds them all, when one does: a second node would take none of them.
                whole = tuple(r * len(cls.pods) for r in req)
                target = claim_target(p, pool, alt, whole, cts)[0] or target
            if target is not None:
                break
        if target is None:
            reasons.append(f"nodepool {pool.name}: {why}")
            continue
        b = new_claim(p, cls, pool, target, cts, alt=alt)
        if b is None:
            reasons.append(f"nodepool {pool.name}: pod affinity to pods on another node")
            continue
        return b, ""
    if not p.pools:
        # Static NodePools (replicas) keep their own count and open no node for pods.
        static = ", ".join(pool.name for pool in p.static_pools)
        why = f"no NodePool opens nodes for pods (static, replicas only: {static})"
        reasons.append(why if static else "no NodePool is configured")
    return None, "; ".join(reasons)


def forced_share(p: Pass, pool: Pool, cls: PodClass, cts: frozenset[str]) -> list[int] | None:
    """With `Strategy.forced_first`, for a class whose pods each need a node: the share of the
    pool's remaining demand each such node is to hold (over the nodes anti-affinity still forces,
    `Pass.forced_left`); None otherwise.
    """
    if not p.strategy.forced_first or p.forced_left <= 0 or not node_each(cls.sample):
        return None
    n = p.forced_left
    p.forced_left -= 1
    return [-(-d // n) for d in remaining_demand(p, pool, cts)]


def share_target(
    p: Pass, pool: Pool, alt: Requirements, req: tuple[int, ...], cts: frozenset[str], *, share: list[int]
) -> tuple[PoolType | None, str]:
    """The target for a claim of a pod that needs a node of its own, holding `share`: chosen again
    only once the share has halved or doubled since (each such claim has a share of its own, and
    choosing among the types for each would cost more than the pass saves).
    """
    key = (pool.name, alt, req, pool.limit_version, cts)
    cached = p.share_targets.get(key)
    if cached is not None:
        target, why, then = cached
        if not shrunk(share, then) and not shrunk(then, share):
            return target, why
    target, why = choose_target(p, pool, alt, req, cts, pool_demand=share)
    p.share_targets[key] = (target, why, list(share))
    return target, why


def gathered(p: Pass, cls: PodClass) -> bool:
    """True when the class's pods must share one node: a required hostname affinity selects them."""
    sample = cls.sample
    return any(t.topology_key == wk.HOSTNAME and t.selects(sample.namespace, sample.labels) for t in cls.affinity)


def new_claim(
    p: Pass, cls: PodClass, pool: Pool, target: PoolType, cts: frozenset[str], *, alt: Requirements | None = None
) -> Bin | None:
    """Open a claim in `pool` aiming at `target` for pods of `cls` (with `alt`, by default its
    first alternative the pool allows); None when the class's affinity rules out a new node.
    """
    if alt is None:
        alt = next((a for a in cls.alternatives if pool.requirements.compatible(a)), None)
        if alt is None:
            return None
    p.claim_seq += 1
    b = Bin(
        f"nodeclaim-{p.claim_seq}",
        "claim",
        # One object for the claims opened alike, so the fit checks' memos find it by identity.
        narrow(p, pool.requirements, alt),
        pool.taints,
        list(target.cap),
        pool=pool,
        target=target,
        capacity_types=cts,
        seq=p.claim_seq,
    )
    if p.topology.bin_limit(cls.sample, cls.spread, cls.affinity, cls.anti_affinity, b.name) == 0:
        return None
    if pool.remaining is not None:
        b.reserved = list(target.capacity)
        add(pool.remaining, target.capacity, -1)
        pool.limit_version += 1
    p.claims.append(b)
    p.open.append(b)
    return b


def widen_claim(p: Pass, cls: PodClass, req: tuple[int, ...], want: int) -> tuple[Bin | None, int]:
    """Under binding limits, with no new claim possible: retarget an open claim of a limited pool
    to another type its requirements allow that still holds its pods, fits the limits left plus
    what the claim reserved, and takes the most pods of `cls` (up to `want`; then the cheaper).
    Karpenter's claim accepts a pod while any of its types holds them all; ours keeps one target,
    so this is how a claim reaches, say, the bigger-memory type when the one it aimed at is full.
    Returns the claim and how many pods it now takes (None, 0 when no claim can grow).
    """
    best: tuple[tuple[int, float, str], Bin, PoolType] | None = None
    for b in p.claims:  # full ones too: `assign_pods` closes a claim its target has no room left on
        pool, target, reserved = b.pool, b.target, b.reserved
        if pool is None or pool.remaining is None or target is None or reserved is None:
            continue
        # Unchanged claim, limits and pod size: it could not grow before, it cannot now.
        memo = (b.name, len(b.pods), pool.limit_version, req)
        if memo in p.cannot_widen:
            continue
        held = tuple([c - f for c, f in zip(target.cap, b.free, strict=True)])
        budget = tuple([r + v for r, v in zip(pool.remaining, reserved, strict=True)])
        if any(h + r > c for h, r, c in zip(held, req, budget, strict=True)):
            p.cannot_widen.add(memo)  # no type within the limits holds one more pod (the common case)
            continue
        options, _ = pool.prepared.claim_options(pool.types, b.requirements, held, budget)
        grows = False
        for _, _, t, _ in options:
            if t is target or not any(ct in t.prices for ct in b.capacity_types):
                continue
            n = min([(c - u) // r for c, u, r in zip(t.cap, held, req, strict=True) if r] or [want])
            if n <= 0:
                continue
            grows = True
            price = min(v for ct, v in t.prices.items() if ct in b.capacity_types)
            key = (-min(n, want), price, t.it.name)
            if best is None or key < best[0]:
                best = (key, b, t)
        if not grows:
            p.cannot_widen.add(memo)
    if best is None:
        return None, 0
    _, b, t = best
    old_target, old_free, old_reserved = b.target, b.free, b.reserved
    assert old_target is not None
    assert old_reserved is not None
    used = [c - f for c, f in zip(old_target.cap, old_free, strict=True)]
    _retarget(b, t, [c - u for c, u in zip(t.cap, used, strict=True)], list(t.capacity))
    n = fits(p, cls, req, b, want)
    if n == 0:  # taints, topology or capacity types refuse the pods there after all: undo
        _retarget(b, old_target, old_free, old_reserved)
        return None, 0
    if b not in p.open:
        p.open.append(b)
    return b, n


def _retarget(b: Bin, target: PoolType, free: list[int], reserved: list[int]) -> None:
    """Point `b` at `target`, moving its reservation of the pool's limits with it."""
    assert b.pool is not None
    assert b.pool.remaining is not None
    assert b.reserved is not None
    add(b.pool.remaining, b.reserved, 1)
    add(b.pool.remaining, reserved, -1)
    b.pool.limit_version += 1
    b.target, b.free, b.reserved = target, free, reserved


def drop_claim(p: Pass, b: Bin) -> None:
    """Close and forget a claim that took no pod, giving back what it reserved of the limits."""
    p.claims.remove(b)
    if b in p.open:
        p.open.remove(b)
    if b.pool is not None and b.pool.remaining is not None and b.reserved is not None:
        add(b.pool.remaining, b.reserved, 1)


def claim_target(
    p: Pass, pool: Pool, alt: Requirements, req: tuple[int, ...], cts: frozenset[str]
) -> tuple[PoolType | None, str]:
    """The instance type a new claim in `pool` aims to fill, or None and why none fits."""
    key = (pool.name, alt, req, pool.limit_version, cts)
    demand = remaining_demand(p, pool, cts)
    cached = p.targets.get(key)
    if cached is not None:
        target, why, demand_then = cached
        if target is None or not shrunk(demand, demand_then):
            return target, why
    target, why = choose_target(p, pool, alt, req, cts, pool_demand=demand)
    p.targets[key] = (target, why, list(demand))
    return target, why


def choose_target(
    p: Pass, pool: Pool, alt: Requirements, req: tuple[int, ...], cts: frozenset[str], *, pool_demand: list[int]
) -> tuple[PoolType | None, str]:
    """The target for `claim_target`, from the prepared `Targets`, the limits and the demand."""
    # What depends only on the types, `alt`, `req` and `cts` comes from `PreparedPool.targets`,
    # computed once across solves; the limits and the demand are applied here.
    base = pool.prepared.targets(pool.types, alt, req)
    if not base.compatible:
        return None, f"no instance type satisfies {alt!r}" if alt else "no instance type is offered"
    fitting = base.fitting
    if not fitting:
        return None, too_big(p, req, base.largest)
    if pool.remaining is not None:
        remaining = pool.remaining
        # When the largest of the fitting types is within the limits, every one is.
        if not all(c <= r for c, r in zip(base.peak, remaining, strict=True)):
            fitting = [t for t in fitting if all(c <= r for c, r in zip(t.capacity, remaining, strict=True))]
            if not fitting:
                return None, "limits reached"
    if p.strategy.fill_limits and pool.remaining is not None:
        return _largest(fitting, req, cts, pool.remaining)
    demand = tuple([max(d, r) for d, r in zip(pool_demand, req, strict=True)])
    if fitting is base.fitting:
        # Unless the limits cut the types, the choice depends on nothing else: remembered.
        best = base.best(cts, demand)
    elif any(not t.exotic for t in fitting):
        # The cut keeps plain types, so its priced list is the whole one's, less the types cut.
        kept = {id(t) for t in fitting}
        best = best_target([q for q in base.priced(cts) if id(q[0]) in kept], demand)
    else:
        best = best_target(priced(fitting, req, cts), demand)
    if best is None:
        return None, f"no instance type that fits is offered as {' or '.join(sorted(cts))}"
    return best, ""


def _largest(
    fitting: Sequence[PoolType], req: tuple[int, ...], cts: frozenset[str], remaining: Sequence[int]
) -> tuple[PoolType | None, str]:
    """Under binding limits: the type within them holding the most pods of size `req`, then with
    the most of the limited resources (as a share of what is left of each), then the cheapest.
    Karpenter opens a claim on every type within the limits and charges the largest; one big node
    spends less of the limit on kubelet reserves and daemonsets than several small ones.
    """
    limited = [i for i, r in enumerate(remaining) if r < UNLIMITED]
    best: tuple[tuple[int, float, float, str], PoolType] | None = None
    for t, price, _ in priced(fitting, req, cts):
        share = sum(t.capacity[i] / max(remaining[i], 1) for i in limited)
        holds = min((c // r for c, r in zip(t.cap, req, strict=True) if r), default=0)
        key = (-holds, -share, price, t.it.name)
        if best is None or key < best[0]:
            best = (key, t)
    if best is None:
        return None, f"no instance type that fits is offered as {' or '.join(sorted(cts))}"
    return best[1], ""


def _of_pools(p: Pass) -> str:
    """The pools a catalog-wide answer speaks for: named when few (what a user looks for in it)."""
    names = sorted(pool.name for pool in p.pools)
    if len(names) <= 3:
        return f"of nodepool {', '.join(names)}" if len(names) == 1 else f"of nodepools {', '.join(names)}"
    return f"of any of the {len(names)} NodePools"


def too_big(p: Pass, req: tuple[int, ...], room: Sequence[int], *, where: str = "") -> str:
    """Why no type holds one pod of size `req`, naming the resource; `room`: the most any type
    has of each resource (`Targets.largest`: after a pool's daemonsets; with `where`, the types
    `where` names, before daemonsets: `Pass.catalog_peak`).
    """
    types = f"instance type {where}" if where else "instance type"
    after = "" if where else " after daemonsets"
    for i, name in enumerate(p.names):
        largest = room[i]
        if req[i] > largest and largest == 0:
            return f"no {types} offers {name}"
        if req[i] > largest:
            have = Resources({name: largest}).format()[name]
            need = Resources({name: req[i]}).format()[name]
            return f"no {types} has {need} {name} allocatable (the largest has {have}{after})"
    return "no single instance type has room for all of the pod's requests"
