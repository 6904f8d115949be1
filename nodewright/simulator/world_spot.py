"""Spot interruptions as EC2 delivers them: the scenario's `interruptions` choose running spot nodes
(from the seed) and put a rebalance recommendation, the interruption warning and, after the notice,
the termination on EventBridge (its rules route them to the interruption queue). The records of
each interrupted node (cordoned, drained, replaced, reclaimed) feed the summary's interruption block.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any

from nodewright.engine.interruption.rules import (
    REBALANCE_RECOMMENDATION,
    SOURCE_EC2,
    SPOT_INTERRUPTION_WARNING,
)
from nodewright.model import labels as wk
from nodewright.model.snapshot import reschedulable
from nodewright.simulator.aws import (
    instance_arn,
)
from nodewright.simulator.metrics import (
    InterruptionRecord,
)
from nodewright.simulator.scenario import Interruption
from nodewright.simulator.world_state import WorldState


class SpotInterruptions(WorldState):
    """Spot interruptions and what became of each interrupted node (module docstring)."""

    def _interrupt(self, spec: Interruption, index: int) -> None:
        now = self.clock.now()
        candidates = sorted(
            (
                n
                for n in self.cluster.nodes()
                if n.labels.get(wk.CAPACITY_TYPE) == "spot"
                and n.instance_id
                and n.instance_id not in self.recorder.interruptions
                and (spec.nodepool is None or n.nodepool == spec.nodepool)
                and (spec.zone is None or n.labels.get(wk.ZONE) == spec.zone)
            ),
            key=lambda n: n.name,
        )
        wanted = spec.count if spec.count is not None else math.ceil((spec.fraction or 0.0) * len(candidates))
        wanted = min(wanted, len(candidates))
        if wanted < (spec.count or 0):
            self.recorder.warnings.append(
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
            self.recorder.interruptions[node.instance_id] = record
            self._watched[node.name] = record
            if spec.rebalance:
                self.loop.at(first, partial(self._rebalance, record))
            self.loop.at(warning, partial(self._warn, record))
            self.loop.at(warning + spec.notice, partial(self._reclaim, record))

    def _rebalance(self, record: InterruptionRecord) -> None:
        self._put(REBALANCE_RECOMMENDATION, record.instance_id, {"instance-id": record.instance_id})

    def _warn(self, record: InterruptionRecord) -> None:
        self._forced.add(record.node)
        self.ec2.spot_requests.mark(record.instance_id, "terminate")  # as EC2 marks it with the warning
        self._put(
            SPOT_INTERRUPTION_WARNING,
            record.instance_id,
            {"instance-id": record.instance_id, "instance-action": "terminate"},
        )

    def _reclaim(self, record: InterruptionRecord) -> None:
        instance = self.recorder.instances.get(record.instance_id)
        if instance is None or instance.terminated_at is not None:
            return
        if self.cluster.get_node(record.node) is not None:
            record.pods_at_reclaim = sum(1 for p in self.cluster.pods_on(record.node) if reschedulable(p))
        record.reclaimed = True
        self._reason = "spot-reclaimed"
        try:
            self.ec2.terminate_instances(InstanceIds=[record.instance_id])
        finally:
            self._reason = ""

    def _cordoned(self, node: str, at: float) -> None:
        record = self._watched.get(node)
        if record is not None and record.cordoned_at is None and at >= record.first_signal:
            record.cordoned_at = at
            record.replacement_at = self._replacement_after(record.first_signal)

    def _check_drained(self, node: str, at: float) -> None:
        record = self._watched.get(node)
        if record is None or record.drained_at is not None or at < record.first_signal:
            return
        if record.replacement_at is None:
            record.replacement_at = self._replacement_after(record.first_signal)
        gone = self.cluster.get_node(node) is None or not any(reschedulable(p) for p in self.cluster.pods_on(node))
        if gone and not record.reclaimed:
            record.drained_at = at

    def _replacement_after(self, first: float) -> float | None:
        """The first provisioner invoke or CreateFleet at or after `first`."""
        requests = [t for t in (*self.recorder.replacement_requests, *self.recorder.launches) if t >= first]
        return min(requests) if requests else None

    def _put(self, detail_type: str, instance_id: str, detail: Mapping[str, Any]) -> None:
        self.account.events.put_events(
            Entries=[
                {
                    "Time": datetime.fromtimestamp(self.clock.now(), UTC),
                    "Source": SOURCE_EC2,
                    "DetailType": detail_type,
                    "Detail": json.dumps(dict(detail)),
                    "Resources": [instance_arn(instance_id)],
                }
            ]
        )

    def _node_gone(self, name: str, at: float) -> None:
        interrupted = self._watched.get(name)
        if interrupted is not None and interrupted.drained_at is None:
            self._check_drained(name, at)
