"""A reference re-implementation of Karpenter's pod-by-pod scheduler, for comparison. Pure.

Role: the benchmark compares Nodewright's `solve()` with the algorithm Karpenter v1 runs
(kubernetes-sigs/karpenter, pkg/controllers/provisioning/scheduling: scheduler.go, nodeclaim.go,
topology.go, topologygroup.go, queue.go, preferences.go), in the same process, on the same
`SchedulingInput`, returning the same `SchedulingResult`. It is a benchmark baseline, not
production code: it favours being recognisably Karpenter's loop over being fast.

Theory of operation (Karpenter's, in our words)
-----------------------------------------------
* Queue: pods sorted by cpu, then memory, descending (stable, so ties keep input order). A pod
  that fails is relaxed one preference (preferences.go order: next required node-affinity term,
  heaviest preferred pod affinity, heaviest preferred anti-affinity, heaviest preferred node
  affinity, one ScheduleAnyway spread, then PreferNoSchedule taints when a pool has any) and
  pushed to the back; the pass ends when the queue has cycled without progress (queue.go).
* One pod at a time (`Scheduler.add`): existing nodes and in-flight claims first, in order; then
  this pass's node claims sorted by fewest pods first; then a new claim from each NodePool by
  weight. Sorting is stable, so claims with equal pod counts keep their previous relative order
  (Go's sort.Slice is not stable; ties are where the two may differ).
* A claim (`NodeClaim.Add`): the pod must tolerate the pool's taints, its node requirements must
  be compatible with the claim's, topology adds a domain requirement (below), and the claim keeps
  only the instance types whose requirements and offerings still intersect and whose allocatable,
  minus the pool's daemonset overhead, holds all its pods. No type left: the pod does not fit.
* Topology (`TopologyGroup`): counts of selected pods per domain. Spread picks the domain with the
  lowest count among the claim's possible domains such that count + self - min <= maxSkew (min
  over the pod's domains; 0 for hostname); ties go to the first domain in sorted order (Go's map
  order is random). Affinity allows domains with a matching pod, or bootstraps the first domain
  when the pod selects itself and none exists. Anti-affinity allows domains with no matching pod;
  pods selected by a placed pod's anti-affinity avoid that pod's domains (inverse groups). Spread
  and affinity only count a pod once its claim is pinned to one domain; anti-affinity counts all
  domains the claim could still take. The spread node filter (nodeAffinityPolicy) is not modelled.
* Limits: a new claim may only use types within the pool's remaining limits and then consumes the
  largest capacity among its options. `limits.nodes` counts nodes: every existing node and claim
  in flight is one (`StateNode.Capacity` adds `nodes: 1`), a pool with none left opens no claim
  ("node limits have been exhausted"), and a new claim is charged one node. (Karpenter's
  `subtractMax` charges the options' `Capacity`, which has no `nodes` entry, so within one round
  it could open claims past the limit until the next round counts them; the reference charges the
  node, as the limit means and as Nodewright does.)
* Launch: options sorted by the cheapest offering their requirements allow, truncated to 60; the
  claim is priced at the cheapest allowed offering of the cheapest option (what lowest-price
  on-demand gets; spot's price-capacity-optimized may pay more, so this flatters Karpenter).
  GPU/metal types are not held back (the benchmark catalog has none).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from nodewright.engine.scheduling.classes import class_key
from nodewright.engine.scheduling.topology import Group, spread_group, term_group
from nodewright.engine.scheduling.types import (
    MAX_INSTANCE_TYPE_OPTIONS,
    PlannedClaim,
    PoolCapacity,
    SchedulingInput,
    SchedulingResult,
)
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, Offering
from nodewright.model.pod import AffinityTerm, Pod, SpreadConstraint
from nodewright.model.requirements import Requirement, Requirements, label_matches
from nodewright.model.resources import CPU, MEMORY, PODS, Resources
from nodewright.model.taints import BLOCKING, Taint, Toleration

_NODES = "nodes"  # limits.nodes: a count of nodes, not a resource of the instance type
_ONE_NODE = 1000  # one node, in the thousandths quantities are held in

Vector = tuple[int, ...]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
_CAPACITY_PRIORITY = {"reserved": 0, "spot": 1, "on-demand": 2}
_SPREAD, _AFFINITY, _ANTI = "spread", "affinity", "anti"


def schedule(inp: SchedulingInput) -> SchedulingResult:
    """Place `inp.pods` the way Karpenter's scheduler does (see module doc)."""
    return _Scheduler(inp).run()


# -- pods and their relaxation levels -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _View:
    """A pod's constraints at one relaxation level (preferences still present count as required)."""

    requirements: Requirements  # node selector + current required term + heaviest preferred term
    strict: Requirements  # without the preferred term: the pod's own domains for topology
    spread: tuple[SpreadConstraint, ...]
    affinity: tuple[AffinityTerm, ...]
    anti_affinity: tuple[AffinityTerm, ...]
    tolerate_prefer_no_schedule: bool
    # (kind, group, constraint, pod selects itself), hostname-keyed first: they are the cheap checks.
    constraints: tuple[tuple[str, Group, SpreadConstraint | AffinityTerm, bool], ...] = ()


def _constraints(pod: Pod, view: _View) -> tuple[tuple[str, Group, SpreadConstraint | AffinityTerm, bool], ...]:
    out: list[tuple[str, Group, SpreadConstraint | AffinityTerm, bool]] = []
    for s in view.spread:
        g = spread_group(s, pod.namespace)
        out.append((_SPREAD, g, s, g.selects(pod.namespace, pod.labels)))
    for kind, terms in ((_AFFINITY, view.affinity), (_ANTI, view.anti_affinity)):
        for t in terms:
            g = term_group(t)
            out.append((kind, g, t, g.selects(pod.namespace, pod.labels)))
    out.sort(key=lambda c: c[1].key != wk.HOSTNAME)
    return tuple(out)


def _views(pod: Pod, relax_prefer_no_schedule: bool) -> tuple[_View, ...]:
    """Every relaxation level of `pod`, strictest first, in Karpenter's Relax order."""
    terms = list(pod.required_terms)
    pref_affinity = sorted(pod.preferred_affinity, key=lambda t: -t.weight)
    pref_anti = sorted(pod.preferred_anti_affinity, key=lambda t: -t.weight)
    pref_node = sorted(pod.preferred_terms, key=lambda t: -t.weight)
    soft = [s for s in pod.spread if not s.required]
    tolerate = False
    selector = Requirements.from_labels(pod.node_selector)

    def view() -> _View:
        strict = selector.intersection(terms[0]) if terms else selector
        reqs = strict.intersection(pref_node[0].requirements) if pref_node else strict
        v = _View(
            reqs,
            strict,
            tuple(s for s in pod.spread if s.required) + tuple(soft),
            pod.affinity + tuple(pref_affinity),
            pod.anti_affinity + tuple(pref_anti),
            tolerate,
        )
        return replace(v, constraints=_constraints(pod, v))

    out = [view()]
    while True:
        if len(terms) > 1:
            terms.pop(0)
        elif pref_affinity:
            pref_affinity.pop(0)
        elif pref_anti:
            pref_anti.pop(0)
        elif pref_node:
            pref_node.pop(0)
        elif soft:
            soft.pop(0)
        elif relax_prefer_no_schedule and not tolerate:
            tolerate = True
        else:
            return tuple(out)
        out.append(view())


@dataclass(slots=True)
class _PodState:
    pod: Pod
    req: Vector
    views: tuple[_View, ...]
    level: int = 0

    @property
    def view(self) -> _View:
        return self.views[self.level]


# -- pools ----------------------------------------------------------------------------------------


class _Pool:
    """A NodePool's launchable instance types as vectors, and the masks its claims filter with."""

    def __init__(self, pc: PoolCapacity, inp: SchedulingInput, names: Sequence[str]) -> None:
        np_ = pc.nodepool
        self.name = np_.name
        self.weight = np_.weight
        self.taints = np_.taints
        self.requirements = np_.requirements.intersection(Requirements.from_labels(np_.labels)).intersection(
            Requirements([Requirement.new(wk.NODEPOOL, "In", [np_.name])])
        )
        self.blocked = inp.blocked
        # Karpenter's daemonOverhead: one sum per NodeClaimTemplate of the daemonsets that would run there.
        overhead = Resources()
        for ds in inp.daemonsets:
            if _tolerated(ds.template.tolerations, self.taints, prefer=False) and any(
                self.requirements.compatible(alt) for alt in ds.template.node_requirements()
            ):
                overhead = overhead + ds.template.requests
        self.overhead = overhead
        self.types: list[InstanceType] = [
            it
            for it in pc.instance_types
            if it.requirements.intersects(self.requirements) and self._allowed(it, self.requirements)
        ]
        self.alloc: IntArray = np.array(
            [[(it.allocatable - overhead)[n] for n in names] for it in self.types], dtype=np.int64
        ).reshape(len(self.types), len(names))
        self.capacity: IntArray = np.array(
            [[_ONE_NODE if n == _NODES else it.capacity[n] for n in names] for it in self.types], dtype=np.int64
        ).reshape(len(self.types), len(names))
        self.remaining: IntArray | None = None
        if np_.limits is not None:
            used = inp.used.get(np_.name, Resources())
            self.remaining = np.array(
                [np_.limits[n] - used[n] if n in np_.limits else 1 << 62 for n in names], dtype=np.int64
            )
        self._masks: dict[Requirements, BoolArray] = {}
        self._cheapest: dict[tuple[Requirement | None, Requirement | None], list[Offering | None]] = {}

    def _allowed(self, it: InstanceType, reqs: Requirements) -> bool:
        return bool(self.offerings(it, reqs))

    def offerings(self, it: InstanceType, reqs: Requirements) -> list[Offering]:
        """Available, unblocked offerings of `it` whose zone and capacity type `reqs` allow."""
        zone, ct = reqs.get(wk.ZONE), reqs.get(wk.CAPACITY_TYPE)
        return [
            o
            for o in it.offerings
            if o.available
            and (o.capacity_type, it.name, o.zone) not in self.blocked
            and (zone is None or zone.has(o.zone))
            and (ct is None or ct.has(o.capacity_type))
        ]

    def mask(self, reqs: Requirements) -> BoolArray:
        """Which types are compatible with `reqs` and still have an offering it allows (cached)."""
        hit = self._masks.get(reqs)
        if hit is None:
            hit = np.array(
                [it.requirements.intersects(reqs) and self._allowed(it, reqs) for it in self.types], dtype=bool
            ).reshape(len(self.types))
            self._masks[reqs] = hit
        return hit

    def cheapest(self, reqs: Requirements) -> list[Offering | None]:
        """Per type, the cheapest offering `reqs` allow (cached by zone and capacity type)."""
        key = (reqs.get(wk.ZONE), reqs.get(wk.CAPACITY_TYPE))
        hit = self._cheapest.get(key)
        if hit is None:
            hit = []
            for it in self.types:
                offers = self.offerings(it, reqs)
                hit.append(min(offers, key=_offering_order) if offers else None)
            self._cheapest[key] = hit
        return hit


# -- bins: existing nodes, in-flight claims and this pass's claims ----------------------------------


@dataclass(slots=True, eq=False)
class _Bin:
    name: str
    kind: str  # "node" (existing or in-flight, fixed capacity) or "claim" (this pass)
    requirements: Requirements
    taints: tuple[Taint, ...]
    used: list[int]
    pool: _Pool | None = None
    labels: Mapping[str, str] | None = None
    free: list[int] | None = None  # nodes: what is left
    types: IntArray | None = None  # claims: indices into pool.types still possible
    ceiling: Vector = ()  # claims: per-resource max allocatable over `types` (a quick reject)
    pods: list[Pod] = field(default_factory=list)

    def domains(self, key: str, registered: Sequence[str], reqs: Requirements | None = None) -> list[str]:
        """Every value this bin could still take for `key` (under `reqs`, default its own)."""
        if key == wk.HOSTNAME:
            return [self.name]
        if self.labels is not None:
            value = self.labels.get(key)
            return [value] if value is not None else []
        req = (self.requirements if reqs is None else reqs).get(key)
        if req is None:
            return list(registered)
        return [d for d in registered if req.has(d)] if req.complement else sorted(req.values)


# -- topology ---------------------------------------------------------------------------------------


class _Topology:
    """Per-domain counts of selected pods, per (kind, group), as Karpenter's TopologyGroups keep them."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, Group], dict[str, int]] = {}
        self.totals: dict[tuple[str, Group], int] = {}
        # Inverse anti-affinity: a term's group -> domains holding a pod that owns the term.
        self.owners: dict[Group, set[str]] = {}
        self.domains: dict[str, list[str]] = {}
        self._selected: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[str, Group]]] = {}
        self._inverse: dict[tuple[str, tuple[tuple[str, str], ...]], list[Group]] = {}
        # Per view (by id; views live as long as the scheduler): its hostname checks, bound to the counts.
        self._host: dict[int, list[tuple[dict[str, int], str, tuple[str, Group], int, bool]]] = {}

    def track(self, kind: str, group: Group) -> None:
        if (kind, group) not in self.counts:
            self.counts[(kind, group)] = {}
            self.totals[(kind, group)] = 0

    def selected(self, pod: Pod) -> list[tuple[str, Group]]:
        key = (pod.namespace, tuple(sorted(pod.labels.items())))
        hit = self._selected.get(key)
        if hit is None:
            hit = [kg for kg in self.counts if kg[1].selects(pod.namespace, pod.labels)]
            self._selected[key] = hit
        return hit

    def inverse(self, pod: Pod) -> list[Group]:
        key = (pod.namespace, tuple(sorted(pod.labels.items())))
        hit = self._inverse.get(key)
        if hit is None:
            hit = [g for g in self.owners if g.selects(pod.namespace, pod.labels)]
            self._inverse[key] = hit
        return hit

    def record(self, pod: Pod, view: _View | None, b: _Bin) -> None:
        for kind, group in self.selected(pod):
            values = b.domains(group.key, self.domains.get(group.key, ()))
            if kind != _ANTI and len(values) != 1:
                continue  # spread and affinity only count a pod whose domain is decided
            counts = self.counts[(kind, group)]
            for value in values:
                counts[value] = counts.get(value, 0) + 1
                self.totals[(kind, group)] += 1
        terms = view.anti_affinity if view is not None else pod.anti_affinity
        for term in terms:
            group = term_group(term)
            if group not in self.owners:
                self.owners[group] = set()
                self._inverse.clear()
            self.owners[group].update(b.domains(term.topology_key, self.domains.get(term.topology_key, ())))

    def hostname_ok(self, state: _PodState, b: _Bin) -> bool:
        """The hostname-keyed checks alone (a cheap early reject; `requirements` repeats them)."""
        view = state.view
        checks = self._host.get(id(view))
        if checks is None:
            checks = self._host[id(view)] = [
                (
                    self.counts[(kind, group)],
                    kind,
                    (kind, group),
                    c.max_skew if isinstance(c, SpreadConstraint) else 0,
                    self_match,
                )
                for kind, group, c, self_match in view.constraints
                if c.topology_key == wk.HOSTNAME
            ]
        for counts, kind, total_key, max_skew, self_match in checks:
            here = counts.get(b.name, 0)
            if kind == _SPREAD:
                if here + self_match > max_skew:
                    return False
            elif kind == _AFFINITY:
                if here == 0 and (self.totals[total_key] > 0 or not self_match):
                    return False
            elif here:
                return False
        return True

    def requirements(self, state: _PodState, b: _Bin, reqs: Requirements) -> tuple[dict[str, list[str]] | None, str]:
        """Karpenter's Topology.AddRequirements for one pod on one bin.

        Returns the allowed domains per non-hostname key (to add to the bin's requirements), or
        None and why the pod cannot go there.
        """
        pod, view = state.pod, state.view
        allowed: dict[str, list[str]] = {}
        for kind, group, c, self_match in view.constraints:
            counts = self.counts[(kind, group)]
            key = c.topology_key
            if key == wk.HOSTNAME:
                here = counts.get(b.name, 0)
                if isinstance(c, SpreadConstraint):
                    ok = here + self_match <= c.max_skew
                elif kind == _AFFINITY:
                    ok = here > 0 or (self.totals[(kind, group)] == 0 and self_match)
                else:
                    ok = here == 0
                if not ok:
                    return None, f"{kind} on {key}"
                continue
            registered = self.domains.get(key, [])
            pod_req = view.strict.get(key)
            pod_domains = [d for d in registered if pod_req is None or pod_req.has(d)]
            node = set(b.domains(key, registered, reqs))
            if isinstance(c, SpreadConstraint):
                options = _spread_domain(c, counts, self_match, pod_domains, registered, node)
            elif kind == _AFFINITY:
                options = [d for d in pod_domains if counts.get(d, 0) > 0]
                if not options and self_match:
                    # Bootstrap: prefer a domain the bin is already in, else the first the pod allows.
                    options = [d for d in pod_domains if d in node][:1] + pod_domains[:1]
            else:
                options = [d for d in pod_domains if counts.get(d, 0) == 0]
            kept = [d for d in options if d in node]
            if key in allowed:
                kept = [d for d in kept if d in allowed[key]]
            if not kept:
                return None, f"{kind} on {key}"
            allowed[key] = kept
        for group in self.inverse(pod):
            forbidden = self.owners[group]
            if group.key == wk.HOSTNAME:
                if b.name in forbidden:
                    return None, "anti-affinity of a placed pod on hostname"
                continue
            registered = self.domains.get(group.key, [])
            kept = [d for d in allowed.get(group.key, b.domains(group.key, registered, reqs)) if d not in forbidden]
            if not kept:
                return None, f"anti-affinity of a placed pod on {group.key}"
            allowed[group.key] = kept
        return allowed, ""


def _spread_domain(
    c: SpreadConstraint,
    counts: Mapping[str, int],
    self_match: bool,
    pod_domains: Sequence[str],
    registered: Sequence[str],
    node: set[str],
) -> list[str]:
    """nextDomainTopologySpread: the lowest-count domain of the bin's that keeps skew, or none."""
    floor = min((counts.get(d, 0) for d in pod_domains), default=0)
    if c.min_domains is not None and len(pod_domains) < c.min_domains:
        floor = 0
    best: str | None = None
    best_count = 1 << 62
    for d in registered:
        if d not in node:
            continue
        count = counts.get(d, 0) + self_match
        if count - floor <= c.max_skew and count < best_count:
            best, best_count = d, count
    return [best] if best is not None else []


# -- the scheduler ----------------------------------------------------------------------------------


class _Scheduler:
    def __init__(self, inp: SchedulingInput) -> None:
        self.inp = inp
        names = {CPU, MEMORY, PODS}
        for pod in inp.pods:
            names |= set(pod.requests)
        for ds in inp.daemonsets:
            names |= set(ds.template.requests)
        for pc in inp.pools:
            names |= set(pc.nodepool.limits or ())
        self.names = tuple(sorted(names))
        self.pools = [
            _Pool(pc, inp, self.names) for pc in sorted(inp.pools, key=lambda p: (-p.nodepool.weight, p.nodepool.name))
        ]
        prefer = any(t.effect == "PreferNoSchedule" for p in self.pools for t in p.taints)
        view_cache: dict[object, tuple[_View, ...]] = {}
        self.states: list[_PodState] = []
        for pod in inp.pods:
            key = class_key(pod)
            views = view_cache.get(key)
            if views is None:
                views = view_cache[key] = _views(pod, prefer)
            self.states.append(_PodState(pod, self.vec(pod.requests), views))
        self.topology = _Topology()
        self.existing: list[_Bin] = []
        # This pass's claims bucketed by pod count; each bucket keeps the order a stable sort would.
        self.buckets: dict[int, OrderedDict[int, _Bin]] = {}
        self.claims: list[_Bin] = []
        self._seq = 0
        self._compat: dict[tuple[object, Requirements], Requirements | None] = {}
        self._narrow: dict[tuple[Requirements, tuple[tuple[str, tuple[str, ...]], ...]], Requirements] = {}
        self._tolerates: dict[tuple[int, tuple[Taint, ...]], bool] = {}

    def vec(self, resources: Mapping[str, int]) -> Vector:
        return tuple(resources.get(n, 0) for n in self.names)

    # -- setup -------------------------------------------------------------------------------------

    def _setup(self) -> None:
        topo = self.topology
        for state in self.states:
            for view in state.views:
                for s in view.spread:
                    topo.track(_SPREAD, spread_group(s, state.pod.namespace))
                for t in view.affinity:
                    topo.track(_AFFINITY, term_group(t))
                for t in view.anti_affinity:
                    topo.track(_ANTI, term_group(t))
        keys = {g.key for _, g in topo.counts} | {
            g.key for g in (term_group(t) for p in self.inp.bound_pods for t in p.anti_affinity)
        }
        for key in keys - {wk.HOSTNAME}:
            values: set[str] = set()
            for pool in self.pools:
                for it in pool.types:
                    if key == wk.ZONE:
                        values |= {o.zone for o in pool.offerings(it, pool.requirements)}
                        continue
                    req = it.requirements.get(key)
                    if req is not None and not req.complement:
                        values |= {v for v in req.values if pool.requirements.get_or_exists(key).has(v)}
            values |= {n.labels[key] for n in self.inp.nodes if key in n.labels}
            topo.domains[key] = sorted(values)
        self._existing_bins()

    def _existing_bins(self) -> None:
        used: dict[str, list[int]] = {}
        bound: dict[str, list[Pod]] = {}
        for pod in self.inp.bound_pods:
            if pod.terminal or not pod.node_name:
                continue
            bound.setdefault(pod.node_name, []).append(pod)
            acc = used.setdefault(pod.node_name, [0] * len(self.names))
            for i, v in enumerate(self.vec(pod.requests)):
                acc[i] += v
        for node in self.inp.nodes:
            load = used.get(node.name, [0] * len(self.names))
            b = _Bin(
                node.name,
                "node",
                Requirements.from_labels(node.labels),
                node.taints,
                load,
                labels=node.labels,
                free=[a - u for a, u in zip(self.vec(node.allocatable), load, strict=True)],
            )
            for pod in bound.get(node.name, ()):
                self.topology.record(pod, None, b)
            if not (node.unschedulable or node.deleting):
                self.existing.append(b)
        by_name = {p.name: p for p in self.pools}
        for claim in self.inp.inflight:
            pool = by_name.get(claim.nodepool)
            it = next((t for t in pool.types if t.name == claim.instance_type), None) if pool else None
            if pool is None or it is None:
                continue
            labels = {**claim.requirements.labels(), **claim.labels, wk.HOSTNAME: claim.node_name or claim.name}
            index = pool.types.index(it)
            self.existing.append(
                _Bin(
                    claim.node_name or claim.name,
                    "node",
                    Requirements.from_labels(labels),
                    claim.taints,
                    [0] * len(self.names),
                    pool=pool,
                    labels=labels,
                    free=[int(v) for v in pool.alloc[index]],
                )
            )

    # -- the pass ----------------------------------------------------------------------------------

    def run(self) -> SchedulingResult:
        self._setup()
        cpu, mem = self.names.index(CPU), self.names.index(MEMORY)
        queue = sorted(self.states, key=lambda s: (-s.req[cpu], -s.req[mem]))
        head = 0
        last_len: dict[int, int] = {}
        errors: dict[str, str] = {}
        # queue.go: a failed pod goes to the back; stop once a pod comes round again with the
        # queue as long as when it was pushed (a full cycle without progress).
        while head < len(queue):
            state = queue[head]
            remaining = len(queue) - head
            if last_len.get(id(state)) == remaining:
                break
            head += 1
            error = self._add(state)
            if not error:
                errors.pop(state.pod.key, None)
                continue
            errors[state.pod.key] = error
            relaxed = state.level + 1 < len(state.views)
            if relaxed:
                state.level += 1
            queue.append(state)
            if relaxed:
                last_len.clear()
            else:
                last_len[id(state)] = len(queue) - head
        return self._finalize(errors)

    def _add(self, state: _PodState) -> str:
        for b in self.existing:
            if self._try(state, b):
                return ""
        for count in sorted(self.buckets):
            for b in self.buckets[count].values():
                if self._try(state, b):
                    self._bump(b, count)
                    return ""
        return self._new_claim(state)

    def _bump(self, b: _Bin, old: int) -> None:
        bucket = self.buckets[old]
        del bucket[id(b)]
        if not bucket:
            del self.buckets[old]
        nxt = self.buckets.setdefault(old + 1, OrderedDict())
        nxt[id(b)] = b
        # A stable sort puts the grown claim first among those it now ties with: it was before them.
        nxt.move_to_end(id(b), last=False)

    def _new_claim(self, state: _PodState) -> str:
        reasons: list[str] = []
        for pool in self.pools:
            types: IntArray = np.arange(len(pool.types), dtype=np.int64)
            if pool.remaining is not None:
                if _NODES in self.names and pool.remaining[self.names.index(_NODES)] <= 0:
                    reasons.append(f"nodepool {pool.name}: node limits have been exhausted")
                    continue
                types = types[(pool.capacity <= pool.remaining).all(axis=1)]
                if not len(types):
                    reasons.append(f"nodepool {pool.name}: all instance types exceed limits")
                    continue
            if not len(types):
                reasons.append(f"nodepool {pool.name}: no instance type is offered")
                continue
            self._seq += 1
            b = _Bin(
                f"nodeclaim-{self._seq}",
                "claim",
                pool.requirements,
                pool.taints,
                [0] * len(self.names),
                pool=pool,
                types=types,
                ceiling=tuple(int(v) for v in pool.alloc[types].max(axis=0)),
            )
            why = self._try(state, b, explain=True)
            if why is not True:
                reasons.append(f"nodepool {pool.name}: {why or 'does not fit'}")
                continue
            if pool.remaining is not None and b.types is not None:
                pool.remaining = pool.remaining - pool.capacity[b.types].max(axis=0)
            self.claims.append(b)
            self.buckets.setdefault(1, OrderedDict())[id(b)] = b
            return ""
        if not self.pools:
            reasons.append("no NodePool is configured")
        return "; ".join(reasons) or "incompatible with every NodePool"

    def _try(self, state: _PodState, b: _Bin, *, explain: bool = False) -> bool | str:
        """NodeClaim.Add / ExistingNode.Add: place the pod on `b` if every check passes."""
        req = state.req
        used = b.used
        if b.free is not None:
            if any(r > f for r, f in zip(req, b.free, strict=True)):
                return "resources" if explain else False
        elif any(u + r > c for u, r, c in zip(used, req, b.ceiling, strict=True)):
            return "no instance type has room" if explain else False
        view = state.view
        if not self.topology.hostname_ok(state, b):
            return "hostname topology" if explain else False
        if not self._tolerated(state, view, b.taints):
            return "taints not tolerated" if explain else False
        if b.labels is not None:
            if not label_matches(view.requirements, b.labels):
                return "node labels" if explain else False
            merged = b.requirements
        else:
            compat = self._merge(b.requirements, view.requirements)
            if compat is None:
                return "requirements incompatible" if explain else False
            merged = compat
        allowed, why = self.topology.requirements(state, b, merged)
        if allowed is None:
            return why if explain else False
        if allowed:
            merged = self._narrowed(merged, allowed)
        new_used = [u + r for u, r in zip(used, req, strict=True)]
        if b.types is not None:
            pool = b.pool
            assert pool is not None
            mask = pool.mask(merged)[b.types] & (pool.alloc[b.types] >= np.array(new_used, dtype=np.int64)).all(axis=1)
            if not mask.any():
                return "no instance type fits every pod" if explain else False
            b.types = b.types[mask]
            b.ceiling = tuple(int(v) for v in pool.alloc[b.types].max(axis=0))
            b.requirements = merged
        elif b.free is not None:
            b.free = [f - r for f, r in zip(b.free, req, strict=True)]
        b.used = new_used
        b.pods.append(state.pod)
        self.topology.record(state.pod, view, b)
        return True

    def _tolerated(self, state: _PodState, view: _View, taints: tuple[Taint, ...]) -> bool:
        if not taints:
            return True
        key = (id(view), taints)
        hit = self._tolerates.get(key)
        if hit is None:
            hit = _tolerated(state.pod.tolerations, taints, prefer=not view.tolerate_prefer_no_schedule)
            self._tolerates[key] = hit
        return hit

    def _merge(self, mine: Requirements, theirs: Requirements) -> Requirements | None:
        key = (mine, theirs)
        if key in self._compat:
            return self._compat[key]
        merged = mine.intersection(theirs) if mine.compatible(theirs) else None
        self._compat[key] = merged
        return merged

    def _narrowed(self, reqs: Requirements, allowed: Mapping[str, list[str]]) -> Requirements:
        key = (reqs, tuple(sorted((k, tuple(v)) for k, v in allowed.items())))
        hit = self._narrow.get(key)
        if hit is None:
            hit = reqs.intersection(Requirements(Requirement.new(k, "In", v) for k, v in allowed.items()))
            self._narrow[key] = hit
        return hit

    # -- results -----------------------------------------------------------------------------------

    def _finalize(self, errors: Mapping[str, str]) -> SchedulingResult:
        claims: list[PlannedClaim] = []
        for b in self.claims:
            pool = b.pool
            assert pool is not None
            assert b.types is not None
            priced: list[tuple[float, str, InstanceType, Offering]] = []
            cheapest = pool.cheapest(b.requirements)
            for i in b.types.tolist():
                it = pool.types[i]
                offer = cheapest[i]
                if offer is not None:
                    priced.append((offer.price, it.name, it, offer))
            priced.sort(key=lambda o: (o[0], o[1]))
            options = priced[:MAX_INSTANCE_TYPE_OPTIONS]
            requests = Resources({n: v for n, v in zip(self.names, b.used, strict=True) if v}) + pool.overhead
            claims.append(
                PlannedClaim(
                    nodepool=pool.name,
                    requirements=b.requirements,
                    options=tuple(o[2] for o in options),
                    offering=options[0][3],
                    requests=requests,
                    pods=tuple(b.pods),
                )
            )
        existing = {b.name: tuple(p.key for p in b.pods) for b in self.existing if b.pods}
        return SchedulingResult(tuple(claims), existing, dict(sorted(errors.items())))


def _offering_order(o: Offering) -> tuple[float, int, str]:
    return (o.price, _CAPACITY_PRIORITY.get(o.capacity_type, 3), o.zone)


def _tolerated(tolerations: Iterable[Toleration], taints: Iterable[Taint], *, prefer: bool) -> bool:
    """Every NoSchedule/NoExecute taint (and PreferNoSchedule when `prefer`) is tolerated."""
    tols = tuple(tolerations)
    for taint in taints:
        if taint.effect not in BLOCKING and not (prefer and taint.effect == "PreferNoSchedule"):
            continue
        if not any(t.tolerates(taint) for t in tols):
            return False
    return True
