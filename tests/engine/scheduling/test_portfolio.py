"""Small passes try every fill strategy and keep the best plan; classes of equal size go in an
order their spec decides, never their pods' names."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from nodewright.engine.scheduling import PORTFOLIO, SchedulingResult, Strategy, solve
from nodewright.engine.scheduling.classes import class_key, group, orders_differ
from nodewright.engine.scheduling.portfolio import PORTFOLIO_LIMIT
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from tests.builders import ZONES, instance_type, node_pool
from tests.engine.scheduling.expect import canonical, zone_of
from tests.engine.scheduling.scenario import pods, pool, scheduling_input, spread, term

# Hostname anti-affinity forces one node per "solo" pod; where the generic pods go then decides
# the bill: first fit piles them on the oldest claims, emptiest-first spreads them like Karpenter.
FORCED = [*pods(6, "solo", cpu="1500m", memory="1Gi", labels={"app": "solo"}, anti_affinity=(term("solo"),))]
WORKLOADS = {
    "forced-nodes": FORCED + pods(12, "web", cpu="500m", memory="512Mi"),
    "uniform": pods(40, "web", cpu="1", memory="2Gi"),
    "mixed": pods(10, "cpu", cpu="2", memory="1Gi") + pods(10, "mem", cpu="250m", memory="6Gi"),
}


def _key(result: SchedulingResult) -> tuple[int, float]:
    return len(result.unschedulable), round(result.price_per_hour, 9)


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_the_chosen_plan_is_never_worse_than_any_single_strategy(workload: str) -> None:
    inp = scheduling_input(WORKLOADS[workload])
    chosen = solve(inp)
    for strategy in PORTFOLIO:
        assert _key(chosen) <= _key(solve(inp, strategy)), strategy


def test_a_given_strategy_runs_alone_and_places_every_pod() -> None:
    result = solve(scheduling_input(WORKLOADS["forced-nodes"]), Strategy(emptiest_first=True))
    assert not result.unschedulable
    assert sum(len(c.pods) for c in result.claims) == len(WORKLOADS["forced-nodes"])
    assert len(result.claims) >= 6  # one node per solo pod at least


# -- the planned fill (Strategy.lp_plan) ------------------------------------------------------------

PLANNED = Strategy(mix_shapes=True, lp_plan=True)
OVERHEAD = Resources.of(cpu="200m", memory="1Gi")  # per node: larger nodes are cheaper per unit


def ladder() -> list[InstanceType]:
    """Compute, general and memory families from large to 16xlarge, priced linearly in size."""
    out = []
    for size, mult in (("large", 0.5), ("xlarge", 1), ("2xlarge", 2), ("4xlarge", 4), ("8xlarge", 8), ("16xlarge", 16)):
        for family, gib_per_4_cpu, price in (("c6", 8, 0.136), ("m6", 16, 0.154), ("r6", 32, 0.2016)):
            out.append(
                instance_type(
                    f"{family}.{size}",
                    cpu=str(int(4 * mult)),
                    memory=f"{int(gib_per_4_cpu * mult)}Gi",
                    pods=110,
                    price=round(price * mult, 4),
                    overhead=OVERHEAD,
                )
            )
    return out


# A web shop in miniature: two services spread over zones (maxSkew 1), one not; cache pods need
# 12 GiB per cpu, the rest 1 or 2, so the cheapest plan mixes compute and memory-rich nodes.
SERVICES = (
    pods(300, "web", cpu="1", memory="1Gi", labels={"app": "web"}, spread=(spread("web"),))
    + pods(200, "api", cpu="500m", memory="1Gi", labels={"app": "api"})
    + pods(90, "cache", cpu="500m", memory="6Gi", labels={"app": "cache"}, spread=(spread("cache"),))
)


def test_the_planned_fill_beats_greedy_packing_when_the_workload_needs_a_mix_of_families() -> None:
    inp = scheduling_input(SERVICES, pools=[pool(types=ladder())])

    planned = solve(inp, PLANNED)

    assert not planned.unschedulable
    assert sum(len(c.pods) for c in planned.claims) == len(SERVICES)
    for strategy in PORTFOLIO:
        if strategy != PLANNED:
            assert planned.price_per_hour < solve(inp, strategy).price_per_hour, strategy
    assert _key(solve(inp)) == _key(planned)


def test_the_planned_fill_keeps_zone_spread_within_max_skew() -> None:
    result = solve(scheduling_input(SERVICES, pools=[pool(types=ladder())]), PLANNED)

    for app in ("web", "cache"):
        per_zone = Counter(zone_of(c) for c in result.claims for p in c.pods if p.labels["app"] == app)
        assert set(per_zone) == set(ZONES)
        assert max(per_zone.values()) - min(per_zone.values()) <= 1, (app, per_zone)


def test_the_planned_fill_leaves_pools_with_limits_to_the_usual_pass() -> None:
    limited = pool(node_pool(limits={"cpu": "1000"}), types=ladder())
    inp = scheduling_input(SERVICES, pools=[limited])

    assert canonical(solve(inp, PLANNED)) == canonical(solve(inp, Strategy(mix_shapes=True)))


# -- the order of classes of equal size (classes.group, Strategy.other_order) -------------------------

# One size, three kinds: hostname anti-affinity (a node each), a hostname spread over every pod of
# the size, and free pods; the spread counts all of them, so nothing is mixable (`mix.py`).
SAME_SIZE = (
    pods(4, "solo", cpu="500m", memory="1Gi", labels={"app": "solo"}, anti_affinity=(term("solo"),))
    + pods(6, "spread", cpu="500m", memory="1Gi", labels={"app": "x"}, spread=(spread("x", key=wk.HOSTNAME),))
    + pods(9, "free", cpu="500m", memory="1Gi", labels={"app": "x"})
)


def _renamed(workload: list[Pod]) -> list[Pod]:
    """The same pods with their names handed out in reverse, so the names sort the other way."""
    names = [p.name for p in reversed(workload)]
    return [replace(p, name=n, uid=n) for p, n in zip(workload, names, strict=True)]


def test_classes_of_equal_size_go_most_constrained_first_whatever_their_names() -> None:
    workload = SAME_SIZE
    first = [c.sample.name.split("-")[0] for c in group(workload)]
    renamed = [class_key(c.sample) for c in group(_renamed(workload))]

    assert first == ["solo", "spread", "free"]
    assert renamed == [class_key(c.sample) for c in group(workload)]
    assert [c.sample.name.split("-")[0] for c in group(workload, other_order=True)] == ["free", "spread", "solo"]
    assert orders_differ(group(workload))
    assert not orders_differ(
        group(pods(3, "a", cpu="1", labels={"app": "a"}) + pods(3, "b", cpu="1", labels={"app": "b"}))
    )


def test_renaming_the_pods_of_a_workload_with_classes_of_equal_size_changes_no_plan() -> None:
    inp = scheduling_input(SAME_SIZE)
    renamed = scheduling_input(_renamed(SAME_SIZE))

    for strategy in (None, *PORTFOLIO):
        first = solve(inp) if strategy is None else solve(inp, strategy)
        second = solve(renamed) if strategy is None else solve(renamed, strategy)
        assert second.price_per_hour == pytest.approx(first.price_per_hour), strategy
        assert sorted(len(c.pods) for c in second.claims) == sorted(len(c.pods) for c in first.claims), strategy


def test_a_shape_mixing_pass_with_nothing_to_mix_is_the_first_fit_pass_it_is_skipped_for() -> None:
    inp = scheduling_input(SAME_SIZE)

    assert canonical(solve(inp, Strategy(mix_shapes=True))) == canonical(solve(inp, Strategy()))
    assert _key(solve(inp)) == min(_key(solve(inp, s)) for s in PORTFOLIO)


# -- the pods that each need a node (Strategy.forced_first) ------------------------------------------


def _solos_and_others(solos: int, others: int) -> list[Pod]:
    """Small pods that each need a node of their own, and larger free pods to keep them company."""
    return [
        *pods(solos, "solo", cpu="250m", memory="256Mi", labels={"app": "solo"}, anti_affinity=(term("solo"),)),
        *pods(others // 2, "web", cpu="1", memory="1Gi"),
        *pods(others - others // 2, "api", cpu="500m", memory="2Gi"),
    ]


def _one_solo_per_node(result: SchedulingResult, solos: int) -> None:
    per_claim = [sum(p.labels.get("app") == "solo" for p in c.pods) for c in result.claims]
    assert max(per_claim) == 1
    assert sum(per_claim) == solos


def test_placing_the_pods_that_each_need_a_node_first_fills_their_nodes_with_the_others() -> None:
    # Largest first, the small solo pods come last and get a node each with nothing beside them.
    inp = scheduling_input(_solos_and_others(40, 120))

    forced = solve(inp, Strategy(forced_first=True))
    first_fit = solve(inp, Strategy())

    assert not forced.unschedulable
    _one_solo_per_node(forced, 40)
    assert forced.price_per_hour < first_fit.price_per_hour
    assert solve(inp).price_per_hour == pytest.approx(forced.price_per_hour)


def test_a_large_input_with_pods_that_each_need_a_node_gets_the_forced_first_plan() -> None:
    # Above the portfolio's limit one pass runs: with anti-affinity forcing two nodes or more,
    # the forced-first one, whose plan costs less than first fit's.
    inp = scheduling_input(_solos_and_others(1_200, 4_800))
    assert len(inp.pods) > PORTFOLIO_LIMIT

    chosen = solve(inp)
    first_fit = solve(inp, Strategy())

    assert not chosen.unschedulable
    assert canonical(chosen) == canonical(solve(inp, Strategy(forced_first=True)))
    _one_solo_per_node(chosen, 1_200)
    assert chosen.price_per_hour < first_fit.price_per_hour


def test_a_large_input_without_pods_that_each_need_a_node_gets_first_fit() -> None:
    # One solo pod forces no second node: first fit, as the portfolio would skip the pass too.
    inp = scheduling_input(_solos_and_others(1, PORTFOLIO_LIMIT))
    assert len(inp.pods) > PORTFOLIO_LIMIT

    assert canonical(solve(inp)) == canonical(solve(inp, Strategy()))


def test_without_pods_that_each_need_a_node_the_forced_first_pass_is_skipped() -> None:
    inp = scheduling_input(WORKLOADS["uniform"])

    assert canonical(solve(inp, Strategy(forced_first=True))) == canonical(solve(inp, Strategy()))
