"""A consistent read of the cluster: nodes, the pods on them, pending pods, daemonsets, PDBs. Pure.

`provisionable` implements Karpenter's rule for which pending pods deserve new capacity.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from nodewright.model.dra import DeviceObjects
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.pod import Pod
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget


def provisionable(pod: Pod) -> bool:
    """True for a pod that needs capacity: not bound, marked Unschedulable by kube-scheduler, not
    preempting, not a DaemonSet or mirror pod, not terminal or being deleted.
    """
    return (
        not pod.node_name
        and pod.unschedulable
        and not pod.nominated_node_name
        and not pod.daemon
        and not pod.mirror
        and not pod.terminal
        and not pod.deleting
    )


def reschedulable(pod: Pod) -> bool:
    """True for a pod on a node being deleted that will need a new home (not daemons or mirror
    pods, not terminal, not already being deleted).
    """
    return not pod.daemon and not pod.mirror and not pod.terminal and not pod.deleting


def needs_capacity(pod: Pod, draining: bool) -> bool:
    """True for a pod `ClusterSnapshot.pending` returns; `draining` says whether the pod's node
    is draining (see `Node.draining`).
    """
    return provisionable(pod) or (draining and bool(pod.node_name) and reschedulable(pod))


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Everything one decision pass reads, taken nodes first (the conservative order)."""

    nodes: tuple[Node, ...] = ()
    pods: tuple[Pod, ...] = ()
    daemonsets: tuple[DaemonSet, ...] = ()
    pdbs: tuple[PodDisruptionBudget, ...] = ()
    nodeclaims: tuple[NodeClaim, ...] = ()
    # DRA DeviceClasses, ResourceClaims and ResourceClaimTemplates (`engine.devices` reads them).
    devices: DeviceObjects = field(default_factory=DeviceObjects)

    def pods_by_node(self) -> dict[str, list[Pod]]:
        """Bound, non-terminal pods grouped by node name."""
        out: dict[str, list[Pod]] = defaultdict(list)
        for pod in self.pods:
            if pod.node_name and not pod.terminal:
                out[pod.node_name].append(pod)
        return out

    def pending(self) -> list[Pod]:
        """Pods that need capacity: provisionable ones plus reschedulable pods of draining nodes
        (being deleted, or tainted disrupted by an interruption that asks for replacement; see
        `Node.draining`).
        """
        deleting = {n.name for n in self.nodes if n.draining}
        return [p for p in self.pods if needs_capacity(p, p.node_name in deleting)]
