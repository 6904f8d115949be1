"""The in-memory API server's writes: node and node-status patches, node deletion, the
eviction subresource, and Event creation and series patches.

Role: the `Writes` part of `ApiServer` (`nodewright.inmemory.apiserver`, whose docstring lists what
each endpoint accepts and answers). Each write calls the cluster's own method (`cordon`,
`taint`, `set_node_condition`, `delete_node`, `evict`, `create_event`, ...) holding `lock`, so
the cluster's rules and its changes log see it as they see a direct call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from nodewright.inmemory.apihttp import ServerState
from nodewright.inmemory.apiwire import (
    _CODE_SUFFIX,
    MERGE_PATCH,
    RESOURCES,
    STRATEGIC_MERGE_PATCH,
    _Failure,
    _json_object,
    _merge,
    _not_found,
    _Route,
    _status,
    _with_taint,
)
from nodewright.model.errors import InvalidValue
from nodewright.model.event import StoredEvent
from nodewright.model.node import Node
from nodewright.model.pod import Pod, parse_timestamp
from nodewright.model.taints import Taint


class Writes(ServerState):
    """Node, eviction and Event writes (module docstring)."""

    def _patch_node(self, name: str, content_type: str, body: bytes) -> bytes:
        if content_type.partition(";")[0].strip() != MERGE_PATCH:
            raise _Failure(415, f"the body of a node PATCH must be {MERGE_PATCH}, not {content_type!r}")
        patch = _json_object(body)
        with self.lock:
            with self._changed:
                stored = self._kinds["node"].objects.get(name)
            if stored is None:
                raise _not_found(RESOURCES[0], name)
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted and str(wanted) != str(stored.rv):
                raise _Failure(
                    409,
                    f'Operation cannot be fulfilled on nodes "{name}": the object has been modified; '
                    "please apply your changes to the latest version and try again",
                    {"name": name, "kind": "nodes"},
                )
            self._apply_node(stored.model, _merge(stored.manifest, patch), patch)
            with self._changed:
                current = self._kinds["node"].objects.get(name)
        if current is None:
            raise _not_found(RESOURCES[0], name)
        return current.body

    def _patch_node_status(self, name: str, content_type: str, body: bytes) -> bytes:
        if content_type.partition(";")[0].strip() not in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
            raise _Failure(415, f"the body of a node status PATCH must be a merge patch, not {content_type!r}")
        conditions = (_json_object(body).get("status") or {}).get("conditions")
        if not isinstance(conditions, list):
            raise _Failure(422, "status.conditions: a list of conditions is required")
        with self.lock:
            with self._changed:
                if name not in self._kinds["node"].objects:
                    raise _not_found(RESOURCES[0], name)
            for index, condition in enumerate(conditions):
                kind = condition.get("type") if isinstance(condition, Mapping) else None
                if not kind:
                    raise _Failure(422, f"status.conditions[{index}].type: Required value")
                try:
                    self.cluster.set_node_condition(
                        name, str(kind), str(condition.get("status")), str(condition.get("reason") or "")
                    )
                except ValueError as error:
                    raise _Failure(422, f"status.conditions[{index}]: {error}") from None
            with self._changed:
                current = self._kinds["node"].objects.get(name)
        if current is None:
            raise _not_found(RESOURCES[0], name)
        return current.body

    def _apply_node(self, node: Node, merged: Mapping[str, Any], patch: Mapping[str, Any]) -> None:
        """Carry a merged node manifest into the cluster: the shapes of `KubeCluster.cordon` and
        `uncordon` as those calls, one taint added or removed as `taint`/`untaint`, and whatever
        is still different as `replace_node`.
        """
        spec = merged.get("spec") or {}
        metadata = merged.get("metadata") or {}
        try:
            taints = tuple(Taint.parse(t) for t in spec.get("taints") or ())
        except (InvalidValue, AttributeError, TypeError) as error:
            raise _Failure(422, f"spec.taints: {error}") from None
        unschedulable = bool(spec.get("unschedulable"))
        labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
        annotations = {str(k): str(v) for k, v in (metadata.get("annotations") or {}).items()}
        patched = patch.get("spec") or {}
        added = [t for t in taints if t not in node.taints]
        removed = [t for t in node.taints if t not in taints]
        cluster, name = self.cluster, node.name
        if "unschedulable" in patched and unschedulable:
            taint = added[0] if len(added) == 1 else None
            if len(added) <= 1 and taints == _with_taint(node.taints, taint):
                cluster.cordon(name, taint)
        elif "unschedulable" in patched:
            keys = {t.key for t in removed}
            key = next(iter(keys)) if len(keys) == 1 else None
            if len(keys) <= 1 and taints == tuple(t for t in node.taints if key is None or t.key != key):
                cluster.uncordon(name, key)
        elif len(added) == 1 and taints == _with_taint(node.taints, added[0]):
            cluster.taint(name, added[0])
        elif not added and len({(t.key, t.effect) for t in removed}) == 1:
            cluster.untaint(name, removed[0].key, removed[0].effect)
        with self._changed:
            stored = self._kinds["node"].objects.get(name)
        if stored is None:
            return
        current: Node = stored.model
        wanted = replace(current, unschedulable=unschedulable, taints=taints, labels=labels, annotations=annotations)
        if wanted != current:
            cluster.replace_node(wanted)

    def _create_event(self, route: _Route, body: bytes) -> bytes:
        data = _json_object(body)
        named = str((data.get("metadata") or {}).get("namespace") or route.namespace)
        if named != route.namespace:
            raise _Failure(400, "the namespace of the provided object does not match the namespace sent on the request")
        try:
            stored = StoredEvent.parse(data, f"Event {route.namespace}/{(data.get('metadata') or {}).get('name')}")
        except InvalidValue as error:
            raise _Failure(422, str(error)) from None
        stored = replace(stored, namespace=route.namespace)
        with self.lock:
            if not self.cluster.create_event(stored):
                raise _Failure(
                    409,
                    f'events.events.k8s.io "{stored.name}" already exists',
                    {"name": stored.name, "group": "events.k8s.io", "kind": "events"},
                )
            with self._changed:
                return self._kinds["event"].objects[f"{stored.namespace}/{stored.name}"].body

    def _patch_event(self, route: _Route, content_type: str, body: bytes) -> bytes:
        """A merge patch of an Event; only `series` (count, lastObservedTime) takes effect."""
        if content_type.partition(";")[0].strip() != MERGE_PATCH:
            raise _Failure(415, f"the body of an event PATCH must be {MERGE_PATCH}, not {content_type!r}")
        series = _json_object(body).get("series") or {}
        with self.lock:
            with self._changed:
                stored = self._kinds["event"].objects.get(route.key)
            if stored is None:
                raise _not_found(route.resource, route.name)
            current: StoredEvent = stored.model
            try:
                count = int(series.get("count") or current.count)
                last = parse_timestamp(series.get("lastObservedTime")) or current.last
            except (ValueError, TypeError) as error:
                raise _Failure(422, f"series: {error}") from None
            self.cluster.patch_event_series(route.namespace, route.name, count, last)
            with self._changed:
                return self._kinds["event"].objects[route.key].body

    def _delete_node(self, name: str) -> bytes:
        with self.lock:
            with self._changed:
                exists = name in self._kinds["node"].objects
            if not exists:
                raise _not_found(RESOURCES[0], name)
            self.cluster.delete_node(name)
        return _status(200, "", {"name": name, "kind": "nodes"})

    def _evict(self, route: _Route, body: bytes) -> tuple[int, bytes]:
        eviction = _json_object(body) if body else {}
        named = (eviction.get("metadata") or {}).get("name")
        if named and named != route.name:
            raise _Failure(400, f"name in URL does not match name in Eviction object: {named} != {route.name}")
        uid = ((eviction.get("deleteOptions") or {}).get("preconditions") or {}).get("uid") or ""
        with self.lock:
            result = self.cluster.evict(Pod(namespace=route.namespace, name=route.name, uid=str(uid)))
        if result.outcome == "evicted":
            return 201, _status(201, "")
        matched = _CODE_SUFFIX.match(result.message)
        if matched:
            message, code = matched[1], int(matched[2])
        else:
            message, code = result.message, 429 if result.outcome == "blocked" else 409
        details: dict[str, Any] = {"name": route.name, "kind": "pods"}
        if code == 429:
            details["causes"] = [{"reason": "DisruptionBudget", "message": message}]
        raise _Failure(code, message, details)
