"""Side by side with Karpenter: Nodewright never touches a node or instance it did not launch.

What is real: the shipped migration scenario (examples/scenarios/migrate-from-karpenter.yaml) run
by the simulator, i.e. the provisioner, consolidator and interruption handlers with their real
controllers against moto's EC2 and the in-memory cluster; and the interruption controller fed
every kind of EC2 event about a Karpenter node. What is observed: the cluster's changes log
(cordons, taints, evictions, deletions), the foreign nodes at the end, every pod bound, the
scenario's lost-pod count, and the interruption controller's decision.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nodewright.engine.interruption import REBALANCE, SPOT_INTERRUPTION, STATE_CHANGE
from nodewright.model import labels as wk
from nodewright.model.node import Node
from nodewright.simulator.runner import RunResult, run_scenario
from nodewright.simulator.scenario import ScenarioError, load_scenario
from tests.builders import pod
from tests.controllers.test_interruption import World

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "migrate-from-karpenter.yaml"
TOUCHING = ("node_cordoned", "node_uncordoned", "node_deleted")


@pytest.fixture(scope="module")
def migrated() -> RunResult:
    return run_scenario(load_scenario(SCENARIO), plots=False)


def test_karpenter_nodes_are_left_alone_through_the_hand_over(migrated: RunResult) -> None:
    world = migrated.world
    assert world is not None
    foreign = set(world.foreign_nodes)
    assert len(foreign) == 6
    touched = [c for kind in TOUCHING for c in world.cluster.memory.changes_of(kind) if c.name in foreign]
    assert touched == []
    evicted = [c for c in world.cluster.memory.changes_of("pod_evicted") if c.node in foreign]
    assert evicted == []
    for name in foreign:
        node = world.cluster.get_node(name)
        assert node is not None, f"{name} was deleted"
        assert not node.unschedulable
        assert node.taints == ()
        assert not node.launched_by_nodewright
    # Nodewright did its own job meanwhile: it launched capacity for the new pods.
    assert migrated.summary["nodes_launched"] > 0


def test_the_hand_over_loses_no_pod(migrated: RunResult) -> None:
    world = migrated.world
    assert world is not None
    pods = [p for p in world.cluster.memory.pods() if not p.daemon]
    assert len(pods) == 140
    assert [p.key for p in pods if not p.node_name] == []
    assert world.cluster.memory.lost_pods() == []
    # The pods that were on Karpenter's nodes at the start are still there.
    foreign = set(world.foreign_nodes)
    assert sum(1 for p in pods if p.node_name in foreign) >= 40


def _karpenter_node(world: World, name: str, instance_id: str) -> Node:
    """A node as Karpenter registers it: its NodePool label, no Nodewright label, no claim."""
    node = world.cluster.add_node(
        Node(
            name=name,
            labels={
                wk.NODEPOOL: "default",
                wk.CAPACITY_TYPE: "spot",
                wk.INSTANCE_TYPE: "m5.4xlarge",
                wk.ZONE: "us-east-1a",
            },
            capacity=world.spot_node("ours").capacity,
            allocatable=world.spot_node("ours-2").allocatable,
            provider_id=f"aws:///us-east-1a/{instance_id}",
            ready=True,
        )
    )
    for index in range(3):
        world.cluster.bind(world.cluster.add_pod(pod(f"kp-{index}", cpu="500m", memory="1Gi")), name)
    return node


@pytest.mark.parametrize(
    ("kind", "fields"),
    [(SPOT_INTERRUPTION, {}), (REBALANCE, {}), (STATE_CHANGE, {"state": "stopping"})],
)
def test_interruption_events_about_a_karpenter_node_are_ignored(kind: str, fields: dict[str, str]) -> None:
    # The EventBridge rules match every instance of the account, Karpenter's included.
    world = World()
    _karpenter_node(world, "karpenter-1", "i-0karpenter00000001")
    before = len(world.cluster.changes)

    world.controller.handle(world.message(kind, "i-0karpenter00000001", **fields))

    assert [c for c in world.cluster.changes[before:] if c.name == "karpenter-1" or c.node == "karpenter-1"] == []
    decision = next(d for d in world.observer.decisions if d.get("instance_id") == "i-0karpenter00000001")
    assert str(decision["action"]).startswith("ignored: not a Nodewright instance")


def test_initial_nodes_may_not_carry_nodewright_labels(tmp_path: Path) -> None:
    # The first group claims to be Nodewright's.
    text = SCENARIO.read_text().replace("labels: {karpenter.sh/nodepool:", "labels: {nodewright.io/nodepool:", 1)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("../nodepools/default.yaml", str(SCENARIO.parents[1] / "nodepools" / "default.yaml")))

    with pytest.raises(ScenarioError, match=r"initial_nodes\[0\]\.labels.*nodewright.io/nodepool"):
        load_scenario(bad)


def test_every_node_nodewright_launches_keeps_the_karpenter_node_role(migrated: RunResult) -> None:
    world = migrated.world
    assert world is not None
    roles = world.recorder.node_roles
    assert len(roles) == migrated.summary["nodes_launched"] > 0
    assert set(roles.values()) == {("KarpenterNodeRole-my-cluster",)}


def test_a_node_role_outside_the_deploy_list_is_refused_by_name_and_nothing_launches() -> None:
    scenario = replace(load_scenario(SCENARIO), node_roles=("PaymentsNodeRole",), duration=180.0)
    refused = run_scenario(scenario, plots=False)
    world = refused.world
    assert world is not None

    assert refused.summary["nodes_launched"] == 0
    assert world.recorder.node_roles == {}
    decisions = world.observers["provisioner"].of("nodepool-refused")
    assert decisions
    assert decisions[0]["nodepool"] == "default"
    assert "node role 'KarpenterNodeRole-my-cluster' is not one this deployment may pass" in decisions[0]["reason"]
