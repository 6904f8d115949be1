"""The scheduling view of a pod, parsed from its Kubernetes manifest (a plain dict). Pure.

Role: everything the scheduler, the disruption engine and the drain need to know about a pod,
and nothing else. `Pod.parse` accepts the JSON the API server returns (or a YAML manifest), so
adapters can hand over raw responses without building client model objects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from nodewright.model import labels as wk
from nodewright.model.dra import PodClaim
from nodewright.model.errors import InvalidValue
from nodewright.model.requirements import Requirements
from nodewright.model.resources import EMPTY, PODS, Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.taints import Toleration

_ONE_POD = Resources({PODS: 1000})


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A pod (anti-)affinity term: pods matching `selector` in `namespaces`, per `topology_key`.

    `namespaces` empty means the pod's own namespace (resolved by `parse`); `all_namespaces`
    stands for an empty namespaceSelector.
    """

    selector: LabelSelector
    topology_key: str
    namespaces: frozenset[str]
    all_namespaces: bool = False
    weight: int = 0

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """True when a pod in `namespace` with `labels` is one this term counts."""
        return (self.all_namespaces or namespace in self.namespaces) and self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A topology spread constraint (maxSkew over `topology_key` among pods matching `selector`)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector
    min_domains: int | None = None
    node_taints_policy: str = "Ignore"
    node_affinity_policy: str = "Honor"

    @property
    def required(self) -> bool:
        """DoNotSchedule constraints are hard; ScheduleAnyway ones are preferences."""
        return self.when_unsatisfiable == "DoNotSchedule"


@dataclass(frozen=True, slots=True, order=True)
class HostPort:
    """A container port bound on the node's own network (`hostPort`): two pods on one node may
    not both use it (kube-scheduler's NodePorts filter), which is why a DaemonSet's host port
    keeps other pods asking for it off every node the DaemonSet runs on.
    """

    port: int
    protocol: str = "TCP"
    host_ip: str = "0.0.0.0"

    def conflicts(self, other: HostPort) -> bool:
        """True when both cannot be bound on one node: same port and protocol, and the same
        address or either on every address.
        """
        if self.port != other.port or self.protocol != other.protocol:
            return False
        return self.host_ip == other.host_ip or "0.0.0.0" in (self.host_ip, other.host_ip)

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
        """The host ports a pod spec's containers and init containers ask for, sorted, no repeats."""
        found: set[HostPort] = set()
        for container in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ())):
            for port in container.get("ports") or ():
                number = int(port.get("hostPort") or 0)
                if number > 0:
                    found.add(cls(number, str(port.get("protocol") or "TCP"), str(port.get("hostIP") or "0.0.0.0")))
        return tuple(sorted(found))


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    """A preferred node affinity term with its weight."""

    weight: int
    requirements: Requirements


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod as Nodewright schedules, drains and counts it."""

    namespace: str
    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    requests: Resources = _ONE_POD
    node_selector: Mapping[str, str] = field(default_factory=dict)
    # ORed node selector terms from requiredDuringScheduling node affinity; () means no affinity.
    required_terms: tuple[Requirements, ...] = ()
    preferred_terms: tuple[PreferredTerm, ...] = ()
    affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[AffinityTerm, ...] = ()
    anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[AffinityTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    priority: int = 0
    priority_class: str = ""
    owner_kind: str = ""
    owner_name: str = ""
    node_name: str = ""
    nominated_node_name: str = ""
    phase: str = "Pending"
    unschedulable: bool = False
    deleting: bool = False
    created_at: float = 0.0
    mirror: bool = False
    termination_grace_seconds: int = 30
    # spec.resourceClaims (DRA); the devices they ask for are resolved against the cluster's
    # claims and templates by `engine.devices`, not here.
    device_claims: tuple[PodClaim, ...] = ()
    # The node a DaemonSet pod is made for (its required node affinity's `matchFields` on
    # `metadata.name`, as the DaemonSet controller writes it); '' for any other pod.
    target_node: str = ""

    @property
    def key(self) -> str:
        """`namespace/name`, the identity used in plans and logs."""
        return f"{self.namespace}/{self.name}"

    @property
    def daemon(self) -> bool:
        """True for pods a DaemonSet owns."""
        return self.owner_kind == "DaemonSet"

    @property
    def do_not_disrupt(self) -> bool:
        """True when annotated `karpenter.sh/do-not-disrupt: "true"` (or Nodewright's key)."""
        return self.annotations.get(wk.DO_NOT_DISRUPT) == "true" or self.annotations.get(wk.NW_DO_NOT_DISRUPT) == "true"

    @property
    def critical(self) -> bool:
        """System-critical pods, drained last (Karpenter's tiering)."""
        return self.priority_class in ("system-cluster-critical", "system-node-critical")

    @property
    def terminal(self) -> bool:
        """Succeeded or Failed pods hold no resources."""
        return self.phase in ("Succeeded", "Failed")

    def node_requirements(self) -> tuple[Requirements, ...]:
        """The ORed node requirement sets this pod accepts: nodeSelector ANDed with each term."""
        selector = Requirements.from_labels(self.node_selector)
        if not self.required_terms:
            return (selector,)
        return tuple(selector.intersection(term) for term in self.required_terms)

    @classmethod
    def parse(cls, manifest: Mapping[str, Any], memo: RequestsMemo | None = None) -> Pod:
        """Build from a pod manifest or API JSON. Raises KeyError/ValueError on malformed input.

        `memo`: resource lists parsed before, kept by a caller that parses many pods (a list of a
        cluster's pods repeats each workload's lists); the pod is the same with or without one.
        """
        meta = manifest.get("metadata") or {}
        spec = manifest.get("spec") or {}
        status = manifest.get("status") or {}
        namespace = str(meta.get("namespace") or "default")
        owners = meta.get("ownerReferences") or ()
        owner = next((o for o in owners if o.get("controller")), owners[0] if owners else {})
        annotations = meta.get("annotations") or {}
        affinity = spec.get("affinity") or {}
        node_affinity = affinity.get("nodeAffinity") or {}
        required = (node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
            "nodeSelectorTerms"
        ) or ()
        preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        pod_affinity = affinity.get("podAffinity") or {}
        pod_anti = affinity.get("podAntiAffinity") or {}
        unschedulable = any(
            c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
            for c in status.get("conditions") or ()
        )
        return cls(
            namespace=namespace,
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            labels=dict(meta.get("labels") or {}),
            annotations=dict(annotations),
            requests=effective_requests(spec, memo),
            node_selector=dict(spec.get("nodeSelector") or {}),
            required_terms=tuple(
                Requirements.parse(t.get("matchExpressions"))
                for t in required
                if t.get("matchExpressions") or not _target_node(required)
            ),
            preferred_terms=tuple(
                PreferredTerm(
                    int(p.get("weight", 1)), Requirements.parse((p.get("preference") or {}).get("matchExpressions"))
                )
                for p in preferred
            ),
            affinity=_terms(pod_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"), namespace),
            preferred_affinity=_weighted_terms(
                pod_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"), namespace
            ),
            anti_affinity=_terms(pod_anti.get("requiredDuringSchedulingIgnoredDuringExecution"), namespace),
            preferred_anti_affinity=_weighted_terms(
                pod_anti.get("preferredDuringSchedulingIgnoredDuringExecution"), namespace
            ),
            spread=_each("topologySpreadConstraints", spec.get("topologySpreadConstraints"), _spread),
            tolerations=_each("tolerations", spec.get("tolerations"), Toleration.parse),
            host_ports=HostPort.of(spec),
            priority=int(spec.get("priority") or 0),
            priority_class=str(spec.get("priorityClassName") or ""),
            owner_kind=str(owner.get("kind") or ""),
            owner_name=str(owner.get("name") or ""),
            node_name=str(spec.get("nodeName") or ""),
            nominated_node_name=str(status.get("nominatedNodeName") or ""),
            phase=str(status.get("phase") or "Pending"),
            unschedulable=unschedulable,
            deleting=bool(meta.get("deletionTimestamp")),
            created_at=parse_timestamp(meta.get("creationTimestamp")),
            mirror="kubernetes.io/config.mirror" in annotations,
            termination_grace_seconds=int(spec.get("terminationGracePeriodSeconds", 30)),
            device_claims=PodClaim.of(spec, status) if spec.get("resourceClaims") else (),
            target_node=_target_node(required),
        )


def _target_node(terms: Any) -> str:
    """The one node name every term's `matchFields` requires (`metadata.name In [node]`), or ''."""
    names: set[str] = set()
    for term in terms or ():
        fields = [m for m in term.get("matchFields") or () if m.get("key") == "metadata.name"]
        values = {str(v) for m in fields if m.get("operator") == "In" for v in m.get("values") or ()}
        if len(values) != 1:
            return ""
        names |= values
    return next(iter(names)) if len(names) == 1 else ""


def _spread(s: Mapping[str, Any]) -> SpreadConstraint:
    return SpreadConstraint(
        max_skew=int(s.get("maxSkew", 1)),
        topology_key=str(s["topologyKey"]),
        when_unsatisfiable=str(s.get("whenUnsatisfiable") or "DoNotSchedule"),
        selector=LabelSelector.parse(s.get("labelSelector")),
        min_domains=s.get("minDomains"),
        node_taints_policy=str(s.get("nodeTaintsPolicy") or "Ignore"),
        node_affinity_policy=str(s.get("nodeAffinityPolicy") or "Honor"),
    )


T = TypeVar("T")
_FIELD_FIRST = re.compile(r"[A-Za-z][\w./-]*(?:\[\d+\])?: ")


def _each(field: str, items: Any, parse: Callable[[Any], T]) -> tuple[T, ...]:
    """`parse` applied to each item of the list `field`; any error it meets becomes an
    InvalidValue naming the item: `tolerations[2].effect: ...`, `topologySpreadConstraints[0]:
    missing field 'topologyKey'`.
    """
    out = []
    for index, item in enumerate(items or ()):
        try:
            out.append(parse(item))
        except InvalidValue as error:
            joint = "." if _FIELD_FIRST.match(str(error)) else ": "
            raise InvalidValue(f"{field}[{index}]{joint}{error}") from None
        except KeyError as error:
            raise InvalidValue(f"{field}[{index}]: missing field {error.args[0]!r}") from None
        except (ValueError, TypeError, AttributeError, ArithmeticError) as error:
            raise InvalidValue(f"{field}[{index}]: {error}") from None
    return tuple(out)


def parse_timestamp(value: object) -> float:
    """Seconds since the epoch for an RFC 3339 timestamp ("2026-11-21T06:00:00Z"); 0.0 when absent."""
    if not value:
        return 0.0
    if isinstance(value, datetime):  # YAML loaders turn unquoted timestamps into datetimes
        moment = value
    else:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def effective_requests(spec: Mapping[str, Any], memo: RequestsMemo | None = None) -> Resources:
    """Kubernetes' effective pod requests: max(sum of containers + sidecars, largest init
    container seen so far + the sidecars started before it), plus pod overhead, plus one pod.
    Each container's lists are looked up in `memo` first, when there is one.
    """
    parse = memo.requests if memo is not None else _requests
    containers = EMPTY
    for index, container in enumerate(spec.get("containers") or ()):
        requests = parse(container, f"containers[{index}]")
        containers = containers + requests if containers else requests
    total = containers
    # Most pods have no init containers and no overhead: skip building lists that change nothing.
    init_containers = spec.get("initContainers")
    if init_containers:
        sidecars = EMPTY
        init_peak = EMPTY
        for index, container in enumerate(init_containers):
            requests = parse(container, f"initContainers[{index}]")
            if container.get("restartPolicy") == "Always":
                sidecars = sidecars + requests
                init_peak = init_peak.maximum(sidecars)
            else:
                init_peak = init_peak.maximum(sidecars + requests)
        total = (containers + sidecars).maximum(init_peak)
    overhead = spec.get("overhead")
    if overhead:
        total = total + Resources.parse(overhead, where="spec.overhead")
    return total + _ONE_POD


class RequestsMemo:
    """Containers' resource lists already parsed, kept by a caller that parses many pods (the
    Kubernetes adapter keeps one per cluster it reads).

    Every replica of a workload repeats its containers' resource lists, so a cluster holds a few
    hundred distinct ones: each is parsed once (quantity parsing is exact, with Fractions, and was
    two thirds of Pod.parse). Only all-string lists are kept, as the API server sends them, so a
    hit needs string values equal to a stored key; `size` keeps odd inputs from growing it. A hit
    is exactly what parsing again gives (`Resources` are immutable).
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._parsed: dict[tuple[tuple[Any, ...], tuple[Any, ...]], Resources] = {}

    def requests(self, container: Mapping[str, Any], where: str = "") -> Resources:
        """`_requests(container, where)`, remembered."""
        resources = container.get("resources") or {}
        try:
            key = (tuple((resources.get("limits") or {}).items()), tuple((resources.get("requests") or {}).items()))
            cached = self._parsed.get(key)
        except (AttributeError, TypeError):  # not a mapping, or unhashable values: let parsing say why
            key, cached = None, None
        if cached is not None:
            return cached
        parsed = _requests(container, where)
        if key is not None and len(self._parsed) < self.size and all(isinstance(v, str) for _, v in key[0] + key[1]):
            self._parsed[key] = parsed
        return parsed


def _requests(container: Mapping[str, Any], where: str = "") -> Resources:
    """The requests of one container (`where` names it in errors: `containers[0]`)."""
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    # A limit without a request defaults the request to the limit, as the API server does.
    prefix = f"{where}." if where else ""
    parsed_limits = Resources.parse(limits, where=f"{prefix}resources.limits")
    parsed_requests = Resources.parse(requests, where=f"{prefix}resources.requests")
    return Resources({**dict(parsed_limits.items()), **dict(parsed_requests.items())})


def _term(manifest: Mapping[str, Any], namespace: str, weight: int = 0) -> AffinityTerm:
    namespaces = frozenset(manifest.get("namespaces") or ())
    ns_selector = manifest.get("namespaceSelector")
    return AffinityTerm(
        selector=LabelSelector.parse(manifest.get("labelSelector")),
        topology_key=str(manifest["topologyKey"]),
        namespaces=namespaces or frozenset((namespace,)),
        all_namespaces=ns_selector is not None and not ns_selector,
        weight=weight,
    )


def _terms(items: Any, namespace: str) -> tuple[AffinityTerm, ...]:
    return tuple(_term(t, namespace) for t in items or ())


def _weighted_terms(items: Any, namespace: str) -> tuple[AffinityTerm, ...]:
    return tuple(_term(t["podAffinityTerm"], namespace, int(t.get("weight", 1))) for t in items or ())
