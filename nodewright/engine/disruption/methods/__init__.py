"""The disruption methods, one object per method, in the order a pass tries them (the first that
yields a command wins), as Karpenter's `Method` interface (pkg/controllers/disruption/types.go):

    static_scale_down  StaticScaleDown  static NodePools above their replicas
    static_replace     StaticReplace    static NodePools' drifted or expired nodes
    repair             Repair           nodes broken for their condition's toleration (forceful)
    emptiness          Emptiness        empty nodes past consolidateAfter
    expiration         Expiration       nodes past expireAfter (forceful)
    drift              Drift            drifted nodes
    daemonset-overflow DaemonSetOverflow nodes whose DaemonSet pods no longer fit (NodePools
                                        annotated daemonset-overflow: Replace; beyond Karpenter)
    zone-rebalance     ZoneRebalance    a node out of the fullest zone of a zone-balanced NodePool
                                        over its bound (beyond Karpenter)
    consolidation      Consolidation    underutilized nodes: delete, or replace by cheaper ones

Static NodePools' methods come first: cheap to decide, and their nodes are no other method's to
take. Zone rebalance, like drift a node no longer where its NodePool asks for it, goes before
consolidation: last, it got a pass only when consolidation found nothing, and a NodePool stayed
over its bound while consolidation took pass after pass (it finds nothing while every NodePool is
within its bound, so then consolidation's turn is unchanged).

Each method names itself (`name`, the command's `method`), the budget reason its commands count
against (`reason`), whether they are held by the budgets at all (`budgeted`), computes at most one
command (`compute`, noting in `why` why a node it looked at was left alone), and re-checks one of
its commands against fresh state (`still_holds`). `BY_NAME` finds a command's method. Pure.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Protocol

from nodewright.engine.disruption.candidates import ClusterView
from nodewright.engine.disruption.methods.consolidation import Consolidation
from nodewright.engine.disruption.methods.daemonfit import DaemonSetOverflow
from nodewright.engine.disruption.methods.drift import Drift
from nodewright.engine.disruption.methods.emptiness import Emptiness
from nodewright.engine.disruption.methods.expiration import Expiration
from nodewright.engine.disruption.methods.rebalance import ZoneRebalance
from nodewright.engine.disruption.methods.repair import Repair
from nodewright.engine.disruption.methods.static_replace import StaticReplace
from nodewright.engine.disruption.methods.static_scale_down import StaticScaleDown
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.types import Command


class Method(Protocol):
    """One disruption method (see the module docstring)."""

    @property
    def name(self) -> str:
        """The method's name, which its commands carry as `method`."""
        ...

    @property
    def reason(self) -> str:
        """The disruption reason its commands count against in the budgets."""
        ...

    @property
    def budgeted(self) -> bool:
        """Whether the budgets, PodDisruptionBudgets and nominations hold its commands."""
        ...

    def compute(self, view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
        """This pass's command from this method, or None; notes in `why` why nodes were left."""
        ...

    def still_holds(self, command: Command, view: ClusterView, cache: DisruptionCache | None) -> str | None:
        """None when `command` still holds against `view` (fresh state, the command's candidates
        not counted as in progress), else why it is stale.
        """
        ...


METHODS: tuple[Method, ...] = (
    StaticScaleDown(),
    StaticReplace(),
    Repair(),
    Emptiness(),
    Expiration(),
    Drift(),
    DaemonSetOverflow(),
    ZoneRebalance(),
    Consolidation(),
)
BY_NAME = MappingProxyType({m.name: m for m in METHODS})
