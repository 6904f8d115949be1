"""Workload manifests for `nodewright plan`: what a cluster would ask of the autoscaler. Pure.

Role: turn a YAML stream of Pods, Deployments, StatefulSets, ReplicaSets, Jobs, CronJobs (one run
of their job template), Argo Rollouts, any other kind with a pod template (`spec.template`, with a
warning), DaemonSets, Nodes, DRA DeviceClasses, ResourceClaims and ResourceClaimTemplates
(`resource.k8s.io/v1`), NodePools and EC2NodeClasses into the inputs of a scheduling pass;
other kinds (a PersistentVolumeClaim, a custom resource) are warned about and skipped, reporting every problem (file,
line, document, field) instead of stopping at the first. Workloads expand into their pending pods,
named `<workload>-<index>` in the workload's namespace (`default` when absent); a Pod with
`spec.nodeName` is bound to that Node. NodePools and EC2NodeClasses are validated by
`nodewright.config.documents`, exactly as `nodewright nodepool validate` does. Streams are read
as `stream.read_stream` reads them, so `kubectl get deployments -o json` (a `kind: List`) and
objects with the server's fields (`status`, `managedFields`, ...) are input too.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodewright.config.documents import KINDS, Document, Loaded, Manifest, combine, line_of, parse_document
from nodewright.config.problems import Problem, SegmentPath, show
from nodewright.config.stream import read_stream
from nodewright.model.dra import KINDS as DRA_KINDS
from nodewright.model.dra import DeviceClass, DeviceObjects, ResourceClaim, ResourceClaimTemplate
from nodewright.model.errors import InvalidValue, shown
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.workloads import DaemonSet

# kind -> the spec field holding how many pods it runs. An Argo Rollout runs `replicas` pods of
# its `template`, as a Deployment does.
_REPLICATED = {
    "Deployment": "replicas",
    "StatefulSet": "replicas",
    "ReplicaSet": "replicas",
    "Job": "parallelism",
    "Rollout": "replicas",
}
# Pods one workload may expand into: a plan of more takes longer to read than to think about (and
# `replicas: 2147483647` must be an error, not an hour of building pods). About 0.4 s of reading.
MAX_REPLICAS = 20_000
WORKLOAD_KINDS = ("Pod", *_REPLICATED, "CronJob", "DaemonSet", "Node", *DRA_KINDS)
_DEVICE_PARSERS = {
    "DeviceClass": DeviceClass.parse,
    "ResourceClaim": ResourceClaim.parse,
    "ResourceClaimTemplate": ResourceClaimTemplate.parse,
}
ALL_KINDS = (*WORKLOAD_KINDS, *KINDS)
# Kinds that say nothing about capacity; accepted and ignored so a whole app directory can be planned.
# `Scenario` is a `nodewright simulate` file (examples/scenarios/): it describes a run, not pods.
_IGNORED = frozenset(
    {"Service", "ConfigMap", "Secret", "ServiceAccount", "Namespace", "Ingress", "PodDisruptionBudget",
     "HorizontalPodAutoscaler", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "NetworkPolicy",
     "Scenario"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class PlanInput:
    """Everything read for a plan: pending pods, existing nodes and their pods, daemonsets, and
    the validated NodePool/EC2NodeClass documents; `problems` lists everything wrong, `warnings`
    what is only worth saying (unknown or ignored fields of NodePools and EC2NodeClasses).
    """

    pending: tuple[Pod, ...] = ()
    nodes: tuple[Node, ...] = ()
    bound: tuple[Pod, ...] = ()
    daemonsets: tuple[DaemonSet, ...] = ()
    config: Loaded = field(default_factory=Loaded)
    problems: tuple[Problem, ...] = ()
    warnings: tuple[Problem, ...] = ()
    # DRA DeviceClasses, ResourceClaims and ResourceClaimTemplates of the input.
    devices: DeviceObjects = field(default_factory=DeviceObjects)

    @property
    def ok(self) -> bool:
        """True when nothing is wrong with the input."""
        return not self.problems

    def strict(self) -> PlanInput:
        """The same input with every warning counted as a problem (`--strict`)."""
        if not self.warnings:
            return self
        promoted = tuple(dataclasses.replace(w, warning=False) for w in self.warnings)
        return dataclasses.replace(self, problems=(*self.problems, *promoted), warnings=())


def read_workloads(texts: Iterable[tuple[str, str]]) -> PlanInput:
    """Read `(source, YAML or JSON text)` pairs into one PlanInput (every problem of every file)."""
    pending: list[Pod] = []
    nodes: list[Node] = []
    bound: list[Pod] = []
    daemonsets: list[DaemonSet] = []
    devices: dict[str, list[Any]] = {kind: [] for kind in DRA_KINDS}
    parts: list[Loaded] = []
    problems: list[Problem] = []
    warnings: list[Problem] = []
    for source, text in texts:
        manifests, envelopes = read_stream(text, source)
        parts.append(envelopes)
        for manifest in manifests:
            body, kind = manifest.body, manifest.kind
            try:
                if kind in KINDS:
                    parts.append(parse_document(manifest, source))
                elif not isinstance(body, Mapping):
                    raise _FieldError("", f"must be an object, got {type(body).__name__}")
                elif kind == "Pod":
                    pod = _pod(body, body.get("metadata") or {})
                    (bound if pod.node_name else pending).append(pod)
                elif kind in _REPLICATED:
                    pending += _expand(body, str(kind))
                elif kind == "CronJob":
                    pending += _cronjob(body)
                elif kind == "DaemonSet":
                    daemonsets.append(DaemonSet.parse(body))
                elif kind == "Node":
                    nodes.append(_node(body))
                elif kind in DRA_KINDS:
                    devices[str(kind)].append(_DEVICE_PARSERS[str(kind)](body))
                elif _has_pod_template(body):
                    pending += _expand(body, str(kind))
                    why = f"{shown(kind)}: {_TEMPLATED}"
                    warnings.append(_problem(source, manifest, "kind", why, warning=True))
                elif kind not in _IGNORED:
                    why = f"{shown(kind)} asks for no pods Nodewright can plan: skipped"
                    if kind == "PersistentVolumeClaim":
                        why = "a PersistentVolumeClaim is not planned (volume topology is not modelled): skipped"
                    warnings.append(_problem(source, manifest, "kind", why, warning=True))
            except _FieldError as error:
                problems.append(_problem(source, manifest, error.path, error.message))
            except (InvalidValue, KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as error:
                problems.append(_problem(source, manifest, "", _describe(error)))
    config = combine(parts)
    known_nodes = {n.name for n in nodes}
    for pod in bound:
        if pod.node_name not in known_nodes:
            problems.append(
                Problem("", f"Pod/{pod.name}", "spec.nodeName", f"node {pod.node_name!r} is not in the input")
            )
    return PlanInput(
        tuple(pending),
        tuple(nodes),
        tuple(bound),
        tuple(daemonsets),
        config,
        (*problems, *config.problems),
        (*warnings, *config.warnings),
        DeviceObjects(
            {c.name: c for c in devices["DeviceClass"]},
            {c.key: c for c in devices["ResourceClaim"]},
            {t.key: t for t in devices["ResourceClaimTemplate"]},
        ),
    )


_TEMPLATED = "not a built-in workload, planned as spec.replicas (default 1) pods of spec.template"
_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_SUB_PATH = re.compile(r"[A-Za-z][\w-]*(?:\[\d+\])?(?:\.[A-Za-z][\w./-]*(?:\[\d+\])?)*")


def _problem(source: str, manifest: Manifest, path: str, message: str, *, warning: bool = False) -> Problem:
    """A problem (or warning) of a workload document, on the line of the deepest part of `path` the file shows."""
    segments: SegmentPath = tuple(int(i) if i else name for name, i in _SEGMENT.findall(path))
    return Problem(source, manifest.label, path, message, line_of(manifest.lines, segments), warning)


def _has_pod_template(body: Mapping[str, Any]) -> bool:
    """True for any kind whose `spec.template` is a pod template (it has containers)."""
    spec = body.get("spec")
    template = spec.get("template") if isinstance(spec, Mapping) else None
    inner = template.get("spec") if isinstance(template, Mapping) else None
    return isinstance(inner, Mapping) and bool(inner.get("containers"))


def _cronjob(body: Mapping[str, Any]) -> list[Pod]:
    """One run of a CronJob: the pods of the Job its `spec.jobTemplate` makes."""
    spec = body.get("spec") or {}
    job = spec.get("jobTemplate") if isinstance(spec, Mapping) else None
    if not isinstance(job, Mapping):
        raise _FieldError("spec.jobTemplate", "a CronJob needs a job template")
    try:
        return _expand({"metadata": body.get("metadata") or {}, "spec": job.get("spec") or {}}, "Job")
    except _FieldError as error:
        raise _FieldError(f"spec.jobTemplate.{error.path}", error.message) from None


class _FieldError(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def _describe(error: Exception) -> str:
    if isinstance(error, KeyError):
        return f"missing field {error.args[0]!r}"
    return str(error)


def _pod(body: Mapping[str, Any], metadata: Mapping[str, Any], *, owner: str = "") -> Pod:
    spec = body.get("spec")
    if not isinstance(spec, Mapping) or not spec.get("containers"):
        raise _FieldError("spec.containers", "a pod needs at least one container")
    try:
        pod = Pod.parse({**body, "metadata": metadata})
    except InvalidValue as error:
        # The model's messages start with the field they are about: "containers[0].resources...: ".
        where, separator, message = str(error).partition(": ")
        if separator and _SUB_PATH.fullmatch(where):
            raise _FieldError(f"spec.{where}", message) from None
        raise _FieldError("spec", str(error)) from None
    if pod.node_name:
        return dataclasses.replace(pod, phase="Running")
    # Offline, every pod without a node is one kube-scheduler could not place.
    return dataclasses.replace(pod, unschedulable=True, owner_kind=owner or pod.owner_kind)


def _expand(body: Mapping[str, Any], kind: str) -> list[Pod]:
    metadata = body.get("metadata") or {}
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise _FieldError("metadata.name", "a workload needs a name")
    namespace = str(metadata.get("namespace") or "default")
    spec = body.get("spec") or {}
    count_field = _REPLICATED.get(kind, "replicas")
    count = spec.get(count_field, 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise _FieldError(f"spec.{count_field}", f"{show(count)} is not a non-negative whole number")
    if count > MAX_REPLICAS:
        raise _FieldError(
            f"spec.{count_field}", f"{count} is more pods than plan reads for one workload ({MAX_REPLICAS:,})"
        )
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise _FieldError("spec.template", "a workload needs a pod template")
    template_meta = template.get("metadata") or {}
    owner_kind = "ReplicaSet" if kind == "Deployment" else kind
    pods = []
    for index in range(count):
        meta = copy.deepcopy(dict(template_meta))
        meta.update(
            name=f"{name}-{index}",
            namespace=namespace,
            ownerReferences=[{"kind": owner_kind, "name": name, "controller": True}],
        )
        try:
            pods.append(_pod(template, meta, owner=owner_kind))
        except _FieldError as error:
            raise _FieldError(f"spec.template.{error.path}", error.message) from None
    return pods


def _node(body: Mapping[str, Any]) -> Node:
    status = body.get("status") or {}
    if not (status.get("allocatable") or status.get("capacity")):
        raise _FieldError("status.allocatable", "a Node needs status.allocatable (or capacity) to hold pods")
    node = Node.parse(body)
    if not node.name:
        raise _FieldError("metadata.name", "a Node needs a name")
    allocatable = node.allocatable or node.capacity
    # A node in the input is taken as Ready: the question is what fits on it.
    return dataclasses.replace(node, allocatable=allocatable, capacity=node.capacity or allocatable, ready=True)


def documents_of(plan: PlanInput, kind: str) -> tuple[Document, ...]:
    """The validated configuration documents of one kind."""
    return plan.config.of_kind(kind)
