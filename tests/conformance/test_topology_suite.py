"""Behaviours of Karpenter's topology suite (kubernetes-sigs/karpenter,
pkg/controllers/provisioning/scheduling/topology_test.go): spread and pod (anti-)affinity over
zones, hostnames, capacity types and NodePool labels, as manifests through `solve()` and
`nodewright plan` (see `harness.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodewright.model import labels as wk
from tests.conformance.harness import (
    Case,
    Expectation,
    Outcome,
    cases_of,
    check,
    deployment,
    node,
    nodepool,
    pod,
    req,
    spread,
    taint,
    toleration,
)

RACK = "example.com/rack"


def skew(key: str, expected: list[int], pending: int | None = None) -> Expectation:
    def expect(o: Outcome) -> None:
        assert o.skew(key, "web") == sorted(expected), (o.skew(key, "web"), o.pending)
        if pending is not None:
            assert len([p for p in o.pending if p.startswith("web")]) == pending, o.pending

    return expect


POOL = nodepool()
TWO_ZONES = nodepool(requirements=[req(wk.ZONE, "In", "us-east-1a", "us-east-1b")])
ONE_ZONE = nodepool(requirements=[req(wk.ZONE, "In", "us-east-1a")])
RACKS = nodepool(requirements=[req(RACK, "In", "r1", "r2", "r3")])


def web(replicas: int, *constraints: dict[str, Any], cpu: str = "1100m", **spec: Any) -> dict[str, Any]:
    """The `web` Deployment: `replicas` pods of 1.1 cpu (one per small node) with these spreads."""
    return deployment("web", replicas, cpu=cpu, spread=list(constraints), **spec)


ZONAL = [
    Case("zone-spread-4", "zonal: 4 pods balance 1/1/2", (POOL, web(4, spread())), skew(wk.ZONE, [1, 1, 2])),
    Case("zone-spread-6", "zonal: 6 pods balance 2/2/2", (POOL, web(6, spread())), skew(wk.ZONE, [2, 2, 2])),
    Case(
        "zone-spread-pool-subset",
        "zonal: a NodePool's zone subset is the domain universe (2/2)",
        (TWO_ZONES, web(4, spread())),
        skew(wk.ZONE, [2, 2]),
    ),
    Case(
        "zone-spread-pool-zone-label",
        "zonal: a NodePool whose template labels one zone puts every pod there",
        (nodepool(labels={wk.ZONE: "us-east-1a"}), web(4, spread())),
        skew(wk.ZONE, [4]),
    ),
    Case(
        "zone-spread-existing-pod-unlaunchable-zone",
        "zonal: an existing pod in a zone the NodePool cannot launch in still counts (1/2/2, rest pending)",
        (
            TWO_ZONES,
            node("n1", zone="us-east-1c", cpu="1"),
            pod("web-old", labels={"app": "web"}, cpu="1", node_name="n1"),
            web(6, spread()),
        ),
        lambda o: o.skew(wk.ZONE, "web") == [1, 2, 2] or (o.skew(wk.ZONE, "web"), o.pending),
    ),
    Case(
        "zone-spread-one-zone-universe",
        "zonal: with one zone in the universe, every pod goes there (the minimum is that zone's count)",
        (ONE_ZONE, web(10, spread(skew=5))),
        skew(wk.ZONE, [10], pending=0),
    ),
    Case(
        "zone-spread-max-skew-5-existing-pods",
        "zonal: existing pods in two zones bound a single-zone pool to their minimum plus maxSkew (1/1/6)",
        (
            nodepool(requirements=[req(wk.ZONE, "In", "us-east-1c")]),
            node("n1", zone="us-east-1a", cpu="1"),
            node("n2", zone="us-east-1b", cpu="1"),
            pod("web-a", labels={"app": "web"}, cpu="1", node_name="n1"),
            pod("web-b", labels={"app": "web"}, cpu="1", node_name="n2"),
            web(10, spread(skew=5)),
        ),
        skew(wk.ZONE, [1, 1, 6], pending=4),
    ),
    Case(
        "zone-spread-schedule-anyway",
        "zonal: ScheduleAnyway never leaves pods pending",
        (ONE_ZONE, web(6, spread(hard=False))),
        lambda o: not o.pending,
    ),
    Case(
        "zone-spread-min-domains",
        "zonal: minDomains above the domains there are limits each to maxSkew",
        (TWO_ZONES, web(6, spread(minDomains=3))),
        skew(wk.ZONE, [1, 1], pending=4),
    ),
    Case(
        "zone-spread-preference-does-not-shrink-the-domains",
        "zonal: a preferred zone affinity never removes a zone from a hard spread (2/2/2)",
        (
            POOL,
            web(6, spread(), preferred=[(10, [req(wk.ZONE, "In", "us-east-1a", "us-east-1b")])]),
        ),
        skew(wk.ZONE, [2, 2, 2]),
    ),
    Case(
        "zone-spread-required-affinity-honoured",
        "zonal: with nodeAffinityPolicy Honor, required zone affinity narrows the domains (3/3)",
        (POOL, web(6, spread(), required=[[req(wk.ZONE, "In", "us-east-1a", "us-east-1b")]])),
        skew(wk.ZONE, [3, 3]),
    ),
    Case(
        "zone-spread-taints-policy-honor",
        "zonal: nodeTaintsPolicy Honor leaves a tainted node's zone out of the count",
        (
            POOL,
            node("n1", zone="us-east-1c", taints=[taint("dedicated")]),
            pod("web-old", labels={"app": "web"}, node_name="n1", tolerations=[toleration("dedicated")]),
            web(4, spread(nodeTaintsPolicy="Honor")),
        ),
        lambda o: not o.pending,
    ),
    Case(
        "zone-spread-other-selector",
        "zonal: a spread counting other pods still places its own",
        (POOL, deployment("api", 3, spread=[spread(app="web")])),
        lambda o: not o.pending,
    ),
]

HOSTNAME = [
    Case(
        "hostname-spread-skew-1",
        "hostname: maxSkew 1 puts each pod on its own node",
        (POOL, web(4, spread(wk.HOSTNAME), cpu="100m")),
        skew(wk.HOSTNAME, [1, 1, 1, 1]),
    ),
    Case(
        "hostname-spread-skew-2",
        "hostname: maxSkew 2 puts at most two pods per node",
        (POOL, web(4, spread(wk.HOSTNAME, skew=2), cpu="100m")),
        lambda o: max(o.skew(wk.HOSTNAME, "web")) <= 2 and not o.pending,
    ),
    Case(
        "hostname-and-zone-spread",
        "combined: zone and hostname spread together",
        (POOL, web(6, spread(), spread(wk.HOSTNAME), cpu="100m")),
        lambda o: o.skew(wk.ZONE, "web") == [2, 2, 2] and max(o.skew(wk.HOSTNAME, "web")) == 1,
    ),
]

CAPACITY_TYPE = [
    Case(
        "capacity-type-spread",
        "capacity type: 4 pods balance across spot and on-demand",
        (POOL, web(4, spread(wk.CAPACITY_TYPE))),
        skew(wk.CAPACITY_TYPE, [2, 2]),
        differs="Nodewright keeps each claim to one capacity type, as the spread asks anyway",
    ),
    Case(
        "capacity-type-spread-one-allowed",
        "capacity type: a NodePool of on-demand only puts every pod there",
        (nodepool(requirements=[req(wk.CAPACITY_TYPE, "In", "on-demand")]), web(3, spread(wk.CAPACITY_TYPE))),
        skew(wk.CAPACITY_TYPE, [3]),
    ),
    Case(
        "capacity-type-spread-existing-spot",
        "capacity type: an existing spot pod counts, the next pods go on-demand first",
        (
            POOL,
            node("n1", capacity_type="spot", cpu="1"),
            pod("web-old", labels={"app": "web"}, cpu="1", node_name="n1"),
            web(3, spread(wk.CAPACITY_TYPE)),
        ),
        skew(wk.CAPACITY_TYPE, [2, 2]),
    ),
]

POOL_LABELS = [
    Case(
        "spread-over-pool-requirement-label",
        "NodePool labels: spread over a key the NodePool's requirement lists (rack) balances racks",
        (RACKS, web(6, spread(RACK))),
        skew(RACK, [2, 2, 2]),
    ),
    Case(
        "spread-over-template-labels-of-pools",
        "NodePool labels: spread over a template label of two NodePools balances them",
        (
            nodepool("gold", labels={"example.com/tier": "gold"}),
            nodepool("silver", labels={"example.com/tier": "silver"}),
            web(4, spread("example.com/tier")),
        ),
        skew("example.com/tier", [2, 2]),
    ),
    Case(
        "pool-limited-to-zero-is-a-domain",
        "NodePool limits: a NodePool at its limit is still a domain; pods past maxSkew stay pending",
        (
            nodepool("a", requirements=[req(wk.ZONE, "In", "us-east-1a")]),
            nodepool("b", requirements=[req(wk.ZONE, "In", "us-east-1b")]),
            nodepool("c", requirements=[req(wk.ZONE, "In", "us-east-1c")], limits={"cpu": "0"}),
            web(4, spread()),
        ),
        lambda o: o.skew(wk.ZONE, "web") == [1, 1] and len(o.pending) == 2,
    ),
]

AFFINITY = [
    Case(
        "zone-anti-affinity-one-per-zone",
        "anti-affinity: zone anti-affinity to itself places one pod per zone, the rest pending",
        (POOL, deployment("web", 4, anti=[{"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": wk.ZONE}])),
        skew(wk.ZONE, [1, 1, 1], pending=1),
    ),
    Case(
        "ten-followers-of-one-target",
        "affinity: ten followers named before their target all join its zone",
        (
            POOL,
            deployment(
                "a-followers",
                10,
                affinity=[{"labelSelector": {"matchLabels": {"app": "z-target"}}, "topologyKey": wk.ZONE}],
            ),
            deployment("z-target", 1),
        ),
        lambda o: not o.pending and len(o.count_by(wk.ZONE)) == 1,
    ),
]


@pytest.mark.parametrize("case", cases_of(ZONAL, HOSTNAME, CAPACITY_TYPE, POOL_LABELS, AFFINITY))
def test_topology_behaviour(case: Case, tmp_path: Path) -> None:
    check(case, tmp_path)
