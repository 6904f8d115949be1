"""What preferred pod (anti-)affinity may add to a plan's bill. Pure.

Role: `solve()` plans with every preference treated as required first, as Karpenter does, and
relaxes one at a time only for pods that cannot be placed (`classes.PodClass.relaxed`). A
preferred pod anti-affinity on `kubernetes.io/hostname` can almost always be met by opening one
more node, so that rule alone buys a node per replica: 60 replicas of a 100m service asking to
be apart became 60 two-vCPU nodes, where kube-scheduler (which treats preferences as scores and
never buys a node for one) would have put them on the one or three nodes their requests need.

Contract: `bounded(plan, relaxed_plan)` keeps the plan that honours the preferences unless it
costs more than PREFERENCE_PREMIUM above the plan made with every preferred pod (anti-)affinity
term dropped (`without_preferred_pod_terms`), or places fewer pods. The relaxed plan's pods are
the caller's own pods again (`restore`), preferences included: kube-scheduler still scores them
when it binds, so the replicas spread over whatever nodes the plan buys. Required terms, spread
constraints, node affinity and taints are never touched here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from nodewright.engine.scheduling.types import SchedulingInput, SchedulingResult
from nodewright.model.pod import Pod

# How much more than the plan without them preferred pod (anti-)affinity may cost: a few replicas
# spread over nodes the batch needs anyway cost nothing and are kept; a node bought per replica
# (several times the bill) is not.
PREFERENCE_PREMIUM = 0.25


def has_preferred_pod_terms(inp: SchedulingInput) -> bool:
    """True when some pod of `inp` has a preferred pod affinity or anti-affinity term."""
    return any(pod.preferred_affinity or pod.preferred_anti_affinity for pod in inp.pods)


def without_preferred_pod_terms(inp: SchedulingInput) -> SchedulingInput:
    """`inp` with every pending pod's preferred pod (anti-)affinity dropped (nothing else)."""
    pods = tuple(
        replace(pod, preferred_affinity=(), preferred_anti_affinity=())
        if pod.preferred_affinity or pod.preferred_anti_affinity
        else pod
        for pod in inp.pods
    )
    return replace(inp, pods=pods)


def left_out(result: SchedulingResult) -> int:
    """Pods the plan does not place (unschedulable or deferred)."""
    return len(result.unschedulable) + len(result.deferred)


def bounded(honoured: SchedulingResult, relaxed: SchedulingResult) -> bool:
    """True when the plan that honours the preferences is the one to keep: it places at least as
    many pods as the relaxed plan and costs at most PREFERENCE_PREMIUM more (both priced per hour).
    """
    if left_out(honoured) != left_out(relaxed):
        return left_out(honoured) < left_out(relaxed)
    return honoured.price_per_hour <= relaxed.price_per_hour * (1 + PREFERENCE_PREMIUM) + 1e-9


def restore(relaxed: SchedulingResult, pods: Mapping[str, Pod]) -> SchedulingResult:
    """The relaxed plan with the caller's pods (preferences included) on its claims, by key."""
    claims = tuple(replace(c, pods=tuple(pods.get(p.key, p) for p in c.pods)) for c in relaxed.claims)
    return replace(relaxed, claims=claims)
