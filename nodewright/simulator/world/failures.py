"""Broken nodes (the scenario's `node_failures`) and what became of them: node repair's figures.

At an entry's `at`, `count` Ready nodes Nodewright launched (drawn from the seed; of one NodePool
or zone when the entry says) break as it says, and stay broken until they go:

* `condition: Ready`, `status: Unknown` (the kubelet stopped posting; what the node lifecycle
  controller writes) or `False` (the kubelet reports NotReady): the node is NotReady. As in a
  cluster, the node lifecycle controller taints it NoExecute (`node.kubernetes.io/unreachable`
  or `node.kubernetes.io/not-ready`), and each pod that does not tolerate the taint is deleted
  after its toleration's `tolerationSeconds`, 300 s when it has none (what the
  DefaultTolerationSeconds admission plugin gives every pod); its owner recreates it pending.
  A pod tolerating the taint without a limit stays.
* Another condition (the EKS node monitoring agent's `KernelReady`, `NetworkingReady`, ...) set
  False: Ready stays True and the pods stay where they are.
* `status_check: system | instance | ebs`: the instance's EC2 status check is impaired, as
  DescribeInstanceStatus reports it (`SimulatedEc2.describe_instance_status` asks `impaired`, through the kubelet);
  Ready stays True.

Measured per broken node (`RepairRecord`): when it broke, the reschedulable pods it held, when it
was removed and by whom, and when it stopped holding pods with every pod displaced from it
(evicted or deleted, then recreated by its owner) bound again: its recovery, the summary's
`repair` block. The change feed (`feed.py`) reports the displaced pods and their binding.
"""

from __future__ import annotations

import random
from functools import partial

from nodewright.controllers.observe import RecordingObserver
from nodewright.model.node import READY
from nodewright.model.pod import Pod
from nodewright.model.snapshot import reschedulable
from nodewright.model.taints import Taint
from nodewright.ports import Clock
from nodewright.simulator.report.metrics import Recorder, RepairRecord
from nodewright.simulator.scenario.model import NodeFailure
from nodewright.simulator.standins.kube import SimulatedCluster
from nodewright.simulator.standins.lambdas import EventLoop
from nodewright.simulator.world.feed import ChangeFeed, NodeGone, PodBound, PodCreated, PodGone

# Kubernetes' taints for a NotReady node, by its Ready status, and the DefaultTolerationSeconds.
NODE_LIFECYCLE_TAINTS = {"Unknown": "node.kubernetes.io/unreachable", "False": "node.kubernetes.io/not-ready"}
DEFAULT_TOLERATION_SECONDS = 300.0


class NodeFailures:
    """The scenario's broken nodes and their records (module docstring).

    `rng` is the world's seeded stream of draws, shared with the spot interruptions; `consolidator`
    is the consolidator's observer, whose `repair` decisions tell who removed a broken node.
    """

    def __init__(
        self,
        *,
        cluster: SimulatedCluster,
        recorder: Recorder,
        clock: Clock,
        loop: EventLoop,
        rng: random.Random,
        consolidator: RecordingObserver,
        feed: ChangeFeed,
    ) -> None:
        self._cluster = cluster
        self._recorder = recorder
        self._clock = clock
        self._loop = loop
        self._rng = rng
        self._consolidator = consolidator
        self._impaired: dict[str, tuple[tuple[str, ...], float]] = {}  # instance -> failed status checks, since
        self._waiting_on: dict[str, str] = {}  # a pod displaced from a broken node -> that node
        feed.subscribe(PodCreated, self._created)
        feed.subscribe(PodBound, self._bound)
        feed.subscribe(PodGone, self._pod_gone)
        feed.subscribe(NodeGone, self._node_gone)

    def strike(self, spec: NodeFailure, index: int) -> None:
        """The scenario's `node_failures[index]` strikes now: draw its nodes and break them."""
        candidates = sorted(
            (
                n
                for n in self._cluster.memory.nodes()
                if n.ready
                and n.instance_id
                and n.launched_by_nodewright
                and not n.deleting
                and n.name not in self._recorder.repairs
                and (spec.nodepool is None or n.nodepool == spec.nodepool)
                and (spec.zone is None or n.labels.get("topology.kubernetes.io/zone") == spec.zone)
            ),
            key=lambda n: n.name,
        )
        if len(candidates) < spec.count:
            self._recorder.warnings.append(
                f"node_failures[{index}]: {spec.count} node(s) asked for, {len(candidates)} Ready"
            )
        now = self._clock.now()
        for node in self._rng.sample(candidates, min(spec.count, len(candidates))):
            pods = [p for p in self._cluster.pods_on(node.name) if reschedulable(p)]
            self._recorder.repairs[node.name] = RepairRecord(
                node=node.name,
                instance_id=node.instance_id,
                cause=spec.cause,
                broke_at=now,
                pods=len(pods),
            )
            if spec.status_check:
                self._impaired[node.instance_id] = ((spec.status_check,), now)
                continue
            self._cluster.set_node_condition(node.name, spec.condition, spec.status, "SimulatedFailure")
            if spec.condition == READY:
                self._lifecycle_taint(node.name, spec.status, pods)

    def impaired(self, instance_id: str) -> tuple[tuple[str, ...], float] | None:
        """The status checks the scenario failed on this instance, and since when."""
        return self._impaired.get(instance_id)

    def _lifecycle_taint(self, node: str, status: str, pods: list[Pod]) -> None:
        """The node lifecycle controller: taint the NotReady node NoExecute, and delete each pod
        when its toleration of the taint runs out.
        """
        taint = Taint(NODE_LIFECYCLE_TAINTS[status], "NoExecute")
        self._cluster.taint(node, taint)
        now = self._clock.now()
        for pod in pods:
            matching = [t for t in pod.tolerations if t.tolerates(taint)]
            if matching and all(t.toleration_seconds is None for t in matching):
                continue  # tolerates it for ever: stays on the broken node
            seconds = min(
                (float(t.toleration_seconds) for t in matching if t.toleration_seconds is not None),
                default=DEFAULT_TOLERATION_SECONDS,
            )
            self._loop.at(now + max(0.0, seconds), partial(self._taint_evict, node, pod.key))

    def _taint_evict(self, node: str, key: str) -> None:
        pod = self._cluster.memory.get_pod(key)
        if pod is not None and pod.node_name == node and not pod.deleting:
            self._cluster.remove_pod(pod)

    # -- what became of the broken nodes (from the change feed) ------------------------------------

    def _created(self, change: PodCreated) -> None:
        """A pod created to replace one deleted or evicted from a broken node waits for binding."""
        node = change.replaces_from
        record = self._recorder.repairs.get(node) if node is not None else None
        if node is not None and record is not None:
            record.waiting.add(change.pod)
            self._waiting_on[change.pod] = node

    def _bound(self, change: PodBound) -> None:
        """If the pod replaced one from a broken node, that node may have recovered."""
        node = self._waiting_on.pop(change.pod, None)
        if node is not None:
            self._recorder.repairs[node].waiting.discard(change.pod)
            self._check_recovered(node, change.at)

    def _pod_gone(self, change: PodGone) -> None:
        """A pod left its node."""
        if change.node and change.node in self._recorder.repairs:
            self._check_recovered(change.node, change.at)

    def _check_recovered(self, node: str, at: float) -> None:
        record = self._recorder.repairs[node]
        if record.recovered_at is not None or record.waiting:
            return
        held = self._cluster.get_node(node) is not None and any(reschedulable(p) for p in self._cluster.pods_on(node))
        if not held:
            record.recovered_at = at

    def _node_gone(self, change: NodeGone) -> None:
        """The broken node went (its instance terminated, by whom the instance record says)."""
        node, at = change.node, change.at
        record = self._recorder.repairs.get(node)
        if record is None or record.removed_at is not None:
            return
        record.removed_at = at
        repaired = any(d.get("decision") == "repair" and d.get("node") == node for d in self._consolidator.decisions)
        instance = self._recorder.instances.get(record.instance_id)
        by = instance.terminated_by if instance is not None and instance.terminated_by else "deleted"
        record.removed_by = "repair" if repaired else by
        self._check_recovered(node, at)
