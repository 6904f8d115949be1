"""Work the solver shares between solves and strategies gives exactly the results of doing it afresh.

`_PREPARED` remembers each NodePool's view of the catalog across solves, `_POD_FACTS` and
`_NODE_FACTS` what the solver reads of each bound pod and node, and one `solve()` call computes
the bound pods' load once for all its strategies (`_Shared`). All are pure caches: these tests
solve with them warm, cold and switched off, and compare whole results.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import pytest

from nodewright.engine.scheduling import PORTFOLIO, SchedulingInput, SchedulingResult, solve
from nodewright.engine.scheduling import solver as solver_module
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


@pytest.fixture(autouse=True)
def _cold() -> Iterator[None]:
    solver_module._PREPARED.clear()
    yield
    solver_module._PREPARED.clear()


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


def _fresh(inp: SchedulingInput, monkeypatch: pytest.MonkeyPatch, strategy: object = None) -> SchedulingResult:
    """Solve with nothing remembered: every solver prepares its pools anew."""
    with monkeypatch.context() as m:
        m.setattr(solver_module, "_PREPARED", solver_module._PreparedCache(size=0))
        m.setattr(solver_module, "_POD_FACTS", solver_module._PodFacts(limit=0))
        m.setattr(solver_module, "_NODE_FACTS", solver_module._NodeFacts(limit=0))
        m.setattr(solver_module, "_BOUND_RUNS", solver_module._BoundRuns(limit=0))
        return solve(inp) if strategy is None else solve(inp, strategy)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(_inputs()))
def test_a_warm_cache_gives_the_results_of_a_cold_one(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    inp = _inputs()[name]
    expected = _fresh(inp, monkeypatch)
    assert solve(inp) == expected  # cold
    assert solve(inp) == expected  # warm: every pool's types come from the cache
    for strategy in PORTFOLIO:
        assert solve(inp, strategy) == _fresh(inp, monkeypatch, strategy)


def test_a_cut_of_the_catalog_after_the_whole_gives_the_fresh_result(monkeypatch: pytest.MonkeyPatch) -> None:
    # As consolidation does: the whole catalog first, then only the types below some price.
    inp = _inputs()["mixed"]
    solve(inp)
    types = catalog()
    for size in (3, 6, len(types) - 1):
        cut = replace(inp, pools=(pool(types=sorted(types, key=lambda t: t.name)[:size]),))
        assert solve(cut) == _fresh(cut, monkeypatch)


def test_equal_inputs_built_again_hit_and_changed_inputs_do_not(monkeypatch: pytest.MonkeyPatch) -> None:
    inp = _inputs()["daemonsets-and-blocked"]
    first = solve(inp)
    # Equal values in new objects (a catalog and daemonsets read again) give the same plan.
    again = replace(inp, pools=(pool(types=catalog()),), daemonsets=tuple(replace(d) for d in inp.daemonsets))
    assert solve(again) == first
    # Blocking the offering a claim was priced with changes the plan, as it does when solved afresh.
    claim = first.claims[0]
    blocked = inp.blocked | {(claim.offering.capacity_type, claim.instance_type.name, claim.offering.zone)}
    changed = replace(inp, blocked=blocked)
    assert solve(changed) == _fresh(changed, monkeypatch)
    assert solve(changed) != first
    # A type's price changes (a rebuilt catalog): the new price is what the plan uses.
    cheaper = [
        instance_type(t.name, cpu="4", memory="16Gi", price=0.001) if t.name == "m5.xlarge" else t for t in catalog()
    ]
    repriced = replace(inp, pools=(pool(types=cheaper),))
    assert solve(repriced) == _fresh(repriced, monkeypatch)


def _one_by_one(self: solver_module._Shared, bound_pods: Sequence[Pod], names: tuple[str, ...]) -> object:
    """`_Shared.bound` without grouping alike pods: every pod recorded on its own."""
    hit = original(self, bound_pods, names)
    return solver_module._Bound(
        hit.used, hit.pods, {n: [(p, 1) for p in node_pods] for n, node_pods in hit.pods.items()}
    )


original = solver_module._Shared.bound


@pytest.mark.parametrize("name", ["spread-over-bound-pods", "anti-affinity-and-inflight"])
def test_recording_alike_bound_pods_once_counts_as_recording_each(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    inp = _inputs()[name]
    grouped = solve(inp)
    monkeypatch.setattr(solver_module._Shared, "bound", _one_by_one)
    assert solve(inp) == grouped
