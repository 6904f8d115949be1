"""Consolidation: remove underutilized nodes, or replace them with cheaper ones. Pure.

Theory of operation
-------------------
Every question is "if these candidates went away, where would their pods go?", answered by the
scheduling engine (`simulate.py`). A plan is acceptable (`evaluate`) when every pod finds a home,
it opens fewer new nodes than it removes, it costs less than the candidates (by more than the
stability guard: `min_savings` $/h and `min_savings_fraction` of the candidates' price), and, when
ONE spot node would be replaced by one spot node, that replacement keeps at least
`spot_to_spot_min_types` instance types cheaper than the candidate (Karpenter's rule: so the launch
does not walk down to the cheapest spot pool, the one most likely to be interrupted, one
replacement at a time). Every spot replacement of spot nodes launches among the cheapest that many
options only (Karpenter does so for one node; Nodewright for several too: a replacement that came
up as a dearer type among 60 options was the next single-node pass's candidate, its pods moved
twice). With `spot_to_spot` off (Karpenter's SpotToSpotConsolidation, off there by
default), spot candidates are never replaced by a spot node at all; they may still be deleted.
Each replacement's instance type options are cut to those strictly cheaper than its
share of what the candidates cost minus the guard, so whichever option CreateFleet launches the
move saves at least the guard (and a type as dear as the node it replaces is never an option); for
a move that removes several nodes, no option costs as much as a candidate of that type
(Karpenter's filterOutSameType: that candidate could hold every pod, so keeping it would move fewer
pods for as much); types whose replacement for a candidate came up no cheaper before (`refused`)
are left out.

The searches, on the candidates in order (most savings per disruption cost first), limited by the
NodePools' budgets and `max_candidates`:

1. *Multi-node* (Karpenter): binary search on N for the largest prefix of 2..N candidates that can
   be deleted or replaced by ONE cheaper node.
2. *Single-node* (Karpenter), only when 1. found nothing: the first candidate whose pods fit on
   the other nodes, or on one cheaper node. Candidates that cannot possibly qualify (no single
   instance type both cheaper and large enough, and not enough free room elsewhere) are skipped
   without a solve.
3. *Many-to-many* (beyond Karpenter, #5944; `options.many_to_many`): the same prefixes re-solved
   together onto the rest of the cluster plus M < N new nodes, by a binary search on N for the
   largest prefix that qualifies; the plan that saves the most wins (then the one touching the
   fewest nodes), and it replaces the result of 1./2. only when it is better by that measure.
   The same search also runs on the candidates in other orders (`methods.repacking_orders`:
   least loaded first, smallest first), each cut by the budgets on its own: Karpenter's order
   finds the nodes cheapest to disrupt, not the sets that re-pack best.

Bounds: at most `max_candidates` candidates, about log2(N) solves per binary search (one search
per order), N solves for single-node at worst (usually one), and a simulation cache shared with
the other methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from nodewright.engine.disruption.balance import BALANCED, BALANCED_K, PoolTotals, judge, pool_totals
from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.disruption.limits import PoolLimits, allowed, spills
from nodewright.engine.disruption.simulate import Simulator
from nodewright.engine.disruption.types import Command, DisruptionOptions
from nodewright.engine.scheduling import PlannedClaim, SchedulingResult
from nodewright.engine.zonebalance import ZoneLoads
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, OfferingKey
from nodewright.model.requirements import Requirements
from nodewright.model.resources import CPU, MEMORY

EPSILON = 1e-9
# The consolidation method's name and the budget reason its commands count against (the method
# object is `methods.consolidation.Consolidation`; the commands are built here).
CONSOLIDATION = "consolidation"
UNDERUTILIZED = "Underutilized"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A plan judged: the command it makes, or why it makes none."""

    command: Command | None
    why: str = ""


def evaluate(
    candidates: Sequence[Candidate],
    result: SchedulingResult,
    options: DisruptionOptions,
    blocked: frozenset[OfferingKey],
    *,
    many_to_many: bool,
    refused: frozenset[tuple[str, str]] = frozenset(),
    totals: Mapping[str, PoolTotals] | None = None,
    zones: ZoneLoads | None = None,
    limits: PoolLimits | None = None,
) -> Verdict:
    """Judge the plan for removing `candidates` (see the module docstring). `refused` holds
    (node, instance type) pairs whose replacement came up no cheaper before: that type is no
    option for a move that removes that node. With `totals` (every NodePool's $/h and
    disruption), moves out of `Balanced` NodePools, and many-to-many moves, must be worth their
    disruption (`balance.py`). With `zones` (the loads of zone-balanced NodePools), the
    replacements are pinned to zones and the move must keep those NodePools balanced
    (`engine/zonebalance.py`). With `limits` (the NodePools' limits and usage), a move in a
    NodePool at its limit may not send its pods to a lower-weight NodePool nor shrink what the
    NodePool holds per unit of the limit (`limits.py`).
    """
    if result.unschedulable:
        key, reason = next(iter(sorted(result.unschedulable.items())))
        return Verdict(None, f"pod {key} would have nowhere to go: {reason}")
    n = len(candidates)
    claims = result.claims
    if zones:
        claims, unbalanced = zones.judge([c.node for c in candidates], claims)
        if unbalanced:
            return Verdict(None, unbalanced)
    if len(claims) > 1 and not many_to_many:
        return Verdict(None, f"its pods need {len(claims)} new nodes; delete or replace-by-one finds nothing")
    if len(claims) > 1 and len(claims) >= n:  # one cheaper node may replace one; more must be fewer
        return Verdict(None, f"its pods need {len(claims)} new node(s) to replace {n}")
    total = sum(c.price for c in candidates)
    new = sum(c.price for c in claims)
    savings = total - new
    threshold = max(options.min_savings, options.min_savings_fraction * total)
    if savings <= EPSILON:
        return Verdict(None, f"no cheaper placement: ${new:.4f}/h of new nodes against ${total:.4f}/h")
    if savings < threshold:
        return Verdict(None, f"would save ${savings:.4f}/h, under the stability guard of ${threshold:.4f}/h")
    if totals is not None:
        weighed = _weighed(candidates, len(claims), options)
        unworthy = judge(candidates, new, totals, weighed) if weighed else ""
        if unworthy:
            return Verdict(None, f"not worth the disruption: {unworthy}")
    # What the replacements may cost above their planned type without the move losing its worth.
    # CreateFleet may launch any option (spot uses price-capacity-optimized, not the cheapest), so
    # each of the M replacements gets an M-th of the slack, and an option must cost strictly less
    # than its planned type plus that share: together, whichever options come up, they cost
    # strictly less than the candidates minus the guard. (A type at the candidate's own price is
    # therefore never an option: a replacement that could come up as dear as what it replaces is
    # a move that can repeat forever.)
    slack = (savings - threshold) / max(1, len(claims))
    names_removed = {c.name for c in candidates}
    banned = {it for node, it in refused if node in names_removed}
    # Karpenter's flexibility rule (consolidation.go, computeSpotToSpotConsolidation): one spot
    # node replaced by one spot node needs that many cheaper types, and every spot replacement of
    # spot nodes launches among the cheapest that many (for a single node, Karpenter's own rule;
    # for several, Nodewright's: the replacement is one spot node that the next single-node pass
    # judges by the same rule, so a replacement that came up dearer among 60 options was replaced
    # again, its pods moved twice).
    all_spot = all(c.capacity_type == "spot" for c in candidates)
    if not options.spot_to_spot and all_spot and any(claim.offering.capacity_type == "spot" for claim in claims):
        # Karpenter with SpotToSpotConsolidation off: spot candidates may only be deleted.
        return Verdict(None, "spot-to-spot consolidation is off (spotToSpotConsolidation): a spot replacement")
    bound = limits.bound(candidates) if limits is not None and claims else []
    replacements: list[PlannedClaim] = []
    for claim in claims:
        if bound and limits is not None and (why := spills(bound, claim, limits)):
            return Verdict(None, why)
        if claim.instance_type.name in banned:
            return Verdict(
                None, f"a replacement {claim.instance_type.name} for {names(sorted(names_removed))} came up no cheaper"
            )
        limit = claim.price + slack
        if n > 1:
            # Karpenter's filterOutSameType (multinodeconsolidation.go): an option that is the type
            # of a candidate (so that candidate could hold every pod) must cost less than that
            # candidate, or keeping it and removing the others would move fewer pods for as much.
            # The planned type stays (its saving is what the move was judged by); the cap is on
            # what else CreateFleet may launch.
            limit = min(limit, _same_type_cap(candidates, claim))
        capacity_type = claim.offering.capacity_type
        kept = tuple(  # in the claim's order: cheapest first
            it
            for it in claim.options
            if it is claim.instance_type
            or (
                it.name not in banned
                and (not bound or allowed(bound, claim.nodepool, it))
                and (price := option_price(it, claim.requirements, blocked, capacity_type)) is not None
                and price < limit - EPSILON
            )
        )
        if all_spot and claim.offering.capacity_type == "spot":
            if n == 1 and len(kept) < options.spot_to_spot_min_types:
                return Verdict(
                    None,
                    f"spot-to-spot replacement needs {options.spot_to_spot_min_types} cheaper instance types; "
                    f"only {len(kept)} are",
                )
            # Launch among the cheapest ones only, so whichever spot pool CreateFleet picks, the
            # next pass does not find a cheaper set of 15 again (Karpenter does the same).
            kept = kept[: options.spot_to_spot_min_types]
        replacements.append(replace(claim, options=kept))
    return Verdict(
        Command(
            method=CONSOLIDATION,
            reason=UNDERUTILIZED,
            candidates=tuple(c.name for c in candidates),
            replacements=tuple(replacements),
            savings=savings,
            detail=describe(candidates, replacements, savings),
            pods=tuple(sorted(p.key for c in candidates for p in c.pods)),
        )
    )


def _value(command: Command) -> tuple[float, int]:
    """How good a command is: the most savings, then the fewest nodes touched (removed or
    launched). Judging by savings per node touched instead cut the pods moved (6-hour diurnal
    run: 2,211 -> 793) but made many-to-many so rare that the 24-hour day cost what
    Karpenter-style consolidation costs; users who want less churn have the stability guard.
    """
    return command.savings, -(len(command.candidates) + len(command.replacements))


def describe(candidates: Sequence[Candidate], replacements: Sequence[PlannedClaim], savings: float) -> str:
    """A sentence saying what the command does and what it saves."""
    total = sum(c.price for c in candidates)
    removed = names(c.describe() for c in candidates)
    if not replacements:
        return (
            f"delete {len(candidates)} node(s), {removed}: their pods fit on the other nodes; "
            f"saves ${savings:.4f}/h of ${total:.4f}/h"
        )
    new = ", ".join(
        f"{r.instance_type.name} {r.offering.capacity_type} in {r.nodepool} (${r.price:.4f}/h)" for r in replacements
    )
    return (
        f"replace {len(candidates)} node(s), {removed}, with {len(replacements)}: {new}; "
        f"saves ${savings:.4f}/h of ${total:.4f}/h"
    )


def names(items: Iterable[str]) -> str:
    """At most five items, then how many more."""
    listed = list(items)
    head = ", ".join(listed[:5])
    return head if len(listed) <= 5 else f"{head} and {len(listed) - 5} more"


def _weighed(candidates: Sequence[Candidate], new_nodes: int, options: DisruptionOptions) -> dict[str, float]:
    """NodePool -> k for the pools whose savings must justify this move's disruption: `Balanced`
    pools always; every pool for a many-to-many move (N nodes replaced by two or more); every
    pool for any other move when `options.balance_threshold` is set.
    """
    out: dict[str, float] = {}
    for c in candidates:
        if c.pool.disruption.consolidation_policy == BALANCED:
            out[c.pool.name] = BALANCED_K
        elif new_nodes > 1 and options.many_to_many_threshold > 0:
            out[c.pool.name] = options.many_to_many_threshold
        elif options.balance_threshold > 0:
            out[c.pool.name] = options.balance_threshold
    return out


def _same_type_cap(candidates: Sequence[Candidate], claim: PlannedClaim) -> float:
    """The price of the cheapest candidate whose instance type is one of `claim`'s options
    (infinity: none is).
    """
    offered = {it.name for it in claim.options}
    return min((c.price for c in candidates if c.claim.instance_type in offered), default=float("inf"))


def option_price(
    it: InstanceType, requirements: Requirements, blocked: frozenset[OfferingKey], capacity_type: str
) -> float | None:
    """What launching `it` for a claim planned on `capacity_type` may cost: on-demand fleets take
    the cheapest allowed zone (`lowest-price`); spot fleets may take any allowed zone
    (`price-capacity-optimized` weighs pool depth), so the dearest counts. None: not launchable.
    """
    zone = requirements.get(wk.ZONE)
    prices = [
        o.price
        for o in it.offerings
        if o.available
        and o.capacity_type == capacity_type
        and (zone is None or zone.has(o.zone))
        and (o.capacity_type, it.name, o.zone) not in blocked
    ]
    if not prices:
        return None
    return max(prices) if capacity_type == "spot" else min(prices)


class Consolidator:
    """Runs the three searches of one pass over budget-limited, ordered candidates."""

    def __init__(self, view: ClusterView, simulator: Simulator) -> None:
        self.view = view
        self.sim = simulator
        self.options = view.inp.options
        self.blocked = view.inp.blocked
        self.why: dict[str, str] = {}
        self._room = simulator.free_room()
        self._free = (sum(c for c, _ in self._room.values()), sum(m for _, m in self._room.values()))
        self._cheapest = self._cheapest_types()
        self._totals = pool_totals(view)
        self._zones = ZoneLoads.for_disruption(view.inp)
        self._limits = PoolLimits(view.inp.pools, simulator.used)

    def run(self, candidates: Sequence[Candidate], others: Sequence[Sequence[Candidate]] = ()) -> Command | None:
        """The best command over `candidates` (already ordered and within budgets), or None;
        many-to-many also searches the `others` orders (each within budgets too).
        """
        found = self._multi(candidates)
        if found is None:
            found = self._single(candidates)
        if not self.options.many_to_many:
            return found
        searched: set[tuple[str, ...]] = set()
        for order in (candidates, *others):
            names = tuple(c.name for c in order)
            if len(order) < 2 or names in searched:
                continue
            searched.add(names)
            many = self._many(order)
            if many is not None and (found is None or _value(many) > _value(found)):
                found = many
        return found

    def _judge(self, prefix: Sequence[Candidate], *, many_to_many: bool) -> Verdict:
        return evaluate(
            prefix,
            self.sim.run(prefix, cheaper=True),
            self.options,
            self.blocked,
            many_to_many=many_to_many,
            refused=self.view.inp.no_cheaper,
            totals=self._totals,
            zones=self._zones,
            limits=self._limits,
        )

    def _search(self, candidates: Sequence[Candidate], *, many_to_many: bool) -> list[Command]:
        """Binary search on the prefix length (2..N) for the largest prefix that qualifies;
        every qualifying command seen, largest prefix last.
        """
        found: list[Command] = []
        lo, hi = 2, len(candidates)
        while lo <= hi:
            mid = (lo + hi) // 2
            verdict = self._judge(candidates[:mid], many_to_many=many_to_many)
            if verdict.command is not None:
                found.append(verdict.command)
                lo = mid + 1
            else:
                hi = mid - 1
        return found

    def _multi(self, candidates: Sequence[Candidate]) -> Command | None:
        found = self._search(candidates, many_to_many=False)
        return found[-1] if found else None

    def _many(self, candidates: Sequence[Candidate]) -> Command | None:
        found = self._search(candidates, many_to_many=True)
        # The full set is the many-to-many question par excellence; ask it even when the search
        # stopped short (qualifying is not monotone in N).
        whole = self._judge(candidates, many_to_many=True).command
        if whole is not None:
            found.append(whole)
        return max(found, key=_value, default=None)

    def _single(self, candidates: Sequence[Candidate]) -> Command | None:
        for candidate in candidates:
            hopeless = self._hopeless(candidate)
            if hopeless:
                self.why[candidate.name] = hopeless
                continue
            verdict = self._judge([candidate], many_to_many=False)
            if verdict.command is not None:
                return verdict.command
            self.why[candidate.name] = verdict.why
        return None

    # -- cheap pre-checks for single-node ----------------------------------------------------------

    def _cheapest_types(self) -> list[tuple[float, int, int]]:
        """(price, allocatable cpu, memory) of every type any NodePool offers, cheapest first."""
        out: list[tuple[float, int, int]] = []
        for pc in self.view.inp.pools:
            for it in pc.instance_types:
                offer = it.cheapest_offering()
                if offer is not None:
                    out.append((offer.price, it.allocatable[CPU], it.allocatable[MEMORY]))
        out.sort()
        return out

    def _hopeless(self, candidate: Candidate) -> str:
        """Why no solve can consolidate `candidate` ('' when one might)."""
        cpu = sum(p.requests[CPU] for p in candidate.pods)
        memory = sum(p.requests[MEMORY] for p in candidate.pods)
        free_cpu, free_memory = self._free
        # The candidate's own room is counted in the sums but will be gone.
        own_cpu, own_memory = self._room.get(candidate.name, (0, 0))
        if cpu <= free_cpu - own_cpu and memory <= free_memory - own_memory:
            return ""
        for price, type_cpu, type_memory in self._cheapest:
            if price >= candidate.price:
                break
            if type_cpu >= cpu and type_memory >= memory:
                return ""
        return "no room for its pods on the other nodes and no cheaper instance type that holds them"
