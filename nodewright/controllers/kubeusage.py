"""What a function's Kubernetes reads and writes cost, published as metrics.

`KubeApiRequests` and `KubeApiBytes` (bytes received) from `Cluster.usage()`: one total per
invocation (the dashboard's API-load graphs read it) and one data point per verb and resource
(what to look at when the total grows).
"""

from __future__ import annotations

from nodewright.ports import Cluster, Observer


def publish_api_usage(cluster: Cluster, observer: Observer) -> None:
    """Emit the requests and bytes since the last call, in total and per verb and resource."""
    usages = cluster.usage()
    observer.metric("KubeApiRequests", sum(u.requests for u in usages))
    observer.metric("KubeApiBytes", sum(u.bytes for u in usages), "Bytes")
    for usage in usages:
        observer.metric("KubeApiRequests", usage.requests, verb=usage.verb, resource=usage.resource)
        observer.metric("KubeApiBytes", usage.bytes, "Bytes", verb=usage.verb, resource=usage.resource)
