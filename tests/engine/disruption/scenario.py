"""Scenario builders for disruption tests: a small catalog, a `World` of owned nodes with their
claims and pods, and `run()`.

Everything is a real model object (pods, pools and types come from `tests/builders.py`); tests run
the real `compute_commands` / `validate` on them. Time is fixed: `NOW`, with nodes an hour old.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.engine.disruption import Command, DisruptionInput, DisruptionOptions, DisruptionResult, compute_commands
from nodewright.engine.scheduling import PoolCapacity
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import Budget, Disruption, NodePool
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget
from tests.builders import instance_type, node_pool, pod

NOW = 1_750_000_000.0  # 2025-06-15T15:06:40Z
HOUR = 3600.0
ZONE = "us-east-1a"


def catalog() -> tuple[InstanceType, ...]:
    """Linear-ish prices, a cpu-heavy and a memory-heavy family; spot at ~40%."""
    return (
        instance_type("m5.large", cpu="2", memory="8Gi", price=0.096, spot_price=0.040),
        instance_type("m5.xlarge", cpu="4", memory="16Gi", price=0.192, spot_price=0.080),
        instance_type("m5.2xlarge", cpu="8", memory="32Gi", price=0.384, spot_price=0.160),
        instance_type("c5.large", cpu="2", memory="4Gi", price=0.085, spot_price=0.035),
        instance_type("c5.xlarge", cpu="4", memory="8Gi", price=0.170, spot_price=0.070),
        instance_type("r5.large", cpu="2", memory="16Gi", price=0.126, spot_price=0.050),
    )


def spot_catalog(count: int = 20, *, base: float = 0.05) -> tuple[InstanceType, ...]:
    """`count` 2-cpu spot-and-on-demand types priced apart by $0.001/h, cheapest first."""
    return tuple(
        instance_type(f"t{i}.large", cpu="2", memory="8Gi", price=0.1 + i / 1000, spot_price=base + i / 1000)
        for i in range(count)
    )


def pool(
    name: str = "default",
    *,
    policy: str = "WhenEmptyOrUnderutilized",
    after: float | None = 0.0,
    budgets: Iterable[Budget] = (Budget(nodes="100%"),),
    **fields: Any,
) -> NodePool:
    """A NodePool with a disruption block (all nodes may go at once by default)."""
    return node_pool(name, disruption=Disruption(policy, after, tuple(budgets)), **fields)


@dataclass
class World:
    """A cluster under construction: NodePools over a catalog, owned nodes with claims and pods."""

    pools: list[NodePool] = field(default_factory=lambda: [pool()])
    types: tuple[InstanceType, ...] = field(default_factory=catalog)
    nodes: list[Node] = field(default_factory=list)
    claims: list[NodeClaim] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    daemonsets: list[DaemonSet] = field(default_factory=list)
    now: float = NOW

    def type(self, name: str) -> InstanceType:
        return next(t for t in self.types if t.name == name)

    def node(
        self,
        name: str,
        type_name: str = "m5.xlarge",
        *,
        pool: str = "default",
        capacity_type: str = "on-demand",
        zone: str = ZONE,
        price: float | None = None,
        state: str = "initialized",
        age: float = HOUR,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        claim_fields: Mapping[str, Any] | None = None,
        **node_fields: Any,
    ) -> Node:
        """Add a node of `type_name` launched `age` seconds ago, with its claim."""
        it = self.type(type_name)
        if price is None:
            price = min(o.price for o in it.offerings if o.capacity_type == capacity_type)
        claim_name = f"{name}-claim"
        node = Node(
            name=name,
            labels={
                wk.HOSTNAME: name,
                wk.INSTANCE_TYPE: type_name,
                wk.ZONE: zone,
                wk.CAPACITY_TYPE: capacity_type,
                wk.ARCH: it.arch,
                wk.OS: "linux",
                wk.NODEPOOL: pool,
                wk.NW_NODEPOOL: pool,
                wk.NW_NODECLAIM: claim_name,
                **(labels or {}),
            },
            annotations=dict(annotations or {}),
            capacity=it.capacity,
            allocatable=it.allocatable,
            ready=True,
            created_at=self.now - age,
            **node_fields,
        )
        claim = NodeClaim(
            name=claim_name,
            nodepool=pool,
            state=state,
            instance_type=type_name,
            capacity_type=capacity_type,
            zone=zone,
            price=price,
            node_name=name,
            created_at=self.now - age,
            launched_at=self.now - age + 5,
            initialized_at=self.now - age + 60,
            **(claim_fields or {}),
        )
        self.nodes.append(node)
        self.claims.append(claim)
        return node

    def put(self, node: str, count: int = 1, *, cpu: str = "1", memory: str = "1Gi", **fields: Any) -> list[Pod]:
        """Bind `count` running pods to `node` (named `<node>-p<i>`), created two hours before NOW's
        reference, i.e. well before the node's own changes unless `created_at` says otherwise.
        """
        start = sum(1 for p in self.pods if p.node_name == node)
        fields.setdefault("created_at", self.now - 2 * HOUR)
        added = [pod(f"{node}-p{start + i}", cpu=cpu, memory=memory, node_name=node, **fields) for i in range(count)]
        self.pods += added
        return added

    def input(self, **fields: Any) -> DisruptionInput:
        options = fields.pop("options", None) or DisruptionOptions(**fields.pop("opts", {}))
        return DisruptionInput(
            snapshot=ClusterSnapshot(
                nodes=tuple(self.nodes),
                pods=tuple(self.pods),
                daemonsets=tuple(self.daemonsets),
                pdbs=tuple(self.pdbs),
            ),
            claims=tuple(self.claims),
            pools=tuple(PoolCapacity(p, self.types) for p in self.pools),
            now=fields.pop("now", self.now),
            options=options,
            **fields,
        )

    def run(self, **fields: Any) -> DisruptionResult:
        return compute_commands(self.input(**fields))

    def edit_node(self, name: str, **changes: Any) -> None:
        self.nodes = [replace(n, **changes) if n.name == name else n for n in self.nodes]

    def edit_claim(self, node: str, **changes: Any) -> None:
        self.claims = [replace(c, **changes) if c.node_name == node else c for c in self.claims]


def only(result: DisruptionResult) -> Command:
    """The one command of a pass (fails when there is none)."""
    assert len(result.commands) == 1, f"expected one command, got {result.commands}; rejected {result.rejected}"
    return result.commands[0]
