"""Capacity: limits, NodePool weights, offerings (blocked, spot vs on-demand), existing and
in-flight capacity, daemonset overhead, pods too big for any type, minValues and the option list.

Faked: nothing; the real `solve()` runs on `scenario.catalog()` or a catalog built in the test.
Observed: the claims (pool, options, offering, requests, pods), placements on existing capacity,
and the reasons of unschedulable pods.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.engine.scheduling import SchedulingInput, solve
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.resources import Resources
from tests.builders import ZONES, instance_type, node, node_pool, pod
from tests.engine.scheduling.expect import (
    claim_of,
    expect_accounted,
    expect_claims,
    expect_fits,
    expect_on_claims,
    expect_on_node,
    expect_placed,
    expect_tolerated,
    expect_unschedulable,
    expect_within_limits,
    label_values,
    type_names,
)
from tests.engine.scheduling.scenario import (
    GPU,
    catalog,
    daemonset,
    inflight,
    pods,
    pool,
    requirement,
    run,
    scheduling_input,
    spread,
    taint,
    tolerate,
)

# ---------------------------------------------------------------- limits


@pytest.mark.parametrize(
    ("limits", "used", "count", "placed"),
    [
        ({"cpu": "8"}, {}, 10, 4),
        ({"cpu": "8"}, {"cpu": "4"}, 10, 2),
        ({"cpu": "8"}, {"cpu": "8"}, 3, 0),
        ({"cpu": "100"}, {}, 10, 10),
        ({"memory": "16Gi"}, {}, 10, 4),
    ],
    ids=["cpu-limit", "cpu-limit-partly-used", "cpu-limit-used-up", "generous-limit", "memory-limit"],
)
def test_limits_cap_what_a_pool_launches_counting_the_largest_option_of_each_claim(
    limits: dict[str, str], used: dict[str, str], count: int, placed: int
) -> None:
    # 1.5 cpu each: one per 2-cpu type, so a 2-cpu (or 4Gi..16Gi) claim holds one pod.
    types = [
        instance_type("c5.large", cpu="2", memory="4Gi", price=0.085),
        instance_type("m5.xlarge", cpu="4", memory="16Gi", price=0.192),
    ]
    inp = scheduling_input(
        pods(count, "w", cpu="1500m", memory="1Gi"),
        pools=[pool(node_pool(limits=limits), types)],
        used={"default": Resources.parse(used)},
    )

    result = solve(inp)

    assert sum(len(c.pods) for c in result.claims) == placed
    expect_within_limits(inp, result)
    expect_accounted(inp, result)
    for reason in result.unschedulable.values():
        assert "limits reached" in reason


def test_a_claim_near_the_limit_drops_options_that_would_break_it() -> None:
    # 3 cpu left: the 4- and 8-cpu types would exceed the limit if launched.
    inp = scheduling_input([pod("a", cpu="1")], pools=[pool(node_pool(limits={"cpu": "3"}))])

    result = solve(inp)

    claim = claim_of(result, "a")
    assert claim is not None
    assert all(t.capacity["cpu"] <= 3000 for t in claim.options)
    expect_within_limits(inp, result)


def test_a_pool_whose_limit_no_type_fits_under_leaves_the_pod_to_the_next_pool_by_weight() -> None:
    # Every catalog type has at least 2 cpu, so a 1-cpu limit admits none of them.
    tiny = node_pool("tiny", weight=10, limits={"cpu": "1"})
    spare = node_pool("spare", weight=1)

    result = run([pod("a")], pools=[pool(tiny), pool(spare)])

    claim = claim_of(result, "a")
    assert claim is not None
    assert claim.nodepool == "spare"


def test_a_zero_cpu_limit_stops_the_pool_launching_anything() -> None:
    inp = scheduling_input([pod("a")], pools=[pool(node_pool(limits={"cpu": "0"}))])

    result = solve(inp)

    expect_claims(result, 0)
    expect_unschedulable(result, "a", reason_contains="limits reached")
    expect_within_limits(inp, result)


# ---------------------------------------------------------------- weights


@pytest.mark.parametrize(
    ("selector", "expected_pool"),
    [({}, "heavy"), ({wk.ARCH: "arm64"}, "light")],
    ids=["heavier-pool-first", "lighter-pool-when-the-heavier-cannot"],
)
def test_pools_are_tried_by_weight(selector: dict[str, str], expected_pool: str) -> None:
    # Heavy only has amd64 m5 (dearer than the cheapest catalog type): weight beats price.
    heavy = node_pool("heavy", weight=10, requirements=[requirement(wk.INSTANCE_FAMILY, "In", "m5")])
    light = node_pool("light", weight=1)

    result = run(pods(2, "w", node_selector=selector), pools=[pool(light), pool(heavy)])

    for claim in result.claims:
        assert claim.nodepool == expected_pool
    expect_on_claims(result, ["w-0", "w-1"])


def test_pods_overflow_to_the_lighter_pool_when_the_heavier_hits_its_limit() -> None:
    heavy = node_pool("heavy", weight=10, limits={"cpu": "4"})
    light = node_pool("light", weight=1)
    inp = scheduling_input(pods(4, "w", cpu="1500m"), pools=[pool(light), pool(heavy)])

    result = solve(inp)

    by_pool = {name: sum(len(c.pods) for c in result.claims if c.nodepool == name) for name in ("heavy", "light")}
    assert by_pool == {"heavy": 2, "light": 2}
    expect_within_limits(inp, result)


@pytest.mark.parametrize("lighter_limits", [None, {"cpu": "1000"}], ids=["no-limits", "with-limits"])
def test_pods_no_type_of_the_heavier_pool_holds_are_sized_by_the_demand_of_the_pool_they_go_to(
    lighter_limits: dict[str, str] | None,
) -> None:
    # The heavier pool's largest type (2 cpu) holds none of the 3-cpu pods. Counted as that pool's
    # demand, the lighter pool's claims aimed at the smallest type one pod fits: ten 4-cpu nodes
    # ($1.00/h) where two 16-cpu nodes ($0.80/h) hold the ten pods.
    small = [instance_type("c5.large", cpu="2", memory="4Gi", price=0.05)]
    big = [
        instance_type("c5.xlarge", cpu="4", memory="8Gi", price=0.10),
        instance_type("c5.4xlarge", cpu="16", memory="32Gi", price=0.40),
    ]
    heavy = node_pool("heavy", weight=90)
    light = node_pool("light", weight=10, limits=lighter_limits)
    inp = scheduling_input(pods(10, "batch", cpu="3", memory="1Gi"), pools=[pool(heavy, small), pool(light, big)])

    result = solve(inp)

    expect_on_claims(result, [f"batch-{i}" for i in range(10)])
    assert {c.nodepool for c in result.claims} == {"light"}
    assert sorted(c.instance_type.name for c in result.claims) == ["c5.4xlarge", "c5.4xlarge"]
    expect_within_limits(inp, result)


# ---------------------------------------------------------------- offerings


def m5_large() -> list[InstanceType]:
    return [instance_type("m5.large", price=0.096, spot_price=0.040)]


@pytest.mark.parametrize(
    ("blocked", "zones", "capacity_type"),
    [
        (set(), set(ZONES), "spot"),
        ({("spot", "m5.large", ZONES[0])}, {ZONES[1], ZONES[2]}, "spot"),
        ({("spot", "m5.large", z) for z in ZONES}, set(ZONES), "on-demand"),
        (
            {("spot", "m5.large", z) for z in ZONES} | {("on-demand", "m5.large", ZONES[0])},
            {ZONES[1], ZONES[2]},
            "on-demand",
        ),
    ],
    ids=["nothing-blocked", "spot-blocked-in-one-zone", "all-spot-blocked", "all-spot-and-one-on-demand-blocked"],
)
def test_blocked_offerings_are_never_chosen(
    blocked: set[tuple[str, str, str]], zones: set[str], capacity_type: str
) -> None:
    result = run([pod("a")], pools=[pool(types=m5_large())], blocked=frozenset(blocked))

    claim = claim_of(result, "a")
    assert claim is not None
    assert claim.offering.capacity_type == capacity_type
    assert claim.offering.zone in zones
    assert (claim.offering.capacity_type, "m5.large", claim.offering.zone) not in blocked


def test_a_type_with_every_offering_blocked_is_not_an_option() -> None:
    blocked = frozenset({(ct, "m5.large", z) for z in ZONES for ct in ("spot", "on-demand")})

    result = run([pod("a")], pools=[pool(types=m5_large())], blocked=blocked)

    expect_unschedulable(result, "a", reason_contains="no instance type is offered")


def test_a_claim_skips_a_type_whose_offerings_are_all_blocked() -> None:
    blocked = frozenset({(ct, "c5.large", z) for z in ZONES for ct in ("spot", "on-demand")})

    result = run([pod("a")], blocked=blocked)

    claim = claim_of(result, "a")
    assert claim is not None
    assert "c5.large" not in type_names(claim)


def test_a_spot_offering_pricier_than_on_demand_is_not_chosen() -> None:
    pricey_spot = [instance_type("m5.large", price=0.096, spot_price=0.200)]

    result = run([pod("a")], pools=[pool(types=pricey_spot)])

    claim = claim_of(result, "a")
    assert claim is not None
    assert claim.offering.capacity_type == "on-demand"
    assert claim.offering.price == pytest.approx(0.096)


@pytest.mark.parametrize(
    ("capacity_types", "expected"),
    [(("spot",), "spot"), (("on-demand",), "on-demand"), (("spot", "on-demand"), "spot")],
    ids=["spot-only-pool", "on-demand-only-pool", "both-prefers-cheaper-spot"],
)
def test_the_pool_capacity_type_decides_the_offering(capacity_types: tuple[str, ...], expected: str) -> None:
    nodepool = node_pool(requirements=[requirement(wk.CAPACITY_TYPE, "In", *capacity_types)])

    result = run([pod("a")], pools=[pool(nodepool, m5_large())])

    claim = claim_of(result, "a")
    assert claim is not None
    assert claim.offering.capacity_type == expected


# ---------------------------------------------------------------- existing and in-flight capacity


def test_pods_go_to_an_existing_node_with_room_before_any_new_claim() -> None:
    roomy = node("n1", cpu="4", memory="16Gi", labels={wk.ZONE: ZONES[0]})

    result = run(pods(3, "w", cpu="1"), nodes=(roomy,))

    expect_claims(result, 0)
    expect_on_node(result, ["w-0", "w-1", "w-2"], "n1")


def test_pods_go_to_an_in_flight_claim_before_any_new_claim() -> None:
    result = run(pods(3, "w", cpu="500m"), inflight=(inflight("nc-1", "m5.large"),))

    expect_claims(result, 0)
    expect_on_node(result, ["w-0", "w-1", "w-2"], "nc-1")


def test_existing_nodes_then_in_flight_claims_then_new_claims_take_the_overflow() -> None:
    small = node("n1", cpu="1", labels={wk.ZONE: ZONES[1]})
    inp = scheduling_input(pods(5, "w", cpu="1"), nodes=(small,), inflight=(inflight("nc-1", "m5.large"),))

    result = solve(inp)

    where = sorted(len(v) for v in result.existing.values())
    assert where == [1, 2]
    assert sum(len(c.pods) for c in result.claims) == 2
    expect_accounted(inp, result)
    expect_fits(result, inp)


def test_an_existing_node_counts_its_bound_pods_against_its_room() -> None:
    busy = node("n1", cpu="2", labels={wk.ZONE: ZONES[0]})
    bound = pod("old", cpu="1500m", node_name="n1")
    inp = scheduling_input(pods(2, "w", cpu="500m"), nodes=(busy,), bound_pods=(bound,))

    result = solve(inp)

    assert result.existing == {"n1": ("default/w-0",)}
    expect_on_claims(result, ["w-1"])
    expect_fits(result, inp)


@pytest.mark.parametrize(
    ("change", "taken"),
    [
        ({"taints": [taint("dedicated")]}, False),
        ({"unschedulable": True}, False),
        ({"deleting": True}, False),
        ({"taints": [taint("node.kubernetes.io/not-ready")]}, True),
        # PreferNoSchedule counts as NoSchedule until relaxed, and an untainted pool can take the pod.
        ({"taints": [taint("soft", "PreferNoSchedule")]}, False),
    ],
    ids=["tainted", "cordoned", "being-deleted", "not-ready-taint-ignored", "prefer-no-schedule-avoided"],
)
def test_an_existing_node_takes_pods_only_when_usable(change: dict[str, Any], taken: bool) -> None:
    candidate = node("n1", cpu="4", memory="16Gi", labels={wk.ZONE: ZONES[0]}, **change)

    result = run([pod("a")], nodes=(candidate,))

    if taken:
        expect_on_node(result, ["a"], "n1")
    else:
        expect_on_claims(result, ["a"])


def test_pods_that_do_not_tolerate_a_nodes_taint_stay_off_it_even_after_pods_that_do() -> None:
    tainted = tuple(
        node(f"n{i}", cpu="8", memory="32Gi", labels={wk.ZONE: zone}, taints=[taint("dedicated")])
        for i, zone in enumerate(ZONES)
    )
    tolerant = pods(3, "a", cpu="1", labels={"app": "a"}, tolerations=[tolerate("dedicated")], spread=(spread("a"),))
    intolerant = pods(3, "b", cpu="500m", labels={"app": "b"}, spread=(spread("b"),))
    inp = scheduling_input([*tolerant, *intolerant], nodes=tainted)

    result = solve(inp)

    expect_on_node(result, ["a-0"], "n0")
    expect_on_claims(result, ["b-0", "b-1", "b-2"])
    expect_tolerated(inp, result)


def test_a_prefer_no_schedule_node_is_used_when_nothing_else_can_take_the_pod() -> None:
    soft = node("n1", cpu="4", memory="16Gi", labels={wk.ZONE: ZONES[0]}, taints=[taint("soft", "PreferNoSchedule")])

    result = run([pod("a")], nodes=(soft,), pools=[])

    expect_on_node(result, ["a"], "n1")


def test_a_node_named_like_an_instance_type_does_not_change_which_types_a_claim_may_use() -> None:
    stranger = node("m5.large", labels={wk.ZONE: ZONES[0], wk.NODEPOOL: "other"})
    new = pod("a", node_selector={wk.NODEPOOL: "default"})

    result = run([new], nodes=(stranger,), pools=[pool(types=[instance_type("m5.large")])])

    claim = claim_of(result, "a")
    assert claim is not None
    assert type_names(claim) == ["m5.large"]


def test_an_existing_node_must_match_the_pods_node_selector() -> None:
    amd = node("n1", cpu="4", memory="16Gi", labels={wk.ZONE: ZONES[0], wk.ARCH: "amd64"})

    result = run([pod("a", node_selector={wk.ARCH: "arm64"})], nodes=(amd,))

    expect_on_claims(result, ["a"])


# ---------------------------------------------------------------- daemonsets


def test_daemonset_overhead_is_included_in_the_claim_requests_and_shrinks_what_fits() -> None:
    # 1.5 cpu + 0.6 cpu of daemonset do not fit a 2-cpu type.
    result = run([pod("a", cpu="1500m")], daemonsets=(daemonset("agent", cpu="600m", memory="256Mi"),))

    claim = claim_of(result, "a")
    assert claim is not None
    assert claim.requests["cpu"] == 2100
    assert claim.requests["memory"] == (128 + 256) * 2**20 * 1000
    assert all(t.capacity["cpu"] >= 4000 for t in claim.options)
    expect_fits(result)


def test_without_daemonsets_the_same_pod_fits_a_two_cpu_type() -> None:
    result = run([pod("a", cpu="1500m")])

    claim = claim_of(result, "a")
    assert claim is not None
    assert claim.options[0].capacity["cpu"] == 2000


def test_a_daemonset_that_does_not_tolerate_the_pool_taint_adds_no_overhead() -> None:
    tainted = node_pool(taints=[taint("dedicated")])
    new = pod("a", cpu="1500m", tolerations=[tolerate("dedicated")])

    result = run([new], pools=[pool(tainted)], daemonsets=(daemonset("agent", cpu="600m"),))

    claim = claim_of(result, "a")
    assert claim is not None
    assert claim.requests["cpu"] == 1500
    assert claim.options[0].capacity["cpu"] == 2000


def test_a_daemonset_that_tolerates_the_pool_taint_adds_its_overhead() -> None:
    tainted = node_pool(taints=[taint("dedicated")])
    new = pod("a", cpu="1500m", tolerations=[tolerate("dedicated")])
    agent = daemonset("agent", cpu="600m", tolerations=[tolerate("dedicated")])

    result = run([new], pools=[pool(tainted)], daemonsets=(agent,))

    claim = claim_of(result, "a")
    assert claim is not None
    assert claim.requests["cpu"] == 2100


def test_a_daemonset_selecting_another_arch_adds_no_overhead_to_this_arch() -> None:
    arm_agent = daemonset("arm-agent", cpu="600m", node_selector={wk.ARCH: "arm64"})

    result = run([pod("a", cpu="1500m", node_selector={wk.ARCH: "amd64"})], daemonsets=(arm_agent,))

    claim = claim_of(result, "a")
    assert claim is not None
    assert claim.requests["cpu"] == 1500


# ---------------------------------------------------------------- too big


@pytest.mark.parametrize(
    ("fields", "fragments"),
    [
        ({"cpu": "200"}, ["200 cpu", "largest has 96"]),
        ({"memory": "1000Gi"}, ["1000Gi memory", "largest has 384Gi"]),
        ({"extra": {"nvidia.com/gpu": "8"}}, ["8 nvidia.com/gpu"]),
        pytest.param({"extra": {"example.com/fpga": "1"}}, ["example.com/fpga"]),
    ],
    ids=["cpu", "memory", "gpu", "resource-no-type-has"],
)
def test_a_pod_bigger_than_every_type_is_unschedulable_naming_the_resource(
    fields: dict[str, Any], fragments: list[str]
) -> None:
    result = run([pod("a", **fields)])

    expect_claims(result, 0)
    expect_unschedulable(result, "a", reason_contains=fragments)


def test_a_gpu_pod_on_a_pool_without_gpu_types_is_unschedulable_naming_the_gpu() -> None:
    no_gpus = [t for t in catalog() if not t.capacity.get(GPU)]

    result = run([pod("a", extra={GPU: "1"})], pools=[pool(types=no_gpus)])

    expect_unschedulable(result, "a", reason_contains=GPU)


def test_daemonset_overhead_is_counted_when_deciding_a_pod_is_too_big() -> None:
    result = run([pod("a", cpu="95")], daemonsets=(daemonset("agent", cpu="2"),))

    expect_unschedulable(result, "a", reason_contains=["95 cpu", "after daemonsets"])


# ---------------------------------------------------------------- minValues and options


def test_min_values_keeps_at_least_that_many_families_among_the_options() -> None:
    families = requirement(wk.INSTANCE_FAMILY, "In", "c5", "m5", "r5", "m6g", min_values=3)

    result = run([pod("a", cpu="1")], pools=[pool(node_pool(requirements=[families]))])

    claim = claim_of(result, "a")
    assert claim is not None
    assert len(label_values(claim, wk.INSTANCE_FAMILY)) >= 3


def test_min_values_keeps_more_than_sixty_options_when_the_cheapest_sixty_lack_the_families() -> None:
    # 70 cheap types of family "a" and one dear type of family "b": minValues 2 needs the dear one.
    types = [instance_type(f"a.size{i}", price=0.01 + i / 1000) for i in range(70)]
    types.append(instance_type("b.large", price=5.0))
    families = requirement(wk.INSTANCE_FAMILY, "Exists", min_values=2)

    result = run([pod("a")], pools=[pool(node_pool(requirements=[families]), types)])

    claim = claim_of(result, "a")
    assert claim is not None
    assert label_values(claim, wk.INSTANCE_FAMILY) == {"a", "b"}
    assert type_names(claim)[-1] == "b.large"
    assert len(claim.options) == 71


@pytest.mark.parametrize(
    ("min_values", "pod_fields"),
    [(5, {"cpu": "100m"}), (3, {"cpu": "3", "memory": "12Gi"})],
    ids=["more-families-than-the-pool-has", "more-families-than-fit-the-pod"],
)
def test_impossible_min_values_leave_the_pod_unschedulable_naming_the_requirement(
    min_values: int, pod_fields: dict[str, Any]
) -> None:
    families = requirement(wk.INSTANCE_FAMILY, "In", "c5", "m5", "r5", "m6g", min_values=min_values)

    result = run([pod("a", **pod_fields)], pools=[pool(node_pool(requirements=[families]))])

    expect_claims(result, 0)
    expect_unschedulable(result, "a", reason_contains=[wk.INSTANCE_FAMILY, f"minValues {min_values}"])


def many_types(count: int) -> list[InstanceType]:
    # Names and prices in opposite orders, so "cheapest first" is not "first by name".
    return [
        instance_type(f"t{i:02d}.large", cpu=str(2 + i % 4), memory=f"{4 + 4 * (i % 3)}Gi", price=0.01 * (count - i))
        for i in range(count)
    ]


def test_a_claim_offers_at_most_sixty_options_cheapest_first_all_fitting_it() -> None:
    result = run(pods(3, "w", cpu="1"), pools=[pool(types=many_types(80))])

    for claim in result.claims:
        assert len(claim.options) == 60
        prices = [min(o.price for o in t.offerings) for t in claim.options]
        assert prices == sorted(prices)
        assert claim.offering.price == prices[0]
    expect_fits(result)


def test_options_exclude_types_too_small_for_the_claims_pods() -> None:
    result = run(pods(2, "w", cpu="1500m"), pools=[pool(types=many_types(80))])

    expect_fits(result)
    for claim in result.claims:
        assert all(t.allocatable["cpu"] >= claim.requests["cpu"] for t in claim.options)


def test_the_claim_offering_is_the_cheapest_offering_of_its_first_option() -> None:
    result = run([pod("a")])

    claim = claim_of(result, "a")
    assert claim is not None
    first = claim.options[0]
    assert claim.offering in first.offerings
    assert claim.offering.price == min(o.price for o in first.offerings)
    assert result.price_per_hour == pytest.approx(claim.offering.price)


def test_pods_share_claims_instead_of_opening_one_each() -> None:
    inp = scheduling_input(pods(20, "w", cpu="250m", memory="256Mi"))

    result = solve(inp)

    expect_placed(result, [f"w-{i}" for i in range(20)])
    assert len(result.claims) < 5
    expect_fits(result, inp)


def test_an_empty_input_opens_nothing() -> None:
    result = solve(SchedulingInput(pods=(), pools=(pool(),)))

    assert result.claims == ()
    assert dict(result.unschedulable) == {}


def test_no_pool_at_all_leaves_every_pod_unschedulable_saying_so() -> None:
    result = run([pod("a")], pools=[])

    expect_unschedulable(result, "a", reason_contains="no NodePool is configured")
