"""The Kubernetes API as the controllers use it: `nodewright.ports.Cluster` over the official client.

Role: implement the Cluster port against a real API server with the same contract as the
in-memory cluster (`nodewright.inmemory.cluster`), so controllers cannot tell them apart.

Files: this one is `KubeCluster`: following (the watches into the store) and the Cluster
port's methods; it is given a `Transport` (`transport.py`: how every call is sent, paged lists
parsed into the model, retries, guarded node writes, accounting, and the errors it raises) and a
`ClusterStore` (`store.py`: what the watches keep); `KubeCluster.connect` builds both.

Two ways of reading. Following (after `follow(seconds)`: the functions): each kind (nodes, active
pods, daemonsets, PDBs) is LISTed once and then WATCHed by a `Watcher` thread into a
`ClusterStore` (see `nodewright.adapters.kube.watch` and `.store`); `snapshot`, `pending`,
`version` and `node_by_instance` answer from the store once every kind has synced, so a warm
function sends no request per read, only the watches' few per minute. The watches outlive the
invocation with the adapter (one per cold start) and resume from their resourceVersions at the
next `follow`. Not following (the CLI, one-off reads): every read is a LIST, as below.

Reading by LIST (`snapshot` when not following) follows Karpenter's conservative order: nodes
first, then pods, daemonsets and PDBs, so a pod is never seen bound to a node the snapshot does
not know. (Watched kinds are independent streams, as in any informer: a just-bound pod can show
a moment before its new node does, never a node without the pods it held when it was listed.)
Every list is paged with `limit`/`continue`; pods are listed with a server-side field selector
that drops Succeeded and Failed pods (they hold no resources, and on busy clusters they are most
of the list). Lists are read as raw JSON (`_preload_content=False`) and each page is parsed
straight into the frozen model (`Pod.parse`, `Node.parse`, ...) and dropped: building the
client's model objects for 10,000 pods costs seconds of CPU and several times the memory. Items
come back in the API server's key order (namespace, then name), which the store keeps too.
A continue token that expired mid-list (HTTP 410) restarts that list once from the beginning.

Writing:
  * cordon/uncordon read the node and send a JSON merge patch of `spec.unschedulable` and
    `spec.taints`, guarded by the node's resourceVersion so a concurrent change to the taints
    (by the kubelet, another controller) is never overwritten: on 409 the node is read again and
    the change recomputed. Nothing is sent when the node already looks right.
  * evict posts a policy/v1 Eviction with the pod's uid as a precondition: 200/201 -> "evicted",
    429 -> "blocked" (a PDB refuses now), 404/409 -> "gone" (deleted, or replaced by a pod of the
    same name), and the API server's 500 for a pod under several PDBs -> "blocked", as the
    in-memory cluster reports it.
  * delete_node treats 404 as already deleted.
  * record writes Events (events.k8s.io/v1), folded into series and rate-limited, never raising
    (`nodewright.adapters.kube.events`); each invocation's `follow` starts a new Event budget.

Authentication: on a 401 the transport asks `on_unauthorized` (e.g. `EksTokenSource.invalidate`) to
drop the cached token and retries once.

Transient failures are sent again, up to `retries` times, before the call fails: a 429 that
carries `Retry-After` (the API server's priority and fairness; an eviction's 429 from a PDB has
none and means "blocked"), a 500 (but the eviction's several-PDB 500), 502, 503 and 504 (an API
server restarting or overloaded, or its load balancer), and a request that got no answer
(connection reset, read timeout). The wait is `Retry-After` (at most `MAX_RETRY_AFTER` seconds)
or a jittered backoff. client-go's REST client does the same for 429/5xx with Retry-After; the
Python client retries nothing, so without this one lost answer failed a whole drain step and the
interruption message waited out its SQS visibility timeout. Every request the adapter sends is
safe to repeat: reads; patches guarded by resourceVersion (a repeat of one that landed finds
nothing to change); an eviction whose repeat finds the pod gone ("gone", counted as done); a node
deletion whose repeat gets 404. Watches are not retried here (the watcher has its own backoff).
`retried` counts the retries by status (0: no answer) and `retry_seconds` the time waited.
Every other failure raises `KubeApiError` naming the call.

Accounting: every request is counted by verb and resource with the bytes received (`usage`).
"""

from __future__ import annotations

import contextlib
import functools
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from nodewright.adapters.kube.events import KubeEvents
from nodewright.adapters.kube.store import (
    DAEMONSETS,
    DEVICE_KINDS,
    DEVICECLASSES,
    KINDS,
    NODES,
    PDBS,
    PODS,
    ClusterStore,
    object_key,
)
from nodewright.adapters.kube.transport import (
    ACTIVE_PODS,
    MAX_RETRY_AFTER,
    MERGE_PATCH,
    MULTIPLE_BUDGETS,
    RETRIES,
    TRANSIENT_STATUSES,
    KubeApiError,
    Transport,
    UnreadableObject,
    api_error,
    parse_node,
    parse_timestamp,
    retry_delay,
    same_taint,
    status_message,
)
from nodewright.adapters.kube.watch import READ_SLACK_SECONDS, Gone, Watcher
from nodewright.model.dra import DeviceObjects
from nodewright.model.event import Event
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.taints import Taint
from nodewright.ports import ApiUsage, Eviction

__all__ = [
    "ACTIVE_PODS",
    "MAX_RETRY_AFTER",
    "MERGE_PATCH",
    "RETRIES",
    "TRANSIENT_STATUSES",
    "KubeApiError",
    "KubeCluster",
    "UnreadableObject",
    "parse_timestamp",
    "retry_delay",
]


class KubeCluster:
    """`nodewright.ports.Cluster` over a `Transport`, reading from a `ClusterStore` while
    following (see the module docstring for the contract).

    The store's kinds are the kinds `follow` watches (the interruption function needs only
    nodes); `sync_timeout` bounds how long a read waits for the first LIST of each before it
    raises the watch's error. `barrier`, when given, makes every read from the store consistent:
    before it, the read waits until each kind's watch has delivered the resourceVersion
    `barrier()` names for it (the simulator's API emulator can say what its latest is; a real API
    server cannot, so a Lambda has none). `reporting_instance` names the writer of its Events
    (the function's name; see `record`).
    """

    def __init__(
        self,
        transport: Transport,
        store: ClusterStore,
        *,
        sync_timeout: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
        barrier: Callable[[], Mapping[str, int]] | None = None,
        reporting_instance: str = "nodewright",
    ) -> None:
        self.transport = transport
        self.store = store
        self._kinds = store.kinds
        self._sync_timeout = sync_timeout
        self._monotonic = monotonic
        self._watchers: dict[str, Watcher] = {}
        self._until = 0.0  # when the last `follow` asked the watches to stop
        self._barrier = barrier
        self.events = KubeEvents(
            transport.api_client, transport.request, transport.read, reporting_instance=reporting_instance
        )

    @classmethod
    def connect(
        cls,
        api_client: ApiClient,
        *,
        page_size: int = 500,
        on_unauthorized: Callable[[], None] | None = None,
        request_timeout: float = 30.0,
        kinds: Iterable[str] = KINDS,
        sync_timeout: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
        barrier: Callable[[], Mapping[str, int]] | None = None,
        retries: int = RETRIES,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        reporting_instance: str = "nodewright",
    ) -> KubeCluster:
        """A cluster over a new `Transport` on `api_client` and a new store of `kinds` (the
        options are those of `Transport` and of this class).
        """
        transport = Transport(
            api_client,
            page_size=page_size,
            on_unauthorized=on_unauthorized,
            request_timeout=request_timeout,
            retries=retries,
            sleep=sleep,
            jitter=jitter,
        )
        return cls(
            transport,
            ClusterStore(kinds),
            sync_timeout=sync_timeout,
            monotonic=monotonic,
            barrier=barrier,
            reporting_instance=reporting_instance,
        )

    # ------------------------------------------------------------------ following

    def follow(self, seconds: float) -> None:
        """Keep the store current for `seconds` more: start each kind's watcher, or extend it."""
        until = self._until = self._monotonic() + max(0.0, seconds)
        # Each follow starts a pass (an invocation; a message of the interruption function's
        # batch): its Event budget starts full.
        self.events.begin()
        for kind in self._kinds:
            watcher = self._watchers.get(kind)
            if watcher is None:
                watcher = self._watchers[kind] = self._watcher(kind)
            watcher.follow(until)

    @property
    def following(self) -> bool:
        """True once `follow` has been called: reads come from the store."""
        return bool(self._watchers)

    def close(self) -> None:
        """Stop every watch (tests, the simulator, the benchmark: a Lambda never needs to)."""
        for watcher in self._watchers.values():
            watcher.close()

    def watchers(self) -> dict[str, Watcher]:
        """The watcher of each followed kind (for reports and tests)."""
        return dict(self._watchers)

    def wait(self, seconds: float, woken: Callable[[], bool]) -> None:
        """Block up to `seconds` until `woken()` is true, checked whenever a watch event arrives.
        Not following, nothing wakes a sleeper: it polls, a second at a time.
        """
        if self.following:
            self.store.wait(seconds, woken)
        else:
            time.sleep(max(0.0, min(seconds, 1.0)))

    def seen(self, versions: Mapping[str, int], timeout: float = 10.0) -> bool:
        """Wait until each kind's watch has delivered at least resourceVersion `versions[kind]`
        (an emulator's integer resourceVersions; a barrier for the simulator). False on timeout.
        """
        end = self._monotonic() + timeout

        def caught_up() -> bool:
            return all(int(self._watchers[k].resource_version or 0) >= v for k, v in versions.items())

        while not caught_up():
            if self._monotonic() >= end:
                return False
            self.store.wait(0.005, caught_up)
        return True

    def _synced(self) -> ClusterStore:
        """The store, once every followed kind has been listed; raises the watches' error if
        that takes longer than `sync_timeout`.
        """
        if not self.store.synced():
            end = self._monotonic() + self._sync_timeout
            while not self.store.wait(min(1.0, max(0.0, end - self._monotonic())), self.store.synced):
                if self._monotonic() >= end:
                    errors = [f"{k}: {w.error}" for k, w in self._watchers.items() if w.error is not None]
                    raise KubeApiError("sync", 0, "; ".join(errors) or "the first LIST did not complete in time")
        if self._barrier is not None and not self.seen(self._barrier(), timeout=self._sync_timeout):
            raise KubeApiError("sync", 0, "the watches did not deliver the latest resourceVersions in time")
        return self.store

    def _watcher(self, kind: str) -> Watcher:
        list_call, parse, params = self.transport.kind(kind)

        def lister() -> tuple[dict[str, Any], str]:
            return self.transport.list_keyed(kind, list_call, parse, params)

        def opener(resource_version: str, timeout: int) -> Any:
            call = f"watch {kind}"
            try:
                return self.transport.request(
                    "watch",
                    kind,
                    call,
                    functools.partial(
                        list_call,
                        watch=True,
                        resource_version=resource_version,
                        allow_watch_bookmarks=True,
                        timeout_seconds=timeout,
                        _preload_content=False,
                        _request_timeout=(self.transport.timeout, timeout + READ_SLACK_SECONDS),
                        **params,
                    ),
                    mapped=(410,),
                    retry=False,
                )
            except ApiException as error:
                raise Gone(status_message(error)) from error

        return Watcher(
            kind,
            lister=lister,
            opener=opener,
            parse=parse,
            key=object_key,
            on_list=functools.partial(self.store.replace, kind),
            on_put=functools.partial(self.store.put, kind),
            on_delete=functools.partial(self.store.delete, kind),
            received=functools.partial(self.transport.meter.received, "watch", kind),
            monotonic=self._monotonic,
        )

    # ------------------------------------------------------------------ the Cluster port

    def pending(self) -> list[Pod]:
        """The pods that need capacity, sorted by key: from the store when following."""
        if self.following:
            return self._synced().pending()
        return self.snapshot().pending()

    def version(self) -> int:
        """The store's pending version when following; 0 otherwise (nothing tells of changes,
        so `wait` polls).
        """
        return self._synced().version() if self.following else 0

    def usage(self) -> list[ApiUsage]:
        """Requests and bytes since the last call, by verb and resource (the watches' included)."""
        return self.transport.meter.take()

    def snapshot(self) -> ClusterSnapshot:
        """Nodes, then active pods, daemonsets and PDBs: the store when following, otherwise
        each read completely (all pages).
        """
        if self.following:
            store = self._synced()
            if DEVICECLASSES not in self._kinds and PODS in self._kinds and store.has_device_claims():
                self._follow_devices()
                store = self._synced()
            return store.snapshot()
        nodes, pods, daemonsets, pdbs = (self.transport.list_kind(kind) for kind in (NODES, PODS, DAEMONSETS, PDBS))
        devices = DeviceObjects()
        if any(p.device_claims for p in pods):
            classes, claims, templates = (self.transport.list_kind(kind) for kind in DEVICE_KINDS)
            devices = DeviceObjects(
                {c.name: c for c in classes}, {c.key: c for c in claims}, {t.key: t for t in templates}
            )
        return ClusterSnapshot(
            nodes=tuple(nodes), pods=tuple(pods), daemonsets=tuple(daemonsets), pdbs=tuple(pdbs), devices=devices
        )

    def _follow_devices(self) -> None:
        """Start following DRA's kinds, the first time a pod names a claim: a cluster without
        DRA pays no LIST or WATCH for them. They follow as long as the other kinds do.
        """
        self.store.add_kinds(DEVICE_KINDS)
        self._kinds = (*self._kinds, *DEVICE_KINDS)
        until = self._until
        for kind in DEVICE_KINDS:
            watcher = self._watchers[kind] = self._watcher(kind)
            watcher.follow(until)

    def get_node(self, name: str) -> Node | None:
        """The node, or None when it does not exist."""
        raw = self.transport.read_node(name)
        return None if raw is None else parse_node(raw)

    def node_by_instance(self, instance_id: str) -> Node | None:
        """The node whose providerID names `instance_id`, or None: from the store when following
        nodes, otherwise by listing them (the providerID is not a field selector the API server
        offers).
        """
        if NODES in self._watchers:
            nodes = self._synced().nodes()
        else:
            nodes = self.transport.list_kind(NODES)
        return next((n for n in nodes if instance_id and n.instance_id == instance_id), None)

    def pods_on(self, node: str) -> list[Pod]:
        """The active pods bound to `node`, read with a server-side field selector."""
        selector = f"{ACTIVE_PODS},spec.nodeName={node}"
        return self.transport.list_objects(
            "pods", self.transport.core.list_pod_for_all_namespaces, self.transport.pod, field_selector=selector
        )

    def cordon(self, name: str, taint: Taint | None = None) -> None:
        """Set `spec.unschedulable` and add `taint` (replacing one with the same key and effect).
        Idempotent (nothing is written when the node already has both); a missing node is a no-op.
        """

        def change(spec: Mapping[str, Any]) -> dict[str, Any] | None:
            taints: list[Any] = list(spec.get("taints") or ())
            present = taint is None or any(same_taint(t, taint) for t in taints)
            if spec.get("unschedulable") and present:
                return None
            if taint is not None and not present:
                taints = [t for t in taints if (t.get("key"), t.get("effect")) != (taint.key, taint.effect)]
                taints.append(taint.to_manifest())
            return {"unschedulable": True, "taints": taints}

        self.transport.update_node(name, "cordon", change)

    def uncordon(self, name: str, taint_key: str | None = None) -> None:
        """Clear `spec.unschedulable` and remove every taint with `taint_key`. Idempotent; a
        missing node is a no-op.
        """

        def change(spec: Mapping[str, Any]) -> dict[str, Any] | None:
            taints: list[Any] = list(spec.get("taints") or ())
            kept = [t for t in taints if t.get("key") != taint_key] if taint_key else taints
            if not spec.get("unschedulable") and len(kept) == len(taints):
                return None
            # null removes the field, as `kubectl uncordon` does.
            return {"unschedulable": None, "taints": kept}

        self.transport.update_node(name, "uncordon", change)

    def evict(self, pod: Pod) -> Eviction:
        """Ask the Eviction API (policy/v1) to evict `pod`, with its uid as a precondition when
        known. Never raises for 429/404/409 or the several-PDBs 500 (see the module docstring).
        """
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod.name, "namespace": pod.namespace},
        }
        if pod.uid:
            body["deleteOptions"] = {"preconditions": {"uid": pod.uid}}
        call = f"evict pod {pod.key}"
        try:
            response = self.transport.request(
                "create",
                "pods/eviction",
                call,
                lambda: self.transport.core.create_namespaced_pod_eviction(
                    pod.name, pod.namespace, body, _preload_content=False, _request_timeout=self.transport.timeout
                ),
                mapped=(404, 409, 429, 500),
            )
        except ApiException as error:
            message = status_message(error)
            if error.status == 429:
                return Eviction(pod.key, "blocked", f"{message} (429)")
            if error.status in (404, 409):
                return Eviction(pod.key, "gone", f"{message} ({error.status})")
            if error.status == 500 and MULTIPLE_BUDGETS in message:
                return Eviction(pod.key, "blocked", f"{message} (500)")
            raise api_error(call, error) from error
        self.transport.read(response, "create", "pods/eviction")
        return Eviction(pod.key, "evicted")

    def record(self, event: Event, now: float) -> None:
        """Report an occurrence as an Event series (`nodewright.adapters.kube.events`); an API
        failure is counted in `events.failures` and dropped, never raised.
        """
        ref = event.regarding
        if ref.kind in ("Pod", "Node") and not ref.uid and self.following:
            # kubectl describe selects an object's Events by uid too: give the reference the one watched.
            known = self.store.pod(f"{ref.namespace}/{ref.name}") if ref.kind == "Pod" else self.store.node(ref.name)
            if known is not None and known.uid:
                event = replace(event, regarding=replace(ref, uid=known.uid))
        try:
            self.events.record(event, now)
        except KubeApiError:
            self.events.failures += 1

    def delete_node(self, name: str) -> None:
        """Delete the Node object; a node that is already gone counts as deleted."""
        call = f"delete node {name}"
        try:
            response = self.transport.request(
                "delete",
                "nodes",
                call,
                lambda: self.transport.core.delete_node(
                    name, _preload_content=False, _request_timeout=self.transport.timeout
                ),
                mapped=(404,),
            )
        except ApiException as error:
            if error.status == 404:
                return
            raise api_error(call, error) from error
        self.transport.read(response, "delete", "nodes")

    def annotate_pod(self, pod: Pod, annotations: Mapping[str, str | None]) -> bool:
        """Set `annotations` on the pod with one merge patch (None removes one), with the pod's
        uid when known, so a pod deleted and recreated under the same name is not written (the
        API server refuses a change of the immutable uid: 422). False when the pod is gone
        (404, 409 or that 422).
        """
        call = f"annotate pod {pod.key}"
        metadata: dict[str, Any] = {"annotations": dict(annotations)}
        if pod.uid:
            metadata["uid"] = pod.uid
        try:
            response = self.transport.request(
                "patch",
                "pods",
                call,
                functools.partial(
                    self.transport.core.patch_namespaced_pod,
                    pod.name,
                    pod.namespace,
                    {"metadata": metadata},
                    _content_type=MERGE_PATCH,
                    _preload_content=False,
                    _request_timeout=self.transport.timeout,
                ),
                mapped=(404, 409, 422),
            )
        except ApiException as error:
            if error.status in (404, 409, 422):
                return False
            raise api_error(call, error) from error
        self.transport.read(response, "patch", "pods")
        return True

    def label_node(self, name: str, labels: Mapping[str, str | None]) -> None:
        """Set `labels` on the node with one merge patch (None removes a label, as merge patches
        do); nothing is sent when the node already has them. A missing node is a no-op.
        """
        node = self.get_node(name)
        if node is None or all(node.labels.get(k) == v for k, v in labels.items()):
            return
        call = f"label node {name}"
        body = {"metadata": {"labels": dict(labels)}}
        with contextlib.suppress(ApiException):  # only a 404 is raised as one: the node is gone
            self.transport.patch_node(call, name, body, mapped=(404,))
