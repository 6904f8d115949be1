"""Invariants of a disruption pass over random small clusters (Hypothesis).

Faked: nothing; each example builds NodePools with random budgets and policies, nodes of random
types and capacity types with random pods (some annotated do-not-disrupt), nodes already being
disrupted, and random options, then runs the real `compute_commands`. Observed: a command never
raises the hourly cost, never takes a node holding a do-not-disrupt pod (or annotated so), never
exceeds a NodePool's budget, never takes a node already being disrupted, and still validates
against the state it was computed from. Carried out one after another (each replacement launched
as any of its options, as CreateFleet may), commands only ever lower the hourly price.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.engine.disruption import Command, allowed_disruptions, validate
from nodewright.engine.disruption.candidates import ClusterView
from nodewright.engine.disruption.simulate import Simulator
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.nodepool import Budget
from tests.engine.disruption.scenario import World, catalog, pool

EXAMPLES = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
TYPES = [t.name for t in catalog()]
CPUS = ["100m", "250m", "500m", "1", "1500m"]
MEMORIES = ["256Mi", "1Gi", "3Gi"]
BUDGET_NODES = ["0", "1", "2", "34%", "100%"]
REASONS = ((), ("Underutilized",), ("Empty",), ("Drifted",))
# A NodePool's capacity types: every type of the catalog is offered both ways either way.
CAPACITY_TYPES = (("spot", "on-demand"), ("on-demand",), ("spot",))


@st.composite
def worlds(draw: st.DrawFn) -> tuple[World, dict[str, Any]]:
    pools = []
    allowed: dict[str, tuple[str, ...]] = {}
    for i in range(draw(st.integers(1, 2))):
        budgets = tuple(
            Budget(draw(st.sampled_from(BUDGET_NODES)), reasons=draw(st.sampled_from(REASONS)))
            for _ in range(draw(st.integers(0, 2)))
        )
        policy = draw(st.sampled_from(["WhenEmpty", "WhenEmptyOrUnderutilized"]))
        capacity_types = draw(st.sampled_from(CAPACITY_TYPES))
        requirements = [{"key": wk.CAPACITY_TYPE, "operator": "In", "values": list(capacity_types)}]
        pools.append(pool(f"pool-{i}", policy=policy, budgets=budgets, requirements=requirements))
        allowed[f"pool-{i}"] = capacity_types
    world = World(pools=pools)
    names = []
    for n in range(draw(st.integers(1, 6))):
        name = f"n{n}"
        names.append(name)
        annotated = draw(st.integers(0, 9)) == 0
        home = draw(st.sampled_from([p.name for p in pools]))
        world.node(
            name,
            draw(st.sampled_from(TYPES)),
            pool=home,
            capacity_type=draw(st.sampled_from(allowed[home])),
            annotations={wk.DO_NOT_DISRUPT: "true"} if annotated else None,
        )
        for _ in range(draw(st.integers(0, 4))):
            blocked = draw(st.integers(0, 9)) == 0
            world.put(
                name,
                1,
                cpu=draw(st.sampled_from(CPUS)),
                memory=draw(st.sampled_from(MEMORIES)),
                annotations={wk.DO_NOT_DISRUPT: "true"} if blocked else None,
            )
    fields = {
        "in_progress": frozenset(draw(st.lists(st.sampled_from(names), max_size=2))),
        "opts": {
            "many_to_many": draw(st.booleans()),
            "min_savings": draw(st.sampled_from([0.0, 0.01])),
            "spot_to_spot_min_types": draw(st.sampled_from([1, 15])),
        },
    }
    return world, fields


@EXAMPLES
@given(worlds())
def test_a_command_never_raises_cost_never_evicts_do_not_disrupt_pods_and_never_exceeds_a_budget(
    case: tuple[World, dict[str, Any]],
) -> None:
    world, fields = case
    inp = world.input(**fields)
    result = world.run(**fields)
    prices = {c.node_name: c.price for c in world.claims}
    pool_of = {c.node_name: c.nodepool for c in world.claims}
    nodes = {n.name: n for n in world.nodes}

    assert len(result.commands) <= 1
    for command in result.commands:
        before = sum(prices[n] for n in command.candidates)
        after = sum(r.price for r in command.replacements)
        assert after < before
        assert command.savings > 0
        # Even if every launch lands on its dearest remaining option.
        worst = sum(max(min(o.price for o in it.offerings) for it in r.options) for r in command.replacements)
        assert worst < before

        for name in command.candidates:
            assert not nodes[name].do_not_disrupt
            assert not any(p.do_not_disrupt for p in world.pods if p.node_name == name)
            assert name not in inp.in_progress

        for p in world.pools:
            members = [n for n in nodes if pool_of[n] == p.name]
            disrupting = sum(1 for n in members if n in inp.in_progress)
            allowed = allowed_disruptions(p, len(members), disrupting, command.reason, world.now)
            assert sum(1 for n in command.candidates if pool_of[n] == p.name) <= allowed

        assert validate(command, inp) is None


SEQUENCE = settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
STEPS = 6


def price_of(it: InstanceType, capacity_type: str) -> float:
    return min(o.price for o in it.offerings if o.capacity_type == capacity_type)


def hourly(world: World) -> float:
    return sum(c.price for c in world.claims)


def carry_out(world: World, command: Command, launch: st.DataObject, step: int) -> None:
    """Do what the controller does: launch each replacement (as any of its options), move the
    candidates' pods where the plan put them, remove the candidates.
    """
    inp = world.input()
    view = ClusterView.build(inp)
    plan = Simulator(view).run([view.candidates[n] for n in command.candidates], cheaper=True)
    home = {key: node for node, keys in plan.existing.items() for key in keys}
    for index, replacement in enumerate(command.replacements):
        name = f"r{step}-{index}"
        # Whichever option CreateFleet launches: the dearest, or any other the example draws.
        dearest = max(replacement.options, key=lambda t: price_of(t, replacement.offering.capacity_type))
        chosen = launch.draw(st.sampled_from([dearest, *replacement.options]), label=f"{name} launched as")
        world.node(name, chosen.name, pool=replacement.nodepool, capacity_type=replacement.offering.capacity_type)
        home.update({p.key: name for p in replacement.pods})
    gone = set(command.candidates)
    moving = [p for p in world.pods if p.node_name in gone and not p.daemon]
    assert all(p.key in home for p in moving), "every pod of a candidate has a place in the plan"
    world.pods = [replace(p, node_name=home[p.key]) if p.node_name in gone else p for p in world.pods]
    world.nodes = [n for n in world.nodes if n.name not in gone]
    world.claims = [c for c in world.claims if c.node_name not in gone]


@SEQUENCE
@given(worlds(), st.data())
def test_no_sequence_of_consolidation_commands_ever_raises_the_hourly_price(
    case: tuple[World, dict[str, Any]], launch: st.DataObject
) -> None:
    world, fields = case
    opts = fields["opts"]
    prices = [hourly(world)]
    for step in range(STEPS):
        result = world.run(opts=opts)
        if not result.commands:
            break
        (command,) = result.commands
        assert command.method in ("emptiness", "consolidation")
        carry_out(world, command, launch, step)
        prices.append(hourly(world))
        assert prices[-1] < prices[-2], f"step {step}: {command.detail} raised $/h {prices[-2]:.4f} -> {prices[-1]:.4f}"
