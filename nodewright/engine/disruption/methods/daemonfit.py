"""DaemonSet overflow: replace a node whose DaemonSet pods no longer fit it, when its NodePool
says `nodewright.io/daemonset-overflow: Replace` (`engine/daemonfit.py` finds them). The first
such node whose pods all find a home (the replacement holds them plus every daemon's overhead) is
replaced, within the "Drifted" budgets: like drift, the node no longer is what its NodePool would
launch now. Beyond Karpenter (#715). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.engine.daemonfit import overflows
from nodewright.engine.disruption.candidates import ClusterView
from nodewright.engine.disruption.methods.shared import (
    fullest_first,
    ordered,
    recheck,
    replace_first,
    within_budget,
)
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.types import Command

DAEMONSET_OVERFLOW = "daemonset-overflow"
REPLACE = "Replace"


@dataclass(frozen=True, slots=True)
class DaemonSetOverflow:
    """The daemonset-overflow method (see the module docstring)."""

    name = DAEMONSET_OVERFLOW
    reason = "Drifted"
    budgeted = True

    def compute(self, view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
        """Replace the first overflowing node (of a Replace NodePool) whose pods all find a home."""
        found = _overflowing(view)
        if not found:
            return None
        candidates = [c for c in view.eligible() if c.name in found and c.pool.replicas is None]
        kept = within_budget(
            fullest_first(view, ordered(candidates)), view.quotas(self.reason), self.reason, why, view.blockers
        )
        limit = view.inp.options.max_candidates
        return replace_first(view, sim, kept[:limit], method=self.name, reason=self.reason, because=found, why=why)

    def still_holds(self, command: Command, view: ClusterView, cache: DisruptionCache | None) -> str | None:
        """Stale when the shared re-check fails or a candidate's daemon pods fit (or are gone)."""
        candidates, stale = recheck(command, view)
        if stale:
            return stale
        found = _overflowing(view)
        for c in candidates:
            if c.name not in found:
                return f"the DaemonSet pods of {c.name} fit it now (or are gone)"
        return None


def _overflowing(view: ClusterView) -> dict[str, str]:
    """Node -> the overflow's sentence, for nodes of NodePools whose policy is Replace."""
    pools = [pc.nodepool for pc in view.inp.pools if pc.nodepool.daemon_overflow == REPLACE]
    if not pools:
        return {}
    return {name: o.describe() for name, o in overflows(view.inp.snapshot, pools).items()}
