"""Deletion-cost steering through the consolidator: the pods' costs written, then kept.

Real: `Consolidator.run` with `steer_deletion_cost` over the in-memory cluster, store and fake
cloud of tests/controllers/test_disruption.py (consolidation itself held back by a stability
guard no move meets, so only the steering acts). Observed: the pods' annotations, the decision
log and the `PodsSteered` metric.
"""

from __future__ import annotations

from dataclasses import replace

from nodewright.engine.deletioncost import DELETION_COST, FLOOR, STEERED
from nodewright.engine.disruption import DisruptionOptions
from tests.controllers.test_disruption import ConsolidationWorld

HOLD = DisruptionOptions(min_savings=1000.0)  # no consolidation move saves $1,000/h


def _costs(world: ConsolidationWorld) -> dict[str, str | None]:
    return {p.name: p.annotations.get(DELETION_COST) for p in world.workload_pods()}


def test_the_pods_of_the_emptiest_node_get_the_lowest_cost_and_a_second_run_writes_nothing() -> None:
    world = ConsolidationWorld()
    world.node_with("full", 3)
    world.node_with("thin", 1)

    world.run(30, steer_deletion_cost=True, disruption=HOLD)  # type: ignore[arg-type]

    # The emptiest node's pods (a tenth of the pods, at least one node) go first; the rest are
    # left in the ReplicaSet's own order.
    costs = _costs(world)
    assert costs == {**{f"web-full-{i}": None for i in range(3)}, "web-thin-0": str(1 - FLOOR)}
    thin = world.cluster.get_pod("default/web-thin-0")
    assert thin is not None
    assert thin.annotations[STEERED] == thin.annotations[DELETION_COST]
    assert world.observer.total("PodsSteered") == 1
    (decision,) = world.observer.of("deletion-cost")
    assert decision["written"] == 1

    world.run(30, steer_deletion_cost=True, disruption=HOLD)  # type: ignore[arg-type]
    assert world.observer.total("PodsSteered") == 1  # nothing new to write
    assert len(world.observer.of("deletion-cost")) == 1


def test_a_cost_someone_else_set_is_left_alone_and_a_pod_added_later_moves_its_nodes_cost() -> None:
    world = ConsolidationWorld()
    world.node_with("a", 2)
    mine = world.cluster.get_pod("default/web-a-0")
    assert mine is not None
    world.cluster.annotate_pod(mine, {DELETION_COST: "500"})  # the user's own preference

    world.run(30, steer_deletion_cost=True, disruption=HOLD)  # type: ignore[arg-type]
    assert _costs(world) == {"web-a-0": "500", "web-a-1": str(2 - FLOOR)}

    extra = world.cluster.add_pod(replace(mine, name="web-a-9", annotations={}, node_name=""))
    world.cluster.bind(extra, "a")
    world.run(30, steer_deletion_cost=True, disruption=HOLD)  # type: ignore[arg-type]
    assert _costs(world) == {"web-a-0": "500", "web-a-1": str(3 - FLOOR), "web-a-9": str(3 - FLOOR)}


def test_without_the_setting_or_in_a_static_nodepool_no_pod_is_written_and_old_costs_are_cleared() -> None:
    world = ConsolidationWorld()
    world.node_with("a", 2)
    world.run(30, disruption=HOLD)  # type: ignore[arg-type]
    assert set(_costs(world).values()) == {None}

    world.run(30, steer_deletion_cost=True, disruption=HOLD)  # type: ignore[arg-type]
    assert set(_costs(world).values()) == {str(2 - FLOOR)}

    # The NodePool becomes static (spec.replicas): its nodes are never removed, so steering its
    # pods would only thin other nodes' chances; the costs Nodewright wrote are taken back.
    world.pools = tuple(replace(p, replicas=1) for p in world.pools)
    world.run(30, steer_deletion_cost=True, disruption=HOLD)  # type: ignore[arg-type]
    assert all(DELETION_COST not in p.annotations and STEERED not in p.annotations for p in world.workload_pods())
