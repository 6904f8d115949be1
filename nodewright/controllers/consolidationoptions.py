"""What the consolidator is given and what it reports.

Role: the consolidator's (`nodewright.controllers.disruption`) timings and the engine's knobs
(`ConsolidatorOptions`), and what one invocation did (`ConsolidationReport`), apart from the
state machine that uses them so that the reference algorithms (`controllers.algorithms`) and the
assembly can name them without importing the consolidator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nodewright.engine.disruption import DisruptionOptions


@dataclass(frozen=True, slots=True)
class ConsolidatorOptions:
    """Timings in seconds, and the engine's knobs."""

    validation_delay: float = 15.0
    poll: float = 5.0
    deadline_margin: float = 10.0
    lease_ttl: float = 120.0
    replacement_timeout: float = 600.0
    # A budgeted drain (every method but expiration) that evicted nothing for this long is given
    # up: the candidates are untainted and serve again. A PodDisruptionBudget that refuses every
    # eviction (a workload with pods pending anywhere counts them as unavailable) would otherwise
    # keep cordoned, for as long as it lasts, the very capacity those pods wait for. A drain that
    # is slow but moving (one pod at a time under `maxUnavailable: 1`) is left to finish.
    drain_timeout: float = 300.0
    # How long the candidates of a drain given up that way are left to the forceful methods only.
    stalled_memory: float = 900.0
    # How long a candidate/type pair whose replacement came up no cheaper stays out of the options.
    no_cheaper_memory: float = 3600.0
    # Roll back a consolidation whose replacements came up no cheaper (off for the references:
    # Karpenter keeps whatever price-capacity-optimized launched).
    roll_back_dearer: bool = True
    # A repair's drain deadline, from its start: the broken node is then terminated whatever is
    # left on it (Karpenter deletes a broken node's pods at once, PodDisruptionBudgets or not;
    # here they get this long to leave through the Eviction API). Pods of an unreachable node
    # stay Terminating until the node object goes, so only the deadline ends such a drain.
    repair_drain_timeout: float = 120.0
    # Write pod deletion costs so scale-downs empty the nodes closest to empty (controllers.steering;
    # the deploy key deletionCostSteering). Off for the references: Karpenter does not.
    steer_deletion_cost: bool = False
    disruption: DisruptionOptions = field(default_factory=DisruptionOptions)


@dataclass
class ConsolidationReport:
    """What one invocation did (returned by the handler)."""

    lease: bool = True
    decided: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    completed: list[str] = field(default_factory=list)
    aborted: dict[str, str] = field(default_factory=dict)
    rolled_back: dict[str, str] = field(default_factory=dict)
    untainted: list[str] = field(default_factory=list)
    eligible: int = 0

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary."""
        return {
            "lease": self.lease,
            "decided": self.decided,
            "dropped": self.dropped,
            "completed": self.completed,
            "aborted": self.aborted,
            "rolled_back": self.rolled_back,
            "untainted": self.untainted,
            "eligible": self.eligible,
        }
