"""Retrying pods that wait on others of the same batch, as Karpenter's queue does. Pure.

A pod whose required pod affinity names pods pending in the same batch cannot be placed before
them: placed first (classes go largest first, then by spec), it finds no pod to follow and is set
aside. Karpenter's queue puts such a pod back and tries it again after the others, for as long as
a round places anything. `retry_waiting` does the same after the pass's first round: the classes
that left pods out and whose constraints read other pods' places (pod affinity, topology spread)
are scheduled again, round after round while a round places at least one pod. So whether a
follower is placed does not depend on whether it is ordered before its target.

A claim of this pass has no zone (nor capacity type) until it is finalized, and a pod counts in a
domain only once its node has one (as in Karpenter's topology). Before a round, each claim holding
pods a waiting pod's zone- or capacity-type-keyed affinity selects is *settled* in that key: its
requirements narrowed to the domain of its target type's cheapest allowed offering (what
finalizing would pick), and its pods counted there, so the followers have a domain to follow.
"""

from __future__ import annotations

from nodewright.engine.scheduling.classes import PodClass
from nodewright.engine.scheduling.fill import schedule
from nodewright.engine.scheduling.prepare import cheapest_offering
from nodewright.engine.scheduling.state import Pass
from nodewright.engine.scheduling.topology import term_group
from nodewright.model import labels as wk
from nodewright.model.requirements import Requirement, Requirements

# Rounds are bounded by the pods placed (each round places one or stops); this bounds them by
# time on huge inputs whatever their shape.
MAX_ROUNDS = 64


def retry_waiting(p: Pass) -> None:
    """Schedule again, while a round places a pod, the classes whose left-out pods wait on others."""
    for _ in range(MAX_ROUNDS):
        waiting = [part for part in (_left_out(p, cls) for cls in p.classes) if part is not None]
        if not waiting:
            return
        _settle(p, waiting)
        before = sum(len(part.pods) for part in waiting)
        for part in waiting:
            for pod in part.pods:
                del p.unschedulable[pod.key]
            schedule(p, part)
        after = sum(1 for part in waiting for pod in part.pods if pod.key in p.unschedulable)
        if after >= before:
            return


def _left_out(p: Pass, cls: PodClass) -> PodClass | None:
    """The class's pods the pass left out, when their constraints depend on other pods' places."""
    sample = cls.sample
    if not (sample.affinity or sample.preferred_affinity or sample.spread):
        return None
    pods = tuple(pod for pod in cls.pods if pod.key in p.unschedulable)
    return cls.with_pods(pods) if pods else None


def _settle(p: Pass, waiting: list[PodClass]) -> None:
    """Fix the zone or capacity type of the claims holding pods the waiting pods' affinity selects."""
    groups = [
        term_group(t)
        for part in waiting
        for t in (*part.sample.affinity, *part.sample.preferred_affinity)
        if t.topology_key in (wk.ZONE, wk.CAPACITY_TYPE)
    ]
    if not groups:
        return
    for b in p.claims:
        if b.pool is None or b.target is None:
            continue
        for key in sorted({g.key for g in groups}):
            if b.domain(key) is not None:
                continue
            if not any(g.key == key and g.selects(pod.namespace, pod.labels) for pod in b.pods for g in groups):
                continue
            offers = [
                o
                for option in b.pool.options(b.requirements)
                if option[2] is b.target
                for o in option[3]
                if o.capacity_type in b.capacity_types or not b.capacity_types
            ]
            if not offers:
                continue
            chosen = cheapest_offering(offers)
            value = chosen.zone if key == wk.ZONE else chosen.capacity_type
            b.requirements = b.requirements.intersection(Requirements([Requirement.new(key, "In", [value])]))
            for pod in b.pods:
                p.topology.record(pod, {key: value})
