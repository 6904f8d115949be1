"""`solve()`: place pending pods on existing capacity and decide which nodes to launch. Pure.

Theory of operation
-------------------
One `solve()` call runs one or more *passes* (`state.Pass`: the bins, pools, topology counts and
memos of one pass) and returns the best pass's result. A pass goes through these steps, one file
each (modelled on Karpenter's scheduler.go / nodeclaim.go / existingnode.go / topology.go /
queue.go / preferences.go split):

1. *Prepare* (`prepare.py`). For each NodePool (highest weight first) keep the instance types its
   requirements allow that still have an offering (not blocked by the capacity-error cache), with
   their allocatable resources minus the overhead of the daemonsets that would run there, as
   integer vectors. Limits become a remaining-capacity vector per pool. What does not depend on
   the pass is kept in the caller's `SolverCache` (`cache.py`) and reused by later solves.
2. *Group* (`classes.py`). Pods with identical scheduling specs form one class, handled as a batch:
   "how many of these fit here?" is asked once per class and node, not once per pod. Classes go
   largest first (cpu, then memory), like Karpenter's pod order (its queue.go); classes of equal
   size by their spec, never their pods' names (`classes.group`).
3. *Existing capacity* (`existing.py`). Nodes and in-flight claims become bins with the room their
   bound pods leave; every bound pod is counted for topology where it is.
4. *Fill with topology* (`fill.py`, checks in `fit.py`). Zone- and capacity-type-keyed spread and
   (anti-)affinity split a class across domains (`topology.py`); each part goes to existing bins,
   then to this pass's open claims (first fit, scanning a bounded number), then to new claims.
5. *New claims and their targets* (`nodeclaim.py`, `targets.py`). A new claim aims at a *target*
   type: the one that would serve the pool's remaining demand most cheaply if used alone (whole
   nodes of it, each holding whole pods of the opening size, times its price). A claim accepts
   pods while they fit its target, so claims come out right-sized instead of growing to the
   largest type in the catalog.
6. *Shape mixing and the planned fill* (`mix.py`, `plan.py`, `typemix.py`, with
   `Strategy.mix_shapes` / `lp_plan`). Unconstrained classes are packed node by node by shape, or
   first opened as an assignment LP plans the instance-type mix for their total requests.
7. *Relax* (`fill.schedule`, `classes.PodClass.relaxed`). Pods that still do not fit are retried
   with one preference fewer, in Karpenter's order (its preferences.go), and are reported with a
   reason once nothing is left to relax. Then pods whose affinity or spread waits on other pods
   of the batch are scheduled again while a round places any (`retry.py`, Karpenter's queue).
8. *Merge* (`repack.py`). Pairs of claims become one node when one node holding both costs less.
9. *Finalize* (`finalize.py`). Each claim's options become the (at most 60) cheapest types that
   hold its pods plus daemonset overhead, within the pool's remaining limits; it is priced at its
   cheapest allowed offering.

Preferences bounded (`preferences.py`): when pods carry preferred pod (anti-)affinity and the plan
buys nodes, `solve()` plans the input again without those terms and keeps the plan that honours
them only while it costs at most PREFERENCE_PREMIUM more (Karpenter relaxes a preference only when
it cannot be met; kube-scheduler scores preferences and never buys a node for one).

The portfolio (`portfolio.py`): small inputs run a pass per strategy of PORTFOLIO and keep the plan
that leaves the fewest pods unplaced, then costs least. A pass that would repeat another step for
step is skipped: shape mixing when no class is mixable (`begin_pass`), the other class order when
it is the same order (`classes.orders_differ`), the forced-first pass when no pod needs a node of
its own (`classes.node_each`). Large inputs run one pass: the forced-first one when anti-affinity
forces two nodes or more (the portfolio's rule for it), else first fit (docs/design/solver.md,
"Pods that each need a node").

When NodePool limits leave pods out (of the best plan, whatever the input's size), the passes of
LIMITS_PORTFOLIO run as well and the same rule picks among all of them: a limit is a budget of
capacity, and these passes spend it as Karpenter does (the largest type within the limits per
new claim, a claim taking a pod while any of its types holds all its pods, pods one by one to
the emptiest claim), so they place at least what Karpenter would; the normal passes usually
cost less when they place as many (docs/design/solver.md, "When limits bind"). `limits.nodes` is
one more entry of that budget: every type's limit vector charges one node (`prepare.py`, from
`usage.charged`), as each node and claim in flight does in the usage, so every pass treats it
like cpu: no claim past it, pods left out with "limits reached".

Determinism: classes are sorted by requests then by their spec (`classes.group`; names play no
part, so renaming pods never changes the plan), pods inside a class by name, types by price then
name, offerings by price, capacity type and zone; no set or dict iteration order leaks into the
result, and no cache changes it (`cache.py`).
"""

from __future__ import annotations

from dataclasses import replace

from nodewright.engine.collector import collector_paused
from nodewright.engine.scheduling.budget import FairTurns, SolveDeadline
from nodewright.engine.scheduling.cache import SolverCache
from nodewright.engine.scheduling.classes import PodClass, orders_differ
from nodewright.engine.scheduling.existing import BoundPods, add_existing, topology_groups
from nodewright.engine.scheduling.fill import schedule, unconstrained, zone_parts, zone_spread_only
from nodewright.engine.scheduling.finalize import finalize
from nodewright.engine.scheduling.fit import capacity_types, home_pool, remaining_demand
from nodewright.engine.scheduling.mix import mix
from nodewright.engine.scheduling.portfolio import (
    DEFAULT_STRATEGY,
    LARGE_FORCED,
    LIMITS_PORTFOLIO,
    PORTFOLIO,
    PORTFOLIO_LIMIT,
    Strategy,
)
from nodewright.engine.scheduling.preferences import (
    bounded,
    has_preferred_pod_terms,
    restore,
    without_preferred_pod_terms,
)
from nodewright.engine.scheduling.prepare import add
from nodewright.engine.scheduling.repack import repack
from nodewright.engine.scheduling.retry import retry_waiting
from nodewright.engine.scheduling.state import Pass
from nodewright.engine.scheduling.types import SchedulingInput, SchedulingResult
from nodewright.model import labels as wk

__all__ = ["DEFAULT_STRATEGY", "PORTFOLIO", "PORTFOLIO_LIMIT", "SolverCache", "Strategy", "run_pass", "solve"]


def solve(
    inp: SchedulingInput,
    strategy: Strategy | None = None,
    *,
    cache: SolverCache | None = None,
    deadline: SolveDeadline | None = None,
    bound_preferences: bool = True,
) -> SchedulingResult:
    """Decide where `inp.pods` go: existing nodes, in-flight claims, or new node claims.

    With a `strategy`, one pass uses it. Otherwise small passes try every strategy in PORTFOLIO
    and keep the plan that leaves the fewest pods unplaced, then costs least (the first strategy
    wins ties, so the result stays deterministic); large ones use DEFAULT_STRATEGY. Either way,
    when NodePool limits leave pods out, the passes of LIMITS_PORTFOLIO get their chance too
    (`_within_limits`): a replacement under `limits.nodes: 2` must not be refused because one
    pass spent the two nodes on small types.

    `cache` is what the caller lets later solves reuse (see `cache.py`); without one the call
    uses a fresh one of its own. The result is the same either way.

    With a `deadline` (`budget.py`), a pass plans no class once it has passed: their pods come
    back as `deferred`, and no further strategy starts (the first pass's plan is kept).

    When pods have preferred pod (anti)-affinity and the plan buys nodes, the same input is planned
    again without those preferences, and the plan that honours them is kept only while it costs at
    most PREFERENCE_PREMIUM more (`preferences.py`): a preference never buys a node per replica.
    `bound_preferences=False` skips that (consolidation's questions: see `disruption/simulate.py`).
    """
    # A pass builds a few hundred thousand small objects and no cycles (`engine/collector.py`).
    with collector_paused():
        return _solve_preferring(inp, strategy, cache, deadline, bound_preferences)


def _solve_preferring(
    inp: SchedulingInput,
    strategy: Strategy | None,
    cache: SolverCache | None,
    deadline: SolveDeadline | None,
    bound_preferences: bool,
) -> SchedulingResult:
    """`solve()` with the collector paused (see `solve`)."""
    cache = cache if cache is not None else SolverCache()
    plan = _solve(inp, strategy, cache, deadline)
    if not bound_preferences or plan.price_per_hour <= 0 or not has_preferred_pod_terms(inp):
        return plan
    if deadline is not None and deadline.expired():
        return plan
    relaxed = _solve(without_preferred_pod_terms(inp), strategy, cache, deadline)
    if bounded(plan, relaxed):
        return plan
    return restore(relaxed, {pod.key: pod for pod in inp.pods})


def _solve(
    inp: SchedulingInput, strategy: Strategy | None, cache: SolverCache, deadline: SolveDeadline | None
) -> SchedulingResult:
    """`solve()` with the preferences as the input states them (see `solve`)."""
    bound = BoundPods(cache)
    if strategy is not None:
        return _within_limits(inp, run_pass(Pass(inp, strategy, bound, cache), deadline), bound, cache, deadline)
    if len(inp.pods) > PORTFOLIO_LIMIT:
        # One pass: forced-first when hostname anti-affinity forces two nodes or more (the rule that
        # lets it into the portfolio), else first fit (docs/design/solver.md, "Pods that each need
        # a node": 20% cheaper on the bench's 10,000 diverse pods, within its 0.5 s cold goal).
        p = Pass(inp, LARGE_FORCED, bound, cache)
        if p.forced_left < 2:
            # With no pod needing a node of its own the classes are in first fit's order already.
            p = Pass(inp, DEFAULT_STRATEGY, bound, cache, p.classes if p.forced_left == 0 else None)
        return _within_limits(inp, run_pass(p, deadline), bound, cache, deadline)
    plans: list[SchedulingResult] = []
    plannable = False
    grouped: dict[tuple[bool, bool], list[PodClass]] = {}  # the classes in each order, grouped once per solve
    for candidate in PORTFOLIO:
        if candidate.lp_plan and not plannable:
            # The shape-mixing pass (earlier in PORTFOLIO) met nothing to plan, so this pass
            # would repeat it step for step.
            continue
        if plans and deadline is not None and deadline.expired():
            break
        order = (candidate.other_order, candidate.forced_first)
        p = Pass(inp, candidate, bound, cache, grouped.get(order))
        grouped.setdefault(order, p.classes)
        if candidate.forced_first and p.forced_left < 2:
            continue  # anti-affinity forces no two nodes: the pass would be first fit, or near it
        if candidate.other_order and not orders_differ(p.classes):
            continue  # the classes would go in the same order as in the first pass
        if candidate.mix_shapes and not candidate.lp_plan and not begin_pass(p):
            # No class is mixable: the pass would place every class in order, step for step
            # as the first-fit pass did.
            continue
        plans.append(run_pass(p, deadline))
        plannable = plannable or p.plannable
    return _within_limits(inp, min(plans, key=_rank), bound, cache, deadline)


def _rank(result: SchedulingResult) -> tuple[int, float]:
    """Fewest pods left out (unschedulable or deferred), then cheapest."""
    return len(result.unschedulable) + len(result.deferred), round(result.price_per_hour, 9)


def _within_limits(
    inp: SchedulingInput,
    best: SchedulingResult,
    bound: BoundPods,
    cache: SolverCache,
    deadline: SolveDeadline | None,
) -> SchedulingResult:
    """`best`, or when NodePool limits left pods out, the passes of LIMITS_PORTFOLIO's plan if it
    places more (or as many, for less). Costs nothing when no pod is left out or no pool has limits.
    """
    if inp.device_problems and best.unschedulable:
        # A pod whose DRA claims fit no node says why (engine.devices), not "no type satisfies".
        reasons = {k: inp.device_problems.get(k, why) for k, why in best.unschedulable.items()}
        best = replace(best, unschedulable=reasons)
    if not best.unschedulable or all(pc.nodepool.limits is None for pc in inp.pools):
        return best
    plans = [best]
    for candidate in LIMITS_PORTFOLIO:
        if deadline is not None and deadline.expired():
            break
        plans.append(run_pass(Pass(inp, candidate, bound, cache), deadline))
    return min(plans, key=_rank)


def begin_pass(p: Pass) -> bool:
    """The pass's first steps (topology groups, existing capacity, demand); returns whether some
    class is mixable (`mix.py` would pack it), the only way a shape-mixing pass differs from the
    first-fit one.
    """
    p.begun = True
    groups = p.tracked = topology_groups(p)
    p.topology.track(groups)
    p.topology_keys = sorted({wk.HOSTNAME, wk.ZONE, wk.CAPACITY_TYPE} | {g.key for g in groups})
    add_existing(p)
    for cls in p.classes:
        pool = home_pool(p, cls)
        if pool is not None:
            req = p.vec(cls.requests)
            add(remaining_demand(p, pool, capacity_types(p, cls, pool)), req, len(cls.pods))
    return any(
        home_pool(p, cls) is not None and (unconstrained(p, cls) or zone_spread_only(p, cls)) for cls in p.classes
    )


def run_pass(p: Pass, deadline: SolveDeadline | None = None) -> SchedulingResult:
    """Run one pass (the steps of the module docstring) and return its result; with a `deadline`,
    the classes not reached in time (tenants taking turns: `budget.FairTurns`) are `deferred`.
    """
    if not p.begun:
        begin_pass(p)
    turns = FairTurns(deadline)

    def tenant(cls: PodClass) -> tuple[str, str]:
        home = home_pool(p, cls)
        return (home.name if home is not None else "", cls.sample.namespace)

    if p.strategy.mix_shapes:
        # Constrained classes first, so the mixable ones can fill what their claims leave.
        mixable: list[PodClass] = []

        def take(cls: PodClass) -> None:
            if home_pool(p, cls) is None:
                schedule(p, cls)
            elif unconstrained(p, cls):
                mixable.append(cls)
            elif zone_spread_only(p, cls):
                mixable.extend(zone_parts(p, cls))
            else:
                schedule(p, cls)

        deferred = turns.run(p.classes, tenant, take)
        # The mixable classes had their turn: packing them is linear in their number.
        for cls in mix(p, mixable):
            schedule(p, cls)
    else:
        # Under a binding limit, the smallest pods first place the most of them in the budget.
        order = list(reversed(p.classes)) if p.strategy.smallest_first else p.classes
        deferred = turns.run(order, tenant, lambda cls: schedule(p, cls))
    if deadline is None or not deadline.expired():
        # Pods whose constraints wait on others in the batch get more rounds, then the re-pack;
        # past the deadline both are left to the next pass.
        retry_waiting(p)
        repack(p)
    result = finalize(p)
    if not deferred:
        return result
    return replace(result, deferred=tuple(sorted(pod.key for cls in deferred for pod in cls.pods)))
