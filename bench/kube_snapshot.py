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
import base64
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

from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import KubeCluster, parse_timestamp
from nodewright.model.cluster import ClusterInfo
from nodewright.model.node import Node
from nodewright.model.pod import Pod

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
TYPES = ("m6i.2xlarge", "c6i.4xlarge", "r6i.2xlarge", "m7g.xlarge")
# Only the PEM marker matters: the server speaks plain HTTP, so the CA file is never used.
DUMMY_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
CREATED = "2025-03-01T10:00:00Z"


# ---------------------------------------------------------------------- the canned cluster


def node(i: int) -> dict[str, Any]:
    zone = ZONES[i % len(ZONES)]
    name = f"ip-10-0-{i // 250}-{i % 250}.ec2.internal"
    return {
        "metadata": {
            "name": name,
            "uid": f"6c1f0e6e-0000-4000-8000-{i:012d}",
            "resourceVersion": str(100000 + i),
            "creationTimestamp": CREATED,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/instance-type": TYPES[i % len(TYPES)],
                "beta.kubernetes.io/os": "linux",
                "failure-domain.beta.kubernetes.io/region": "us-east-1",
                "failure-domain.beta.kubernetes.io/zone": zone,
                "karpenter.sh/capacity-type": "spot" if i % 3 else "on-demand",
                "karpenter.sh/nodepool": "default",
                "karpenter.k8s.aws/instance-category": "m",
                "karpenter.k8s.aws/instance-family": "m6i",
                "karpenter.k8s.aws/instance-generation": "6",
                "karpenter.k8s.aws/instance-size": "2xlarge",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": TYPES[i % len(TYPES)],
                "topology.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": zone,
            },
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": f"10.0.{i // 250}.{i % 250}",
                "karpenter.sh/nodepool-hash": "6821555240594823858",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "managedFields": [
                {
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:conditions": {}, "f:images": {}, "f:nodeInfo": {}}},
                    "manager": "kubelet",
                    "operation": "Update",
                    "subresource": "status",
                    "time": CREATED,
                }
            ],
        },
        "spec": {"providerID": f"aws:///{zone}/i-0{i:016x}"},
        "status": {
            "addresses": [
                {"address": f"10.0.{i // 250}.{i % 250}", "type": "InternalIP"},
                {"address": name, "type": "Hostname"},
            ],
            "allocatable": {
                "cpu": "7910m",
                "ephemeral-storage": "95551679124",
                "hugepages-1Gi": "0",
                "hugepages-2Mi": "0",
                "memory": "31482732Ki",
                "pods": "58",
            },
            "capacity": {
                "cpu": "8",
                "ephemeral-storage": "104845292Ki",
                "hugepages-1Gi": "0",
                "hugepages-2Mi": "0",
                "memory": "32408428Ki",
                "pods": "58",
            },
            "conditions": [
                {"type": kind, "status": "False", "reason": f"Kubelet{kind}", "lastHeartbeatTime": CREATED}
                for kind in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ]
            + [{"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": CREATED}],
            "images": [
                {"names": [f"602401143452.dkr.ecr.us-east-1.amazonaws.com/image-{k}@sha256:{'a' * 64}"], "sizeBytes": 1}
                for k in range(8)
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "containerRuntimeVersion": "containerd://1.7.27",
                "kernelVersion": "6.1.132-147.221.amzn2023.x86_64",
                "kubeletVersion": "v1.31.7-eks-473151a",
                "operatingSystem": "linux",
                "osImage": "Amazon Linux 2023.7.20250414",
            },
        },
    }


def pod(i: int, node_name: str) -> dict[str, Any]:
    app = f"service-{i % 40}"
    ns = f"team-{i % 8}"
    pending = not node_name
    container: dict[str, Any] = {
        "name": app,
        "image": f"123456789012.dkr.ecr.us-east-1.amazonaws.com/{app}:v1.{i % 7}.3",
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "env": [
            {"name": "SERVICE_NAME", "value": app},
            {"name": "LOG_LEVEL", "value": "info"},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
        ],
        "resources": {
            "requests": {"cpu": ("100m", "250m", "500m", "1")[i % 4], "memory": ("128Mi", "512Mi", "1Gi")[i % 3]}
        },
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10},
        "livenessProbe": {"httpGet": {"path": "/live", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10},
        "volumeMounts": [
            {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access", "readOnly": True}
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    if i % 5 == 0:
        container["resources"]["limits"] = {"memory": "2Gi"}
    spec: dict[str, Any] = {
        "containers": [container],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "tolerationSeconds": 300,
            },
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "tolerationSeconds": 300,
            },
        ],
        "volumes": [
            {
                "name": "kube-api-access",
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                    ],
                },
            }
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    if i % 40 < 8:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    if 8 <= i % 40 < 12:
        spec["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": [app]}]},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            },
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
                    ]
                }
            },
        }
    if 12 <= i % 40 < 14:
        spec["initContainers"] = [
            {"name": "migrate", "image": "migrate:1", "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}}}
        ]
    conditions = (
        [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/300 nodes are available"}]
        if pending
        else [
            {"type": kind, "status": "True", "lastTransitionTime": CREATED}
            for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
        ]
    )
    status: dict[str, Any] = {
        "phase": "Pending" if pending else "Running",
        "qosClass": "Burstable",
        "conditions": conditions,
    }
    if not pending:
        status.update(
            hostIP="10.0.1.17",
            podIP=f"10.0.{i // 250 % 250}.{i % 250}",
            startTime=CREATED,
            containerStatuses=[
                {
                    "name": app,
                    "containerID": f"containerd://{'c' * 64}",
                    "image": container["image"],
                    "imageID": f"{container['image']}@sha256:{'b' * 64}",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": CREATED}},
                }
            ],
        )
    name = f"{app}-7d9f8c6b5-{i:05d}"
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"0b6a1e2c-0000-4000-8000-{i:012d}",
            "resourceVersion": str(200000 + i),
            "creationTimestamp": CREATED,
            "generateName": f"{app}-7d9f8c6b5-",
            "labels": {"app": app, "pod-template-hash": "7d9f8c6b5", "team": ns},
            "annotations": {"kubectl.kubernetes.io/restartedAt": CREATED},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "blockOwnerDeletion": True,
                    "controller": True,
                    "kind": "ReplicaSet",
                    "name": f"{app}-7d9f8c6b5",
                    "uid": f"rs-{i % 40}",
                }
            ],
            "managedFields": [
                {
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:generateName": {}, "f:labels": {"f:app": {}}, "f:ownerReferences": {}},
                        "f:spec": {"f:containers": {f'k:{{"name":"{app}"}}': {"f:image": {}, "f:env": {}}}},
                    },
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "time": CREATED,
                },
                {
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:podIP": {}}},
                    "manager": "kubelet",
                    "operation": "Update",
                    "subresource": "status",
                    "time": CREATED,
                },
            ],
        },
        "spec": spec,
        "status": status,
    }


def daemonset(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "kube-system", "uid": f"ds-{name}", "creationTimestamp": CREATED},
        "spec": {
            "selector": {"matchLabels": {"k8s-app": name}},
            "template": {
                "metadata": {"labels": {"k8s-app": name}},
                "spec": {
                    "containers": [{"name": name, "resources": {"requests": {"cpu": "25m", "memory": "64Mi"}}}],
                    "tolerations": [{"operator": "Exists"}],
                    "priorityClassName": "system-node-critical",
                },
            },
        },
    }


def pdb(i: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"service-{i}", "namespace": f"team-{i % 8}", "uid": f"pdb-{i}"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": f"service-{i}"}}},
        "status": {"disruptionsAllowed": 1, "currentHealthy": 10, "desiredHealthy": 9, "expectedPods": 10},
    }


def cluster_objects(pods: int, nodes: int) -> dict[str, list[dict[str, Any]]]:
    """The canned cluster: path of each list -> its items in the API server's key order."""
    node_items = [node(i) for i in range(nodes)]
    names = [n["metadata"]["name"] for n in node_items]
    pod_items = [pod(i, "" if i % 50 == 0 else names[i % nodes]) for i in range(pods)]
    pod_items.sort(key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
    return {
        "/api/v1/nodes": sorted(node_items, key=lambda n: str(n["metadata"]["name"])),
        "/api/v1/pods": pod_items,
        "/apis/apps/v1/daemonsets": [daemonset(n) for n in ("aws-node", "ebs-csi-node", "kube-proxy", "node-exporter")],
        "/apis/policy/v1/poddisruptionbudgets": [pdb(i) for i in range(40)],
    }


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
