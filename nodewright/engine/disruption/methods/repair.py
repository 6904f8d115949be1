"""Repair: replace every node broken for its condition's toleration (NotReady, a node monitoring
agent's condition, an impaired EC2 status check) that the 20% guards allow, in one forceful
command, not budgeted, its replacements launched first. Which nodes are due and what the guards
are is `engine.disruption.repair`'s. Karpenter's node health controller. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.disruption.consolidation import names
from nodewright.engine.disruption.methods.shared import forceful_replacement
from nodewright.engine.disruption.repair import select
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.types import Command

REPAIR = "repair"


@dataclass(frozen=True, slots=True)
class Repair:
    """The repair method (see the module docstring). `reason` is the one Karpenter's metrics give
    a repair.
    """

    name = REPAIR
    reason = "Unhealthy"
    budgeted = False

    def compute(self, view: ClusterView, sim: Simulator, why: dict[str, str]) -> Command | None:
        """Replace every due node the guards allow, in one forceful command (replacements first)."""
        selection = select(view)
        for name, text in selection.held.items():
            why[name] = text
        if not selection.chosen:
            return None
        now = view.inp.now
        broken: list[Candidate] = [view.candidate(f.node) for f in selection.chosen]
        result = sim.run(broken)
        new = result.price_per_hour
        detail = (
            f"repair {len(broken)} node(s): "
            + "; ".join(f"{f.node}: {f.describe(now)}" for f in selection.chosen[:5])
            + f"; {len(result.claims)} replacement(s) at ${new:.4f}/h launch first "
            + f"({names(c.describe() for c in broken)})"
        )
        return forceful_replacement(self.name, self.reason, broken, result, detail)

    def still_holds(self, command: Command, view: ClusterView, cache: DisruptionCache | None) -> str | None:
        """None when every candidate is still due and the guards still allow it, else why not.
        Not the shared re-check: a broken node is repaired whatever its pods, nominations or
        budgets (it may be the one the other checks reject as not ready).
        """
        selection = select(view, frozenset(command.candidates))
        chosen = {f.node for f in selection.chosen}
        present = {n.name for n in view.inp.snapshot.nodes}
        for name in command.candidates:
            if name not in present:
                return f"candidate {name} is gone"
            if name not in chosen:
                return f"candidate {name}: " + selection.held.get(name, "is healthy again")
        return None
