"""After every step of the event loop: what changed in the cluster and what the functions decided.

`_after_step` reads the cluster's change log (pods created, bound, gone; nodes deleted, cordoned;
evictions a budget refused) into the recorder, including the pods lost with a node; runs the
kube-scheduler over pending pods when something changed; reads the observers' decisions (launches,
capacity errors, consolidation replacements); and lets the SQS event source mapping deliver due
messages, until nothing more happens at this instant. Also the workloads' scale events and the
time-series samples.
"""

from __future__ import annotations

import math
import time

from nodewright.inmemory import cluster as kinds
from nodewright.model import labels as wk
from nodewright.simulator.report.metrics import (
    Sample,
)
from nodewright.simulator.world.audits import Audits
from nodewright.simulator.world.failures import NodeFailures
from nodewright.simulator.world.queue import QueueSource
from nodewright.simulator.world.spot import SpotInterruptions

_POD_GONE = (kinds.POD_DELETED, kinds.POD_EVICTED)


class Changes(QueueSource, Audits, SpotInterruptions, NodeFailures):
    """What changed after each step (module docstring)."""

    def _after_step(self) -> None:
        for _ in range(100):
            self._read_changes()
            self._read_decisions()
            if self._dirty and self._unbound:
                self._dirty = False
                started = time.perf_counter()
                self.scheduler.schedule(sorted(self._unbound))
                self.recorder.wall["kube-scheduler"] += time.perf_counter() - started
                self._read_changes()
            self._dirty = False
            if not self._poll_queue():
                return

    def _read_changes(self) -> None:
        changes = self.cluster.changes
        if self._seen == len(changes):
            return
        recorder = self.recorder
        gone: tuple[float, str] | None = None  # the pod deleted just before, for its replacement
        for change in changes[self._seen :]:
            kind = change.kind
            if kind == kinds.POD_CREATED:
                if not change.node:
                    self._unbound.add(change.name)
                    recorder.pod_created(change.name, change.at)
                    self._dirty = True
                    if gone is not None and gone[0] == change.at:
                        # The controller's replacement of a pod evicted or deleted from a node.
                        recorder.displaced[change.name] = "interruption" if gone[1] in self._watched else "other"
                        self._displaced(gone[1], change.name)
                gone = None
                continue
            gone = None
            if kind == kinds.POD_BOUND:
                self._unbound.discard(change.name)
                recorder.pod_bound(change.name, change.at)
                self._rebound(change.name, change.at)
            elif kind in _POD_GONE:
                self._unbound.discard(change.name)
                recorder.pod_gone(change.name)
                self._dirty = True
                if change.node:
                    gone = (change.at, change.node)
                if change.node in self._watched:
                    self._check_drained(change.node, change.at)
                if change.node:
                    self._pod_left(change.node, change.at)
            elif kind == kinds.NODE_DELETED:
                interrupted = self._watched.get(change.name)
                for pod in change.pods:
                    if interrupted is not None and self._refused.get(pod, -math.inf) >= interrupted.first_signal:
                        # A budget refused every eviction until the instance went: counted apart.
                        recorder.held_by_pdb.append((change.at, pod, change.name))
                    else:
                        recorder.lost.append((change.at, pod, change.name))
                self._dirty = True
                self._node_gone(change.name, change.at)
                self._broken_node_gone(change.name, change.at)
            elif kind == kinds.NODE_CORDONED:
                self._cordoned(change.name, change.at)
            elif kind == kinds.EVICTION_BLOCKED:
                self._refused[change.name] = change.at
            else:
                self._dirty = True
        self._seen = len(changes)

    def _read_decisions(self) -> None:
        for name, observer in self.observers.items():
            decisions = observer.decisions
            start = self._observed[name]
            if start == len(decisions):
                continue
            for decision in decisions[start:]:
                kind = decision.get("decision")
                if kind == "launch":
                    pods = decision.get("pods")
                    keys = [str(p) for p in pods] if isinstance(pods, list) else []
                    at = decision.get("at")
                    self.recorder.launched_for(keys, at if isinstance(at, float) else self.clock.now())
                    if name == "provisioner" and keys and all(self._on_consolidated_node(k) for k in keys):
                        self.recorder.double_launches += 1
                elif kind == "capacity-error":
                    self.recorder.capacity_errors.append((self.clock.now(), str(decision.get("offerings"))))
                elif kind == "disruption-launched":
                    self._audit_replace(decision)
            self._observed[name] = len(decisions)

    def _scale(self, key: str, t: float) -> None:
        workload = self.deployments.workloads[key]
        self.deployments.scale(workload, workload.replicas_at(t))

    def _sample(self) -> None:
        nodes: dict[str, int] = {}
        for node in self.cluster.snapshot().nodes:
            capacity_type = node.labels.get(wk.CAPACITY_TYPE, "unknown")
            nodes[capacity_type] = nodes.get(capacity_type, 0) + 1
        live = [r for r in self.recorder.instances.values() if r.terminated_at is None]
        self.recorder.samples.append(
            Sample(
                t=self.clock.now() - self.scenario.start,
                nodes=nodes,
                booting=len(self._booting),
                pending=len(self._unbound),
                running=sum(1 for p in self.cluster.snapshot().pods if p.node_name and not p.daemon),
                hourly_cost=sum(r.price for r in live),
            )
        )
        self.cluster.forget_calls()
