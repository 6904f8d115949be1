"""Node repair: which broken nodes to replace, and why. Pure.

A node is *unhealthy* when one of the repair policies matches it, and *due* for repair once the
matching status has held for the policy's toleration, counted from the condition's
lastTransitionTime. The policies are Karpenter's (the v1 core's node health controller asks the
cloud provider; the AWS provider answers with the kubelet's Ready and the EKS node monitoring
agent's conditions), plus the EC2 status checks, which Karpenter does not read:

    condition                 status    toleration   set by
    Ready                     False     30 min       the kubelet
    Ready                     Unknown   30 min       the node lifecycle controller (kubelet silent)
    AcceleratedHardwareReady  False     10 min       the EKS node monitoring agent (GPU, Neuron)
    StorageReady              False     30 min       the EKS node monitoring agent
    NetworkingReady           False     30 min       the EKS node monitoring agent
    KernelReady               False     30 min       the EKS node monitoring agent
    ContainerRuntimeReady     False     30 min       the EKS node monitoring agent
    EC2StatusCheck            impaired  10 min       DescribeInstanceStatus (system, instance or
                                                     attached-EBS check; since ImpairedSince)

When several match, the one due first counts (Karpenter requeues on the closest). A status whose
start is unknown counts as unhealthy for the guards but is never due: repair acts on evidence.

Guards, Karpenter's 20% rule with its rounding (up, as for PodDisruptionBudgets: of three nodes,
one may be unhealthy), `pct` being `DisruptionOptions.repair_max_unhealthy_percent`:

* NodePool: while more of a NodePool's nodes are unhealthy (due or not, under repair included)
  than ceil(pct x its nodes), none of them is repaired: so many broken at once points at the
  NodePool's template or AMI, which new nodes would share.
* Cluster: while more of all the cluster's nodes (Nodewright's or not) are unhealthy than
  ceil(pct x all nodes), nothing is repaired: nodes failing everywhere at once is a control-plane
  or network problem, and replacing them would only churn. Karpenter applies this rule to
  NodeClaims without a NodePool only; here it holds for every repair.

With pct 0 nothing is repaired (every unhealthy node is over the cap). Repair is forceful, as in
Karpenter: disruption budgets, `do-not-disrupt`, recent nominations and PodDisruptionBudgets do
not hold it (a node broken for its toleration no longer serves its pods). Every due node that
passes the guards goes into one command, with replacements planned for its pods (launched first);
the controller drains with a deadline. Only initialized nodes of an existing NodePool are
repaired (a node that never became ready is the registration timeout's), and a node already
being deleted or under a running command is left to it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodewright.engine.disruption.candidates import ClusterView
from nodewright.engine.disruption.types import DisruptionInput
from nodewright.model.duration import format_duration
from nodewright.model.instance import InstanceStatus
from nodewright.model.node import Node
from nodewright.model.standby import STANDBY_LABEL

STATUS_CHECK = "EC2StatusCheck"
IMPAIRED = "impaired"
MINUTE = 60.0


@dataclass(frozen=True, slots=True)
class RepairPolicy:
    """A node condition `condition` at `status` for `toleration` seconds means the node is broken."""

    condition: str
    status: str
    toleration: float


# The table in the module docstring (Karpenter's RepairPolicies for AWS, then the status checks).
POLICIES = (
    RepairPolicy("Ready", "False", 30 * MINUTE),
    RepairPolicy("Ready", "Unknown", 30 * MINUTE),
    RepairPolicy("AcceleratedHardwareReady", "False", 10 * MINUTE),
    RepairPolicy("StorageReady", "False", 30 * MINUTE),
    RepairPolicy("NetworkingReady", "False", 30 * MINUTE),
    RepairPolicy("KernelReady", "False", 30 * MINUTE),
    RepairPolicy("ContainerRuntimeReady", "False", 30 * MINUTE),
    RepairPolicy(STATUS_CHECK, IMPAIRED, 10 * MINUTE),
)


@dataclass(frozen=True, slots=True)
class Finding:
    """Why a node is unhealthy: the condition and status that matched, since when (0.0: unknown),
    and the policy's toleration. `due` is when repair may start (infinite when `since` is unknown).
    """

    node: str
    condition: str
    status: str
    since: float
    toleration: float

    @property
    def due(self) -> float:
        """When the toleration runs out."""
        return self.since + self.toleration if self.since else math.inf

    def held(self, now: float) -> float:
        """How long the status has held at `now` (0 when its start is unknown)."""
        return max(0.0, now - self.since) if self.since else 0.0

    def describe(self, now: float) -> str:
        """`Ready=Unknown for 31m (toleration 30m)`, for details a person reads."""
        held = f"for {format_duration(round(self.held(now)))}" if self.since else "since an unknown time"
        return f"{self.condition}={self.status} {held} (toleration {format_duration(round(self.toleration))})"


def diagnose(node: Node, status: InstanceStatus | None) -> Finding | None:
    """The policy match on `node` (and its instance's impaired `status`) due first, or None."""
    best: Finding | None = None
    for policy in POLICIES:
        if policy.condition == STATUS_CHECK:
            if status is None or not status.impaired:
                continue
            found = Finding(
                node.name, STATUS_CHECK, f"{IMPAIRED} ({', '.join(status.impaired)})", status.since, policy.toleration
            )
        else:
            condition = node.condition(policy.condition)
            if condition is None or condition.status != policy.status:
                continue
            found = Finding(node.name, policy.condition, policy.status, condition.since, policy.toleration)
        if best is None or (found.due, found.condition) < (best.due, best.condition):
            best = found
    return best


def findings(inp: DisruptionInput) -> dict[str, Finding]:
    """Every unhealthy node of the snapshot, by name (due or not)."""
    return diagnoses(inp.snapshot.nodes, inp.instance_statuses)


def allowed_unhealthy(nodes: int, percent: int) -> int:
    """How many of `nodes` may be unhealthy for repair to go on: `percent` of them, rounded up."""
    return math.ceil(nodes * max(0, percent) / 100)


@dataclass(frozen=True, slots=True)
class Selection:
    """The due nodes repair may take now (`chosen`, due first), with their findings, and why each
    unhealthy node it leaves is left (`held`).
    """

    chosen: tuple[Finding, ...]
    held: Mapping[str, str]


def select(view: ClusterView, ignore: frozenset[str] = frozenset()) -> Selection:
    """Apply the module's rules to one `ClusterView` (see the module docstring); nodes in `ignore`
    are not taken for part of a running command (a command re-checking itself).
    """
    inp = view.inp
    now = inp.now
    pct = inp.options.repair_max_unhealthy_percent
    found = findings(inp)
    held: dict[str, str] = {}
    if not found:
        return Selection((), held)
    total = len(inp.snapshot.nodes)
    cap = allowed_unhealthy(total, pct)
    if len(found) > cap:
        text = (
            f"but {len(found)} of the cluster's {total} nodes are unhealthy (more than {pct}%, {cap} node(s)): "
            "a control-plane or network problem, not broken nodes; no repair"
        )
        return Selection((), {name: f"{found[name].describe(now)}, {text}" for name in sorted(found)})
    in_pool: dict[str, int] = {}
    sick_in_pool: dict[str, int] = {}
    for node in inp.snapshot.nodes:
        if node.nodepool:
            in_pool[node.nodepool] = in_pool.get(node.nodepool, 0) + 1
            if node.name in found:
                sick_in_pool[node.nodepool] = sick_in_pool.get(node.nodepool, 0) + 1
    chosen: list[Finding] = []
    for node in sorted(inp.snapshot.nodes, key=lambda n: n.name):
        finding = found.get(node.name)
        if finding is None:
            continue
        reason = _not_repairable(view, node, finding, inp.in_progress - ignore)
        if not reason:
            pool = node.nodepool
            pool_cap = allowed_unhealthy(in_pool[pool], pct)
            if sick_in_pool[pool] > pool_cap:
                reason = (
                    f"{sick_in_pool[pool]} of NodePool {pool}'s {in_pool[pool]} nodes are unhealthy (more than "
                    f"{pct}%, {pool_cap} node(s)): the NodePool itself looks broken; no repair"
                )
        if reason:
            held[node.name] = f"{finding.describe(now)}; {reason}"
        else:
            chosen.append(finding)
    chosen.sort(key=lambda f: (f.due, f.node))
    return Selection(tuple(chosen), held)


def _not_repairable(view: ClusterView, node: Node, finding: Finding, in_progress: frozenset[str]) -> str:
    """Why this unhealthy node is not repaired now, or '' (the guards aside)."""
    claim = view.claim_by_node.get(node.name)
    if claim is None or not node.nodepool:
        return "not managed by Nodewright"
    if claim.nodepool not in view.pools:
        return f"its NodePool {claim.nodepool} no longer exists"
    if node.deleting or claim.state == "deleting":
        return "already being deleted"
    if STANDBY_LABEL in node.labels:
        return "a standby instance: stopped on purpose, replaced by the provisioner when stale"
    if claim.state != "initialized":
        return f"not initialized yet (claim state {claim.state}): the registration timeout's to handle"
    if node.name in in_progress:
        return "already part of a running disruption command"
    if finding.due > view.inp.now:
        if not finding.since:
            return "its start is unknown, so its toleration cannot be known to have passed"
        return f"repair in {format_duration(round(finding.due - view.inp.now))}"
    return ""


def due(inp: DisruptionInput) -> tuple[str, ...]:
    """The nodes whose toleration has run out (guards aside), sorted: what a pass that found
    nothing to do must notice changing even when nothing else did.
    """
    return tuple(sorted(name for name, f in findings(inp).items() if f.due <= inp.now))


def diagnoses(nodes: Sequence[Node], statuses: Sequence[InstanceStatus]) -> dict[str, Finding]:
    """`diagnose` for each of `nodes` that is unhealthy (what the controller logs a repair with)."""
    by_instance = {s.instance_id: s for s in statuses}
    out: dict[str, Finding] = {}
    for node in nodes:
        found = diagnose(node, by_instance.get(node.instance_id) if node.instance_id else None)
        if found is not None:
            out[node.name] = found
    return out
