"""What blocks a node's disruption comes back from a pass as data (`DisruptionResult.blockers`):
the kind and the names, one test per kind, and the consolidator's Event is chosen from it.

Faked: nothing; each case builds a small cluster (`World`) and runs the real `compute_commands`,
then `disruption_rejected` as the consolidator calls it.
"""

from __future__ import annotations

from nodewright.engine.disruption.types import DisruptionResult
from nodewright.model import labels as wk
from nodewright.model.blocker import BUDGET, DO_NOT_DISRUPT_NODE, DO_NOT_DISRUPT_POD, PDB, STALLED_DRAIN, Blocker
from nodewright.model.event import DISRUPTION_BLOCKED, UNCONSOLIDATABLE, disruption_rejected
from nodewright.model.nodepool import Budget
from nodewright.model.selectors import LabelSelector
from nodewright.model.workloads import PodDisruptionBudget
from tests.engine.disruption.scenario import World, pool

DO_NOT_DISRUPT = {wk.DO_NOT_DISRUPT: "true"}


def blocked(result: DisruptionResult, node: str) -> Blocker:
    """The node's blocker, after checking the Event the consolidator builds from it."""
    event = disruption_rejected(node, result.rejected[node], result.blockers.get(node))
    assert event is not None
    assert (event.reason, event.note) == (DISRUPTION_BLOCKED, result.rejected[node])
    return result.blockers[node]


def test_a_node_annotated_do_not_disrupt_is_blocked_by_itself() -> None:
    world = World()
    world.node("held", "m5.large", annotations=DO_NOT_DISRUPT)

    assert blocked(world.run(), "held") == Blocker(DO_NOT_DISRUPT_NODE, ("held",))


def test_a_pod_annotated_do_not_disrupt_blocks_its_node_by_name() -> None:
    world = World()
    world.node("held", "m5.large")
    (guarded,) = world.put("held", 1, cpu="100m", annotations=DO_NOT_DISRUPT)

    assert blocked(world.run(), "held") == Blocker(DO_NOT_DISRUPT_POD, (guarded.key,))


def test_a_pod_disruption_budget_that_allows_nothing_blocks_by_its_name() -> None:
    world = World()
    world.node("web", "m5.xlarge")
    world.put("web", 2, cpu="100m", labels={"app": "web"})
    world.pdbs.append(PodDisruptionBudget("default", "web", LabelSelector((("app", "web"),)), min_available=2))

    assert blocked(world.run(), "web") == Blocker(PDB, ("default/web",))


def test_pods_two_budgets_select_name_both() -> None:
    world = World()
    world.node("web", "m5.xlarge")
    world.put("web", 2, cpu="100m", labels={"app": "web"})
    selector = LabelSelector((("app", "web"),))
    world.pdbs += [
        PodDisruptionBudget("default", "web", selector, min_available=0),
        PodDisruptionBudget("default", "web-too", selector, min_available=0),
    ]

    assert blocked(world.run(), "web") == Blocker(PDB, ("default/web", "default/web-too"))


def test_a_nodepools_budgets_block_by_the_nodepools_name() -> None:
    world = World(pools=[pool(budgets=(Budget("0"),))])
    world.node("empty", "m5.large")

    assert blocked(world.run(), "empty") == Blocker(BUDGET, ("default",))


def test_a_node_whose_drain_stalled_is_blocked_without_names() -> None:
    world = World()
    world.node("stuck", "m5.xlarge")
    world.put("stuck", 1, cpu="100m")

    assert blocked(world.run(stalled=frozenset({"stuck"})), "stuck") == Blocker(STALLED_DRAIN)


def test_a_node_nothing_blocks_has_no_blocker_and_its_verdict_is_unconsolidatable() -> None:
    world = World(pools=[pool(budgets=(Budget("0", reasons=("Empty", "Drifted")),))])
    world.node("a", "m5.large")
    world.put("a", 1, cpu="100m")
    world.node("b", "m5.large")
    world.put("b", 1, cpu="100m")

    result = world.run(opts={"min_savings": 1000.0})

    assert "a" not in result.blockers
    event = disruption_rejected("a", result.rejected["a"], result.blockers.get("a"))
    assert event is not None
    assert event.reason == UNCONSOLIDATABLE, result.rejected["a"]
