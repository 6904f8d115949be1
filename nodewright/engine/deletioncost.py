"""Deletion-cost steering: which pods a ReplicaSet should delete first when it scales down. Pure.

When a Deployment scales down, the ReplicaSet controller deletes first the pods with the lowest
`controller.kubernetes.io/pod-deletion-cost`, and among equal costs the pods of the nodes that
hold the most of its pods: a scale-down left to itself takes one pod from each node, so no node
empties and consolidation must evict pods to remove any (a `WhenEmpty` NodePool never does). Given
costs, the scale-down itself empties nodes, and they go with no pod moved. Karpenter does not do
this (its RFC for a deletion-cost controller, kubernetes-sigs/karpenter#2935, is open).

`steering(snapshot, removable)` says which pod annotations to write:

* the pods of a node Nodewright may remove once it is empty (`removable`: its NodePools that
  consolidate or delete empty nodes) cost `pods on the node - FLOOR`: the fewer pods a node holds,
  the sooner a scale-down empties it; every such cost is negative, so pods of nodes Nodewright does
  not remove (unannotated: 0) are deleted after them;
* the pods of a node being drained (cordoned, or tainted by a disruption) cost less still: they
  are leaving anyway, and deleting them spares a move;
* only pods a ReplicaSet owns (StatefulSets, Jobs and DaemonSets ignore the annotation), bound,
  not terminating;
* a pod whose cost someone else set is left alone: Nodewright writes its value into `STEERED` as
  well, and a pod is its to steer only while the two agree (or neither is set);
* a pod that no longer should be steered (its node is no longer removable) has both removed.

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

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
# The cost Nodewright last wrote on the pod: while it equals DELETION_COST, the cost is Nodewright's.
STEERED = "nodewright.io/deletion-cost"
# Below any node's pod count: every steered cost is negative, below an unannotated pod's 0.
FLOOR = 1_000_000
# A draining node's pods: below every other steered cost.
DRAINING = -2 * FLOOR


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


def _draining(node: Node) -> bool:
    return node.unschedulable or any(t.key == wk.DISRUPTED_TAINT_KEY for t in node.taints)


def node_costs(snapshot: ClusterSnapshot, removable: Collection[str]) -> dict[str, int]:
    """Node name -> the deletion cost its ReplicaSet pods should carry, for the nodes Nodewright
    launched in a NodePool named in `removable`.
    """
    held: dict[str, int] = {}
    for pod in snapshot.pods:
        if pod.node_name and not pod.daemon and not pod.terminal and not pod.mirror:
            held[pod.node_name] = held.get(pod.node_name, 0) + 1
    return {
        node.name: DRAINING if _draining(node) else held.get(node.name, 0) - FLOOR
        for node in snapshot.nodes
        if node.launched_by_nodewright and node.nodepool in removable
    }


def steerable(pod: Pod) -> bool:
    """A bound, live pod a ReplicaSet owns, whose deletion cost nobody else has set."""
    if pod.owner_kind != "ReplicaSet" or not pod.node_name or pod.terminal or pod.deleting:
        return False
    current = pod.annotations.get(DELETION_COST)
    return current is None or current == pod.annotations.get(STEERED)


def steering(snapshot: ClusterSnapshot, removable: Collection[str], limit: int) -> list[Steer]:
    """At most `limit` annotation changes that bring the pods' deletion costs to what they should
    be (see the module docstring), the likeliest next victims first.
    """
    costs = node_costs(snapshot, removable)
    writes: list[Steer] = []
    removals: list[Steer] = []
    for pod in snapshot.pods:
        if not steerable(pod):
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
