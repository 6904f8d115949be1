"""Zone balance (`nodewright.io/zone-balance`) through the provisioner and consolidator handlers.

Real: functions/provisioner/handler.py and functions/consolidator/handler.py (Powertools
decorators), the provisioner and the consolidator controllers, the solver and the disruption
engine. Faked: the cluster (in-memory, with a kubelet that registers booted instances and a
first-fit kube-scheduler), EC2 (the fake cloud, which launches in the cheapest zone a claim's
requirements allow), the state store (in memory) and time (a virtual clock the controllers'
sleep advances). Observed: the zones of what was launched, which nodes are left, and the reasons.

The catalog prices every zone alike (the tie goes to the first zone by name) or makes one zone
cheaper: without zone balance every node lands in that one zone, as Karpenter's do without a
spread constraint on the workload.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest

from bench.harness.cluster_actors import running_node
from functions.consolidator import handler as consolidator_handler
from functions.provisioner import handler as provisioner_handler
from nodewright.model import labels as wk
from nodewright.model.nodepool import Budget, Disruption, NodePool, ZoneBalance
from nodewright.model.pod import SpreadConstraint
from nodewright.model.resources import CPU
from nodewright.model.selectors import LabelSelector
from tests.builders import ZONES, instance_type, node_pool, pod
from tests.controllers.test_disruption import ConsolidationWorld
from tests.controllers.test_interruption import START
from tests.controllers.test_provisioning import TYPES

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

BALANCED = node_pool(zone_balance=ZoneBalance("nodes", 1.0))
TYPES_BY_NAME = {t.name: t for t in TYPES}
# TYPES with zone us-east-1c 10% cheaper than the others.
CHEAP_C = tuple(
    replace(t, offerings=tuple(replace(o, price=o.price * (0.9 if o.zone.endswith("c") else 1.0)) for o in t.offerings))
    for t in TYPES
)


class Context:
    """The parts of a Lambda context the handlers and Powertools read."""

    memory_limit_in_mb = 1024
    aws_request_id = "6b1f0a52-3c7e-4d9a-8e21-0f4b7c9d2a11"

    def __init__(self, function: str, seconds: float) -> None:
        self.function_name = f"nodewright-{function}"
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"
        self.seconds = seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(self.seconds * 1000)


@pytest.fixture(autouse=True)
def unconfigured() -> Iterator[None]:
    yield
    provisioner_handler.configure(None)
    consolidator_handler.configure(None)


@dataclass
class ZonedWorld(ConsolidationWorld):
    """The consolidation world, with nodes placed in a chosen zone, a catalog of `types` (TYPES,
    or the same types priced differently per zone) and the functions run through their handlers."""

    def provision_through_handler(self) -> None:
        self.schedule()
        provisioner = self.provisioner()
        provisioner.sleep = lambda seconds: self.tick(max(1.0, seconds))  # the loop waits in virtual time
        provisioner_handler.configure(provisioner)
        provisioner_handler.handler({}, Context("provisioner", 30))

    def consolidate_through_handler(self, seconds: float) -> None:
        consolidator_handler.configure(self.consolidator())
        consolidator_handler.handler({}, Context("consolidator", seconds))
        self.tick(5)

    def zoned(
        self,
        name: str,
        zone: str,
        pods: int,
        *,
        instance_type: str = "m5.xlarge",
        pinned: bool = False,
        capacity_type: str = "on-demand",
    ) -> None:
        """A registered node (on-demand unless told) of NodePool default in `zone` with `pods`
        pods of 500m (`pinned`: with a node selector on that zone)."""
        running_node(
            self.cluster,
            self.cloud,
            self.store,
            TYPES,
            name=name,
            instance_type=instance_type,
            zone=zone,
            launched_at=START - 3600,
            capacity_type=capacity_type,
        )
        for i in range(pods):
            selector = {wk.ZONE: zone} if pinned else None
            p = self.cluster.add_pod(
                pod(f"web-{name}-{i}", cpu="500m", memory="1Gi", labels={"app": "web"}, node_selector=selector)
            )
            self.cluster.bind(p, name)

    def zones(self) -> dict[str, int]:
        counted = collections.Counter(n.labels.get(wk.ZONE, "") for n in self.cluster.nodes())
        return {z: counted.get(z, 0) for z in ZONES}

    def launched_zones(self) -> dict[str, int]:
        counted = collections.Counter(i.zone for i in self.cloud.instances())
        return {z: counted.get(z, 0) for z in ZONES}


def big_pods(world: ZonedWorld, count: int) -> None:
    """`count` pending pods of 12 cpu: one m5.4xlarge each."""
    for i in range(count):
        world.cluster.add_pod(pod(f"batch-{i}", cpu="12", memory="8Gi"))


@pytest.mark.parametrize(
    ("pools", "expected"),
    [
        pytest.param((node_pool(),), {"us-east-1a": 0, "us-east-1b": 0, "us-east-1c": 6}, id="off-cheapest-zone"),
        pytest.param((BALANCED,), {"us-east-1a": 2, "us-east-1b": 2, "us-east-1c": 2}, id="nodes-1-even"),
        pytest.param(
            (node_pool(zone_balance=ZoneBalance("nodes", 2.0)),),
            {"us-east-1a": 2, "us-east-1b": 1, "us-east-1c": 3},
            id="nodes-2-within-two",
        ),
    ],
)
def test_the_provisioner_spreads_a_balanced_pools_new_nodes_across_zones(
    pools: tuple[NodePool, ...], expected: dict[str, int]
) -> None:
    world = ZonedWorld(pools=pools, types=CHEAP_C)
    big_pods(world, 6)
    world.provision_through_handler()
    assert world.launched_zones() == expected
    assert len(world.store.claims()) == 6
    # Every claim's zone requirement names the zone it launched in.
    for claim in world.store.claims():
        if pools[0].zone_balance is not None:
            assert claim.requirements[wk.ZONE].values == frozenset({claim.zone})


def test_the_provisioner_counts_the_nodes_already_there() -> None:
    world = ZonedWorld(pools=(BALANCED,))
    world.zoned("a-1", "us-east-1a", 4)
    world.zoned("a-2", "us-east-1a", 4)
    big_pods(world, 3)
    world.provision_through_handler()
    # Zone a had two nodes already: of the three new ones, b and c get two and one (in some order).
    launched = world.launched_zones()
    assert launched["us-east-1a"] == 2  # the two existing nodes' instances
    assert sorted((launched["us-east-1b"], launched["us-east-1c"])) == [1, 2]


def test_a_pod_tied_to_one_zone_still_gets_its_node_there() -> None:
    world = ZonedWorld(pools=(BALANCED,))
    world.zoned("a-1", "us-east-1a", 4)
    world.cluster.add_pod(pod("pinned", cpu="12", memory="8Gi", node_selector={wk.ZONE: "us-east-1a"}))
    world.provision_through_handler()
    assert [c.zone for c in world.store.claims() if c.pods] == ["us-east-1a"]


def test_emptiness_keeps_an_empty_node_whose_deletion_would_unbalance_the_zones() -> None:
    world = ZonedWorld(pools=(BALANCED,))
    world.zoned("a-1", "us-east-1a", 0)
    for zone in ("us-east-1b", "us-east-1c"):
        world.zoned(f"{zone[-1]}-1", zone, 7, pinned=True)  # tied to their zone: they stay
        world.zoned(f"{zone[-1]}-2", zone, 7, pinned=True)
    world.consolidate_through_handler(90)
    assert world.cluster.get_node("a-1") is not None
    assert world.zones() == {"us-east-1a": 1, "us-east-1b": 2, "us-east-1c": 2}
    reasons = {d["node"]: str(d["reason"]) for d in world.observer.of("disruption-rejected")}
    assert "unbalance NodePool default's zones (us-east-1a=0 us-east-1b=2 us-east-1c=2" in reasons["a-1"]


def test_emptiness_spends_a_small_budget_on_the_fullest_zones_empty_nodes_first() -> None:
    # One empty node in zone b (n-1, first by name) and one in zone a (n-2), a budget of one
    # node: taking n-1 first would tip the zones to 3/1/2 and be refused at every pass, so
    # neither would go. Taken from the fullest zone first, both go, one pass after the other.
    pool = node_pool(zone_balance=ZoneBalance("nodes", 1.0), disruption=Disruption(budgets=(Budget(nodes="1"),)))
    world = ZonedWorld(pools=(pool,))
    world.zoned("n-1", "us-east-1b", 0, capacity_type="spot")
    world.zoned("n-2", "us-east-1a", 0, capacity_type="spot")
    for name, zone in (("n-3", "us-east-1a"), ("n-4", "us-east-1a"), ("n-5", "us-east-1b")):
        world.zoned(name, zone, 7, pinned=True, capacity_type="spot")
    for name in ("n-6", "n-7"):
        world.zoned(name, "us-east-1c", 7, pinned=True, capacity_type="spot")
    world.consolidate_through_handler(240)
    assert world.cluster.get_node("n-2") is None
    assert world.cluster.get_node("n-1") is None
    assert world.zones() == {"us-east-1a": 2, "us-east-1b": 1, "us-east-1c": 2}


def test_without_zone_balance_the_same_empty_node_is_deleted() -> None:
    world = ZonedWorld()
    world.zoned("a-1", "us-east-1a", 0)
    for zone in ("us-east-1b", "us-east-1c"):
        world.zoned(f"{zone[-1]}-1", zone, 7, pinned=True)  # tied to their zone: they stay
        world.zoned(f"{zone[-1]}-2", zone, 7, pinned=True)
    world.consolidate_through_handler(90)
    assert world.cluster.get_node("a-1") is None


def test_consolidation_keeps_a_balanced_pool_even_and_leaves_an_unbalanced_one_in_the_cheapest_zone() -> None:
    # Three underused nodes, one per zone; zone c is the cheapest. Consolidation deletes and
    # replaces until two nodes are left: without zone balance both end up in c (each replacement
    # goes to the cheapest zone), balanced they end up in two zones.
    for pools, expected in (((BALANCED,), [0, 1, 1]), ((node_pool(),), [0, 0, 2])):
        world = ZonedWorld(pools=pools, types=CHEAP_C)
        world.zoned("big", "us-east-1a", 2, instance_type="m5.4xlarge")
        world.zoned("b-1", "us-east-1b", 4)
        world.zoned("c-1", "us-east-1c", 4)
        world.consolidate_through_handler(240)
        assert world.cluster.get_node("big") is None
        assert world.cluster.lost_pods() == []
        assert all(p.node_name for p in world.workload_pods())
        assert sorted(world.zones().values()) == expected
        if pools == (BALANCED,):
            replacements = [c for c in world.store.claims() if c.zone]
            assert all(c.requirements[wk.ZONE].values == frozenset({c.zone}) for c in replacements if c.pods)


def spread_pods(world: ZonedWorld, count: int, when: str) -> None:
    """`count` pending `web` pods of 12 cpu (one m5.4xlarge each), spread by zone over `app: web`."""
    spread = SpreadConstraint(1, wk.ZONE, when, LabelSelector((("app", "web"),)))
    for i in range(count):
        world.cluster.add_pod(pod(f"web-new-{i}", cpu="12", memory="8Gi", labels={"app": "web"}, spread=(spread,)))


def zone_a_full_of_nodes_and_empty_of_web_pods(world: ZonedWorld) -> None:
    """Two nodes in zone a without a `web` pod, one node with four `web` pods in each of b and c:
    a pod's zone spread prefers a, the NodePool's balance (a=2 b=1 c=1) wants b or c."""
    world.zoned("a-1", "us-east-1a", 0)
    world.zoned("a-2", "us-east-1a", 0)
    world.zoned("b-1", "us-east-1b", 4)
    world.zoned("c-1", "us-east-1c", 4)


def test_a_pods_preferred_zone_spread_yields_to_the_nodepools_balance() -> None:
    # ScheduleAnyway is a preference (kube-scheduler scores it; the pod binds in any zone): it
    # does not tie the claim to zone a, so the claim goes where the balance keeps its bound.
    world = ZonedWorld(pools=(BALANCED,))
    zone_a_full_of_nodes_and_empty_of_web_pods(world)
    spread_pods(world, 1, "ScheduleAnyway")
    world.provision_through_handler()
    [claim] = [c for c in world.store.claims() if c.pods]
    assert claim.zone in ("us-east-1b", "us-east-1c")
    assert claim.requirements[wk.ZONE].values == frozenset({claim.zone})
    launched = world.launched_zones()
    assert max(launched.values()) - min(launched.values()) <= 1


def test_a_pods_required_zone_spread_still_wins_over_the_nodepools_balance() -> None:
    # DoNotSchedule ties the pod to zone a (the only zone keeping its spread): its node goes
    # there although the NodePool's skew grows to 2, as the contract says (pods' constraints first).
    world = ZonedWorld(pools=(BALANCED,))
    zone_a_full_of_nodes_and_empty_of_web_pods(world)
    spread_pods(world, 1, "DoNotSchedule")
    world.provision_through_handler()
    assert [c.zone for c in world.store.claims() if c.pods] == ["us-east-1a"]


def test_free_claims_even_out_what_the_zone_tied_claims_of_the_same_pass_leave() -> None:
    # Zones b and c hold a node each; two pods need zone a and one pod may go anywhere. The tied
    # claims are counted first (a=2 b=1 c=1), so the free one goes to b or c, not to a (the free
    # pod is the largest, so the solver plans its claim first).
    world = ZonedWorld(pools=(BALANCED,))
    world.zoned("b-1", "us-east-1b", 4)
    world.zoned("c-1", "us-east-1c", 4)
    for i in range(2):
        world.cluster.add_pod(pod(f"tied-{i}", cpu="12", memory="8Gi", node_selector={wk.ZONE: "us-east-1a"}))
    world.cluster.add_pod(pod("free", cpu="14", memory="8Gi"))
    world.provision_through_handler()
    launched = world.launched_zones()
    assert launched["us-east-1a"] == 2
    assert max(launched.values()) - min(launched.values()) <= 1
    assert world.cluster.lost_pods() == []


def test_free_pods_are_planned_apart_from_zone_spread_pods_so_their_nodes_even_out_the_zones() -> None:
    # Two balanced NodePools; the first, preferred by weight, may hold 40 vCPUs. Fifteen small
    # pods carry a DoNotSchedule zone spread (five per zone), twelve larger ones carry nothing.
    # Planned in one solve, the free pods ride on the spread pods' claims zone by zone until the
    # first NodePool's limit runs out, leaving it at 3/1/0 nodes: every claim holds a spread pod,
    # so none is left for the balance to pin. Planned free pods first (their claims pinned to
    # zones) and spread pods after (filling those claims in their zones), both NodePools keep
    # their bound, for no more an hour.
    pools = (
        node_pool("first", weight=20, limits={"cpu": "40"}, zone_balance=ZoneBalance("nodes", 1.0)),
        node_pool("second", weight=10, zone_balance=ZoneBalance("nodes", 1.0)),
    )
    world = ZonedWorld(pools=pools, types=CHEAP_C)
    spread = SpreadConstraint(1, wk.ZONE, "DoNotSchedule", LabelSelector((("app", "web"),)))
    for i in range(15):
        world.cluster.add_pod(pod(f"web-{i}", cpu="500m", memory="1Gi", labels={"app": "web"}, spread=(spread,)))
    for i in range(12):
        world.cluster.add_pod(pod(f"free-{i}", cpu="3", memory="2Gi"))
    world.provision_through_handler()
    claims = world.store.claims()
    for name in ("first", "second"):
        counted = collections.Counter(c.zone for c in claims if c.nodepool == name)
        per_zone = [counted.get(z, 0) for z in ZONES]
        assert max(per_zone) - min(per_zone) <= 1, (name, per_zone)
    # Every pod is on a claim, the spread pods five to a zone, the first NodePool within its limit.
    held = {p: c for c in claims for p in c.pods}
    assert len(held) == 27
    web_zones = collections.Counter(held[f"default/web-{i}"].zone for i in range(15))
    assert sorted(web_zones.values()) == [5, 5, 5]
    assert sum(TYPES_BY_NAME[c.instance_type].capacity[CPU] for c in claims if c.nodepool == "first") <= 40_000
    assert sum(c.price for c in claims) <= 0.912 + 1e-9  # the one-step plan's price
    assert world.cluster.lost_pods() == []


def lopsided_by_three(world: ZonedWorld) -> None:
    """Three full nodes in zone a (free pods), one full node each in b and c (pods pinned there):
    a skew of two nodes. Every node is a spot m5.xlarge holding seven 500m pods, the cheapest
    offering that holds them (every zone priced alike), and no other node has room: there is
    nothing for consolidation to save.
    """
    for i in range(3):
        world.zoned(f"a-{i}", "us-east-1a", 7, capacity_type="spot")
    world.zoned("b-1", "us-east-1b", 7, pinned=True, capacity_type="spot")
    world.zoned("c-1", "us-east-1c", 7, pinned=True, capacity_type="spot")


def test_the_consolidator_moves_a_node_out_of_the_fullest_zone_of_a_pool_over_its_balance() -> None:
    # The NodePool got lopsided by what zone balance cannot steer (here: placed so). A pass with
    # nothing to save moves one of zone a's nodes to a lighter zone: its replacement, pinned
    # there, launches first, then the node is drained and deleted. One move brings the skew
    # within the bound; then nothing more moves.
    world = ZonedWorld(pools=(BALANCED,))
    lopsided_by_three(world)
    world.consolidate_through_handler(600)
    assert sorted(world.zones().values()) == [1, 2, 2]
    assert world.zones()["us-east-1a"] == 2
    moves = [d for d in world.observer.of("disruption") if d["method"] == "zone-rebalance"]
    assert len(moves) == 1
    assert "fullest zone (us-east-1a=3 us-east-1b=1 us-east-1c=1)" in str(moves[0]["detail"])
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())
    # The replacement was pinned to the lighter zone it launched in, for no more than the node cost.
    [new] = [c for c in world.store.claims() if c.created_at > START]
    assert new.zone in ("us-east-1b", "us-east-1c")
    assert new.requirements[wk.ZONE].values == frozenset({new.zone})
    assert new.price <= 0.08


@pytest.mark.parametrize(
    ("pool", "moved"),
    [
        pytest.param(node_pool(), False, id="no-zone-balance"),
        pytest.param(
            node_pool(zone_balance=ZoneBalance("nodes", 1.0), disruption=Disruption(consolidate_after=None)),
            False,
            id="consolidate-after-never",
        ),
        pytest.param(
            node_pool(zone_balance=ZoneBalance("nodes", 1.0), disruption=Disruption(budgets=(Budget(nodes="0"),))),
            False,
            id="no-budget",
        ),
        pytest.param(
            node_pool(zone_balance=ZoneBalance("nodes", 1.0), disruption=Disruption(consolidation_policy="WhenEmpty")),
            True,
            id="when-empty-still-balanced",
        ),
    ],
)
def test_what_turns_the_re_balancing_move_off(pool: NodePool, moved: bool) -> None:
    # The move is the zone balance's own: a WhenEmpty NodePool that asked for balance gets it;
    # without the setting, with consolidateAfter Never, or with no budget left, nothing moves.
    world = ZonedWorld(pools=(pool,))
    lopsided_by_three(world)
    world.consolidate_through_handler(600)
    if moved:
        assert sorted(world.zones().values()) == [1, 2, 2]
        assert world.cluster.lost_pods() == []
    else:
        assert world.zones() == {"us-east-1a": 3, "us-east-1b": 1, "us-east-1c": 1}
        assert world.observer.of("disruption") == []


def test_the_re_balancing_move_looks_past_nodes_whose_pods_are_tied_to_the_fullest_zone() -> None:
    # Zone a holds six full nodes (no node has room for another pod), five of them full of pods
    # that pin themselves to zone a (they could only come back there) and, last in
    # consolidation's order, one whose pods may go anywhere. The move tries the nodes with the
    # fewest zone-tied pods first: that one goes to a lighter zone. In consolidation's order the
    # budget's one disruption (10% of 8 nodes) would go to a-0, which cannot move, pass after pass.
    world = ZonedWorld(pools=(BALANCED,))
    for i in range(5):
        world.zoned(f"a-{i}", "us-east-1a", 8, pinned=True, capacity_type="spot")
    world.zoned("a-5", "us-east-1a", 8, capacity_type="spot")
    world.zoned("b-1", "us-east-1b", 8, pinned=True, capacity_type="spot")
    world.zoned("c-1", "us-east-1c", 8, pinned=True, capacity_type="spot")
    world.consolidate_through_handler(600)
    moves = [d for d in world.observer.of("disruption") if d["method"] == "zone-rebalance"]
    assert [m["candidates"] for m in moves] == [["a-5"]]
    assert "fullest zone (us-east-1a=6 us-east-1b=1 us-east-1c=1)" in str(moves[0]["detail"])
    assert world.zones()["us-east-1a"] == 5
    assert sorted(world.zones().values()) == [1, 2, 5]
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())


def test_the_re_balancing_move_goes_before_consolidation_while_a_pool_is_over_its_balance() -> None:
    # Lopsided by three (a=3 b=1 c=1, full nodes) plus b-2 in zone b holding one pod: consolidation
    # would delete b-2 (its pod fits elsewhere; a=3 b=1 c=1 is no more lopsided than now). Over
    # its bound, the NodePool gets the re-balancing move first: a node of zone a goes, its pods
    # onto b-2's room, and nothing is launched; then the NodePool is within its bound and nothing
    # else moves.
    world = ZonedWorld(pools=(BALANCED,))
    lopsided_by_three(world)
    world.zoned("b-2", "us-east-1b", 1, capacity_type="spot")
    world.consolidate_through_handler(600)
    moves = world.observer.of("disruption")
    assert moves[0]["method"] == "zone-rebalance"
    assert "fullest zone (us-east-1a=3 us-east-1b=2 us-east-1c=1)" in str(moves[0]["detail"])
    assert world.zones() == {"us-east-1a": 2, "us-east-1b": 2, "us-east-1c": 1}
    assert [c.name for c in world.store.claims() if c.created_at > START] == []
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())


@pytest.mark.parametrize("budget", ["2", "1"])
def test_the_re_balancing_move_merges_two_nodes_of_the_fullest_zone_when_no_single_node_can_leave(budget: str) -> None:
    # Zone a holds four full spot m5.large (four 500m pods each, pinned to zone a); b and c one
    # each. No single node can leave (its pods come back to zone a on a node of its own), and
    # consolidation saves nothing by putting two m5.large's pods on one m5.xlarge (twice the
    # price). The re-balancing move merges pairs of zone a's nodes onto one m5.xlarge in zone a,
    # pass after pass, until the NodePool is within its bound (a=2 b=1 c=1), then stops. A
    # budget of one node allows no pair: nothing moves.
    pool = node_pool(zone_balance=ZoneBalance("nodes", 1.0), disruption=Disruption(budgets=(Budget(nodes=budget),)))
    world = ZonedWorld(pools=(pool,))
    for i in range(4):
        world.zoned(f"a-{i}", "us-east-1a", 4, instance_type="m5.large", pinned=True, capacity_type="spot")
    world.zoned("b-1", "us-east-1b", 4, instance_type="m5.large", pinned=True, capacity_type="spot")
    world.zoned("c-1", "us-east-1c", 4, instance_type="m5.large", pinned=True, capacity_type="spot")
    world.consolidate_through_handler(900)
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())
    if budget == "1":
        assert world.observer.of("disruption") == []
        assert world.zones() == {"us-east-1a": 4, "us-east-1b": 1, "us-east-1c": 1}
        return
    moves = world.observer.of("disruption")
    assert [(m["method"], len(m["candidates"])) for m in moves] == [("zone-rebalance", 2)] * 2
    assert str(moves[0]["detail"]).startswith("merge a-0 (m5.large spot, $0.0400/h) and a-1")
    assert "fullest zone (us-east-1a=4 us-east-1b=1 us-east-1c=1)" in str(moves[0]["detail"])
    assert world.zones() == {"us-east-1a": 2, "us-east-1b": 1, "us-east-1c": 1}
    new = [c for c in world.store.claims() if c.created_at > START]
    assert [(c.instance_type, c.zone) for c in new] == [("m5.xlarge", "us-east-1a")] * 2


def test_a_pair_whose_pods_still_need_two_nodes_in_the_zone_is_not_merged_and_says_why() -> None:
    # The same lopsided NodePool of full, zone-tied nodes, but m5.xlarge: two of them hold 8 cpu of
    # pods, whose cheapest plan is two m5.xlarge again in zone a (one m5.4xlarge costs twice as
    # much). Nothing moves, and each of zone a's nodes says why it stayed, alone and in a pair.
    pool = node_pool(zone_balance=ZoneBalance("nodes", 1.0), disruption=Disruption(budgets=(Budget(nodes="2"),)))
    world = ZonedWorld(pools=(pool,))
    for i in range(4):
        world.zoned(f"a-{i}", "us-east-1a", 8, pinned=True, capacity_type="spot")
    world.zoned("b-1", "us-east-1b", 8, pinned=True, capacity_type="spot")
    world.zoned("c-1", "us-east-1c", 8, pinned=True, capacity_type="spot")
    world.consolidate_through_handler(300)
    assert world.observer.of("disruption") == []
    assert world.zones() == {"us-east-1a": 4, "us-east-1b": 1, "us-east-1c": 1}
    reasons = {d["node"]: str(d["reason"]) for d in world.observer.of("disruption-rejected")}
    assert "fullest zone, but moving it would not even out the zones" in reasons["a-0"]
    assert (
        "fullest zone, but merged with a-1 it would not even out the zones of a NodePool over its zone "
        "balance; on one node, it would cost $0.3200/h of new nodes against $0.1600/h"
    ) in reasons["a-0"]


def test_a_pair_whose_cheapest_plan_is_two_nodes_merges_onto_one_within_the_premium() -> None:
    # As above, but the catalog also has an m5.2xlarge at 2.5% over two m5.xlarge (spot): the
    # pair's cheapest plan is two m5.xlarge in zone a again, which evens nothing out, so the move
    # plans the pair on one node that holds all its pods, within the 5% premium: two merges onto
    # m5.2xlarge in zone a, and the NodePool is within its bound.
    types = (*TYPES, instance_type("m5.2xlarge", cpu="8", memory="32Gi", pods=110, price=0.384, spot_price=0.164))
    pool = node_pool(zone_balance=ZoneBalance("nodes", 1.0), disruption=Disruption(budgets=(Budget(nodes="2"),)))
    world = ZonedWorld(pools=(pool,), types=types)
    for i in range(4):
        world.zoned(f"a-{i}", "us-east-1a", 8, pinned=True, capacity_type="spot")
    world.zoned("b-1", "us-east-1b", 8, pinned=True, capacity_type="spot")
    world.zoned("c-1", "us-east-1c", 8, pinned=True, capacity_type="spot")
    world.consolidate_through_handler(900)
    moves = world.observer.of("disruption")
    assert [(m["method"], len(m["candidates"])) for m in moves] == [("zone-rebalance", 2)] * 2
    assert world.zones() == {"us-east-1a": 2, "us-east-1b": 1, "us-east-1c": 1}
    new = [c for c in world.store.claims() if c.created_at > START]
    assert [(c.instance_type, c.zone) for c in new] == [("m5.2xlarge", "us-east-1a")] * 2
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())
