"""Equivalence classes of pods, and the relaxation of their preferences. Pure.

Role: pods whose scheduling specs are identical (namespace, labels, requests, node selection,
affinities, spread, tolerations) are placed as one batch: the scheduler asks "how many of these
fit here?" once instead of once per pod. This is what makes Nodewright's solver fast on real
workloads, where a Deployment's replicas are identical by construction.

A class carries its constraints at a relaxation level. Level 0 treats every preference as
required, as Karpenter does; each `relaxed()` drops one more preference, in Karpenter's order:
the heaviest preferred pod affinity term, then the heaviest preferred anti-affinity term, then the
heaviest preferred node affinity term, then every ScheduleAnyway spread, and last the
PreferNoSchedule taints are tolerated.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass

from nodewright.model import labels as wk
from nodewright.model.pod import AffinityTerm, Pod, SpreadConstraint
from nodewright.model.requirements import Requirements
from nodewright.model.resources import CPU, MEMORY, Resources

PodKey = tuple[object, ...]


def class_key(pod: Pod) -> PodKey:
    """Everything about a pod that scheduling reads; pods with equal keys are interchangeable."""
    return (
        pod.namespace,
        tuple(sorted(pod.labels.items())),
        pod.requests,
        tuple(sorted(pod.node_selector.items())),
        pod.required_terms,
        pod.preferred_terms,
        pod.affinity,
        pod.preferred_affinity,
        pod.anti_affinity,
        pod.preferred_anti_affinity,
        pod.spread,
        pod.tolerations,
        pod.host_ports,
    )


@dataclass(frozen=True, slots=True)
class PodClass:
    """Interchangeable pods and the constraints that apply to them at this relaxation level.

    `alternatives` are the ORed node requirement sets (nodeSelector AND one required term, AND the
    heaviest remaining preferred node term); `spread`, `affinity` and `anti_affinity` include the
    preferences not yet relaxed. `sample` is one of the pods, for labels and namespace.
    """

    sample: Pod
    pods: tuple[Pod, ...]
    requests: Resources
    alternatives: tuple[Requirements, ...]
    spread: tuple[SpreadConstraint, ...]
    affinity: tuple[AffinityTerm, ...]
    anti_affinity: tuple[AffinityTerm, ...]
    tolerate_prefer_no_schedule: bool
    # What is left to relax, heaviest first.
    preferred_affinity: tuple[AffinityTerm, ...]
    preferred_anti_affinity: tuple[AffinityTerm, ...]
    preferred_node: tuple[Requirements, ...]
    soft_spread: bool
    # Where `group` put the class in the placement order (`sort_key`).
    position: int = 0

    @classmethod
    def of(
        cls,
        pods: Iterable[Pod],
        *,
        position: int = 0,
        shared: dict[tuple[Requirements, ...], tuple[Requirements, ...]] | None = None,
    ) -> PodClass:
        """The class of some identical pods (sorted by name so results do not depend on input order).

        `shared`: alternatives of classes built before (`group`), by value; a class whose
        alternatives equal some of them takes those very objects, so the memos keyed by them find
        them by identity instead of comparing requirements.
        """
        ordered = tuple(sorted(pods, key=_by_name))
        sample = ordered[0]
        by_weight = sorted(sample.preferred_terms, key=lambda t: -t.weight)
        pref_aff = tuple(sorted(sample.preferred_affinity, key=lambda t: -t.weight))
        pref_anti = tuple(sorted(sample.preferred_anti_affinity, key=lambda t: -t.weight))
        return _build(
            sample,
            ordered,
            preferred_affinity=pref_aff,
            preferred_anti_affinity=pref_anti,
            preferred_node=tuple(t.requirements for t in by_weight),
            soft_spread=True,
            tolerate_prefer_no_schedule=False,
            position=position,
            shared=shared,
        )

    def relaxed(self) -> PodClass | None:
        """The same pods with one preference fewer, or None when nothing is left to relax."""
        if self.preferred_affinity:
            return self._rebuild(preferred_affinity=self.preferred_affinity[1:])
        if self.preferred_anti_affinity:
            return self._rebuild(preferred_anti_affinity=self.preferred_anti_affinity[1:])
        if self.preferred_node:
            return self._rebuild(preferred_node=self.preferred_node[1:])
        if self.soft_spread and any(not s.required for s in self.sample.spread):
            return self._rebuild(soft_spread=False)
        if not self.tolerate_prefer_no_schedule:
            return self._rebuild(tolerate_prefer_no_schedule=True, soft_spread=False)
        return None

    def with_pods(self, pods: tuple[Pod, ...]) -> PodClass:
        """The same class holding only `pods`."""
        return self.narrowed(pods, self.alternatives)

    def restricted(self, requirements: Requirements) -> PodClass:
        """The same class with `requirements` (e.g. a zone chosen for spread) added to every alternative."""
        return self.narrowed(self.pods, tuple(a.intersection(requirements) for a in self.alternatives))

    def narrowed(self, pods: tuple[Pod, ...], alternatives: tuple[Requirements, ...]) -> PodClass:
        """The same class holding `pods`, with `alternatives` (the class's own, restricted by
        the caller: `fill.restrict`). Built field by field rather than by `dataclasses.replace`,
        which looks every field up by name: a large pass builds a part class per placement.
        """
        return PodClass(
            self.sample,
            pods,
            self.requests,
            alternatives,
            self.spread,
            self.affinity,
            self.anti_affinity,
            self.tolerate_prefer_no_schedule,
            self.preferred_affinity,
            self.preferred_anti_affinity,
            self.preferred_node,
            self.soft_spread,
            self.position,
        )

    @property
    def sort_key(self) -> int:
        """The class's place in the placement order `group` chose (see there)."""
        return self.position

    def _rebuild(
        self,
        *,
        preferred_affinity: tuple[AffinityTerm, ...] | None = None,
        preferred_anti_affinity: tuple[AffinityTerm, ...] | None = None,
        preferred_node: tuple[Requirements, ...] | None = None,
        soft_spread: bool | None = None,
        tolerate_prefer_no_schedule: bool | None = None,
    ) -> PodClass:
        return _build(
            self.sample,
            self.pods,
            preferred_affinity=self.preferred_affinity if preferred_affinity is None else preferred_affinity,
            preferred_anti_affinity=(
                self.preferred_anti_affinity if preferred_anti_affinity is None else preferred_anti_affinity
            ),
            preferred_node=self.preferred_node if preferred_node is None else preferred_node,
            soft_spread=self.soft_spread if soft_spread is None else soft_spread,
            tolerate_prefer_no_schedule=(
                self.tolerate_prefer_no_schedule if tolerate_prefer_no_schedule is None else tolerate_prefer_no_schedule
            ),
            position=self.position,
        )


def _build(
    sample: Pod,
    pods: tuple[Pod, ...],
    *,
    preferred_affinity: tuple[AffinityTerm, ...],
    preferred_anti_affinity: tuple[AffinityTerm, ...],
    preferred_node: tuple[Requirements, ...],
    soft_spread: bool,
    tolerate_prefer_no_schedule: bool,
    position: int,
    shared: dict[tuple[Requirements, ...], tuple[Requirements, ...]] | None = None,
) -> PodClass:
    alternatives = sample.node_requirements()
    if preferred_node:
        alternatives = tuple(a.intersection(preferred_node[0]) for a in alternatives)
    if shared is not None:
        alternatives = shared.setdefault(alternatives, alternatives)
    spread = tuple(s for s in sample.spread if s.required or soft_spread)
    return PodClass(
        sample=sample,
        pods=pods,
        requests=sample.requests,
        alternatives=alternatives,
        spread=spread,
        affinity=sample.affinity + preferred_affinity,
        anti_affinity=sample.anti_affinity + preferred_anti_affinity,
        tolerate_prefer_no_schedule=tolerate_prefer_no_schedule,
        preferred_affinity=preferred_affinity,
        preferred_anti_affinity=preferred_anti_affinity,
        preferred_node=preferred_node,
        soft_spread=soft_spread,
        position=position,
    )


def group(pods: Iterable[Pod], *, other_order: bool = False, forced_first: bool = False) -> list[PodClass]:
    """Pods grouped into classes, in placement order: largest cpu, then memory, first (Karpenter's
    order). Classes of equal size go the most constrained first (`constraint_rank`), then the one
    with more pods first, then by their spec as a canonical string (`canonical`, descending). Only
    specs decide, never pods' names nor the input's order, so renaming or reordering the pods
    never changes the plan. `other_order` puts the least constrained first instead: a second
    canonical order the portfolio tries (`portfolio.Strategy.other_order`).
    """
    buckets: dict[PodKey, list[Pod]] = {}
    for pod in pods:
        buckets.setdefault(class_key(pod), []).append(pod)
    memo: dict[object, str] = {}
    by_spec = sorted(buckets.items(), key=lambda kv: canonical(kv[0], memo), reverse=True)
    sign = 1 if other_order else -1

    def order(kv: tuple[PodKey, list[Pod]]) -> tuple[int, int, int, int, int]:
        sample = kv[1][0]
        lead = 0 if forced_first and node_each(sample) else 1
        return (lead, -sample.requests[CPU], -sample.requests[MEMORY], sign * constraint_rank(sample), -len(kv[1]))

    shared: dict[tuple[Requirements, ...], tuple[Requirements, ...]] = {}
    return [
        PodClass.of(members, position=i, shared=shared) for i, (_, members) in enumerate(sorted(by_spec, key=order))
    ]


# Pods by namespace, then name (`PodClass.of`), read in C.
_by_name = operator.attrgetter("namespace", "name")


def node_each(pod: Pod) -> bool:
    """True when the pod's required anti-affinity keeps pods like it off its node: each needs a node."""
    return repelling(pod) is not None


def repelling(pod: Pod) -> AffinityTerm | None:
    """The pod's first required hostname anti-affinity term that selects the pod itself (the pods
    it selects need a node each), or None.
    """
    return next(
        (t for t in pod.anti_affinity if t.topology_key == wk.HOSTNAME and t.selects(pod.namespace, pod.labels)), None
    )


def forced_nodes(pods: Iterable[tuple[Pod, int]]) -> int:
    """How many nodes hostname anti-affinity forces at least among `pods` (each a pod and how
    many pods like it): the most pods one self-selecting term keeps apart (`repelling`; pods of
    different terms may share a node).
    """
    groups: dict[tuple[str, AffinityTerm], int] = {}
    for pod, count in pods:
        term = repelling(pod)
        if term is not None:
            key = (pod.namespace, term)
            groups[key] = groups.get(key, 0) + count
    return max(groups.values(), default=0)


def orders_differ(classes: Sequence[PodClass]) -> bool:
    """True when `other_order` gives another order: two classes of equal size and unequal
    `constraint_rank`.
    """
    ranks: dict[tuple[int, int], int] = {}
    for c in classes:
        size = (c.requests[CPU], c.requests[MEMORY])
        rank = constraint_rank(c.sample)
        if ranks.setdefault(size, rank) != rank:
            return True
    return False


def canonical(key: PodKey, memo: dict[object, str]) -> str:
    """A class's spec (`class_key`) as a canonical string: equal specs give equal strings in every
    process, and pods' names play no part; `memo` remembers the parts classes share.
    """
    return ",".join([_canon(part, memo) for part in key])


def constraint_rank(pod: Pod) -> int:
    """How much a pod's required constraints narrow where it may go, as a rank: hostname
    anti-affinity (a node each) over hostname-keyed spread or affinity over other spread or
    affinity over none. Among pods of one size the more constrained are placed first, so the
    free ones fill the room they leave (first fit decreasing's rule, applied to constraints).
    """
    rank = 0
    for term in pod.anti_affinity:
        rank |= 8 if term.topology_key == wk.HOSTNAME else 2
    for key in [s.topology_key for s in pod.spread if s.required] + [t.topology_key for t in pod.affinity]:
        rank |= 4 if key == wk.HOSTNAME else 1
    return rank


def _canon(x: object, memo: dict[object, str]) -> str:
    """`x` as a canonical string: equal values give equal strings in every process (sets and
    maps written sorted, so no hash-seed order), values of different types different strings.
    Remembered in `memo` (by value: classes share their terms, labels and requests).
    """
    if x is None or isinstance(x, (str, bool, int, float)):
        return repr(x)
    if x == ():
        return "()"
    hit = memo.get(x)
    if hit is not None:
        return hit
    out: str
    if isinstance(x, Resources):
        # Explicit zeros are equal to absent amounts (Resources.__eq__).
        out = "R{" + ",".join(sorted(f"{k}:{v}" for k, v in x.items() if v)) + "}"
    elif isinstance(x, (frozenset, set)):
        out = "{" + ",".join(sorted(_canon(e, memo) for e in x)) + "}"
    elif isinstance(x, Mapping):
        out = "{" + ",".join(sorted(f"{_canon(k, memo)}:{_canon(v, memo)}" for k, v in x.items())) + "}"
    elif isinstance(x, tuple):
        out = "(" + ",".join([_canon(e, memo) for e in x]) + ")"
    elif is_dataclass(x):
        out = type(x).__name__ + "(" + ",".join([_canon(getattr(x, f.name), memo) for f in fields(x)]) + ")"
    else:
        raise TypeError(f"no canonical form for {type(x).__name__}")
    memo[x] = out
    return out
