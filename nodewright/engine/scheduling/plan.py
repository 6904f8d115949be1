"""The planned fill (`Strategy.lp_plan`): claims opened as an assignment LP plans them. Pure.

For a mix group's unplaced pods (`mix.py`), the cheapest aggregate instance-type mix for their
total requests (`typemix.cheapest_mix`) gives the candidate types; `typemix.assign` decides which
pods go to which type, and each planned node is opened with its type as target and filled with
its slice (`typemix.node_slices`). So a workload whose shape calls for, say, compute nodes plus a
few general-purpose ones for its memory-heavy pods gets exactly that. Every pod still goes through
the usual fit checks (`fit.py`); what does not fit is left to the next steps. Pools with limits
are not planned (a plan would reserve capacity up front), nor classes with several alternative
node requirements. Domains a class is pinned to are planned apart, then rounded together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from nodewright.engine.scheduling.classes import PodClass
from nodewright.engine.scheduling.fit import assign_pods, capacity_types, fits, home_pool
from nodewright.engine.scheduling.nodeclaim import drop_claim, new_claim
from nodewright.engine.scheduling.prepare import Pool, PoolType, add
from nodewright.engine.scheduling.state import Pass
from nodewright.engine.scheduling.typemix import Assignment, Column, apportion, assign, cheapest_mix, node_slices
from nodewright.model import labels as wk
from nodewright.model.requirements import Requirements

# The planned fill only plans with instance types its pods fill this many times over: the LP's
# fractional nodes are rounded to whole ones, which costs up to one node each.
PLAN_MIN_NODES = 3


@dataclass(slots=True)
class Planning:
    """One mix group being planned: its pool and capacity types, its classes with their request
    vectors (`entries`), and how many pods of each are placed so far (`done`, updated in place).
    """

    pool: Pool
    cts: frozenset[str]
    entries: list[tuple[PodClass, tuple[int, ...]]]
    done: list[int]

    def left(self, i: int) -> int:
        """How many pods of entry `i` are still unplaced."""
        return len(self.entries[i][0].pods) - self.done[i]


def plan_fill(p: Pass, entries: list[tuple[PodClass, tuple[int, ...]]], done: list[int]) -> None:
    """Open and fill the claims an assignment LP plans for a mix group's unplaced pods.

    A plan's candidate types are the cheapest aggregate mix for its pods (`plan_types`);
    `typemix.assign` decides which pods go to which type, and each planned node is opened
    with its type as target and filled with its slice (`open_plan`). Every pod still goes
    through the usual fit checks; what does not fit is left for the usual pass, and so are
    pools with limits (a plan would reserve capacity up front) and classes with several
    alternative node requirements.

    Classes pinned to a topology domain (a zone part of a spread class, a zone selector) can
    only share nodes with their domain's classes and unpinned ones, so domains are planned
    apart (`plan_domains`). The unpinned pods they leave are then planned together.
    """
    pool = home_pool(p, entries[0][0])
    if pool is None or pool.remaining is not None:
        return
    g = Planning(pool, capacity_types(p, entries[0][0], pool), entries, done)
    pinned: dict[tuple[object, ...], list[int]] = {}
    unpinned: list[int] = []
    for i, (cls, _) in enumerate(entries):
        if g.left(i) and len(cls.alternatives) == 1:
            domain = domain_of(p, cls.alternatives[0])
            (pinned.setdefault(domain, []) if domain else unpinned).append(i)
    if pinned:
        plan_domains(p, g, [pinned[d] for d in sorted(pinned)], unpinned)
    rest = [i for i in unpinned if g.left(i)]
    planned = plan_lp(p, g, rest, [g.left(i) for i in rest])
    if planned is not None:
        open_plan(p, g, rest, planned, [False] * len(rest))


def plan_domains(p: Pass, g: Planning, pinned: list[list[int]], unpinned: list[int]) -> None:
    """Plan and open the nodes of each domain (`pinned[d]`: its entries) with unpinned pods.

    First each domain is planned alone with an equal share of every unpinned class, which
    picks its types and sizes it. Its fractional node counts are then rounded across domains
    (`typemix.apportion`: rounding each domain up would leave a part-filled node per domain
    and type), and each domain is planned again with those whole counts fixed, its own pods
    required and every unpinned pod still unplaced optional, so pods that can go anywhere
    absorb the rounding. A domain whose own pods need more nodes gets its counts rounded up.
    """
    firsts: list[tuple[list[tuple[PoolType, float]], Assignment] | None] = []
    for d, own in enumerate(pinned):
        counts = [g.left(i) for i in own] + [share(g.left(i), d, len(pinned)) for i in unpinned]
        firsts.append(plan_lp(p, g, own + unpinned, counts))
    whole = apportion(
        [[(t.it.name, x) for (t, _), x in zip(f[0], f[1].nodes, strict=True)] if f else [] for f in firsts]
    )
    for d, (own, first) in enumerate(zip(pinned, firsts, strict=True)):
        if first is None:
            continue
        types, plan = first
        problem = own + unpinned
        refit = None
        for fixed in ([whole[d][t.it.name] for t, _ in types], [math.ceil(x - 1e-6) for x in plan.nodes]):
            refit = refit or plan_lp(
                p,
                g,
                problem,
                [g.left(i) for i in problem],
                types=types,
                fixed=fixed,
                optional=[k >= len(own) for k in range(len(problem))],
            )
        if refit is not None:
            open_plan(p, g, problem, refit, [k < len(own) for k in range(len(problem))])


def plan_lp(
    p: Pass,
    g: Planning,
    problem: list[int],
    counts: list[int],
    *,
    types: list[tuple[PoolType, float]] | None = None,
    fixed: list[int] | None = None,
    optional: list[bool] | None = None,
) -> tuple[list[tuple[PoolType, float]], Assignment] | None:
    """The candidate types (unless given) and the assignment LP's plan for `counts` pods of
    each entry in `problem`; with `fixed` node counts per type, the `optional` entries' pods
    are placed only as far as they fit (`typemix.assign`). None when there is no plan.
    """
    if not any(counts):
        return None
    options = [plan_options(p, g, i) for i in problem]
    if not all(options):
        return None
    items = [(g.entries[i][1], n) for i, n in zip(problem, counts, strict=True)]
    if types is None:
        types = plan_types(p, items, options)
    columns: list[Column] = [(t.cap, price) for t, price in types]
    allowed = [[any(o[0] is t for o in opts) for t, _ in types] for opts in options]
    values = None
    if optional is not None:
        # An optional pod is worth what it would cost on its own cheapest type.
        values = [
            min(price / per_node(t.cap, req) for t, price in opts) if opt else 0.0
            for opt, opts, (req, _) in zip(optional, options, items, strict=True)
        ]
    plan = assign(items, columns, allowed, nodes=fixed, values=values)
    return None if plan is None else (types, plan)


def open_plan(
    p: Pass,
    g: Planning,
    problem: list[int],
    planned: tuple[list[tuple[PoolType, float]], Assignment],
    first: list[bool],
) -> None:
    """Open the nodes a plan asks for and fill each with its slice of pods (`first`: the
    entries pinned to a domain, which are served before the others).
    """
    types, plan = planned
    reqs = [g.entries[i][1] for i in problem]
    for column, counts in node_slices(plan, reqs, [t.cap for t, _ in types], first):
        order = sorted(range(len(problem)), key=lambda k: (not first[k], -counts[k], k))
        claim = new_claim(p, g.entries[problem[order[0]]][0], g.pool, types[column][0], g.cts)
        if claim is None:
            continue
        for k in order:
            i = problem[k]
            cls, req = g.entries[i]
            want = min(counts[k], g.left(i))
            n = fits(p, cls, req, claim, want) if want > 0 else 0
            if n:
                assign_pods(p, cls, claim, cls.pods[g.done[i] : g.done[i] + n], req)
                g.done[i] += n
        if not claim.pods:
            drop_claim(p, claim)


def plan_options(p: Pass, g: Planning, i: int) -> list[tuple[PoolType, float]]:
    """The plain types of the pool entry `i`'s pods may use and fit, with their price,
    cheapest first (cached per requirements and requests).
    """
    cls, req = g.entries[i]
    alt = cls.alternatives[0]
    key = (g.pool.name, alt, req, g.cts)
    hit = p.plan_option_lists.get(key)
    if hit is not None:
        return hit
    out: list[tuple[PoolType, float]] = []
    if g.pool.requirements.compatible(alt):
        for _, _, t, offers in g.pool.options(g.pool.requirements.intersection(alt)):
            prices = [o.price for o in offers if o.capacity_type in g.cts]
            if prices and not t.exotic and all(c >= r for c, r in zip(t.cap, req, strict=True)):
                out.append((t, min(prices)))
    p.plan_option_lists[key] = out
    return out


def plan_types(
    p: Pass, items: list[tuple[tuple[int, ...], int]], options: list[list[tuple[PoolType, float]]]
) -> list[tuple[PoolType, float]]:
    """The assignment LP's candidate types, cheapest first.

    The cheapest aggregate mix (`typemix.cheapest_mix`) for all the items, over the types
    some item may use that the items fill at least PLAN_MIN_NODES times over (the smallest
    such type when none is that small); then, for an item that may use none of those (its
    requirements exclude them), the type that serves it alone most cheaply in whole nodes.
    """
    chosen: dict[str, tuple[PoolType, float]] = {}
    demand = [0] * len(p.names)
    for req, n in items:
        add(demand, req, n)
    union = {t.it.name: (t, price) for opts in options for t, price in opts}
    # Largest first: on a per-dollar tie the LP keeps the first column, and larger nodes
    # leave less room stranded between whole pods.
    common = sorted(union.values(), key=lambda o: (-o[1], o[0].it.name))
    # The LP counts fractional nodes; a type the plan fills less than a few times over would
    # be rounded by a large share (for a zone's part, possibly to no node at all).
    sized = [(t, price) for t, price in common if nodes_for(demand, t.cap) >= PLAN_MIN_NODES]
    common = sized or common[-1:]
    if common:
        x = cheapest_mix(demand, [(t.cap, price) for t, price in common]) or []
        for (t, price), v in zip(common, x, strict=False):
            if v > 0:
                chosen[t.it.name] = (t, price)
    for (req, n), opts in zip(items, options, strict=True):
        if not any(t.it.name in chosen for t, _ in opts):
            best = min(opts, key=lambda o: o[1] * math.ceil(n / per_node(o[0].cap, req)))
            chosen.setdefault(best[0].it.name, best)
    return sorted(chosen.values(), key=lambda o: (o[1], o[0].it.name))


def domain_of(p: Pass, alt: Requirements) -> tuple[object, ...]:
    """The topology domains (other than hostname) `alt` pins its pods to; empty when none."""
    out: list[tuple[object, ...]] = []
    for key in p.topology_keys:
        req = alt.get(key)
        if key != wk.HOSTNAME and req is not None:
            out.append((key, req.complement, tuple(sorted(req.values))))
    return tuple(out)


def share(count: int, index: int, parts: int) -> int:
    """Part `index` of `count` split into `parts` near-equal whole parts (the first ones larger)."""
    return count // parts + (1 if index < count % parts else 0)


def nodes_for(demand: Sequence[int], cap: Sequence[int]) -> float:
    """How many nodes of capacity `cap` `demand` fills, in its most demanding resource."""
    return max((d / c for d, c in zip(demand, cap, strict=True) if d and c), default=0.0)


def per_node(cap: Sequence[int], req: Sequence[int]) -> int:
    """How many pods requesting `req` one node of capacity `cap` holds."""
    return min((c // r for c, r in zip(cap, req, strict=True) if r), default=1 << 30)
