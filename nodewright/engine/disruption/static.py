"""Disruption of static NodePools (`spec.replicas`): scale down to `replicas`, and replace drifted
or expired nodes one at a time. Pure.

Static NodePools are never consolidated: emptiness, consolidation and the dynamic drift and
expiration methods leave their nodes alone (`methods.py`). What they get instead, tried first in a
pass:

* Scale down (`static_scale_down`), when the pool has more active nodes than `replicas` (the
  replicas were lowered): the surplus, picked as Karpenter's static deprovisioning picks them,
  empty nodes first (no reschedulable pods), then the least disruption cost, then by name. Nodes
  a `do-not-disrupt` annotation protects are never candidates. One command deletes them all (no
  replacements: the pods left go where kube-scheduler or the provisioner finds room), within the
  budgets that apply to every reason (reason `Overprovisioned`, which no budget lists by name),
  and the drain waits for PodDisruptionBudgets as every drain does.
* Replace (`static_replace`): a drifted node (reason `Drifted`), else one past `expireAfter`
  (reason `Expired`), gets one new empty node of the pool launched first, then is drained and
  deleted; one node at a time, within the budgets for that reason, and only while the pool is not
  above `replicas` (scale down first) and one more node stays within limits.nodes, as
  Karpenter's static drift does.

Counting is `engine.scheduling.static.count_static`'s, the provisioner's, so the consolidator
and the provisioner never disagree about how many nodes a static pool has.
"""

from __future__ import annotations

from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.disruption.consolidation import names
from nodewright.engine.disruption.methods import drifted, note, quotas, within_budget
from nodewright.engine.disruption.simulate import Simulator
from nodewright.engine.disruption.types import Command
from nodewright.engine.scheduling.static import count_static, is_static, node_limit, plan_static
from nodewright.model.duration import format_duration

STATIC_SCALE_DOWN = "static-scale-down"
STATIC_REPLACE = "static-replace"
STATIC_METHODS = (STATIC_SCALE_DOWN, STATIC_REPLACE)
OVERPROVISIONED = "Overprovisioned"


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


def static_scale_down(view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
    """Delete the nodes static pools have beyond their replicas (see the module docstring)."""
    chosen: list[Candidate] = []
    quota = quotas(view, OVERPROVISIONED)
    for name in sorted(view.pools):
        if not is_static(view.pools[name].nodepool):
            continue
        extra = surplus(view, name)
        if extra <= 0:
            continue
        ours = scale_down_order([c for c in view.eligible() if c.pool.name == name])
        chosen += within_budget(ours[:extra], quota, OVERPROVISIONED, why, view.blockers)
    if not chosen:
        return None
    pods = tuple(sorted(p.key for c in chosen for p in c.pods))
    return Command(
        method=STATIC_SCALE_DOWN,
        reason=OVERPROVISIONED,
        candidates=tuple(c.name for c in chosen),
        replacements=(),
        savings=sum(c.price for c in chosen),
        detail=f"static NodePool above its replicas: delete {len(chosen)} node(s), "
        f"{names(c.describe() for c in chosen)}; {len(pods)} pod(s) move",
        pods=pods,
    )


def _expired(view: ClusterView, c: Candidate) -> str | None:
    ttl = c.pool.expire_after
    born = c.claim.created_at or c.claim.launched_at
    if ttl is None or not born or view.inp.now - born < ttl:
        return None
    return f"older than expireAfter {format_duration(ttl)}"


def static_replace(view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
    """Replace one drifted or expired node of a static pool, its replacement launched first."""
    for reason, test in (("Drifted", drifted), ("Expired", _expired)):
        found: list[tuple[Candidate, str]] = []
        for c in view.eligible():
            if not is_static(c.pool):
                continue
            detail = test(view, c)
            if detail is not None:
                found.append((c, detail))
        if not found:
            continue
        allowed = within_budget([c for c, _ in found], quotas(view, reason), reason, why, view.blockers)
        details = {c.name: d for c, d in found}
        for c in sorted(allowed, key=lambda c: (c.pool.name, c.name)):
            pool = view.pools[c.pool.name]
            count = count_static(c.pool, view.inp.snapshot.nodes, view.inp.claims)
            if surplus(view, c.pool.name) > 0:
                note(why, c.name, f"{details[c.name]}; its static NodePool scales down first")
                continue
            limit = node_limit(c.pool)
            if limit is not None and count.total + 1 > limit:
                note(why, c.name, f"{details[c.name]}; a replacement would pass limits.nodes ({limit})")
                continue
            planned, problem = plan_static(pool, 1, view.inp.snapshot.daemonsets, view.inp.blocked)
            if not planned:
                note(why, c.name, f"{details[c.name]}; no replacement can launch: {problem}")
                continue
            new = planned[0].price
            return Command(
                method=STATIC_REPLACE,
                reason=reason,
                candidates=(c.name,),
                replacements=planned,
                savings=c.price - new,
                detail=f"replace static {c.describe()}: {details[c.name]}; "
                f"1 replacement at ${new:.4f}/h launches first",
                pods=tuple(sorted(p.key for p in c.pods)),
            )
    return None


def still_holds(command: Command, candidates: list[Candidate], view: ClusterView) -> str | None:
    """Why a static command is stale against `view` (None when it still holds)."""
    if command.method == STATIC_SCALE_DOWN:
        for pool in {c.pool.name for c in candidates}:
            extra = surplus(view, pool, frozenset(command.candidates))
            wanted = sum(1 for c in candidates if c.pool.name == pool)
            if extra < wanted:
                return f"static NodePool {pool} is {max(extra, 0)} node(s) above its replicas now, not {wanted}"
        return None
    for c in candidates:
        test = drifted if command.reason == "Drifted" else _expired
        if test(view, c) is None:
            return f"candidate {c.name} is no longer {command.reason.lower()}"
    return None
