"""What the in-memory API server says on the wire, and the records it keeps.

Role: the part of `nodewright.inmemory.apiserver` (whose docstring is the theory of operation) that
has no server state: the kinds served (`RESOURCES`, their field labels), how a path becomes a
route, field selectors, the stored object and watch-event records, and the JSON it answers
(Status bodies, watch lines, bookmarks, continue tokens, merge patches).
"""

from __future__ import annotations

import base64
import binascii
import collections
import copy
import json
import re
import select
import socket
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.inmemory.apiselect import Requirement, SelectorError, field_requirements, label_requirements, selectable
from nodewright.inmemory.cluster import ADDED, DELETED, MODIFIED
from nodewright.model.taints import Taint

BOOKMARK = "BOOKMARK"
# NodeClaim objects (the mirror's) are served apart from the watched kinds: see `claims`.
CLAIMS_PATH = "/apis/nodewright.io/v1/nodeclaims"
ERROR = "ERROR"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
# How long a watch without timeoutSeconds stays open (kube-apiserver: 30-60 minutes).
DEFAULT_WATCH_SECONDS = 1800.0
# Paged lists whose continue tokens stay valid at once (the oldest expires first).
OPEN_LISTS = 64
# Watch events sent in one chunk at most (a replay of thousands is cut into chunks of this many).
CHUNK_EVENTS = 256
# The Status message of an injected answer, as kube-apiserver words it.
FAULT_MESSAGES = {
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: etcdserver: request timed out",
    502: "Bad Gateway",
    503: "The server is currently unable to handle the request",
    504: "Timeout: request did not complete within requested timeout - context deadline exceeded",
}
CODE_SUFFIX = re.compile(r"^(.*) \((\d{3})\)$", re.DOTALL)
_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    502: "BadGateway",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass(frozen=True, slots=True)
class Resource:
    """One kind the server serves: the cluster's name for it and its API coordinates."""

    kind: str  # the cluster's listener kind: node, pod, daemonset, pdb
    plural: str  # the API resource: nodes, pods, ...
    object_kind: str  # Node, Pod, ...
    api_version: str
    prefix: str  # /api/v1 or /apis/<group>/<version>
    namespaced: bool
    # The field labels the API server accepts in a fieldSelector for this kind.
    fields: tuple[str, ...]
    # A custom resource's: singular name, short names, categories, its CRD's
    # additionalPrinterColumns (name, type, jsonPath, priority, description), whether it has a
    # status subresource, and its CRD's name (empty for the built-in kinds).
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    columns: tuple[tuple[str, str, str, int, str], ...] = ()
    status_subresource: bool = False
    crd: str = ""

    @property
    def group(self) -> str:
        """The API group ("" for the core group)."""
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        """The API version within the group."""
        return self.api_version.rpartition("/")[2]


RESOURCES = (
    Resource("node", "nodes", "Node", "v1", "/api/v1", False, ("metadata.name", "spec.unschedulable")),
    Resource(
        "pod",
        "pods",
        "Pod",
        "v1",
        "/api/v1",
        True,
        (
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ),
    ),
    Resource(
        "daemonset",
        "daemonsets",
        "DaemonSet",
        "apps/v1",
        "/apis/apps/v1",
        True,
        ("metadata.name", "metadata.namespace"),
    ),
    Resource(
        "pdb",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        "policy/v1",
        "/apis/policy/v1",
        True,
        ("metadata.name", "metadata.namespace"),
    ),
    # One Event, served in both API versions (kubectl describe lists core/v1, controllers write
    # events.k8s.io/v1), each with the field labels the API server accepts for it.
    Resource(
        "event",
        "events",
        "Event",
        "events.k8s.io/v1",
        "/apis/events.k8s.io/v1",
        True,
        (
            "metadata.name",
            "metadata.namespace",
            "regarding.kind",
            "regarding.name",
            "regarding.namespace",
            "regarding.uid",
            "reason",
            "type",
            "reportingController",
        ),
    ),
    Resource(
        "coreevent",
        "events",
        "Event",
        "v1",
        "/api/v1",
        True,
        (
            "metadata.name",
            "metadata.namespace",
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "reason",
            "type",
            "reportingComponent",
        ),
    ),
)
CRDS = Resource(
    "customresourcedefinition",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    "apiextensions.k8s.io/v1",
    "/apis/apiextensions.k8s.io/v1",
    False,
    ("metadata.name",),
    singular="customresourcedefinition",
    short_names=("crd", "crds"),
    categories=("api-extensions",),
)
# Leader-election Leases (kubectl prints Holder as kube-apiserver does): stored as sent, under
# LEASE_SCHEMA, by `apicustom.CustomResources`.
LEASES = Resource(
    "leases.coordination.k8s.io/v1",
    "leases",
    "Lease",
    "coordination.k8s.io/v1",
    "/apis/coordination.k8s.io/v1",
    True,
    ("metadata.name", "metadata.namespace"),
    singular="lease",
    columns=(
        ("Holder", "string", ".spec.holderIdentity", 0, "The holder of the lease."),
        ("Age", "date", ".metadata.creationTimestamp", 0, ""),
    ),
)
LEASE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Lease defines a lease concept.",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "description": "LeaseSpec is a specification of a Lease.",
            "properties": {
                "holderIdentity": {"type": "string", "description": "The identity of the holder of a current lease."},
                "leaseDurationSeconds": {"type": "integer", "format": "int32"},
                "acquireTime": {"type": "string", "format": "date-time"},
                "renewTime": {"type": "string", "format": "date-time"},
                "leaseTransitions": {"type": "integer", "format": "int32"},
                "strategy": {"type": "string"},
                "preferredHolder": {"type": "string"},
            },
        },
    },
}
BY_NAME = {name: r for r in RESOURCES for name in (r.kind, r.plural)}

# A `fieldSelector` or `labelSelector` term.
Term = Requirement

# ---------------------------------------------------------------------- the stored state


@dataclass(slots=True)
class Stored:
    """One object as served: its resourceVersion, manifest, encoded JSON, field values, model."""

    rv: int
    manifest: dict[str, Any]
    body: bytes
    fields: dict[str, str]
    model: Any


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change of a kind: the object's JSON after it (before it, for DELETED) and the field
    values before and after (None before an ADDED), for field-selected watches.
    """

    rv: int
    type: str
    body: bytes
    fields: Mapping[str, str]
    before: Mapping[str, str] | None
    manifest: Mapping[str, Any]


class KindState:
    """The objects of one kind and its recent events; `floor` is the newest resourceVersion whose
    event may be gone (a watch from before it must list again).
    """

    __slots__ = ("events", "floor", "keys", "latest", "objects", "resource")

    def __init__(self, resource: Resource) -> None:
        self.resource = resource
        self.objects: dict[str, Stored] = {}
        self.events: collections.deque[WatchEvent] = collections.deque()
        self.floor = 0
        self.latest = 0
        self.keys: list[str] | None = None

    def sorted_keys(self) -> list[str]:
        """The keys in the API server's order (namespace/name, as etcd keys sort)."""
        if self.keys is None:
            self.keys = sorted(self.objects)
        return self.keys

    def since(self, rv: int) -> list[WatchEvent]:
        """The events after `rv`, oldest first."""
        newer = []
        for event in reversed(self.events):
            if event.rv <= rv:
                break
            newer.append(event)
        newer.reverse()
        return newer


@dataclass(frozen=True, slots=True)
class Listing:
    """A list read at one revision, kept for its continue tokens."""

    kind: str
    rv: int
    items: list[Stored]


@dataclass(frozen=True, slots=True)
class Route:
    resource: Resource
    namespace: str
    name: str
    subresource: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.resource.namespaced else self.name


class Failure(Exception):
    """An answer with an error Status."""

    def __init__(self, code: int, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def status(self) -> bytes:
        return status_body(self.code, self.message, self.details)


# ---------------------------------------------------------------------- helpers


def hung_up(connection: socket.socket) -> bool:
    """True when the client closed its end (readable, and a peek finds no byte)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def route_of(path: str, resources: Iterable[Resource] = RESOURCES) -> Route | None:
    """The resource (of `resources`), namespace, name and subresource a path names, or None."""
    for resource in resources:
        if not path.startswith(resource.prefix + "/"):
            continue
        parts = [urllib.parse.unquote(p) for p in path[len(resource.prefix) + 1 :].split("/")]
        namespace = ""
        if resource.namespaced and len(parts) >= 3 and parts[0] == "namespaces":
            namespace, parts = parts[1], parts[2:]
        if (
            parts[0] != resource.plural
            or len(parts) > 3
            or "" in parts
            or (namespace == "" and len(parts) > 1 and resource.namespaced)
        ):
            continue
        return Route(resource, namespace, parts[1] if len(parts) > 1 else "", parts[2] if len(parts) > 2 else "")
    return None


def verb_of(method: str, route: Route | None, query: Mapping[str, str]) -> str:
    if method == "GET":
        if route is not None and route.name:
            return "get"
        return "watch" if query.get("watch", "").lower() in ("true", "1") else "list"
    return {"POST": "create", "PATCH": "patch", "DELETE": "delete", "PUT": "update"}.get(method, method.lower())


def selector_of(route: Route, query: Mapping[str, str]) -> tuple[Term, ...]:
    """The fieldSelector and labelSelector as terms (plus the namespace of a namespaced path);
    400 when the API server would refuse them.
    """
    try:
        terms = field_requirements(query.get("fieldSelector") or "", route.resource.fields)
        terms += label_requirements(query.get("labelSelector") or "")
    except SelectorError as error:
        raise Failure(400, str(error)) from None
    if route.namespace:
        terms.append(Requirement("metadata.namespace", "=", (route.namespace,)))
    return tuple(terms)


def matches(terms: tuple[Term, ...], fields: Mapping[str, str]) -> bool:
    return all(term.matches(fields) for term in terms)


def shown_as(event: WatchEvent, terms: tuple[Term, ...]) -> str:
    """The event type a watch with `terms` sees for `event` ('' for none): an object that starts
    matching is ADDED, one that stops matching DELETED.
    """
    if not terms:
        return event.type
    now = matches(terms, event.fields)
    before = event.before is not None and matches(terms, event.before)
    if event.type == DELETED:
        return DELETED if now else ""
    if now:
        return MODIFIED if before else ADDED
    return DELETED if before else ""


def selectable_fields(resource: Resource, manifest: Mapping[str, Any]) -> dict[str, str]:
    """The values a selector compares for `manifest` (`apiselect.selectable`)."""
    return selectable(resource.fields, manifest)


def key_of(manifest: Mapping[str, Any]) -> str:
    metadata = manifest.get("metadata") or {}
    namespace = metadata.get("namespace")
    return f"{namespace}/{metadata['name']}" if namespace else str(metadata["name"])


def with_taint(taints: tuple[Taint, ...], taint: Taint | None) -> tuple[Taint, ...]:
    """`taints` after `InMemoryCluster.cordon` adds `taint` (replacing its key and effect)."""
    if taint is None or taint in taints:
        return taints
    return (*(t for t in taints if (t.key, t.effect) != (taint.key, taint.effect)), taint)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def watch_line(event_type: str, body: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + body + b"}\n"


def bookmark_line(resource: Resource, rv: int) -> bytes:
    marker = {
        "kind": resource.object_kind,
        "apiVersion": resource.api_version,
        "metadata": {"resourceVersion": str(rv)},
    }
    return watch_line(BOOKMARK, encode(marker))


def expired_line(rv: int, floor: int) -> bytes:
    return watch_line(ERROR, status_body(410, f"too old resource version: {rv} ({floor + 1})"))


def status_body(code: int, message: str, details: Mapping[str, Any] | None = None) -> bytes:
    """A metav1.Status body."""
    status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}}
    if code < 400:
        status["status"] = "Success"
    else:
        status.update(status="Failure", message=message, reason=_REASONS.get(code, "Unknown"))
    if details:
        status["details"] = dict(details)
    status["code"] = code
    return encode(status)


def qualified(resource: Resource) -> str:
    """The resource as kube-apiserver names it in messages: qualified by its group (`daemonsets.apps`)."""
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


def not_found(resource: Resource, name: str) -> Failure:
    """404 as kube-apiserver words it: the resource qualified by its group (`daemonsets.apps`)."""
    details = {"name": name, "group": resource.group, "kind": resource.plural}
    return Failure(404, f'{qualified(resource)} "{name}" not found', details)


def conflict(resource: Resource, name: str) -> Failure:
    """409 of a write whose `metadata.resourceVersion` is not the stored one, as kube-apiserver words it."""
    return Failure(
        409,
        f'Operation cannot be fulfilled on {qualified(resource)} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        {"name": name, "group": resource.group, "kind": resource.plural},
    )


def already_exists(resource: Resource, name: str) -> Failure:
    """409 of a create whose name is taken, as kube-apiserver words it."""
    return Failure(
        409,
        f'{qualified(resource)} "{name}" already exists',
        {"name": name, "group": resource.group, "kind": resource.plural},
    )


def posted(route: Route, body: bytes) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A create's (POST) object checked as kube-apiserver checks every kind's: a JSON object with
    `metadata.name` (422 without; `generateName` is not served) and, for a namespaced kind, the
    request's namespace (filled in when the object names none, 400 when it names another). Returns
    the object, its metadata (a copy, set back into the object: callers add to it) and its name.
    """
    obj = json_object(body)
    metadata = dict(obj.get("metadata") or {})
    name = str(metadata.get("name") or "")
    if not name:
        raise Failure(422, "metadata.name: Required value: name or generateName is required")
    if route.resource.namespaced:
        namespace = str(metadata.get("namespace") or route.namespace)
        if namespace != route.namespace:
            raise Failure(400, "the namespace of the provided object does not match the namespace sent on the request")
        metadata["namespace"] = namespace
    obj["metadata"] = metadata
    return obj, metadata, name


def integer_param(query: Mapping[str, str], name: str) -> int:
    raw = query.get(name) or "0"
    if not raw.isdigit():
        raise Failure(400, f"{name} must be a non-negative integer, got {raw!r}")
    return int(raw)


def json_object(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except ValueError as error:
        raise Failure(400, f"the request body is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise Failure(400, "the request body is not a JSON object")
    return value


def encode_continue(list_id: int, offset: int) -> str:
    return base64.urlsafe_b64encode(encode({"list": list_id, "offset": offset})).decode()


def decode_continue(token: str) -> tuple[int, int]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["list"]), int(data["offset"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise Failure(400, f"invalid continue token {token!r}") from None
