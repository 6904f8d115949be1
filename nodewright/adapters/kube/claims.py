"""`nodewright.io/v1 NodeClaim` objects through the official client: the kube side of the mirror.

Role: `nodewright.ports.ClaimObjects` for the Lambdas. Requests go through the cluster adapter's
request path (`Transport.request`: counted in its meter as verb on `nodeclaims`, so the
`KubeApiRequests` metric and the API-load figures include them; retried on 429/5xx; one retry
after a 401 with a refreshed token). One LIST per cold start tells the mirror what exists; then
it writes only what changed. The claims' writer sends each object as one server-side apply
(PATCH `application/apply-patch+yaml`, `fieldManager` `FIELD_MANAGER`, `force`): the API server
creates or updates it, and keeps the conditions the consolidator set (the CRD declares
`status.conditions` a map keyed by type), so no GET is needed first. An apply answered 404 (a
server that does not create on apply, as kmock 0.8; on a real one the CRD is gone and the create
fails too) is sent again as a create. The consolidator merge-patches its conditions onto an
existing object (404: None, nothing created). DELETE removes; a delete that meets 404 is done. A LIST answering
404 (the CRD is not installed) or 403 (the role does not grant it) turns the mirror off: None
says so.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from nodewright.adapters.kube.cluster import MERGE_PATCH, KubeCluster
from nodewright.model.claimobject import GROUP, PLURAL, VERSION

PAGE_SIZE = 500
APPLY_PATCH = "application/apply-patch+yaml"
# The field manager of the claims' writer's applies (managedFields shows it).
FIELD_MANAGER = "nodewright-provisioner"


class KubeClaimObjects:
    """`ClaimObjects` over the cluster adapter's client and request path (see the module docstring)."""

    def __init__(
        self, cluster: KubeCluster, api_client: ApiClient | None = None, *, request_timeout: float = 30.0
    ) -> None:
        self._cluster = cluster
        # The cluster adapter's own client by default: one connection pool, one token source.
        self._api = CustomObjectsApi(api_client if api_client is not None else cluster.transport.api_client)
        self._timeout = request_timeout

    def claim_objects(self) -> dict[str, dict[str, Any]] | None:
        """Every NodeClaim object by name, following `continue`; None when the CRD is not installed."""
        objects: dict[str, dict[str, Any]] = {}
        token = ""
        while True:
            params: dict[str, Any] = {"limit": PAGE_SIZE}
            if token:
                params["_continue"] = token
            try:
                listing = self._send(
                    "list",
                    "list nodeclaims",
                    functools.partial(self._api.list_cluster_custom_object, GROUP, VERSION, PLURAL, **params),
                    mapped=(403, 404),
                )
            except ApiException:
                # 404: the CRD is not installed; 403: the function's ClusterRole does not grant it.
                return None
            for item in listing.get("items") or ():
                objects[str(item["metadata"]["name"])] = item
            token = str((listing.get("metadata") or {}).get("continue") or "")
            if not token:
                return objects

    def patch_claim_object(self, name: str, patch: Mapping[str, Any]) -> dict[str, Any] | None:
        """Merge-patch an existing object; None when there is none (404: nothing is created)."""
        try:
            return self._patch(name, patch)
        except ApiException:
            return None  # only 404 is mapped

    def apply_claim_object(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Server-side apply the object (see the module docstring and `nodewright.ports.ClaimObjects`)."""
        name = str(manifest["metadata"]["name"])
        body = dict(manifest)
        # The server stamps creationTimestamp; an applied one would be refused as a conflict of owners.
        body["metadata"] = {k: v for k, v in manifest["metadata"].items() if k != "creationTimestamp"}
        try:
            return self._send(
                "patch",
                f"apply nodeclaim {name}",
                functools.partial(
                    self._api.patch_cluster_custom_object,
                    GROUP,
                    VERSION,
                    PLURAL,
                    name,
                    body,
                    field_manager=FIELD_MANAGER,
                    force=True,
                    _content_type=APPLY_PATCH,
                ),
                mapped=(404,),
            )
        except ApiException:
            return self._create(manifest)  # only 404 is mapped: a server that does not create on apply

    def delete_claim_object(self, name: str) -> None:
        """Delete the object; a missing one counts as deleted."""
        try:
            self._send(
                "delete",
                f"delete nodeclaim {name}",
                functools.partial(self._api.delete_cluster_custom_object, GROUP, VERSION, PLURAL, name),
                mapped=(404,),
            )
        except ApiException:
            return  # 404: already gone

    def put_nodepool_status(self, name: str, status: Mapping[str, Any]) -> bool:
        """Merge-patch the NodePool's status subresource; False when it has none (404)."""
        try:
            self._send(
                "patch",
                f"patch nodepool {name} status",
                functools.partial(
                    self._api.patch_cluster_custom_object_status,
                    GROUP,
                    VERSION,
                    "nodepools",
                    name,
                    {"status": dict(status)},
                    _content_type=MERGE_PATCH,
                ),
                mapped=(404,),
                resource="nodepools/status",
            )
        except ApiException:
            return False  # only 404 is mapped
        return True

    def _create(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        name = manifest["metadata"]["name"]
        return self._send(
            "create",
            f"create nodeclaim {name}",
            functools.partial(self._api.create_cluster_custom_object, GROUP, VERSION, PLURAL, dict(manifest)),
            mapped=(409,),
        )

    def _patch(self, name: str, manifest: Mapping[str, Any]) -> dict[str, Any]:
        body = {key: value for key, value in manifest.items() if key not in ("apiVersion", "kind", "metadata")}
        metadata = {k: v for k, v in (manifest.get("metadata") or {}).items() if k != "creationTimestamp"}
        if metadata:
            body["metadata"] = metadata
        return self._send(
            "patch",
            f"patch nodeclaim {name}",
            functools.partial(
                self._api.patch_cluster_custom_object, GROUP, VERSION, PLURAL, name, body, _content_type=MERGE_PATCH
            ),
            mapped=(404,),
        )

    def _send(
        self, verb: str, call: str, send: Any, *, mapped: tuple[int, ...], resource: str = PLURAL
    ) -> dict[str, Any]:
        """One request through the cluster adapter's path; the body is read raw so its bytes are counted."""
        response = self._cluster.transport.request(
            verb,
            resource,
            call,
            functools.partial(send, _preload_content=False, _request_timeout=self._timeout),
            mapped=mapped,
        )
        data = self._cluster.transport.read(response, verb, resource)
        answer: dict[str, Any] = json.loads(data) if data else {}
        return answer
