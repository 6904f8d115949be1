"""Scheduling: where pending pods go, and which node claims to open for them. Pure.

`solve(SchedulingInput) -> SchedulingResult` is the one entry point; see `solver.py` for how it
works and `types.py` for its inputs and outputs.
"""

from nodewright.engine.scheduling.solver import PORTFOLIO, Strategy, solve
from nodewright.engine.scheduling.types import (
    PlannedClaim,
    PoolCapacity,
    SchedulingInput,
    SchedulingResult,
)

__all__ = ["PORTFOLIO", "PlannedClaim", "PoolCapacity", "SchedulingInput", "SchedulingResult", "Strategy", "solve"]
