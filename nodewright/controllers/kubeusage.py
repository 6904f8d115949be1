"""What a function's Kubernetes reads and writes cost, published as metrics.

`KubeApiRequests` and `KubeApiBytes` (bytes received), one data point per verb and resource, from
`Cluster.usage()`: the dashboard's API-load widgets and the alarm on a runaway reader read them.
"""

from __future__ import annotations

from nodewright.ports import Cluster, Observer


def publish_api_usage(cluster: Cluster, observer: Observer) -> None:
    """Emit the requests and bytes since the last call, per verb and resource."""
    for usage in cluster.usage():
        observer.metric("KubeApiRequests", usage.requests, verb=usage.verb, resource=usage.resource)
        observer.metric("KubeApiBytes", usage.bytes, "Bytes", verb=usage.verb, resource=usage.resource)
