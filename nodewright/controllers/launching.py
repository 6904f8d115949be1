"""The provisioner's launch path: from a plan to claims recorded, launched and nominated.

Role: `Launcher`, the component of `Provisioner` (`nodewright.controllers.provisioning`) that
every kind of launch goes through (a pass, static NodePools, CapacityBuffers) and the one the
consolidator holds for its replacements (`launch_planned`): the scheduling input built from the
snapshot and the claims in flight, the NodePool limits re-checked just before launching, the
claim recorded before CreateFleet and completed after (its ClientToken derives from its name, so
a retry cannot start a second instance), capacity errors blocking their offerings, and the
nominations of the pods planned onto claims and nodes (as claim records and Nominated Events).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from nodewright.controllers.configstatus import ConfigStatus
from nodewright.controllers.provisionoptions import (
    IN_FLIGHT,
    PassReport,
    ProvisionerOptions,
    claim_name,
    pool_capacities,
)
from nodewright.engine.buffer import is_virtual
from nodewright.engine.scheduling import (
    PlannedClaim,
    SchedulingInput,
    SchedulingResult,
    SolverCache,
)
from nodewright.engine.scheduling.inputs import provisioning_input
from nodewright.engine.scheduling.usage import charged
from nodewright.model import labels as wk
from nodewright.model.event import pod_failed_to_schedule, pod_nominated
from nodewright.model.instance import Instance
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool, template_hash
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.ports import (
    Catalog,
    Clock,
    CloudProvider,
    Cluster,
    Configuration,
    InsufficientCapacity,
    LaunchError,
    LaunchRecords,
    LaunchRequest,
    Observer,
)


class Launcher:
    """Claims from plan to launch (module docstring), against the ports it is given."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        cloud: CloudProvider,
        store: LaunchRecords,
        clock: Clock,
        config: Configuration,
        catalog: Catalog,
        observer: Observer,
        options: ProvisionerOptions = ProvisionerOptions(),  # noqa: B008 (frozen: a shared default is safe)
        config_status: ConfigStatus | None = None,
    ) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.store = store
        self.clock = clock
        self.config = config
        self.catalog = catalog
        self.observer = observer
        self.options = options
        # With configSource=crd (the provisioner only: one writer), NodeOverlay and CapacityBuffer status.
        self.config_status = config_status
        # What solves may reuse (prepared catalog views, bound pods' facts): kept by the warm
        # container with this launcher, so a re-plan after a capacity error starts warm.
        self.solver_cache = SolverCache()

    def scheduling_input(
        self,
        snapshot: ClusterSnapshot,
        *,
        pending: Sequence[Pod],
        nodepools: Sequence[NodePool],
        nodeclasses: Mapping[str, EC2NodeClass],
        claims: Sequence[NodeClaim],
        now: float,
    ) -> SchedulingInput:
        """The pass's scheduling input (`engine.scheduling.inputs.provisioning_input`'s rules) from
        the NodePools' capacities and the offerings the capacity-error cache blocks now.
        """
        overlays = self.config.overlays()
        status = self.config_status
        pools = pool_capacities(nodepools, nodeclasses, self.catalog, overlays, self.observer, status=status)
        blocked = self.store.blocked_offerings(now)
        return provisioning_input(snapshot, pending=pending, pools=pools, claims=claims, blocked=blocked, now=now)

    def launch_planned(
        self, planned: Sequence[PlannedClaim], names: Sequence[str], reason: str, *, all_or_nothing: bool = False
    ) -> PassReport:
        """Launch claims another controller planned (consolidation's replacements) through the same
        path as a pass: limits re-checked, claim recorded before CreateFleet under the given
        `names` (chosen and recorded by the caller first, so a crash cannot lose track of them),
        capacity errors blocked. No re-plan: a claim that fails is reported in `failed`. With
        `all_or_nothing` (a command that goes on only if every replacement came up), the claims
        after the first that fails are not launched; they are reported in `failed` too.
        """
        report = PassReport()
        if not planned:
            return report
        nodepools, nodeclasses = self.config.load()
        now = self.clock.now()
        inp = self.scheduling_input(
            self.cluster.snapshot(),
            pending=(),
            nodepools=nodepools,
            nodeclasses=nodeclasses,
            claims=self.store.claims(),
            now=now,
        )
        # A consolidation plan moves CapacityBuffers' virtual pods too (their room counts as used);
        # they are never recorded on a claim or named to the cluster, only planned afresh.
        real = tuple(replace(c, pods=tuple(p for p in c.pods if not is_virtual(p))) for c in planned)
        self.launch_all(
            SchedulingResult(claims=real),
            nodepools,
            nodeclasses,
            inp,
            report,
            names=names,
            reason=reason,
            all_or_nothing=all_or_nothing,
        )
        return report

    def launch_all(
        self,
        result: SchedulingResult,
        nodepools: Sequence[NodePool],
        nodeclasses: Mapping[str, EC2NodeClass],
        inp: SchedulingInput,
        report: PassReport,
        *,
        names: Sequence[str] = (),
        reason: str = "pending pods need capacity",
        mark: Callable[[NodeClaim], NodeClaim] | None = None,
        all_or_nothing: bool = False,
    ) -> bool:
        """Launch every planned claim; True when a capacity error asks for another plan. `mark`
        changes each claim before it is recorded (a standby instance's label and taint). With
        `all_or_nothing`, stop at the first claim that fails: the others are reported failed,
        unlaunched.
        """
        pools = {p.name: p for p in nodepools}
        types = {t.name: t for pc in inp.pools for t in pc.instance_types}
        # This pass's fresh read of claims and blocked offerings, kept current as it launches: with
        # the lease held, this pass is the only writer, so no further reads are needed.
        used = dict(inp.used)
        blocked = set(inp.blocked)
        replan = False
        for index, planned in enumerate(result.claims):
            if all_or_nothing and report.failed:
                # A later claim would launch only to be terminated again, and its launch would
                # see the offerings the failed one just blocked (a spot replacement coming up
                # on-demand, dearer than planned).
                name = names[index] if index < len(names) else f"replacement {index + 1}"
                report.failed[name] = "not launched: an earlier replacement failed"
                continue
            pool = pools[planned.nodepool]
            nodeclass = nodeclasses.get(pool.node_class_ref.name) or EC2NodeClass(pool.node_class_ref.name)
            claim = self._claim(planned, pool, self.clock.now(), name=names[index] if index < len(names) else "")
            if mark is not None:
                claim = mark(claim)
            if not _within_limits(pool, planned, used.get(pool.name, Resources())):
                report.failed[claim.name] = "limits"
                self.observer.decision("limit-reached", nodepool=pool.name, pods=len(planned.pods))
                for pod in planned.pods:
                    why = f"nodepool {pool.name}: limits reached"  # the solver's words: one series
                    self.cluster.record(pod_failed_to_schedule(pod.key, why), self.clock.now())
                continue
            if not self.store.create_claim(claim):  # the same pass cannot run twice; be safe anyway
                continue
            request = LaunchRequest(claim, pool, nodeclass, planned.options, frozenset(blocked))
            try:
                instance = self.cloud.launch(request)
            except InsufficientCapacity as error:
                until = self.clock.now() + self.options.capacity_error_ttl
                self.store.block_offerings(error.offerings, until)
                blocked.update(error.offerings)
                self.store.delete_claim(claim.name)
                report.failed[claim.name] = error.reason
                self.observer.metric("LaunchFailures", 1, reason="InsufficientCapacity")
                self.observer.decision(
                    "capacity-error", nodeclaim=claim.name, offerings=["/".join(o) for o in error.offerings]
                )
                replan = True
                continue
            except LaunchError as error:
                self.store.delete_claim(claim.name)
                report.failed[claim.name] = str(error)
                self.observer.metric("LaunchFailures", 1, reason="LaunchError")
                self.observer.decision("launch-failed", nodeclaim=claim.name, error=str(error))
                for pod in planned.pods:
                    why = f"launching nodeclaim {claim.name} failed: {error}"
                    self.cluster.record(pod_failed_to_schedule(pod.key, why), self.clock.now())
                continue
            self._record_launch(claim, instance, planned, reason)
            launched_type = types.get(instance.instance_type)
            if launched_type is not None:
                used[pool.name] = used.get(pool.name, Resources()) + charged(launched_type.capacity)
            report.launched.append(claim.name)
        return replan

    def nominate(self, result: SchedulingResult, claims: Sequence[NodeClaim], since: Mapping[str, float]) -> list[str]:
        """Record pods the plan put on in-flight claims, so later passes count them as handled;
        return the pods it put on registered nodes. `since`: when each pod was created.
        """
        now = self.clock.now()
        by_bin = {c.node_name or c.name: c for c in claims if c.state in IN_FLIGHT}
        placed: list[str] = []
        for name, pods in result.existing.items():
            claim = by_bin.get(name)
            if claim is None:
                placed.extend(pods)  # a registered node: kube-scheduler binds the pods there
                for pod in pods:
                    self._nominated(pod, since.get(pod, 0.0), now, node=name)
                continue
            for pod in pods:  # a repeat only counts in the pod's Event series
                self._nominated(pod, since.get(pod, 0.0), now, nodeclaim=claim.name, node=claim.node_name)
            added = tuple(p for p in pods if p not in claim.pods)
            if added:
                self.store.save_claim(claim.with_changes(pods=tuple(sorted((*claim.pods, *added)))))
                self.observer.decision("nominate", nodeclaim=claim.name, pods=list(added), at=now)
        return placed

    def _nominated(
        self, pod: str, since: float, now: float, *, nodeclaim: str = "", node: str = "", uid: str = ""
    ) -> None:
        """Report a nomination as a Nominated Event once the pod has waited `nominate_after`."""
        if now - since >= self.options.nominate_after:
            self.cluster.record(pod_nominated(pod, nodeclaim, node, uid), now)

    def _record_launch(self, claim: NodeClaim, instance: Instance, planned: PlannedClaim, reason: str) -> None:
        now = self.clock.now()
        self.store.save_claim(launched_claim(claim, instance, now))
        for pod in planned.pods:
            self._nominated(pod.key, pod.created_at, now, nodeclaim=claim.name, uid=pod.uid)
        self.observer.metric("NodesLaunched", 1, nodepool=claim.nodepool, capacity_type=instance.capacity_type)
        for pod in planned.pods:
            if pod.created_at:
                self.observer.metric("PendingToLaunchSeconds", now - pod.created_at, "Seconds")
        self.observer.decision(
            "launch",
            nodeclaim=claim.name,
            nodepool=claim.nodepool,
            pods=[p.key for p in planned.pods],
            instance_type_options=[t.name for t in planned.options],
            instance_type=instance.instance_type,
            capacity_type=instance.capacity_type,
            zone=instance.zone,
            price=instance.price or planned.price,
            instance_id=instance.instance_id,
            at=now,
            reason=reason,
        )

    def _claim(self, planned: PlannedClaim, pool: NodePool, now: float, *, name: str = "") -> NodeClaim:
        pods = tuple(sorted(p.key for p in planned.pods))
        # Unique per claim, never derived from the plan alone: the same pods planned again at the same
        # instant (a virtual clock, a retry after the first instance was interrupted) must not reuse
        # a ClientToken, or EC2 would hand back the old instance instead of launching a new one.
        digest = hashlib.sha256(f"{pool.name}|{now:.6f}|{','.join(pods)}|{uuid.uuid4().hex}".encode()).hexdigest()[:10]
        labels = {
            **planned.requirements.labels(),
            **pool.labels,
            wk.NODEPOOL: pool.name,
            wk.NW_NODEPOOL: pool.name,
        }
        name = name or claim_name(pool.name, digest)
        labels[wk.NW_NODECLAIM] = name
        return NodeClaim(
            name=name,
            nodepool=pool.name,
            node_class=pool.node_class_ref.name,
            requirements=planned.requirements,
            instance_type_options=tuple(t.name for t in planned.options),
            requests=planned.requests,
            pods=pods,
            labels=labels,
            taints=pool.taints,
            startup_taints=pool.startup_taints,
            state="pending",
            created_at=now,
            template_hash=template_hash(pool),
        )


def _within_limits(pool: NodePool, planned: PlannedClaim, used: Resources) -> bool:
    """Re-check the pool's limits just before launching: what the pool uses now plus, pessimistically,
    the largest of the claim's options (the launch may get any of them), and one node.
    """
    if pool.limits is None:
        return True
    peak = Resources()
    for option in planned.options:
        peak = peak.maximum(option.capacity)
    total = used + charged(peak)
    return all(total[name] <= limit for name, limit in pool.limits.items())


def launched_claim(claim: NodeClaim, instance: Instance, now: float) -> NodeClaim:
    return claim.with_changes(
        state="launched",
        instance_id=instance.instance_id,
        provider_id=instance.provider_id,
        instance_type=instance.instance_type,
        capacity_type=instance.capacity_type,
        zone=instance.zone,
        price=instance.price,
        launched_at=instance.launched_at or now,
        image_id=instance.image_id,
    )
