"""The functions' view of the simulated cluster through the real Kubernetes adapter over HTTP.

Role: with a scenario's `kube_api: http`, the world serves its cluster with the API emulator
(`nodewright.inmemory.apiserver.ApiServer`) and each function reads and writes it through its own
`KubeCluster` (as each Lambda has its own warm container): one LIST per kind, then WATCH, cordon
and eviction as HTTP requests. What this costs the API server is what `summary.json` reports
under `kube_api`.

Determinism: the watches deliver events on their own threads, in real time, while the world runs
on a virtual clock. Each adapter gets a barrier (`KubeCluster(..., barrier=...)`): before any read
from its store it waits until its watches have delivered the emulator's latest resourceVersion
of each kind, so a function reads what the cluster holds at that virtual instant, as the
in-memory path does, and two runs of a scenario decide the same.

Faults: `fault(verb, resource)` is handed to the emulator (it answers a request with an error
status or hangs up, and the real adapter meets that); `alive()` is asked before and `effect(what)`
told after each write an adapter makes, in the calling function's thread, where a crash may
stop it.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping
from typing import Any

from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.adapters.kube.store import KINDS, ClusterStore
from nodewright.adapters.kube.transport import Transport
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.apisource import ServedCluster
from nodewright.model.cluster import ClusterInfo
from nodewright.model.event import Event
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.taints import Taint
from nodewright.ports import ApiUsage, Cluster, Eviction

# The emulator speaks plain HTTP: the CA is never used, only parsed.
_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()


class EffectsKubeCluster:
    """A function's `Cluster` (the real adapter's port, decorated): asks `alive()` before each
    write and tells `effect(what)` after it was made (see the module docstring); every read is the
    adapter's.
    """

    def __init__(self, cluster: Cluster, *, alive: Callable[[], None], effect: Callable[[str], None]) -> None:
        self._cluster = cluster
        self._alive = alive
        self._effect = effect

    def cordon(self, name: str, taint: Taint | None = None) -> None:
        """The adapter's cordon, then the effect."""
        self._alive()
        self._cluster.cordon(name, taint)
        self._effect("cordon")

    def uncordon(self, name: str, taint_key: str | None = None) -> None:
        """The adapter's uncordon, then the effect."""
        self._alive()
        self._cluster.uncordon(name, taint_key)
        self._effect("uncordon")

    def evict(self, pod: Pod) -> Eviction:
        """The adapter's eviction, then the effect (when one was made)."""
        self._alive()
        result = self._cluster.evict(pod)
        if result.outcome == "evicted":
            self._effect("evict")
        return result

    def delete_node(self, name: str) -> None:
        """The adapter's node deletion, then the effect."""
        self._alive()
        self._cluster.delete_node(name)
        self._effect("delete node")

    def record(self, event: Event, now: float) -> None:
        """The adapter's Event."""
        self._cluster.record(event, now)

    def follow(self, seconds: float) -> None:
        """The adapter's watches, kept for `seconds`."""
        self._cluster.follow(seconds)

    def snapshot(self) -> ClusterSnapshot:
        """The adapter's snapshot."""
        return self._cluster.snapshot()

    def pending(self) -> list[Pod]:
        """The adapter's pending pods."""
        return self._cluster.pending()

    def version(self) -> int:
        """The adapter's version."""
        return self._cluster.version()

    def usage(self) -> list[ApiUsage]:
        """The adapter's API usage."""
        return self._cluster.usage()

    def get_node(self, name: str) -> Node | None:
        """The adapter's node."""
        return self._cluster.get_node(name)

    def node_by_instance(self, instance_id: str) -> Node | None:
        """The adapter's node of the instance."""
        return self._cluster.node_by_instance(instance_id)

    def pods_on(self, node: str) -> list[Pod]:
        """The adapter's pods on the node."""
        return self._cluster.pods_on(node)

    def label_node(self, name: str, labels: Mapping[str, str | None]) -> None:
        """The adapter's label patch (not a write a fault crashes after)."""
        self._cluster.label_node(name, labels)

    def annotate_pod(self, pod: Pod, annotations: Mapping[str, str | None]) -> bool:
        """The adapter's pod annotation patch (not a write a fault crashes after)."""
        return self._cluster.annotate_pod(pod, annotations)


class HttpCluster:
    """The emulator serving `cluster`, and the adapters the functions use to reach it."""

    def __init__(
        self,
        cluster: ServedCluster,
        *,
        fault: Callable[[str, str], tuple[int, float | None] | None] | None = None,
        alive: Callable[[], None] = lambda: None,
        effect: Callable[[str], None] = lambda what: None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.server = ApiServer(cluster)
        self.server.fault = fault
        self.adapters: dict[str, KubeCluster] = {}  # each function's real adapter
        self._clusters: dict[str, EffectsKubeCluster] = {}
        self._alive = alive
        self._effect = effect
        self._sleep = sleep

    def start(self) -> None:
        """Serve the cluster (its objects so far become the first LIST)."""
        self.server.start()

    def cluster(self, function: str, kinds: tuple[str, ...] = KINDS) -> Cluster:
        """The cluster as one function reaches it: its adapter, with the faults' hooks around its writes."""
        if function not in self._clusters:
            adapter = self.adapter(function, kinds)
            self._clusters[function] = EffectsKubeCluster(adapter, alive=self._alive, effect=self._effect)
        return self._clusters[function]

    def adapter(self, function: str, kinds: tuple[str, ...] = KINDS) -> KubeCluster:
        """The real adapter of one function (one per function, as one per warm container)."""
        if function not in self.adapters:
            info = ClusterInfo("simulated", self.server.url, _CA, "1.31")
            server = self.server

            def latest() -> Mapping[str, int]:
                return {kind: server.latest(kind) for kind in kinds}

            self.adapters[function] = KubeCluster(
                Transport(from_cluster_info(info, lambda: "simulator"), sleep=self._sleep),
                ClusterStore(kinds),
                barrier=latest,
            )
        return self.adapters[function]

    def stop(self) -> None:
        """Close every adapter's watches, then the server."""
        for adapter in self.adapters.values():
            adapter.close()
        self.server.stop()

    def usage(self, seconds: float) -> dict[str, Any]:
        """The `kube_api` block of summary.json: what the server served over `seconds` of the run."""
        usage = self.server.usage()
        requests = sum(u.requests for u in usage)
        received = sum(u.bytes for u in usage)
        minutes = max(seconds / 60, 1e-9)
        return {
            "requests": requests,
            "bytes": received,
            "requests_per_minute": round(requests / minutes, 2),
            "bytes_per_minute": round(received / minutes),
            "by_call": {f"{u.verb} {u.resource}": {"requests": u.requests, "bytes": u.bytes} for u in usage},
        }
