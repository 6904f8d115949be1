"""An in-memory Kubernetes cluster: the stand-in for a kube-apiserver in tests and `simulate`.

Role: implement `nodewright.ports.Cluster` exactly (the methods the controllers call, with the
same error contract as the real adapter) over plain dicts of the frozen model objects, plus the
setup and observation methods tests and the simulator need.

Files: `cluster.py` is `InMemoryCluster`, composed of its parts: the Cluster port's methods, the
error knobs, reading, and the setup of nodes and pods; `clusterstore.py` the `ClusterStore` every
write goes through (indexes, budget counts, revisions, listeners, the changes log) and the records
observers read; `clusterevents.py` `ClusterEvents` (recorded, created, patched, kube-scheduler's,
the TTL); `clusterworkloads.py` `ClusterWorkloads` (DaemonSets, PDBs and the DaemonSet controller).

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
from nodewright.inmemory.clusterdevices import ClusterDevices
from nodewright.inmemory.clusterevents import ClusterEvents
from nodewright.inmemory.clusterstore import (
    ADDED,
    BUDGET_REFUSES,
    DELETED,
    EVENT_SWEEP,
    EVENT_TTL,
    EVICTION_BLOCKED,
    IGNORES_BUDGETS,
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
    Failure,
    Listener,
    SimulatedApiError,
    pod_key,
)
from nodewright.inmemory.clusterworkloads import ClusterWorkloads
from nodewright.model.event import (
    NORMAL,
    WARNING,
    Event,
    EventCorrelator,
    ObjectRef,
    StoredEvent,
)
from nodewright.model.node import READY, Node, NodeCondition
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.taints import Taint
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget
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


class InMemoryCluster:
    """A `nodewright.ports.Cluster` held in memory; see the module docstring for its behaviour.

    Pods are addressed by `Pod` or by key (`namespace/name`), nodes by name. Setup methods raise
    KeyError for a missing object and ValueError for a duplicate, since a test that does that
    is wrong; the port methods keep the port's contract instead (missing is a no-op or "gone").

    Composed of three parts, each owning its state: `store` (the objects, their indexes, budget
    counts, revisions, listeners and the changes log), `cluster_events` (the Events) and
    `workloads` (DaemonSets, PDBs, the DaemonSet controller); this class is the port and the
    setup surface over them.
    """

    def __init__(self, clock: Clock | None = None, *, recreate_owned_pods: bool = False) -> None:
        self.store = ClusterStore(clock, recreate_owned_pods=recreate_owned_pods)
        self.cluster_events = ClusterEvents(self.store)
        self.workloads = ClusterWorkloads(self.store)
        # DRA DeviceClasses, ResourceClaims and ResourceClaimTemplates (`clusterdevices.py`).
        self.devices = ClusterDevices(self.store)

    # ------------------------------------------------------------------ the parts' state, as observers read it

    @property
    def clock(self) -> Clock:
        """The clock every timestamp comes from."""
        return self.store.clock

    @property
    def calls(self) -> list[Call]:
        """Every call of a port method, in order (module docstring)."""
        return self.store.calls

    @property
    def changes(self) -> list[Change]:
        """The time-stamped changes log (module docstring)."""
        return self.store.changes

    @property
    def listeners(self) -> list[Listener]:
        """Called on every change of a stored object (module docstring); append to subscribe."""
        return self.store.listeners

    @property
    def recreate_owned_pods(self) -> bool:
        """Whether an evicted or collected pod of a recreating owner comes back Pending."""
        return self.store.recreate_owned_pods

    @recreate_owned_pods.setter
    def recreate_owned_pods(self, recreate: bool) -> None:
        self.store.recreate_owned_pods = recreate

    @property
    def event_correlator(self) -> EventCorrelator:
        """The correlator Nodewright's `record`ed Events go through (the adapter's)."""
        return self.cluster_events.event_correlator

    # ------------------------------------------------------------------ Events (ClusterEvents)

    def record(self, event: Event, now: float) -> None:
        """Store what the adapter would write for this occurrence (`ClusterEvents.record`)."""
        self.cluster_events.record(event, now)

    def events(self, regarding: ObjectRef | None = None) -> list[StoredEvent]:
        """The stored Events (about `regarding` when given), oldest first."""
        return self.cluster_events.events(regarding)

    def create_event(self, stored: StoredEvent) -> bool:
        """Store an Event an API client created; False when the name is taken."""
        return self.cluster_events.create_event(stored)

    def patch_event_series(self, namespace: str, name: str, count: int, last: float) -> StoredEvent | None:
        """Move a stored Event's series on; None when missing."""
        return self.cluster_events.patch_event_series(namespace, name, count, last)

    def event_summary(self) -> dict[str, dict[str, dict[str, int]]]:
        """Every Event stored so far, by reporting controller and reason (`ClusterEvents.event_summary`)."""
        return self.cluster_events.event_summary()

    def expire_events(self, last_before: float) -> int:
        """Delete the Events last seen before `last_before` (the API server's TTL); how many."""
        return self.cluster_events.expire_events(last_before)

    # ------------------------------------------------------------------ DaemonSets and PDBs (ClusterWorkloads)

    def add_daemonset(self, daemonset: DaemonSet) -> None:
        """Create or overwrite a DaemonSet (its pods appear on `reconcile_daemonsets`)."""
        self.workloads.add_daemonset(daemonset)

    def remove_daemonset(self, namespace: str, name: str) -> None:
        """Delete a DaemonSet and the pods it owns."""
        self.workloads.remove_daemonset(namespace, name)

    def add_pdb(self, pdb: PodDisruptionBudget) -> None:
        """Create or overwrite a PodDisruptionBudget."""
        self.workloads.add_pdb(pdb)

    def remove_pdb(self, namespace: str, name: str) -> None:
        """Delete a PodDisruptionBudget; a missing one is fine."""
        self.workloads.remove_pdb(namespace, name)

    def budget_allowed(self, pdb: PodDisruptionBudget) -> int:
        """How many disruptions the budget allows now (its status.disruptionsAllowed)."""
        return self.workloads.budget_allowed(pdb)

    def reconcile_daemonsets(self) -> list[Pod]:
        """Play the DaemonSet controller once (`ClusterWorkloads.reconcile_daemonsets`)."""
        return self.workloads.reconcile_daemonsets()

    # ------------------------------------------------------------------ the Cluster port

    def snapshot(self) -> ClusterSnapshot:
        """Nodes, then pods, daemonsets and PDBs, each sorted by key as the API server lists them.

        PDBs carry `disruptions_allowed` computed from the current pods (the status the
        disruption controller would have written).
        """
        self.store.enter("snapshot")
        return self.snapshot_unrecorded()

    def snapshot_unrecorded(self) -> ClusterSnapshot:
        """`snapshot()` without recording a call (for `pending` and subclasses)."""
        if self.store.node_list is None:
            self.store.node_list = tuple(self.store.nodes[k] for k in sorted(self.store.nodes))
        if self.store.pod_list is None:
            self.store.pod_list = tuple(self.store.pods[k] for k in sorted(self.store.pods))
        if self.store.daemonset_list is None:
            self.store.daemonset_list = tuple(self.store.daemonsets[k] for k in sorted(self.store.daemonsets))
        if self.store.pdb_list is None:
            self.store.pdb_list = tuple(
                replace(pdb, disruptions_allowed=self.store.allowed(pdb))
                for pdb in (self.store.pdbs[k] for k in sorted(self.store.pdbs))
            )
        return ClusterSnapshot(
            nodes=self.store.node_list,
            pods=self.store.pod_list,
            daemonsets=self.store.daemonset_list,
            pdbs=self.store.pdb_list,
            devices=self.devices.objects(),
        )

    def follow(self, seconds: float) -> None:
        """Nothing to read: this cluster is its own view, always current. A pass starts: its
        Event budget starts full, as the adapter's does.
        """
        self.cluster_events.event_correlator.begin()

    def pending(self) -> list[Pod]:
        """The pods that need capacity now, sorted by key (`ClusterSnapshot.pending`)."""
        self.store.enter("pending")
        return self.snapshot_unrecorded().pending()

    def version(self) -> int:
        """Changes whenever the pods needing capacity may have changed (see `_put_pod`)."""
        return self.store.pending_version

    def usage(self) -> list[ApiUsage]:
        """The port calls since the last `usage()`, one entry per method (no bytes: no HTTP)."""
        counts: dict[str, int] = {}
        for call in self.calls[self.store.usage_from :]:
            counts[call.method] = counts.get(call.method, 0) + 1
        self.store.usage_from = len(self.calls)
        return [ApiUsage(method, "inmemory", n, 0) for method, n in sorted(counts.items())]

    def get_node(self, name: str) -> Node | None:
        """The node, or None when it does not exist."""
        self.store.enter("get_node", name)
        return self.store.nodes.get(name)

    def node_by_instance(self, instance_id: str) -> Node | None:
        """The node whose providerID ends with `/instance_id`, or None."""
        self.store.enter("node_by_instance", instance_id)
        return next((n for n in self.store.nodes.values() if n.instance_id == instance_id), None)

    def cordon(self, name: str, taint: Taint | None = None) -> None:
        """Mark the node unschedulable and add `taint` (unique by key and effect). Idempotent; a
        missing node is a no-op.
        """
        self.store.enter("cordon", name)
        node = self.store.nodes.get(name)
        if node is None:
            return
        taints = node.taints
        if taint is not None and taint not in taints:
            taints = (*(t for t in taints if (t.key, t.effect) != (taint.key, taint.effect)), taint)
        if self.store.put_node(replace(node, unschedulable=True, taints=taints)):
            self.store.log(NODE_CORDONED, name, message=str(taint or ""))

    def label_node(self, name: str, labels: Mapping[str, str | None]) -> None:
        """Set `labels` on the node, removing those given None. Idempotent; a missing node is a no-op."""
        self.store.enter("label_node", name)
        node = self.store.nodes.get(name)
        if node is None:
            return
        changed = {k: v for k, v in node.labels.items() if k not in labels}
        changed.update({k: v for k, v in labels.items() if v is not None})
        self.store.put_node(replace(node, labels=changed))

    def uncordon(self, name: str, taint_key: str | None = None) -> None:
        """Mark the node schedulable and remove every taint with `taint_key`. Idempotent; a
        missing node is a no-op.
        """
        self.store.enter("uncordon", name)
        node = self.store.nodes.get(name)
        if node is None:
            return
        taints = tuple(t for t in node.taints if t.key != taint_key) if taint_key else node.taints
        if self.store.put_node(replace(node, unschedulable=False, taints=taints)):
            self.store.log(NODE_UNCORDONED, name)

    def evict(self, pod: Pod) -> Eviction:
        """Evict `pod` through the simulated Eviction API (rules in the module docstring).

        Never raises for a refused or gone pod; raises only errors injected with `fail_next`.
        """
        key = pod.key
        self.store.enter("evict", key)
        current = self.store.pods.get(key)
        if current is None:
            return Eviction(key, "gone", "pod not found (404)")
        if pod.uid and current.uid and pod.uid != current.uid:
            return Eviction(key, "gone", f"uid precondition failed: {key} is now {current.uid} (409)")
        if current.deleting:
            return Eviction(key, "gone", "pod is already being deleted")
        if current.phase not in IGNORES_BUDGETS:
            refusal = self.store.refusal(current)
            if refusal:
                self.store.log(EVICTION_BLOCKED, key, node=current.node_name, message=refusal)
                return Eviction(key, "blocked", refusal)
        self.store.delete_pod(current, POD_EVICTED, "evicted")
        return Eviction(key, "evicted")

    def delete_node(self, name: str) -> None:
        """Delete the node now, and its pods with it (the pod GC). A missing node is fine."""
        self.store.enter("delete_node", name)
        self.store.remove_node(name, "deleted through the API")

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
        self.store.failures[method] = Failure(times, error or SimulatedApiError(f"injected failure in {method}"))

    def reset(self) -> None:
        """Forget recorded calls and pending failures (objects and the changes log stay)."""
        self.calls.clear()
        self.store.usage_from = 0
        self.store.failures.clear()

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
        return [self.store.nodes[k] for k in sorted(self.store.nodes)]

    def pods(self) -> list[Pod]:
        """All pods, sorted by key."""
        return [self.store.pods[k] for k in sorted(self.store.pods)]

    def get_pod(self, pod: Pod | str) -> Pod | None:
        """The stored pod with that key, or None."""
        return self.store.pods.get(pod_key(pod))

    def pods_on(self, node: str) -> list[Pod]:
        """The pods bound to `node`, sorted by key (also the Cluster port's pods_on)."""
        self.store.enter("pods_on", node)
        return self.store.bound(node)

    def resource_version(self, kind: str, key: str) -> int | None:
        """The revision of the last change to an object ("node", "pod", "daemonset", "pdb"), or None."""
        return self.store.versions.get((kind, key))

    # ------------------------------------------------------------------ nodes

    def add_node(self, node: Node) -> Node:
        """Create a node (creationTimestamp stamped from the clock when unset); returns it as stored."""
        if node.name in self.store.nodes:
            raise ValueError(f"node {node.name} already exists")
        if not node.created_at:
            node = replace(node, created_at=self.clock.now())
        self.store.put_node(node)
        self.store.log(NODE_ADDED, node.name)
        return node

    def replace_node(self, node: Node) -> None:
        """Overwrite an existing node with `node` (same name)."""
        self.store.require_node(node.name)
        self.store.put_node(node)

    def remove_node(self, name: str) -> None:
        """Delete a node and its pods, as something outside the controllers would (e.g. EC2
        terminating the instance). Not recorded as a call; a missing node is fine.
        """
        self.store.remove_node(name, "removed")

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
        node = _with_condition(self.store.require_node(name), kind, status, self.clock.now(), reason)
        if kind == READY:
            node = replace(node, ready=status == "True")
        if self.store.put_node(node) and kind == READY and status == "True":
            self.store.log(NODE_READY, name)

    def set_node_deleting(self, name: str, deleting: bool = True) -> None:
        """Mark the node as being deleted (deletionTimestamp set, held by a finalizer)."""
        self.store.put_node(replace(self.store.require_node(name), deleting=deleting))

    def taint(self, name: str, taint: Taint) -> None:
        """Add `taint` to the node, replacing any taint with the same key and effect."""
        node = self.store.require_node(name)
        kept = tuple(t for t in node.taints if (t.key, t.effect) != (taint.key, taint.effect))
        self.store.put_node(replace(node, taints=(*kept, taint)))

    def untaint(self, name: str, key: str, effect: str | None = None) -> None:
        """Remove the node's taints with `key` (and `effect`, when given)."""
        node = self.store.require_node(name)
        kept = tuple(t for t in node.taints if t.key != key or (effect is not None and t.effect != effect))
        self.store.put_node(replace(node, taints=kept))

    # ------------------------------------------------------------------ pods

    def add_pod(self, pod: Pod) -> Pod:
        """Create a pod (uid and creationTimestamp stamped when unset); returns it as stored."""
        return self.store.add_pod(pod)

    def add_pods(self, pods: Iterable[Pod]) -> list[Pod]:
        """`add_pod` for each pod; returns them as stored."""
        return [self.add_pod(p) for p in pods]

    def replace_pod(self, pod: Pod) -> None:
        """Overwrite an existing pod with `pod` (same key); may move it between nodes."""
        self.store.require_pod(pod.key)
        self.store.put_pod(pod)

    def annotate_pod(self, pod: Pod | str, annotations: Mapping[str, str | None]) -> bool:
        """Set the pod's annotations, removing those given None (the port's merge patch); False
        when the pod does not exist.
        """
        self.store.enter("annotate_pod", pod_key(pod))
        current = self.store.pods.get(pod_key(pod))
        if current is None:
            return False
        changed = {k: v for k, v in current.annotations.items() if k not in annotations}
        changed.update({k: v for k, v in annotations.items() if v is not None})
        self.store.put_pod(replace(current, annotations=changed))
        return True

    def remove_pod(self, pod: Pod | str) -> bool:
        """Delete a pod now (as its owner or a user would); False when it did not exist."""
        current = self.store.pods.get(pod_key(pod))
        if current is None:
            return False
        self.store.delete_pod(current, POD_DELETED, "deleted")
        return True

    def bind(self, pod: Pod | str, node: str, *, running: bool = True) -> Pod:
        """Bind the pod to `node`, as kube-scheduler would, and (by default) start it Running, as
        the kubelet would. Clears Unschedulable and any nomination. Returns the stored pod.
        """
        current = self.store.require_pod(pod_key(pod))
        self.store.require_node(node)
        bound = replace(
            current,
            node_name=node,
            nominated_node_name="",
            unschedulable=False,
            phase="Running" if running else current.phase,
        )
        self.store.put_pod(bound)
        self.store.log(POD_BOUND, bound.key, node=node)
        self.cluster_events.scheduler_event(
            bound, NORMAL, "Scheduled", f"Successfully assigned {bound.key} to {node}", "Binding"
        )
        return bound

    def mark_unschedulable(self, pod: Pod | str) -> Pod:
        """Set PodScheduled=False reason Unschedulable on an unbound pod, as kube-scheduler does
        when nothing fits. Raises ValueError for a bound pod.
        """
        current = self.store.require_pod(pod_key(pod))
        if current.node_name:
            raise ValueError(f"pod {current.key} is bound to {current.node_name}; only unbound pods are unschedulable")
        marked = replace(current, unschedulable=True)
        self.store.put_pod(marked)
        note = f"0/{len(self.store.nodes)} nodes are available: no node fits the pod."
        self.cluster_events.scheduler_event(marked, WARNING, "FailedScheduling", note, "Scheduling")
        return marked

    def set_pod_phase(self, pod: Pod | str, phase: str) -> Pod:
        """Set the pod's phase (Pending, Running, Succeeded, Failed), as its kubelet would."""
        updated = replace(self.store.require_pod(pod_key(pod)), phase=phase)
        self.store.put_pod(updated)
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
