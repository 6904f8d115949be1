"""Drift: delete the empty drifted nodes together; otherwise replace the first drifted node whose
pods all find a home (by as many nodes as that takes), within the "Drifted" budgets. What
drifted means is `engine.disruption.drift`'s; static NodePools' drifted nodes are
`StaticReplace`'s. Karpenter's drift.go. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.disruption.methods.shared import (
    drifted,
    fullest_first,
    note,
    ordered,
    recheck,
    replace_first,
    within_budget,
)
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.types import Command

DRIFT = "drift"
# The budget reason of drift's commands (Karpenter's), which the zone-rebalance move shares.
DRIFTED = "Drifted"


@dataclass(frozen=True, slots=True)
class Drift:
    """The drift method (see the module docstring)."""

    name = DRIFT
    reason = DRIFTED
    budgeted = True

    def compute(self, view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
        """Delete empty drifted nodes, else replace the first drifted node whose pods all find a home."""
        reasons: dict[str, str] = {}
        found: list[Candidate] = []
        for c in view.eligible():
            reason = drifted(view, c) if c.pool.replicas is None else None  # StaticReplace's otherwise
            if reason is not None:
                reasons[c.name] = reason
                found.append(c)
        if not found:
            return None
        kept = within_budget(
            fullest_first(view, ordered(found)), view.quotas(self.reason), self.reason, why, view.blockers
        )
        empty = [c for c in kept if not c.pods]
        if empty:
            return Command(
                method=self.name,
                reason=self.reason,
                candidates=tuple(c.name for c in empty),
                replacements=(),
                savings=sum(c.price for c in empty),
                detail=f"delete {len(empty)} empty drifted node(s): "
                + "; ".join(f"{c.name}: {reasons[c.name]}" for c in empty[:5]),
                pods=(),
            )
        limit = view.inp.options.max_candidates
        # A zone-balanced NodePool's replacement goes where its zones stay even; drift still
        # happens when they would not (the replacement then goes to the least loaded zone).
        noted = {name: f"drifted ({text})" for name, text in reasons.items()}
        command = replace_first(
            view, sim, kept[:limit], method=self.name, reason=self.reason, because=reasons, why=why, noted=noted
        )
        if command is not None:
            return command
        for c in kept[limit:]:
            note(why, c.name, f"drifted ({reasons[c.name]}); beyond max_candidates ({limit}) this pass")
        return None

    def still_holds(self, command: Command, view: ClusterView, cache: DisruptionCache | None) -> str | None:
        """Stale when the shared re-check fails or a candidate has not drifted any more."""
        candidates, stale = recheck(command, view)
        if stale:
            return stale
        for c in candidates:
            if drifted(view, c) is None:
                return f"candidate {c.name} has not drifted any more"
        return None
