"""DRA device claims turned into what the scheduler already places by: node requirements and
resource requests. Pure.

Role: a pod whose `spec.resourceClaims` ask for devices (`model.dra`) can only run on a node whose
drivers publish devices passing the claims' selectors, enough of them. `lower` answers that once
per pod, before `solve()`, against every instance type the NodePools may launch and every node
there is (the devices each publishes: `model.dra.published_devices`), and writes the answer into
the pod:

* a required term `node.kubernetes.io/instance-type In [the types that satisfy every claim]`,
  ANDed into each of the pod's node affinity terms (and, for a claim already allocated, its
  `status.allocation.nodeSelector`), so new claims are of a type with the devices, existing
  nodes without them are skipped, and consolidation's simulation keeps the pod on such types;
* the devices as a resource request on the driver's device-plugin resource (`nvidia.com/gpu`,
  `aws.amazon.com/neuron`), so a node's devices are shared out, not handed to every pod;
* a node whose Node object does not list that resource (a DRA driver publishes ResourceSlices,
  not extended resources) gets its published device count added to its allocatable.

A pod whose claims cannot be resolved (a claim, template or class that does not exist, a feature
`model.dra` does not evaluate, or no type with the devices) gets a requirement no node meets
(`instance-type DoesNotExist`) and a line in `Lowered.problems`, so it is left out with the
reason, never placed on a node without its devices.

Decisions (documented differences from kube-scheduler's allocator):

* Devices of a shared claim (`resourceClaimName`) are charged to the first pod holding it (bound
  pods first, then by key); pods sharing a claim not allocated yet are not forced onto one node.
* `allocationMode: All` takes every matching device of the node: the pod is charged the device
  count of its node's type when bound, else of the eligible types with the fewest such devices
  (and only those stay eligible), so the pod's request is one vector whatever the type.

With no pod naming a claim, `lower` returns its input unchanged (the identity the rest of the
engine was measured with).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from nodewright.model import labels as wk
from nodewright.model.dra import (
    DRIVER_RESOURCE,
    CelError,
    DeviceObjects,
    DeviceRequest,
    PodClaim,
    PublishedDevices,
    ResourceClaim,
    published_devices,
)
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources
from nodewright.model.snapshot import ClusterSnapshot

_DEVICE_LABELS = (
    wk.INSTANCE_TYPE,
    wk.INSTANCE_GPU_NAME,
    wk.INSTANCE_GPU_MANUFACTURER,
    wk.INSTANCE_GPU_COUNT,
    wk.INSTANCE_GPU_MEMORY,
    wk.INSTANCE_ACCELERATOR_NAME,
    wk.INSTANCE_ACCELERATOR_MANUFACTURER,
    wk.INSTANCE_ACCELERATOR_COUNT,
)
_NOWHERE = Requirements([Requirement.new(wk.INSTANCE_TYPE, "DoesNotExist")])


@dataclass(frozen=True, slots=True)
class Lowered:
    """`lower`'s answer: the snapshot and pending pods rewritten, and why some pods fit nowhere
    (pod key -> reason a person can act on).
    """

    snapshot: ClusterSnapshot
    pending: tuple[Pod, ...]
    problems: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Answer:
    """One pod's claims resolved: where it may go and what it takes there."""

    terms: tuple[Requirements, ...]
    requests: Resources
    problem: str = ""


def catalog_devices(
    instance_types: Iterable[InstanceType], nodes: Iterable[Node] = ()
) -> dict[str, tuple[PublishedDevices, ...]]:
    """Instance type name -> the devices it publishes, for the types given and the nodes' own
    types (a node of a type no NodePool launches still has its devices); types with none left out.
    """
    out: dict[str, tuple[PublishedDevices, ...]] = {}
    for t in instance_types:
        if t.name not in out:
            out[t.name] = published_devices({key: t.label(key) for key in _DEVICE_LABELS} | {wk.INSTANCE_TYPE: t.name})
    for node in nodes:
        name = node.labels.get(wk.INSTANCE_TYPE)
        if name and name not in out:
            out[name] = published_devices(node.labels)
    return {name: devices for name, devices in out.items() if devices}


def lower(snapshot: ClusterSnapshot, pending: Sequence[Pod], instance_types: Iterable[InstanceType]) -> Lowered:
    """Pods with device claims rewritten as the module docstring says, in `snapshot.pods` and in
    `pending`; nodes given their published devices as allocatable. Unchanged when no pod has claims.
    """
    if not any(p.device_claims for p in snapshot.pods) and not any(p.device_claims for p in pending):
        return Lowered(snapshot, tuple(pending))
    catalog = catalog_devices(instance_types, snapshot.nodes)
    node_types = {n.name: n.labels.get(wk.INSTANCE_TYPE, "") for n in snapshot.nodes}
    resolver = _Resolver(snapshot.devices, catalog)
    problems: dict[str, str] = {}
    charged: set[str] = set()
    rewritten: dict[str, Pod] = {}
    # Bound pods first: they hold their shared claims' devices already.
    ordered = sorted(
        {p.key: p for p in (*snapshot.pods, *pending) if p.device_claims}.values(),
        key=lambda p: (not p.node_name, p.key),
    )
    for pod in ordered:
        answer = resolver.answer(pod, node_types.get(pod.node_name, ""), charged)
        if answer.problem:
            problems[pod.key] = answer.problem
        rewritten[pod.key] = _rewrite(pod, answer)
    pods = tuple(rewritten.get(p.key, p) if p.device_claims else p for p in snapshot.pods)
    nodes = tuple(_with_devices(n, catalog) for n in snapshot.nodes)
    lowered = replace(snapshot, pods=pods, nodes=nodes)
    return Lowered(lowered, tuple(rewritten.get(p.key, p) if p.device_claims else p for p in pending), problems)


def _rewrite(pod: Pod, answer: _Answer) -> Pod:
    terms = pod.required_terms or (Requirements(),)
    return replace(
        pod,
        required_terms=tuple(t.intersection(extra) for t in terms for extra in answer.terms),
        requests=pod.requests + answer.requests if answer.requests else pod.requests,
    )


def _with_devices(node: Node, catalog: Mapping[str, tuple[PublishedDevices, ...]]) -> Node:
    """The node with its published devices in allocatable where its Node object lists none."""
    devices = catalog.get(node.labels.get(wk.INSTANCE_TYPE, ""), ())
    missing = {g.resource: g.count * 1000 for g in devices if not node.allocatable.get(g.resource, 0)}
    if not missing:
        return node
    return replace(node, allocatable=node.allocatable + missing, capacity=node.capacity + missing)


class _Resolver:
    """Resolves pods' claims against the DRA objects and the device catalog (one per `lower`)."""

    def __init__(self, objects: DeviceObjects, catalog: Mapping[str, tuple[PublishedDevices, ...]]) -> None:
        self.objects = objects
        self.catalog = catalog
        self._matches: dict[DeviceRequest, dict[str, tuple[str, int]]] = {}

    def answer(self, pod: Pod, own_type: str, charged: set[str]) -> _Answer:
        """Where `pod` may go and what it takes (see the module docstring); shared claims'
        keys are added to `charged` once a pod pays for them.
        """
        terms: tuple[Requirements, ...] = (Requirements(),)
        needs: list[tuple[str, DeviceRequest, dict[str, tuple[str, int]]]] = []
        for ref in pod.device_claims:
            found = self._claim(pod.namespace, ref)
            if isinstance(found, str):
                return _Answer((_NOWHERE,), Resources(), found)
            where, requests, claim, shared_key = found
            if claim is not None and claim.allocated_terms:
                terms = tuple(t.intersection(a) for t in terms for a in claim.allocated_terms)
            pays = not shared_key or shared_key not in charged
            if shared_key and pays:
                charged.add(shared_key)
            for request in requests:
                if request.admin_access:
                    continue
                if request.unsupported:
                    return _Answer(
                        (_NOWHERE,),
                        Resources(),
                        f"{where} request {request.name}: {request.unsupported} is not supported",
                    )
                if request.device_class not in self.objects.classes:
                    return _Answer(
                        (_NOWHERE,),
                        Resources(),
                        f"{where} request {request.name}: DeviceClass {request.device_class} not found",
                    )
                matched = self._match(request)
                if isinstance(matched, str):
                    return _Answer((_NOWHERE,), Resources(), f"{where} request {request.name}: {matched}")
                needs.append((where if pays else "", request, matched))
        if not needs:  # admin access only: no device of its own
            return _Answer(terms, Resources())
        eligible = self._eligible(needs, own_type)
        if not eligible:
            names = ", ".join(f"{w or 'shared claim'} request {r.name}" for w, r, _ in needs)
            return _Answer((_NOWHERE,), Resources(), f"no instance type publishes the devices of {names}")
        demand = eligible[min(eligible)] if own_type not in eligible else eligible[own_type]
        types = sorted(t for t, d in eligible.items() if d == demand)
        allowed = Requirements([Requirement.new(wk.INSTANCE_TYPE, "In", types)])
        return _Answer(tuple(t.intersection(allowed) for t in terms), Resources(dict(demand)))

    def _claim(
        self, namespace: str, ref: PodClaim
    ) -> str | tuple[str, tuple[DeviceRequest, ...], ResourceClaim | None, str]:
        """(where, requests, the claim object if any, shared claim key or ""), or why not found."""
        if ref.claim_name:
            key = f"{namespace}/{ref.claim_name}"
            claim = self.objects.claims.get(key)
            if claim is None:
                return f"ResourceClaim {key} not found"
            return f"ResourceClaim {key}", claim.requests, claim, key
        if ref.generated and (made := self.objects.claims.get(f"{namespace}/{ref.generated}")) is not None:
            return f"ResourceClaim {made.key}", made.requests, made, ""
        key = f"{namespace}/{ref.template_name}"
        template = self.objects.templates.get(key)
        if template is None:
            return f"ResourceClaimTemplate {key} not found"
        return f"ResourceClaimTemplate {key}", template.requests, None, ""

    def _match(self, request: DeviceRequest) -> dict[str, tuple[str, int]] | str:
        """Instance type -> (driver, matching devices) for one request, remembered per request;
        or the first selector error, when no type matched at all.
        """
        cached = self._matches.get(request)
        if cached is not None:
            return cached
        device_class = self.objects.classes[request.device_class]
        out: dict[str, tuple[str, int]] = {}
        error = ""
        for name, groups in self.catalog.items():
            for group in groups:
                try:
                    ok = all(s.matches(group.device) for s in (*device_class.selectors, *request.selectors))
                except CelError as caught:
                    error = error or f"selector error on {group.driver} devices of {name}: {caught}"
                    continue
                if ok:
                    out[name] = (group.driver, group.count)
                    break
        if not out and error:
            return error
        self._matches[request] = out
        return out

    def _eligible(
        self, needs: Sequence[tuple[str, DeviceRequest, Mapping[str, tuple[str, int]]]], own_type: str
    ) -> dict[str, tuple[tuple[str, int], ...]]:
        """Type -> the device resources the pod takes there (sorted (resource, milli) pairs), for
        every type whose devices hold all `needs` together.
        """
        if not needs:
            return {}
        candidates = set(needs[0][2])
        for _, _, matched in needs[1:]:
            candidates &= set(matched)
        out: dict[str, tuple[tuple[str, int], ...]] = {}
        for name in candidates:
            taken: dict[str, int] = {}
            fits = True
            for where, request, matched in needs:
                driver, available = matched[name]
                count = available if request.all_devices else request.count
                taken[driver] = taken.get(driver, 0) + count
                if taken[driver] > available:
                    fits = False
                if not where:  # a shared claim another pod pays for: must fit, charges nothing
                    taken[driver] -= count
            if fits:
                out[name] = tuple(sorted((DRIVER_RESOURCE[d], n * 1000) for d, n in taken.items() if n))
        if own_type in out:
            return out
        if any(r.all_devices for _, r, _ in needs):
            # All devices: the fewest such devices among the eligible types (see the docstring).
            least = min(sum(v for _, v in d) for d in out.values()) if out else 0
            return {name: d for name, d in out.items() if sum(v for _, v in d) == least}
        return out
