"""The type-mix LPs (`typemix.py`): which types a workload's shape calls for, and the slices of
pods each planned node gets.
"""

from __future__ import annotations

import random

import pytest

from nodewright.engine.scheduling.typemix import Assignment, apportion, assign, cheapest_mix, node_slices

# (cpu, GiB) per node and $/h: compute, general purpose, memory, and a general type that is
# dearer per unit of everything than the general one (never worth buying).
COMPUTE = ((8, 16), 1.0)
GENERAL = ((8, 32), 1.2)
MEMORY = ((8, 64), 1.7)
DEAR = ((4, 16), 0.7)
ALL = [COMPUTE, GENERAL, MEMORY, DEAR]


@pytest.mark.parametrize(
    ("demand", "expected"),
    [
        # 3 GiB per cpu, between compute (2) and general (4): 5 of each.
        ((80, 240), [5.0, 5.0, 0.0, 0.0]),
        # 5 GiB per cpu, between general (4) and memory (8): 8a + 8b = 80, 32a + 64b = 400.
        ((80, 400), [0.0, 7.5, 2.5, 0.0]),
        # Compute's own shape: compute alone.
        ((80, 160), [10.0, 0.0, 0.0, 0.0]),
    ],
)
def test_the_cheapest_mix_buys_the_two_types_around_the_workloads_shape(
    demand: tuple[int, int], expected: list[float]
) -> None:
    assert cheapest_mix(demand, ALL) == pytest.approx(expected)


def test_a_resource_nobody_requests_is_ignored_and_one_nobody_offers_has_no_mix() -> None:
    assert cheapest_mix([0, 0], [COMPUTE]) == [0.0]
    assert cheapest_mix([8, 16, 1], [((8, 16, 0), 1.0)]) is None


def test_the_assignment_gives_each_type_the_pods_that_suit_it() -> None:
    # Compute-shaped pods (1 cpu, 2 GiB) and memory-hungry ones (1 cpu, 8 GiB).
    items = [((1, 2), 16), ((1, 8), 16)]
    columns = [COMPUTE, MEMORY]

    plan = assign(items, columns, [[True, True], [True, True]])

    # The aggregate mix would buy the same nodes; the assignment also says which pods go where.
    assert plan is not None
    assert plan.nodes == pytest.approx([2.0, 2.0])
    assert plan.pods[0] == pytest.approx([16.0, 0.0])
    assert plan.pods[1] == pytest.approx([0.0, 16.0])


def test_a_pod_only_goes_where_it_is_allowed() -> None:
    items = [((1, 2), 16), ((1, 8), 16)]

    plan = assign(items, [COMPUTE, MEMORY], [[False, True], [True, True]])

    assert plan is not None
    assert plan.pods[0][0] == 0.0
    assert assign(items, [COMPUTE, MEMORY], [[False, False], [True, True]]) is None


def test_with_fixed_nodes_the_required_pods_go_first_and_optional_ones_fill_the_rest() -> None:
    items = [((1, 8), 8), ((1, 2), 100)]

    plan = assign(items, [COMPUTE, MEMORY], [[True, True], [True, True]], nodes=[1, 1], values=[0.0, 1.0])

    assert plan is not None
    assert sum(plan.pods[0]) == pytest.approx(8.0)
    # What is left after the 8 memory pods: 8 cpu on the compute node, and none on the memory node.
    assert sum(plan.pods[1]) == pytest.approx(8.0)
    assert assign(items, [COMPUTE], [[True], [True]], nodes=[1], values=[0.0, 1.0]) is None


def test_random_assignments_match_highs() -> None:
    linprog = pytest.importorskip("scipy.optimize").linprog
    rng = random.Random(11)
    for _ in range(60):
        columns = [((rng.randint(4, 64), rng.randint(4, 256)), rng.uniform(0.1, 3.0)) for _ in range(rng.randint(1, 4))]
        items = [((rng.randint(1, 8), rng.randint(1, 32)), rng.randint(1, 40)) for _ in range(rng.randint(1, 5))]
        allowed = [[all(c >= r for c, r in zip(cap, req, strict=True)) for cap, _ in columns] for req, _ in items]
        n_t, n_k = len(columns), len(items)
        # Variables: x_t, then y_kt; the same LP, dense.
        c = [p for _, p in columns] + [0.0] * (n_k * n_t)
        a_eq = [[0.0] * n_t + [1.0 if kk == k else 0.0 for kk in range(n_k) for _ in range(n_t)] for k in range(n_k)]
        b_eq = [float(n) for _, n in items]
        a_ub, b_ub = [], []
        for t, (cap, _) in enumerate(columns):
            for r in range(2):
                row = [0.0] * (n_t + n_k * n_t)
                row[t] = -cap[r]
                for k, (req, _) in enumerate(items):
                    row[n_t + k * n_t + t] = req[r]
                a_ub.append(row)
                b_ub.append(0.0)
        bounds = [(0, None)] * n_t + [(0, None) if allowed[k][t] else (0, 0) for k in range(n_k) for t in range(n_t)]
        expected = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")

        plan = assign(items, columns, allowed)

        if expected.status != 0:
            assert plan is None
            continue
        assert plan is not None
        cost = sum(x * p for x, (_, p) in zip(plan.nodes, columns, strict=True))
        assert cost == pytest.approx(expected.fun, rel=1e-7)
        for k, (_, n) in enumerate(items):
            assert sum(plan.pods[k]) == pytest.approx(n)


def test_node_slices_fill_every_node_but_the_last_and_never_overfill() -> None:
    # 2.5 compute nodes' worth of 1 cpu / 2 GiB pods: two full nodes and a half one.
    plan = Assignment(nodes=[2.5], pods=[[20.0]])

    slices = node_slices(plan, [(1, 2)], [(8, 16)])

    assert slices == [(0, [8]), (0, [8]), (0, [4])]


def test_node_slices_serve_pinned_pods_first_when_room_is_short() -> None:
    # The plan over-asks (rounding): 5 + 5 pods of 1 cpu on an 8-cpu node.
    plan = Assignment(nodes=[1.0], pods=[[5.0], [5.0]])

    (only,) = node_slices(plan, [(1, 1), (1, 1)], [(8, 8)], first=[False, True])

    assert only == (0, [3, 5])


def test_apportion_rounds_the_total_and_gives_the_extra_nodes_to_the_largest_fractions() -> None:
    parts = [[("c", 1.4), ("m", 0.2)], [("c", 1.45), ("m", 0.3)], [("c", 1.4), ("m", 0.1)]]

    # c: 4.25 -> 4 (floors 1, 1, 1; the largest fraction, plan 1, gets the 4th); m: 0.6 -> 1.
    assert apportion(parts) == [{"c": 1, "m": 0}, {"c": 2, "m": 1}, {"c": 1, "m": 0}]


def test_apportion_breaks_ties_by_plan_order() -> None:
    assert apportion([[("c", 0.5)], [("c", 0.5)], [("c", 0.5)]]) == [{"c": 1}, {"c": 1}, {"c": 0}]
