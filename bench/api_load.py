"""What the provisioner costs the Kubernetes API server, and its own CPU, on a live cluster.

Run: `python -m bench.api_load --pods 10000 --minutes 10 [--nodes N] [--json FILE]`.

A child process holds the cluster: an in-memory cluster (`nodewright.inmemory.cluster`) of `--nodes`
nodes (unmanaged, as a managed node group's: the provisioner leaves them alone) and `--pods`
Running pods, a few daemonsets and PDBs, served over local HTTP by the project's API server
emulator (`nodewright.inmemory.apiserver`) with pod manifests dressed as a real EKS cluster's
(managedFields, env, probes, volumes, container statuses: `bench.harness.kube_manifests.pod`). While the
benchmark runs the child changes the cluster as a busy one changes: 1% of the pods are replaced
per minute (deleted; a new pod created Pending, bound 0.5 s later and Running, as kube-scheduler
and the kubelet would), and every `--burst-every` seconds a burst of `--burst` pods arrives
pending and unschedulable (they are deleted again 90 s later, as finished jobs).

This process runs what a Lambda runs: the real `Provisioner` with the real `KubeCluster`
(`from_cluster_info`, following: one LIST per kind, then WATCH), one invocation of
`--invocation-seconds` after another on the same adapter (a warm container), with an in-memory
EC2 and state store (the AWS side is not what is measured here). It reports:

  requests_per_second, bytes_per_second   sent / received by the adapter after its first LIST
  first_list_cpu_seconds                  CPU of this process until every kind is synced
  cpu_seconds_per_second                  CPU of this process per second of loop after that
  peak_rss_mb                             this process's peak resident memory (it imports the
                                          provisioner's handler, boto3 and Powertools with it, as
                                          the Lambda does)
  pending_to_launch_p50 / _p99            a burst pod's creation -> its CreateFleet, seconds
  event_requests, event_share             the Event API calls among the requests (creates and
                                          series patches of events.k8s.io Events: Nominated,
                                          FailedScheduling), and their share of all requests

CPU is this process's (`time.process_time`: the loop and the watch threads), not the server's.

`--lambda-memory MB` runs this process (not the server) with the CPU share a Lambda function of
that memory gets (one vCPU at 1,769 MB, proportionally below), through a Linux cgroup CPU quota:
it needs a writable cgroup CPU controller (root on cgroup v1 or v2) and says so when there is none.
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import os
import platform
import random
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from bench.harness import kube_manifests
from nodewright.adapters.clock import SystemClock
from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.adapters.offline_catalog import load_catalog
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisionoptions import ProvisionerOptions, StaticConfiguration
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.catalog import FixedCatalog
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.inmemory.state import InMemoryStateStore
from nodewright.inmemory.timeline import percentile
from nodewright.model import labels as wk
from nodewright.model.cluster import ClusterInfo
from nodewright.model.node import Node
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget
from nodewright.ports import ApiUsage

ZONES = kube_manifests.ZONES
LAMBDA_MB_PER_VCPU = 1769
BURST_LIFETIME = 90.0
BIND_DELAY = 0.5


# ---------------------------------------------------------------------- the cluster (child process)


def _node(i: int) -> Node:
    zone = ZONES[i % len(ZONES)]
    name = f"ip-10-0-{i // 250}-{i % 250}.ec2.internal"
    allocatable = Resources.parse({"cpu": "63", "memory": "250Gi", "pods": "110"})
    return Node(
        name=name,
        labels={
            "kubernetes.io/hostname": name,
            "topology.kubernetes.io/zone": zone,
            "kubernetes.io/arch": "amd64",
            "node.kubernetes.io/instance-type": "m6i.16xlarge",
            "eks.amazonaws.com/nodegroup": "system",
        },
        capacity=allocatable,
        allocatable=allocatable,
        provider_id=f"aws:///{zone}/i-0{i:016x}",
        ready=True,
    )


def _pod(i: int, node: str, *, pending: bool = False) -> Pod:
    parsed = Pod.parse(kube_manifests.pod(i, "" if pending else node))
    pod = replace(parsed, name=f"{parsed.name}-{i}", uid="", created_at=0.0)
    # A burst pod asks for a NodePool's node, so the existing (node group) nodes cannot take it:
    # it is what kube-scheduler marks Unschedulable and the provisioner must launch for.
    return replace(pod, node_selector={wk.NODEPOOL: "default"}) if pending else pod


def _dress(kind: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """Give a pod what a real one carries besides what the model reads (a few KB of it)."""
    if kind != "pod":
        return manifest
    meta = manifest.get("metadata") or {}
    spec = manifest.get("spec") or {}
    real = kube_manifests.pod(abs(hash(meta.get("name"))) % 100_000, str(spec.get("nodeName") or ""))
    meta.setdefault("managedFields", real["metadata"]["managedFields"])
    meta.setdefault("generateName", real["metadata"]["generateName"])
    for key in ("dnsPolicy", "enableServiceLinks", "restartPolicy", "schedulerName", "serviceAccountName", "volumes"):
        spec.setdefault(key, real["spec"][key])
    for container in spec.get("containers") or ():
        for key, value in real["spec"]["containers"][0].items():
            container.setdefault(key, value)
    status = manifest.setdefault("status", {})
    for key in ("qosClass", "hostIP", "podIP", "startTime", "containerStatuses"):
        if key in real["status"]:
            status.setdefault(key, real["status"][key])
    return manifest


def _serve(pods: int, nodes: int, burst: int, burst_every: float, seed: int, conn: Connection) -> None:
    """The child: build and serve the cluster, change it until told to stop, report usage."""
    cluster = InMemoryCluster(SystemClock())
    node_names = [cluster.add_node(_node(i)).name for i in range(nodes)]
    for i in range(pods):
        cluster.add_pod(_pod(i, node_names[i % nodes]))
    for name in ("aws-node", "kube-proxy", "ebs-csi-node"):
        template = Pod(
            namespace="kube-system",
            name=name,
            requests=Resources.parse({"cpu": "50m", "pods": "1"}),
            owner_kind="DaemonSet",
        )
        cluster.add_daemonset(DaemonSet(namespace="kube-system", name=name, template=template))
    for team in range(8):
        selector = LabelSelector.parse({"matchLabels": {"team": f"team-{team}"}})
        cluster.add_pdb(PodDisruptionBudget(namespace=f"team-{team}", name="web", selector=selector, max_unavailable=1))
    server = ApiServer(cluster, dress=_dress)
    conn.send(server.start())
    rng = random.Random(seed)
    stop = threading.Event()

    def stop_when_told() -> None:
        conn.recv()
        stop.set()

    threading.Thread(target=stop_when_told, daemon=True).start()
    counter = pods
    per_second = pods * 0.01 / 60
    owed = 0.0
    to_bind: list[tuple[float, str, str]] = []
    bursts: list[tuple[float, list[str]]] = []
    next_burst = time.time() + min(30.0, burst_every)
    while not stop.wait(0.1):
        now = time.time()
        with server.lock:
            owed += per_second * 0.1
            while owed >= 1:
                owed -= 1
                bound = [p for p in (cluster.get_pod(k) for k in rng.sample(sorted(_keys(cluster)), 1)) if p]
                for old in bound:
                    if old.node_name and not old.daemon:
                        cluster.remove_pod(old)
                        counter += 1
                        new = cluster.add_pod(replace(_pod(counter, old.node_name), node_name="", phase="Pending"))
                        to_bind.append((now + BIND_DELAY, new.key, old.node_name))
            for _due, key, node in [b for b in to_bind if b[0] <= now]:
                if cluster.get_pod(key) is not None:
                    cluster.bind(key, node)
            to_bind = [b for b in to_bind if b[0] > now]
            if now >= next_burst:
                next_burst = now + burst_every
                keys = []
                for _ in range(burst):
                    counter += 1
                    keys.append(cluster.add_pod(_pod(counter, "", pending=True)).key)
                bursts.append((now + BURST_LIFETIME, keys))
            for _due, keys in [b for b in bursts if b[0] <= now]:
                for key in keys:
                    cluster.remove_pod(key)
            bursts = [b for b in bursts if b[0] > now]
    conn.send({f"{u.verb} {u.resource}": [u.requests, u.bytes] for u in server.usage()})
    server.stop()


def _keys(cluster: InMemoryCluster) -> list[str]:
    return [p.key for p in cluster.pods() if p.node_name and not p.daemon]


# ---------------------------------------------------------------------- the provisioner (this process)


def limit_cpu(share: float) -> Callable[[], None]:
    """Put this process in a new cgroup with a CPU quota of `share` of one CPU; returns the undo.
    Raises RuntimeError when no writable cgroup CPU controller is found.
    """
    period = 100_000
    quota = max(1000, int(share * period))
    settings: tuple[tuple[Path, dict[str, str]], ...] = (
        (Path("/sys/fs/cgroup/cpu"), {"cpu.cfs_period_us": str(period), "cpu.cfs_quota_us": str(quota)}),
        (Path("/sys/fs/cgroup"), {"cpu.max": f"{quota} {period}"}),
    )
    for root, files in settings:
        limit = "cpu.cfs_quota_us" if root.name == "cpu" else "cpu.max"
        if not (root / limit).exists() and not (root / "cgroup.controllers").exists():
            continue
        group = root / f"nodewright-bench-{os.getpid()}"
        try:
            group.mkdir()
            for name, value in files.items():
                (group / name).write_text(value)
            (group / "cgroup.procs").write_text(str(os.getpid()))
        except OSError as error:
            raise RuntimeError(f"cannot limit the CPU through {root}: {error}") from error

        def undo(group: Path = group, root: Path = root) -> None:
            for task in (group / "cgroup.procs").read_text().split():
                (root / "cgroup.procs").write_text(task)
            group.rmdir()

        return undo
    raise RuntimeError("no cgroup CPU controller under /sys/fs/cgroup: --lambda-memory needs one")


def _adapter(url: str) -> KubeCluster:
    info = ClusterInfo("bench", url, kube_manifests.DUMMY_CA, "1.31")
    return KubeCluster.connect(from_cluster_info(info, lambda: "bench-token"))


def measure(
    pods: int,
    nodes: int,
    minutes: float,
    *,
    burst: int,
    burst_every: float,
    invocation: float,
    seed: int,
    lambda_memory: int | None = None,
    nominate_after: float | None = None,
) -> dict[str, Any]:
    """Run the benchmark once; the figures of the module docstring. `nominate_after`: the
    provisioner's (ProvisionerOptions; None for its default): 0 reports every nomination as an Event.
    """
    # What the Lambda holds in memory besides the cluster: its handler and what that imports.
    importlib.import_module("functions.provisioner.handler")
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_serve, args=(pods, nodes, burst, burst_every, seed, child), daemon=True)
    process.start()
    # After the server's process started, so only this one is limited.
    undo = limit_cpu(lambda_memory / LAMBDA_MB_PER_VCPU) if lambda_memory else None
    try:
        url = parent.recv()
        cluster = _adapter(url)
        clock = SystemClock()
        observer = RecordingObserver()
        provisioner = build_provisioner(
            cluster=cluster,
            cloud=FakeCloudProvider(clock),
            store=InMemoryStateStore(),
            clock=clock,
            config=StaticConfiguration((NodePool(name="default"),)),
            catalog=FixedCatalog(tuple(load_catalog(ZONES))),
            observer=observer,
            wait=cluster.wait,
            options=ProvisionerOptions()
            if nominate_after is None
            else ProvisionerOptions(nominate_after=nominate_after),
        )
        cpu = time.process_time()
        wall = time.perf_counter()
        cluster.follow(invocation)
        synced = cluster.snapshot()
        first_list_cpu = time.process_time() - cpu
        first_list_wall = time.perf_counter() - wall
        first = cluster.transport.meter.take()
        cpu = time.process_time()
        wall = time.perf_counter()
        end = wall + minutes * 60
        invocations = 0
        while time.perf_counter() < end:
            provisioner.run_for(min(invocation, end - time.perf_counter() + provisioner.options.deadline_margin))
            invocations += 1
        elapsed = time.perf_counter() - wall
        loop_cpu = time.process_time() - cpu
        usage = list(cluster.transport.meter.take())
        # The provisioner drained the meter into its metrics each invocation: read them back.
        requests = sum(v for name, v, _, _ in observer.metrics if name == "KubeApiRequests") + sum(
            u.requests for u in usage
        )
        received = sum(v for name, v, _, _ in observer.metrics if name == "KubeApiBytes") + sum(u.bytes for u in usage)
        waits = sorted(v for name, v, _, _ in observer.metrics if name == "PendingToLaunchSeconds")
        events = _event_requests(observer, usage)
        watchers = cluster.watchers()
        cluster.close()
        parent.send("stop")
        served = parent.recv()
    finally:
        if undo is not None:
            undo()
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
    return {
        "pods": pods,
        "nodes": nodes,
        "lambda_memory_mb": lambda_memory,
        "minutes": minutes,
        "invocations": invocations,
        "first_list_requests": sum(u.requests for u in first),
        "first_list_bytes": sum(u.bytes for u in first),
        "first_list_cpu_seconds": round(first_list_cpu, 3),
        "first_list_wall_seconds": round(first_list_wall, 3),
        "synced_pods": len(synced.pods),
        "requests": int(requests),
        "requests_per_second": round(requests / elapsed, 4),
        "bytes_per_second": round(received / elapsed),
        "cpu_seconds_per_second": round(loop_cpu / elapsed, 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "pending_to_launch_p50": round(percentile(waits, 50), 3) if waits else None,
        "pending_to_launch_p99": round(percentile(waits, 99), 3) if waits else None,
        "pods_launched_for": len(waits),
        "event_requests": events,
        "event_share": round(events / requests, 4) if requests else 0.0,
        "events_dropped": cluster.events.correlator.dropped,
        "events_folded": cluster.events.correlator.folded,
        "nominate_after": provisioner.options.nominate_after,
        "relists": {kind: w.lists - 1 for kind, w in watchers.items()},
        "watch_requests": {kind: w.watches for kind, w in watchers.items()},
        "server_usage": served,
    }


def _event_requests(observer: RecordingObserver, unpublished: list[ApiUsage]) -> int:
    """The Event API calls among the requests: the `kube-api-usage` records the provisioner
    published each invocation (the split of `KubeApiRequests`), plus what it had not published yet.
    """
    published = 0
    for record in observer.of("kube-api-usage"):
        calls: list[dict[str, Any]] = record["calls"]  # type: ignore[assignment]
        published += sum(int(call["requests"]) for call in calls if call["resource"] == "events")
    return published + sum(u.requests for u in unpublished if u.resource == "events")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.api_load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=0, help="default: one per 33 pods")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--burst", type=int, default=20, help="pods per pending burst")
    parser.add_argument("--burst-every", type=float, default=120.0, help="seconds between bursts")
    parser.add_argument("--invocation-seconds", type=float, default=68.0, help="the provisioner's Lambda timeout")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lambda-memory", type=int, help="run with the CPU share of a Lambda of this many MB")
    parser.add_argument(
        "--nominate-after",
        type=float,
        help="seconds a pod waits before its nomination is an Event (default: the provisioner's; 0: every one)",
    )
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    nodes = args.nodes or max(1, args.pods // 33)
    result = measure(
        args.pods,
        nodes,
        args.minutes,
        burst=args.burst,
        burst_every=args.burst_every,
        invocation=args.invocation_seconds,
        seed=args.seed,
        lambda_memory=args.lambda_memory,
        nominate_after=args.nominate_after,
    )
    result["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(json.dumps(result, indent=2))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
