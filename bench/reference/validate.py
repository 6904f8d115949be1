"""Validity checks for a `SchedulingResult`, run on every plan the benchmark measures.

Role: a fast plan that is wrong is worth nothing, so each result is checked before its numbers are
reported. Pure: `problems()` returns what is wrong (empty when the plan is valid); `check()` raises.

Checked:
* accounting: every input pod is placed exactly once or reported unschedulable, never both, and no
  unknown pod appears;
* capacity: each claim's pods (plus its daemonset overhead) fit `options[0].allocatable`, the
  claim's `requests` cover its pods, and every option holds `requests`;
* pricing: the claim's offering is one of `options[0]`'s offerings;
* hostname anti-affinity: no node holds two pods of which one's required hostname anti-affinity
  selects the other;
* hostname spread: no claim holds more than maxSkew pods that carry the same required hostname
  spread constraint and are selected by it (min is 0, as a new node is always possible; pods
  without the constraint are not counted, since they may legally be placed afterwards);
* zone-keyed constraints: a pod with a zone affinity, or a zone spread constraint that selects the
  pod itself, is on a claim pinned to one zone (otherwise its zone count is undecided at launch).
  A spread that does not select its own pod may leave the zone open among the allowed ones.
Not checked: final zone skew (kube-scheduler only enforces skew when a constrained pod is placed,
and pods without the constraint may legitimately unbalance the count afterwards).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nodewright.engine.scheduling.types import PlannedClaim, SchedulingResult
from nodewright.model import labels as wk
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources


class InvalidPlan(AssertionError):
    """A plan broke one of the checks; the message lists what (at most 10 problems)."""


def check(result: SchedulingResult, pods: Sequence[Pod], *, label: str = "plan") -> None:
    """Raise InvalidPlan naming the first problems when `result` is not a valid plan for `pods`."""
    found = problems(result, pods)
    if found:
        more = f" (and {len(found) - 10} more)" if len(found) > 10 else ""
        raise InvalidPlan(f"{label}: " + "; ".join(found[:10]) + more)


def problems(result: SchedulingResult, pods: Sequence[Pod]) -> list[str]:
    """Everything wrong with `result` as a plan for `pods` (see module doc); [] when valid."""
    by_key = {p.key: p for p in pods}
    out: list[str] = []
    placed: dict[str, str] = {}

    def place(key: str, where: str) -> None:
        if key not in by_key:
            out.append(f"{where} holds unknown pod {key}")
        elif key in placed:
            out.append(f"pod {key} placed twice ({placed[key]} and {where})")
        else:
            placed[key] = where

    for i, claim in enumerate(result.claims):
        name = f"claim #{i}"
        for pod in claim.pods:
            place(pod.key, name)
        out += _claim_problems(name, claim)
    for node, keys in result.existing.items():
        for key in keys:
            place(key, f"node {node}")
    for key in result.unschedulable:
        if key in placed:
            out.append(f"pod {key} is both placed ({placed[key]}) and unschedulable")
        elif key not in by_key:
            out.append(f"unknown pod {key} reported unschedulable")
    missing = [k for k in by_key if k not in placed and k not in result.unschedulable]
    if missing:
        out.append(f"{len(missing)} pod(s) neither placed nor unschedulable, e.g. {missing[0]}")
    return out


def _claim_problems(name: str, claim: PlannedClaim) -> list[str]:
    out: list[str] = []
    if not claim.options:
        return [f"{name} has no instance type options"]
    total = _sum(p.requests for p in claim.pods)
    if not total.fits_in(claim.requests):
        out.append(f"{name}: requests {claim.requests.format()} do not cover its pods {total.format()}")
    for it in claim.options:
        if not claim.requests.fits_in(it.allocatable):
            over = ", ".join(claim.requests.exceeded_in(it.allocatable))
            out.append(f"{name}: option {it.name} cannot hold the claim's requests ({over})")
            break
    if claim.offering not in claim.options[0].offerings:
        out.append(f"{name}: offering {claim.offering} is not one of {claim.options[0].name}'s")
    out += _hostname_problems(name, claim.pods)
    zone = claim.requirements.get(wk.ZONE)
    pinned = zone is not None and not zone.complement and len(zone.values) == 1
    if not pinned:
        for pod in claim.pods:
            if _needs_one_zone(pod):
                out.append(f"{name}: pod {pod.key} has a zone constraint but the claim is not pinned to one zone")
                break
    return out


def _needs_one_zone(pod: Pod) -> bool:
    # A self-selecting spread or an affinity adds the pod to the count of the zone it lands in, so
    # the zone must be decided; a spread that does not select its own pod only needs the zone to
    # be one of those allowed when it was placed, which a plan may leave open.
    return any(s.topology_key == wk.ZONE and s.selector.matches(pod.labels) for s in pod.spread) or any(
        t.topology_key == wk.ZONE for t in pod.affinity
    )


def _hostname_problems(name: str, pods: Sequence[Pod]) -> list[str]:
    out: list[str] = []
    for pod in pods:
        for term in pod.anti_affinity:
            if term.topology_key != wk.HOSTNAME:
                continue
            clash = next((o for o in pods if o is not pod and term.selects(o.namespace, o.labels)), None)
            if clash is not None:
                out.append(f"{name}: {pod.key} has hostname anti-affinity to {clash.key} on the same node")
                return out
        for spread in pod.spread:
            if spread.topology_key != wk.HOSTNAME or not spread.required:
                continue
            if not spread.selector.matches(pod.labels):
                continue
            # Only pods carrying the same constraint count: one without it may join later legally.
            matching = sum(
                1
                for o in pods
                if o.namespace == pod.namespace and spread in o.spread and spread.selector.matches(o.labels)
            )
            if matching > spread.max_skew:
                out.append(f"{name}: {matching} pods match {pod.key}'s hostname spread (maxSkew {spread.max_skew})")
                return out
    return out


def _sum(items: Iterable[Resources]) -> Resources:
    total = Resources()
    for r in items:
        total = total + r
    return total
