"""The disruption engine's inputs and outputs, as plain values. Pure.

`compute_commands(DisruptionInput) -> DisruptionResult` (in `engine.py`) decides; the controller
carries out the `Command`s it returns, after `validate` re-checked them against fresher state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.engine.scheduling.types import PlannedClaim, PoolCapacity
from nodewright.model.blocker import Blocker
from nodewright.model.instance import InstanceStatus
from nodewright.model.instancetype import OfferingKey
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class DisruptionOptions:
    """Knobs of a disruption pass.

    `many_to_many` False restricts consolidation to what Karpenter does (delete, or replace N nodes
    by one). `min_savings` ($/h) and `min_savings_fraction` (of the candidates' price) skip moves
    that save too little to be worth the churn (Karpenter #7146). A many-to-many move (N nodes
    replaced by two or more) must also be worth its disruption by Karpenter's Balanced score with
    k = `many_to_many_threshold` (0: not weighed); with `balance_threshold` > 0 every other
    consolidation move is weighed the same way with that k, whatever its NodePool's policy (a
    moves-per-saving limit: a move that re-packs many pods to save little is left alone). Nodes
    a provisioning pass put pods on within `nomination_window` seconds are left alone.
    `max_candidates` bounds the search.
    """

    many_to_many: bool = True
    many_to_many_threshold: float = 2.0
    balance_threshold: float = 0.0
    min_savings: float = 0.0
    min_savings_fraction: float = 0.0
    spot_to_spot_min_types: int = 15
    # Karpenter's SpotToSpotConsolidation feature gate (off there by default): False never
    # replaces spot nodes by a spot node; deleting them, or a spot-to-on-demand move, still happens.
    spot_to_spot: bool = True
    nomination_window: float = 20.0
    max_candidates: int = 100
    # Node repair (repair.py): no repair in a NodePool, nor anywhere when the whole cluster is
    # past it, while more than this share of the nodes is unhealthy (rounded up; 0 turns repair off).
    repair_max_unhealthy_percent: int = 20


@dataclass(frozen=True, slots=True)
class DisruptionInput:
    """Everything one disruption pass decides from.

    `claims` are Nodewright's records (price, instance type, capacity type, zone, NodePool,
    timestamps, template hash, AMI). `pools` are the NodePools with their instance types.
    `nominated` maps node names to the last time a provisioning pass put pods on them; `images`
    maps EC2NodeClass names to the AMI ids they resolve to now; `blocked` are offerings the
    capacity-error cache holds; `in_progress` are nodes a running command already disrupts;
    `no_cheaper` are (node, instance type) pairs whose consolidation replacement came up no cheaper
    (the controller rolled it back): that type is no replacement option for that node; `stalled`
    are nodes whose last drain PodDisruptionBudgets held until the controller gave it up: only
    the forceful methods take them for a while. `instance_statuses` are the instances whose EC2
    status checks are impaired (node repair reads them with the nodes' conditions).
    """

    snapshot: ClusterSnapshot
    claims: tuple[NodeClaim, ...]
    pools: tuple[PoolCapacity, ...]
    now: float
    nominated: Mapping[str, float] = field(default_factory=dict)
    images: Mapping[str, frozenset[str]] = field(default_factory=dict)
    blocked: frozenset[OfferingKey] = frozenset()
    in_progress: frozenset[str] = frozenset()
    no_cheaper: frozenset[tuple[str, str]] = frozenset()
    stalled: frozenset[str] = frozenset()
    instance_statuses: tuple[InstanceStatus, ...] = ()
    options: DisruptionOptions = DisruptionOptions()


@dataclass(frozen=True, slots=True)
class Command:
    """One disruption decision: remove `candidates` (node names), launching `replacements` first.

    `savings` is the candidates' price minus the replacements' ($/h; never negative for
    consolidation, may be for drift or expiration). `pods` are the keys of the reschedulable pods
    the candidates held when the command was computed, so `validate` can tell if they changed.
    """

    method: str
    reason: str
    candidates: tuple[str, ...]
    replacements: tuple[PlannedClaim, ...]
    savings: float
    detail: str
    budgeted: bool = True
    pods: tuple[str, ...] = ()

    @property
    def replacement_price(self) -> float:
        """$/h of the replacements."""
        return sum(r.price for r in self.replacements)


@dataclass(frozen=True, slots=True)
class DisruptionResult:
    """What one pass decided: at most one command per pass today (the first method that yields
    one wins), why each node that is not disrupted is left alone, and how many nodes were eligible.
    """

    commands: tuple[Command, ...]
    rejected: Mapping[str, str]
    eligible: int
    # By node left alone because something blocks it: the kind of blocker and its names (the
    # PodDisruptionBudgets, the do-not-disrupt pod or node, the NodePool whose budgets allow no
    # more), beside the reason text in `rejected`.
    blockers: Mapping[str, Blocker] = field(default_factory=dict)
