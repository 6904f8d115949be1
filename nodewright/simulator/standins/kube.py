"""The Kubernetes side of the simulated cluster: the API server, kube-scheduler, kubelets, controllers.

* `SimulatedCluster` is `nodewright.inmemory.cluster.InMemoryCluster` (with owned pods recreated, as
  the ReplicaSet and StatefulSet controllers do) plus two things the simulator needs: its
  `snapshot()` keeps the list of pending pods with the snapshot and hands out the same snapshot
  until something changes (the provisioner polls every second; most polls find the cluster as it
  was), and it reports every eviction and Node deletion to the world's audit *before* it happens
  (what was on the node, which budgets allowed what), which is where PDB and do-not-disrupt
  violations are counted. For the scenario's faults it asks `before_request(verb, call)` before
  each request the real adapter would send (list, evict, patch), which may raise the adapter's
  `KubeApiError` (a 429 on an eviction is "blocked", as the adapter maps it), and tells
  `after_effect(what)` after each write, where a crash may stop the caller.
* `KubeScheduler` binds pending pods to Ready, schedulable nodes with the engine's own
  predicates: `nodewright.engine.scheduling.solve` with no NodePools, only the existing nodes and
  their bound pods; what it places on a node is bound there, the rest is marked Unschedulable
  (which makes it provisionable).
* `registration` reads the labels and taints a node registers with from its instance's user data
  (AL2023 NodeConfig, AL2 bootstrap flags or Bottlerocket TOML), as its kubelet would.
* `Deployments` keeps each workload at its wanted replica count; a scale-down deletes the pods the
  ReplicaSet controller would (`replicaset.py`: pending first, then by `pod-deletion-cost`, then
  from the nodes that hold the most of the workload's pods).
"""

from __future__ import annotations

import base64
import itertools
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from email import message_from_string
from typing import Any

import yaml

from nodewright.adapters.kube.cluster import KubeApiError
from nodewright.engine.devices import lower
from nodewright.engine.scheduling import SolverCache, Strategy, solve
from nodewright.engine.scheduling.inputs import existing_nodes_input
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.inmemory.clusterdevices import ClusterDevices
from nodewright.inmemory.clusterstore import Listener
from nodewright.model.event import Event, ObjectRef, StoredEvent
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.taints import Taint
from nodewright.model.workloads import PodDisruptionBudget
from nodewright.ports import ApiUsage, Clock, Eviction
from nodewright.simulator.scenario.workload import Workload
from nodewright.simulator.standins import replicaset

_FLAG_LABELS = re.compile(r"--node-labels=\"?([^\"\s']*)")
_FLAG_TAINTS = re.compile(r"--register-with-taints=\"?([^\"\s']*)")


@dataclass(frozen=True, slots=True)
class _Snapshot(ClusterSnapshot):
    """A snapshot that carries its pending pods, computed once."""

    waiting: tuple[Pod, ...] = ()

    def pending(self) -> list[Pod]:
        """The pods that need capacity (computed when the snapshot was taken)."""
        return list(self.waiting)


class SimulatedCluster:
    """The in-memory API server, audited and with cached snapshots (see the module docstring).

    Holds an `InMemoryCluster` (`memory`) and is the `Cluster` port and the emulator's
    `ServedCluster` over it: the writes a function makes, directly or over HTTP through the
    emulator, go through the hooks below; the setup and observation the world does are handed to
    `memory` as they are.

    `before_evict(pod)` and `before_delete_node(name)` are called before an eviction or a Node
    deletion through the API; the world sets them.
    """

    def __init__(self, clock: Clock) -> None:
        self.memory = InMemoryCluster(clock, recreate_owned_pods=True)
        self._snapshot: _Snapshot | None = None
        self.before_evict: Callable[[Pod], None] = lambda pod: None
        self.after_evict: Callable[[Pod, Eviction], None] = lambda pod, result: None
        self.before_delete_node: Callable[[str], None] = lambda name: None
        self.before_request: Callable[[str, str], None] = lambda verb, call: None
        self.after_effect: Callable[[str], None] = lambda what: None

    # -- the Cluster port, cached and audited -------------------------------------------------

    def snapshot(self) -> ClusterSnapshot:
        """The API server's snapshot (a recorded call), the same object until something changes."""
        self.memory.store.enter("snapshot")
        return self.snapshot_unrecorded()

    def snapshot_unrecorded(self) -> ClusterSnapshot:
        """The API server's snapshot, the same object until something in it changes."""
        base = self.memory.snapshot_unrecorded()
        cached = self._snapshot
        if (
            cached is not None
            and cached.nodes is base.nodes
            and cached.pods is base.pods
            and cached.daemonsets is base.daemonsets
            and cached.pdbs is base.pdbs
            and cached.devices is base.devices
        ):
            return cached
        self._snapshot = _Snapshot(
            nodes=base.nodes,
            pods=base.pods,
            daemonsets=base.daemonsets,
            pdbs=base.pdbs,
            nodeclaims=base.nodeclaims,
            devices=base.devices,
            waiting=tuple(base.pending()),
        )
        return self._snapshot

    def pending(self) -> list[Pod]:
        """The pods that need capacity now (from the cached snapshot)."""
        self.memory.store.enter("pending")
        return self.snapshot_unrecorded().pending()

    def evict(self, pod: Pod) -> Eviction:
        """The Eviction API, audited."""
        try:
            self.before_request("evict", f"evict pod {pod.key}")
        except KubeApiError as error:
            if error.status == 429:
                return Eviction(pod.key, "blocked", f"{error.message} (429)")
            raise
        current = self.memory.get_pod(pod.key)
        if current is not None:
            self.before_evict(current)
        result = self.memory.evict(pod)
        if current is not None:
            self.after_evict(current, result)
        if result.outcome == "evicted":
            self.after_effect("evict")
        return result

    def delete_node(self, name: str) -> None:
        """Delete the Node (its pods go with it), audited."""
        existed = self.memory.get_node(name) is not None
        if existed:
            self.before_delete_node(name)
        self.memory.delete_node(name)
        if existed:
            self.after_effect("delete node")

    def cordon(self, name: str, taint: Taint | None = None) -> None:
        """Cordon (a node patch)."""
        self.before_request("patch", f"cordon node {name}")
        self.memory.cordon(name, taint)
        self.after_effect("cordon")

    def uncordon(self, name: str, taint_key: str | None = None) -> None:
        """Uncordon (a node patch)."""
        self.before_request("patch", f"uncordon node {name}")
        self.memory.uncordon(name, taint_key)
        self.after_effect("uncordon")

    def pods_on(self, node: str) -> list[Pod]:
        """The pods on a node (a LIST with a field selector, for the adapter)."""
        self.before_request("list", "list pods")
        return self.memory.pods_on(node)

    # -- the Cluster port, as the in-memory cluster answers it --------------------------------

    def follow(self, seconds: float) -> None:
        """`InMemoryCluster.follow`."""
        self.memory.follow(seconds)

    def version(self) -> int:
        """`InMemoryCluster.version`."""
        return self.memory.version()

    def usage(self) -> list[ApiUsage]:
        """`InMemoryCluster.usage`."""
        return self.memory.usage()

    def get_node(self, name: str) -> Node | None:
        """`InMemoryCluster.get_node`."""
        return self.memory.get_node(name)

    def node_by_instance(self, instance_id: str) -> Node | None:
        """`InMemoryCluster.node_by_instance`."""
        return self.memory.node_by_instance(instance_id)

    def label_node(self, name: str, labels: Mapping[str, str | None]) -> None:
        """`InMemoryCluster.label_node`."""
        self.memory.label_node(name, labels)

    def annotate_pod(self, pod: Pod | str, annotations: Mapping[str, str | None]) -> bool:
        """`InMemoryCluster.annotate_pod`, after the faults' say on a pod patch."""
        self.before_request("patch", f"annotate pod {pod if isinstance(pod, str) else pod.key}")
        return self.memory.annotate_pod(pod, annotations)

    def record(self, event: Event, now: float) -> None:
        """`InMemoryCluster.record`."""
        self.memory.record(event, now)

    # -- what the emulator also uses (`ServedCluster`), as the in-memory cluster does it ------

    @property
    def clock(self) -> Clock:
        """The clock every timestamp comes from."""
        return self.memory.clock

    @property
    def devices(self) -> ClusterDevices:
        """`InMemoryCluster.devices`: the DRA objects held."""
        return self.memory.devices

    @property
    def listeners(self) -> list[Listener]:
        """`InMemoryCluster.listeners`: append to follow every change."""
        return self.memory.listeners

    def events(self, regarding: ObjectRef | None = None) -> list[StoredEvent]:
        """`InMemoryCluster.events`."""
        return self.memory.events(regarding)

    def budget_allowed(self, pdb: PodDisruptionBudget) -> int:
        """`InMemoryCluster.budget_allowed`."""
        return self.memory.budget_allowed(pdb)

    def bind(self, pod: Pod | str, node: str, *, running: bool = True) -> Pod:
        """`InMemoryCluster.bind` (kube-scheduler's binding)."""
        return self.memory.bind(pod, node, running=running)

    def remove_pod(self, pod: Pod | str) -> bool:
        """`InMemoryCluster.remove_pod`."""
        return self.memory.remove_pod(pod)

    def taint(self, name: str, taint: Taint) -> None:
        """`InMemoryCluster.taint`."""
        self.memory.taint(name, taint)

    def untaint(self, name: str, key: str, effect: str | None = None) -> None:
        """`InMemoryCluster.untaint`."""
        self.memory.untaint(name, key, effect)

    def replace_node(self, node: Node) -> None:
        """`InMemoryCluster.replace_node`."""
        self.memory.replace_node(node)

    def set_node_condition(self, name: str, kind: str, status: str, reason: str = "") -> None:
        """`InMemoryCluster.set_node_condition`."""
        self.memory.set_node_condition(name, kind, status, reason)

    def create_event(self, stored: StoredEvent) -> bool:
        """`InMemoryCluster.create_event`."""
        return self.memory.create_event(stored)

    def patch_event_series(self, namespace: str, name: str, count: int, last: float) -> StoredEvent | None:
        """`InMemoryCluster.patch_event_series`."""
        return self.memory.patch_event_series(namespace, name, count, last)

    # -- the world's own writes -----------------------------------------------------------------

    def remove_pods(self, pods: Sequence[Pod]) -> None:
        """Delete pods for good (a scale-down): their controller does not recreate them."""
        memory = self.memory
        recreate, memory.recreate_owned_pods = memory.recreate_owned_pods, False
        try:
            for pod in pods:
                memory.remove_pod(pod)
        finally:
            memory.recreate_owned_pods = recreate

    def forget_calls(self) -> None:
        """Drop the recorded port calls (the simulator does not read them; they only grow)."""
        self.memory.calls.clear()


class KubeScheduler:
    """Binds pending pods where the engine's predicates say they fit (see the module docstring)."""

    def __init__(self, cluster: SimulatedCluster) -> None:
        self.cluster = cluster
        self.runs = 0
        self.solver_cache = SolverCache()  # the same nodes and bound pods run after run
        # The types whose DRA devices nodes publish (a real scheduler reads ResourceSlices; Node
        # labels do not name a type's GPUs): set by the world when its scenario has DRA objects.
        self.device_types: Sequence[InstanceType] = ()

    def schedule(self, keys: Sequence[str]) -> int:
        """Try to place the unbound pods `keys`; returns how many were bound."""
        cluster = self.cluster
        pending = []
        for key in keys:
            pod = cluster.memory.get_pod(key)
            if pod is not None and not pod.node_name and not pod.daemon and not pod.terminal and not pod.deleting:
                pending.append(pod)
        if not pending:
            return 0
        self.runs += 1
        # DRA claims as the nodes' published devices allow them (kube-scheduler's allocator).
        lowered = lower(cluster.snapshot(), pending, self.device_types)
        snapshot, lowered_pending = lowered.snapshot, list(lowered.pending)
        # Every node counts for topology spread, as kube-scheduler counts it (nodeTaintsPolicy
        # Ignore: cordoned, deleting and not-ready nodes' pods stay in their zone's count); only
        # Ready, schedulable ones take pods (the solver places nothing on a cordoned node). Leaving
        # cordoned nodes out entirely made a zone that a drain was emptying look emptier than it
        # is, so this scheduler refused the zone the provisioner had launched for.
        nodes = tuple(n if n.ready else replace(n, unschedulable=True) for n in snapshot.nodes)
        placed: set[str] = set()
        if any(n.ready and not n.unschedulable and not n.deleting for n in nodes):
            result = solve(
                existing_nodes_input(
                    lowered_pending, nodes, (p for p in snapshot.pods if p.node_name), now=cluster.clock.now()
                ),
                Strategy(),
                cache=self.solver_cache,
            )
            for node, pods in sorted(result.existing.items()):
                for key in pods:
                    cluster.bind(key, node)
                    placed.add(key)
        for pod in pending:
            if pod.key not in placed and not pod.unschedulable:
                cluster.memory.mark_unschedulable(pod)
        return len(placed)


# --- kubelet --------------------------------------------------------------------------------------


def registration(user_data_b64: str) -> tuple[dict[str, str], tuple[Taint, ...]]:
    """The labels and taints a kubelet registers with, read from the instance's user data."""
    try:
        text = base64.b64decode(user_data_b64).decode()
    except (ValueError, UnicodeDecodeError):
        return {}, ()
    if text.lstrip().startswith("MIME-Version") or "Content-Type: multipart" in text[:500]:
        labels: dict[str, str] = {}
        taints: list[Taint] = []
        for part in message_from_string(text).walk():
            if part.is_multipart():
                continue
            payload = part.get_payload(decode=True)
            body = payload.decode() if isinstance(payload, bytes) else str(part.get_payload())
            if part.get_content_type() == "application/node.eks.aws":
                found_labels, found_taints = _nodeconfig(body)
            else:
                found_labels, found_taints = _flags(body)
            labels.update(found_labels)
            taints.extend(t for t in found_taints if t not in taints)
        return labels, tuple(taints)
    if "[settings" in text:
        return _bottlerocket(text)
    return _flags(text)


def _nodeconfig(text: str) -> tuple[dict[str, str], tuple[Taint, ...]]:
    try:
        document = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return {}, ()
    kubelet = ((document.get("spec") or {}).get("kubelet") or {}) if isinstance(document, Mapping) else {}
    labels: dict[str, str] = {}
    for flag in kubelet.get("flags") or ():
        labels.update(_pairs(_FLAG_LABELS, str(flag)))
    taints = tuple(Taint.parse(t) for t in (kubelet.get("config") or {}).get("registerWithTaints") or ())
    return labels, taints


def _flags(text: str) -> tuple[dict[str, str], tuple[Taint, ...]]:
    labels = _pairs(_FLAG_LABELS, text)
    taints: list[Taint] = []
    for match in _FLAG_TAINTS.finditer(text):
        for item in filter(None, match[1].split(",")):
            key_value, _, effect = item.rpartition(":")
            key, _, value = key_value.partition("=")
            taints.append(Taint(key, effect, value))
    return labels, tuple(taints)


def _pairs(pattern: re.Pattern[str], text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for match in pattern.finditer(text):
        for pair in filter(None, match[1].split(",")):
            key, _, value = pair.partition("=")
            out[key] = value
    return out


def _bottlerocket(text: str) -> tuple[dict[str, str], tuple[Taint, ...]]:
    try:
        kubernetes: Any = tomllib.loads(text).get("settings", {}).get("kubernetes", {})
    except tomllib.TOMLDecodeError:
        return {}, ()
    labels = {str(k): str(v) for k, v in (kubernetes.get("node-labels") or {}).items()}
    taints = []
    for key, values in (kubernetes.get("node-taints") or {}).items():
        for item in values:
            value, _, effect = str(item).rpartition(":")
            taints.append(Taint(str(key), effect, value))
    return labels, tuple(taints)


# --- workload controllers -------------------------------------------------------------------------


class Deployments:
    """Keeps each workload at its wanted number of pods (see the module docstring)."""

    def __init__(self, cluster: SimulatedCluster, workloads: Sequence[Workload]) -> None:
        self.cluster = cluster
        self.workloads = {w.key: w for w in workloads}
        self._names = itertools.count(1)

    def owned(self, workload: Workload) -> list[Pod]:
        """The workload's live pods."""
        owner = workload.template.owner_name
        return [
            p
            for p in self.cluster.snapshot().pods
            if p.namespace == workload.namespace and p.owner_name == owner and not p.daemon and not p.terminal
        ]

    def scale(self, workload: Workload, replicas: int, at: float | None = None) -> int:
        """Create or delete pods so the workload has `replicas`; returns the change. `at`: when
        the owner created the pods (their creationTimestamp; default now), which is earlier than
        now when a handler's CPU time carried the clock past the scale event (`standins.cpuclock`).
        """
        pods = self.owned(workload)
        change = replicas - len(pods)
        if change > 0:
            if workload.kind == "StatefulSet":
                taken = {p.name for p in pods}
                names = [n for n in (f"{workload.name}-{i}" for i in range(replicas)) if n not in taken][:change]
            else:
                names = [f"{workload.name}-r{next(self._names)}" for _ in range(change)]
            for name in names:
                self.cluster.memory.add_pod(
                    replace(workload.template, name=name)
                    if at is None
                    else replace(workload.template, name=name, created_at=at)
                )
        elif change < 0:
            if workload.kind == "StatefulSet":
                victims = sorted(pods, key=lambda p: _ordinal(p.name), reverse=True)[:-change]
            else:
                victims = replicaset.victims(pods, -change, self.cluster.clock.now())
            self.cluster.remove_pods(victims)
        return change


def _ordinal(name: str) -> int:
    tail = name.rpartition("-")[2]
    return int(tail) if tail.isdigit() else -1


def node_for(
    name: str,
    *,
    labels: Mapping[str, str],
    taints: Sequence[Taint],
    startup_taints: Sequence[Taint],
    capacity: Any,
    allocatable: Any,
    provider_id: str,
) -> Node:
    """A Ready Node as its kubelet registers it once its startup taints are gone."""
    startup = {(t.key, t.effect) for t in startup_taints}
    return Node(
        name=name,
        labels=dict(labels),
        taints=tuple(t for t in taints if (t.key, t.effect) not in startup),
        capacity=capacity,
        allocatable=allocatable,
        provider_id=provider_id,
        ready=True,
    )
