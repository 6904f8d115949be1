"""An in-memory Kubernetes cluster: the stand-in for a kube-apiserver in tests and `simulate`.

Role: implement `nodewright.ports.Cluster` exactly (the methods the controllers call, with the
same error contract as the real adapter) over plain dicts of the frozen model objects, plus the
setup and observation methods tests and the simulator need.

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

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from nodewright.model.event import (
    CREATE,
    NORMAL,
    WARNING,
    Event,
    EventCorrelator,
    EventWrite,
    ObjectRef,
    StoredEvent,
)
from nodewright.model.node import READY, Node, NodeCondition
from nodewright.model.pod import Pod
from nodewright.model.requirements import label_matches
from nodewright.model.snapshot import ClusterSnapshot, needs_capacity, reschedulable
from nodewright.model.taints import Taint, tolerates_all
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget, covering
from nodewright.ports import ApiUsage, Eviction
from nodewright.sim.clock import VirtualClock

if TYPE_CHECKING:
    from nodewright.ports import Clock, Cluster

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
_IGNORES_BUDGETS = frozenset({"Pending", "Succeeded", "Failed"})
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
class _Failure:
    times: int
    error: BaseException


class InMemoryCluster:
    """A `nodewright.ports.Cluster` held in memory; see the module docstring for its behaviour.

    Pods are addressed by `Pod` or by key (`namespace/name`), nodes by name. Setup methods raise
    KeyError for a missing object and ValueError for a duplicate, since a test that does that
    is wrong; the port methods keep the port's contract instead (missing is a no-op or "gone").
    """

    def __init__(self, clock: Clock | None = None, *, recreate_owned_pods: bool = False) -> None:
        self.clock: Clock = clock if clock is not None else VirtualClock()
        self.recreate_owned_pods = recreate_owned_pods
        self.calls: list[Call] = []
        self.changes: list[Change] = []
        self._failures: dict[str, _Failure] = {}
        self._nodes: dict[str, Node] = {}
        self._pods: dict[str, Pod] = {}
        self._pods_by_node: dict[str, dict[str, Pod]] = {}
        self._pods_by_namespace: dict[str, dict[str, Pod]] = {}
        self._daemonsets: dict[str, DaemonSet] = {}
        self._pdbs: dict[str, PodDisruptionBudget] = {}
        self._pdbs_by_namespace: dict[str, dict[str, PodDisruptionBudget]] = {}
        # [healthy, expected] per PDB key, kept current on every pod write so an eviction costs
        # O(budgets in the namespace), not O(pods).
        self._budget_counts: dict[str, list[int]] = {}
        self._versions: dict[tuple[str, str], int] = {}
        self._revision = 0
        self.listeners: list[Listener] = []
        # Bumped when the pods needing capacity may have changed (the port's `version`).
        self._pending_version = 0
        self._usage_from = 0
        self._uids = itertools.count(1)
        self._suffixes = itertools.count(1)
        # Sorted lists handed out by snapshot(), rebuilt only after a write to that kind.
        self._node_list: tuple[Node, ...] | None = None
        self._pod_list: tuple[Pod, ...] | None = None
        self._daemonset_list: tuple[DaemonSet, ...] | None = None
        self._pdb_list: tuple[PodDisruptionBudget, ...] | None = None
        # Events by namespace/name; Nodewright's go through the real adapter's correlator.
        self._events: dict[str, StoredEvent] = {}
        self.event_correlator = EventCorrelator()
        # kube-scheduler's events fold into series too (it uses client-go's broadcaster), unlimited.
        self._scheduler_events = EventCorrelator(object_burst=1 << 30, invocation_budget=1 << 30)
        self._events_swept = self.clock.now()
        # Occurrences and Event objects ever stored, by (reporting controller, reason): the TTL
        # deletes Events, not these.
        self._event_occurrences: dict[tuple[str, str], int] = {}
        self._event_objects: dict[tuple[str, str], int] = {}

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

    def record(self, event: Event, now: float) -> None:
        """Store what the adapter would write for this occurrence (see `events`); a pod's
        reference gets the stored pod's uid, as the adapter's does.
        """
        ref = event.regarding
        known = self._pods.get(f"{ref.namespace}/{ref.name}") if ref.kind == "Pod" and not ref.uid else None
        if known is not None and known.uid:
            event = replace(event, regarding=replace(ref, uid=known.uid))
        write = self._store_event(self.event_correlator, event, now, "nodewright", "nodewright")
        if write is not None:  # a request the adapter would have sent (never fails here: best effort)
            self.calls.append(Call("record", f"{write.namespace}/{write.name}"))

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

    def _bound(self, node: str) -> list[Pod]:
        bound = self._pods_by_node.get(node, {})
        return [bound[k] for k in sorted(bound)]

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

    def add_pod(self, pod: Pod) -> Pod:
        """Create a pod (uid and creationTimestamp stamped when unset); returns it as stored."""
        if pod.key in self._pods:
            raise ValueError(f"pod {pod.key} already exists")
        if not pod.uid or not pod.created_at:
            pod = replace(pod, uid=pod.uid or f"uid-{next(self._uids)}", created_at=pod.created_at or self.clock.now())
        self._put_pod(pod)
        self._log(POD_CREATED, pod.key, node=pod.node_name)
        return pod

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

    def events(self, regarding: ObjectRef | None = None) -> list[StoredEvent]:
        """The stored Events (about `regarding`'s kind, namespace and name when given), oldest first."""
        found = [
            e
            for e in self._events.values()
            if regarding is None
            or (e.event.regarding.kind, e.event.regarding.namespace, e.event.regarding.name)
            == (regarding.kind, regarding.namespace, regarding.name)
        ]
        return sorted(found, key=lambda e: (e.first, e.name))

    def create_event(self, stored: StoredEvent) -> bool:
        """Store an Event an API client created; False (nothing changes) when the name is taken."""
        key = f"{stored.namespace}/{stored.name}"
        if key in self._events:
            return False
        now = self.clock.now()
        if now - self._events_swept >= EVENT_SWEEP:  # a long simulation's Events stay bounded
            self._events_swept = now
            self.expire_events(now - EVENT_TTL)
        self._events[key] = stored
        by = (stored.reporting_controller, stored.event.reason)
        self._event_objects[by] = self._event_objects.get(by, 0) + 1
        self._event_occurrences[by] = self._event_occurrences.get(by, 0) + stored.count
        self._notify("event", ADDED, stored)
        return True

    def patch_event_series(self, namespace: str, name: str, count: int, last: float) -> StoredEvent | None:
        """Move a stored Event's series to `count` occurrences, the last at `last`; None when missing."""
        current = self._events.get(f"{namespace}/{name}")
        if current is None:
            return None
        patched = replace(current, count=count, last=last)
        by = (current.reporting_controller, current.event.reason)
        self._event_occurrences[by] = self._event_occurrences.get(by, 0) + max(0, count - current.count)
        self._events[f"{namespace}/{name}"] = patched
        self._notify("event", MODIFIED, patched)
        return patched

    def event_summary(self) -> dict[str, dict[str, dict[str, int]]]:
        """Every Event stored so far (expired ones too), by reporting controller and reason: Event
        objects created (`events`) and the occurrences their series counted (`occurrences`).
        """
        out: dict[str, dict[str, dict[str, int]]] = {}
        for (controller, reason), objects in sorted(self._event_objects.items()):
            counted = self._event_occurrences.get((controller, reason), objects)
            out.setdefault(controller, {})[reason] = {"events": objects, "occurrences": counted}
        return out

    def expire_events(self, last_before: float) -> int:
        """Delete the Events last seen before `last_before`, as the API server's event TTL (one
        hour by default) does; the number deleted.
        """
        gone = [key for key, e in self._events.items() if max(e.first, e.last) < last_before]
        for key in gone:
            self._notify("event", DELETED, self._events.pop(key))
        return len(gone)

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

    # ------------------------------------------------------------------ daemonsets and PDBs

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

    # ------------------------------------------------------------------ internals

    def _enter(self, method: str, target: str = "") -> None:
        self.calls.append(Call(method, target))
        failure = self._failures.get(method)
        if failure is not None:
            failure.times -= 1
            if failure.times <= 0:
                del self._failures[method]
            raise failure.error

    def _log(
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

    def _store_event(
        self, correlator: EventCorrelator, event: Event, now: float, controller: str, instance: str
    ) -> EventWrite | None:
        write = correlator.observe(event, now)
        if write is None:
            return None
        if write.verb == CREATE:
            self.create_event(replace(StoredEvent.written(write, instance), reporting_controller=controller))
        elif self.patch_event_series(write.namespace, write.name, write.count, write.last) is None:
            correlator.forget(event)  # expired, as the adapter does on a 404
        return write

    def _scheduler_event(self, pod: Pod, kind: str, reason: str, note: str, action: str) -> None:
        event = Event(ObjectRef.pod(pod.key, pod.uid), kind, reason, note, action)
        self._store_event(self._scheduler_events, event, self.clock.now(), "default-scheduler", "default-scheduler")

    def _bump(self, kind: str, key: str) -> None:
        self._revision += 1
        self._versions[(kind, key)] = self._revision

    def _notify(self, kind: str, event: str, obj: object) -> None:
        for listener in self.listeners:
            listener(kind, event, obj, self._revision)

    def _draining(self, node: str) -> bool:
        stored = self._nodes.get(node) if node else None
        return stored is not None and stored.draining

    def _require_node(self, name: str) -> Node:
        node = self._nodes.get(name)
        if node is None:
            raise KeyError(f"no node {name}")
        return node

    def _require_pod(self, key: str) -> Pod:
        pod = self._pods.get(key)
        if pod is None:
            raise KeyError(f"no pod {key}")
        return pod

    def _put_node(self, node: Node) -> bool:
        """Store `node`; False (and no new resourceVersion) when nothing changed."""
        old = self._nodes.get(node.name)
        if old == node:
            return False
        self._nodes[node.name] = node
        self._bump("node", node.name)
        self._node_list = None
        if old is None or old.draining != node.draining:
            self._pending_version += 1
        self._notify("node", ADDED if old is None else MODIFIED, node)
        return True

    def _put_pod(self, pod: Pod) -> None:
        key = pod.key
        old = self._pods.get(key)
        if old == pod:
            return
        if old is not None:
            self._unindex(old)
        self._pods[key] = pod
        self._pods_by_namespace.setdefault(pod.namespace, {})[key] = pod
        if pod.node_name:
            self._pods_by_node.setdefault(pod.node_name, {})[key] = pod
        self._count(pod, 1)
        self._bump("pod", key)
        self._pod_list = None
        self._pdb_list = None
        if (old is not None and needs_capacity(old, self._draining(old.node_name))) or needs_capacity(
            pod, self._draining(pod.node_name)
        ):
            self._pending_version += 1
        self._notify("pod", ADDED if old is None else MODIFIED, pod)

    def _unindex(self, pod: Pod) -> None:
        key = pod.key
        self._count(pod, -1)
        if pod.node_name:
            on_node = self._pods_by_node.get(pod.node_name)
            if on_node is not None:
                on_node.pop(key, None)
                if not on_node:
                    del self._pods_by_node[pod.node_name]
        in_namespace = self._pods_by_namespace.get(pod.namespace)
        if in_namespace is not None:
            in_namespace.pop(key, None)
            if not in_namespace:
                del self._pods_by_namespace[pod.namespace]

    def _delete_pod(self, pod: Pod, kind: str, why: str) -> None:
        self._unindex(pod)
        del self._pods[pod.key]
        self._versions.pop(("pod", pod.key), None)
        self._pod_list = None
        self._pdb_list = None
        if needs_capacity(pod, self._draining(pod.node_name)):
            self._pending_version += 1
        self._revision += 1
        self._notify("pod", DELETED, pod)
        self._log(kind, pod.key, node=pod.node_name, grace_seconds=pod.termination_grace_seconds, message=why)
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

    def _remove_node(self, name: str, why: str) -> None:
        node = self._nodes.get(name)
        if node is None:
            return
        on_node = self._bound(name)
        lost = tuple(p.key for p in on_node if reschedulable(p))
        self._log(NODE_DELETED, name, pods=lost, message=why)
        # The pods first, while their node is still known (whether it was draining matters for
        # `version`), then the node: the pod GC deletes them as the node goes.
        for pod in on_node:
            self._delete_pod(pod, POD_DELETED, f"node {name} was deleted")
        del self._nodes[name]
        self._versions.pop(("node", name), None)
        self._node_list = None
        self._pending_version += 1
        self._revision += 1
        self._notify("node", DELETED, node)

    def _refusal(self, pod: Pod) -> str:
        """Why the budgets covering `pod` refuse its eviction now, or ''."""
        budgets = covering(self._pdbs_by_namespace.get(pod.namespace, {}).values(), pod)
        if len(budgets) > 1:
            names = ", ".join(sorted(b.name for b in budgets))
            return f"{MULTIPLE_BUDGETS} ({names}) (500)"
        if budgets and self._allowed(budgets[0]) <= 0:
            return f"{BUDGET_REFUSES} The disruption budget {budgets[0].name} needs more healthy pods. (429)"
        return ""

    def _allowed(self, pdb: PodDisruptionBudget) -> int:
        healthy, expected = self._budget_counts[f"{pdb.namespace}/{pdb.name}"]
        return pdb.allowed(healthy, expected)

    def _count(self, pod: Pod, sign: int) -> None:
        """Add (sign 1) or take away (sign -1) `pod` from the counts of the budgets selecting it."""
        if pod.terminal:
            return
        for key, pdb in self._pdbs_by_namespace.get(pod.namespace, {}).items():
            if pdb.selector.matches(pod.labels):
                counts = self._budget_counts[key]
                counts[0] += sign * _healthy(pod)
                counts[1] += sign


def _with_condition(node: Node, kind: str, status: str, now: float, reason: str = "") -> Node:
    """`node` with condition `kind` at `status`, its transition time moved only by a change."""
    old = next((c for c in node.conditions if c.type == kind), None)
    if old is not None and old.status == status and (not reason or old.reason == reason):
        return node
    since = old.since if old is not None and old.status == status else now
    fresh = NodeCondition(kind, status, since, reason)
    return replace(node, conditions=(*(c for c in node.conditions if c.type != kind), fresh))


def _healthy(pod: Pod) -> int:
    """1 when the pod counts as healthy for a budget: Running, bound and not being deleted."""
    return int(pod.phase == "Running" and bool(pod.node_name) and not pod.deleting)


def _key(pod: Pod | str) -> str:
    return pod if isinstance(pod, str) else pod.key


if TYPE_CHECKING:
    # Static proof that the fakes satisfy the ports (checked by mypy --strict, never run).
    _cluster: Cluster = InMemoryCluster()
    _clock: Clock = VirtualClock()
