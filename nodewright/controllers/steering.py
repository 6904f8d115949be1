"""Deletion-cost steering: the consolidator writes the pod deletion costs the engine chooses.

Role: the imperative shell of `nodewright.engine.deletioncost`. Once per consolidator invocation,
`DeletionCostSteering.run` reads the cluster and the NodePools, asks the engine which pod
annotations to write (at most `limit`, the pods a scale-down would take next first) and writes
them with one merge patch each (`Cluster.annotate_pod`). Nothing is disrupted: a deletion cost
only tells the ReplicaSet controller which of its pods to delete when it scales down, so the
nodes closest to empty empty themselves and consolidation deletes them without moving a pod.

Idempotent and resumable: each write sets what the engine wants from the current state, so a
crash between writes leaves pods that the next pass finds still off and writes again. A pod gone
in between is skipped. It needs `patch` on pods (deploy/rbac.yaml, which a
ValidatingAdmissionPolicy narrows to the two annotations).
"""

from __future__ import annotations

from nodewright.engine.deletioncost import steering
from nodewright.model.nodepool import NodePool
from nodewright.ports import Cluster, Observer

# Writes per invocation: a scale-down of thousands of pods is steered over a few minutes, and a
# pass never spends more than about this many API requests on it.
DEFAULT_LIMIT = 200


def removable_pools(nodepools: list[NodePool]) -> frozenset[str]:
    """The NodePools whose empty nodes consolidation deletes (every policy; not static pools)."""
    return frozenset(p.name for p in nodepools if p.replicas is None)


class DeletionCostSteering:
    """Writes the deletion costs of one pass (module docstring)."""

    def __init__(self, cluster: Cluster, observer: Observer, limit: int = DEFAULT_LIMIT) -> None:
        self.cluster = cluster
        self.observer = observer
        self.limit = limit

    def run(self, nodepools: list[NodePool]) -> int:
        """Write this pass's changes; returns how many pods were written."""
        changes = steering(self.cluster.snapshot(), removable_pools(nodepools), self.limit)
        written = sum(1 for change in changes if self.cluster.annotate_pod(change.pod, change.annotations))
        if changes:
            self.observer.decision(
                "deletion-cost",
                written=written,
                cleared=sum(1 for c in changes if c.cost is None),
                lowest=min((c.cost for c in changes if c.cost is not None), default=None),
            )
        self.observer.metric("PodsSteered", written)
        return written
