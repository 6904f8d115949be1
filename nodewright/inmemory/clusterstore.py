"""The in-memory cluster's store: its objects, indexes, revisions, budget counts and change log.

Role: `ClusterStore` is the part of `InMemoryCluster` (`nodewright.inmemory.cluster`, whose docstring
says what is faked and observed) every other part writes through: `_put_node`, `_put_pod`,
`_delete_pod` and `_remove_node` keep the indexes by node and namespace, each PDB's
healthy/expected counts (so an eviction never scans pods), the resourceVersions, the pending
version, the listeners and the `changes` log in step. Also here: the watch event types, the
change kinds and the records (`Call`, `Change`) the cluster's observers read.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from nodewright.inmemory.clock import VirtualClock
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.snapshot import needs_capacity, reschedulable
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget, covering

if TYPE_CHECKING:
    from nodewright.ports import Clock

# The Cluster port methods that read or write: the only ones recorded in `calls` and open to
# `fail_next` (`version`, `follow` and `usage` ask nothing of the API server).
PORT_METHODS = (
    "snapshot",
    "pending",
    "get_node",
    "node_by_instance",
    "pods_on",
    "cordon",
    "uncordon",
    "evict",
    "delete_node",
)

# Watch event types, as the API server names them, passed to `InMemoryCluster.listeners`.
ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

# A listener: (kind: "node" | "pod" | "daemonset" | "pdb", event type, the object as stored (the
# last state for DELETED), the cluster revision of this change).
Listener = Callable[[str, str, object, int], None]

# The API server deletes an Event an hour after it was last seen (kube-apiserver --event-ttl);
# the cluster sweeps for such Events at most this often, as Events are created.
EVENT_TTL = 3600.0
EVENT_SWEEP = 300.0

# Kinds of entries in `InMemoryCluster.changes`.
NODE_ADDED = "node_added"
NODE_READY = "node_ready"
NODE_CORDONED = "node_cordoned"
NODE_UNCORDONED = "node_uncordoned"
NODE_DELETED = "node_deleted"
POD_CREATED = "pod_created"
POD_BOUND = "pod_bound"
POD_EVICTED = "pod_evicted"
POD_DELETED = "pod_deleted"
EVICTION_BLOCKED = "eviction_blocked"

# Owners whose controllers recreate a deleted pod (when `recreate_owned_pods` is on).
_RECREATING_OWNERS = frozenset({"ReplicaSet", "StatefulSet", "Job", "ReplicationController"})
IGNORES_BUDGETS = frozenset({"Pending", "Succeeded", "Failed"})
MULTIPLE_BUDGETS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
BUDGET_REFUSES = "Cannot evict pod as it would violate the pod's disruption budget."


class SimulatedApiError(Exception):
    """The error `fail_next` raises by default: an API call that failed (HTTP `status`)."""

    def __init__(self, message: str, status: int = 500) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Call:
    """One call of a port method: its name and what it was about (node name, pod key or '')."""

    method: str
    target: str = ""


@dataclass(frozen=True, slots=True)
class Change:
    """One entry of the changes log, stamped with the clock's time.

    `name` is the node name or pod key; `node` the node a pod was on; `pods` the workload pods a
    deleted node still held (lost without a drain); `grace_seconds` an evicted or deleted pod's
    terminationGracePeriodSeconds; `message` why (for deletions and refused evictions).
    """

    at: float
    kind: str
    name: str
    node: str = ""
    pods: tuple[str, ...] = ()
    grace_seconds: int | None = None
    message: str = ""


@dataclass(slots=True)
class Failure:
    times: int
    error: BaseException


class ClusterStore:
    """The objects of an `InMemoryCluster` and the writes that keep its indexes, counts and logs in step."""

    def __init__(self, clock: Clock | None = None, *, recreate_owned_pods: bool = False) -> None:
        self.clock: Clock = clock if clock is not None else VirtualClock()
        self.recreate_owned_pods = recreate_owned_pods
        self.calls: list[Call] = []
        self.changes: list[Change] = []
        self.failures: dict[str, Failure] = {}
        self.nodes: dict[str, Node] = {}
        self.pods: dict[str, Pod] = {}
        self.pods_by_node: dict[str, dict[str, Pod]] = {}
        self.pods_by_namespace: dict[str, dict[str, Pod]] = {}
        self.daemonsets: dict[str, DaemonSet] = {}
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self.pdbs_by_namespace: dict[str, dict[str, PodDisruptionBudget]] = {}
        # [healthy, expected] per PDB key, kept current on every pod write so an eviction costs
        # O(budgets in the namespace), not O(pods).
        self.budget_counts: dict[str, list[int]] = {}
        self.versions: dict[tuple[str, str], int] = {}
        self.revision = 0
        self.listeners: list[Listener] = []
        # Bumped when the pods needing capacity may have changed (the port's `version`).
        self.pending_version = 0
        self.usage_from = 0
        self._uids = itertools.count(1)
        self._suffixes = itertools.count(1)
        # Sorted lists handed out by snapshot(), rebuilt only after a write to that kind.
        self.node_list: tuple[Node, ...] | None = None
        self.pod_list: tuple[Pod, ...] | None = None
        self.daemonset_list: tuple[DaemonSet, ...] | None = None
        self.pdb_list: tuple[PodDisruptionBudget, ...] | None = None

    def add_pod(self, pod: Pod) -> Pod:
        """Create a pod (uid and creationTimestamp stamped when unset); returns it as stored."""
        if pod.key in self.pods:
            raise ValueError(f"pod {pod.key} already exists")
        if not pod.uid or not pod.created_at:
            pod = replace(pod, uid=pod.uid or f"uid-{next(self._uids)}", created_at=pod.created_at or self.clock.now())
        self.put_pod(pod)
        self.log(POD_CREATED, pod.key, node=pod.node_name)
        return pod

    def bound(self, node: str) -> list[Pod]:
        bound = self.pods_by_node.get(node, {})
        return [bound[k] for k in sorted(bound)]

    # ------------------------------------------------------------------ writes the other parts make

    def enter(self, method: str, target: str = "") -> None:
        self.calls.append(Call(method, target))
        failure = self.failures.get(method)
        if failure is not None:
            failure.times -= 1
            if failure.times <= 0:
                del self.failures[method]
            raise failure.error

    def log(
        self,
        kind: str,
        name: str,
        *,
        node: str = "",
        pods: tuple[str, ...] = (),
        grace_seconds: int | None = None,
        message: str = "",
    ) -> None:
        self.changes.append(Change(self.clock.now(), kind, name, node, pods, grace_seconds, message))

    def bump(self, kind: str, key: str) -> None:
        self.revision += 1
        self.versions[(kind, key)] = self.revision

    def notify(self, kind: str, event: str, obj: object) -> None:
        for listener in self.listeners:
            listener(kind, event, obj, self.revision)

    def draining(self, node: str) -> bool:
        stored = self.nodes.get(node) if node else None
        return stored is not None and stored.draining

    def require_node(self, name: str) -> Node:
        node = self.nodes.get(name)
        if node is None:
            raise KeyError(f"no node {name}")
        return node

    def require_pod(self, key: str) -> Pod:
        pod = self.pods.get(key)
        if pod is None:
            raise KeyError(f"no pod {key}")
        return pod

    def put_node(self, node: Node) -> bool:
        """Store `node`; False (and no new resourceVersion) when nothing changed."""
        old = self.nodes.get(node.name)
        if old == node:
            return False
        self.nodes[node.name] = node
        self.bump("node", node.name)
        self.node_list = None
        if old is None or old.draining != node.draining:
            self.pending_version += 1
        self.notify("node", ADDED if old is None else MODIFIED, node)
        return True

    def put_pod(self, pod: Pod) -> None:
        key = pod.key
        old = self.pods.get(key)
        if old == pod:
            return
        if old is not None:
            self._unindex(old)
        self.pods[key] = pod
        self.pods_by_namespace.setdefault(pod.namespace, {})[key] = pod
        if pod.node_name:
            self.pods_by_node.setdefault(pod.node_name, {})[key] = pod
        self._count(pod, 1)
        self.bump("pod", key)
        self.pod_list = None
        self.pdb_list = None
        if (old is not None and needs_capacity(old, self.draining(old.node_name))) or needs_capacity(
            pod, self.draining(pod.node_name)
        ):
            self.pending_version += 1
        self.notify("pod", ADDED if old is None else MODIFIED, pod)

    def _unindex(self, pod: Pod) -> None:
        key = pod.key
        self._count(pod, -1)
        if pod.node_name:
            on_node = self.pods_by_node.get(pod.node_name)
            if on_node is not None:
                on_node.pop(key, None)
                if not on_node:
                    del self.pods_by_node[pod.node_name]
        in_namespace = self.pods_by_namespace.get(pod.namespace)
        if in_namespace is not None:
            in_namespace.pop(key, None)
            if not in_namespace:
                del self.pods_by_namespace[pod.namespace]

    def delete_pod(self, pod: Pod, kind: str, why: str) -> None:
        self._unindex(pod)
        del self.pods[pod.key]
        self.versions.pop(("pod", pod.key), None)
        self.pod_list = None
        self.pdb_list = None
        if needs_capacity(pod, self.draining(pod.node_name)):
            self.pending_version += 1
        self.revision += 1
        self.notify("pod", DELETED, pod)
        self.log(kind, pod.key, node=pod.node_name, grace_seconds=pod.termination_grace_seconds, message=why)
        if self.recreate_owned_pods and pod.owner_kind in _RECREATING_OWNERS and not pod.terminal:
            self._recreate(pod)

    def _recreate(self, pod: Pod) -> None:
        # StatefulSet pods come back under the same name; the others get a fresh suffix.
        if pod.owner_kind == "StatefulSet":
            name = pod.name
        else:
            name = f"{pod.owner_name or pod.name}-{next(self._suffixes)}"
        self.add_pod(
            replace(
                pod,
                name=name,
                uid="",
                created_at=0.0,
                node_name="",
                nominated_node_name="",
                phase="Pending",
                unschedulable=False,
                deleting=False,
            )
        )

    def remove_node(self, name: str, why: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        on_node = self.bound(name)
        lost = tuple(p.key for p in on_node if reschedulable(p))
        self.log(NODE_DELETED, name, pods=lost, message=why)
        # The pods first, while their node is still known (whether it was draining matters for
        # `version`), then the node: the pod GC deletes them as the node goes.
        for pod in on_node:
            self.delete_pod(pod, POD_DELETED, f"node {name} was deleted")
        del self.nodes[name]
        self.versions.pop(("node", name), None)
        self.node_list = None
        self.pending_version += 1
        self.revision += 1
        self.notify("node", DELETED, node)

    def refusal(self, pod: Pod) -> str:
        """Why the budgets covering `pod` refuse its eviction now, or ''."""
        budgets = covering(self.pdbs_by_namespace.get(pod.namespace, {}).values(), pod)
        if len(budgets) > 1:
            names = ", ".join(sorted(b.name for b in budgets))
            return f"{MULTIPLE_BUDGETS} ({names}) (500)"
        if budgets and self.allowed(budgets[0]) <= 0:
            return f"{BUDGET_REFUSES} The disruption budget {budgets[0].name} needs more healthy pods. (429)"
        return ""

    def allowed(self, pdb: PodDisruptionBudget) -> int:
        healthy, expected = self.budget_counts[f"{pdb.namespace}/{pdb.name}"]
        return pdb.allowed(healthy, expected)

    def _count(self, pod: Pod, sign: int) -> None:
        """Add (sign 1) or take away (sign -1) `pod` from the counts of the budgets selecting it."""
        if pod.terminal:
            return
        for key, pdb in self.pdbs_by_namespace.get(pod.namespace, {}).items():
            if pdb.selector.matches(pod.labels):
                counts = self.budget_counts[key]
                counts[0] += sign * healthy(pod)
                counts[1] += sign


def healthy(pod: Pod) -> int:
    """1 when the pod counts as healthy for a budget: Running, bound and not being deleted."""
    return int(pod.phase == "Running" and bool(pod.node_name) and not pod.deleting)


def pod_key(pod: Pod | str) -> str:
    return pod if isinstance(pod, str) else pod.key
