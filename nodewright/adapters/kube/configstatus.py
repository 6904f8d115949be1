"""Status writes for the configuration objects Nodewright reads from the cluster (configSource=crd).

Role: `nodewright.controllers.configstatus.StatusWrites` for the Lambdas: a JSON merge patch of
the status subresource of a CapacityBuffer (`autoscaling.x-k8s.io`, namespaced) or a NodeOverlay
(`karpenter.sh/v1alpha1`, cluster-scoped), under the API version the object was read with.
Requests go through the cluster adapter's request path (counted in its meter as a patch of
`capacitybuffers/status` or `nodeoverlays/status`, retried on 429/5xx, one retry after a 401);
404 (the object was deleted meanwhile) answers False, any other error is raised.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from kubernetes.client import CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from nodewright.adapters.kube.cluster import MERGE_PATCH, KubeCluster

PLURALS = {"CapacityBuffer": "capacitybuffers", "NodeOverlay": "nodeoverlays"}


class KubeConfigStatus:
    """Writes CapacityBuffer and NodeOverlay status through the cluster adapter (module docstring)."""

    def __init__(self, cluster: KubeCluster) -> None:
        self._cluster = cluster
        # The cluster adapter's own client and timeout: one connection pool, one token source.
        self._api = CustomObjectsApi(cluster.transport.api_client)

    def put_status(
        self, kind: str, api_version: str, namespace: str | None, name: str, status: Mapping[str, Any]
    ) -> bool:
        """Merge `status` into the object's status subresource; False when there is no such object."""
        plural = PLURALS[kind]
        group, version = api_version.split("/", 1)
        body = {"status": dict(status)}
        options: dict[str, Any] = {
            "_content_type": MERGE_PATCH,
            "_preload_content": False,
            "_request_timeout": self._cluster.transport.timeout,
        }
        if namespace:
            send = functools.partial(
                self._api.patch_namespaced_custom_object_status,
                group,
                version,
                namespace,
                plural,
                name,
                body,
                **options,
            )
        else:
            send = functools.partial(
                self._api.patch_cluster_custom_object_status, group, version, plural, name, body, **options
            )
        resource = f"{plural}/status"
        where = f"{namespace}/{name}" if namespace else name
        try:
            response = self._cluster.transport.request(
                "patch", resource, f"patch {kind} {where} status", send, mapped=(404,)
            )
        except ApiException:
            return False  # only 404 is mapped: deleted since it was read
        self._cluster.transport.read(response, "patch", resource)
        return True
