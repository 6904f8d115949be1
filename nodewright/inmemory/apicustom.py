"""`apiextensions.k8s.io/v1` in the API emulator: CustomResourceDefinitions and their objects.

Role: `CustomResources`, handed the server's `ObjectStore`, its lock and clock. Creating a CRD
(POST, or `kubectl apply`'s GET-then-POST) stores it with the status kube-apiserver writes
(Established, NamesAccepted, acceptedNames) and registers each served version as a kind of the
store, so its objects are listed, watched, selected and printed (its
`additionalPrinterColumns`) by the same code as the built-in kinds. Its objects are created,
patched (JSON merge, JSON patch, server-side apply; a strategic merge patch answers 415 as for
any custom resource), their `/status` patched when the CRD declares that subresource (a write to
the main resource then keeps the stored status, one to `/status` changes only the status), and
deleted, or replaced (PUT: the whole object, as `kubectl replace` sends it; a missing object 404,
a body naming another object 400). Each write goes through the version's schema (`apischema.admit`: defaults, pruning,
validation, unknown fields refused with `fieldValidation=Strict`, 422 naming the field), then its CEL
rules (`apicel.violations`, transition rules against the stored object). The
server stamps uid, creationTimestamp, generation (moved by a spec change) and resourceVersion
(optimistic concurrency: a body's resourceVersion that is not the stored one answers 409).
Deleting a CRD deletes its objects. With `dryRun=All` every write is admitted, defaulted and
answered as it would be, and nothing is stored (no resourceVersion moves, no watch event), as
kube-apiserver does; any other `dryRun` value answers 400.

Leases (`coordination.k8s.io/v1`, `apiwire.LEASES`) are kept here too, as objects the server
stores as sent under a small built-in schema (`apiwire.LEASE_SCHEMA`): what leader election
writes and reads.

Deviations: each served version keeps its own objects (no conversion between versions); no
finalizers, owner references or garbage collection; `metadata.generateName` is not supported (422).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from nodewright.inmemory.apicel import compile_errors, violations
from nodewright.inmemory.apipatch import APPLY_PATCH, media_type, patched
from nodewright.inmemory.apischema import admit
from nodewright.inmemory.apistore import ObjectStore
from nodewright.inmemory.apiwire import (
    CRDS,
    LEASE_SCHEMA,
    LEASES,
    Failure,
    Resource,
    Route,
    Stored,
    already_exists,
    conflict,
    encode,
    json_object,
    not_found,
    posted,
)
from nodewright.model.manifests import format_timestamp

CRD_KIND = CRDS.kind


def crd_resources(crd: Mapping[str, Any]) -> list[tuple[Resource, Mapping[str, Any]]]:
    """The kinds a CRD serves (one per served version) with each version's openAPIV3Schema."""
    spec = crd.get("spec") or {}
    group = str(spec.get("group") or "")
    names = spec.get("names") or {}
    plural = str(names.get("plural") or "")
    namespaced = spec.get("scope") == "Namespaced"
    out = []
    for version in spec.get("versions") or ():
        if not version.get("served", True):
            continue
        name = str(version.get("name"))
        columns = tuple(
            (
                str(c.get("name")),
                str(c.get("type") or "string"),
                str(c.get("jsonPath") or ""),
                int(c.get("priority") or 0),
                str(c.get("description") or ""),
            )
            for c in version.get("additionalPrinterColumns") or ()
        )
        resource = Resource(
            f"{plural}.{group}/{name}",
            plural,
            str(names.get("kind") or ""),
            f"{group}/{name}",
            f"/apis/{group}/{name}",
            namespaced,
            ("metadata.name", "metadata.namespace") if namespaced else ("metadata.name",),
            singular=str(names.get("singular") or str(names.get("kind") or "").lower()),
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            columns=columns,
            status_subresource="status" in (version.get("subresources") or {}),
            crd=str((crd.get("metadata") or {}).get("name") or ""),
        )
        out.append((resource, (version.get("schema") or {}).get("openAPIV3Schema") or {}))
    return out


class CustomResources:
    """CRDs and custom objects (module docstring)."""

    def __init__(self, store: ObjectStore, lock: threading.RLock, now: Callable[[], float]) -> None:
        self._store = store
        self._lock = lock
        self._now = now
        self._schemas: dict[str, Mapping[str, Any]] = {LEASES.kind: LEASE_SCHEMA}  # kind -> openAPIV3Schema
        self._uids = itertools.count(1)

    def schema(self, kind: str) -> Mapping[str, Any] | None:
        """The openAPIV3Schema of a served custom kind or of Leases (None for another built-in one)."""
        return self._schemas.get(kind)

    def create(self, route: Route, body: bytes, query: Mapping[str, str]) -> bytes:
        """POST of a CRD or a custom object: 201 with the stored object; 409 when taken."""
        obj, metadata, name = posted(route, body)
        key = f"{route.namespace}/{name}" if route.resource.namespaced else name
        with self._lock, self._store.condition:
            if self._store.get(route.resource.kind, key) is not None:
                raise already_exists(route.resource, name)
            metadata.pop("resourceVersion", None)
            metadata["uid"] = f"00000000-0000-4000-8000-{next(self._uids):012d}"
            metadata["creationTimestamp"] = format_timestamp(int(self._now()))
            metadata["generation"] = 1
            stored = self._write(route.resource, obj, None, query)
        return stored.body

    def replace(self, route: Route, body: bytes, query: Mapping[str, str]) -> bytes:
        """PUT of a CRD or a custom object (or its /status): the object as sent replaces the stored
        one (its status kept on the main resource when the CRD has a status subresource; only the
        status replaced on /status); 200 with the stored object.
        """
        resource = route.resource
        if route.subresource and (route.subresource != "status" or not resource.status_subresource):
            raise not_found(resource, route.name)
        obj = json_object(body)
        named = str((obj.get("metadata") or {}).get("name") or "")
        if named != route.name:
            raise Failure(400, "the name of the object does not match the name on the URL")
        with self._lock, self._store.condition:
            current = self._store.get(resource.kind, route.key)
            if current is None:
                raise not_found(resource, route.name)
            return self._update(route, current, obj, query).body

    def _update(self, route: Route, current: Stored, merged: dict[str, Any], query: Mapping[str, str]) -> Stored:
        """Write `merged` over `current` (a patch's result or a PUT's body), holding the lock: the
        resourceVersion precondition, status kept apart, fixed metadata, generation.
        """
        resource = route.resource
        wanted = (merged.get("metadata") or {}).get("resourceVersion")
        if wanted and str(wanted) != str(current.rv):
            raise conflict(resource, route.name)
        if resource.status_subresource:
            if route.subresource == "status":
                merged = dict(current.manifest, status=merged.get("status"))
            else:
                merged["status"] = current.manifest.get("status")
                if merged["status"] is None:
                    merged.pop("status")
        metadata = dict(merged.get("metadata") or {})
        for fixed in ("name", "namespace", "uid", "creationTimestamp"):
            if fixed in (current.manifest.get("metadata") or {}):
                metadata[fixed] = current.manifest["metadata"][fixed]
        generation = int((current.manifest.get("metadata") or {}).get("generation") or 1)
        if merged.get("spec") != current.manifest.get("spec"):
            generation += 1
        metadata["generation"] = generation
        merged["metadata"] = metadata
        return self._write(resource, merged, current, query)

    def patch(self, route: Route, content_type: str, body: bytes, query: Mapping[str, str]) -> tuple[int, bytes]:
        """PATCH of a CRD or a custom object (or its /status): 200; server-side apply of a missing
        object creates it (201).
        """
        resource = route.resource
        if route.subresource and (route.subresource != "status" or not resource.status_subresource):
            raise not_found(resource, route.name)
        if media_type(content_type) == APPLY_PATCH and not query.get("fieldManager"):
            raise Failure(400, "PATCH, application/apply-patch+yaml requests must specify a fieldManager")
        with self._lock, self._store.condition:
            current = self._store.get(resource.kind, route.key)
            if current is None:
                if media_type(content_type) != APPLY_PATCH or route.subresource:
                    raise not_found(resource, route.name)
                return 201, self.create(route, json.dumps(patched({}, content_type, body, {})).encode(), query)
            merged = patched(
                current.manifest, content_type, body, {}, strategic=resource.kind in (CRD_KIND, LEASES.kind)
            )
            return 200, self._update(route, current, merged, query).body

    def delete(self, route: Route, query: Mapping[str, str]) -> bytes:
        """DELETE of a CRD (its objects go with it) or a custom object: the last state."""
        resource = route.resource
        with self._lock, self._store.condition:
            if dry_run(query):
                current = self._store.get(resource.kind, route.key)
                if current is None:
                    raise not_found(resource, route.name)
                return current.body
            gone = self._store.delete(resource.kind, route.key)
            if gone is None:
                raise not_found(resource, route.name)
            if resource.kind == CRD_KIND:
                for served, _ in crd_resources(gone.manifest):
                    self._store.unregister(served.kind)
                    self._schemas.pop(served.kind, None)
            self._store.condition.notify_all()
        return gone.body

    def _write(
        self, resource: Resource, obj: dict[str, Any], current: Stored | None, query: Mapping[str, str]
    ) -> Stored:
        """Admit and store (holding the lock and the store's condition)."""
        obj["apiVersion"], obj["kind"] = resource.api_version, resource.object_kind
        if resource.kind == CRD_KIND:
            served = self._admit_crd(obj, current)
        else:
            schema = self._schemas.get(resource.kind) or {}
            strict = (query.get("fieldValidation") or "").lower() == "strict"
            obj, errors = admit(schema, obj, strict=strict)
            if not errors:  # kube-apiserver runs the CEL rules on the object its schema admitted
                errors = violations(schema, obj, current.manifest if current is not None else None)
            if errors:
                name = (obj.get("metadata") or {}).get("name")
                raise Failure(
                    422,
                    f'{resource.object_kind}.{resource.group} "{name}" is invalid: ' + ", ".join(errors),
                    {
                        "name": name,
                        "group": resource.group,
                        "kind": resource.object_kind,
                        "causes": [_cause(error) for error in errors],
                    },
                )
            served = []
        if dry_run(query):
            # Admitted and answered as stored, but not stored: the resourceVersion stays the current one.
            rv = current.rv if current is not None else 0
            obj.setdefault("metadata", {})["resourceVersion"] = str(current.rv) if current is not None else ""
            if current is None:
                obj["metadata"].pop("resourceVersion")
            return Stored(rv, obj, encode(obj), {}, obj)
        stored = self._store.put(resource.kind, obj, obj)
        if current is not None and resource.kind == CRD_KIND:
            for old, _ in crd_resources(current.manifest):
                if old.kind not in {r.kind for r, _ in served}:
                    self._store.unregister(old.kind)
                    self._schemas.pop(old.kind, None)
        for kind, schema in served:
            self._store.register(kind)
            self._schemas[kind.kind] = schema
        self._store.condition.notify_all()
        return stored

    def _admit_crd(self, crd: dict[str, Any], current: Stored | None) -> list[tuple[Resource, Mapping[str, Any]]]:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        name = (crd.get("metadata") or {}).get("name")
        problems = []
        for field in ("group", "scope"):
            if not spec.get(field):
                problems.append(f"spec.{field}: Required value")
        for field in ("plural", "kind"):
            if not names.get(field):
                problems.append(f"spec.names.{field}: Required value")
        if spec.get("scope") not in (None, "Cluster", "Namespaced"):
            problems.append(f'spec.scope: Unsupported value: "{spec.get("scope")}"')
        if not spec.get("versions"):
            problems.append("spec.versions: Invalid value: must have exactly one version marked as storage version")
        if not problems and name != f"{names['plural']}.{spec['group']}":
            problems.append(f'metadata.name: Invalid value: "{name}": must be spec.names.plural+"."+spec.group')
        for i, version in enumerate(spec.get("versions") or ()):
            schema = ((version or {}).get("schema") or {}).get("openAPIV3Schema")
            if isinstance(schema, Mapping):
                problems.extend(compile_errors(schema, f"spec.versions[{i}].schema.openAPIV3Schema"))
        if problems:
            raise Failure(
                422,
                f'CustomResourceDefinition.apiextensions.k8s.io "{name}" is invalid: ' + ", ".join(problems),
                {
                    "name": name,
                    "group": "apiextensions.k8s.io",
                    "kind": "CustomResourceDefinition",
                    "causes": [_cause(problem) for problem in problems],
                },
            )
        stamp = format_timestamp(int(self._now()))
        conditions = [
            {"type": kind, "status": "True", "reason": reason, "message": message, "lastTransitionTime": stamp}
            for kind, reason, message in (
                ("NamesAccepted", "NoConflicts", "no conflicts found"),
                ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            )
        ]
        crd["status"] = {
            "acceptedNames": dict(names),
            "conditions": conditions,
            "storedVersions": [v.get("name") for v in spec["versions"] if v.get("storage")],
        }
        return crd_resources(crd)


def _cause(error: str) -> dict[str, str]:
    """One validation error as a Status cause (kubectl prints each: `field: message`)."""
    if error.startswith("unknown field"):
        return {"reason": "FieldValueInvalid", "message": error, "field": ""}
    field, _, message = error.partition(": ")
    reason = "FieldValueRequired" if message.startswith("Required value") else "FieldValueInvalid"
    return {"reason": reason, "message": message, "field": field}


def dry_run(query: Mapping[str, str]) -> bool:
    """Whether a write asks for `dryRun=All` (kube-apiserver's only dry-run value; another is a 400)."""
    value = query.get("dryRun")
    if value is None or value == "":
        return False
    if value != "All":
        raise Failure(400, f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return True
