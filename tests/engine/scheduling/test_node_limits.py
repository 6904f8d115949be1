"""NodePool `limits.nodes` on dynamic pools, as Karpenter enforces it: every node and claim in
flight counts one node, the solver opens no claim past the limit, a pod left out says the pool's
limits, and consolidation picks no replacement that would pass it.

Faked: nothing; the real `pool_usage` counts what the pool has, the real `solve()` plans and the
real `compute_commands` (through the disruption `World`) decides consolidation. Observed: the
claims opened, the reasons of pods left out, the usage counted and the command chosen.
"""

from __future__ import annotations

from nodewright.engine.disruption import Command
from nodewright.engine.scheduling import solve
from nodewright.engine.scheduling.usage import pool_usage
from nodewright.model import labels as wk
from tests.builders import instance_type, node, node_pool
from tests.engine.disruption import scenario as disruption
from tests.engine.scheduling.expect import expect_accounted, expect_within_limits
from tests.engine.scheduling.scenario import inflight, pods, pool, scheduling_input

# 1.5 cpu each: one pod per 2-cpu node, two per 4-cpu node.
SMALL = instance_type("c5.large", cpu="2", memory="4Gi", price=0.085)
LARGE = instance_type("m5.xlarge", cpu="4", memory="16Gi", price=0.192)
TYPES = (SMALL, LARGE)


def test_a_node_limit_of_two_opens_exactly_two_claims_and_says_why_the_rest_wait() -> None:
    limited = node_pool(limits={"nodes": "2"})
    inp = scheduling_input(pods(50, "w", cpu="1500m", memory="1Gi"), pools=[pool(limited, TYPES)])

    result = solve(inp)

    assert len(result.claims) == 2
    placed = sum(len(c.pods) for c in result.claims)
    assert placed == 4  # the largest type within the limit, two pods each
    assert len(result.unschedulable) == 50 - placed
    assert all(r == "nodepool default: limits reached" for r in result.unschedulable.values())
    expect_within_limits(inp, result)
    expect_accounted(inp, result)


def test_nodes_and_claims_in_flight_count_toward_the_node_limit() -> None:
    n1 = node("n1", cpu="2", labels={wk.NW_NODEPOOL: "default", wk.NODEPOOL: "default"})
    flying = inflight("c1", "c5.large")
    types = {"default": {t.name: t for t in TYPES}}
    used = pool_usage([n1], [flying], types)
    assert used["default"]["nodes"] == 2000  # one node each, in thousandths

    limited = node_pool(limits={"nodes": "3"})
    inp = scheduling_input(pods(10, "w", cpu="1500m", memory="6Gi"), pools=[pool(limited, TYPES)], used=used)
    result = solve(inp)

    assert len(result.claims) == 1  # 3 - 2
    assert result.unschedulable
    assert all("limits reached" in r for r in result.unschedulable.values())

    full = node_pool(limits={"nodes": "2"})
    inp = scheduling_input(pods(3, "w", cpu="1500m"), pools=[pool(full, TYPES)], used=used)
    assert solve(inp).claims == ()


def test_without_a_node_limit_the_same_pods_get_all_the_claims_they_need() -> None:
    unlimited = node_pool(limits={"cpu": "1000"})
    inp = scheduling_input(pods(50, "w", cpu="1500m", memory="1Gi"), pools=[pool(unlimited, TYPES)])
    result = solve(inp)
    assert not result.unschedulable
    assert len(result.claims) > 2


def _world(limits: dict[str, str]) -> disruption.World:
    on_demand = [{"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}]
    world = disruption.World(pools=[disruption.pool(requirements=on_demand, limits=limits)])
    world.node("big", "m5.2xlarge")  # 8 cpu for 1 cpu of pods: replaceable by a c5.large
    world.put("big", 2, cpu="500m")
    world.node("other", "m5.xlarge")
    world.put("other", 2, cpu="1900m", annotations={wk.DO_NOT_DISRUPT: "true"})  # full: takes nothing
    return world


def test_consolidation_replaces_a_node_when_the_node_limit_leaves_room() -> None:
    command = _consolidation(_world({"nodes": "3"}))
    assert command is not None
    assert command.candidates == ("big",)
    assert len(command.replacements) == 1


def test_consolidation_chooses_no_replacement_that_would_pass_the_node_limit() -> None:
    # The replacement launches before its candidate goes: with two nodes of two allowed, a third
    # cannot launch, so the cheaper replacement is not chosen (as for a cpu limit).
    world = _world({"nodes": "2"})
    result = world.run()
    assert not [c for c in result.commands if c.method == "consolidation" and c.replacements]
    assert result.rejected["big"] == "pod default/big-p0 would have nowhere to go: nodepool default: limits reached"


def _consolidation(world: disruption.World) -> Command | None:
    commands = [c for c in world.run().commands if c.method == "consolidation"]
    return commands[0] if commands else None


def test_a_drifted_node_is_replaced_within_the_node_limit_by_one_node_that_holds_its_pods() -> None:
    # One node of two allowed: one replacement may launch. A single pass would spend it on a
    # small type and leave a pod out; the limits passes find one node that holds all three.
    world = disruption.World(pools=[disruption.pool(policy="WhenEmpty", limits={"nodes": "2"})])
    world.node("n", "m5.xlarge", claim_fields={"template_hash": "stale"})
    world.put("n", 3, cpu="1")

    result = world.run()

    (command,) = result.commands
    assert command.method == "drift"
    assert command.candidates == ("n",)
    assert len(command.replacements) == 1
    assert len(command.replacements[0].pods) == 3


def test_a_drifted_node_at_the_node_limit_waits_rather_than_pass_it() -> None:
    # The replacement launches before the node goes: a second node of one allowed is never started.
    world = disruption.World(pools=[disruption.pool(policy="WhenEmpty", limits={"nodes": "1"})])
    world.node("n", "m5.xlarge", claim_fields={"template_hash": "stale"})
    world.put("n", 3, cpu="1")

    result = world.run()

    assert result.commands == ()
    assert "nodepool default: limits reached" in result.rejected["n"]
