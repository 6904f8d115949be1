"""Drift by image through the consolidator: a node booted from an AMI its EC2NodeClass no longer
resolves to (a new `al2023@latest` release, a changed `amiSelectorTerms`) is replaced, as
Karpenter's `Drifted` does; one whose AMI still resolves, or whose NodeClass is unknown, is kept.

The world of tests/controllers/test_disruption.py (in-memory cluster, fake cloud, virtual time);
the consolidator is given what the EC2 adapter's `image_ids` would answer (tested against moto in
tests/adapters/aws/test_ec2_standby.py), as the Lambda's assembly gives it.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from nodewright.model.nodepool import Budget, Disruption
from tests.builders import node_pool
from tests.controllers.test_disruption import ConsolidationWorld

# Only m5.4xlarge on-demand, WhenEmpty: consolidation has nothing to do, so only drift can act.
ONE_TYPE = node_pool(
    requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.4xlarge"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    ],
    disruption=Disruption("WhenEmpty", None, (Budget(nodes="100%"),)),
)


def booted_from(world: ConsolidationWorld, image: str) -> None:
    for claim in world.store.claims():
        world.store.save_claim(claim.with_changes(image_id=image))


def test_a_node_booted_from_an_ami_its_nodeclass_no_longer_resolves_to_is_replaced() -> None:
    world = ConsolidationWorld(pools=(ONE_TYPE,), images={"default": frozenset({"ami-new"})})
    world.node_with("n0", 26, capacity_type="on-demand")
    booted_from(world, "ami-old")

    report = world.run(900)

    assert len(report["completed"]) == 1  # type: ignore[arg-type]
    assert world.cluster.get_node("n0") is None
    launched = world.cloud.calls_to("launch")
    assert len(launched) == 1
    [decided] = world.observer.of("disruption")
    assert decided["method"] == "drift"
    assert decided["candidates"] == ["n0"]
    assert "EC2NodeClass default no longer resolves to ami-old (now ami-new)" in str(decided["detail"])
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())


@pytest.mark.parametrize(
    "images",
    [
        {"default": frozenset({"ami-old", "ami-arm"})},  # still resolves (one of the variants)
        {"other": frozenset({"ami-new"})},  # its NodeClass did not resolve: unknown
        {},  # nothing resolved (a lookup error): unknown
        None,  # no images given (a consolidator wired without them)
    ],
)
def test_a_node_whose_ami_still_resolves_or_is_unknown_is_kept(images: Mapping[str, frozenset[str]] | None) -> None:
    world = ConsolidationWorld(pools=(ONE_TYPE,), images=images)
    world.node_with("n0", 26, capacity_type="on-demand")
    booted_from(world, "ami-old")

    report = world.run(300)

    assert report["completed"] == []
    assert world.cluster.get_node("n0") is not None
    assert world.cloud.calls_to("launch") == []
