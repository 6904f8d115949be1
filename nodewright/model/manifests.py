"""Model objects back to the JSON a kube-apiserver serves for them: the inverse of the parsers. Pure.

Role: `pod_manifest`, `node_manifest`, `daemonset_manifest` and `pdb_manifest` build the manifest
the API server would return for a model object, so an emulator can serve the in-memory cluster
over HTTP and the real adapter reads it back. The promise is a round trip through the project's
own parsers:

    Pod.parse(pod_manifest(p)) == p
    Node.parse(node_manifest(n), created_at=parse_timestamp(creationTimestamp)) == n
    DaemonSet.parse(daemonset_manifest(d)) == d
    PodDisruptionBudget.parse(pdb_manifest(b, b.disruptions_allowed)) == b

for every object the parsers can produce (the "canonical" ones). Where the model keeps less than
a manifest holds, the manifest says the same thing in one fixed way:

  * Requests: the model keeps only a pod's effective requests (containers, sidecars, init
    containers and overhead folded, plus one `pods` slot). The manifest has one container, `main`,
    requesting exactly that minus the pod slot; quantities are written exactly (milli-units when
    not whole, binary suffixes for whole Ki..Ei of memory and storage).
  * Timestamps: `created_at` is written as RFC 3339 in UTC, whole seconds as the API server
    writes them, otherwise with microseconds. Both parsers go through `datetime`, which holds
    microseconds, so a time on the microsecond grid (`k / 10**6`: every whole second, everything
    the simulator's clock reaches) comes back exactly; any other float comes back rounded to the
    nearest microsecond. 0.0 means unset: no creationTimestamp.
  * deletionTimestamp: the model only knows that a deletion started, not when; the manifest uses
    the creation time (the epoch when there is none).
  * Unschedulable: the PodScheduled=False condition with reason Unschedulable, as kube-scheduler
    writes it; a bound pod gets PodScheduled=True (and Ready=True when Running).
  * Owner: one controller ownerReference (kind and name); a mirror pod gets the
    `kubernetes.io/config.mirror` annotation, which is what makes `Pod.parse` call it a mirror.
  * Pod affinity terms name their namespaces explicitly (the parser fills in the pod's own); an
    all-namespaces term gets an empty namespaceSelector.
  * A DaemonSet's template carries only labels, annotations and the spec (templates have no
    status, uid or timestamps); its selector is the template's labels.
  * A PDB with the null selector (`LabelSelector.nothing()`) has no `spec.selector`, as policy/v1
    reads a missing selector; `disruptions_allowed` is written as `status.disruptionsAllowed`.

Objects the parsers could not have produced (an AffinityTerm without namespaces, a Pod whose
requests lack the pod slot, a phase of "") come back in the parser's normal form instead.
No resourceVersion or uid is invented here: the API server stamps those.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from fractions import Fraction
from types import MappingProxyType
from typing import Any

from nodewright.model.node import Node
from nodewright.model.pod import AffinityTerm, Pod, SpreadConstraint
from nodewright.model.resources import PODS, Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.taints import Toleration
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
CONTAINER = "main"
IMAGE = "registry.k8s.io/pause:3.10"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
# The API group/version of an owner kind, for ownerReferences.
_OWNER_API = MappingProxyType(
    {
        "ReplicaSet": "apps/v1",
        "StatefulSet": "apps/v1",
        "DaemonSet": "apps/v1",
        "Deployment": "apps/v1",
        "Job": "batch/v1",
        "CronJob": "batch/v1",
    }
)


def pod_manifest(pod: Pod) -> dict[str, Any]:
    """The pod as the API server would serve it (kind, apiVersion, metadata, spec, status)."""
    metadata = _pod_metadata(pod)
    status: dict[str, Any] = {"phase": pod.phase}
    if pod.nominated_node_name:
        status["nominatedNodeName"] = pod.nominated_node_name
    conditions = _pod_conditions(pod)
    if conditions:
        status["conditions"] = conditions
    generated = [{"name": c.name, "resourceClaimName": c.generated} for c in pod.device_claims if c.generated]
    if generated:
        status["resourceClaimStatuses"] = generated
    return {"kind": "Pod", "apiVersion": "v1", "metadata": metadata, "spec": _pod_spec(pod), "status": status}


def node_manifest(node: Node) -> dict[str, Any]:
    """The node as the API server would serve it; `created_at` travels as creationTimestamp."""
    metadata: dict[str, Any] = {"name": node.name}
    if node.uid:
        metadata["uid"] = node.uid
    if node.created_at:
        metadata["creationTimestamp"] = format_timestamp(node.created_at)
    if node.deleting:
        metadata["deletionTimestamp"] = format_timestamp(node.created_at) if node.created_at else _EPOCH_TEXT
    if node.labels:
        metadata["labels"] = dict(node.labels)
    if node.annotations:
        metadata["annotations"] = dict(node.annotations)
    spec: dict[str, Any] = {}
    if node.provider_id:
        spec["providerID"] = node.provider_id
    if node.taints:
        spec["taints"] = [t.to_manifest() for t in node.taints]
    if node.unschedulable:
        spec["unschedulable"] = True
    ready = (
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
        if node.ready
        else {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "kubelet is not ready"}
    )
    conditions = [] if any(c.type == "Ready" for c in node.conditions) else [ready]
    for c in node.conditions:
        entry = {"type": c.type, "status": c.status}
        if c.since:
            entry["lastTransitionTime"] = format_timestamp(c.since)
        if c.reason:
            entry["reason"] = c.reason
        conditions.append(entry)
    status = {
        "capacity": resource_list(node.capacity),
        "allocatable": resource_list(node.allocatable),
        "conditions": conditions,
    }
    return {"kind": "Node", "apiVersion": "v1", "metadata": metadata, "spec": spec, "status": status}


def daemonset_manifest(daemonset: DaemonSet) -> dict[str, Any]:
    """The DaemonSet with its pod template (labels, annotations and spec of `daemonset.template`)."""
    template = daemonset.template
    template_metadata: dict[str, Any] = {}
    if template.labels:
        template_metadata["labels"] = dict(template.labels)
    annotations = _annotations(template)
    if annotations:
        template_metadata["annotations"] = annotations
    return {
        "kind": "DaemonSet",
        "apiVersion": "apps/v1",
        "metadata": {"name": daemonset.name, "namespace": daemonset.namespace},
        "spec": {
            "selector": {"matchLabels": dict(template.labels)},
            "template": {"metadata": template_metadata, "spec": _pod_spec(template)},
        },
    }


def pdb_manifest(pdb: PodDisruptionBudget, disruptions_allowed: int | None) -> dict[str, Any]:
    """The PodDisruptionBudget with `disruptions_allowed` as its status (none when None)."""
    spec: dict[str, Any] = {}
    if pdb.selector != LabelSelector.nothing():
        spec["selector"] = pdb.selector.to_manifest()
    if pdb.min_available is not None:
        spec["minAvailable"] = pdb.min_available
    if pdb.max_unavailable is not None:
        spec["maxUnavailable"] = pdb.max_unavailable
    manifest: dict[str, Any] = {
        "kind": "PodDisruptionBudget",
        "apiVersion": "policy/v1",
        "metadata": {"name": pdb.name, "namespace": pdb.namespace},
        "spec": spec,
    }
    if disruptions_allowed is not None:
        manifest["status"] = {"disruptionsAllowed": disruptions_allowed}
    return manifest


def format_timestamp(seconds: float) -> str:
    """RFC 3339 in UTC: whole seconds plainly ("2026-01-05T00:00:00Z"), else with microseconds
    (the nearest microsecond, exact for times on the microsecond grid; see the module docstring).
    """
    micros = round(Fraction(seconds) * 1_000_000)
    moment = _EPOCH + timedelta(microseconds=micros)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{moment.microsecond:06d}Z" if moment.microsecond else f"{text}Z"


_EPOCH_TEXT = format_timestamp(0.0)


def resource_list(resources: Resources) -> dict[str, str]:
    """A Kubernetes resource list whose quantities parse back to exactly these milli-units."""
    return {name: quantity(name, value) for name, value in sorted(resources.items()) if value}


def quantity(resource: str, milli: int) -> str:
    """An exact quantity string for `milli` milli-units of `resource` ("250m", "2", "512Mi")."""
    if milli % 1000:
        return f"{milli}m"
    value = milli // 1000
    if value and (resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")):
        for suffix, unit in _BINARY:
            if value % unit == 0:
                return f"{value // unit}{suffix}"
    return str(value)


# ---------------------------------------------------------------------- pods


def _pod_metadata(pod: Pod) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
    if pod.uid:
        metadata["uid"] = pod.uid
    if pod.created_at:
        metadata["creationTimestamp"] = format_timestamp(pod.created_at)
    if pod.deleting:
        metadata["deletionTimestamp"] = format_timestamp(pod.created_at) if pod.created_at else _EPOCH_TEXT
        metadata["deletionGracePeriodSeconds"] = pod.termination_grace_seconds
    if pod.labels:
        metadata["labels"] = dict(pod.labels)
    annotations = _annotations(pod)
    if annotations:
        metadata["annotations"] = annotations
    if pod.owner_kind or pod.owner_name:
        metadata["ownerReferences"] = [
            {
                "apiVersion": _OWNER_API.get(pod.owner_kind, "v1"),
                "kind": pod.owner_kind,
                "name": pod.owner_name,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return metadata


def _annotations(pod: Pod) -> dict[str, str]:
    annotations = dict(pod.annotations)
    if pod.mirror and MIRROR_ANNOTATION not in annotations:
        annotations[MIRROR_ANNOTATION] = "mirror"
    return annotations


def _pod_spec(pod: Pod) -> dict[str, Any]:
    requests = pod.requests - Resources({PODS: 1000})
    container: dict[str, Any] = {"name": CONTAINER, "image": IMAGE}
    listed = resource_list(requests)
    if listed:
        container["resources"] = {"requests": listed}
    if pod.host_ports:
        container["ports"] = [
            {"containerPort": h.port, "hostPort": h.port, "protocol": h.protocol}
            | ({"hostIP": h.host_ip} if h.host_ip != "0.0.0.0" else {})
            for h in pod.host_ports
        ]
    if pod.device_claims:
        container["resources"] = {
            **container.get("resources", {}),
            "claims": [{"name": c.name} for c in pod.device_claims],
        }
    spec: dict[str, Any] = {"containers": [container]}
    if pod.device_claims:
        spec["resourceClaims"] = [
            {"name": c.name}
            | ({"resourceClaimName": c.claim_name} if c.claim_name else {"resourceClaimTemplateName": c.template_name})
            for c in pod.device_claims
        ]
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    if pod.node_selector:
        spec["nodeSelector"] = dict(pod.node_selector)
    affinity = _affinity(pod)
    if affinity:
        spec["affinity"] = affinity
    if pod.spread:
        spec["topologySpreadConstraints"] = [_spread(s) for s in pod.spread]
    if pod.tolerations:
        spec["tolerations"] = [_toleration(t) for t in pod.tolerations]
    spec["priority"] = pod.priority
    if pod.priority_class:
        spec["priorityClassName"] = pod.priority_class
    spec["terminationGracePeriodSeconds"] = pod.termination_grace_seconds
    return spec


def _pod_conditions(pod: Pod) -> list[dict[str, str]]:
    if pod.unschedulable:
        return [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/0 nodes are available: no node fits the pod.",
            }
        ]
    if not pod.node_name:
        return []
    conditions = [{"type": "PodScheduled", "status": "True"}]
    if pod.phase == "Running":
        conditions.append({"type": "Ready", "status": "True"})
    return conditions


def _affinity(pod: Pod) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    node_affinity: dict[str, Any] = {}
    if pod.target_node:  # a DaemonSet pod: every term also names its node, as the controller writes it
        fields = [{"key": "metadata.name", "operator": "In", "values": [pod.target_node]}]
        named: list[dict[str, Any]] = [
            {"matchExpressions": term.to_manifest(), "matchFields": fields} if term else {"matchFields": fields}
            for term in (pod.required_terms or (None,))
        ]
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": named}
    elif pod.required_terms:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": term.to_manifest()} for term in pod.required_terms]
        }
    if pod.preferred_terms:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": p.weight, "preference": {"matchExpressions": p.requirements.to_manifest()}}
            for p in pod.preferred_terms
        ]
    if node_affinity:
        affinity["nodeAffinity"] = node_affinity
    for name, required, preferred in (
        ("podAffinity", pod.affinity, pod.preferred_affinity),
        ("podAntiAffinity", pod.anti_affinity, pod.preferred_anti_affinity),
    ):
        terms: dict[str, Any] = {}
        if required:
            terms["requiredDuringSchedulingIgnoredDuringExecution"] = [_pod_term(t) for t in required]
        if preferred:
            terms["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": t.weight, "podAffinityTerm": _pod_term(t)} for t in preferred
            ]
        if terms:
            affinity[name] = terms
    return affinity


def _pod_term(term: AffinityTerm) -> dict[str, Any]:
    out: dict[str, Any] = {"labelSelector": term.selector.to_manifest(), "topologyKey": term.topology_key}
    if term.namespaces:
        out["namespaces"] = sorted(term.namespaces)
    if term.all_namespaces:
        out["namespaceSelector"] = {}
    return out


def _spread(constraint: SpreadConstraint) -> dict[str, Any]:
    out: dict[str, Any] = {
        "maxSkew": constraint.max_skew,
        "topologyKey": constraint.topology_key,
        "whenUnsatisfiable": constraint.when_unsatisfiable,
        "labelSelector": constraint.selector.to_manifest(),
    }
    if constraint.min_domains is not None:
        out["minDomains"] = constraint.min_domains
    if constraint.node_taints_policy != "Ignore":
        out["nodeTaintsPolicy"] = constraint.node_taints_policy
    if constraint.node_affinity_policy != "Honor":
        out["nodeAffinityPolicy"] = constraint.node_affinity_policy
    return out


def _toleration(toleration: Toleration) -> dict[str, Any]:
    out: dict[str, Any] = {"operator": toleration.operator}
    if toleration.key:
        out["key"] = toleration.key
    if toleration.value:
        out["value"] = toleration.value
    if toleration.effect:
        out["effect"] = toleration.effect
    if toleration.toleration_seconds is not None:
        out["tolerationSeconds"] = toleration.toleration_seconds
    return out
