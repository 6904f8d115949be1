"""An in-memory Kubernetes cluster: the stand-in for a kube-apiserver in tests and `simulate`.

Role: implement `nodewright.ports.Cluster` exactly (the methods the controllers call, with the
same error contract as the real adapter) over plain dicts of the frozen model objects, plus the
setup and observation methods tests and the simulator need.

Files: `cluster.py` is `InMemoryCluster`: the Cluster port's methods, the error knobs, reading,
and the setup of nodes and pods; `clusterstore.py` the store every write goes through (indexes,
budget counts, revisions, listeners, the changes log) and the records observers read;
`clusterevents.py` the Events (recorded, created, patched, kube-scheduler's, the TTL);
`clusterworkloads.py` DaemonSets, PDBs and the DaemonSet controller.

What is faked
  * The API server's storage and the parts of its behaviour controllers depend on: nodes, pods,
    daemonsets and PDBs; cordon/uncordon as a node patch; the Eviction API with PDB checks;
    creationTimestamp and uid stamping; a resourceVersion per object (a cluster-wide revision,
    bumped only by writes that change something, as etcd does).
  * Just enough of three controllers, each only when asked: the PDB disruption controller
    (budgets are computed from the current pods at every eviction and snapshot, never stale),
    the pod garbage collector (pods of a deleted node are deleted with it), and, with
    `recreate_owned_pods=True`, the ReplicaSet/StatefulSet/Job controllers (an evicted or
    collected pod comes back as a new Pending pod). `reconcile_daemonsets()` plays the DaemonSet
    controller.
  * API failures, through `fail_next`, like Karpenter's fake cloud provider.

What is not faked: kube-scheduler and the kubelet. Nothing binds a pod or marks it Unschedulable
by itself: tests and the simulator call `bind` and `mark_unschedulable`. Deletion is immediate
(no graceful termination, no finalizers): a pod's `terminationGracePeriodSeconds` is recorded in
the log for the simulator to account for, and nodes being deleted are set with
`set_node_deleting`.

What is observed
  * `calls`: every call of a `Cluster` port method, in order (setup methods are not recorded);
    `record` only when it wrote an Event (what the adapter would have sent a request for).
  * `listeners`: called on every change of a stored object, with the kind, the watch event type
    (ADDED, MODIFIED, DELETED), the object and the cluster revision the change got: what an API
    server's watch would send (the HTTP emulator serves watches from it).
  * `events()`: the Events the API server holds (`nodewright.model.event.StoredEvent`): those the
    controllers `record` (through the same correlator as the real adapter, so series and rate
    limits are what a cluster would hold) or the emulator was sent, and kube-scheduler's own
    (`FailedScheduling` from `mark_unschedulable`, `Scheduled` from `bind`). Listeners get them as
    kind "event".
  * `changes`: a time-stamped log (from the injected clock) of what happened, for assertions and
    the simulator's metrics: pods created, bound, evicted (with their grace period) and deleted,
    evictions a budget refused, nodes added, cordoned, deleted (with the workload pods still on
    them: "lost pods").

Eviction follows the API server's eviction subresource:
  1. no such pod -> "gone" (404); a `uid` that does not match the stored pod -> "gone" (409, the
     precondition Karpenter sets); a pod already being deleted -> "gone";
  2. a Pending, Succeeded or Failed pod is deleted without consulting budgets (the API server's
     `canIgnorePDB`);
  3. a pod selected by more than one PDB -> "blocked": the API server answers 500 "This pod has
     more than one PodDisruptionBudget, which the eviction subresource does not support", which
     no retry fixes but which, like a 429, means the pod stays; callers retry or give up;
  4. one PDB -> healthy = its selected pods that are Running, bound and not being deleted;
     expected = its selected pods that are not terminal; allowed = `PodDisruptionBudget.allowed`;
     0 allowed -> "blocked" (429); otherwise the pod is deleted -> "evicted".
Because `expected` counts the pods that exist (the API server's rule for an integer
minAvailable), a maxUnavailable budget over pods nobody replaces re-opens after each eviction;
use `recreate_owned_pods=True` to keep the count up with Pending replacements, as in a real
cluster.

Cost: a pod write is O(1 + budgets in its namespace): pods are indexed by key, node and namespace,
and each PDB's healthy/expected counts are kept current, so an eviction never scans pods.
`snapshot()` sorts each kind that changed since the last snapshot and reuses the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.clusterevents import ClusterEvents
from nodewright.inmemory.clusterstore import (
    _IGNORES_BUDGETS,
    ADDED,
    BUDGET_REFUSES,
    DELETED,
    EVENT_SWEEP,
    EVENT_TTL,
    EVICTION_BLOCKED,
    MODIFIED,
    MULTIPLE_BUDGETS,
    NODE_ADDED,
    NODE_CORDONED,
    NODE_DELETED,
    NODE_READY,
    NODE_UNCORDONED,
    POD_BOUND,
    POD_CREATED,
    POD_DELETED,
    POD_EVICTED,
    PORT_METHODS,
    Call,
    Change,
    ClusterStore,
    Listener,
    SimulatedApiError,
    _Failure,
    _key,
)
from nodewright.inmemory.clusterworkloads import ClusterWorkloads
from nodewright.model.event import (
    NORMAL,
    WARNING,
)
from nodewright.model.node import READY, Node, NodeCondition
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.taints import Taint
from nodewright.ports import ApiUsage, Eviction

if TYPE_CHECKING:
    from nodewright.ports import Clock, Cluster

__all__ = [
    "ADDED",
    "BUDGET_REFUSES",
    "DELETED",
    "EVENT_SWEEP",
    "EVENT_TTL",
    "EVICTION_BLOCKED",
    "MODIFIED",
    "MULTIPLE_BUDGETS",
    "NODE_ADDED",
    "NODE_CORDONED",
    "NODE_DELETED",
    "NODE_READY",
    "NODE_UNCORDONED",
    "POD_BOUND",
    "POD_CREATED",
    "POD_DELETED",
    "POD_EVICTED",
    "PORT_METHODS",
    "Call",
    "Change",
    "ClusterStore",
    "InMemoryCluster",
    "Listener",
    "SimulatedApiError",
]


class InMemoryCluster(ClusterEvents, ClusterWorkloads):
    """A `nodewright.ports.Cluster` held in memory; see the module docstring for its behaviour.

    Pods are addressed by `Pod` or by key (`namespace/name`), nodes by name. Setup methods raise
    KeyError for a missing object and ValueError for a duplicate, since a test that does that
    is wrong; the port methods keep the port's contract instead (missing is a no-op or "gone").
    """

    # ------------------------------------------------------------------ the Cluster port

    def snapshot(self) -> ClusterSnapshot:
        """Nodes, then pods, daemonsets and PDBs, each sorted by key as the API server lists them.

        PDBs carry `disruptions_allowed` computed from the current pods (the status the
        disruption controller would have written).
        """
        self._enter("snapshot")
        return self.snapshot_unrecorded()

    def snapshot_unrecorded(self) -> ClusterSnapshot:
        """`snapshot()` without recording a call (for `pending` and subclasses)."""
        if self._node_list is None:
            self._node_list = tuple(self._nodes[k] for k in sorted(self._nodes))
        if self._pod_list is None:
            self._pod_list = tuple(self._pods[k] for k in sorted(self._pods))
        if self._daemonset_list is None:
            self._daemonset_list = tuple(self._daemonsets[k] for k in sorted(self._daemonsets))
        if self._pdb_list is None:
            self._pdb_list = tuple(
                replace(pdb, disruptions_allowed=self._allowed(pdb))
                for pdb in (self._pdbs[k] for k in sorted(self._pdbs))
            )
        return ClusterSnapshot(
            nodes=self._node_list, pods=self._pod_list, daemonsets=self._daemonset_list, pdbs=self._pdb_list
        )

    def follow(self, seconds: float) -> None:
        """Nothing to read: this cluster is its own view, always current. A pass starts: its
        Event budget starts full, as the adapter's does.
        """
        self.event_correlator.begin()

    def pending(self) -> list[Pod]:
        """The pods that need capacity now, sorted by key (`ClusterSnapshot.pending`)."""
        self._enter("pending")
        return self.snapshot_unrecorded().pending()

    def version(self) -> int:
        """Changes whenever the pods needing capacity may have changed (see `_put_pod`)."""
        return self._pending_version

    def usage(self) -> list[ApiUsage]:
        """The port calls since the last `usage()`, one entry per method (no bytes: no HTTP)."""
        counts: dict[str, int] = {}
        for call in self.calls[self._usage_from :]:
            counts[call.method] = counts.get(call.method, 0) + 1
        self._usage_from = len(self.calls)
        return [ApiUsage(method, "inmemory", n, 0) for method, n in sorted(counts.items())]

    def get_node(self, name: str) -> Node | None:
        """The node, or None when it does not exist."""
        self._enter("get_node", name)
        return self._nodes.get(name)

    def node_by_instance(self, instance_id: str) -> Node | None:
        """The node whose providerID ends with `/instance_id`, or None."""
        self._enter("node_by_instance", instance_id)
        return next((n for n in self._nodes.values() if n.instance_id == instance_id), None)

    def cordon(self, name: str, taint: Taint | None = None) -> None:
        """Mark the node unschedulable and add `taint` (unique by key and effect). Idempotent; a
        missing node is a no-op.
        """
        self._enter("cordon", name)
        node = self._nodes.get(name)
        if node is None:
            return
        taints = node.taints
        if taint is not None and taint not in taints:
            taints = (*(t for t in taints if (t.key, t.effect) != (taint.key, taint.effect)), taint)
        if self._put_node(replace(node, unschedulable=True, taints=taints)):
            self._log(NODE_CORDONED, name, message=str(taint or ""))

    def label_node(self, name: str, labels: Mapping[str, str | None]) -> None:
        """Set `labels` on the node, removing those given None. Idempotent; a missing node is a no-op."""
        self._enter("label_node", name)
        node = self._nodes.get(name)
        if node is None:
            return
        changed = {k: v for k, v in node.labels.items() if k not in labels}
        changed.update({k: v for k, v in labels.items() if v is not None})
        self._put_node(replace(node, labels=changed))

    def uncordon(self, name: str, taint_key: str | None = None) -> None:
        """Mark the node schedulable and remove every taint with `taint_key`. Idempotent; a
        missing node is a no-op.
        """
        self._enter("uncordon", name)
        node = self._nodes.get(name)
        if node is None:
            return
        taints = tuple(t for t in node.taints if t.key != taint_key) if taint_key else node.taints
        if self._put_node(replace(node, unschedulable=False, taints=taints)):
            self._log(NODE_UNCORDONED, name)

    def evict(self, pod: Pod) -> Eviction:
        """Evict `pod` through the simulated Eviction API (rules in the module docstring).

        Never raises for a refused or gone pod; raises only errors injected with `fail_next`.
        """
        key = pod.key
        self._enter("evict", key)
        current = self._pods.get(key)
        if current is None:
            return Eviction(key, "gone", "pod not found (404)")
        if pod.uid and current.uid and pod.uid != current.uid:
            return Eviction(key, "gone", f"uid precondition failed: {key} is now {current.uid} (409)")
        if current.deleting:
            return Eviction(key, "gone", "pod is already being deleted")
        if current.phase not in _IGNORES_BUDGETS:
            refusal = self._refusal(current)
            if refusal:
                self._log(EVICTION_BLOCKED, key, node=current.node_name, message=refusal)
                return Eviction(key, "blocked", refusal)
        self._delete_pod(current, POD_EVICTED, "evicted")
        return Eviction(key, "evicted")

    def delete_node(self, name: str) -> None:
        """Delete the node now, and its pods with it (the pod GC). A missing node is fine."""
        self._enter("delete_node", name)
        self._remove_node(name, "deleted through the API")

    # ------------------------------------------------------------------ error knobs and calls

    def fail_next(self, method: str, times: int = 1, error: BaseException | None = None) -> None:
        """Make the next `times` calls of port method `method` raise `error` (by default a
        SimulatedApiError with status 500) without any effect. The failed calls are still
        recorded in `calls`. A later `fail_next` for the same method replaces this one.
        """
        if method not in PORT_METHODS:
            raise ValueError(f"{method!r} is not one of the Cluster port methods {PORT_METHODS}")
        if times < 1:
            raise ValueError(f"times must be at least 1, got {times}")
        self._failures[method] = _Failure(times, error or SimulatedApiError(f"injected failure in {method}"))

    def reset(self) -> None:
        """Forget recorded calls and pending failures (objects and the changes log stay)."""
        self.calls.clear()
        self._usage_from = 0
        self._failures.clear()

    def calls_to(self, method: str) -> list[Call]:
        """The recorded calls of one port method, in order."""
        return [c for c in self.calls if c.method == method]

    def changes_of(self, kind: str) -> list[Change]:
        """The log entries of one kind (e.g. POD_EVICTED), in order."""
        return [c for c in self.changes if c.kind == kind]

    def lost_pods(self) -> list[str]:
        """Keys of workload pods that were still on a node when it was deleted."""
        return [p for c in self.changes if c.kind == NODE_DELETED for p in c.pods]

    # ------------------------------------------------------------------ reading

    def nodes(self) -> list[Node]:
        """All nodes, sorted by name."""
        return [self._nodes[k] for k in sorted(self._nodes)]

    def pods(self) -> list[Pod]:
        """All pods, sorted by key."""
        return [self._pods[k] for k in sorted(self._pods)]

    def get_pod(self, pod: Pod | str) -> Pod | None:
        """The stored pod with that key, or None."""
        return self._pods.get(_key(pod))

    def pods_on(self, node: str) -> list[Pod]:
        """The pods bound to `node`, sorted by key (also the Cluster port's pods_on)."""
        self._enter("pods_on", node)
        return self._bound(node)

    def resource_version(self, kind: str, key: str) -> int | None:
        """The revision of the last change to an object ("node", "pod", "daemonset", "pdb"), or None."""
        return self._versions.get((kind, key))

    # ------------------------------------------------------------------ nodes

    def add_node(self, node: Node) -> Node:
        """Create a node (creationTimestamp stamped from the clock when unset); returns it as stored."""
        if node.name in self._nodes:
            raise ValueError(f"node {node.name} already exists")
        if not node.created_at:
            node = replace(node, created_at=self.clock.now())
        self._put_node(node)
        self._log(NODE_ADDED, node.name)
        return node

    def replace_node(self, node: Node) -> None:
        """Overwrite an existing node with `node` (same name)."""
        self._require_node(node.name)
        self._put_node(node)

    def remove_node(self, name: str) -> None:
        """Delete a node and its pods, as something outside the controllers would (e.g. EC2
        terminating the instance). Not recorded as a call; a missing node is fine.
        """
        self._remove_node(name, "removed")

    def set_node_ready(self, name: str, ready: bool = True) -> None:
        """Set the node's Ready condition, as its kubelet would."""
        self.set_node_condition(name, READY, "True" if ready else "False")

    def set_node_condition(self, name: str, kind: str, status: str, reason: str = "") -> None:
        """Set one of the node's conditions, as its kubelet (Ready), the node lifecycle controller
        (Ready Unknown) or the EKS node monitoring agent (KernelReady, ...) would: the transition
        time is now when the status changes, kept otherwise. Ready also sets `ready`.
        """
        if status not in ("True", "False", "Unknown"):
            raise ValueError(f"node {name}: condition {kind} status {status!r} is not True, False or Unknown")
        node = _with_condition(self._require_node(name), kind, status, self.clock.now(), reason)
        if kind == READY:
            node = replace(node, ready=status == "True")
        if self._put_node(node) and kind == READY and status == "True":
            self._log(NODE_READY, name)

    def set_node_deleting(self, name: str, deleting: bool = True) -> None:
        """Mark the node as being deleted (deletionTimestamp set, held by a finalizer)."""
        self._put_node(replace(self._require_node(name), deleting=deleting))

    def taint(self, name: str, taint: Taint) -> None:
        """Add `taint` to the node, replacing any taint with the same key and effect."""
        node = self._require_node(name)
        kept = tuple(t for t in node.taints if (t.key, t.effect) != (taint.key, taint.effect))
        self._put_node(replace(node, taints=(*kept, taint)))

    def untaint(self, name: str, key: str, effect: str | None = None) -> None:
        """Remove the node's taints with `key` (and `effect`, when given)."""
        node = self._require_node(name)
        kept = tuple(t for t in node.taints if t.key != key or (effect is not None and t.effect != effect))
        self._put_node(replace(node, taints=kept))

    # ------------------------------------------------------------------ pods

    def add_pods(self, pods: Iterable[Pod]) -> list[Pod]:
        """`add_pod` for each pod; returns them as stored."""
        return [self.add_pod(p) for p in pods]

    def replace_pod(self, pod: Pod) -> None:
        """Overwrite an existing pod with `pod` (same key); may move it between nodes."""
        self._require_pod(pod.key)
        self._put_pod(pod)

    def remove_pod(self, pod: Pod | str) -> bool:
        """Delete a pod now (as its owner or a user would); False when it did not exist."""
        current = self._pods.get(_key(pod))
        if current is None:
            return False
        self._delete_pod(current, POD_DELETED, "deleted")
        return True

    def bind(self, pod: Pod | str, node: str, *, running: bool = True) -> Pod:
        """Bind the pod to `node`, as kube-scheduler would, and (by default) start it Running, as
        the kubelet would. Clears Unschedulable and any nomination. Returns the stored pod.
        """
        current = self._require_pod(_key(pod))
        self._require_node(node)
        bound = replace(
            current,
            node_name=node,
            nominated_node_name="",
            unschedulable=False,
            phase="Running" if running else current.phase,
        )
        self._put_pod(bound)
        self._log(POD_BOUND, bound.key, node=node)
        self._scheduler_event(bound, NORMAL, "Scheduled", f"Successfully assigned {bound.key} to {node}", "Binding")
        return bound

    def mark_unschedulable(self, pod: Pod | str) -> Pod:
        """Set PodScheduled=False reason Unschedulable on an unbound pod, as kube-scheduler does
        when nothing fits. Raises ValueError for a bound pod.
        """
        current = self._require_pod(_key(pod))
        if current.node_name:
            raise ValueError(f"pod {current.key} is bound to {current.node_name}; only unbound pods are unschedulable")
        marked = replace(current, unschedulable=True)
        self._put_pod(marked)
        note = f"0/{len(self._nodes)} nodes are available: no node fits the pod."
        self._scheduler_event(marked, WARNING, "FailedScheduling", note, "Scheduling")
        return marked

    def set_pod_phase(self, pod: Pod | str, phase: str) -> Pod:
        """Set the pod's phase (Pending, Running, Succeeded, Failed), as its kubelet would."""
        updated = replace(self._require_pod(_key(pod)), phase=phase)
        self._put_pod(updated)
        return updated


def _with_condition(node: Node, kind: str, status: str, now: float, reason: str = "") -> Node:
    """`node` with condition `kind` at `status`, its transition time moved only by a change."""
    old = next((c for c in node.conditions if c.type == kind), None)
    if old is not None and old.status == status and (not reason or old.reason == reason):
        return node
    since = old.since if old is not None and old.status == status else now
    fresh = NodeCondition(kind, status, since, reason)
    return replace(node, conditions=(*(c for c in node.conditions if c.type != kind), fresh))


if TYPE_CHECKING:
    # Static proof that the fakes satisfy the ports (checked by mypy --strict, never run).
    _cluster: Cluster = InMemoryCluster()
    _clock: Clock = VirtualClock()
