"""The Karpenter reference's disruption decides as Karpenter v1.14 does.

Faked: nothing; each case builds a small cluster (`tests.engine.disruption.scenario.World`) and
runs the reference's `compute_commands` / `validate`, which ask the reference scheduler where pods
would go. Each test names the Karpenter rule it pins (docs/karpenter-reference.md).
"""

from __future__ import annotations

from dataclasses import replace

from nodewright.engine.disruption import Command
from nodewright.engine.disruption.types import DisruptionResult
from nodewright.model.nodepool import Budget
from nodewright.reference.automode import DISRUPTION as AUTOMODE
from nodewright.reference.karpenter.disruption import Disruption
from tests.builders import instance_type
from tests.engine.disruption.scenario import HOUR, World, only, pool, spot_catalog

KARPENTER = Disruption()
ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]


def run(world: World, decider: Disruption = KARPENTER) -> DisruptionResult:
    return decider.compute_commands(world.input())


def test_empty_nodes_are_deleted_together_within_the_empty_budget() -> None:
    world = World(pools=[pool(budgets=(Budget(nodes="2"),))])
    for name in ("e1", "e2", "e3"):
        world.node(name, "m5.large")
    command = only(run(world))
    assert command.method == "emptiness"
    assert len(command.candidates) == 2  # the budget allows two
    assert command.replacements == ()


def test_a_node_whose_pods_fit_elsewhere_is_deleted() -> None:
    world = World()
    world.node("light", "m5.xlarge")
    world.put("light", 2, cpu="500m")
    world.node("busy", "m5.xlarge")
    world.put("busy", 2, cpu="1", annotations={"karpenter.sh/do-not-disrupt": "true"})
    command = only(run(world))
    assert (command.method, command.candidates, command.replacements) == ("consolidation", ("light",), ())


def test_single_node_replace_only_to_a_cheaper_type() -> None:
    world = World(pools=[pool(requirements=ON_DEMAND)])
    world.node("big", "m5.2xlarge")
    world.put("big", 2, cpu="500m")
    command = only(run(world))
    assert command.candidates == ("big",)
    (new,) = command.replacements
    price = next(c.price for c in world.claims if c.node_name == "big")
    assert all(min(o.price for o in it.offerings if o.capacity_type == "on-demand") < price for it in new.options)
    assert command.savings > 0


def test_consolidation_never_replaces_by_two_or_more_nodes() -> None:
    # Two full nodes of pods with hostname anti-affinity between them cannot share one node.
    world = World(pools=[pool(requirements=ON_DEMAND)])
    world.node("a", "m5.2xlarge")
    world.node("b", "m5.2xlarge")
    world.put("a", 1, cpu="3")
    world.put("b", 1, cpu="3")
    result = run(world)
    for command in result.commands:
        assert len(command.replacements) <= 1


def test_multi_node_consolidation_takes_the_largest_prefix_onto_one_node() -> None:
    world = World(pools=[pool(requirements=ON_DEMAND)])
    for name in ("n1", "n2", "n3"):
        world.node(name, "m5.xlarge")
        world.put(name, 1, cpu="500m")
    command = only(run(world))
    assert command.method == "consolidation"
    assert len(command.candidates) == 3
    assert len(command.replacements) <= 1


def test_spot_to_spot_is_off_in_karpenter_and_needs_15_cheaper_types_in_auto_mode() -> None:
    def world_of(count: int) -> World:
        w = World(types=spot_catalog(count))
        dear = f"t{count - 1}.large"
        w.node("spot", dear, capacity_type="spot")
        w.put("spot", 1, cpu="500m")
        return w

    assert run(world_of(20)).commands == ()  # Karpenter: SpotToSpotConsolidation gate off
    command = only(run(world_of(20), AUTOMODE))
    (new,) = command.replacements
    assert len(new.options) == 15  # launched among the 15 cheapest
    assert run(world_of(10), AUTOMODE).commands == ()  # 9 cheaper types: not enough


def test_consolidate_after_holds_a_node_whose_pods_just_changed() -> None:
    world = World(pools=[pool(after=600.0)])
    world.node("light", "m5.xlarge")
    world.put("light", 2, cpu="500m", created_at=world.now - 60)
    world.node("busy", "m5.xlarge")
    world.put("busy", 2, cpu="1", annotations={"karpenter.sh/do-not-disrupt": "true"})
    result = run(world)
    assert result.commands == ()
    assert "consolidateAfter" in result.rejected["light"]


def test_balanced_refuses_a_move_that_saves_little_for_its_disruption() -> None:
    world = World(pools=[pool(policy="Balanced", requirements=ON_DEMAND)])
    for i in range(6):
        world.node(f"n{i}", "m5.large")
        world.put(f"n{i}", 1, cpu="1600m")  # full: x's pods fit nowhere else
    world.node("x", "m5.xlarge")
    world.put("x", 6, cpu="500m")
    # A c5.xlarge would save $0.022/h (3% of the pool's $0.768/h) for 7 of its 19 units of disruption.
    result = run(world)
    moved = [c for c in result.commands if "x" in c.candidates]
    assert not moved
    assert "Balanced" in result.rejected["x"]


def test_expiration_deletes_forcefully_without_replacements_first() -> None:
    world = World(pools=[pool(expire_after=HOUR / 2, budgets=(Budget(nodes="0"),))])
    world.node("old", "m5.xlarge", age=HOUR)
    world.put("old", 1, cpu="1")
    command = only(run(world))
    assert (command.method, command.candidates, command.replacements, command.budgeted) == (
        "expiration",
        ("old",),
        (),
        False,
    )


def test_validation_finds_a_command_stale_when_the_pods_changed() -> None:
    world = World()
    world.node("light", "m5.xlarge")
    world.put("light", 2, cpu="500m")
    world.node("busy", "m5.xlarge")
    world.put("busy", 2, cpu="1", annotations={"karpenter.sh/do-not-disrupt": "true"})
    command: Command = only(run(world))
    assert KARPENTER.validate(command, world.input()) is None
    world.put("light", 1, cpu="500m")
    assert KARPENTER.validate(command, world.input()) == "the pods on the candidates changed"
    assert KARPENTER.validate(replace(command, candidates=("gone",)), world.input()) is not None


def test_an_on_demand_node_replaced_where_spot_is_allowed_is_replaced_by_spot_only() -> None:
    world = World()  # the default pool allows spot and on-demand
    world.node("big", "m5.2xlarge")  # on-demand
    world.put("big", 2, cpu="500m")
    command = only(run(world))
    (new,) = command.replacements
    capacity = new.requirements.get("karpenter.sh/capacity-type")
    assert capacity is not None
    assert capacity.has("spot")
    assert not capacity.has("on-demand")  # priced as spot: no fallback to dearer on-demand
    assert new.offering.capacity_type == "spot"


def test_multi_node_spot_to_spot_needs_the_gate_but_not_15_types() -> None:
    types = (
        instance_type("a.large", cpu="2", memory="8Gi", price=0.1, spot_price=0.05),
        instance_type("a.xlarge", cpu="4", memory="16Gi", price=0.2, spot_price=0.08),
    )
    world = World(types=types)
    for name in ("s1", "s2"):  # neither pod fits beside the other on an a.large
        world.node(name, "a.large", capacity_type="spot")
        world.put(name, 1, cpu="1200m")
    assert run(world).commands == ()  # Karpenter: gate off
    command = only(run(world, AUTOMODE))
    assert set(command.candidates) == {"s1", "s2"}
    (new,) = command.replacements
    assert [t.name for t in new.options] == ["a.xlarge"]  # one cheaper type is enough for two nodes
    assert new.offering.capacity_type == "spot"
