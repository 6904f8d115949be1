"""From pending to capacity: per pod, how long it waited for the provisioner to commit capacity to
it (the provisioner's goal: 3 s at the median, 12 s at p99).

A pod's wait ends at the first of: the CreateFleet call of a claim holding it (the `launch`
decision's time), its nomination onto a claim already launched whose Node has not registered
yet (`nominate`), or the kube-scheduler binding it. A nomination onto a claim whose Node had
already registered does not count ("phantom": nothing will come for the pod; counted apart).
Pods bound in the step that created them (a node had room) were never pending: counted as
`bound_at_once`, not measured. Pods with no commitment by the end are `unserved`.

A pod's wait starts at its creationTimestamp, which its owner stamps with the time the scale
event was due: with the CPU-charged clock a handler's computation can carry the clock past it,
and the pod then appears only when the handler next sleeps (`standins.cpuclock`).

Unlike `pending_to_launch_seconds` (the recorder's), this counts every pod that was pending, not
only those a node was launched for, which is what the latency benchmark reports.
"""

from __future__ import annotations

from typing import Any

from nodewright.controllers.observe import RecordingObserver
from nodewright.inmemory.timeline import Waits
from nodewright.simulator.report.metrics import Recorder
from nodewright.simulator.standins.kube import SimulatedCluster
from nodewright.simulator.world.feed import ChangeFeed, PodBound, PodCreated


class CapacityWaits:
    """Follows pods on the feed; `summary()` reads the provisioner's decisions (module docstring)."""

    def __init__(
        self, *, cluster: SimulatedCluster, provisioner: RecordingObserver, recorder: Recorder, feed: ChangeFeed
    ) -> None:
        self._cluster = cluster
        self._provisioner = provisioner
        self._recorder = recorder
        self._created: dict[str, float] = {}  # pod -> its creationTimestamp
        self._appeared: dict[str, float] = {}  # pod -> when the world saw it created
        self._bound: dict[str, float] = {}  # pod -> when bound, for pods that were pending
        self._at_once: set[str] = set()  # pods bound in the step that created them
        feed.subscribe(PodCreated, self._pod_created)
        feed.subscribe(PodBound, self._pod_bound)

    def _pod_created(self, change: PodCreated) -> None:
        pod = self._cluster.memory.store.pods.get(change.pod)
        self._created[change.pod] = pod.created_at if pod is not None and pod.created_at else change.at
        self._appeared[change.pod] = change.at

    def _pod_bound(self, change: PodBound) -> None:
        key = change.pod
        if key not in self._created or key in self._bound or key in self._at_once:
            return
        if change.at == self._appeared[key]:
            self._at_once.add(key)
        else:
            self._bound[key] = change.at

    def commitments(self) -> tuple[dict[str, float], int]:
        """Pod -> when capacity was first committed to it, and the count of phantom nominations."""
        registered: dict[str, float] = {}
        for record in self._recorder.instances.values():
            if record.nodeclaim and record.ready_at is not None:
                registered[record.nodeclaim] = min(record.ready_at, registered.get(record.nodeclaim, record.ready_at))
        committed: dict[str, float] = {}
        phantom = 0

        def commit(pods: Any, at: float) -> None:
            for key in pods:
                committed[str(key)] = min(at, committed.get(str(key), at))

        for decision in self._provisioner.decisions:
            kind, at, pods = decision.get("decision"), decision.get("at"), decision.get("pods")
            if kind not in ("launch", "nominate") or not isinstance(at, float) or not isinstance(pods, list):
                continue
            if kind == "nominate" and registered.get(str(decision.get("nodeclaim")), float("inf")) <= at:
                phantom += len(pods)
                continue
            commit(pods, at)
        for key, at in self._bound.items():
            commit((key,), at)
        return committed, phantom

    def summary(self) -> dict[str, Any]:
        """The waits' statistics and counts (module docstring)."""
        committed, phantom = self.commitments()
        measured = [key for key in self._created if key not in self._at_once]
        waits = [committed[key] - self._created[key] for key in measured if key in committed]
        stats = Waits.of(waits)
        return {
            "pods": len(self._created),
            "waited": stats.count,
            "bound_at_once": len(self._at_once),
            "unserved": len(measured) - len(waits),
            "phantom": phantom,
            "p50": round(stats.median, 3),
            "p99": round(stats.p99, 3),
            "max": round(stats.max, 3),
        }
