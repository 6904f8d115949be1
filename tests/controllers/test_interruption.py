"""The interruption controller against the in-memory cluster, the fake cloud and the in-memory store.

A small world: one spot node (its instance in the fake cloud, its claim record initialized, its
Node Ready) with workload pods; a kubelet stand-in that registers launched instances as Ready
nodes after a boot delay; a scheduler stand-in that binds pending pods first-fit; continuations
delivered when due, as SQS would. The provisioner is the real one, invoked through the trigger.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from bench.harness.cluster_actors import Kubelet, pdb, running_node, schedule_first_fit
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.configstatus import ConfigStatus
from nodewright.controllers.interruption import InterruptionController, InterruptionOptions
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import ProvisionerOptions, StaticConfiguration
from nodewright.engine.interruption import (
    CONTINUATION,
    REBALANCE,
    SPOT_INTERRUPTION,
    STATE_CHANGE,
    MalformedEvent,
    Message,
    parse,
    receive,
)
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.inmemory.signals import RecordingContinuations, RecordingTrigger
from nodewright.inmemory.state import InMemoryStateStore
from nodewright.model import labels as wk
from nodewright.model.instance import Instance
from nodewright.model.instancetype import InstanceType
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.pod import Pod
from nodewright.ports import Configuration
from tests.builders import node_pool, pod
from tests.controllers.test_provisioning import TYPES, FixedCatalog

START = 1_800_000_000.0
BOOT = 35.0
ZONE = "us-east-1a"


@dataclass
class World:
    pools: tuple[NodePool, ...] = (node_pool(),)
    # The instance types the catalog offers and the kubelet knows.
    types: tuple[InstanceType, ...] = TYPES
    clock: VirtualClock = field(default_factory=lambda: VirtualClock(START))
    store: InMemoryStateStore = field(default_factory=InMemoryStateStore)
    observer: RecordingObserver = field(default_factory=RecordingObserver)
    events: int = 0
    # False when a test delivers continuations itself (through the Lambda handler).
    deliver_continuations: bool = True

    def __post_init__(self) -> None:
        self.cluster = InMemoryCluster(self.clock, recreate_owned_pods=True)
        self.cloud = FakeCloudProvider(self.clock)
        self.continuations = RecordingContinuations(self.clock)
        self.trigger = RecordingTrigger(self.clock, on_request=lambda _: self.provision())
        self.controller = InterruptionController(
            cluster=self.cluster,
            claim_records=self.store,
            drain_records=self.store,
            offering_blocks=self.store,
            cloud=self.cloud,
            clock=self.clock,
            config=StaticConfiguration(self.pools),
            observer=self.observer,
            continuations=self.continuations,
            provisioner=self.trigger,
            options=InterruptionOptions(),
        )

    # -- the cluster's other actors -----------------------------------------------------------

    def provisioner(
        self, config: Configuration | None = None, config_status: ConfigStatus | None = None
    ) -> Provisioner:
        """The real provisioner over this world's fakes (one pass at a time: no sleeping), with
        the world's NodePools unless given a `config`.
        """
        return build_provisioner(
            cluster=self.cluster,
            cloud=self.cloud,
            store=self.store,
            clock=self.clock,
            config=config if config is not None else StaticConfiguration(self.pools),
            catalog=FixedCatalog(self.types),
            observer=self.observer,
            options=ProvisionerOptions(),
            sleep=lambda _: None,
            config_status=config_status,
        )

    def provision(self) -> None:
        self.schedule()
        self.provisioner().provision(self.cluster.snapshot())

    def schedule(self) -> None:
        """kube-scheduler, first fit (bench.harness.cluster_actors)."""
        schedule_first_fit(self.cluster)

    def kubelet(self) -> None:
        """Register every booted instance as a Ready Node (over the world's cloud as it is now: a
        test may swap it for a repricing one)."""
        Kubelet(self.cluster, self.cloud, self.clock, self.types, boot=BOOT).register_booted()

    def tick(self, seconds: float) -> None:
        """Advance time one second at a time: kubelet, scheduler, due continuations."""
        for _ in range(int(seconds)):
            self.clock.advance(1.0)
            self.kubelet()
            self.schedule()
            if self.deliver_continuations:
                for event in self.continuations.due(self.clock.now()):
                    self.controller.handle(parse(event))

    # -- setup ----------------------------------------------------------------------------------

    def spot_node(
        self,
        name: str = "spot-1",
        *,
        pods: int = 30,
        app: str = "web",
        instance_id: str = "",
        capacity_type: str = "spot",
    ) -> Node:
        node = running_node(
            self.cluster,
            self.cloud,
            self.store,
            self.types,
            name=name,
            instance_type="m5.4xlarge",
            zone=ZONE,
            capacity_type=capacity_type,
            price=0.32 if capacity_type == "spot" else 0.768,
            launched_at=START - 3600,
            instance_id=instance_id,
            # As the provisioner records them: the pods the node was launched for.
            claim_pods=tuple(f"default/{app}-{name}-{i}" for i in range(pods)),
        )
        for i in range(pods):
            p = self.cluster.add_pod(pod(f"{app}-{name}-{i}", cpu="500m", memory="1Gi", labels={"app": app}))
            self.cluster.bind(p, name)
        return node

    def message(self, kind: str, instance_id: str, **fields: object) -> Message:
        """A real event about `instance_id`: EC2's own view moves with it, as in AWS (the spot
        request is marked for termination with the warning, the state changes with the
        notification), so the verification step confirms it.
        """
        self.events += 1
        if self.cloud.instance(instance_id) is not None:
            if kind == SPOT_INTERRUPTION:
                self.cloud.mark_spot(instance_id)
            elif kind == STATE_CHANGE and fields.get("state"):
                self.cloud.set_state(instance_id, str(fields["state"]))
        return Message(
            id=f"event-{self.events}",
            kind=kind,
            source="aws.ec2",
            detail_type=kind,
            time=self.clock.now(),
            instance_ids=(instance_id,),
            **fields,  # type: ignore[arg-type]
        )

    def workload_pods(self) -> list[Pod]:
        return [p for p in self.cluster.pods() if not p.daemon]


# -- spot warning: the "Done when" --------------------------------------------------------


def test_a_spot_warning_cordons_replaces_drains_and_loses_no_pod() -> None:
    world = World()
    world.spot_node(pods=30)
    handled_at = world.clock.now()
    world.controller.handle(world.message(SPOT_INTERRUPTION, "i-spot-1"))

    cordon = world.cluster.changes_of("node_cordoned")
    assert cordon
    assert cordon[0].at - handled_at <= 1.0
    assert world.trigger.requests
    assert world.trigger.requests[0][0] - handled_at <= 5.0
    evicted = world.cluster.changes_of("pod_evicted")
    assert len(evicted) == 30
    assert max(c.at for c in evicted) - handled_at <= 30.0
    # Nothing blocked the drain, so the instance is retired by the chain's next continuation (sent
    # before the evictions, one second later): node, claim and instance gone.
    world.tick(1)
    assert world.cluster.get_node("spot-1") is None
    assert all(c.name != "claim-spot-1" for c in world.store.claims())
    assert world.cloud.instance("i-spot-1").state in ("shutting-down", "terminated")  # type: ignore[union-attr]
    # The spot offering is blocked for three minutes.
    assert ("spot", "m5.4xlarge", ZONE) in world.store.blocked_offerings(handled_at + 179)
    assert ("spot", "m5.4xlarge", ZONE) not in world.store.blocked_offerings(handled_at + 181)

    world.tick(120)  # the two minutes of the warning: the replacement boots and takes the pods
    assert world.cluster.lost_pods() == []
    pods = world.workload_pods()
    assert len(pods) == 30
    assert all(p.node_name for p in pods)
    decision = world.observer.of("interruption")[0]
    assert decision["event"] == SPOT_INTERRUPTION
    assert decision["node"] == "spot-1"
    assert {"cordon_seconds", "replacement_request_seconds"} <= set(decision)
    assert "drain_seconds" in world.observer.of("interruption")[1]
    assert world.observer.total("PodsEvicted") == 30
    assert world.observer.total("NodesCordoned") == 1


def test_a_pdb_holds_the_drain_and_continuations_finish_it_when_pods_move() -> None:
    world = World()
    world.spot_node(pods=6)
    world.cluster.add_pdb(pdb("web", "web", min_available=5))
    world.controller.handle(world.message(SPOT_INTERRUPTION, "i-spot-1"))
    assert len(world.cluster.changes_of("pod_evicted")) == 1
    assert world.cluster.changes_of("eviction_blocked")
    assert world.observer.total("EvictionsBlockedByPDB") >= 1
    assert world.continuations.sent, "the drain continues in a later invocation"
    delay = world.continuations.sent[0][0] - world.clock.now()
    assert 1.0 <= delay <= 10.0  # backoff, never a busy loop
    assert world.cluster.get_node("spot-1") is not None

    world.tick(99)  # within the warning's deadline: the replacement comes up, the PDB releases
    assert len(world.cluster.changes_of("pod_evicted")) == 6
    assert world.cluster.get_node("spot-1") is None
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())
    continued = [d for d in world.observer.of("interruption") if d["event"] == CONTINUATION]
    assert continued
    assert continued[-1]["drain"] == "done"


def test_a_drain_a_pdb_holds_goes_on_past_the_deadline_until_aws_takes_the_instance() -> None:
    world = World()
    world.spot_node(pods=3)
    world.cluster.add_pdb(pdb("web", "web", min_available=3))
    world.controller.handle(world.message(SPOT_INTERRUPTION, "i-spot-1"))
    world.tick(110)  # past the deadline (20 s before the interruption), before the interruption
    assert world.cluster.get_node("spot-1") is not None, "terminating now would only kill the held pods sooner"
    assert world.continuations.sent, "the chain goes on evicting what the budget allows"
    assert "past its deadline" in world.observer.of("interruption")[-1]["drain"]
    world.tick(11)  # the interruption's time: the instance goes with what the budget held
    last = world.observer.of("interruption")[-1]
    assert last["drain"] == "deadline reached"
    assert last["terminated"] == "i-spot-1"
    assert world.continuations.sent == []  # the chain ended
    assert world.cluster.changes_of("pod_evicted") == []


def test_pods_a_budget_releases_after_the_deadline_are_still_evicted_before_the_interruption() -> None:
    world = World()
    world.spot_node(pods=3)
    world.cluster.add_pdb(pdb("web", "web", min_available=3))
    world.controller.handle(world.message(SPOT_INTERRUPTION, "i-spot-1"))
    world.tick(105)  # past the deadline
    world.cluster.add_pdb(pdb("web", "web", min_available=0))  # the budget lets go
    world.tick(15)
    assert len(world.cluster.changes_of("pod_evicted")) == 3
    assert world.cluster.lost_pods() == []


# -- what a drain leaves alone ------------------------------------------------------------------


def test_daemonset_mirror_and_tolerating_pods_are_never_evicted() -> None:
    world = World()
    world.spot_node(pods=2)
    daemon = world.cluster.add_pod(pod("logs", owner_kind="DaemonSet"))
    world.cluster.bind(daemon, "spot-1")
    mirror = world.cluster.add_pod(pod("static", owner_kind="Node", mirror=True))
    world.cluster.bind(mirror, "spot-1")
    from nodewright.model.taints import Toleration

    stays = world.cluster.add_pod(pod("stays", tolerations=[Toleration(key=wk.DISRUPTED_TAINT_KEY, operator="Exists")]))
    world.cluster.bind(stays, "spot-1")
    world.controller.handle(world.message(REBALANCE, "i-spot-1"))  # ReplaceThenDrain
    world.tick(60)
    evicted = {c.name for c in world.cluster.changes_of("pod_evicted")}
    assert evicted == {"default/web-spot-1-0", "default/web-spot-1-1"}
    kept = next(d for d in world.observer.of("interruption") if d.get("kept"))["kept"]
    assert kept == {  # type: ignore[comparison-overlap]
        "default/logs": "DaemonSet pod",
        "default/static": "mirror pod",
        "default/stays": "tolerates the disrupted taint",
    }


def test_rebalance_leaves_do_not_disrupt_pods_but_a_spot_warning_evicts_them() -> None:
    world = World()
    world.spot_node(pods=1)
    keep = world.cluster.add_pod(pod("precious", annotations={wk.DO_NOT_DISRUPT: "true"}))
    world.cluster.bind(keep, "spot-1")
    world.controller.handle(world.message(REBALANCE, "i-spot-1"))
    world.tick(60)
    assert world.cluster.get_pod("default/precious") is not None
    assert world.cluster.get_pod("default/precious").node_name == "spot-1"  # type: ignore[union-attr]
    world.controller.handle(world.message(SPOT_INTERRUPTION, "i-spot-1"))
    assert world.cluster.get_pod("default/precious") is None  # evicted (it would die with the node)


# -- rebalance policies -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "cordoned", "drained", "terminated", "replacement"),
    [
        ("Ignore", False, False, False, False),
        ("Cordon", True, False, False, False),
        ("CordonAndDrain", True, True, False, True),
        ("ReplaceThenDrain", True, True, True, True),
    ],
)
def test_rebalance_policy_decides_what_happens(
    policy: str, cordoned: bool, drained: bool, terminated: bool, replacement: bool
) -> None:
    world = World(pools=(node_pool(rebalance_policy=policy),))
    world.spot_node(pods=4)
    world.controller.handle(world.message(REBALANCE, "i-spot-1"))
    world.tick(90)
    assert bool(world.cluster.changes_of("node_cordoned")) is cordoned
    assert bool(world.cluster.changes_of("pod_evicted")) is drained
    assert (world.cluster.get_node("spot-1") is None) is terminated
    assert bool(world.trigger.requests) is replacement
    assert world.cluster.lost_pods() == []
    if cordoned and not replacement:
        # Cordon only: the provisioner must not count the pods as pending.
        assert world.cluster.snapshot().pending() == []


def test_replace_then_drain_waits_for_the_replacement_before_evicting() -> None:
    world = World()
    world.spot_node(pods=4)
    world.controller.handle(world.message(REBALANCE, "i-spot-1"))
    assert world.trigger.requests, "replacement asked for at once"
    assert world.cluster.changes_of("pod_evicted") == []
    launched = [c for c in world.store.claims() if c.state == "launched"]
    assert launched, "the provisioner launched a replacement for the cordoned node's pods"
    world.tick(BOOT - 5)
    assert world.cluster.changes_of("pod_evicted") == []  # the replacement is still booting
    world.tick(20)
    evicted = world.cluster.changes_of("pod_evicted")
    assert len(evicted) == 4
    assert min(c.at for c in evicted) >= START + BOOT
    world.tick(5)
    assert all(p.node_name for p in world.workload_pods())
    assert world.cluster.lost_pods() == []


def test_replace_then_drain_waits_for_a_provisioner_that_runs_later() -> None:
    """In AWS the trigger is asynchronous: the first check sees only the node's own claim."""
    world = World()
    world.trigger = RecordingTrigger(world.clock)  # records the request; nothing runs yet
    world.controller.provisioner = world.trigger
    world.spot_node(pods=4)
    world.controller.handle(world.message(REBALANCE, "i-spot-1"))
    world.tick(10)
    assert world.cluster.changes_of("pod_evicted") == [], "the node's own claim is not a replacement"
    world.provision()  # the provisioner's invocation starts
    world.tick(BOOT + 15)
    evicted = world.cluster.changes_of("pod_evicted")
    assert len(evicted) == 4
    replacement = [c for c in world.cluster.changes_of("node_added") if c.name != "spot-1"]
    assert replacement
    assert min(c.at for c in evicted) >= replacement[0].at  # not at the 30 s grace: after it is Ready
    assert world.cluster.lost_pods() == []


def test_replace_then_drain_waits_for_a_claim_in_flight_that_took_the_pods() -> None:
    """A claim launched a moment before the cordon, by an earlier pass, takes the node's pods: it
    is the replacement even though it is older than the cordon.
    """
    world = World()
    world.spot_node(pods=30)
    now = world.clock.now()
    instance = world.cloud.add_instance(
        Instance(
            instance_id="i-fly",
            instance_type="m5.4xlarge",
            zone=ZONE,
            capacity_type="on-demand",
            state="running",
            launched_at=now,
            nodeclaim="claim-fly",
            nodepool="default",
            price=0.768,
        )
    )
    world.store.create_claim(
        NodeClaim(
            name="claim-fly",
            nodepool="default",
            state="launched",
            instance_type="m5.4xlarge",
            capacity_type="on-demand",
            zone=ZONE,
            price=0.768,
            instance_id="i-fly",
            provider_id=instance.provider_id,
            created_at=now - 1,
            launched_at=now - 1,
            labels={wk.NODEPOOL: "default", wk.ZONE: ZONE},
        )
    )
    world.tick(2)
    world.controller.handle(world.message(REBALANCE, "i-spot-1"))
    assert any(len(c.pods) == 30 for c in world.store.claims() if c.name == "claim-fly"), "the pass put them there"
    world.tick(BOOT + 10)
    evicted = world.cluster.changes_of("pod_evicted")
    ready = [c for c in world.cluster.changes_of("node_added") if c.name != "spot-1"]
    assert evicted
    assert ready
    assert min(c.at for c in evicted) >= ready[0].at
    assert world.cluster.lost_pods() == []


def test_a_spot_warning_during_replace_then_drain_drains_at_once() -> None:
    world = World()
    world.spot_node(pods=4)
    world.controller.handle(world.message(REBALANCE, "i-spot-1"))
    world.tick(3)
    world.controller.handle(world.message(SPOT_INTERRUPTION, "i-spot-1"))
    assert len(world.cluster.changes_of("pod_evicted")) == 4


# -- state changes, order, duplicates -----------------------------------------------------------


def test_terminated_removes_the_node_and_the_claim() -> None:
    world = World()
    world.spot_node(pods=0)
    world.controller.handle(world.message(STATE_CHANGE, "i-spot-1", state="terminated"))
    assert world.cluster.get_node("spot-1") is None
    assert world.store.claims() == []


def test_terminated_before_the_warning_is_handled_and_the_late_warning_does_nothing() -> None:
    world = World()
    world.spot_node(pods=0)
    world.controller.handle(world.message(STATE_CHANGE, "i-spot-1", state="terminated"))
    world.controller.handle(world.message(SPOT_INTERRUPTION, "i-spot-1"))
    last = world.observer.of("interruption")[-1]
    assert "ignored" in str(last["action"])
    assert world.trigger.requests == []


@pytest.mark.parametrize("state", ["stopping", "stopped", "shutting-down"])
def test_stopping_states_cordon_and_drain(state: str) -> None:
    world = World()
    world.spot_node(pods=2)
    world.controller.handle(world.message(STATE_CHANGE, "i-spot-1", state=state))
    assert len(world.cluster.changes_of("pod_evicted")) == 2
    assert world.trigger.requests


def test_an_instance_that_is_not_ours_is_ignored() -> None:
    world = World()
    world.spot_node(pods=2)
    world.controller.handle(world.message(SPOT_INTERRUPTION, "i-someone-else"))
    assert world.cluster.changes_of("node_cordoned") == []
    assert world.store.blocked_offerings(world.clock.now()) == frozenset()


def test_a_warning_for_a_launched_but_unregistered_instance_retires_it_and_frees_its_pods() -> None:
    world = World()
    world.cluster.add_pods([pod(f"new-{i}", cpu="500m", memory="1Gi") for i in range(3)])
    world.provision()
    claim = world.store.claims()[0]
    assert claim.pods
    world.controller.handle(world.message(SPOT_INTERRUPTION, claim.instance_id))
    assert all(c.name != claim.name for c in world.store.claims()) or len(world.store.claims()) > 0
    assert world.cloud.instance(claim.instance_id).state in ("shutting-down", "terminated")  # type: ignore[union-attr]
    # The provisioner ran again and a new claim holds the pods.
    holders = [c for c in world.store.claims() if set(claim.pods) & set(c.pods)]
    assert holders
    assert all(c.instance_id != claim.instance_id for c in holders)


def test_handling_the_same_message_twice_is_harmless() -> None:
    world = World()
    world.spot_node(pods=3)
    message = world.message(SPOT_INTERRUPTION, "i-spot-1")
    world.controller.handle(message)
    world.controller.handle(message)
    assert len(world.cluster.changes_of("pod_evicted")) == 3
    assert len(world.cloud.calls_to("terminate")) <= 2


def test_a_malformed_body_is_reported_not_raised() -> None:
    world = World()
    with pytest.raises(MalformedEvent) as parsed:
        receive("{not json")
    outcome = world.controller.process(parsed.value)
    assert "malformed" in outcome
    assert world.observer.of("interruption-malformed")
    assert world.observer.total("MalformedMessages") == 1
