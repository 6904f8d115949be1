"""A Kubernetes API server over the in-memory cluster, on real local HTTP.

Role: serve `InMemoryCluster` as a kube-apiserver would (paged lists, watches with
resourceVersions, bookmarks and 410, GET/PATCH/DELETE of nodes, the eviction subresource) so the
real Kubernetes adapter (`KubeCluster`, built with `from_cluster_info`) can be run and measured
against it in tests, in the simulator and in the API-load benchmark: requests, bytes, CPU.

Why hand-written: no kube-apiserver can be installed where the project is built (no package
registry CI reaches ships one; envtest and kind download binaries or need Docker), and kmock
(tests/adapters/kube/emulator.py) keeps objects of its own on an asyncio loop with no watch over
our model. What the adapter depends on is small enough to write on the standard library's
`http.server` (`ThreadingHTTPServer`, one thread per connection, chunked transfer for watches),
with no dependency and with the cluster's own rules (PDBs, evictions, the pod GC) deciding.

Theory of operation
  * The server keeps its OWN copy of every object as a manifest (`nodewright.model.manifests`),
    encoded once per change, fed synchronously by the cluster's `listeners` hook. Server threads
    read only that copy, under the server's condition lock: they never iterate the cluster's
    dicts while another thread changes them. Objects that exist at `start()` are loaded then.
  * Each change gets the next number of the server's own monotonic resourceVersion counter
    (`revision()`), stamped in the object's `metadata.resourceVersion`. Each kind keeps its last
    `history` events (the API server's watch cache is per resource too); a watch replays from
    there. When a pod changes, each PDB of its namespace whose `disruptionsAllowed`
    (`cluster.budget_allowed`) moved gets a MODIFIED event, as the disruption controller writes
    the status.
  * Writes (PATCH, DELETE, eviction) call the cluster's methods (`cordon`, `uncordon`, `taint`,
    `delete_node`, `evict`, ...) holding `lock`, so the cluster's rules and its changes log see
    them as they see direct calls. Anyone else who changes the cluster while the server runs must
    hold `lock` too (`with server.lock: cluster.bind(...)`); never hold it while waiting for an
    HTTP answer from this server (its threads need it to write).

Endpoints (all namespaces, or under /namespaces/{ns}/ for the namespaced kinds)
  GET    /api/v1/nodes, /api/v1/pods, /apis/apps/v1/daemonsets, /apis/policy/v1/poddisruptionbudgets
         list: `limit`/`continue` (pages are one consistent read at the first page's revision; an
         expired token answers 410 Expired), `fieldSelector` (`=`, `==`, `!=`, ANDed by commas;
         the field labels the API server supports per kind, others 400). With `watch=true`:
         `resourceVersion`, `allowWatchBookmarks`, `timeoutSeconds`, `fieldSelector`; a chunked
         stream of `{"type": ..., "object": ...}` lines. Unset or "0" starts with synthetic ADDED
         events of the current objects; a resourceVersion older than the kind's history answers
         HTTP 200 then an ERROR event (Status 410 Expired) and ends. A field-selected watch sends
         ADDED/DELETED when an object starts/stops matching, as kube-apiserver's watch cache does.
  GET    /api/v1/nodes/{name}, /api/v1/namespaces/{ns}/pods/{name}
  PATCH  /api/v1/nodes/{name}  merge patch; `metadata.resourceVersion` in the body is a
         precondition (409 Conflict); spec.unschedulable, spec.taints, metadata.labels and
         metadata.annotations take effect (the shapes `KubeCluster.cordon`/`uncordon` send become
         `cluster.cordon`/`uncordon` calls, a taint added or removed alone `taint`/`untaint`).
  PATCH  /api/v1/nodes/{name}/status  the kubelet's and the EKS node monitoring agent's write:
         each `status.conditions` entry (merged by type, strategic or plain merge patch) goes
         through `cluster.set_node_condition`, whose transition time moves only with the status;
         422 naming an entry without a type or with a status other than True, False, Unknown.
  DELETE /api/v1/nodes/{name}  `cluster.delete_node` (its pods go with it); 404 when missing.
  POST   /api/v1/namespaces/{ns}/pods/{name}/eviction  `cluster.evict` with the optional
         `deleteOptions.preconditions.uid`: evicted 201; refused by a PDB 429; missing 404; uid
         mismatch 409; several PDBs 500; with the cluster's message.
  POST   /apis/events.k8s.io/v1/namespaces/{ns}/events  `cluster.create_event`: 201 with the
         stored Event; 409 when the name is taken; 422 naming a missing required field.
  PATCH  /apis/events.k8s.io/v1/namespaces/{ns}/events/{name}  merge patch of `series` (count,
         lastObservedTime) through `cluster.patch_event_series`; 404 when missing.
  GET    /apis/events.k8s.io/v1/[namespaces/{ns}/]events and /api/v1/[namespaces/{ns}/]events:
         list/watch/get of the cluster's Events (`cluster.events()`, kube-scheduler's and
         Nodewright's) in either version, with field selectors on `regarding.*` /
         `involvedObject.*`, `reason`, `type` and the reporting controller, as `kubectl describe`
         asks for them.
  GET/POST/PATCH/DELETE /apis/nodewright.io/v1/nodeclaims[/{name}]  when `claims` is set, answered
         by it (`nodewright.sim.claimobjects`: the NodeClaim mirror's objects; no watch).
  Unknown paths answer a 404 Status. With `tokens`, a request without `Authorization: Bearer
  <one of them>` answers 401. An error `cluster.fail_next` injects answers its `status` (500).
  `fault(verb, resource)`, when set, is asked before each request is answered: a (status,
  retry_after) pair answers that status instead (with a `Retry-After` header when given), status
  0 hangs up without an answer (a timeout, as the client sees it); None serves the request.

Deviations from kube-apiserver, chosen for a small emulator
  * resourceVersions are the emulator's counter, not etcd's; a list's `resourceVersion` parameter
    is ignored (every list reads the latest state); continue tokens expire when the kind's history
    passes their revision or when 64 newer paged lists are open; `labelSelector` answers 400.
  * A watch with `allowWatchBookmarks` also gets a BOOKMARK right after a batch whose events its
    field selector dropped, and one as it ends by `timeoutSeconds`: the API contract allows a
    bookmark at any time, and it lets a client's resourceVersion reach `latest(kind)` at once (a
    barrier for the simulator). A watch without `timeoutSeconds` ends after 30 minutes.
  * Evicting a pod already being deleted answers 409 (the in-memory cluster's "gone"), where
    kube-apiserver deletes it again and answers 201. Eviction messages are the cluster's.
  * Only nodes can be patched, only by merge patch; other fields of a patch are dropped. DELETE is
    immediate (no finalizers) and answers a Status. Objects carry no managedFields or uid beyond
    the model's unless `dress` adds them.

Accounting: `usage()` counts requests and response body bytes by verb (list, watch, get, patch,
delete, create) and resource (nodes, pods, daemonsets, poddisruptionbudgets, pods/eviction), a
watch's bytes as they are streamed; the names are the adapter's, so both sides can be compared.
`watching` is the number of watch streams open now (a watch whose client hung up ends within a
second; `stop()` ends them all).
"""

from __future__ import annotations

import base64
import binascii
import collections
import contextlib
import copy
import itertools
import json
import re
import select
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from nodewright.model.errors import InvalidValue
from nodewright.model.event import StoredEvent
from nodewright.model.manifests import daemonset_manifest, node_manifest, pdb_manifest, pod_manifest
from nodewright.model.node import Node
from nodewright.model.pod import Pod, parse_timestamp
from nodewright.model.taints import Taint
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget
from nodewright.ports import ApiUsage
from nodewright.sim.cluster import ADDED, DELETED, MODIFIED, InMemoryCluster

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


class ApiServer:
    """The in-memory cluster served over local HTTP as kube-apiserver (see the module docstring).

    `history` is how many events each kind keeps for watches to replay; `bookmark_every` the
    seconds between BOOKMARK events of a watch that allows them; `dress(kind, manifest)` may
    return a fuller manifest for each object as it changes (managedFields, env, probes, ...: what
    real objects carry) without touching the model; `tokens`, when set, are the bearer tokens
    accepted (the attribute may be changed while serving).
    """

    def __init__(
        self,
        cluster: InMemoryCluster,
        *,
        history: int = 10_000,
        bookmark_every: float = 5.0,
        dress: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
        tokens: Iterable[str] | None = None,
    ) -> None:
        if history < 1:
            raise ValueError(f"history must be at least 1, got {history}")
        if bookmark_every <= 0:
            raise ValueError(f"bookmark_every must be positive, got {bookmark_every}")
        self.cluster = cluster
        self.lock = threading.RLock()
        self.tokens: set[str] | None = None if tokens is None else set(tokens)
        # Injected failures (see "Endpoints" in the module docstring); the simulator's faults set it.
        self.fault: Callable[[str, str], tuple[int, float | None] | None] | None = None
        # Serves `nodeclaims.nodewright.io` when set (`nodewright.sim.claimobjects.InMemoryClaimObjects`).
        self.claims: Any = None
        self._history = history
        self._bookmark_every = bookmark_every
        self._dress = dress
        self._changed = threading.Condition()
        self._kinds = {r.kind: _Kind(r) for r in RESOURCES}
        self._revision = 0
        self._budgets: dict[str, dict[str, PodDisruptionBudget]] = {}  # namespace -> key -> PDB
        self._allowed: dict[str, int] = {}
        self._lists: collections.OrderedDict[int, _Listing] = collections.OrderedDict()
        self._list_ids = itertools.count(1)
        self._usage: dict[tuple[str, str], list[int]] = {}
        self._usage_lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._http: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        self._started = False
        self._stopping = False
        self._watching = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> str:
        """Load the cluster's objects, listen on 127.0.0.1 (an ephemeral port) and return the
        base URL. A server starts once.
        """
        if self._started:
            raise RuntimeError("this ApiServer was already started")
        self._started = True
        with self.lock:
            with self._changed:
                self._load()
            self.cluster.listeners.append(self._on_change)
        self._http = _HttpServer(("127.0.0.1", 0), self)
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, name="apiserver", daemon=True
        )
        self._thread.start()
        return self.url

    def stop(self) -> None:
        """Stop listening, end every watch and connection, and stop following the cluster."""
        http = self._http
        if http is None:
            return
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
            # Let open watches end their streams cleanly before the connections are cut.
            end = time.monotonic() + 2.0
            while self._watching and time.monotonic() < end:
                self._changed.wait(end - time.monotonic())
        with self.lock:
            if self._on_change in self.cluster.listeners:
                self.cluster.listeners.remove(self._on_change)
        http.shutdown()
        for connection in list(self._connections):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        http.server_close()
        if self._thread is not None:
            self._thread.join()
        self._http = None

    def __enter__(self) -> ApiServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL (`http://127.0.0.1:<port>`); only while started."""
        if self._http is None:
            raise RuntimeError("the ApiServer is not started")
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    # ------------------------------------------------------------------ observing

    def revision(self) -> int:
        """The latest resourceVersion handed out (any kind)."""
        with self._changed:
            return self._revision

    def latest(self, kind: str) -> int:
        """The resourceVersion of the newest change of `kind` ("node" or "nodes", "pod", "pods",
        "daemonset(s)", "pdb" or "poddisruptionbudgets"); 0 when none. A client that has seen
        this version of that kind (an event or a bookmark at or past it) has seen everything.
        """
        resource = _BY_NAME.get(kind)
        if resource is None:
            raise ValueError(f"unknown kind {kind!r}")
        with self._changed:
            return self._kinds[resource.kind].latest

    def drop_connections(self) -> int:
        """Cut every open connection (watches included), as a load balancer or an API server
        restart does; the server keeps serving new ones. Returns how many were cut.
        """
        with self._usage_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        return len(connections)

    @property
    def watching(self) -> int:
        """How many watch streams are open now."""
        with self._changed:
            return self._watching

    def usage(self) -> list[ApiUsage]:
        """Requests served and response body bytes sent since the start, by verb and resource
        (sorted), a watch's bytes as streamed.
        """
        with self._usage_lock:
            return [ApiUsage(verb, resource, n, size) for (verb, resource), (n, size) in sorted(self._usage.items())]

    # ------------------------------------------------------------------ the copy of the cluster

    def _load(self) -> None:
        snapshot = self.cluster.snapshot_unrecorded()
        for kind, objects in (
            ("node", snapshot.nodes),
            ("pod", snapshot.pods),
            ("daemonset", snapshot.daemonsets),
            ("pdb", snapshot.pdbs),
            ("event", self.cluster.events()),
        ):
            for obj in objects:
                self._put(kind, obj)
        # The initial state is no history: a watch from before it must list again.
        for state in self._kinds.values():
            state.events.clear()
            state.floor = self._revision

    def _on_change(self, kind: str, event: str, obj: object, revision: int) -> None:
        """The cluster's listener (called in the thread that changed the cluster)."""
        with self._changed:
            if event == DELETED and isinstance(obj, StoredEvent):
                self._delete("event", obj)
                self._delete("coreevent", obj)
            elif event == DELETED:
                self._delete(kind, obj)
            else:
                self._put(kind, obj)
            if isinstance(obj, Pod):
                self._refresh_budgets(obj.namespace)
            self._changed.notify_all()

    def _put(self, kind: str, obj: Any) -> None:
        if isinstance(obj, StoredEvent):
            self._put_manifest("event", obj.to_manifest(), obj)
            self._put_manifest("coreevent", obj.to_core_manifest(), obj)
            return
        if isinstance(obj, Node):
            manifest = node_manifest(obj)
        elif isinstance(obj, Pod):
            manifest = pod_manifest(obj)
        elif isinstance(obj, DaemonSet):
            manifest = daemonset_manifest(obj)
        elif isinstance(obj, PodDisruptionBudget):
            key = f"{obj.namespace}/{obj.name}"
            allowed = self.cluster.budget_allowed(obj)
            self._allowed[key] = allowed
            self._budgets.setdefault(obj.namespace, {})[key] = obj
            manifest = pdb_manifest(obj, allowed)
        else:
            raise TypeError(f"cannot serve a {type(obj).__name__} as a {kind}")
        self._put_manifest(kind, manifest, obj)

    def _put_manifest(self, kind: str, manifest: dict[str, Any], obj: Any) -> None:
        state = self._kinds[kind]
        if self._dress is not None:
            manifest = self._dress(kind, manifest)
        rv = self._next_revision()
        manifest.setdefault("metadata", {})["resourceVersion"] = str(rv)
        key = _key(manifest)
        old = state.objects.get(key)
        stored = _Stored(rv, manifest, _encode(manifest), _fields(state.resource, manifest), obj)
        if old is None:
            state.keys = None
        state.objects[key] = stored
        if old is None:
            self._append(state, _Event(rv, ADDED, stored.body, stored.fields, None))
        else:
            self._append(state, _Event(rv, MODIFIED, stored.body, stored.fields, old.fields))

    def _delete(self, kind: str, obj: Any) -> None:
        state = self._kinds[kind]
        namespace = getattr(obj, "namespace", "")
        key = f"{namespace}/{obj.name}" if state.resource.namespaced else str(obj.name)
        old = state.objects.pop(key, None)
        if old is None:
            return
        state.keys = None
        if kind == "pdb":
            self._allowed.pop(key, None)
            budgets = self._budgets.get(namespace, {})
            budgets.pop(key, None)
            if not budgets:
                self._budgets.pop(namespace, None)
        rv = self._next_revision()
        # The object as last stored, at the resourceVersion of its deletion.
        manifest = dict(old.manifest, metadata=dict(old.manifest.get("metadata") or {}, resourceVersion=str(rv)))
        self._append(state, _Event(rv, DELETED, _encode(manifest), old.fields, old.fields))

    def _refresh_budgets(self, namespace: str) -> None:
        """Re-serve the PDBs of `namespace` whose disruptionsAllowed a pod change moved."""
        for key, pdb in list(self._budgets.get(namespace, {}).items()):
            if self.cluster.budget_allowed(pdb) != self._allowed.get(key):
                self._put("pdb", pdb)

    def _next_revision(self) -> int:
        self._revision += 1
        return self._revision

    def _append(self, state: _Kind, event: _Event) -> None:
        state.events.append(event)
        state.latest = event.rv
        while len(state.events) > self._history:
            state.floor = state.events.popleft().rv

    # ------------------------------------------------------------------ HTTP

    def _serve(self, handler: _Handler, method: str) -> None:
        """Answer one request (called in the connection's thread)."""
        handler.streaming = False
        url = urllib.parse.urlsplit(handler.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        if self.claims is not None and url.path.startswith(CLAIMS_PATH):
            self._serve_claims(handler, method, url.path, body)
            return
        route = _route(url.path)
        verb = _verb(method, route, query)
        resource = (
            "" if route is None else route.resource.plural + (f"/{route.subresource}" if route.subresource else "")
        )
        try:
            if self.tokens is not None:
                presented = handler.headers.get("Authorization") or ""
                if presented not in {f"Bearer {token}" for token in self.tokens}:
                    raise _Failure(401, "Unauthorized")
            if route is None:
                raise _Failure(404, "the server could not find the requested resource")
            injected = self.fault(verb, resource) if self.fault is not None else None
            if injected is not None:
                status, retry_after = injected
                if status == 0:
                    self._count(verb, resource, 1, 0)
                    handler.close_connection = True
                    return
                headers = {"Retry-After": str(max(1, round(retry_after)))} if retry_after is not None else {}
                answer = _status(status, FAULT_MESSAGES.get(status, "injected"))
                self._send(handler, status, answer, verb, resource, headers=headers)
                return
            if verb == "watch":
                self._watch(handler, route, query)
                return
            code, answer = self._answer(handler, method, route, query, body)
        except _Failure as failure:
            code, answer = failure.code, failure.status()
        except Exception as error:  # an error the cluster raised (fail_next), or a bug: a 500
            if handler.streaming:  # too late for an answer: the connection is dropped
                raise
            code = int(getattr(error, "status", 500) or 500)
            answer = _status(code, f"{type(error).__name__}: {error}")
        self._send(handler, code, answer, verb, resource)

    def _serve_claims(self, handler: _Handler, method: str, path: str, body: bytes) -> None:
        """A request for NodeClaim objects, answered by `claims`; counted as verb on nodeclaims.
        Tokens are checked as for any request; faults are not injected here.
        """
        if self.tokens is not None and (handler.headers.get("Authorization") or "") not in {
            f"Bearer {token}" for token in self.tokens
        }:
            self._send(handler, 401, _status(401, "Unauthorized"), "", "nodeclaims")
            return
        verb, code, answer = self.claims.serve(method, path, body)
        self._send(handler, code, answer, verb, "nodeclaims")

    def _answer(
        self, handler: _Handler, method: str, route: _Route, query: Mapping[str, str], body: bytes
    ) -> tuple[int, bytes]:
        resource = route.resource
        if route.subresource == "status" and resource.kind == "node" and method == "PATCH" and route.name:
            return 200, self._patch_node_status(route.name, handler.headers.get("Content-Type") or "", body)
        if route.subresource:
            if route.subresource != "eviction" or resource.kind != "pod" or not route.name:
                raise _Failure(404, "the server could not find the requested resource")
            if method != "POST":
                raise _Failure(405, f"{method} is not supported on pods/eviction")
            return self._evict(route, body)
        if resource.kind == "event" and method == "POST" and not route.name:
            return 201, self._create_event(route, body)
        if resource.kind == "event" and method == "PATCH" and route.name:
            return 200, self._patch_event(route, handler.headers.get("Content-Type") or "", body)
        if not route.name:
            if method != "GET":
                raise _Failure(405, f"{method} is not supported on a list of {resource.plural}")
            return 200, self._list(route, query)
        if method == "GET":
            return 200, self._get(route)
        if resource.kind == "node" and method == "PATCH":
            return 200, self._patch_node(route.name, handler.headers.get("Content-Type") or "", body)
        if resource.kind == "node" and method == "DELETE":
            return 200, self._delete_node(route.name)
        raise _Failure(405, f"{method} is not supported on {resource.plural}")

    def _send(
        self,
        handler: _Handler,
        code: int,
        body: bytes,
        verb: str,
        resource: str,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._count(verb, resource, 1, len(body))
        try:
            handler.send_response(code)
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:  # the client went away
            handler.close_connection = True

    def _count(self, verb: str, resource: str, requests: int, size: int) -> None:
        with self._usage_lock:
            counts = self._usage.setdefault((verb, resource), [0, 0])
            counts[0] += requests
            counts[1] += size

    # ------------------------------------------------------------------ reads

    def _list(self, route: _Route, query: Mapping[str, str]) -> bytes:
        resource = route.resource
        terms = _selector(route, query)
        limit = _integer(query, "limit")
        token = query.get("continue") or ""
        with self._changed:
            state = self._kinds[resource.kind]
            if token:
                list_id, offset = _decode_continue(token)
                listing = self._lists.get(list_id)
                if listing is None or listing.kind != resource.kind or listing.rv < state.floor:
                    self._lists.pop(list_id, None)
                    raise _Failure(
                        410,
                        "The provided continue parameter is too old to display a consistent list result. "
                        "You can start a new list without the continue parameter.",
                    )
            else:
                objects = state.objects
                items = [objects[k].body for k in state.sorted_keys() if _matches(terms, objects[k].fields)]
                listing, offset, list_id = _Listing(resource.kind, self._revision, items), 0, 0
            page = listing.items[offset : offset + limit] if limit else listing.items[offset:]
            end = offset + len(page)
            metadata: dict[str, Any] = {"resourceVersion": str(listing.rv)}
            if end < len(listing.items):
                if not list_id:
                    list_id = next(self._list_ids)
                    self._lists[list_id] = listing
                    while len(self._lists) > OPEN_LISTS:
                        self._lists.popitem(last=False)
                metadata["continue"] = _encode_continue(list_id, end)
                metadata["remainingItemCount"] = len(listing.items) - end
            elif list_id:
                self._lists.pop(list_id, None)
        head = {"kind": f"{resource.object_kind}List", "apiVersion": resource.api_version, "metadata": metadata}
        return _encode(head)[:-1] + b',"items":[' + b",".join(page) + b"]}"

    def _get(self, route: _Route) -> bytes:
        with self._changed:
            stored = self._kinds[route.resource.kind].objects.get(route.key)
            if stored is None:
                raise _not_found(route.resource, route.name)
            return stored.body

    def _watch(self, handler: _Handler, route: _Route, query: Mapping[str, str]) -> None:
        """Stream the kind's events as chunked JSON lines (see the module docstring)."""
        resource = route.resource
        terms = _selector(route, query)
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("true", "1")
        timeout = float(_integer(query, "timeoutSeconds") or DEFAULT_WATCH_SECONDS)
        start = query.get("resourceVersion") or "0"
        if not start.isdigit():
            raise _Failure(400, f"invalid resourceVersion {start!r}")
        state = self._kinds[resource.kind]
        stream = _Stream(handler, self, resource)
        deadline = time.monotonic() + timeout
        with self._changed:
            if start == "0":
                # No version: the current objects as synthetic ADDED events, then what follows.
                objects = state.objects
                lines = [
                    _line(ADDED, objects[k].body) for k in state.sorted_keys() if _matches(terms, objects[k].fields)
                ]
                seen = self._revision
            elif int(start) < state.floor:
                lines, seen = [_expired(int(start), state.floor)], -1
            else:
                lines, seen = [], int(start)
        with self._changed:
            self._watching += 1
        try:
            if stream.open() and stream.send(lines) and seen >= 0:
                self._follow(stream, state, terms=terms, seen=seen, bookmarks=bookmarks, deadline=deadline)
            stream.close()
        finally:
            with self._changed:
                self._watching -= 1
                self._changed.notify_all()

    def _follow(
        self, stream: _Stream, state: _Kind, *, terms: tuple[_Term, ...], seen: int, bookmarks: bool, deadline: float
    ) -> None:
        """Send the kind's events after revision `seen` as they come, until `deadline`; with
        `bookmarks`, one every `bookmark_every` seconds, one after a batch the selector thinned,
        and one at the end.
        """
        next_bookmark = min(deadline, time.monotonic() + self._bookmark_every) if bookmarks else deadline
        while True:
            with self._changed:
                while not self._stopping and state.latest <= seen:
                    now = time.monotonic()
                    if now >= next_bookmark:
                        break
                    # At least once a second: a client that went away ends its watch's thread.
                    self._changed.wait(min(1.0, next_bookmark - now))
                    if state.latest <= seen and _hung_up(stream.handler.connection):
                        return
                stopping = self._stopping
                # The client fell further behind than the history reaches: it must list again.
                expired = _expired(seen, state.floor) if state.floor > seen else b""
                events = [] if expired else state.since(seen)
                seen = self._revision
            if expired:
                stream.send([expired])
                return
            lines = []
            dropped = False
            for event in events:
                shown = _shown(event, terms)
                if shown:
                    lines.append(_line(shown, event.body))
                else:
                    dropped = True
            now = time.monotonic()
            if bookmarks and (dropped or now >= next_bookmark):
                lines.append(_bookmark(state.resource, seen))
            if bookmarks and now >= next_bookmark:
                next_bookmark = min(deadline, now + self._bookmark_every)
            if not stream.send(lines) or now >= deadline:
                return
            if stopping:
                stream.handler.close_connection = True
                return

    # ------------------------------------------------------------------ writes

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

    # ------------------------------------------------------------------ connections

    def _opened(self, connection: socket.socket) -> None:
        with self._usage_lock:
            self._connections.add(connection)

    def _closed(self, connection: socket.socket) -> None:
        with self._usage_lock:
            self._connections.discard(connection)


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


class _Stream:
    """A chunked response of watch events, counted as the server's watch bytes."""

    def __init__(self, handler: _Handler, server: ApiServer, resource: Resource) -> None:
        self.handler = handler
        self.server = server
        self.resource = resource.plural

    def open(self) -> bool:
        """Send the headers of a chunked 200; False when the client has gone."""
        handler = self.handler
        self.server._count("watch", self.resource, 1, 0)
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
        except OSError:
            handler.close_connection = True
            return False
        handler.streaming = True
        return True

    def send(self, lines: list[bytes]) -> bool:
        """Write the lines (in chunks); False when the client has gone."""
        try:
            for start in range(0, len(lines), _CHUNK_EVENTS):
                data = b"".join(lines[start : start + _CHUNK_EVENTS])
                self.server._count("watch", self.resource, 0, len(data))
                self.handler.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
        except OSError:
            self.handler.close_connection = True
            return False
        return True

    def close(self) -> None:
        try:
            self.handler.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.handler.close_connection = True


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], api: ApiServer) -> None:
        self.api = api
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HttpServer
    streaming = False  # a watch's chunked answer has begun

    def setup(self) -> None:
        super().setup()
        self.server.api._opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.api._closed(self.connection)

    def do_GET(self) -> None:
        self.server.api._serve(self, "GET")

    def do_POST(self) -> None:
        self.server.api._serve(self, "POST")

    def do_PATCH(self) -> None:
        self.server.api._serve(self, "PATCH")

    def do_PUT(self) -> None:
        self.server.api._serve(self, "PUT")

    def do_DELETE(self) -> None:
        self.server.api._serve(self, "DELETE")

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the tests and the benchmark read `usage()`, not an access log."""


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
