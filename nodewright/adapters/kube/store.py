"""The cluster as the watches delivered it: parsed objects per kind, kept current by events.

Role: the store half of an informer (client-go's `thread_safe_store`, kube-rs's `reflector::Store`).
It knows nothing of HTTP: `replace` installs a kind's full LIST, `put` and `delete` apply one
watch event, and readers take `snapshot()`, `pending()` or `version()`. The watchers
(`nodewright.adapters.kube.watch`) are its only writers; `KubeCluster` its reader.

What it keeps current as events arrive, so that a reader never scans the cluster:
  * pods indexed by node, so a node that starts or stops draining re-evaluates only its pods;
  * the pods that need capacity (`ClusterSnapshot.pending`'s rule, `needs_capacity`), so the
    provisioner's wake-up check is O(pending pods), not O(pods);
  * `version`, bumped whenever that set may have changed, so a waiting loop wakes on a pending
    pod and not on the many status updates of running ones;
  * sorted tuples per kind, rebuilt only for a kind that changed since the last `snapshot()`.

Thread safety: every method takes the store's condition lock; writers `notify_all` after a
change, and `wait` blocks on it. Events apply in the order each kind's watch delivered them; kinds
are independent, as they are on the API server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.model.dra import DeviceObjects
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot, needs_capacity

NODES = "nodes"
PODS = "pods"
DAEMONSETS = "daemonsets"
PDBS = "poddisruptionbudgets"
KINDS = (NODES, PODS, DAEMONSETS, PDBS)
# DRA's kinds (resource.k8s.io/v1): followed only once a pod names a claim (`KubeCluster.snapshot`).
DEVICECLASSES = "deviceclasses"
RESOURCECLAIMS = "resourceclaims"
RESOURCECLAIMTEMPLATES = "resourceclaimtemplates"
DEVICE_KINDS = (DEVICECLASSES, RESOURCECLAIMS, RESOURCECLAIMTEMPLATES)


@dataclass
class _Kind:
    objects: dict[str, Any] = field(default_factory=dict)
    listed: bool = False
    sorted: tuple[Any, ...] | None = None


class ClusterStore:
    """Parsed objects per kind, fed by LIST and WATCH (see the module docstring).

    Keys are `namespace/name` for namespaced kinds and the name for nodes. `kinds` names the kinds
    this store holds; `synced()` is true once each has been listed.
    """

    def __init__(self, kinds: Iterable[str] = KINDS) -> None:
        self.changed = threading.Condition()
        self._kinds = {kind: _Kind() for kind in kinds}
        self._by_node: dict[str, dict[str, Pod]] = {}
        self._pending: dict[str, Pod] = {}
        self._pending_sorted: list[Pod] | None = None
        self._version = 0

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds this store holds, in the order it was given them (the order they are followed)."""
        return tuple(self._kinds)

    def add_kinds(self, kinds: Iterable[str]) -> None:
        """Hold `kinds` too (not listed yet: `synced()` waits for them)."""
        with self.changed:
            for kind in kinds:
                self._kinds.setdefault(kind, _Kind())

    def has_device_claims(self) -> bool:
        """True when some pod names a DRA claim."""
        with self.changed:
            return any(p.device_claims for p in self._kinds[PODS].objects.values()) if PODS in self._kinds else False

    # ------------------------------------------------------------------ writing (the watchers)

    def replace(self, kind: str, objects: Mapping[str, Any]) -> None:
        """Install a kind's full LIST (the first, or a relist after 410): what the list lacks is
        deleted, what it has is put, as if the missed events had arrived.
        """
        with self.changed:
            state = self._kinds[kind]
            for key in [k for k in state.objects if k not in objects]:
                self._delete(kind, key)
            for key, obj in objects.items():
                self._put(kind, key, obj)
            state.listed = True
            self.changed.notify_all()

    def put(self, kind: str, key: str, obj: Any) -> None:
        """Apply an ADDED or MODIFIED event."""
        with self.changed:
            self._put(kind, key, obj)
            self.changed.notify_all()

    def delete(self, kind: str, key: str) -> None:
        """Apply a DELETED event; an unknown key is fine."""
        with self.changed:
            self._delete(kind, key)
            self.changed.notify_all()

    # ------------------------------------------------------------------ reading

    def synced(self, kinds: Iterable[str] | None = None) -> bool:
        """True once every kind (or each of `kinds`) has been listed."""
        with self.changed:
            return all(self._kinds[k].listed for k in (self._kinds if kinds is None else kinds))

    def version(self) -> int:
        """Changes whenever the pods needing capacity may have changed."""
        return self._version

    def wait(self, seconds: float, woken: Callable[[], bool]) -> bool:
        """Block up to `seconds` until `woken()` is true (checked after every change); its value."""
        with self.changed:
            return self.changed.wait_for(woken, timeout=max(0.0, seconds))

    def snapshot(self) -> ClusterSnapshot:
        """Nodes, pods, daemonsets and PDBs, each sorted by key, as the API server lists them."""
        with self.changed:
            return ClusterSnapshot(
                nodes=self._sorted(NODES),
                pods=self._sorted(PODS),
                daemonsets=self._sorted(DAEMONSETS),
                pdbs=self._sorted(PDBS),
                devices=self._devices(),
            )

    def pending(self) -> list[Pod]:
        """The pods that need capacity, sorted by key (`ClusterSnapshot.pending`)."""
        with self.changed:
            if self._pending_sorted is None:
                self._pending_sorted = [self._pending[k] for k in sorted(self._pending)]
            return list(self._pending_sorted)

    def nodes(self) -> list[Node]:
        """Every node, sorted by name."""
        with self.changed:
            return list(self._sorted(NODES))

    def pod(self, key: str) -> Pod | None:
        """The pod `namespace/name`, or None when it is unknown or pods are not watched."""
        with self.changed:
            state = self._kinds.get(PODS)
            found: Pod | None = None if state is None else state.objects.get(key)
            return found

    def node(self, name: str) -> Node | None:
        """The node of that name, or None."""
        with self.changed:
            node: Node | None = self._kinds[NODES].objects.get(name)
            return node

    def pods_on(self, node: str) -> list[Pod]:
        """The pods bound to `node`, sorted by key."""
        with self.changed:
            bound = self._by_node.get(node, {})
            return [bound[k] for k in sorted(bound)]

    # ------------------------------------------------------------------ internals (lock held)

    def _devices(self) -> DeviceObjects:
        if DEVICECLASSES not in self._kinds:
            return DeviceObjects()
        return DeviceObjects(
            classes={c.name: c for c in self._sorted(DEVICECLASSES)},
            claims={c.key: c for c in self._sorted(RESOURCECLAIMS)},
            templates={t.key: t for t in self._sorted(RESOURCECLAIMTEMPLATES)},
        )

    def _sorted(self, kind: str) -> tuple[Any, ...]:
        state = self._kinds.get(kind)
        if state is None:
            return ()
        if state.sorted is None:
            state.sorted = tuple(state.objects[k] for k in sorted(state.objects))
        return state.sorted

    def _put(self, kind: str, key: str, obj: Any) -> None:
        state = self._kinds[kind]
        old = state.objects.get(key)
        if old == obj:
            return
        state.objects[key] = obj
        state.sorted = None
        if kind == PODS:
            if old is not None:
                self._unindex(key, old)
            self._index(key, obj)
        elif kind == NODES and (old is None or old.draining != obj.draining):
            self._version += 1
            self._reevaluate(key)

    def _delete(self, kind: str, key: str) -> None:
        state = self._kinds[kind]
        old = state.objects.pop(key, None)
        if old is None:
            return
        state.sorted = None
        if kind == PODS:
            self._unindex(key, old)
        elif kind == NODES:
            self._version += 1
            self._reevaluate(key)

    def _draining(self, node: str) -> bool:
        stored = self._kinds[NODES].objects.get(node) if node and NODES in self._kinds else None
        return stored is not None and bool(stored.draining)

    def _index(self, key: str, pod: Pod) -> None:
        if pod.node_name:
            self._by_node.setdefault(pod.node_name, {})[key] = pod
        if needs_capacity(pod, self._draining(pod.node_name)):
            self._pending[key] = pod
            self._pending_sorted = None
            self._version += 1

    def _unindex(self, key: str, pod: Pod) -> None:
        if pod.node_name:
            bound = self._by_node.get(pod.node_name)
            if bound is not None:
                bound.pop(key, None)
                if not bound:
                    del self._by_node[pod.node_name]
        if self._pending.pop(key, None) is not None:
            self._pending_sorted = None
            self._version += 1

    def _reevaluate(self, node: str) -> None:
        """A node started or stopped draining (or came or went): its pods may now need capacity."""
        draining = self._draining(node)
        for key, pod in self._by_node.get(node, {}).items():
            wanted = needs_capacity(pod, draining)
            if wanted != (key in self._pending):
                if wanted:
                    self._pending[key] = pod
                else:
                    del self._pending[key]
                self._pending_sorted = None


def object_key(manifest: Mapping[str, Any]) -> str:
    """`namespace/name` (or the name of a cluster-scoped object) from a manifest's metadata."""
    meta = manifest.get("metadata") or {}
    namespace = meta.get("namespace")
    name = str(meta.get("name") or "")
    return f"{namespace}/{name}" if namespace else name
