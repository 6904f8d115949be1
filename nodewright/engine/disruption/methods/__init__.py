"""The disruption methods, in the order a pass tries them: repair, emptiness, expiration, drift,
consolidation. Each returns one command or None, and notes in `why` why a node it looked at was
left alone. Pure.

* Repair (`repair.py`): nodes broken for their condition's toleration (NotReady, a node monitoring
  agent's condition, an impaired EC2 status check), within the 20% guards; forceful, not budgeted.

* Emptiness: every eligible node without reschedulable pods (daemon and mirror pods do not
  count) whose NodePool consolidates (WhenEmpty, WhenEmptyOrUnderutilized or Balanced) and whose
  `consolidateAfter` has passed since its last change, within the "Empty" budgets: one delete.
* Expiration: every node older than its NodePool's `expireAfter` (since the claim was created):
  one command, not budgeted, that also takes nodes a PodDisruptionBudget or a recent nomination
  protects (the drain waits for the budgets); `do-not-disrupt` still protects a node. Replacements
  are planned for the pods, so they have somewhere to go before the drain.
* Drift (`drift.py`): empty drifted nodes are deleted together; otherwise the first drifted node
  whose pods all find a home is replaced (by as many nodes as that takes), within the "Drifted"
  budgets.
* Consolidation (`consolidation.py`), for WhenEmptyOrUnderutilized and Balanced NodePools (a
  Balanced NodePool's moves must also be worth their disruption: `balance.py`), within the
  "Underutilized" budgets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodewright.engine.disruption.balance import BALANCED
from nodewright.engine.disruption.budgets import allowed_disruptions
from nodewright.engine.disruption.candidates import Candidate, ClusterView, PoolCount
from nodewright.engine.disruption.consolidation import Consolidator, names
from nodewright.engine.disruption.drift import drift_reason
from nodewright.engine.disruption.repair import repair
from nodewright.engine.disruption.simulate import Simulator
from nodewright.engine.disruption.types import (
    CONSOLIDATION,
    DRIFT,
    EMPTINESS,
    EXPIRATION,
    REASONS,
    REPAIR,
    Command,
)
from nodewright.model.blocker import BUDGET, Blocker
from nodewright.model.duration import format_duration
from nodewright.model.nodepool import CONSOLIDATION_POLICIES
from nodewright.model.resources import CPU

UNDERUTILIZED_POLICY = "WhenEmptyOrUnderutilized"
# Policies whose NodePools' underutilized nodes are consolidated (Balanced: when worth it, balance.py).
UNDERUTILIZED_POLICIES = (UNDERUTILIZED_POLICY, BALANCED)
STATIC = "its NodePool is static (replicas): never consolidated"


def note(why: dict[str, str], node: str, text: str) -> None:
    """Add a reason a node was left alone (several methods may each have one)."""
    if node not in why:
        why[node] = text
    elif text not in why[node]:
        why[node] += f"; {text}"


def quotas(view: ClusterView, reason: str) -> dict[str, int]:
    """How many more nodes each NodePool's budgets let go for `reason` now."""
    out: dict[str, int] = {}
    for name, pc in view.pools.items():
        count = view.counts.get(name, PoolCount())
        out[name] = allowed_disruptions(pc.nodepool, count.nodes, count.disrupting, reason, view.inp.now)
    return out


def within_budget(
    candidates: Sequence[Candidate],
    quota: Mapping[str, int],
    reason: str,
    why: dict[str, str],
    blockers: dict[str, Blocker] | None = None,
) -> list[Candidate]:
    """The candidates, in order, that the budgets let go; the others get a reason in `why` (and,
    given `blockers`, a budget `Blocker` naming the NodePool, unless another blocker came first).
    """
    left = dict(quota)
    kept: list[Candidate] = []
    for c in candidates:
        pool = c.pool.name
        if left.get(pool, 0) > 0:
            kept.append(c)
            left[pool] -= 1
        else:
            note(why, c.name, f"NodePool {pool}'s disruption budgets allow no more {reason} disruptions now")
            if blockers is not None:
                blockers.setdefault(c.name, Blocker(BUDGET, (pool,)))
    return kept


def waiting(candidate: Candidate, now: float) -> str:
    """Why `consolidateAfter` keeps the node for now ('' once it has passed)."""
    after = candidate.pool.disruption.consolidate_after
    if after is None:
        return f"NodePool {candidate.pool.name} has consolidateAfter: Never"
    age = now - candidate.last_change
    if age < after:
        return f"its pods last changed {age:.0f}s ago; consolidateAfter is {format_duration(after)}"
    return ""


def ordered(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Most savings per disruption cost first; among equals the dearest node first."""
    return sorted(candidates, key=lambda c: (c.order_key[0], -c.price, c.name))


def repacking_orders(candidates: Sequence[Candidate]) -> list[list[Candidate]]:
    """The other orders many-to-many searches (beyond Karpenter's one): least loaded first (what
    is left when the load falls), and smallest first, least loaded among equals (many small nodes
    re-packed onto fewer large ones carry fewer copies of daemons and kubelet reserves).
    """
    return [
        sorted(candidates, key=lambda c: (c.load, c.name)),
        sorted(candidates, key=lambda c: (c.node.allocatable[CPU], c.load, c.name)),
    ]


def emptiness(view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
    """Delete the empty nodes the budgets allow, in one command."""
    now = view.inp.now
    empty: list[Candidate] = []
    for c in view.eligible():
        if c.pods or c.pool.disruption.consolidation_policy not in CONSOLIDATION_POLICIES:
            continue
        if c.pool.replicas is not None:
            note(why, c.name, STATIC)
            continue
        reason = waiting(c, now)
        if reason:
            note(why, c.name, f"empty, but {reason}")
            continue
        empty.append(c)
    kept = within_budget(ordered(empty), quotas(view, REASONS[EMPTINESS]), REASONS[EMPTINESS], why, view.blockers)
    if not kept:
        return None
    savings = sum(c.price for c in kept)
    return Command(
        method=EMPTINESS,
        reason=REASONS[EMPTINESS],
        candidates=tuple(c.name for c in kept),
        replacements=(),
        savings=savings,
        detail=f"delete {len(kept)} empty node(s), {names(c.describe() for c in kept)}; saves ${savings:.4f}/h",
        pods=(),
    )


def expiration(view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
    """Replace every node past its NodePool's expireAfter, forcefully (not budgeted)."""
    now = view.inp.now
    expired: list[Candidate] = []
    for c in view.eligible(forceful=True):
        if c.pool.replicas is not None:
            continue  # static.py replaces it within the budgets, one at a time
        ttl = c.pool.expire_after
        born = c.claim.created_at or c.claim.launched_at
        if ttl is not None and born and now - born >= ttl:
            expired.append(c)
    if not expired:
        return None
    expired = ordered(expired)
    result = sim.run(expired)
    total = sum(c.price for c in expired)
    new = result.price_per_hour
    ttl_text = ", ".join(sorted({f"{c.pool.name} {format_duration(c.pool.expire_after)}" for c in expired}))
    detail = (
        f"{len(expired)} node(s) reached expireAfter ({ttl_text}): {names(c.describe() for c in expired)}; "
        f"{len(result.claims)} replacement(s) at ${new:.4f}/h launch first"
    )
    if result.unschedulable:
        detail += f"; {len(result.unschedulable)} pod(s) found no new home and will wait pending"
    return Command(
        method=EXPIRATION,
        reason=REASONS[EXPIRATION],
        candidates=tuple(c.name for c in expired),
        replacements=result.claims,
        savings=total - new,
        detail=detail,
        budgeted=False,
        pods=tuple(sorted(p.key for c in expired for p in c.pods)),
    )


def drifted(view: ClusterView, candidate: Candidate) -> str | None:
    """Why `candidate` has drifted, or None."""
    return drift_reason(candidate.node, candidate.claim, candidate.pool, view.inp.images, candidate.instance_type)


def drift(view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
    """Delete empty drifted nodes, else replace the first drifted node whose pods all find a home."""
    reasons: dict[str, str] = {}
    found: list[Candidate] = []
    for c in view.eligible():
        reason = drifted(view, c) if c.pool.replicas is None else None  # static.py replaces static ones
        if reason is not None:
            reasons[c.name] = reason
            found.append(c)
    if not found:
        return None
    kept = within_budget(ordered(found), quotas(view, REASONS[DRIFT]), REASONS[DRIFT], why, view.blockers)
    empty = [c for c in kept if not c.pods]
    if empty:
        return Command(
            method=DRIFT,
            reason=REASONS[DRIFT],
            candidates=tuple(c.name for c in empty),
            replacements=(),
            savings=sum(c.price for c in empty),
            detail=f"delete {len(empty)} empty drifted node(s): "
            + "; ".join(f"{c.name}: {reasons[c.name]}" for c in empty[:5]),
            pods=(),
        )
    limit = view.inp.options.max_candidates
    for c in kept[:limit]:
        result = sim.run([c])
        if result.unschedulable:
            key, problem = next(iter(sorted(result.unschedulable.items())))
            note(why, c.name, f"drifted ({reasons[c.name]}), but pod {key} would have nowhere to go: {problem}")
            continue
        new = result.price_per_hour
        return Command(
            method=DRIFT,
            reason=REASONS[DRIFT],
            candidates=(c.name,),
            replacements=result.claims,
            savings=c.price - new,
            detail=f"replace {c.describe()}: {reasons[c.name]}; {len(result.claims)} replacement(s) at ${new:.4f}/h",
            pods=tuple(sorted(p.key for p in c.pods)),
        )
    for c in kept[limit:]:
        note(why, c.name, f"drifted ({reasons[c.name]}); beyond max_candidates ({limit}) this pass")
    return None


def consolidation(view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
    """Delete or replace underutilized nodes (see `consolidation.py`)."""
    now = view.inp.now
    pool: list[Candidate] = []
    for c in view.eligible():
        if not c.pods:
            continue  # emptiness's to take, under the "Empty" budgets
        if c.pool.replicas is not None:
            note(why, c.name, STATIC)
            continue
        if c.pool.disruption.consolidation_policy not in UNDERUTILIZED_POLICIES:
            note(why, c.name, f"NodePool {c.pool.name} consolidates only empty nodes (consolidationPolicy WhenEmpty)")
            continue
        reason = waiting(c, now)
        if reason:
            note(why, c.name, reason)
            continue
        pool.append(c)
    quota = quotas(view, REASONS[CONSOLIDATION])
    kept = within_budget(ordered(pool), quota, REASONS[CONSOLIDATION], why, view.blockers)
    limit = view.inp.options.max_candidates
    for c in kept[limit:]:
        note(why, c.name, f"beyond max_candidates ({limit}) this pass")
    kept = kept[:limit]
    if not kept:
        return None
    others = []
    if view.inp.options.many_to_many:
        # The budgets cut each order on its own; a node they leave out here was noted above.
        others = [within_budget(order, quota, REASONS[CONSOLIDATION], {})[:limit] for order in repacking_orders(pool)]
    consolidator = Consolidator(view, sim)
    command = consolidator.run(kept, others)
    for name, text in consolidator.why.items():
        note(why, name, text)
    return command


METHODS = (
    (REPAIR, repair),
    (EMPTINESS, emptiness),
    (EXPIRATION, expiration),
    (DRIFT, drift),
    (CONSOLIDATION, consolidation),
)
