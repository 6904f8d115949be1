"""A pod as Karpenter's scheduler sees it: its constraints at each relaxation level. Pure.

Karpenter (pkg/controllers/provisioning/scheduling/preferences.go) treats a pod's preferences as
required first and relaxes one at a time when the pod fails: the next required node-affinity
term, the heaviest preferred pod affinity, the heaviest preferred anti-affinity, the heaviest
preferred node affinity, one ScheduleAnyway spread, then PreferNoSchedule taints (only when a
NodePool has any). `views_of` lists every level, strictest first.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from nodewright.engine.scheduling.topology import Group, spread_group, term_group
from nodewright.model import labels as wk
from nodewright.model.pod import AffinityTerm, Pod, SpreadConstraint
from nodewright.model.requirements import Requirements

Vector = tuple[int, ...]
SPREAD, AFFINITY, ANTI = "spread", "affinity", "anti"


@dataclass(frozen=True, slots=True)
class View:
    """A pod's constraints at one relaxation level (preferences still present count as required)."""

    requirements: Requirements  # node selector + current required term + heaviest preferred term
    strict: Requirements  # without the preferred term: the pod's own domains for topology
    spread: tuple[SpreadConstraint, ...]
    affinity: tuple[AffinityTerm, ...]
    anti_affinity: tuple[AffinityTerm, ...]
    tolerate_prefer_no_schedule: bool
    # (kind, group, constraint, pod selects itself), hostname-keyed first: they are the cheap checks.
    constraints: tuple[tuple[str, Group, SpreadConstraint | AffinityTerm, bool], ...] = ()


def constraints_of(pod: Pod, view: View) -> tuple[tuple[str, Group, SpreadConstraint | AffinityTerm, bool], ...]:
    out: list[tuple[str, Group, SpreadConstraint | AffinityTerm, bool]] = []
    for s in view.spread:
        g = spread_group(s, pod.namespace)
        out.append((SPREAD, g, s, g.selects(pod.namespace, pod.labels)))
    for kind, terms in ((AFFINITY, view.affinity), (ANTI, view.anti_affinity)):
        for t in terms:
            g = term_group(t)
            out.append((kind, g, t, g.selects(pod.namespace, pod.labels)))
    out.sort(key=lambda c: c[1].key != wk.HOSTNAME)
    return tuple(out)


def views_of(pod: Pod, relax_prefer_no_schedule: bool) -> tuple[View, ...]:
    """Every relaxation level of `pod`, strictest first, in Karpenter's Relax order."""
    terms = list(pod.required_terms)
    pref_affinity = sorted(pod.preferred_affinity, key=lambda t: -t.weight)
    pref_anti = sorted(pod.preferred_anti_affinity, key=lambda t: -t.weight)
    pref_node = sorted(pod.preferred_terms, key=lambda t: -t.weight)
    soft = [s for s in pod.spread if not s.required]
    tolerate = False
    selector = Requirements.from_labels(pod.node_selector)

    def view() -> View:
        strict = selector.intersection(terms[0]) if terms else selector
        reqs = strict.intersection(pref_node[0].requirements) if pref_node else strict
        v = View(
            reqs,
            strict,
            tuple(s for s in pod.spread if s.required) + tuple(soft),
            pod.affinity + tuple(pref_affinity),
            pod.anti_affinity + tuple(pref_anti),
            tolerate,
        )
        return replace(v, constraints=constraints_of(pod, v))

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
class PodState:
    pod: Pod
    req: Vector
    views: tuple[View, ...]
    level: int = 0

    @property
    def view(self) -> View:
        return self.views[self.level]
