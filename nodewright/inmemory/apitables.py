"""Server-side Table output (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`), as kubectl asks.

Role: `Tables` turns stored manifests into a `meta.k8s.io/v1` Table with the columns
kube-apiserver's printers give each kind (nodes, pods, events in both versions, DaemonSets,
PDBs, CRDs) and, for a custom resource, its CRD's `additionalPrinterColumns` (JSONPath cells,
`priority` 1 shown by `-o wide`, `date` columns as ages), with Name and Age when it declares
none. Ages are kube's `HumanDuration` of the emulator's clock (the simulator's virtual time).
Each row carries the object as `includeObject` asks: `Metadata` (the default,
PartialObjectMetadata), `Object` or `None`.

Deviations: a pod's READY and RESTARTS come from its phase and conditions (the emulator's pods
have no container statuses); a node's VERSION, OS-IMAGE, KERNEL-VERSION and CONTAINER-RUNTIME
from `status.nodeInfo` when present, else `<unknown>`; a DaemonSet's counts from its status when
present, else 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from nodewright.inmemory.apiwire import Failure, Resource

TABLE = "as=Table"
# (name, type, format, priority, description) of a column; cells are computed by the kind's row.
_Column = tuple[str, str, str, int, str]
_NAME: _Column = ("Name", "string", "name", 0, "Name must be unique within a namespace.")
_AGE: _Column = ("Age", "string", "", 0, "CreationTimestamp is a timestamp representing the server time.")


def wants_table(accept: str) -> bool:
    """Whether an Accept header asks for a meta.k8s.io Table (kubectl get's first choice)."""
    return any(TABLE in part and "g=meta.k8s.io" in part for part in accept.split(","))


def human_duration(seconds: float) -> str:
    """kube's `duration.HumanDuration` ("45s", "3m20s", "4h", "2d3h", ...)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, (hours // 24) % 365
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{hours // 24 // 365}y"


class Tables:
    """Tables of stored manifests at the time `now()` (module docstring)."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now

    def table(
        self,
        resource: Resource,
        manifests: Iterable[Mapping[str, Any]],
        metadata: Mapping[str, Any],
        include: str = "Metadata",
        *,
        headers: bool = True,
        columns: Sequence[_Column] = (),
        cells: Callable[[Mapping[str, Any]], list[Any]] | None = None,
    ) -> dict[str, Any]:
        """A Table of `manifests` (a list's metadata: resourceVersion, continue). `columns` and
        `cells`, when given, are the kind's own columns between Name and Age.
        """
        if include not in ("None", "Metadata", "Object"):
            raise Failure(400, f'includeObject: Unsupported value: "{include}"')
        if cells is not None:
            given = cells
            printed: tuple[list[_Column], Callable[[Mapping[str, Any], float], list[Any]]] = (
                [_NAME, *columns, _AGE],
                lambda m, now: [_name(m), *given(m), _age(m, now)],
            )
        else:
            printed = self._printer(resource)
        columns_printed, row = printed
        now = self._now()
        rows = []
        for manifest in manifests:
            entry: dict[str, Any] = {"cells": row(manifest, now)}
            if include == "Object":
                entry["object"] = dict(manifest)
            elif include == "Metadata":
                entry["object"] = {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": manifest.get("metadata") or {},
                }
            rows.append(entry)
        definitions = [
            {"name": n, "type": t, "format": f, "description": d, "priority": p} for n, t, f, p, d in columns_printed
        ]
        return {
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": dict(metadata),
            "columnDefinitions": definitions if headers else [],
            "rows": rows,
        }

    def _printer(self, resource: Resource) -> tuple[list[_Column], Callable[[Mapping[str, Any], float], list[Any]]]:
        printers = {
            "node": (_NODE_COLUMNS, _node_row),
            "pod": (_POD_COLUMNS, _pod_row),
            "event": (_EVENT_COLUMNS, _event_row),
            "coreevent": (_EVENT_COLUMNS, _event_row),
            "daemonset": (_DAEMONSET_COLUMNS, _daemonset_row),
            "pdb": (_PDB_COLUMNS, _pdb_row),
            "customresourcedefinition": ([_NAME, ("Created At", "date", "", 0, "")], _crd_row),
        }
        if resource.kind in printers:
            return printers[resource.kind]
        if not resource.columns:
            return [_NAME, _AGE], lambda m, now: [_name(m), _age(m, now)]
        declared = list(resource.columns)
        columns: list[_Column] = [_NAME] + [(n, t, "", p, d) for n, t, _, p, d in declared]
        if not any(c[2] == ".metadata.creationTimestamp" for c in declared):
            columns.append(_AGE)

        def row(manifest: Mapping[str, Any], now: float) -> list[Any]:
            cells: list[Any] = [_name(manifest)]
            for _, kind, path, _, _ in declared:
                value = jsonpath(manifest, path)
                if kind == "date":
                    cells.append(_since(value, now))
                elif value is None:
                    cells.append(None)
                else:
                    cells.append(value if isinstance(value, (int, float, bool)) else _text(value))
            if len(cells) < len(columns):
                cells.append(_age(manifest, now))
            return cells

        return columns, row


# ---------------------------------------------------------------------- JSONPath (printer columns)

_STEP = re.compile(r'\.((?:\\.|[^.\[\\])+)|\[\?\(@\.([\w.-]+)\s*==\s*"([^"]*)"\)\]|\[(\d+)\]')


def jsonpath(value: Any, path: str) -> Any:
    """The value a CRD printer column's JSONPath names (`.a.b`, escaped dots, `[0]`, and
    `[?(@.field=="x")]` filters); None when absent. A filter matching several picks the first.
    """
    position = 0
    while position < len(path):
        matched = _STEP.match(path, position)
        if matched is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {path[position:]!r}")
        position = matched.end()
        if matched[1] is not None:
            key = matched[1].replace("\\.", ".")
            value = value.get(key) if isinstance(value, Mapping) else None
        elif matched[2] is not None:
            items = value if isinstance(value, list) else []
            value = next((i for i in items if isinstance(i, Mapping) and str(i.get(matched[2])) == matched[3]), None)
        else:
            index = int(matched[4])
            value = value[index] if isinstance(value, list) and index < len(value) else None
        if value is None:
            return None
    return value


# ---------------------------------------------------------------------- the built-in kinds


def _name(manifest: Mapping[str, Any]) -> str:
    return str((manifest.get("metadata") or {}).get("name") or "")


def _timestamp(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        return None


def _since(text: Any, now: float) -> str:
    moment = _timestamp(text)
    return "<unknown>" if moment is None else human_duration(now - moment)


def _age(manifest: Mapping[str, Any], now: float) -> str:
    return _since((manifest.get("metadata") or {}).get("creationTimestamp"), now)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _condition(manifest: Mapping[str, Any], kind: str) -> str | None:
    for condition in (manifest.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind:
            return str(condition.get("status"))
    return None


_NODE_COLUMNS: list[_Column] = [
    _NAME,
    ("Status", "string", "", 0, "The status of the node"),
    ("Roles", "string", "", 0, "The roles of the node"),
    _AGE,
    ("Version", "string", "", 0, "Kubelet Version reported by the node."),
    ("Internal-IP", "string", "", 1, "List of addresses reachable to the node."),
    ("External-IP", "string", "", 1, "List of addresses reachable to the node."),
    ("OS-Image", "string", "", 1, "OS Image reported by the node from /etc/os-release."),
    ("Kernel-Version", "string", "", 1, "Kernel Version reported by the node."),
    ("Container-Runtime", "string", "", 1, "Container Runtime Version reported by the node."),
]


def _node_row(manifest: Mapping[str, Any], now: float) -> list[Any]:
    ready = _condition(manifest, "Ready")
    status = {"True": "Ready", "False": "NotReady"}.get(ready or "", "Unknown")
    if (manifest.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    labels = (manifest.get("metadata") or {}).get("labels") or {}
    roles = sorted(k.partition("/")[2] for k in labels if k.startswith("node-role.kubernetes.io/"))
    info = (manifest.get("status") or {}).get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in (manifest.get("status") or {}).get("addresses") or ()}
    return [
        _name(manifest),
        status,
        ",".join(r for r in roles if r) or "<none>",
        _age(manifest, now),
        info.get("kubeletVersion") or "<unknown>",
        addresses.get("InternalIP") or "<none>",
        addresses.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


_POD_COLUMNS: list[_Column] = [
    _NAME,
    ("Ready", "string", "", 0, "The aggregate readiness state of this pod for accepting traffic."),
    ("Status", "string", "", 0, "The aggregate status of the containers in this pod."),
    ("Restarts", "string", "", 0, "The number of times the containers in this pod have been restarted."),
    _AGE,
    ("IP", "string", "", 1, "IP address allocated to the pod."),
    ("Node", "string", "", 1, "Name of the Node this pod is assigned to."),
    ("Nominated Node", "string", "", 1, "Name of the node that was nominated for this pod."),
    ("Readiness Gates", "string", "", 1, "The readiness gates of this pod."),
]


def _pod_row(manifest: Mapping[str, Any], now: float) -> list[Any]:
    spec = manifest.get("spec") or {}
    status = manifest.get("status") or {}
    containers = len(spec.get("containers") or ()) or 1
    ready = containers if _condition(manifest, "Ready") == "True" else 0
    phase = str(status.get("phase") or "Pending")
    if (manifest.get("metadata") or {}).get("deletionTimestamp"):
        phase = "Terminating"
    return [
        _name(manifest),
        f"{ready}/{containers}",
        phase,
        0,
        _age(manifest, now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        "<none>",
    ]


_EVENT_COLUMNS: list[_Column] = [
    ("Last Seen", "string", "", 0, "Time when last event occurred"),
    ("Type", "string", "", 0, "Type of this event"),
    ("Reason", "string", "", 0, "Reason of this event"),
    ("Object", "string", "", 0, "The object this event is about"),
    ("Message", "string", "", 0, "The message of this event"),
    ("Subobject", "string", "", 1, "The subobject this event is about"),
    ("Source", "string", "", 1, "The source of this event"),
    ("First Seen", "string", "", 1, "Time when first event occurred"),
    ("Count", "integer", "", 1, "Number of times this event occurred"),
    ("Name", "string", "name", 1, "Name of the event"),
]


def _event_row(manifest: Mapping[str, Any], now: float) -> list[Any]:
    series = manifest.get("series") or {}
    first = manifest.get("eventTime") or manifest.get("firstTimestamp")
    last = series.get("lastObservedTime") or manifest.get("lastTimestamp") or first
    regarding = manifest.get("involvedObject") or manifest.get("regarding") or {}
    source = manifest.get("reportingComponent") or manifest.get("reportingController") or ""
    return [
        _since(last, now),
        manifest.get("type") or "",
        manifest.get("reason") or "",
        f"{str(regarding.get('kind') or '').lower()}/{regarding.get('name') or ''}",
        manifest.get("message") or manifest.get("note") or "",
        regarding.get("fieldPath") or "",
        source,
        _since(first, now),
        int(series.get("count") or manifest.get("count") or 1),
        _name(manifest),
    ]


_DAEMONSET_COLUMNS: list[_Column] = [
    _NAME,
    ("Desired", "integer", "", 0, "The number of nodes that should be running the daemon pod."),
    ("Current", "integer", "", 0, "The number of nodes running at least one daemon pod."),
    ("Ready", "integer", "", 0, "The number of nodes running a ready daemon pod."),
    ("Up-to-date", "integer", "", 0, "The number of nodes running the updated daemon pod."),
    ("Available", "integer", "", 0, "The number of nodes running an available daemon pod."),
    ("Node Selector", "string", "", 0, "The node selector of the daemon pods."),
    _AGE,
    ("Containers", "string", "", 1, "Names of each container in the template."),
    ("Images", "string", "", 1, "Images referenced by each container in the template."),
    ("Selector", "string", "", 1, "Label query over pods that are managed by the daemon set."),
]


def _daemonset_row(manifest: Mapping[str, Any], now: float) -> list[Any]:
    status = manifest.get("status") or {}
    spec = manifest.get("spec") or {}
    template = (spec.get("template") or {}).get("spec") or {}
    containers = template.get("containers") or ()
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    node_selector = template.get("nodeSelector") or {}
    return [
        _name(manifest),
        int(status.get("desiredNumberScheduled") or 0),
        int(status.get("currentNumberScheduled") or 0),
        int(status.get("numberReady") or 0),
        int(status.get("updatedNumberScheduled") or 0),
        int(status.get("numberAvailable") or 0),
        ",".join(f"{k}={v}" for k, v in sorted(node_selector.items())) or "<none>",
        _age(manifest, now),
        ",".join(str(c.get("name")) for c in containers),
        ",".join(str(c.get("image")) for c in containers),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


_PDB_COLUMNS: list[_Column] = [
    _NAME,
    ("Min Available", "string", "", 0, "The minimum number of pods that must be available."),
    ("Max Unavailable", "string", "", 0, "The maximum number of pods that may be unavailable."),
    ("Allowed Disruptions", "integer", "", 0, "Calculated number of pods that may be disrupted at this time."),
    _AGE,
]


def _pdb_row(manifest: Mapping[str, Any], now: float) -> list[Any]:
    spec = manifest.get("spec") or {}
    minimum, maximum = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [
        _name(manifest),
        "N/A" if minimum is None else str(minimum),
        "N/A" if maximum is None else str(maximum),
        int((manifest.get("status") or {}).get("disruptionsAllowed") or 0),
        _age(manifest, now),
    ]


def _crd_row(manifest: Mapping[str, Any], now: float) -> list[Any]:
    return [_name(manifest), (manifest.get("metadata") or {}).get("creationTimestamp") or ""]
