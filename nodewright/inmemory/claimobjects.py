"""NodeClaim objects held in memory: `nodewright.ports.ClaimObjects` for tests and the simulator,
and the `nodeclaims.nodewright.io` resource the API emulator serves over HTTP.

Role: what the API server would hold for the resource, with its rules where the mirror depends
on them: a create of an existing name answers a conflict, a merge patch of a missing one answers
not-found, a server-side apply creates a missing object or merges into the stored one (maps
merged, `status.conditions` merged by `type` as the CRD's list-map declares, other lists
replaced; field ownership is not tracked: a field an applier stops sending stays, which the
mirror never does), a delete of a missing one is a no-op for the port and a 404 over HTTP,
the server stamps `resourceVersion`, `uid` and `creationTimestamp` (from `clock`, when given).
`installed` False answers like a cluster without the CRD (the LIST finds no such resource).
Every call is counted by verb in `requests`, so tests and the simulator can say what the mirror
costs.

Over HTTP (`serve`, called by `nodewright.inmemory.apiserver.ApiServer` for paths under
`/apis/nodewright.io/v1/nodeclaims`): GET (list, one page; or one object), POST (create: 201, 409
when the name is taken), PATCH (JSON merge patch: 200, 404 when missing;
`application/apply-patch+yaml`: server-side apply, 200 or 201 when it created), DELETE (200 with
the Status, 404 when missing). No watch: the functions only write these objects.
"""

from __future__ import annotations

import collections
import copy
import itertools
import json
from collections.abc import Mapping
from typing import Any

from nodewright.inmemory.apiwire import merge_patch, status_body
from nodewright.model.claimobject import API_VERSION, GROUP, PLURAL, VERSION
from nodewright.model.manifests import format_timestamp
from nodewright.ports import Clock

PATH = f"/apis/{GROUP}/{VERSION}/{PLURAL}"
APPLY_PATCH = "application/apply-patch+yaml"
# Lists the CRD declares as maps (x-kubernetes-list-type: map), by path, with their key.
LIST_MAPS: dict[tuple[str, ...], str] = {("status", "conditions"): "type"}


class InMemoryClaimObjects:
    """`ClaimObjects` over a dict (see the module docstring)."""

    def __init__(self, *, installed: bool = True, clock: Clock | None = None) -> None:
        self.installed = installed
        self.objects: dict[str, dict[str, Any]] = {}
        # The `nodewright.io` NodePools the cluster has, by name (their objects: status as last written).
        self.nodepools: dict[str, dict[str, Any]] = {}
        self.requests: collections.Counter[str] = collections.Counter()
        self._clock = clock
        self._versions = itertools.count(1)

    # -- the port --------------------------------------------------------------------------------

    def claim_objects(self) -> dict[str, dict[str, Any]] | None:
        """Every object by name, or None when the CRD is not installed."""
        self.requests["list"] += 1
        if not self.installed:
            return None
        return copy.deepcopy(self.objects)

    def patch_claim_object(self, name: str, patch: Mapping[str, Any]) -> dict[str, Any] | None:
        """Merge-patch an existing object; None when there is none."""
        self.requests["patch"] += 1
        return self.patch(name, patch)

    def apply_claim_object(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Server-side apply (see `nodewright.ports.ClaimObjects`): one request, counted as a patch."""
        self.requests["patch"] += 1
        return self.apply(manifest)[0]

    def delete_claim_object(self, name: str) -> None:
        """Remove the object; a missing one counts as removed."""
        self.requests["delete"] += 1
        self.delete(name)

    def put_nodepool_status(self, name: str, status: Mapping[str, Any]) -> bool:
        """Merge `status` into the NodePool's (in `nodepools`); False when it has none."""
        self.requests["patch nodepools/status"] += 1
        if name not in self.nodepools:
            return False
        self.nodepools[name] = merge_patch(self.nodepools[name], {"status": copy.deepcopy(dict(status))})
        return True

    # -- the API server's rules ------------------------------------------------------------------

    def create(self, manifest: Mapping[str, Any]) -> dict[str, Any] | None:
        """Store a new object; None (nothing changes) when the name is taken."""
        body = copy.deepcopy(dict(manifest))
        metadata = body.setdefault("metadata", {})
        name = str(metadata["name"])
        if name in self.objects:
            return None
        metadata["uid"] = f"uid-{name}"
        if self._clock is not None:
            metadata["creationTimestamp"] = format_timestamp(self._clock.now())
        return self._store(name, body)

    def patch(self, name: str, patch: Mapping[str, Any]) -> dict[str, Any] | None:
        """Merge-patch an object (system metadata kept); None when there is none."""
        stored = self.objects.get(name)
        if stored is None:
            return None
        body = merge_patch(stored, copy.deepcopy(dict(patch)))
        for key in ("uid", "creationTimestamp"):
            if key in stored["metadata"]:
                body["metadata"][key] = stored["metadata"][key]
        return self._store(name, body)

    def apply(self, manifest: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        """Server-side apply: (the stored object, True when it was created)."""
        name = str(manifest["metadata"]["name"])
        stored = self.objects.get(name)
        if stored is None:
            created = self.create(manifest)
            assert created is not None  # the name is free
            return created, True
        body = _apply_merge(stored, copy.deepcopy(dict(manifest)), ())
        for key in ("uid", "creationTimestamp"):
            if key in stored["metadata"]:
                body["metadata"][key] = stored["metadata"][key]
        return self._store(name, body), False

    def delete(self, name: str) -> bool:
        """Remove an object; False when there was none."""
        return self.objects.pop(name, None) is not None

    def _store(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        body["metadata"]["resourceVersion"] = str(next(self._versions))
        self.objects[name] = body
        return copy.deepcopy(body)

    # -- over HTTP -------------------------------------------------------------------------------

    def serve(self, method: str, path: str, body: bytes, content_type: str = "") -> tuple[str, int, bytes]:
        """(verb, HTTP status, body) for one request under PATH (see the module docstring)."""
        name = path[len(PATH) :].strip("/")
        if "/" in name or not self.installed:
            return verb_of(method, name), 404, status_body(404, "the server could not find the requested resource")
        if method == "GET" and not name:
            items = [self.objects[n] for n in sorted(self.objects)]
            listing = {"kind": "NodeClaimList", "apiVersion": API_VERSION, "metadata": {}, "items": items}
            return "list", 200, _json(listing)
        if method == "GET":
            found = self.objects.get(name)
            return ("get", 200, _json(found)) if found is not None else ("get", 404, _missing(name))
        try:
            manifest = json.loads(body or b"{}")
        except ValueError:
            return verb_of(method, name), 400, status_body(400, "the body is not JSON")
        if method == "POST" and not name:
            created = self.create(manifest)
            if created is None:
                taken = manifest["metadata"]["name"]
                return "create", 409, status_body(409, f'{PLURAL}.{GROUP} "{taken}" already exists')
            return "create", 201, _json(created)
        if method == "PATCH" and name and content_type.startswith(APPLY_PATCH):
            if manifest.get("metadata", {}).get("name") != name:
                return "patch", 400, status_body(400, "the applied object's metadata.name differs from the path")
            applied, new = self.apply(manifest)
            return "patch", 201 if new else 200, _json(applied)
        if method == "PATCH" and name:
            patched = self.patch(name, manifest)
            return ("patch", 200, _json(patched)) if patched is not None else ("patch", 404, _missing(name))
        if method == "DELETE" and name:
            if not self.delete(name):
                return "delete", 404, _missing(name)
            return "delete", 200, status_body(200, "deleted")
        return verb_of(method, name), 405, status_body(405, f"{method} is not supported on {PLURAL}")


def _apply_merge(stored: Any, applied: Any, path: tuple[str, ...]) -> Any:
    """`applied` merged into `stored` as server-side apply merges: maps by key, list-maps by
    their key (an entry of `stored` the applier leaves out is kept), anything else replaced.
    """
    if isinstance(stored, dict) and isinstance(applied, dict):
        out = dict(stored)
        for key, value in applied.items():
            out[key] = _apply_merge(stored.get(key), value, (*path, key))
        return out
    key = LIST_MAPS.get(path)
    if key is not None and isinstance(stored, list) and isinstance(applied, list):
        merged = {item.get(key): item for item in stored if isinstance(item, dict)}
        merged.update({item.get(key): item for item in applied if isinstance(item, dict)})
        return list(merged.values())
    return applied


def verb_of(method: str, name: str) -> str:
    verbs = {"GET": "get" if name else "list", "POST": "create", "PATCH": "patch", "DELETE": "delete"}
    return verbs.get(method, method.lower())


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _missing(name: str) -> bytes:
    return status_body(404, f'{PLURAL}.{GROUP} "{name}" not found')
