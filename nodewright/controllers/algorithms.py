"""Which algorithm decides: Nodewright's engine, or a reference (Karpenter, EKS Auto Mode).

Role: the shells (`Provisioner`, `Consolidator`) carry out decisions; this module names who makes
them. `Decisions` is what the consolidator asks (compute this pass's command; re-check it after
the validation wait); `decisions_for(mode)` and `schedule_for(mode)` map a consolidation mode to
its decision makers:

* `nodewright`: the engine's `solve` and `compute_commands`/`validate` (with many-to-many);
* `many-to-one`: the same engine with many-to-many off (an ablation: Nodewright's scheduler and
  consolidation limited to delete or N->1, which is not Karpenter);
* `karpenter`: the Karpenter v1.14 reference (`nodewright.reference.karpenter`): its scheduler
  for provisioning and disruption, its disruption methods, its 1 s / 10 s batching;
* `automode`: the Karpenter reference with Auto Mode's spot-to-spot consolidation on (its
  NodePool defaults and fee are applied by whoever runs it: `nodewright.reference.automode`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from nodewright.controllers.consolidationoptions import ConsolidatorOptions
from nodewright.controllers.provisionoptions import ProvisionerOptions
from nodewright.engine.disruption import Command, DisruptionCache, DisruptionInput, compute_commands, validate
from nodewright.engine.disruption.types import DisruptionResult
from nodewright.engine.scheduling.types import SchedulingInput, SchedulingResult
from nodewright.reference import automode
from nodewright.reference.karpenter.disruption import Disruption
from nodewright.reference.karpenter.launch import BATCH_IDLE_SECONDS, BATCH_MAX_SECONDS
from nodewright.reference.karpenter.scheduler import schedule as karpenter_schedule

NODEWRIGHT = "nodewright"
MANY_TO_ONE = "many-to-one"
KARPENTER = "karpenter"
AUTOMODE = "automode"
REFERENCES = (KARPENTER, AUTOMODE)

Schedule = Callable[[SchedulingInput], SchedulingResult]


class Decisions(Protocol):
    """Decides a disruption pass's command, and re-checks one against fresher state."""

    def compute_commands(self, inp: DisruptionInput, cache: DisruptionCache) -> DisruptionResult:
        """This pass's command (at most one) and why other nodes are left alone."""
        ...

    def validate(self, command: Command, fresh: DisruptionInput, cache: DisruptionCache) -> str | None:
        """None when `command` still holds against `fresh`, else why it is stale."""
        ...


class EngineDecisions:
    """Nodewright's own disruption engine (`nodewright.engine.disruption`)."""

    def compute_commands(self, inp: DisruptionInput, cache: DisruptionCache) -> DisruptionResult:
        """The engine's `compute_commands`."""
        return compute_commands(inp, cache)

    def validate(self, command: Command, fresh: DisruptionInput, cache: DisruptionCache) -> str | None:
        """The engine's `validate`."""
        return validate(command, fresh, cache)


def decisions_for(mode: str) -> Decisions:
    """Who decides disruption in `mode` (see the module docstring)."""
    if mode == KARPENTER:
        return Disruption(spot_to_spot=False)
    if mode == AUTOMODE:
        return automode.DISRUPTION
    return EngineDecisions()


def schedule_for(mode: str) -> Schedule | None:
    """The scheduler provisioning runs in `mode` (None: Nodewright's `solve`)."""
    return karpenter_schedule if mode in REFERENCES else None


def consolidator_options_for(mode: str, options: ConsolidatorOptions) -> ConsolidatorOptions:
    """`options` as a reference mode runs them: no roll-back of a consolidation whose replacements
    came up no cheaper (Karpenter keeps what its launch got), no deletion-cost steering.
    """
    return replace(options, roll_back_dearer=False, steer_deletion_cost=False) if mode in REFERENCES else options


def provisioner_options_for(mode: str, options: ProvisionerOptions) -> ProvisionerOptions:
    """`options` with a reference's batching in a reference mode: a pass 1 s after the last new
    pod, 10 s after the first at most, and no early start on slow growth (Karpenter's batcher).
    """
    if mode not in REFERENCES:
        return options
    return replace(options, batch_idle=BATCH_IDLE_SECONDS, batch_max=BATCH_MAX_SECONDS, batch_growth=0.0)
