"""The merge pass: pairs of this pass's claims become one node when that costs less. Pure.

Greedy packing decides one class at a time, so claims end up with mixes of pods (and sizes) that
no single pass would choose: two half-full nodes, or a cpu-bound node next to a memory-bound one.
After the fill, each claim (cheapest first) is merged into the partner that saves most, for a few
sweeps. Only claims that can merge without changing any constraint take part (`repack`).
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.engine.scheduling.prepare import Pool, PoolType
from nodewright.engine.scheduling.state import Bin, Pass
from nodewright.model import labels as wk
from nodewright.model.requirements import Requirements
from nodewright.model.resources import CPU, MEMORY

# Plans with more claims than this skip the merge pass (it compares claims pairwise).
REPACK_LIMIT = 600
REPACK_SWEEPS = 3
REPACK_PARTNERS = 24


def repack(p: Pass) -> None:
    """Merge pairs of this pass's claims when one node holding both costs less than the two.

    Greedy packing decides one class at a time, so claims end up with mixes of pods (and
    sizes) that no single pass would choose: two half-full nodes, or a cpu-bound node next to
    a memory-bound one. Only claims that can merge without changing any constraint take part:
    same pool (without limits, whose reservations would shift), same zone and capacity types,
    and no pod that a hostname-keyed constraint or count involves.
    """
    if len(p.claims) > REPACK_LIMIT:
        return
    groups: dict[tuple[object, ...], list[Bin]] = {}
    for b in p.claims:
        if b.movable and b.pool is not None and b.pool.remaining is None:
            groups.setdefault((b.pool.name, b.domain(wk.ZONE), b.capacity_types), []).append(b)
    for members in groups.values():
        for _ in range(REPACK_SWEEPS):
            if not merge_sweep(p, members):
                break


def merge_sweep(p: Pass, members: list[Bin]) -> bool:
    """One pass over `members`, cheapest first, merging each into its best partner."""
    merged_any = False
    for a in sorted(members, key=lambda b: (claim_price(p, b), b.name)):
        if a not in members:
            continue
        best: tuple[float, Bin, PoolType, Requirements] | None = None
        price_a = claim_price(p, a)
        # Savings come from pairing with small claims; offering only the smallest few keeps the
        # pass near-linear on large plans.
        ci = p.index[CPU]
        partners = sorted((b for b in members if b is not a), key=lambda b: (claim_used(p, b)[ci], b.name))
        for b in partners[:REPACK_PARTNERS]:
            found = merged_type(p, a, b)
            if found is None:
                continue
            saving = price_a + claim_price(p, b) - found[0]
            # A merge that saves nothing still removes a node's overhead and leaves a larger
            # node whose room the next merge can use; every merge removes a claim, so this ends.
            if saving > -1e-9 and (best is None or saving > best[0]):
                best = (saving, b, found[1], found[2])
        if best is not None:
            _, b, target, reqs = best
            merge(p, a, b, target, reqs)
            members.remove(a)
            merged_any = True
    return merged_any


def claim_used(p: Pass, b: Bin) -> list[int]:
    """What the claim's pods request, as a vector."""
    assert b.target is not None
    return [c - f for c, f in zip(b.target.cap, b.free, strict=True)]


def claim_price(p: Pass, b: Bin) -> float:
    """$/h of the cheapest type that holds the claim as it is now (cached until it changes)."""
    used = claim_used(p, b)
    key = (b.name, b.requirements, tuple(used))
    price = p.prices.get(key)
    if price is None:
        found = cheapest_fit(p, b.pool, b.requirements, used)
        price = p.prices[key] = found[0] if found is not None else float("inf")
    return price


def merged_type(p: Pass, a: Bin, b: Bin) -> tuple[float, PoolType, Requirements] | None:
    """The cheapest type (with its price and the joint requirements) that holds both claims."""
    if not a.requirements.intersects(b.requirements):
        # Not only an empty set: `key In [x]` and `key In [y]` leave a DoesNotExist, which
        # neither claim's pods accept (a node has one value per label).
        return None
    if not p.ports.compatible(a.name, b.name, b.pool):
        return None
    reqs = b.requirements.intersection(a.requirements)
    if any(r.is_empty() and not r.allows_absent() for r in reqs.values()):
        return None
    used = [x + y for x, y in zip(claim_used(p, a), claim_used(p, b), strict=True)]
    found = cheapest_fit(p, b.pool, reqs, used)
    return None if found is None else (found[0], found[1], reqs)


def cheapest_fit(p: Pass, pool: Pool | None, reqs: Requirements, used: Sequence[int]) -> tuple[float, PoolType] | None:
    """The cheapest plain type of `pool` that `reqs` allow and `used` fits, with its price."""
    assert pool is not None
    ci, mi = p.index[CPU], p.index[MEMORY]
    largest = p.largest.get(pool.name)
    if largest is None:
        largest = p.largest[pool.name] = (
            max((t.cap[ci] for t in pool.types), default=0),
            max((t.cap[mi] for t in pool.types), default=0),
        )
    if used[ci] > largest[0] or used[mi] > largest[1]:
        return None  # no type of the pool is that large: skip the scan
    for price, _, t, _ in pool.options(reqs):
        if t.exotic or t.cap[ci] < used[ci] or t.cap[mi] < used[mi]:
            continue
        if all(c >= u for c, u in zip(t.cap, used, strict=True)):
            return price, t
    return None


def merge(p: Pass, a: Bin, b: Bin, target: PoolType, reqs: Requirements) -> None:
    """Move `a`'s pods into `b`, now aiming at `target` with `reqs`; `a` is closed."""
    used = [x + y for x, y in zip(claim_used(p, a), claim_used(p, b), strict=True)]
    b.requirements = reqs
    b.target = target
    b.free = [c - u for c, u in zip(target.cap, used, strict=True)]
    b.pods.extend(a.pods)
    p.ports.merge(a.name, b.name, b.pool)
    p.claims.remove(a)
    if a in p.open:
        p.open.remove(a)
