"""Expiration: replace every node older than its NodePool's `expireAfter` (`model.expiry`), in
one command, not budgeted, that also takes nodes a PodDisruptionBudget or a recent nomination
protects (the drain waits for the budgets); `do-not-disrupt` still protects a node. Replacements
are planned for the pods, so they have somewhere to go before the drain (Karpenter v1 deletes
expired nodes without launching first). Static NodePools' expired nodes are `StaticReplace`'s.
Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.disruption.consolidation import names
from nodewright.engine.disruption.methods.shared import forceful_replacement, ordered, recheck
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.types import Command
from nodewright.model.duration import format_duration
from nodewright.model.expiry import expired

EXPIRATION = "expiration"


@dataclass(frozen=True, slots=True)
class Expiration:
    """The expiration method (see the module docstring)."""

    name = EXPIRATION
    reason = "Expired"
    budgeted = False

    def compute(self, view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
        """Replace every node past its NodePool's expireAfter, forcefully (not budgeted)."""
        now = view.inp.now
        found: list[Candidate] = []
        for c in view.eligible(forceful=True):
            if c.pool.replicas is not None:
                continue  # StaticReplace replaces it within the budgets, one at a time
            if expired(c.pool, c.claim, now):
                found.append(c)
        if not found:
            return None
        found = ordered(found)
        result = sim.run(found)
        new = result.price_per_hour
        ttl_text = ", ".join(sorted({f"{c.pool.name} {format_duration(c.pool.expire_after)}" for c in found}))
        detail = (
            f"{len(found)} node(s) reached expireAfter ({ttl_text}): {names(c.describe() for c in found)}; "
            f"{len(result.claims)} replacement(s) at ${new:.4f}/h launch first"
        )
        return forceful_replacement(self.name, self.reason, found, result, detail)

    def still_holds(self, command: Command, view: ClusterView, cache: DisruptionCache | None) -> str | None:
        """Stale when the shared re-check fails or a candidate is no longer expired."""
        candidates, stale = recheck(command, view)
        if stale:
            return stale
        for c in candidates:
            if not expired(c.pool, c.claim, view.inp.now):
                return f"candidate {c.name} is no longer expired (NodePool {c.pool.name}'s expireAfter changed)"
        return None
