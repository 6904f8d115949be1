"""NodePools: what capacity may be launched for which pods, and how it may be disrupted. Pure.

The fields follow Karpenter's `karpenter.sh/v1` NodePool, so existing manifests mean the same
here. Parsing and validation of documents live in `nodewright.config`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources
from nodewright.model.taints import Taint

REBALANCE_POLICIES = ("Ignore", "Cordon", "CordonAndDrain", "ReplaceThenDrain")
# Balanced (Karpenter v1.14): underutilized nodes too, when the savings justify the disruption.
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
DISRUPTION_REASONS = ("Underutilized", "Empty", "Drifted")
# What a NodePool's zone balance counts per zone (`ZoneBalance.by`).
ZONE_BALANCE_BY = ("nodes", "cpu")
# What to do about a DaemonSet pod that no longer fits its node (`engine.daemonfit`).
DAEMON_OVERFLOW_POLICIES = ("Ignore", "Report", "Replace")


@dataclass(frozen=True, slots=True)
class Budget:
    """A disruption budget: at most `nodes` (a count or a percentage) at once, optionally only
    during a cron `schedule` window of `duration` seconds, optionally only for some `reasons`.
    """

    nodes: str = "10%"
    schedule: str | None = None
    duration: float | None = None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Disruption:
    """How a NodePool's nodes may be consolidated (consolidate_after None means Never)."""

    consolidation_policy: str = "WhenEmptyOrUnderutilized"
    consolidate_after: float | None = 0.0
    budgets: tuple[Budget, ...] = (Budget(),)


@dataclass(frozen=True, slots=True)
class ZoneBalance:
    """Keep a NodePool's nodes even across its zones (`nodewright.io/zone-balance`): the most
    populated zone may hold at most `max_skew` more than the least populated one, counted in nodes
    or in vCPUs of capacity (`by`). Provisioning picks each new node's zone so; consolidation makes
    no move that takes the NodePool past it (`engine.zonebalance`).
    """

    by: str = "nodes"
    max_skew: float = 1.0


@dataclass(frozen=True, slots=True)
class NodeClassRef:
    """The EC2NodeClass a NodePool launches with."""

    name: str
    kind: str = "EC2NodeClass"
    group: str = "karpenter.k8s.aws"


@dataclass(frozen=True, slots=True)
class NodePool:
    """A NodePool (Karpenter v1 schema) plus Nodewright's settings from its own annotations:
    the rebalance policy, zone balance and what to do about DaemonSet pods that no longer fit.
    """

    name: str
    node_class_ref: NodeClassRef = NodeClassRef("default")
    requirements: Requirements = field(default_factory=Requirements)
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    expire_after: float | None = 720 * 3600.0
    termination_grace_period: float | None = None
    limits: Resources | None = None
    weight: int = 0
    disruption: Disruption = Disruption()
    rebalance_policy: str = "ReplaceThenDrain"
    # None: zones are left to price and to the workloads' own spread constraints (Karpenter's way).
    zone_balance: ZoneBalance | None = None
    daemon_overflow: str = "Ignore"
    # Karpenter's static NodePools (`spec.replicas`): keep exactly this many nodes, never
    # consolidated, never opened for pods (nodewright.engine.scheduling.static).
    replicas: int | None = None
    # kubelet settings carried by the template in v1beta1 and by the EC2NodeClass in v1.
    api_version: str = "karpenter.sh/v1"
    resource_version: str = ""


def _taints(taints: tuple[Taint, ...]) -> list[list[str]]:
    return sorted([t.key, t.value, t.effect] for t in taints)


def template_hash(pool: NodePool) -> str:
    """A stable hash (16 hex digits) of what a node takes from its NodePool's template: labels,
    annotations, taints, startup taints and the node class reference. A claim records it at
    launch; drift (`engine.disruption.drift`) compares it with the NodePool's hash now. The
    requirements, weight, limits, disruption settings, `expireAfter` and
    `terminationGracePeriod` are left out, as Karpenter v1 leaves them out of drift.
    """
    document = {
        "labels": sorted(pool.labels.items()),
        "annotations": sorted(pool.annotations.items()),
        "taints": _taints(pool.taints),
        "startupTaints": _taints(pool.startup_taints),
        "nodeClassRef": [pool.node_class_ref.group, pool.node_class_ref.kind, pool.node_class_ref.name],
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
