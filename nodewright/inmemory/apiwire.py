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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
_CHUNK_EVENTS = 256
# The Status message of an injected answer, as kube-apiserver words it.
FAULT_MESSAGES = {
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: etcdserver: request timed out",
    502: "Bad Gateway",
    503: "The server is currently unable to handle the request",
    504: "Timeout: request did not complete within requested timeout - context deadline exceeded",
}
_CODE_SUFFIX = re.compile(r"^(.*) \((\d{3})\)$", re.DOTALL)
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
_BY_NAME = {name: r for r in RESOURCES for name in (r.kind, r.plural)}

# A `fieldSelector` term: (field label, True for = / ==, False for !=, value).
_Term = tuple[str, bool, str]

# ---------------------------------------------------------------------- the stored state


@dataclass(slots=True)
class _Stored:
    """One object as served: its resourceVersion, manifest, encoded JSON, field values, model."""

    rv: int
    manifest: dict[str, Any]
    body: bytes
    fields: dict[str, str]
    model: Any


@dataclass(frozen=True, slots=True)
class _Event:
    """One change of a kind: the object's JSON after it (before it, for DELETED) and the field
    values before and after (None before an ADDED), for field-selected watches.
    """

    rv: int
    type: str
    body: bytes
    fields: Mapping[str, str]
    before: Mapping[str, str] | None


class _Kind:
    """The objects of one kind and its recent events; `floor` is the newest resourceVersion whose
    event may be gone (a watch from before it must list again).
    """

    __slots__ = ("events", "floor", "keys", "latest", "objects", "resource")

    def __init__(self, resource: Resource) -> None:
        self.resource = resource
        self.objects: dict[str, _Stored] = {}
        self.events: collections.deque[_Event] = collections.deque()
        self.floor = 0
        self.latest = 0
        self.keys: list[str] | None = None

    def sorted_keys(self) -> list[str]:
        """The keys in the API server's order (namespace/name, as etcd keys sort)."""
        if self.keys is None:
            self.keys = sorted(self.objects)
        return self.keys

    def since(self, rv: int) -> list[_Event]:
        """The events after `rv`, oldest first."""
        newer = []
        for event in reversed(self.events):
            if event.rv <= rv:
                break
            newer.append(event)
        newer.reverse()
        return newer


@dataclass(frozen=True, slots=True)
class _Listing:
    """A list read at one revision, kept for its continue tokens."""

    kind: str
    rv: int
    items: list[bytes]


@dataclass(frozen=True, slots=True)
class _Route:
    resource: Resource
    namespace: str
    name: str
    subresource: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.resource.namespaced else self.name


class _Failure(Exception):
    """An answer with an error Status."""

    def __init__(self, code: int, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def status(self) -> bytes:
        return _status(self.code, self.message, self.details)


# ---------------------------------------------------------------------- helpers


def _hung_up(connection: socket.socket) -> bool:
    """True when the client closed its end (readable, and a peek finds no byte)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _route(path: str) -> _Route | None:
    """The resource, namespace, name and subresource a path names, or None."""
    for resource in RESOURCES:
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
        return _Route(resource, namespace, parts[1] if len(parts) > 1 else "", parts[2] if len(parts) > 2 else "")
    return None


def _verb(method: str, route: _Route | None, query: Mapping[str, str]) -> str:
    if method == "GET":
        if route is not None and route.name:
            return "get"
        return "watch" if query.get("watch", "").lower() in ("true", "1") else "list"
    return {"POST": "create", "PATCH": "patch", "DELETE": "delete", "PUT": "update"}.get(method, method.lower())


def _selector(route: _Route, query: Mapping[str, str]) -> tuple[_Term, ...]:
    """The fieldSelector as terms (plus the namespace of a namespaced path); 400 when the API
    server would refuse it.
    """
    if query.get("labelSelector"):
        raise _Failure(400, "labelSelector is not supported by this emulator")
    terms: list[_Term] = []
    for part in (query.get("fieldSelector") or "").split(","):
        if not part.strip():
            continue
        operator = next((op for op in ("!=", "==", "=") if op in part), "")
        if not operator:
            raise _Failure(400, f"invalid field selector: {part!r}")
        field, _, value = part.partition(operator)
        equal = operator != "!="
        field = field.strip()
        if field not in route.resource.fields:
            raise _Failure(400, f"field label not supported: {field}")
        terms.append((field, equal, value.strip()))
    if route.namespace:
        terms.append(("metadata.namespace", True, route.namespace))
    return tuple(terms)


def _matches(terms: tuple[_Term, ...], fields: Mapping[str, str]) -> bool:
    return all((fields.get(field, "") == value) == equal for field, equal, value in terms)


def _shown(event: _Event, terms: tuple[_Term, ...]) -> str:
    """The event type a watch with `terms` sees for `event` ('' for none): an object that starts
    matching is ADDED, one that stops matching DELETED.
    """
    if not terms:
        return event.type
    now = _matches(terms, event.fields)
    before = event.before is not None and _matches(terms, event.before)
    if event.type == DELETED:
        return DELETED if now else ""
    if now:
        return MODIFIED if before else ADDED
    return DELETED if before else ""


def _fields(resource: Resource, manifest: Mapping[str, Any]) -> dict[str, str]:
    """The values of the kind's field labels in `manifest`, as a field selector compares them."""
    out = {}
    for path in resource.fields:
        value: Any = manifest
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif value is None:
            value = "false" if path == "spec.unschedulable" else ""
        out[path] = str(value)
    return out


def _key(manifest: Mapping[str, Any]) -> str:
    metadata = manifest.get("metadata") or {}
    namespace = metadata.get("namespace")
    return f"{namespace}/{metadata['name']}" if namespace else str(metadata["name"])


def _with_taint(taints: tuple[Taint, ...], taint: Taint | None) -> tuple[Taint, ...]:
    """`taints` after `InMemoryCluster.cordon` adds `taint` (replacing its key and effect)."""
    if taint is None or taint in taints:
        return taints
    return (*(t for t in taints if (t.key, t.effect) != (taint.key, taint.effect)), taint)


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def _encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _line(event_type: str, body: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + body + b"}\n"


def _bookmark(resource: Resource, rv: int) -> bytes:
    marker = {
        "kind": resource.object_kind,
        "apiVersion": resource.api_version,
        "metadata": {"resourceVersion": str(rv)},
    }
    return _line(BOOKMARK, _encode(marker))


def _expired(rv: int, floor: int) -> bytes:
    return _line(ERROR, _status(410, f"too old resource version: {rv} ({floor + 1})"))


def _status(code: int, message: str, details: Mapping[str, Any] | None = None) -> bytes:
    """A metav1.Status body."""
    status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}}
    if code < 400:
        status["status"] = "Success"
    else:
        status.update(status="Failure", message=message, reason=_REASONS.get(code, "Unknown"))
    if details:
        status["details"] = dict(details)
    status["code"] = code
    return _encode(status)


def _not_found(resource: Resource, name: str) -> _Failure:
    return _Failure(404, f'{resource.plural} "{name}" not found', {"name": name, "kind": resource.plural})


def _integer(query: Mapping[str, str], name: str) -> int:
    raw = query.get(name) or "0"
    if not raw.isdigit():
        raise _Failure(400, f"{name} must be a non-negative integer, got {raw!r}")
    return int(raw)


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except ValueError as error:
        raise _Failure(400, f"the request body is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise _Failure(400, "the request body is not a JSON object")
    return value


def _encode_continue(list_id: int, offset: int) -> str:
    return base64.urlsafe_b64encode(_encode({"list": list_id, "offset": offset})).decode()


def _decode_continue(token: str) -> tuple[int, int]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["list"]), int(data["offset"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise _Failure(400, f"invalid continue token {token!r}") from None
