"""kmock's Kubernetes emulator, extended with the API server behaviour the cluster adapter relies on.

kmock 0.8's `KubernetesEmulator` stores objects and serves get/list/patch/delete over real HTTP,
but ignores list options, has no subresources and no authentication. `ApiServer` adds, following
the real kube-apiserver:

* lists of the built-in resources (nodes, pods, daemonsets, PDBs) served even when empty, sorted
  by namespace then name, filtered by `fieldSelector` (`=`, `==`, `!=` on dotted paths, ANDed
  with commas) and paged by `limit` with an opaque `continue` token and `remainingItemCount`;
  `expire_continue` refuses that many continue tokens with 410 Gone ("Expired");
* `resourceVersion` on nodes, bumped by every patch; a patch carrying an older
  `metadata.resourceVersion` is refused with 409 Conflict. `concurrent_patches[node]` holds
  changes another writer makes just before our next patch of that node arrives;
* the pods/eviction subresource: 404 for a missing pod, 409 when the `deleteOptions` uid
  precondition does not match, 429 for pods in `blocked`, 500 for pods in `multiple_budgets`,
  otherwise the pod is deleted and 201 returned;
* bearer-token authentication when `tokens` is set: any other Authorization header gets 401.

Every request is still recorded by kmock (`for request in server`), with its headers and params.
"""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any

import aiohttp.web
import attrs
from kmock import KubernetesEmulator, KubernetesError, Request, action, resource

NODES = resource("", "v1", "nodes")
PODS = resource("", "v1", "pods")
DAEMONSETS = resource("apps", "v1", "daemonsets")
PDBS = resource("policy", "v1", "poddisruptionbudgets")
BUILT_IN = (NODES, PODS, DAEMONSETS, PDBS)
BUDGET_REFUSES = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_BUDGETS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."


@attrs.define(kw_only=True)
class ApiServer(KubernetesEmulator):
    """A KubernetesEmulator that pages, filters, evicts, versions nodes and checks tokens."""

    tokens: set[str] | None = None
    blocked: set[str] = attrs.field(factory=set)
    multiple_budgets: set[str] = attrs.field(factory=set)
    expire_continue: int = 0
    concurrent_patches: dict[str, list[dict[str, Any]]] = attrs.field(factory=dict)
    _revisions: Any = attrs.field(factory=lambda: itertools.count(100), init=False)

    def add(self, kind: Any, manifest: dict[str, Any]) -> None:
        """Store an object (nodes get a resourceVersion, as the API server would stamp it)."""
        meta = manifest.setdefault("metadata", {})
        if kind == NODES:
            meta.setdefault("resourceVersion", str(next(self._revisions)))
        self.objects[kind, meta.get("namespace"), meta["name"]] = manifest

    def stored(self, kind: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The stored object, or None once deleted."""
        for (res, ns, stored_name), obj in self.objects.items():
            if res == kind and ns == namespace and stored_name == name and not obj.deleted:
                raw: dict[str, Any] = obj.raw
                return raw
        return None

    async def _handle(self, request: Request) -> aiohttp.web.StreamResponse:
        if self.tokens is not None:
            accepted = {f"Bearer {token}" for token in self.tokens}
            if request.headers.get("Authorization") not in accepted:
                raise KubernetesError(status=401, reason="Unauthorized", message="Unauthorized")
        if request.resource == PODS and request.subresource == "eviction" and request.method == "POST":
            return self._evict(request)
        if request.resource == NODES and request.action == action.UPDATE and request.name:
            self._check_node_version(request)
        response = await super()._handle(request)
        if request.resource == NODES and request.action == action.UPDATE and request.name:
            self.objects[NODES, None, request.name].patch({"metadata": {"resourceVersion": str(next(self._revisions))}})
        return response

    def _check_node_version(self, request: Request) -> None:
        name = str(request.name)
        for change in self.concurrent_patches.pop(name, ()):
            self.objects[NODES, None, name].patch(change)
            self.objects[NODES, None, name].patch({"metadata": {"resourceVersion": str(next(self._revisions))}})
        current = self.stored(NODES, name)
        wanted = ((request.data or {}).get("metadata") or {}).get("resourceVersion")
        if current is not None and wanted and wanted != current["metadata"].get("resourceVersion"):
            raise KubernetesError(
                status=409,
                reason="Conflict",
                message=f'Operation cannot be fulfilled on nodes "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again",
            )

    def _evict(self, request: Request) -> aiohttp.web.StreamResponse:
        key = f"{request.namespace}/{request.name}"
        pod = self.stored(PODS, str(request.name), request.namespace)
        if pod is None:
            raise KubernetesError(status=404, reason="NotFound", message=f'pods "{request.name}" not found')
        uid = (((request.data or {}).get("deleteOptions") or {}).get("preconditions") or {}).get("uid")
        if uid and uid != (pod.get("metadata") or {}).get("uid"):
            raise KubernetesError(
                status=409,
                reason="Conflict",
                message=f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                f"{pod['metadata'].get('uid')}",
            )
        if key in self.blocked:
            raise KubernetesError(status=429, reason="TooManyRequests", message=BUDGET_REFUSES)
        if key in self.multiple_budgets:
            raise KubernetesError(status=500, reason="InternalError", message=MULTIPLE_BUDGETS)
        self.objects[PODS, request.namespace, str(request.name)].delete()
        return aiohttp.web.json_response(
            {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Success", "code": 201}, status=201
        )

    async def _serve_list(self, request: Request) -> Any:
        if request.resource not in BUILT_IN:
            return await super()._serve_list(request)
        selector = _field_selector(request.params.get("fieldSelector", ""))
        items = sorted(
            (
                obj.raw
                for (res, namespace, _), obj in self.objects.items()
                if res == request.resource
                and (request.namespace is None or namespace == request.namespace)
                and not obj.deleted
            ),
            key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]),
        )
        items = [item for item in items if all(_matches(item, term) for term in selector)]
        start = 0
        token = request.params.get("continue")
        if token:
            if self.expire_continue > 0:
                self.expire_continue -= 1
                raise KubernetesError(
                    status=410,
                    reason="Expired",
                    message="The provided continue parameter is too old to display a consistent list result.",
                )
            start = int(json.loads(base64.b64decode(token))["start"])
        limit = int(request.params.get("limit") or 0)
        end = start + limit if limit else len(items)
        metadata: dict[str, Any] = {"resourceVersion": "100"}
        if end < len(items):
            metadata["continue"] = base64.b64encode(json.dumps({"start": end}).encode()).decode()
            metadata["remainingItemCount"] = len(items) - end
        return {"apiVersion": "v1", "kind": "List", "metadata": metadata, "items": items[start:end]}


def _field_selector(text: str) -> list[tuple[str, str, str]]:
    terms = []
    for term in filter(None, text.split(",")):
        for operator in ("!=", "==", "="):
            if operator in term:
                field, value = term.split(operator, 1)
                terms.append((field, "!=" if operator == "!=" else "=", value))
                break
        else:
            raise KubernetesError(status=400, reason="BadRequest", message=f"invalid field selector {term!r}")
    return terms


def _matches(item: dict[str, Any], term: tuple[str, str, str]) -> bool:
    field, operator, value = term
    current: Any = item
    for part in field.split("."):
        current = current.get(part) if isinstance(current, dict) else None
    found = "" if current is None else str(current)
    return (found == value) == (operator == "=")
