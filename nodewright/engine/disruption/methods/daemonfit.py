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
from nodewright.engine.disruption.methods.shared import note, ordered, recheck, within_budget
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.types import Command
from nodewright.engine.zonebalance import ZoneLoads

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
        kept = within_budget(ordered(candidates), view.quotas(self.reason), self.reason, why, view.blockers)
        for c in kept[: view.inp.options.max_candidates]:
            result = sim.run([c])
            if result.unschedulable:
                key, problem = next(iter(sorted(result.unschedulable.items())))
                note(why, c.name, f"{found[c.name]}, but pod {key} would have nowhere to go: {problem}")
                continue
            replacements, _ = ZoneLoads.for_disruption(view.inp).judge([c.node], result.claims)
            new = sum(r.price for r in replacements)
            return Command(
                method=self.name,
                reason=self.reason,
                candidates=(c.name,),
                replacements=replacements,
                savings=c.price - new,
                detail=f"replace {c.describe()}: {found[c.name]}; {len(replacements)} replacement(s) at ${new:.4f}/h",
                pods=tuple(sorted(p.key for p in c.pods)),
            )
        return None

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
