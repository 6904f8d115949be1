"""The benchmark workloads: deterministic, and the diverse mix as Karpenter's benchmark builds it."""

from __future__ import annotations

import pytest

from bench.harness.workloads import AFFINITY_LABEL, SPREAD_LABEL, WORKLOADS, diverse
from nodewright.model import labels as wk


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_workloads_are_deterministic_and_exactly_sized(workload: str) -> None:
    first = WORKLOADS[workload](123)
    again = WORKLOADS[workload](123)

    assert len(first) == 123
    assert first == again
    assert len({p.key for p in first}) == 123


def test_diverse_is_five_equal_parts_plus_generic_remainder() -> None:
    pods = diverse(1003)

    zone_spread = [p for p in pods if p.spread and p.spread[0].topology_key == wk.ZONE]
    host_spread = [p for p in pods if p.spread and p.spread[0].topology_key == wk.HOSTNAME]
    affinity = [p for p in pods if p.affinity]
    anti = [p for p in pods if p.anti_affinity]
    generic = [p for p in pods if not (p.spread or p.affinity or p.anti_affinity)]
    assert [len(zone_spread), len(host_spread), len(affinity), len(anti)] == [200, 200, 200, 200]
    assert len(generic) == 203
    assert all(s.max_skew == 1 and s.required for p in zone_spread + host_spread for s in p.spread)
    assert all(p.affinity[0].topology_key == wk.ZONE for p in affinity)
    assert all(p.affinity[0].selects(p.namespace, p.labels) for p in affinity)
    assert all(AFFINITY_LABEL in p.labels for p in affinity)
    assert all(p.labels == {"app": "nginx"} and p.anti_affinity[0].topology_key == wk.HOSTNAME for p in anti)
    assert all(SPREAD_LABEL in p.labels for p in generic + zone_spread + host_spread)


def test_diverse_draws_requests_from_karpenters_sets() -> None:
    pods = diverse(500)

    cpus = {p.requests["cpu"] for p in pods}
    memories = {p.requests["memory"] // (1024 * 1024 * 1000) for p in pods}
    assert cpus == {100, 250, 500, 1000, 1500}
    assert memories == {100, 256, 512, 1024, 2048, 4096}


def test_spread_selectors_are_drawn_independently_of_the_labels() -> None:
    pods = [p for p in diverse(1000) if p.spread]

    self_selecting = sum(p.spread[0].selector.matches(p.labels) for p in pods)
    # Seven values: about one in seven pods selects itself.
    assert 0.05 < self_selecting / len(pods) < 0.3
