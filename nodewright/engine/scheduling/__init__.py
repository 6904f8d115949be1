"""Scheduling: where pending pods go, and which node claims to open for them. Pure.

`solve(SchedulingInput) -> SchedulingResult` is the one entry point; see `solver.py` for how it
works (its header says which file does what), `types.py` for its inputs and outputs, and
`cache.py` for the `SolverCache` a caller may keep between solves.
"""

from nodewright.engine.scheduling.budget import SolveDeadline
from nodewright.engine.scheduling.cache import SolverCache
from nodewright.engine.scheduling.solver import PORTFOLIO, Strategy, solve
from nodewright.engine.scheduling.types import (
    PlannedClaim,
    PoolCapacity,
    SchedulingInput,
    SchedulingResult,
)

__all__ = [
    "PORTFOLIO",
    "PlannedClaim",
    "PoolCapacity",
    "SchedulingInput",
    "SchedulingResult",
    "SolveDeadline",
    "SolverCache",
    "Strategy",
    "solve",
]
