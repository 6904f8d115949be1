"""The binding audit: every plan the provisioner makes during a run, checked against kube-scheduler.

Role: count planned-but-unbindable pods on generated days (`bench.consolidation_suite`). While an
`audit_plans()` block runs, each `solve()` the provisioning controller calls is followed by
`binding.unbindable(inp, result)` (a small model of kube-scheduler's filters): a pod the plan
puts on a node kube-scheduler would never bind it to is counted, with the first few refusals
kept for the report. The plans themselves are unchanged; the audit only reads them.

The controller imports `solve` by name and takes no hook for it, so the audit swaps that name
for the block's duration (one process, one run at a time, as the suite's workers run them).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import nodewright.controllers.provisioning as provisioning
from nodewright.engine.scheduling import SchedulingInput, SchedulingResult
from nodewright.engine.scheduling.binding import Refusal, unbindable

KEPT_REFUSALS = 5
_SOLVE = "solve"  # the name the provisioning controller calls


@dataclass
class Audit:
    """What the audited plans showed: plans and placed pods checked, pods kube-scheduler refuses."""

    plans: int = 0
    pods_placed: int = 0
    unbindable: int = 0
    examples: list[Refusal] = field(default_factory=list)

    def check(self, inp: SchedulingInput, result: SchedulingResult) -> None:
        """Check one plan."""
        self.plans += 1
        self.pods_placed += sum(len(c.pods) for c in result.claims) + sum(len(v) for v in result.existing.values())
        refused = unbindable(inp, result)
        self.unbindable += len(refused)
        self.examples.extend(refused[: max(0, KEPT_REFUSALS - len(self.examples))])

    def figures(self) -> dict[str, Any]:
        """The row's figures."""
        return {
            "plans_checked": self.plans,
            "planned_unbindable": self.unbindable,
            "unbindable_examples": [f"{r.pod} on {r.node}: {r.reason}" for r in self.examples],
        }


@contextmanager
def audit_plans() -> Iterator[Audit]:
    """Check every plan the provisioning controller makes inside the block."""
    audit = Audit()
    real = getattr(provisioning, _SOLVE)

    def solve_and_check(inp: SchedulingInput, *args: Any, **kwargs: Any) -> SchedulingResult:
        result: SchedulingResult = real(inp, *args, **kwargs)
        audit.check(inp, result)
        return result

    setattr(provisioning, _SOLVE, solve_and_check)
    try:
        yield audit
    finally:
        setattr(provisioning, _SOLVE, real)
