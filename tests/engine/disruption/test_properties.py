"""Invariants of a disruption pass over random small clusters (Hypothesis).

Faked: nothing; each example builds NodePools with random budgets and policies, nodes of random
types and capacity types with random pods (some annotated do-not-disrupt), nodes already being
disrupted, and random options, then runs the real `compute_commands`. Observed: a command never
raises the hourly cost, never takes a node holding a do-not-disrupt pod (or annotated so), never
exceeds a NodePool's budget, never takes a node already being disrupted, and still validates
against the state it was computed from.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.engine.disruption import allowed_disruptions, validate
from nodewright.model import labels as wk
from nodewright.model.nodepool import Budget
from tests.engine.disruption.scenario import World, catalog, pool

EXAMPLES = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
TYPES = [t.name for t in catalog()]
CPUS = ["100m", "250m", "500m", "1", "1500m"]
MEMORIES = ["256Mi", "1Gi", "3Gi"]
BUDGET_NODES = ["0", "1", "2", "34%", "100%"]
REASONS = ((), ("Underutilized",), ("Empty",), ("Drifted",))


@st.composite
def worlds(draw: st.DrawFn) -> tuple[World, dict[str, Any]]:
    pools = []
    for i in range(draw(st.integers(1, 2))):
        budgets = tuple(
            Budget(draw(st.sampled_from(BUDGET_NODES)), reasons=draw(st.sampled_from(REASONS)))
            for _ in range(draw(st.integers(0, 2)))
        )
        policy = draw(st.sampled_from(["WhenEmpty", "WhenEmptyOrUnderutilized"]))
        pools.append(pool(f"pool-{i}", policy=policy, budgets=budgets))
    world = World(pools=pools)
    names = []
    for n in range(draw(st.integers(1, 6))):
        name = f"n{n}"
        names.append(name)
        annotated = draw(st.integers(0, 9)) == 0
        world.node(
            name,
            draw(st.sampled_from(TYPES)),
            pool=draw(st.sampled_from([p.name for p in pools])),
            capacity_type=draw(st.sampled_from(["spot", "on-demand"])),
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
