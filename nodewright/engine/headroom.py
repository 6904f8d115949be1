"""Consolidation headroom: a cluster's $/h against the cheapest fresh plan of all its pods. Pure.

Role: the one definition of "what consolidation could save" shared by `nodewright plan`'s
re-pack report (a live cluster, read-only) and `bench.headroom` (a simulated cluster), so the two
figures are the same measure by construction (tests/cli/test_plan_cluster.py checks it on one
cluster).

Contract: `measure(snapshot, pools, node_price, now)` places every non-daemon pod of `snapshot`
(bound or pending) with `solve()` on an empty cluster with `pools`, daemonsets as overhead, and
returns the nodes' $/h today (`node_price(node)`, None when unknown: counted as 0 and listed in
`unpriced`) next to the fresh plan's, both also by (NodePool, capacity type). A consolidator
cannot do much better than the fresh plan, so `current - fresh` bounds what it can still save.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from nodewright.engine.scheduling import PoolCapacity, SchedulingResult, solve
from nodewright.engine.scheduling.inputs import provisioning_input
from nodewright.model import labels as wk
from nodewright.model.node import Node
from nodewright.model.snapshot import ClusterSnapshot

# Node labels saying how a node was bought: Karpenter's and Nodewright's, then EKS managed node groups'.
_EKS_CAPACITY_TYPE = "eks.amazonaws.com/capacityType"
_EKS_CAPACITY = MappingProxyType({"ON_DEMAND": "on-demand", "SPOT": "spot", "CAPACITY_BLOCK": "reserved"})


@dataclass(frozen=True, slots=True)
class Headroom:
    """Today's nodes against the fresh plan, in $/h, in total and by (NodePool, capacity type)."""

    current: float
    fresh: float
    current_by_group: dict[tuple[str, str], float] = field(default_factory=dict)
    fresh_by_group: dict[tuple[str, str], float] = field(default_factory=dict)
    nodes_by_group: dict[tuple[str, str], int] = field(default_factory=dict)
    claims_by_group: dict[tuple[str, str], int] = field(default_factory=dict)
    unpriced: tuple[str, ...] = ()
    plan: SchedulingResult | None = None

    @property
    def savings(self) -> float:
        """What the fresh plan saves against today's nodes ($/h; negative when today is cheaper)."""
        return self.current - self.fresh


def capacity_type(node: Node) -> str:
    """How `node` was bought (`spot`, `on-demand`, `reserved`), from its labels; '' when unsaid."""
    return node.labels.get(wk.CAPACITY_TYPE) or _EKS_CAPACITY.get(node.labels.get(_EKS_CAPACITY_TYPE, ""), "")


def fresh_plan(snapshot: ClusterSnapshot, pools: Sequence[PoolCapacity], now: float) -> SchedulingResult:
    """`solve()` placing every non-daemon pod of `snapshot` on an empty cluster with `pools`."""
    pods = tuple(dataclasses.replace(p, node_name="", unschedulable=True) for p in snapshot.pods if not p.daemon)
    empty = ClusterSnapshot(daemonsets=snapshot.daemonsets)
    return solve(provisioning_input(empty, pending=pods, pools=tuple(pools), now=now))


def measure(
    snapshot: ClusterSnapshot,
    pools: Sequence[PoolCapacity],
    node_price: Callable[[Node], float | None],
    now: float,
) -> Headroom:
    """Today's $/h against the fresh plan's (see the module docstring)."""
    current_by_group: dict[tuple[str, str], float] = {}
    nodes_by_group: dict[tuple[str, str], int] = {}
    unpriced = []
    for node in snapshot.nodes:
        group = (node.nodepool or "(none)", capacity_type(node) or "(unknown)")
        price = node_price(node)
        if price is None:
            unpriced.append(node.name)
        current_by_group[group] = current_by_group.get(group, 0.0) + (price or 0.0)
        nodes_by_group[group] = nodes_by_group.get(group, 0) + 1
    plan = fresh_plan(snapshot, pools, now)
    fresh_by_group: dict[tuple[str, str], float] = {}
    claims_by_group: dict[tuple[str, str], int] = {}
    for claim in plan.claims:
        group = (claim.nodepool, claim.offering.capacity_type)
        fresh_by_group[group] = fresh_by_group.get(group, 0.0) + claim.price
        claims_by_group[group] = claims_by_group.get(group, 0) + 1
    return Headroom(
        current=sum(current_by_group.values()),
        fresh=sum(c.price for c in plan.claims),
        current_by_group=current_by_group,
        fresh_by_group=fresh_by_group,
        nodes_by_group=nodes_by_group,
        claims_by_group=claims_by_group,
        unpriced=tuple(unpriced),
        plan=plan,
    )
