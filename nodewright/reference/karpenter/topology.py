"""Bins (existing nodes, in-flight and new claims) and the topology counts Karpenter keeps. Pure.

Follows pkg/controllers/provisioning/scheduling/topology.go and topologygroup.go: counts of
selected pods per domain per (kind, group); spread picks the lowest-count domain that keeps the
skew, affinity the domains holding a match (or bootstraps one), anti-affinity the domains without
one, and pods selected by a placed pod's anti-affinity avoid its domains (inverse groups).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.engine.scheduling.topology import Group, term_group
from nodewright.model import labels as wk
from nodewright.model.pod import Pod, SpreadConstraint
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Taint
from nodewright.reference.karpenter.pods import AFFINITY, ANTI, SPREAD, PodState, Vector, View
from nodewright.reference.karpenter.pools import IntArray, Pool


@dataclass(slots=True, eq=False)
class Bin:
    name: str
    kind: str  # "node" (existing or in-flight, fixed capacity) or "claim" (this pass)
    requirements: Requirements
    taints: tuple[Taint, ...]
    used: list[int]
    pool: Pool | None = None
    labels: Mapping[str, str] | None = None
    free: list[int] | None = None  # nodes: what is left
    types: IntArray | None = None  # claims: indices into pool.types still possible
    ceiling: Vector = ()  # claims: per-resource max allocatable over `types` (a quick reject)
    pods: list[Pod] = field(default_factory=list)

    def domains(self, key: str, registered: Sequence[str], reqs: Requirements | None = None) -> list[str]:
        """Every value this bin could still take for `key` (under `reqs`, default its own)."""
        if key == wk.HOSTNAME:
            return [self.name]
        if self.labels is not None:
            value = self.labels.get(key)
            return [value] if value is not None else []
        req = (self.requirements if reqs is None else reqs).get(key)
        if req is None:
            return list(registered)
        return [d for d in registered if req.has(d)] if req.complement else sorted(req.values)


# -- topology ---------------------------------------------------------------------------------------


class Topology:
    """Per-domain counts of selected pods, per (kind, group), as Karpenter's TopologyGroups keep them."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, Group], dict[str, int]] = {}
        self.totals: dict[tuple[str, Group], int] = {}
        # Inverse anti-affinity: a term's group -> domains holding a pod that owns the term.
        self.owners: dict[Group, set[str]] = {}
        self.domains: dict[str, list[str]] = {}
        self._selected: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[str, Group]]] = {}
        self._inverse: dict[tuple[str, tuple[tuple[str, str], ...]], list[Group]] = {}
        # Per view (by id; views live as long as the scheduler): its hostname checks, bound to the counts.
        self._host: dict[int, list[tuple[dict[str, int], str, tuple[str, Group], int, bool]]] = {}

    def track(self, kind: str, group: Group) -> None:
        if (kind, group) not in self.counts:
            self.counts[(kind, group)] = {}
            self.totals[(kind, group)] = 0

    def selected(self, pod: Pod) -> list[tuple[str, Group]]:
        key = (pod.namespace, tuple(sorted(pod.labels.items())))
        hit = self._selected.get(key)
        if hit is None:
            hit = [kg for kg in self.counts if kg[1].selects(pod.namespace, pod.labels)]
            self._selected[key] = hit
        return hit

    def inverse(self, pod: Pod) -> list[Group]:
        key = (pod.namespace, tuple(sorted(pod.labels.items())))
        hit = self._inverse.get(key)
        if hit is None:
            hit = [g for g in self.owners if g.selects(pod.namespace, pod.labels)]
            self._inverse[key] = hit
        return hit

    def record(self, pod: Pod, view: View | None, b: Bin) -> None:
        for kind, group in self.selected(pod):
            values = b.domains(group.key, self.domains.get(group.key, ()))
            if kind != ANTI and len(values) != 1:
                continue  # spread and affinity only count a pod whose domain is decided
            counts = self.counts[(kind, group)]
            for value in values:
                counts[value] = counts.get(value, 0) + 1
                self.totals[(kind, group)] += 1
        terms = view.anti_affinity if view is not None else pod.anti_affinity
        for term in terms:
            group = term_group(term)
            if group not in self.owners:
                self.owners[group] = set()
                self._inverse.clear()
            self.owners[group].update(b.domains(term.topology_key, self.domains.get(term.topology_key, ())))

    def hostname_ok(self, state: PodState, b: Bin) -> bool:
        """The hostname-keyed checks alone (a cheap early reject; `requirements` repeats them)."""
        view = state.view
        checks = self._host.get(id(view))
        if checks is None:
            checks = self._host[id(view)] = [
                (
                    self.counts[(kind, group)],
                    kind,
                    (kind, group),
                    c.max_skew if isinstance(c, SpreadConstraint) else 0,
                    self_match,
                )
                for kind, group, c, self_match in view.constraints
                if c.topology_key == wk.HOSTNAME
            ]
        for counts, kind, total_key, max_skew, self_match in checks:
            here = counts.get(b.name, 0)
            if kind == SPREAD:
                if here + self_match > max_skew:
                    return False
            elif kind == AFFINITY:
                if here == 0 and (self.totals[total_key] > 0 or not self_match):
                    return False
            elif here:
                return False
        return True

    def requirements(self, state: PodState, b: Bin, reqs: Requirements) -> tuple[dict[str, list[str]] | None, str]:
        """Karpenter's Topology.AddRequirements for one pod on one bin.

        Returns the allowed domains per non-hostname key (to add to the bin's requirements), or
        None and why the pod cannot go there.
        """
        pod, view = state.pod, state.view
        allowed: dict[str, list[str]] = {}
        for kind, group, c, self_match in view.constraints:
            counts = self.counts[(kind, group)]
            key = c.topology_key
            if key == wk.HOSTNAME:
                here = counts.get(b.name, 0)
                if isinstance(c, SpreadConstraint):
                    ok = here + self_match <= c.max_skew
                elif kind == AFFINITY:
                    ok = here > 0 or (self.totals[(kind, group)] == 0 and self_match)
                else:
                    ok = here == 0
                if not ok:
                    return None, f"{kind} on {key}"
                continue
            registered = self.domains.get(key, [])
            pod_req = view.strict.get(key)
            pod_domains = [d for d in registered if pod_req is None or pod_req.has(d)]
            node = set(b.domains(key, registered, reqs))
            if isinstance(c, SpreadConstraint):
                options = spread_domain(
                    c, counts, self_match, pod_domains=pod_domains, registered=registered, node=node
                )
            elif kind == AFFINITY:
                options = [d for d in pod_domains if counts.get(d, 0) > 0]
                if not options and self_match:
                    # Bootstrap: prefer a domain the bin is already in, else the first the pod allows.
                    options = [d for d in pod_domains if d in node][:1] + pod_domains[:1]
            else:
                options = [d for d in pod_domains if counts.get(d, 0) == 0]
            kept = [d for d in options if d in node]
            if key in allowed:
                kept = [d for d in kept if d in allowed[key]]
            if not kept:
                return None, f"{kind} on {key}"
            allowed[key] = kept
        for group in self.inverse(pod):
            forbidden = self.owners[group]
            if group.key == wk.HOSTNAME:
                if b.name in forbidden:
                    return None, "anti-affinity of a placed pod on hostname"
                continue
            registered = self.domains.get(group.key, [])
            kept = [d for d in allowed.get(group.key, b.domains(group.key, registered, reqs)) if d not in forbidden]
            if not kept:
                return None, f"anti-affinity of a placed pod on {group.key}"
            allowed[group.key] = kept
        return allowed, ""


def spread_domain(
    c: SpreadConstraint,
    counts: Mapping[str, int],
    self_match: bool,
    *,
    pod_domains: Sequence[str],
    registered: Sequence[str],
    node: set[str],
) -> list[str]:
    """nextDomainTopologySpread: the lowest-count domain of the bin's that keeps skew, or none."""
    floor = min((counts.get(d, 0) for d in pod_domains), default=0)
    if c.min_domains is not None and len(pod_domains) < c.min_domains:
        floor = 0
    best: str | None = None
    best_count = 1 << 62
    for d in registered:
        if d not in node:
            continue
        count = counts.get(d, 0) + self_match
        if count - floor <= c.max_skew and count < best_count:
            best, best_count = d, count
    return [best] if best is not None else []
