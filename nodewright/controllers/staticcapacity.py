"""Capacity the configuration asks for without pending pods: static NodePools and CapacityBuffers.

Role: `StaticCapacity`, the component of `Provisioner` (`nodewright.controllers.provisioning`)
that launches what static NodePools are short of (`engine.scheduling.static`) and the room
CapacityBuffers ask for (`engine.buffer`'s virtual pods, solved as if pending after the real
ones), through the same launch path as a pass (the `Launcher` it is given).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from nodewright.controllers.configstatus import ConfigStatus
from nodewright.controllers.launching import Launcher
from nodewright.controllers.provisionoptions import PassReport, ProvisionerOptions
from nodewright.engine.buffer import buffer_pods
from nodewright.engine.scheduling import (
    PlannedClaim,
    SchedulingResult,
    solve,
)
from nodewright.engine.scheduling.static import count_static, plan_static, shortfall
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.ports import ClaimRecords, Clock, Cluster, Configuration, Observer


class StaticCapacity:
    """Static NodePools and CapacityBuffers (module docstring), launched through `launcher`."""

    def __init__(
        self,
        launcher: Launcher,
        *,
        cluster: Cluster,
        store: ClaimRecords,
        clock: Clock,
        config: Configuration,
        observer: Observer,
        options: ProvisionerOptions = ProvisionerOptions(),  # noqa: B008 (frozen: a shared default is safe)
        config_status: ConfigStatus | None = None,
    ) -> None:
        self.launcher = launcher
        self.cluster = cluster
        self.store = store
        self.clock = clock
        self.config = config
        self.observer = observer
        self.options = options
        # With configSource=crd (the provisioner only: one writer), CapacityBuffer status.
        self.config_status = config_status
        # Whether the configuration last read had static NodePools or buffers: the provisioner's
        # loop counts them again every `static_poll` only then.
        self.configured = False
        self._buffer_problems: dict[str, str] = {}  # last logged, so each is logged once

    def keep_configured(self, *, buffers: bool = True) -> PassReport:
        """Launch the capacity the configuration asks for without pending pods: what static
        NodePools are short of (`keep_static`), then room for CapacityBuffers (`keep_buffers`;
        with `buffers` False, not now: real pods wait for a pass, and come first).
        """
        report = PassReport()
        nodepools, nodeclasses = self.config.load()
        configured, _ = self.config.buffers()
        self.configured = bool(configured) or any(p.replicas is not None for p in nodepools)
        if not self.configured:
            return report
        self.keep_static(self.cluster.snapshot(), nodepools, nodeclasses, report)
        if configured and buffers:
            self.keep_buffers(self.cluster.snapshot(), nodepools, nodeclasses, report)
        return report

    def keep_static(
        self,
        snapshot: ClusterSnapshot,
        nodepools: Sequence[NodePool],
        nodeclasses: Mapping[str, EC2NodeClass],
        report: PassReport,
    ) -> None:
        """Launch what static NodePools are short of (`engine.scheduling.static`): one empty claim
        per missing node, through the same launch path as a pass; capacity errors re-plan at once.
        Scaling down is the consolidator's (a drain within budgets and PodDisruptionBudgets).
        """
        if not any(p.replicas is not None for p in nodepools):
            return
        for _ in range(self.options.max_replans + 1):
            claims = self.store.claims()
            inp = self.launcher.scheduling_input(
                snapshot, pending=(), nodepools=nodepools, nodeclasses=nodeclasses, claims=claims, now=self.clock.now()
            )
            planned: list[PlannedClaim] = []
            for pc in inp.pools:
                count = count_static(pc.nodepool, snapshot.nodes, claims)
                missing = shortfall(pc.nodepool, count)
                if not missing:
                    continue
                claims_for, why = plan_static(pc, missing, inp.daemonsets, inp.blocked)
                planned += claims_for
                self.observer.decision(
                    "static-scale-up",
                    nodepool=pc.nodepool.name,
                    replicas=pc.nodepool.replicas,
                    active=count.active,
                    launching=len(claims_for),
                    reason=why or f"{count.active} of {pc.nodepool.replicas} replicas",
                )
            reason = "static NodePool below its replicas"
            if not planned or not self.launcher.launch_all(
                SchedulingResult(claims=tuple(planned)), nodepools, nodeclasses, inp, report, reason=reason
            ):
                break

    def keep_buffers(
        self,
        snapshot: ClusterSnapshot,
        nodepools: Sequence[NodePool],
        nodeclasses: Mapping[str, EC2NodeClass],
        report: PassReport,
    ) -> None:
        """Solve for the CapacityBuffers' virtual pods (`engine.buffer`) as if pending, after the
        real pods (this runs after each pass), and launch the claims they need. The claims record no
        pods: virtual pods are planned afresh each time, onto whatever room exists then, claims in
        flight included, so real pods nominated there take that room first.
        """
        buffers, templates = self.config.buffers()
        virtual = buffer_pods(buffers, templates, snapshot.pods)
        problems = dict(virtual.problems)
        for _ in range(self.options.max_replans + 1 if virtual.pods else 0):
            claims = self.store.claims()
            inp = self.launcher.scheduling_input(
                snapshot,
                pending=virtual.pods,
                nodepools=nodepools,
                nodeclasses=nodeclasses,
                claims=claims,
                now=self.clock.now(),
            )
            result = solve(inp, cache=self.launcher.solver_cache)
            planned = tuple(replace(c, pods=()) for c in result.claims)
            owners = {p.key: f"{p.namespace}/{p.owner_name}" for p in virtual.pods}
            for key, why in sorted(result.unschedulable.items()):  # e.g. the NodePools' limits bind
                problems.setdefault(owners[key], f"a chunk fits no NodePool: {why}")
            if result.claims:
                self.observer.decision(
                    "buffer-scale-up",
                    claims=len(planned),
                    pods=sum(len(c.pods) for c in result.claims),
                    buffers=sorted({p.owner_name for c in result.claims for p in c.pods}),
                )
            if not planned or not self.launcher.launch_all(
                SchedulingResult(claims=planned), nodepools, nodeclasses, inp, report, reason="CapacityBuffer headroom"
            ):
                break
        # Each reason once per warm container while it holds: the check runs every static_poll.
        if problems != self._buffer_problems:
            for buffer, why in sorted(problems.items()):
                if self._buffer_problems.get(buffer) != why:
                    self.observer.decision("buffer-short", buffer=buffer, reason=why)
            self._buffer_problems = problems
        if self.config_status is not None:
            self.config_status.buffers(buffers, virtual, problems)
