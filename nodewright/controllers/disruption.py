"""The consolidator: carries out disruption commands as a resumable state machine.

Role: the imperative shell around `nodewright.engine.disruption`. One Lambda invocation runs
`Consolidator.run(deadline)`:

1. take the `consolidator` lease, so one invocation acts at a time;
2. untaint nodes carrying the consolidation taint that no live command owns (a crash's leftovers);
3. resume the command in progress, if any, from its recorded state (nodewright.model.command);
4. otherwise decide: build a DisruptionInput from a fresh snapshot, the claim records and the
   catalog; take the first command; record it (`computed`); wait `validation_delay` (15 s, as
   Karpenter does) and re-check it against fresh state with `validate`; drop it if stale;
5. execute: choose and record the replacements' claim names (`launching`), launch them through
   the provisioner's launch path, all or nothing (a replacement that fails stops the launch, the
   ones that came up are terminated and the command aborts: no candidate was touched); check
   that what came up is cheaper than the candidates by the stability guard (else roll back:
   terminate the replacements before anything is drained, and leave each candidate/type pair out
   of later passes for `no_cheaper_memory` seconds, so a move that cannot save cannot repeat);
   cordon the candidates with `nodewright.io/disrupted=consolidation:NoSchedule` (`tainted`);
   wait until every replacement is Ready (timeout: untaint and abort); drain the candidates with
   the interruption function's Drainer (`draining`; a budgeted drain that PodDisruptionBudgets
   let evict nothing for `drain_timeout` is given up the same way); terminate the instances,
   delete the Nodes and the claim records (`terminating`); delete the record;
6. with `steer_deletion_cost`, write the pods' deletion costs (`controllers.steering`), so the
   next scale-down empties the nodes closest to empty instead of thinning every node.

A repair (`engine.disruption.repair`: a node broken for its condition's toleration) goes through
the same states, forcefully: its replacements are kept whatever they cost, a failed or late
replacement does not hold the broken node, and its drain ends `repair_drain_timeout` after it
started; the node is then terminated with whatever is left on it. Each repaired node is logged
(`repair`: the condition, since when, how long it held) and counted (`NodesRepaired` by condition).

Intent is recorded before each effect, so a crash resumes: a `computed` record is dropped (nothing
was done); `launching` relaunches the recorded names (idempotent ClientTokens) or aborts; later
states repeat their idempotent step. A command never leaves a node tainted without its record.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace

from nodewright.controllers.algorithms import Decisions, EngineDecisions
from nodewright.controllers.consolidationoptions import ConsolidationReport, ConsolidatorOptions
from nodewright.controllers.daemonfit import report_overflows
from nodewright.controllers.drain import Drainer
from nodewright.controllers.kubeusage import publish_api_usage
from nodewright.controllers.launching import Launcher
from nodewright.controllers.lease import InvocationLease
from nodewright.controllers.mirror import ClaimMirror
from nodewright.controllers.provisionoptions import claim_name, pool_capacities
from nodewright.controllers.steering import DeletionCostSteering
from nodewright.engine.buffer import buffer_pods, hold_buffers
from nodewright.engine.devices import lower
from nodewright.engine.disruption import (
    Command,
    DisruptionCache,
    DisruptionInput,
)
from nodewright.engine.disruption.consolidation import CONSOLIDATION, EPSILON
from nodewright.engine.disruption.methods.repair import REPAIR
from nodewright.engine.disruption.repair import diagnoses, due
from nodewright.model import labels as wk
from nodewright.model.command import CommandRecord
from nodewright.model.event import (
    disruption_blocked,
    disruption_launching,
    disruption_rejected,
    disruption_terminating,
    disruption_waiting_readiness,
)
from nodewright.model.instance import InstanceStatus
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.taints import Taint
from nodewright.ports import (
    Catalog,
    ClaimRecords,
    Clock,
    CloudProvider,
    Cluster,
    CommandRecords,
    Configuration,
    ImageIds,
    Leases,
    Observer,
    OfferingBlocks,
)

LEASE = "consolidator"
TAINT = Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule", wk.DISRUPTED_CONSOLIDATION)


class Consolidator:
    """Runs disruption against the ports it is given (see the module docstring)."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        cloud: CloudProvider,
        claim_records: ClaimRecords,
        command_records: CommandRecords,
        leases: Leases,
        offering_blocks: OfferingBlocks,
        clock: Clock,
        config: Configuration,
        catalog: Catalog,
        observer: Observer,
        launcher: Launcher,
        options: ConsolidatorOptions = ConsolidatorOptions(),  # noqa: B008 (frozen: a shared default is safe)
        sleep: Callable[[float], None] = time.sleep,
        decisions: Decisions | None = None,
        mirror: ClaimMirror | None = None,
        images: ImageIds | None = None,
    ) -> None:
        self.cluster = cluster
        self.cloud = cloud
        # The state table's concerns it uses, each its own port (one DynamoDB table in AWS).
        self.claim_records = claim_records
        self.command_records = command_records
        self.leases = leases
        self.offering_blocks = offering_blocks
        self.clock = clock
        self.config = config
        self.catalog = catalog
        self.observer = observer
        # The provisioner's launch path, for the replacements.
        self.launcher = launcher
        # Writes the consolidator's verdicts on the NodeClaim objects (None: not mirrored).
        self.mirror = mirror
        # The AMIs each EC2NodeClass resolves to now: a node booted from another has drifted
        # (None: not known, so never a reason).
        self.images = images
        self.options = options
        self.sleep = sleep
        self.drainer = Drainer(cluster, observer)
        # Writes pod deletion costs once per invocation, after the commands (None: not steering).
        self.steering = DeletionCostSteering(cluster, observer) if options.steer_deletion_cost else None
        # Who decides each pass's command: the engine, or a reference (controllers.algorithms).
        self.decisions = decisions if decisions is not None else EngineDecisions()
        self._last_state: tuple[object, ...] | None = None
        # (candidate node, instance type) -> until when that type is no option for that node: its
        # replacement came up no cheaper. Held by the warm container, as the fingerprint is.
        self._no_cheaper: dict[tuple[str, str], float] = {}
        # node -> until when: its drain stalled and was given up (see ConsolidatorOptions).
        self._stalled: dict[str, float] = {}
        # What passes may reuse (node destinations, the solver's memos), held by the warm container.
        self._cache = DisruptionCache()
        # instance id -> when an impaired status check without an ImpairedSince was first seen.
        self._impaired_seen: dict[str, float] = {}
        # The NodePools this invocation's last pass read, for the steering (None: none read yet).
        self._nodepools: list[NodePool] | None = None

    # -- the invocation ----------------------------------------------------------------------------

    def run_for(self, remaining: float, invocation: str | None = None) -> ConsolidationReport:
        """`run` with the deadline `remaining` seconds from now by this controller's clock (what a
        Lambda handler knows: its context's remaining time).
        """
        return self.run(self.clock.now() + remaining, invocation)

    def run(self, deadline: float, invocation: str | None = None) -> ConsolidationReport:
        """Advance or start commands until `deadline - margin` (epoch seconds, by `clock`)."""
        report = ConsolidationReport()
        opts = self.options
        holder = invocation or uuid.uuid4().hex
        self._nodepools = None
        lease = InvocationLease(self.leases, self.clock, LEASE, holder, longest=opts.lease_ttl, deadline=deadline)
        if not lease.acquire():
            report.lease = False
            return report
        try:
            self.cluster.follow(deadline - self.clock.now())
            self._sweep(report)
            self._sync_mirror()
            while self.clock.now() < deadline - opts.deadline_margin:
                records = self.command_records.commands()
                if records:
                    wait = self._advance(records[0], report)
                elif not self._decide(report, deadline):
                    break  # nothing to do this minute
                else:
                    wait = 0.0
                if wait:
                    self.sleep(wait)
                lease.renew()
            if self.steering is not None:
                self.steering.run(self._nodepools if self._nodepools is not None else self.config.load()[0])
        finally:
            self._sync_mirror()  # the commands' Disrupting conditions, as this run left them
            lease.release()
            publish_api_usage(self.cluster, self.observer)
        return report

    def _sync_mirror(self) -> None:
        """Write the claims' NodeClaim objects, if mirrored."""
        mirror = self.mirror
        if mirror is not None:
            mirror.sync(lambda: (self.disruption_input(), self.command_records.commands()))

    # -- deciding ----------------------------------------------------------------------------------

    def disruption_input(self) -> DisruptionInput:
        """A fresh view for the engine: snapshot, claims, NodePools with their instance types."""
        snapshot = self.cluster.snapshot()
        nodepools, nodeclasses = self.config.load()
        self._nodepools = nodepools
        pools = pool_capacities(nodepools, nodeclasses, self.catalog, self.config.overlays(), self.observer)
        # DRA claims as requirements and requests, so moved pods stay on types with their devices.
        snapshot = lower(snapshot, (), (t for pc in pools for t in pc.instance_types)).snapshot
        now = self.clock.now()
        buffers, templates = self.config.buffers()
        if buffers:  # buffer room counts as used: a node holding it is not empty (engine.buffer)
            virtual = buffer_pods(buffers, templates, snapshot.pods).pods
            snapshot = hold_buffers(snapshot, virtual, now, self._cache.solver)
        in_progress = frozenset(n for r in self.command_records.commands() for n in r.candidates)
        self._no_cheaper = {pair: until for pair, until in self._no_cheaper.items() if until > now}
        self._stalled = {node: until for node, until in self._stalled.items() if until > now}
        statuses = self._instance_statuses(snapshot.nodes, now)
        return DisruptionInput(
            snapshot=snapshot,
            claims=tuple(self.claim_records.claims()),
            pools=pools,
            now=now,
            blocked=self.offering_blocks.blocked_offerings(now),
            in_progress=in_progress,
            no_cheaper=frozenset(self._no_cheaper),
            stalled=frozenset(self._stalled),
            instance_statuses=statuses,
            images=self.images() if self.images is not None else {},
            options=self.options.disruption,
        )

    def _instance_statuses(self, nodes: Sequence[Node], now: float) -> tuple[InstanceStatus, ...]:
        """The impaired status checks of our nodes' instances; one EC2 gave no start for counts
        from when this container first saw it (so its toleration can run out).
        """
        ids = [n.instance_id for n in nodes if n.instance_id and n.launched_by_nodewright]
        statuses = self.cloud.instance_statuses(ids) if ids else []
        seen = {s.instance_id: self._impaired_seen.get(s.instance_id, now) for s in statuses if not s.since}
        self._impaired_seen = seen
        return tuple(s if s.since else replace(s, since=seen[s.instance_id]) for s in statuses)

    def _decide(self, report: ConsolidationReport, deadline: float) -> bool:
        """Compute, record, validate and start one command; False when there is nothing to do."""
        inp = self.disruption_input()
        # Nothing changed since the last pass that found nothing: skip the search (a cluster at
        # rest is most minutes of most days).
        state = _fingerprint(inp)
        if state == self._last_state:
            return False
        self._cache.solver.age()  # one generation per pass: pod versions no pass uses are let go
        result = self.decisions.compute_commands(inp, self._cache)
        report.eligible = result.eligible
        self.observer.metric("EligibleNodes", result.eligible)
        for node, why in sorted(result.rejected.items()):
            self.observer.decision("disruption-rejected", node=node, reason=why)
            if (event := disruption_rejected(node, why, result.blockers.get(node))) is not None:
                self.cluster.record(event, inp.now)
        report_overflows(inp, self.observer, self.cluster)
        if not result.commands:
            self._last_state = state
            return False
        self._last_state = None
        command = result.commands[0]
        now = self.clock.now()
        if now + self.options.validation_delay >= deadline - self.options.deadline_margin:
            return False  # not enough time left to validate and act; next invocation decides again
        record = _record(command, inp, now)
        self.command_records.save_command(record)
        report.decided.append(record.id)
        self.sleep(self.options.validation_delay)
        stale = self.decisions.validate(command, self.disruption_input(), self._cache)
        if stale is not None:
            self.command_records.delete_command(record.id)
            report.dropped[record.id] = stale
            self.observer.decision("disruption-dropped", command=record.id, reason=stale)
            return True
        self.observer.decision(
            "disruption",
            command=record.id,
            method=command.method,
            reason=command.reason,
            candidates=list(command.candidates),
            replacements=[r.instance_type.name for r in command.replacements],
            savings=round(command.savings, 4),
            price=round(command.savings + command.replacement_price, 6),
            promised=round(command.replacement_price, 6),
            detail=command.detail,
        )
        if command.method == REPAIR:
            self._log_repair(record, inp)
        self._launch(record, command, report)
        return True

    def _log_repair(self, record: CommandRecord, inp: DisruptionInput) -> None:
        """One decision and one metric per repaired node: the condition that triggered it, since
        when and for how long it held (Karpenter's nodeclaims_unhealthy_disrupted_total, by condition).
        """
        found = diagnoses([n for n in inp.snapshot.nodes if n.name in record.candidates], inp.instance_statuses)
        for node in record.candidates:
            finding = found.get(node)
            if finding is None:
                continue
            self.observer.decision(
                "repair",
                command=record.id,
                node=node,
                condition=finding.condition,
                status=finding.status,
                since=finding.since,
                held=round(finding.held(inp.now), 1),
                toleration=finding.toleration,
            )
            self.observer.metric("NodesRepaired", 1, condition=finding.condition)

    # -- executing ---------------------------------------------------------------------------------

    def _launch(self, record: CommandRecord, command: Command, report: ConsolidationReport) -> None:
        names = tuple(claim_name(r.nodepool) for r in command.replacements)
        record = record.advanced("launching", self.clock.now(), replacements=names)
        self.command_records.save_command(record)
        for node in record.candidates if names else ():
            self.cluster.record(disruption_launching(node, f"{record.reason}: {', '.join(names)}"), self.clock.now())
        if command.replacements:
            launched = self.launcher.launch_planned(
                command.replacements,
                names,
                f"{command.method}: {command.detail}",
                # Only a repair goes on with some replacements missing; any other command aborts.
                all_or_nothing=record.method != REPAIR,
            )
            if launched.failed and record.method == REPAIR:
                # A broken node goes anyway: its pods wait pending for the provisioner instead.
                self.observer.decision("repair-replacement-failed", command=record.id, reason=str(launched.failed))
            elif launched.failed:
                # The candidates were never tainted and no pod moved: the replacements that did come
                # up would only be extra nodes (a capacity error in one zone then leaves a node for
                # every pass that tries again, and the next pass counts them as candidates).
                self._discard(launched.launched)
                if launched.launched:
                    self.observer.decision("replacements-discarded", command=record.id, nodeclaims=launched.launched)
                self._abort(record, f"replacement launch failed: {launched.failed}", report)
                return
            if not self._came_up_cheaper(record, report):
                return
        self._taint(record)

    def _taint(self, record: CommandRecord) -> None:
        for node in record.candidates:
            self.cluster.cordon(node, TAINT)
        self.command_records.save_command(record.advanced("tainted", self.clock.now()))

    def _advance(self, record: CommandRecord, report: ConsolidationReport) -> float:
        """One step of a recorded command; returns how long to wait before the next one."""
        now = self.clock.now()
        if record.state == "computed":
            # Died between deciding and validating: nothing was done; decide again.
            self.command_records.delete_command(record.id)
            report.dropped[record.id] = "not validated before the last invocation ended"
            return 0.0
        if record.state == "launching":
            claims = {c.name: c for c in self.claim_records.claims()}
            if record.method == REPAIR or all(
                name in claims and claims[name].instance_id for name in record.replacements
            ):
                if not record.replacements or self._came_up_cheaper(record, report):
                    self._taint(record)
            else:
                self._discard([name for name in record.replacements if name in claims])
                self._abort(record, "replacements were not all launched", report)
            return 0.0
        if record.state == "tainted":
            ready, failed = self._replacements_ready(record)
            late = now - record.updated_at > self.options.replacement_timeout
            if record.method == REPAIR and (failed or late):
                # Waiting longer keeps a broken node; its pods may wait pending instead.
                self.observer.decision("repair-replacement-late", command=record.id, reason=failed or "not ready")
                ready, failed = True, ""
            if failed:
                self._abort(record, failed, report)
                return 0.0
            if ready:
                self.command_records.save_command(record.advanced("draining", now))
                for node in record.candidates:
                    self.cluster.record(disruption_terminating(node, record.reason), now)
                return 0.0
            if late:
                self._abort(record, "replacements did not become ready in time", report)
                return 0.0
            for node in record.candidates:
                self.cluster.record(disruption_waiting_readiness(node), now)
            return self.options.poll
        if record.state == "draining":
            return self._drain(record, report)
        self._terminate(record, report)
        return 0.0

    def _came_up_cheaper(self, record: CommandRecord, report: ConsolidationReport) -> bool:
        """True when the launched replacements cost less than the candidates by the stability guard
        (their claims' prices: what EC2 launched, not what was planned); otherwise roll back.
        Only consolidation promises savings: the replacements of drift, expiration, a static
        NodePool and repair are kept whatever they cost (a drifted node replaced by its own type
        was rolled back at every pass, a launch and a termination a minute, and never replaced).
        """
        if record.method != CONSOLIDATION or not self.options.roll_back_dearer:
            return True
        claims = {c.name: c for c in self.claim_records.claims()}
        new = [claims[name] for name in record.replacements if name in claims]
        ids = set(record.instance_ids)
        replaced = [c for c in claims.values() if c.instance_id and c.instance_id in ids]
        if len(replaced) != len(record.candidates) or any(c.price <= 0 for c in (*replaced, *new)):
            return True  # unpriced (e.g. records from an older version): nothing to judge by
        before = sum(c.price for c in replaced)
        after = sum(c.price for c in new)
        opts = self.options.disruption
        saved = before - after
        cheaper = saved > EPSILON and saved >= max(opts.min_savings, opts.min_savings_fraction * before) - EPSILON
        self.observer.decision(
            "disruption-launched",
            command=record.id,
            candidates=list(record.candidates),
            replacements=[c.name for c in new],
            instance_types=[c.instance_type for c in new],
            price=round(before, 6),
            promised=round(before - record.savings, 6),
            launched=round(after, 6),
            outcome="kept" if cheaper else "rolled-back",
        )
        if not cheaper:
            why = f"replacements came up at ${after:.4f}/h against ${before:.4f}/h for the nodes they replace"
            self._roll_back(record, new, why, report)
        return cheaper

    def _roll_back(
        self, record: CommandRecord, new: Sequence[NodeClaim], why: str, report: ConsolidationReport
    ) -> None:
        """Terminate replacements that came up no cheaper, before any candidate is tainted or
        drained, and leave their types out for the candidates for a while (so no loop can form).
        """
        until = self.clock.now() + self.options.no_cheaper_memory
        for node in record.candidates:
            for claim in new:
                self._no_cheaper[(node, claim.instance_type)] = until
        self._discard([c.name for c in new])
        self.command_records.delete_command(record.id)
        report.rolled_back[record.id] = why
        self.observer.metric("ConsolidationRollbacks", 1)
        self.observer.decision("disruption-rolled-back", command=record.id, reason=why)

    def _discard(self, names: Sequence[str]) -> None:
        """Terminate the named replacement claims' instances and forget the claims (and their nodes,
        if any joined): replacements of a command that will not go on.
        """
        wanted = set(names)
        claims = [c for c in self.claim_records.claims() if c.name in wanted]
        self.cloud.terminate([c.instance_id for c in claims if c.instance_id])
        for claim in claims:
            joined = self.cluster.node_by_instance(claim.instance_id) if claim.instance_id else None
            if joined is not None:
                self.cluster.delete_node(joined.name)
            self.claim_records.delete_claim(claim.name)

    def _replacements_ready(self, record: CommandRecord) -> tuple[bool, str]:
        claims = {c.name: c for c in self.claim_records.claims()}
        for name in record.replacements:
            claim = claims.get(name)
            if claim is None:
                return False, f"replacement {name} is gone"
            node = self.cluster.node_by_instance(claim.instance_id) if claim.instance_id else None
            if node is None or not node.ready or _has_startup_taints(node, claim.startup_taints):
                return False, ""
        return True, ""

    def _drain(self, record: CommandRecord, report: ConsolidationReport) -> float:
        wait = 0.0
        done = True
        now = self.clock.now()
        # The record's stamp is the drain's start or its last eviction (saved below).
        stalled = record.budgeted and now - record.updated_at > self.options.drain_timeout
        # A repair's stamp stays at its drain's start (not moved by evictions): its deadline.
        repair_due = record.method == REPAIR and now - record.updated_at > self.options.repair_drain_timeout
        refused: dict[str, str] = {}
        evicted = False
        for node in record.candidates:
            if self.cluster.get_node(node) is None:
                continue
            by = f"disruption command {record.id} ({record.method}, {record.reason})"
            step = self.drainer.step(node, TAINT, forced=not record.budgeted, by=by, now=now)
            if "do-not-disrupt" in step.kept.values():
                self._abort(record, f"a do-not-disrupt pod appeared on {node}", report)
                return 0.0
            refused.update(step.blocked)
            evicted = evicted or bool(step.evicted)
            if not step.done:
                done = False
                wait = max(wait, step.retry_in)
        if not done and repair_due:
            left = sorted(p.key for n in record.candidates for p in self.cluster.pods_on(n))
            self.observer.decision("repair-drain-deadline", command=record.id, pods=left[:20], left=len(left))
            done = True
        elif not done and evicted and record.method != REPAIR:
            self.command_records.save_command(record.advanced("draining", now))
        elif not done and stalled:
            why = f"the drain evicted nothing for {self.options.drain_timeout:g} s"
            if refused:
                pod, answer = min(refused.items())
                why += f" ({len(refused)} eviction(s) refused, e.g. {pod}: {answer})"
            until = self.clock.now() + self.options.stalled_memory
            self._stalled.update(dict.fromkeys(record.candidates, until))
            self._abort(record, why, report)
            return 0.0
        if done:
            self.command_records.save_command(record.advanced("terminating", self.clock.now()))
        return wait

    def _terminate(self, record: CommandRecord, report: ConsolidationReport) -> None:
        self.cloud.terminate(list(record.instance_ids))
        for node in record.candidates:
            self.cluster.delete_node(node)
        instances = set(record.instance_ids)
        for claim in self.claim_records.claims():
            if claim.instance_id in instances:
                self.claim_records.delete_claim(claim.name)
        self.command_records.delete_command(record.id)
        report.completed.append(record.id)
        self.observer.metric("NodesDisrupted", len(record.candidates), reason=record.reason)
        self.observer.metric("ConsolidationSavingsPerHour", record.savings, "None")
        self.observer.decision(
            "disruption-done",
            command=record.id,
            method=record.method,
            candidates=list(record.candidates),
            savings=round(record.savings, 4),
        )

    def _abort(self, record: CommandRecord, why: str, report: ConsolidationReport) -> None:
        """Roll back: untaint the candidates, forget the command. Replacements launched before a
        candidate was tainted are terminated by the caller (`_discard`); later ones stay (they are
        ordinary nodes now: pods may use them, and emptiness removes them if not).
        """
        for name in record.candidates:
            self.cluster.record(disruption_blocked(name, f"Disruption aborted: {why}"), self.clock.now())
            node = self.cluster.get_node(name)
            # Only our own taint: an interruption may have re-tainted the node meanwhile, and that
            # node must stay cordoned with its pods pending for the provisioner.
            if node is not None and TAINT in node.taints:
                self.cluster.uncordon(name, wk.DISRUPTED_TAINT_KEY)
        self.command_records.delete_command(record.id)
        report.aborted[record.id] = why
        self.observer.metric("CommandsFailed", 1)
        self.observer.decision("disruption-aborted", command=record.id, reason=why)

    def _sweep(self, report: ConsolidationReport) -> None:
        """Untaint nodes that carry the consolidation taint but belong to no live command."""
        owned = {n for r in self.command_records.commands() for n in r.candidates}
        for node in self.cluster.snapshot().nodes:
            if node.name not in owned and any(t == TAINT for t in node.taints):
                self.cluster.uncordon(node.name, wk.DISRUPTED_TAINT_KEY)
                report.untainted.append(node.name)
                self.observer.decision("disruption-untainted", node=node.name, reason="no live command owns it")


def _record(command: Command, inp: DisruptionInput, now: float) -> CommandRecord:
    by_node = {c.node_name: c for c in inp.claims if c.node_name}
    nodes = {n.name: n for n in inp.snapshot.nodes}
    instance_ids = tuple(
        (by_node[name].instance_id if name in by_node else "") or (nodes[name].instance_id if name in nodes else "")
        for name in command.candidates
    )
    return CommandRecord(
        id=f"{command.method}-{uuid.uuid4().hex[:12]}",
        method=command.method,
        reason=command.reason,
        candidates=command.candidates,
        instance_ids=tuple(i for i in instance_ids if i),
        savings=command.savings,
        detail=command.detail,
        created_at=now,
        updated_at=now,
        budgeted=command.budgeted,
    )


def _has_startup_taints(node: Node, startup: Sequence[Taint]) -> bool:
    keys = {(t.key, t.effect) for t in startup}
    return any((t.key, t.effect) in keys for t in node.taints)


def _fingerprint(inp: DisruptionInput) -> tuple[object, ...]:
    """What a pass's decision depends on, cheaply: nodes, where pods are, claims. Time matters too
    (consolidateAfter, expiry, budget windows), so the minute is part of it.
    """
    nodes = tuple(sorted((n.name, n.ready, n.unschedulable, len(n.taints)) for n in inp.snapshot.nodes))
    pods = tuple(sorted((p.key, p.node_name) for p in inp.snapshot.pods))
    claims = tuple(sorted((c.name, c.state) for c in inp.claims))
    return (nodes, pods, claims, int(inp.now // 600), due(inp))
