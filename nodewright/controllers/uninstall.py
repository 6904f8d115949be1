"""Uninstalling: stop the functions, drain and terminate what Nodewright launched, report what is left.

Role: the core of `nodewright uninstall` (nodewright/cli/uninstall.py builds it from AWS and the
cluster). It works through the same ports the functions use, so it runs against EKS and EC2 or
against the in-memory cluster and fake cloud in tests.

Order, and why:
  1. `switch.stop()` first: the provisioner would otherwise launch capacity for the very pods the
     drain evicts, and the consolidator would start commands of its own (the CLI's switch sets
     each function's reserved concurrency to 0, which also refuses the interruption function's
     invocations of the provisioner, and disables the schedules).
  2. Every node Nodewright launched (`Node.launched_by_nodewright`) is cordoned; its pods (daemon
     pods and mirror pods aside) are evicted through the Eviction API, so PodDisruptionBudgets
     decide: a refused eviction is retried every `poll` seconds until `deadline`.
  3. A node with no pod left is deleted and its instance terminated. Instances tagged as
     Nodewright's with no node at all (never registered, or their node already gone) are
     terminated too. Another autoscaler's nodes and instances are never touched.
  4. What is left at the deadline (nodes still holding pods a budget protects) is reported and
     kept running: cutting through a PDB is the user's decision, taken with `kubectl drain
     --disable-eviction` or by raising the deadline.

  5. Only when nothing is left: the instance profiles Nodewright created for `nodeRoles` roles
     (`profiles`, only those named, pathed and tagged as its own for this cluster) are deleted,
     their roles taken out first. While a node is left, its instance may still use one.

Idempotent: running it again resumes (cordons and deletions already done are no-ops; terminating
a terminated instance is one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.ports import Clock, CloudProvider, Cluster, FunctionSwitch, NodeProfiles


@dataclass
class UninstallReport:
    """What the uninstall did and what is left."""

    stopped: list[str] = field(default_factory=list)
    deleted_nodes: list[str] = field(default_factory=list)
    terminated: list[str] = field(default_factory=list)
    evicted: int = 0
    left: dict[str, list[str]] = field(default_factory=dict)  # node -> pods still on it
    untouched: list[str] = field(default_factory=list)  # nodes Nodewright did not launch
    removed_profiles: list[str] = field(default_factory=list)  # instance profiles it had created

    @property
    def complete(self) -> bool:
        """True when nothing Nodewright launched is left."""
        return not self.left


def _drainable(pod: Pod) -> bool:
    """Pods a drain moves: not daemon pods (their DaemonSet puts them back) nor static mirror pods."""
    return not pod.daemon and not pod.mirror


class Uninstaller:
    """Drains and removes what Nodewright launched (see the module docstring)."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        cloud: CloudProvider,
        switch: FunctionSwitch,
        clock: Clock,
        sleep: Callable[[float], None],
        poll: float = 10.0,
        profiles: NodeProfiles | None = None,
    ) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.switch = switch
        self.clock = clock
        self.sleep = sleep
        self.poll = poll
        self.profiles = profiles

    def run(self, deadline_seconds: float) -> UninstallReport:
        """Uninstall within `deadline_seconds`; the report says what is left."""
        report = UninstallReport(stopped=self.switch.stop())
        deadline = self.clock.now() + deadline_seconds
        snapshot = self.cluster.snapshot()
        ours = [n for n in snapshot.nodes if n.launched_by_nodewright]
        report.untouched = sorted(n.name for n in snapshot.nodes if not n.launched_by_nodewright)
        for node in ours:
            if not node.unschedulable:
                self.cluster.cordon(node.name)
        pending = {n.name: n for n in ours}
        while True:
            for name in sorted(pending):
                left = self._evict_from(name, report)
                if not left:
                    self._remove(pending.pop(name), report)
            if not pending or self.clock.now() >= deadline:
                break
            self.sleep(min(self.poll, max(0.0, deadline - self.clock.now())))
        for name in sorted(pending):
            report.left[name] = sorted(p.key for p in self.cluster.pods_on(name) if _drainable(p))
        # Instances with no node: launched but never registered, or their node already deleted.
        known = {n.instance_id for n in pending.values()}
        strays = [i.instance_id for i in self.cloud.instances() if i.live and i.instance_id not in known]
        if strays:
            self.cloud.terminate(strays)
            report.terminated.extend(sorted(strays))
        if report.complete and self.profiles is not None:
            report.removed_profiles = self.profiles.remove()
        return report

    def _evict_from(self, name: str, report: UninstallReport) -> list[str]:
        """Ask to evict every drainable pod of `name`; the keys of those still there."""
        left = []
        for pod in self.cluster.pods_on(name):
            if not _drainable(pod):
                continue
            outcome = self.cluster.evict(pod).outcome
            if outcome == "evicted":
                report.evicted += 1
            elif outcome != "gone":
                left.append(pod.key)
        return left

    def _remove(self, node: Node, report: UninstallReport) -> None:
        self.cluster.delete_node(node.name)
        report.deleted_nodes.append(node.name)
        if node.instance_id:
            self.cloud.terminate([node.instance_id])
            report.terminated.append(node.instance_id)
