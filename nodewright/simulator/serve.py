"""`nodewright simulate --serve`: the simulated cluster served to kubectl while (and after) it runs.

Role: `ServedCluster` starts the API emulator (`nodewright.inmemory.apiserver.ApiServer`) on the
world's cluster once the world is built, with the NodeClaim objects the functions mirror
(`world.claim_objects`, so `kubectl get nodeclaims -o wide` lists them once the CRD is applied),
the simulated Deployments' scale subresource (`kubectl scale deployment`), and writes a
kubeconfig for it. `pace(done)`, the run's progress callback, holds virtual time to `speed`
virtual seconds per real second.

configSource=crd: the functions read, besides the scenario's NodePools, the NodePools and
EC2NodeClasses applied to the served cluster with kubectl (`kubectl apply -f deploy/crds/`, then
Karpenter's or Nodewright's manifests), through the functions' own reader
(`adapters.kube.crd_config.read_config` over the official client, a StoredConfiguration keeping
the last good set while one is invalid) at each of their passes.

Concurrency: the simulation changes the cluster from the main thread; kubectl's writes arrive on
the server's threads and take `server.lock`. The main thread holds that lock for the whole run
and lets go only while `pace` waits for real time to catch up, so a kubectl write lands between
two steps of the virtual clock, never inside one, and the functions see it at their next pass.
After the run the lock is released and the cluster stays served until `close()`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodewright.controllers.configuration import StoredConfiguration
from nodewright.controllers.observe import RecordingObserver
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.apiwire import Failure

if TYPE_CHECKING:
    from nodewright.simulator.world import World

# Real seconds the main thread waits at least per step, so kubectl's writes get their turn even
# when the run is far behind its pace.
MIN_PAUSE = 0.005


class ServedCluster:
    """The world's cluster over HTTP for kubectl (module docstring)."""

    def __init__(self, *, port: int, kubeconfig: Path, speed: float) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self.port = port
        self.kubeconfig = kubeconfig
        self.speed = speed
        self.server: ApiServer | None = None
        self._started = 0.0
        self._held = False

    def start(self, world: World) -> None:
        """Serve `world.cluster` (called once the world is built) and take the cluster lock."""
        server = ApiServer(world.cluster, port=self.port)
        server.claims = world.claim_objects
        server.scale = _Scaler(world)
        url = server.start()
        self.server = server
        write_kubeconfig(self.kubeconfig, url)
        world.configuration.from_cluster = _applied_config(self.kubeconfig)
        server.lock.acquire()
        self._held = True
        self._started = time.monotonic()

    def pace(self, done: float) -> None:
        """The run's progress callback: wait until `done` virtual seconds are due at `speed`,
        letting kubectl's writes in meanwhile.
        """
        if self.server is None or not self._held:
            return
        wait = max(MIN_PAUSE, self._started + done / self.speed - time.monotonic())
        self.server.lock.release()
        try:
            time.sleep(wait)
        finally:
            self.server.lock.acquire()

    def finished(self) -> None:
        """The run is over: release the lock (kubectl writes land at once from now on)."""
        if self.server is not None and self._held:
            self._held = False
            self.server.lock.release()

    def close(self) -> None:
        """Stop serving."""
        self.finished()
        if self.server is not None:
            self.server.stop()
            self.server = None


class _Scaler:
    """The simulated Deployments and StatefulSets as the scale subresource sees them."""

    def __init__(self, world: World) -> None:
        self._deployments = world.deployments

    def workloads(self) -> list[tuple[str, str, str, int, int]]:
        """(kind, namespace, name, live replicas, running ones) of every workload."""
        out = []
        for w in sorted(self._deployments.workloads.values(), key=lambda w: (w.namespace, w.name)):
            pods = self._deployments.owned(w)
            running = sum(1 for p in pods if p.node_name and p.phase == "Running")
            out.append((w.kind, w.namespace, w.name, len(pods), running))
        return out

    def scale(self, kind: str, namespace: str, name: str, replicas: int) -> None:
        """Set the workload's replicas now (its schedule sets it again at its next change)."""
        workload = next(
            (
                w
                for w in self._deployments.workloads.values()
                if (w.kind, w.namespace, w.name) == (kind, namespace, name)
            ),
            None,
        )
        if workload is None:
            raise Failure(404, f'{kind.lower()}s.apps "{name}" not found', {"name": name, "kind": kind.lower() + "s"})
        self._deployments.scale(workload, replicas)


def write_kubeconfig(path: Path, url: str) -> None:
    """A kubeconfig whose current context is the served cluster (no credentials needed)."""
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "nodewright-simulation", "cluster": {"server": url}}],
        "users": [{"name": "simulation", "user": {"token": "simulation"}}],
        "contexts": [
            {"name": "nodewright-simulation", "context": {"cluster": "nodewright-simulation", "user": "simulation"}}
        ],
        "current-context": "nodewright-simulation",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def _applied_config(kubeconfig: Path) -> StoredConfiguration:
    """The NodePools and EC2NodeClasses applied to the served cluster, as configSource=crd reads them.

    Reads take only the store's condition, never `server.lock`: the main thread may read while it
    holds the lock.
    """
    from nodewright.adapters.kube.client import from_kubeconfig
    from nodewright.adapters.kube.crd_config import read_config

    api_client = from_kubeconfig(str(kubeconfig), None)
    return StoredConfiguration(lambda: list(read_config(api_client).require()), RecordingObserver())
