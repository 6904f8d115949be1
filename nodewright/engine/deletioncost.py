"""Deletion-cost steering: which pods a ReplicaSet should delete first when it scales down. Pure.

When a Deployment scales down, the ReplicaSet controller deletes first the pods with the lowest
`controller.kubernetes.io/pod-deletion-cost`, and among equal costs the pods of the nodes that
hold the most of its pods: a scale-down left to itself takes one pod from each node, so no node
empties and consolidation must evict pods to remove any (a `WhenEmpty` NodePool never does). Given
costs, the scale-down itself empties nodes, and they go with no pod moved. Karpenter does not do
this (its RFC for a deletion-cost controller, kubernetes-sigs/karpenter#2935, is open).

`steering(snapshot, removable)` says which pod annotations to write:

* of the nodes Nodewright may remove once they are empty (`removable`: its NodePools that
  consolidate or delete empty nodes), the emptiest, until they hold `SHARE` (10%) of those nodes'
  ReplicaSet pods, have their pods cost `pods on the node - FLOOR`: the fewer pods a node holds,
  the sooner a scale-down empties it. Every such cost is negative, so every other pod
  (unannotated: 0) is deleted after them, in the ReplicaSet's own order. Steering a tenth, not
  all, keeps the writes few: a node's cost changes with each pod it gains or loses, and a
  scale-down of more than a tenth is rare between two passes a minute apart (a larger one falls
  back to the ReplicaSet's order for the rest);
* the pods of a node being drained (cordoned, or tainted by a disruption) are not written: they
  are leaving anyway, and a write racing their eviction is a request for nothing;
* only pods a ReplicaSet owns (StatefulSets, Jobs and DaemonSets ignore the annotation), bound,
  not terminating;
* a pod whose cost someone else set is left alone: Nodewright writes its value into `STEERED` as
  well, and a pod is its to steer only while the two agree (or neither is set);
* a pod that should no longer be steered (its node left the steered nodes, or its NodePool is
  static now) has both removed.

Changes are ordered so the pods most likely to be deleted next come first (lowest cost), then
removals, and cut at `limit`: the rest follow on the next pass.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from nodewright.model import labels as wk
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot

DELETION_COST = wk.POD_DELETION_COST
# The cost Nodewright last wrote on the pod: while it equals DELETION_COST, the cost is Nodewright's.
STEERED = "nodewright.io/deletion-cost"
# Below any node's pod count: every steered cost is negative, below an unannotated pod's 0.
FLOOR = 1_000_000
# The share of the ReplicaSet pods steered at once: the emptiest nodes' (see `node_costs`).
SHARE = 0.1


@dataclass(frozen=True, slots=True)
class Steer:
    """One pod's annotations to write: `cost` into both keys, or None to remove both."""

    pod: Pod
    cost: int | None

    @property
    def annotations(self) -> dict[str, str | None]:
        """The merge patch's annotations (None removes a key)."""
        value = None if self.cost is None else str(self.cost)
        return {DELETION_COST: value, STEERED: value}


def draining(node: Node) -> bool:
    """Cordoned, being deleted or tainted by a disruption: its pods are leaving, steered or not."""
    return node.unschedulable or node.leaving


def node_costs(snapshot: ClusterSnapshot, removable: Collection[str], share: float = SHARE) -> dict[str, int]:
    """Node name -> the deletion cost its ReplicaSet pods should carry: of the serving (not draining)
    nodes Nodewright launched in a NodePool named in `removable`, the emptiest, fewest pods first,
    until they hold `share` of those nodes' ReplicaSet pods (at least one node).
    """
    held: dict[str, int] = {}
    owned: dict[str, int] = {}
    for pod in snapshot.pods:
        if pod.node_name and not pod.daemon and not pod.terminal and not pod.mirror:
            held[pod.node_name] = held.get(pod.node_name, 0) + 1
            if pod.owner_kind == "ReplicaSet":
                owned[pod.node_name] = owned.get(pod.node_name, 0) + 1
    serving = sorted(
        (
            n
            for n in snapshot.nodes
            if n.launched_by_nodewright and n.nodepool in removable and not draining(n) and owned.get(n.name)
        ),
        key=lambda n: (held[n.name], n.name),
    )
    room = share * sum(owned[n.name] for n in serving)
    costs: dict[str, int] = {}
    taken = 0
    for node in serving:
        if taken and taken + owned[node.name] > room:
            break
        costs[node.name] = held[node.name] - FLOOR
        taken += owned[node.name]
    return costs


def steerable(pod: Pod) -> bool:
    """A bound, live pod a ReplicaSet owns, whose deletion cost nobody else has set."""
    if pod.owner_kind != "ReplicaSet" or not pod.node_name or pod.terminal or pod.deleting:
        return False
    current = pod.annotations.get(DELETION_COST)
    return current is None or current == pod.annotations.get(STEERED)


def steering(snapshot: ClusterSnapshot, removable: Collection[str], limit: int, share: float = SHARE) -> list[Steer]:
    """At most `limit` annotation changes that bring the pods' deletion costs to what they should
    be (see the module docstring), the likeliest next victims first.
    """
    costs = node_costs(snapshot, removable, share)
    leaving = {n.name for n in snapshot.nodes if draining(n)}
    writes: list[Steer] = []
    removals: list[Steer] = []
    for pod in snapshot.pods:
        if not steerable(pod) or pod.node_name in leaving:
            continue
        cost = costs.get(pod.node_name)
        ours = pod.annotations.get(STEERED)
        if cost is None:
            if ours is not None:
                removals.append(Steer(pod, None))
        elif ours != str(cost) or pod.annotations.get(DELETION_COST) != str(cost):
            writes.append(Steer(pod, cost))
    writes.sort(key=lambda s: (s.cost, s.pod.key))
    removals.sort(key=lambda s: s.pod.key)
    return (writes + removals)[: max(0, limit)]
