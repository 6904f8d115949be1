"""Static NodePools (Karpenter's `spec.replicas`): how many nodes a pool is short of, and the
claims that make up the difference. Pure.

A static NodePool keeps `replicas` nodes whatever the pods want. It never opens a claim for pods
(`state.Pass` leaves it out of the pools new claims come from), but its nodes and claims in flight
are capacity like any other, so pods land on them as on any node.

Counting, as Karpenter's static provisioning controller counts (its `NodePoolState`):

* `active`: the pool's nodes (Nodewright's: a Karpenter node of a NodePool of the same name does
  not count) that are not going away (being deleted, or cordoned by an interruption
  that asks for a replacement: `Node.draining`), plus its claims launched or being launched that
  no node has joined yet. A node a disruption command is replacing still counts, so a replacement
  launched first never makes the provisioner launch a third node;
* `total`: every node and claim of the pool, leaving or not: what `limits.nodes` caps, so a pool
  never has more than that many nodes at once, even while one is being replaced.

A missing node becomes one claim with no pods: the pool's requirements (and labels and name), and
as options every plain instance type those allow with an offering not blocked by the capacity
error cache, cheapest first (at most 60). The launch takes the cheapest offering it can get, as
Karpenter's cloud provider does for a static claim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodewright.engine.scheduling.prepare import PreparedPool
from nodewright.engine.scheduling.types import PlannedClaim, PoolCapacity
from nodewright.engine.scheduling.usage import NODES
from nodewright.model.instancetype import OfferingKey
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.resources import CPU, MEMORY, PODS, Resources
from nodewright.model.workloads import DaemonSet

_IN_FLIGHT = ("pending", "launched")
_NAMES = tuple(sorted((CPU, MEMORY, PODS)))


@dataclass(frozen=True, slots=True)
class StaticCount:
    """A static NodePool's nodes: `active` count toward `replicas`, `total` toward limits.nodes."""

    active: int
    total: int


def is_static(pool: NodePool) -> bool:
    """True for a static NodePool (one with `spec.replicas`)."""
    return pool.replicas is not None


def node_limit(pool: NodePool) -> int | None:
    """The pool's `limits.nodes`, or None when it sets none."""
    if pool.limits is None or NODES not in pool.limits:
        return None
    return pool.limits[NODES] // 1000  # quantities are held in thousandths


def count_static(pool: NodePool, nodes: Sequence[Node], claims: Sequence[NodeClaim]) -> StaticCount:
    """Count the pool's nodes and claims in flight (see the module docstring)."""
    active = total = 0
    joined: set[str] = set()
    names: set[str] = set()
    for node in nodes:
        names.add(node.name)
        joined.update(key for key in (node.nodeclaim, node.provider_id) if key)
        # Only Nodewright's: side by side with Karpenter, its nodes carry karpenter.sh/nodepool too.
        if node.nodepool != pool.name or not node.launched_by_nodewright:
            continue
        total += 1
        if not node.draining:
            active += 1
    for claim in claims:
        if claim.nodepool != pool.name or claim.state not in _IN_FLIGHT:
            continue
        if claim.node_name in names or claim.name in joined or (claim.provider_id and claim.provider_id in joined):
            continue
        total += 1
        active += 1
    return StaticCount(active, total)


def shortfall(pool: NodePool, count: StaticCount) -> int:
    """How many nodes to launch now: up to `replicas`, never past limits.nodes."""
    if pool.replicas is None:
        return 0
    missing = pool.replicas - count.active
    limit = node_limit(pool)
    if limit is not None:
        missing = min(missing, limit - count.total)
    return max(0, missing)


def plan_static(
    pc: PoolCapacity, count: int, daemonsets: Sequence[DaemonSet], blocked: frozenset[OfferingKey]
) -> tuple[tuple[PlannedClaim, ...], str]:
    """`count` empty claims for the static pool of `pc`, and why there are none when no instance
    type its requirements allow has an offering left.
    """
    if count <= 0:
        return (), ""
    prepared = PreparedPool(pc.nodepool, tuple(daemonsets), blocked, _NAMES)
    types, _ = prepared.types(pc.instance_types)
    options, why = prepared.claim_options(types, prepared.requirements, (0,) * len(_NAMES), None)
    if not options:
        return (), why or f"no instance type NodePool {pc.nodepool.name}'s requirements allow has an offering left"
    cheapest = options[0][2]
    claim = PlannedClaim(
        nodepool=pc.nodepool.name,
        requirements=prepared.requirements,
        options=tuple(option[2].it for option in options),
        offering=options[0][3][0],
        requests=Resources(dict(zip(_NAMES, cheapest.overhead, strict=True))),
        pods=(),
    )
    return (claim,) * count, ""
