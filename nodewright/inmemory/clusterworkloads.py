"""The in-memory cluster's DaemonSets and PodDisruptionBudgets, and the DaemonSet controller.

Role: `ClusterWorkloads`, what an `InMemoryCluster` (`nodewright.inmemory.cluster`) does with them, over
the cluster's store (which holds every object, so a pod write keeps the budgets' counts): creating and
deleting DaemonSets (with their pods, as the garbage collector does) and PDBs (with their
healthy/expected counts, which `ClusterStore` keeps current on every pod write), each PDB's
disruptionsAllowed, and `reconcile_daemonsets`, which plays the DaemonSet controller.
"""

from __future__ import annotations

from dataclasses import replace

from nodewright.inmemory.clusterstore import (
    ADDED,
    DELETED,
    MODIFIED,
    POD_DELETED,
    ClusterStore,
    healthy,
)
from nodewright.model.pod import Pod
from nodewright.model.requirements import label_matches
from nodewright.model.resources import EMPTY, Resources
from nodewright.model.taints import tolerates_all
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget


class ClusterWorkloads:
    """DaemonSets, PDBs and the DaemonSet controller (module docstring), over the cluster's `store`."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store

    def add_daemonset(self, daemonset: DaemonSet) -> None:
        """Create or overwrite a DaemonSet (its pods appear on `reconcile_daemonsets`)."""
        key = f"{daemonset.namespace}/{daemonset.name}"
        added = key not in self.store.daemonsets
        self.store.daemonsets[key] = daemonset
        self.store.bump("daemonset", key)
        self.store.daemonset_list = None
        self.store.notify("daemonset", ADDED if added else MODIFIED, daemonset)

    def remove_daemonset(self, namespace: str, name: str) -> None:
        """Delete a DaemonSet and, as the garbage collector would, the pods it owns."""
        key = f"{namespace}/{name}"
        gone = self.store.daemonsets.pop(key, None)
        if gone is None:
            return
        self.store.versions.pop(("daemonset", key), None)
        self.store.daemonset_list = None
        self.store.revision += 1
        self.store.notify("daemonset", DELETED, gone)
        owned = [
            p for p in self.store.pods_by_namespace.get(namespace, {}).values() if p.daemon and p.owner_name == name
        ]
        for pod in owned:
            self.store.delete_pod(pod, POD_DELETED, f"daemonset {key} was deleted")

    def add_pdb(self, pdb: PodDisruptionBudget) -> None:
        """Create or overwrite a PodDisruptionBudget."""
        key = f"{pdb.namespace}/{pdb.name}"
        added = key not in self.store.pdbs
        self._remove_pdb(pdb.namespace, pdb.name)
        self.store.pdbs[key] = pdb
        self.store.pdbs_by_namespace.setdefault(pdb.namespace, {})[key] = pdb
        counts = [0, 0]
        for pod in self.store.pods_by_namespace.get(pdb.namespace, {}).values():
            if not pod.terminal and pdb.selector.matches(pod.labels):
                counts[0] += healthy(pod)
                counts[1] += 1
        self.store.budget_counts[key] = counts
        self.store.bump("pdb", key)
        self.store.pdb_list = None
        self.store.notify("pdb", ADDED if added else MODIFIED, pdb)

    def remove_pdb(self, namespace: str, name: str) -> None:
        """Delete a PodDisruptionBudget; a missing one is fine."""
        gone = self._remove_pdb(namespace, name)
        if gone is not None:
            self.store.revision += 1
            self.store.notify("pdb", DELETED, gone)

    def budget_allowed(self, pdb: PodDisruptionBudget) -> int:
        """How many disruptions the budget allows now (its status.disruptionsAllowed)."""
        return self.store.allowed(pdb)

    def _remove_pdb(self, namespace: str, name: str) -> PodDisruptionBudget | None:
        key = f"{namespace}/{name}"
        gone = self.store.pdbs.pop(key, None)
        if gone is None:
            return None
        del self.store.pdbs_by_namespace[namespace][key]
        if not self.store.pdbs_by_namespace[namespace]:
            del self.store.pdbs_by_namespace[namespace]
        del self.store.budget_counts[key]
        self.store.versions.pop(("pdb", key), None)
        self.store.pdb_list = None
        return gone

    def reconcile_daemonsets(self) -> list[Pod]:
        """Play the DaemonSet controller once; returns the pods it created.

        Each DaemonSet gets one Running pod `<daemonset>-<node>` on every node that is not being
        deleted, whose labels satisfy the template's node selector and required affinity, and
        whose NoSchedule/NoExecute taints the template tolerates. Like the real controller it
        ignores `unschedulable` (cordoned nodes keep their daemons) and readiness. A pod whose
        requests do not fit what the node's bound pods leave of its allocatable stays Pending and
        Unschedulable, its required affinity naming the node (`target_node`), as kube-scheduler
        leaves a DaemonSet pod added after its node filled up (Karpenter #715). Pods of a known
        DaemonSet on a node that no longer matches are deleted; daemon pods of DaemonSets this
        cluster does not hold are left alone, so tests can add daemon pods by hand.
        """
        wanted: dict[str, tuple[DaemonSet, str]] = {}
        for daemonset in self.store.daemonsets.values():
            requirements = daemonset.template.node_requirements()
            for node in self.store.nodes.values():
                if node.deleting or not tolerates_all(daemonset.template.tolerations, node.taints):
                    continue
                if any(label_matches(r, node.labels) for r in requirements):
                    wanted[f"{daemonset.namespace}/{daemonset.name}-{node.name}"] = (daemonset, node.name)
        stale = [
            p
            for p in self.store.pods.values()
            if p.daemon and p.key not in wanted and f"{p.namespace}/{p.owner_name}" in self.store.daemonsets
        ]
        for pod in stale:
            self.store.delete_pod(pod, POD_DELETED, "its daemonset no longer wants it on this node")
        created = []
        used: dict[str, Resources] | None = None
        for key, (daemonset, node_name) in wanted.items():
            if key in self.store.pods:
                continue
            if used is None:  # what the bound pods take, by node: only when a pod is to be made
                used = {}
                for p in self.store.pods.values():
                    if p.node_name and not p.terminal:
                        used[p.node_name] = used.get(p.node_name, EMPTY) + p.requests
            template = daemonset.template
            node = self.store.nodes[node_name]
            fits = (used.get(node_name, EMPTY) + template.requests).fits_in(node.allocatable)
            pod = replace(
                template,
                name=key.partition("/")[2],
                uid="",
                created_at=0.0,
                owner_kind="DaemonSet",
                owner_name=daemonset.name,
                node_name=node_name if fits else "",
                target_node="" if fits else node_name,  # a bound pod names its node already
                nominated_node_name="",
                phase="Running" if fits else "Pending",
                unschedulable=not fits,
                deleting=False,
            )
            if fits:
                used[node_name] = used.get(node_name, EMPTY) + template.requests
            created.append(self.store.add_pod(pod))
        return created
