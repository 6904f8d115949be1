"""The generational memo behind the solver cache's pod and node facts.

Faked: nothing. Observed: what a `Generational` memo and a `SolverCache` still remember after
passes that use some entries and not others.
"""

from __future__ import annotations

from nodewright.engine.scheduling import SolverCache, solve
from nodewright.engine.scheduling.generations import Generational
from tests.builders import node, pod
from tests.engine.scheduling.scenario import pool, scheduling_input


def test_an_entry_lives_while_one_of_the_last_two_generations_uses_it() -> None:
    memo: Generational[str, int] = Generational(limit=100)
    memo.put("kept", 1)
    memo.put("dropped", 2)
    memo.age()
    assert memo.get("kept") == 1  # used in this generation: moved into it
    memo.age()
    assert memo.get("kept") == 1
    assert memo.get("dropped") is None  # unused for two generations
    assert len(memo) == 1


def test_a_generation_is_bounded_and_a_zero_limit_keeps_nothing() -> None:
    memo: Generational[int, int] = Generational(limit=3)
    for i in range(10):
        memo.put(i, i)
    assert len(memo) <= 3
    none: Generational[int, int] = Generational(limit=0)
    none.put(1, 1)
    assert none.get(1) is None


def test_the_solver_cache_lets_go_of_pod_versions_no_pass_uses() -> None:
    cache = SolverCache()
    nodes = (node("n1", cpu="8", memory="32Gi", pods=110),)
    for version in range(5):
        bound = tuple(pod(f"b{i}", node_name="n1", uid=f"{i}-{version}") for i in range(40))
        cache.age()
        result = solve(scheduling_input([pod("new")], pools=[pool()], nodes=nodes, bound_pods=bound), cache=cache)
        assert result.existing == {"n1": ("default/new",)}
    assert len(cache.pod_facts) == 80  # this pass's versions and the last pass's, not five passes'
