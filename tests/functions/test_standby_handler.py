"""Standby capacity through the provisioner Lambda handler, against moto.

Faked: EC2 and DynamoDB by moto, SSM's public AMI parameters, the Kubernetes API by the in-memory
cluster, time by a virtual clock (the `world` of tests/functions/test_provisioner_handler_ec2.py);
the kubelet by `join`, which registers each running instance's Node with the labels and taints its
real user data names (the simulator's reader). Real: the handler, the controller, the solver,
`Ec2CloudProvider` (CreateFleet, StopInstances, StartInstances, TerminateInstances) and
`DynamoStateStore`. Observed: the instances' states in moto, the claim records, the Nodes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from botocore.exceptions import ClientError

from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisioning import Provisioner
from nodewright.controllers.provisionoptions import StaticConfiguration
from nodewright.model import labels as wk
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.node import Node
from nodewright.model.nodepool import NodePool, ZoneBalance
from nodewright.model.requirements import Requirements
from nodewright.model.standby import STANDBY_CAPACITY, STANDBY_LABEL, STANDBY_TAINT, STARTING, STOPPED
from nodewright.simulator.standins.kube import registration
from tests.builders import pod
from tests.functions.test_provisioner_handler_ec2 import Ec2World, tags_of, world

if TYPE_CHECKING:
    from tests.functions.conftest import ExamplePlan

__all__ = ["world"]  # the fixture, shared with the EC2 handler tests

Invoke = Callable[[Provisioner, str], dict[str, Any]]
CHUNK = PodTemplate("chunk", "default", pod("chunk", cpu="1", memory="2Gi"))
BUFFER = CapacityBuffer("warm", "default", pod_template_ref="chunk", replicas=4, provisioning_strategy=STANDBY_CAPACITY)


def default_pool(example_plan: ExamplePlan) -> NodePool:
    return next(p for p in example_plan.nodepools if p.name == "default")


def configure(world: Ec2World, example_plan: ExamplePlan, pool: NodePool, buffer: CapacityBuffer = BUFFER) -> None:
    """The examples' EC2NodeClasses, `pool` and the standby buffer; no pending pod."""
    world.config.current = StaticConfiguration(
        nodepools=(pool,), nodeclasses=example_plan.nodeclasses, capacitybuffers=(buffer,), podtemplates=(CHUNK,)
    )


def all_instances(world: Ec2World) -> dict[str, dict[str, Any]]:
    pages = world.moto.get_paginator("describe_instances").paginate()
    return {i["InstanceId"]: i for page in pages for r in page["Reservations"] for i in r["Instances"]}


def states(world: Ec2World) -> dict[str, str]:
    return {i: item["State"]["Name"] for i, item in all_instances(world).items()}


def join(world: Ec2World, example_plan: ExamplePlan, *, zone_first: bool = False) -> list[str]:
    """The kubelet: a Ready Node for each running instance that has none, registered with the
    labels and taints of its user data; the names of the Nodes added (`zone_first`: named after
    their zone first, so they sort by zone).
    """
    types = {t.name: t for t in example_plan.catalog.instance_types(None)}
    known = {n.provider_id for n in world.cluster.snapshot().nodes}
    added = []
    for instance_id, item in sorted(all_instances(world).items()):
        zone = item["Placement"]["AvailabilityZone"]
        provider_id = f"aws:///{zone}/{instance_id}"
        if item["State"]["Name"] != "running" or provider_id in known:
            continue
        user_data = world.moto.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        labels, taints = registration(str((user_data.get("UserData") or {}).get("Value", "")))
        name = f"{zone if zone_first else 'ip'}-{instance_id[2:10]}.ec2.internal"
        capacity = types[item["InstanceType"]]
        world.cluster.add_node(
            Node(
                name=name,
                labels={**labels, wk.HOSTNAME: name, wk.ZONE: zone, wk.INSTANCE_TYPE: item["InstanceType"]},
                taints=taints,
                capacity=capacity.capacity,
                allocatable=capacity.allocatable,
                provider_id=provider_id,
                ready=True,
                created_at=world.clock.now(),
            )
        )
        added.append(name)
    return added


def warm_standby(world: Ec2World, example_plan: ExamplePlan, invoke: Invoke) -> dict[str, Any]:
    """Launch the buffer's standby instances, let them join, and let the provisioner stop them."""
    first = invoke(world.provisioner, "warm-1")
    join(world, example_plan)
    invoke(world.provisioner, "warm-2")
    return first


def decisions(world: Ec2World, kind: str) -> list[dict[str, Any]]:
    observer = world.provisioner.observer
    assert isinstance(observer, RecordingObserver)
    return observer.of(kind)


def test_a_standby_buffer_launches_on_demand_instances_that_join_tainted_and_then_stops_them(
    world: Ec2World, example_plan: ExamplePlan, invoke: Invoke
) -> None:
    # The examples' default pool allows spot, and spot is cheaper: standby must still be on-demand.
    configure(world, example_plan, default_pool(example_plan))
    for p in world.cluster.pods():
        world.cluster.remove_pod(p)

    first = invoke(world.provisioner, "invocation-1")
    launched = all_instances(world)
    assert first["launched"]
    assert len(launched) == len(first["launched"])
    assert all(i.get("InstanceLifecycle") != "spot" for i in launched.values())
    assert all(tags_of(i)["karpenter.sh/nodepool"] == "default" for i in launched.values())
    nodes = join(world, example_plan)
    joined = [world.cluster.get_node(n) for n in nodes]
    assert all(n is not None and n.labels[STANDBY_LABEL] == "default.warm" for n in joined)
    assert all(n is not None and STANDBY_TAINT in n.taints for n in joined)

    second = invoke(world.provisioner, "invocation-2")
    third = invoke(world.provisioner, "invocation-3")

    assert second["launched"] == []
    assert third["launched"] == []
    assert set(states(world).values()) == {"stopped"}
    assert {c.state for c in world.store.claims()} == {STOPPED}
    for name in nodes:
        node = world.cluster.get_node(name)
        assert node is not None
        assert node.unschedulable
        assert STANDBY_TAINT in node.taints
    assert len(decisions(world, "standby-stop")) == len(nodes)
    assert world.cluster.pods() == []  # the buffer's chunks never reach the cluster


def test_pending_pods_that_fit_a_stopped_node_start_it_instead_of_launching_and_the_buffer_refills(
    world: Ec2World, example_plan: ExamplePlan, invoke: Invoke
) -> None:
    configure(world, example_plan, default_pool(example_plan))
    for p in world.cluster.pods():
        world.cluster.remove_pod(p)
    warm_standby(world, example_plan, invoke)
    stopped = {i for i, s in states(world).items() if s == "stopped"}
    fleets_before = len(world.ec2.fleet_requests)
    burst = [pod(f"burst-{i}", cpu="500m", memory="1Gi") for i in range(2)]  # fit the smallest standby node together
    world.cluster.add_pods(burst)

    result = invoke(world.provisioner, "burst")

    now = states(world)
    started = {i for i in stopped if now[i] == "running"}
    assert len(started) == 1  # two small pods fit one stopped node: that one is started
    claims = {c.instance_id: c for c in world.store.claims()}
    claim = claims[started.pop()]
    assert claim.state == STARTING
    assert set(claim.pods) == {p.key for p in burst}
    node = world.cluster.get_node(claim.node_name)
    assert node is not None
    assert not node.unschedulable
    assert STANDBY_TAINT not in node.taints
    assert STANDBY_LABEL not in node.labels
    # No CreateFleet for the pods; the buffer launched a replacement standby instance (refill).
    assert [d["pods"] for d in decisions(world, "launch") if d["reason"] != "standby capacity"] == []
    assert len(world.ec2.fleet_requests) > fleets_before
    assert result["launched"]
    assert all(STANDBY_LABEL in claims[i].labels for i in now if i not in stopped)

    # The kubelet reports Ready again: the housekeeping counts it as an ordinary node.
    world.cluster.set_node_ready(claim.node_name, False)
    world.cluster.set_node_ready(claim.node_name)
    invoke(world.provisioner, "after")
    assert {c.name: c.state for c in world.store.claims()}[claim.name] == "initialized"


def test_a_capacity_error_on_start_blocks_the_offering_terminates_the_instance_and_launches_instead(
    world: Ec2World, example_plan: ExamplePlan, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, example_plan, default_pool(example_plan))
    for p in world.cluster.pods():
        world.cluster.remove_pod(p)
    warm_standby(world, example_plan, invoke)
    stopped = {i for i, s in states(world).items() if s == "stopped"}

    def no_capacity(**request: Any) -> dict[str, Any]:
        error = {"Code": "InsufficientInstanceCapacity", "Message": "We currently do not have sufficient capacity"}
        raise ClientError({"Error": error}, "StartInstances")

    monkeypatch.setattr(world.ec2, "start_instances", no_capacity, raising=False)
    burst = [pod(f"burst-{i}", cpu="500m", memory="1Gi") for i in range(2)]  # fit the smallest standby node together
    world.cluster.add_pods(burst)

    invoke(world.provisioner, "burst")

    now = states(world)
    assert any(now[i] == "terminated" for i in stopped)
    blocked = world.store.blocked_offerings(world.clock.now())
    assert any(o[0] == "on-demand" for o in blocked)
    launches = [d for d in decisions(world, "launch") if d["reason"] != "standby capacity"]
    assert sorted(p for d in launches for p in d["pods"]) == sorted(p.key for p in burst)
    assert decisions(world, "standby-replace")[0]["reason"].startswith("StartInstances: InsufficientInstanceCapacity")


@pytest.mark.parametrize("change", ["template", "expiry"])
def test_a_stopped_standby_instance_that_drifted_or_expired_is_replaced_without_waiting(
    world: Ec2World, example_plan: ExamplePlan, invoke: Invoke, change: str
) -> None:
    pool = replace(default_pool(example_plan), expire_after=3600.0)
    configure(world, example_plan, pool)
    for p in world.cluster.pods():
        world.cluster.remove_pod(p)
    warm_standby(world, example_plan, invoke)
    stopped = {i for i, s in states(world).items() if s == "stopped"}
    if change == "template":
        configure(world, example_plan, replace(pool, labels={**pool.labels, "team": "web"}))
    else:
        world.clock.advance(3601.0)

    result = invoke(world.provisioner, "after-change")

    now = states(world)
    assert all(now[i] == "terminated" for i in stopped)
    assert result["launched"]  # their successors, launched at once
    reasons = {d["reason"].split(":")[0] for d in decisions(world, "standby-replace")}
    assert reasons == ({"drifted"} if change == "template" else {"it reached NodePool default's expireAfter"})


def test_without_a_standby_buffer_nothing_is_stopped_or_started(
    world: Ec2World, example_plan: ExamplePlan, invoke: Invoke
) -> None:
    invoke(world.provisioner, "invocation-1")
    join(world, example_plan)
    invoke(world.provisioner, "invocation-2")

    assert "stopped" not in set(states(world).values())
    assert decisions(world, "standby-stop") == []
    assert decisions(world, "standby-start") == []


def test_a_stopped_standby_instance_booted_from_an_ami_no_longer_resolved_is_replaced(
    world: Ec2World, example_plan: ExamplePlan, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(world, example_plan, default_pool(example_plan))
    for p in world.cluster.pods():
        world.cluster.remove_pod(p)
    warm_standby(world, example_plan, invoke)
    stopped = {i for i, s in states(world).items() if s == "stopped"}
    booted = {item["ImageId"] for i, item in all_instances(world).items() if i in stopped}
    standby = world.provisioner.standby
    assert standby is not None
    # What the EC2 adapter's image_ids answers once a new AMI is published (tested against moto
    # in tests/adapters/aws/test_ec2_standby.py): every EC2NodeClass resolves to another image.
    monkeypatch.setattr(standby, "images", lambda: dict.fromkeys(example_plan.nodeclasses, frozenset({"ami-new"})))

    result = invoke(world.provisioner, "new-ami")

    now = states(world)
    assert booted
    assert all(now[i] == "terminated" for i in stopped)
    assert result["launched"]
    reasons = [d["reason"] for d in decisions(world, "standby-replace")]
    assert reasons
    assert all("no longer resolves to" in r and "ami-new" in r for r in reasons)


def balanced_chunks(world: Ec2World, example_plan: ExamplePlan, replicas: int) -> None:
    """Configure a standby buffer of `replicas` chunks of 3 cpu in a zone-balanced (`nodes:1`)
    NodePool of xlarge types only, so each chunk takes a node of its own."""
    one_per_node = [{"key": wk.INSTANCE_SIZE, "operator": "In", "values": ["xlarge"]}]
    pool = default_pool(example_plan)
    pool = replace(
        pool,
        requirements=pool.requirements.intersection(Requirements.parse(one_per_node)),
        zone_balance=ZoneBalance("nodes", 1.0),
    )
    world.config.current = StaticConfiguration(
        nodepools=(pool,),
        nodeclasses=example_plan.nodeclasses,
        capacitybuffers=(replace(BUFFER, replicas=replicas),),
        podtemplates=(PodTemplate("chunk", "default", pod("chunk", cpu="3", memory="4Gi")),),
    )


def warm_six_balanced_chunks(world: Ec2World, example_plan: ExamplePlan, invoke: Invoke) -> None:
    """`balanced_chunks` of six on a cluster with no pods, and one provisioner pass to launch them."""
    balanced_chunks(world, example_plan, 6)
    for p in world.cluster.pods():
        world.cluster.remove_pod(p)
    invoke(world.provisioner, "warm-1")


def test_a_zone_balanced_nodepools_standby_instances_are_spread_across_its_zones(
    world: Ec2World, example_plan: ExamplePlan, invoke: Invoke
) -> None:
    # Standby instances are nodes of their NodePool: a zone-balanced one keeps them even too.
    warm_six_balanced_chunks(world, example_plan, invoke)

    zones = Counter(item["Placement"]["AvailabilityZone"] for item in all_instances(world).values())
    assert sum(zones.values()) == 6
    assert zones == dict.fromkeys(("us-east-1a", "us-east-1b", "us-east-1c"), 2)


def test_a_zone_balanced_standby_that_shrinks_terminates_its_surplus_from_the_fullest_zones(
    world: Ec2World, example_plan: ExamplePlan, invoke: Invoke
) -> None:
    # Six chunks of 3 cpu, one per xlarge node, two per zone; the buffer then asks for three.
    # Each of the three chunks left fits any of the six nodes, and the solver fills them in name
    # order (zone a's first): the surplus must still be taken one per zone, not two from c and
    # one from b, which would leave a=2 b=1 c=0 (stopped nodes count: they come back in their zone).
    warm_six_balanced_chunks(world, example_plan, invoke)
    join(world, example_plan, zone_first=True)
    invoke(world.provisioner, "warm-2")
    zone_of = {i: item["Placement"]["AvailabilityZone"] for i, item in all_instances(world).items()}
    assert Counter(zone_of[i] for i, s in states(world).items() if s == "stopped") == dict.fromkeys(
        ("us-east-1a", "us-east-1b", "us-east-1c"), 2
    )

    balanced_chunks(world, example_plan, 3)
    invoke(world.provisioner, "shrink")

    left = Counter(zone_of[i] for i, s in states(world).items() if s == "stopped")
    assert left == dict.fromkeys(("us-east-1a", "us-east-1b", "us-east-1c"), 1)
    assert len(decisions(world, "standby-replace")) == 3
    assert all(d["reason"].startswith("surplus") for d in decisions(world, "standby-replace"))


ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def web_in_zone_a(world: Ec2World) -> list[Any]:
    """Two pending pods of 3 cpu tied to zone a by their node selector: two serving xlarge nodes there."""
    return world.cluster.add_pods(
        [pod(f"web-{i}", cpu="3", memory="4Gi", node_selector={wk.ZONE: ZONES[0]}) for i in range(2)]
    )


def serving_in_zone_a_then_standby(world: Ec2World, example_plan: ExamplePlan, invoke: Invoke, chunks: int) -> None:
    """Two serving nodes launched in zone a (`web_in_zone_a`) by a pass without the buffer, then a
    pass with `balanced_chunks` of `chunks`, which launches the standby.
    """
    balanced_chunks(world, example_plan, chunks)
    buffered = world.config.current
    for p in world.cluster.pods():
        world.cluster.remove_pod(p)
    web_in_zone_a(world)
    world.config.current = replace(buffered, capacitybuffers=())
    invoke(world.provisioner, "web")
    world.config.current = buffered
    invoke(world.provisioner, "standby")


def test_a_zone_balanced_nodepools_standby_instances_are_kept_even_by_their_own_count_not_to_even_out_serving_ones(
    world: Ec2World, example_plan: ExamplePlan, invoke: Invoke
) -> None:
    # Serving nodes in zone a only (their pods ask for it). Counted with them, the standby would go
    # to b and c (0/2/1), evening out a total while the serving nodes stay 2/0/0, and the first
    # time the buffer is replaced whole (a new DaemonSet, a new AMI) the imbalance is all there is.
    serving_in_zone_a_then_standby(world, example_plan, invoke, 3)

    claims = world.store.claims()
    serving = Counter(c.zone for c in claims if STANDBY_LABEL not in c.labels)
    standby = Counter(c.zone for c in claims if STANDBY_LABEL in c.labels)
    assert serving == {ZONES[0]: 2}
    assert standby == dict.fromkeys(ZONES, 1)


def test_pending_pods_start_the_stopped_node_in_the_zone_with_the_fewest_serving_nodes(
    world: Ec2World, example_plan: ExamplePlan, invoke: Invoke
) -> None:
    # Three equal stopped nodes, one per zone, named after their zone (a's sorts first); two serving
    # nodes, both in zone a. A free pod that fits any of them starts b's (fewest serving nodes,
    # then the name): serving 2/1/0, where a's, first by name, would make them 3/0/0.
    balanced_chunks(world, example_plan, 3)
    for p in world.cluster.pods():
        world.cluster.remove_pod(p)
    web = web_in_zone_a(world)
    invoke(world.provisioner, "warm-1")
    nodes = join(world, example_plan, zone_first=True)
    serving_nodes = [n for n in nodes if (node := world.cluster.get_node(n)) and STANDBY_LABEL not in node.labels]
    for p, name in zip(web, sorted(serving_nodes), strict=True):
        world.cluster.bind(p, name)
    invoke(world.provisioner, "warm-2")
    stopped = {c.node_name: c.zone for c in world.store.claims() if c.state == STOPPED}
    assert sorted(stopped.values()) == list(ZONES)

    world.cluster.add_pods([pod("burst", cpu="3", memory="4Gi")])
    invoke(world.provisioner, "burst")

    started = [c for c in world.store.claims() if c.state == STARTING]
    assert [c.zone for c in started] == [ZONES[1]]


def test_a_standby_instance_is_launched_in_a_zone_with_the_fewest_serving_nodes(
    world: Ec2World, example_plan: ExamplePlan, invoke: Invoke
) -> None:
    # A one-node buffer: every zone keeps the standby even, and the cheapest (or first) zone would
    # take every refill, so each start for pending pods would add a serving node to that zone.
    serving_in_zone_a_then_standby(world, example_plan, invoke, 1)

    standby = [c.zone for c in world.store.claims() if STANDBY_LABEL in c.labels]
    assert len(standby) == 1
    assert standby[0] != ZONES[0]
