"""The consolidator's replacement options for a move that removes several spot nodes, against the
in-memory cluster and the fake cloud (`engine/disruption/consolidation.py`): the spot replacement
is launched among the cheapest 15 options that hold its pods, as Karpenter launches a single spot
node's replacement, and never as a type as dear as a candidate of that type (Karpenter's
filterOutSameType), so whichever type CreateFleet picks, the next pass does not re-pack it.
"""

from __future__ import annotations

from bench.harness.cluster_actors import running_node
from nodewright.model.nodepool import Budget, Disruption
from tests.builders import instance_type, node_pool, pod
from tests.controllers.test_disruption import ConsolidationWorld
from tests.controllers.test_interruption import START, ZONE
from tests.controllers.test_provisioning import TYPES

# Budgets that let one pass take both nodes (the default 10% takes one of two).
ANY_NUMBER = Disruption("WhenEmptyOrUnderutilized", 0.0, (Budget(nodes="100%"),))
# Twenty more 4-cpu types, spot $0.081-0.100/h: with m5.xlarge ($0.08/h) and m5.4xlarge
# ($0.32/h), 22 types hold the pods of two nodes of $0.32/h for less than those cost.
MORE = tuple(
    instance_type(f"x{i}.xlarge", cpu="4", memory="16Gi", pods=58, price=0.2, spot_price=round(0.081 + i * 0.001, 3))
    for i in range(20)
)


def test_two_spot_nodes_replaced_by_one_launch_among_the_cheapest_15_types() -> None:
    world = ConsolidationWorld(pools=(node_pool(disruption=ANY_NUMBER),), types=TYPES + MORE)
    for name in ("a", "b"):
        world.spot_node(name, pods=3)  # m5.4xlarge spot, $0.32/h, 1.5 cpu of pods

    world.run(180)

    launches = [c.request for c in world.cloud.calls_to("launch") if c.request is not None]
    assert len(launches) == 1
    sent = [it.name for it in launches[0].options]
    # The cheapest 15 that hold 3 cpu of pods (an m5.large does not), not all 22 cheaper types.
    assert sent == ["m5.xlarge", *(f"x{i}.xlarge" for i in range(14))]
    assert world.cluster.get_node("a") is None
    assert world.cluster.get_node("b") is None
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())


def test_a_replacement_is_never_launched_as_dear_as_a_candidate_of_its_own_type() -> None:
    # An m5.4xlarge ($0.32/h) and an x5.xlarge ($0.086/h), 1.5 cpu of pods each, go for one
    # 4-cpu node. The x5.xlarge could hold every pod itself, so no option may cost $0.086/h or
    # more: keeping it and moving the other's pods would do as well with fewer pods moved.
    world = ConsolidationWorld(pools=(node_pool(disruption=ANY_NUMBER),), types=TYPES + MORE)
    world.spot_node("a", pods=3)
    running_node(
        world.cluster,
        world.cloud,
        world.store,
        world.types,
        name="b",
        instance_type="x5.xlarge",
        zone=ZONE,
        capacity_type="spot",
        launched_at=START - 3600,
        claim_pods=tuple(f"default/web-b-{i}" for i in range(3)),
    )
    for i in range(3):
        world.cluster.bind(
            world.cluster.add_pod(pod(f"web-b-{i}", cpu="500m", memory="1Gi", labels={"app": "web"})), "b"
        )

    world.run(180)

    launches = [c.request for c in world.cloud.calls_to("launch") if c.request is not None]
    assert len(launches) == 1
    assert [it.name for it in launches[0].options] == ["m5.xlarge", *(f"x{i}.xlarge" for i in range(5))]
    assert world.cluster.get_node("a") is None
    assert world.cluster.get_node("b") is None
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())
