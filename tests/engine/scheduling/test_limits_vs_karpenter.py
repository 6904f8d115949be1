"""Under NodePool limits `solve()` places at least as many pods as Karpenter's algorithm, then
costs no more (issue 19 item 6).

The reference is `nodewright.reference.karpenter.scheduler.schedule`, the re-implementation of Karpenter v1's pod-by-pod
first fit the scheduling benchmark compares against: a new claim may only use types within the
pool's remaining limits and then counts its largest option against them, and one node against
`limits.nodes`. Faked: nothing; both run on the same `SchedulingInput` of bundled us-east-1
instance types (catalog estimates) and random limited workloads (Hypothesis: cpu, memory and node
limits), and on the 1,000-pod workloads of the benchmark (topology spread, affinity and
anti-affinity included) under cpu limits from 16 to 400 and node limits of 1, 3 and 10.
Observed: pods placed, $/h, and that both plans respect the limits.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.harness.workloads import WORKLOADS
from bench.reference import validate
from nodewright.adapters.offline_catalog import load_catalog
from nodewright.engine.scheduling import PoolCapacity, SchedulingInput, SchedulingResult, solve
from nodewright.model import labels as wk
from nodewright.model.instancetype import InstanceType
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from nodewright.reference.karpenter.scheduler import schedule as karpenter
from tests.builders import node_pool, pod
from tests.engine.scheduling.expect import expect_within_limits

EXAMPLES = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
FAMILIES = ("c6i", "m6i", "r6i", "m6g", "c7g")
SIZES = ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")
CPUS = ("100m", "250m", "500m", "1", "1500m", "2", "3")
MEMORY = ("128Mi", "512Mi", "1Gi", "2Gi", "4Gi", "6Gi")
EPSILON = 1e-6  # the catalog's estimated prices are rounded per type: sums of them differ in the last digits


@cache
def catalog() -> dict[str, InstanceType]:
    return {
        t.name: t for t in load_catalog() if t.name.partition(".")[0] in FAMILIES and t.name.partition(".")[2] in SIZES
    }


def placed(result: SchedulingResult) -> int:
    return sum(len(c.pods) for c in result.claims)


def compare(inp: SchedulingInput) -> tuple[SchedulingResult, SchedulingResult]:
    ours, theirs = solve(inp), karpenter(inp)
    for result in (ours, theirs):
        validate.check(result, inp.pods)
        expect_within_limits(inp, result)
    return ours, theirs


def expect_no_worse(inp: SchedulingInput) -> None:
    ours, theirs = compare(inp)
    assert placed(ours) >= placed(theirs), f"placed {placed(ours)} against Karpenter's {placed(theirs)}"
    binding = bool(ours.unschedulable or theirs.unschedulable)  # limits left pods out
    if binding and placed(ours) == placed(theirs):
        assert ours.price_per_hour <= theirs.price_per_hour * (1 + EPSILON), (
            ours.price_per_hour,
            theirs.price_per_hour,
        )


@st.composite
def limited_inputs(draw: st.DrawFn) -> SchedulingInput:
    names = sorted(catalog())
    types = draw(st.lists(st.sampled_from(names), min_size=2, max_size=12, unique=True))
    shapes = draw(
        st.lists(st.tuples(st.sampled_from(CPUS), st.sampled_from(MEMORY), st.integers(1, 80)), min_size=1, max_size=4)
    )
    pods: list[Pod] = []
    for s, (cpu, memory, count) in enumerate(shapes):
        pods += [pod(f"s{s}-{i}", cpu=cpu, memory=memory) for i in range(count)]
    pools = []
    for index in range(draw(st.integers(1, 2))):
        limits = {"cpu": str(draw(st.integers(2, 96)))}
        if draw(st.booleans()):
            limits["memory"] = f"{draw(st.integers(4, 384))}Gi"
        if draw(st.booleans()):
            limits["nodes"] = str(draw(st.integers(1, 4)))  # small: so it binds before cpu does
        capacity = draw(st.sampled_from([["on-demand"], ["spot"], ["spot", "on-demand"]]))
        pool = node_pool(
            f"pool-{index}",
            requirements=[{"key": wk.CAPACITY_TYPE, "operator": "In", "values": capacity}],
            limits=limits,
            weight=10 - index,
        )
        pools.append(PoolCapacity(pool, tuple(catalog()[n] for n in types)))
    used = {}
    if draw(st.booleans()):
        nodes = draw(st.integers(0, 3))  # what pool_usage counts for that many nodes of the pool
        used = {"pool-0": Resources.parse({"cpu": str(draw(st.integers(nodes, 8))), "nodes": str(nodes)})}
    return SchedulingInput(pods=tuple(pods), pools=tuple(pools), used=used)


@EXAMPLES
@given(limited_inputs())
def test_under_limits_solve_places_as_many_pods_as_karpenter_then_costs_no_more(inp: SchedulingInput) -> None:
    expect_no_worse(inp)


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
@pytest.mark.parametrize("cpu", ["16", "50", "200", "400"])
def test_a_thousand_pods_against_a_small_cpu_limit_place_at_least_karpenters_count(workload: str, cpu: str) -> None:
    pods = WORKLOADS[workload](1000)
    types = tuple(sorted(catalog().values(), key=lambda t: t.name))
    pool = replace(node_pool(), limits=Resources.parse({"cpu": cpu}))

    expect_no_worse(SchedulingInput(pods=tuple(pods), pools=(PoolCapacity(pool, types),)))


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
@pytest.mark.parametrize("nodes", ["1", "3", "10"])
def test_a_thousand_pods_against_a_small_node_limit_place_at_least_karpenters_count(workload: str, nodes: str) -> None:
    pods = WORKLOADS[workload](1000)
    types = tuple(sorted(catalog().values(), key=lambda t: t.name))
    pool = replace(node_pool(), limits=Resources.parse({"nodes": nodes}))

    inp = SchedulingInput(pods=tuple(pods), pools=(PoolCapacity(pool, types),))
    ours, theirs = compare(inp)
    assert len(ours.claims) <= int(nodes)
    assert len(theirs.claims) <= int(nodes)
    assert placed(ours) >= placed(theirs), f"placed {placed(ours)} against Karpenter's {placed(theirs)}"
