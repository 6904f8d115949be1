"""The in-memory cluster's DRA objects: DeviceClasses, ResourceClaims, ResourceClaimTemplates.

Role: `ClusterDevices`, one part of `InMemoryCluster`, keeps the three `resource.k8s.io/v1` kinds
as the manifests they were written as (the scheduler's view, `model.dra.DeviceObjects`, is parsed
from them once per change) and tells the cluster's listeners of each change, so the API emulator
serves them (`apidra.py`) as it serves pods. Every write is checked by parsing it first: a bad
object is refused with the InvalidValue naming its field, and nothing is stored.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.inmemory.clusterstore import ADDED, DELETED, MODIFIED, ClusterStore
from nodewright.model.dra import DeviceClass, DeviceObjects, ResourceClaim, ResourceClaimTemplate
from nodewright.model.errors import InvalidValue
from nodewright.model.manifests import format_timestamp

# Object kind -> the listener kind the emulator serves it under.
LISTENER_KINDS = {
    "DeviceClass": "deviceclass",
    "ResourceClaim": "resourceclaim",
    "ResourceClaimTemplate": "resourceclaimtemplate",
}
_PARSERS = {
    "DeviceClass": DeviceClass.parse,
    "ResourceClaim": ResourceClaim.parse,
    "ResourceClaimTemplate": ResourceClaimTemplate.parse,
}


@dataclass(frozen=True, slots=True)
class DeviceObject:
    """One stored DRA object as listeners get it: its kind, key and manifest."""

    kind: str
    namespace: str
    name: str
    manifest: Mapping[str, Any]


class ClusterDevices:
    """The DRA objects of one in-memory cluster (module docstring)."""

    def __init__(self, store: ClusterStore) -> None:
        self._store = store
        self._objects: dict[str, dict[str, DeviceObject]] = {kind: {} for kind in LISTENER_KINDS}
        self._parsed: DeviceObjects | None = DeviceObjects()

    def put(self, manifest: Mapping[str, Any]) -> DeviceObject:
        """Create or replace the object `manifest` describes; InvalidValue when it is not one of
        the three kinds or does not parse (nothing stored then).
        """
        kind = str(manifest.get("kind") or "")
        parse = _PARSERS.get(kind)
        if parse is None:
            raise InvalidValue(f"kind {kind!r} is not a DeviceClass, ResourceClaim or ResourceClaimTemplate")
        parse(manifest)
        meta = dict(manifest.get("metadata") or {})
        namespaced = kind != "DeviceClass"
        namespace = str(meta.get("namespace") or "default") if namespaced else ""
        if namespaced:
            meta["namespace"] = namespace
        meta.setdefault("uid", f"{kind.lower()}-{namespace}-{meta['name']}")
        meta.setdefault("creationTimestamp", format_timestamp(self._store.clock.now()))
        body = {**copy.deepcopy(dict(manifest)), "apiVersion": "resource.k8s.io/v1", "metadata": meta}
        obj = DeviceObject(kind, namespace, str(meta["name"]), body)
        key = f"{namespace}/{obj.name}" if namespaced else obj.name
        event = MODIFIED if key in self._objects[kind] else ADDED
        self._objects[kind][key] = obj
        self._parsed = None
        self._store.bump(LISTENER_KINDS[kind], key)
        self._store.notify(LISTENER_KINDS[kind], event, obj)
        return obj

    def delete(self, kind: str, namespace: str, name: str) -> DeviceObject | None:
        """Delete one object; None when there was none."""
        key = f"{namespace}/{name}" if kind != "DeviceClass" else name
        obj = self._objects.get(kind, {}).pop(key, None)
        if obj is not None:
            self._parsed = None
            self._store.bump(LISTENER_KINDS[kind], key)
            self._store.notify(LISTENER_KINDS[kind], DELETED, obj)
        return obj

    def get(self, kind: str, namespace: str, name: str) -> DeviceObject | None:
        """One stored object, or None."""
        return self._objects.get(kind, {}).get(f"{namespace}/{name}" if kind != "DeviceClass" else name)

    def all(self) -> list[DeviceObject]:
        """Every stored object, by kind then key."""
        return [self._objects[kind][key] for kind in LISTENER_KINDS for key in sorted(self._objects[kind])]

    def objects(self) -> DeviceObjects:
        """The scheduler's view of the stored objects (parsed once per change)."""
        if self._parsed is None:
            by_kind = {kind: [o.manifest for o in self._objects[kind].values()] for kind in LISTENER_KINDS}
            self._parsed = DeviceObjects.parse(
                by_kind["DeviceClass"], by_kind["ResourceClaim"], by_kind["ResourceClaimTemplate"]
            )
        return self._parsed
