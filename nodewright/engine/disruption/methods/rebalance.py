"""Zone rebalance: move a node's worth of a zone-balanced NodePool out of its fullest zone when
the NodePool is over its `nodewright.io/zone-balance` bound (`engine/zonebalance.py`). Beyond
Karpenter (#7311). Pure.

Provisioning pins each new claim where the bound holds, and consolidation never takes a
NodePool further past it; but pods tied to zones (a zone-keyed `DoNotSchedule` spread), a
standby buffer replaced whole, interruptions and drift-like replacements (which happen whatever
the zones) still leave it lopsided, and nothing brought it back: scale-in emptied the light zones
as often as the full ones. Tried after drift and DaemonSet overflow and before consolidation
(`methods/__init__.py`), this one takes, of the NodePool's nodes in its fullest zone, the first
(those with the fewest zone-tied pods first, then consolidation's order; past `consolidateAfter`,
within the "Drifted" budgets; PodDisruptionBudgets and do-not-disrupt hold it as any budgeted
move) whose pods all find a home on the other nodes or on new nodes pinned to the lighter zones
(`ZoneLoads.evens`: the NodePool comes out more even, no balanced NodePool more lopsided), for at
most REBALANCE_PREMIUM more an hour than the node costs; each new node's options are cut to what
keeps that. At most REBALANCE_TRIES nodes are tried (one solve each) a pass.

When no single node can leave (in a NodePool balanced by node count, the fullest zone's nodes
often hold nothing but pods a spread ties there, and a replacement for one comes back to that
zone), two of the zone's nodes may merge into fewer there (`merges`, `_merge`): the same pods on
one node instead of two lowers the zone's count whatever ties them. Pairs of the NodePool's nodes
in that zone, the cheapest first, are tried (at most MERGE_TRIES a pass, one or two solves each)
within the same premium over the pair's price and budgets that allow both: on the pair's
cheapest plan, and when that is as many nodes in the zone again, on one node that holds all its
pods (`Simulator.run(whole=True)`). Consolidation never makes such a move: it saves nothing (a
node of twice the size costs twice as much).
The move is the zone balance's own, so it is made whatever the consolidation policy (a
`WhenEmpty` NodePool's nodes too); `consolidateAfter: Never` or a "Drifted" budget of 0 stops it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations

from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.disruption.consolidation import EPSILON, option_price
from nodewright.engine.disruption.methods.drift import DRIFTED
from nodewright.engine.disruption.methods.shared import note, ordered, recheck, waiting, within_budget
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.types import Command, DisruptionInput
from nodewright.engine.scheduling import SchedulingResult
from nodewright.engine.zonebalance import ZoneLoads, tied
from nodewright.model import labels as wk

ZONE_REBALANCE = "zone-rebalance"
# Nodes tried (each one solve) per pass.
REBALANCE_TRIES = 8
# What the new nodes may cost above the node they replace, as a fraction of its price.
REBALANCE_PREMIUM = 0.05
# Pairs of a fullest zone's nodes tried a pass when no single node can move (each one solve, two
# when its cheapest plan does not even the zones out and it is planned again on one node).
MERGE_TRIES = 4


@dataclass(frozen=True, slots=True)
class ZoneRebalance:
    """The zone-rebalance method (see the module docstring)."""

    name = ZONE_REBALANCE
    # Drift's budgets: like a drifted node, a node in a zone its NodePool would not launch it in
    # now is no longer what the NodePool asks for.
    reason = DRIFTED
    budgeted = True

    def compute(self, view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
        """Move the first node of an over-bound NodePool's fullest zone that evens it out."""
        zones = ZoneLoads.for_disruption(view.inp)
        over = zones.over()
        if not over:
            return None
        now = view.inp.now
        found = [
            c
            for c in view.eligible()
            if c.pods
            and c.pool.name in over
            and c.pool.replicas is None
            and not waiting(c, now)
            and zones.in_fullest(c.node)
        ]
        quotas = view.quotas(self.reason)
        kept = within_budget(movable_first(found), quotas, self.reason, why)
        for c in kept[:REBALANCE_TRIES]:
            command, reason = _move([c], sim.run([c]), zones, view.inp)
            if command is not None:
                return command
            note(why, c.name, f"in NodePool {c.pool.name}'s fullest zone, but moving it {reason}")
        for pair in merges(found, quotas)[:MERGE_TRIES]:
            command, reason = _merge(pair, sim, zones, view.inp)
            if command is not None:
                return command
            for c, other in (pair, pair[::-1]):
                note(why, c.name, f"in NodePool {c.pool.name}'s fullest zone, but merged with {other.name} it {reason}")
        return None

    def still_holds(self, command: Command, view: ClusterView, cache: DisruptionCache | None) -> str | None:
        """Stale when the shared re-check fails, a candidate's `consolidateAfter` has not passed,
        or the move no longer evens the zones out within the premium with no more new nodes than
        planned.
        """
        candidates, stale = recheck(command, view)
        stale = stale or next((w for c in candidates if (w := waiting(c, view.inp.now))), None)
        if stale:
            return stale
        zones = ZoneLoads.for_disruption(view.inp, keep=frozenset(command.candidates))
        sim = Simulator(view, cache)
        if len(candidates) > 1:
            now, reason = _merge(candidates, sim, zones, view.inp)
        else:
            now, reason = _move(candidates, sim.run(candidates), zones, view.inp)
        if now is None:
            return f"no longer evens out the zones: {reason}"
        if len(now.replacements) > len(command.replacements):
            planned = len(command.replacements)
            return f"the pods now need {len(now.replacements)} new node(s), the command planned {planned}"
        return None


def movable_first(candidates: list[Candidate]) -> list[Candidate]:
    """`candidates` with those holding the fewest zone-tied pods (`tied`) first, in consolidation's
    order among equals. A tied pod (a DoNotSchedule zone spread above all) can seldom leave the
    fullest zone: its spread lets it go only where its own pods are fewest, mostly back to that
    zone, so a node full of them comes back there and evens nothing out; tried first, such nodes
    took every try of every pass (seed 7 of the feature days: the same four nodes, pass after
    pass), and the nodes whose pods could move were never looked at.
    """
    return sorted(ordered(candidates), key=lambda c: sum(1 for p in c.pods if tied(p)))


def merges(found: Sequence[Candidate], quotas: Mapping[str, int]) -> list[list[Candidate]]:
    """The pairs the merge tries (`_merge`): two nodes of one NodePool balanced by node count, in
    the same (fullest) zone, whose budgets allow two more disruptions; the cheapest pairs first
    (two small nodes fit one of their combined size most often).
    """
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for c in found:
        balance = c.pool.zone_balance
        if balance is not None and balance.by == "nodes" and quotas.get(c.pool.name, 0) >= 2:
            groups.setdefault((c.pool.name, c.node.labels.get(wk.ZONE, "")), []).append(c)
    pairs: list[list[Candidate]] = []
    for _, members in sorted(groups.items()):
        cheapest = sorted(members, key=lambda c: (c.price, c.name))
        pairs.extend(list(pair) for pair in combinations(cheapest, 2))
    return sorted(pairs, key=lambda pair: sum(c.price for c in pair))


def _merge(
    pair: Sequence[Candidate], sim: Simulator, zones: ZoneLoads, inp: DisruptionInput
) -> tuple[Command | None, str]:
    """The merge of `pair` on its cheapest plan, or, when that plan does not even the zones out
    (its pods' cheapest home is as many nodes in the same zone again), on one node that holds
    them all (`Simulator.run(whole=True)`), within the same premium; else None and why not.
    """
    command, reason = _move(pair, sim.run(pair), zones, inp)
    if command is not None:
        return command, ""
    whole, why = _move(pair, sim.run(pair, whole=True), zones, inp)
    return (whole, "") if whole is not None else (None, f"{reason}; on one node, it {why}")


def _move(
    cs: Sequence[Candidate], result: SchedulingResult, zones: ZoneLoads, inp: DisruptionInput
) -> tuple[Command | None, str]:
    """The command moving the nodes `cs` (one, or a pair to merge; their pods placed as `result`
    says), or None and why not.
    """
    if result.unschedulable:
        key, problem = next(iter(sorted(result.unschedulable.items())))
        return None, f"would leave pod {key} nowhere to go: {problem}"
    pinned, reason = zones.evens([c.node for c in cs], result.claims)
    if reason:
        return None, reason
    new = sum(r.price for r in pinned)
    was = sum(c.price for c in cs)
    limit = was * (1 + REBALANCE_PREMIUM)
    if new > limit + EPSILON:
        return None, f"would cost ${new:.4f}/h of new nodes against ${was:.4f}/h"
    # CreateFleet may launch any option: each new node's options are those that keep the move
    # within the premium whichever comes up (its share of the slack).
    slack = (limit - new) / max(1, len(pinned))
    replacements = tuple(
        replace(
            r,
            options=tuple(
                it
                for it in r.options
                if it is r.instance_type
                or (
                    (price := option_price(it, r.requirements, inp.blocked, r.offering.capacity_type)) is not None
                    and price <= r.price + slack + EPSILON
                )
            ),
        )
        for r in pinned
    )
    where = ", ".join(f"{r.instance_type.name} in {r.offering.zone}" for r in replacements) or "the other nodes"
    pool = cs[0].pool.name
    moved = " and ".join(c.describe() for c in cs)
    return Command(
        method=ZONE_REBALANCE,
        reason=DRIFTED,
        candidates=tuple(c.name for c in cs),
        replacements=replacements,
        savings=was - new,
        detail=(
            f"{'move' if len(cs) == 1 else 'merge'} {moved} out of NodePool {pool}'s fullest zone "
            f"({zones.describe_pool(pool)}) onto {where}; ${new:.4f}/h of new nodes"
        ),
        pods=tuple(sorted(p.key for c in cs for p in c.pods)),
    ), ""
