"""Static NodePools' scale down (`spec.replicas`): when a static pool has more active nodes than
`replicas` (the replicas were lowered), delete the surplus, picked as Karpenter's static
deprovisioning picks them: empty nodes first (no reschedulable pods), then the least disruption
cost, then by name. Pure.

Static NodePools are never consolidated: emptiness, consolidation and the dynamic drift and
expiration methods leave their nodes alone. What they get instead, tried first in a pass, is this
method and `StaticReplace`. Nodes a `do-not-disrupt` annotation protects are never candidates.
One command deletes them all (no replacements: the pods left go where kube-scheduler or the
provisioner finds room), within the budgets that apply to every reason (reason
`Overprovisioned`, which no budget lists by name), and the drain waits for PodDisruptionBudgets
as every drain does.

Counting is `engine.scheduling.static.count_static`'s, the provisioner's, so the consolidator
and the provisioner never disagree about how many nodes a static pool has.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.disruption.consolidation import names
from nodewright.engine.disruption.methods.shared import recheck, within_budget
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.types import Command
from nodewright.engine.scheduling.static import count_static, is_static

STATIC_SCALE_DOWN = "static-scale-down"


def surplus(view: ClusterView, pool: str, ignore: frozenset[str] = frozenset()) -> int:
    """How many active nodes the static pool `pool` has beyond its replicas (nodes a running
    command already takes away are not counted: their replacements are; nor are those in `ignore`,
    the command being validated).
    """
    nodepool = view.pools[pool].nodepool
    if nodepool.replicas is None:
        return 0
    count = count_static(nodepool, view.inp.snapshot.nodes, view.inp.claims)
    leaving = sum(
        1
        for n in view.inp.snapshot.nodes
        if n.nodepool == pool and n.name in view.inp.in_progress - ignore and not n.draining
    )
    return count.active - leaving - nodepool.replicas


def scale_down_order(candidates: list[Candidate]) -> list[Candidate]:
    """Empty nodes first, then the least disruption cost, then by name (Karpenter's order)."""
    return sorted(candidates, key=lambda c: (bool(c.pods), c.disruption_cost, c.name))


@dataclass(frozen=True, slots=True)
class StaticScaleDown:
    """The static scale-down method (see the module docstring)."""

    name = STATIC_SCALE_DOWN
    reason = "Overprovisioned"
    budgeted = True

    def compute(self, view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
        """Delete the nodes static pools have beyond their replicas."""
        chosen: list[Candidate] = []
        quota = view.quotas(self.reason)
        for name in sorted(view.pools):
            if not is_static(view.pools[name].nodepool):
                continue
            extra = surplus(view, name)
            if extra <= 0:
                continue
            ours = scale_down_order([c for c in view.eligible() if c.pool.name == name])
            chosen += within_budget(ours[:extra], quota, self.reason, why, view.blockers)
        if not chosen:
            return None
        pods = tuple(sorted(p.key for c in chosen for p in c.pods))
        return Command(
            method=self.name,
            reason=self.reason,
            candidates=tuple(c.name for c in chosen),
            replacements=(),
            savings=sum(c.price for c in chosen),
            detail=f"static NodePool above its replicas: delete {len(chosen)} node(s), "
            f"{names(c.describe() for c in chosen)}; {len(pods)} pod(s) move",
            pods=pods,
        )

    def still_holds(self, command: Command, view: ClusterView, cache: DisruptionCache | None) -> str | None:
        """Stale when the shared re-check fails or a pool is no longer as far above its replicas."""
        candidates, stale = recheck(command, view)
        if stale:
            return stale
        for pool in {c.pool.name for c in candidates}:
            extra = surplus(view, pool, frozenset(command.candidates))
            wanted = sum(1 for c in candidates if c.pool.name == pool)
            if extra < wanted:
                return f"static NodePool {pool} is {max(extra, 0)} node(s) above its replicas now, not {wanted}"
        return None
