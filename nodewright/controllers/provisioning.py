"""The provisioner: from pending pods to launched nodes, once, resumably.

Role: the imperative shell around `nodewright.engine.scheduling.solve`. One Lambda invocation
runs `Provisioner.run(deadline)`:

1. take the `provisioner` lease (a conditional write), so two invocations never act at once;
2. reconcile what earlier invocations left (`reconcile`): complete claims whose launch succeeded
   but whose record was not updated (a crash between CreateFleet and the write), give up claims
   that never launched, mark claims registered and initialized as their nodes come up, terminate
   claims whose node never registered, orphan instances and Node objects whose instance is gone;
3. loop until `margin` seconds before the deadline: wait for the pods that need capacity to
   change (the cluster's watch wakes the loop; nothing is re-read while nothing changes), batch
   them (a pass starts after `batch_idle` seconds without a new pod, or `batch_max` after the
   first, or, once the batch is `batch_idle` old, at a check, once a `poll`, that grew it by less
   than `batch_growth` of its size), solve, launch (`provision`).

Why batch, and why not always: waiting lets a burst (a Deployment scaled up, a Job started)
arrive whole, so it is packed onto few right-sized nodes rather than launched piecemeal. A steady
trickle of pods never leaves a `batch_idle` gap, so it would wait the full `batch_max` every
time, and gains nothing from it: each poll adds only a small share of the batch, and pods that
come later still fill the room left on claims already launched (they are nominated onto them).
So a batch that has stopped growing fast is passed on at once.

Every launch records the claim before CreateFleet and completes it after; the ClientToken derives
from the claim's name, so a retried launch cannot start a second instance. A capacity error
blocks the failed offerings for three minutes and re-plans the pods at once, so spot falls back
to on-demand within the same invocation.
"""

from __future__ import annotations

import functools
import hashlib
import math
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from nodewright.controllers.kubeusage import publish_api_usage
from nodewright.controllers.lease import InvocationLease
from nodewright.controllers.mirror import ClaimMirror
from nodewright.engine.buffer import buffer_pods, is_virtual
from nodewright.engine.disruption import template_hash
from nodewright.engine.disruption.types import DisruptionInput
from nodewright.engine.overlay import apply_overlays
from nodewright.engine.scheduling import (
    PlannedClaim,
    PoolCapacity,
    SchedulingInput,
    SchedulingResult,
    SolverCache,
    solve,
)
from nodewright.engine.scheduling.static import count_static, plan_static, shortfall
from nodewright.engine.scheduling.usage import pool_usage
from nodewright.model import labels as wk
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.command import CommandRecord
from nodewright.model.event import pod_failed_to_schedule, pod_nominated
from nodewright.model.instance import Instance
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.ports import (
    Clock,
    CloudProvider,
    Cluster,
    InsufficientCapacity,
    LaunchError,
    LaunchRequest,
    Observer,
    StateStore,
)

LEASE = "provisioner"
IN_FLIGHT = ("pending", "launched")


class Configuration(Protocol):
    """Where NodePools and EC2NodeClasses come from (the config table, CRDs, or fixed values)."""

    def load(self) -> tuple[list[NodePool], dict[str, EC2NodeClass]]:
        """The valid NodePools and the EC2NodeClasses by name."""
        ...

    def overlays(self) -> list[NodeOverlay]:
        """The valid NodeOverlays, as of the last `load()` (read with it, not again)."""
        ...

    def buffers(self) -> tuple[tuple[CapacityBuffer, ...], tuple[PodTemplate, ...]]:
        """The CapacityBuffers and the PodTemplates they may name, as of the last `load()`."""
        ...


class Catalog(Protocol):
    """Instance types with offerings and prices, as a NodeClass's kubelet settings shape them."""

    def instance_types(self, nodeclass: EC2NodeClass | None) -> Sequence[InstanceType]:
        """The types to plan with for NodePools of this NodeClass."""
        ...


@dataclass(frozen=True, slots=True)
class StaticConfiguration:
    """A Configuration that always returns the same documents (tests, the simulator, the CLI)."""

    nodepools: tuple[NodePool, ...]
    nodeclasses: Mapping[str, EC2NodeClass] = field(default_factory=dict)
    nodeoverlays: tuple[NodeOverlay, ...] = ()
    capacitybuffers: tuple[CapacityBuffer, ...] = ()
    podtemplates: tuple[PodTemplate, ...] = ()

    def load(self) -> tuple[list[NodePool], dict[str, EC2NodeClass]]:
        """The fixed documents."""
        return list(self.nodepools), dict(self.nodeclasses)

    def overlays(self) -> list[NodeOverlay]:
        """The fixed NodeOverlays."""
        return list(self.nodeoverlays)

    def buffers(self) -> tuple[tuple[CapacityBuffer, ...], tuple[PodTemplate, ...]]:
        """The fixed CapacityBuffers and PodTemplates."""
        return self.capacitybuffers, self.podtemplates


@dataclass(frozen=True, slots=True)
class ProvisionerOptions:
    """Timings of the loop and of housekeeping, in seconds (Karpenter's values by default)."""

    # While a batch is open its growth is checked this often; with nothing pending the loop only
    # wakes on a change (or polls this often when its `sleep` cannot be woken).
    poll: float = 1.0
    batch_idle: float = 1.0
    batch_max: float = 10.0
    # Once a batch is `batch_idle` old, a poll adding fewer pods than this share of it starts the
    # pass: pods trickling in rather than a burst still arriving (0: wait for an idle gap or
    # batch_max, as Karpenter does). A steady stream passes at about 3 s, a burst keeps waiting.
    batch_growth: float = 0.5
    deadline_margin: float = 10.0
    lease_ttl: float = 90.0
    # How often a run whose lease another invocation holds tries again (until its own deadline).
    lease_poll: float = 2.0
    registration_timeout: float = 15 * 60.0
    orphan_grace: float = 30.0
    resume_grace: float = 60.0
    capacity_error_ttl: float = 180.0
    max_replans: int = 3
    # Pods no NodePool can take now wait this long before a pass tries them again, so they
    # neither trigger a pass every second nor flood the log with the same reason.
    unschedulable_retry: float = 30.0
    # Pods a pass put on a registered node are kube-scheduler's to bind; they wait this long before
    # they start a pass again. Pods of a node being drained stay "pending" (they need a new home)
    # for the whole drain, which a PodDisruptionBudget can stretch to minutes: without the wait,
    # every second of it re-solved them to the same answer.
    placed_retry: float = 10.0
    # Economy: end the invocation once no pod has waited for this long (None: wait for pods until
    # the deadline). Lambda bills the waiting; a pod arriving after the early end waits for the
    # next scheduled invocation (up to a minute) instead of about a second.
    idle_exit: float | None = None
    # How often static NodePools and CapacityBuffers are checked again with no pending pods (each
    # pass checks them too): a burst kube-scheduler binds into buffer room starts no pass.
    static_poll: float = 15.0
    # A pod's nomination (to a claim or a node) is reported as a Kubernetes Event once the pod has
    # waited this long (0: every nomination, as Karpenter does). Read by watch, a function sends so
    # few requests that an Event per launched pod would be most of them (bench.api_load: 0.067 ->
    # 0.233 requests/s); a pod that waited is the one someone runs `kubectl describe` on.
    nominate_after: float = 30.0


@dataclass
class PassReport:
    """What one provisioning pass did."""

    pending: int = 0
    launched: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unschedulable: dict[str, str] = field(default_factory=dict)
    # Pods the pass put on registered nodes (kube-scheduler binds them; nothing was launched).
    placed: list[str] = field(default_factory=list)
    solve_seconds: float = 0.0


@dataclass
class RunReport:
    """What one invocation did (returned by the handler, so it shows in the Lambda console)."""

    lease: bool = True
    passes: int = 0
    launched: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    housekeeping: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary."""
        return {
            "lease": self.lease,
            "passes": self.passes,
            "launched": self.launched,
            "failed": self.failed,
            "housekeeping": self.housekeeping,
        }


class Batch:
    """The batching rules over the pods waiting for capacity (see the module docstring).

    `due(waiting, now)` is asked at every check (a change of the pending pods, or a time
    `next_check` named) and says whether a pass should start now: `batch_idle` seconds without a
    new pod, `batch_max` after the first, or, once the batch is `batch_idle` old, a `poll` period
    that grew it by less than `batch_growth` of its size. Growth is measured per `poll` period,
    not per check: a loop woken by every new pod would otherwise see one pod at a time and pass
    on a burst still arriving.
    """

    def __init__(self, options: ProvisionerOptions) -> None:
        self.options = options
        self.first_seen: float | None = None
        self.last_change = 0.0
        self._seen: frozenset[str] = frozenset()
        self._measured: frozenset[str] = frozenset()  # the batch at the last growth measure
        self._measured_at = 0.0

    @property
    def open(self) -> bool:
        """True while pods wait for a pass."""
        return self.first_seen is not None

    def due(self, waiting: frozenset[str], now: float) -> bool:
        """Take in the pods waiting now; True when a pass should start."""
        opts = self.options
        if not waiting:
            self.first_seen = None
            self._seen = waiting
            return False
        if self.first_seen is None:
            self.first_seen = self.last_change = self._measured_at = now
            self._measured = frozenset()
        elif not waiting <= self._seen:
            self.last_change = now
        self._seen = waiting
        if now - self.last_change >= opts.batch_idle or now - self.first_seen >= opts.batch_max:
            return True
        if now - self._measured_at < opts.poll:
            return False
        added = len(waiting - self._measured)
        self._measured, self._measured_at = waiting, now
        return now - self.first_seen >= opts.batch_idle and added < opts.batch_growth * (len(waiting) - added)

    def next_check(self, now: float) -> float:
        """When a rule may next come due with no change (infinity when no batch is open)."""
        if self.first_seen is None:
            return math.inf
        opts = self.options
        return min(self._measured_at + opts.poll, self.last_change + opts.batch_idle, self.first_seen + opts.batch_max)


class Provisioner:
    """Runs provisioning passes against the ports it is given (see the module docstring)."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        cloud: CloudProvider,
        store: StateStore,
        clock: Clock,
        config: Configuration,
        catalog: Catalog,
        observer: Observer,
        options: ProvisionerOptions = ProvisionerOptions(),
        sleep: Callable[[float], None] = time.sleep,
        wait: Callable[[float, Callable[[], bool]], None] | None = None,
        mirror: ClaimMirror | None = None,
    ) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.store = store
        self.clock = clock
        self.config = config
        self.catalog = catalog
        self.observer = observer
        self.options = options
        self.sleep = sleep
        # wait(seconds, woken): up to `seconds`, less once woken() holds (the cluster's watch,
        # the simulator's world). Without one the loop polls with `sleep`.
        self.wait = wait
        # Writes the claims into the cluster as NodeClaim objects after the records (None: not mirrored).
        self.mirror = mirror
        # What solves may reuse (prepared catalog views, bound pods' facts): kept by the warm
        # container with this controller, so a re-plan after a capacity error starts warm.
        self.solver_cache = SolverCache()
        # Whether the configuration last read had static NodePools or buffers (`keep_configured`).
        self._static = False
        self._buffer_problems: dict[str, str] = {}  # last logged, so each is logged once

    # -- the invocation ------------------------------------------------------------------------

    def run_for(self, remaining: float, invocation: str | None = None) -> RunReport:
        """`run` with the deadline `remaining` seconds from now by this controller's clock (what a
        Lambda handler knows: its context's remaining time).
        """
        return self.run(self.clock.now() + remaining, invocation)

    def run(self, deadline: float, invocation: str | None = None) -> RunReport:
        """Provision until `deadline - margin` (seconds since the epoch, by `clock`).

        `invocation` names this run in the lease (the Lambda request id); each run needs its own,
        or two concurrent runs would both hold the lease.
        """
        report = RunReport()
        opts = self.options
        holder = invocation or uuid.uuid4().hex
        lease = InvocationLease(self.store, self.clock, LEASE, holder, longest=opts.lease_ttl, deadline=deadline)
        # The invocation before this one still runs for a few seconds (the schedule overlaps
        # them), or died and holds the lease to its deadline: wait for it rather than leave pods
        # to the next minute.
        if not lease.acquire_within(deadline - opts.deadline_margin, opts.lease_poll, self.sleep):
            self.observer.decision("lease-busy", lease=LEASE)
            report.lease = False
            return report
        try:
            self.cluster.follow(deadline - self.clock.now())
            report.housekeeping = self.reconcile(self.cluster.snapshot())
            self.sync_mirror()
            # Buffers wait while real pods wait for their pass: those come first.
            waiting_real = bool({p.key for p in self.cluster.pending()} - self._handled())
            report.launched += self.keep_configured(buffers=not waiting_real).launched
            # Counted again every `static_poll` only when there are static pools or buffers.
            static_due = self.clock.now() + opts.static_poll if self._static else math.inf
            batch = Batch(opts)
            parked: dict[str, float] = {}
            end = deadline - opts.deadline_margin
            idle_since = self.clock.now()
            while (now := self.clock.now()) < end:
                # Read the version first: a change after it, even during this check, wakes the wait.
                version = self.cluster.version()
                parked = {pod: until for pod, until in parked.items() if until > now}
                waiting = frozenset(p.key for p in self.cluster.pending()) - parked.keys()
                if waiting:  # the claims are read only when something waits: most checks find nothing
                    waiting -= self._handled()
                if now >= static_due:
                    report.launched += self.keep_configured(buffers=not batch.open).launched
                    static_due = self.clock.now() + opts.static_poll if self._static else math.inf
                if not waiting and opts.idle_exit is not None and now - idle_since >= opts.idle_exit:
                    self.observer.decision("idle-exit", idle_seconds=round(now - idle_since, 3))
                    break
                if batch.due(waiting, now):
                    result = self.provision(self.cluster.snapshot())
                    result.launched += self.keep_configured().launched
                    parked.update(dict.fromkeys(result.unschedulable, self.clock.now() + opts.unschedulable_retry))
                    parked.update(dict.fromkeys(result.placed, self.clock.now() + opts.placed_retry))
                    report.passes += 1
                    report.launched += result.launched
                    report.failed.update(result.failed)
                    if result.launched:
                        self.sync_mirror()
                    batch = Batch(opts)
                    idle_since = self.clock.now()
                    lease.renew()
                    continue
                # Until something changes, or a batch rule or a parked pod's retry comes due.
                wake = min(end, batch.next_check(now), static_due, *parked.values())
                if opts.idle_exit is not None and not batch.open:
                    wake = min(wake, idle_since + opts.idle_exit)
                self._wait(max(0.0, wake - now), functools.partial(self._changed, version))
        finally:
            lease.release()
            publish_api_usage(self.cluster, self.observer)
        return report

    def sync_mirror(self) -> None:
        """Write the claim records into the cluster as NodeClaim objects (`controllers.mirror`), if mirrored."""
        if self.mirror is not None:
            self.mirror.sync(self._mirror_input)

    def _mirror_input(self) -> tuple[DisruptionInput, list[CommandRecord]]:
        nodepools, nodeclasses = self.config.load()
        commands = self.store.commands()
        inp = DisruptionInput(
            snapshot=self.cluster.snapshot(),
            claims=tuple(self.store.claims()),
            pools=pool_capacities(nodepools, nodeclasses, self.catalog),
            now=self.clock.now(),
            in_progress=frozenset(n for r in commands for n in r.candidates),
        )
        return inp, commands

    def _changed(self, since: int) -> bool:
        return self.cluster.version() != since

    def _wait(self, seconds: float, woken: Callable[[], bool]) -> None:
        if self.wait is not None:
            self.wait(seconds, woken)
        else:  # a sleep nothing can wake: poll
            self.sleep(min(seconds, self.options.poll))

    def _handled(self) -> frozenset[str]:
        """Pods that in-flight claims already hold: they wait for their node, not for a pass."""
        return frozenset(pod for claim in self.store.claims() if claim.state in IN_FLIGHT for pod in claim.pods)

    # -- one pass ------------------------------------------------------------------------------

    def provision(self, snapshot: ClusterSnapshot) -> PassReport:
        """Solve for the snapshot's pending pods and launch the claims; re-plan after capacity errors."""
        report = PassReport()
        pending = snapshot.pending()
        report.pending = len(pending)
        self.observer.metric("PendingPods", len(pending))
        if not pending:
            return report
        nodepools, nodeclasses = self.config.load()
        for _ in range(self.options.max_replans + 1):
            now = self.clock.now()
            claims = self.store.claims()
            inp = self._input(
                snapshot, pending=pending, nodepools=nodepools, nodeclasses=nodeclasses, claims=claims, now=now
            )
            started = time.perf_counter()
            result = solve(inp, cache=self.solver_cache)
            report.solve_seconds += time.perf_counter() - started
            self.observer.metric("SchedulingSeconds", time.perf_counter() - started, "Seconds")
            report.unschedulable = dict(result.unschedulable)
            report.placed = self._nominate(result, claims, {p.key: p.created_at for p in pending})
            for pod, reason in result.unschedulable.items():
                self.observer.decision("unschedulable", pod=pod, reason=reason)
                self.cluster.record(pod_failed_to_schedule(pod, reason), now)
            if not self._launch_all(result, nodepools, nodeclasses, inp, report):
                break
            # Capacity errors blocked some offerings: plan their pods again, now.
            pending = [p for p in pending if p.key not in self._handled()]
            if not pending:
                break
        self.observer.metric("ClusterHourlyCost", self._hourly_cost(), "None")
        return report

    def keep_configured(self, *, buffers: bool = True) -> PassReport:
        """Launch the capacity the configuration asks for without pending pods: what static
        NodePools are short of (`keep_static`), then room for CapacityBuffers (`keep_buffers`;
        with `buffers` False, not now: real pods wait for a pass, and come first).
        """
        report = PassReport()
        nodepools, nodeclasses = self.config.load()
        configured, _ = self.config.buffers()
        self._static = bool(configured) or any(p.replicas is not None for p in nodepools)
        if not self._static:
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
            inp = self._input(
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
            if not planned or not self._launch_all(
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
            inp = self._input(
                snapshot,
                pending=virtual.pods,
                nodepools=nodepools,
                nodeclasses=nodeclasses,
                claims=claims,
                now=self.clock.now(),
            )
            result = solve(inp, cache=self.solver_cache)
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
            if not planned or not self._launch_all(
                SchedulingResult(claims=planned), nodepools, nodeclasses, inp, report, reason="CapacityBuffer headroom"
            ):
                break
        # Each reason once per warm container while it holds: the check runs every static_poll.
        if problems != self._buffer_problems:
            for buffer, why in sorted(problems.items()):
                if self._buffer_problems.get(buffer) != why:
                    self.observer.decision("buffer-short", buffer=buffer, reason=why)
            self._buffer_problems = problems

    def launch_planned(self, planned: Sequence[PlannedClaim], names: Sequence[str], reason: str) -> PassReport:
        """Launch claims another controller planned (consolidation's replacements) through the same
        path as a pass: limits re-checked, claim recorded before CreateFleet under the given
        `names` (chosen and recorded by the caller first, so a crash cannot lose track of them),
        capacity errors blocked. No re-plan: a claim that fails is reported in `failed`.
        """
        report = PassReport()
        if not planned:
            return report
        nodepools, nodeclasses = self.config.load()
        now = self.clock.now()
        inp = self._input(
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
        self._launch_all(SchedulingResult(claims=real), nodepools, nodeclasses, inp, report, names=names, reason=reason)
        return report

    def _input(
        self,
        snapshot: ClusterSnapshot,
        *,
        pending: Sequence[Pod],
        nodepools: Sequence[NodePool],
        nodeclasses: Mapping[str, EC2NodeClass],
        claims: Sequence[NodeClaim],
        now: float,
    ) -> SchedulingInput:
        pools = pool_capacities(nodepools, nodeclasses, self.catalog, self.config.overlays(), self.observer)
        registered = {n.name for n in snapshot.nodes}
        # A node that registered during this invocation is already in the snapshot as a real Node;
        # its claim learns its node_name only at the next housekeeping. Counting it in flight too
        # would plan pods onto an empty phantom copy of the node, where they wait a whole minute.
        joined = _nodes_by_claim(snapshot.nodes)
        inflight = tuple(
            c
            for c in claims
            if c.state == "launched"
            and c.node_name not in registered
            and c.name not in joined
            and c.provider_id not in joined
        )
        # Pods an in-flight claim already holds are bound to it for this plan, not planned again.
        holder = {pod: c.node_name or c.name for c in inflight for pod in c.pods}
        # Every pod a claim in flight holds counts on that claim (its room and its topology), not
        # only this plan's pods: after a capacity error the re-plan's `pending` leaves out the pods
        # of the claims just launched; a consolidation replacement holds pods still bound to the
        # tainted candidate, which are not pending at all. Without them those claims look empty.
        leaving = {
            n.name for n in snapshot.nodes if n.deleting or any(t.key == wk.DISRUPTED_TAINT_KEY for t in n.taints)
        }
        held = tuple(
            replace(p, node_name=holder[p.key])
            for p in snapshot.pods
            if p.key in holder and (not p.node_name or p.node_name in leaving)
        )
        # Pods being placed anew (a draining node's) or held elsewhere count there, not where they
        # are: kube-scheduler will not see them on their old node once evicted.
        moving = {p.key for p in pending if p.node_name} | {p.key for p in held}
        return SchedulingInput(
            pods=tuple(p for p in pending if p.key not in holder),
            pools=pools,
            nodes=snapshot.nodes,
            bound_pods=tuple(p for p in snapshot.pods if p.node_name and p.key not in moving) + held,
            inflight=inflight,
            daemonsets=snapshot.daemonsets,
            blocked=self.store.blocked_offerings(now),
            used=pool_usage(
                snapshot.nodes, claims, {pc.nodepool.name: {t.name: t for t in pc.instance_types} for pc in pools}
            ),
            now=now,
        )

    def _launch_all(
        self,
        result: SchedulingResult,
        nodepools: Sequence[NodePool],
        nodeclasses: Mapping[str, EC2NodeClass],
        inp: SchedulingInput,
        report: PassReport,
        *,
        names: Sequence[str] = (),
        reason: str = "pending pods need capacity",
    ) -> bool:
        """Launch every planned claim; True when a capacity error asks for another plan."""
        pools = {p.name: p for p in nodepools}
        types = {t.name: t for pc in inp.pools for t in pc.instance_types}
        # This pass's fresh read of claims and blocked offerings, kept current as it launches: with
        # the lease held, this pass is the only writer, so no further reads are needed.
        used = dict(inp.used)
        blocked = set(inp.blocked)
        replan = False
        for index, planned in enumerate(result.claims):
            pool = pools[planned.nodepool]
            nodeclass = nodeclasses.get(pool.node_class_ref.name) or EC2NodeClass(pool.node_class_ref.name)
            claim = self._claim(planned, pool, self.clock.now(), name=names[index] if index < len(names) else "")
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
                used[pool.name] = used.get(pool.name, Resources()) + launched_type.capacity
            report.launched.append(claim.name)
        return replan

    def _nominate(self, result: SchedulingResult, claims: Sequence[NodeClaim], since: Mapping[str, float]) -> list[str]:
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
        self.store.save_claim(_launched(claim, instance, now))
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

    def _hourly_cost(self) -> float:
        return sum(c.price for c in self.store.claims() if c.state != "pending")

    # -- housekeeping --------------------------------------------------------------------------

    def reconcile(self, snapshot: ClusterSnapshot) -> dict[str, int]:
        """Bring claim records, instances and Node objects back in line (see the module docstring)."""
        now = self.clock.now()
        opts = self.options
        counts = {
            "resumed": 0,
            "abandoned": 0,
            "registered": 0,
            "initialized": 0,
            "timed_out": 0,
            "orphans": 0,
            "gone": 0,
            "stale_nodes": 0,
        }
        instances = self.cloud.instances()
        by_claim = {i.nodeclaim: i for i in instances if i.nodeclaim}
        nodes = _nodes_by_claim(snapshot.nodes)
        live_ids = {i.instance_id for i in instances if i.live}
        claims = self.store.claims()
        for record in claims:
            claim = record  # replaced below as the claim moves through its states
            instance = by_claim.get(claim.name)
            if claim.state == "pending":
                if instance is not None:  # launched, but the record was not completed
                    self.store.save_claim(_launched(claim, instance, now))
                    counts["resumed"] += 1
                elif now - claim.created_at > opts.resume_grace:
                    self.store.delete_claim(claim.name)
                    counts["abandoned"] += 1
                continue
            if instance is None or not instance.live:
                self.store.delete_claim(claim.name)
                counts["gone"] += 1
                self.observer.decision("claim-gone", nodeclaim=claim.name, instance_id=claim.instance_id)
                self.observer.metric("NodesTerminated", 1, nodepool=claim.nodepool)
                continue
            node = nodes.get(claim.name) or nodes.get(claim.provider_id)
            if claim.state == "launched":
                if node is not None:
                    claim = claim.with_changes(state="registered", node_name=node.name, registered_at=now)
                    self.store.save_claim(claim)
                    counts["registered"] += 1
                elif now - claim.launched_at > opts.registration_timeout:
                    self.cloud.terminate([claim.instance_id])
                    self.store.delete_claim(claim.name)
                    counts["timed_out"] += 1
                    self.observer.metric("LaunchFailures", 1, reason="RegistrationTimeout")
                    self.observer.decision("registration-timeout", nodeclaim=claim.name, instance_id=claim.instance_id)
                    continue
            if claim.state == "registered" and node is not None and _initialized(node, claim):
                self.store.save_claim(claim.with_changes(state="initialized", initialized_at=now))
                counts["initialized"] += 1
        known = {c.name for c in claims}
        orphans = [
            i.instance_id
            for i in instances
            if i.live and i.nodeclaim not in known and now - i.launched_at > opts.orphan_grace
        ]
        if orphans:
            self.cloud.terminate(orphans)
            counts["orphans"] = len(orphans)
            self.observer.decision("orphans-terminated", instance_ids=orphans)
        for node in snapshot.nodes:
            # Only nodes Nodewright launched: another autoscaler's instances are not in `live_ids`.
            if node.launched_by_nodewright and node.instance_id and node.instance_id not in live_ids:
                self.cluster.delete_node(node.name)
                counts["stale_nodes"] += 1
                self.observer.decision("stale-node-deleted", node=node.name, instance_id=node.instance_id)
        return counts


def pool_capacities(
    nodepools: Sequence[NodePool],
    nodeclasses: Mapping[str, EC2NodeClass],
    catalog: Catalog,
    overlays: Sequence[NodeOverlay] = (),
    observer: Observer | None = None,
) -> tuple[PoolCapacity, ...]:
    """Each NodePool with the instance types its EC2NodeClass's catalog offers, NodeOverlays
    applied (effective prices, extra capacity): what the provisioner, consolidation and `plan`
    decide with. An overlay refused for a same-weight conflict is reported to `observer`.
    """
    pools = tuple(
        PoolCapacity(pool, tuple(catalog.instance_types(nodeclasses.get(pool.node_class_ref.name))))
        for pool in nodepools
    )
    overlaid = apply_overlays(pools, overlays)
    if observer is not None:
        for name, why in sorted(overlaid.conflicts.items()):
            observer.decision("nodeoverlay-refused", overlay=name, reason=why)
    return overlaid.pools


def claim_name(nodepool: str, suffix: str | None = None) -> str:
    """A claim name: the NodePool's name and a unique suffix (also the instance's Name tag)."""
    return f"{nodepool[:40]}-{suffix or uuid.uuid4().hex[:10]}"


def _within_limits(pool: NodePool, planned: PlannedClaim, used: Resources) -> bool:
    """Re-check the pool's limits just before launching: what the pool uses now plus, pessimistically,
    the largest of the claim's options (the launch may get any of them).
    """
    if pool.limits is None:
        return True
    peak = Resources()
    for option in planned.options:
        peak = peak.maximum(option.capacity)
    total = used + peak
    return all(total[name] <= limit for name, limit in pool.limits.items())


def _launched(claim: NodeClaim, instance: Instance, now: float) -> NodeClaim:
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


def _nodes_by_claim(nodes: Sequence[Node]) -> dict[str, Node]:
    """Nodes keyed by their claim label and by their providerID."""
    out: dict[str, Node] = {}
    for node in nodes:
        if node.nodeclaim:
            out[node.nodeclaim] = node
        if node.provider_id:
            out[node.provider_id] = node
    return out


def _initialized(node: Node, claim: NodeClaim) -> bool:
    """Ready, and every startup taint the claim declared is gone."""
    startup = {(t.key, t.effect) for t in claim.startup_taints}
    return node.ready and not any((t.key, t.effect) in startup for t in node.taints)
