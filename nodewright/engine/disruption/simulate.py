"""Where the pods of some nodes would go if those nodes went away: one call to `solve()`. Pure.

The candidates' reschedulable pods are the pods to place; the other nodes that can take pods
(ready, not being deleted or disrupted, and for our nodes initialized) are the existing capacity;
the NodePools may open new claims. In-flight claims are left out: their room belongs to the
pending pods they were launched for. Pods not bound yet are placed first on the existing nodes,
and the room they take there is not offered (`_reserve`); those that do not fit are left to the
provisioner. NodePool limits
count every node and claim, candidates included, since replacements launch before candidates go.

Speed: a consolidation pass asks this question dozens of times on a cluster of a thousand nodes
and ten thousand pods, and the solver's cost grows with every node and bound pod it is given. So
each question hands it an equivalent, smaller cluster:

* a bound pod matters to the solver only through the room it takes, unless a topology constraint
  could count it (a moving pod's spread or (anti-)affinity selects it, or it has required
  anti-affinity of its own). Only those *relevant* pods are passed; each node's allocatable is
  reduced by what its other pods request, so its free room is exactly the same;
* a node keeps only the labels the moving pods' node selection and topology read (plus hostname,
  zone and capacity type), so matching them stays exact;
* a node the moving pods cannot use (no room for even the smallest of them, or a label or taint
  that keeps them all out) is passed as an unschedulable "ghost" carrying its relevant pods (they
  still count for topology), or not at all when it has none; of the nodes they can use, at most
  `ROOMY_LIMIT`, the roomiest, are offered (a plan on fewer nodes is still a valid plan);
* for consolidation the NodePools' instance types are cut to those cheaper than the candidates:
  no dearer type can be part of a plan that saves money; for a zone re-balancing merge, whose
  cheapest plan may be as many nodes as it removes (`whole`), to those that hold all the moving
  pods and every DaemonSet's pod on one node, so the cheapest plan is one node.

Results are cached by the candidate names (and how types were cut), so the methods of one
pass and the searches inside consolidation never solve the same question twice. What outlives a
pass is in the `DisruptionCache` the caller owns (the consolidator keeps one per warm container):
each node's destination summary, remembered while the node and its pods are the same objects
(`Destinations`), so a pass only re-reads the nodes that changed, and the solver's `SolverCache`.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from nodewright.engine.disruption.candidates import Candidate, ClusterView
from nodewright.engine.scheduling import (
    PoolCapacity,
    SchedulingResult,
    SolverCache,
    Strategy,
    solve,
)
from nodewright.engine.scheduling.inputs import existing_nodes_input, rescheduling_input
from nodewright.engine.scheduling.topology import Group, spread_group, term_group
from nodewright.engine.scheduling.usage import pool_usage
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirement, Requirements, label_matches
from nodewright.model.resources import CPU, MEMORY, PODS, Resources
from nodewright.model.snapshot import reschedulable
from nodewright.model.taints import Toleration, tolerates_all

# Questions about several nodes with up to this many pods run the solver's whole portfolio (the best
# plan of several strategies): packing many pods is where they differ. Single nodes and bigger
# questions use one strategy, which keeps a pass over a large cluster within its time budget.
PORTFOLIO_PODS = 200
# At most this many nodes with room for the moving pods are offered to the solver, the roomiest
# first (nodes whose pods a topology constraint counts are always passed). A plan found on fewer
# nodes is still a valid plan; this bounds a question's cost on a big cluster.
ROOMY_LIMIT = 256
_ALWAYS_KEYS = frozenset({wk.HOSTNAME, wk.ZONE, wk.CAPACITY_TYPE})


Combo = tuple[str, tuple[tuple[str, str], ...]]  # (namespace, sorted labels): what selectors read


@dataclass(slots=True)
class Destination:
    """A node that can take the moving pods, with its free room and its pods as topology counts
    them. Shared by the passes that see the same node and pods (`Destinations`): never changed.
    """

    node: Node
    free: Resources
    # Bound pods by namespace and labels, with what each set requests: a selector either counts
    # all of a set or none of it, so relevance is decided per set, not per pod.
    combos: dict[Combo, list[Pod]]
    combo_used: dict[Combo, Resources]
    anti: list[Pod]  # pods with required anti-affinity: always relevant
    anti_used: Resources


def prepare_destination(node: Node, pods: Sequence[Pod]) -> Destination:
    """The node as a destination: its free room, and its pods by combo (or with anti-affinity)."""
    # Sums are kept in plain dicts and made Resources once: the same values, in the same key
    # order, as adding Resources pod by pod, without a new Resources per pod.
    used: dict[str, int] = {}
    combos: dict[Combo, list[Pod]] = {}
    combo_used: dict[Combo, dict[str, int]] = {}
    anti: list[Pod] = []
    anti_used: dict[str, int] = {}
    for p in pods:
        _accumulate(used, p.requests)
        if p.anti_affinity:
            anti.append(p)
            _accumulate(anti_used, p.requests)
            continue
        combo = (p.namespace, tuple(sorted(p.labels.items())))
        combos.setdefault(combo, []).append(p)
        _accumulate(combo_used.setdefault(combo, {}), p.requests)
    free = (node.allocatable - Resources(used)).clamped()
    return Destination(
        node,
        free,
        combos,
        {combo: Resources(total) for combo, total in combo_used.items()},
        anti,
        Resources(anti_used),
    )


class Destinations:
    """`prepare_destination(node, pods)`, remembered across passes.

    Every pass prepares every node that can take pods, but from one pass to the next most nodes
    are the same object holding the same pod objects (the cluster hands out unchanged objects, as
    the solver's `SolverCache` relies on too). Valid because a destination is a pure function of
    the (immutable) node and pods: an entry is reused only when its node is the same object and
    its pods are the same objects in the same order, and it holds them, so no id is reused while
    it is remembered. Destinations are shared: never changed. Bounded: everything is forgotten
    when `limit` nodes are remembered.
    """

    def __init__(self, limit: int = 20_000) -> None:
        self.limit = limit
        self._known: dict[str, tuple[Node, tuple[Pod, ...], Destination]] = {}

    def get(self, node: Node, pods: Sequence[Pod]) -> Destination:
        """`prepare_destination(node, pods)`."""
        known = self._known.get(node.name)
        if (
            known is not None
            and known[0] is node
            and len(known[1]) == len(pods)
            and all(map(operator.is_, known[1], pods))
        ):
            return known[2]
        d = prepare_destination(node, pods)
        if len(self._known) >= self.limit:
            self._known.clear()
        self._known[node.name] = (node, tuple(pods), d)
        return d


class DisruptionCache:
    """What disruption passes may reuse from one pass to the next, owned by the caller: the node
    destinations (`Destinations`) and the solver's memos (`SolverCache`). Every entry is a pure
    function of its key, so a pass with a warm cache decides exactly what it decides with a fresh
    one; `compute_commands` and `validate` without one use a fresh one for the call.
    """

    def __init__(self) -> None:
        self.destinations = Destinations()
        self.solver = SolverCache()


@dataclass(frozen=True, slots=True)
class _Cheapest:
    """A NodePool's instance types sorted by their cheapest available offering."""

    prices: list[float]
    types: list[InstanceType]


class Simulator:
    """Answers "where would these candidates' pods go?" for one pass (see the module docstring)."""

    def __init__(self, view: ClusterView, cache: DisruptionCache | None = None) -> None:
        self.view = view
        self.cache = cache = cache if cache is not None else DisruptionCache()
        inp = view.inp
        self.destinations: list[Destination] = []
        self.combos: dict[Combo, tuple[str, Mapping[str, str]]] = {}
        nodes = sorted(inp.snapshot.nodes, key=lambda n: n.name)
        open_nodes = [n for n in nodes if self._destination(n, inp.in_progress)]
        # Room that pods not bound yet will take first (see `_reserve`), counted as taken.
        self.reserved = _reserve(view, open_nodes, cache.solver)
        for node in open_nodes:
            on_node: Sequence[Pod] = view.pods_by_node.get(node.name, ())
            waiting = self.reserved.get(node.name)
            d = cache.destinations.get(node, (*on_node, *waiting) if waiting else on_node)
            for combo, pods in d.combos.items():
                if combo not in self.combos:
                    self.combos[combo] = (pods[0].namespace, pods[0].labels)
            self.destinations.append(d)
        self.anti_keys = frozenset(t.topology_key for d in self.destinations for p in d.anti for t in p.anti_affinity)
        self.used = pool_usage(inp.snapshot.nodes, inp.claims, view.types)
        self._cheapest = {pc.nodepool.name: _by_price(pc.instance_types) for pc in inp.pools}
        self._pool_requirements = {pc.nodepool.name: _pool_requirements(pc.nodepool) for pc in inp.pools}
        self._cache: dict[tuple[frozenset[str], bool, bool], SchedulingResult] = {}
        self._cuts: dict[tuple[str, int], tuple[InstanceType, ...]] = {}
        self._shadows: dict[tuple[str, frozenset[str]], Node] = {}
        self._shadow_labels: dict[tuple[str, frozenset[str]], Mapping[str, str]] = {}
        self._busy_shadows: dict[tuple[str, frozenset[str], frozenset[Combo]], Node] = {}
        self._ghosts: dict[tuple[str, frozenset[str]], Node] = {}
        self._mine_cache: dict[tuple[str, frozenset[Combo]], tuple[tuple[Pod, ...], Resources]] = {}
        self._pool_fits: dict[tuple[str, tuple[Requirements, ...], tuple[Toleration, ...]], bool] = {}
        self._node_fits: dict[tuple[str, tuple[tuple[Requirements, ...], tuple[Toleration, ...]]], bool] = {}
        # Roomiest first: when more nodes have room than ROOMY_LIMIT, these are the ones offered.
        self.by_room = sorted(self.destinations, key=lambda d: (-d.free[CPU], -d.free[MEMORY], d.node.name))
        self.solves = 0

    def _destination(self, node: Node, in_progress: frozenset[str]) -> bool:
        if node.deleting or node.unschedulable or not node.ready or node.name in in_progress:
            return False
        claim = self.view.claim_by_node.get(node.name)
        return claim is None or claim.state == "initialized"

    def free_room(self) -> dict[str, tuple[int, int]]:
        """Free cpu and memory (milli-units) of every destination node."""
        return {d.node.name: (d.free[CPU], d.free[MEMORY]) for d in self.destinations}

    def run(self, candidates: Sequence[Candidate], *, cheaper: bool = False, whole: bool = False) -> SchedulingResult:
        """The plan for the candidates' pods on the rest of the cluster plus new claims; with
        `cheaper`, new claims may only use types cheaper than the candidates together; with
        `whole`, only types one node of which holds all the pods and every DaemonSet's pod
        (counted whether or not each DaemonSet would run there: a fallback plan, so the cut may
        be stricter than needed).
        """
        key = (frozenset(c.name for c in candidates), cheaper, whole)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        pods = tuple(p for c in candidates for p in c.pods)
        nodes, bound = self._cluster(pods, key[0])
        inp = self.view.inp
        pools = self._pools(pods)
        if cheaper:
            cap = sum(c.price for c in candidates)
            pools = tuple(PoolCapacity(pc.nodepool, self._below(pc.nodepool.name, cap)) for pc in pools)
        if whole:
            need = Resources()
            for p in (*pods, *(d.template for d in inp.snapshot.daemonsets)):
                need = need + p.requests
            pools = tuple(
                PoolCapacity(pc.nodepool, tuple(it for it in pc.instance_types if need.fits_in(it.allocatable)))
                for pc in pools
            )
        scheduling = rescheduling_input(
            pods,
            nodes=nodes,
            bound_pods=bound,
            pools=pools,
            used=self.used,
            daemonsets=inp.snapshot.daemonsets,
            blocked=inp.blocked,
            now=inp.now,
        )
        self.solves += 1
        portfolio = len(candidates) > 1 and len(pods) <= PORTFOLIO_PODS
        solver = self.cache.solver
        # Preferences as Karpenter's consolidation treats them (required until a pod cannot be
        # placed), without the provisioner's bound on what they may cost: with the bound, moves
        # re-packed preferring replicas together and moved 2-13x the pods for a dearer day
        # (generated seeds 1 and 4 at one hour; docs/design/solver.md, "What a preference may cost").
        strategy = None if portfolio else Strategy()
        result = solve(scheduling, strategy, cache=solver, bound_preferences=False)
        self._cache[key] = result
        return result

    def _below(self, pool: str, cap: float) -> tuple[InstanceType, ...]:
        cheapest = self._cheapest[pool]
        key = (pool, bisect.bisect_left(cheapest.prices, cap))
        # The same cut is the same tuple object: the solver recognises a list it has prepared
        # for this NodePool by identity, and skips looking up each type again.
        cut = self._cuts.get(key)
        if cut is None:
            cut = self._cuts[key] = tuple(cheapest.types[: key[1]])
        return cut

    def _pools(self, pods: Sequence[Pod]) -> tuple[PoolCapacity, ...]:
        """The NodePools some moving pod could use (its node selection and tolerations allow it):
        the others cannot take part in any plan, and preparing their types is most of a solve.
        """
        kinds = {(p.node_requirements(), p.tolerations) for p in pods}
        out = []
        for pc in self.view.inp.pools:
            name = pc.nodepool.name
            for alternatives, tolerations in kinds:
                key = (name, alternatives, tolerations)
                fits = self._pool_fits.get(key)
                if fits is None:
                    reqs = self._pool_requirements[name]
                    fits = self._pool_fits[key] = tolerates_all(tolerations, pc.nodepool.taints) and any(
                        reqs.compatible(alt) for alt in alternatives
                    )
                if fits:
                    out.append(pc)
                    break
        return tuple(out)

    def _cluster(self, pods: Sequence[Pod], leaving: frozenset[str]) -> tuple[tuple[Node, ...], tuple[Pod, ...]]:
        """The smaller, equivalent cluster the solver gets (see the module docstring)."""
        groups = _groups(pods)
        keys = frozenset(_label_keys(pods) | self.anti_keys | {g.key for g in groups})
        relevant = (
            {combo for combo, (ns, labels) in self.combos.items() if any(g.selects(ns, labels) for g in groups)}
            if groups
            else set()
        )
        kinds = sorted({(p.node_requirements(), p.tolerations) for p in pods}, key=repr)
        smallest = _smallest(pods)
        nodes: list[Node] = []
        bound: list[Pod] = []
        roomy = 0
        # Questions of a pass share few relevant sets: a node's relevant pods and its shadow are
        # made once per set (and label keys), and the same objects are given to every solve.
        shared = frozenset(relevant)
        for d in self.by_room:
            node = d.node
            if node.name in leaving:
                continue
            mine, mine_used = self._mine(d, relevant, shared)
            useful = (
                roomy < ROOMY_LIMIT
                and all(d.free[name] >= need for name, need in smallest.items())
                and any(self._takes(node, kind) for kind in kinds)
            )
            if not useful and not mine:
                continue
            if useful and not mine:
                shadow = self._shadows.get((node.name, keys))
                if shadow is None:
                    shadow = self._shadows[(node.name, keys)] = self._shadow(node, keys, d.free)
            elif useful:
                busy = (node.name, keys, shared)
                shadow = self._busy_shadows.get(busy)
                if shadow is None:
                    shadow = self._busy_shadows[busy] = self._shadow(node, keys, d.free + mine_used)
            else:
                shadow = self._ghosts.get((node.name, keys))
                if shadow is None:
                    shadow = self._ghosts[(node.name, keys)] = Node(
                        node.name, labels=self._labels(node, keys), unschedulable=True, ready=True
                    )
            roomy += useful
            nodes.append(shadow)
            bound += mine
        return tuple(nodes), tuple(bound)

    def _mine(
        self, d: Destination, relevant: set[Combo], shared: frozenset[Combo]
    ) -> tuple[tuple[Pod, ...], Resources]:
        """The destination's pods a topology constraint counts (required anti-affinity, or in a
        `relevant` combo), and what they request; remembered per node and relevant set.
        """
        key = (d.node.name, shared)
        hit = self._mine_cache.get(key)
        if hit is None:
            mine = list(d.anti)
            mine_used = d.anti_used
            for combo in relevant.intersection(d.combos) if relevant else ():
                mine += d.combos[combo]
                mine_used = mine_used + d.combo_used[combo]
            hit = self._mine_cache[key] = (tuple(mine), mine_used)
        return hit

    def _takes(self, node: Node, kind: tuple[tuple[Requirements, ...], tuple[Toleration, ...]]) -> bool:
        """True when pods of this kind (node selection, tolerations) may run on `node`."""
        key = (node.name, kind)
        hit = self._node_fits.get(key)
        if hit is None:
            alternatives, tolerations = kind
            hit = self._node_fits[key] = tolerates_all(tolerations, node.taints) and any(
                label_matches(alt, node.labels) for alt in alternatives
            )
        return hit

    def _shadow(self, node: Node, keys: frozenset[str], allocatable: Resources) -> Node:
        return Node(node.name, labels=self._labels(node, keys), taints=node.taints, allocatable=allocatable, ready=True)

    def _labels(self, node: Node, keys: frozenset[str]) -> Mapping[str, str]:
        """The node's labels the moving pods read (`keys`): one dict per node and keys, shared by
        the shadows of every question (nothing changes a node's labels).
        """
        key = (node.name, keys)
        hit = self._shadow_labels.get(key)
        if hit is None:
            hit = self._shadow_labels[key] = _only(node.labels, keys)
        return hit


def _reserve(view: ClusterView, nodes: Sequence[Node], cache: SolverCache) -> dict[str, tuple[Pod, ...]]:
    """Where the pods not bound yet will go on `nodes`: node name -> those pods, as bound there.

    A consolidation plan must not count on room that kube-scheduler is about to give to pods that
    exist but are not bound yet (just created by a scale-up or recreated after an eviction, not
    tried yet, or waiting for room). Otherwise the plan is stale by the time it is validated, 15 s
    later (on the diurnal day, most of the commands dropped at validation were such plans), or,
    worse, the pods it moves find the room taken. Karpenter's consolidation places pending pods in
    the same simulation for the same reason. They are placed here on the existing nodes only (the
    provisioner launches capacity for those that do not fit), in one solve per pass, and only when
    there are any.
    """
    waiting = tuple(
        sorted((p for p in view.inp.snapshot.pods if not p.node_name and reschedulable(p)), key=lambda p: p.key)
    )
    if not waiting or not nodes:
        return {}
    names = {n.name for n in nodes}
    inp = view.inp
    result = solve(
        existing_nodes_input(
            waiting,
            nodes,
            (p for name in sorted(names) for p in view.pods_by_node.get(name, ())),
            daemonsets=inp.snapshot.daemonsets,
            now=inp.now,
        ),
        Strategy(),
        cache=cache,
    )
    by_key = {p.key: p for p in waiting}
    return {
        node: tuple(replace(by_key[key], node_name=node) for key in keys)
        for node, keys in sorted(result.existing.items())
        if node in names and keys
    }


def _accumulate(total: dict[str, int], requests: Mapping[str, int]) -> None:
    """Add `requests` into `total`, as `Resources.__add__` would (same keys, same order)."""
    # Keys then indexing: Mapping.items() walks a Resources through a Python generator.
    for key in requests:
        total[key] = total.get(key, 0) + requests[key]


def _only(labels: Mapping[str, str], keys: frozenset[str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k in keys}


def _pool_requirements(pool: NodePool) -> Requirements:
    """The requirements the solver gives a NodePool's claims (its own, its labels, its name)."""
    return pool.requirements.intersection(Requirements.from_labels(pool.labels)).intersection(
        Requirements([Requirement.new(wk.NODEPOOL, "In", [pool.name])])
    )


def _groups(pods: Iterable[Pod]) -> list[Group]:
    """The topology groups the moving pods' constraints count."""
    out: set[Group] = set()
    for pod in pods:
        out.update(spread_group(s, pod.namespace) for s in pod.spread)
        out.update(
            term_group(t)
            for t in (*pod.affinity, *pod.preferred_affinity, *pod.anti_affinity, *pod.preferred_anti_affinity)
        )
    return sorted(out, key=repr)


def _label_keys(pods: Iterable[Pod]) -> set[str]:
    """Every node label key the moving pods' node selection reads, plus the usual topology keys."""
    keys = set(_ALWAYS_KEYS)
    for pod in pods:
        keys.update(pod.node_selector)
        for term in pod.required_terms:
            keys.update(term)
        for preferred in pod.preferred_terms:
            keys.update(preferred.requirements)
    return keys


def _smallest(pods: Sequence[Pod]) -> dict[str, int]:
    """The least any moving pod needs of cpu, memory and pod slots."""
    if not pods:
        return {}
    return {name: min(p.requests[name] for p in pods) for name in (CPU, MEMORY, PODS)}


def _by_price(types: Iterable[InstanceType]) -> _Cheapest:
    priced = []
    for it in types:
        offer = it.cheapest_offering()
        if offer is not None:
            priced.append((offer.price, it.name, it))
    priced.sort(key=lambda x: (x[0], x[1]))
    return _Cheapest([p for p, _, _ in priced], [t for _, _, t in priced])
