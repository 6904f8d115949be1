"""Destinations remembered across passes (`DisruptionCache`) give exactly what preparing them afresh does.

A pass prepares every node that can take pods; the next pass mostly sees the same node and pod
objects again, and reuses what it prepared. These tests run passes over a changing cluster (pods
added, removed and replaced, nodes replaced by equal copies, labels changed) with the cache warm
and compare each pass's destinations, combos and decisions with a cold run.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from nodewright.engine.disruption import DisruptionCache, compute_commands
from nodewright.engine.disruption import simulate as simulate_module
from nodewright.engine.disruption.candidates import ClusterView
from nodewright.engine.disruption.simulate import Simulator
from nodewright.engine.scheduling import SolverCache
from nodewright.model.pod import Pod
from tests.engine.disruption.scenario import World
from tests.engine.scheduling.scenario import term


def _cold(world: World) -> tuple[Any, Any]:
    """What a pass sees and decides with nothing remembered."""

    def nothing_kept() -> DisruptionCache:
        cache = DisruptionCache()
        cache.destinations = simulate_module.Destinations(limit=0)
        cache.solver = SolverCache(prepared=0, pod_facts=0, node_facts=0, bound_runs=0)
        return cache

    return _seen(world, nothing_kept()), compute_commands(world.input(), nothing_kept())


def _seen(world: World, cache: DisruptionCache) -> tuple[Any, ...]:
    """What a pass's Simulator made of the cluster: destinations (in order) and combos."""
    sim = Simulator(ClusterView.build(world.input()), cache)
    destinations = [
        (
            d.node,
            d.free,
            {c: [id(p) for p in ps] for c, ps in d.combos.items()},
            d.combo_used,
            [id(p) for p in d.anti],
            d.anti_used,
        )
        for d in sim.destinations
    ]
    return destinations, list(sim.combos.items()), [d.node.name for d in sim.by_room], sim.anti_keys


def _world() -> World:
    world = World()
    for i in range(6):
        world.node(f"n{i}", "m5.2xlarge" if i % 2 else "m5.xlarge")
        world.put(f"n{i}", 1 + i % 3, cpu="500m", labels={"app": "api"})
        world.put(f"n{i}", i % 2, cpu="250m", labels={"app": "web"}, namespace="shop")
    world.put("n3", 1, cpu="1", labels={"app": "solo"}, anti_affinity=(term("solo"),))
    return world


def _edits() -> list[Any]:
    def add_pod(w: World) -> None:
        w.put("n1", 2, cpu="750m", labels={"app": "web"})

    def drop_pod(w: World) -> None:
        w.pods = [p for p in w.pods if p.name != "n2-p0"]

    def replace_pod(w: World) -> None:  # an equal pod, another object
        w.pods = [replace(p) if p.node_name == "n4" else p for p in w.pods]

    def reorder(w: World) -> None:  # the same pods of a node in another order
        on = [p for p in w.pods if p.node_name == "n2"]
        w.pods = [p for p in w.pods if p.node_name != "n2"] + on[::-1]

    def relabel_node(w: World) -> None:
        w.edit_node("n0", labels={**next(n for n in w.nodes if n.name == "n0").labels, "tier": "gold"})

    def cordon(w: World) -> None:
        w.edit_node("n5", unschedulable=True)

    def uncordon(w: World) -> None:
        w.edit_node("n5", unschedulable=False)

    def move_pod(w: World) -> None:
        w.pods = [replace(p, node_name="n0") if p.name == "n1-p0" else p for p in w.pods]

    def nothing(w: World) -> None:
        return None

    return [nothing, add_pod, nothing, drop_pod, replace_pod, reorder, relabel_node, cordon, uncordon, move_pod]


def test_passes_over_a_changing_cluster_see_what_a_cold_pass_sees() -> None:
    world = _world()
    warm = DisruptionCache()  # kept from pass to pass, as the consolidator keeps it
    for edit in _edits():
        edit(world)
        cold_seen, cold_result = _cold(world)
        assert _seen(world, warm) == cold_seen
        assert compute_commands(world.input(), warm) == cold_result
        assert compute_commands(world.input()) == cold_result


def test_an_unchanged_node_is_prepared_once_and_a_changed_one_again(monkeypatch: pytest.MonkeyPatch) -> None:
    world = _world()
    prepared: list[str] = []
    real = simulate_module.prepare_destination

    def counting(node: Any, pods: Any) -> Any:
        prepared.append(node.name)
        return real(node, pods)

    monkeypatch.setattr(simulate_module, "prepare_destination", counting)
    cache = DisruptionCache()
    _seen(world, cache)
    assert sorted(prepared) == [f"n{i}" for i in range(6)]
    prepared.clear()
    _seen(world, cache)
    assert prepared == []
    world.put("n2", 1)
    world.pods = [replace(p) if p.name == "n4-p0" else p for p in world.pods]
    _seen(world, cache)
    assert sorted(prepared) == ["n2", "n4"]


def test_the_remembered_destinations_are_bounded() -> None:
    world = _world()
    cache = simulate_module.Destinations(limit=2)
    pods: dict[str, list[Pod]] = {}
    for p in world.pods:
        pods.setdefault(p.node_name, []).append(p)
    for n in world.nodes:
        assert cache.get(n, pods.get(n.name, [])) == simulate_module.prepare_destination(n, pods.get(n.name, []))
        assert len(cache._known) <= 2
