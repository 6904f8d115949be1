"""Topology bookkeeping for spread constraints and pod (anti-)affinity. Pure.

Role: count, per topology domain (a zone, a capacity type, a hostname...), the pods each selector
matches, and answer two questions for a class of identical pods:

* `split()`: for a zone- (or other non-hostname-) keyed constraint, into which domains may the
  class's pods go, and how many into each? Spread water-fills the least-populated domains (which
  never breaks maxSkew); affinity narrows to domains that already hold matching pods (or picks one
  when the pods match themselves); anti-affinity excludes domains holding matching pods.
* `bin_limit()`: for hostname-keyed constraints, how many of the class's pods may one node take?

Counting follows kube-scheduler: a spread constraint's skew is `count(domain) + self - min`, where
`min` is over eligible domains and is 0 while fewer than `minDomains` domains exist. For hostname
domains a new node is always possible, so `min` is 0 and a node may hold at most `maxSkew`
self-matching pods. Existing pods' required anti-affinity is honoured against new pods too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nodewright.engine.scheduling.groupindex import GroupIndex
from nodewright.model import labels as wk
from nodewright.model.pod import AffinityTerm, Pod, SpreadConstraint
from nodewright.model.selectors import LabelSelector

UNLIMITED = 1 << 60


@dataclass(frozen=True, slots=True)
class Group:
    """Pods counted together: those matching `selector` in `namespaces` (None: all namespaces)."""

    key: str
    selector: LabelSelector
    namespaces: frozenset[str] | None

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """True when a pod in `namespace` with `labels` is counted by this group."""
        return (self.namespaces is None or namespace in self.namespaces) and self.selector.matches(labels)


def spread_group(constraint: SpreadConstraint, namespace: str) -> Group:
    """The group a spread constraint counts (its own namespace only, as kube-scheduler does)."""
    return Group(constraint.topology_key, constraint.selector, frozenset((namespace,)))


def term_group(term: AffinityTerm) -> Group:
    """The group an affinity or anti-affinity term counts."""
    return Group(term.topology_key, term.selector, None if term.all_namespaces else term.namespaces)


@dataclass(frozen=True, slots=True)
class Split:
    """The outcome of `Topology.split`: pods per domain, or a reason nothing could be placed."""

    parts: tuple[tuple[tuple[str, ...], int], ...]  # (allowed domains, pod count)
    reason: str = ""


class Topology:
    """Live counts of pods per group and domain, updated as the solver places pods."""

    def __init__(self) -> None:
        self._counts: dict[Group, dict[str, int]] = {}
        self._totals: dict[Group, int] = {}
        # Required anti-affinity terms of placed pods: group -> domains holding such a pod.
        self._anti: dict[Group, set[str]] = {}
        # The same groups filed by the label values their selectors require (`GroupIndex`): which
        # groups select a pod is a lookup, not a scan of every group.
        self._counted: GroupIndex[Group] = GroupIndex()
        self._anti_groups: GroupIndex[Group] = GroupIndex()
        # `_anti_selecting`, by pod identity: (the pod, how many groups there were, the answer).
        self._anti_memo: dict[tuple[int, str], tuple[Pod, int, list[Group]]] = {}
        self._anti_keys: set[str] = set()
        self._selected_cache: dict[tuple[str, tuple[tuple[str, str], ...]], list[Group]] = {}
        # The same by pod identity (a class records its sample at every placement); holds the pod.
        self._selected_by_pod: dict[int, tuple[Pod, list[Group]]] = {}

    # -- registration --------------------------------------------------------------------------

    def track(self, groups: Iterable[Group]) -> None:
        """Start counting these groups (before any pod is recorded)."""
        for group in groups:
            if group not in self._counts:
                self._counts[group] = defaultdict(int)
                self._totals[group] = 0
                self._counted.add(group)
        self._selected_cache.clear()
        self._selected_by_pod.clear()

    def record(self, pod: Pod, domains: Mapping[str, str | None], count: int = 1) -> None:
        """Count `count` pods like `pod` placed where `domains` (topology key -> value) says."""
        known = self._selected_by_pod.get(id(pod))
        if known is not None and known[0] is pod:
            groups = known[1]
        else:
            cache_key = (pod.namespace, tuple(sorted(pod.labels.items())))
            cached = self._selected_cache.get(cache_key)
            if cached is None:
                cached = self._selected_cache[cache_key] = self._counted.selecting(pod.namespace, pod.labels)
            groups = cached
            self._selected_by_pod[id(pod)] = (pod, groups)
        for group in groups:
            domain = domains.get(group.key)
            if domain is not None:
                self._counts[group][domain] += count
                self._totals[group] += count
        for term in pod.anti_affinity:
            domain = domains.get(term.topology_key)
            if domain is not None:
                group = term_group(term)
                self._anti.setdefault(group, set()).add(domain)
                if self._anti_groups.add(group):
                    self._anti_keys.add(group.key)

    # -- questions -----------------------------------------------------------------------------

    def count(self, group: Group, domain: str) -> int:
        """Pods of `group` in `domain`."""
        return self._counts[group].get(domain, 0)

    def tracked(self) -> list[Group]:
        """The groups being counted."""
        return list(self._counts)

    def counts_on(self, pod: Pod, key: str) -> bool:
        """True when some tracked group or placed anti-affinity term keyed on `key` counts `pod`."""
        counted = self._counted.selecting(pod.namespace, pod.labels)
        return any(g.key == key for g in (*counted, *self._anti_groups.selecting(pod.namespace, pod.labels)))

    def anti_keys(self) -> list[str]:
        """The topology keys some placed pod's required anti-affinity uses."""
        return sorted(self._anti_keys)

    def forbidden(self, pod: Pod, key: str) -> set[str]:
        """Domains of `key` where placed pods' required anti-affinity forbids `pod`."""
        out: set[str] = set()
        for group in self._anti_groups.selecting(pod.namespace, pod.labels):
            if group.key == key:
                out |= self._anti[group]
        return out

    def forbids(self, pod: Pod, key: str, domain: str) -> bool:
        """True when `domain` is one of `forbidden(pod, key)`, asked without building the set:
        a hostname-keyed anti-affinity term of 20,000 placed pods forbids 20,000 hosts, and
        `bin_limit` asks about one host per claim.
        """
        groups = self._anti_selecting(pod, key)
        if not groups:
            return False
        anti = self._anti
        return any(domain in anti[group] for group in groups)

    def _anti_selecting(self, pod: Pod, key: str) -> list[Group]:
        """The placed anti-affinity groups keyed on `key` that select `pod`, in insertion order.
        Remembered by the pod's identity (a class asks with its sample, claim after claim) until
        a group is added: groups are only ever added, so their number dates the answer.
        """
        version = len(self._anti_groups)
        memo_key = (id(pod), key)
        hit = self._anti_memo.get(memo_key)
        if hit is not None and hit[0] is pod and hit[1] == version:
            return hit[2]
        groups = [g for g in self._anti_groups.selecting(pod.namespace, pod.labels) if g.key == key]
        self._anti_memo[memo_key] = (pod, version, groups)
        return groups

    def split(
        self,
        pod: Pod,
        count: int,
        constraint: SpreadConstraint | AffinityTerm,
        anti: bool,
        domains: Iterable[str],
        *,
        counted: Iterable[str] = (),
    ) -> Split:
        """Decide how `count` pods like `pod` may be spread over `domains` for one constraint.

        For a spread, `counted` are more domains the skew is measured against that take no pod
        here (`domains.counted_domains`: an existing node's zone no NodePool launches in, a
        NodePool at its limits, a zone a preference avoids).
        """
        eligible = sorted(set(domains) - self.forbidden(pod, constraint.topology_key))
        if not eligible:
            return Split((), f"no {constraint.topology_key} domain is eligible")
        if isinstance(constraint, SpreadConstraint):
            return self._spread(pod, count, constraint, eligible, sorted(set(counted) - set(eligible)))
        group = term_group(constraint)
        self_match = group.selects(pod.namespace, pod.labels)
        counts = self._counts[group]
        if anti:
            free = [d for d in eligible if counts.get(d, 0) == 0]
            if not free:
                return Split((), f"anti-affinity: every {constraint.topology_key} already holds a matching pod")
            if self_match:
                return Split(tuple(((d,), 1) for d in free[:count]))
            return Split(((tuple(free), count),))
        holding = [d for d in eligible if counts.get(d, 0) > 0]
        if holding:
            return Split(((tuple(holding), count),))
        if self._totals[group] == 0 and self_match:
            # The first of pods that attract each other chooses the domain for all of them.
            return Split((((eligible[0],), count),))
        return Split((), f"affinity: no pod matching {_describe(group.selector)} in any {constraint.topology_key}")

    def _spread(
        self, pod: Pod, count: int, constraint: SpreadConstraint, eligible: list[str], others: list[str]
    ) -> Split:
        group = spread_group(constraint, pod.namespace)
        counts = self._counts[group]
        present = {d: counts.get(d, 0) for d in eligible}
        # The domains counted that take no pod here only ever lower the floor.
        fixed_floor = min((counts.get(d, 0) for d in others), default=UNLIMITED)
        too_few = constraint.min_domains is not None and len(eligible) + len(others) < constraint.min_domains
        if not group.selects(pod.namespace, pod.labels):
            floor = 0 if too_few else min(*present.values(), fixed_floor)
            allowed = tuple(d for d in eligible if present[d] - floor <= constraint.max_skew)
            if not allowed:
                return Split((), f"topology spread on {constraint.topology_key}: maxSkew {constraint.max_skew}")
            return Split(((allowed, count),))
        placed: dict[str, int] = dict.fromkeys(eligible, 0)
        for _ in range(count):
            domain = min(eligible, key=lambda d: (present[d], d))
            floor = 0 if too_few else min(*present.values(), fixed_floor)
            if present[domain] + 1 - floor > constraint.max_skew:
                break
            present[domain] += 1
            placed[domain] += 1
        parts = tuple(((d,), n) for d, n in placed.items() if n)
        if not parts:
            return Split((), f"topology spread on {constraint.topology_key}: maxSkew {constraint.max_skew}")
        return Split(parts)

    def bin_limit(
        self,
        pod: Pod,
        spread: Iterable[SpreadConstraint],
        affinity: Iterable[AffinityTerm],
        anti_affinity: Iterable[AffinityTerm],
        hostname: str,
    ) -> int:
        """How many pods like `pod` one node (`hostname`) may take under hostname-keyed constraints."""
        limit = UNLIMITED
        for constraint in spread:
            if constraint.topology_key != wk.HOSTNAME:
                continue
            group = spread_group(constraint, pod.namespace)
            here = self._counts[group].get(hostname, 0)
            if group.selects(pod.namespace, pod.labels):
                limit = min(limit, max(0, constraint.max_skew - here))
            elif here > constraint.max_skew:
                return 0
        for term in affinity:
            if term.topology_key != wk.HOSTNAME:
                continue
            group = term_group(term)
            if self._counts[group].get(hostname, 0) == 0 and (
                self._totals[group] > 0 or not group.selects(pod.namespace, pod.labels)
            ):
                return 0
        for term in anti_affinity:
            if term.topology_key != wk.HOSTNAME:
                continue
            group = term_group(term)
            if self._counts[group].get(hostname, 0) > 0:
                return 0
            if group.selects(pod.namespace, pod.labels):
                limit = min(limit, 1)
        if limit and self.forbids(pod, wk.HOSTNAME, hostname):
            return 0
        return limit


def _describe(selector: LabelSelector) -> str:
    labels = ",".join(f"{k}={v}" for k, v in selector.match_labels)
    return labels or "the selector"
