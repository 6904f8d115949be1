"""Karpenter v1.14's disruption, as a reference: which command a pass takes. Pure.

`Disruption(spot_to_spot=...)` answers the same questions as the engine's `compute_commands` and
`validate`, with the same values (`DisruptionInput` in, `DisruptionResult` and `Command` out), so
the consolidator's shell carries its commands out unchanged (taint, launch replacements, wait,
drain, terminate). What is Karpenter's here is the decision; docs/karpenter-reference.md maps each
rule to the source file it follows. Which nodes are candidates at all (initialized, not being
deleted, not nominated, no `do-not-disrupt`, PodDisruptionBudgets that allow the eviction) and
the NodePool budgets are read from the engine's `ClusterView` and `budgets.py`, which follow
Karpenter's rules (pkg/controllers/disruption/types.go, helpers.go; nodepool budgets).

Methods, in Karpenter's order; the first that yields a command wins:

1. expiration (nodeclaim/expiration): every node older than its NodePool's `expireAfter` is
   deleted, forcefully and outside the budgets; no replacement is launched first (its pods go
   pending and the provisioner places them, as Karpenter v1 does);
2. emptiness (emptiness.go): every empty node of a consolidating NodePool past `consolidateAfter`,
   within the "Empty" budgets, in one delete;
3. drift (drift.go): empty drifted nodes deleted together, else the first drifted node (by
   disruption cost) whose pods all schedule, replaced by whatever the scheduler opens;
4. multi-node consolidation (multinodeconsolidation.go): candidates of WhenEmptyOrUnderutilized and
   Balanced NodePools past `consolidateAfter`, by disruption cost ascending, cut by the
   "Underutilized" budgets and to 100; binary search for the largest prefix of at least 2 that can
   be deleted, or replaced by ONE node (filterOutSameType: when an option is one of the candidates'
   own types, only options cheaper than that candidate remain);
5. single-node consolidation (singlenodeconsolidation.go): the first candidate that can be deleted
   or replaced by one cheaper node.

A consolidation (`_consolidate`, consolidation.go computeConsolidation) is valid when every pod
schedules and at most one new claim opens; a replacement keeps only the instance types cheaper
than the candidates together, and none left is no move. When every candidate is spot and the
replacement may be spot, spot-to-spot applies: off unless `spot_to_spot` (Karpenter's feature gate
defaults off; Auto Mode turns it on); the replacement is spot; a single candidate needs at least 15
cheaper types and launches among the 15 cheapest. An on-demand candidate whose replacement may be
spot or on-demand is replaced by spot only (priced as spot, it must not fall back to dearer
on-demand). A `Balanced` NodePool's moves must also score at least 1/k (k = 2;
`engine.disruption.balance`, Karpenter's formula).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from nodewright.engine.disruption.balance import BALANCED, BALANCED_K, judge, pool_totals
from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.disruption.consolidation import CONSOLIDATION, UNDERUTILIZED
from nodewright.engine.disruption.methods import BY_NAME
from nodewright.engine.disruption.methods.drift import DRIFT, Drift
from nodewright.engine.disruption.methods.emptiness import EMPTINESS, Emptiness
from nodewright.engine.disruption.methods.expiration import EXPIRATION, Expiration
from nodewright.engine.disruption.methods.shared import drifted
from nodewright.engine.disruption.types import Command, DisruptionInput, DisruptionResult
from nodewright.model import labels as wk
from nodewright.model.expiry import expired as past_expire_after
from nodewright.model.instancetype import InstanceType, Offering
from nodewright.model.nodepool import CONSOLIDATION_POLICIES
from nodewright.model.requirements import Requirement, Requirements
from nodewright.reference.karpenter.simulation import Simulation

# consolidation.go: MinInstanceTypesForSpotToSpotConsolidation.
SPOT_TO_SPOT_MIN_TYPES = 15
# multinodeconsolidation.go: at most this many candidates enter the binary search.
MAX_MULTI_NODE_CANDIDATES = 100
UNDERUTILIZED_POLICIES = ("WhenEmptyOrUnderutilized", BALANCED)
EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class Disruption:
    """Karpenter's disruption decisions (see the module docstring). `spot_to_spot`: Karpenter's
    SpotToSpotConsolidation feature gate (off by default in Karpenter, on in EKS Auto Mode).
    """

    spot_to_spot: bool = False

    def compute_commands(self, inp: DisruptionInput, cache: object = None) -> DisruptionResult:
        """This pass's command (at most one) and why the other candidates are left alone.
        `cache` is accepted for the shell's signature and not used: each pass simulates afresh.
        """
        view = ClusterView.build(inp)
        pass_ = _Pass(view, Simulation(view), self.spot_to_spot)
        command = pass_.decide()
        chosen = set(command.candidates) if command is not None else set()
        rejected = {n: r for n, r in view.rejected.items() if n not in chosen}
        for c in view.candidates.values():
            if c.name in chosen:
                continue
            rejected[c.name] = c.soft_block or pass_.why.get(c.name) or "no Karpenter method took it this pass"
        return DisruptionResult(
            commands=(command,) if command is not None else (),
            rejected=dict(sorted(rejected.items())),
            eligible=sum(1 for c in view.candidates.values() if not c.soft_block),
            blockers={n: b for n, b in sorted(view.blockers.items()) if n in rejected},
        )

    def validate(self, command: Command, fresh: DisruptionInput, cache: object = None) -> str | None:
        """validation.go: after the 15 s wait, the candidates must still be candidates within the
        budgets, and a consolidation's decision must still hold: the same candidates deleted, or
        replaced by no more nodes at no higher price. None when valid, else why it is stale.
        """
        view = ClusterView.build(fresh, ignore_in_progress=frozenset(command.candidates))
        forceful = not command.budgeted
        found = []
        for name in command.candidates:
            c = view.candidates.get(name)
            if c is None or (c.soft_block and not forceful):
                return f"{name} is no longer a candidate: {view.rejected.get(name) or (c and c.soft_block)}"
            found.append(c)
        if tuple(sorted(p.key for c in found for p in c.pods)) != tuple(sorted(command.pods)):
            return "the pods on the candidates changed"
        if command.budgeted:
            quota = view.quotas(command.reason)
            for c in found:
                quota[c.pool.name] = quota.get(c.pool.name, 0) - 1
                if quota[c.pool.name] < 0:
                    return f"NodePool {c.pool.name}'s budgets no longer allow it"
        if command.method != CONSOLIDATION:
            return None
        again = _Pass(view, Simulation(view), self.spot_to_spot).consolidate(found)
        if again is None:
            return "the consolidation is no longer valid"
        if len(again.replacements) > len(command.replacements) or (
            command.replacements and again.replacement_price > command.replacement_price + EPSILON
        ):
            return "the consolidation now needs more, or dearer, replacements"
        return None


class _Pass:
    """One pass's methods over one view (see the module docstring)."""

    def __init__(self, view: ClusterView, sim: Simulation, spot_to_spot: bool) -> None:
        self.view = view
        self.sim = sim
        self.spot_to_spot = spot_to_spot
        self.why: dict[str, str] = {}
        self.totals = pool_totals(view)

    def decide(self) -> Command | None:
        for method in (self.expiration, self.emptiness, self.drift, self.multi_node, self.single_node):
            command = method()
            if command is not None:
                return command
        return None

    # -- the methods -------------------------------------------------------------------------------

    def expiration(self) -> Command | None:
        now = self.view.inp.now
        expired = []
        for c in self.view.eligible(forceful=True):
            if past_expire_after(c.pool, c.claim, now):
                expired.append(c)
        if not expired:
            return None
        return Command(
            method=EXPIRATION,
            reason=Expiration.reason,
            candidates=tuple(c.name for c in _ordered(expired)),
            replacements=(),
            savings=sum(c.price for c in expired),
            detail=f"{len(expired)} node(s) reached expireAfter: deleted, their pods go pending",
            budgeted=False,
            pods=tuple(sorted(p.key for c in expired for p in c.pods)),
        )

    def emptiness(self) -> Command | None:
        empty = [
            c
            for c in self.view.eligible()
            if not c.pods and c.pool.disruption.consolidation_policy in CONSOLIDATION_POLICIES and self._settled(c)
        ]
        kept = self._within_budget(_ordered(empty), Emptiness.reason)
        if not kept:
            return None
        return _delete(EMPTINESS, kept, f"delete {len(kept)} empty node(s)")

    def drift(self) -> Command | None:
        reasons = {}
        for c in self.view.eligible():
            reason = drifted(self.view, c)
            if reason is not None:
                reasons[c.name] = reason
        found = [c for c in self.view.eligible() if c.name in reasons]
        kept = self._within_budget(_ordered(found), Drift.reason)
        empty = [c for c in kept if not c.pods]
        if empty:
            return _delete(DRIFT, empty, f"delete {len(empty)} empty drifted node(s)")
        for c in kept:
            result = self.sim.run([c])
            if result.unschedulable:
                self.why[c.name] = f"drifted ({reasons[c.name]}), but its pods would not all schedule"
                continue
            new = sum(r.price for r in result.claims)
            return Command(
                method=DRIFT,
                reason=Drift.reason,
                candidates=(c.name,),
                replacements=result.claims,
                savings=c.price - new,
                detail=f"replace drifted {c.describe()} ({reasons[c.name]}) with {len(result.claims)} node(s)",
                pods=tuple(sorted(p.key for p in c.pods)),
            )
        return None

    def _consolidatable(self) -> list[Candidate]:
        out = []
        for c in self.view.eligible():
            if not c.pods:
                continue  # emptiness's, under the "Empty" budgets
            if c.pool.disruption.consolidation_policy not in UNDERUTILIZED_POLICIES:
                self.why[c.name] = f"NodePool {c.pool.name} consolidates only empty nodes"
                continue
            if self._settled(c):
                out.append(c)
        return self._within_budget(_ordered(out), UNDERUTILIZED)

    def multi_node(self) -> Command | None:
        candidates = self._consolidatable()[:MAX_MULTI_NODE_CANDIDATES]
        if len(candidates) < 2:
            return None
        # firstNConsolidationOption: the largest prefix of 2..N that consolidates.
        low, high = 1, len(candidates) - 1
        best: Command | None = None
        while low <= high:
            mid = (low + high) // 2
            command = self.consolidate(candidates[: mid + 1], multi=True)
            if command is not None:
                best, low = command, mid + 1
            else:
                high = mid - 1
        return best

    def single_node(self) -> Command | None:
        for c in self._consolidatable():
            command = self.consolidate([c])
            if command is not None:
                return command
        return None

    # -- one consolidation -------------------------------------------------------------------------

    def consolidate(self, candidates: Sequence[Candidate], *, multi: bool = False) -> Command | None:
        """computeConsolidation: delete, replace by one cheaper node, or None (see module doc)."""
        result = self.sim.run(candidates)
        names = ", ".join(c.name for c in candidates[:5])
        if result.unschedulable:
            for c in candidates:
                self.why.setdefault(c.name, "its pods would not all schedule elsewhere")
            return None
        total = sum(c.price for c in candidates)
        if not result.claims:
            return _delete(CONSOLIDATION, candidates, f"delete {len(candidates)} node(s) ({names})", self._worth)
        if len(result.claims) > 1:
            for c in candidates:
                self.why.setdefault(c.name, f"its pods need {len(result.claims)} new nodes")
            return None
        claim = result.claims[0]
        view = self.view
        options = [it for it in claim.options if _cheapest(it, claim.requirements, view) < total - EPSILON]
        spot_ok = _allows(claim.requirements, "spot")
        requirements = claim.requirements
        if spot_ok and all(c.capacity_type == "spot" for c in candidates):
            # computeSpotToSpotConsolidation: behind its feature gate; the replacement is spot.
            if not self.spot_to_spot:
                for c in candidates:
                    self.why.setdefault(c.name, "spot-to-spot consolidation is off (Karpenter's feature gate)")
                return None
            requirements = _only(requirements, "spot")
            options = [it for it in options if _cheapest(it, requirements, view) < total - EPSILON]
            if len(candidates) == 1:
                if len(options) < SPOT_TO_SPOT_MIN_TYPES:
                    self.why.setdefault(
                        candidates[0].name, f"spot-to-spot needs {SPOT_TO_SPOT_MIN_TYPES} cheaper types"
                    )
                    return None
                options = options[:SPOT_TO_SPOT_MIN_TYPES]
        elif spot_ok and _allows(requirements, "on-demand"):
            # On-demand to [on-demand, spot]: priced as spot, so only spot may launch (no dearer fallback).
            requirements = _only(requirements, "spot")
        if multi:
            options = _not_same_type(options, candidates, requirements, view)
        if not options:
            for c in candidates:
                self.why.setdefault(c.name, "no replacement type is cheaper")
            return None
        first = options[0]
        offering = min(
            (o for o in first.offerings if o.available and _offer_allowed(o, requirements)),
            key=lambda o: o.price,
            default=claim.offering,
        )
        new = replace(claim, requirements=requirements, options=tuple(options), offering=offering)
        savings = total - new.price
        if savings <= EPSILON:
            return None
        command = Command(
            method=CONSOLIDATION,
            reason=UNDERUTILIZED,
            candidates=tuple(c.name for c in candidates),
            replacements=(new,),
            savings=savings,
            detail=f"replace {len(candidates)} node(s) ({names}) with one {first.name}; saves ${savings:.4f}/h",
            pods=tuple(sorted(p.key for c in candidates for p in c.pods)),
        )
        return command if self._worth(candidates, new.price) else None

    # -- helpers -----------------------------------------------------------------------------------

    def _worth(self, candidates: Sequence[Candidate], new_price: float) -> bool:
        """Balanced NodePools' moves must score at least 1/k (balance.py)."""
        weighed = {c.pool.name: BALANCED_K for c in candidates if c.pool.disruption.consolidation_policy == BALANCED}
        if not weighed:
            return True
        unworthy = judge(candidates, new_price, self.totals, weighed)
        for c in candidates:
            if unworthy:
                self.why.setdefault(c.name, f"not worth the disruption (Balanced): {unworthy}")
        return not unworthy

    def _settled(self, c: Candidate) -> bool:
        after = c.pool.disruption.consolidate_after
        if after is None or self.view.inp.now - c.last_change < after:
            self.why.setdefault(c.name, "inside consolidateAfter")
            return False
        return True

    def _within_budget(self, candidates: Sequence[Candidate], reason: str) -> list[Candidate]:
        left = self.view.quotas(reason)
        kept = []
        for c in candidates:
            if left.get(c.pool.name, 0) > 0:
                left[c.pool.name] -= 1
                kept.append(c)
            else:
                self.why.setdefault(c.name, f"NodePool {c.pool.name}'s budgets allow no more {reason} now")
        return kept


def _ordered(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Disruption cost ascending (consolidation.go sortCandidates), then name."""
    return sorted(candidates, key=lambda c: (c.disruption_cost, c.name))


def _delete(
    method: str,
    candidates: Sequence[Candidate],
    what: str,
    worth: Callable[[Sequence[Candidate], float], bool] | None = None,
) -> Command | None:
    savings = sum(c.price for c in candidates)
    if worth is not None and not worth(candidates, 0.0):
        return None
    return Command(
        method=method,
        reason=BY_NAME[method].reason,
        candidates=tuple(c.name for c in candidates),
        replacements=(),
        savings=savings,
        detail=f"{what}; saves ${savings:.4f}/h",
        pods=tuple(sorted(p.key for c in candidates for p in c.pods)),
    )


def _not_same_type(
    options: Sequence[InstanceType], candidates: Sequence[Candidate], requirements: Requirements, view: ClusterView
) -> list[InstanceType]:
    """filterOutSameType: when a replacement option is one of the candidates' own types, only
    options cheaper than the cheapest such candidate remain (else deleting the others is the move).
    """
    own: dict[str, float] = {}
    for c in candidates:
        name = c.claim.instance_type
        own[name] = min(own.get(name, float("inf")), c.price)
    cap = min((own[it.name] for it in options if it.name in own), default=float("inf"))
    return [it for it in options if _cheapest(it, requirements, view) < cap - EPSILON]


def _only(requirements: Requirements, capacity_type: str) -> Requirements:
    return requirements.intersection(Requirements([Requirement.new(wk.CAPACITY_TYPE, "In", [capacity_type])]))


def _allows(requirements: Requirements, capacity_type: str) -> bool:
    req = requirements.get(wk.CAPACITY_TYPE)
    return req is None or req.has(capacity_type)


def _offer_allowed(offering: Offering, requirements: Requirements) -> bool:
    zone, ct = requirements.get(wk.ZONE), requirements.get(wk.CAPACITY_TYPE)
    return (zone is None or zone.has(offering.zone)) and (ct is None or ct.has(offering.capacity_type))


def _cheapest(it: InstanceType, requirements: Requirements, view: ClusterView) -> float:
    """The cheapest available, unblocked offering `requirements` allow (infinity: none)."""
    blocked = view.inp.blocked
    prices = [
        o.price
        for o in it.offerings
        if o.available and (o.capacity_type, it.name, o.zone) not in blocked and _offer_allowed(o, requirements)
    ]
    return min(prices, default=float("inf"))
