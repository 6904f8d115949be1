"""Candidates: which nodes a disruption pass may touch, what they cost, and in which order. Pure.

`ClusterView.build(inp)` reads one `DisruptionInput` once: pods by node, claims by node, the state
of every PodDisruptionBudget, the NodePools' node counts for budgets, and one `Candidate` per node
that passes the checks every method shares. A node fails them, with a reason, when it is not ours
(no claim or no NodePool label, or its NodePool is gone), is being deleted, is not initialized or
not ready, is already part of a running command, or carries a `do-not-disrupt` node or pod
annotation ("hard" reasons), or when a provisioning pass nominated it within the window or one of
its pods could not be evicted now because of a PodDisruptionBudget ("soft" reasons, which the
forceful expiration method ignores: its drain waits for the budgets instead).

Order: most savings per unit of disruption first. A node's disruption cost is the sum of its
reschedulable pods' eviction costs (1 + deletion-cost/2^27 + priority/2^25, clamped to
[-10, 10]) times the share of its lifetime left before `expireAfter` (Karpenter's formula); its
savings is its price. Candidates are sorted by cost per dollar, ascending, then by name.

`last_change` stands in for "the last time pods were added to or removed from the node", which
`consolidateAfter` counts from: the latest of the claim's initialization, the youngest
reschedulable pod's creation and the last nomination by a provisioning pass. Pod removals are not
visible in a snapshot, so a node that just lost its last pod counts from its previous change.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.engine.deletioncost import STEERED
from nodewright.engine.disruption.budgets import allowed_disruptions
from nodewright.engine.disruption.types import DisruptionInput
from nodewright.engine.scheduling.types import PoolCapacity
from nodewright.model import labels as wk
from nodewright.model.blocker import DO_NOT_DISRUPT_NODE, DO_NOT_DISRUPT_POD, PDB, STALLED_DRAIN, Blocker
from nodewright.model.expiry import lifetime_left
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.resources import CPU, MEMORY
from nodewright.model.snapshot import reschedulable
from nodewright.model.standby import STANDBY_LABEL
from nodewright.model.workloads import PodDisruptionBudget

DELETION_COST = wk.POD_DELETION_COST


def eviction_cost(pod: Pod) -> float:
    """Karpenter's cost of evicting `pod`: 1 + deletion-cost/2^27 + priority/2^25, in [-10, 10]
    (a deletion cost Nodewright set to steer scale-downs counts as none).
    """
    cost = 1.0
    text = pod.annotations.get(DELETION_COST)
    # A cost Nodewright wrote to steer scale-downs (engine.deletioncost) says nothing of the pod.
    if text is not None and text != pod.annotations.get(STEERED):
        with contextlib.suppress(ValueError):  # a malformed annotation counts as none, as in Karpenter
            cost += float(text) / 2**27
    cost += pod.priority / 2**25
    return min(10.0, max(-10.0, cost))


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node some method may disrupt: with its claim, NodePool, movable pods, price and cost."""

    node: Node
    claim: NodeClaim
    pool: NodePool
    pods: tuple[Pod, ...]
    price: float
    disruption_cost: float
    last_change: float
    instance_type: InstanceType | None
    # Why the node may only be disrupted forcefully ("" when every method may take it).
    soft_block: str = ""

    @property
    def name(self) -> str:
        """The node's name."""
        return self.node.name

    @property
    def capacity_type(self) -> str:
        """spot, on-demand or reserved."""
        return self.claim.capacity_type

    @property
    def order_key(self) -> tuple[float, str]:
        """Disruption cost per dollar saved (ascending), then name: the consolidation order."""
        per_dollar = self.disruption_cost / self.price if self.price > 0 else float("inf")
        return (per_dollar, self.name)

    @property
    def load(self) -> float:
        """The largest share of the node's allocatable cpu or memory its movable pods request."""
        shares = []
        for name in (CPU, MEMORY):
            capacity = self.node.allocatable[name]
            if capacity > 0:
                shares.append(sum(p.requests[name] for p in self.pods) / capacity)
        return max(shares, default=0.0)

    def describe(self) -> str:
        """`name (type, capacity type, $/h)` for details a person reads."""
        kind = self.claim.instance_type or "unknown type"
        return f"{self.name} ({kind} {self.capacity_type or '?'}, ${self.price:.4f}/h)"


@dataclass(slots=True)
class PoolCount:
    """A NodePool's nodes as budgets count them: initialized ones, and those already disrupting."""

    nodes: int = 0
    disrupting: int = 0


@dataclass(slots=True)
class ClusterView:
    """One read of a `DisruptionInput`, shared by every method of a pass (see the module docstring)."""

    inp: DisruptionInput
    pods_by_node: dict[str, list[Pod]]
    claim_by_node: dict[str, NodeClaim]
    pools: dict[str, PoolCapacity]
    types: dict[str, dict[str, InstanceType]]
    candidates: dict[str, Candidate] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    counts: dict[str, PoolCount] = field(default_factory=dict)
    pdb_blocked: dict[str, str] = field(default_factory=dict)
    # By pod key: the PodDisruptionBudgets (namespace/name) that refuse its eviction now.
    pdb_names: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # By node: what blocks its disruption, as data beside the reason text.
    blockers: dict[str, Blocker] = field(default_factory=dict)

    @classmethod
    def build(cls, inp: DisruptionInput, *, ignore_in_progress: frozenset[str] = frozenset()) -> ClusterView:
        """Read `inp`; nodes in `ignore_in_progress` are not treated as part of a running command."""
        snapshot = inp.snapshot
        pools = {pc.nodepool.name: pc for pc in inp.pools}
        view = cls(
            inp=inp,
            pods_by_node=snapshot.pods_by_node(),
            claim_by_node=_claims_by_node(snapshot.nodes, inp.claims),
            pools=pools,
            types={name: {t.name: t for t in pc.instance_types} for name, pc in pools.items()},
        )
        view.pdb_blocked, view.pdb_names = _pdb_blocked(snapshot.pods, snapshot.pdbs)
        in_progress = inp.in_progress - ignore_in_progress
        for node in sorted(snapshot.nodes, key=lambda n: n.name):
            view._count(node, in_progress)
            reason, soft = view._check(node, in_progress)
            if reason:
                view.rejected[node.name] = reason
                continue
            view.candidates[node.name] = view._candidate(node, soft)
        return view

    # -- reading ---------------------------------------------------------------------------------

    def reschedulable_pods(self, node: str) -> list[Pod]:
        """The pods on `node` that would need a new home if it went away."""
        return [p for p in self.pods_by_node.get(node, ()) if reschedulable(p)]

    def instance_type(self, claim: NodeClaim) -> InstanceType | None:
        """The claim's instance type from its NodePool's catalog, when known."""
        return self.types.get(claim.nodepool, {}).get(claim.instance_type)

    def price(self, claim: NodeClaim) -> float:
        """The claim's $/h: recorded at launch, else its offering's price in the catalog. A type a
        NodeOverlay prices is priced as the catalog prices it now, as Karpenter prices candidates
        from the overlaid offerings: an overlay that came in after the launch (an RI bought for the
        running type) must not make the node look replaceable by one of its own kind.
        """
        it = self.instance_type(claim)
        if claim.price > 0 and (it is None or not it.price_overlaid):
            return claim.price
        if it is None:
            return 0.0
        prices = [
            o.price
            for o in it.offerings
            if (not claim.zone or o.zone == claim.zone)
            and (not claim.capacity_type or o.capacity_type == claim.capacity_type)
        ]
        return min(prices, default=claim.price)

    def candidate(self, node: str) -> Candidate:
        """`node` as a candidate whatever the shared checks say of it (node repair takes nodes they
        reject as not ready); its claim and NodePool must exist.
        """
        found = self.candidates.get(node)
        if found is not None:
            return found
        return self._candidate(next(n for n in self.inp.snapshot.nodes if n.name == node), "")

    def eligible(self, *, forceful: bool = False) -> list[Candidate]:
        """Candidates every method may take, or with `forceful` also the softly blocked ones."""
        return [c for c in self.candidates.values() if forceful or not c.soft_block]

    def quotas(self, reason: str) -> dict[str, int]:
        """How many more nodes each NodePool's budgets let go for `reason` now."""
        out: dict[str, int] = {}
        for name, pc in self.pools.items():
            count = self.counts.get(name, PoolCount())
            out[name] = allowed_disruptions(pc.nodepool, count.nodes, count.disrupting, reason, self.inp.now)
        return out

    # -- building --------------------------------------------------------------------------------

    def _count(self, node: Node, in_progress: frozenset[str]) -> None:
        claim = self.claim_by_node.get(node.name)
        if claim is None or not node.nodepool or claim.state not in ("initialized", "deleting"):
            return
        count = self.counts.setdefault(claim.nodepool, PoolCount())
        count.nodes += 1
        if node.name in in_progress or node.deleting or claim.state == "deleting" or not node.ready:
            count.disrupting += 1

    def _check(self, node: Node, in_progress: frozenset[str]) -> tuple[str, str]:
        """(hard reason, soft reason); both empty for a node every method may take."""
        claim = self.claim_by_node.get(node.name)
        if claim is None or not node.nodepool:
            return "not managed by Nodewright (no node claim or NodePool label)", ""
        if claim.nodepool not in self.pools:
            return f"its NodePool {claim.nodepool} no longer exists", ""
        if node.deleting or claim.state == "deleting":
            return "already being deleted", ""
        if STANDBY_LABEL in node.labels:
            return f"a standby instance of CapacityBuffer {node.labels[STANDBY_LABEL]} (the provisioner's to keep)", ""
        if claim.state != "initialized":
            return f"not initialized yet (claim state {claim.state})", ""
        if not node.ready:
            return "not ready", ""
        if node.name in in_progress:
            return "already part of a running disruption command", ""
        if any(t.key == wk.DISRUPTED_TAINT_KEY and t.value != wk.DISRUPTED_CONSOLIDATION for t in node.taints):
            return "the interruption function has cordoned it", ""
        if node.do_not_disrupt:
            self.blockers[node.name] = Blocker(DO_NOT_DISRUPT_NODE, (node.name,))
            return "the node is annotated karpenter.sh/do-not-disrupt", ""
        pods = self.pods_by_node.get(node.name, ())
        blocker = next((p for p in pods if p.do_not_disrupt and not p.terminal and not p.deleting), None)
        if blocker is not None:
            self.blockers[node.name] = Blocker(DO_NOT_DISRUPT_POD, (blocker.key,))
            return f"pod {blocker.key} is annotated karpenter.sh/do-not-disrupt", ""
        if node.name in self.inp.stalled:
            self.blockers[node.name] = Blocker(STALLED_DRAIN)
            return "", "its last drain stalled (PodDisruptionBudgets refused the evictions) and was given up"
        nominated = self.inp.nominated.get(node.name)
        window = self.inp.options.nomination_window
        if nominated is not None and self.inp.now - nominated < window:
            return "", f"a provisioning pass nominated it {self.inp.now - nominated:.0f}s ago (window {window:.0f}s)"
        for pod in pods:
            if reschedulable(pod) and pod.key in self.pdb_blocked:
                self.blockers[node.name] = Blocker(PDB, self.pdb_names[pod.key])
                return "", f"pod {pod.key}: {self.pdb_blocked[pod.key]}"
        return "", ""

    def _candidate(self, node: Node, soft: str) -> Candidate:
        claim = self.claim_by_node[node.name]
        pool = self.pools[claim.nodepool].nodepool
        pods = tuple(self.reschedulable_pods(node.name))
        started = claim.initialized_at or claim.created_at or node.created_at
        cost = sum(eviction_cost(p) for p in pods) * lifetime_left(pool, claim, self.inp.now)
        last_change = max(
            [started, self.inp.nominated.get(node.name, 0.0), *(p.created_at for p in pods)],
        )
        return Candidate(
            node=node,
            claim=claim,
            pool=pool,
            pods=pods,
            price=self.price(claim),
            disruption_cost=cost,
            last_change=last_change,
            instance_type=self.instance_type(claim),
            soft_block=soft,
        )


def _claims_by_node(nodes: Sequence[Node], claims: Sequence[NodeClaim]) -> dict[str, NodeClaim]:
    """Each node's claim: by the claim's recorded node name, else by the node's claim label; only
    when the node's providerID names the claim's instance (a kubelet may label its own Node with a
    real claim's name: that Node is not the claim's, and disrupting it must not touch either
    instance).
    """
    by_name = {c.name: c for c in claims}
    by_node = {c.node_name: c for c in claims if c.node_name}
    out: dict[str, NodeClaim] = {}
    for node in nodes:
        claim = by_node.get(node.name) or by_name.get(node.nodeclaim)
        if claim is not None and (not claim.instance_id or claim.instance_id == node.instance_id):
            out[node.name] = claim
    return out


def _pdb_blocked(
    pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """Pods whose eviction the API server would refuse now: one of their PodDisruptionBudgets
    allows no disruption (healthy and expected counted over the snapshot), or more than one
    budget selects them (the Eviction API refuses those outright). By pod key: why, and the
    budgets (namespace/name) that refuse.
    """
    if not pdbs:
        return {}, {}
    live = [p for p in pods if not p.terminal]
    covering: dict[str, list[PodDisruptionBudget]] = {}
    blocked: dict[str, str] = {}
    names: dict[str, tuple[str, ...]] = {}
    for pdb in pdbs:
        selected = [p for p in live if pdb.selects(p)]
        healthy = sum(1 for p in selected if p.node_name and p.phase == "Running" and not p.deleting)
        allowed = pdb.allowed(healthy, len(selected))
        if pdb.disruptions_allowed is not None:
            allowed = min(allowed, pdb.disruptions_allowed)
        for pod in selected:
            covering.setdefault(pod.key, []).append(pdb)
            if allowed <= 0 and pod.key not in blocked:
                blocked[pod.key] = f"PodDisruptionBudget {pdb.namespace}/{pdb.name} allows no disruption now"
                names[pod.key] = (f"{pdb.namespace}/{pdb.name}",)
    for key, budgets in covering.items():
        if len(budgets) > 1:
            names[key] = tuple(f"{b.namespace}/{b.name}" for b in budgets)
            blocked[key] = (
                f"more than one PodDisruptionBudget selects it ({', '.join(names[key])}); eviction is refused"
            )
    return blocked, names


def counts_by_pool(candidates: Sequence[Candidate]) -> Mapping[str, int]:
    """How many of `candidates` each NodePool holds."""
    out: dict[str, int] = {}
    for c in candidates:
        out[c.pool.name] = out.get(c.pool.name, 0) + 1
    return out
