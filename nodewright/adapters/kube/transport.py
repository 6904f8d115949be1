"""How the Kubernetes adapter sends its requests: lists, retries, guarded node writes, errors.

Role: `Transport`, what `KubeCluster` (`nodewright.adapters.kube.cluster`, whose docstring
states the contract: reading by LIST, writing, transient failures, accounting) is given and every
call of the Kubernetes adapters goes through (the cluster's, its Events', the NodeClaim objects'
and the configuration status writes): paged lists read as raw JSON and parsed page by page straight into the
model (a continue token that expired restarts the list once), transient answers sent again
after `Retry-After` or a jittered backoff, a 401 retried once after `on_unauthorized`, node
writes recomputed after a resourceVersion conflict, and each request counted by verb and
resource with its bytes. Also the errors it raises (`KubeApiError`, `UnreadableObject`).
"""

from __future__ import annotations

import collections
import functools
import json
import random
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api, PolicyV1Api, ResourceV1Api
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from nodewright.adapters.kube.store import (
    DAEMONSETS,
    DEVICECLASSES,
    NODES,
    PDBS,
    PODS,
    RESOURCECLAIMS,
    RESOURCECLAIMTEMPLATES,
    object_key,
)
from nodewright.adapters.kube.usage import ApiMeter
from nodewright.engine.collector import collector_paused
from nodewright.model.dra import DeviceClass, ResourceClaim, ResourceClaimTemplate
from nodewright.model.node import Node
from nodewright.model.pod import Pod, RequestsMemo
from nodewright.model.taints import Taint
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget

T = TypeVar("T")

# Terminal pods hold no resources and may be most of a busy cluster's pods: the server drops them.
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
MERGE_PATCH = "application/merge-patch+json"
# The API server's answer when a pod is covered by several PDBs (HTTP 500, not retryable).
MULTIPLE_BUDGETS = "more than one PodDisruptionBudget"
# How often a node write is recomputed after losing a resourceVersion race before giving up.
_CONFLICT_RETRIES = 5
# Transient answers (see "Transient failures" above): statuses, and 0 for no answer at all.
TRANSIENT_STATUSES = frozenset({0, 429, 500, 502, 503, 504})
RETRIES = 3
# The longest Retry-After honoured, and the jittered backoff when there is none.
MAX_RETRY_AFTER = 10.0
_BACKOFF_BASE = 0.2
_BACKOFF_CAP = 2.0


class KubeApiError(Exception):
    """A Kubernetes API call failed in a way the Cluster port does not turn into a result.

    `call` names the operation (e.g. "list pods", "patch node ip-10-0-1-2"); `status` is the HTTP
    status (0 for a connection or TLS failure); `message` is the API server's Status message.
    """

    def __init__(self, call: str, status: int, message: str) -> None:
        self.call = call
        self.status = status
        self.message = message
        super().__init__(f"{call}: HTTP {status}: {message}" if status else f"{call}: {message}")


class UnreadableObject(ValueError):
    """The API server returned an object the model cannot parse (names the list and object)."""


def parse_timestamp(value: Any) -> float:
    """An RFC 3339 timestamp (`2024-05-01T12:00:00Z`, fractions allowed) as epoch seconds; 0.0 if absent."""
    if not value:
        return 0.0
    return datetime.fromisoformat(str(value)).timestamp()


def parse_node(item: Mapping[str, Any]) -> Node:
    return Node.parse(item, created_at=parse_timestamp((item.get("metadata") or {}).get("creationTimestamp")))


class Transport:
    """How the Kubernetes adapters talk to the API server over `api_client` (module docstring).

    `page_size` is the `limit` of each list request; `on_unauthorized` is called after a 401,
    before the one retry (without it a 401 raises at once); `request_timeout` bounds each HTTP
    request in seconds so a stuck connection cannot eat a Lambda's whole run; `retries`, `sleep`
    and `jitter` pace the retries of transient answers. `meter` counts every request by verb and
    resource; `retried` counts the retries by status (0: no answer), `retry_seconds` the time
    waited.
    """

    def __init__(
        self,
        api_client: ApiClient,
        *,
        page_size: int = 500,
        on_unauthorized: Callable[[], None] | None = None,
        request_timeout: float = 30.0,
        retries: int = RETRIES,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {page_size}")
        self.api_client = api_client
        self.core = CoreV1Api(api_client)
        self.apps = AppsV1Api(api_client)
        self.policy = PolicyV1Api(api_client)
        self.resource = ResourceV1Api(api_client)
        self.page_size = page_size
        self.timeout = request_timeout
        self.meter = ApiMeter()
        self.retried: collections.Counter[int] = collections.Counter()
        self.retry_seconds = 0.0
        self._on_unauthorized = on_unauthorized
        self._retries = retries
        self._sleep = sleep
        self._jitter = jitter
        # Every pod this transport parses (lists and watches) shares the resource lists parsed so
        # far. The watch threads share it too: it only ever holds pure answers (dict reads and writes).
        self._pod_memo = RequestsMemo()

    def pod(self, manifest: Mapping[str, Any]) -> Pod:
        return Pod.parse(manifest, self._pod_memo)

    def kind(self, kind: str) -> tuple[Callable[..., Any], Callable[[Mapping[str, Any]], Any], dict[str, Any]]:
        """The list call, parser and list parameters of a kind."""
        if kind == NODES:
            return self.core.list_node, parse_node, {}
        if kind == PODS:
            return self.core.list_pod_for_all_namespaces, self.pod, {"field_selector": ACTIVE_PODS}
        if kind == DAEMONSETS:
            return self.apps.list_daemon_set_for_all_namespaces, DaemonSet.parse, {}
        if kind == PDBS:
            return self.policy.list_pod_disruption_budget_for_all_namespaces, PodDisruptionBudget.parse, {}
        if kind == DEVICECLASSES:
            return self.resource.list_device_class, DeviceClass.parse, {}
        if kind == RESOURCECLAIMS:
            return self.resource.list_resource_claim_for_all_namespaces, ResourceClaim.parse, {}
        if kind == RESOURCECLAIMTEMPLATES:
            return self.resource.list_resource_claim_template_for_all_namespaces, ResourceClaimTemplate.parse, {}
        raise ValueError(f"unknown kind {kind!r}")

    def request(
        self,
        verb: str,
        resource: str,
        call: str,
        send: Callable[[], T],
        mapped: tuple[int, ...] = (),
        *,
        retry: bool = True,
    ) -> T:
        """`send()`, counted as a `verb` on `resource`, retried once after a 401 when
        `on_unauthorized` is set and, with `retry`, up to `retries` times after a transient
        failure (see the module docstring). ApiExceptions with a status in `mapped` propagate for
        the caller to interpret; any other failure, transport errors (connection refused, TLS
        verification, timeouts) included, raises KubeApiError.
        """
        attempt = 0
        while True:
            try:
                return self._request_once(verb, resource, call, send, mapped)
            except (ApiException, KubeApiError) as error:
                wait = _transient(error)
                if not retry or wait is None or attempt >= self._retries:
                    raise
                delay = retry_delay(attempt, wait, self._jitter())
                self.retried[_status_of(error)] += 1
                self.retry_seconds += delay
                self._sleep(delay)
                attempt += 1

    def _request_once(self, verb: str, resource: str, call: str, send: Callable[[], T], mapped: tuple[int, ...]) -> T:
        """One `send()` (and its one retry after a 401): see `request`."""
        refreshed = False
        while True:
            try:
                self.meter.request(verb, resource)
                return send()
            except HTTPError as failure:
                raise KubeApiError(call, 0, str(failure)) from failure
            except ApiException as error:
                self.meter.received(verb, resource, len(error.body or b""))
                if error.status == 401 and not refreshed and self._on_unauthorized is not None:
                    self._on_unauthorized()  # a token past its 15 minutes: refresh, send once more
                    refreshed = True
                    continue
                if error.status in mapped:
                    raise error from None
                raise api_error(call, error) from error

    def list_objects(
        self,
        kind: str,
        list_call: Callable[..., Any],
        parse: Callable[[Mapping[str, Any]], T],
        **params: Any,
    ) -> list[T]:
        """Every object of `kind`, parsed, following `continue` page by page; starts over once
        when a continue token expired (410).
        """
        return list(self.list_keyed(kind, list_call, parse, params)[0].values())

    def list_kind(self, kind: str) -> list[Any]:
        """Every object of one of the watched kinds, read by LIST (in order: the generator in
        `snapshot` reads nodes before pods).
        """
        list_call, parse, params = self.kind(kind)
        return list(self.list_keyed(kind, list_call, parse, params)[0].values())

    def list_keyed(
        self,
        kind: str,
        list_call: Callable[..., Any],
        parse: Callable[[Mapping[str, Any]], T],
        params: Mapping[str, Any],
    ) -> tuple[dict[str, T], str]:
        """`list_objects`'s objects by key (`namespace/name`), with the list's resourceVersion."""
        try:
            return self._list_once(kind, list_call, parse, params)
        except _ContinueExpired:
            try:
                return self._list_once(kind, list_call, parse, params)
            except _ContinueExpired as error:
                raise KubeApiError(f"list {kind}", 410, "the continue token expired twice") from error

    def _list_once(
        self,
        kind: str,
        list_call: Callable[..., Any],
        parse: Callable[[Mapping[str, Any]], T],
        params: Mapping[str, Any],
    ) -> tuple[dict[str, T], str]:
        call = f"list {kind}"
        parsed: dict[str, T] = {}
        token = ""
        version = ""
        while True:
            page = dict(params, limit=self.page_size, _preload_content=False, _request_timeout=self.timeout)
            if token:
                page["_continue"] = token
            try:
                response = self.request("list", kind, call, functools.partial(list_call, **page), mapped=(410,))
            except ApiException as error:
                if token:
                    raise _ContinueExpired from error
                raise api_error(call, error) from error
            # A page of 500 pods decodes to some 100,000 dicts and lists and no cycles: the
            # collector would be 80% of the CPU (json.loads of 38 MB: 0.4 s without it, 2.0 s with).
            with collector_paused():
                token, page_version = _parse_page(self.read(response, "list", kind), parse, parsed, call)
            # A paged list is one consistent read at the first page's resourceVersion.
            version = version or page_version
            if not token:
                return parsed, version

    def read_node(self, name: str) -> dict[str, Any] | None:
        call = f"read node {name}"
        try:
            response = self.request(
                "get",
                "nodes",
                call,
                lambda: self.core.read_node(name, _preload_content=False, _request_timeout=self.timeout),
                mapped=(404,),
            )
        except ApiException:
            return None  # only 404 is mapped
        raw: dict[str, Any] = json.loads(self.read(response, "get", "nodes"))
        return raw

    def update_node(self, name: str, verb: str, change: Callable[[Mapping[str, Any]], dict[str, Any] | None]) -> None:
        """Read the node, compute the new spec fields with `change` (None: nothing to do) and send
        them as a merge patch guarded by the resourceVersion read; recompute on a conflict.
        """
        call = f"{verb} node {name}"
        for _ in range(_CONFLICT_RETRIES):
            raw = self.read_node(name)
            if raw is None:
                return
            spec_patch = change(raw.get("spec") or {})
            if spec_patch is None:
                return
            body = {
                "metadata": {"resourceVersion": (raw.get("metadata") or {}).get("resourceVersion")},
                "spec": spec_patch,
            }
            try:
                self.patch_node(call, name, body, mapped=(404, 409))
            except ApiException as error:
                if error.status == 404:
                    return
                continue  # 409: someone changed the node since we read it
            return
        raise KubeApiError(call, 409, f"the node kept changing under us ({_CONFLICT_RETRIES} conflicts)")

    def patch_node(self, call: str, name: str, body: Mapping[str, Any], mapped: tuple[int, ...]) -> None:
        """One merge patch of node `name`, its answer read and counted; the `mapped` statuses are
        raised as ApiException for the caller to decide on, others as KubeApiError.
        """
        response = self.request(
            "patch",
            "nodes",
            call,
            functools.partial(
                self.core.patch_node,
                name,
                body,
                _content_type=MERGE_PATCH,
                _preload_content=False,
                _request_timeout=self.timeout,
            ),
            mapped=mapped,
        )
        self.read(response, "patch", "nodes")

    def read(self, response: Any, verb: str, resource: str) -> bytes:
        """The whole body of a raw response, counted; the connection goes back to the pool."""
        data = _drain(response)
        self.meter.received(verb, resource, len(data))
        return data


def _parse_page(body: bytes, parse: Callable[[Mapping[str, Any]], T], into: dict[str, T], call: str) -> tuple[str, str]:
    """Decode one list page, add its parsed items to `into` by key and return the continue token
    and the list's resourceVersion.

    A function of its own so the page's raw JSON is freed on return, before the collector
    resumes (otherwise its first pass would walk the whole page).
    """
    listing = json.loads(body)
    for item in listing.get("items") or ():
        try:
            into[object_key(item)] = parse(item)
        except (KeyError, ValueError, TypeError, AttributeError) as error:
            meta = item.get("metadata") or {}
            where = "/".join(p for p in (meta.get("namespace"), meta.get("name")) if p) or "an item"
            raise UnreadableObject(f"{call}: cannot read {where}: {error}") from error
    meta = listing.get("metadata") or {}
    return str(meta.get("continue") or ""), str(meta.get("resourceVersion") or "")


class _ContinueExpired(Exception):
    """A list's continue token is no longer valid (410 Gone); the list must start over."""


def same_taint(manifest: Mapping[str, Any], taint: Taint) -> bool:
    return (manifest.get("key"), manifest.get("effect"), manifest.get("value") or "") == (
        taint.key,
        taint.effect,
        taint.value,
    )


def _drain(response: Any) -> bytes:
    """The whole body of a raw (`_preload_content=False`) response; the connection goes back to the pool."""
    try:
        data: bytes = response.data
    finally:
        response.release_conn()
    return data


def status_message(error: ApiException) -> str:
    """The `message` of the API server's Status body, or the HTTP reason when there is none."""
    body = error.body
    if body:
        try:
            status = json.loads(body)
        except ValueError:
            status = None
        if isinstance(status, dict) and status.get("message"):
            return str(status["message"])
        if isinstance(body, bytes):
            return body.decode(errors="replace")[:500]
        return str(body)[:500]
    return str(error.reason or "no response")


def retry_delay(attempt: int, retry_after: float, jitter: float) -> float:
    """Seconds to wait before retry `attempt` (0-based) of a transient failure: its Retry-After
    (at most `MAX_RETRY_AFTER`), or without one (0) full jitter (`jitter` in [0, 1)) doubling
    from `_BACKOFF_BASE` up to `_BACKOFF_CAP`.
    """
    if retry_after > 0:
        return min(retry_after, MAX_RETRY_AFTER)
    return float(jitter * min(_BACKOFF_CAP, _BACKOFF_BASE * 2**attempt))


def _transient(error: ApiException | KubeApiError) -> float | None:
    """How long to wait before sending again after `error` (0: no Retry-After, back off), or
    None when it is not transient (see "Transient failures" in the module docstring).
    """
    if isinstance(error, KubeApiError):
        cause = error.__cause__
        if isinstance(cause, ApiException):
            return _transient(cause)
        return 0.0 if error.status == 0 else None
    status = int(error.status or 0)
    if status not in TRANSIENT_STATUSES:
        return None
    retry_after = _retry_after(error)
    if status == 429:
        return retry_after  # a PDB's refusal carries no Retry-After: not transient
    if status == 500 and MULTIPLE_BUDGETS in status_message(error):
        return None
    return retry_after or 0.0


def _retry_after(error: ApiException) -> float | None:
    """The Retry-After header of an answer, in seconds (None when absent or not a number)."""
    headers = error.headers or {}
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _status_of(error: ApiException | KubeApiError) -> int:
    return int(error.status or 0)


def api_error(call: str, error: ApiException) -> KubeApiError:
    return KubeApiError(call, int(error.status or 0), status_message(error))
