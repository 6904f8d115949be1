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

Components: `Provisioner` holds the invocation loop and its pass, and is given the components it
runs, each owning its state (`controllers.assembly.build_provisioner` wires them): `Launcher`
(`launching.py`), the launch path every launch goes through (input, limits, claim records,
CreateFleet, capacity errors, nominations); `Housekeeping` (`housekeeping.py`), the
reconciliation of claims, instances and Nodes; `StaticCapacity` (`staticcapacity.py`), static
NodePools and CapacityBuffers; `Batch` (`batching.py`), the batching rules.
`provisionoptions.py` holds the options, reports, `pool_capacities` and `claim_name`.

Every launch records the claim before CreateFleet and completes it after; the ClientToken derives
from the claim's name, so a retried launch cannot start a second instance. A capacity error
blocks the failed offerings for three minutes and re-plans the pods at once, so spot falls back
to on-demand within the same invocation.
"""

from __future__ import annotations

import functools
import math
import time
import uuid
from collections.abc import Callable

from nodewright.controllers.batching import Batch
from nodewright.controllers.housekeeping import Housekeeping
from nodewright.controllers.kubeusage import publish_api_usage
from nodewright.controllers.launching import Launcher
from nodewright.controllers.lease import InvocationLease
from nodewright.controllers.mirror import ClaimMirror
from nodewright.controllers.provisionoptions import (
    IN_FLIGHT,
    LEASE,
    PassReport,
    ProvisionerOptions,
    RunReport,
    pool_capacities,
)
from nodewright.controllers.standby import StandbyCapacity
from nodewright.controllers.staticcapacity import StaticCapacity
from nodewright.engine.disruption.types import DisruptionInput
from nodewright.engine.scheduling import (
    SchedulingInput,
    SchedulingResult,
    SolveDeadline,
    solve,
)
from nodewright.engine.zonebalance import balance_result
from nodewright.model.command import CommandRecord
from nodewright.model.event import pod_failed_to_schedule
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.standby import STOPPED
from nodewright.ports import (
    Catalog,
    ClaimRecords,
    Clock,
    Cluster,
    CommandRecords,
    Configuration,
    Leases,
    Observer,
)


class Provisioner:
    """Runs provisioning passes with the components and ports it is given (module docstring)."""

    def __init__(
        self,
        launcher: Launcher,
        housekeeping: Housekeeping,
        static_capacity: StaticCapacity,
        batching: Batch,
        *,
        cluster: Cluster,
        claim_records: ClaimRecords,
        command_records: CommandRecords,
        leases: Leases,
        clock: Clock,
        config: Configuration,
        catalog: Catalog,
        observer: Observer,
        options: ProvisionerOptions = ProvisionerOptions(),  # noqa: B008 (frozen: a shared default is safe)
        sleep: Callable[[float], None] = time.sleep,
        wait: Callable[[float, Callable[[], bool]], None] | None = None,
        mirror: ClaimMirror | None = None,
        solve_clock: Callable[[], float] | None = None,
        schedule: Callable[[SchedulingInput], SchedulingResult] | None = None,
        standby: StandbyCapacity | None = None,
    ) -> None:
        self.launcher = launcher
        # Standby instances of CapacityBuffers (`controllers.standby`); None: not kept.
        self.standby = standby
        self.housekeeping = housekeeping
        self.static_capacity = static_capacity
        self.batching = batching
        self.cluster = cluster
        # The state table's concerns it uses, each its own port (one DynamoDB table in AWS).
        self.claim_records = claim_records
        self.command_records = command_records
        self.leases = leases
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
        # Who plans a pass: None for the engine's `solve`; a reference scheduler (`controllers.algorithms`).
        self.schedule = schedule
        # What a pass's solve budget is measured by: real elapsed time (None), whatever `clock`
        # is (a simulation's virtual clock stands still while the solver runs, so the simulator
        # gives a clock of its own). Looked up here, not at import, so a test can slow it.
        self.solve_clock = time.monotonic if solve_clock is None else solve_clock

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
        lease = InvocationLease(self.leases, self.clock, LEASE, holder, longest=opts.lease_ttl, deadline=deadline)
        # The invocation before this one still runs for a few seconds (the schedule overlaps
        # them), or died and holds the lease to its deadline: wait for it rather than leave pods
        # to the next minute.
        if not lease.acquire_within(deadline - opts.deadline_margin, opts.lease_poll, self.sleep):
            self.observer.decision("lease-busy", lease=LEASE)
            report.lease = False
            return report
        try:
            self.cluster.follow(deadline - self.clock.now())
            report.housekeeping = self.housekeeping.reconcile(self.cluster.snapshot())
            self.sync_mirror()
            # Buffers wait while real pods wait for their pass: those come first.
            waiting_real = bool({p.key for p in self.cluster.pending()} - self._handled())
            report.launched += self.static_capacity.keep_configured(buffers=not waiting_real).launched
            report.launched += self._keep_standby()
            # Counted again every `static_poll` only when there are static pools or buffers.
            static_due = self.clock.now() + opts.static_poll if self._configured() else math.inf
            batch = self.batching
            batch.reset()
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
                    report.launched += self.static_capacity.keep_configured(buffers=not batch.open).launched
                    report.launched += self._keep_standby()
                    static_due = self.clock.now() + opts.static_poll if self._configured() else math.inf
                if not waiting and opts.idle_exit is not None and now - idle_since >= opts.idle_exit:
                    self.observer.decision("idle-exit", idle_seconds=round(now - idle_since, 3))
                    break
                if batch.due(waiting, now):
                    result = self.provision(self.cluster.snapshot())
                    result.launched += self.static_capacity.keep_configured().launched
                    result.launched += self._keep_standby()
                    parked.update(dict.fromkeys(result.unschedulable, self.clock.now() + opts.unschedulable_retry))
                    parked.update(dict.fromkeys(result.placed, self.clock.now() + opts.placed_retry))
                    report.passes += 1
                    report.launched += result.launched
                    report.failed.update(result.failed)
                    if result.launched:
                        self.sync_mirror()
                    batch.reset()
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

    def _keep_standby(self) -> list[str]:
        """Keep the standby instances (`controllers.standby`), if kept; the claims launched."""
        return self.standby.keep().launched if self.standby is not None else []

    def _configured(self) -> bool:
        """Whether static NodePools, CapacityBuffers or standby instances need a check every `static_poll`."""
        return self.static_capacity.configured or (self.standby is not None and self.standby.configured)

    def sync_mirror(self) -> None:
        """Write the claim records into the cluster as NodeClaim objects (`controllers.mirror`), if mirrored."""
        if self.mirror is not None:
            self.mirror.sync(self._mirror_input)

    def _mirror_input(self) -> tuple[DisruptionInput, list[CommandRecord]]:
        nodepools, nodeclasses = self.config.load()
        commands = self.command_records.commands()
        inp = DisruptionInput(
            snapshot=self.cluster.snapshot(),
            claims=tuple(self.claim_records.claims()),
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
        return frozenset(pod for claim in self.claim_records.claims() if claim.state in IN_FLIGHT for pod in claim.pods)

    def _solve(self, inp: SchedulingInput, deadline: SolveDeadline) -> SchedulingResult:
        """The pass's plan for `inp`: the solver's, or the injected schedule's."""
        if self.schedule is None:
            return solve(inp, cache=self.launcher.solver_cache, deadline=deadline)
        return self.schedule(inp)

    # -- one pass ------------------------------------------------------------------------------

    def provision(self, snapshot: ClusterSnapshot) -> PassReport:
        """Solve for the snapshot's pending pods and launch the claims; re-plan after capacity errors."""
        report = PassReport()
        pending = snapshot.pending()
        report.pending = len(pending)
        self.observer.metric("PendingPods", len(pending))
        if not pending:
            return report
        if self.standby is not None:
            # Stopped standby nodes the pods fit are started instead of launching; their pods wait there.
            held = self.standby.start_for(snapshot, pending)
            pending = [p for p in pending if p.key not in held]
            if not pending:
                return report
        nodepools, nodeclasses = self.config.load()
        # One generation of the solver's memos per pass: pod versions no pass uses are let go.
        self.launcher.solver_cache.age()
        deadline = SolveDeadline.within(self.solve_clock, self.options.solve_budget)
        for _ in range(self.options.max_replans + 1):
            now = self.clock.now()
            claims = self.claim_records.claims()
            inp = self.launcher.scheduling_input(
                snapshot, pending=pending, nodepools=nodepools, nodeclasses=nodeclasses, claims=claims, now=now
            )
            started = time.perf_counter()
            result = self._solve(inp, deadline)
            # Zone-balanced NodePools' claims pinned to zones (a lopsided plan re-planned in two steps).
            result = balance_result(inp, result, lambda i: self._solve(i, deadline))
            report.solve_seconds += time.perf_counter() - started
            self.observer.metric("SchedulingSeconds", time.perf_counter() - started, "Seconds")
            report.unschedulable = dict(result.unschedulable)
            report.deferred = list(result.deferred)
            if result.deferred:
                # Not parked: still pending and not on a claim, they start the next pass at once.
                self.observer.decision("deferred", pods=len(result.deferred), budget=self.options.solve_budget)
            report.placed = self.launcher.nominate(result, claims, {p.key: p.created_at for p in pending})
            for pod, reason in result.unschedulable.items():
                self.observer.decision("unschedulable", pod=pod, reason=reason)
                self.cluster.record(pod_failed_to_schedule(pod, reason), now)
            if not self.launcher.launch_all(result, nodepools, nodeclasses, inp, report):
                break
            # Capacity errors blocked some offerings: plan their pods again, now.
            pending = [p for p in pending if p.key not in self._handled()]
            if not pending:
                break
        self.observer.metric("ClusterHourlyCost", self._hourly_cost(), "None")
        return report

    def _hourly_cost(self) -> float:
        # A stopped standby instance is billed for its volumes only, not its price.
        return sum(c.price for c in self.claim_records.claims() if c.state not in ("pending", STOPPED))
