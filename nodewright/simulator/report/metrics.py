"""What a simulation measures, and the summary it reports. Pure bookkeeping over plain records.

Definitions (also written into report.md):

* `pending_seconds`: per workload pod, from its creation (unbound, so Pending) to its binding;
  pods bound at once count 0 s; pods still pending at the end count with their time so far.
* `pending_to_launch_seconds`: per pending pod that a new node was launched for, from its creation
  to the CreateFleet call of the first claim holding it (the provisioner's goal: 3 s p50, 12 s p99).
* `displaced_pending_seconds`: the same, only for the pods that replace pods evicted or deleted
  from a node, by cause: `interruption` (from a node that received a spot interruption signal)
  or `other` (consolidation, a node removed for another reason).
* `pods_lost`: workload pods still on a node when the node went away (its instance terminated,
  or its Node deleted) without having been evicted, except those counted in
  `pods_held_by_pdb_at_interruption`: pods on an interrupted node whose eviction a
  PodDisruptionBudget refused after the node's first signal, so that no drain could have moved
  them before the instance went (listed per pod in the report).
* `pdb_violations`: pods removed by a controller (evicted, or on a Node deleted or an instance
  terminated by a controller) while a PodDisruptionBudget covering them allowed no disruption.
* `do_not_disrupt_violations`: pods annotated do-not-disrupt removed that way, except from nodes
  that had received a spot interruption warning (an involuntary disruption: the pods go anyway).
* `interruption`: per interrupted instance, seconds from its spot interruption warning to the
  cordon, to the first replacement request (a provisioner invoke or a CreateFleet after its first
  signal) and to the moment its node held no workload pod (0 when done before the warning, e.g.
  on the rebalance recommendation; the time to the reclaim when it never happened); the maximum
  over instances. Instances already gone when their first signal came are left out.
* `repair`: per node the scenario broke (`node_failures`), seconds from the failure to its
  recovery: the node holds no workload pod and every pod displaced from it (evicted or deleted,
  recreated by its owner) is bound again elsewhere (p50/max, overall and by cause); seconds from
  the failure to the node's removal; how many were removed, by whom (`repair`: a repair command),
  and how many had not recovered by the end.
* `cost_usd`: the sum over instances of hours running (launch to termination or the end of the
  run) times the offering's price. `cost_without_consolidation_usd`: an estimate of the same run
  with a cluster that never shrinks (no consolidation): at every moment it costs the highest $/h
  reached so far. It ignores how packing would have differed, so compare runs with
  `consolidation: off` for an exact figure.
* `provisioner_launches_for_consolidated_pods`: provisioner launches whose pods were all still
  bound to nodes a consolidation command was draining (the consolidator launches their
  replacements itself, so these nodes are extra capacity).
* `limit_violations`: launches after which a NodePool's instances exceeded one of its limits.
* `consolidation_moves`: pods evicted from nodes a consolidation command had tainted, the
  cost saved (`cost_without_consolidation_usd - cost_usd`) and pods moved per dollar saved: what
  a consolidation mode's savings cost in disruption.
* `pods_created`: workload pods created unbound, counting every creation (a StatefulSet pod
  recreated under its old name counts each time).
* `fidelity`: the simulated EC2 audited. `launches`: instances CreateFleet started;
  `launches_not_cheapest`: those dearer (per unit of weighted capacity) than the cheapest override
  of their request that had capacity (spot `price-capacity-optimized` may rightly prefer a deeper
  pool); `on_demand_not_cheapest`: the same for on-demand `lowest-price` fleets, which must be 0.
  `replaces`: consolidation replacements launched; `replaces_not_cheaper`: those whose new nodes
  cost at least what the nodes they replace cost (rolled back when the consolidator saw it);
  `replaces_dearer_than_promised`: those whose new nodes cost more than the command planned.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FIDELITY_EPSILON = 1e-9
# A stopped standby instance is billed for its root volume only: 20 GiB of gp3 at $0.08 per
# GB-month (us-east-1 list price; EC2NodeClass's default root volume), over 730 hours a month.
# Running instances are priced without their volumes, as everywhere in the simulator.
STANDBY_VOLUME_USD_PER_HOUR = 20 * 0.08 / 730


@dataclass
class InstanceRecord:
    """One EC2 instance from launch to termination."""

    instance_id: str
    instance_type: str
    zone: str
    capacity_type: str
    nodepool: str
    price: float
    launched_at: float
    launched_by: str
    nodeclaim: str = ""
    image_id: str = ""
    node: str = ""
    ready_at: float | None = None
    terminated_at: float | None = None
    terminated_by: str = ""
    # A standby instance: seconds stopped before its last start, since when it is stopped now,
    # when it was stopped and started from standby, and when its Node was Ready again after each start.
    stopped_seconds: float = 0.0
    stopped_at: float | None = None
    stops: list[float] = field(default_factory=list)
    started_at: list[float] = field(default_factory=list)
    ready_again_at: list[float] = field(default_factory=list)

    def hours(self, end: float) -> float:
        """Hours billed at the instance's price up to `end` (or the termination): not while stopped."""
        stop = self.terminated_at if self.terminated_at is not None else end
        return max(0.0, stop - self.launched_at - self.stopped_hours(end) * 3600) / 3600

    def stopped_hours(self, end: float) -> float:
        """Hours stopped up to `end` (or the termination): billed for the root volume only."""
        stop = self.terminated_at if self.terminated_at is not None else end
        now = max(0.0, stop - self.stopped_at) if self.stopped_at is not None else 0.0
        return (self.stopped_seconds + now) / 3600


@dataclass
class InterruptionRecord:
    """One interrupted spot instance: when each signal came and what the handlers did."""

    instance_id: str
    node: str
    first_signal: float
    warning_at: float
    reclaim_at: float
    rebalance_at: float | None = None
    cordoned_at: float | None = None
    drained_at: float | None = None
    replacement_at: float | None = None
    reclaimed: bool = False
    pods_at_reclaim: int = 0

    def since_warning(self, at: float | None, fallback: float) -> float:
        """Seconds from the warning to `at` (0 when earlier); `fallback` when it never happened."""
        if at is None:
            return fallback
        return max(0.0, at - self.warning_at)


@dataclass
class RepairRecord:
    """One node the scenario broke: how, when, the pods it held, and what became of it."""

    node: str
    instance_id: str
    cause: str  # "Ready=Unknown", "KernelReady=False", "status-check:system", ...
    broke_at: float
    pods: int
    removed_at: float | None = None
    removed_by: str = ""
    recovered_at: float | None = None
    waiting: set[str] = field(default_factory=set)  # displaced pods not bound again yet


@dataclass
class Sample:
    """The cluster at one moment, for the plots."""

    t: float
    nodes: Mapping[str, int]
    booting: int
    pending: int
    running: int
    hourly_cost: float


@dataclass
class Violation:
    """One PDB or do-not-disrupt violation, for the report."""

    at: float
    kind: str
    pod: str
    node: str
    how: str
    budget: str = ""


@dataclass
class LaunchAudit:
    """One instance a CreateFleet started, against the cheapest override its request allowed
    (prices per unit of weighted capacity, from the scenario's price table).
    """

    at: float
    instance_id: str
    capacity_type: str
    strategy: str
    instance_type: str
    zone: str
    price: float
    cheapest_type: str
    cheapest_zone: str
    cheapest_price: float

    @property
    def must_be_cheapest(self) -> bool:
        """On-demand `lowest-price`: EC2 launches the cheapest override it has capacity for."""
        return self.capacity_type == "on-demand" and self.strategy == "lowest-price"

    @property
    def cheapest(self) -> bool:
        """True when nothing the request allowed (and EC2 had) was cheaper."""
        return self.price <= self.cheapest_price + FIDELITY_EPSILON


@dataclass
class ReplaceAudit:
    """One consolidation command's replacements once launched: what the nodes they replace cost,
    what the command promised and what came up ($/h).
    """

    at: float
    command: str
    candidates: tuple[str, ...]
    replaced_price: float
    promised_price: float
    launched_types: tuple[str, ...]
    launched_price: float
    rolled_back: bool = False

    @property
    def cheaper(self) -> bool:
        """True when the new nodes cost less than the ones they replace."""
        return self.launched_price < self.replaced_price - FIDELITY_EPSILON


@dataclass
class Recorder:
    """Everything measured during a run (filled in by the world)."""

    start: float
    instances: dict[str, InstanceRecord] = field(default_factory=dict)
    interruptions: dict[str, InterruptionRecord] = field(default_factory=dict)
    repairs: dict[str, RepairRecord] = field(default_factory=dict)  # by node
    samples: list[Sample] = field(default_factory=list)
    pending_since: dict[str, float] = field(default_factory=dict)
    created: dict[str, float] = field(default_factory=dict)
    pending_seconds: list[float] = field(default_factory=list)
    pending_by_pod: dict[str, float] = field(default_factory=dict)
    displaced: dict[str, str] = field(default_factory=dict)
    launch_latency: dict[str, float] = field(default_factory=dict)
    lost: list[tuple[float, str, str]] = field(default_factory=list)
    held_by_pdb: list[tuple[float, str, str]] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    limit_violations: list[dict[str, Any]] = field(default_factory=list)
    replacement_requests: list[float] = field(default_factory=list)
    launches: list[float] = field(default_factory=list)
    capacity_errors: list[tuple[float, str]] = field(default_factory=list)
    double_launches: int = 0
    creations: int = 0
    consolidation_moves: int = 0
    fleet_launches: list[LaunchAudit] = field(default_factory=list)
    replaces: list[ReplaceAudit] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # With the scenario's node_roles: the IAM role(s) each instance Nodewright launched holds,
    # read from EC2 and IAM at the end of the run (its instance profile's roles).
    node_roles: dict[str, tuple[str, ...]] = field(default_factory=dict)
    invocations: Counter[str] = field(default_factory=Counter)
    busy: Counter[str] = field(default_factory=Counter)
    errors: list[dict[str, Any]] = field(default_factory=list)
    timeouts: Counter[str] = field(default_factory=Counter)
    wall: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    # The scenario's AMI releases: (when, the image ids the public parameters point at from then).
    image_releases: list[tuple[float, frozenset[str]]] = field(default_factory=list)

    # -- pods ----------------------------------------------------------------------------------------

    def pod_created(self, key: str, at: float) -> None:
        """A workload pod was created unbound."""
        self.pending_since[key] = at
        self.created[key] = at
        self.creations += 1

    def pod_bound(self, key: str, at: float) -> None:
        """A pod was bound to a node."""
        since = self.pending_since.pop(key, None)
        if since is not None:
            self.pending_seconds.append(at - since)
            if key in self.displaced:
                self.pending_by_pod[key] = at - since

    def pod_gone(self, key: str) -> None:
        """A pod was deleted (bound or not)."""
        self.pending_since.pop(key, None)

    def launched_for(self, pods: Iterable[str], at: float) -> None:
        """A claim holding `pods` was launched at `at` (only pods still pending count)."""
        for pod in pods:
            if pod not in self.launch_latency and pod in self.pending_since:
                self.launch_latency[pod] = at - self.pending_since[pod]

    # -- the summary -------------------------------------------------------------------------------

    def cost(self, end: float) -> float:
        """Instance-hours times price, up to `end`; stopped standby instances, their volumes."""
        running = sum(r.hours(end) * r.price for r in self.instances.values())
        return running + sum(r.stopped_hours(end) for r in self.instances.values()) * STANDBY_VOLUME_USD_PER_HOUR

    def cost_without_consolidation(self, end: float) -> float:
        """See the module docstring: the integral of the highest $/h reached so far."""
        changes: list[tuple[float, float]] = []
        for record in self.instances.values():
            changes.append((record.launched_at, record.price))
            if record.terminated_at is not None:
                changes.append((record.terminated_at, -record.price))
        changes.sort(key=lambda change: (change[0], -change[1]))
        hourly = peak = total = 0.0
        last = self.start
        for at, delta in changes:
            if at > end:
                break
            total += peak * (at - last) / 3600
            last = at
            hourly += delta
            peak = max(peak, hourly)
        return total + peak * max(0.0, end - last) / 3600

    def summary(self, end: float, wall_seconds: float) -> dict[str, Any]:
        """The figures of summary.json."""
        pending = [*self.pending_seconds, *(end - since for since in self.pending_since.values())]
        terminated = Counter(r.terminated_by for r in self.instances.values() if r.terminated_at is not None)
        cordon, replace, drain = [], [], []
        gone = 0
        for record in self.interruptions.values():
            instance = self.instances.get(record.instance_id)
            if (
                instance is not None
                and instance.terminated_at is not None
                and instance.terminated_at < record.first_signal
            ):
                gone += 1  # removed (e.g. consolidated) before its first signal: nothing to handle
                continue
            cordon.append(record.since_warning(record.cordoned_at, record.reclaim_at - record.warning_at))
            replace.append(record.since_warning(record.replacement_at, record.reclaim_at - record.warning_at))
            drain.append(record.since_warning(record.drained_at, record.reclaim_at - record.warning_at))
        by_kind = Counter(v.kind for v in self.violations)
        cost = self.cost(end)
        out: dict[str, Any] = {
            "pods_lost": len(self.lost),
            "pods_held_by_pdb_at_interruption": len(self.held_by_pdb),
            "pdb_violations": by_kind["pdb"],
            "do_not_disrupt_violations": by_kind["do-not-disrupt"],
            "limit_violations": len(self.limit_violations),
            "pending_seconds": percentiles(pending),
            "pending_to_launch_seconds": percentiles(list(self.launch_latency.values())),
            "pods_created": self.creations,
            "pods_pending_at_end": len(self.pending_since),
            "displaced_pending_seconds": {
                cause: percentiles(
                    [
                        self.pending_by_pod.get(key, end - self.pending_since.get(key, end))
                        for key, why in self.displaced.items()
                        if why == cause and (key in self.pending_by_pod or key in self.pending_since)
                    ]
                )
                for cause in ("interruption", "other")
            },
            "interruption": {
                "instances": len(self.interruptions) - gone,
                "gone_before_the_signal": gone,
                "cordon_seconds_max": _max(cordon),
                "replacement_request_seconds_max": _max(replace),
                "drain_seconds_max": _max(drain),
                "reclaimed_with_pods": sum(1 for r in self.interruptions.values() if r.pods_at_reclaim),
            },
            "repair": self.repair(),
            "nodes_launched": len(self.instances),
            "nodes_launched_by": dict(sorted(Counter(r.launched_by for r in self.instances.values()).items())),
            "nodes_terminated": dict(sorted(terminated.items())),
            "nodes_at_end": sum(1 for r in self.instances.values() if r.terminated_at is None),
            "capacity_errors": len(self.capacity_errors),
            "provisioner_launches_for_consolidated_pods": self.double_launches,
            "cost_usd": round(cost, 4),
            "cost_without_consolidation_usd": round(self.cost_without_consolidation(end), 4),
            "consolidation_moves": self.moves(end),
            "fidelity": self.fidelity(),
            "invocations": dict(sorted(self.invocations.items())),
            "invocations_lease_busy": dict(sorted(self.busy.items())),
            "handler_errors": len(self.errors),
            "handler_timeouts": dict(sorted(self.timeouts.items())),
            "wall_seconds_by_part": {k: round(v, 2) for k, v in sorted(self.wall.items())},
            "wall_seconds": round(wall_seconds, 2),
        }
        images = self.images(end)
        if images is not None:  # only when an AMI was released: other summaries unchanged
            out["ami_releases"] = images
        standby = self.standby(end)
        if standby is not None:  # only when a standby instance was stopped: other summaries unchanged
            out["standby"] = standby
            out["fidelity"]["nodes_from_standby"] = standby["nodes_from_standby"]
        return out

    def images(self, end: float) -> dict[str, Any] | None:
        """After the AMI releases: how many instances Nodewright launched still ran an image older
        than the latest release at the end, and when the last one launched before the release
        went (how long the roll took); None when no AMI was released.
        """
        if not self.image_releases:
            return None
        at, current = self.image_releases[-1]
        ours = [r for r in self.instances.values() if r.launched_by != "world"]  # not initial nodes
        older = [r for r in ours if r.image_id and r.image_id not in current]
        live = [r for r in older if r.terminated_at is None or r.terminated_at > end]
        gone = [r.terminated_at for r in older if r.terminated_at is not None and r.launched_at < at]
        return {
            "releases": len(self.image_releases),
            "last_release_at_seconds": round(at - self.start, 1),
            "instances_on_older_images": len(older),
            "on_older_images_at_end": len(live),
            "rolled_seconds": None if live or not gone else round(max(gone) - at, 1),
        }

    def standby(self, end: float) -> dict[str, Any] | None:
        """Standby instances: how many were stopped, started (and their Nodes Ready again, how
        fast), and which nodes came from standby; None when no instance was ever stopped.
        """
        stood = [r for r in self.instances.values() if r.started_at or r.stopped_at is not None or r.stopped_seconds]
        if not stood:
            return None
        return {
            "instances": len(stood),
            "stopped_at_end": sum(1 for r in stood if r.stopped_at is not None and r.terminated_at is None),
            "starts": sum(len(r.started_at) for r in stood),
            "start_to_ready_seconds": percentiles(
                [ready - start for r in stood for start, ready in zip(r.started_at, r.ready_again_at, strict=False)]
            ),
            "stopped_hours": round(sum(r.stopped_hours(end) for r in stood), 4),
            "volume_cost_usd": round(sum(r.stopped_hours(end) for r in stood) * STANDBY_VOLUME_USD_PER_HOUR, 4),
            "nodes_from_standby": sorted(r.node or r.instance_id for r in stood if r.started_at),
        }

    def repair(self) -> dict[str, Any]:
        """The broken nodes' recoveries (see `repair` in the module docstring)."""
        records = list(self.repairs.values())
        done = [r for r in records if r.recovered_at is not None]
        causes = sorted({r.cause for r in records})
        return {
            "nodes_broken": len(records),
            "pods_on_broken_nodes": sum(r.pods for r in records),
            "recovery_seconds": percentiles([r.recovered_at - r.broke_at for r in done if r.recovered_at is not None]),
            "removal_seconds": percentiles([r.removed_at - r.broke_at for r in records if r.removed_at is not None]),
            "recovery_seconds_by_cause": {
                cause: percentiles(
                    [r.recovered_at - r.broke_at for r in done if r.cause == cause and r.recovered_at is not None]
                )
                for cause in causes
            },
            "removed_by": dict(sorted(Counter(r.removed_by for r in records if r.removed_at is not None).items())),
            "not_recovered": len(records) - len(done),
        }

    def moves(self, end: float) -> dict[str, float | int | None]:
        """Pods consolidation moved, what it saved, and pods moved per dollar saved."""
        saved = self.cost_without_consolidation(end) - self.cost(end)
        return {
            "pods_moved": self.consolidation_moves,
            "saved_usd": round(saved, 4) or 0.0,  # never -0.0
            "pods_moved_per_dollar_saved": round(self.consolidation_moves / saved, 1) if saved > 0 else None,
        }

    def fidelity(self) -> dict[str, int]:
        """The simulated EC2's audit (see `fidelity` in the module docstring)."""
        launches = self.fleet_launches
        return {
            "launches": len(launches),
            "launches_not_cheapest": sum(1 for a in launches if not a.cheapest),
            "on_demand_not_cheapest": sum(1 for a in launches if a.must_be_cheapest and not a.cheapest),
            "replaces": len(self.replaces),
            "replaces_not_cheaper": sum(1 for r in self.replaces if not r.cheaper),
            "replaces_dearer_than_promised": sum(
                1 for r in self.replaces if r.launched_price > r.promised_price + FIDELITY_EPSILON
            ),
            "replaces_rolled_back": sum(1 for r in self.replaces if r.rolled_back),
        }


def percentiles(values: Sequence[float]) -> dict[str, float | int]:
    """p50/p95/p99/max (nearest rank) and the count; zeros for no values."""
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0, "count": 0}
    ordered = sorted(values)

    def rank(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))], 3)

    top = round(ordered[-1], 3)
    return {"p50": rank(0.50), "p95": rank(0.95), "p99": rank(0.99), "max": top, "count": len(ordered)}


def _max(values: Sequence[float]) -> float | None:
    return round(max(values), 3) if values else None
