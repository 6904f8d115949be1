"""A `SolverCache` never changes a result: `solve()` with a fresh cache, with one shared and warm
from other solves, and with none gives the same claims, prices, placements and reasons (Hypothesis).

Faked: nothing; random small clusters (`test_invariants.scheduling_inputs`: catalogs, NodePools
with limits and taints, pods with spread and affinity, nodes with bound pods, daemonsets, blocked
offerings) go through the real `solve()`. Observed: whole `SchedulingResult`s compared for
equality, the strategies of the portfolio included; and that a shared cache is actually used.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.engine.scheduling import PORTFOLIO, SchedulingInput, SolverCache, Strategy, solve
from tests.engine.scheduling.test_invariants import scheduling_inputs

EXAMPLES = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
STRATEGIES = st.sampled_from([None, *PORTFOLIO])


@EXAMPLES
@given(st.lists(st.tuples(scheduling_inputs(), STRATEGIES), min_size=1, max_size=4))
def test_a_fresh_a_shared_warm_and_no_cache_give_the_same_results(
    questions: list[tuple[SchedulingInput, Strategy | None]],
) -> None:
    shared = SolverCache()
    # Asked twice in a row with the shared cache: the second round hits what every earlier solve left.
    for _ in range(2):
        for inp, strategy in questions:
            fresh = solve(inp, strategy, cache=SolverCache())
            assert solve(inp, strategy) == fresh
            assert solve(inp, strategy, cache=shared) == fresh
            if fresh.claims:
                # The provisioner's re-plan after a capacity error: the same input, one more offering blocked.
                claim = fresh.claims[0]
                offering = (claim.offering.capacity_type, claim.instance_type.name, claim.offering.zone)
                replan = replace(inp, blocked=inp.blocked | {offering})
                assert solve(replan, strategy, cache=shared) == solve(replan, strategy, cache=SolverCache())
    pools = {pc.nodepool.name for inp, _ in questions for pc in inp.pools}
    assert bool(len(shared.prepared)) == bool(pools)


@EXAMPLES
@given(scheduling_inputs(gpu_pods=True), scheduling_inputs())
def test_a_cache_warm_from_another_cluster_gives_the_fresh_result(
    first: SchedulingInput, then: SchedulingInput
) -> None:
    shared = SolverCache()
    solve(first, cache=shared)
    assert solve(then, cache=shared) == solve(then, cache=SolverCache())
