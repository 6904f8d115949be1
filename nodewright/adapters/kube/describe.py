"""The Events about one object, read as `kubectl describe` reads them (core/v1, field-selected).

Role: what `nodewright explain` shows next to its own answer: every component's Events about a pod
or a node (kube-scheduler's FailedScheduling and Scheduled, Nodewright's Nominated, Evicted,
Disruption*...), oldest first, as plain dicts (`nodewright.controllers.explain.Sources.events`).
One LIST of core/v1 Events with `involvedObject.kind` and `involvedObject.name` field selectors
(in the object's namespace; across namespaces for a node). Both Event shapes are read: the
events.k8s.io fields the API server converts (`eventTime`, `series`) and the older ones
(`firstTimestamp`, `lastTimestamp`, `count`).
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiClient, CoreV1Api

from nodewright.adapters.kube.cluster import parse_timestamp


def object_events(api_client: ApiClient, kind: str, name: str, namespace: str = "") -> list[dict[str, Any]]:
    """The Events about one object (see the module docstring); API errors propagate."""
    api = CoreV1Api(api_client)
    selector = f"involvedObject.kind={kind},involvedObject.name={name}"
    if namespace:
        listing = api.list_namespaced_event(namespace, field_selector=selector)
    else:
        listing = api.list_event_for_all_namespaces(field_selector=selector)
    rows = [_row(api_client.sanitize_for_serialization(item)) for item in listing.items or ()]
    return sorted(rows, key=lambda row: float(row["first"]))


def _row(item: dict[str, Any]) -> dict[str, Any]:
    involved = item.get("involvedObject") or {}
    series = item.get("series") or {}
    first = parse_timestamp(item.get("eventTime") or item.get("firstTimestamp") or "")
    last = parse_timestamp(series.get("lastObservedTime") or item.get("lastTimestamp") or "") or first
    return {
        "kind": involved.get("kind", ""),
        "namespace": involved.get("namespace", "") or "",
        "name": involved.get("name", ""),
        "type": item.get("type", ""),
        "reason": item.get("reason", ""),
        "note": item.get("message", "") or "",
        "first": first,
        "last": last,
        "count": int(series.get("count") or item.get("count") or 1),
    }
