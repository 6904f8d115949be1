"""Consolidation: delete or replace underutilized nodes of WhenEmptyOrUnderutilized and Balanced
NodePools past `consolidateAfter` (the search is `engine.disruption.consolidation`'s; a Balanced
NodePool's moves must also be worth their disruption: `balance.py`), within the "Underutilized"
budgets. Karpenter's multi- and single-node consolidation, plus many-to-many. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.engine.disruption.balance import pool_totals
from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.disruption.consolidation import CONSOLIDATION, EPSILON, UNDERUTILIZED, Consolidator, evaluate
from nodewright.engine.disruption.limits import PoolLimits
from nodewright.engine.disruption.methods.shared import (
    STATIC,
    UNDERUTILIZED_POLICIES,
    note,
    ordered,
    recheck,
    repacking_orders,
    still_settled,
    waiting,
    within_budget,
)
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.types import Command
from nodewright.engine.zonebalance import ZoneLoads


@dataclass(frozen=True, slots=True)
class Consolidation:
    """The consolidation method (see the module docstring)."""

    name = CONSOLIDATION
    reason = UNDERUTILIZED
    budgeted = True

    def compute(self, view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
        """Delete or replace underutilized nodes (see `engine.disruption.consolidation`)."""
        now = view.inp.now
        pool: list[Candidate] = []
        for c in view.eligible():
            if not c.pods:
                continue  # emptiness's to take, under the "Empty" budgets
            if c.pool.replicas is not None:
                note(why, c.name, STATIC)
                continue
            if c.pool.disruption.consolidation_policy not in UNDERUTILIZED_POLICIES:
                only_empty = "consolidates only empty nodes (consolidationPolicy WhenEmpty)"
                note(why, c.name, f"NodePool {c.pool.name} {only_empty}")
                continue
            reason = waiting(c, now)
            if reason:
                note(why, c.name, reason)
                continue
            pool.append(c)
        quota = view.quotas(self.reason)
        kept = within_budget(ordered(pool), quota, self.reason, why, view.blockers)
        limit = view.inp.options.max_candidates
        for c in kept[limit:]:
            note(why, c.name, f"beyond max_candidates ({limit}) this pass")
        kept = kept[:limit]
        if not kept:
            return None
        others = []
        if view.inp.options.many_to_many:
            # The budgets cut each order on its own; a node they leave out here was noted above.
            others = [within_budget(order, quota, self.reason, {})[:limit] for order in repacking_orders(pool)]
        consolidator = Consolidator(view, sim)
        command = consolidator.run(kept, others)
        for name, text in consolidator.why.items():
            note(why, name, text)
        return command

    def still_holds(self, command: Command, view: ClusterView, cache: DisruptionCache | None) -> str | None:
        """Stale when the shared re-check fails, a candidate's NodePool no longer consolidates
        underutilized nodes or its `consolidateAfter` has not passed, or the plan no longer saves
        as much: more or dearer replacements, or under the stability guard.
        """
        candidates, stale = recheck(command, view)
        stale = stale or still_settled(candidates, UNDERUTILIZED_POLICIES, view.inp.now)
        return stale or _still_cheaper(command, candidates, view, cache)


def _still_cheaper(
    command: Command, candidates: list[Candidate], view: ClusterView, cache: DisruptionCache | None
) -> str | None:
    fresh = view.inp
    sim = Simulator(view, cache)
    verdict = evaluate(
        candidates,
        sim.run(candidates, cheaper=True),
        fresh.options,
        fresh.blocked,
        many_to_many=True,
        refused=fresh.no_cheaper,
        totals=pool_totals(view),
        zones=ZoneLoads.for_disruption(fresh, keep=frozenset(command.candidates)),
        limits=PoolLimits(fresh.pools, sim.used),
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
