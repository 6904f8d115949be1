"""What the disruption methods share: reasons noted for nodes left alone, the budget cut, the
`consolidateAfter` wait, the candidate orders, and the re-check every command's candidates pass
before a method checks its own reason again. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodewright.engine.disruption.balance import BALANCED
from nodewright.engine.disruption.candidates import Candidate, ClusterView, counts_by_pool
from nodewright.engine.disruption.drift import drift_reason
from nodewright.engine.disruption.simulate import Simulator
from nodewright.engine.disruption.types import Command
from nodewright.engine.scheduling.types import SchedulingResult
from nodewright.engine.zonebalance import ZoneLoads
from nodewright.model.blocker import BUDGET, Blocker
from nodewright.model.duration import format_duration
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


def fullest_first(view: ClusterView, candidates: Sequence[Candidate]) -> list[Candidate]:
    """`candidates` with the nodes of zone-balanced NodePools from their fullest zones first (in
    their order otherwise): what drift and DaemonSet overflow replace happens whatever the zones,
    and a node they take from the fullest zone evens them out where one from the emptiest would
    tip them further. Unchanged without a zone-balanced NodePool.
    """
    zones = ZoneLoads.for_disruption(view.inp)
    if not zones:
        return list(candidates)
    return sorted(candidates, key=lambda c: -zones.excess(c.node))


def repacking_orders(candidates: Sequence[Candidate]) -> list[list[Candidate]]:
    """The other orders many-to-many searches (beyond Karpenter's one): least loaded first (what
    is left when the load falls), and smallest first, least loaded among equals (many small nodes
    re-packed onto fewer large ones carry fewer copies of daemons and kubelet reserves).
    """
    return [
        sorted(candidates, key=lambda c: (c.load, c.name)),
        sorted(candidates, key=lambda c: (c.node.allocatable[CPU], c.load, c.name)),
    ]


def drifted(view: ClusterView, candidate: Candidate) -> str | None:
    """Why `candidate` has drifted, or None."""
    return drift_reason(candidate.node, candidate.claim, candidate.pool, view.inp.images, candidate.instance_type)


def recheck(command: Command, view: ClusterView) -> tuple[list[Candidate], str | None]:
    """The re-check every budgeted or forceful command's candidates pass against a fresh `view`
    (built without counting the command's own candidates as in progress): the candidates, and
    None, or why the command is stale: a candidate is gone or no longer eligible (deleted,
    nominated, do-not-disrupt added; a PodDisruptionBudget now refuses, unless the command is
    forceful), the pods on the candidates changed, or the budgets no longer allow it.
    """
    forceful = not command.budgeted
    present = {n.name for n in view.inp.snapshot.nodes}
    candidates: list[Candidate] = []
    for name in command.candidates:
        if name not in present:
            return candidates, f"candidate {name} is gone"
        if name in view.rejected:
            return candidates, f"candidate {name}: {view.rejected[name]}"
        candidate = view.candidates[name]
        if candidate.soft_block and not forceful:
            return candidates, f"candidate {name}: {candidate.soft_block}"
        candidates.append(candidate)
    pods = tuple(sorted(p.key for c in candidates for p in c.pods))
    if pods != tuple(sorted(command.pods)):
        added = sorted(set(pods) - set(command.pods))
        gone = sorted(set(command.pods) - set(pods))
        return candidates, f"the pods on the candidates changed (added {added or 'none'}, gone {gone or 'none'})"
    if command.budgeted:
        allowed = view.quotas(command.reason)
        for pool, needed in counts_by_pool(candidates).items():
            if needed > allowed.get(pool, 0):
                return candidates, (
                    f"NodePool {pool}'s disruption budgets allow {allowed.get(pool, 0)} {command.reason} "
                    f"disruption(s) now; the command needs {needed}"
                )
    return candidates, None


def still_settled(candidates: Sequence[Candidate], policies: Sequence[str], now: float) -> str | None:
    """Why a consolidating command (emptiness, consolidation) is stale: a candidate's NodePool no
    longer consolidates such nodes (`policies`), or its `consolidateAfter` has not passed; None.
    """
    for c in candidates:
        if c.pool.disruption.consolidation_policy not in policies:
            return f"candidate {c.name}: NodePool {c.pool.name} no longer consolidates such nodes"
        reason = waiting(c, now)
        if reason:
            return f"candidate {c.name}: {reason}"
    return None


def forceful_replacement(
    name: str, reason: str, found: Sequence[Candidate], result: SchedulingResult, detail: str
) -> Command:
    """The unbudgeted command replacing every node of `found` by `result`'s claims (launched
    first), as expiration and repair issue it: `detail` says why, and the pods left without a new
    home are counted in it.
    """
    if result.unschedulable:
        detail += f"; {len(result.unschedulable)} pod(s) found no new home and will wait pending"
    return Command(
        method=name,
        reason=reason,
        candidates=tuple(c.name for c in found),
        replacements=result.claims,
        savings=sum(c.price for c in found) - result.price_per_hour,
        detail=detail,
        budgeted=False,
        pods=tuple(sorted(p.key for c in found for p in c.pods)),
    )


def replace_first(
    view: ClusterView,
    sim: Simulator,
    candidates: Sequence[Candidate],
    *,
    method: str,
    reason: str,
    because: Mapping[str, str],
    why: dict[str, str],
    noted: Mapping[str, str] | None = None,
) -> Command | None:
    """Replace the first of `candidates` whose pods all find a home, by what that takes (placed
    where a zone-balanced NodePool's zones stay even); `because[node]` says why in the command's
    detail, `noted[node]` (default `because`) in the note of a node whose pods would be stranded.
    In a zone-balanced NodePool, the first whose replacement keeps its zones even goes first;
    when none does, the first of them still goes (these replacements happen whatever the zones).
    """
    zones = ZoneLoads.for_disruption(view.inp)
    fallback: Command | None = None
    for c in candidates:
        result = sim.run([c])
        if result.unschedulable:
            key, problem = next(iter(sorted(result.unschedulable.items())))
            said = (noted or because)[c.name]
            note(why, c.name, f"{said}, but pod {key} would have nowhere to go: {problem}")
            continue
        replacements, unbalanced = zones.judge([c.node], result.claims)
        new = sum(r.price for r in replacements)
        command = Command(
            method=method,
            reason=reason,
            candidates=(c.name,),
            replacements=replacements,
            savings=c.price - new,
            detail=f"replace {c.describe()}: {because[c.name]}; {len(replacements)} replacement(s) at ${new:.4f}/h",
            pods=tuple(sorted(p.key for p in c.pods)),
        )
        if not unbalanced:
            return command
        fallback = fallback or command
    return fallback
