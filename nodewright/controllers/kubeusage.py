"""What a function's Kubernetes reads and writes cost, published as metrics.

`KubeApiRequests` and `KubeApiBytes` (bytes received) from `Cluster.usage()`: one total per
invocation, which the dashboard graphs, and one `kube-api-usage` log record with the split by verb
and resource (what to look at when the total grows). The split is logged, not a metric: every
dimension value would be another custom metric, each billed by CloudWatch every month.
"""

from __future__ import annotations

from nodewright.ports import Cluster, Observer


def publish_api_usage(cluster: Cluster, observer: Observer) -> None:
    """Emit the requests and bytes since the last call: totals as metrics, the split as a log record."""
    usages = cluster.usage()
    observer.metric("KubeApiRequests", sum(u.requests for u in usages))
    observer.metric("KubeApiBytes", sum(u.bytes for u in usages), "Bytes")
    if usages:
        observer.decision(
            "kube-api-usage",
            calls=[{"verb": u.verb, "resource": u.resource, "requests": u.requests, "bytes": u.bytes} for u in usages],
        )
