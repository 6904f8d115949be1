"""The world's audits: what the run counts against Nodewright, from the world's own records.

* PodDisruptionBudget and do-not-disrupt violations: pods evicted, or still on a node when it is
  deleted or its instance terminated, that no budget allowed to go (`_audit_node`, `_after_evict`).
  Lost pods (on a node when it went) are counted by `world_changes.py` from the cluster's changes.
* NodePool limits exceeded by a launch (`_check_limits`).
* CreateFleet choices against the cheapest override each call allowed (`fleet`), and
  consolidation replacements against the price they promised (`_audit_replace`).
* Duplicate and orphan instances and claims after faults (`_audit_claims`, `faults.audit_claims`).
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
from nodewright.ports import Eviction
from nodewright.simulator.report.metrics import (
    LaunchAudit,
    ReplaceAudit,
    Violation,
)
from nodewright.simulator.standins.account import (
    FleetCall,
)
from nodewright.simulator.standins.faults import audit_claims
from nodewright.simulator.world.state import WorldState


class Audits(WorldState):
    """The audits (module docstring)."""

    def _before_evict(self, pod: Pod) -> None:
        return None

    def _after_evict(self, pod: Pod, result: Eviction) -> None:
        if result.outcome == "evicted" and self._consolidating(pod.node_name):
            self.recorder.consolidation_moves += 1
        if result.outcome == "evicted" and pod.do_not_disrupt and pod.node_name not in self._forced:
            self.recorder.violations.append(
                Violation(self.clock.now() - self.scenario.start, "do-not-disrupt", pod.key, pod.node_name, "evicted")
            )

    def _audit_claims(self, note: str = "") -> None:
        """Duplicate and orphan instances and claims (`faults.audit_claims`), into the faults block."""
        claims = self.store.claims() if self.store is not None else []
        now = self.clock.now()
        self.faults.audit = audit_claims(self.recorder.instances, claims, now, at=now - self.scenario.start, note=note)

    def _audit_node(self, node: str, how: str) -> None:
        """Pods about to go with `node`: count those no budget allowed to go, and do-not-disrupt ones."""
        if node in self._forced:
            return
        with self.faults.quiet():  # the audit's own read, not the function's
            pods = [p for p in self.cluster.pods_on(node) if reschedulable(p)]
        if not pods:
            return
        at = self.clock.now() - self.scenario.start
        budgets = self.cluster.snapshot().pdbs
        allowed = {f"{b.namespace}/{b.name}": b.disruptions_allowed or 0 for b in budgets}
        for pod in pods:
            if pod.do_not_disrupt:
                self.recorder.violations.append(Violation(at, "do-not-disrupt", pod.key, node, how))
            for budget in budgets:
                if not budget.selects(pod):
                    continue
                key = f"{budget.namespace}/{budget.name}"
                if allowed[key] <= 0:
                    self.recorder.violations.append(Violation(at, "pdb", pod.key, node, how, key))
                else:
                    allowed[key] -= 1

    def _check_limits(self, pool: NodePool | None, nodeclass: EC2NodeClass | None) -> None:
        if pool is None or pool.limits is None:
            return
        used = Resources()
        for record in self.recorder.instances.values():
            if record.nodepool == pool.name and record.terminated_at is None:
                found = self.catalog.find(record.instance_type, nodeclass)
                if found is not None:
                    used = used + found.capacity
                used = used + Resources({"nodes": 1000})  # limits.nodes counts nodes, static pool or not
        over = [name for name, limit in pool.limits.items() if used[name] > limit]
        if over:
            self.recorder.limit_violations.append(
                {"at": round(self.clock.now() - self.scenario.start, 3), "nodepool": pool.name, "resources": over}
            )

    def fleet(self, call: FleetCall) -> None:
        """Audit each instance the fleet started against the cheapest override it allowed."""
        if not call.launched or not call.allowed:
            return
        cheapest = min(call.allowed, key=lambda p: (p.unit_price, p.instance_type, p.zone))
        units = {(p.instance_type, p.zone): p.unit_price for p in call.allowed}
        at = self.clock.now() - self.scenario.start
        for instance in call.launched:
            self.recorder.fleet_launches.append(
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

    def _audit_replace(self, decision: Mapping[str, Any]) -> None:
        """A consolidation command's replacements came up: price them from the world's own records
        (the nodes replaced by node name, the new ones by claim name) against the promise.
        """
        candidates = tuple(str(n) for n in decision.get("candidates") or ())
        claims = {str(c) for c in decision.get("replacements") or ()}
        by_node = {r.node: r for r in self.recorder.instances.values() if r.node}
        new = [r for r in self.recorder.instances.values() if r.nodeclaim in claims]
        replaced = sum(by_node[n].price if n in by_node else 0.0 for n in candidates)
        self.recorder.replaces.append(
            ReplaceAudit(
                at=self.clock.now() - self.scenario.start,
                command=str(decision.get("command", "")),
                candidates=candidates,
                replaced_price=replaced if all(n in by_node for n in candidates) else _number(decision.get("price")),
                promised_price=_number(decision.get("promised")),
                launched_types=tuple(sorted(r.instance_type for r in new)),
                launched_price=sum(r.price for r in new),
                rolled_back=decision.get("outcome") == "rolled-back",
            )
        )

    def _on_consolidated_node(self, key: str) -> bool:
        """True when the pod is still bound to a node a consolidation command has tainted."""
        pod = self.cluster.get_pod(key)
        return pod is not None and bool(pod.node_name) and self._consolidating(pod.node_name)

    def _consolidating(self, name: str) -> bool:
        """True when a consolidation command has tainted the node."""
        node = self.cluster.get_node(name) if name else None
        return node is not None and any(
            t.key == wk.DISRUPTED_TAINT_KEY and t.value == wk.DISRUPTED_CONSOLIDATION for t in node.taints
        )


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
