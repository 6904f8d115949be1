"""The consolidator and NodePool limits and weights (`engine/disruption/limits.py`), against the
in-memory cluster and the fake cloud: a spot NodePool at its cpu limit keeps its pods rather than
sending them to a new node of a lower-weight on-demand fallback that never re-packs (`WhenEmpty`).
"""

from __future__ import annotations

import pytest

from nodewright.model.nodepool import Budget, Disruption
from tests.builders import node_pool
from tests.controllers.test_disruption import ConsolidationWorld

SPOT = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]
ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]


def world_with_fallback(
    spot_limit: str, *, fallback_weight: int = 30, fallback_policy: str = "WhenEmpty"
) -> ConsolidationWorld:
    """NodePool `default` (weight 40, spot, cpu limited to `spot_limit`) with one m5.4xlarge spot
    node ($0.32/h, 16 cpu) holding 3 small pods; NodePool `fallback` (on-demand, weight
    `fallback_weight`, `fallback_policy`), where an m5.large ($0.096/h) would hold them.
    """
    world = ConsolidationWorld(
        pools=(
            node_pool("default", requirements=SPOT, limits={"cpu": spot_limit}, weight=40),
            node_pool(
                "fallback",
                requirements=ON_DEMAND,
                weight=fallback_weight,
                disruption=Disruption(fallback_policy, 30.0, (Budget(nodes="30%"),)),
            ),
        )
    )
    world.node_with("big", 3)
    return world


def test_at_its_limit_a_spot_nodepool_does_not_spill_its_pods_to_the_lower_weight_fallback() -> None:
    world = world_with_fallback("16")

    world.run(180)

    assert world.cluster.get_node("big") is not None
    assert [n.name for n in world.cluster.nodes()] == ["big"]
    assert not list(world.cluster.changes_of("pod_evicted"))
    reasons = [str(d["reason"]) for d in world.observer.of("disruption-rejected") if d["node"] == "big"]
    assert any("would leave NodePool default (weight 40, at its cpu limit)" in r and "WhenEmpty" in r for r in reasons)


@pytest.mark.parametrize(
    ("weight", "policy"),
    [(50, "WhenEmpty"), (30, "WhenEmptyOrUnderutilized")],
    ids=["preferred-fallback", "fallback-that-repacks"],
)
def test_at_its_limit_a_nodepool_may_send_its_pods_to_a_preferred_or_repacking_nodepool(
    weight: int, policy: str
) -> None:
    world = world_with_fallback("16", fallback_weight=weight, fallback_policy=policy)

    world.run(180)

    assert world.cluster.get_node("big") is None
    pools = {n.labels.get("karpenter.sh/nodepool") for n in world.cluster.nodes()}
    assert pools == {"fallback"}
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())
