"""Topology: zone spread (maxSkew, minDomains, existing pods), hostname anti-affinity, zone
self-affinity, and bound pods' anti-affinity against new pods.

Faked: nothing; the real `solve()` runs on `scenario.catalog()` offered in three zones. Observed:
how many pods each zone and each claim receives, and the reasons of pods left unschedulable.
"""

from __future__ import annotations

from collections import Counter

import pytest

from nodewright.engine.scheduling import solve
from nodewright.engine.scheduling.binding import unbindable
from nodewright.model import labels as wk
from nodewright.model.pod import Pod
from tests.builders import ZONES, node, node_pool, pod
from tests.engine.scheduling.expect import (
    claim_of,
    expect_accounted,
    expect_claims,
    expect_fits,
    expect_on_claims,
    expect_placed,
    expect_unschedulable,
    node_of,
    placements,
    zone_of,
    zones_of_claims,
)
from tests.engine.scheduling.scenario import pods, pool, requirement, run, scheduling_input, spread, term

WEB = {"app": "web"}


# ---------------------------------------------------------------- zone spread


@pytest.mark.parametrize(
    ("count", "max_skew", "expected"),
    [
        (9, 1, [3, 3, 3]),
        (10, 1, [3, 3, 4]),
        (2, 1, [0, 1, 1]),
        (7, 2, [2, 2, 3]),
    ],
    ids=["nine-pods-three-each", "ten-pods", "two-pods", "max-skew-two"],
)
def test_zone_spread_balances_new_pods_over_the_three_zones(count: int, max_skew: int, expected: list[int]) -> None:
    result = run(pods(count, "w", labels=WEB, spread=(spread("web", max_skew=max_skew),)))

    expect_placed(result, [f"w-{i}" for i in range(count)])
    assert sorted(zones_of_claims(result)[z] for z in ZONES) == expected


def test_zone_spread_counts_matching_pods_already_on_an_existing_node() -> None:
    # Zone a already holds 3 web pods and has room for one more; 9 new pods make 12, so 4 per zone.
    full = node("n-a", cpu="1", labels={wk.ZONE: ZONES[0]})
    bound = pods(3, "old", labels=WEB, node_name="n-a", cpu="300m")

    result = run(pods(9, "w", labels=WEB, spread=(spread("web"),)), nodes=(full,), bound_pods=tuple(bound))

    per_zone = zones_of_claims(result)
    per_zone[ZONES[0]] += 3 + len(result.existing.get("n-a", ()))
    assert [per_zone[z] for z in ZONES] == [4, 4, 4]


def test_zone_spread_ignores_pods_the_selector_does_not_match() -> None:
    full = node("n-a", cpu="1", labels={wk.ZONE: ZONES[0]})
    bound = pods(3, "other", labels={"app": "other"}, node_name="n-a", cpu="300m")

    result = run(pods(9, "w", labels=WEB, spread=(spread("web"),)), nodes=(full,), bound_pods=tuple(bound))

    per_zone = zones_of_claims(result)
    per_zone[ZONES[0]] += len(result.existing.get("n-a", ()))
    assert [per_zone[z] for z in ZONES] == [3, 3, 3]


def test_zone_spread_is_limited_to_the_zones_the_pool_allows() -> None:
    two_zones = node_pool(requirements=[requirement(wk.ZONE, "In", ZONES[0], ZONES[1])])

    result = run(pods(6, "w", labels=WEB, spread=(spread("web"),)), pools=[pool(two_zones)])

    assert zones_of_claims(result) == Counter({ZONES[0]: 3, ZONES[1]: 3})


@pytest.mark.parametrize(
    ("min_domains", "placed", "unschedulable"),
    [(None, 4, 0), (2, 4, 0), (3, 2, 2)],
    ids=["no-min-domains", "min-domains-met", "min-domains-above-the-zones-available"],
)
def test_min_domains_above_the_reachable_zones_caps_each_zone_at_max_skew(
    min_domains: int | None, placed: int, unschedulable: int
) -> None:
    # With fewer eligible domains than minDomains the global minimum counts as 0 (kube-scheduler).
    two_zones = node_pool(requirements=[requirement(wk.ZONE, "In", ZONES[0], ZONES[1])])
    new = pods(4, "w", labels=WEB, spread=(spread("web", min_domains=min_domains),))

    result = run(new, pools=[pool(two_zones)])

    assert sum(len(c.pods) for c in result.claims) == placed
    assert len(result.unschedulable) == unschedulable
    for reason in result.unschedulable.values():
        assert "topology spread on topology.kubernetes.io/zone" in reason


def test_schedule_anyway_spread_is_relaxed_when_a_zone_cannot_be_used() -> None:
    # Only zone a is allowed by the pods' selector, so the soft spread gives way.
    soft = spread("web", when="ScheduleAnyway")

    result = run(pods(4, "w", labels=WEB, spread=(soft,), node_selector={wk.ZONE: ZONES[0]}))

    expect_on_claims(result, [f"w-{i}" for i in range(4)])
    assert zones_of_claims(result) == Counter({ZONES[0]: 4})


# ---------------------------------------------------------------- hostname anti-affinity


@pytest.mark.parametrize("count", [1, 4, 7], ids=["one", "four", "seven"])
def test_hostname_anti_affinity_puts_one_pod_per_claim(count: int) -> None:
    result = run(pods(count, "w", labels=WEB, anti_affinity=(term("web"),)))

    expect_claims(result, count)
    assert all(len(c.pods) == 1 for c in result.claims)


def test_hostname_anti_affinity_keeps_new_pods_off_a_node_holding_a_matching_pod() -> None:
    roomy = node("n1", cpu="8", memory="32Gi", labels={wk.ZONE: ZONES[0]})
    old = pod("old", labels=WEB, node_name="n1")

    result = run(pods(2, "w", labels=WEB, anti_affinity=(term("web"),)), nodes=(roomy,), bound_pods=(old,))

    assert "n1" not in result.existing
    expect_claims(result, 2)


def test_hostname_spread_with_max_skew_one_is_one_pod_per_claim() -> None:
    result = run(pods(3, "w", labels=WEB, spread=(spread("web", key=wk.HOSTNAME),)))

    expect_claims(result, 3)


# ---------------------------------------------------------------- zone affinity


def test_zone_self_affinity_puts_every_pod_in_one_zone() -> None:
    # Big enough to need several claims, so the zone has to be carried from one claim to the next.
    result = run(pods(6, "w", labels=WEB, cpu="1500m", affinity=(term("web", key=wk.ZONE),)))

    expect_on_claims(result, [f"w-{i}" for i in range(6)])
    assert len(result.claims) > 1
    assert len({zone_of(c) for c in result.claims}) == 1


def test_zone_affinity_follows_the_zone_of_an_existing_matching_pod() -> None:
    full = node("n-b", cpu="0", labels={wk.ZONE: ZONES[1]})
    db = pod("db", labels={"app": "db"}, node_name="n-b", cpu="0")

    result = run(pods(3, "w", labels=WEB, affinity=(term("db", key=wk.ZONE),)), nodes=(full,), bound_pods=(db,))

    expect_on_claims(result, ["w-0", "w-1", "w-2"])
    assert {zone_of(c) for c in result.claims} == {ZONES[1]}


def test_affinity_to_pods_that_exist_nowhere_is_unschedulable_naming_the_selector() -> None:
    result = run([pod("a", labels=WEB, affinity=(term("db", key=wk.ZONE),))])

    expect_unschedulable(result, "a", reason_contains="app=db")


# ---------------------------------------------------------------- bound pods' anti-affinity


def guarded_node(key: str) -> tuple[Pod, ...]:
    return (pod("guard", labels={"app": "guard"}, node_name="n1", anti_affinity=(term("web", key=key),)),)


def test_a_bound_pods_hostname_anti_affinity_keeps_the_pods_it_selects_off_its_node() -> None:
    roomy = node("n1", cpu="8", memory="32Gi", labels={wk.ZONE: ZONES[0]})
    new = [*pods(2, "w", labels=WEB), *pods(2, "x", labels={"app": "other"})]

    result = run(new, nodes=(roomy,), bound_pods=guarded_node(wk.HOSTNAME))

    expect_on_claims(result, ["w-0", "w-1"])
    assert node_of(result, "x-0") == node_of(result, "x-1") == "n1"


def test_a_bound_pods_zone_anti_affinity_keeps_the_pods_it_selects_out_of_its_zone() -> None:
    roomy = node("n1", cpu="8", memory="32Gi", labels={wk.ZONE: ZONES[0]})

    result = run(pods(2, "w", labels=WEB), nodes=(roomy,), bound_pods=guarded_node(wk.ZONE))

    assert "n1" not in result.existing
    for claim in result.claims:
        assert not claim.requirements.get_or_exists(wk.ZONE).has(ZONES[0])


def test_a_bound_pods_zone_anti_affinity_is_honoured_for_pods_that_spread_over_zones() -> None:
    full = node("n1", cpu="0", labels={wk.ZONE: ZONES[0]})
    new = pods(4, "w", labels=WEB, spread=(spread("web"),))

    inp = scheduling_input(new, nodes=(full,), bound_pods=guarded_node(wk.ZONE))
    result = solve(inp)

    assert set(zones_of_claims(result)) <= {ZONES[1], ZONES[2]}
    # The guarded zone still counts for the spread (its node is there, with none of these pods),
    # as kube-scheduler and Karpenter count it: one pod per other zone, the rest waits.
    assert len(placements(result)) == 2
    assert not unbindable(inp, result)


def test_spread_and_anti_affinity_together_place_every_pod_once_within_capacity() -> None:
    new = [
        *pods(5, "w", labels=WEB, spread=(spread("web"),)),
        *pods(3, "a", labels={"app": "a"}, anti_affinity=(term("a"),)),
    ]
    inp = scheduling_input(new)

    result = solve(inp)

    expect_accounted(inp, result)
    expect_fits(result, inp)
    assert all(claim_of(result, p) is not None for p in new)
