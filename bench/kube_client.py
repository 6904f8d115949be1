"""What the kubernetes client costs: import time, and reading a 10,000-pod list.

Run: `python -m bench.kube_client [--pods N]` with whichever client version is installed (the
README compares 36.x and 37.x, each measured in its own venv with this script). It prints the
median import time of `kubernetes.client` in fresh interpreters, the time to deserialise a PodList
into the client's model objects, and the time of Nodewright's path (json.loads + Pod.parse).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

from nodewright.model.pod import Pod

_IMPORT = "import time; t = time.perf_counter(); import kubernetes.client; print(time.perf_counter() - t)"


def pod_list(count: int) -> str:
    """A PodList JSON body like the API server's, with `count` pending pods."""
    items = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"web-{i}",
                "namespace": "default",
                "uid": f"uid-{i}",
                "labels": {"app": "web", "pod-template-hash": "5d8f9"},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": "web-5d8f9",
                        "uid": "rs-uid",
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "containers": [
                    {"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
                ],
                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}],
            },
            "status": {
                "phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            },
        }
        for i in range(count)
    ]
    return json.dumps({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items})


def import_seconds(runs: int = 5) -> float:
    """Median wall time of `import kubernetes.client` in a fresh interpreter."""
    samples = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", _IMPORT], capture_output=True, text=True, check=True)
        samples.append(float(done.stdout))
    return statistics.median(samples)


def client_models_seconds(body: str) -> float:
    """Time to deserialise the body into V1PodList with the installed client (36.x or 37.x API)."""
    from kubernetes import client

    api: Any = client.ApiClient()

    class _Response:
        data = body

    start = time.perf_counter()
    try:
        api.deserialize(_Response(), "V1PodList")  # 36.x: a response object
    except TypeError:
        api.deserialize(body, "V1PodList", "application/json")  # 37.x: the text and its content type
    return time.perf_counter() - start


def nodewright_seconds(body: str) -> float:
    """Time of Nodewright's path: parse the raw JSON straight into frozen model pods."""
    start = time.perf_counter()
    pods = [Pod.parse(item) for item in json.loads(body)["items"]]
    assert pods
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    """Print the three figures for the installed client."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=10_000)
    args = parser.parse_args(argv)
    import kubernetes

    body = pod_list(args.pods)
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"kubernetes {kubernetes.__version__}")
    print(f"  import kubernetes.client (median of 5): {import_seconds() * 1000:.0f} ms")
    print(f"  {args.pods} pods into client models:     {client_models_seconds(body) * 1000:.0f} ms")
    print(f"  {args.pods} pods, json.loads + Pod.parse: {nodewright_seconds(body) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
