"""Kubernetes Events from the functions: the `record` half of the Cluster port over events.k8s.io/v1.

Role: turn each occurrence a controller reports into at most one Event API request, as decided by
the caller-owned `EventCorrelator` (`nodewright.model.event`): a POST of a new Event
(`reportingController: nodewright`, `reportingInstance` the function's name) for the first
occurrence of a series, a JSON merge PATCH of `series.count` / `series.lastObservedTime` for its
repeats (at most one per `refresh` seconds), nothing for the rest. Writes are rate-limited per
object and per invocation (`begin()` starts an invocation's budget).

Requests go through the cluster adapter's request path (`Transport.request`), so they are
counted by verb and resource ("create events", "patch events") with the reads and other writes:
`KubeApiRequests`, the `kube-api-usage` record and the API-load benchmark see them. They are
not retried: an Event is best effort, and a retry's sleep would delay the decision it reports.

Failures never reach the controller: a PATCH that finds no Event (404: deleted, or expired by
the API server's one-hour TTL) forgets the series, so the next occurrence creates a new one; a
create that meets an existing name (409: a previous invocation's create landed and its answer
was lost) counts as done; anything else is counted in `failures` and dropped (by
`KubeCluster.record`, which owns the adapter's error type).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from kubernetes.client import ApiClient, EventsV1Api
from kubernetes.client.exceptions import ApiException

from nodewright.model.event import CREATE, Event, EventCorrelator, EventWrite, StoredEvent, series_patch

MERGE_PATCH = "application/merge-patch+json"
RESOURCE = "events"


class _Request(Protocol):
    """`Transport.request`: send, counted; ApiExceptions of `mapped` statuses propagate."""

    def __call__(
        self,
        verb: str,
        resource: str,
        call: str,
        send: Callable[[], Any],
        mapped: tuple[int, ...] = (),
        *,
        retry: bool = True,
    ) -> Any: ...


class KubeEvents:
    """Events written through the adapter's request path (see the module docstring).

    `request` sends and counts one request (the cluster adapter's); `read(response, verb,
    resource)` drains and counts the answer; `timeout` bounds each request in seconds.
    """

    def __init__(
        self,
        api_client: ApiClient,
        request: _Request,
        read: Callable[[Any, str, str], bytes],
        *,
        reporting_instance: str,
        correlator: EventCorrelator | None = None,
        timeout: float = 10.0,
    ) -> None:
        self._api = EventsV1Api(api_client)
        self._request = request
        self._read = read
        self._timeout = timeout
        self.reporting_instance = reporting_instance
        self.correlator = correlator if correlator is not None else EventCorrelator()
        self.sent = 0
        self.failures = 0

    def begin(self) -> None:
        """A new invocation: its budget of Event writes starts full."""
        self.correlator.begin()

    def record(self, event: Event, now: float) -> None:
        """Send the write this occurrence needs, if any. A 404 or 409 is handled here (see the
        module docstring); other failures raise the adapter's `KubeApiError`, which
        `KubeCluster.record` counts in `failures` and drops.
        """
        write = self.correlator.observe(event, now)
        if write is None:
            return
        try:
            self._send(write)
        except ApiException as error:
            if write.verb != CREATE and error.status == 404:
                self.correlator.forget(event)
            elif not (write.verb == CREATE and error.status == 409):
                self.failures += 1

    def _send(self, write: EventWrite) -> None:
        call = f"{write.verb} event {write.namespace}/{write.name}"
        if write.verb == CREATE:
            body = StoredEvent.written(write, self.reporting_instance).to_manifest()
            response = self._request(
                "create",
                RESOURCE,
                call,
                lambda: self._api.create_namespaced_event(
                    write.namespace, body, _preload_content=False, _request_timeout=self._timeout
                ),
                mapped=(404, 409),
                retry=False,
            )
        else:
            patch = series_patch(write)
            response = self._request(
                "patch",
                RESOURCE,
                call,
                lambda: self._api.patch_namespaced_event(
                    write.name,
                    write.namespace,
                    patch,
                    _content_type=MERGE_PATCH,
                    _preload_content=False,
                    _request_timeout=self._timeout,
                ),
                mapped=(404,),
                retry=False,
            )
        self._read(response, write.verb, RESOURCE)
        self.sent += 1
