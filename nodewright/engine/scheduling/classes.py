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

from collections.abc import Iterable
from dataclasses import dataclass, replace

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

    @classmethod
    def of(cls, pods: Iterable[Pod]) -> PodClass:
        """The class of some identical pods (sorted by name so results do not depend on input order)."""
        ordered = tuple(sorted(pods, key=lambda p: (p.namespace, p.name)))
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
        return replace(self, pods=pods)

    def restricted(self, requirements: Requirements) -> PodClass:
        """The same class with `requirements` (e.g. a zone chosen for spread) added to every alternative."""
        return replace(self, alternatives=tuple(a.intersection(requirements) for a in self.alternatives))

    @property
    def sort_key(self) -> tuple[int, int, str, str]:
        """Karpenter's order, largest first: cpu, then memory; then a stable tie-break."""
        return (-self.requests[CPU], -self.requests[MEMORY], self.sample.namespace, self.sample.name)

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
) -> PodClass:
    alternatives = sample.node_requirements()
    if preferred_node:
        alternatives = tuple(a.intersection(preferred_node[0]) for a in alternatives)
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
    )


def group(pods: Iterable[Pod]) -> list[PodClass]:
    """Pods grouped into classes, in Karpenter's placement order (largest cpu, then memory, first)."""
    buckets: dict[PodKey, list[Pod]] = {}
    for pod in pods:
        buckets.setdefault(class_key(pod), []).append(pod)
    return sorted((PodClass.of(members) for members in buckets.values()), key=lambda c: c.sort_key)
