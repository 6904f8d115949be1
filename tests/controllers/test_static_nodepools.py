"""Static NodePools (`spec.replicas`) through the provisioner's and the consolidator's `run`.

Faked: the Kubernetes API, EC2, DynamoDB and time (the world of tests/controllers/test_disruption.py:
a kubelet registering launched instances after a boot delay, a first-fit kube-scheduler). Observed:
the instances launched and terminated, the nodes in the cluster, the decisions logged.
"""

from __future__ import annotations

from dataclasses import replace

from nodewright.controllers.provisioning import Provisioner
from nodewright.model.nodepool import Budget, Disruption, NodePool
from nodewright.model.resources import Resources
from tests.builders import node, node_pool, pod
from tests.controllers.test_disruption import ConsolidationWorld
from tests.controllers.test_interruption import BOOT

STATIC = replace(node_pool("static"), replicas=3, disruption=Disruption(budgets=(Budget(nodes="1"),)))


def provisioner(world: ConsolidationWorld) -> Provisioner:
    """The world's provisioner, its waits advancing the world (kubelet, scheduler) a second at a time."""
    p = world.provisioner()
    p.sleep = lambda seconds: world.tick(max(1.0, seconds))
    return p


def provision(world: ConsolidationWorld, seconds: float = 20.0) -> dict[str, object]:
    """One provisioner invocation, then time for what it launched to boot and register."""
    report = provisioner(world).run(world.clock.now() + seconds + 10).as_dict()
    world.tick(BOOT + 5)
    return report


def static_nodes(world: ConsolidationWorld, pool: str = "static") -> list[str]:
    return sorted(n.name for n in world.cluster.nodes() if n.nodepool == pool and not n.deleting)


def live_instances(world: ConsolidationWorld) -> list[str]:
    return sorted(i.instance_id for i in world.cloud.instances() if i.live)


def test_a_static_pool_launches_its_replicas_without_pending_pods_on_the_cheapest_type() -> None:
    world = ConsolidationWorld(pools=(STATIC,))
    report = provision(world)
    assert len(report["launched"]) == 3  # type: ignore[arg-type]
    assert {i.instance_type for i in world.cloud.instances()} == {"m5.large"}  # the cheapest TYPES offers
    assert len(static_nodes(world)) == 3
    scale_up = world.observer.of("static-scale-up")
    assert scale_up[0]["nodepool"] == "static"
    assert scale_up[0]["launching"] == 3
    # Counted again, nothing more is launched: claims in flight and nodes both count.
    provision(world)
    assert len(world.cloud.calls_to("launch")) == 3


def test_limits_nodes_caps_a_static_pool_below_its_replicas() -> None:
    capped = replace(STATIC, replicas=5, limits=Resources.parse({"nodes": "2"}))
    world = ConsolidationWorld(pools=(capped,))
    provision(world)
    assert len(static_nodes(world)) == 2


def test_pods_land_on_static_nodes_and_a_static_pool_opens_no_claim_for_pods() -> None:
    world = ConsolidationWorld(pools=(replace(STATIC, replicas=1),))
    provision(world)
    (only,) = static_nodes(world)
    for i in range(3):  # 3 x 500m fit an m5.large (2 cpu)
        world.cluster.add_pod(pod(f"web-{i}", cpu="500m", memory="1Gi"))
    world.tick(2)
    world.cluster.add_pod(pod("big-0", cpu="1500m", memory="1Gi"))  # does not fit what is left
    world.tick(2)
    provision(world)
    assert sorted(p.name for p in world.cluster.pods_on(only)) == ["web-0", "web-1", "web-2"]
    # The static pool is no pool to launch for the pod that does not fit.
    assert len(world.cloud.calls_to("launch")) == 1
    reasons = {d["pod"]: d["reason"] for d in world.observer.of("unschedulable")}
    assert reasons["default/big-0"] == "no NodePool opens nodes for pods (static, replicas only: static)"


def test_empty_static_nodes_are_never_consolidated() -> None:
    world = ConsolidationWorld(pools=(STATIC,))
    provision(world)
    provision(world)  # housekeeping marks the claims initialized
    report = world.run()
    assert report["decided"] == []
    assert len(static_nodes(world)) == 3
    rejected = {d["node"]: d["reason"] for d in world.observer.of("disruption-rejected")}
    assert all("static" in rejected[n] for n in static_nodes(world))


def test_lowering_replicas_drains_the_empty_nodes_first_within_the_budget() -> None:
    world = ConsolidationWorld(pools=(STATIC,))
    provision(world)
    provision(world)
    busy = static_nodes(world)[0]
    p = world.cluster.add_pod(pod("web-0", cpu="500m", memory="1Gi"))
    world.cluster.bind(p, busy)
    world.pools = (replace(STATIC, replicas=1),)
    world.run(seconds=120)  # the budget (1 node) lets one go per command
    world.run(seconds=120)
    assert static_nodes(world) == [busy]
    assert len(live_instances(world)) == 1
    done = world.observer.of("disruption-done")
    assert [d["method"] for d in done] == ["static-scale-down", "static-scale-down"]
    # The provisioner does not launch them back.
    provision(world)
    assert len(world.cloud.calls_to("launch")) == 3
    # Raising replicas launches again.
    world.pools = (replace(STATIC, replicas=2),)
    provision(world)
    assert len(static_nodes(world)) == 2


def test_drifted_static_nodes_are_replaced_one_at_a_time_replacement_first() -> None:
    world = ConsolidationWorld(pools=(STATIC,))
    provision(world)
    provision(world)
    old = static_nodes(world)
    world.pools = (replace(STATIC, labels={"team": "a"}),)  # the template changed: every node drifts
    counts: list[int] = []
    for _ in range(3):
        world.run(seconds=150)
        counts.append(len(static_nodes(world)))
        provision(world)  # housekeeping initializes the replacement
    assert not set(static_nodes(world)) & set(old)
    assert len(static_nodes(world)) == 3
    commands = world.observer.of("disruption")
    assert [c["method"] for c in commands] == ["static-replace"] * 3
    assert all(c["candidates"] == [c["candidates"][0]] for c in commands)  # type: ignore[index]
    assert all(len(c["replacements"]) == 1 for c in commands)  # type: ignore[arg-type]
    # Never fewer than the replicas: each replacement was up before its node went.
    assert min(counts) == 3
    assert len(world.cloud.calls_to("launch")) == 6


def test_a_static_pool_changed_into_budgets_of_zero_keeps_its_drifted_nodes() -> None:
    world = ConsolidationWorld(pools=(STATIC,))
    provision(world)
    provision(world)
    frozen = replace(STATIC, labels={"team": "a"}, disruption=Disruption(budgets=(Budget(nodes="0"),)))
    world.pools = (frozen,)
    report = world.run(seconds=60)
    assert report["decided"] == []
    assert len(static_nodes(world)) == 3


def test_dynamic_pools_still_provision_beside_a_static_one() -> None:
    dynamic: NodePool = node_pool("dynamic")
    world = ConsolidationWorld(pools=(replace(STATIC, replicas=1), dynamic))
    world.cluster.add_pods([pod(f"big-{i}", cpu="1500m", memory="1Gi") for i in range(2)])
    world.tick(2)
    provision(world)
    assert len(static_nodes(world)) == 1
    assert static_nodes(world, "dynamic")


def test_karpenters_nodes_of_a_nodepool_of_the_same_name_do_not_count_toward_the_replicas() -> None:
    world = ConsolidationWorld(pools=(STATIC,))
    for i in range(2):
        world.cluster.add_node(node(f"karpenter-{i}", labels={"karpenter.sh/nodepool": "static"}))
    provision(world)
    assert len(world.cloud.calls_to("launch")) == 3
