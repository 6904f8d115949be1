"""The strategies a pass can fill claims with, and the portfolio small solves try. Pure.

`solve()` (solver.py) runs every strategy of PORTFOLIO on inputs up to PORTFOLIO_LIMIT pods and
keeps the plan that leaves the fewest pods unplaced, then costs least; larger inputs get one pass
of DEFAULT_STRATEGY. Each flag switches on one part of the pass: `emptiest_first` the claim order
in `fill.py`, `mix_shapes` `mix.py`, `lp_plan` `plan.py`.
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
    """

    emptiest_first: bool = False
    mix_shapes: bool = False
    lp_plan: bool = False


DEFAULT_STRATEGY = Strategy()
PORTFOLIO = (
    DEFAULT_STRATEGY,
    Strategy(emptiest_first=True),
    Strategy(mix_shapes=True),
    Strategy(mix_shapes=True, lp_plan=True),
)
# Up to this many pods, every strategy of the portfolio runs (each takes milliseconds there) and
# the best plan wins; above it one pass is what the latency budget allows.
PORTFOLIO_LIMIT = 5000
