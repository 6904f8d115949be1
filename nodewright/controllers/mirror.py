"""The NodeClaim mirror: the state table's claims written into the cluster for `kubectl`.

Role: after the provisioner or the consolidator has written its claim records (DynamoDB stays the
source of truth), `ClaimMirror.sync` makes the cluster's `nodewright.io/v1 NodeClaim` objects
say the same: one object per claim (`nodewright.model.claimobject`), removed when the claim is.

Two writers, one per function, each owning its part so neither undoes the other:
  * the provisioner's mirror (the claims' writer) applies and deletes objects from the claim
    records: spec, labels, status, the conditions Launched / Registered / Initialized / Ready,
    as one server-side apply per changed object (it creates or updates; the verdict conditions
    are left out of it, and the server keeps the judge's, as the CRD makes conditions a map
    keyed by type);
  * the consolidator's mirror (`judge`) writes only the verdict conditions (Drifted,
    Consolidatable, Disrupting) of initialized claims, as a patch of `status.conditions`, from
    the disruption engine's own candidate logic (`ClusterView`, `waiting`, `drifted`) run
    read-only on the input it decides with, and from the running command records.

Cost: one LIST per warm container (and again after `recheck` seconds when the CRD was missing),
then one write per object that changed (`comparable` differs; the judge: its conditions), all of
one sync's changes to an object in that one write: a cluster at rest costs no request. The
mirror is a
convenience: its failures are reported (`MirrorFailures` metric, a `mirror-failed` decision)
and never stop the function's real work.

Idempotent: a sync after a crash finds the objects it wrote (or not) in the next LIST or in its
own view and writes only the difference; an apply creates or updates, whichever is needed.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.config.noderoles import ROLE_NOT_ALLOWED
from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.disruption.methods.shared import drifted, waiting
from nodewright.engine.disruption.types import DisruptionInput
from nodewright.engine.scheduling.usage import pool_usage
from nodewright.model import labels as wk
from nodewright.model.claimobject import JUDGED, Verdicts, comparable, nodeclaim_object, nodepool_status
from nodewright.model.command import CommandRecord
from nodewright.model.duration import format_duration
from nodewright.model.node import Node
from nodewright.model.resources import Resources
from nodewright.ports import ClaimObjects, Clock, Observer

# Claims whose objects carry verdicts: the judge writes those conditions from then on.
JUDGED_STATES = ("initialized", "deleting")
_AGE = re.compile(r"\d+s ago")
# Karpenter's Disrupting reasons by our command methods.
_DISRUPTION_REASONS = {
    "emptiness": "Empty",
    "consolidation": "Underutilized",
    "drift": "Drifted",
    "expiration": "Expired",
}


@dataclass
class MirrorReport:
    """What one sync wrote."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    nodepools: list[str] = field(default_factory=list)
    enabled: bool = True


class ClaimMirror:
    """Keeps the cluster's NodeClaim objects equal to the claim records (see the module docstring)."""

    def __init__(
        self,
        objects: ClaimObjects,
        clock: Clock,
        observer: Observer,
        *,
        recheck: float = 600.0,
        nodepool_status: bool = False,
        judge: bool = False,
    ) -> None:
        self.objects = objects
        # Who writes what (see the module docstring): the claims' own state, or the verdicts.
        self.judge = judge
        # Also write each NodePool's status (resources, conditions): when config comes from CRDs.
        self.nodepool_status = nodepool_status
        self._pool_status: dict[str, dict[str, Any]] = {}  # by NodePool: the status last written
        # The NodePools held back for their node role, with why (`controllers.noderoles`).
        self.refused: Callable[[], Mapping[str, str]] = dict
        self.clock = clock.now
        self.observer = observer
        self.recheck = recheck
        # What the cluster holds, as last listed or written; None until the first LIST.
        self._known: dict[str, dict[str, Any]] | None = None
        self._off_until = 0.0

    def sync(self, read: Callable[[], tuple[DisruptionInput, Sequence[CommandRecord]]]) -> MirrorReport:
        """Write the objects of the claims `read()` returns that changed and delete those of claims
        that are gone. `read` gives the disruption engine's input (claims, snapshot, NodePools,
        now) and the running commands; it is not called while the mirror is off.
        """
        report = MirrorReport()
        try:
            if self._enabled(report):
                inp, commands = read()
                self._sync(inp, commands, report)
        except Exception as error:  # the mirror must never stop provisioning or disruption
            self._known = None  # re-read the cluster next time: our view may be wrong now
            self.observer.metric("MirrorFailures", 1)
            self.observer.decision("mirror-failed", error=f"{type(error).__name__}: {error}")
        return report

    def _enabled(self, report: MirrorReport) -> bool:
        """List the objects once (None: no CRD, or no grant: off until `recheck` seconds pass)."""
        if self._known is not None:
            return True
        now = self.clock()
        if now < self._off_until:
            report.enabled = False
            return False
        listed = self.objects.claim_objects()
        if listed is None:
            self._off_until = now + self.recheck
            report.enabled = False
            self.observer.decision("mirror-off", reason="nodeclaims.nodewright.io is not installed or not granted")
            return False
        self._known = listed
        return True

    def _sync(self, inp: DisruptionInput, commands: Sequence[CommandRecord], report: MirrorReport) -> None:
        assert self._known is not None  # _enabled listed them
        nodes = _nodes_of(inp)
        if self.judge:
            self._judge(inp, commands, nodes, report)
        else:
            self._mirror_records(inp, nodes, report)
        if self.nodepool_status and not self.judge:
            self._sync_pools(inp, report)
        if report.created or report.updated or report.deleted or report.nodepools:
            self.observer.decision(
                "mirror",
                created=report.created,
                updated=report.updated,
                deleted=report.deleted,
                nodepools=report.nodepools,
                at=inp.now,
            )

    def _mirror_records(self, inp: DisruptionInput, nodes: Mapping[str, Node], report: MirrorReport) -> None:
        """Apply the objects whose rendering from the claim records changed (one server-side
        apply each: it creates or updates), and delete those of claims that are gone. The apply
        leaves the verdict conditions out, so the server keeps the judge's: no read first.
        """
        known = self._known
        assert known is not None
        for claim in sorted(inp.claims, key=lambda c: c.name):
            node = nodes.get(claim.name) or nodes.get(claim.provider_id)
            previous = known.get(claim.name)
            desired = nodeclaim_object(claim, node, None, now=inp.now, previous=previous)
            if previous is not None and comparable(previous) == comparable(desired):
                continue
            known[claim.name] = self.objects.apply_claim_object(_owned(desired))
            (report.updated if previous is not None else report.created).append(claim.name)
        live = {c.name for c in inp.claims}
        for name in sorted(set(known) - live):
            self.objects.delete_claim_object(name)
            del known[name]
            report.deleted.append(name)

    def _judge(
        self,
        inp: DisruptionInput,
        commands: Sequence[CommandRecord],
        nodes: Mapping[str, Node],
        report: MirrorReport,
    ) -> None:
        """Write the verdict conditions of initialized claims whose verdicts changed, as a patch of
        the conditions alone; objects are created and deleted by the claims' writer, not here.
        """
        known = self._known
        assert known is not None
        verdicts = claim_verdicts(inp, commands)
        live = {c.name for c in inp.claims}
        for name in set(known) - live:
            del known[name]
        for claim in sorted(inp.claims, key=lambda c: c.name):
            if claim.state not in JUDGED_STATES:
                continue
            previous = known.get(claim.name)
            node = nodes.get(claim.name) or nodes.get(claim.provider_id)
            verdict = verdicts.get(claim.name, Verdicts())
            desired = nodeclaim_object(claim, node, verdict, now=inp.now, previous=previous)
            if previous is not None and _judged(desired) == _judged(previous):
                continue
            # An object this mirror has not seen (created since its LIST) gets its first verdicts
            # in one patch, not a read and a patch; a missing one is the claims' writer's to create.
            conditions = {"status": {"conditions": desired["status"]["conditions"]}}
            stored = self.objects.patch_claim_object(claim.name, conditions)
            if stored is None:
                continue
            known[claim.name] = stored
            report.updated.append(claim.name)

    def _sync_pools(self, inp: DisruptionInput, report: MirrorReport) -> None:
        """Each NodePool's status, written when it changed (usage by the rule limits use)."""
        types = {pc.nodepool.name: {t.name: t for t in pc.instance_types} for pc in inp.pools}
        used = pool_usage(inp.snapshot.nodes, inp.claims, types)
        nodes = collections.Counter(c.nodepool for c in inp.claims if c.state != "pending")
        refused = self.refused()
        for name in sorted({pc.nodepool.name for pc in inp.pools} | set(refused)):
            previous = self._pool_status.get(name)
            why = (ROLE_NOT_ALLOWED, refused[name]) if name in refused else None
            status = nodepool_status(
                used.get(name, Resources()), nodes[name], now=inp.now, previous=previous, refused=why
            )
            if status == previous:
                continue
            # A NodePool the cluster does not hold under nodewright.io answers False: remembered
            # all the same, so it is not asked again until its status changes.
            if self.objects.put_nodepool_status(name, status):
                report.nodepools.append(name)
            self._pool_status[name] = status


def claim_verdicts(inp: DisruptionInput, commands: Sequence[CommandRecord]) -> dict[str, Verdicts]:
    """By claim name: drifted, consolidatable and disrupting as the disruption engine sees them now.

    Read-only: the engine's candidate view of `inp` (no command is computed). Also what
    `nodewright explain node` reports as "what blocks it".
    """
    view = ClusterView.build(inp)
    running = {node: record for record in commands for node in record.candidates}
    by_name = {n.name: n for n in inp.snapshot.nodes}
    out: dict[str, Verdicts] = {}
    for node_name, claim in view.claim_by_node.items():
        candidate = view.candidates.get(node_name)
        if candidate is not None:
            why_not = _steady(candidate.soft_block or _waiting(candidate, inp.now))
            drift = drifted(view, candidate) or ""
        else:
            why_not = view.rejected.get(node_name, "not a consolidation candidate")
            drift = ""
        disrupting, reason = "", ""
        record = running.get(node_name)
        node = by_name.get(node_name)
        if record is not None:
            disrupting = f"command {record.id} ({record.method}, {record.state}): {record.detail or record.reason}"
            reason = _DISRUPTION_REASONS.get(record.method, "Disrupting")
        elif (
            node is not None
            and (taint := next((t for t in node.taints if t.key == wk.DISRUPTED_TAINT_KEY), None)) is not None
        ):
            disrupting, reason = f"cordoned by the interruption function ({taint.value})", "Interrupted"
        elif claim.state == "deleting" or (node is not None and node.deleting):
            disrupting, reason = "the node is being deleted", "Deleting"
        out[claim.name] = Verdicts(
            drifted=drift,
            consolidatable=why_not,
            consolidatable_known=True,
            disrupting=disrupting,
            disrupting_reason=reason,
        )
    return out


def _waiting(candidate: Candidate, now: float) -> str:
    """`methods.waiting` without the pods' age, so the message (and the object) stays the same
    while the node waits: a NodeClaim is written when its verdict changes, not every minute.
    """
    if not waiting(candidate, now) or candidate.pool.disruption.consolidate_after is None:
        return waiting(candidate, now)
    after = format_duration(candidate.pool.disruption.consolidate_after)
    return f"consolidateAfter ({after}) has not passed since its pods last changed"


def _steady(message: str) -> str:
    """`message` without an age in seconds ("nominated it 12s ago" -> "nominated it recently")."""
    return _AGE.sub("recently", message)


def _owned(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The object as the claims' writer applies it: without the verdict conditions (the judge's)."""
    status = dict(manifest["status"])
    status["conditions"] = [c for c in status["conditions"] if c.get("type") not in JUDGED]
    return {**manifest, "status": status}


def _judged(manifest: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The verdict conditions of an object."""
    rows = (manifest.get("status") or {}).get("conditions") or ()
    return [c for c in rows if c.get("type") in JUDGED]


def _nodes_of(inp: DisruptionInput) -> Mapping[str, Node]:
    """Nodes by their claim label and by providerID."""
    out: dict[str, Node] = {}
    for node in inp.snapshot.nodes:
        if node.nodeclaim:
            out[node.nodeclaim] = node
        if node.provider_id:
            out[node.provider_id] = node
    return out
