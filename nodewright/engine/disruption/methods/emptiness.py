"""Emptiness: delete every eligible node without reschedulable pods (daemon and mirror pods do
not count) whose NodePool consolidates (WhenEmpty, WhenEmptyOrUnderutilized or Balanced) and
whose `consolidateAfter` has passed since its last change, within the "Empty" budgets, in one
command; of a zone-balanced NodePool's, those whose deletion keeps its zones even
(`engine/zonebalance.py`). Karpenter's emptiness.go. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.disruption.consolidation import names
from nodewright.engine.disruption.methods.shared import (
    STATIC,
    fullest_first,
    note,
    ordered,
    recheck,
    still_settled,
    waiting,
    within_budget,
)
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.types import Command
from nodewright.engine.zonebalance import ZoneLoads
from nodewright.model.nodepool import CONSOLIDATION_POLICIES

EMPTINESS = "emptiness"


@dataclass(frozen=True, slots=True)
class Emptiness:
    """The emptiness method (see the module docstring)."""

    name = EMPTINESS
    reason = "Empty"
    budgeted = True

    def compute(self, view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
        """Delete the empty nodes the budgets allow, in one command."""
        now = view.inp.now
        empty: list[Candidate] = []
        for c in view.eligible():
            if c.pods or c.pool.disruption.consolidation_policy not in CONSOLIDATION_POLICIES:
                continue
            if c.pool.replicas is not None:
                note(why, c.name, STATIC)
                continue
            reason = waiting(c, now)
            if reason:
                note(why, c.name, f"empty, but {reason}")
                continue
            empty.append(c)
        # A zone-balanced NodePool's budget goes to its fullest zones' empty nodes first.
        kept = within_budget(
            fullest_first(view, ordered(empty)), view.quotas(self.reason), self.reason, why, view.blockers
        )
        zones = ZoneLoads.for_disruption(view.inp)
        if zones and kept:
            # Of a zone-balanced NodePool's empty nodes, only as many as keep its zones even.
            indexes, unbalanced = zones.deletable([c.node for c in kept])
            for i, reason in unbalanced.items():
                note(why, kept[i].name, f"empty, but deleting it {reason}")
            kept = [kept[i] for i in indexes]
        if not kept:
            return None
        savings = sum(c.price for c in kept)
        return Command(
            method=self.name,
            reason=self.reason,
            candidates=tuple(c.name for c in kept),
            replacements=(),
            savings=savings,
            detail=f"delete {len(kept)} empty node(s), {names(c.describe() for c in kept)}; saves ${savings:.4f}/h",
            pods=(),
        )

    def still_holds(self, command: Command, view: ClusterView, cache: DisruptionCache | None) -> str | None:
        """Stale when the shared re-check fails, or a candidate's NodePool no longer consolidates
        or its `consolidateAfter` has not passed (the pods re-check covers "no longer empty").
        """
        candidates, stale = recheck(command, view)
        stale = stale or still_settled(candidates, CONSOLIDATION_POLICIES, view.inp.now)
        if stale:
            return stale
        zones = ZoneLoads.for_disruption(view.inp, keep=frozenset(command.candidates))
        return zones.judge([c.node for c in candidates], ())[1] or None
