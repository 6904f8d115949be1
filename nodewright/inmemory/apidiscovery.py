"""What the API emulator says about itself: /version, discovery and OpenAPI v3.

Role: `Discovery`, handed a function that returns the kinds served now (the store's built-in and
CRD kinds, and NodeClaims when the claims store answers them) and one that returns a custom
kind's schema. It answers
  * `/version` (the Kubernetes version the emulator speaks for; kubectl's skew warning reads it);
  * `/api` and `/apis`: aggregated discovery (`apidiscovery.k8s.io/v2` APIGroupDiscoveryList,
    when the Accept header asks for it, as kubectl does: one request for every group's
    resources), else the legacy APIVersions / APIGroupList; `/api/v1` and `/apis/{group}/{version}`:
    legacy APIResourceLists (the official Python client's and kubectl's fallback);
  * `/openapi/v3` (the index of group versions) and `/openapi/v3/{api|apis/group}/{version}`: one
    document per group version with, per kind, a PATCH operation that declares the
    `fieldValidation` query parameter (so kubectl validates on the server, `--validate=strict`)
    and the kind's schema under `components.schemas` (a CRD's openAPIV3Schema; a built-in
    kind's top-level fields), which `kubectl explain` reads.
Anything else under these prefixes answers 404, as for an unknown group. OpenAPI v2
(`/openapi/v2`) is an empty document: kubectl asks for it only for a kind v3 does not list.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nodewright.inmemory.apiwire import Failure, Resource, encode

KUBERNETES_VERSION = ("1", "36", "v1.36.0")
OPENAPI_V2 = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
_BUILTIN_VERBS = {
    "node": ["delete", "get", "list", "patch", "update", "watch"],
    "pod": ["delete", "get", "list", "watch"],
    "daemonset": ["get", "list", "watch"],
    "pdb": ["get", "list", "watch"],
    "event": ["create", "get", "list", "patch", "watch"],
    "coreevent": ["get", "list", "watch"],
    "deployment": ["get", "list"],
    "statefulset": ["get", "list"],
    "customresourcedefinition": ["create", "delete", "get", "list", "patch", "update", "watch"],
}
_CUSTOM_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
_BUILTIN_NAMES = {
    "node": ("node", ("no",)),
    "pod": ("pod", ("po",)),
    "daemonset": ("daemonset", ("ds",)),
    "pdb": ("poddisruptionbudget", ("pdb",)),
    "event": ("event", ("ev",)),
    "coreevent": ("event", ("ev",)),
    "deployment": ("deployment", ("deploy",)),
    "statefulset": ("statefulset", ("sts",)),
}
_SUBRESOURCES = {
    "node": [("status", "Node", ["patch"])],
    "pod": [("eviction", "Eviction", ["create"])],
    "deployment": [("scale", "Scale", ["get", "patch"])],
    "statefulset": [("scale", "Scale", ["get", "patch"])],
}


class Discovery:
    """Discovery and OpenAPI documents (module docstring)."""

    def __init__(
        self, resources: Callable[[], Iterable[Resource]], schema: Callable[[Resource], Mapping[str, Any] | None]
    ) -> None:
        self._resources = resources
        self._schema = schema

    def answers(self, path: str) -> bool:
        """Whether `path` is one of Discovery's (a trailing slash ignored)."""
        path = path.rstrip("/")
        return (
            path in ("/version", "/api", "/apis", "/openapi/v3", "/openapi/v2")
            or path.startswith("/openapi/v3/")
            or path == "/api/v1"
            or (path.startswith("/apis/") and path.count("/") <= 3)
        )

    def answer(self, path: str, accept: str) -> tuple[bytes, str]:
        """The body and Content-Type for `path`; Failure 404 for what is not served."""
        path = path.rstrip("/")
        major, minor, git = KUBERNETES_VERSION
        if path == "/version":
            about = {"major": major, "minor": minor, "gitVersion": git, "platform": "linux/amd64"}
            return encode(dict(about, goVersion="go1.23", compiler="gc")), "application/json"
        groups = self._groups()
        if path in ("/api", "/apis"):
            core = path == "/api"
            chosen = {g: v for g, v in groups.items() if (g == "") == core}
            if "as=APIGroupDiscoveryList" in accept and "v=v2" in accept:
                return encode(_aggregated(chosen)), AGGREGATED
            if core:
                return encode({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}), (
                    "application/json"
                )
            return encode(_group_list(chosen)), "application/json"
        if path.startswith("/openapi/v3"):
            return self._openapi(path, groups), "application/json"
        if path == "/openapi/v2":
            # An empty OpenAPI v2 document (protobuf encodes it as no bytes): kubectl asks for v2
            # only for a kind v3 does not list, and with no definition it skips client-side
            # validation, then finds no such kind, as against kube-apiserver.
            return b"", OPENAPI_V2
        parts = path.strip("/").split("/")
        group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2] if len(parts) > 2 else "")
        if group not in groups or (version and version not in groups[group]):
            raise Failure(404, "the server could not find the requested resource")
        if not version:
            return encode(_group(group, groups[group]) | {"kind": "APIGroup", "apiVersion": "v1"}), "application/json"
        listing = {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": [r for resource in groups[group][version] for r in _legacy(resource)],
        }
        return encode(listing), "application/json"

    def _groups(self) -> dict[str, dict[str, list[Resource]]]:
        out: dict[str, dict[str, list[Resource]]] = {}
        for resource in self._resources():
            out.setdefault(resource.group, {}).setdefault(resource.version, []).append(resource)
        return out

    def _openapi(self, path: str, groups: Mapping[str, Mapping[str, list[Resource]]]) -> bytes:
        documents = {}
        for group, versions in groups.items():
            for version, resources in versions.items():
                key = f"apis/{group}/{version}" if group else f"api/{version}"
                documents[key] = _openapi_document(group, version, resources, self._schema)
        if path.rstrip("/") == "/openapi/v3":
            paths = {
                key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={hashlib.sha256(encode(doc)).hexdigest()[:32]}"}
                for key, doc in documents.items()
            }
            return encode({"paths": paths})
        document = documents.get(path[len("/openapi/v3/") :])
        if document is None:
            raise Failure(404, "the server could not find the requested resource")
        return encode(document)


def _names(resource: Resource) -> tuple[str, tuple[str, ...]]:
    if resource.kind in _BUILTIN_NAMES:
        return _BUILTIN_NAMES[resource.kind]
    return resource.singular or resource.object_kind.lower(), resource.short_names


def _verbs(resource: Resource) -> list[str]:
    return _BUILTIN_VERBS.get(resource.kind, _CUSTOM_VERBS)


def _subresources(resource: Resource) -> list[tuple[str, str, list[str]]]:
    if resource.status_subresource:
        return [("status", resource.object_kind, ["get", "patch"])]
    return _SUBRESOURCES.get(resource.kind, [])


def _legacy(resource: Resource) -> list[dict[str, Any]]:
    singular, short = _names(resource)
    main: dict[str, Any] = {
        "name": resource.plural,
        "singularName": singular,
        "namespaced": resource.namespaced,
        "kind": resource.object_kind,
        "verbs": _verbs(resource),
    }
    if short:
        main["shortNames"] = list(short)
    if resource.categories:
        main["categories"] = list(resource.categories)
    out = [main]
    for name, kind, verbs in _subresources(resource):
        entry = {"name": f"{resource.plural}/{name}", "singularName": "", "namespaced": resource.namespaced}
        if kind == "Eviction":
            entry.update(group="policy", version="v1")
        if kind == "Scale":
            entry.update(group="autoscaling", version="v1")
        out.append(entry | {"kind": kind, "verbs": verbs})
    return out


def _group(group: str, versions: Mapping[str, list[Resource]]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in sorted(versions, reverse=True)]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def _group_list(groups: Mapping[str, Mapping[str, list[Resource]]]) -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g, v) for g, v in sorted(groups.items())]}


def _aggregated(groups: Mapping[str, Mapping[str, list[Resource]]]) -> dict[str, Any]:
    items = []
    for group, versions in sorted(groups.items()):
        entries = []
        for version in sorted(versions, reverse=True):
            resources = []
            for resource in versions[version]:
                singular, short = _names(resource)
                entry: dict[str, Any] = {
                    "resource": resource.plural,
                    "responseKind": {"group": group, "version": version, "kind": resource.object_kind},
                    "scope": "Namespaced" if resource.namespaced else "Cluster",
                    "singularResource": singular,
                    "verbs": _verbs(resource),
                }
                if short:
                    entry["shortNames"] = list(short)
                if resource.categories:
                    entry["categories"] = list(resource.categories)
                subresources = []
                for name, kind, verbs in _subresources(resource):
                    kind_group, kind_version = {"Eviction": ("policy", "v1"), "Scale": ("autoscaling", "v1")}.get(
                        kind, (group, version)
                    )
                    subresources.append(
                        {
                            "subresource": name,
                            "responseKind": {"group": kind_group, "version": kind_version, "kind": kind},
                            "verbs": verbs,
                        }
                    )
                if subresources:
                    entry["subresources"] = subresources
                resources.append(entry)
            entries.append({"version": version, "resources": resources, "freshness": "Current"})
        items.append({"metadata": {"name": group}, "versions": entries})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}


def _builtin_schema(resource: Resource) -> dict[str, Any]:
    return {
        "type": "object",
        "description": f"{resource.object_kind}, as served by the Nodewright API emulator.",
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema."},
            "kind": {"type": "string", "description": "Kind is a string value representing the REST resource."},
            "metadata": {"type": "object", "description": "Standard object's metadata."},
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }


def _openapi_document(
    group: str,
    version: str,
    resources: list[Resource],
    schema_of: Callable[[Resource], Mapping[str, Any] | None],
) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    validation = {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    for resource in resources:
        gvk = {"group": group, "version": version, "kind": resource.object_kind}
        name = (
            f"{'.'.join(reversed(group.split('.'))) if group else 'io.k8s.api.core'}.{version}.{resource.object_kind}"
        )
        schema = dict(schema_of(resource) or _builtin_schema(resource))
        schema["x-kubernetes-group-version-kind"] = [gvk]
        schemas[name] = json.loads(json.dumps(schema))
        scope = "/namespaces/{namespace}" if resource.namespaced else ""
        operation = {
            "x-kubernetes-group-version-kind": gvk,
            "x-kubernetes-action": "patch",
            "parameters": [validation, {"name": "fieldManager", "in": "query", "schema": {"type": "string"}}],
            "responses": {
                "200": {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}
            },
        }
        paths[f"{resource.prefix}{scope}/{resource.plural}/{{name}}"] = {"patch": operation}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION[2]},
        "paths": paths,
        "components": {"schemas": schemas},
    }
