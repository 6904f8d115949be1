"""Preparation: each NodePool's view of the catalog, as integer vectors. Pure.

For each NodePool the solver keeps the instance types its requirements allow that still have an
offering (not blocked by the capacity-error cache), with their allocatable resources minus the
overhead of the daemonsets that would run there (`PoolType`). `PreparedPool` holds that view for
one NodePool, daemonset list, blocked set and resource names, and remembers what the solver asks
of it (which types some requirements allow, with which offerings; what a claim's options are;
what its target is chosen from). A `SolverCache` keeps a few of them between solves; every answer
is a pure function of its key, so a remembered answer is exactly a fresh one.

Also here: the small pieces every other file reads (`vec`, `add`, `tolerated`, the offering order).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from nodewright.engine.scheduling.targets import Candidates, Targets, bounded_put
from nodewright.engine.scheduling.types import MAX_INSTANCE_TYPE_OPTIONS
from nodewright.engine.scheduling.typeview import TypeViews
from nodewright.engine.scheduling.usage import NODES, charged
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType, Offering, OfferingKey
from nodewright.model.nodepool import NodePool
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import ACCELERATORS, CPU, MEMORY, Resources
from nodewright.model.taints import BLOCKING, Taint, Toleration
from nodewright.model.workloads import DaemonSet

_CAPACITY_PRIORITY = MappingProxyType({"reserved": 0, "spot": 1, "on-demand": 2})
# The labels an offering decides (`Offering.allowed_by`): all of a pool's requirements a
# `PoolType` depends on.
_OFFERING_LABELS = frozenset({wk.ZONE, wk.CAPACITY_TYPE, *wk.RESERVATION_LABELS})


@dataclass(frozen=True, slots=True)
class PoolType:
    """An instance type as one pool sees it: capacity left for pods, price, allowed offerings.

    Shared by the solves that prepare the same NodePool (`PreparedPool`), so never changed (`prices`
    included).
    """

    it: InstanceType
    cap: tuple[int, ...]
    overhead: tuple[int, ...]  # what the pool's daemonsets request on this type
    capacity: tuple[int, ...]
    price: float
    prices: dict[str, float]  # capacity type -> cheapest allowed offering
    offerings: tuple[Offering, ...]  # allowed ones, in `offering_order` (cheapest first)
    offer_reqs: Requirements
    exotic: bool


@dataclass(slots=True)
class Pool:
    """One NodePool in one pass: its prepared types (shared, never changed), and what the pass
    changes: the room its limits leave (`remaining`, None without limits) and the demand of the
    pods whose first choice it is.

    The types are prepared when the pass first asks for them (`types`, `by_name`): a pass over
    thousands of NodePools places most pods in the first few, and preparing the catalog for a
    pool no pod reaches is most of such a pass.
    """

    name: str
    weight: int
    requirements: Requirements
    taints: tuple[Taint, ...]
    catalog: Sequence[InstanceType]  # the instance types the pool may launch, before filtering
    prepared: PreparedPool
    remaining: list[int] | None
    limit_version: int = 0
    # Remaining unplaced requests of the pods whose first choice is this pool, by capacity types.
    demand: dict[frozenset[str], list[int]] = field(default_factory=dict)
    _types: tuple[tuple[PoolType, ...], Mapping[str, PoolType]] | None = None

    @property
    def types(self) -> tuple[PoolType, ...]:
        """The pool's usable types, cheapest first; shared across solves, like everything
        `prepared` answers: never changed.
        """
        if self._types is None:
            self._types = self.prepared.types(self.catalog)
        return self._types[0]

    @property
    def by_name(self) -> Mapping[str, PoolType]:
        """`types` by instance type name (likewise never changed)."""
        if self._types is None:
            self._types = self.prepared.types(self.catalog)
        return self._types[1]

    def options(self, reqs: Requirements) -> list[Option]:
        """The pool's types that `reqs` allow, with the offerings they allow, cheapest first.

        Claims share few distinct requirement sets, within a pass and across passes, so this is
        computed once per set (`PreparedPool.options`). The list is shared: never change it.
        """
        return self.prepared.options(self.types, reqs)


Option = tuple[float, str, PoolType, tuple[Offering, ...]]


class PreparedPool:
    """One NodePool's view of the catalog, for given daemonsets, blocked offerings and resource
    names: the pool's requirements, and each instance type as the pool sees it (`PoolType`, or None
    when the pool cannot use it).

    Preparing a type (requirements intersection, offering filtering and sorting, daemonset
    overhead) is most of a small solve, and it depends on nothing else, so one consolidation pass
    (dozens of solves) or one provisioner invocation prepares each type once instead of once per
    solve and strategy. Valid because everything here is a pure function of the key
    (`nodepool`, `daemonsets`, `blocked`, `names`, compared by value) and of the instance type, and
    every object involved is immutable: types are remembered by `id`, and the entry keeps a
    reference to each, so an id cannot be reused by another object while it is remembered.

    The types as the pool sees them (`PoolType`s and the lists of them) live in a `TypeView`
    that `views` shares with every pool whose inputs are equal but for the pool's name
    (`typeview.py`): 2,000 NodePools of a few shapes prepare the catalog a few times.
    """

    # Bounds on what one entry remembers (a catalog has ~800 types; a pass cuts a few lists).
    MAX_LISTS = 64
    MAX_QUESTIONS = 4096
    MAX_REQUIREMENTS = 512

    def __init__(
        self,
        nodepool: NodePool,
        daemonsets: Sequence[DaemonSet],
        blocked: frozenset[OfferingKey],
        names: tuple[str, ...],
        views: TypeViews | None = None,
    ) -> None:
        self.nodepool = nodepool
        self.daemonsets = daemonsets
        self.blocked = blocked
        self.names = names
        reqs = nodepool.requirements.intersection(Requirements.from_labels(nodepool.labels)).intersection(
            Requirements([Requirement.new(wk.NODEPOOL, "In", [nodepool.name])])
        )
        self.requirements = reqs
        self._daemons = [
            ds
            for ds in daemonsets
            if tolerated(ds.template.tolerations, nodepool.taints, prefer=False)
            and any(reqs.compatible(alt) for alt in ds.template.node_requirements())
        ]
        # Shared by the pools of equal inputs but for their name; the daemonsets are keyed by
        # identity (they hold dicts) and held by the view, so their ids stay theirs.
        # A type's `PoolType` depends on the pool's requirements only through the offering labels
        # (`Offering.allowed_by`); which types the pool may launch at all comes from the catalog's
        # index (`catalogindex.py`), then the list is shared by the pools alike but for their name.
        self._views = views or TypeViews(0)
        self._alike = Requirements(r for key, r in reqs.items() if key != wk.NODEPOOL)
        offering = Requirements(r for key, r in reqs.items() if key in _OFFERING_LABELS)
        view_key = (offering, tuple(map(id, self._daemons)), blocked, names)
        self._view = self._views.get(view_key, keep=tuple(self._daemons))
        self._lists: dict[int, tuple[Sequence[InstanceType], tuple[PoolType, ...], Mapping[str, PoolType]]] = {}
        # By list of types (held, so its id stays its own) and requirements: answers that depend on
        # nothing of the pool but what the view's key holds, so shared with the pools alike.
        view = self._view
        self._matching: dict[tuple[int, Requirements], tuple[tuple[PoolType, ...], list[PoolType]]] = view.memo(
            "matching"
        )
        self._options: dict[tuple[int, Requirements], tuple[tuple[PoolType, ...], list[Option]]] = view.memo("options")
        self._by_requirements: dict[Requirements, dict[int, tuple[PoolType, bool, Option | None]]] = view.memo(
            "by_requirements"
        )
        self._targets: dict[tuple[int, Requirements, tuple[int, ...]], tuple[tuple[PoolType, ...], Targets]] = (
            view.memo("targets")
        )
        self._same_targets: dict[tuple[int, tuple[int, ...], tuple[int, ...]], tuple[tuple[PoolType, ...], Targets]] = (
            view.memo("same_targets")
        )
        self._candidates: dict[tuple[int, tuple[int, ...]], tuple[tuple[PoolType, ...], Candidates]] = view.memo(
            "candidates"
        )
        self._claims: dict[
            tuple[int, Requirements, tuple[int, ...], tuple[int, ...] | None],
            tuple[tuple[PoolType, ...], tuple[list[Option], str]],
        ] = view.memo("claims")

    def matches(
        self,
        nodepool: NodePool,
        daemonsets: Sequence[DaemonSet],
        blocked: frozenset[OfferingKey],
        names: tuple[str, ...],
    ) -> bool:
        """True when this entry was prepared for equal inputs (identity first: it is the usual case)."""
        return (
            (self.nodepool is nodepool or self.nodepool == nodepool)
            and (self.daemonsets is daemonsets or self.daemonsets == daemonsets)
            and (self.blocked is blocked or self.blocked == blocked)
            and self.names == names
        )

    def types(self, instance_types: Sequence[InstanceType]) -> tuple[tuple[PoolType, ...], Mapping[str, PoolType]]:
        """The pool's usable types among `instance_types`, cheapest first (then by name), and by name."""
        hit = self._lists.get(id(instance_types))
        if hit is not None and hit[0] is instance_types:
            return hit[1], hit[2]
        # Only an immutable sequence may be recognised by its contents or identity next time.
        immutable = type(instance_types) is tuple
        shared = self._view.list_for(self._alike, instance_types) if immutable else None
        if shared is not None:
            _, types, by_name = shared
        else:
            view = self._view
            out: list[PoolType] = []
            index = self._views.index(instance_types)
            for position in index.allowed(self.requirements):
                it = instance_types[position]
                known = view.by_type.get(id(it))
                if known is not None and known[0] is it:
                    t = known[1]
                else:
                    t = self._prepare(it)
                    view.remember_type(it, t)
                if t is not None:
                    out.append(t)
            out.sort(key=lambda t: (t.price, t.it.name))
            types = tuple(out)
            by_name = MappingProxyType({t.it.name: t for t in types})
            if immutable:
                view.remember_list(self._alike, (instance_types, types, by_name))
        if immutable:
            bounded_put(self._lists, id(instance_types), (instance_types, types, by_name), self.MAX_LISTS)
        return types, by_name

    def matching(self, types: tuple[PoolType, ...], reqs: Requirements) -> list[PoolType]:
        """The types of `types` (a list `types()` made) whose offerings `reqs` allow, in order.

        A fresh list each call (callers may keep or change it).
        """
        key = (id(types), reqs)
        hit = self._matching.get(key)
        if hit is None or hit[0] is not types:
            answers = self._answers(reqs)
            hit = (types, [t for t in types if self._answer(answers, t, reqs)[1]])
            bounded_put(self._matching, key, hit, self.MAX_QUESTIONS)
        return list(hit[1])

    def targets(self, types: tuple[PoolType, ...], alt: Requirements, req: tuple[int, ...]) -> Targets:
        """What a claim's target is chosen from, for pods of size `req` needing `alt` (`Targets`)."""
        key = (id(types), alt, req)
        hit = self._targets.get(key)
        if hit is not None and hit[0] is types:
            return hit[1]
        # Requirements that allow the same types (a zone spread pins each part to one zone, and
        # every type is offered in each) share one `Targets`: its answers depend on the types only.
        compatible = self.matching(types, alt)
        ids = tuple(map(id, compatible))
        same_key = (id(types), ids, req)
        same = self._same_targets.get(same_key)
        if same is not None and same[0] is types:
            found = same[1]
        else:
            shared = self._candidates.get((id(types), ids))
            if shared is None or shared[0] is not types:
                shared = (types, Candidates(compatible))
                bounded_put(self._candidates, (id(types), ids), shared, self.MAX_LISTS)
            found = Targets(compatible, req, shared[1])
            bounded_put(self._same_targets, same_key, (types, found), self.MAX_QUESTIONS)
        bounded_put(self._targets, key, (types, found), self.MAX_QUESTIONS)
        return found

    def options(self, types: tuple[PoolType, ...], reqs: Requirements) -> list[Option]:
        """The types of `types` (a list `types()` made) that `reqs` allow, each with the offerings
        `reqs` allow, cheapest first (then by name). Shared between callers: never change it.
        """
        key = (id(types), reqs)
        hit = self._options.get(key)
        if hit is not None and hit[0] is types:
            return hit[1]
        answers = self._answers(reqs)
        out: list[Option] = []
        for t in types:
            option = self._answer(answers, t, reqs)[2]
            if option is not None:
                out.append(option)
        out.sort(key=lambda o: (o[0], o[1]))
        bounded_put(self._options, key, (types, out), self.MAX_QUESTIONS)
        return out

    def claim_options(
        self, types: tuple[PoolType, ...], reqs: Requirements, used: tuple[int, ...], budget: tuple[int, ...] | None
    ) -> tuple[list[Option], str]:
        """A claim's instance type options: those of `options(types, reqs)` that hold `used` (a
        vector over this entry's names) and, with a `budget` (the pool's remaining limits), whose
        capacity is within it, plain types only when any fits, cut as `keep_min_values` says;
        and why there are none, when none fit.

        Remembered by all four: consolidation finalizes claims for the same pods in every pass.
        The list is shared between callers: never change it.
        """
        key = (id(types), reqs, used, budget)
        hit = self._claims.get(key)
        if hit is not None and hit[0] is types:
            return hit[1]
        flexible = any(r.min_values for r in reqs.values())
        options: list[Option] = []
        plain = 0
        ci, mi = self.names.index(CPU), self.names.index(MEMORY)
        used_cpu, used_memory = used[ci], used[mi]
        ge, le = operator.ge, operator.le  # compared in C (`map`): a pass asks this of every claim
        for option in self.options(types, reqs):
            t = option[2]
            cap = t.cap
            if cap[ci] < used_cpu or cap[mi] < used_memory:
                continue
            if not all(map(ge, cap, used)):
                continue
            if budget is not None and not all(map(le, t.capacity, budget)):
                continue
            options.append(option)
            plain += not t.exotic
            # Cheapest first: once 60 plain types fit, no later type can make the list.
            if plain >= MAX_INSTANCE_TYPE_OPTIONS and not flexible:
                break
        if plain:
            options = [o for o in options if not o[2].exotic]
        answer = keep_min_values(options, reqs)
        bounded_put(self._claims, key, (types, answer), self.MAX_QUESTIONS)
        return answer

    def _answers(self, reqs: Requirements) -> dict[int, tuple[PoolType, bool, Option | None]]:
        """What `_answer` found for `reqs` so far, by type id. Kept per type, not only per list:
        consolidation cuts the catalog at another price for almost every solve.
        """
        answers = self._by_requirements.get(reqs)
        if answers is None:
            answers = {}
            bounded_put(self._by_requirements, reqs, answers, self.MAX_REQUIREMENTS)
        return answers

    @staticmethod
    def _answer(
        answers: dict[int, tuple[PoolType, bool, Option | None]], t: PoolType, reqs: Requirements
    ) -> tuple[PoolType, bool, Option | None]:
        """Whether `reqs` allow `t`'s offerings, and if so `t` with the offerings they allow (None
        when none is left), remembered in `answers` (which holds `t`, so its id stays its own).
        """
        known = answers.get(id(t))
        if known is not None and known[0] is t:
            return known
        option: Option | None = None
        allowed = t.offer_reqs.intersects(reqs)
        if allowed:
            offers = tuple(o for o in t.offerings if o.allowed_by(reqs))
            if offers:
                option = (offers[0].price, t.it.name, t, offers)
            elif any(key in reqs for key in wk.RESERVATION_LABELS):
                # The type's labels carry no reservation: only its offerings can say it has none.
                allowed = False
        known = (t, allowed, option)
        answers[id(t)] = known
        return known

    def _prepare(self, it: InstanceType) -> PoolType | None:
        """`it` as this pool sees it (a type its requirements allow), or None when the blocked
        offerings, the offering labels it requires or the daemonsets' overhead leave nothing to launch.
        """
        offerings = tuple(
            sorted(
                (
                    o
                    for o in it.offerings
                    if o.available
                    and (o.capacity_type, it.name, o.zone) not in self.blocked
                    and o.allowed_by(self.requirements)
                ),
                key=offering_order,
            )
        )
        if not offerings:
            return None
        overhead = Resources()
        for ds in self._daemons:
            if any(it.requirements.intersects(alt) for alt in ds.template.node_requirements()):
                overhead = overhead + ds.template.requests
        cap = vec(it.allocatable - overhead, self.names)
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
        return PoolType(
            it,
            cap,
            vec(overhead, self.names),
            # What a claim of this type uses of the pool's limits: one node too, when one names nodes.
            vec(charged(it.capacity) if NODES in self.names else it.capacity, self.names),
            offerings[0].price,
            prices,
            offerings,
            offer_reqs,
            exotic,
        )


def vec(resources: Mapping[str, int], names: Sequence[str]) -> tuple[int, ...]:
    """`resources` as a vector over `names` (0 where absent)."""
    if type(resources) is Resources:
        # Resources reads an absent name as 0 itself; indexing skips Mapping.get's slow path.
        return tuple([resources[n] for n in names])
    return tuple(resources.get(n, 0) for n in names)


def add(target: list[int], delta: Sequence[int], times: int) -> None:
    """`target += delta * times`, in place."""
    for i, v in enumerate(delta):
        if v:
            target[i] += v * times


def tolerated(tolerations: tuple[Toleration, ...], taints: Iterable[Taint], *, prefer: bool) -> bool:
    """True when `tolerations` tolerate every blocking taint (and, with `prefer`, PreferNoSchedule)."""
    for taint in taints:
        if taint.effect not in BLOCKING and not (prefer and taint.effect == "PreferNoSchedule"):
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return False
    return True


def offering_order(o: Offering) -> tuple[float, int, str]:
    """Cheapest first, then reserved, spot, on-demand, then by zone."""
    return (o.price, _CAPACITY_PRIORITY.get(o.capacity_type, 3), o.zone)


def cheapest_offering(offers: Sequence[Offering]) -> Offering:
    """The first of `offers` in `offering_order`."""
    return min(offers, key=offering_order)


def keep_min_values(options: list[Option], reqs: Requirements) -> tuple[list[Option], str]:
    """The cheapest 60 options, or more when fewer would break a requirement's minValues; no
    options (and why) when even all of them do.
    """
    flexible = [r for r in reqs.values() if r.min_values]
    if not flexible:
        return options[:MAX_INSTANCE_TYPE_OPTIONS], ""

    def distinct(head: Sequence[Option], key: str) -> int:
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
