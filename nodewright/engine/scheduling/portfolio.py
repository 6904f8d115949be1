"""The strategies a pass can fill claims with, and the portfolio small solves try. Pure.

`solve()` (solver.py) runs every strategy of PORTFOLIO on inputs up to PORTFOLIO_LIMIT pods and
keeps the plan that leaves the fewest pods unplaced, then costs least; larger inputs get one pass,
of LARGE_FORCED when hostname anti-affinity forces two nodes or more, else of DEFAULT_STRATEGY.
Each flag switches on one part of the pass: `emptiest_first` the claim order in `fill.py`,
`mix_shapes` `mix.py`, `lp_plan` `plan.py`, `other_order` the order of classes of equal size
(`classes.group`), `forced_first` where the pods that each need a node go.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Strategy:
    """How a pass fills claims.

    `emptiest_first` offers a class the claims with the fewest pods first (Karpenter's balancing,
    which wins when many claims are forced, e.g. by hostname anti-affinity) instead of the oldest
    first (first fit decreasing, which wins on large plans). `mix_shapes` packs unconstrained pods
    node by node, each time adding the pods whose shape best fills what the node has left, so
    cpu-heavy and memory-heavy pods share nodes instead of stranding memory or cpu. `lp_plan`
    (with `mix_shapes`) first opens the claims an assignment LP over those pods plans, each filled
    with the slice of pods the plan gives its type (`typemix.py`), so the instance-type mix fits
    the whole workload's shape instead of each claim's opening pods.

    Two flags are for pools whose limits bind (`solve()` runs them only when limits left pods
    out). `fill_limits`: a new claim aims at the largest type the remaining limits allow
    (Karpenter's choice), so fewer nodes' kubelet reserves and daemonsets eat the limit
    (`nodeclaim.choose_target`). `widen_claims`: pods that no claim holds and no new claim may take
    retarget a claim to another type within the limits that holds them too
    (`nodeclaim.widen_claim`), as a Karpenter claim accepts a pod while any of its types holds all
    its pods; with `emptiest_first` the pods then go one by one to the claim with the fewest
    (`fill._round_robin`), Karpenter's order. `smallest_first` takes the classes smallest first:
    a binding limit is a budget, and small pods first place the most pods in it.

    `other_order` places classes of equal size the least constrained first instead of the most
    constrained first (`classes.group`): first fit is sensitive to the order of equal items, and
    neither canonical order is the cheaper on every workload.

    `forced_first` places first the classes whose pods each need a node of their own (required
    hostname anti-affinity selecting themselves, `classes.node_each`), whatever their size, and
    aims each of their claims at the type that holds its share of the pool's remaining demand
    (that demand over the pods still to place that need a node: `nodeclaim.forced_share`). The
    other pods then fill those nodes first fit, and every claim with room is scanned
    (`fill._fill_roomy`), not only the oldest SCAN_LIMIT. Largest first, those pods came last and got
    a node each with nothing beside them (on Karpenter's diverse workload nine in ten of them, at
    under half the node's cpu).
    """

    emptiest_first: bool = False
    mix_shapes: bool = False
    lp_plan: bool = False
    fill_limits: bool = False
    widen_claims: bool = False
    smallest_first: bool = False
    other_order: bool = False
    forced_first: bool = False


DEFAULT_STRATEGY = Strategy()
PORTFOLIO = (
    DEFAULT_STRATEGY,
    Strategy(emptiest_first=True),
    Strategy(mix_shapes=True),
    Strategy(mix_shapes=True, lp_plan=True),
    Strategy(other_order=True),
    Strategy(forced_first=True),
)
# Above PORTFOLIO_LIMIT, the one pass for inputs with pods that each need a node of their own.
LARGE_FORCED = Strategy(forced_first=True)
# When limits leave pods out, these passes run too, and the plan placing the most pods, then the
# cheapest, wins (a pool's limits are a budget of capacity: big nodes waste less of it).
LIMITS_PORTFOLIO = (
    Strategy(fill_limits=True, widen_claims=True),
    Strategy(fill_limits=True, widen_claims=True, emptiest_first=True),
    Strategy(widen_claims=True),
    Strategy(widen_claims=True, emptiest_first=True),
    Strategy(fill_limits=True, widen_claims=True, emptiest_first=True, smallest_first=True),
)
# Up to this many pods, every strategy of the portfolio runs (each takes milliseconds there) and
# the best plan wins; above it one pass is what the latency budget allows.
PORTFOLIO_LIMIT = 5000
