"""Finalisation: each claim's instance-type options and price, and the pass's result. Pure.

Each claim's options become the (at most 60, more when a minValues needs them) cheapest types that
satisfy its requirements and hold its pods plus daemonset overhead, within the pool's remaining
limits (pessimistically, the largest option counts against them); GPU, accelerator and metal types
are dropped when any other type fits (`prepare.PreparedPool.claim_options`). The claim is priced at
its cheapest allowed offering; a reserved offering only while fewer claims of the pass took its
capacity reservation than it has instances left, the claims that require a reservation label
first. A claim no type can hold any more reports its
pods unschedulable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodewright.engine.scheduling.prepare import Option, add
from nodewright.engine.scheduling.state import Pass
from nodewright.engine.scheduling.types import PlannedClaim, SchedulingResult
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, Offering
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources


def finalize(p: Pass) -> SchedulingResult:
    """The pass's result: each claim with its options, offering and requests; pods on existing
    bins; pods not placed, with why.
    """
    claims: dict[int, PlannedClaim] = {}
    taken: dict[str, int] = {}  # reservation id -> claims of this pass priced on it
    # What each claim's requirements (one object is often shared by thousands of claims) and
    # options (a list `claim_options` shares) give, by identity; each entry holds its object, so
    # an id stays its own.
    by_reqs: dict[int, tuple[Requirements, Requirements, bool]] = {}
    by_options: dict[int, tuple[list[Option], tuple[InstanceType, ...]]] = {}

    def of(reqs: Requirements) -> tuple[Requirements, Requirements, bool]:
        hit = by_reqs.get(id(reqs))
        if hit is None:
            hit = by_reqs[id(reqs)] = (reqs, one_value_per_label(reqs), _needs_reservation(reqs))
        return hit

    # Claims that require a reservation label take their reservations before the others may
    # (a claim that can use any offering would otherwise use up the one a pod asked for by id).
    order = sorted(range(len(p.claims)), key=lambda i: not of(p.claims[i].requirements)[2])
    for i in order:
        b = p.claims[i]
        pool = b.pool
        assert pool is not None
        assert b.target is not None
        used = tuple([c - f for c, f in zip(b.target.cap, b.free, strict=True)])
        reqs = of(b.requirements)[1]
        budget = None
        if pool.remaining is not None and b.reserved is not None:
            budget = tuple([r + v for r, v in zip(pool.remaining, b.reserved, strict=True)])
        options, why = pool.prepared.claim_options(pool.types, reqs, used, budget)
        offering = _offering(options, taken)
        if offering is None:
            why = why if not options else "its capacity reservations have no instance left"
            for pod in b.pods:
                p.unschedulable[pod.key] = f"nodepool {pool.name}: {why}"
            continue
        if offering.reservation_id:
            taken[offering.reservation_id] = taken.get(offering.reservation_id, 0) + 1
        if pool.remaining is not None and b.reserved is not None:
            add(pool.remaining, b.reserved, 1)
            peak = [max(o[2].capacity[i] for o in options) for i in range(len(p.names))]
            add(pool.remaining, peak, -1)
        # The pods' requests plus the overhead of the daemonsets the chosen type runs.
        overhead = options[0][2].overhead
        requests = Resources({n: u + o for n, u, o in zip(p.names, used, overhead, strict=True) if u + o})
        known = by_options.get(id(options))
        if known is None:
            known = by_options[id(options)] = (options, tuple([o[2].it for o in options]))
        claims[i] = PlannedClaim(
            nodepool=pool.name,
            requirements=reqs,
            options=known[1],
            offering=offering,
            requests=requests,
            pods=tuple(b.pods),
        )
    existing = {b.name: tuple(pod.key for pod in b.pods) for b in p.existing if b.pods}
    return SchedulingResult(tuple(claims[i] for i in sorted(claims)), existing, dict(sorted(p.unschedulable.items())))


def one_value_per_label(reqs: Requirements) -> Requirements:
    """`reqs` with every label the instance type does not decide narrowed to one value.

    A node carries one value per label, and the launch labels a node only with the keys its
    claim's requirements fix to one value; `tier In [a, b]` (from a NodePool allowing both) would
    leave the node without `tier`, refusing every pod that asked for either. As Karpenter picks
    any allowed value for such a key, the claim takes the smallest (a stable choice).
    """
    narrowed = [
        Requirement.new(key, "In", [min(req.values)])
        for key, req in reqs.items()
        if key not in wk.WELL_KNOWN and not req.complement and len(req.values) > 1 and req.min_values is None
    ]
    return reqs.intersection(Requirements(narrowed)) if narrowed else reqs


def _needs_reservation(reqs: Requirements) -> bool:
    """True when `reqs` rule out every node outside a capacity reservation."""
    return any(key in reqs and not reqs[key].allows_absent() for key in wk.RESERVATION_LABELS)


def _offering(options: Sequence[Option], taken: Mapping[str, int]) -> Offering | None:
    """The cheapest offering of the first option that has one left: a reserved offering counts
    only while fewer claims took its reservation than it has instances left (a claim may not take
    more than a reservation's remaining count; later claims fall back to spot or on-demand).
    """
    for option in options:
        # An option's offerings come cheapest first (`prepare.offering_order`), so the first one
        # left is `cheapest_offering` of those left.
        for o in option[3]:
            if not o.reservation_id or taken.get(o.reservation_id, 0) < o.reservation_capacity:
                return o
    return None
