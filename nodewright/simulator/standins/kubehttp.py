"""The functions' view of the simulated cluster through the real Kubernetes adapter over HTTP.

Role: with a scenario's `kube_api: http`, the world serves its cluster with the API emulator
(`nodewright.inmemory.apiserver.ApiServer`) and each function reads and writes it through its own
`KubeCluster` (as each Lambda has its own warm container): one LIST per kind, then WATCH, cordon
and eviction as HTTP requests. What this costs the API server is what `summary.json` reports
under `kube_api`.

Determinism: the watches deliver events on their own threads, in real time, while the world runs
on a virtual clock. Each adapter gets a barrier (`KubeCluster(barrier=...)`): before any read
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
from nodewright.adapters.kube.store import KINDS
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model.cluster import ClusterInfo
from nodewright.model.pod import Pod
from nodewright.model.taints import Taint
from nodewright.ports import Eviction

# The emulator speaks plain HTTP: the CA is never used, only parsed.
_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()


class EffectsKubeCluster(KubeCluster):
    """The real adapter, telling `effect(what)` after each write it made and asking `alive()`
    before (see the module docstring).
    """

    def __init__(self, *args: Any, alive: Callable[[], None], effect: Callable[[str], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._alive = alive
        self._effect = effect

    def cordon(self, name: str, taint: Taint | None = None) -> None:
        """The adapter's cordon, then the effect."""
        self._alive()
        super().cordon(name, taint)
        self._effect("cordon")

    def uncordon(self, name: str, taint_key: str | None = None) -> None:
        """The adapter's uncordon, then the effect."""
        self._alive()
        super().uncordon(name, taint_key)
        self._effect("uncordon")

    def evict(self, pod: Pod) -> Eviction:
        """The adapter's eviction, then the effect (when one was made)."""
        self._alive()
        result = super().evict(pod)
        if result.outcome == "evicted":
            self._effect("evict")
        return result

    def delete_node(self, name: str) -> None:
        """The adapter's node deletion, then the effect."""
        self._alive()
        super().delete_node(name)
        self._effect("delete node")


class HttpCluster:
    """The emulator serving `cluster`, and the adapters the functions use to reach it."""

    def __init__(
        self,
        cluster: InMemoryCluster,
        *,
        fault: Callable[[str, str], tuple[int, float | None] | None] | None = None,
        alive: Callable[[], None] = lambda: None,
        effect: Callable[[str], None] = lambda what: None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.server = ApiServer(cluster)
        self.server.fault = fault
        self.adapters: dict[str, KubeCluster] = {}
        self._alive = alive
        self._effect = effect
        self._sleep = sleep

    def start(self) -> None:
        """Serve the cluster (its objects so far become the first LIST)."""
        self.server.start()

    def adapter(self, function: str, kinds: tuple[str, ...] = KINDS) -> KubeCluster:
        """The adapter of one function (one per function, as one per warm container)."""
        if function not in self.adapters:
            info = ClusterInfo("simulated", self.server.url, _CA, "1.31")
            server = self.server

            def latest() -> Mapping[str, int]:
                return {kind: server.latest(kind) for kind in kinds}

            self.adapters[function] = EffectsKubeCluster(
                from_cluster_info(info, lambda: "simulator"),
                kinds=kinds,
                barrier=latest,
                alive=self._alive,
                effect=self._effect,
                sleep=self._sleep,
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
