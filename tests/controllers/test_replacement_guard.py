"""The consolidator's stability guard (replacements must come up cheaper) is consolidation's alone:
a drifted node whose replacement costs what it does is replaced once, not launched and rolled back
at every pass.

Faked: the Kubernetes API (in-memory cluster, kubelet, first-fit scheduler), EC2 (the fake cloud)
and the state table, as in tests/controllers/test_disruption.py; time is virtual. Real: the
consolidator, the disruption engine, the provisioner's launch path.
"""

from __future__ import annotations

from nodewright.model.nodepool import Budget, Disruption
from tests.builders import node_pool
from tests.controllers.test_disruption import ConsolidationWorld

# Only m5.4xlarge on-demand: a drifted node's replacement is its own type at its own price.
ONE_TYPE = node_pool(
    requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.4xlarge"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    ],
    disruption=Disruption("WhenEmpty", None, (Budget(nodes="100%"),)),
    labels={"team": "a"},
)


def test_a_drifted_node_is_replaced_by_its_own_type_once() -> None:
    world = ConsolidationWorld(pools=(ONE_TYPE,))
    world.node_with("n0", 26, capacity_type="on-demand")  # 13 cpu: only a node of its size holds them
    for claim in world.store.claims():
        world.store.save_claim(claim.with_changes(template_hash="0000000000000000"))  # another template
    report = world.run(900)
    assert report["rolled_back"] == {}
    assert len(report["completed"]) == 1  # type: ignore[arg-type]
    assert world.cluster.get_node("n0") is None
    assert len(world.cloud.calls_to("launch")) == 1
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())
