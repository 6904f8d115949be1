"""`resource.k8s.io/v1` in the API emulator: DeviceClasses, ResourceClaims, ResourceClaimTemplates.

Role: the three DRA kinds as kube-apiserver serves them, over the in-memory cluster's
`ClusterDevices` (which holds them for the scheduler's view). Reads (get, list, watch, field and
label selectors, tables for kubectl) are the emulator's common ones: the cluster's listener feeds
each change into the object store (`apifeed.py`). Writes come here: `DeviceWrites` creates (POST:
201, 409 when taken), patches (JSON merge, JSON patch, strategic merge treated as a merge: these
kinds have no list keys that matter to a patch; server-side apply 415) and deletes (200 with the
last state, 404 when missing), each through `ClusterDevices.put`, which refuses an object that
does not parse with 422 naming the field (the API server's own validation is wider: this checks
what the scheduler reads).

Deviations: no `generateName`, no `/status` subresource (a claim's `status.allocation` is written
with the object, as tests and scenarios set it), no admission of `resourceVersion` preconditions.
"""

from __future__ import annotations

import threading
from typing import Any

from nodewright.inmemory.apipatch import APPLY_PATCH, media_type, patched
from nodewright.inmemory.apisource import ServedCluster
from nodewright.inmemory.apistore import ObjectStore
from nodewright.inmemory.apiwire import Failure, Resource, Route, already_exists, not_found, posted
from nodewright.model.errors import InvalidValue

_PREFIX = "/apis/resource.k8s.io/v1"
DEVICECLASSES = Resource(
    "deviceclass",
    "deviceclasses",
    "DeviceClass",
    "resource.k8s.io/v1",
    _PREFIX,
    False,
    ("metadata.name",),
    singular="deviceclass",
)
RESOURCECLAIMS = Resource(
    "resourceclaim",
    "resourceclaims",
    "ResourceClaim",
    "resource.k8s.io/v1",
    _PREFIX,
    True,
    ("metadata.name", "metadata.namespace"),
    singular="resourceclaim",
    columns=(("State", "string", ".status.allocation.devices.results[0].device", 0, "An allocated device, if any."),),
)
RESOURCECLAIMTEMPLATES = Resource(
    "resourceclaimtemplate",
    "resourceclaimtemplates",
    "ResourceClaimTemplate",
    "resource.k8s.io/v1",
    _PREFIX,
    True,
    ("metadata.name", "metadata.namespace"),
    singular="resourceclaimtemplate",
)
DRA_RESOURCES = (DEVICECLASSES, RESOURCECLAIMS, RESOURCECLAIMTEMPLATES)
DRA_KINDS = frozenset(r.kind for r in DRA_RESOURCES)


class DeviceWrites:
    """POST, PATCH and DELETE of the DRA kinds (module docstring)."""

    def __init__(self, cluster: ServedCluster, store: ObjectStore, lock: threading.RLock) -> None:
        self._cluster = cluster
        self._store = store
        self._lock = lock

    def create(self, route: Route, body: bytes) -> bytes:
        """201's body: the stored object."""
        obj, _, name = posted(route, body)
        obj["kind"] = route.resource.object_kind
        with self._lock:
            if self._cluster.devices.get(route.resource.object_kind, route.namespace, name) is not None:
                raise already_exists(route.resource, name)
            return self._put(route, obj, name)

    def patch(self, route: Route, content_type: str, body: bytes) -> bytes:
        """200's body: the object after a merge, JSON or strategic merge patch."""
        if media_type(content_type) == APPLY_PATCH:
            raise Failure(415, f"server-side apply is not supported by this emulator on {route.resource.plural}")
        with self._lock:
            current = self._cluster.devices.get(route.resource.object_kind, route.namespace, route.name)
            if current is None:
                raise not_found(route.resource, route.name)
            after = patched(current.manifest, content_type, body, {})
            after["metadata"] = {**dict(current.manifest.get("metadata") or {}), **dict(after.get("metadata") or {})}
            after["metadata"]["name"] = route.name
            return self._put(route, after, route.name)

    def delete(self, route: Route) -> bytes:
        """200's body: the object as it was."""
        with self._lock:
            stored = self._store.get(route.resource.kind, route.key)
            if self._cluster.devices.delete(route.resource.object_kind, route.namespace, route.name) is None:
                raise not_found(route.resource, route.name)
        assert stored is not None
        return stored.body

    def _put(self, route: Route, obj: dict[str, Any], name: str) -> bytes:
        try:
            self._cluster.devices.put(obj)
        except InvalidValue as error:
            raise Failure(422, str(error)) from None
        stored = self._store.get(
            route.resource.kind, f"{route.namespace}/{name}" if route.resource.namespaced else name
        )
        if stored is None:
            raise not_found(route.resource, name)
        return stored.body
