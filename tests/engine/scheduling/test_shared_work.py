"""Work the solver shares between solves and strategies gives exactly the results of doing it afresh.

A `SolverCache` remembers each NodePool's view of the catalog across solves (`prepared`), and what
the solver reads of each bound pod and node (`pod_facts`, `node_facts`); one `solve()` call
computes the bound pods' load once for all its strategies (`existing.BoundPods`). All are pure
caches: these tests solve with one warm, cold and switched off, and compare whole results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from nodewright.engine.scheduling import PORTFOLIO, SchedulingInput, SchedulingResult, SolverCache, existing, solve
from nodewright.model import labels as wk
from nodewright.model.pod import Pod
from tests.builders import ZONES, instance_type, node, pod
from tests.engine.scheduling.scenario import (
    catalog,
    daemonset,
    inflight,
    pods,
    pool,
    scheduling_input,
    spread,
    term,
)


def _bound(name: str, count: int, app: str, *, cpu: str = "500m") -> list[Pod]:
    return [
        pod(f"{name}-{app}-{i}", cpu=cpu, memory="512Mi", labels={"app": app}, node_name=name) for i in range(count)
    ]


def _inputs() -> dict[str, SchedulingInput]:
    nodes = tuple(
        node(f"n{i}", cpu="4", memory="16Gi", labels={wk.ZONE: ZONES[i % len(ZONES)], wk.CAPACITY_TYPE: "spot"})
        for i in range(4)
    )
    bound = tuple(_bound("n0", 3, "api") + _bound("n1", 2, "api") + _bound("n1", 2, "web") + _bound("n2", 1, "api"))
    spread_pods = pods(9, "api", cpu="500m", memory="1Gi", labels={"app": "api"}, spread=(spread("api"),))
    mixed = pods(10, "cpu", cpu="2", memory="1Gi") + pods(10, "mem", cpu="250m", memory="6Gi")
    return {
        "mixed": scheduling_input(mixed),
        "daemonsets-and-blocked": scheduling_input(
            mixed,
            daemonsets=(daemonset("node-exporter", cpu="200m", memory="256Mi"),),
            blocked=frozenset({("on-demand", "m5.xlarge", ZONES[0]), ("spot", "c5.xlarge", ZONES[1])}),
        ),
        "spread-over-bound-pods": scheduling_input(spread_pods, nodes=nodes, bound_pods=bound),
        "anti-affinity-and-inflight": scheduling_input(
            pods(5, "solo", cpu="1", memory="1Gi", labels={"app": "solo"}, anti_affinity=(term("solo"),))
            + pods(12, "web", cpu="500m", memory="512Mi"),
            nodes=nodes,
            bound_pods=bound + tuple(_bound("n3", 1, "solo")),
            inflight=(inflight("claim-a", "m5.xlarge"),),
        ),
    }


def _nothing_kept() -> SolverCache:
    """A cache that forgets everything at once: every pass of a solve prepares its pools anew."""
    return SolverCache(prepared=0, pod_facts=0, node_facts=0, bound_runs=0)


def _fresh(inp: SchedulingInput, strategy: object = None) -> SchedulingResult:
    """Solve with nothing remembered."""
    if strategy is None:
        return solve(inp, cache=_nothing_kept())
    return solve(inp, strategy, cache=_nothing_kept())  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(_inputs()))
def test_a_warm_cache_gives_the_results_of_a_cold_one(name: str) -> None:
    inp = _inputs()[name]
    expected = _fresh(inp)
    cache = SolverCache()
    assert solve(inp, cache=cache) == expected  # cold
    assert solve(inp, cache=cache) == expected  # warm: every pool's types come from the cache
    assert solve(inp) == expected  # no cache: one of its own for the call
    for strategy in PORTFOLIO:
        assert solve(inp, strategy, cache=cache) == _fresh(inp, strategy)


def test_a_cut_of_the_catalog_after_the_whole_gives_the_fresh_result() -> None:
    # As consolidation does: the whole catalog first, then only the types below some price.
    inp = _inputs()["mixed"]
    cache = SolverCache()
    solve(inp, cache=cache)
    types = catalog()
    for size in (3, 6, len(types) - 1):
        cut = replace(inp, pools=(pool(types=sorted(types, key=lambda t: t.name)[:size]),))
        assert solve(cut, cache=cache) == _fresh(cut)


def test_equal_inputs_built_again_hit_and_changed_inputs_do_not() -> None:
    inp = _inputs()["daemonsets-and-blocked"]
    cache = SolverCache()
    first = solve(inp, cache=cache)
    # Equal values in new objects (a catalog and daemonsets read again) give the same plan.
    again = replace(inp, pools=(pool(types=catalog()),), daemonsets=tuple(replace(d) for d in inp.daemonsets))
    assert solve(again, cache=cache) == first
    assert len(cache.prepared) == 1  # the equal NodePool, daemonsets and blocked set hit
    # Blocking the offering a claim was priced with changes the plan, as it does when solved afresh.
    claim = first.claims[0]
    blocked = inp.blocked | {(claim.offering.capacity_type, claim.instance_type.name, claim.offering.zone)}
    changed = replace(inp, blocked=blocked)
    assert solve(changed, cache=cache) == _fresh(changed)
    assert solve(changed, cache=cache) != first
    # A type's price changes (a rebuilt catalog): the new price is what the plan uses.
    cheaper = [
        instance_type(t.name, cpu="4", memory="16Gi", price=0.001) if t.name == "m5.xlarge" else t for t in catalog()
    ]
    repriced = replace(inp, pools=(pool(types=cheaper),))
    assert solve(repriced, cache=cache) == _fresh(repriced)


def _one_by_one(self: existing.BoundPods, bound_pods: Sequence[Pod], names: tuple[str, ...]) -> object:
    """`BoundPods.get` without grouping alike pods: every pod recorded on its own."""
    hit = original(self, bound_pods, names)
    return existing.Bound(hit.used, hit.pods, {n: [(p, 1) for p in node_pods] for n, node_pods in hit.pods.items()})


original = existing.BoundPods.get


@pytest.mark.parametrize("name", ["spread-over-bound-pods", "anti-affinity-and-inflight"])
def test_recording_alike_bound_pods_once_counts_as_recording_each(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    inp = _inputs()[name]
    grouped = solve(inp)
    monkeypatch.setattr(existing.BoundPods, "get", _one_by_one)
    assert solve(inp) == grouped
