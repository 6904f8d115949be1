"""The pods' accounting and the kube-scheduler: which pods are pending, when the scheduler runs,
and what the recorder counts of pods created, bound, gone and lost with their node.

`PodAccounting` follows the feed: a pending pod is one created unbound and not yet bound or gone;
the kube-scheduler runs over them (`schedule`) after a step in which the cluster changed. Pods a
Node still held when it went are lost, unless it was a spot node whose reclaim a
PodDisruptionBudget held them through (`SpotInterruptions.held_by_budget`): counted apart.
"""

from __future__ import annotations

import time

from nodewright.simulator.report.metrics import Recorder
from nodewright.simulator.standins.kube import KubeScheduler
from nodewright.simulator.world.feed import (
    ChangeFeed,
    ClusterChanged,
    NodeGone,
    NodeRegistered,
    PodBound,
    PodCreated,
    PodGone,
)
from nodewright.simulator.world.spot import SpotInterruptions


class PodAccounting:
    """Pending pods, the kube-scheduler's runs and the recorder's pod counts (module docstring)."""

    def __init__(self, scheduler: KubeScheduler, recorder: Recorder, spot: SpotInterruptions, feed: ChangeFeed) -> None:
        self._scheduler = scheduler
        self._recorder = recorder
        self._spot = spot
        self._unbound: set[str] = set()  # pending pods
        self._dirty = False  # the cluster changed since the kube-scheduler last ran
        feed.subscribe(PodCreated, self._created)
        feed.subscribe(PodBound, self._bound)
        feed.subscribe(PodGone, self._gone)
        feed.subscribe(NodeGone, self._node_gone)
        feed.subscribe(ClusterChanged, self._changed)
        feed.subscribe(NodeRegistered, self._changed)

    @property
    def pending(self) -> int:
        """How many pods are pending."""
        return len(self._unbound)

    def schedule(self) -> bool:
        """Run the kube-scheduler over the pending pods if the cluster changed since it last ran;
        True when it ran (its bindings are then in the cluster's change log).
        """
        if not (self._dirty and self._unbound):
            return False
        self._dirty = False
        started = time.perf_counter()
        self._scheduler.schedule(sorted(self._unbound))
        self._recorder.wall["kube-scheduler"] += time.perf_counter() - started
        return True

    def settle(self) -> None:
        """The step's changes are read and the scheduler ran on them: nothing new to schedule."""
        self._dirty = False

    def _created(self, change: PodCreated) -> None:
        self._unbound.add(change.pod)
        self._recorder.pod_created(change.pod, change.at)
        self._dirty = True
        if change.replaces_from is not None:
            interrupted = self._spot.interrupted(change.replaces_from)
            self._recorder.displaced[change.pod] = "interruption" if interrupted else "other"

    def _bound(self, change: PodBound) -> None:
        self._unbound.discard(change.pod)
        self._recorder.pod_bound(change.pod, change.at)

    def _gone(self, change: PodGone) -> None:
        self._unbound.discard(change.pod)
        self._recorder.pod_gone(change.pod)
        self._dirty = True

    def _node_gone(self, change: NodeGone) -> None:
        for pod in change.pods:
            if self._spot.held_by_budget(change.node, pod):
                # A budget refused every eviction until the instance went: counted apart.
                self._recorder.held_by_pdb.append((change.at, pod, change.node))
            else:
                self._recorder.lost.append((change.at, pod, change.node))
        self._dirty = True

    def _changed(self, _: ClusterChanged | NodeRegistered) -> None:
        self._dirty = True
