"""The Kubernetes Events the three controllers report, as the cluster then holds them.

Faked: the cluster (the in-memory cluster, which stores Events through the same correlator as
the Kubernetes adapter), EC2 and the state store, in the worlds of test_provisioning,
test_interruption and test_disruption (virtual time). Real: the controllers. Observed:
`cluster.events(...)`, what `kubectl describe` would list for a pod or a node.
"""

from __future__ import annotations

from nodewright.engine.interruption import REBALANCE, SPOT_INTERRUPTION, STATE_CHANGE
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model.event import ObjectRef
from nodewright.model.pod import Pod
from nodewright.ports import Eviction, LaunchError
from tests.builders import node, node_pool, pod
from tests.controllers.test_disruption import ConsolidationWorld
from tests.controllers.test_interruption import World
from tests.controllers.test_provisioning import World as ProvisioningWorld


def reasons(cluster: InMemoryCluster, ref: ObjectRef) -> list[tuple[str, str, str]]:
    return [(e.event.type, e.event.reason, e.event.note) for e in cluster.events(ref)]


def test_a_pod_no_nodepool_can_take_gets_failed_scheduling_with_each_pools_reason() -> None:
    world = ProvisioningWorld(pools=(node_pool("general"), node_pool("batch")))
    (waiting,) = world.pending(1, node_selector={"team": "data"})  # a label no NodePool sets

    world.run(5)

    [(kind, reason, note)] = reasons(world.cluster, ObjectRef.pod(waiting.key))
    assert (kind, reason) == ("Warning", "FailedScheduling")
    assert note.startswith("Failed to schedule pod, nodepool batch: ")
    assert "; nodepool general: " in note
    [stored] = world.cluster.events(ObjectRef.pod(waiting.key))
    assert stored.event.regarding.uid == waiting.uid
    assert stored.reporting_controller == "nodewright"


def test_launched_pods_that_waited_are_nominated_to_their_claim_once_however_many_passes_see_them() -> None:
    world = ProvisioningWorld()
    pods = world.pending(3)
    world.clock.advance(45)  # pending since before this invocation (nominate_after is 30 s)

    world.run(30)
    world.run(30)

    (claim,) = world.store.claims()
    for p in pods:
        assert reasons(world.cluster, ObjectRef.pod(p.key)) == [
            ("Normal", "Nominated", f"Pod should schedule on: nodeclaim/{claim.name}")
        ]


def test_pods_launched_for_at_once_cost_the_api_server_no_event() -> None:
    world = ProvisioningWorld()
    pods = world.pending(3)

    world.run(30)

    assert world.store.claims()
    assert [e for p in pods for e in world.cluster.events(ObjectRef.pod(p.key))] == []


def test_a_pod_that_fits_a_node_kube_scheduler_has_not_bound_it_to_yet_is_nominated_to_that_node() -> None:
    world = ProvisioningWorld()
    world.cluster.add_node(node("spare", cpu="8", memory="32Gi"))
    (waiting,) = world.pending(1)
    world.clock.advance(45)

    world.run(5)

    assert world.store.claims() == []
    assert reasons(world.cluster, ObjectRef.pod(waiting.key)) == [
        ("Normal", "Nominated", "Pod should schedule on: node/spare")
    ]


def test_a_spot_warning_is_a_warning_on_the_node_and_each_evicted_pod_names_the_drain() -> None:
    world = World()
    world.spot_node(pods=3)

    world.controller.handle(world.message(SPOT_INTERRUPTION, "i-spot-1"))

    [(kind, reason, note)] = reasons(world.cluster, ObjectRef.node("spot-1"))
    assert (kind, reason) == ("Warning", "SpotInterrupted")
    assert note.startswith("Spot interruption warning was triggered: ")
    evicted = [e for e in world.cluster.events() if e.event.reason == "Evicted"]
    assert len(evicted) == 3
    assert {e.event.note for e in evicted} == {"Evicted pod: SpotInterruption of instance i-spot-1"}
    assert all(e.event.regarding.uid for e in evicted)


def test_a_rebalance_recommendation_is_normal_and_a_stopping_instance_a_warning() -> None:
    world = World()
    world.spot_node("spot-1", pods=1)
    world.spot_node("spot-2", pods=1)

    world.controller.handle(world.message(REBALANCE, "i-spot-1"))
    world.controller.handle(world.message(STATE_CHANGE, "i-spot-2", state="stopping"))

    assert [r[:2] for r in reasons(world.cluster, ObjectRef.node("spot-1"))] == [
        ("Normal", "SpotRebalanceRecommendation")
    ]
    assert [r[:2] for r in reasons(world.cluster, ObjectRef.node("spot-2"))] == [("Warning", "InstanceStopping")]


def test_a_consolidated_node_says_it_is_being_disrupted_and_its_pods_by_which_command() -> None:
    world = ConsolidationWorld()
    world.node_with("a", 3)
    world.node_with("b", 3)

    report = world.run(120)

    assert report["completed"]
    gone = next(n for n in ("a", "b") if world.cluster.get_node(n) is None)
    node_reasons = [reason for _, reason, _ in reasons(world.cluster, ObjectRef.node(gone))]
    assert "DisruptionTerminating" in node_reasons
    evicted = [e for e in world.cluster.events() if e.event.reason == "Evicted"]
    assert evicted
    completed = report["completed"]
    assert isinstance(completed, list)
    (command,) = completed
    assert all(e.event.note.startswith(f"Evicted pod: disruption command {command} (") for e in evicted)


def test_a_drain_a_budget_holds_is_reported_blocked_with_the_budgets_answer() -> None:
    world = ConsolidationWorld()
    world.node_with("a", 3)
    world.node_with("b", 3)

    def refused(pod: Pod) -> Eviction:
        return Eviction(pod.key, "blocked", "Cannot evict pod as it would violate the pod's disruption budget.")

    world.cluster.evict = refused  # type: ignore[method-assign]
    world.run(400, drain_timeout=120.0)

    blocked = [e for e in world.cluster.events() if e.event.reason == "DisruptionBlocked"]
    assert blocked
    assert any("Disruption aborted: the drain evicted nothing for 120 s" in e.event.note for e in blocked)
    assert any("disruption budget" in e.event.note for e in blocked)


def test_a_node_a_do_not_disrupt_pod_holds_is_reported_blocked_naming_the_pod_and_an_idle_one_unconsolidatable() -> (
    None
):
    world = ConsolidationWorld()
    world.node_with("held", 0)
    guarded = world.cluster.add_pod(pod("batch", cpu="100m", annotations={"karpenter.sh/do-not-disrupt": "true"}))
    world.cluster.bind(guarded, "held")

    world.run(60)

    assert reasons(world.cluster, ObjectRef.node("held")) == [
        ("Normal", "DisruptionBlocked", "pod default/batch is annotated karpenter.sh/do-not-disrupt")
    ]


def test_pods_a_nodepools_limits_hold_back_are_told_so() -> None:
    world = ProvisioningWorld(pools=(node_pool(limits={"cpu": "1"}),))
    pods = world.pending(8)  # 4 cpu of pods against a 1-cpu limit

    world.run(5)

    told = {p.key: reasons(world.cluster, ObjectRef.pod(p.key)) for p in pods}
    held = [key for key, said in told.items() if said]
    assert held
    assert all(
        told[key] == [("Warning", "FailedScheduling", "Failed to schedule pod, nodepool default: limits reached")]
        for key in held
    )


def test_pods_whose_launch_failed_are_told_why() -> None:
    world = ProvisioningWorld()
    (waiting,) = world.pending(1)
    world.cloud.fail_next("launch", LaunchError("UnauthorizedOperation: not allowed to CreateFleet"))

    world.provisioner().provision(world.cluster.snapshot())

    [(kind, reason, note)] = reasons(world.cluster, ObjectRef.pod(waiting.key))
    assert (kind, reason) == ("Warning", "FailedScheduling")
    assert note.startswith("Failed to schedule pod, launching nodeclaim ")
    assert note.endswith("failed: UnauthorizedOperation: not allowed to CreateFleet")
