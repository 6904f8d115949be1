"""`solve()`: place pending pods on existing capacity and decide which nodes to launch. Pure.

Theory of operation
-------------------
1. *Prepare.* For each NodePool (highest weight first) keep the instance types its requirements
   allow that still have an offering (not blocked by the capacity-error cache), with their
   allocatable resources minus the overhead of the daemonsets that would run there, as integer
   vectors. Limits become a remaining-capacity vector per pool.
2. *Group.* Pods with identical scheduling specs form one class (`classes.py`), handled as a
   batch: "how many of these fit here?" is asked once per class and node, not once per pod.
   Classes go largest first (cpu, then memory), like Karpenter's pod order.
3. *Split by topology.* Zone- and capacity-type-keyed spread and (anti-)affinity decide how
   many of a class's pods go to which domain (`topology.py`); each part is placed with the domain
   added to its node requirements.
4. *Fill.* Each part goes to existing nodes and in-flight claims first, then to the claims this
   pass opened (first fit, scanning a bounded number), then to new claims. A new claim gets a
   *target* instance type: the one that would serve the pool's remaining demand most cheaply if
   used alone: whole nodes of it, each holding whole pods of the opening size, times its price.
   A claim accepts pods while they fit its target, so claims come out right-sized instead of
   growing to the largest type in the catalog.
   With `Strategy.lp_plan`, classes free of topology constraints (and zone parts of spread
   classes) are first packed as a small LP plans them (`typemix.py`): the instance-type mix that
   serves their total requests most cheaply, which pods go to which type, and nodes opened with
   a slice of those pods each, so a workload whose shape calls for, say, compute nodes plus a few
   general-purpose ones for its memory-heavy pods gets exactly that. Small passes try it among
   the other strategies of the portfolio (`solve`) and keep whichever plan is cheapest.
5. *Relax.* Pods that still do not fit are retried with one preference fewer, in Karpenter's order,
   and are reported with a reason once nothing is left to relax.
6. *Finalize.* Each claim's options become the (at most 60) cheapest types that satisfy its
   requirements and hold its pods plus daemonset overhead, within the pool's remaining limits
   (pessimistically, the largest option counts against them); GPU, accelerator and metal types are
   dropped when any other type fits. The claim is priced at its cheapest allowed offering.

Determinism: classes are sorted by requests then by their first pod's name, pods inside a class by
name, types by price then name, offerings by price, capacity type and zone; no set or dict
iteration order leaks into the result.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import operator
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from nodewright.engine.scheduling.classes import PodClass, group
from nodewright.engine.scheduling.topology import Group, Topology, spread_group, term_group
from nodewright.engine.scheduling.typemix import Assignment, Column, apportion, assign, cheapest_mix, node_slices
from nodewright.engine.scheduling.types import (
    MAX_INSTANCE_TYPE_OPTIONS,
    BlockedOffering,
    PlannedClaim,
    PoolCapacity,
    SchedulingInput,
    SchedulingResult,
)
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, Offering
from nodewright.model.node import Node
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import AffinityTerm, Pod, SpreadConstraint
from nodewright.model.requirements import Requirement, Requirements, label_matches
from nodewright.model.resources import ACCELERATORS, CPU, MEMORY, PODS, Resources
from nodewright.model.taints import BLOCKING, Taint, Toleration
from nodewright.model.workloads import DaemonSet

# How many of this pass's open claims a class scans before it opens a new one. Bounds the work per
# class on huge plans; the claims scanned first are the oldest (first fit decreasing).
SCAN_LIMIT = 256
# Plans with more claims than this skip the merge pass (it compares claims pairwise).
REPACK_LIMIT = 600
REPACK_SWEEPS = 3
REPACK_PARTNERS = 24
# The planned fill (Strategy.lp_plan) only plans with instance types its pods fill this many
# times over: the LP's fractional nodes are rounded to whole ones, which costs up to one node each.
PLAN_MIN_NODES = 3
# A new claim's target is chosen again once the demand it was chosen for has shrunk to this share.
TARGET_REFRESH = 0.5
# How much dearer (as a fraction) a smaller target type may be than the most cost-efficient one.
TARGET_SLACK = 0.02
_K = TypeVar("_K")
_V = TypeVar("_V")
_CAPACITY_PRIORITY = {"reserved": 0, "spot": 1, "on-demand": 2}
_IGNORED_NODE_TAINTS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.cloudprovider.kubernetes.io/uninitialized",
    }
)


@dataclass(frozen=True, slots=True)
class Strategy:
    """How a pass fills claims.

    `emptiest_first` offers a class the claims with the fewest pods first (Karpenter's balancing,
    which wins when many claims are forced, e.g. by hostname anti-affinity) instead of the oldest
    first (first fit decreasing, which wins on large plans). `mix_shapes` packs unconstrained pods
    node by node, each time adding the pods whose shape best fills what the node has left, so
    cpu-heavy and memory-heavy pods share nodes instead of stranding memory or cpu. `lp_plan`
    (with `mix_shapes`) first opens the claims an assignment LP over those pods plans, each filled
    with the slice of pods the plan gives its type (`typemix.py`), so the instance-type mix fits
    the whole workload's shape instead of each claim's opening pods.
    """

    emptiest_first: bool = False
    mix_shapes: bool = False
    lp_plan: bool = False


DEFAULT_STRATEGY = Strategy()
PORTFOLIO = (
    DEFAULT_STRATEGY,
    Strategy(emptiest_first=True),
    Strategy(mix_shapes=True),
    Strategy(mix_shapes=True, lp_plan=True),
)
# Up to this many pods, every strategy of the portfolio runs (each takes milliseconds there) and
# the best plan wins; above it one pass is what the latency budget allows.
PORTFOLIO_LIMIT = 5000


def solve(inp: SchedulingInput, strategy: Strategy | None = None) -> SchedulingResult:
    """Decide where `inp.pods` go: existing nodes, in-flight claims, or new node claims.

    With a `strategy`, one pass uses it. Otherwise small passes try every strategy in PORTFOLIO
    and keep the plan that leaves the fewest pods unplaced, then costs least (the first strategy
    wins ties, so the result stays deterministic); large ones use DEFAULT_STRATEGY.
    """
    if strategy is not None:
        return _Solver(inp, strategy).run()
    if len(inp.pods) > PORTFOLIO_LIMIT:
        return _Solver(inp, DEFAULT_STRATEGY).run()
    plans: list[SchedulingResult] = []
    plannable = False
    shared = _Shared()
    for candidate in PORTFOLIO:
        if candidate.lp_plan and not plannable:
            # The shape-mixing pass (earlier in PORTFOLIO) met nothing to plan, so this pass
            # would repeat it step for step.
            continue
        solver = _Solver(inp, candidate, shared)
        plans.append(solver.run())
        plannable = plannable or solver.plannable
    return min(plans, key=lambda r: (len(r.unschedulable), round(r.price_per_hour, 9)))


@dataclass(frozen=True, slots=True)
class _Type:
    """An instance type as one pool sees it: capacity left for pods, price, allowed offerings.

    Shared by the solves that prepare the same NodePool (`_Prepared`), so never changed (`prices`
    included).
    """

    it: InstanceType
    cap: tuple[int, ...]
    overhead: tuple[int, ...]  # what the pool's daemonsets request on this type
    capacity: tuple[int, ...]
    price: float
    prices: dict[str, float]  # capacity type -> cheapest allowed offering
    offerings: tuple[Offering, ...]
    offer_reqs: Requirements
    exotic: bool


@dataclass(slots=True)
class _Pool:
    name: str
    weight: int
    requirements: Requirements
    taints: tuple[Taint, ...]
    types: tuple[_Type, ...]  # shared across solves, like everything `prepared` answers
    by_name: Mapping[str, _Type]  # likewise: never changed
    prepared: _Prepared
    remaining: list[int] | None
    limit_version: int = 0
    # Remaining unplaced requests of the pods whose first choice is this pool, by capacity types.
    demand: dict[frozenset[str], list[int]] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class _Bin:
    """Somewhere pods can go: an existing node, an in-flight claim, or a claim of this pass."""

    name: str
    kind: str  # "node", "inflight" or "claim"
    requirements: Requirements
    taints: tuple[Taint, ...]
    free: list[int]
    labels: Mapping[str, str] | None = None  # existing nodes only
    pool: _Pool | None = None
    target: _Type | None = None
    reserved: list[int] | None = None
    pods: list[Pod] = field(default_factory=list)
    capacity_types: frozenset[str] = frozenset()
    # False once a pod whose hostname-keyed counts would change if it moved is placed here.
    movable: bool = True

    def domain(self, key: str) -> str | None:
        """This bin's value for a topology key, when known."""
        if key == wk.HOSTNAME:
            return self.name
        if self.labels is not None:
            return self.labels.get(key)
        req = self.requirements.get(key)
        if req is not None and not req.complement and len(req.values) == 1:
            return next(iter(req.values))
        return None


@dataclass(slots=True)
class _Planning:
    """One mix group being planned: its pool and capacity types, its classes with their request
    vectors (`entries`), and how many pods of each are placed so far (`done`, updated in place).
    """

    pool: _Pool
    cts: frozenset[str]
    entries: list[tuple[PodClass, tuple[int, ...]]]
    done: list[int]

    def left(self, i: int) -> int:
        """How many pods of entry `i` are still unplaced."""
        return len(self.entries[i][0].pods) - self.done[i]


class _Solver:
    def __init__(self, inp: SchedulingInput, strategy: Strategy, shared: _Shared | None = None) -> None:
        self.inp = inp
        self.strategy = strategy
        self.shared = shared if shared is not None else _Shared()
        self.classes = group(inp.pods)
        self.names = _resource_names(inp, self.classes)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.pools = [self._pool(pc.nodepool, pc.instance_types) for pc in _by_weight(inp)]
        self.topology = Topology()
        self.existing: list[_Bin] = []
        self.claims: list[_Bin] = []
        self.open: list[_Bin] = []
        self.unschedulable: dict[str, str] = {}
        # Caches keyed by values, never by object ids (ids of short-lived classes are reused).
        self._node_fits: dict[tuple[str, Requirements], bool] = {}
        self._claim_fits: dict[tuple[Requirements, Requirements, str], bool] = {}
        self._bound_cache: dict[tuple[object, ...], bool] = {}
        self._prices: dict[tuple[object, ...], float] = {}
        self._largest: dict[str, tuple[int, int]] = {}
        self._reachable_cache: dict[tuple[object, ...], frozenset[str]] = {}
        self._tolerates: dict[tuple[object, ...], bool] = {}
        self._targets: dict[tuple[object, ...], tuple[_Type | None, str, list[int]]] = {}
        self._claim_seq = 0
        self._homes: dict[tuple[object, ...], _Pool | None] = {}
        self._cts: dict[tuple[tuple[Requirements, ...], str], frozenset[str]] = {}
        self._plan_option_lists: dict[tuple[object, ...], list[tuple[_Type, float]]] = {}
        # Set by a shape-mixing pass that met pods a planned fill could plan (see `solve`).
        self.plannable = False
        self.topology_keys: list[str] = []
        self._tracked: list[Group] = []  # the topology groups `run` tracks
        self._min_cpu = min((c.requests[CPU] for c in self.classes), default=0)

    # -- preparation ---------------------------------------------------------------------------

    def vec(self, resources: Mapping[str, int]) -> tuple[int, ...]:
        return _vec(resources, self.names)

    def _pool(self, nodepool: NodePool, instance_types: Sequence[InstanceType]) -> _Pool:
        prepared = _PREPARED.get(nodepool, self.inp.daemonsets, self.inp.blocked, self.names)
        types, by_name = prepared.types(instance_types)
        remaining = None
        if nodepool.limits is not None:
            used = self.inp.used.get(nodepool.name, Resources())
            limits = nodepool.limits
            remaining = [limits[n] - used[n] if n in limits else 1 << 62 for n in self.names]
        return _Pool(
            nodepool.name,
            nodepool.weight,
            prepared.requirements,
            nodepool.taints,
            types,
            by_name,
            prepared,
            remaining,
        )

    def _existing_bins(self) -> None:
        bound = self.shared.bound(self.inp.bound_pods, self.names)
        used, bound_by_node = bound.used, bound.pods
        keys = {g.key for g in self._tracked}
        for node in sorted(self.inp.nodes, key=lambda n: n.name):
            cap, node_reqs, taints = _NODE_FACTS.get(node, self.names)
            load = used.get(node.name, [0] * len(cap))
            domains = {k: (node.name if k == wk.HOSTNAME else node.labels.get(k)) for k in keys}
            for pod, count in bound.alike.get(node.name, ()):
                self.topology.record(pod, domains, count)
            if node.unschedulable or node.deleting:
                continue
            self.existing.append(
                _Bin(
                    node.name,
                    "node",
                    node_reqs,
                    taints,
                    [c - u for c, u in zip(cap, load, strict=True)],
                    labels=node.labels,
                )
            )
        pools = {p.name: p for p in self.pools}
        for claim in sorted(self.inp.inflight, key=lambda c: c.name):
            pool = pools.get(claim.nodepool)
            t = pool.by_name.get(claim.instance_type) if pool else None
            name = claim.node_name or claim.name
            if pool is None or t is None:
                # No room to offer (its NodePool or type is gone), but its pods still land there.
                where = {wk.HOSTNAME: name, wk.ZONE: claim.zone or None, wk.CAPACITY_TYPE: claim.capacity_type or None}
                for pod in bound_by_node.get(name, ()):
                    self.topology.record(pod, where)
                continue
            load = used.get(name, [0] * len(self.names))
            # A launched claim is where it launched: its zone, capacity type and type are known.
            launched = {
                wk.ZONE: claim.zone,
                wk.CAPACITY_TYPE: claim.capacity_type,
                wk.INSTANCE_TYPE: claim.instance_type,
            }
            b = _Bin(
                name,
                "inflight",
                claim.requirements.intersection(Requirements.from_labels(claim.labels)).intersection(
                    Requirements([Requirement.new(k, "In", [v]) for k, v in launched.items() if v])
                ),
                claim.taints,
                [c - u for c, u in zip(t.cap, load, strict=True)],
                pool=pool,
                target=t,
            )
            self.existing.append(b)
            # The pods a claim in flight holds count where it will be, as kube-scheduler will count
            # them once it binds them; without this a re-plan after a capacity error spread pods
            # as if the claims launched a moment ago were empty.
            domains = {k: b.domain(k) for k in keys}
            for pod in bound_by_node.get(name, ()):
                self.topology.record(pod, domains)

    def _groups(self) -> list[Group]:
        groups: list[Group] = []
        for cls in self.classes:
            pod = cls.sample
            groups += [spread_group(s, pod.namespace) for s in pod.spread]
            groups += [
                term_group(t)
                for t in (*pod.affinity, *pod.preferred_affinity, *pod.anti_affinity, *pod.preferred_anti_affinity)
            ]
        for pod in self.inp.bound_pods:
            groups += [term_group(t) for t in pod.anti_affinity]
        return groups

    # -- the pass ------------------------------------------------------------------------------

    def run(self) -> SchedulingResult:
        groups = self._tracked = self._groups()
        self.topology.track(groups)
        self.topology_keys = sorted({wk.HOSTNAME, wk.ZONE, wk.CAPACITY_TYPE} | {g.key for g in groups})
        self._existing_bins()
        for cls in self.classes:
            pool = self._home_pool(cls)
            if pool is not None:
                req = self.vec(cls.requests)
                _add(self._demand(pool, self._capacity_types(cls, pool)), req, len(cls.pods))
        if self.strategy.mix_shapes:
            # Constrained classes first, so the mixable ones can fill what their claims leave.
            mixable: list[PodClass] = []
            for cls in self.classes:
                if self._home_pool(cls) is None:
                    self._schedule(cls)
                elif self._free(cls):
                    mixable.append(cls)
                elif self._zone_spread_only(cls):
                    mixable += self._zone_parts(cls)
                else:
                    self._schedule(cls)
            for cls in self._mix(mixable):
                self._schedule(cls)
        else:
            for cls in self.classes:
                self._schedule(cls)
        self._repack()
        return self._finalize()

    def _mix(self, classes: list[PodClass]) -> list[PodClass]:
        """Pack mixable classes node by node; return the classes left for the usual pass.

        Mixable classes are unconstrained (`_free`) or parts of a zone-spread class already bound
        to a domain (`_zone_parts`): any node their pool and requirements allow is as good as any
        other, and only the mix decides the bill. Classes sharing a pool, tolerations and capacity
        types go to one set of claims.
        """
        groups: dict[tuple[object, ...], list[PodClass]] = {}
        rest: list[PodClass] = []
        for cls in classes:
            pool = self._home_pool(cls)
            if pool is None:
                rest.append(cls)
                continue
            # Node requirements may differ within a group: each fit checks them against the claim.
            key = (pool.name, cls.sample.tolerations, self._capacity_types(cls, pool))
            groups.setdefault(key, []).append(cls)
        for members in groups.values():
            rest += self._mix_group(members)
        rest.sort(key=lambda c: c.sort_key)
        return rest

    def _mix_group(self, members: list[PodClass]) -> list[PodClass]:
        """Place one group's classes: existing capacity first, then new claims, node by node."""
        entries = [(cls, self.vec(cls.requests)) for cls in members]
        done = [0] * len(entries)
        for b in (*self.existing, *self.open):
            self._mix_into(b, entries, done)
        home = self._home_pool(members[0])
        if home is not None and home.remaining is None:
            # What `_plan_fill` needs to plan anything: a pool without limits and pods left.
            self.plannable = self.plannable or any(done[i] < len(c.pods) for i, (c, _) in enumerate(entries))
        if self.strategy.lp_plan:
            self._plan_fill(entries, done)
            # Rounding leaves a few pods over; they first fill what room the planned claims have.
            for b in list(self.open):
                self._mix_into(b, entries, done)
        while True:
            left = [i for i, (cls, _) in enumerate(entries) if done[i] < len(cls.pods)]
            if not left:
                return []
            cls, req = entries[left[0]]  # the largest class left opens the claim (classes are sorted)
            claim, _ = self._open_claim(cls, req)
            if claim is None:
                # The usual pass reports why, and may still use capacity this one could not.
                return [entries[i][0].with_pods(entries[i][0].pods[done[i] :]) for i in left]
            self._mix_into(claim, entries, done)

    def _plan_fill(self, entries: list[tuple[PodClass, tuple[int, ...]]], done: list[int]) -> None:
        """Open and fill the claims an assignment LP plans for a mix group's unplaced pods.

        A plan's candidate types are the cheapest aggregate mix for its pods (`_plan_types`);
        `typemix.assign` decides which pods go to which type, and each planned node is opened
        with its type as target and filled with its slice (`_open_plan`). Every pod still goes
        through the usual fit checks; what does not fit is left for the usual pass, and so are
        pools with limits (a plan would reserve capacity up front) and classes with several
        alternative node requirements.

        Classes pinned to a topology domain (a zone part of a spread class, a zone selector) can
        only share nodes with their domain's classes and unpinned ones, so domains are planned
        apart (`_plan_domains`). The unpinned pods they leave are then planned together.
        """
        pool = self._home_pool(entries[0][0])
        if pool is None or pool.remaining is not None:
            return
        g = _Planning(pool, self._capacity_types(entries[0][0], pool), entries, done)
        pinned: dict[tuple[object, ...], list[int]] = {}
        unpinned: list[int] = []
        for i, (cls, _) in enumerate(entries):
            if g.left(i) and len(cls.alternatives) == 1:
                domain = self._domain_of(cls.alternatives[0])
                (pinned.setdefault(domain, []) if domain else unpinned).append(i)
        if pinned:
            self._plan_domains(g, [pinned[d] for d in sorted(pinned)], unpinned)
        rest = [i for i in unpinned if g.left(i)]
        planned = self._plan(g, rest, [g.left(i) for i in rest])
        if planned is not None:
            self._open_plan(g, rest, planned, [False] * len(rest))

    def _plan_domains(self, g: _Planning, pinned: list[list[int]], unpinned: list[int]) -> None:
        """Plan and open the nodes of each domain (`pinned[d]`: its entries) with unpinned pods.

        First each domain is planned alone with an equal share of every unpinned class, which
        picks its types and sizes it. Its fractional node counts are then rounded across domains
        (`typemix.apportion`: rounding each domain up would leave a part-filled node per domain
        and type), and each domain is planned again with those whole counts fixed, its own pods
        required and every unpinned pod still unplaced optional, so pods that can go anywhere
        absorb the rounding. A domain whose own pods need more nodes gets its counts rounded up.
        """
        firsts: list[tuple[list[tuple[_Type, float]], Assignment] | None] = []
        for d, own in enumerate(pinned):
            counts = [g.left(i) for i in own] + [_share(g.left(i), d, len(pinned)) for i in unpinned]
            firsts.append(self._plan(g, own + unpinned, counts))
        whole = apportion(
            [[(t.it.name, x) for (t, _), x in zip(f[0], f[1].nodes, strict=True)] if f else [] for f in firsts]
        )
        for d, (own, first) in enumerate(zip(pinned, firsts, strict=True)):
            if first is None:
                continue
            types, plan = first
            problem = own + unpinned
            refit = None
            for fixed in ([whole[d][t.it.name] for t, _ in types], [math.ceil(x - 1e-6) for x in plan.nodes]):
                refit = refit or self._plan(
                    g,
                    problem,
                    [g.left(i) for i in problem],
                    types=types,
                    fixed=fixed,
                    optional=[k >= len(own) for k in range(len(problem))],
                )
            if refit is not None:
                self._open_plan(g, problem, refit, [k < len(own) for k in range(len(problem))])

    def _plan(
        self,
        g: _Planning,
        problem: list[int],
        counts: list[int],
        *,
        types: list[tuple[_Type, float]] | None = None,
        fixed: list[int] | None = None,
        optional: list[bool] | None = None,
    ) -> tuple[list[tuple[_Type, float]], Assignment] | None:
        """The candidate types (unless given) and the assignment LP's plan for `counts` pods of
        each entry in `problem`; with `fixed` node counts per type, the `optional` entries' pods
        are placed only as far as they fit (`typemix.assign`). None when there is no plan.
        """
        if not any(counts):
            return None
        options = [self._plan_options(g, i) for i in problem]
        if not all(options):
            return None
        items = [(g.entries[i][1], n) for i, n in zip(problem, counts, strict=True)]
        if types is None:
            types = self._plan_types(items, options)
        columns: list[Column] = [(t.cap, price) for t, price in types]
        allowed = [[any(o[0] is t for o in opts) for t, _ in types] for opts in options]
        values = None
        if optional is not None:
            # An optional pod is worth what it would cost on its own cheapest type.
            values = [
                min(p / _per_node(t.cap, req) for t, p in opts) if opt else 0.0
                for opt, opts, (req, _) in zip(optional, options, items, strict=True)
            ]
        plan = assign(items, columns, allowed, nodes=fixed, values=values)
        return None if plan is None else (types, plan)

    def _open_plan(
        self,
        g: _Planning,
        problem: list[int],
        planned: tuple[list[tuple[_Type, float]], Assignment],
        first: list[bool],
    ) -> None:
        """Open the nodes a plan asks for and fill each with its slice of pods (`first`: the
        entries pinned to a domain, which are served before the others).
        """
        types, plan = planned
        reqs = [g.entries[i][1] for i in problem]
        for column, counts in node_slices(plan, reqs, [t.cap for t, _ in types], first):
            order = sorted(range(len(problem)), key=lambda k: (not first[k], -counts[k], k))
            claim = self._new_claim(g.entries[problem[order[0]]][0], g.pool, types[column][0], g.cts)
            if claim is None:
                continue
            for k in order:
                i = problem[k]
                cls, req = g.entries[i]
                want = min(counts[k], g.left(i))
                n = self._fits(cls, req, claim, want) if want > 0 else 0
                if n:
                    self._assign(cls, claim, cls.pods[g.done[i] : g.done[i] + n], req)
                    g.done[i] += n
            if not claim.pods:
                self._drop_claim(claim)

    def _plan_options(self, g: _Planning, i: int) -> list[tuple[_Type, float]]:
        """The plain types of the pool entry `i`'s pods may use and fit, with their price,
        cheapest first (cached per requirements and requests).
        """
        cls, req = g.entries[i]
        alt = cls.alternatives[0]
        key = (g.pool.name, alt, req, g.cts)
        hit = self._plan_option_lists.get(key)
        if hit is not None:
            return hit
        out: list[tuple[_Type, float]] = []
        if g.pool.requirements.compatible(alt):
            for _, _, t, offers in self._candidates(g.pool, g.pool.requirements.intersection(alt)):
                prices = [o.price for o in offers if o.capacity_type in g.cts]
                if prices and not t.exotic and all(c >= r for c, r in zip(t.cap, req, strict=True)):
                    out.append((t, min(prices)))
        self._plan_option_lists[key] = out
        return out

    def _plan_types(
        self, items: list[tuple[tuple[int, ...], int]], options: list[list[tuple[_Type, float]]]
    ) -> list[tuple[_Type, float]]:
        """The assignment LP's candidate types, cheapest first.

        The cheapest aggregate mix (`typemix.cheapest_mix`) for all the items, over the types
        some item may use that the items fill at least PLAN_MIN_NODES times over (the smallest
        such type when none is that small); then, for an item that may use none of those (its
        requirements exclude them), the type that serves it alone most cheaply in whole nodes.
        """
        chosen: dict[str, tuple[_Type, float]] = {}
        demand = [0] * len(self.names)
        for req, n in items:
            _add(demand, req, n)
        union = {t.it.name: (t, p) for opts in options for t, p in opts}
        # Largest first: on a per-dollar tie the LP keeps the first column, and larger nodes
        # leave less room stranded between whole pods.
        common = sorted(union.values(), key=lambda o: (-o[1], o[0].it.name))
        # The LP counts fractional nodes; a type the plan fills less than a few times over would
        # be rounded by a large share (for a zone's part, possibly to no node at all).
        sized = [(t, p) for t, p in common if _nodes_for(demand, t.cap) >= PLAN_MIN_NODES]
        common = sized or common[-1:]
        if common:
            x = cheapest_mix(demand, [(t.cap, p) for t, p in common]) or []
            for (t, p), v in zip(common, x, strict=False):
                if v > 0:
                    chosen[t.it.name] = (t, p)
        for (req, n), opts in zip(items, options, strict=True):
            if not any(t.it.name in chosen for t, _ in opts):
                best = min(opts, key=lambda o: o[1] * math.ceil(n / _per_node(o[0].cap, req)))
                chosen.setdefault(best[0].it.name, best)
        return sorted(chosen.values(), key=lambda o: (o[1], o[0].it.name))

    def _domain_of(self, alt: Requirements) -> tuple[object, ...]:
        """The topology domains (other than hostname) `alt` pins its pods to; empty when none."""
        out: list[tuple[object, ...]] = []
        for key in self.topology_keys:
            req = alt.get(key)
            if key != wk.HOSTNAME and req is not None:
                out.append((key, req.complement, tuple(sorted(req.values))))
        return tuple(out)

    def _mix_into(self, b: _Bin, entries: list[tuple[PodClass, tuple[int, ...]]], done: list[int]) -> None:
        """Fill `b`, each time with the class whose requests best match what `b` has most of left
        (the dot product of requests and free room, both relative to the node's size).
        """
        cap = b.target.cap if b.target is not None else [max(f, 1) for f in b.free]
        while True:
            best, best_score, best_fit = -1, -1.0, 0
            for i, (cls, req) in enumerate(entries):
                want = len(cls.pods) - done[i]
                if want <= 0:
                    continue
                fit = self._fits(cls, req, b, want)
                if not fit:
                    continue
                score = sum(r / c * f / c for r, f, c in zip(req, b.free, cap, strict=True) if c > 0)
                if score > best_score:
                    best, best_score, best_fit = i, score, fit
            if best < 0:
                return
            cls, req = entries[best]
            left = len(cls.pods) - done[best]
            # Half of what still fits, so the next pick can rebalance the node's shape.
            count = best_fit if best_fit >= left else max(1, best_fit // 2)
            self._assign(cls, b, cls.pods[done[best] : done[best] + count], req)
            done[best] += count

    def _zone_spread_only(self, cls: PodClass) -> bool:
        """True for a class whose only constraints are required spreads keyed on something other
        than hostname, counted only among its own pods: split by domain, its pods are as
        interchangeable within a domain as unconstrained ones.
        """
        sample = cls.sample
        if cls.affinity or cls.anti_affinity or cls.preferred_node or not cls.spread or self._hostname_bound(cls):
            return False
        if any(not c.required or c.topology_key == wk.HOSTNAME for c in sample.spread):
            return False
        own = {spread_group(c, sample.namespace) for c in cls.spread}
        others = (c.sample for c in self.classes if c.sample is not sample)
        return not any(g.selects(o.namespace, o.labels) for o in others for g in own)

    def _zone_parts(self, cls: PodClass) -> list[PodClass]:
        """The class split by its domain constraints; pods no domain can take are unschedulable."""
        parts: list[PodClass] = []

        def collect(part: PodClass) -> tuple[list[Pod], str]:
            parts.append(part)
            return [], ""

        leftover, reason = self._place(cls, frozenset(), collect)
        for pod in leftover:
            self.unschedulable[pod.key] = reason
        return parts

    def _free(self, cls: PodClass) -> bool:
        """True when nothing but resources, node requirements and taints constrain the class."""
        sample = cls.sample
        if cls.spread or cls.affinity or cls.anti_affinity or cls.preferred_node or sample.spread:
            return False
        keys = {g.key for g in self.topology.tracked()} | set(self.topology.anti_keys())
        return not any(self.topology.counts_on(sample, key) for key in keys)

    def _schedule(self, cls: PodClass) -> None:
        current: PodClass | None = cls
        while current is not None:
            leftover, reason = self._place(current, frozenset())
            if not leftover:
                return
            relaxed = current.relaxed()
            if relaxed is None:
                for pod in leftover:
                    self.unschedulable[pod.key] = reason
                return
            current = relaxed.with_pods(tuple(leftover))

    def _place(
        self, cls: PodClass, resolved: frozenset[int], fill: Callable[[PodClass], tuple[list[Pod], str]] | None = None
    ) -> tuple[list[Pod], str]:
        """Split the class by its domain constraints, then hand each part to `fill` (`_fill`)."""
        for i, (constraint, anti) in enumerate(_domain_constraints(cls)):
            if i in resolved:
                continue
            key = constraint.topology_key
            split = self.topology.split(cls.sample, len(cls.pods), constraint, anti, self._reachable(cls, key))
            if not split.parts:
                return list(cls.pods), split.reason
            leftover: list[Pod] = []
            reason = ""
            start = 0
            for allowed, count in split.parts:
                part = cls.with_pods(cls.pods[start : start + count]).restricted(
                    Requirements([Requirement.new(key, "In", allowed)])
                )
                start += count
                rest, why = self._place(part, resolved | {i}, fill)
                leftover += rest
                reason = reason or why
            if start < len(cls.pods):
                leftover += cls.pods[start:]
                reason = reason or f"topology spread on {key}: maxSkew {getattr(constraint, 'max_skew', 1)}"
            return leftover, reason
        for key in self.topology.anti_keys():
            forbidden = self.topology.forbidden(cls.sample, key) if key != wk.HOSTNAME else set()
            if forbidden:
                # Other pods' required anti-affinity keeps this class out of those domains.
                cls = cls.restricted(Requirements([Requirement.new(key, "NotIn", sorted(forbidden))]))
        return (fill or self._fill)(cls)

    def _reachable(self, cls: PodClass, key: str) -> list[str]:
        """Domains of `key` this class could land in: from compatible pools and existing nodes."""
        cache_key = (cls.alternatives, cls.sample.tolerations, cls.tolerate_prefer_no_schedule, key)
        out = self._reachable_cache.get(cache_key)
        if out is None:
            found: set[str] = set()
            for pool in self.pools:
                if not self._pool_tolerates(cls, pool):
                    continue
                for alt in cls.alternatives:
                    if not pool.requirements.compatible(alt):
                        continue
                    narrowed = alt.get(key)
                    for t in pool.types:
                        req = t.offer_reqs.get(key)
                        if req is None or req.complement:
                            continue
                        found |= {v for v in req.values if narrowed is None or narrowed.has(v)}
            for b in self.existing:
                value = b.domain(key)
                if value is not None and any(self._bin_compatible(b, alt) for alt in cls.alternatives):
                    found.add(value)
            out = self._reachable_cache[cache_key] = frozenset(found)
        return sorted(out - self.topology.forbidden(cls.sample, key))

    def _fill(self, cls: PodClass) -> tuple[list[Pod], str]:
        pods = cls.pods
        want = len(pods)
        done = 0
        req = self.vec(cls.requests)
        ci, mi = self.index[CPU], self.index[MEMORY]
        need_cpu, need_memory = req[ci], req[mi]
        claims = sorted(self.open, key=lambda b: len(b.pods)) if self.strategy.emptiest_first else self.open
        # Existing nodes and in-flight claims first, then this pass's open claims.
        for b in itertools.chain(self.existing, claims[:SCAN_LIMIT]):
            free = b.free
            if free[ci] < need_cpu or free[mi] < need_memory:
                continue  # the common rejection, without a call
            n = self._fits(cls, req, b, want - done)
            if n:
                self._assign(cls, b, pods[done : done + n], req)
                done += n
                if done == want:
                    return [], ""
        while done < want:
            claim, reason = self._open_claim(cls, req)
            if claim is None:
                return list(pods[done:]), reason
            n = self._fits(cls, req, claim, want - done)
            if n == 0:  # pragma: no cover - _open_claim only opens claims that take a pod
                self._drop_claim(claim)
                return list(pods[done:]), "internal: a new claim took no pod"
            self._assign(cls, claim, pods[done : done + n], req)
            done += n
        return [], ""

    # -- fit checks ----------------------------------------------------------------------------

    def _fits(self, cls: PodClass, req: tuple[int, ...], b: _Bin, want: int) -> int:
        n = want
        free = b.free
        for f, r in zip(free, req, strict=True):
            if r:
                q = f // r
                if q < n:
                    if q <= 0:
                        return 0
                    n = q
        if not self._bin_tolerates(cls, b):
            return 0
        if not any(self._bin_compatible(b, alt) for alt in cls.alternatives):
            return 0
        if b.kind == "claim" and self._capacity_types(cls, b.pool) != b.capacity_types:
            # A pod that may run on spot must not be packed onto an on-demand-only claim (nor
            # the reverse): either would pay on-demand prices for capacity spot could serve.
            return 0
        limit = self.topology.bin_limit(cls.sample, cls.spread, cls.affinity, cls.anti_affinity, b.name)
        return min(n, limit)

    def _bin_compatible(self, b: _Bin, alt: Requirements) -> bool:
        if b.labels is not None:
            node_key = (b.name, alt)
            hit = self._node_fits.get(node_key)
            if hit is None:
                hit = self._node_fits[node_key] = label_matches(alt, b.labels)
            return hit
        assert b.target is not None
        claim_key = (b.requirements, alt, b.target.it.name)
        hit = self._claim_fits.get(claim_key)
        if hit is None:
            hit = b.requirements.compatible(alt) and b.target.offer_reqs.intersects(alt)
            self._claim_fits[claim_key] = hit
        return hit

    def _bin_tolerates(self, cls: PodClass, b: _Bin) -> bool:
        key = (cls.sample.tolerations, cls.tolerate_prefer_no_schedule, b.taints)
        hit = self._tolerates.get(key)
        if hit is None:
            hit = _tolerated(cls.sample.tolerations, b.taints, prefer=not cls.tolerate_prefer_no_schedule)
            self._tolerates[key] = hit
        return hit

    def _demand(self, pool: _Pool, cts: frozenset[str]) -> list[int]:
        """What is still unplaced of the pods whose first choice is `pool`, for these capacity types."""
        return pool.demand.setdefault(cts, [0] * len(self.names))

    def _capacity_types(self, cls: PodClass, pool: _Pool | None) -> frozenset[str]:
        """The capacity types the class may use in `pool` (its first compatible alternative)."""
        assert pool is not None
        key = (cls.alternatives, pool.name)
        hit = self._cts.get(key)
        if hit is None:
            hit = frozenset()
            for alt in cls.alternatives:
                if pool.requirements.compatible(alt):
                    req = pool.requirements.intersection(alt).get(wk.CAPACITY_TYPE)
                    hit = frozenset(ct for ct in wk.CAPACITY_TYPES if req is None or req.has(ct))
                    break
            self._cts[key] = hit
        return hit

    def _pool_tolerates(self, cls: PodClass, pool: _Pool) -> bool:
        return _tolerated(cls.sample.tolerations, pool.taints, prefer=not cls.tolerate_prefer_no_schedule)

    # -- placing and opening -------------------------------------------------------------------

    def _assign(self, cls: PodClass, b: _Bin, pods: Sequence[Pod], req: tuple[int, ...]) -> None:
        count = len(pods)
        free = b.free
        for i, r in enumerate(req):
            if r:
                free[i] -= r * count
        if b.kind == "claim":
            alt = next(a for a in cls.alternatives if self._bin_compatible(b, a))
            narrowed = b.requirements.intersection(alt)
            if narrowed != b.requirements:
                b.requirements = narrowed
            if free[self.index[CPU]] < self._min_cpu or free[self.index[PODS]] < 1000:
                self.open.remove(b)
        b.pods.extend(pods)
        b.movable = b.movable and not self._hostname_bound(cls)
        domains = {key: b.domain(key) for key in self.topology_keys}
        self.topology.record(cls.sample, domains, count)
        home = self._home_pool(cls)
        if home is not None:
            _add(self._demand(home, self._capacity_types(cls, home)), req, -count)

    def _hostname_bound(self, cls: PodClass) -> bool:
        """True when moving the class's pods between nodes could change a hostname-keyed count:
        it has a hostname constraint, or some hostname group or anti-affinity counts it.
        """
        key = (
            cls.sample.namespace,
            tuple(sorted(cls.sample.labels.items())),
            cls.spread,
            cls.affinity,
            cls.anti_affinity,
        )
        hit = self._bound_cache.get(key)
        if hit is not None:
            return hit
        constraints: tuple[SpreadConstraint | AffinityTerm, ...] = (*cls.spread, *cls.affinity, *cls.anti_affinity)
        hit = self._bound_cache[key] = any(
            c.topology_key == wk.HOSTNAME for c in constraints
        ) or self.topology.counts_on(cls.sample, wk.HOSTNAME)
        return hit

    def _home_pool(self, cls: PodClass) -> _Pool | None:
        key = (cls.alternatives, cls.sample.tolerations, cls.tolerate_prefer_no_schedule)
        if key not in self._homes:
            self._homes[key] = next(
                (
                    pool
                    for pool in self.pools
                    if self._pool_tolerates(cls, pool)
                    and any(pool.requirements.compatible(a) for a in cls.alternatives)
                ),
                None,
            )
        return self._homes[key]

    def _open_claim(self, cls: PodClass, req: tuple[int, ...]) -> tuple[_Bin | None, str]:
        reasons: list[str] = []
        for pool in self.pools:
            if not self._pool_tolerates(cls, pool):
                taint = next(
                    t
                    for t in pool.taints
                    if not _tolerated(cls.sample.tolerations, (t,), prefer=not cls.tolerate_prefer_no_schedule)
                )
                reasons.append(f"nodepool {pool.name}: taint {taint} is not tolerated")
                continue
            conflicts = [pool.requirements.conflicts(alt) for alt in cls.alternatives]
            alts = [alt for alt, c in zip(cls.alternatives, conflicts, strict=True) if not c]
            if not alts:
                reasons.append(f"nodepool {pool.name}: {conflicts[0][0]}")
                continue
            target: _Type | None = None
            why = ""
            cts = self._capacity_types(cls, pool)
            for alt in alts:
                target, why = self._target(pool, alt, req, cts)
                if target is not None:
                    break
            if target is None:
                reasons.append(f"nodepool {pool.name}: {why}")
                continue
            b = self._new_claim(cls, pool, target, cts, alt)
            if b is None:
                reasons.append(f"nodepool {pool.name}: pod affinity to pods on another node")
                continue
            return b, ""
        if not self.pools:
            reasons.append("no NodePool is configured")
        return None, "; ".join(reasons)

    def _new_claim(
        self, cls: PodClass, pool: _Pool, target: _Type, cts: frozenset[str], alt: Requirements | None = None
    ) -> _Bin | None:
        """Open a claim in `pool` aiming at `target` for pods of `cls` (with `alt`, by default its
        first alternative the pool allows); None when the class's affinity rules out a new node.
        """
        if alt is None:
            alt = next((a for a in cls.alternatives if pool.requirements.compatible(a)), None)
            if alt is None:
                return None
        self._claim_seq += 1
        b = _Bin(
            f"nodeclaim-{self._claim_seq}",
            "claim",
            pool.requirements.intersection(alt),
            pool.taints,
            list(target.cap),
            pool=pool,
            target=target,
            capacity_types=cts,
        )
        if self.topology.bin_limit(cls.sample, cls.spread, cls.affinity, cls.anti_affinity, b.name) == 0:
            return None
        if pool.remaining is not None:
            b.reserved = list(target.capacity)
            _add(pool.remaining, target.capacity, -1)
            pool.limit_version += 1
        self.claims.append(b)
        self.open.append(b)
        return b

    def _drop_claim(self, b: _Bin) -> None:
        self.claims.remove(b)
        if b in self.open:
            self.open.remove(b)
        if b.pool is not None and b.pool.remaining is not None and b.reserved is not None:
            _add(b.pool.remaining, b.reserved, 1)

    def _target(
        self, pool: _Pool, alt: Requirements, req: tuple[int, ...], cts: frozenset[str]
    ) -> tuple[_Type | None, str]:
        """The instance type a new claim in `pool` aims to fill, or None and why none fits."""
        key = (pool.name, alt, req, pool.limit_version, cts)
        demand = self._demand(pool, cts)
        cached = self._targets.get(key)
        if cached is not None:
            target, why, demand_then = cached
            if target is None or not _shrunk(demand, demand_then):
                return target, why
        target, why = self._choose_target(pool, alt, req, cts, demand)
        self._targets[key] = (target, why, list(demand))
        return target, why

    def _choose_target(
        self, pool: _Pool, alt: Requirements, req: tuple[int, ...], cts: frozenset[str], pool_demand: list[int]
    ) -> tuple[_Type | None, str]:
        # What depends only on the types, `alt`, `req` and `cts` comes from `_Prepared.targets`,
        # computed once across solves; the limits and the demand are applied here.
        base = pool.prepared.targets(pool.types, alt, req)
        if not base.compatible:
            return None, f"no instance type satisfies {alt!r}" if alt else "no instance type is offered"
        fitting = base.fitting
        if not fitting:
            return None, self._too_big(req, base.compatible)
        if pool.remaining is not None:
            remaining = pool.remaining
            # When the largest of the fitting types is within the limits, every one is.
            if not all(c <= r for c, r in zip(base.peak, remaining, strict=True)):
                fitting = [t for t in fitting if all(c <= r for c, r in zip(t.capacity, remaining, strict=True))]
                if not fitting:
                    return None, "limits reached"
        demand = tuple([max(d, r) for d, r in zip(pool_demand, req, strict=True)])
        if fitting is base.fitting:
            # Unless the limits cut the types, the choice depends on nothing else: remembered.
            best = base.best(cts, demand)
        elif any(not t.exotic for t in fitting):
            # The cut keeps plain types, so its priced list is the whole one's, less the types cut.
            kept = {id(t) for t in fitting}
            best = _best_target([p for p in base.priced(cts) if id(p[0]) in kept], demand)
        else:
            best = _best_target(_priced(fitting, req, cts), demand)
        if best is None:
            return None, f"no instance type that fits is offered as {' or '.join(sorted(cts))}"
        return best, ""

    def _too_big(self, req: tuple[int, ...], types: Sequence[_Type]) -> str:
        for i, name in enumerate(self.names):
            largest = max(t.cap[i] for t in types)
            if req[i] > largest and largest == 0:
                return f"no instance type offers {name}"
            if req[i] > largest:
                have = Resources({name: largest}).format()[name]
                need = Resources({name: req[i]}).format()[name]
                return f"no instance type has {need} {name} allocatable (the largest has {have} after daemonsets)"
        return "no single instance type has room for all of the pod's requests"

    # -- improve -------------------------------------------------------------------------------

    def _repack(self) -> None:
        """Merge pairs of this pass's claims when one node holding both costs less than the two.

        Greedy packing decides one class at a time, so claims end up with mixes of pods (and
        sizes) that no single pass would choose: two half-full nodes, or a cpu-bound node next to
        a memory-bound one. Only claims that can merge without changing any constraint take part:
        same pool (without limits, whose reservations would shift), same zone and capacity types,
        and no pod that a hostname-keyed constraint or count involves.
        """
        if len(self.claims) > REPACK_LIMIT:
            return
        groups: dict[tuple[object, ...], list[_Bin]] = {}
        for b in self.claims:
            if b.movable and b.pool is not None and b.pool.remaining is None:
                groups.setdefault((b.pool.name, b.domain(wk.ZONE), b.capacity_types), []).append(b)
        for members in groups.values():
            for _ in range(REPACK_SWEEPS):
                if not self._merge_sweep(members):
                    break

    def _merge_sweep(self, members: list[_Bin]) -> bool:
        """One pass over `members`, cheapest first, merging each into its best partner."""
        merged_any = False
        for a in sorted(members, key=lambda b: (self._price(b), b.name)):
            if a not in members:
                continue
            best: tuple[float, _Bin, _Type, Requirements] | None = None
            price_a = self._price(a)
            # Savings come from pairing with small claims; offering only the smallest few keeps the
            # pass near-linear on large plans.
            ci = self.index[CPU]
            partners = sorted((b for b in members if b is not a), key=lambda b: (self._used(b)[ci], b.name))
            for b in partners[:REPACK_PARTNERS]:
                found = self._merged_type(a, b)
                if found is None:
                    continue
                saving = price_a + self._price(b) - found[0]
                # A merge that saves nothing still removes a node's overhead and leaves a larger
                # node whose room the next merge can use; every merge removes a claim, so this ends.
                if saving > -1e-9 and (best is None or saving > best[0]):
                    best = (saving, b, found[1], found[2])
            if best is not None:
                _, b, target, reqs = best
                self._merge(a, b, target, reqs)
                members.remove(a)
                merged_any = True
        return merged_any

    def _used(self, b: _Bin) -> list[int]:
        assert b.target is not None
        return [c - f for c, f in zip(b.target.cap, b.free, strict=True)]

    def _price(self, b: _Bin) -> float:
        """$/h of the cheapest type that holds the claim as it is now (cached until it changes)."""
        used = self._used(b)
        key = (b.name, b.requirements, tuple(used))
        price = self._prices.get(key)
        if price is None:
            found = self._cheapest_fit(b.pool, b.requirements, used)
            price = self._prices[key] = found[0] if found is not None else float("inf")
        return price

    def _merged_type(self, a: _Bin, b: _Bin) -> tuple[float, _Type, Requirements] | None:
        reqs = b.requirements.intersection(a.requirements)
        if any(r.is_empty() and not r.allows_absent() for r in reqs.values()):
            return None
        used = [x + y for x, y in zip(self._used(a), self._used(b), strict=True)]
        found = self._cheapest_fit(b.pool, reqs, used)
        return None if found is None else (found[0], found[1], reqs)

    def _cheapest_fit(self, pool: _Pool | None, reqs: Requirements, used: Sequence[int]) -> tuple[float, _Type] | None:
        assert pool is not None
        ci, mi = self.index[CPU], self.index[MEMORY]
        largest = self._largest.get(pool.name)
        if largest is None:
            largest = self._largest[pool.name] = (
                max((t.cap[ci] for t in pool.types), default=0),
                max((t.cap[mi] for t in pool.types), default=0),
            )
        if used[ci] > largest[0] or used[mi] > largest[1]:
            return None  # no type of the pool is that large: skip the scan
        for price, _, t, _ in self._candidates(pool, reqs):
            if t.exotic or t.cap[ci] < used[ci] or t.cap[mi] < used[mi]:
                continue
            if all(c >= u for c, u in zip(t.cap, used, strict=True)):
                return price, t
        return None

    def _merge(self, a: _Bin, b: _Bin, target: _Type, reqs: Requirements) -> None:
        used = [x + y for x, y in zip(self._used(a), self._used(b), strict=True)]
        b.requirements = reqs
        b.target = target
        b.free = [c - u for c, u in zip(target.cap, used, strict=True)]
        b.pods.extend(a.pods)
        self.claims.remove(a)
        if a in self.open:
            self.open.remove(a)

    # -- finalize ------------------------------------------------------------------------------

    def _finalize(self) -> SchedulingResult:
        claims: list[PlannedClaim] = []
        for b in self.claims:
            pool = b.pool
            assert pool is not None
            assert b.target is not None
            used = tuple([c - f for c, f in zip(b.target.cap, b.free, strict=True)])
            reqs = b.requirements
            budget = None
            if pool.remaining is not None and b.reserved is not None:
                budget = tuple([r + v for r, v in zip(pool.remaining, b.reserved, strict=True)])
            options, why = pool.prepared.claim_options(pool.types, reqs, used, budget)
            if not options:
                for pod in b.pods:
                    self.unschedulable[pod.key] = f"nodepool {pool.name}: {why}"
                continue
            if pool.remaining is not None and b.reserved is not None:
                _add(pool.remaining, b.reserved, 1)
                peak = [max(o[2].capacity[i] for o in options) for i in range(len(self.names))]
                _add(pool.remaining, peak, -1)
            offering = _cheapest_offering(options[0][3])
            # The pods' requests plus the overhead of the daemonsets the chosen type runs.
            overhead = options[0][2].overhead
            requests = Resources({n: u + o for n, u, o in zip(self.names, used, overhead, strict=True) if u + o})
            claims.append(
                PlannedClaim(
                    nodepool=pool.name,
                    requirements=reqs,
                    options=tuple(o[2].it for o in options),
                    offering=offering,
                    requests=requests,
                    pods=tuple(b.pods),
                )
            )
        existing = {b.name: tuple(p.key for p in b.pods) for b in self.existing if b.pods}
        return SchedulingResult(tuple(claims), existing, dict(sorted(self.unschedulable.items())))

    def _candidates(self, pool: _Pool, reqs: Requirements) -> list[_Option]:
        """The pool's types that `reqs` allow, with the offerings they allow, cheapest first.

        Claims share few distinct requirement sets, within a pass and across passes, so this is
        computed once per set (`_Prepared.options`). The list is shared: never change it.
        """
        return pool.prepared.options(pool.types, reqs)


# -- what every strategy of one solve() computes alike ------------------------------------------


@dataclass(frozen=True, slots=True)
class _Bound:
    """The bound pods by node (`pods`, in input order), what they request there (`used`, a vector
    over the solver's resource names), and for topology each node's pods as (pod, count): pods
    topology counts alike (same namespace, labels and required anti-affinity) once, with how many
    there are, in order of first appearance. Shared by the strategies: never changed.
    """

    used: Mapping[str, list[int]]
    pods: Mapping[str, list[Pod]]
    alike: Mapping[str, list[tuple[Pod, int]]]


class _Shared:
    """Work that every strategy of one `solve()` call would repeat on the same input, done once.

    Lives for one call, so it can only ever see one input; keyed by what else it depends on.
    """

    def __init__(self) -> None:
        self._bound: dict[tuple[str, ...], _Bound] = {}

    def bound(self, bound_pods: Sequence[Pod], names: tuple[str, ...]) -> _Bound:
        """`bound_pods` (the input's) by node (see `_Bound`), for these resource names."""
        hit = self._bound.get(names)
        if hit is not None:
            return hit
        used: dict[str, list[int]] = {}
        pods: dict[str, list[Pod]] = {}
        alike: dict[str, dict[tuple[object, ...], list[Any]]] = {}
        # Run by run (see `_BoundRuns`): adding up a run's sums is adding up its pods one by one.
        start, end = 0, len(bound_pods)
        while start < end:
            run = _BOUND_RUNS.get(bound_pods, start, names)
            start += len(run.pods) or 1
            if not run.pods:  # a terminal or unbound pod: nowhere to count it
                continue
            node = run.pods[0].node_name
            pods.setdefault(node, []).extend(run.pods)
            acc = used.setdefault(node, [0] * len(names))
            for i, v in enumerate(run.used):
                acc[i] += v
            runs = alike.setdefault(node, {})
            for key, pod, count in run.alike:
                seen = runs.get(key)
                if seen is None:
                    runs[key] = [pod, count]
                else:
                    seen[1] += count
        hit = _Bound(
            used,
            pods,
            {node: [(p, n) for p, n in runs.values()] for node, runs in alike.items()},
        )
        self._bound[names] = hit
        return hit


@dataclass(frozen=True, slots=True)
class _Run:
    """Consecutive bound pods on one node (`pods`; empty for one pod that is terminal or on no
    node), what they request (`used`, over some resource names) and, for topology, (key, first
    pod, count) per key in order of first appearance, as `_Shared.bound` counts them.
    """

    pods: tuple[Pod, ...]
    names: tuple[str, ...]
    used: tuple[int, ...]
    alike: tuple[tuple[tuple[object, ...], Pod, int], ...]


_NO_RUN = _Run((), (), (), ())


class _BoundRuns:
    """The runs `_Shared.bound` adds up, remembered across solves by their first pod.

    Each consolidation question passes the solver the few hundred bound pods a topology
    constraint counts, node after node, and the next question passes mostly the same nodes' pods
    again: the same pod objects in the same order (the simulator of a pass hands out one tuple per
    node, and the cluster hands out unchanged pods from pass to pass). So a run of pods on one node
    is added up once, and is reused wherever the same pods follow each other again: the sums of a
    run are the sums of its pods, so `_Shared.bound` gets exactly what it would pod by pod.
    Valid because a run's facts are a pure function of its (immutable) pods and the names; an
    entry is found by its first pod's id and used only when the pods that follow are the very
    objects it holds, so no id can be reused while it is remembered. Bounded: everything is
    forgotten when `limit` runs are remembered; a few runs are kept per first pod.
    """

    PER_POD = 4

    def __init__(self, limit: int = 50_000) -> None:
        self.limit = limit
        self._runs: dict[int, list[_Run]] = {}

    def get(self, pods: Sequence[Pod], start: int, names: tuple[str, ...]) -> _Run:
        """A run of pods on one node starting at `pods[start]`: the latest remembered one that the
        pods there repeat, else the whole run there; `_NO_RUN` when that pod is not counted.
        """
        first = pods[start]
        if first.terminal or not first.node_name:
            return _NO_RUN
        for run in self._runs.get(id(first), ()):
            n = len(run.pods)
            if (
                run.pods[0] is first
                and run.names == names
                and len(pods) - start >= n
                and all(map(operator.is_, run.pods, pods[start : start + n]))
            ):
                return run
        return self._remember(self._add_up(pods, start, names))

    @staticmethod
    def _add_up(pods: Sequence[Pod], start: int, names: tuple[str, ...]) -> _Run:
        node = pods[start].node_name
        end = start
        used = [0] * len(names)
        alike: dict[tuple[object, ...], list[Any]] = {}
        while end < len(pods):
            pod = pods[end]
            if pod.node_name != node or pod.terminal:
                break
            requests, key = _POD_FACTS.get(pod, names)
            for i, v in enumerate(requests):
                used[i] += v
            seen = alike.get(key)
            if seen is None:
                alike[key] = [pod, 1]
            else:
                seen[1] += 1
            end += 1
        return _Run(tuple(pods[start:end]), names, tuple(used), tuple((key, p, n) for key, (p, n) in alike.items()))

    def _remember(self, run: _Run) -> _Run:
        if len(self._runs) >= self.limit:
            self._runs.clear()
        known = self._runs.setdefault(id(run.pods[0]), [])
        known.insert(0, run)
        del known[self.PER_POD :]
        return run


_BOUND_RUNS = _BoundRuns()


class _PodFacts:
    """What `_Shared.bound` reads of a bound pod, remembered across solves: its requests as a
    vector over some resource names, and what Topology.record reads of it (namespace, labels,
    required anti-affinity; pods equal in these are recorded alike).

    Consolidation asks dozens of questions per pass about the same few hundred bound pods (those a
    topology constraint counts), and the provisioner passes every bound pod on each invocation;
    the pods are mostly the same objects from one question or pass to the next. Valid because the
    facts are a pure function of the (immutable) pod and the names: pods are remembered by id, and
    each entry holds its pod, so the id cannot be reused by another object while it is remembered.
    Bounded: everything is forgotten when `limit` pods are remembered.
    """

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self._facts: dict[int, tuple[Pod, tuple[str, ...], tuple[int, ...], tuple[object, ...]]] = {}

    def get(self, pod: Pod, names: tuple[str, ...]) -> tuple[tuple[int, ...], tuple[object, ...]]:
        """(requests as a vector over `names`, the pod's topology key)."""
        known = self._facts.get(id(pod))
        if known is not None and known[0] is pod and known[1] == names:
            return known[2], known[3]
        requests = _vec(pod.requests, names)
        key = (pod.namespace, tuple(sorted(pod.labels.items())), pod.anti_affinity)
        if len(self._facts) >= self.limit:
            self._facts.clear()
        self._facts[id(pod)] = (pod, names, requests, key)
        return requests, key


_POD_FACTS = _PodFacts()


class _NodeFacts:
    """What `_existing_bins` derives from a node, remembered across solves like `_PodFacts` (and
    valid for the same reasons; consolidation hands every solve of a pass the same node objects):
    its allocatable as a vector over some resource names, its labels as requirements, and the
    taints that keep pods off it.
    """

    def __init__(self, limit: int = 20_000) -> None:
        self.limit = limit
        self._facts: dict[
            int, tuple[Node, tuple[str, ...], tuple[tuple[int, ...], Requirements, tuple[Taint, ...]]]
        ] = {}

    def get(self, node: Node, names: tuple[str, ...]) -> tuple[tuple[int, ...], Requirements, tuple[Taint, ...]]:
        """(allocatable over `names`, labels as requirements, taints that count)."""
        known = self._facts.get(id(node))
        if known is not None and known[0] is node and known[1] == names:
            return known[2]
        facts = (
            _vec(node.allocatable, names),
            Requirements.from_labels(node.labels),
            tuple(t for t in node.taints if t.key not in _IGNORED_NODE_TAINTS),
        )
        if len(self._facts) >= self.limit:
            self._facts.clear()
        self._facts[id(node)] = (node, names, facts)
        return facts


_NODE_FACTS = _NodeFacts()


# -- instance types as a NodePool sees them, shared across solves ---------------------------------


# A type that may be a claim's target, with its price for some capacity types and, per resource it
# has, how much of it pods of the opening size can use: [(resource index, usable amount)].
_Priced = tuple["_Type", float, list[tuple[int, int]]]


def _priced(fitting: Sequence[_Type], req: tuple[int, ...], cts: frozenset[str]) -> list[_Priced]:
    """The types a claim opened for pods of size `req` in capacity types `cts` may target, among
    `fitting` (types that hold one such pod): the plain ones (no accelerator, not metal) unless
    there are none, offered in one of `cts`; each with its cheapest price there and usable room;
    cheapest first (then by name), as `_best_target` relies on.
    """
    plain = [t for t in fitting if not t.exotic]
    out: list[_Priced] = []
    for t in plain or fitting:
        if not any(ct in t.prices for ct in cts):
            continue
        price = min(p for ct, p in t.prices.items() if ct in cts)
        usable = [(i, (cap // req[i]) * req[i] if req[i] else cap) for i, cap in enumerate(t.cap) if cap]
        out.append((t, price, usable))
    out.sort(key=lambda p: (p[1], p[0].it.name))
    return out


def _best_target(priced: Sequence[_Priced], demand: Sequence[int]) -> _Type | None:
    """The type a new claim aims to fill among `priced` (cheapest first), for the pool's remaining
    `demand` (at least one pod of the opening size); None when `priced` is empty.
    """
    costs: list[tuple[float, float, _Type]] = []
    cheapest = math.inf
    for t, price, usable in priced:
        # A type costs at least its price (one node), so once the price is beyond TARGET_SLACK of
        # the cheapest cost so far, neither this type nor any dearer one can be chosen below.
        if price > cheapest * (1 + TARGET_SLACK):
            break
        # Serve the remaining demand with this type alone: whole nodes, each holding whole
        # pods of the size that opens the claim (so a 7.9-cpu node counts as 7 one-cpu pods).
        # `usable` leaves out resources the type lacks: demand for them (other pods' GPUs) is
        # not its to serve.
        worst = 0.0
        for i, room in usable:
            d = demand[i]
            if d > 0:
                worst = max(worst, d / room)
        cost = price * max(1, math.ceil(worst - 1e-9))
        costs.append((cost, price, t))
        cheapest = min(cheapest, cost)
    if not costs:
        return None
    # Within TARGET_SLACK of the cheapest way to serve the demand, prefer the smallest type:
    # the bill barely moves and an interruption or a failed launch hits fewer pods.
    near = [(price, t) for c, price, t in costs if c <= cheapest * (1 + TARGET_SLACK)]
    return min(near, key=lambda n: (n[0], n[1].it.name))[1]


class _Targets:
    """For one list of types, node requirements `alt` and pod size `req`: the types `alt` allows
    (`compatible`), those of them one pod fits (`fitting`), the largest capacity among those
    (`peak`, per resource), `_priced` per capacity types, and the target `best` chooses for a
    demand. Shared across solves: never changed (but for what it remembers).
    """

    # Targets remembered per capacity types and demand (a pass asks about a few hundred demands).
    MAX_CHOICES = 1024
    __slots__ = ("_chosen", "_priced", "compatible", "fitting", "peak", "req")

    def __init__(self, compatible: list[_Type], req: tuple[int, ...]) -> None:
        self.req = req
        self.compatible = compatible
        self.fitting = [t for t in compatible if all(c >= r for c, r in zip(t.cap, req, strict=True))]
        self.peak = [max(t.capacity[i] for t in self.fitting) for i in range(len(req))] if self.fitting else []
        self._priced: dict[frozenset[str], list[_Priced]] = {}
        self._chosen: dict[tuple[frozenset[str], tuple[int, ...]], _Type | None] = {}

    def priced(self, cts: frozenset[str]) -> list[_Priced]:
        """`_priced(self.fitting, ...)`, remembered."""
        hit = self._priced.get(cts)
        if hit is None:
            hit = self._priced[cts] = _priced(self.fitting, self.req, cts)
        return hit

    def best(self, cts: frozenset[str], demand: tuple[int, ...]) -> _Type | None:
        """`_best_target(self.priced(cts), demand)`, remembered: consolidation asks again about the
        same pods (the same demand) in every pass, and the answer is a pure function of the key.
        """
        key = (cts, demand)
        # One lookup, not `in` then index: another thread's put may evict the key in between.
        with contextlib.suppress(KeyError):
            return self._chosen[key]
        best = _best_target(self.priced(cts), demand)
        _bounded_put(self._chosen, key, best, self.MAX_CHOICES)
        return best


class _Prepared:
    """One NodePool's view of the catalog, for given daemonsets, blocked offerings and resource
    names: the pool's requirements, and each instance type as the pool sees it (`_Type`, or None
    when the pool cannot use it).

    Preparing a type (requirements intersection, offering filtering and sorting, daemonset
    overhead) is most of a small solve, and it depends on nothing else, so one consolidation pass
    (dozens of solves) or one provisioner invocation prepares each type once instead of once per
    solve and strategy. Valid because everything here is a pure function of the key
    (`nodepool`, `daemonsets`, `blocked`, `names`, compared by value) and of the instance type, and
    every object involved is immutable: types are remembered by `id`, and the entry keeps a
    reference to each, so an id cannot be reused by another object while it is remembered.
    """

    # Bounds on what one entry remembers (a catalog has ~800 types; a pass cuts a few lists).
    MAX_TYPES = 8192
    MAX_LISTS = 64
    MAX_QUESTIONS = 4096
    MAX_REQUIREMENTS = 512

    def __init__(
        self,
        nodepool: NodePool,
        daemonsets: Sequence[DaemonSet],
        blocked: frozenset[BlockedOffering],
        names: tuple[str, ...],
    ) -> None:
        self.nodepool = nodepool
        self.daemonsets = daemonsets
        self.blocked = blocked
        self.names = names
        reqs = nodepool.requirements.intersection(Requirements.from_labels(nodepool.labels)).intersection(
            Requirements([Requirement.new(wk.NODEPOOL, "In", [nodepool.name])])
        )
        self.requirements = reqs
        self._zone_req = reqs.get(wk.ZONE)
        self._ct_req = reqs.get(wk.CAPACITY_TYPE)
        self._daemons = [
            ds
            for ds in daemonsets
            if _tolerated(ds.template.tolerations, nodepool.taints, prefer=False)
            and any(reqs.compatible(alt) for alt in ds.template.node_requirements())
        ]
        self._by_type: dict[int, tuple[InstanceType, _Type | None]] = {}
        self._lists: dict[int, tuple[Sequence[InstanceType], tuple[_Type, ...], Mapping[str, _Type]]] = {}
        # By list of types this entry made (held, so its id stays its own) and requirements.
        self._matching: dict[tuple[int, Requirements], tuple[tuple[_Type, ...], list[_Type]]] = {}
        self._options: dict[tuple[int, Requirements], tuple[tuple[_Type, ...], list[_Option]]] = {}
        self._by_requirements: dict[Requirements, dict[int, tuple[_Type, bool, _Option | None]]] = {}
        self._targets: dict[tuple[int, Requirements, tuple[int, ...]], tuple[tuple[_Type, ...], _Targets]] = {}
        self._claims: dict[
            tuple[int, Requirements, tuple[int, ...], tuple[int, ...] | None],
            tuple[tuple[_Type, ...], tuple[list[_Option], str]],
        ] = {}

    def matches(
        self,
        nodepool: NodePool,
        daemonsets: Sequence[DaemonSet],
        blocked: frozenset[BlockedOffering],
        names: tuple[str, ...],
    ) -> bool:
        """True when this entry was prepared for equal inputs (identity first: it is the usual case)."""
        return (
            (self.nodepool is nodepool or self.nodepool == nodepool)
            and (self.daemonsets is daemonsets or self.daemonsets == daemonsets)
            and (self.blocked is blocked or self.blocked == blocked)
            and self.names == names
        )

    def types(self, instance_types: Sequence[InstanceType]) -> tuple[tuple[_Type, ...], Mapping[str, _Type]]:
        """The pool's usable types among `instance_types`, cheapest first (then by name), and by name."""
        hit = self._lists.get(id(instance_types))
        if hit is not None and hit[0] is instance_types:
            return hit[1], hit[2]
        out: list[_Type] = []
        for it in instance_types:
            known = self._by_type.get(id(it))
            if known is not None and known[0] is it:
                t = known[1]
            else:
                t = self._prepare(it)
                if len(self._by_type) >= self.MAX_TYPES:
                    self._by_type.clear()
                self._by_type[id(it)] = (it, t)
            if t is not None:
                out.append(t)
        out.sort(key=lambda t: (t.price, t.it.name))
        types = tuple(out)
        by_name = {t.it.name: t for t in types}
        # Only an immutable sequence may be recognised by identity next time.
        if type(instance_types) is tuple:
            _bounded_put(self._lists, id(instance_types), (instance_types, types, by_name), self.MAX_LISTS)
        return types, by_name

    def matching(self, types: tuple[_Type, ...], reqs: Requirements) -> list[_Type]:
        """The types of `types` (a list `types()` made) whose offerings `reqs` allow, in order.

        A fresh list each call (callers may keep or change it).
        """
        key = (id(types), reqs)
        hit = self._matching.get(key)
        if hit is None or hit[0] is not types:
            answers = self._answers(reqs)
            hit = (types, [t for t in types if self._answer(answers, t, reqs)[1]])
            _bounded_put(self._matching, key, hit, self.MAX_QUESTIONS)
        return list(hit[1])

    def targets(self, types: tuple[_Type, ...], alt: Requirements, req: tuple[int, ...]) -> _Targets:
        """What a claim's target is chosen from, for pods of size `req` needing `alt` (`_Targets`)."""
        key = (id(types), alt, req)
        hit = self._targets.get(key)
        if hit is not None and hit[0] is types:
            return hit[1]
        found = _Targets(self.matching(types, alt), req)
        _bounded_put(self._targets, key, (types, found), self.MAX_QUESTIONS)
        return found

    def options(self, types: tuple[_Type, ...], reqs: Requirements) -> list[_Option]:
        """The types of `types` (a list `types()` made) that `reqs` allow, each with the offerings
        `reqs` allow, cheapest first (then by name). Shared between callers: never change it.
        """
        key = (id(types), reqs)
        hit = self._options.get(key)
        if hit is not None and hit[0] is types:
            return hit[1]
        answers = self._answers(reqs)
        out: list[_Option] = []
        for t in types:
            option = self._answer(answers, t, reqs)[2]
            if option is not None:
                out.append(option)
        out.sort(key=lambda o: (o[0], o[1]))
        _bounded_put(self._options, key, (types, out), self.MAX_QUESTIONS)
        return out

    def claim_options(
        self, types: tuple[_Type, ...], reqs: Requirements, used: tuple[int, ...], budget: tuple[int, ...] | None
    ) -> tuple[list[_Option], str]:
        """A claim's instance type options: those of `options(types, reqs)` that hold `used` (a
        vector over this entry's names) and, with a `budget` (the pool's remaining limits), whose
        capacity is within it, plain types only when any fits, cut as `_keep_min_values` says;
        and why there are none, when none fit.

        Remembered by all four: consolidation finalizes claims for the same pods in every pass.
        The list is shared between callers: never change it.
        """
        key = (id(types), reqs, used, budget)
        hit = self._claims.get(key)
        if hit is not None and hit[0] is types:
            return hit[1]
        flexible = any(r.min_values for r in reqs.values())
        options: list[_Option] = []
        plain = 0
        ci, mi = self.names.index(CPU), self.names.index(MEMORY)
        used_cpu, used_memory = used[ci], used[mi]
        for option in self.options(types, reqs):
            t = option[2]
            if t.cap[ci] < used_cpu or t.cap[mi] < used_memory:
                continue
            if not all(c >= u for c, u in zip(t.cap, used, strict=True)):
                continue
            if budget is not None and not all(c <= r for c, r in zip(t.capacity, budget, strict=True)):
                continue
            options.append(option)
            plain += not t.exotic
            # Cheapest first: once 60 plain types fit, no later type can make the list.
            if plain >= MAX_INSTANCE_TYPE_OPTIONS and not flexible:
                break
        if plain:
            options = [o for o in options if not o[2].exotic]
        answer = _keep_min_values(options, reqs)
        _bounded_put(self._claims, key, (types, answer), self.MAX_QUESTIONS)
        return answer

    def _answers(self, reqs: Requirements) -> dict[int, tuple[_Type, bool, _Option | None]]:
        """What `_answer` found for `reqs` so far, by type id. Kept per type, not only per list:
        consolidation cuts the catalog at another price for almost every solve.
        """
        answers = self._by_requirements.get(reqs)
        if answers is None:
            answers = {}
            _bounded_put(self._by_requirements, reqs, answers, self.MAX_REQUIREMENTS)
        return answers

    @staticmethod
    def _answer(
        answers: dict[int, tuple[_Type, bool, _Option | None]], t: _Type, reqs: Requirements
    ) -> tuple[_Type, bool, _Option | None]:
        """Whether `reqs` allow `t`'s offerings, and if so `t` with the offerings they allow (None
        when none is left), remembered in `answers` (which holds `t`, so its id stays its own).
        """
        known = answers.get(id(t))
        if known is not None and known[0] is t:
            return known
        option: _Option | None = None
        allowed = t.offer_reqs.intersects(reqs)
        if allowed:
            zone_req, ct_req = reqs.get(wk.ZONE), reqs.get(wk.CAPACITY_TYPE)
            offers = tuple(
                o
                for o in t.offerings
                if (zone_req is None or zone_req.has(o.zone)) and (ct_req is None or ct_req.has(o.capacity_type))
            )
            if offers:
                option = (offers[0].price, t.it.name, t, offers)
        known = (t, allowed, option)
        answers[id(t)] = known
        return known

    def _prepare(self, it: InstanceType) -> _Type | None:
        """`it` as this pool sees it, or None when the pool's requirements, the blocked offerings or
        the daemonsets' overhead leave nothing to launch.
        """
        if not it.requirements.intersects(self.requirements):
            return None
        zone_req, ct_req = self._zone_req, self._ct_req
        offerings = tuple(
            sorted(
                (
                    o
                    for o in it.offerings
                    if o.available
                    and (o.capacity_type, it.name, o.zone) not in self.blocked
                    and (zone_req is None or zone_req.has(o.zone))
                    and (ct_req is None or ct_req.has(o.capacity_type))
                ),
                key=_offering_order,
            )
        )
        if not offerings:
            return None
        overhead = Resources()
        for ds in self._daemons:
            if any(it.requirements.intersects(alt) for alt in ds.template.node_requirements()):
                overhead = overhead + ds.template.requests
        cap = _vec(it.allocatable - overhead, self.names)
        if min(cap) < 0:
            return None
        offer_reqs = it.requirements.intersection(
            Requirements(
                [
                    Requirement.new(wk.ZONE, "In", sorted({o.zone for o in offerings})),
                    Requirement.new(wk.CAPACITY_TYPE, "In", sorted({o.capacity_type for o in offerings})),
                ]
            )
        )
        exotic = (
            any(it.capacity[a] for a in ACCELERATORS)
            or it.name.endswith(".metal")
            or "metal" in (it.label(wk.INSTANCE_SIZE) or "")
        )
        prices: dict[str, float] = {}
        for o in offerings:
            prices.setdefault(o.capacity_type, o.price)
        return _Type(
            it,
            cap,
            _vec(overhead, self.names),
            _vec(it.capacity, self.names),
            offerings[0].price,
            prices,
            offerings,
            offer_reqs,
            exotic,
        )


class _PreparedCache:
    """The few most recently used `_Prepared` entries (a small LRU, compared by value).

    A cache of pure results: a hit returns exactly what preparing afresh would. Safe to share
    between threads: at worst two threads prepare the same entry and one copy is kept.
    """

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._entries: list[_Prepared] = []
        self._lock = threading.Lock()

    def get(
        self,
        nodepool: NodePool,
        daemonsets: Sequence[DaemonSet],
        blocked: frozenset[BlockedOffering],
        names: tuple[str, ...],
    ) -> _Prepared:
        """The entry for these inputs, made when none matches."""
        with self._lock:
            for i, entry in enumerate(self._entries):
                if entry.matches(nodepool, daemonsets, blocked, names):
                    if i:
                        del self._entries[i]
                        self._entries.insert(0, entry)
                    return entry
            entry = _Prepared(nodepool, daemonsets, blocked, names)
            self._entries.insert(0, entry)
            del self._entries[self.size :]
            return entry

    def clear(self) -> None:
        """Forget every entry (tests compare cached and fresh results with it)."""
        with self._lock:
            self._entries.clear()


_PREPARED = _PreparedCache()


def _bounded_put(memo: dict[_K, _V], key: _K, value: _V, limit: int) -> None:
    """Remember `value`, forgetting the oldest entry first when `memo` holds `limit` already."""
    if len(memo) >= limit and key not in memo:
        del memo[next(iter(memo))]
    memo[key] = value


# -- helpers -------------------------------------------------------------------------------------


def _by_weight(inp: SchedulingInput) -> list[PoolCapacity]:
    return sorted(inp.pools, key=lambda p: (-p.nodepool.weight, p.nodepool.name))


def _resource_names(inp: SchedulingInput, classes: Iterable[PodClass]) -> tuple[str, ...]:
    names = {CPU, MEMORY, PODS}
    for cls in classes:
        names |= set(cls.requests)
    for ds in inp.daemonsets:
        names |= set(ds.template.requests)
    for pc in inp.pools:
        if pc.nodepool.limits is not None:
            names |= set(pc.nodepool.limits)
    return tuple(sorted(names))


def _vec(resources: Mapping[str, int], names: Sequence[str]) -> tuple[int, ...]:
    if type(resources) is Resources:
        # Resources reads an absent name as 0 itself; indexing skips Mapping.get's slow path.
        return tuple([resources[n] for n in names])
    return tuple(resources.get(n, 0) for n in names)


def _add(target: list[int], delta: Sequence[int], times: int) -> None:
    for i, v in enumerate(delta):
        if v:
            target[i] += v * times


def _shrunk(now: Sequence[int], then: Sequence[int]) -> bool:
    """True when the remaining demand fell below TARGET_REFRESH of what it was when a target was
    chosen: as packing changes the shape of what is left, the best type changes too.
    """
    return any(n < t * TARGET_REFRESH for n, t in zip(now, then, strict=True))


def _share(count: int, index: int, parts: int) -> int:
    """Part `index` of `count` split into `parts` near-equal whole parts (the first ones larger)."""
    return count // parts + (1 if index < count % parts else 0)


def _nodes_for(demand: Sequence[int], cap: Sequence[int]) -> float:
    """How many nodes of capacity `cap` `demand` fills, in its most demanding resource."""
    return max((d / c for d, c in zip(demand, cap, strict=True) if d and c), default=0.0)


def _per_node(cap: Sequence[int], req: Sequence[int]) -> int:
    """How many pods requesting `req` one node of capacity `cap` holds."""
    return min((c // r for c, r in zip(cap, req, strict=True) if r), default=1 << 30)


def _tolerated(tolerations: tuple[Toleration, ...], taints: Iterable[Taint], *, prefer: bool) -> bool:
    for taint in taints:
        if taint.effect not in BLOCKING and not (prefer and taint.effect == "PreferNoSchedule"):
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return False
    return True


def _domain_constraints(cls: PodClass) -> list[tuple[SpreadConstraint | AffinityTerm, bool]]:
    """The class's constraints keyed on something other than hostname, in a fixed order."""
    out: list[tuple[SpreadConstraint | AffinityTerm, bool]] = []
    out += [(s, False) for s in cls.spread if s.topology_key != wk.HOSTNAME]
    out += [(t, False) for t in cls.affinity if t.topology_key != wk.HOSTNAME]
    out += [(t, True) for t in cls.anti_affinity if t.topology_key != wk.HOSTNAME]
    return out


def _offering_order(o: Offering) -> tuple[float, int, str]:
    return (o.price, _CAPACITY_PRIORITY.get(o.capacity_type, 3), o.zone)


def _cheapest_offering(offers: Sequence[Offering]) -> Offering:
    return min(offers, key=_offering_order)


_Option = tuple[float, str, _Type, tuple[Offering, ...]]


def _keep_min_values(options: list[_Option], reqs: Requirements) -> tuple[list[_Option], str]:
    """The cheapest 60 options, or more when fewer would break a requirement's minValues; no
    options (and why) when even all of them do.
    """
    flexible = [r for r in reqs.values() if r.min_values]
    if not flexible:
        return options[:MAX_INSTANCE_TYPE_OPTIONS], ""

    def distinct(head: Sequence[_Option], key: str) -> int:
        return len({t.it.label(key) for _, _, t, _ in head} - {None})

    for r in flexible:
        have = distinct(options, r.key)
        if have < (r.min_values or 0):
            return [], f"{r.key} has minValues {r.min_values} but only {have} values fit the pods"
    for size in range(MAX_INSTANCE_TYPE_OPTIONS, len(options) + 1):
        head = options[:size]
        if all(distinct(head, r.key) >= (r.min_values or 0) for r in flexible):
            return head, ""
    return options, ""
