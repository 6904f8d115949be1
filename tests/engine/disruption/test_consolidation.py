"""Consolidation: delete a node whose pods fit elsewhere, replace nodes by one cheaper node
(Karpenter's multi-node and single-node searches), and beyond Karpenter replace N nodes by M < N
when that saves more; never for less than the stability guard, never one spot node by one spot
node without 15 cheaper types, never beyond the "Underutilized" budgets.

Faked: nothing; each case builds a small cluster (`World`) and runs the real `compute_commands`,
which asks the real scheduler where pods would go.
"""

from __future__ import annotations

import pytest

from nodewright.engine.disruption import Command
from nodewright.model import labels as wk
from nodewright.model.nodepool import Budget
from tests.builders import instance_type, pod
from tests.engine.disruption.scenario import World, only, pool, spot_catalog


def consolidation(world: World, **opts: object) -> Command | None:
    result = world.run(opts=opts)
    commands = [c for c in result.commands if c.method == "consolidation"]
    return commands[0] if commands else None


def expect_cheaper(world: World, command: Command) -> None:
    prices = {c.node_name: c.price for c in world.claims}
    before = sum(prices[n] for n in command.candidates)
    after = sum(r.price for r in command.replacements)
    assert after < before
    assert command.savings == pytest.approx(before - after)
    assert command.reason == "Underutilized"
    # Whichever options the launches land on, together they still keep the move cheaper.
    worst = sum(max(min(o.price for o in it.offerings) for it in r.options) for r in command.replacements)
    assert worst < before


def test_a_node_whose_pods_fit_elsewhere_is_deleted() -> None:
    world = World()
    world.node("light", "m5.xlarge")
    world.put("light", 2, cpu="500m")
    world.node("busy", "m5.xlarge")
    world.put("busy", 2, cpu="1", annotations={wk.DO_NOT_DISRUPT: "true"})  # stays, takes the pods

    command = consolidation(world, many_to_many=False)

    assert command is not None
    assert command.candidates == ("light",)
    assert command.replacements == ()
    assert "fit on the other nodes" in command.detail
    expect_cheaper(world, command)


def test_room_a_pod_not_bound_yet_will_take_is_not_counted_on() -> None:
    world = World()
    world.node("light", "m5.xlarge")
    world.put("light", 2, cpu="500m")
    world.node("busy", "m5.xlarge")
    world.put("busy", 2, cpu="1", annotations={wk.DO_NOT_DISRUPT: "true"})
    # Just created by a scale-up, not bound yet: kube-scheduler will give it busy's free room.
    world.pods.append(pod("fresh", cpu="1500m", created_at=world.now))

    command = consolidation(world, many_to_many=False)

    assert command is not None
    assert command.candidates == ("light",)
    assert len(command.replacements) == 1  # replaced: not deleted onto busy, whose room is taken
    expect_cheaper(world, command)


def test_an_oversized_node_is_replaced_by_one_cheaper_node() -> None:
    world = World(
        pools=[pool(requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}])]
    )
    world.node("big", "m5.2xlarge")
    world.put("big", 2, cpu="500m")

    command = consolidation(world)

    assert command is not None
    assert command.candidates == ("big",)
    assert len(command.replacements) == 1
    assert command.replacements[0].instance_type.name == "c5.large"
    assert "replace 1 node(s)" in command.detail
    expect_cheaper(world, command)


def test_a_node_already_the_cheapest_that_fits_is_kept() -> None:
    world = World(
        pools=[pool(requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}])]
    )
    world.node("snug", "c5.large")
    world.put("snug", 2, cpu="900m", memory="512Mi")

    result = world.run()

    assert result.commands == ()
    assert "no cheaper placement" in result.rejected["snug"]


def test_on_demand_may_be_replaced_by_spot() -> None:
    world = World()
    world.node("od", "m5.large")
    world.put("od", 1, cpu="1500m")

    command = consolidation(world)

    assert command is not None
    assert command.replacements[0].offering.capacity_type == "spot"
    expect_cheaper(world, command)


@pytest.mark.parametrize(
    ("node_type", "replaced"),
    [
        pytest.param("t19.large", True, id="19-cheaper-types"),
        pytest.param("t15.large", True, id="15-cheaper-types"),
        pytest.param("t14.large", False, id="14-cheaper-types"),
    ],
)
def test_spot_to_spot_needs_15_cheaper_instance_types(node_type: str, replaced: bool) -> None:
    world = World(types=spot_catalog(20))
    world.node("spot", node_type, capacity_type="spot")
    world.put("spot", 1, cpu="1")

    result = world.run()

    assert bool(result.commands) is replaced
    if replaced:
        command = only(result)
        assert len(command.replacements[0].options) >= 15
        expect_cheaper(world, command)
    else:
        assert "spot-to-spot replacement needs 15 cheaper instance types; only 14" in result.rejected["spot"]


def test_one_spot_node_replaced_by_spot_launches_among_the_15_cheapest_types_only() -> None:
    world = World(types=spot_catalog(20))
    world.node("spot", "t19.large", capacity_type="spot")
    world.put("spot", 1, cpu="1")

    command = only(world.run())

    # 19 types are cheaper; whichever of them CreateFleet picks must not leave 15 cheaper ones
    # for the next pass to walk down to (Karpenter cuts the launch to the 15 cheapest too).
    assert [it.name for it in command.replacements[0].options] == [f"t{i}.large" for i in range(15)]
    expect_cheaper(world, command)


def test_several_spot_nodes_may_be_replaced_by_one_spot_node_without_15_cheaper_types() -> None:
    # As in Karpenter (computeSpotToSpotConsolidation): the flexibility rule is for one node
    # replaced by one; removing two nodes cannot repeat itself forever.
    world = World(types=spot_catalog(8))
    for name in ("a", "b"):
        world.node(name, "t7.large", capacity_type="spot")
        world.put(name, 1, cpu="700m")

    command = consolidation(world, many_to_many=False)

    assert command is not None
    assert sorted(command.candidates) == ["a", "b"]
    assert len(command.replacements) == 1
    assert command.replacements[0].offering.capacity_type == "spot"
    assert len(command.replacements[0].options) < 15
    expect_cheaper(world, command)


def test_with_spot_to_spot_off_a_spot_node_is_never_replaced_by_spot_as_in_default_karpenter() -> None:
    world = World(types=spot_catalog(20))
    world.node("spot", "t19.large", capacity_type="spot")
    world.put("spot", 1, cpu="1")

    assert consolidation(world) is not None  # Nodewright's default: replaced, among the 15 cheapest
    result = world.run(opts={"spot_to_spot": False})

    assert not result.commands
    assert "spot-to-spot consolidation is off" in result.rejected["spot"]


def test_with_spot_to_spot_off_spot_nodes_are_deleted_but_not_merged_into_spot() -> None:
    world = World(types=spot_catalog(8))
    for name in ("a", "b"):
        world.node(name, "t7.large", capacity_type="spot")
        world.put(name, 1, cpu="700m")

    merged = consolidation(world, many_to_many=False)
    command = consolidation(world, many_to_many=False, spot_to_spot=False)

    assert merged is not None
    assert [r.offering.capacity_type for r in merged.replacements] == ["spot"]
    assert command is not None
    assert command.replacements == ()  # a deletion: their pods fit on the other node


def test_the_spot_to_spot_threshold_is_an_option() -> None:
    world = World(types=spot_catalog(20))
    world.node("spot", "t10.large", capacity_type="spot")
    world.put("spot", 1, cpu="1")

    assert consolidation(world, spot_to_spot_min_types=5) is not None


@pytest.mark.parametrize(
    ("opts", "acted"),
    [
        pytest.param({}, True, id="no-guard"),
        pytest.param({"min_savings": 0.05}, True, id="absolute-guard-met"),
        pytest.param({"min_savings": 0.5}, False, id="absolute-guard-missed"),
        pytest.param({"min_savings_fraction": 0.5}, True, id="fraction-met"),
        pytest.param({"min_savings_fraction": 0.95}, False, id="fraction-missed"),
    ],
)
def test_the_stability_guard_skips_moves_that_save_too_little(opts: dict[str, float], acted: bool) -> None:
    world = World(
        pools=[pool(requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}])]
    )
    world.node("big", "m5.2xlarge")  # $0.384/h, replaced by c5.large at $0.085/h: saves 78%
    world.put("big", 2, cpu="500m")

    result = world.run(opts=opts)

    assert bool(result.commands) is acted
    if not acted:
        assert "stability guard" in result.rejected["big"]


def test_multi_node_replaces_several_nodes_by_one() -> None:
    world = World(
        pools=[pool(requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}])]
    )
    for name in ("a", "b", "c"):
        world.node(name, "m5.xlarge")
        world.put(name, 1, cpu="1")

    command = consolidation(world, many_to_many=False)

    assert command is not None
    assert set(command.candidates) == {"a", "b", "c"}
    assert len(command.replacements) == 1
    expect_cheaper(world, command)


@pytest.mark.parametrize(("nodes", "budget"), [pytest.param("1", 1, id="count"), pytest.param("50%", 2, id="percent")])
def test_consolidation_stays_within_the_underutilized_budget(nodes: str, budget: int) -> None:
    world = World(
        pools=[
            pool(
                budgets=(Budget(nodes, reasons=("Underutilized",)),),
                requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
            )
        ]
    )
    for name in ("a", "b", "c"):
        world.node(name, "m5.xlarge")
        world.put(name, 1, cpu="1")

    command = consolidation(world)

    assert command is not None
    assert len(command.candidates) == budget


# -- many-to-many ----------------------------------------------------------------------------------------


def four_small_nodes() -> World:
    """Four 2-cpu nodes ($0.10/h each) holding one 1.5-cpu pod each; 4-cpu nodes cost $0.15/h.

    Karpenter-style: two nodes' pods fit one 4-cpu node (saves $0.05/h); three or four do not fit
    any single node. Many-to-many: all four onto two 4-cpu nodes saves $0.10/h.
    """
    world = World(
        types=(
            instance_type("s.large", cpu="2", memory="8Gi", price=0.10),
            instance_type("m.xlarge", cpu="4", memory="16Gi", price=0.15),
        )
    )
    for name in ("a", "b", "c", "d"):
        world.node(name, "s.large")
        world.put(name, 1, cpu="1500m", memory="1Gi")
    return world


def test_many_to_many_beats_the_best_one_node_replacement() -> None:
    world = four_small_nodes()

    command = consolidation(world, many_to_many_threshold=0)  # not weighed against its disruption

    assert command is not None
    assert set(command.candidates) == {"a", "b", "c", "d"}
    assert [r.instance_type.name for r in command.replacements] == ["m.xlarge", "m.xlarge"]
    assert command.savings == pytest.approx(0.10)
    expect_cheaper(world, command)


def test_many_to_many_replacements_share_the_slack() -> None:
    """Four $0.10 nodes onto two $0.15 nodes saves $0.10/h. A dearer 4-cpu type at $0.24 fits each
    replacement's own price plus the whole slack, but two of them would cost $0.48 > $0.40:
    each replacement may only spend half the slack, so the dearer type is no option.
    """
    world = four_small_nodes()
    world.types = (*world.types, instance_type("d.xlarge", cpu="4", memory="16Gi", price=0.24))

    command = consolidation(world, many_to_many_threshold=0)

    assert command is not None
    assert len(command.replacements) == 2
    assert all([it.name for it in r.options] == ["m.xlarge"] for r in command.replacements)
    expect_cheaper(world, command)


def test_without_many_to_many_only_karpenters_moves_are_made() -> None:
    world = four_small_nodes()

    command = consolidation(world, many_to_many=False)

    assert command is not None
    assert len(command.candidates) == 2
    assert len(command.replacements) == 1
    assert command.savings == pytest.approx(0.05)


def test_many_to_many_never_opens_as_many_nodes_as_it_removes() -> None:
    world = World(
        types=(
            instance_type("s.large", cpu="2", memory="8Gi", price=0.10),
            instance_type("m.xlarge", cpu="4", memory="16Gi", price=0.21),
        )
    )
    for name in ("a", "b", "c"):
        world.node(name, "s.large")
        world.put(name, 1, cpu="1500m", memory="1Gi")

    assert world.run().commands == ()


def test_many_to_many_also_searches_the_least_loaded_nodes_first() -> None:
    # Karpenter's order (fewest pods per dollar first) puts the two nodes with one big pod each
    # first, and the budget (2 nodes) stops there: neither can go. The two nodes with many tiny
    # pods, last in that order, can both be deleted: their pods fit on the anchor's free room.
    world = World(
        types=(instance_type("m5.large", cpu="2", memory="8Gi", price=0.1),),
        pools=[pool(budgets=[Budget(nodes="2")])],
    )
    for name in ("big-a", "big-b"):
        world.node(name, "m5.large")
        world.put(name, 1, cpu="1900m")
    for name in ("tiny-c", "tiny-d"):
        world.node(name, "m5.large")
        world.put(name, 4, cpu="100m", memory="100Mi")
    world.node("anchor", "m5.large", annotations={wk.DO_NOT_DISRUPT: "true"})
    world.put("anchor", 1, cpu="1")

    assert consolidation(world, many_to_many=False) is None  # Karpenter's moves, Karpenter's order

    command = consolidation(world)

    assert command is not None
    assert sorted(command.candidates) == ["tiny-c", "tiny-d"]
    assert command.replacements == ()
    expect_cheaper(world, command)


# Offered spot too (at 35%), as every type of the real catalog is, though the NodePool is on-demand.
GRAVITON_DAY = (
    instance_type("c6g.medium", cpu="1", memory="2Gi", arch="arm64", price=0.0340, spot_price=0.0119),
    instance_type("c7g.medium", cpu="1", memory="2Gi", arch="arm64", price=0.0363, spot_price=0.0127),
    instance_type("c7a.medium", cpu="1", memory="2Gi", price=0.0513, spot_price=0.0180),
    instance_type("c7i.medium", cpu="1", memory="2Gi", price=0.0513, spot_price=0.0180),
    instance_type("m7a.medium", cpu="1", memory="4Gi", price=0.0580, spot_price=0.0203),
)


def on_demand_world() -> World:
    return World(
        pools=[pool(requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}])],
        types=GRAVITON_DAY,
    )


def test_a_replacement_never_offers_a_type_as_dear_as_the_node_it_replaces() -> None:
    """The replace loop of issue 23: c7a.medium replaced by c6g.medium, with c7a.medium (and its
    equal-priced twin) still among the options, so CreateFleet could launch the same price again.
    """
    world = on_demand_world()
    world.node("amd", "c7a.medium")
    world.put("amd", 1, cpu="250m", memory="512Mi")

    command = consolidation(world)

    assert command is not None
    (replacement,) = command.replacements
    assert replacement.instance_type.name == "c6g.medium"
    assert [t.name for t in replacement.options] == ["c6g.medium", "c7g.medium"]
    expect_cheaper(world, command)


def test_every_option_saves_at_least_the_stability_guard() -> None:
    world = on_demand_world()
    world.node("amd", "c7a.medium")
    world.put("amd", 1, cpu="250m", memory="512Mi")

    command = consolidation(world, min_savings=0.016)

    assert command is not None
    (replacement,) = command.replacements
    assert [t.name for t in replacement.options] == ["c6g.medium"]  # c7g.medium would save $0.015/h only


def test_a_type_that_came_up_no_cheaper_for_a_node_is_no_option_for_it() -> None:
    world = on_demand_world()
    world.node("amd", "c7a.medium")
    world.put("amd", 1, cpu="250m", memory="512Mi")

    refused_option = only(world.run(no_cheaper=frozenset({("amd", "c7g.medium")})))
    refused_plan = world.run(no_cheaper=frozenset({("amd", "c6g.medium")}))
    other_node = only(world.run(no_cheaper=frozenset({("elsewhere", "c6g.medium")})))

    assert [t.name for t in refused_option.replacements[0].options] == ["c6g.medium"]
    assert refused_plan.commands == ()
    assert "came up no cheaper" in refused_plan.rejected["amd"]
    assert [t.name for t in other_node.replacements[0].options] == ["c6g.medium", "c7g.medium"]


def test_a_many_to_many_move_must_be_worth_the_disruption_it_causes() -> None:
    """All four nodes onto two saves 25% of the NodePool's $/h but evicts every pod in it: Karpenter's
    Balanced score 0.25 / 1.0 is under 1/2, so Nodewright takes Karpenter's move instead (two
    nodes onto one: 12.5% of the cost for 50% of the disruption is under 1/2 too, but Karpenter's
    own moves are weighed only in Balanced NodePools).
    """
    world = four_small_nodes()

    command = consolidation(world)

    assert command is not None
    assert len(command.replacements) == 1
    assert command.savings == pytest.approx(0.05)
    assert consolidation(world, many_to_many_threshold=4) is not None  # k = 4: score >= 1/4 passes
    assert len(consolidation(world, many_to_many_threshold=4).replacements) == 2  # type: ignore[union-attr]


def balanced_world(pods_on_big: int, policy: str = "Balanced") -> World:
    """A NodePool of ten full m5.large ($0.096/h, 2 pods each, kept) and one m5.2xlarge ($0.384/h)
    holding `pods_on_big` 50m pods, which a smaller node could hold.
    """
    on_demand = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
    world = World(pools=[pool(policy=policy, requirements=on_demand)])
    for i in range(10):
        world.node(f"small-{i}", "m5.large", annotations={wk.DO_NOT_DISRUPT: "true"})
        world.put(f"small-{i}", 2, cpu="1", memory="1Gi")
    world.node("big", "m5.2xlarge")
    world.put("big", pods_on_big, cpu="50m", memory="100Mi")
    return world


def test_a_balanced_nodepool_replaces_a_node_when_the_savings_justify_the_pods_moved() -> None:
    # Saves $0.299/h (22% of the NodePool's $1.344/h) for 5 of its 35 disruption (14%): score 1.6.
    world = balanced_world(4)

    command = only(world.run())

    assert command.candidates == ("big",)
    assert [r.instance_type.name for r in command.replacements] == ["c5.large"]
    expect_cheaper(world, command)


def test_a_balanced_nodepool_keeps_a_node_whose_move_would_cost_more_disruption_than_it_saves() -> None:
    # Saves $0.299/h (22%) for 29 of its 59 disruption (49%): score 0.45 < 1/2.
    world = balanced_world(28)

    result = world.run()

    assert result.commands == ()
    assert "not worth the disruption" in result.rejected["big"]
    assert "k = 2" in result.rejected["big"]
    # WhenEmptyOrUnderutilized takes any saving.
    assert only(balanced_world(28, "WhenEmptyOrUnderutilized").run()).candidates == ("big",)


@pytest.mark.parametrize(
    ("pods_on_big", "k", "moved"),
    [
        (28, 0, True),  # unweighed (Karpenter's WhenEmptyOrUnderutilized): any saving moves the pods
        (28, 2, False),  # score 0.45 < 1/2
        (28, 4, True),  # score 0.45 >= 1/4
        (4, 2, True),  # score 1.6 >= 1/2
    ],
    ids=["off", "k2-too-many-pods", "k4-loose-enough", "k2-few-pods"],
)
def test_balance_threshold_weighs_every_move_of_a_whenemptyorunderutilized_nodepool(
    pods_on_big: int, k: float, moved: bool
) -> None:
    world = balanced_world(pods_on_big, "WhenEmptyOrUnderutilized")

    result = world.run(opts={"balance_threshold": k})

    if moved:
        assert only(result).candidates == ("big",)
    else:
        assert result.commands == ()
        assert f"k = {k:g}" in result.rejected["big"]


def test_an_empty_node_of_a_balanced_nodepool_is_deleted() -> None:
    world = balanced_world(0)

    command = only(world.run())

    assert command.method == "emptiness"
    assert command.candidates == ("big",)
