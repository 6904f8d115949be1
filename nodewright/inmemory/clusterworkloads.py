"""The in-memory cluster's DaemonSets and PodDisruptionBudgets, and the DaemonSet controller.

Role: the `ClusterWorkloads` part of `InMemoryCluster` (`nodewright.inmemory.cluster`): creating and
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
    _healthy,
)
from nodewright.model.pod import Pod
from nodewright.model.requirements import label_matches
from nodewright.model.taints import tolerates_all
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget


class ClusterWorkloads(ClusterStore):
    """DaemonSets, PDBs and the DaemonSet controller (module docstring)."""

    def add_daemonset(self, daemonset: DaemonSet) -> None:
        """Create or overwrite a DaemonSet (its pods appear on `reconcile_daemonsets`)."""
        key = f"{daemonset.namespace}/{daemonset.name}"
        added = key not in self._daemonsets
        self._daemonsets[key] = daemonset
        self._bump("daemonset", key)
        self._daemonset_list = None
        self._notify("daemonset", ADDED if added else MODIFIED, daemonset)

    def remove_daemonset(self, namespace: str, name: str) -> None:
        """Delete a DaemonSet and, as the garbage collector would, the pods it owns."""
        key = f"{namespace}/{name}"
        gone = self._daemonsets.pop(key, None)
        if gone is None:
            return
        self._versions.pop(("daemonset", key), None)
        self._daemonset_list = None
        self._revision += 1
        self._notify("daemonset", DELETED, gone)
        owned = [p for p in self._pods_by_namespace.get(namespace, {}).values() if p.daemon and p.owner_name == name]
        for pod in owned:
            self._delete_pod(pod, POD_DELETED, f"daemonset {key} was deleted")

    def add_pdb(self, pdb: PodDisruptionBudget) -> None:
        """Create or overwrite a PodDisruptionBudget."""
        key = f"{pdb.namespace}/{pdb.name}"
        added = key not in self._pdbs
        self._remove_pdb(pdb.namespace, pdb.name)
        self._pdbs[key] = pdb
        self._pdbs_by_namespace.setdefault(pdb.namespace, {})[key] = pdb
        counts = [0, 0]
        for pod in self._pods_by_namespace.get(pdb.namespace, {}).values():
            if not pod.terminal and pdb.selector.matches(pod.labels):
                counts[0] += _healthy(pod)
                counts[1] += 1
        self._budget_counts[key] = counts
        self._bump("pdb", key)
        self._pdb_list = None
        self._notify("pdb", ADDED if added else MODIFIED, pdb)

    def remove_pdb(self, namespace: str, name: str) -> None:
        """Delete a PodDisruptionBudget; a missing one is fine."""
        gone = self._remove_pdb(namespace, name)
        if gone is not None:
            self._revision += 1
            self._notify("pdb", DELETED, gone)

    def budget_allowed(self, pdb: PodDisruptionBudget) -> int:
        """How many disruptions the budget allows now (its status.disruptionsAllowed)."""
        return self._allowed(pdb)

    def _remove_pdb(self, namespace: str, name: str) -> PodDisruptionBudget | None:
        key = f"{namespace}/{name}"
        gone = self._pdbs.pop(key, None)
        if gone is None:
            return None
        del self._pdbs_by_namespace[namespace][key]
        if not self._pdbs_by_namespace[namespace]:
            del self._pdbs_by_namespace[namespace]
        del self._budget_counts[key]
        self._versions.pop(("pdb", key), None)
        self._pdb_list = None
        return gone

    def reconcile_daemonsets(self) -> list[Pod]:
        """Play the DaemonSet controller once; returns the pods it created.

        Each DaemonSet gets one Running pod `<daemonset>-<node>` on every node that is not being
        deleted, whose labels satisfy the template's node selector and required affinity, and
        whose NoSchedule/NoExecute taints the template tolerates. Like the real controller it
        ignores `unschedulable` (cordoned nodes keep their daemons) and readiness, and does not
        check that requests fit. Pods of a known DaemonSet on a node that no longer matches are
        deleted; daemon pods of DaemonSets this cluster does not hold are left alone, so tests can
        add daemon pods by hand.
        """
        wanted: dict[str, tuple[DaemonSet, str]] = {}
        for daemonset in self._daemonsets.values():
            requirements = daemonset.template.node_requirements()
            for node in self._nodes.values():
                if node.deleting or not tolerates_all(daemonset.template.tolerations, node.taints):
                    continue
                if any(label_matches(r, node.labels) for r in requirements):
                    wanted[f"{daemonset.namespace}/{daemonset.name}-{node.name}"] = (daemonset, node.name)
        stale = [
            p
            for p in self._pods.values()
            if p.daemon and p.key not in wanted and f"{p.namespace}/{p.owner_name}" in self._daemonsets
        ]
        for pod in stale:
            self._delete_pod(pod, POD_DELETED, "its daemonset no longer wants it on this node")
        created = []
        for key, (daemonset, node_name) in wanted.items():
            if key in self._pods:
                continue
            template = daemonset.template
            pod = replace(
                template,
                name=key.partition("/")[2],
                uid="",
                created_at=0.0,
                owner_kind="DaemonSet",
                owner_name=daemonset.name,
                node_name=node_name,
                nominated_node_name="",
                phase="Running",
                unschedulable=False,
                deleting=False,
            )
            created.append(self.add_pod(pod))
        return created
