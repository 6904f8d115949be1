"""The scheduling engine's inputs and outputs, as plain values. Pure.

`solve()` (in `solver.py`) takes a `SchedulingInput` and returns a `SchedulingResult`; the
Karpenter reference implementation in `bench/` takes and returns the same types, so the two can
be compared pod for pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.model.instancetype import InstanceType, Offering, OfferingKey
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources
from nodewright.model.workloads import DaemonSet

MAX_INSTANCE_TYPE_OPTIONS = 60


@dataclass(frozen=True, slots=True)
class PoolCapacity:
    """A NodePool with the instance types it may launch (before any filtering)."""

    nodepool: NodePool
    instance_types: tuple[InstanceType, ...]


@dataclass(frozen=True, slots=True)
class SchedulingInput:
    """Everything one scheduling pass decides from.

    `pods` are the pods to place. `nodes` are existing nodes, `bound_pods` the pods already on
    them (they count against capacity and for topology); `inflight` are node claims launched but
    not yet registered (treated as nodes of their cheapest option). `used` is what each NodePool's
    nodes already consume, for limits (by NodePool name).
    """

    pods: tuple[Pod, ...]
    pools: tuple[PoolCapacity, ...]
    nodes: tuple[Node, ...] = ()
    bound_pods: tuple[Pod, ...] = ()
    inflight: tuple[NodeClaim, ...] = ()
    daemonsets: tuple[DaemonSet, ...] = ()
    blocked: frozenset[OfferingKey] = frozenset()
    used: Mapping[str, Resources] = field(default_factory=dict)
    now: float = 0.0
    # Pod key -> why its DRA claims fit no node (`engine.devices.Lowered.problems`): its reason
    # when it is left out.
    device_problems: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PlannedClaim:
    """A node the pass decided to launch.

    `options` are at most 60 instance types that fit every pod plus daemonset overhead, cheapest
    first; `offering` is the cheapest offering of `options[0]` the requirements allow (what the
    launch will most likely get). `requests` includes daemonset overhead.
    """

    nodepool: str
    requirements: Requirements
    options: tuple[InstanceType, ...]
    offering: Offering
    requests: Resources
    pods: tuple[Pod, ...]

    @property
    def instance_type(self) -> InstanceType:
        """The cheapest option: the type the plan is priced with."""
        return self.options[0]

    @property
    def price(self) -> float:
        """$/h of the cheapest offering."""
        return self.offering.price


@dataclass(frozen=True, slots=True)
class SchedulingResult:
    """What one pass decided: new claims, placements on existing or in-flight capacity, and why
    the remaining pods could not be placed (pod key -> reason a person can act on). `deferred`:
    pods the pass did not reach before its solve deadline (`budget.py`), sorted; not unschedulable,
    only not planned yet.
    """

    claims: tuple[PlannedClaim, ...] = ()
    existing: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    unschedulable: Mapping[str, str] = field(default_factory=dict)
    deferred: tuple[str, ...] = ()

    @property
    def price_per_hour(self) -> float:
        """Total $/h of the new claims."""
        return sum(c.price for c in self.claims)
