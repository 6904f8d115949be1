"""`expect_*` helpers: assertions on a `SchedulingResult` that say what went wrong in domain terms.

Pods are named by `name` (default namespace) or by `namespace/name`. Helpers that check a result
against its input take the `SchedulingInput` as well.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from nodewright.engine.scheduling import PlannedClaim, SchedulingInput, SchedulingResult
from nodewright.model import labels as wk
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from nodewright.model.taints import untolerated


def key(pod: Pod | str) -> str:
    """The `namespace/name` key of a pod or pod name."""
    if isinstance(pod, Pod):
        return pod.key
    return pod if "/" in pod else f"default/{pod}"


def keys(pods: Iterable[Pod | str]) -> set[str]:
    """The keys of some pods or pod names."""
    return {key(p) for p in pods}


# -- reading a result ------------------------------------------------------------------------------


def claim_of(result: SchedulingResult, pod: Pod | str) -> PlannedClaim | None:
    """The new claim holding `pod`, or None."""
    k = key(pod)
    return next((c for c in result.claims if any(p.key == k for p in c.pods)), None)


def node_of(result: SchedulingResult, pod: Pod | str) -> str | None:
    """The existing node or in-flight claim `pod` was placed on, or None."""
    k = key(pod)
    return next((name for name, placed in result.existing.items() if k in placed), None)


def placements(result: SchedulingResult) -> dict[str, list[str]]:
    """Pod key -> every place it was put ("claim:<index>" or "node:<name>"); more than one is a bug."""
    out: dict[str, list[str]] = {}
    for i, claim in enumerate(result.claims):
        for p in claim.pods:
            out.setdefault(p.key, []).append(f"claim:{i}")
    for name, placed in result.existing.items():
        for k in placed:
            out.setdefault(k, []).append(f"node:{name}")
    return out


def zone_of(claim: PlannedClaim) -> str:
    """The zone a claim will launch in: its zone requirement when single, else its offering's."""
    req = claim.requirements.get(wk.ZONE)
    if req is not None and not req.complement and len(req.values) == 1:
        return next(iter(req.values))
    return claim.offering.zone


def zones_of_claims(result: SchedulingResult) -> Counter[str]:
    """How many of the new claims' pods go to each zone."""
    counts: Counter[str] = Counter()
    for claim in result.claims:
        counts[zone_of(claim)] += len(claim.pods)
    return counts


def type_names(claim: PlannedClaim) -> list[str]:
    """The names of a claim's instance type options, in order."""
    return [t.name for t in claim.options]


def pod_names(claim: PlannedClaim) -> set[str]:
    """The names of a claim's pods."""
    return {p.name for p in claim.pods}


def label_values(claim: PlannedClaim, label: str) -> set[str]:
    """The values of `label` across a claim's options (e.g. their families)."""
    return {v for t in claim.options if (v := t.label(label)) is not None}


# -- assertions ------------------------------------------------------------------------------------


def canonical(result: SchedulingResult) -> tuple[Any, ...]:
    """A result as sorted plain values: claims (pool, options, pods), existing placements, unschedulable."""
    claims = sorted(
        (c.nodepool, tuple(t.name for t in c.options), tuple(sorted(p.key for p in c.pods))) for c in result.claims
    )
    existing = sorted((name, tuple(sorted(keys))) for name, keys in result.existing.items())
    return (claims, existing, sorted(result.unschedulable))


def expect_placed(result: SchedulingResult, pods: Iterable[Pod | str]) -> None:
    """Every pod got a place (a new claim, an existing node or an in-flight claim)."""
    placed = placements(result)
    missing = sorted(keys(pods) - placed.keys())
    assert not missing, f"not placed: {missing}; unschedulable: {dict(result.unschedulable)}"


def expect_on_claims(result: SchedulingResult, pods: Iterable[Pod | str]) -> None:
    """Every pod is on a new claim."""
    missing = sorted(k for k in keys(pods) if claim_of(result, k) is None)
    assert not missing, f"not on a new claim: {missing}; unschedulable: {dict(result.unschedulable)}"


def expect_on_node(result: SchedulingResult, pods: Iterable[Pod | str], node_name: str) -> None:
    """Every pod is on the existing node (or in-flight claim) `node_name`."""
    wrong = {k: node_of(result, k) for k in sorted(keys(pods)) if node_of(result, k) != node_name}
    assert not wrong, f"expected on {node_name}, got {wrong}; unschedulable: {dict(result.unschedulable)}"


def expect_unschedulable(
    result: SchedulingResult, pod: Pod | str, *, reason_contains: str | Iterable[str] = ()
) -> None:
    """`pod` is reported unschedulable, not placed, and its reason mentions every given fragment."""
    k = key(pod)
    assert k in result.unschedulable, f"{k} is not unschedulable; placements: {placements(result).get(k)}"
    assert k not in placements(result), f"{k} is unschedulable and placed at {placements(result)[k]}"
    fragments = [reason_contains] if isinstance(reason_contains, str) else list(reason_contains)
    reason = result.unschedulable[k]
    for fragment in fragments:
        assert fragment in reason, f"reason for {k} does not mention {fragment!r}: {reason!r}"


def expect_claims(result: SchedulingResult, count: int) -> None:
    """Exactly `count` new claims."""
    assert len(result.claims) == count, (
        f"expected {count} claims, got {len(result.claims)}: "
        f"{[(type_names(c)[:3], sorted(pod_names(c))) for c in result.claims]}"
    )


def expect_no_exotic_types(result: SchedulingResult) -> None:
    """No claim offers a GPU, accelerator or metal type."""
    for claim in result.claims:
        exotic = [t.name for t in claim.options if t.name.endswith(".metal") or t.capacity.get("nvidia.com/gpu")]
        assert not exotic, f"claim for {sorted(pod_names(claim))} offers {exotic}"


def expect_accounted(inp: SchedulingInput, result: SchedulingResult) -> None:
    """Every input pod is placed exactly once or unschedulable, never both, and no stranger appears."""
    wanted = [p.key for p in inp.pods]
    placed = placements(result)
    twice = {k: where for k, where in placed.items() if len(where) > 1}
    assert not twice, f"placed more than once: {twice}"
    both = sorted(placed.keys() & result.unschedulable.keys())
    assert not both, f"both placed and unschedulable: {both}"
    seen = placed.keys() | result.unschedulable.keys()
    assert sorted(seen) == sorted(wanted), (
        f"missing: {sorted(set(wanted) - seen)}; unexpected: {sorted(seen - set(wanted))}"
    )


def expect_fits(result: SchedulingResult, inp: SchedulingInput | None = None) -> None:
    """Each claim's requests cover its pods and fit every one of its options' allocatable; given the
    input, no existing node is over-committed by the pods placed on it.
    """
    for claim in result.claims:
        assert claim.options, f"claim for {sorted(pod_names(claim))} has no options"
        pods_total = _sum(p.requests for p in claim.pods)
        assert pods_total.fits_in(claim.requests), f"claim requests {claim.requests} < its pods' {pods_total}"
        for option in claim.options:
            assert claim.requests.fits_in(option.allocatable), (
                f"{option.name} ({option.allocatable.format()}) cannot hold claim requests {claim.requests.format()} "
                f"for {sorted(pod_names(claim))}"
            )
    if inp is None:
        return
    by_key = {p.key: p for p in inp.pods}
    bound: dict[str, Resources] = {}
    for p in inp.bound_pods:
        if p.node_name and not p.terminal:
            bound[p.node_name] = bound.get(p.node_name, Resources()) + p.requests
    for n in inp.nodes:
        placed = _sum(by_key[k].requests for k in result.existing.get(n.name, ()))
        load = bound.get(n.name, Resources()) + placed
        assert load.fits_in(n.allocatable), f"node {n.name} over-committed: {load.format()} > {n.allocatable.format()}"


def expect_within_limits(inp: SchedulingInput, result: SchedulingResult) -> None:
    """Per pool with claims: used + sum over its claims of the largest capacity among each claim's
    options, and one node per claim, <= limits (a pool already over its limits may launch nothing).
    """
    for pc in inp.pools:
        limits = pc.nodepool.limits
        claims = [c for c in result.claims if c.nodepool == pc.nodepool.name]
        if limits is None or not claims:
            continue
        total = Resources(inp.used.get(pc.nodepool.name, Resources()))
        for claim in claims:
            peak: dict[str, int] = {}
            for option in claim.options:
                for name, value in option.capacity.items():
                    peak[name] = max(peak.get(name, 0), value)
            total = total + peak + {"nodes": 1000}  # limits.nodes: each claim is one node
        over = {n: (total[n], limits[n]) for n in limits if total[n] > limits[n]}
        assert not over, f"nodepool {pc.nodepool.name} exceeds its limits (pessimistic): {over}"


def expect_tolerated(inp: SchedulingInput, result: SchedulingResult) -> None:
    """Every placed pod tolerates the NoSchedule/NoExecute taints of where it went: its claim's
    NodePool, or its existing node (startup and not-ready taints aside).
    """
    by_key = {p.key: p for p in inp.pods}
    pool_taints = {pc.nodepool.name: pc.nodepool.taints for pc in inp.pools}
    node_taints = {n.name: tuple(t for t in n.taints if t.key not in _TRANSIENT_TAINTS) for n in inp.nodes}
    wrong: list[str] = []
    for claim in result.claims:
        for p in claim.pods:
            wrong += [
                f"{p.key} on a {claim.nodepool} claim: {t}"
                for t in untolerated(p.tolerations, pool_taints[claim.nodepool])
            ]
    for name, placed in result.existing.items():
        for k in placed:
            wrong += [f"{k} on {name}: {t}" for t in untolerated(by_key[k].tolerations, node_taints.get(name, ()))]
    assert not wrong, f"pods placed despite taints they do not tolerate: {wrong}"


_TRANSIENT_TAINTS = frozenset(
    {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.cloudprovider.kubernetes.io/uninitialized"}
)


def _sum(items: Iterable[Mapping[str, int]]) -> Resources:
    total = Resources()
    for r in items:
        total = total + r
    return total
