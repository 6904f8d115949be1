"""Shape mixing (`Strategy.mix_shapes`): unconstrained pods packed node by node. Pure.

Classes free of topology constraints (and the zone parts of zone-spread classes) can go to any
node their pool and requirements allow, so only the mix decides the bill. They are packed node by
node, each time adding the class whose shape best fills what the node has left, so cpu-heavy and
memory-heavy pods share nodes instead of stranding memory or cpu. With `Strategy.lp_plan` the
claims an assignment LP plans (`plan.py`) are opened first. What this pass cannot place goes on to
the usual fill (`fill.py`), which reports why.
"""

from __future__ import annotations

from nodewright.engine.scheduling.classes import PodClass
from nodewright.engine.scheduling.fit import assign_pods, capacity_types, fits, home_pool
from nodewright.engine.scheduling.nodeclaim import drop_claim, open_claim
from nodewright.engine.scheduling.plan import plan_fill
from nodewright.engine.scheduling.state import Bin, Pass


def mix(p: Pass, classes: list[PodClass]) -> list[PodClass]:
    """Pack mixable classes node by node; return the classes left for the usual pass.

    Mixable classes are unconstrained (`fill.unconstrained`) or parts of a zone-spread class already bound
    to a domain (`fill.zone_parts`): any node their pool and requirements allow is as good as any
    other, and only the mix decides the bill. Classes sharing a pool, tolerations and capacity
    types go to one set of claims.
    """
    groups: dict[tuple[object, ...], list[PodClass]] = {}
    rest: list[PodClass] = []
    for cls in classes:
        pool = home_pool(p, cls)
        if pool is None:
            rest.append(cls)
            continue
        # Node requirements may differ within a group: each fit checks them against the claim.
        key = (pool.name, p.tolerations_id(cls.sample.tolerations), capacity_types(p, cls, pool))
        groups.setdefault(key, []).append(cls)
    for members in groups.values():
        rest += mix_group(p, members)
    rest.sort(key=lambda c: c.sort_key)
    return rest


def mix_group(p: Pass, members: list[PodClass]) -> list[PodClass]:
    """Place one group's classes: existing capacity first, then new claims, node by node."""
    entries = [(cls, p.vec(cls.requests)) for cls in members]
    done = [0] * len(entries)
    for b in (*p.existing, *p.open):
        mix_into(p, b, entries, done)
    home = home_pool(p, members[0])
    if home is not None and home.remaining is None:
        # What `plan.plan_fill` needs to plan anything: a pool without limits and pods left.
        p.plannable = p.plannable or any(done[i] < len(c.pods) for i, (c, _) in enumerate(entries))
    if p.strategy.lp_plan:
        plan_fill(p, entries, done)
        # Rounding leaves a few pods over; they first fill what room the planned claims have.
        for b in list(p.open):
            mix_into(p, b, entries, done)
    while True:
        left = [i for i, (cls, _) in enumerate(entries) if done[i] < len(cls.pods)]
        if not left:
            return []
        cls, req = entries[left[0]]  # the largest class left opens the claim (classes are sorted)
        claim, _ = open_claim(p, cls, req)
        if claim is None:
            # The usual pass reports why, and may still use capacity this one could not.
            return [entries[i][0].with_pods(entries[i][0].pods[done[i] :]) for i in left]
        mix_into(p, claim, entries, done)
        if not claim.pods:
            # Opened but refused by a check the target does not see (a host port, a hostname):
            # opening another would loop; the usual pass says why.
            drop_claim(p, claim)
            return [entries[i][0].with_pods(entries[i][0].pods[done[i] :]) for i in left]


def mix_into(p: Pass, b: Bin, entries: list[tuple[PodClass, tuple[int, ...]]], done: list[int]) -> None:
    """Fill `b`, each time with the class whose requests best match what `b` has most of left
    (the dot product of requests and free room, both relative to the node's size).
    """
    cap = b.target.cap if b.target is not None else [max(f, 1) for f in b.free]
    while True:
        best, best_score, best_fit = -1, -1.0, 0
        for i, (cls, req) in enumerate(entries):
            want = len(cls.pods) - done[i]
            if want <= 0:
                continue
            fit = fits(p, cls, req, b, want)
            if not fit:
                continue
            score = sum(r / c * f / c for r, f, c in zip(req, b.free, cap, strict=True) if c > 0)
            if score > best_score:
                best, best_score, best_fit = i, score, fit
        if best < 0:
            return
        cls, req = entries[best]
        left = len(cls.pods) - done[best]
        # Half of what still fits, so the next pick can rebalance the node's shape.
        count = best_fit if best_fit >= left else max(1, best_fit // 2)
        assign_pods(p, cls, b, cls.pods[done[best] : done[best] + count], req)
        done[best] += count
