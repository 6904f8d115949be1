"""The functions' view of the simulated cluster through the real Kubernetes adapter over HTTP.

Role: with a scenario's `kube_api: http`, the world serves its cluster with the API emulator
(`nodewright.sim.apiserver.ApiServer`) and each function reads and writes it through its own
`KubeCluster` (as each Lambda has its own warm container): one LIST per kind, then WATCH, cordon
and eviction as HTTP requests. What this costs the API server is what `summary.json` reports
under `kube_api`.

Determinism: the watches deliver events on their own threads, in real time, while the world runs
on a virtual clock. Each adapter gets a barrier (`KubeCluster(barrier=...)`): before any read
from its store it waits until its watches have delivered the emulator's latest resourceVersion
of each kind, so a function reads what the cluster holds at that virtual instant, as the
in-memory path does, and two runs of a scenario decide the same.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.adapters.kube.store import KINDS
from nodewright.model.cluster import ClusterInfo
from nodewright.sim.apiserver import ApiServer
from nodewright.sim.cluster import InMemoryCluster

# The emulator speaks plain HTTP: the CA is never used, only parsed.
_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()


class HttpCluster:
    """The emulator serving `cluster`, and the adapters the functions use to reach it."""

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.server = ApiServer(cluster)
        self.adapters: dict[str, KubeCluster] = {}

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

            self.adapters[function] = KubeCluster(
                from_cluster_info(info, lambda: "simulator"), kinds=kinds, barrier=latest
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
