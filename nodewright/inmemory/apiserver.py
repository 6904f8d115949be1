"""A Kubernetes API server over the in-memory cluster, on real local HTTP.

Role: serve a cluster (`apisource.ServedCluster`: `InMemoryCluster`, or the simulator's
`SimulatedCluster` that holds one) as a kube-apiserver would (paged lists, watches with
resourceVersions, bookmarks and 410, GET/PATCH/DELETE of nodes, the eviction subresource) so the
real Kubernetes adapter (`KubeCluster`, built with `from_cluster_info`) can be run and measured
against it in tests, in the simulator and in the API-load benchmark: requests, bytes, CPU.

Why hand-written: no kube-apiserver can be installed where the project is built (no package
registry CI reaches ships one; envtest and kind download binaries or need Docker), and kmock
(tests/adapters/kube/emulator.py) keeps objects of its own on an asyncio loop with no watch over
our model. What the adapter depends on is small enough to write on the standard library's
`http.server` (`ThreadingHTTPServer`, one thread per connection, chunked transfer for watches),
with no dependency and with the cluster's own rules (PDBs, evictions, the pod GC) deciding.

Parts (one concept each; each an object that owns its state and is handed its collaborators)
  * `apiserver.py`: `ApiServer`: lifecycle and dispatching each request (tokens, injected faults,
    discovery, routing to the part that answers it).
  * `apisource.py`: `ServedCluster`, what the emulator reads, follows and writes through.
  * `apistore.py`: `ObjectStore`, the served objects, revisions and watch history (the one
    condition lock). `apifeed.py`: `ClusterFeed`, the cluster's objects into the store.
  * `apireads.py`: `Reads`, lists with continue tokens, GETs, watches (JSON or Table).
    `apitables.py`: `Tables`, kubectl's columns. `apiselect.py`: label and field selectors.
  * `apiwrites.py`: `Writes`, node and node status patches, node and pod deletion, evictions,
    Event creation and series patches. `apipatch.py`: the four patch types.
  * `apicustom.py`: `CustomResources`, CRDs and their objects (`apischema.py`: defaults, pruning,
    validation). `apidiscovery.py`: `Discovery`, /version, /api, /apis, OpenAPI v3.
  * `apihttp.py`: `Usage` (request and byte counting, connections), the request handler and the
    chunked watch stream. `apiwire.py`: the kinds served, routes, the stored records and the JSON
    answered (Status, watch lines, bookmarks, continue tokens).

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
  GET, POST, PATCH, DELETE  /apis/resource.k8s.io/v1/deviceclasses, resourceclaims,
         resourceclaimtemplates: DRA objects, held by the cluster's `devices` (`apidra.py`).
  GET    /version, /api, /apis, /api/v1, /apis/{group}[/{version}], /openapi/v3[/...]: discovery
         (aggregated v2 when asked) and OpenAPI v3 (`apidiscovery`).
  Any list, get or watch asked for with `Accept: application/json;as=Table;g=meta.k8s.io;v=v1`
         answers a Table with kubectl's columns (`apitables`); `labelSelector` is supported.
  DELETE /api/v1/namespaces/{ns}/pods/{name}  `cluster.remove_pod`; preconditions (uid,
         resourceVersion) answer 409 when they do not hold.
  POST/GET/PATCH/DELETE /apis/apiextensions.k8s.io/v1/customresourcedefinitions[/{name}] and the
         objects of each CRD (`apicustom`), listed, watched and printed as the built-in kinds.
  PATCH  /api/v1/nodes/{name}  merge, strategic merge, JSON patch or server-side apply;
         `metadata.resourceVersion` in the body is a precondition (409 Conflict);
         spec.unschedulable, spec.taints, metadata.labels and metadata.annotations take effect
         (the shapes `KubeCluster.cordon`/`uncordon` and kubectl send become `cluster.cordon` /
         `uncordon` calls, a taint added or removed alone `taint`/`untaint`).
  PATCH  /api/v1/nodes/{name}/status  the kubelet's and the EKS node monitoring agent's write:
         each `status.conditions` entry (merged by type, strategic or plain merge patch) goes
         through `cluster.set_node_condition`, whose transition time moves only with the status;
         422 naming an entry without a type or with a status other than True, False, Unknown.
  DELETE /api/v1/nodes/{name}  `cluster.delete_node` (its pods go with it); 404 when missing.
  PATCH  /api/v1/namespaces/{ns}/pods/{name}  the four patch types; metadata.annotations take
         effect (`cluster.annotate_pod`, as `kubectl annotate` and `KubeCluster.annotate_pod`
         send them); a changed metadata.uid answers 422 (immutable), a stale
         metadata.resourceVersion 409.
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
    passes their revision or when 64 newer paged lists are open.
  * A watch with `allowWatchBookmarks` also gets a BOOKMARK right after a batch whose events its
    field selector dropped, and one as it ends by `timeoutSeconds`: the API contract allows a
    bookmark at any time, and it lets a client's resourceVersion reach `latest(kind)` at once (a
    barrier for the simulator). A watch without `timeoutSeconds` ends after 30 minutes.
  * Evicting a pod already being deleted answers 409 (the in-memory cluster's "gone"), where
    kube-apiserver deletes it again and answers 201. Eviction messages are the cluster's.
  * Among the cluster's kinds only nodes and pods can be patched (the four patch types; on nodes
    spec.unschedulable, spec.taints, labels and annotations take effect, on pods annotations, other
    fields are dropped), nodes and pods
    deleted (at once: no finalizers, the grace period is accepted, not waited for). Pods, DaemonSets
    and PDBs cannot be created or updated through the API (405): the simulation owns them. PUT
    (replace) is served for nodes (the fields a patch carries, `apiwrites.replace_node`), CRDs,
    custom objects and Leases, 405 elsewhere; `dryRun=All` for writes of those and node patches
    (admitted and answered, nothing stored), 400 for other writes. Objects carry no managedFields or uid beyond the
    model's (a pod's ownerReferences get a stable uid) unless `dress` adds them.
  * Server-side apply merges (no field ownership, no conflicts); a CRD's served versions keep
    their objects apart (no conversion); CEL rules without Kubernetes' extension libraries,
    `messageExpression` or ratcheting (`apicel`).
  * Leases (`coordination.k8s.io/v1`) are stored as sent (`apicustom`): no kubelet writes node
    Leases, so `kubectl describe node` shows none.
  * Not served: namespaces as objects,
    RBAC, `/openapi/v2` beyond an empty document; Deployments and StatefulSets only when `scale`
    is set (a simulation's workloads: list, get and the scale subresource, no watch).

Accounting: `usage()` counts requests and response body bytes by verb (list, watch, get, patch,
delete, create; `discovery` for /version, /api, /apis and /openapi) and resource (nodes, pods,
daemonsets, poddisruptionbudgets, pods/eviction), a watch's bytes as they are streamed; the names
are the adapter's, so both sides can be compared.
`watching` is the number of watch streams open now (a watch whose client hung up ends within a
second; `stop()` ends them all).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any

from nodewright.inmemory.apicustom import CustomResources, dry_run
from nodewright.inmemory.apidiscovery import Discovery
from nodewright.inmemory.apidra import DRA_KINDS, DRA_RESOURCES, DeviceWrites
from nodewright.inmemory.apifeed import ClusterFeed
from nodewright.inmemory.apihttp import Handler, HttpServer, Usage
from nodewright.inmemory.apireads import Reads
from nodewright.inmemory.apiscale import DEPLOYMENTS, STATEFULSETS, Scaler, Workloads
from nodewright.inmemory.apiscale import answers as scaled
from nodewright.inmemory.apisource import ServedCluster
from nodewright.inmemory.apistore import ObjectStore
from nodewright.inmemory.apitables import Tables, wants_table
from nodewright.inmemory.apiwire import (
    BY_NAME,
    CLAIMS_PATH,
    CRDS,
    FAULT_MESSAGES,
    LEASES,
    RESOURCES,
    STRATEGIC_MERGE_PATCH,
    Failure,
    Resource,
    Route,
    encode,
    route_of,
    status_body,
    verb_of,
)
from nodewright.inmemory.apiwrites import Writes
from nodewright.ports import ApiUsage

__all__ = ["FAULT_MESSAGES", "STRATEGIC_MERGE_PATCH", "ApiServer"]

# NodeClaims as discovery lists them when the claims store answers them and no CRD was applied.
_CLAIMS = Resource("nodeclaims", "nodeclaims", "NodeClaim", "nodewright.io/v1", "/apis/nodewright.io/v1", False, ())


class ApiServer:
    """The in-memory cluster served over local HTTP as kube-apiserver (see the module docstring).

    `history` is how many events each kind keeps for watches to replay; `bookmark_every` the
    seconds between BOOKMARK events of a watch that allows them; `dress(kind, manifest)` may
    return a fuller manifest for each object as it changes (managedFields, env, probes, ...: what
    real objects carry) without touching the model; `tokens`, when set, are the bearer tokens
    accepted (the attribute may be changed while serving). `port` 0 picks a free port.
    """

    def __init__(
        self,
        cluster: ServedCluster,
        *,
        history: int = 10_000,
        bookmark_every: float = 5.0,
        dress: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
        tokens: Iterable[str] | None = None,
        port: int = 0,
    ) -> None:
        self.cluster = cluster
        self.lock = threading.RLock()
        self.tokens: set[str] | None = None if tokens is None else set(tokens)
        # Injected failures (see "Endpoints" in the module docstring); the simulator's faults set it.
        self.fault: Callable[[str, str], tuple[int, float | None] | None] | None = None
        # Serves `nodeclaims.nodewright.io` when set (`nodewright.inmemory.claimobjects.InMemoryClaimObjects`).
        self.claims: Any = None
        # Serves apps/v1 deployments and statefulsets with their scale subresource when set
        # (`nodewright.inmemory.apiscale.Scaler`: a simulation's workload controller).
        self.scale: Scaler | None = None
        self._store = ObjectStore((*RESOURCES, *DRA_RESOURCES, CRDS, LEASES), history=history)
        self._feed = ClusterFeed(cluster, self._store, dress)
        self._usage = Usage()
        self._tables = Tables(cluster.clock.now)
        self._reads = Reads(self._store, self._usage, self._tables, bookmark_every=bookmark_every)
        self._writes = Writes(cluster, self._store, self.lock)
        self._custom = CustomResources(self._store, self.lock, cluster.clock.now)
        self._devices = DeviceWrites(cluster, self._store, self.lock)
        self._discovery = Discovery(self._served, lambda r: self._custom.schema(r.kind))
        self._port = port
        self._http: HttpServer | None = None
        self._thread: threading.Thread | None = None
        self._started = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> str:
        """Load the cluster's objects, listen on 127.0.0.1 (`port`, or an ephemeral one) and
        return the base URL. A server starts once.
        """
        if self._started:
            raise RuntimeError("this ApiServer was already started")
        self._started = True
        with self.lock:
            with self._store.condition:
                self._feed.load()
            self.cluster.listeners.append(self._feed.on_change)
        self._http = HttpServer(("127.0.0.1", self._port), self._serve, self._usage)
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
        store = self._store
        with store.condition:
            store.stopping = True
            store.condition.notify_all()
            # Let open watches end their streams cleanly before the connections are cut.
            end = time.monotonic() + 2.0
            while store.watching and time.monotonic() < end:
                store.condition.wait(end - time.monotonic())
        with self.lock:
            if self._feed.on_change in self.cluster.listeners:
                self.cluster.listeners.remove(self._feed.on_change)
        http.shutdown()
        self._usage.cut()
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
        with self._store.condition:
            return self._store.revision

    def latest(self, kind: str) -> int:
        """The resourceVersion of the newest change of `kind` ("node" or "nodes", "pod", "pods",
        "daemonset(s)", "pdb" or "poddisruptionbudgets"); 0 when none. A client that has seen
        this version of that kind (an event or a bookmark at or past it) has seen everything.
        """
        resource = BY_NAME.get(kind)
        if resource is None:
            raise ValueError(f"unknown kind {kind!r}")
        with self._store.condition:
            return self._store.kind(resource.kind).latest

    def custom_objects(self, group: str, version: str, plural: str) -> list[dict[str, Any]]:
        """The stored objects of a CRD's kind (applied with kubectl, say); [] when not served."""
        kind = f"{plural}.{group}/{version}"
        with self._store.condition:
            if not self._store.served(kind):
                return []
            state = self._store.kind(kind)
            return [state.objects[k].manifest for k in state.sorted_keys()]

    def drop_connections(self) -> int:
        """Cut every open connection (watches included), as a load balancer or an API server
        restart does; the server keeps serving new ones. Returns how many were cut.
        """
        return self._usage.cut()

    @property
    def watching(self) -> int:
        """How many watch streams are open now."""
        with self._store.condition:
            return self._store.watching

    def usage(self) -> list[ApiUsage]:
        """Requests served and response body bytes sent since the start, by verb and resource
        (sorted), a watch's bytes as streamed.
        """
        return self._usage.usage()

    # ------------------------------------------------------------------ HTTP

    def _served(self) -> list[Resource]:
        resources = list(self._store.resources())
        if self.claims is not None and not any(
            r.plural == "nodeclaims" and r.group == "nodewright.io" for r in resources
        ):
            resources.append(_CLAIMS)
        if self.scale is not None:
            resources += [DEPLOYMENTS, STATEFULSETS]
        return resources

    def _serve(self, handler: Handler, method: str) -> None:
        """Answer one request (called in the connection's thread)."""
        handler.streaming = False
        url = urllib.parse.urlsplit(handler.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        accept = handler.headers.get("Accept") or ""
        if self.claims is not None and url.path.startswith(CLAIMS_PATH):
            if query.get("watch") in ("true", "1"):
                refusal = status_body(405, "watch is not supported by this emulator on nodeclaims")
                self._send(handler, 405, refusal, "watch", "nodeclaims")
                return
            self._serve_claims(handler, method, url.path, body, wants_table(accept))
            return
        if self.scale is not None and scaled(url.path):
            self._serve_workloads(handler, method, url.path, query, body, accept=accept)
            return
        route = route_of(url.path, self._store.resources())
        verb = verb_of(method, route, query)
        resource = (
            "" if route is None else route.resource.plural + (f"/{route.subresource}" if route.subresource else "")
        )
        content_type = "application/json"
        try:
            if self.tokens is not None and (handler.headers.get("Authorization") or "") not in {
                f"Bearer {token}" for token in self.tokens
            }:
                raise Failure(401, "Unauthorized")
            if route is None and self._discovery.answers(url.path):
                if method != "GET":
                    raise Failure(405, f"{method} is not supported on {url.path}")
                answer, content_type = self._discovery.answer(url.path, accept)
                self._send(handler, 200, answer, "discovery", "", content_type=content_type)
                return
            if route is None:
                raise Failure(404, "the server could not find the requested resource")
            injected = self.fault(verb, resource) if self.fault is not None else None
            if injected is not None:
                status, retry_after = injected
                if status == 0:
                    self._usage.count(verb, resource, 1, 0)
                    handler.close_connection = True
                    return
                headers = {"Retry-After": str(max(1, round(retry_after)))} if retry_after is not None else {}
                answer = status_body(status, FAULT_MESSAGES.get(status, "injected"))
                self._send(handler, status, answer, verb, resource, headers=headers)
                return
            if verb == "watch":
                self._reads.watch(handler, route, query, table=wants_table(accept))
                return
            code, answer = self._answer(handler, method, route, query, body, table=wants_table(accept))
        except Failure as failure:
            code, answer = failure.code, failure.status()
        except Exception as error:  # an error the cluster raised (fail_next), or a bug: a 500
            if handler.streaming:  # too late for an answer: the connection is dropped
                raise
            code = int(getattr(error, "status", 500) or 500)
            answer = status_body(code, f"{type(error).__name__}: {error}")
        self._send(handler, code, answer, verb, resource)

    def _serve_workloads(
        self, handler: Handler, method: str, path: str, query: Mapping[str, str], body: bytes, *, accept: str
    ) -> None:
        """A request for deployments or statefulsets (and their scale), answered from `scale`,
        holding the cluster lock (a scale changes the cluster's pods).
        """
        plural = "deployments" if "/deployments" in path else "statefulsets"
        assert self.scale is not None
        workloads = Workloads(self.scale, self._tables)
        content_type = handler.headers.get("Content-Type") or ""
        try:
            with self.lock:
                verb, code, answer = workloads.serve(method, path, query, body, content_type, table=wants_table(accept))
        except Failure as failure:
            verb, code, answer = method.lower(), failure.code, failure.status()
        self._send(handler, code, answer, verb, plural + ("/scale" if path.endswith("/scale") else ""))

    def _serve_claims(self, handler: Handler, method: str, path: str, body: bytes, table: bool) -> None:
        """A request for NodeClaim objects, answered by `claims`; counted as verb on nodeclaims.
        Tokens are checked as for any request; faults are not injected here. A list asked for as
        a Table is printed with the applied CRD's columns (Name and Age without one).
        """
        if self.tokens is not None and (handler.headers.get("Authorization") or "") not in {
            f"Bearer {token}" for token in self.tokens
        }:
            self._send(handler, 401, status_body(401, "Unauthorized"), "", "nodeclaims")
            return
        verb, code, answer = self.claims.serve(method, path, body, handler.headers.get("Content-Type") or "")
        if table and method == "GET" and code == 200:
            resource = next(
                (r for r in self._store.resources() if r.plural == "nodeclaims" and r.group == "nodewright.io"), _CLAIMS
            )
            data = json_loads(answer)
            items: list[Any] = list(data.get("items") or ()) if "items" in data else [data]
            metadata = data.get("metadata") if "items" in data else {}
            answer = encode(
                self._tables.table(
                    resource, items, {"resourceVersion": str((metadata or {}).get("resourceVersion") or "")}
                )
            )
        self._send(handler, code, answer, verb, "nodeclaims")

    def _answer(
        self, handler: Handler, method: str, route: Route, query: Mapping[str, str], body: bytes, *, table: bool
    ) -> tuple[int, bytes]:
        resource = route.resource
        kind = resource.kind
        content_type = handler.headers.get("Content-Type") or ""
        custom = kind in (CRDS.kind, LEASES.kind) or bool(resource.crd)
        if method == "DELETE" and body:
            # A DELETE carries its dryRun in the DeleteOptions body too (kubectl sends it there).
            options = json_loads(body).get("dryRun")
            if isinstance(options, list) and options:
                query = {**query, "dryRun": ",".join(str(o) for o in options)}
        dry = method != "GET" and dry_run(query)
        if kind in DRA_KINDS and method != "GET" and not route.subresource and not dry:
            if method == "POST" and not route.name:
                return 201, self._devices.create(route, body)
            if method == "PATCH" and route.name:
                return 200, self._devices.patch(route, content_type, body)
            if method == "DELETE" and route.name:
                return 200, self._devices.delete(route)
        if dry and not custom and not (kind == "node" and method in ("PATCH", "PUT")):
            raise Failure(400, f"dryRun is not supported by this emulator on {resource.plural}")
        if method == "PUT" and not (custom or (kind == "node" and not route.subresource)):
            raise Failure(405, f"PUT (update) is not supported by this emulator on {resource.plural}; use PATCH")
        if route.subresource == "status" and kind == "node" and method == "PATCH" and route.name:
            return 200, self._writes.patch_node_status(route.name, content_type, body)
        if route.subresource == "eviction" and kind == "pod" and route.name:
            if method != "POST":
                raise Failure(405, f"{method} is not supported on pods/eviction")
            return self._writes.evict(route, body)
        if route.subresource and not (custom and resource.status_subresource and route.subresource == "status"):
            raise Failure(404, "the server could not find the requested resource")
        if method == "GET":
            if route.name:
                return 200, self._reads.get(route, query, table=table)
            return 200, self._reads.list(route, query, table=table)
        if custom and method == "POST" and not route.name:
            return 201, self._custom.create(route, body, query)
        if custom and method == "PATCH" and route.name:
            return self._custom.patch(route, content_type, body, query)
        if custom and method == "PUT" and route.name:
            return 200, self._custom.replace(route, body, query)
        if custom and method == "DELETE" and route.name and not route.subresource:
            return 200, self._custom.delete(route, query)
        if kind == "node" and method == "PUT" and route.name:
            return 200, self._writes.replace_node(route.name, body, dry=dry)
        if kind == "event" and method == "POST" and not route.name:
            return 201, self._writes.create_event(route, body)
        if kind == "event" and method == "PATCH" and route.name:
            return 200, self._writes.patch_event(route, content_type, body)
        if kind == "node" and method == "PATCH" and route.name:
            return 200, self._writes.patch_node(route.name, content_type, body, dry=dry)
        if kind == "pod" and method == "PATCH" and route.name:
            return 200, self._writes.patch_pod(route, content_type, body)
        if kind in ("node", "pod") and method == "DELETE" and route.name:
            return 200, self._writes.delete(route, body)
        target = f"{resource.plural}/{route.name}" if route.name else f"a list of {resource.plural}"
        raise Failure(405, f"{method} is not supported by this emulator on {target}")

    def _send(
        self,
        handler: Handler,
        code: int,
        body: bytes,
        verb: str,
        resource: str,
        *,
        headers: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        self._usage.count(verb, resource, 1, len(body))
        try:
            handler.send_response(code)
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:  # the client went away
            handler.close_connection = True


def json_loads(body: bytes) -> dict[str, Any]:
    """A JSON object answer (a claims store's)."""
    value = json.loads(body)
    return value if isinstance(value, dict) else {}
