"""What a snapshot of a large cluster costs the Kubernetes adapter: wall time and CPU time.

Run: `python -m bench.kube_snapshot [--pods 10000] [--nodes 300] [--repeats 5] [--profile]`.

A child process serves a canned cluster over HTTP on 127.0.0.1 (`http.server`): `--nodes`
nodes, `--pods` pods spread over them (2% pending), a few daemonsets and PDBs, in pages of the
requested `limit` linked by `continue` tokens, as a kube-apiserver would. The pods look like
those of a real EKS cluster as `kubectl get -o json` shows them: managedFields, env, probes,
volumes, container statuses, the default tolerations, and for some deployments spread
constraints, affinity, init containers and limits. This process builds the adapter the Lambdas
use (`from_cluster_info` + `KubeCluster`) and times `snapshot()`: wall time, and CPU time of
this process (`time.process_time`), which excludes the server since it runs in another process.
The goal (issue 4) is at most 1 s of CPU for 10,000 pods.

It also splits the CPU between its parts on the same bytes without HTTP (json.loads, then
Pod.parse/Node.parse), and `--profile` prints the top functions of one snapshot under cProfile.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import multiprocessing
import os
import platform
import pstats
import statistics
import time
import urllib.parse
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from typing import Any

from bench.harness.kube_manifests import DUMMY_CA, cluster_objects
from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import KubeCluster, parse_timestamp
from nodewright.model.cluster import ClusterInfo
from nodewright.model.node import Node
from nodewright.model.pod import Pod

# ---------------------------------------------------------------------- the server


def pages(items: list[dict[str, Any]], limit: int) -> list[bytes]:
    """The list cut into JSON pages of `limit` items, each naming the next page's token."""
    out = []
    for start in range(0, max(len(items), 1), limit):
        metadata: dict[str, Any] = {"resourceVersion": "300000"}
        if start + limit < len(items):
            metadata["continue"] = str(start + limit)
            metadata["remainingItemCount"] = len(items) - start - limit
        body = {"apiVersion": "v1", "kind": "List", "metadata": metadata, "items": items[start : start + limit]}
        out.append(json.dumps(body, separators=(",", ":")).encode())
    return out


def serve(pods: int, nodes: int, limit: int, port_out: Connection) -> None:
    """Serve the canned cluster until killed (runs in the child process)."""
    rendered = {path: pages(items, limit) for path, items in cluster_objects(pods, nodes).items()}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            listing = rendered.get(url.path)
            if listing is None or query.get("limit") != str(limit):
                self.send_error(404)
                return
            body = listing[int(query.get("continue") or 0) // limit]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port_out.send((server.server_address[1], {path: sum(len(p) for p in ps) for path, ps in rendered.items()}))
    server.serve_forever()


# ---------------------------------------------------------------------- measuring


def split_cpu(pods: int, nodes: int, page_size: int) -> dict[str, float]:
    """CPU seconds of the parts on the same pages without HTTP, as the adapter does them: each
    page decoded and parsed with the cyclic collector paused.
    """
    objects = cluster_objects(pods, nodes)
    pod_pages = pages(objects["/api/v1/pods"], page_size)
    node_pages = pages(objects["/api/v1/nodes"], page_size)
    del objects
    loads = parse_pods = parse_nodes = 0.0
    kept: list[object] = []
    gc.disable()
    try:
        for body, is_pod in [(b, True) for b in pod_pages] + [(b, False) for b in node_pages]:
            start = time.process_time()
            items = json.loads(body)["items"]
            loaded = time.process_time()
            if is_pod:
                kept.extend(Pod.parse(item) for item in items)
                parse_pods += time.process_time() - loaded
            else:
                kept.extend(
                    Node.parse(item, created_at=parse_timestamp(item["metadata"].get("creationTimestamp")))
                    for item in items
                )
                parse_nodes += time.process_time() - loaded
            loads += loaded - start
    finally:
        gc.enable()
    return {"json.loads (pods + nodes)": loads, "Pod.parse": parse_pods, "Node.parse": parse_nodes}


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the cluster, time `snapshot()` and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="print the top functions of one snapshot")
    args = parser.parse_args(argv)

    receive, send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.get_context("spawn").Process(
        target=serve, args=(args.pods, args.nodes, args.page_size, send), daemon=True
    )
    server.start()
    try:
        port, sizes = receive.recv()
        info = ClusterInfo("bench", f"http://127.0.0.1:{port}", DUMMY_CA, "1.31")
        cluster = KubeCluster.connect(from_cluster_info(info, lambda: "bench-token"), page_size=args.page_size)
        # The first snapshot pays for lazy imports, the connection and filling Pod.parse's cache
        # of resource lists, as the first one after a Lambda cold start would.
        first_wall, first_cpu = time.perf_counter(), time.process_time()
        snapshot = cluster.snapshot()
        first_wall, first_cpu = time.perf_counter() - first_wall, time.process_time() - first_cpu
        assert len(snapshot.pods) == args.pods
        assert len(snapshot.nodes) == args.nodes

        walls, cpus = [], []
        for _ in range(args.repeats):
            wall, cpu = time.perf_counter(), time.process_time()
            cluster.snapshot()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)

        print(
            f"machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} CPUs, "
            f"python {platform.python_version()}"
        )
        print(
            f"cluster: {args.pods} pods ({sum(1 for p in snapshot.pods if not p.node_name)} pending), "
            f"{args.nodes} nodes, {len(snapshot.daemonsets)} daemonsets, {len(snapshot.pdbs)} PDBs; "
            f"pages of {args.page_size}"
        )
        print(
            "bytes served: "
            + ", ".join(f"{path.rsplit('/', 1)[-1]} {size / 1e6:.1f} MB" for path, size in sizes.items())
        )
        print("KubeCluster.snapshot() over HTTP:")
        print(f"  first in this process: wall {first_wall:.3f} s, CPU {first_cpu:.3f} s")
        print(f"  then {args.repeats} runs:")
        print(f"    wall: median {statistics.median(walls):.3f} s, best {min(walls):.3f} s")
        print(f"    CPU (this process): median {statistics.median(cpus):.3f} s, best {min(cpus):.3f} s")
        print("CPU of the parts without HTTP (warm cache):")
        for part, seconds in split_cpu(args.pods, args.nodes, args.page_size).items():
            print(f"  {part}: {seconds:.3f} s")
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            cluster.snapshot()
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
    finally:
        server.kill()
        server.join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
