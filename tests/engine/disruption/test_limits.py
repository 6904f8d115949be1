"""Consolidation in a NodePool at its limit (`engine/disruption/limits.py`): a replacement there
must hold as much of the other resources per unit of the limited one as the nodes it replaces.
"""

from __future__ import annotations

from tests.engine.disruption.scenario import World, pool

ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]


def limited_world(limit: str) -> World:
    """A memory-rich r5.large (2 cpu, 16 GiB) holding one 1-cpu pod, beside 20 cpu of full nodes,
    in an on-demand NodePool limited to `limit` cpu. Cheaper 2-cpu types hold its pod: m5.large
    (8 GiB) and c5.large (4 GiB), both with less memory per cpu.
    """
    world = World(pools=[pool(requirements=ON_DEMAND, limits={"cpu": limit})])
    world.node("mem", "r5.large")
    world.put("mem", 1, cpu="1", memory="3Gi")
    for name in ("full-1", "full-2"):
        world.node(name, "m5.2xlarge")
        world.put(name, 8, cpu="1", memory="1Gi")
    world.node("full-3", "m5.xlarge")
    world.put("full-3", 4, cpu="1", memory="1Gi")
    return world


def test_near_its_cpu_limit_a_memory_rich_node_is_not_replaced_by_a_cpu_dense_one() -> None:
    # 22 of 24 cpu used: the c5.large fits in what is left, but the NodePool would keep its cpu
    # and lose 12 GiB, which the next memory-heavy pods would buy outside it.
    world = limited_world("24")

    result = world.run()

    assert [c for c in result.commands if c.method == "consolidation"] == []
    assert "holds less per unit of the limit" in result.rejected["mem"]


def test_far_from_its_limit_the_same_node_is_replaced_by_the_cheapest_type() -> None:
    world = limited_world("200")

    result = world.run()

    (command,) = [c for c in result.commands if c.method == "consolidation"]
    assert command.candidates == ("mem",)
    assert command.replacements[0].instance_type.name == "c5.large"


def test_at_its_limit_a_node_whose_pods_fit_elsewhere_is_still_deleted() -> None:
    world = limited_world("24")
    world.node("spare", "m5.xlarge")  # room for the r5's pod: deleting a node frees the limit
    world.put("spare", 1, cpu="1", memory="1Gi")
    result = world.run()

    commands = [c for c in result.commands if c.method == "consolidation"]
    assert commands
    assert commands[0].replacements == ()
