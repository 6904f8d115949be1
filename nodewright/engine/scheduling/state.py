"""`Pass`: the state of one solver pass with one strategy, which every other file reads. Pure.

A pass owns its bins (`Bin`: existing nodes, in-flight claims and the claims it opens), its pools
(`prepare.Pool`, with the room their limits leave and the demand not placed yet), the topology
counts, the unschedulable pods with their reasons, and memos that live for the pass only (keyed by
values, never by object ids: ids of short-lived classes are reused). The functions of
`existing.py`, `fill.py`, `fit.py`, `nodeclaim.py`, `mix.py`, `plan.py`, `repack.py` and
`finalize.py` take it as their first argument and change it in place; nothing else does.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nodewright.engine.scheduling.cache import SolverCache
from nodewright.engine.scheduling.classes import PodClass, forced_nodes, group
from nodewright.engine.scheduling.hostports import HostPorts
from nodewright.engine.scheduling.portfolio import Strategy
from nodewright.engine.scheduling.prepare import Pool, PoolType, vec
from nodewright.engine.scheduling.topology import Group, Topology
from nodewright.engine.scheduling.types import PoolCapacity, SchedulingInput
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.model.requirements import Requirements
from nodewright.model.resources import CPU, MEMORY, PODS, Resources
from nodewright.model.taints import Taint, Toleration

if TYPE_CHECKING:
    from nodewright.engine.scheduling.existing import BoundPods


@dataclass(slots=True, eq=False)
class ClassFacts:
    """What the fit checks (`fit.py`) found for one class in this pass: its tolerations' number
    (`Pass.tolerations_id`), and once asked, `fit.hostname_bound`, `fit.home_pool` and
    `fit.capacity_types` per pool name. Each is what the value-keyed memo gives; this only saves
    hashing the class at every look-up. Holds the class, so the id keying it stays its own.
    """

    cls: PodClass
    tolerations: int
    bound: bool | None = None
    homed: bool = False
    home: Pool | None = None
    cts: dict[str, frozenset[str]] = field(default_factory=dict)


@dataclass(slots=True, eq=False)
class Bin:
    """Somewhere pods can go: an existing node, an in-flight claim, or a claim of this pass."""

    name: str
    kind: str  # "node", "inflight" or "claim"
    requirements: Requirements
    taints: tuple[Taint, ...]
    free: list[int]
    labels: Mapping[str, str] | None = None  # existing nodes only
    pool: Pool | None = None
    target: PoolType | None = None
    reserved: list[int] | None = None
    pods: list[Pod] = field(default_factory=list)
    capacity_types: frozenset[str] = frozenset()
    # False once a pod whose hostname-keyed counts would change if it moved is placed here.
    movable: bool = True
    # The order this pass opened its claims in (0 for nodes and claims in flight).
    seq: int = 0

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


class Pass:
    """One pass over `inp` with `strategy` (see the module docstring). `bound` is shared by the
    passes of one `solve()` call; `cache` by whatever solves its caller lets share it.
    """

    def __init__(
        self,
        inp: SchedulingInput,
        strategy: Strategy,
        bound: BoundPods,
        cache: SolverCache,
        classes: Sequence[PodClass] | None = None,
    ) -> None:
        self.inp = inp
        self.strategy = strategy
        self.bound = bound
        self.cache = cache
        # `classes`: `group(inp.pods)` in this strategy's order, when the caller has it already
        # (classes are immutable, so passes of one solve share them).
        self.classes = (
            list(classes)
            if classes is not None
            else group(inp.pods, other_order=strategy.other_order, forced_first=strategy.forced_first)
        )
        self.names = resource_names(inp, self.classes)
        self.index = {n: i for i, n in enumerate(self.names)}
        # A static NodePool (`replicas`) keeps its own count of nodes and never opens a claim for
        # pods; its claims in flight are still bins pods may use (`existing.add_existing`).
        ordered = by_weight(inp)
        self.pools = [self._pool(pc.nodepool, pc.instance_types) for pc in ordered if pc.nodepool.replicas is None]
        self.static_pools = [
            self._pool(pc.nodepool, pc.instance_types) for pc in ordered if pc.nodepool.replicas is not None
        ]
        self.topology = Topology()
        self.ports = HostPorts(inp.daemonsets)
        self.bound_ports = False  # some bound pod binds a host port (`existing.add_existing`)
        self.existing: list[Bin] = []
        self.claims: list[Bin] = []
        self.open: list[Bin] = []
        self.unschedulable: dict[str, str] = {}
        # Memos of this pass, keyed by values (see the module docstring); each names its reader.
        self.node_fits: dict[tuple[str, Requirements], bool] = {}  # fit.bin_compatible
        self.claim_fits: dict[tuple[Requirements, Requirements, str], bool] = {}  # fit.bin_compatible
        self.bound_cache: dict[tuple[object, ...], bool] = {}  # fit.hostname_bound
        self.prices: dict[tuple[object, ...], float] = {}  # repack.claim_price
        self.largest: dict[str, tuple[int, int]] = {}  # repack.cheapest_fit
        self.reachable_cache: dict[tuple[object, ...], frozenset[str]] = {}  # fill.reachable
        self.counted_cache: dict[tuple[object, ...], frozenset[str]] = {}  # domains.counted_domains
        self.tolerates: dict[tuple[object, ...], bool] = {}  # fit.bin_tolerates
        self.targets: dict[tuple[object, ...], tuple[PoolType | None, str, list[int]]] = {}  # nodeclaim
        self.share_targets: dict[tuple[object, ...], tuple[PoolType | None, str, list[int]]] = {}  # nodeclaim
        self.cannot_widen: set[tuple[str, int, int, tuple[int, ...]]] = set()  # nodeclaim.widen_claim
        self.claim_seq = 0
        # Per pod size (cpu, memory): the claims not yet found too small for one pod, and the
        # last claim number seen (`fill._fill_roomy`).
        self.roomy: dict[tuple[int, int], tuple[list[Bin], int]] = {}
        self.homes: dict[tuple[object, ...], Pool | None] = {}  # fit.home_pool
        self.cts: dict[tuple[tuple[Requirements, ...], str], frozenset[str]] = {}  # fit.capacity_types
        # By class identity: what the fit checks ask of each class at every placement (`facts`).
        self._facts: dict[int, ClassFacts] = {}
        # A claim's requirements narrowed to a pod's alternative, by both objects' identity
        # (`fit.assign_pods`): claims narrowed alike share one object.
        # `fit.claim_alternative`, by the identity of the class and of the claim's requirements,
        # target, taints and pool (each entry holds them), and its capacity types.
        self.claim_alts: dict[
            tuple[object, ...],
            tuple[PodClass, Requirements, PoolType | None, tuple[Taint, ...], Pool | None, Requirements | None],
        ] = {}
        self.narrowed: dict[tuple[int, int], tuple[Requirements, Requirements, Requirements]] = {}
        # Tolerations as small integers for the memo keys above (`tolerations_id`).
        self._toleration_ids: dict[tuple[Toleration, ...], int] = {}
        self._tolerations_seen: dict[int, tuple[tuple[Toleration, ...], int]] = {}
        self._catalog_peak: tuple[int, ...] | None = None  # `catalog_peak`
        self.plan_option_lists: dict[tuple[object, ...], list[tuple[PoolType, float]]] = {}  # plan
        # Set by a shape-mixing pass that met pods a planned fill could plan (see `solve`).
        self.plannable = False
        self.begun = False  # `solver.begin_pass` ran
        self.topology_keys: list[str] = []
        self.tracked: list[Group] = []  # the topology groups the pass tracks
        # With `Strategy.forced_first`: the nodes hostname anti-affinity still forces
        # (`classes.forced_nodes`), whose claims share the demand between them.
        self.forced_left = forced_nodes((c.sample, len(c.pods)) for c in self.classes) if strategy.forced_first else 0
        self.min_cpu = min((c.requests[CPU] for c in self.classes), default=0)

    def facts(self, cls: PodClass) -> ClassFacts:
        """The per-class answers of the fit checks (`ClassFacts`), by the class's identity: the
        value-keyed memos hash the class's alternatives, tolerations and labels at every look-up,
        and a large pass asks them tens of thousands of times.
        """
        hit = self._facts.get(id(cls))
        if hit is None or hit.cls is not cls:
            hit = self._facts[id(cls)] = ClassFacts(cls, self.tolerations_id(cls.sample.tolerations))
        return hit

    def tolerations_id(self, tolerations: tuple[Toleration, ...]) -> int:
        """`tolerations` as a small integer, equal for equal tuples: the memo keys' stand-in for
        the tuple, which Python hashes element by element at every look-up (1,000 pods with 500
        tolerations each hashed 24 million tolerations in one pass). Remembered by identity too,
        holding the tuple so its id stays its own; an equal tuple met first as another object is
        hashed once and gets the same number.
        """
        seen = self._tolerations_seen.get(id(tolerations))
        if seen is not None and seen[0] is tolerations:
            return seen[1]
        number = self._toleration_ids.setdefault(tolerations, len(self._toleration_ids))
        self._tolerations_seen[id(tolerations)] = (tolerations, number)
        return number

    @property
    def catalog_peak(self) -> tuple[int, ...]:
        """The most allocatable any instance type of any pool's catalog has of each resource
        (before the pool's daemonsets, which only take from it): a pod asking more fits no new
        claim of any pool, which is known without preparing each pool's view of its catalog.
        """
        if self._catalog_peak is None:
            self._catalog_peak = self.cache.catalog_peaks.get(self.names, [pool.catalog for pool in self.pools])
        if self._catalog_peak is None:
            peak = [0] * len(self.names)
            catalogs: list[Sequence[InstanceType]] = []
            for pool in self.pools:
                catalog = pool.catalog
                # Pools of one EC2NodeClass hold the very same types (each in a tuple of its own).
                if any(
                    known is catalog or (len(known) == len(catalog) and all(map(operator.is_, known, catalog)))
                    for known in catalogs
                ):
                    continue
                catalogs.append(catalog)
                for it in catalog:
                    peak = [max(a, b) for a, b in zip(peak, self.vec(it.allocatable), strict=True)]
            self._catalog_peak = tuple(peak)
            self.cache.catalog_peaks.put(self.names, [pool.catalog for pool in self.pools], self._catalog_peak)
        return self._catalog_peak

    def vec(self, resources: Mapping[str, int]) -> tuple[int, ...]:
        """`resources` as a vector over this pass's resource names."""
        return vec(resources, self.names)

    def _pool(self, nodepool: NodePool, instance_types: Sequence[InstanceType]) -> Pool:
        """The pool for this pass: its prepared types (from the cache), and its limits less what
        its nodes and claims already use.
        """
        prepared = self.cache.prepared.get(nodepool, self.inp.daemonsets, self.inp.blocked, self.names)
        remaining = None
        if nodepool.limits is not None:
            used = self.inp.used.get(nodepool.name, Resources())
            limits = nodepool.limits
            remaining = [limits[n] - used[n] if n in limits else 1 << 62 for n in self.names]
        return Pool(
            nodepool.name,
            nodepool.weight,
            prepared.requirements,
            nodepool.taints,
            instance_types,
            prepared,
            remaining,
        )


def by_weight(inp: SchedulingInput) -> list[PoolCapacity]:
    """The input's pools, highest weight first, then by name."""
    return sorted(inp.pools, key=lambda pc: (-pc.nodepool.weight, pc.nodepool.name))


def resource_names(inp: SchedulingInput, classes: Iterable[PodClass]) -> tuple[str, ...]:
    """Every resource a pod, a daemonset or a limit names (cpu, memory and pods always), sorted."""
    names = {CPU, MEMORY, PODS}
    for cls in classes:
        names |= set(cls.requests)
    for ds in inp.daemonsets:
        names |= set(ds.template.requests)
    for pc in inp.pools:
        if pc.nodepool.limits is not None:
            names |= set(pc.nodepool.limits)
    return tuple(sorted(names))
