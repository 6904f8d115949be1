"""The world's audits: what the run counts against Nodewright, from the world's own records.

* PodDisruptionBudget and do-not-disrupt violations: pods evicted, or still on a node when it is
  deleted or its instance terminated, that no budget allowed to go (`audit_node`, `after_evict`).
  Lost pods (on a node when it went) are counted by `pods.py` from the change feed.
* NodePool limits exceeded by a launch (`InstanceLaunched` on the feed).
* CreateFleet choices against the cheapest override each call allowed (`FleetAnswered`), and
  consolidation replacements against the price they promised (`audit_replace`).
* Duplicate and orphan instances and claims after faults (`audit_claims`, `faults.audit_claims`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from nodewright.model import labels as wk
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from nodewright.model.snapshot import reschedulable
from nodewright.ports import Clock, Eviction
from nodewright.simulator.report.metrics import LaunchAudit, Recorder, ReplaceAudit, Violation
from nodewright.simulator.scenario import Scenario
from nodewright.simulator.standins.catalog import SimCatalog
from nodewright.simulator.standins.faults import Faults, audit_claims
from nodewright.simulator.standins.kube import SimulatedCluster
from nodewright.simulator.standins.mirrors import MirroredStateStore
from nodewright.simulator.world.feed import ChangeFeed, FleetAnswered, InstanceLaunched, InstancesTerminating
from nodewright.simulator.world.spot import SpotInterruptions


class Audits:
    """The audits (module docstring)."""

    def __init__(
        self,
        *,
        scenario: Scenario,
        clock: Clock,
        recorder: Recorder,
        cluster: SimulatedCluster,
        catalog: SimCatalog,
        faults: Faults,
        store: MirroredStateStore,
        spot: SpotInterruptions,
        feed: ChangeFeed,
    ) -> None:
        self._scenario = scenario
        self._clock = clock
        self._recorder = recorder
        self._cluster = cluster
        self._catalog = catalog
        self._faults = faults
        self._store = store
        self._spot = spot
        feed.subscribe(InstanceLaunched, self._launched)
        feed.subscribe(FleetAnswered, self._fleet)
        feed.subscribe(InstancesTerminating, self._terminating)

    def after_evict(self, pod: Pod, result: Eviction) -> None:
        """The cluster evicted `pod` (its hook): count consolidation moves and do-not-disrupt violations."""
        if result.outcome == "evicted" and self._consolidating(pod.node_name):
            self._recorder.consolidation_moves += 1
        if result.outcome == "evicted" and pod.do_not_disrupt and not self._spot.forced(pod.node_name):
            self._recorder.violations.append(
                Violation(self._elapsed(), "do-not-disrupt", pod.key, pod.node_name, "evicted")
            )

    def audit_claims(self, note: str = "") -> None:
        """Duplicate and orphan instances and claims (`faults.audit_claims`), into the faults block."""
        claims = self._store.claims()
        now = self._clock.now()
        self._faults.audit = audit_claims(
            self._recorder.instances, claims, now, at=now - self._scenario.start, note=note
        )

    def audit_node(self, node: str, how: str) -> None:
        """Pods about to go with `node`: count those no budget allowed to go, and do-not-disrupt ones."""
        if self._spot.forced(node):
            return
        with self._faults.quiet():  # the audit's own read, not the function's
            pods = [p for p in self._cluster.pods_on(node) if reschedulable(p)]
        if not pods:
            return
        at = self._elapsed()
        budgets = self._cluster.snapshot().pdbs
        allowed = {f"{b.namespace}/{b.name}": b.disruptions_allowed or 0 for b in budgets}
        for pod in pods:
            if pod.do_not_disrupt:
                self._recorder.violations.append(Violation(at, "do-not-disrupt", pod.key, node, how))
            for budget in budgets:
                if not budget.selects(pod):
                    continue
                key = f"{budget.namespace}/{budget.name}"
                if allowed[key] <= 0:
                    self._recorder.violations.append(Violation(at, "pdb", pod.key, node, how, key))
                else:
                    allowed[key] -= 1

    def audit_replace(self, decision: Mapping[str, Any]) -> None:
        """A consolidation command's replacements came up: price them from the world's own records
        (the nodes replaced by node name, the new ones by claim name) against the promise.
        """
        candidates = tuple(str(n) for n in decision.get("candidates") or ())
        claims = {str(c) for c in decision.get("replacements") or ()}
        by_node = {r.node: r for r in self._recorder.instances.values() if r.node}
        new = [r for r in self._recorder.instances.values() if r.nodeclaim in claims]
        replaced = sum(by_node[n].price if n in by_node else 0.0 for n in candidates)
        self._recorder.replaces.append(
            ReplaceAudit(
                at=self._elapsed(),
                command=str(decision.get("command", "")),
                candidates=candidates,
                replaced_price=replaced if all(n in by_node for n in candidates) else _number(decision.get("price")),
                promised_price=_number(decision.get("promised")),
                launched_types=tuple(sorted(r.instance_type for r in new)),
                launched_price=sum(r.price for r in new),
                rolled_back=decision.get("outcome") == "rolled-back",
            )
        )

    def on_consolidated_node(self, key: str) -> bool:
        """True when the pod is still bound to a node a consolidation command has tainted."""
        pod = self._cluster.memory.get_pod(key)
        return pod is not None and bool(pod.node_name) and self._consolidating(pod.node_name)

    def _launched(self, change: InstanceLaunched) -> None:
        self._check_limits(change.pool, change.nodeclass)

    def _check_limits(self, pool: NodePool | None, nodeclass: EC2NodeClass | None) -> None:
        if pool is None or pool.limits is None:
            return
        used = Resources()
        for record in self._recorder.instances.values():
            if record.nodepool == pool.name and record.terminated_at is None:
                found = self._catalog.find(record.instance_type, nodeclass)
                if found is not None:
                    used = used + found.capacity
                used = used + Resources({"nodes": 1000})  # limits.nodes counts nodes, static pool or not
        over = [name for name, limit in pool.limits.items() if used[name] > limit]
        if over:
            self._recorder.limit_violations.append(
                {"at": round(self._elapsed(), 3), "nodepool": pool.name, "resources": over}
            )

    def _fleet(self, change: FleetAnswered) -> None:
        """Audit each instance the fleet started against the cheapest override it allowed."""
        call = change.call
        if not call.launched or not call.allowed:
            return
        cheapest = min(call.allowed, key=lambda p: (p.unit_price, p.instance_type, p.zone))
        units = {(p.instance_type, p.zone): p.unit_price for p in call.allowed}
        at = self._elapsed()
        for instance in call.launched:
            self._recorder.fleet_launches.append(
                LaunchAudit(
                    at=at,
                    instance_id=instance.instance_id,
                    capacity_type=instance.capacity_type,
                    strategy=call.strategy,
                    instance_type=instance.instance_type,
                    zone=instance.zone,
                    price=units.get((instance.instance_type, instance.zone), math.inf),
                    cheapest_type=cheapest.instance_type,
                    cheapest_zone=cheapest.zone,
                    cheapest_price=cheapest.unit_price,
                )
            )

    def _terminating(self, change: InstancesTerminating) -> None:
        """A controller is terminating instances: audit what their nodes still hold (EC2's own
        terminations, a reason given, take the pods whatever budgets say).
        """
        if change.reason is not None:
            return
        for instance_id in change.instance_ids:
            record = self._recorder.instances.get(instance_id)
            if record is not None and record.node and record.terminated_at is None:
                self.audit_node(record.node, "instance terminated by a controller")

    def _consolidating(self, name: str) -> bool:
        """True when a consolidation command has tainted the node."""
        node = self._cluster.get_node(name) if name else None
        return node is not None and any(
            t.key == wk.DISRUPTED_TAINT_KEY and t.value == wk.DISRUPTED_CONSOLIDATION for t in node.taints
        )

    def _elapsed(self) -> float:
        return self._clock.now() - self._scenario.start


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
