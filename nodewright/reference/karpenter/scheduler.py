"""Karpenter v1.14's pod-by-pod scheduler, re-implemented as a reference. Pure.

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
* One pod at a time (`Scheduler.add`): existing nodes and in-flight claims first, in order
  (in-flight claims by `NodeClaim.launch_order`, never by their randomly suffixed names: Karpenter
  tries existing nodes initialized first, then by name (scheduler.go, calculateExistingNodeClaims),
  and a NodeClaim's name there ends in a random suffix too, so the reference picks a stable order); then
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
from collections.abc import Mapping

import numpy as np

from nodewright.engine.scheduling.classes import class_key
from nodewright.engine.scheduling.topology import spread_group, term_group
from nodewright.engine.scheduling.types import (
    MAX_INSTANCE_TYPE_OPTIONS,
    PlannedClaim,
    SchedulingInput,
    SchedulingResult,
)
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, Offering
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirement, Requirements, label_matches
from nodewright.model.resources import CPU, MEMORY, PODS, Resources
from nodewright.model.taints import Taint
from nodewright.reference.karpenter.pods import AFFINITY, ANTI, SPREAD, PodState, Vector, View, views_of
from nodewright.reference.karpenter.pools import NODES, IntArray, Pool, PreparedPools, tolerated
from nodewright.reference.karpenter.topology import Bin, Topology


def schedule(inp: SchedulingInput, prepared: PreparedPools | None = None) -> SchedulingResult:
    """Place `inp.pods` the way Karpenter's scheduler does (see module doc). `prepared`, when
    given, keeps the NodePools' prepared types for the next schedule over the same NodePools.
    """
    return _Scheduler(inp, prepared).run()


class _Scheduler:
    def __init__(self, inp: SchedulingInput, prepared: PreparedPools | None = None) -> None:
        self.inp = inp
        names = {CPU, MEMORY, PODS}
        for pod in inp.pods:
            names |= set(pod.requests)
        for ds in inp.daemonsets:
            names |= set(ds.template.requests)
        for pc in inp.pools:
            names |= set(pc.nodepool.limits or ())
        self.names = tuple(sorted(names))

        def make() -> list[Pool]:
            ordered = sorted(inp.pools, key=lambda p: (-p.nodepool.weight, p.nodepool.name))
            return [Pool(pc, inp, self.names) for pc in ordered]

        self.pools = make() if prepared is None else prepared.pools(inp, self.names, make)
        prefer = any(t.effect == "PreferNoSchedule" for p in self.pools for t in p.taints)
        view_cache: dict[object, tuple[View, ...]] = {}
        self.states: list[PodState] = []
        for pod in inp.pods:
            key = class_key(pod)
            views = view_cache.get(key)
            if views is None:
                views = view_cache[key] = views_of(pod, prefer)
            self.states.append(PodState(pod, self.vec(pod.requests), views))
        self.topology = Topology()
        self.existing: list[Bin] = []
        # This pass's claims bucketed by pod count; each bucket keeps the order a stable sort would.
        self.buckets: dict[int, OrderedDict[int, Bin]] = {}
        self.claims: list[Bin] = []
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
                    topo.track(SPREAD, spread_group(s, state.pod.namespace))
                for t in view.affinity:
                    topo.track(AFFINITY, term_group(t))
                for t in view.anti_affinity:
                    topo.track(ANTI, term_group(t))
        keys = {g.key for _, g in topo.counts} | {
            g.key for g in (term_group(t) for p in self.inp.bound_pods for t in p.anti_affinity)
        }
        for key in sorted(keys - {wk.HOSTNAME}):  # a set of strings: its order varies by process
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
            b = Bin(
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
        for claim in sorted(self.inp.inflight, key=NodeClaim.launch_order):
            pool = by_name.get(claim.nodepool)
            it = next((t for t in pool.types if t.name == claim.instance_type), None) if pool else None
            if pool is None or it is None:
                continue
            labels = {**claim.requirements.labels(), **claim.labels, wk.HOSTNAME: claim.node_name or claim.name}
            index = pool.types.index(it)
            self.existing.append(
                Bin(
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

    def _add(self, state: PodState) -> str:
        for b in self.existing:
            if self._try(state, b):
                return ""
        for count in sorted(self.buckets):
            for b in self.buckets[count].values():
                if self._try(state, b):
                    self._bump(b, count)
                    return ""
        return self._new_claim(state)

    def _bump(self, b: Bin, old: int) -> None:
        bucket = self.buckets[old]
        del bucket[id(b)]
        if not bucket:
            del self.buckets[old]
        nxt = self.buckets.setdefault(old + 1, OrderedDict())
        nxt[id(b)] = b
        # A stable sort puts the grown claim first among those it now ties with: it was before them.
        nxt.move_to_end(id(b), last=False)

    def _new_claim(self, state: PodState) -> str:
        reasons: list[str] = []
        for pool in self.pools:
            types: IntArray = np.arange(len(pool.types), dtype=np.int64)
            if pool.remaining is not None:
                if NODES in self.names and pool.remaining[self.names.index(NODES)] <= 0:
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
            b = Bin(
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

    def _try(self, state: PodState, b: Bin, *, explain: bool = False) -> bool | str:
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

    def _tolerated(self, state: PodState, view: View, taints: tuple[Taint, ...]) -> bool:
        if not taints:
            return True
        key = (id(view), taints)
        hit = self._tolerates.get(key)
        if hit is None:
            hit = tolerated(state.pod.tolerations, taints, prefer=not view.tolerate_prefer_no_schedule)
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
