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

Files (one concept each)
  * `apiserver.py`: `ApiServer`: lifecycle, the server's copy of the cluster and its revisions,
    dispatching each request (tokens, injected faults, routing).
  * `apireads.py`: lists with continue tokens, GETs, watches. `apiwrites.py`: node and node status
    patches, node deletion, evictions, Event creation and series patches.
  * `apihttp.py`: the shared state the parts use, request and byte counting, the request handler
    and the chunked watch stream. `apiwire.py`: the kinds served, routes, field selectors, the
    stored records and the JSON answered (Status, watch lines, bookmarks, continue tokens).

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
         by it (`nodewright.inmemory.claimobjects`: the NodeClaim mirror's objects; no watch).
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

import collections
import contextlib
import itertools
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any

from nodewright.inmemory.apihttp import _Handler, _HttpServer
from nodewright.inmemory.apireads import Reads
from nodewright.inmemory.apiwire import (
    _BY_NAME,
    CLAIMS_PATH,
    FAULT_MESSAGES,
    RESOURCES,
    STRATEGIC_MERGE_PATCH,
    _encode,
    _Event,
    _Failure,
    _fields,
    _key,
    _Kind,
    _Listing,
    _Route,
    _route,
    _status,
    _Stored,
    _verb,
)
from nodewright.inmemory.apiwrites import Writes
from nodewright.inmemory.cluster import ADDED, DELETED, MODIFIED, InMemoryCluster
from nodewright.model.event import StoredEvent
from nodewright.model.manifests import daemonset_manifest, node_manifest, pdb_manifest, pod_manifest
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget
from nodewright.ports import ApiUsage

__all__ = ["FAULT_MESSAGES", "STRATEGIC_MERGE_PATCH", "ApiServer"]


class ApiServer(Reads, Writes):
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
        # Serves `nodeclaims.nodewright.io` when set (`nodewright.inmemory.claimobjects.InMemoryClaimObjects`).
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
        verb, code, answer = self.claims.serve(method, path, body, handler.headers.get("Content-Type") or "")
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

    # ------------------------------------------------------------------ reads

    # ------------------------------------------------------------------ connections

    def _opened(self, connection: socket.socket) -> None:
        with self._usage_lock:
            self._connections.add(connection)

    def _closed(self, connection: socket.socket) -> None:
        with self._usage_lock:
            self._connections.discard(connection)
