"""The consolidator's replacement options for moves that remove several nodes, against the
in-memory cluster and the fake cloud (`engine/disruption/consolidation.py`): a move never
replaces nodes by a twin of one of them (Karpenter's filterOutSameType), it deletes one instead.
"""

from __future__ import annotations

from bench.harness.cluster_actors import running_node
from nodewright.model.node import Node
from nodewright.model.nodepool import Budget, Disruption
from tests.builders import node_pool, pod
from tests.controllers.test_disruption import ConsolidationWorld
from tests.controllers.test_interruption import START, TYPES, ZONE

# Budgets that let one pass take every node (the default 10% takes one of two).
ANY_NUMBER = Disruption("WhenEmptyOrUnderutilized", 0.0, (Budget(nodes="100%"),))


def spot_node(world: ConsolidationWorld, name: str, instance_type: str, pods: int) -> Node:
    """A spot `instance_type` node of NodePool `default` with `pods` pods of 500m cpu and 1 GiB."""
    node = running_node(
        world.cluster,
        world.cloud,
        world.store,
        TYPES,
        name=name,
        instance_type=instance_type,
        zone=ZONE,
        capacity_type="spot",
        launched_at=START - 3600,
        claim_pods=tuple(f"default/web-{name}-{i}" for i in range(pods)),
    )
    for i in range(pods):
        p = world.cluster.add_pod(pod(f"web-{name}-{i}", cpu="500m", memory="1Gi", labels={"app": "web"}))
        world.cluster.bind(p, name)
    return node


def test_two_half_empty_twins_lose_one_node_not_both_for_a_third_twin() -> None:
    # Two m5.xlarge spot nodes ($0.08/h each) with 1.5 cpu of pods each: together their pods need
    # one m5.xlarge (an m5.large is too small). Replacing both by a new m5.xlarge saves $0.08/h
    # and moves 6 pods; deleting one onto the other saves the same and moves 3.
    world = ConsolidationWorld(pools=(node_pool(disruption=ANY_NUMBER),))
    spot_node(world, "a", "m5.xlarge", 3)
    spot_node(world, "b", "m5.xlarge", 3)

    world.run(180)

    assert len(world.cluster.nodes()) == 1
    assert not world.observer.of("disruption-launched")  # no new node: one of the two is deleted
    assert len(list(world.cluster.changes_of("pod_evicted"))) == 3
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())
