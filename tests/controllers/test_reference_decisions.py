"""The consolidator carries out the Karpenter reference's decisions (controllers/algorithms.py).

Real: the consolidator and provisioner shells over the in-memory cluster, cloud and state store
(tests.controllers.test_disruption's world), deciding with `nodewright.reference.karpenter`.
"""

from __future__ import annotations

from bench.harness.cluster_actors import pdb
from nodewright.controllers.algorithms import consolidator_options_for, decisions_for
from nodewright.controllers.consolidationoptions import ConsolidatorOptions
from nodewright.reference.karpenter.disruption import Disruption
from tests.controllers.test_disruption import ConsolidationWorld


def test_the_karpenter_reference_consolidates_two_nodes_into_one_through_the_shell() -> None:
    world = ConsolidationWorld()
    world.node_with("a", 4)
    world.node_with("b", 2)
    world.cluster.add_pdb(pdb("web", "web", min_available=5))
    consolidator = world.consolidator()
    consolidator.decisions = decisions_for("karpenter")
    assert isinstance(consolidator.decisions, Disruption)
    consolidator.run(world.clock.now() + 300)
    world.tick(5)
    assert world.cluster.lost_pods() == []
    assert len(world.cluster.nodes()) == 1
    assert not world.cluster.changes_of("pdb_violated")
    assert all(p.node_name for p in world.workload_pods())


def test_reference_modes_keep_what_the_launch_got() -> None:
    options = ConsolidatorOptions()
    assert consolidator_options_for("nodewright", options).roll_back_dearer
    assert not consolidator_options_for("karpenter", options).roll_back_dearer
    assert not consolidator_options_for("automode", options).roll_back_dearer
