"""NodePools: what capacity may be launched for which pods, and how it may be disrupted. Pure.

The fields follow Karpenter's `karpenter.sh/v1` NodePool, so existing manifests mean the same
here. Parsing and validation of documents live in `nodewright.config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources
from nodewright.model.taints import Taint

REBALANCE_POLICIES = ("Ignore", "Cordon", "CordonAndDrain", "ReplaceThenDrain")
# Balanced (Karpenter v1.14): underutilized nodes too, when the savings justify the disruption.
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
DISRUPTION_REASONS = ("Underutilized", "Empty", "Drifted")


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
class NodeClassRef:
    """The EC2NodeClass a NodePool launches with."""

    name: str
    kind: str = "EC2NodeClass"
    group: str = "karpenter.k8s.aws"


@dataclass(frozen=True, slots=True)
class NodePool:
    """A NodePool (Karpenter v1 schema) plus Nodewright's rebalance policy."""

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
    # Karpenter's static NodePools (`spec.replicas`): keep exactly this many nodes, never
    # consolidated, never opened for pods (nodewright.engine.scheduling.static).
    replicas: int | None = None
    # kubelet settings carried by the template in v1beta1 and by the EC2NodeClass in v1.
    api_version: str = "karpenter.sh/v1"
    resource_version: str = ""
