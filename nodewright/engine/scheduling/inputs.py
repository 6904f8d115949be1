"""The scheduling inputs: what each kind of placement hands `solve()`. Pure.

Every `SchedulingInput` is built here, for three kinds of question:

* `provisioning_input`: where the pending pods go, on the nodes there are, the claims in flight
  and new claims of the NodePools. The provisioner's pass asks it; so do `plan` (files or a live
  cluster, with no claim records) and `explain` (one pod). Its rules:

  - a claim is *in flight* while it is launched and its node has not registered: not under its
    recorded node name, nor as a node carrying its claim label or its providerID (a node that
    joined during this invocation is already a real Node in the snapshot while its claim learns
    its node name only at the next housekeeping: counting it in flight too would plan pods onto
    an empty phantom copy of the node);
  - pods an in-flight claim already holds are bound to it for this plan, not planned again; every
    pod such a claim holds counts on it (its room and its topology), not only this plan's pods: a
    re-plan after a capacity error leaves out the pods of the claims just launched, and a
    consolidation replacement holds pods still bound to the tainted candidate (a held pod counts
    on its claim when it is unbound or its node is leaving: being deleted or tainted disrupted);
  - pods being placed anew (a draining node's, among `pending`) or held by a claim count there,
    not where they are: kube-scheduler will not see them on their old node once evicted;
  - NodePool usage (for limits) counts the nodes and every claim (`pool_usage`);
  - pods with DRA device claims are first given the requirements and requests their devices
    mean, against the pools' instance types and the nodes (`engine.devices.lower`).

* `existing_nodes_input`: where pods fit on given nodes alone, no NodePool (what kube-scheduler
  would do): CapacityBuffers' virtual pods held on nodes, pending pods placed before a
  disruption simulation, the simulator's kube-scheduler.

* `rescheduling_input`: where the pods of nodes that would leave go (a disruption pass's
  simulation): on the rest of the cluster, or new claims of the NodePools. Its rules:

  - the rest of the cluster is what the caller's simulation models: the engine's
    (`engine.disruption.simulate`) is a smaller, equivalent cluster of stand-in nodes, the
    Karpenter reference's (`reference.karpenter.simulation`) is `remaining_cluster`, the nodes
    not leaving with the pods bound to them;
  - no claim in flight is offered: its room belongs to the pending pods it was launched for;
  - NodePool usage is given, counted once a pass over the whole cluster, the leaving nodes
    included (they count until they are gone, as in Karpenter);
  - the DaemonSets, blocked offerings and time are the pass's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from nodewright.engine.devices import lower
from nodewright.engine.scheduling.types import PoolCapacity, SchedulingInput
from nodewright.engine.scheduling.usage import pool_usage
from nodewright.model.instancetype import OfferingKey
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.workloads import DaemonSet


def nodes_by_claim(nodes: Iterable[Node]) -> dict[str, Node]:
    """Nodes keyed by their claim label and by their providerID."""
    out: dict[str, Node] = {}
    for node in nodes:
        if node.nodeclaim:
            out[node.nodeclaim] = node
        if node.provider_id:
            out[node.provider_id] = node
    return out


def in_flight(nodes: Sequence[Node], claims: Iterable[NodeClaim]) -> tuple[NodeClaim, ...]:
    """The claims launched whose node has not registered (see the module docstring)."""
    registered = {n.name for n in nodes}
    joined = nodes_by_claim(nodes)
    return tuple(
        c
        for c in claims
        if c.state == "launched"
        and c.node_name not in registered
        and c.name not in joined
        and c.provider_id not in joined
    )


def provisioning_input(
    snapshot: ClusterSnapshot,
    *,
    pending: Sequence[Pod],
    pools: tuple[PoolCapacity, ...],
    claims: Sequence[NodeClaim] = (),
    blocked: frozenset[OfferingKey] = frozenset(),
    now: float = 0.0,
) -> SchedulingInput:
    """Where `pending` go: on `snapshot`'s nodes, `claims` in flight, or new claims of `pools`,
    offerings in `blocked` aside (the rules are in the module docstring).
    """
    lowered = lower(snapshot, pending, (t for pc in pools for t in pc.instance_types))
    snapshot, pending = lowered.snapshot, lowered.pending
    inflight = in_flight(snapshot.nodes, claims)
    holder = {pod: c.node_name or c.name for c in inflight for pod in c.pods}
    leaving = {n.name for n in snapshot.nodes if n.leaving}
    held = tuple(
        replace(p, node_name=holder[p.key])
        for p in snapshot.pods
        if p.key in holder and (not p.node_name or p.node_name in leaving)
    )
    moving = {p.key for p in pending if p.node_name} | {p.key for p in held}
    return SchedulingInput(
        pods=tuple(p for p in pending if p.key not in holder),
        pools=pools,
        nodes=snapshot.nodes,
        bound_pods=tuple(p for p in snapshot.pods if p.node_name and p.key not in moving) + held,
        inflight=inflight,
        daemonsets=snapshot.daemonsets,
        blocked=blocked,
        used=pool_usage(
            snapshot.nodes, claims, {pc.nodepool.name: {t.name: t for t in pc.instance_types} for pc in pools}
        ),
        now=now,
        device_problems=lowered.problems,
    )


def existing_nodes_input(
    pods: Sequence[Pod],
    nodes: Sequence[Node],
    bound_pods: Iterable[Pod],
    *,
    daemonsets: tuple[DaemonSet, ...] = (),
    now: float = 0.0,
) -> SchedulingInput:
    """Where `pods` fit on `nodes` alone (no NodePool opens a claim), `bound_pods` on them."""
    return SchedulingInput(
        pods=tuple(pods), pools=(), nodes=tuple(nodes), bound_pods=tuple(bound_pods), daemonsets=daemonsets, now=now
    )


def remaining_cluster(snapshot: ClusterSnapshot, gone: Iterable[str]) -> tuple[tuple[Node, ...], tuple[Pod, ...]]:
    """The cluster without the nodes named in `gone`: the other nodes, and the pods bound to them."""
    gone = frozenset(gone)
    nodes = tuple(n for n in snapshot.nodes if n.name not in gone)
    bound = tuple(p for p in snapshot.pods if p.node_name and p.node_name not in gone)
    return nodes, bound


def rescheduling_input(
    pods: Sequence[Pod],
    *,
    nodes: Sequence[Node],
    bound_pods: Iterable[Pod],
    pools: tuple[PoolCapacity, ...],
    used: Mapping[str, Resources],
    daemonsets: tuple[DaemonSet, ...] = (),
    blocked: frozenset[OfferingKey] = frozenset(),
    now: float = 0.0,
) -> SchedulingInput:
    """Where `pods`, of nodes that would leave, go: on `nodes` with `bound_pods` on them, or new
    claims of `pools`, with `used` counted towards their limits (the rules are in the module
    docstring).
    """
    return SchedulingInput(
        pods=tuple(pods),
        pools=pools,
        nodes=tuple(nodes),
        bound_pods=tuple(bound_pods),
        daemonsets=daemonsets,
        blocked=blocked,
        used=used,
        now=now,
    )
