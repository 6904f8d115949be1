"""`compute_commands` and `validate`: one disruption pass, and the re-check before acting. Pure.

A pass reads the input once (`ClusterView`), then tries the methods in order (static NodePools'
scale down and replacement, `static.py`; emptiness, expiration, drift, consolidation,
`methods.py`); the first that yields a command wins. Every node
that is not part of the command gets a reason in `rejected`. Nothing here acts: the controller
executes the command after `validate` found it still sound against state read again later.
"""

from __future__ import annotations

from nodewright.engine.disruption.balance import pool_totals
from nodewright.engine.disruption.candidates import Candidate, ClusterView, counts_by_pool
from nodewright.engine.disruption.consolidation import EPSILON, evaluate
from nodewright.engine.disruption.methods import METHODS, UNDERUTILIZED_POLICIES, drifted, quotas, waiting
from nodewright.engine.disruption.repair import still_due
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.static import STATIC_METHODS, static_replace, static_scale_down, still_holds
from nodewright.engine.disruption.types import (
    CONSOLIDATION,
    DRIFT,
    EMPTINESS,
    EXPIRATION,
    REPAIR,
    Command,
    DisruptionInput,
    DisruptionResult,
)
from nodewright.model.nodepool import CONSOLIDATION_POLICIES


def compute_commands(inp: DisruptionInput, cache: DisruptionCache | None = None) -> DisruptionResult:
    """Decide this pass's disruption command (at most one) and why other nodes are left alone.

    `cache`: what passes may reuse (`DisruptionCache`; the caller keeps it, or none for a fresh one).
    """
    view = ClusterView.build(inp)
    sim = Simulator(view, cache)
    why: dict[str, str] = {}
    command: Command | None = None
    # Static NodePools first: cheap to decide, and their nodes are no other method's to take.
    for method in (static_scale_down, static_replace, *(m for _, m in METHODS)):
        command = method(view, sim, why)
        if command is not None:
            break
    chosen = set(command.candidates) if command is not None else set()
    # Repair takes nodes the shared checks reject (not ready): say why they stay, or drop them.
    rejected = {n: f"{r}; {why[n]}" if n in why else r for n, r in view.rejected.items() if n not in chosen}
    for c in view.candidates.values():
        if c.name in chosen:
            continue
        if c.soft_block:
            rejected[c.name] = c.soft_block
        elif c.name in why:
            rejected[c.name] = why[c.name]
        elif command is not None:
            rejected[c.name] = f"left for a later pass: this pass chose {command.method}"
        else:
            rejected[c.name] = (
                "no method found a command for it: not empty, expired or drifted, and no cheaper placement"
            )
    eligible = sum(1 for c in view.candidates.values() if not c.soft_block)
    return DisruptionResult(
        commands=(command,) if command is not None else (),
        rejected=dict(sorted(rejected.items())),
        eligible=eligible,
        blockers={n: b for n, b in sorted(view.blockers.items()) if n in rejected},
    )


def validate(command: Command, fresh: DisruptionInput, cache: DisruptionCache | None = None) -> str | None:
    """Re-check `command` against `fresh` state: None when it still holds, else why it is stale.

    The command's own candidates are not counted as "in progress" (the controller may already
    have recorded the command). Stale when a candidate is gone or no longer eligible (deleted,
    nominated, do-not-disrupt added, a PodDisruptionBudget now refuses), the pods on the
    candidates changed, the budgets no longer allow it, or the method's reason no longer holds
    (no longer empty, expired or drifted; for consolidation, the plan no longer saves as much:
    more or dearer replacements, or under the stability guard).
    """
    view = ClusterView.build(fresh, ignore_in_progress=frozenset(command.candidates))
    if command.method == REPAIR:
        return still_due(command, view)
    forceful = not command.budgeted
    present = {n.name for n in fresh.snapshot.nodes}
    candidates: list[Candidate] = []
    for name in command.candidates:
        if name not in present:
            return f"candidate {name} is gone"
        if name in view.rejected:
            return f"candidate {name}: {view.rejected[name]}"
        candidate = view.candidates[name]
        if candidate.soft_block and not forceful:
            return f"candidate {name}: {candidate.soft_block}"
        candidates.append(candidate)
    pods = tuple(sorted(p.key for c in candidates for p in c.pods))
    if pods != tuple(sorted(command.pods)):
        added = sorted(set(pods) - set(command.pods))
        gone = sorted(set(command.pods) - set(pods))
        return f"the pods on the candidates changed (added {added or 'none'}, gone {gone or 'none'})"
    if command.budgeted:
        allowed = quotas(view, command.reason)
        for pool, needed in counts_by_pool(candidates).items():
            if needed > allowed.get(pool, 0):
                return (
                    f"NodePool {pool}'s disruption budgets allow {allowed.get(pool, 0)} {command.reason} "
                    f"disruption(s) now; the command needs {needed}"
                )
    return _still_holds(command, candidates, view, cache)


def _still_holds(
    command: Command, candidates: list[Candidate], view: ClusterView, cache: DisruptionCache | None
) -> str | None:
    now = view.inp.now
    if command.method in STATIC_METHODS:
        return still_holds(command, candidates, view)
    if command.method in (EMPTINESS, CONSOLIDATION):
        policies = CONSOLIDATION_POLICIES if command.method == EMPTINESS else UNDERUTILIZED_POLICIES
        for c in candidates:
            if c.pool.disruption.consolidation_policy not in policies:
                return f"candidate {c.name}: NodePool {c.pool.name} no longer consolidates such nodes"
            reason = waiting(c, now)
            if reason:
                return f"candidate {c.name}: {reason}"
    if command.method == EXPIRATION:
        for c in candidates:
            ttl = c.pool.expire_after
            born = c.claim.created_at or c.claim.launched_at
            if ttl is None or now - born < ttl:
                return f"candidate {c.name} is no longer expired (NodePool {c.pool.name}'s expireAfter changed)"
    if command.method == DRIFT:
        for c in candidates:
            if drifted(view, c) is None:
                return f"candidate {c.name} has not drifted any more"
    if command.method == CONSOLIDATION:
        return _still_cheaper(command, candidates, view, cache)
    return None


def _still_cheaper(
    command: Command, candidates: list[Candidate], view: ClusterView, cache: DisruptionCache | None
) -> str | None:
    fresh = view.inp
    verdict = evaluate(
        candidates,
        Simulator(view, cache).run(candidates, cheaper=True),
        fresh.options,
        fresh.blocked,
        many_to_many=True,
        refused=fresh.no_cheaper,
        totals=pool_totals(view),
    )
    if verdict.command is None:
        return f"no longer worth it: {verdict.why}"
    now = verdict.command
    if len(now.replacements) > len(command.replacements):
        return f"the pods now need {len(now.replacements)} new node(s), the command planned {len(command.replacements)}"
    if now.replacement_price > command.replacement_price + EPSILON:
        return (
            f"the replacement is no longer as cheap: ${now.replacement_price:.4f}/h now against "
            f"${command.replacement_price:.4f}/h planned"
        )
    return None
