"""Disruption: which nodes to remove or replace, as commands. Pure.

`compute_commands(DisruptionInput) -> DisruptionResult` runs one pass (emptiness, expiration,
drift, consolidation: the first method that yields a command wins); `validate(command, fresh)`
re-checks a command against fresher state before the controller acts on it (both take the
`DisruptionCache` the caller keeps between passes, or none);
`allowed_disruptions` applies a NodePool's budgets. The methods are `methods/`, one object each.
See `engine.py` and `consolidation.py` for how it works.
"""

from nodewright.engine.disruption.budgets import allowed_disruptions
from nodewright.engine.disruption.candidates import eviction_cost
from nodewright.engine.disruption.engine import compute_commands, validate
from nodewright.engine.disruption.simulate import DisruptionCache
from nodewright.engine.disruption.types import (
    Command,
    DisruptionInput,
    DisruptionOptions,
    DisruptionResult,
)

__all__ = [
    "Command",
    "DisruptionCache",
    "DisruptionInput",
    "DisruptionOptions",
    "DisruptionResult",
    "allowed_disruptions",
    "compute_commands",
    "eviction_cost",
    "validate",
]
