"""A DaemonSet added after its nodes filled up (`nodewright.io/daemonset-overflow`), through the
consolidator handler, and what `nodewright explain` says about it.

Real: functions/consolidator/handler.py (Powertools decorators), the consolidator controller, the
disruption engine with its `daemonset-overflow` method, the solver, the explain functions. Faked:
the cluster (in-memory: its DaemonSet controller leaves a daemon pod that does not fit Pending,
naming its node, as kube-scheduler does; a kubelet registers booted instances; a first-fit
kube-scheduler), EC2 (the fake cloud), the state store (in memory) and time (a virtual clock the
controller's sleep advances). Observed: the nodes, where every pod ends up, the Events on the
nodes, the explanations, and that no pod is lost and no PodDisruptionBudget broken.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

import pytest

from bench.harness.cluster_actors import pdb
from nodewright.controllers.explain import Sources, event_rows, explain_node, explain_pod
from nodewright.controllers.provisionoptions import pool_capacities
from nodewright.engine.daemonfit import OVERFLOW
from nodewright.model import labels as wk
from nodewright.model.nodepool import Budget, Disruption, ZoneBalance
from nodewright.model.workloads import DaemonSet
from tests.builders import ZONES, node_pool, pod
from tests.controllers.test_provisioning import FixedCatalog
from tests.functions.test_zone_balance_handlers import ZonedWorld

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

NODES = ("n-1", "n-2", "n-3")
SHIPPER = DaemonSet(
    "observability", "log-shipper", pod("log-shipper-template", cpu="1", memory="1Gi", namespace="observability")
)


@dataclass
class DaemonWorld(ZonedWorld):
    """Three packed m5.xlarge nodes (3.5 of 4 cpu taken) whose NodePool has a given overflow policy;
    the DaemonSet controller runs every second."""

    def tick(self, seconds: float) -> None:
        for _ in range(int(seconds)):
            super().tick(1)
            self.cluster.reconcile_daemonsets()

    def packed(self) -> None:
        for i, name in enumerate(NODES):
            self.zoned(name, ("us-east-1a", "us-east-1b", "us-east-1c")[i], 7)
        self.cluster.add_pdb(pdb("web", "web", min_available=19))

    def waiting(self) -> list[str]:
        return sorted(p.key for p in self.cluster.pods() if p.daemon and not p.node_name)

    def sources(self) -> Sources:
        return Sources(
            claim_records=self.store,
            command_records=self.store,
            offering_blocks=self.store,
            snapshot=self.cluster.snapshot(),
            pools=pool_capacities(list(self.pools), {}, FixedCatalog()),
            now=self.clock.now(),
            decisions=self.observer.decisions,
            events=event_rows(self.cluster.events()),
        )


def world_with(policy: str) -> DaemonWorld:
    # On-demand only: no spot replacement tempts consolidation, so only the overflow moves nodes.
    on_demand = [{"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}]
    world = DaemonWorld(pools=(node_pool(requirements=on_demand, daemon_overflow=policy),))
    world.packed()
    world.cluster.add_daemonset(SHIPPER)
    world.cluster.reconcile_daemonsets()
    return world


def test_a_daemonset_that_does_not_fit_leaves_its_pods_pending_naming_their_nodes() -> None:
    world = world_with("Ignore")
    waiting = [p for p in world.cluster.pods() if p.daemon and not p.node_name]
    assert sorted(p.target_node for p in waiting) == list(NODES)
    assert all(p.unschedulable for p in waiting)


def test_replace_swaps_each_packed_node_for_one_that_holds_its_pods_and_the_daemon() -> None:
    world = world_with("Replace")
    assert len(world.waiting()) == 3

    world.consolidate_through_handler(900)

    assert world.waiting() == []
    names = {n.name for n in world.cluster.nodes()}
    assert not names & set(NODES)
    shippers = [p for p in world.cluster.pods() if p.daemon]
    assert {p.node_name for p in shippers} == names  # one bound shipper on every node
    assert all(p.node_name for p in world.workload_pods())
    assert len(world.workload_pods()) == 21
    assert world.cluster.lost_pods() == []
    assert not world.cluster.changes_of("pdb_violated")
    done = world.observer.of("disruption-done")
    assert done
    assert all(d["method"] in ("daemonset-overflow", "consolidation", "emptiness") for d in done)
    assert any(d["method"] == "daemonset-overflow" for d in done)


def test_report_leaves_the_nodes_and_says_why_in_an_event_and_in_explain() -> None:
    world = world_with("Report")

    world.consolidate_through_handler(120)

    assert {n.name for n in world.cluster.nodes()} == set(NODES)
    assert len(world.waiting()) == 3
    warned = {e.event.regarding.name for e in world.cluster.events() if e.event.reason == OVERFLOW}
    assert warned == set(NODES)
    node = explain_node(world.sources(), "n-1")
    assert "observability/log-shipper-n-1 do not fit node n-1 (cpu 1 needed, 500m free)" in node["daemonset_overflow"]
    assert "it is only reported" in node["daemonset_overflow"]
    answer = explain_pod(world.sources(), "observability/log-shipper-n-2")
    assert "do not fit node n-2" in answer["why_not_scheduled"]
    assert {d["node"] for d in world.observer.of("daemonset-overflow")} == set(NODES)


def test_ignore_is_karpenters_behaviour_no_event_and_no_replacement() -> None:
    world = world_with("Ignore")

    world.consolidate_through_handler(120)

    assert {n.name for n in world.cluster.nodes()} == set(NODES)
    assert len(world.waiting()) == 3
    assert not [e for e in world.cluster.events() if e.event.reason == OVERFLOW]
    assert not world.observer.of("daemonset-overflow")


@dataclass
class BalancedDaemonWorld(DaemonWorld):
    """DaemonWorld whose NodePool is zone-balanced (`nodes:1`), with the skew of its nodes that
    are not leaving sampled every second."""

    skews: list[int] = field(default_factory=list)

    def tick(self, seconds: float) -> None:
        for _ in range(int(seconds)):
            super().tick(1)
            counted = collections.Counter(
                n.labels.get(wk.ZONE, "") for n in self.cluster.nodes() if not n.leaving and n.nodepool == "default"
            )
            per_zone = [counted.get(z, 0) for z in ZONES]
            self.skews.append(max(per_zone) - min(per_zone))


def test_replace_in_a_zone_balanced_pool_takes_the_fullest_zones_nodes_first() -> None:
    # Four packed nodes, two in zone a: n-1 (b) and n-2 (c) come first by name. The first
    # replacement is a node large enough to take the next overflowing node's pods as well, so
    # that one is deleted, not replaced: taken from b or c it would leave the zones at 2/1/0.
    # Taken from the fullest zone first (or, when its deletion would tip them, the next whose
    # move keeps them even), the NodePool stays within its bound throughout.
    on_demand = [{"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}]
    pool = node_pool(
        requirements=on_demand,
        daemon_overflow="Replace",
        zone_balance=ZoneBalance("nodes", 1.0),
        disruption=Disruption(budgets=(Budget(nodes="1"),)),
    )
    world = BalancedDaemonWorld(pools=(pool,))
    for name, zone in (("n-1", "us-east-1b"), ("n-2", "us-east-1c"), ("n-3", "us-east-1a"), ("n-4", "us-east-1a")):
        world.zoned(name, zone, 7)
    world.cluster.add_daemonset(SHIPPER)
    world.cluster.reconcile_daemonsets()
    assert len(world.waiting()) == 4

    world.consolidate_through_handler(1800)

    assert world.waiting() == []
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())
    assert any(d["method"] == "daemonset-overflow" for d in world.observer.of("disruption-done"))
    assert max(world.skews) <= 1
