"""Which pods a drain evicts, and in which order. Pure; shared by interruption and consolidation.

Karpenter drains in tiers: non-critical pods, then non-critical daemon pods, then critical pods,
then critical daemon pods, and a tier starts only when the one before it is gone, so that the
critical pods (DNS, CNI helpers...) keep serving the others until the end. Nodewright keeps the
order but never evicts DaemonSet pods: they tolerate cordoning, their controller would recreate
them on the same node, and they stop with the instance anyway. Mirror (static) pods cannot be
evicted, finished pods need nothing, and pods that tolerate the disrupted taint asked to stay.

A do-not-disrupt pod blocks voluntary drains (it is left in place and reported); a forced drain
(an interruption: the instance goes away whatever we do) evicts it with its tier, because an
eviction is gentler than losing the pod with the node.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nodewright.model.pod import Pod
from nodewright.model.taints import Taint

NON_CRITICAL = "non-critical"
CRITICAL = "critical"
TIERS = (NON_CRITICAL, CRITICAL)


@dataclass(frozen=True, slots=True)
class DrainPlan:
    """The next step of a drain.

    `evict` are the pods to evict now (the first tier that still has pods, minus those already
    terminating); `terminating` counts pods of that tier already on their way out (wait for them);
    `later` counts pods of later tiers; `kept` are pods the drain leaves in place and why.
    `done` is True when nothing is left to evict or wait for.
    """

    tier: str
    evict: tuple[Pod, ...]
    terminating: int
    later: int
    kept: tuple[tuple[str, str], ...]

    @property
    def done(self) -> bool:
        """Nothing left to evict or to wait for."""
        return not self.evict and not self.terminating and not self.later


def tier_of(pod: Pod) -> str:
    """The drain tier of a pod (critical pods go last)."""
    return CRITICAL if pod.critical else NON_CRITICAL


def kept_reason(pod: Pod, taint: Taint | None, *, forced: bool) -> str:
    """Why the drain leaves `pod` in place, or '' when it must go."""
    if pod.daemon:
        return "DaemonSet pod"
    if pod.mirror:
        return "mirror pod"
    if pod.terminal:
        return "finished"
    if taint is not None and any(t.tolerates(taint) for t in pod.tolerations):
        return "tolerates the disrupted taint"
    if pod.do_not_disrupt and not forced:
        return "do-not-disrupt"
    return ""


def plan_drain(pods: Iterable[Pod], taint: Taint | None, *, forced: bool) -> DrainPlan:
    """The next drain step for the pods bound to one node (see DrainPlan)."""
    kept: list[tuple[str, str]] = []
    by_tier: dict[str, list[Pod]] = {tier: [] for tier in TIERS}
    for pod in sorted(pods, key=lambda p: p.key):
        reason = kept_reason(pod, taint, forced=forced)
        if reason:
            kept.append((pod.key, reason))
        else:
            by_tier[tier_of(pod)].append(pod)
    for index, tier in enumerate(TIERS):
        members = by_tier[tier]
        if members:
            later = sum(len(by_tier[t]) for t in TIERS[index + 1 :])
            evict = tuple(p for p in members if not p.deleting)
            return DrainPlan(tier, evict, len(members) - len(evict), later, tuple(kept))
    return DrainPlan(TIERS[-1], (), 0, 0, tuple(kept))
