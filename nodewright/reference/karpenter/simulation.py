"""Where some nodes' pods would go if those nodes went away, by Karpenter's own scheduler. Pure.

Karpenter's disruption asks its provisioning scheduler (pkg/controllers/disruption/helpers.go,
SimulateScheduling): the candidates' reschedulable pods are scheduled onto the rest of the cluster
(nodes that are not candidates, not being deleted and not part of a running command, with the
pods bound to them) plus new claims from every NodePool. `Simulation.run` answers the same
question with `scheduler.schedule` on the engine's `SchedulingInput`
(`engine.scheduling.inputs.rescheduling_input` over `remaining_cluster`); answers are memoised for
the pass by the set of candidates.

Simplification: Karpenter also adds the pods pending at the time (so a move does not take room
they need); the reference leaves them out, as the provisioner places them within seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.scheduling.inputs import remaining_cluster, rescheduling_input
from nodewright.engine.scheduling.types import SchedulingResult
from nodewright.engine.scheduling.usage import pool_usage
from nodewright.reference.karpenter.pools import PreparedPools
from nodewright.reference.karpenter.scheduler import schedule


class Simulation:
    """Answers "where would these candidates' pods go?" for one disruption pass."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        inp = view.inp
        self.used = pool_usage(inp.snapshot.nodes, inp.claims, view.types)
        self._answers: dict[frozenset[str], SchedulingResult] = {}
        self._pools = PreparedPools()  # the NodePools' types, prepared once for the pass
        self.runs = 0

    def run(self, candidates: Sequence[Candidate]) -> SchedulingResult:
        """The plan for the candidates' pods on the other nodes plus new claims."""
        leaving = frozenset(c.name for c in candidates)
        hit = self._answers.get(leaving)
        if hit is not None:
            return hit
        inp = self.view.inp
        nodes, bound = remaining_cluster(inp.snapshot, leaving | inp.in_progress)
        scheduling = rescheduling_input(
            [p for c in candidates for p in c.pods],
            nodes=nodes,
            bound_pods=bound,
            pools=inp.pools,
            used=self.used,
            daemonsets=inp.snapshot.daemonsets,
            blocked=inp.blocked,
            now=inp.now,
        )
        self.runs += 1
        result = schedule(scheduling, self._pools)
        self._answers[leaving] = result
        return result
