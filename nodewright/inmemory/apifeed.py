"""The in-memory cluster's objects fed into the API emulator's store as manifests.

Role: `ClusterFeed` follows `InMemoryCluster` (its `listeners` hook, called synchronously in the
thread that changed the cluster) and keeps the `ObjectStore`'s built-in kinds equal to it: each
node, pod, DaemonSet, PDB and Event encoded once per change (`nodewright.model.manifests`). When a
pod changes, each PDB of its namespace whose `disruptionsAllowed` (`cluster.budget_allowed`) moved
is stored again, as the disruption controller writes the status. A pod's ownerReferences get
the `uid` the API requires (the model keeps only the owner's kind and name). `dress(kind, manifest)` may
return a fuller manifest (managedFields, env, probes: what real objects carry) without touching
the model.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import Any

from nodewright.inmemory.apisource import ServedCluster
from nodewright.inmemory.apistore import ObjectStore
from nodewright.inmemory.cluster import DELETED
from nodewright.inmemory.clusterdevices import LISTENER_KINDS, DeviceObject
from nodewright.model.event import StoredEvent
from nodewright.model.manifests import daemonset_manifest, node_manifest, pdb_manifest, pod_manifest
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget


class ClusterFeed:
    """Keeps `store` equal to `cluster` (module docstring)."""

    def __init__(
        self,
        cluster: ServedCluster,
        store: ObjectStore,
        dress: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self._cluster = cluster
        self._store = store
        self._dress = dress
        self._budgets: dict[str, dict[str, PodDisruptionBudget]] = {}  # namespace -> key -> PDB
        self._allowed: dict[str, int] = {}

    def load(self) -> None:
        """Store the cluster's objects as they are now, as no history (hold the store's condition)."""
        snapshot = self._cluster.snapshot_unrecorded()
        for kind, objects in (
            ("node", snapshot.nodes),
            ("pod", snapshot.pods),
            ("daemonset", snapshot.daemonsets),
            ("pdb", snapshot.pdbs),
            ("event", self._cluster.events()),
        ):
            for obj in objects:
                self._put(kind, obj)
        for device_object in self._cluster.devices.all():
            self._put(LISTENER_KINDS[device_object.kind], device_object)
        self._store.forget_history()

    def on_change(self, kind: str, event: str, obj: object, revision: int) -> None:
        """The cluster's listener (called in the thread that changed the cluster)."""
        store = self._store
        with store.condition:
            if event == DELETED and isinstance(obj, StoredEvent):
                store.delete("event", f"{obj.namespace}/{obj.name}")
                store.delete("coreevent", f"{obj.namespace}/{obj.name}")
            elif event == DELETED:
                self._delete(kind, obj)
            else:
                self._put(kind, obj)
            if isinstance(obj, Pod):
                self._refresh_budgets(obj.namespace)
            store.condition.notify_all()

    def _put(self, kind: str, obj: Any) -> None:
        if isinstance(obj, StoredEvent):
            self._put_manifest("event", obj.to_manifest(), obj)
            self._put_manifest("coreevent", obj.to_core_manifest(), obj)
            return
        if isinstance(obj, DeviceObject):
            manifest = copy.deepcopy(dict(obj.manifest))
        elif isinstance(obj, Node):
            manifest = node_manifest(obj)
        elif isinstance(obj, Pod):
            manifest = _with_owner_uids(pod_manifest(obj))
        elif isinstance(obj, DaemonSet):
            manifest = daemonset_manifest(obj)
        elif isinstance(obj, PodDisruptionBudget):
            key = f"{obj.namespace}/{obj.name}"
            allowed = self._cluster.budget_allowed(obj)
            self._allowed[key] = allowed
            self._budgets.setdefault(obj.namespace, {})[key] = obj
            manifest = pdb_manifest(obj, allowed)
        else:
            raise TypeError(f"cannot serve a {type(obj).__name__} as a {kind}")
        self._put_manifest(kind, manifest, obj)

    def _put_manifest(self, kind: str, manifest: dict[str, Any], obj: Any) -> None:
        if self._dress is not None:
            manifest = self._dress(kind, manifest)
        self._store.put(kind, manifest, obj)

    def _delete(self, kind: str, obj: Any) -> None:
        namespace = getattr(obj, "namespace", "")
        key = f"{namespace}/{obj.name}" if self._store.kind(kind).resource.namespaced else str(obj.name)
        if self._store.delete(kind, key) is not None and kind == "pdb":
            self._allowed.pop(key, None)
            budgets = self._budgets.get(namespace, {})
            budgets.pop(key, None)
            if not budgets:
                self._budgets.pop(namespace, None)

    def _refresh_budgets(self, namespace: str) -> None:
        """Re-store the PDBs of `namespace` whose disruptionsAllowed a pod change moved."""
        for key, pdb in list(self._budgets.get(namespace, {}).items()):
            if self._cluster.budget_allowed(pdb) != self._allowed.get(key):
                self._put("pdb", pdb)


def _with_owner_uids(manifest: dict[str, Any]) -> dict[str, Any]:
    """The pod's ownerReferences with the `uid` kube-apiserver requires (the model keeps only the
    owner's kind and name): a stable UUID of the owner's namespace, kind and name, so typed
    clients (the official Python client refuses an ownerReference without one) read the pod.
    """
    metadata = manifest.get("metadata") or {}
    for reference in metadata.get("ownerReferences") or ():
        if not reference.get("uid"):
            owner = f"{metadata.get('namespace')}/{reference.get('kind')}/{reference.get('name')}"
            reference["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, owner))
    return manifest
