"""The provisioning controller against the in-memory cluster, the fake cloud and the in-memory store.

Faked: the Kubernetes API (nodewright.inmemory.cluster), EC2 (nodewright.inmemory.cloud), DynamoDB
(nodewright.inmemory.state) and time (a virtual clock that `sleep` advances). Observed: what was
launched (the fake cloud's calls and instances), what was recorded (claims in the store), what the
cluster looks like afterwards, and the decisions and metrics the controller emitted.
"""

from __future__ import annotations

import statistics
import threading
from dataclasses import dataclass, field, replace
from functools import partial

import pytest

from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import ProvisionerOptions, StaticConfiguration
from nodewright.inmemory import catalog
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.inmemory.state import InMemoryStateStore
from nodewright.inmemory.timeline import Timeline, Waits, capacity_committed
from nodewright.model import labels as wk
from nodewright.model.instance import Instance
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod, SpreadConstraint
from nodewright.model.resources import Resources
from nodewright.model.selectors import LabelSelector
from nodewright.model.taints import Taint
from nodewright.ports import ReservationEnds
from tests.builders import ZONES, instance_type, node, node_pool, pod

START = 1_800_000_000.0
TYPES = (
    instance_type("m5.large", cpu="2", memory="8Gi", pods=29, price=0.096, spot_price=0.04),
    instance_type("m5.xlarge", cpu="4", memory="16Gi", pods=58, price=0.192, spot_price=0.08),
    instance_type("m5.4xlarge", cpu="16", memory="64Gi", pods=234, price=0.768, spot_price=0.32),
)


class FixedCatalog(catalog.FixedCatalog):
    """The simulator's fixed catalog, offering TYPES unless told otherwise (other controller
    tests import it from here).
    """

    def __init__(self, types: tuple[InstanceType, ...] = TYPES) -> None:
        super().__init__(types)


@dataclass
class World:
    clock: VirtualClock = field(default_factory=lambda: VirtualClock(START))
    store: InMemoryStateStore = field(default_factory=InMemoryStateStore)
    observer: RecordingObserver = field(default_factory=RecordingObserver)
    pools: tuple[NodePool, ...] = (node_pool(),)
    catalog: FixedCatalog = field(default_factory=FixedCatalog)
    # Asked by housekeeping which capacity reservations ended (None: never asked).
    reservations: ReservationEnds | None = None

    def __post_init__(self) -> None:
        self.cluster = InMemoryCluster(self.clock)
        self.cloud = FakeCloudProvider(self.clock)

    def provisioner(self, **options: float) -> Provisioner:
        return build_provisioner(
            cluster=self.cluster,
            cloud=self.cloud,
            store=self.store,
            clock=self.clock,
            config=StaticConfiguration(self.pools),
            catalog=self.catalog,
            observer=self.observer,
            options=ProvisionerOptions(**options),
            sleep=self.clock.advance,
            reservations=self.reservations,
        )

    def pending(self, count: int, prefix: str = "web", **fields: object) -> list[Pod]:
        pods = [
            replace(pod(f"{prefix}-{i}", cpu="500m", memory="1Gi", **fields), created_at=self.clock.now())
            for i in range(count)
        ]
        return self.cluster.add_pods(pods)

    def run(self, seconds: float = 30.0) -> dict[str, object]:
        return self.provisioner().run(self.clock.now() + seconds + 10).as_dict()

    def launches(self) -> int:
        return len(self.cloud.calls_to("launch"))

    def waits(self, arrivals: list[float], until: float, **options: float) -> list[float]:
        """Run one invocation until `until` (seconds from START) while a pod arrives at each of
        `arrivals`; return each pod's wait for committed capacity (a launch or a nomination).
        """
        timeline = Timeline(self.clock)
        for n, at in enumerate(arrivals):
            timeline.at(START + at, partial(self.pending, 1, prefix=f"arrival-{n}"))
        provisioner = self.provisioner(**options)
        provisioner.sleep = timeline.sleep
        provisioner.run(START + until)
        committed = capacity_committed(self.observer.decisions)
        return [committed[p.key] - p.created_at for p in self.cluster.pods()]


def test_pending_pods_get_claims_recorded_and_launched() -> None:
    world = World()
    world.pending(40)
    report = world.run()
    claims = world.store.claims()
    assert report["launched"]
    assert {c.name for c in claims} == set(report["launched"])  # type: ignore[arg-type]
    assert all(c.state == "launched" and c.instance_id for c in claims)
    assert sorted(p for c in claims for p in c.pods) == sorted(f"default/web-{i}" for i in range(40))
    assert {i.nodeclaim for i in world.cloud.instances()} == {c.name for c in claims}
    launches = world.observer.of("launch")
    assert launches
    assert set(launches[0]) >= {"nodepool", "pods", "instance_type_options", "instance_type", "price", "reason"}


def test_a_second_invocation_launches_nothing_more() -> None:
    world = World()
    world.pending(40)
    world.run()
    launched = world.launches()
    report = world.run()
    assert report["launched"] == []
    assert world.launches() == launched


class DiesAfterLaunch(InMemoryStateStore):
    """A store whose first save after a launch never happens, as if the Lambda died right there."""

    def __init__(self) -> None:
        super().__init__()
        self.dead = False

    def save_claim(self, claim: NodeClaim) -> None:
        if claim.state == "launched" and not self.dead:
            self.dead = True
            raise SystemExit("the Lambda died between CreateFleet and the record")
        super().save_claim(claim)


def test_dying_between_create_fleet_and_the_record_never_launches_twice() -> None:
    world = World(store=DiesAfterLaunch())
    world.pending(3)
    with pytest.raises(SystemExit):
        world.run()
    assert world.launches() == 1
    assert [c.state for c in world.store.claims()] == ["pending"]
    world.run()
    claims = world.store.claims()
    assert len(world.cloud.instances()) == 1
    assert [c.state for c in claims] == ["launched"]
    assert claims[0].instance_id == world.cloud.instances()[0].instance_id


def test_orphan_instances_are_terminated_after_thirty_seconds() -> None:
    world = World()
    orphan = world.cloud.add_instance(
        Instance("i-orphan", "m5.large", "us-east-1a", "spot", "running", START - 60, "default-0123456789", "default")
    )
    young = world.cloud.add_instance(
        Instance("i-young", "m5.large", "us-east-1a", "spot", "running", START - 5, nodeclaim="other")
    )
    world.run(5)
    states = {i.instance_id: i.state for i in world.cloud.instances()}
    assert orphan.instance_id not in states
    assert young.instance_id in states


def test_capacity_errors_fall_back_from_spot_to_on_demand_in_the_same_invocation() -> None:
    world = World()
    world.cloud.insufficient("spot")
    world.pending(10)
    report = world.run()
    capacity = {i.capacity_type for i in world.cloud.instances()}
    assert capacity == {"on-demand"}
    assert report["failed"]  # the spot attempt was reported
    assert world.store.blocked_offerings(world.clock.now())
    assert sum(len(c.pods) for c in world.store.claims()) == 10


def test_two_concurrent_invocations_launch_nothing_twice() -> None:
    world = World()
    world.pending(30)
    results: list[dict[str, object]] = []
    barrier = threading.Barrier(2)

    def invoke() -> None:
        barrier.wait()
        results.append(world.run())

    threads = [threading.Thread(target=invoke) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    pods = [p for c in world.store.claims() for p in c.pods]
    assert len(pods) == len(set(pods)) == 30
    assert len({i.nodeclaim for i in world.cloud.instances()}) == len(world.cloud.instances())


def test_nodepool_limits_hold_across_invocations() -> None:
    world = World(pools=(node_pool(limits={"cpu": "8"}),))
    world.pending(12)  # 6 cpu of requests
    world.run()
    world.pending(12, prefix="more")
    world.run()
    capacity = Resources()
    types = {t.name: t for t in TYPES}
    for claim in world.store.claims():
        capacity = capacity + types[claim.instance_type].capacity
    assert capacity["cpu"] <= 8000
    assert world.observer.of("unschedulable")


def register(world: World, claim: NodeClaim, *, ready: bool) -> Node:
    node = Node(
        name=f"ip-{claim.instance_id}",
        labels={wk.HOSTNAME: f"ip-{claim.instance_id}", wk.NW_NODEPOOL: claim.nodepool, wk.NW_NODECLAIM: claim.name},
        capacity=Resources.of(cpu="2", memory="8Gi", pods=29),
        allocatable=Resources.of(cpu="2", memory="8Gi", pods=29),
        provider_id=f"aws:///{claim.zone}/{claim.instance_id}",
        ready=ready,
    )
    return world.cluster.add_node(node)


def test_claims_become_registered_then_initialized_as_their_nodes_come_up() -> None:
    world = World()
    world.pending(2)
    world.run()
    (claim,) = world.store.claims()
    register(world, claim, ready=False)
    world.run(1)
    assert world.store.claims()[0].state == "registered"
    world.cluster.set_node_ready(f"ip-{claim.instance_id}")
    world.run(1)
    assert world.store.claims()[0].state == "initialized"


def test_a_node_that_never_registers_is_terminated_after_fifteen_minutes() -> None:
    world = World()
    world.pending(2)
    world.run()
    (claim,) = world.store.claims()
    world.clock.advance(16 * 60)
    world.run(1)
    assert claim.instance_id not in {i.instance_id for i in world.cloud.instances()}
    assert world.observer.of("registration-timeout")


def test_nodes_whose_instance_is_gone_are_deleted() -> None:
    world = World()
    world.pending(2)
    world.run()
    (claim,) = world.store.claims()
    register(world, claim, ready=True)
    world.cloud.terminate([claim.instance_id])
    world.run(1)
    assert world.cluster.get_node(f"ip-{claim.instance_id}") is None
    assert world.store.claims() == []


def test_pending_pods_get_their_launch_within_three_seconds_at_the_median() -> None:
    # Deployments scaling up: bursts of 10 pods within half a second, 4 s apart.
    arrivals = [burst * 4.0 + 0.05 * i for burst in range(6) for i in range(10)]
    waits = World().waits(arrivals, until=40)
    assert len(waits) == 60
    assert statistics.median(waits) <= 3.0
    assert max(waits) <= 12.0


# A pod every 0.3 s for a minute: never a 1 s gap between two polls' worth of pods.
STREAM = [0.3 * i for i in range(200)]


def test_a_steady_stream_of_pods_is_passed_on_without_waiting_for_the_batch_maximum() -> None:
    world = World()
    waits = Waits.of(world.waits(STREAM, until=75))
    assert waits.count == len(STREAM)
    assert waits.median <= 3.0
    assert waits.max <= 6.0
    assert len(world.observer.of("launch")) + len(world.observer.of("nominate")) >= 15


def test_without_batch_growth_a_steady_stream_waits_for_the_batch_maximum() -> None:
    # Karpenter's plain idle/max window: each new pod restarts the idle wait, so every batch
    # runs into the 10 s maximum.
    waits = Waits.of(World().waits(STREAM, until=75, batch_growth=0))
    assert waits.median >= 4.0
    assert waits.max >= 9.0


def test_a_burst_still_arriving_is_batched_whole() -> None:
    # 100 pods created over 1.5 s, as a ReplicaSet's slow start makes them: one pass packs them.
    world = World()
    waits = world.waits([0.015 * i for i in range(100)], until=20)
    launches = world.observer.of("launch")
    assert len({d["at"] for d in launches}) == 1  # one pass (the virtual clock stands still in it)
    assert sum(len(d["pods"]) for d in launches) == 100  # type: ignore[arg-type, misc]
    assert max(waits) <= 4.0


def test_a_batch_still_doubling_keeps_waiting_until_it_stops_growing() -> None:
    # 1, 2, 4, ... 64 pods in consecutive seconds (a ReplicaSet's slow start, stretched out): every
    # poll at least doubles the batch, so the trickle rule never fires and one pass takes all 127.
    arrivals = [second + 0.5 + i / 200 for second in range(7) for i in range(2**second)]
    world = World()
    world.waits(arrivals, until=25)
    launches = world.observer.of("launch")
    assert len({d["at"] for d in launches}) == 1
    assert sum(len(d["pods"]) for d in launches) == 127  # type: ignore[arg-type, misc]
    assert world.provisioner().options.batch_growth == 0.5


def test_a_draining_nodes_pods_are_spread_as_if_already_gone() -> None:
    """Zone spread counts a draining node's pods where they will be, not where they are: the
    replacement goes to the zone they leave, which is where kube-scheduler will want them.
    """
    world = World()
    spread = SpreadConstraint(1, wk.ZONE, "DoNotSchedule", LabelSelector((("app", "api"),)))
    for zone in ZONES:
        world.cluster.add_node(node(f"node-{zone}", cpu="1", labels={wk.ZONE: zone, wk.NODEPOOL: "default"}))
        for i in range(2):
            p = world.cluster.add_pod(pod(f"api-{zone}-{i}", cpu="500m", labels={"app": "api"}, spread=(spread,)))
            world.cluster.bind(p, f"node-{zone}")
    world.cluster.cordon(f"node-{ZONES[0]}", Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule", wk.DISRUPTED_REPLACE))

    world.provisioner().provision(world.cluster.snapshot())

    claims = world.store.claims()
    assert sorted(p for c in claims for p in c.pods) == [f"default/api-{ZONES[0]}-{i}" for i in range(2)]
    assert {c.zone for c in claims} == {ZONES[0]}


def test_a_replan_after_a_capacity_error_keeps_zone_spread_across_the_claims_just_launched() -> None:
    """Spot is out in one zone: its claim fails, and the re-plan of that claim's pods must count
    the pods of the claims launched a moment ago in the other zones, or it piles them there and
    kube-scheduler (counting them once bound) refuses them.
    """
    world = World()
    world.cloud.insufficient("spot", zone=ZONES[0])
    spread = SpreadConstraint(1, wk.ZONE, "DoNotSchedule", LabelSelector((("app", "checkout"),)))
    world.pending(30, prefix="checkout", labels={"app": "checkout"}, spread=(spread,))
    world.pending(20, prefix="free")

    world.provisioner().provision(world.cluster.snapshot())

    per_zone = dict.fromkeys(ZONES, 0)
    for claim in world.store.claims():
        per_zone[claim.zone] += sum(1 for p in claim.pods if p.startswith("default/checkout"))
    assert sum(per_zone.values()) == 30
    assert max(per_zone.values()) - min(per_zone.values()) <= 1, per_zone
    assert world.observer.of("capacity-error")  # the spot claim in that zone did fail first


def test_the_lease_never_outlives_the_invocation() -> None:
    """A Lambda killed at its timeout releases nothing; its lease must expire by then, or the next
    ticks find it busy."""
    world = World()
    world.pending(3)
    provisioner = world.provisioner()
    deadline = world.clock.now() + 68
    expiries: list[float] = []

    def sleep(seconds: float) -> None:
        expiries.append(world.store._leases["provisioner"][1])
        world.clock.advance(seconds)

    provisioner.sleep = sleep
    provisioner.run(deadline)

    assert expiries
    assert max(expiries) <= deadline


def test_a_loop_that_can_be_woken_waits_for_the_pod_instead_of_polling_and_launches_a_second_later() -> None:
    world = World()
    timeline = Timeline(world.clock)
    timeline.at(START + 30, partial(world.pending, 3))
    waits: list[float] = []

    def wait(seconds: float, woken: object) -> None:
        waits.append(seconds)
        timeline.sleep(seconds, woken)  # type: ignore[arg-type]

    provisioner = world.provisioner()
    provisioner.wait = wait
    provisioner.run(START + 68)

    committed = capacity_committed(world.observer.decisions)
    assert sorted(committed) == [f"default/web-{i}" for i in range(3)]
    assert set(committed.values()) == {START + 31}  # woken at 30, passed after 1 s idle
    assert len(waits) <= 4  # until the pods, the idle second, after the pass: no 1 s polling
    assert len(world.cluster.calls_to("snapshot")) == 2  # housekeeping and the one pass


def test_the_invocation_publishes_its_kubernetes_requests_as_metrics() -> None:
    world = World()
    world.pending(2)
    world.run()
    (total,) = [value for name, value, _, _ in world.observer.metrics if name == "KubeApiRequests"]
    (usage,) = world.observer.of("kube-api-usage")
    calls = usage["calls"]
    assert isinstance(calls, list)
    assert total == sum(call["requests"] for call in calls) > 0
    assert {call["verb"] for call in calls} >= {"snapshot", "pending"}


def test_economy_ends_an_idle_invocation_early_and_never_one_with_pods_waiting() -> None:
    world = World()
    world.provisioner(idle_exit=5.0).run(START + 68)
    assert world.clock.now() == START + 5
    assert world.observer.of("idle-exit")

    world.pending(3)
    started = world.clock.now()
    world.provisioner(idle_exit=5.0).run(started + 68)
    assert world.launches() == 1  # the waiting pods were served first
    assert world.clock.now() < started + 10


def test_a_woken_loop_measures_growth_per_poll_so_a_burst_still_arriving_is_passed_on_whole() -> None:
    world = World()
    timeline = Timeline(world.clock)
    for i in range(30):  # ten pods a second for three seconds, one at a time
        timeline.at(START + 5 + i / 10, partial(world.pending, 1, prefix=f"burst-{i}"))
    provisioner = world.provisioner()
    provisioner.wait = timeline.sleep
    provisioner.run(START + 68)

    committed = capacity_committed(world.observer.decisions)
    assert len(committed) == 30
    assert len(set(committed.values())) == 1  # one pass, after the burst ended


def test_pods_a_pass_put_on_a_registered_node_wait_for_kube_scheduler_instead_of_a_pass_every_second() -> None:
    """Nobody binds the pod here (kube-scheduler is not part of this world), as while a node
    drains under a PodDisruptionBudget: its pods stay pending for minutes. The loop leaves them to
    kube-scheduler for `placed_retry` seconds between passes instead of re-solving every second.
    """
    world = World()
    world.cluster.add_node(node("roomy", cpu="4", labels={wk.ZONE: ZONES[0], wk.NODEPOOL: "default"}))
    world.pending(1)
    report = world.provisioner(placed_retry=10.0).run(START + 58)
    assert world.launches() == 0, "the pod fits on the registered node"
    assert 4 <= report.passes <= 6  # one a 10 s period over 48 s, not one a second
    assert world.cluster.pending()[0].key == "default/web-0"


def test_a_run_whose_lease_a_dead_invocation_holds_waits_for_it_and_then_provisions() -> None:
    """The invocation before died 2 s into its run: no `finally`, so its lease stays until its own
    deadline (68 s after its start). The next run waits for it instead of leaving the pods to the
    minute after.
    """
    world = World()
    start = world.clock.now()
    assert world.store.acquire_lease("provisioner", "the-dead-one", start, 68.0)
    world.clock.advance(60)  # the next tick
    world.pending(3)
    report = world.provisioner().run(world.clock.now() + 68)
    assert report.lease
    assert report.launched
    launched_at = world.observer.of("launch")[0]["at"]
    assert isinstance(launched_at, float)
    assert start + 68 <= launched_at <= start + 68 + 4  # as soon as the dead lease expired
    assert world.observer.of("lease-busy") == []
