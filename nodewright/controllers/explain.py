"""Answers to "why": `nodewright explain pod`, `explain node` and `status`, read-only.

Role: put together what the state table (claims, commands, the capacity-error cache), the cluster
(pods, nodes) and the functions' decision records (Logs Insights in AWS, the observer in the
simulator) say about one pod, one node or the whole system, and re-run the engines read-only
where a record cannot say it: `solve()` for the one pending pod (the per-NodePool reasons no
pool took it, as a provisioner pass computes them) and the disruption engine's candidate view
and `compute_commands` for a node (whether consolidation may take it, what blocks it, what the
next pass would do). Nothing is written anywhere.

Every answer is a plain dict (the CLI prints it as tables or JSON). Decision records are dicts
with a `decision` kind (the Powertools log records' `decision` field, or `RecordingObserver`'s);
`at` (epoch seconds) where the record has it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.controllers.mirror import claim_verdicts
from nodewright.engine.daemonfit import overflows
from nodewright.engine.devices import lower
from nodewright.engine.disruption.engine import compute_commands
from nodewright.engine.disruption.types import DisruptionInput
from nodewright.engine.scheduling import PoolCapacity, solve
from nodewright.engine.scheduling.inputs import provisioning_input
from nodewright.model.command import CommandRecord
from nodewright.model.event import StoredEvent
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.ports import ClaimRecords, CommandRecords, OfferingBlocks

IN_FLIGHT = ("pending", "launched", "registered")
# Records every invocation writes about itself, not decisions about the cluster.
BOOKKEEPING = frozenset({"kube-api-usage", "mirror"})
# The decision records that move pods: a disruption command, an interruption and its drain.
MOVES = frozenset({"disruption", "disruption-done", "interruption", "interruption-terminated"})
# Seconds from launch to an initialized node when no claim of this cluster has measured it yet.
DEFAULT_STARTUP = 90.0


@dataclass(frozen=True)
class Sources:
    """What an explanation reads: the state table's claims, disruption commands and capacity-error
    cache (only read: one store may stand for all three), one cluster snapshot, the NodePools with
    their instance types, the decision records, and the time.
    """

    claim_records: ClaimRecords
    command_records: CommandRecords
    offering_blocks: OfferingBlocks
    snapshot: ClusterSnapshot
    pools: tuple[PoolCapacity, ...]
    now: float
    decisions: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    # Kubernetes Events as dicts: kind, namespace, name (of the object regarded), type, reason,
    # note, first, last, count (`event_rows` turns the in-memory cluster's into these).
    events: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    # The cluster's NodeClaim objects (`nodeclaims.nodewright.io`, the mirror of the state table's
    # claims) as the API server returns them: what answers with a kubeconfig alone.
    claim_objects: Sequence[Mapping[str, Any]] = field(default_factory=tuple)

    def about(self, kind: str, name: str, namespace: str = "") -> list[dict[str, Any]]:
        """The Events regarding one object, oldest first."""
        return sorted(
            (
                dict(e)
                for e in self.events
                if e.get("kind") == kind and e.get("name") == name and (e.get("namespace") or "") == namespace
            ),
            key=lambda e: float(e.get("first") or 0.0),
        )

    def claims(self) -> list[NodeClaim]:
        """The claim records."""
        return self.claim_records.claims()

    def mentioning(self, *names: str) -> list[dict[str, Any]]:
        """Decision records naming any of `names` in a field (a value or an item of a list)."""
        wanted = {n for n in names if n}
        out = []
        for record in self.decisions:
            for value in record.values():
                items = value if isinstance(value, list | tuple) else (value,)
                if any(isinstance(item, str) and item in wanted for item in items):
                    out.append(dict(record))
                    break
        return out


def explain_pod(src: Sources, key: str) -> dict[str, Any]:
    """Where pod `key` (namespace/name) stands and why (see the module docstring).

    Raises LookupError when the cluster has no such pod and no record mentions it.
    """
    pod = next((p for p in src.snapshot.pods if p.key == key), None)
    history = src.mentioning(key)
    if pod is None and not history:
        raise LookupError(f"pod {key} is not in the cluster and no decision record mentions it")
    answer: dict[str, Any] = {"pod": key, "history": history}
    claims = src.claims()
    holder = next((c for c in claims if key in c.pods and c.state in IN_FLIGHT), None)
    pending = {p.key for p in src.snapshot.pending()}
    if pod is None:
        answer["state"] = "gone"
    elif key not in pending:
        answer["state"] = "running" if pod.phase == "Running" else pod.phase.lower()
        answer["node"] = pod.node_name
        holder = None  # it runs: the claim that was made for it is history
    else:
        answer["state"] = "pending"
        if pod.created_at:
            answer["pending_since"] = pod.created_at
            answer["pending_seconds"] = round(src.now - pod.created_at, 1)
    if pod is not None and pod.daemon and pod.target_node and not pod.node_name:
        # A DaemonSet pod waits for its own node, never for a new one (engine/daemonfit.py).
        overflow = overflows(src.snapshot, [pc.nodepool for pc in src.pools]).get(pod.target_node)
        answer["why_not_scheduled"] = (
            overflow.describe() if overflow is not None else f"waits for its node {pod.target_node}, where it fits"
        )
    passes = [r for r in history if r.get("decision") in ("launch", "nominate", "unschedulable")]
    if passes:
        answer["seen_by"] = [{k: r.get(k) for k in ("decision", "nodeclaim", "at", "reason") if k in r} for r in passes]
    if holder is not None:
        answer["claim"] = _claim_summary(holder)
        answer["node_ready_by"] = _ready_by(holder, claims)
    elif pod is not None and answer["state"] == "pending" and "why_not_scheduled" not in answer:
        answer["why_not_scheduled"] = _why_unschedulable(src, key, claims)
    namespace, _, name = key.partition("/")
    events = src.about("Pod", name, namespace)
    if events:
        answer["events"] = events
    if pod is None:
        # Gone: the node it last ran on (its last Scheduled Event) and what the functions decided
        # about that node say why it had to move.
        placed = [e for e in events if e.get("reason") == "Scheduled"]
        last_node = str(placed[-1].get("note", "")).rsplit(" to ", 1)[-1] if placed else ""
        if last_node:
            answer["last_node"] = last_node
            history = history + [r for r in src.mentioning(last_node) if r not in history]
    moves = _unique(r for r in history if r.get("decision") in MOVES)
    moves += [e for e in events if e.get("reason") == "Evicted"]
    if moves:
        answer["moved_by"] = moves
    return answer


def explain_node(src: Sources, name: str) -> dict[str, Any]:
    """Which claim launched node `name` and why, what consolidation thinks of it, what comes next.

    Raises LookupError when the cluster has no such node and no claim names it.
    """
    node = next((n for n in src.snapshot.nodes if n.name == name), None)
    claims = src.claims()
    claim = next(
        (
            c
            for c in claims
            if c.node_name == name
            or (node is not None and (c.name == node.nodeclaim or c.provider_id == node.provider_id))
        ),
        None,
    )
    if node is None and claim is None:
        raise LookupError(f"node {name} is not in the cluster and no claim names it")
    answer: dict[str, Any] = {"node": name, "exists": node is not None}
    overflow = overflows(src.snapshot, [pc.nodepool for pc in src.pools]).get(name)
    if overflow is not None:
        answer["daemonset_overflow"] = overflow.describe()
    events = src.about("Node", name)
    if events:
        answer["events"] = events
    if claim is None:
        mirrored = _claim_object(src, name, node.nodeclaim if node is not None else "")
        answer["claim"] = None
        if mirrored is not None:
            # The state table was not read (a kubeconfig only): its mirror in the cluster answers.
            answer["nodeclaim_object"] = mirrored
            answer["next"] = (
                "launched by Nodewright (its NodeClaim object); what consolidation makes of it needs the state table"
            )
            return answer
        answer["next"] = "nothing: Nodewright did not launch this node and will not disrupt it"
        return answer
    answer["claim"] = _claim_summary(claim)
    launch = [r for r in src.mentioning(claim.name) if r.get("decision") == "launch"]
    if launch:
        answer["launched_because"] = {
            k: launch[-1].get(k) for k in ("reason", "pods", "instance_type_options", "price", "at")
        }
    commands = src.command_records.commands()
    inp = DisruptionInput(
        # DRA claims as the consolidator reads them (`Consolidator.disruption_input`).
        snapshot=lower(src.snapshot, (), (t for pc in src.pools for t in pc.instance_types)).snapshot,
        claims=tuple(claims),
        pools=src.pools,
        now=src.now,
        blocked=src.offering_blocks.blocked_offerings(src.now),
        in_progress=frozenset(n for r in commands for n in r.candidates),
    )
    verdict = claim_verdicts(inp, commands).get(claim.name)
    if verdict is not None:
        answer["consolidatable"] = not verdict.consolidatable
        answer["blocked_by"] = verdict.consolidatable
        answer["drifted"] = verdict.drifted
        answer["disrupting"] = verdict.disrupting
    running = next((r for r in commands if name in r.candidates), None)
    if running is not None:
        answer["next"] = f"command {running.id} ({running.method}) is in state {running.state}: {running.detail}"
    elif verdict is not None and verdict.disrupting:
        answer["next"] = verdict.disrupting
    else:
        result = compute_commands(inp)
        chosen = next((c for c in result.commands if name in c.candidates), None)
        if chosen is not None:
            answer["next"] = f"the next consolidator pass would take it: {chosen.method}: {chosen.detail}"
        else:
            answer["next"] = f"stays: {result.rejected.get(name, 'no disruption method selects it')}"
    return answer


def status(src: Sources, *, hour: float = 3600.0) -> dict[str, Any]:
    """The system at a glance: each function's last invocation, claims in flight, running commands,
    the capacity-error cache, errors and API requests in the last `hour` seconds.
    """
    claims = src.claims()
    last: dict[str, dict[str, Any]] = {}
    errors = 0
    requests = 0
    for record in src.decisions:
        at = float(record.get("at") or 0.0)
        function = str(record.get("function") or "")
        # The last decision of each function, not its bookkeeping (API usage, the mirror's writes).
        if (
            function
            and record.get("decision") not in BOOKKEEPING
            and at >= float(last.get(function, {}).get("at") or 0)
        ):
            last[function] = {"at": at, "decision": record.get("decision")}
        if at and src.now - at > hour:
            continue
        if str(record.get("level", "")).upper() == "ERROR" or str(record.get("decision", "")).endswith("failed"):
            errors += 1
        if record.get("decision") == "kube-api-usage":
            requests += sum(int(c.get("requests", 0)) for c in record.get("calls") or ())
    blocked = sorted("/".join(o) for o in src.offering_blocks.blocked_offerings(src.now))
    answer: dict[str, Any] = {
        "functions": last,
        "claims_in_flight": [_claim_summary(c) for c in claims if c.state in IN_FLIGHT],
        "claims": len(claims),
        "commands": [_command_summary(r) for r in src.command_records.commands()],
        "capacity_errors": blocked,
        "errors_last_hour": errors,
        "kube_requests_last_hour": requests,
        "hourly_cost": round(sum(c.price for c in claims if c.state != "pending"), 4),
    }
    if src.claim_objects:
        # The cluster's mirror of the claims: what `kubectl get nwnc` shows, read without AWS.
        answer["nodeclaim_objects"] = {
            "total": len(src.claim_objects),
            "ready": sum(
                1
                for o in src.claim_objects
                for c in (o.get("status") or {}).get("conditions") or ()
                if c.get("type") == "Ready" and c.get("status") == "True"
            ),
        }
    return answer


def _unique(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first record of each (decision, event, command): a drain's continuations say it once."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for record in records:
        key = (str(record.get("decision")), str(record.get("event", "")), str(record.get("command", "")))
        if key not in seen:
            seen.add(key)
            out.append(record)
    return out


def event_rows(stored: Sequence[StoredEvent]) -> list[dict[str, Any]]:
    """Stored Events (`nodewright.model.event.StoredEvent`: what the API server holds) as the dicts
    `Sources.events` takes.
    """
    return [
        {
            "kind": e.event.regarding.kind,
            "namespace": e.event.regarding.namespace,
            "name": e.event.regarding.name,
            "type": e.event.type,
            "reason": e.event.reason,
            "note": e.event.note,
            "first": e.first,
            "last": e.last or e.first,
            "count": e.count,
        }
        for e in stored
    ]


def _claim_summary(claim: NodeClaim) -> dict[str, Any]:
    return {
        "name": claim.name,
        "nodepool": claim.nodepool,
        "state": claim.state,
        "instance_type": claim.instance_type,
        "capacity_type": claim.capacity_type,
        "zone": claim.zone,
        "price": claim.price,
        "node": claim.node_name,
        "pods": len(claim.pods),
        "options": list(claim.instance_type_options[:5]),
        "reason": claim.reason,
        "created_at": claim.created_at,
        "launched_at": claim.launched_at,
    }


def _command_summary(record: CommandRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "method": record.method,
        "state": record.state,
        "candidates": list(record.candidates),
        "replacements": list(record.replacements),
        "savings": record.savings,
        "detail": record.detail,
        "since": record.created_at,
    }


def _ready_by(claim: NodeClaim, claims: Sequence[NodeClaim]) -> float | None:
    """When the claim's node should be initialized: its launch plus the median launch-to-initialized
    time of this cluster's claims (DEFAULT_STARTUP before any has been measured).
    """
    if claim.initialized_at:
        return claim.initialized_at
    measured = [c.initialized_at - c.launched_at for c in claims if c.initialized_at and c.launched_at]
    startup = statistics.median(measured) if measured else DEFAULT_STARTUP
    start = claim.launched_at or claim.created_at
    return round(start + startup, 1) if start else None


def _why_unschedulable(src: Sources, key: str, claims: Sequence[NodeClaim]) -> dict[str, Any]:
    """What a provisioning pass would do with this one pod now: solve() read-only, on the
    provisioner's own input rules (`provisioning_input`).
    """
    snapshot = src.snapshot
    pod = next(p for p in snapshot.pods if p.key == key)
    blocked = src.offering_blocks.blocked_offerings(src.now)
    result = solve(
        provisioning_input(snapshot, pending=(pod,), pools=src.pools, claims=claims, blocked=blocked, now=src.now)
    )
    if key in result.unschedulable:
        return {"schedulable": False, "reason": result.unschedulable[key]}
    for name, pods in result.existing.items():
        if key in pods:
            return {"schedulable": True, "would_go_to": name}
    planned = next((c for c in result.claims if any(p.key == key for p in c.pods)), None)
    if planned is not None:
        return {
            "schedulable": True,
            "would_launch": {
                "nodepool": planned.nodepool,
                "options": [t.name for t in planned.options[:5]],
                "price": planned.price,
            },
        }
    return {"schedulable": True}


def _claim_object(src: Sources, node: str, nodeclaim: str) -> dict[str, Any] | None:
    """The cluster's NodeClaim object for a node (by `status.nodeName`, or the node's
    `nodewright.io/nodeclaim` label), summed up as `kubectl get nodeclaims -o wide` shows it, with
    its conditions; None when there is none.
    """
    for obj in src.claim_objects:
        metadata = obj.get("metadata") or {}
        status = obj.get("status") or {}
        if status.get("nodeName") != node and not (nodeclaim and metadata.get("name") == nodeclaim):
            continue
        labels = metadata.get("labels") or {}
        return {
            "name": metadata.get("name"),
            "nodepool": labels.get("karpenter.sh/nodepool"),
            "instance_type": labels.get("node.kubernetes.io/instance-type"),
            "capacity_type": labels.get("karpenter.sh/capacity-type"),
            "zone": labels.get("topology.kubernetes.io/zone"),
            "provider_id": status.get("providerID"),
            "created": metadata.get("creationTimestamp"),
            "conditions": [
                {k: c.get(k) for k in ("type", "status", "reason", "message") if c.get(k) is not None}
                for c in status.get("conditions") or ()
            ],
        }
    return None
