"""Deployments and StatefulSets with their scale subresource, for a simulation served to kubectl.

Role: `Workloads`, handed a `Scaler` (the simulator's Deployments controller: the workloads with
their live and running replicas, and `scale`), answers `apps/v1` `deployments` and
`statefulsets`: list and get (JSON or a Table with kubectl's NAME, READY, UP-TO-DATE,
AVAILABLE, AGE columns), and GET/PATCH of `{name}/scale` (an `autoscaling/v1` Scale; a merge,
strategic merge or JSON patch of `spec.replicas`), which is what `kubectl scale` sends. The
workloads are made up on each request from the controller; nothing is stored, and there is no
watch (405), create, update or delete (405).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any, Protocol

from nodewright.inmemory.apipatch import patched
from nodewright.inmemory.apitables import Tables
from nodewright.inmemory.apiwire import Failure, Resource, encode

PREFIX = "/apis/apps/v1/"
KINDS = {"deployments": "Deployment", "statefulsets": "StatefulSet"}
DEPLOYMENTS = Resource("deployment", "deployments", "Deployment", "apps/v1", "/apis/apps/v1", True, ())
STATEFULSETS = Resource("statefulset", "statefulsets", "StatefulSet", "apps/v1", "/apis/apps/v1", True, ())
_COLUMNS = (
    ("Ready", "string", "", 0, "Number of the pod with ready state"),
    ("Up-to-date", "string", "", 0, "Total number of non-terminated pods targeted by this deployment."),
    ("Available", "string", "", 0, "Total number of available pods (ready for at least minReadySeconds)."),
)


class Scaler(Protocol):
    """What owns the workloads: their replicas, and scaling one."""

    def workloads(self) -> list[tuple[str, str, str, int, int]]:
        """(kind, namespace, name, replicas, running) of every workload."""
        ...

    def scale(self, kind: str, namespace: str, name: str, replicas: int) -> None:
        """Set a workload's replicas; Failure 404 when there is none."""
        ...


def answers(path: str) -> bool:
    """Whether `path` names deployments or statefulsets."""
    parts = path[len(PREFIX) :].split("/") if path.startswith(PREFIX) else []
    if parts and parts[0] == "namespaces":
        parts = parts[2:]
    return bool(parts) and parts[0] in KINDS


class Workloads:
    """Deployments and StatefulSets from a `Scaler` (module docstring)."""

    def __init__(self, scaler: Scaler, tables: Tables) -> None:
        self._scaler = scaler
        self._tables = tables

    def serve(
        self, method: str, path: str, query: Mapping[str, str], body: bytes, content_type: str, *, table: bool
    ) -> tuple[str, int, bytes]:
        """(verb, status, body) for a request `answers(path)` said is ours."""
        parts = [urllib.parse.unquote(p) for p in path[len(PREFIX) :].split("/")]
        namespace = ""
        if parts[0] == "namespaces":
            namespace, parts = parts[1], parts[2:]
        plural, name, sub = parts[0], (parts[1:2] or [""])[0], (parts[2:3] or [""])[0]
        kind = KINDS[plural]
        if query.get("watch") in ("true", "1"):
            raise Failure(405, f"watch is not supported by this emulator on {plural}")
        mine = [w for w in self._scaler.workloads() if w[0] == kind and (not namespace or w[1] == namespace)]
        if not name:
            if method != "GET":
                raise Failure(405, f"{method} is not supported by this emulator on a list of {plural}")
            items = [_manifest(w) for w in mine]
            return "list", 200, self._render(plural, items, table=table)
        found = next((w for w in mine if w[2] == name), None)
        if found is None:
            raise Failure(404, f'{plural}.apps "{name}" not found', {"name": name, "group": "apps", "kind": plural})
        if sub == "scale":
            if method == "PATCH":
                wanted = patched(_scale(found), content_type, body, {}).get("spec") or {}
                replicas = wanted.get("replicas")
                if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                    raise Failure(422, f'Scale.autoscaling "{name}" is invalid: spec.replicas: Invalid value')
                self._scaler.scale(kind, found[1], name, replicas)
                found = next(w for w in self._scaler.workloads() if w[:3] == found[:3])
                return "patch", 200, encode(_scale(found))
            if method == "GET":
                return "get", 200, encode(_scale(found))
        if sub or method != "GET":
            raise Failure(
                405, f"{method} is not supported by this emulator on {plural}/{name}{'/' + sub if sub else ''}"
            )
        return "get", 200, self._render(plural, [_manifest(found)], table=table, one=True)

    def _render(self, plural: str, items: list[dict[str, Any]], *, table: bool, one: bool = False) -> bytes:
        if table:
            resource = DEPLOYMENTS if plural == "deployments" else STATEFULSETS
            return encode(self._tables.table(resource, items, {}, columns=_COLUMNS, cells=_cells))
        if one:
            return encode(items[0])
        return encode({"kind": f"{KINDS[plural]}List", "apiVersion": "apps/v1", "metadata": {}, "items": items})


def _manifest(workload: tuple[str, str, str, int, int]) -> dict[str, Any]:
    kind, namespace, name, replicas, running = workload
    return {
        "kind": kind,
        "apiVersion": "apps/v1",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}},
        "status": {"replicas": replicas, "readyReplicas": running, "availableReplicas": running},
    }


def _cells(manifest: Mapping[str, Any]) -> list[Any]:
    status = manifest.get("status") or {}
    replicas, ready = int(status.get("replicas") or 0), int(status.get("readyReplicas") or 0)
    return [f"{ready}/{replicas}", replicas, ready]


def _scale(workload: tuple[str, str, str, int, int]) -> dict[str, Any]:
    _, namespace, name, replicas, _ = workload
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas},
        "status": {"replicas": replicas, "selector": f"app={name}"},
    }
