"""Draining a node through the Eviction API, one bounded step at a time (never a sleeping loop).

Role: `Drainer.step(node, ...)` reads the node's pods, asks `nodewright.engine.drain.plan_drain`
for the next tier, evicts it, and repeats while a tier empties at once (the in-memory cluster, or
pods that terminate instantly), for at most `max_rounds` rounds. It returns a DrainStep saying
whether the drain is done and, when it is not, how long to wait before the next step: the
caller carries the drain to a later invocation (a delayed SQS message) instead of sleeping.
A 429 (a PDB refuses now) backs off; 404/409 count as done; an eviction never repeats within a step.
Each evicted pod gets an `Evicted` Event naming the drain (`by`: the command, the interruption).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nodewright.engine.drain import plan_drain
from nodewright.model.event import pod_evicted
from nodewright.model.taints import Taint
from nodewright.ports import Cluster, Observer

# Backoff before the next step, by attempt (seconds): Karpenter retries evictions from 100 ms up
# to 10 s; SQS delays are whole seconds, so the ladder starts at 1 s.
BACKOFF = (1.0, 2.0, 4.0, 8.0, 10.0)


@dataclass
class DrainStep:
    """What one step did: pods evicted, refused by a PDB, gone, kept in place; `done` when
    nothing is left to evict or to wait for; `retry_in` the suggested wait otherwise.
    """

    evicted: list[str] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)
    waiting: int = 0
    done: bool = False
    retry_in: float = 0.0


class Drainer:
    """Evicts a node's pods in Karpenter's tier order (see the module docstring)."""

    def __init__(self, cluster: Cluster, observer: Observer, *, max_rounds: int = 4) -> None:
        self.cluster = cluster
        self.observer = observer
        self.max_rounds = max_rounds

    def step(
        self, node: str, taint: Taint | None, *, forced: bool, attempt: int = 1, by: str = "", now: float = 0.0
    ) -> DrainStep:
        """Advance the drain of `node` as far as it goes without waiting; `by` names the drain in
        the Evicted Events of its pods (at `now`), none when empty.
        """
        result = DrainStep()
        tried: set[str] = set()
        for _ in range(self.max_rounds):
            plan = plan_drain(self.cluster.pods_on(node), taint, forced=forced)
            result.kept = dict(plan.kept)
            fresh = [p for p in plan.evict if p.key not in tried]
            if plan.done:
                result.done = True
                break
            if not fresh:
                result.waiting = plan.terminating + plan.later + len(plan.evict)
                break
            progress = True
            for pod in fresh:
                tried.add(pod.key)
                answer = self.cluster.evict(pod)
                if answer.outcome == "evicted":
                    result.evicted.append(pod.key)
                    if by:
                        self.cluster.record(pod_evicted(pod.key, by, pod.uid), now)
                elif answer.outcome == "gone":
                    result.gone.append(pod.key)
                else:
                    result.blocked[pod.key] = answer.message
                    progress = False
            if not progress:
                result.waiting = plan.later + len(result.blocked)
                break
        if result.evicted:
            self.observer.metric("PodsEvicted", len(result.evicted))
        if result.blocked:
            self.observer.metric("EvictionsBlockedByPDB", len(result.blocked))
        if not result.done:
            result.retry_in = BACKOFF[min(attempt, len(BACKOFF)) - 1]
        return result
