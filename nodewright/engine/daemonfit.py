"""DaemonSet pods that no longer fit their node (Karpenter #715): find them, and say what to do. Pure.

A DaemonSet created (or grown) after its nodes filled up gets a pod per node that kube-scheduler
cannot bind: the pod names its node in its required affinity (`Pod.target_node`) and stays Pending.
Karpenter never acts on it (daemon pods are not provisionable, and consolidation does not look at
them), so the daemon is missing from busy nodes until they happen to be replaced.

`overflows(snapshot, pools)` lists, per node of a NodePool, the daemon pods that wait for it and
what they lack: their requests summed against what the node's bound pods leave of its allocatable.
A pod that fits now (kube-scheduler just has not bound it yet) is not listed. The NodePool's
`nodewright.io/daemonset-overflow` annotation says what follows:

    Ignore   (default) nothing: Karpenter's behaviour
    Report   a Warning Event on the node each time the consolidator sees a new overflow, and the
             reason in `nodewright explain pod|node`
    Replace  also the disruption method `daemonset-overflow` (`methods/daemonfit.py`): the node is
             replaced by one that holds its pods plus every daemon (the solver counts the overhead
             of every DaemonSet that would run there), replacement first, then drained through the
             Eviction API (PodDisruptionBudgets hold), within the NodePool's "Drifted" budgets
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nodewright.model.event import WARNING, Event, node_event
from nodewright.model.nodepool import NodePool
from nodewright.model.resources import EMPTY, Resources
from nodewright.model.snapshot import ClusterSnapshot

OVERFLOW = "DaemonSetPodsDoNotFit"


@dataclass(frozen=True, slots=True)
class Overflow:
    """The daemon pods waiting for one node, with what they need and what the node has free."""

    node: str
    nodepool: str
    policy: str
    pods: tuple[str, ...]
    needs: Resources
    free: Resources

    @property
    def short(self) -> list[str]:
        """The resources the node lacks for the waiting pods."""
        return self.needs.exceeded_in(self.free)

    def describe(self) -> str:
        """A sentence naming the pods, what they need, what is free, and the NodePool's policy."""
        names = ", ".join(self.pods[:5]) + (f" and {len(self.pods) - 5} more" if len(self.pods) > 5 else "")
        needs, free = self.needs.format(), self.free.format()
        lacking = ", ".join(f"{r} {needs.get(r)} needed, {free.get(r, 0)} free" for r in self.short)
        action = {
            "Replace": "it will be replaced by a node that holds its pods and every daemon",
            "Report": "it is only reported (nodewright.io/daemonset-overflow: Report)",
        }.get(self.policy, "nothing is done (nodewright.io/daemonset-overflow: Ignore)")
        return f"DaemonSet pod(s) {names} do not fit node {self.node} ({lacking}); NodePool {self.nodepool}: {action}"


def overflows(snapshot: ClusterSnapshot, pools: Iterable[NodePool]) -> dict[str, Overflow]:
    """Node name -> its waiting daemon pods that do not fit, for nodes of `pools` (see above)."""
    by_name: Mapping[str, NodePool] = {p.name: p for p in pools}
    waiting: dict[str, list[tuple[str, Resources]]] = {}
    for pod in snapshot.pods:
        if pod.daemon and pod.target_node and not pod.node_name and not pod.terminal and not pod.deleting:
            waiting.setdefault(pod.target_node, []).append((pod.key, pod.requests))
    if not waiting:
        return {}
    used: dict[str, Resources] = {}
    for pod in snapshot.pods:
        if pod.node_name in waiting and not pod.terminal:
            used[pod.node_name] = used.get(pod.node_name, EMPTY) + pod.requests
    out: dict[str, Overflow] = {}
    for node in snapshot.nodes:
        pods = waiting.get(node.name)
        pool = by_name.get(node.nodepool)
        if not pods or pool is None or node.deleting:
            continue
        needs = EMPTY
        for _, requests in pods:
            needs = needs + requests
        free = (node.allocatable - used.get(node.name, EMPTY)).clamped()
        if needs.fits_in(free):
            continue
        keys = tuple(sorted(k for k, _ in pods))
        out[node.name] = Overflow(node.name, pool.name, pool.daemon_overflow, keys, needs, free)
    return dict(sorted(out.items()))


def overflow_events(found: Mapping[str, Overflow]) -> list[Event]:
    """A Warning Event on each node whose NodePool reports or replaces (not Ignore)."""
    return [
        node_event(o.node, OVERFLOW, o.describe(), "Report", WARNING)
        for o in found.values()
        if o.policy in ("Report", "Replace")
    ]
