"""The scenario's `workloads` and `pdbs`: Deployments, ReplicaSets and StatefulSets with their
replica schedules, DaemonSets and PodDisruptionBudgets, inline or in the files they name.

`read_workloads` reads every manifest of every entry (a file may hold several documents, and
kinds that say nothing about capacity, such as Services, are skipped), turns each pod template
into the `Pod` its controller would create, and reads the entry's replica schedule (`workload.py`
expands it into counts over time). Problems are reported at the field's `At`. Pure apart from
reading the files, which the caller's `documents` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from nodewright.config import fields as f
from nodewright.config.problems import At, show
from nodewright.model.errors import InvalidValue
from nodewright.model.pod import Pod
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget
from nodewright.simulator.scenario.fields import read_duration
from nodewright.simulator.scenario.workload import Diurnal, Segment, Workload

# kind -> the owner kind of its pods (whose controller recreates a deleted pod)
REPLICATED = {"Deployment": "ReplicaSet", "ReplicaSet": "ReplicaSet", "StatefulSet": "StatefulSet"}
# Kinds a workload manifest may hold besides workloads; they say nothing about capacity.
_IGNORED_KINDS = frozenset({"Namespace", "Service", "ConfigMap", "Secret", "ServiceAccount", "Ingress"})
# The documents an entry stands for (an inline mapping, or every document of the file it names),
# each with the `At` its problems are reported at.
Documents = Callable[[At, Any], list[tuple[At, Mapping[str, Any]]]]


def read_workloads(
    at: At, top: Mapping[str, Any], duration: float | None, documents: Documents
) -> tuple[list[Workload], list[DaemonSet], list[PodDisruptionBudget], list[tuple[float, DaemonSet]]]:
    """Every `workloads` entry: its workloads (each with its schedule), DaemonSets and PDBs, and
    the DaemonSets of entries with an `at` (created then, not at the start).
    """
    workloads: list[Workload] = []
    daemonsets: list[DaemonSet] = []
    pdbs: list[PodDisruptionBudget] = []
    late: list[tuple[float, DaemonSet]] = []
    seen: set[str] = set()
    for index, raw in enumerate(f.array(at / "workloads", top.get("workloads")) or ()):
        here = at / "workloads" / index
        entry = f.item(here, raw, ("manifest", "replicas", "at"))
        if entry is None:
            continue
        created = read_duration(here / "at", entry.get("at"))
        if created is not None and duration is not None and created > duration:
            (here / "at").error(f"is after the end of the scenario ({show(created)} s)")
        schedule = read_schedule(here / "replicas", entry.get("replicas"), duration)
        found: list[Workload] = []
        for doc_at, doc in documents(here / "manifest", f.required(here, entry, "manifest")):
            kind = doc.get("kind")
            if kind in REPLICATED:
                workload = read_workload(doc_at, doc, str(kind))
                if workload is not None:
                    found.append(workload)
            elif kind == "DaemonSet":
                daemonset = read_daemonset(doc_at, doc)
                if daemonset is not None and created is not None:
                    late.append((created, daemonset))
                elif daemonset is not None:
                    daemonsets.append(daemonset)
            elif kind == "PodDisruptionBudget":
                pdb = read_pdb(doc_at, doc)
                if pdb is not None:
                    pdbs.append(pdb)
            elif kind not in _IGNORED_KINDS:
                doc_at.error(
                    f"kind {show(kind)} is not supported: use Deployment, ReplicaSet, StatefulSet, "
                    "DaemonSet or PodDisruptionBudget"
                )
        if created is not None and found:
            (here / "at").error("only a DaemonSet is created later; a workload scales by its `replicas` schedule")
        if schedule and len(found) != 1:
            (here / "replicas").error(
                f"a replica schedule needs exactly one Deployment, ReplicaSet or StatefulSet in its "
                f"manifest, found {len(found)}"
            )
        for workload in found:
            if workload.key in seen:
                (here / "manifest").error(f"workload {workload.key} is defined more than once")
                continue
            seen.add(workload.key)
            workloads.append(replace(workload, schedule=schedule or ()))
    return workloads, daemonsets, pdbs, late


def read_workload(at: At, doc: Mapping[str, Any], kind: str) -> Workload | None:
    """A Deployment, ReplicaSet or StatefulSet: its name, replicas and pod template."""
    metadata = doc.get("metadata") or {}
    name = f.dns_subdomain(at / "metadata" / "name", metadata.get("name"))
    if metadata.get("name") is None:
        (at / "metadata" / "name").error("is required")
    namespace = str(metadata.get("namespace") or "default")
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        (at / "spec").error("is required")
        return None
    replicas = f.integer(at / "spec" / "replicas", spec.get("replicas", 1), minimum=0)
    template = spec.get("template")
    if not isinstance(template, Mapping):
        (at / "spec" / "template").error("a workload needs a pod template")
        return None
    if name is None or replicas is None:
        return None
    pod = read_template(at / "spec" / "template", template, namespace, name, REPLICATED[kind])
    if pod is None:
        return None
    return Workload(kind, namespace, name, pod, replicas)


def read_template(at: At, template: Mapping[str, Any], namespace: str, owner: str, owner_kind: str) -> Pod | None:
    """The pod a workload's controller creates from `template`, Pending and unbound."""
    spec = template.get("spec")
    if not isinstance(spec, Mapping) or not spec.get("containers"):
        (at / "spec" / "containers").error("a pod needs at least one container")
        return None
    meta = dict(template.get("metadata") or {})
    meta.update(
        name=f"{owner}-template",
        namespace=namespace,
        ownerReferences=[{"kind": owner_kind, "name": owner, "controller": True}],
    )
    try:
        pod = Pod.parse({"metadata": meta, "spec": spec})
    except (InvalidValue, KeyError, TypeError, ValueError) as error:
        (at / "spec").error(str(error))
        return None
    return replace(pod, phase="Pending", unschedulable=False, node_name="", uid="", created_at=0.0)


def read_daemonset(at: At, doc: Mapping[str, Any]) -> DaemonSet | None:
    """A DaemonSet with at least one container."""
    template = (doc.get("spec") or {}).get("template")
    if not isinstance(template, Mapping) or not (template.get("spec") or {}).get("containers"):
        (at / "spec" / "template" / "spec" / "containers").error("a pod needs at least one container")
        return None
    try:
        return DaemonSet.parse(doc)
    except (InvalidValue, KeyError, TypeError, ValueError) as error:
        at.error(str(error))
        return None


def read_pdb(at: At, doc: Mapping[str, Any]) -> PodDisruptionBudget | None:
    """A PodDisruptionBudget: a selector and exactly one of minAvailable and maxUnavailable."""
    if doc.get("kind") != "PodDisruptionBudget":
        (at / "kind").error(f"{show(doc.get('kind'))} is not PodDisruptionBudget")
        return None
    spec = doc.get("spec")
    if not isinstance(spec, Mapping) or ("minAvailable" in spec) == ("maxUnavailable" in spec):
        (at / "spec").error("a PodDisruptionBudget needs exactly one of minAvailable and maxUnavailable")
        return None
    if not isinstance(spec.get("selector"), Mapping):
        (at / "spec" / "selector").error("is required")
        return None
    for key in ("minAvailable", "maxUnavailable"):
        value = spec.get(key)
        if value is None:
            continue
        ok = (isinstance(value, int) and not isinstance(value, bool) and value >= 0) or (
            isinstance(value, str) and value.endswith("%") and value[:-1].isdigit()
        )
        if not ok:
            (at / "spec" / key).error(f"{show(value)} is not a whole number or a percentage such as 20%")
            return None
    try:
        pdb = PodDisruptionBudget.parse(doc)
    except (InvalidValue, KeyError, TypeError, ValueError) as error:
        at.error(str(error))
        return None
    if not pdb.name:
        (at / "metadata" / "name").error("is required")
        return None
    return pdb


def read_schedule(at: At, value: Any, duration: float | None) -> tuple[Segment, ...] | None:
    """A replica schedule: segments in increasing order of `at`, none after the end."""
    segments = f.items(at, value, read_segment)
    if segments is None:
        return None
    times = [s.at for s in segments]
    if times != sorted(times) or len(set(times)) != len(times):
        at.error("entries must be in increasing order of `at`")
    if duration is not None:
        for index, segment in enumerate(segments):
            if segment.at > duration:
                (at / index / "at").error(f"is after the end of the scenario ({show(segment.at)} s)")
    return segments


def read_segment(at: At, raw: Any) -> Segment | None:
    """One schedule segment: `at` and exactly one of replicas and diurnal."""
    entry = f.item(at, raw, ("at", "replicas", "diurnal"))
    if entry is None:
        return None
    start = read_duration(at / "at", f.required(at, entry, "at"))
    if ("replicas" in entry) == ("diurnal" in entry):
        at.error("needs exactly one of replicas and diurnal")
        return None
    if "replicas" in entry:
        count = f.integer(at / "replicas", entry["replicas"], minimum=0)
        if count is None:
            if entry["replicas"] is None:
                (at / "replicas").error("is required")
            return None
        return Segment(start, replicas=count) if start is not None else None
    curve = read_diurnal(at / "diurnal", entry["diurnal"])
    return Segment(start, diurnal=curve) if start is not None and curve is not None else None


def read_diurnal(at: At, raw: Any) -> Diurnal | None:
    """A diurnal curve: min <= max, period, peak (default half the period) and every."""
    entry = f.item(at, raw, ("min", "max", "period", "peak", "every"))
    if entry is None:
        return None
    low = f.integer(at / "min", f.required(at, entry, "min"), minimum=0)
    high = f.integer(at / "max", f.required(at, entry, "max"), minimum=0)
    period = read_duration(at / "period", entry.get("period"), positive=True) or 86400.0
    peak = read_duration(at / "peak", entry.get("peak"))
    every = read_duration(at / "every", entry.get("every"), positive=True) or 60.0
    if low is None or high is None:
        return None
    if high < low:
        (at / "max").error(f"must be at least min ({low}), got {high}")
        return None
    return Diurnal(low, high, period, peak if peak is not None else period / 2, every)
