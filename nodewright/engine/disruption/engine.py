"""`compute_commands` and `validate`: one disruption pass, and the re-check before acting. Pure.

A pass reads the input once (`ClusterView`), then tries the methods in order (`methods`: static
NodePools' scale down and replacement, repair, emptiness, expiration, drift, DaemonSet overflow,
zone rebalance, consolidation); the first that yields a command wins. Every node that is not part
of the command gets a reason in `rejected`. Nothing here acts: the controller
executes the command after `validate` found it still sound against state read again later.
"""

from __future__ import annotations

from nodewright.engine.disruption.candidates import ClusterView
from nodewright.engine.disruption.methods import BY_NAME, METHODS
from nodewright.engine.disruption.simulate import DisruptionCache, Simulator
from nodewright.engine.disruption.types import Command, DisruptionInput, DisruptionResult


def compute_commands(inp: DisruptionInput, cache: DisruptionCache | None = None) -> DisruptionResult:
    """Decide this pass's disruption command (at most one) and why other nodes are left alone.

    `cache`: what passes may reuse (`DisruptionCache`; the caller keeps it, or none for a fresh one).
    """
    view = ClusterView.build(inp)
    sim = Simulator(view, cache)
    why: dict[str, str] = {}
    command: Command | None = None
    for m in METHODS:
        command = m.compute(view, sim, why)
        if command is not None:
            break
    chosen = set(command.candidates) if command is not None else set()
    # Repair takes nodes the shared checks reject (not ready): say why they stay, or drop them.
    rejected = {n: f"{r}; {why[n]}" if n in why else r for n, r in view.rejected.items() if n not in chosen}
    for c in view.candidates.values():
        if c.name in chosen:
            continue
        if c.soft_block:
            rejected[c.name] = c.soft_block
        elif c.name in why:
            rejected[c.name] = why[c.name]
        elif command is not None:
            rejected[c.name] = f"left for a later pass: this pass chose {command.method}"
        else:
            rejected[c.name] = (
                "no method found a command for it: not empty, expired or drifted, and no cheaper placement"
            )
    eligible = sum(1 for c in view.candidates.values() if not c.soft_block)
    return DisruptionResult(
        commands=(command,) if command is not None else (),
        rejected=dict(sorted(rejected.items())),
        eligible=eligible,
        blockers={n: b for n, b in sorted(view.blockers.items()) if n in rejected},
    )


def validate(command: Command, fresh: DisruptionInput, cache: DisruptionCache | None = None) -> str | None:
    """Re-check `command` against `fresh` state: None when it still holds, else why it is stale.

    The command's own candidates are not counted as "in progress" (the controller may already
    have recorded the command). Its method re-checks it (`Method.still_holds`): stale, for every
    method but repair, when a candidate is gone or no longer eligible (deleted, nominated,
    do-not-disrupt added, a PodDisruptionBudget now refuses), the pods on the candidates changed
    or the budgets no longer allow it; and when the method's reason no longer holds (no longer
    empty, expired or drifted; for consolidation, the plan no longer saves as much: more or
    dearer replacements, or under the stability guard). A command of a method this engine does not
    know is stale (a record from another version: acting on it unchecked would be blind).
    """
    found = BY_NAME.get(command.method)
    if found is None:
        return f"unknown disruption method {command.method!r} (known: {', '.join(BY_NAME)})"
    view = ClusterView.build(fresh, ignore_in_progress=frozenset(command.candidates))
    return found.still_holds(command, view, cache)
