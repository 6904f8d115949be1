"""Spot interruptions as EC2 delivers them: the scenario's `interruptions` choose running spot nodes
(from the seed) and put a rebalance recommendation, the interruption warning and, after the notice,
the termination on EventBridge (its rules route them to the interruption queue). The records of
each interrupted node (cordoned, drained, replaced, reclaimed) feed the summary's interruption block.
"""

from __future__ import annotations

import math
import random
from functools import partial

from nodewright.engine.interruption.rules import REBALANCE_RECOMMENDATION, SPOT_INTERRUPTION_WARNING
from nodewright.model import labels as wk
from nodewright.model.snapshot import reschedulable
from nodewright.ports import Clock
from nodewright.simulator.report.metrics import InterruptionRecord, Recorder
from nodewright.simulator.scenario import Interruption
from nodewright.simulator.standins.ec2 import SimulatedEc2
from nodewright.simulator.standins.kube import SimulatedCluster
from nodewright.simulator.standins.lambdas import EventLoop
from nodewright.simulator.world.feed import ChangeFeed, EvictionRefused, NodeCordoned, NodeGone, PodGone
from nodewright.simulator.world.signals import Ec2Signals

SPOT_RECLAIMED = "spot-reclaimed"


class SpotInterruptions:
    """Spot interruptions and what became of each interrupted node (module docstring).

    `rng` draws which nodes are interrupted; the world shares it with the node failures, as one
    seeded stream of draws in the order the scenario's events come.
    """

    def __init__(
        self,
        *,
        cluster: SimulatedCluster,
        recorder: Recorder,
        clock: Clock,
        loop: EventLoop,
        rng: random.Random,
        signals: Ec2Signals,
        ec2: SimulatedEc2,
        feed: ChangeFeed,
    ) -> None:
        self._cluster = cluster
        self._recorder = recorder
        self._clock = clock
        self._loop = loop
        self._rng = rng
        self._signals = signals
        self._ec2 = ec2
        self._forced: set[str] = set()  # nodes under a spot interruption warning
        self._watched: dict[str, InterruptionRecord] = {}  # interrupted nodes by name
        self._refused: dict[str, float] = {}  # pod -> when a PodDisruptionBudget last refused its eviction
        feed.subscribe(NodeCordoned, self._cordoned)
        feed.subscribe(PodGone, self._pod_gone)
        feed.subscribe(NodeGone, self._node_gone)
        feed.subscribe(EvictionRefused, self._eviction_refused)

    def interrupt(self, spec: Interruption, index: int) -> None:
        """The scenario's `interruptions[index]` strikes now: draw its nodes and schedule each
        one's signals and reclaim.
        """
        now = self._clock.now()
        candidates = sorted(
            (
                n
                for n in self._cluster.memory.nodes()
                if n.labels.get(wk.CAPACITY_TYPE) == "spot"
                and n.instance_id
                and n.instance_id not in self._recorder.interruptions
                and (spec.nodepool is None or n.nodepool == spec.nodepool)
                and (spec.zone is None or n.labels.get(wk.ZONE) == spec.zone)
            ),
            key=lambda n: n.name,
        )
        wanted = spec.count if spec.count is not None else math.ceil((spec.fraction or 0.0) * len(candidates))
        wanted = min(wanted, len(candidates))
        if wanted < (spec.count or 0):
            self._recorder.warnings.append(
                f"interruptions[{index}]: {spec.count} spot nodes asked for, {len(candidates)} running"
            )
        victims = self._rng.sample(candidates, wanted) if wanted else []
        for position, node in enumerate(victims):
            offset = spec.within * position / (wanted - 1) if wanted > 1 else 0.0
            first = now + offset
            warning = first + (spec.rebalance_lead if spec.rebalance else 0.0)
            record = InterruptionRecord(
                instance_id=node.instance_id,
                node=node.name,
                first_signal=first,
                warning_at=warning,
                reclaim_at=warning + spec.notice,
                rebalance_at=first if spec.rebalance else None,
            )
            self._recorder.interruptions[node.instance_id] = record
            self._watched[node.name] = record
            if spec.rebalance:
                self._loop.at(first, partial(self._rebalance, record))
            self._loop.at(warning, partial(self._warn, record))
            self._loop.at(warning + spec.notice, partial(self._reclaim, record))

    def forced(self, node: str) -> bool:
        """True when `node` is under a spot interruption warning (EC2 takes it, whatever budgets say)."""
        return node in self._forced

    def interrupted(self, node: str) -> bool:
        """True when `node` was chosen for a spot interruption."""
        return node in self._watched

    def held_by_budget(self, node: str, pod: str) -> bool:
        """True when `pod`, lost with interrupted `node`, had its eviction refused by a budget
        since the node's first signal (so it stayed until EC2 took the instance).
        """
        interrupted = self._watched.get(node)
        return interrupted is not None and self._refused.get(pod, -math.inf) >= interrupted.first_signal

    def _rebalance(self, record: InterruptionRecord) -> None:
        self._signals.put(REBALANCE_RECOMMENDATION, record.instance_id, {"instance-id": record.instance_id})

    def _warn(self, record: InterruptionRecord) -> None:
        self._forced.add(record.node)
        self._ec2.spot_requests.mark(record.instance_id, "terminate")  # as EC2 marks it with the warning
        self._signals.put(
            SPOT_INTERRUPTION_WARNING,
            record.instance_id,
            {"instance-id": record.instance_id, "instance-action": "terminate"},
        )

    def _reclaim(self, record: InterruptionRecord) -> None:
        instance = self._recorder.instances.get(record.instance_id)
        if instance is None or instance.terminated_at is not None:
            return
        if self._cluster.get_node(record.node) is not None:
            record.pods_at_reclaim = sum(1 for p in self._cluster.pods_on(record.node) if reschedulable(p))
        record.reclaimed = True
        self._ec2.reclaim([record.instance_id], SPOT_RECLAIMED)

    def _eviction_refused(self, change: EvictionRefused) -> None:
        self._refused[change.pod] = change.at

    def _cordoned(self, change: NodeCordoned) -> None:
        record = self._watched.get(change.node)
        if record is not None and record.cordoned_at is None and change.at >= record.first_signal:
            record.cordoned_at = change.at
            record.replacement_at = self._replacement_after(record.first_signal)

    def _pod_gone(self, change: PodGone) -> None:
        if change.node in self._watched:
            self._check_drained(change.node, change.at)

    def _check_drained(self, node: str, at: float) -> None:
        record = self._watched.get(node)
        if record is None or record.drained_at is not None or at < record.first_signal:
            return
        if record.replacement_at is None:
            record.replacement_at = self._replacement_after(record.first_signal)
        gone = self._cluster.get_node(node) is None or not any(reschedulable(p) for p in self._cluster.pods_on(node))
        if gone and not record.reclaimed:
            record.drained_at = at

    def _replacement_after(self, first: float) -> float | None:
        """The first provisioner invoke or CreateFleet at or after `first`."""
        requests = [t for t in (*self._recorder.replacement_requests, *self._recorder.launches) if t >= first]
        return min(requests) if requests else None

    def _node_gone(self, change: NodeGone) -> None:
        interrupted = self._watched.get(change.node)
        if interrupted is not None and interrupted.drained_at is None:
            self._check_drained(change.node, change.at)
