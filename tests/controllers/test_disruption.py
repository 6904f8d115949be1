"""The consolidator against the in-memory cluster, the fake cloud and the in-memory store.

The world of tests/controllers/test_interruption.py (a kubelet that registers launched instances
after a boot delay, a first-fit scheduler) with the consolidator's `sleep` advancing it, so the
15 s validation wait, replacement boot and drains all happen in virtual time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import pytest

from bench.harness.cluster_actors import pdb
from nodewright.controllers.algorithms import EngineDecisions
from nodewright.controllers.consolidationoptions import ConsolidatorOptions
from nodewright.controllers.disruption import TAINT, Consolidator
from nodewright.controllers.provisionoptions import StaticConfiguration
from nodewright.engine.disruption import Command, DisruptionCache, DisruptionInput, DisruptionOptions, DisruptionResult
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.state import InMemoryStateStore
from nodewright.model import labels as wk
from nodewright.model.command import CommandRecord
from nodewright.model.instance import Instance
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.taints import Taint
from nodewright.ports import Clock, Eviction, InsufficientCapacity, LaunchRequest
from tests.builders import pod
from tests.controllers.test_interruption import World
from tests.controllers.test_provisioning import FixedCatalog


@dataclass
class ConsolidationWorld(World):
    # What the EC2 adapter's image_ids answers (None: the consolidator is given no images).
    images: Mapping[str, frozenset[str]] | None = None

    def consolidator(self, **options: float) -> Consolidator:
        launcher = self.provisioner().launcher
        return Consolidator(
            cluster=self.cluster,
            cloud=self.cloud,
            claim_records=self.store,
            command_records=self.store,
            leases=self.store,
            offering_blocks=self.store,
            clock=self.clock,
            config=StaticConfiguration(self.pools),
            catalog=FixedCatalog(self.types),
            observer=self.observer,
            launcher=launcher,
            options=ConsolidatorOptions(**options),  # type: ignore[arg-type]
            sleep=lambda seconds: self.tick(max(1.0, seconds)),
            images=None if self.images is None else lambda: self.images or {},
        )

    def run(self, seconds: float = 60.0, **options: float) -> dict[str, object]:
        report = self.consolidator(**options).run(self.clock.now() + seconds).as_dict()
        self.tick(5)  # kube-scheduler places what the last drain evicted
        return report

    def node_with(self, name: str, pods: int, *, capacity_type: str = "spot", app: str = "web") -> Node:
        node = self.spot_node(name, pods=0, capacity_type=capacity_type)
        for i in range(pods):
            p = self.cluster.add_pod(pod(f"{app}-{name}-{i}", cpu="500m", memory="1Gi", labels={"app": app}))
            self.cluster.bind(p, name)
        return node

    def tainted(self) -> list[str]:
        return [n.name for n in self.cluster.nodes() if TAINT in n.taints]


def test_an_empty_node_is_removed_after_validation() -> None:
    world = ConsolidationWorld()
    world.node_with("busy", 4)
    world.node_with("idle", 0)
    report = world.run()
    assert report["completed"]
    assert world.cluster.get_node("idle") is None
    assert world.cloud.instance("i-idle").state in ("shutting-down", "terminated")  # type: ignore[union-attr]
    assert all(c.node_name != "idle" for c in world.store.claims())
    assert world.store.commands() == []
    done = world.observer.of("disruption-done")
    assert done[0]["method"] == "emptiness"
    # Validated 15 s after deciding, in virtual time.
    assert world.observer.total("NodesDisrupted") == 1


def test_two_underused_nodes_are_consolidated_without_losing_a_pod() -> None:
    world = ConsolidationWorld()
    world.node_with("a", 3)
    world.node_with("b", 3)
    world.run(120)
    assert len(world.cluster.nodes()) == 1
    assert world.cluster.lost_pods() == []
    pods = world.workload_pods()
    assert len(pods) == 6
    assert all(p.node_name for p in pods)
    assert world.tainted() == []


def test_a_node_is_replaced_by_a_cheaper_one_first_then_drained() -> None:
    world = ConsolidationWorld()
    world.node_with("big", 2, capacity_type="on-demand")  # m5.4xlarge at $0.768/h for 1 cpu of pods
    world.run(180)
    assert world.cluster.get_node("big") is None
    names = [n.labels.get(wk.INSTANCE_TYPE) for n in world.cluster.nodes()]
    assert names
    assert all(n != "m5.4xlarge" for n in names)
    evicted = world.cluster.changes_of("pod_evicted")
    ready = list(world.cluster.changes_of("node_added"))
    assert evicted
    assert ready
    assert min(c.at for c in evicted) >= max(c.at for c in ready)  # replacement first
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())


@pytest.mark.parametrize(("k", "replaced"), [(2.0, True), (1.0, False)], ids=["worth-it", "not-worth-it"])
def test_the_balance_threshold_keeps_a_node_whose_move_saves_too_little_for_its_pods(k: float, replaced: bool) -> None:
    # The only node of its NodePool: a cheaper node saves about 3/4 of the NodePool's $/h for all
    # of its disruption, a Balanced score of about 0.75: enough at k = 2 (>= 1/2), not at k = 1.
    world = ConsolidationWorld()
    world.node_with("big", 2, capacity_type="on-demand")

    world.run(180, disruption=DisruptionOptions(balance_threshold=k))  # type: ignore[arg-type]

    assert (world.cluster.get_node("big") is None) == replaced
    assert bool(list(world.cluster.changes_of("pod_evicted"))) == replaced
    if not replaced:
        reasons = [d["reason"] for d in world.observer.of("disruption-rejected") if d["node"] == "big"]
        assert reasons
        assert all("not worth the disruption" in str(r) and "k = 1" in str(r) for r in reasons)
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())


def test_a_command_whose_state_changed_during_validation_is_dropped() -> None:
    world = ConsolidationWorld()
    world.node_with("busy", 4)
    world.node_with("idle", 0)
    consolidator = world.consolidator()
    original = consolidator.sleep

    def arrives_during_validation(seconds: float) -> None:
        if not world.cluster.pods_on("idle"):
            p = world.cluster.add_pod(pod("late", cpu="500m", memory="1Gi"))
            world.cluster.bind(p, "idle")
        original(seconds)

    consolidator.sleep = arrives_during_validation
    report = consolidator.run(world.clock.now() + 30).as_dict()
    assert report["dropped"]
    assert world.cluster.get_node("idle") is not None
    assert world.tainted() == []


def test_a_pdb_slows_the_drain_but_never_breaks() -> None:
    world = ConsolidationWorld()
    world.node_with("a", 4)
    world.node_with("b", 2)
    world.cluster.add_pdb(pdb("web", "web", min_available=5))
    world.run(300)
    assert world.cluster.lost_pods() == []
    assert len(world.cluster.nodes()) == 1
    assert not world.cluster.changes_of("pdb_violated")


class CrashingStore(InMemoryStateStore):
    """Dies (SystemExit) the first time a command reaches `state`, as a Lambda timing out there."""

    def __init__(self, state: str) -> None:
        super().__init__()
        self.crash_at = state

    def save_command(self, record: CommandRecord) -> None:
        super().save_command(record)
        if record.state == self.crash_at:
            self.crash_at = ""
            raise SystemExit(f"died after recording {record.state}")


@pytest.mark.parametrize("state", ["computed", "launching", "tainted", "draining", "terminating"])
def test_a_crash_at_any_step_resumes_or_rolls_back(state: str) -> None:
    world = ConsolidationWorld(store=CrashingStore(state))
    world.node_with("big", 2, capacity_type="on-demand")
    with pytest.raises(SystemExit):
        world.run(180)
    # Whatever happened, a tainted node always has a live command.
    owned = {n for r in world.store.commands() for n in r.candidates}
    assert set(world.tainted()) <= owned
    world.tick(60)
    world.run(300)
    world.run(300)
    assert world.store.commands() == []
    assert world.tainted() == []
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())
    assert len([n for n in world.cluster.nodes() if n.labels.get(wk.INSTANCE_TYPE) == "m5.4xlarge"]) == 0


def test_many_to_one_mode_never_replaces_many_by_many() -> None:
    world = ConsolidationWorld()
    world.node_with("a", 3)
    world.node_with("b", 3)
    consolidator = world.consolidator()
    assert consolidator.options.disruption.many_to_many
    strict = world.consolidator(disruption=DisruptionOptions(many_to_many=False))  # type: ignore[arg-type]
    assert not strict.options.disruption.many_to_many


def test_an_orphaned_consolidation_taint_is_removed() -> None:
    world = ConsolidationWorld()
    world.node_with("a", 3)
    world.cluster.cordon("a", TAINT)
    report = world.run(30)
    assert report["untainted"] == ["a"]
    assert world.tainted() == []


def test_the_provisioner_leaves_a_commands_pods_to_its_replacements() -> None:
    """The consolidator launched capacity for its candidates' pods before tainting them; a
    provisioner pass during the command must not launch a second set of nodes for them.
    """
    world = ConsolidationWorld()
    world.node_with("big", 2, capacity_type="on-demand")
    consolidator = world.consolidator()

    def tick_and_provision(seconds: float) -> None:
        world.tick(max(1.0, seconds))
        world.provision()

    consolidator.sleep = tick_and_provision
    consolidator.run(world.clock.now() + 180)
    world.tick(5)

    assert world.cluster.get_node("big") is None
    assert len(world.cloud.calls_to("launch")) == 1  # the consolidator's replacement, nothing more
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())


def test_a_booting_replacement_keeps_the_room_for_the_pods_it_was_launched_for() -> None:
    """The candidate's pods are still bound to it while its replacement boots; pods that become
    pending meanwhile may only take what the replacement has left beyond them.
    """
    world = ConsolidationWorld()
    world.node_with("big", 2, capacity_type="on-demand")  # 2 x 500m; replaced by an m5.large (2 cpu)
    consolidator = world.consolidator()
    seen: list[tuple[str, ...]] = []

    def pods_arrive_while_it_boots(seconds: float) -> None:
        commands = world.store.commands()
        if not seen and commands and commands[0].state == "tainted":
            name = commands[0].replacements[0]
            for i in range(6):
                world.cluster.add_pod(pod(f"late-{i}", cpu="500m", memory="1Gi"))
            world.provision()
            seen.append(next(c.pods for c in world.store.claims() if c.name == name))
        world.tick(max(1.0, seconds))

    consolidator.sleep = pods_arrive_while_it_boots
    consolidator.run(world.clock.now() + 180)
    world.tick(30)

    assert seen, "the command reached its tainted state"
    held = seen[0]
    assert {"default/web-big-0", "default/web-big-1"} <= set(held)
    assert len(held) <= 4  # 2 cpu: the two pods it was launched for and at most two 500m others
    assert world.cluster.lost_pods() == []
    assert all(p.node_name for p in world.workload_pods())


def test_an_aborted_command_leaves_an_interruptions_taint_alone() -> None:
    """A spot warning re-taints a candidate mid-command; when the command then aborts, the node
    stays cordoned for the interruption (its pods pending for the provisioner)."""
    world = ConsolidationWorld()
    world.node_with("big", 2, capacity_type="on-demand")
    consolidator = world.consolidator()
    interrupted = Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule", wk.DISRUPTED_REPLACE)

    def warning_arrives_and_the_replacement_vanishes(seconds: float) -> None:
        commands = world.store.commands()
        if commands and commands[0].state == "tainted":
            world.cluster.cordon("big", interrupted)
            for name in commands[0].replacements:
                world.store.delete_claim(name)
        world.tick(max(1.0, seconds))

    consolidator.sleep = warning_arrives_and_the_replacement_vanishes
    report = consolidator.run(world.clock.now() + 120)

    assert report.aborted
    node = world.cluster.get_node("big")
    assert node is not None
    assert interrupted in node.taints
    assert node.unschedulable
    assert node.draining


class RepricingCloud(FakeCloudProvider):
    """EC2 whose launches come up at `price` $/h whatever the catalog said (a price that moved
    between the plan and the launch).
    """

    def __init__(self, clock: Clock, price: float) -> None:
        super().__init__(clock)
        self.price = price

    def launch(self, request: LaunchRequest) -> Instance:
        return replace(super().launch(request), price=self.price)


def test_a_replacement_that_came_up_no_cheaper_is_rolled_back_before_any_drain_and_not_tried_again() -> None:
    world = ConsolidationWorld()
    world.cloud = RepricingCloud(world.clock, price=0.768)  # as dear as the m5.4xlarge it replaces
    world.node_with("big", 2, capacity_type="on-demand")
    consolidator = world.consolidator()

    first = consolidator.run(world.clock.now() + 180)
    world.tick(60)
    second = consolidator.run(world.clock.now() + 180)

    assert first.rolled_back
    assert not first.completed
    assert not second.decided
    (launch,) = world.cloud.calls_to("launch")  # the candidate/type pair is remembered: no loop
    assert [i.instance_id for i in world.cloud.instances()] == ["i-big"]  # the replacement is gone
    assert launch.request is not None
    assert launch.request.claim.name not in {c.name for c in world.store.claims()}
    assert len(world.cluster.pods_on("big")) == 2
    assert not world.cluster.changes_of("pod_evicted")
    assert world.tainted() == []
    assert world.store.commands() == []
    (came_up,) = world.observer.of("disruption-launched")
    assert came_up["outcome"] == "rolled-back"
    assert came_up["launched"] >= came_up["price"] > came_up["promised"]
    assert len(world.observer.of("disruption-rolled-back")) == 1
    reasons = [d["reason"] for d in world.observer.of("disruption-rejected") if d["node"] == "big"]
    assert "came up no cheaper" in reasons[-1]


def test_a_replacement_that_came_up_cheaper_is_kept_and_audited() -> None:
    world = ConsolidationWorld()
    world.node_with("big", 2, capacity_type="on-demand")
    report = world.run(180)
    assert report["completed"]
    (came_up,) = world.observer.of("disruption-launched")
    assert came_up["outcome"] == "kept"
    assert came_up["launched"] == pytest.approx(came_up["promised"])
    assert came_up["launched"] < came_up["price"]


def test_a_drain_a_budget_holds_past_the_drain_timeout_is_given_up_and_the_nodes_serve_again() -> None:
    world = ConsolidationWorld()
    world.node_with("a", 3)
    world.node_with("b", 3)

    def refused(pod: Pod) -> Eviction:
        # Once the drain starts a budget refuses every eviction (as a workload's pods pending
        # elsewhere make it do: they count as unavailable).
        return Eviction(pod.key, "blocked", "Cannot evict pod as it would violate the pod's disruption budget.")

    world.cluster.evict = refused  # type: ignore[method-assign]
    report = world.run(400, drain_timeout=120.0)
    assert report["aborted"], "the stalled drain was given up"
    aborted = report["aborted"]
    assert isinstance(aborted, dict)
    assert all("evicted nothing for 120 s" in why and "refused" in why for why in aborted.values())
    # Each node is tried once (a then b, or b then a): a stalled drain is not tried again at once.
    assert len(aborted) <= 2
    assert world.tainted() == [], "the candidates serve again"
    assert world.store.commands() == []
    assert world.cluster.lost_pods() == []
    assert len(world.cluster.nodes()) == 2
    rejected = {d["node"]: d["reason"] for d in world.observer.of("disruption-rejected")}
    assert "drain stalled" in rejected["a"]
    assert "drain stalled" in rejected["b"]


class SecondLaunchShort(FakeCloudProvider):
    """EC2 that launches the first request and has no capacity for the next (a spot pool that runs
    dry between two replacements of one command).
    """

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self.requests: list[LaunchRequest] = []

    def launch(self, request: LaunchRequest) -> Instance:
        self.requests.append(request)
        if len(self.requests) > 1:
            offerings = [("spot", t.name, "us-east-1a") for t in request.options]
            raise InsufficientCapacity(offerings, "InsufficientInstanceCapacity")
        return super().launch(request)


class TwoForTwo:
    """The engine's decisions, with its one-node replacement taken for both nodes at once: a
    command of two replacements, as many-to-many consolidation decides on real days.
    """

    def __init__(self) -> None:
        self.engine = EngineDecisions()

    def compute_commands(self, inp: DisruptionInput, cache: DisruptionCache) -> DisruptionResult:
        result = self.engine.compute_commands(inp, cache)
        if not result.commands or len(result.commands[0].replacements) != 1:
            return result
        one = result.commands[0]
        command = replace(one, candidates=("a", "b"), replacements=(*one.replacements, *one.replacements))
        return replace(result, commands=(command,))

    def validate(self, command: Command, fresh: DisruptionInput, cache: DisruptionCache) -> str | None:
        return None


def test_a_command_whose_second_replacement_cannot_launch_leaves_no_extra_node() -> None:
    """One replacement of two came up, the other hit a capacity error: the command aborts before
    any candidate is tainted, so the one that came up would only be an extra node. It is
    terminated; the next pass decides afresh (on a real day a capacity error in one zone otherwise
    left a node behind at every retry, and the next pass took those nodes as its candidates).
    """
    world = ConsolidationWorld()
    cloud = SecondLaunchShort(world.clock)
    world.cloud = cloud
    for name in ("a", "b"):
        world.spot_node(name, pods=0, capacity_type="on-demand")  # m5.4xlarge, each with a 10-cpu pod
        world.cluster.bind(world.cluster.add_pod(pod(f"big-{name}", cpu="10", memory="8Gi")), name)
    consolidator = world.consolidator()
    consolidator.decisions = TwoForTwo()

    report = consolidator.run(world.clock.now() + 40)

    assert report.aborted
    assert len(cloud.requests) == 2
    alive = {i.instance_id for i in cloud.instances() if i.state not in ("shutting-down", "terminated")}
    assert alive == {"i-a", "i-b"}  # the replacement that came up is gone again
    assert {c.node_name for c in world.store.claims()} == {"a", "b"}
    assert world.store.commands() == []
    assert world.tainted() == []
    assert [p.key for p in world.cluster.pods_on("a")] == ["default/big-a"]
    assert not world.cluster.changes_of("pod_evicted")
    (discarded,) = world.observer.of("replacements-discarded")
    assert discarded["nodeclaims"] == [cloud.requests[0].claim.name]


class FirstLaunchShort(SecondLaunchShort):
    """EC2 with no capacity for the first request (and plenty after it)."""

    def launch(self, request: LaunchRequest) -> Instance:
        self.requests.append(request)
        if len(self.requests) == 1:
            offerings = [("spot", t.name, "us-east-1a") for t in request.options]
            raise InsufficientCapacity(offerings, "InsufficientInstanceCapacity")
        return FakeCloudProvider.launch(self, request)


def test_a_command_whose_first_replacement_cannot_launch_launches_no_other() -> None:
    """The command goes on only if every replacement comes up: once one failed, launching the
    others would only start nodes to terminate again (and they would launch with the failed
    offerings blocked, a spot replacement coming up on-demand, dearer than planned).
    """
    world = ConsolidationWorld()
    cloud = FirstLaunchShort(world.clock)
    world.cloud = cloud
    for name in ("a", "b"):
        world.spot_node(name, pods=0, capacity_type="on-demand")
        world.cluster.bind(world.cluster.add_pod(pod(f"big-{name}", cpu="10", memory="8Gi")), name)
    consolidator = world.consolidator()
    consolidator.decisions = TwoForTwo()

    report = consolidator.run(world.clock.now() + 40)

    (why,) = report.aborted.values()
    assert "InsufficientInstanceCapacity" in why
    assert "not launched: an earlier replacement failed" in why
    assert len(cloud.requests) == 1  # the second replacement was never sent to EC2
    alive = {i.instance_id for i in cloud.instances() if i.state not in ("shutting-down", "terminated")}
    assert alive == {"i-a", "i-b"}
    assert {c.node_name for c in world.store.claims()} == {"a", "b"}
    assert world.tainted() == []
    assert not world.observer.of("replacements-discarded")
