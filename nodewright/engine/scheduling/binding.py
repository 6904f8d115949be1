"""Would kube-scheduler bind this plan? A small model of its filters, to check plans with. Pure.

Role: the planner's own referee. `unbindable(inp, result)` builds the nodes the plan leads to
(the existing nodes and in-flight claims as they are, each planned claim as the node its launch
registers: the labels of its cheapest option and offering, its NodePool's template labels and
taints, the DaemonSets that would run there) and binds every planned pod to its planned node the
way kube-scheduler's filters would let it, retrying the refused ones while any pod still binds
(the scheduler's queue retries too, so a pod whose affinity target binds later is not refused).
What is left is a list of `Refusal`s: pods the plan puts where kube-scheduler will never bind
them. Tests, `nodewright plan`'s conformance suite and the generated-day benchmark check that it
stays empty; nothing in the provisioner depends on it.

The filters (kube-scheduler's names): NodeUnschedulable (a cordoned node), NodeAffinity
(nodeSelector and required node affinity against the node's labels), TaintToleration (NoSchedule
and NoExecute taints), NodePorts (`HostPort.conflicts`), NodeResourcesFit (requests within
allocatable), InterPodAffinity (required affinity and anti-affinity, both directions, an affinity
to pods that exist nowhere yet allowed when the pod matches its own term) and PodTopologySpread
(DoNotSchedule constraints: the node must carry the key; counts over the nodes the pod's
`nodeAffinityPolicy` / `nodeTaintsPolicy` admit that carry every key of its constraints; the
minimum over those nodes' domains, 0 while fewer than minDomains exist).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from nodewright.engine.scheduling.prepare import tolerated
from nodewright.engine.scheduling.types import PlannedClaim, SchedulingInput, SchedulingResult
from nodewright.model import labels as wk
from nodewright.model.pod import AffinityTerm, HostPort, Pod, SpreadConstraint
from nodewright.model.requirements import Requirement, Requirements, label_matches
from nodewright.model.selectors import LabelSelector
from nodewright.model.taints import Taint

# Taints the node lifecycle sets for the moments a node starts or loses contact: the scheduler
# binds once they are gone, and the planner places pods as if they were not there (`cache.py`).
TRANSIENT_TAINTS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.cloudprovider.kubernetes.io/uninitialized",
    }
)


@dataclass(frozen=True, slots=True)
class Refusal:
    """A planned pod kube-scheduler would not bind on its planned node, and the filter's reason."""

    pod: str
    node: str
    reason: str


@dataclass(slots=True)
class SimNode:
    """A node as kube-scheduler sees it: labels, taints, room left, pods and host ports in use."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    free: dict[str, int]
    unschedulable: bool = False
    pods: list[Pod] = field(default_factory=list)
    ports: list[HostPort] = field(default_factory=list)

    def take(self, pod: Pod) -> None:
        """Bind `pod` here: its requests and host ports are in use from now on."""
        for name, value in pod.requests.items():
            self.free[name] = self.free.get(name, 0) - value
        self.pods.append(pod)
        self.ports.extend(pod.host_ports)


# A group of pods counted per domain: (namespaces or None for all, selector, topology key).
_Group = tuple[frozenset[str] | None, LabelSelector, str]


class Cluster:
    """The simulated cluster: nodes, and pod counts per group and domain kept as pods bind."""

    def __init__(self, nodes: Iterable[SimNode]) -> None:
        self.nodes = {n.name: n for n in nodes}
        self._counts: dict[_Group, dict[str, int]] = {}
        # Per spread signature: the group it counts, the nodes its policies admit, its counts.
        self._spread: dict[tuple[object, ...], tuple[_Group, set[str], dict[str, int]]] = {}
        self._anti: list[tuple[AffinityTerm, str, str]] = []  # (term, key, domain) of bound pods

    def bind(self, pod: Pod, node: SimNode) -> None:
        """Bind `pod` on `node` and count it everywhere it counts."""
        node.take(pod)
        for (namespaces, selector, key), counts in self._counts.items():
            domain = _domain(node, key)
            if domain is not None and _selects(namespaces, selector, pod):
                counts[domain] = counts.get(domain, 0) + 1
        for (namespaces, selector, key), admitted, counts in self._spread.values():
            if node.name in admitted and _selects(namespaces, selector, pod):
                domain = node.labels[key]
                counts[domain] = counts.get(domain, 0) + 1
        for term in pod.anti_affinity:
            domain = _domain(node, term.topology_key)
            if domain is not None:
                self._anti.append((term, term.topology_key, domain))

    def refusal(self, pod: Pod, node: SimNode) -> str | None:
        """Why kube-scheduler's filters refuse `pod` on `node`; None when it would bind it."""
        if node.unschedulable:
            return "node is cordoned"
        if not any(label_matches(alt, node.labels) for alt in pod.node_requirements()):
            return "node affinity / selector does not match the node's labels"
        if not tolerated(pod.tolerations, node.taints, prefer=False):
            return "untolerated taint"
        for port in pod.host_ports:
            if any(port.conflicts(used) for used in node.ports):
                return f"host port {port.port}/{port.protocol} is in use"
        short = [name for name, value in pod.requests.items() if value > node.free.get(name, 0)]
        if short:
            return "insufficient " + ", ".join(sorted(short))
        return self._affinity_refusal(pod, node) or self._spread_refusal(pod, node)

    def _affinity_refusal(self, pod: Pod, node: SimNode) -> str | None:
        for term in pod.affinity:
            domain = _domain(node, term.topology_key)
            counts = self._group_counts(_term_group(term))
            if domain is None or not counts.get(domain):
                anywhere = any(counts.values())
                if anywhere or not term.selects(pod.namespace, pod.labels) or domain is None:
                    return f"pod affinity on {term.topology_key} not satisfied"
        for term in pod.anti_affinity:
            domain = _domain(node, term.topology_key)
            if domain is not None and self._group_counts(_term_group(term)).get(domain):
                return f"pod anti-affinity on {term.topology_key}"
        for term, key, domain in self._anti:
            if _domain(node, key) == domain and term.selects(pod.namespace, pod.labels):
                return f"an existing pod's anti-affinity on {key}"
        return None

    def _spread_refusal(self, pod: Pod, node: SimNode) -> str | None:
        hard = [c for c in pod.spread if c.required]
        keys = tuple(sorted({c.topology_key for c in hard}))
        for constraint in hard:
            domain = node.labels.get(constraint.topology_key)
            if domain is None:
                return f"topology spread: node has no {constraint.topology_key} label"
            counts = self._spread_counts(pod, constraint, keys)
            floor = min(counts.values(), default=0)
            if constraint.min_domains is not None and len(counts) < constraint.min_domains:
                floor = 0
            self_match = 1 if constraint.selector.matches(pod.labels) else 0
            if counts.get(domain, 0) + self_match - floor > constraint.max_skew:
                return f"topology spread on {constraint.topology_key}: maxSkew {constraint.max_skew}"
        return None

    def _spread_counts(self, pod: Pod, constraint: SpreadConstraint, keys: tuple[str, ...]) -> dict[str, int]:
        """Matching pods per domain over the nodes the constraint's inclusion policies admit."""
        honor_affinity = constraint.node_affinity_policy == "Honor"
        honor_taints = constraint.node_taints_policy == "Honor"
        group: _Group = (frozenset((pod.namespace,)), constraint.selector, constraint.topology_key)
        signature = (
            group,
            keys,
            pod.node_requirements() if honor_affinity else None,
            pod.tolerations if honor_taints else None,
        )
        hit = self._spread.get(signature)
        if hit is not None:
            return hit[2]
        admitted: set[str] = set()
        counts: dict[str, int] = {}
        for node in self.nodes.values():
            if any(k not in node.labels for k in keys):
                continue
            if honor_affinity and not any(label_matches(alt, node.labels) for alt in pod.node_requirements()):
                continue
            if honor_taints and not tolerated(pod.tolerations, node.taints, prefer=False):
                continue
            admitted.add(node.name)
            domain = node.labels[constraint.topology_key]
            counts[domain] = counts.get(domain, 0) + sum(
                1 for p in node.pods if p.namespace == pod.namespace and constraint.selector.matches(p.labels)
            )
        self._spread[signature] = (group, admitted, counts)
        return counts

    def _group_counts(self, group: _Group) -> dict[str, int]:
        counts = self._counts.get(group)
        if counts is None:
            namespaces, selector, key = group
            counts = {}
            for node in self.nodes.values():
                domain = _domain(node, key)
                if domain is not None:
                    n = sum(1 for p in node.pods if _selects(namespaces, selector, p))
                    if n:
                        counts[domain] = counts.get(domain, 0) + n
            self._counts[group] = counts
        return counts


def unbindable(inp: SchedulingInput, result: SchedulingResult) -> list[Refusal]:
    """The planned pods kube-scheduler would refuse on their planned nodes (empty: all bind).

    Bound pods are bound first; then planned pods in plan order, round after round while any
    binds, so the order the plan lists them in does not matter.
    """
    cluster = Cluster(_nodes(inp, result))
    planned: list[tuple[Pod, str]] = []
    pending = {p.key: p for p in inp.pods}
    for node_name, keys in sorted(result.existing.items()):
        planned += [(pending[k], node_name) for k in keys if k in pending]
    for index, claim in enumerate(result.claims):
        planned += [(p, _claim_name(index)) for p in claim.pods]
    for pod in inp.bound_pods:
        node = cluster.nodes.get(pod.node_name)
        if node is not None and not pod.terminal:
            cluster.bind(pod, node)
    waiting = planned
    while waiting:
        refused: list[tuple[Pod, str]] = []
        for pod, node_name in waiting:
            node = cluster.nodes.get(node_name)
            if node is not None and cluster.refusal(pod, node) is None:
                cluster.bind(pod, node)
            else:
                refused.append((pod, node_name))
        if len(refused) == len(waiting):
            break
        waiting = refused
    out = []
    for pod, node_name in waiting:
        node = cluster.nodes.get(node_name)
        reason = "no such node" if node is None else cluster.refusal(pod, node) or "refused"
        out.append(Refusal(pod.key, node_name, reason))
    return out


def planned_labels(claim: PlannedClaim, inp: SchedulingInput) -> dict[str, str]:
    """The labels the node of `claim` registers with: every key its requirements, narrowed to
    its cheapest option and offering, fix to one value, its NodePool's template labels and name,
    and the aliases of the well-known keys (`labels.with_aliases`).
    """
    offering = claim.offering
    fixed = Requirements(
        [
            Requirement.new(wk.ZONE, "In", [offering.zone]),
            Requirement.new(wk.CAPACITY_TYPE, "In", [offering.capacity_type]),
        ]
    )
    reqs = claim.requirements.intersection(claim.instance_type.requirements).intersection(fixed)
    labels = reqs.labels()
    pool = next((pc.nodepool for pc in inp.pools if pc.nodepool.name == claim.nodepool), None)
    if pool is not None:
        labels.update(pool.labels)
    labels[wk.NODEPOOL] = claim.nodepool
    return wk.with_aliases(labels)


def _nodes(inp: SchedulingInput, result: SchedulingResult) -> list[SimNode]:
    nodes = [
        SimNode(
            n.name,
            wk.with_aliases({**n.labels, wk.HOSTNAME: n.labels.get(wk.HOSTNAME, n.name)}),
            tuple(t for t in n.taints if t.key not in TRANSIENT_TAINTS),
            dict(n.allocatable.items()),
            unschedulable=n.unschedulable or n.deleting,
        )
        for n in inp.nodes
    ]
    types = {t.name: t for pc in inp.pools for t in pc.instance_types}
    for flight in inp.inflight:
        t = types.get(flight.instance_type)
        if t is None:
            continue
        labels = {
            **flight.requirements.intersection(t.requirements).labels(),
            **flight.labels,
            wk.ZONE: flight.zone,
            wk.CAPACITY_TYPE: flight.capacity_type,
        }
        name = flight.node_name or flight.name
        labels[wk.HOSTNAME] = name
        node = SimNode(name, wk.with_aliases(labels), flight.taints, dict(t.allocatable.items()))
        _run_daemons(inp, node)
        nodes.append(node)
    pools = {pc.nodepool.name: pc.nodepool for pc in inp.pools}
    for index, claim in enumerate(result.claims):
        name = _claim_name(index)
        labels = planned_labels(claim, inp) | {wk.HOSTNAME: name}
        pool = pools.get(claim.nodepool)
        node = SimNode(name, labels, pool.taints if pool else (), dict(claim.instance_type.allocatable.items()))
        _run_daemons(inp, node)
        nodes.append(node)
    return nodes


def _run_daemons(inp: SchedulingInput, node: SimNode) -> None:
    """A new node's DaemonSet pods: their requests and host ports are in use before any other."""
    for ds in inp.daemonsets:
        if _runs_on(ds.template, node):
            node.take(ds.template)


def _runs_on(template: Pod, node: SimNode) -> bool:
    """True when a DaemonSet with this pod template would run a pod on `node`."""
    return tolerated(template.tolerations, node.taints, prefer=False) and any(
        label_matches(alt, node.labels) for alt in template.node_requirements()
    )


def _claim_name(index: int) -> str:
    return f"planned-claim-{index}"


def _domain(node: SimNode, key: str) -> str | None:
    return node.labels.get(key)


def _term_group(term: AffinityTerm) -> _Group:
    return (None if term.all_namespaces else term.namespaces, term.selector, term.topology_key)


def _selects(namespaces: frozenset[str] | None, selector: LabelSelector, pod: Pod) -> bool:
    return (namespaces is None or pod.namespace in namespaces) and selector.matches(pod.labels)
