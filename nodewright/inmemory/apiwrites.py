"""The in-memory API server's writes to the cluster's kinds: node and node-status patches, node
and pod deletion, the eviction subresource, and Event creation and series patches.

Role: `Writes`, handed the cluster, the server's `ObjectStore` and the cluster `lock` (see
`nodewright.inmemory.apiserver`, whose docstring lists what each endpoint accepts and answers).
Each write calls the cluster's own method (`cordon`, `taint`, `set_node_condition`,
`delete_node`, `remove_pod`, `evict`, `create_event`, ...) holding `lock`, so the cluster's rules
and its changes log see it as they see a direct call; the answer is read back from the store,
which the cluster's listener has updated by then.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from nodewright.inmemory.apipatch import BUILTIN_LIST_KEYS, media_type, patched
from nodewright.inmemory.apisource import ServedCluster
from nodewright.inmemory.apistore import ObjectStore
from nodewright.inmemory.apiwire import (
    CODE_SUFFIX,
    MERGE_PATCH,
    RESOURCES,
    STRATEGIC_MERGE_PATCH,
    Failure,
    Route,
    Stored,
    conflict,
    encode,
    json_object,
    not_found,
    status_body,
    with_taint,
)
from nodewright.model.errors import InvalidValue
from nodewright.model.event import StoredEvent
from nodewright.model.node import Node
from nodewright.model.pod import Pod, parse_timestamp
from nodewright.model.taints import Taint


class Writes:
    """Node, pod, eviction and Event writes (module docstring)."""

    def __init__(self, cluster: ServedCluster, store: ObjectStore, lock: threading.RLock) -> None:
        self._cluster = cluster
        self._store = store
        self._lock = lock

    def _stored(self, kind: str, key: str) -> Stored | None:
        with self._store.condition:
            return self._store.get(kind, key)

    def patch_node(self, name: str, content_type: str, body: bytes, *, dry: bool = False) -> bytes:
        """Any of the four patch types; what changed goes to the cluster (`_apply_node`). `dry`
        (`dryRun=All`) answers the patched object without changing anything.
        """
        merging = media_type(content_type) in (MERGE_PATCH, STRATEGIC_MERGE_PATCH)
        named = set((json_object(body).get("spec") or {}) if body and merging else ())
        return self._write_node(
            name, lambda current: patched(current, content_type, body, BUILTIN_LIST_KEYS), named, dry=dry
        )

    def replace_node(self, name: str, body: bytes, *, dry: bool = False) -> bytes:
        """PUT of a whole Node (`kubectl replace`): the fields that take effect on a patch
        (`spec.unschedulable`, `spec.taints`, labels, annotations) as sent, a field left out
        cleared; the status stays the cluster's. 400 when the body names another node.
        """
        obj = json_object(body)
        if str((obj.get("metadata") or {}).get("name") or "") != name:
            raise Failure(400, "the name of the object does not match the name on the URL")

        def replaced(current: Mapping[str, Any]) -> dict[str, Any]:
            return dict(obj, status=current.get("status"))

        return self._write_node(name, replaced, set(), dry=dry)

    def _write_node(
        self,
        name: str,
        change: Callable[[Mapping[str, Any]], dict[str, Any]],
        named: set[str],
        *,
        dry: bool,
    ) -> bytes:
        """The node's manifest changed by `change`, checked (resourceVersion precondition) and,
        unless `dry`, carried into the cluster; `named` are spec fields the request named.
        """
        with self._lock:
            stored = self._stored("node", name)
            if stored is None:
                raise not_found(RESOURCES[0], name)
            merged = change(stored.manifest)
            wanted = (merged.get("metadata") or {}).get("resourceVersion")
            if wanted and str(wanted) != str(stored.rv):
                raise conflict(RESOURCES[0], name)
            if dry:
                metadata = dict(merged.get("metadata") or {}, resourceVersion=str(stored.rv))
                return encode(dict(merged, metadata=metadata))
            before, after = stored.manifest.get("spec") or {}, merged.get("spec") or {}
            touched = {k for k in set(before) | set(after) if before.get(k) != after.get(k)} | named
            self._apply_node(stored.model, merged, touched)
            current = self._stored("node", name)
        if current is None:
            raise not_found(RESOURCES[0], name)
        return current.body

    def patch_node_status(self, name: str, content_type: str, body: bytes) -> bytes:
        """The kubelet's condition writes (`status.conditions`, merged by type)."""
        if content_type.partition(";")[0].strip() not in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
            raise Failure(415, f"the body of a node status PATCH must be a merge patch, not {content_type!r}")
        conditions = (json_object(body).get("status") or {}).get("conditions")
        if not isinstance(conditions, list):
            raise Failure(422, "status.conditions: a list of conditions is required")
        with self._lock:
            if self._stored("node", name) is None:
                raise not_found(RESOURCES[0], name)
            for index, condition in enumerate(conditions):
                kind = condition.get("type") if isinstance(condition, Mapping) else None
                if not kind:
                    raise Failure(422, f"status.conditions[{index}].type: Required value")
                try:
                    self._cluster.set_node_condition(
                        name, str(kind), str(condition.get("status")), str(condition.get("reason") or "")
                    )
                except ValueError as error:
                    raise Failure(422, f"status.conditions[{index}]: {error}") from None
            current = self._stored("node", name)
        if current is None:
            raise not_found(RESOURCES[0], name)
        return current.body

    def _apply_node(self, node: Node, merged: Mapping[str, Any], touched: set[str]) -> None:
        """Carry a patched node manifest into the cluster (`touched`: the spec fields the patch
        named or changed): the shapes of `KubeCluster.cordon` and `uncordon` (and kubectl's) as
        those calls, one taint added or removed as `taint`/`untaint`, and whatever is still
        different as `replace_node`.
        """
        spec = merged.get("spec") or {}
        metadata = merged.get("metadata") or {}
        try:
            taints = tuple(Taint.parse(t) for t in spec.get("taints") or ())
        except (InvalidValue, AttributeError, TypeError) as error:
            raise Failure(422, f"spec.taints: {error}") from None
        unschedulable = bool(spec.get("unschedulable"))
        labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
        annotations = {str(k): str(v) for k, v in (metadata.get("annotations") or {}).items()}
        added = [t for t in taints if t not in node.taints]
        removed = [t for t in node.taints if t not in taints]
        cluster, name = self._cluster, node.name
        if "unschedulable" in touched and unschedulable:
            taint = added[0] if len(added) == 1 else None
            if len(added) <= 1 and taints == with_taint(node.taints, taint):
                cluster.cordon(name, taint)
        elif "unschedulable" in touched:
            keys = {t.key for t in removed}
            key = next(iter(keys)) if len(keys) == 1 else None
            if len(keys) <= 1 and taints == tuple(t for t in node.taints if key is None or t.key != key):
                cluster.uncordon(name, key)
        elif len(added) == 1 and taints == with_taint(node.taints, added[0]):
            cluster.taint(name, added[0])
        elif not added and len({(t.key, t.effect) for t in removed}) == 1:
            cluster.untaint(name, removed[0].key, removed[0].effect)
        stored = self._stored("node", name)
        if stored is None:
            return
        current: Node = stored.model
        wanted = replace(current, unschedulable=unschedulable, taints=taints, labels=labels, annotations=annotations)
        if wanted != current:
            cluster.replace_node(wanted)

    def create_event(self, route: Route, body: bytes) -> bytes:
        """An events.k8s.io/v1 Event, through `cluster.create_event`."""
        data = json_object(body)
        named = str((data.get("metadata") or {}).get("namespace") or route.namespace)
        if named != route.namespace:
            raise Failure(400, "the namespace of the provided object does not match the namespace sent on the request")
        try:
            stored = StoredEvent.parse(data, f"Event {route.namespace}/{(data.get('metadata') or {}).get('name')}")
        except InvalidValue as error:
            raise Failure(422, str(error)) from None
        stored = replace(stored, namespace=route.namespace)
        with self._lock:
            if not self._cluster.create_event(stored):
                raise Failure(
                    409,
                    f'events.events.k8s.io "{stored.name}" already exists',
                    {"name": stored.name, "group": "events.k8s.io", "kind": "events"},
                )
            created = self._stored("event", f"{stored.namespace}/{stored.name}")
        if created is None:
            raise not_found(route.resource, stored.name)
        return created.body

    def patch_event(self, route: Route, content_type: str, body: bytes) -> bytes:
        """A merge patch of an Event; only `series` (count, lastObservedTime) takes effect."""
        if content_type.partition(";")[0].strip() != MERGE_PATCH:
            raise Failure(415, f"the body of an event PATCH must be {MERGE_PATCH}, not {content_type!r}")
        series = json_object(body).get("series") or {}
        with self._lock:
            stored = self._stored("event", route.key)
            if stored is None:
                raise not_found(route.resource, route.name)
            current: StoredEvent = stored.model
            try:
                count = int(series.get("count") or current.count)
                last = parse_timestamp(series.get("lastObservedTime")) or current.last
            except (ValueError, TypeError) as error:
                raise Failure(422, f"series: {error}") from None
            self._cluster.patch_event_series(route.namespace, route.name, count, last)
            after = self._stored("event", route.key)
        if after is None:
            raise not_found(route.resource, route.name)
        return after.body

    def patch_pod(self, route: Route, content_type: str, body: bytes) -> bytes:
        """Any of the four patch types on a pod; only `metadata.annotations` take effect
        (`cluster.annotate_pod`), the rest of the pod is the simulation's. A changed
        `metadata.uid` is refused with 422 (immutable, as kube-apiserver refuses it); a
        `metadata.resourceVersion` that is not the stored one with 409.
        """
        with self._lock:
            stored = self._stored("pod", route.key)
            if stored is None:
                raise not_found(route.resource, route.name)
            merged = patched(stored.manifest, content_type, body, BUILTIN_LIST_KEYS)
            before, after = stored.manifest.get("metadata") or {}, merged.get("metadata") or {}
            if str(after.get("uid") or "") != str(before.get("uid") or ""):
                raise Failure(
                    422,
                    f'Pod "{route.name}" is invalid: metadata.uid: Invalid value: "{after.get("uid")}": '
                    "field is immutable",
                    {"name": route.name, "kind": "pods"},
                )
            wanted = after.get("resourceVersion")
            if wanted and str(wanted) != str(stored.rv):
                raise conflict(route.resource, route.name)
            old, new = before.get("annotations") or {}, after.get("annotations") or {}
            change: dict[str, str | None] = {k: None for k in old if k not in new}
            change.update({str(k): str(v) for k, v in new.items() if old.get(k) != v})
            if change:
                self._cluster.annotate_pod(route.key, change)
            current = self._stored("pod", route.key)
        if current is None:
            raise not_found(route.resource, route.name)
        return current.body

    def delete(self, route: Route, body: bytes) -> bytes:
        """DELETE of a node (`cluster.delete_node`, its pods with it) or a pod
        (`cluster.remove_pod`, which a controller's pod is recreated after), with DeleteOptions'
        `preconditions` (uid, resourceVersion: 409 when they do not hold) and
        `gracePeriodSeconds` (accepted; the in-memory cluster deletes at once). Answers the
        object as last stored, as kube-apiserver answers a completed deletion.
        """
        options = json_object(body) if body.strip() else {}
        if options.get("dryRun"):
            raise Failure(400, "dryRun is not supported by this emulator")
        resource = route.resource
        kind = resource.kind
        with self._lock:
            stored = self._stored(kind, route.key)
            if stored is None:
                raise not_found(resource, route.name)
            metadata = stored.manifest.get("metadata") or {}
            preconditions = options.get("preconditions") or {}
            for field, actual in (("uid", metadata.get("uid")), ("resourceVersion", str(stored.rv))):
                wanted = preconditions.get(field)
                if wanted and str(wanted) != str(actual or ""):
                    raise Failure(
                        409,
                        f"Precondition failed: {field.capitalize() if field == 'uid' else field}: in precondition: "
                        f"{wanted}, in object meta: {actual or ''}",
                        {"name": route.name, "kind": resource.plural},
                    )
            if kind == "node":
                self._cluster.delete_node(route.name)
            else:
                self._cluster.remove_pod(route.key)
        return stored.body

    def evict(self, route: Route, body: bytes) -> tuple[int, bytes]:
        """The eviction subresource: 201 evicted, 429 refused by a PDB, 404, 409."""
        eviction = json_object(body) if body else {}
        named = (eviction.get("metadata") or {}).get("name")
        if named and named != route.name:
            raise Failure(400, f"name in URL does not match name in Eviction object: {named} != {route.name}")
        uid = ((eviction.get("deleteOptions") or {}).get("preconditions") or {}).get("uid") or ""
        with self._lock:
            result = self._cluster.evict(Pod(namespace=route.namespace, name=route.name, uid=str(uid)))
        if result.outcome == "evicted":
            return 201, status_body(201, "")
        matched = CODE_SUFFIX.match(result.message)
        if matched:
            message, code = matched[1], int(matched[2])
        else:
            message, code = result.message, 429 if result.outcome == "blocked" else 409
        details: dict[str, Any] = {"name": route.name, "kind": "pods"}
        if code == 429:
            details["causes"] = [{"reason": "DisruptionBudget", "message": message}]
        raise Failure(code, message, details)
