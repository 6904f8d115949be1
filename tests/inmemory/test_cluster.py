"""The in-memory cluster: the port contract, eviction against PDBs, daemonsets, logs and knobs.

Faked: the kube-apiserver (InMemoryCluster) and time (VirtualClock). Observed: what the port
methods return, the objects the cluster holds afterwards, and its `calls` and `changes` logs.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import (
    EVICTION_BLOCKED,
    NODE_CORDONED,
    NODE_DELETED,
    POD_BOUND,
    POD_CREATED,
    POD_DELETED,
    POD_EVICTED,
    Call,
    InMemoryCluster,
    SimulatedApiError,
)
from nodewright.model import labels as wk
from nodewright.model.pod import Pod
from nodewright.model.taints import Taint
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget
from nodewright.ports import Cluster
from tests.builders import node, pod

DISRUPTED = Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule")


def pdb(name: str = "web", *, app: str = "web", namespace: str = "default", **spec: Any) -> PodDisruptionBudget:
    return PodDisruptionBudget.parse(
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": app}}, **spec},
        }
    )


def running(
    name: str, node_name: str = "node-1", *, app: str = "web", labels: dict[str, str] | None = None, **fields: Any
) -> Pod:
    return pod(name, labels=labels or {"app": app}, node_name=node_name, **fields)


def daemonset(name: str = "logs", **template_spec: Any) -> DaemonSet:
    return DaemonSet.parse(
        {
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "containers": [{"name": name, "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}],
                        **template_spec,
                    },
                }
            },
        }
    )


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(start=1_000.0)


@pytest.fixture
def cluster(clock: VirtualClock) -> InMemoryCluster:
    cluster = InMemoryCluster(clock)
    cluster.add_node(node("node-1"))
    cluster.add_node(node("node-2"))
    return cluster


def drain(cluster: Cluster, pods: list[Pod]) -> list[str]:
    """What a controller sees: it only knows the Cluster port."""
    return [cluster.evict(p).outcome for p in pods]


# ---------------------------------------------------------------- reading


def test_snapshot_lists_nodes_and_pods_in_name_order_whatever_order_they_were_added(clock: VirtualClock) -> None:
    cluster = InMemoryCluster(clock)
    for name in ("node-c", "node-a", "node-b"):
        cluster.add_node(node(name))
    cluster.add_pods([pod("zeta"), pod("alpha", namespace="team-b"), pod("beta")])
    cluster.add_pdb(pdb("z"))
    cluster.add_pdb(pdb("a"))

    snapshot = cluster.snapshot()

    assert [n.name for n in snapshot.nodes] == ["node-a", "node-b", "node-c"]
    assert [p.key for p in snapshot.pods] == ["default/beta", "default/zeta", "team-b/alpha"]
    assert [b.name for b in snapshot.pdbs] == ["a", "z"]


def test_a_snapshot_sees_every_write_made_since_the_last_one(cluster: InMemoryCluster) -> None:
    first = cluster.snapshot()
    cluster.add_pod(pod("late"))
    cluster.cordon("node-1")

    second = cluster.snapshot()

    assert first.pods == ()
    assert [p.name for p in second.pods] == ["late"]
    assert second.nodes[0].unschedulable
    assert not first.nodes[0].unschedulable


def test_snapshot_pdbs_carry_the_disruptions_the_budget_allows_now(cluster: InMemoryCluster) -> None:
    cluster.add_pods([running("web-1"), running("web-2"), running("web-3", "node-2")])
    cluster.add_pdb(pdb(minAvailable=2))

    assert cluster.snapshot().pdbs[0].disruptions_allowed == 1
    cluster.set_pod_phase("default/web-3", "Failed")
    assert cluster.snapshot().pdbs[0].disruptions_allowed == 0


def test_pending_pods_in_the_snapshot_include_pods_on_a_node_being_deleted(cluster: InMemoryCluster) -> None:
    cluster.add_pods([pod("waiting"), running("on-doomed-node"), running("elsewhere", "node-2")])
    cluster.add_pod(pod("daemon", node_name="node-1", owner_kind="DaemonSet"))
    cluster.set_node_deleting("node-1")

    pending = {p.name for p in cluster.snapshot().pending()}

    assert pending == {"waiting", "on-doomed-node"}


def test_get_node_returns_the_node_or_none(cluster: InMemoryCluster) -> None:
    found = cluster.get_node("node-1")
    assert found is not None
    assert found.name == "node-1"
    assert cluster.get_node("nope") is None


def test_added_objects_are_stamped_with_a_uid_and_the_clocks_time(
    cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    clock.advance(5)
    stored = cluster.add_pod(pod("web"))
    other = cluster.add_pod(pod("api", uid="given", created_at=42.0))

    assert stored.uid
    assert stored.created_at == 1_005.0
    assert (other.uid, other.created_at) == ("given", 42.0)
    assert cluster.get_pod("default/web") == stored
    assert cluster.changes_of(POD_CREATED)[-1].at == 1_005.0


def test_adding_a_node_or_pod_twice_is_an_error_and_missing_ones_cannot_be_changed(cluster: InMemoryCluster) -> None:
    cluster.add_pod(pod("web"))
    with pytest.raises(ValueError, match="already exists"):
        cluster.add_pod(pod("web"))
    with pytest.raises(ValueError, match="already exists"):
        cluster.add_node(node("node-1"))
    with pytest.raises(KeyError, match="no node"):
        cluster.set_node_ready("nope")
    with pytest.raises(KeyError, match="no pod"):
        cluster.bind("default/nope", "node-1")
    with pytest.raises(KeyError, match="no node"):
        cluster.bind("default/web", "nope")


def test_resource_versions_grow_with_each_change_and_not_with_a_no_op(cluster: InMemoryCluster) -> None:
    before = cluster.resource_version("node", "node-1")
    cluster.cordon("node-1", DISRUPTED)
    after = cluster.resource_version("node", "node-1")
    cluster.cordon("node-1", DISRUPTED)

    assert before is not None
    assert after is not None
    assert after > before
    assert cluster.resource_version("node", "node-1") == after
    cluster.delete_node("node-1")
    assert cluster.resource_version("node", "node-1") is None


# ---------------------------------------------------------------- pods


def test_bind_puts_the_pod_on_the_node_and_starts_it(cluster: InMemoryCluster) -> None:
    cluster.add_pod(pod("web", nominated_node_name="node-2"))

    bound = cluster.bind("default/web", "node-1")

    assert (bound.node_name, bound.phase, bound.unschedulable, bound.nominated_node_name) == (
        "node-1",
        "Running",
        False,
        "",
    )
    assert [p.name for p in cluster.pods_on("node-1")] == ["web"]
    assert cluster.changes_of(POD_BOUND)[0].node == "node-1"


def test_rebinding_moves_the_pod_between_nodes(cluster: InMemoryCluster) -> None:
    cluster.add_pod(running("web", "node-1"))
    cluster.bind("default/web", "node-2")

    assert cluster.pods_on("node-1") == []
    assert [p.name for p in cluster.pods_on("node-2")] == ["web"]


def test_a_pod_kube_scheduler_gave_up_on_becomes_provisionable(cluster: InMemoryCluster) -> None:
    # Freshly created: kube-scheduler has not looked at it yet.
    cluster.add_pod(replace(pod("web"), unschedulable=False))
    assert cluster.snapshot().pending() == []

    cluster.mark_unschedulable("default/web")

    assert [p.name for p in cluster.snapshot().pending()] == ["web"]


def test_only_unbound_pods_can_be_marked_unschedulable(cluster: InMemoryCluster) -> None:
    cluster.add_pod(running("web"))
    with pytest.raises(ValueError, match="bound"):
        cluster.mark_unschedulable("default/web")


def test_removing_a_pod_deletes_it_and_says_whether_it_existed(cluster: InMemoryCluster) -> None:
    cluster.add_pod(running("web"))
    assert cluster.remove_pod("default/web")
    assert not cluster.remove_pod("default/web")
    assert cluster.pods_on("node-1") == []
    assert [c.name for c in cluster.changes_of(POD_DELETED)] == ["default/web"]


# ---------------------------------------------------------------- cordon and uncordon


def test_cordon_marks_the_node_and_adds_the_disrupted_taint_once(cluster: InMemoryCluster) -> None:
    cluster.cordon("node-1", DISRUPTED)
    cluster.cordon("node-1", DISRUPTED)

    cordoned = cluster.get_node("node-1")
    assert cordoned is not None
    assert cordoned.unschedulable
    assert cordoned.taints == (DISRUPTED,)
    assert len(cluster.changes_of(NODE_CORDONED)) == 1


def test_cordon_keeps_other_taints_and_replaces_one_with_the_same_key_and_effect(cluster: InMemoryCluster) -> None:
    gpu = Taint("nvidia.com/gpu", "NoSchedule", "true")
    cluster.taint("node-1", gpu)
    cluster.taint("node-1", Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule", "old"))

    cluster.cordon("node-1", DISRUPTED)

    cordoned = cluster.get_node("node-1")
    assert cordoned is not None
    assert cordoned.taints == (gpu, DISRUPTED)


def test_uncordon_removes_the_taint_and_is_idempotent(cluster: InMemoryCluster) -> None:
    gpu = Taint("nvidia.com/gpu", "NoSchedule", "true")
    cluster.taint("node-1", gpu)
    cluster.cordon("node-1", DISRUPTED)

    cluster.uncordon("node-1", wk.DISRUPTED_TAINT_KEY)
    version = cluster.resource_version("node", "node-1")
    cluster.uncordon("node-1", wk.DISRUPTED_TAINT_KEY)

    restored = cluster.get_node("node-1")
    assert restored is not None
    assert not restored.unschedulable
    assert restored.taints == (gpu,)
    assert cluster.resource_version("node", "node-1") == version


def test_cordon_without_a_taint_only_marks_the_node_unschedulable(cluster: InMemoryCluster) -> None:
    cluster.cordon("node-1")
    cordoned = cluster.get_node("node-1")
    assert cordoned is not None
    assert cordoned.unschedulable
    assert cordoned.taints == ()


def test_cordon_and_uncordon_of_a_missing_node_do_nothing(cluster: InMemoryCluster) -> None:
    cluster.cordon("gone", DISRUPTED)
    cluster.uncordon("gone", wk.DISRUPTED_TAINT_KEY)
    assert cluster.get_node("gone") is None


def test_untaint_removes_by_key_or_by_key_and_effect(cluster: InMemoryCluster) -> None:
    cluster.taint("node-1", Taint("dedicated", "NoSchedule", "ml"))
    cluster.taint("node-1", Taint("dedicated", "NoExecute", "ml"))

    cluster.untaint("node-1", "dedicated", "NoExecute")
    after_one = cluster.get_node("node-1")
    cluster.untaint("node-1", "dedicated")
    after_all = cluster.get_node("node-1")

    assert after_one is not None
    assert after_all is not None
    assert after_one.taints == (Taint("dedicated", "NoSchedule", "ml"),)
    assert after_all.taints == ()


def test_set_node_ready_flips_the_ready_condition(cluster: InMemoryCluster) -> None:
    cluster.add_node(node("node-3", ready=False))
    cluster.set_node_ready("node-3")
    ready = cluster.get_node("node-3")
    assert ready is not None
    assert ready.ready


# ---------------------------------------------------------------- eviction


def test_eviction_without_a_budget_deletes_the_pod_and_logs_its_grace_period(
    cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    web = cluster.add_pod(running("web", termination_grace_seconds=90))
    clock.advance(12)

    result = cluster.evict(web)

    assert (result.pod, result.outcome) == ("default/web", "evicted")
    assert cluster.get_pod(web) is None
    assert cluster.pods_on("node-1") == []
    [change] = cluster.changes_of(POD_EVICTED)
    assert (change.at, change.name, change.node, change.grace_seconds) == (1_012.0, "default/web", "node-1", 90)


def test_eviction_is_blocked_while_the_pdb_allows_none(cluster: InMemoryCluster) -> None:
    web1, _ = cluster.add_pods([running("web-1"), running("web-2", "node-2")])
    cluster.add_pdb(pdb(minAvailable=2))

    result = cluster.evict(web1)

    assert result.outcome == "blocked"
    assert "disruption budget" in result.message
    assert "429" in result.message
    assert cluster.get_pod(web1) is not None
    assert cluster.changes_of(EVICTION_BLOCKED)[0].name == "default/web-1"


def test_eviction_is_blocked_then_allowed_once_a_replacement_becomes_healthy(cluster: InMemoryCluster) -> None:
    web1, web2 = cluster.add_pods([running("web-1"), running("web-2")])
    cluster.add_pdb(pdb(minAvailable=1))

    assert cluster.evict(web1).outcome == "evicted"
    replacement = cluster.add_pod(pod("web-3", labels={"app": "web"}))
    assert cluster.evict(web2).outcome == "blocked"

    cluster.bind(replacement, "node-2", running=False)
    assert cluster.evict(web2).outcome == "blocked"
    cluster.set_pod_phase(replacement, "Running")
    assert cluster.evict(web2).outcome == "evicted"


def test_a_max_unavailable_budget_holds_when_owners_recreate_evicted_pods(clock: VirtualClock) -> None:
    cluster = InMemoryCluster(clock, recreate_owned_pods=True)
    cluster.add_node(node("node-1"))
    pods = cluster.add_pods([running(f"web-{i}") for i in range(3)])
    cluster.add_pdb(pdb(maxUnavailable=1))

    assert drain(cluster, pods) == ["evicted", "blocked", "blocked"]

    [replacement] = [p for p in cluster.pods() if p.node_name == ""]
    assert replacement.owner_kind == "ReplicaSet"
    assert replacement.phase == "Pending"
    assert replacement.labels == {"app": "web"}
    cluster.bind(replacement, "node-1")
    assert cluster.evict(pods[1]).outcome == "evicted"


def test_statefulset_pods_come_back_under_the_same_name(clock: VirtualClock) -> None:
    cluster = InMemoryCluster(clock, recreate_owned_pods=True)
    cluster.add_node(node("node-1"))
    db = cluster.add_pod(running("db-0", owner_kind="StatefulSet", owner_name="db"))

    assert cluster.evict(db).outcome == "evicted"

    again = cluster.get_pod("default/db-0")
    assert again is not None
    assert (again.node_name, again.phase) == ("", "Pending")
    assert again.uid != db.uid


def test_bare_pods_are_not_recreated(clock: VirtualClock) -> None:
    cluster = InMemoryCluster(clock, recreate_owned_pods=True)
    cluster.add_node(node("node-1"))
    bare = cluster.add_pod(running("bare", owner_kind=""))
    cluster.evict(bare)
    assert cluster.pods() == []


@pytest.mark.parametrize(
    ("spec", "healthy", "outcome"),
    [
        ({"minAvailable": 2}, 3, "evicted"),
        ({"minAvailable": 3}, 3, "blocked"),
        ({"minAvailable": "50%"}, 3, "evicted"),
        ({"minAvailable": "100%"}, 3, "blocked"),
        ({"maxUnavailable": 1}, 3, "evicted"),
        ({"maxUnavailable": 1}, 2, "blocked"),
        ({"maxUnavailable": 0}, 3, "blocked"),
        ({"maxUnavailable": "34%"}, 2, "evicted"),
    ],
    ids=[
        "min-2-of-3",
        "min-3-of-3",
        "min-50pct-of-3",
        "min-100pct",
        "max-1-all-healthy",
        "max-1-one-down",
        "max-0",
        "max-34pct-one-down",
    ],
)
def test_eviction_follows_the_budgets_arithmetic(
    cluster: InMemoryCluster, spec: dict[str, Any], healthy: int, outcome: str
) -> None:
    pods = cluster.add_pods([running(f"web-{i}") for i in range(3)])
    for sick in pods[healthy:]:
        cluster.set_pod_phase(sick, "Pending")
    cluster.add_pdb(pdb(**spec))

    assert cluster.evict(pods[0]).outcome == outcome


def test_a_pod_covered_by_two_budgets_is_blocked_with_the_api_servers_message(cluster: InMemoryCluster) -> None:
    web = cluster.add_pod(running("web", labels={"app": "web", "tier": "front"}))
    cluster.add_pdb(pdb("by-app", maxUnavailable=5))
    cluster.add_pdb(
        PodDisruptionBudget.parse(
            {
                "metadata": {"name": "by-tier"},
                "spec": {"selector": {"matchLabels": {"tier": "front"}}, "maxUnavailable": 5},
            }
        )
    )

    result = cluster.evict(web)

    assert result.outcome == "blocked"
    assert "more than one PodDisruptionBudget" in result.message
    assert "by-app" in result.message
    assert "by-tier" in result.message


def test_budgets_in_other_namespaces_or_for_other_apps_do_not_apply(cluster: InMemoryCluster) -> None:
    web = cluster.add_pod(running("web"))
    cluster.add_pdb(pdb("strict", namespace="other", maxUnavailable=0))
    cluster.add_pdb(pdb("api-only", app="api", maxUnavailable=0))

    assert cluster.evict(web).outcome == "evicted"


@pytest.mark.parametrize("phase", ["Pending", "Succeeded", "Failed"])
def test_pods_that_are_not_running_are_evicted_without_consulting_budgets(cluster: InMemoryCluster, phase: str) -> None:
    web = cluster.add_pod(running("web"))
    cluster.set_pod_phase(web, phase)
    cluster.add_pdb(pdb(maxUnavailable=0))

    assert cluster.evict(web).outcome == "evicted"


def test_evicting_a_missing_pod_is_gone(cluster: InMemoryCluster) -> None:
    result = cluster.evict(pod("never-created"))
    assert (result.pod, result.outcome) == ("default/never-created", "gone")


def test_evicting_a_pod_already_being_deleted_is_gone(cluster: InMemoryCluster) -> None:
    web = cluster.add_pod(running("web", deleting=True))
    assert cluster.evict(web).outcome == "gone"
    assert cluster.get_pod(web) is not None


def test_evicting_a_pod_that_was_replaced_under_the_same_name_is_gone(cluster: InMemoryCluster) -> None:
    old = cluster.add_pod(running("db-0"))
    cluster.remove_pod(old)
    cluster.add_pod(running("db-0"))

    result = cluster.evict(old)

    assert result.outcome == "gone"
    assert "409" in result.message
    assert cluster.get_pod("default/db-0") is not None


def test_a_pod_evicted_twice_is_gone_the_second_time(cluster: InMemoryCluster) -> None:
    web = cluster.add_pod(running("web"))
    assert drain(cluster, [web, web]) == ["evicted", "gone"]


# ---------------------------------------------------------------- node deletion


def test_deleting_a_missing_node_is_fine(cluster: InMemoryCluster) -> None:
    cluster.delete_node("never-existed")
    cluster.remove_node("never-existed")
    assert cluster.changes_of(NODE_DELETED) == []


def test_deleting_a_node_takes_its_pods_and_logs_the_workload_pods_it_lost(
    cluster: InMemoryCluster, clock: VirtualClock
) -> None:
    cluster.add_pods([running("web-1"), running("web-2"), running("safe", "node-2")])
    cluster.add_pod(pod("agent", node_name="node-1", owner_kind="DaemonSet"))
    clock.advance(60)

    cluster.delete_node("node-1")

    assert cluster.get_node("node-1") is None
    assert [p.name for p in cluster.pods()] == ["safe"]
    [change] = cluster.changes_of(NODE_DELETED)
    assert (change.at, change.name, change.pods) == (1_060.0, "node-1", ("default/web-1", "default/web-2"))
    assert cluster.lost_pods() == ["default/web-1", "default/web-2"]


def test_a_drained_node_loses_no_pods(cluster: InMemoryCluster) -> None:
    pods = cluster.add_pods([running("web-1"), running("web-2")])
    drain(cluster, pods)
    cluster.delete_node("node-1")
    assert cluster.lost_pods() == []


# ---------------------------------------------------------------- daemonsets


def test_reconciling_daemonsets_puts_one_running_pod_on_every_node(cluster: InMemoryCluster) -> None:
    cluster.add_daemonset(daemonset("logs"))

    created = cluster.reconcile_daemonsets()

    assert sorted(p.key for p in created) == ["kube-system/logs-node-1", "kube-system/logs-node-2"]
    for daemon in created:
        assert daemon.daemon
        assert daemon.owner_name == "logs"
        assert daemon.phase == "Running"
        assert daemon.labels == {"app": "logs"}
    assert [p.name for p in cluster.pods_on("node-1")] == ["logs-node-1"]


def test_reconciling_daemonsets_twice_creates_nothing_new(cluster: InMemoryCluster) -> None:
    cluster.add_daemonset(daemonset("logs"))
    cluster.reconcile_daemonsets()
    assert cluster.reconcile_daemonsets() == []
    assert len(cluster.pods()) == 2


def test_daemon_pods_follow_node_selectors_affinity_and_taints(cluster: InMemoryCluster) -> None:
    cluster.add_node(node("gpu-1", labels={"accelerator": "nvidia"}, taints=[Taint("nvidia.com/gpu", "NoSchedule")]))
    cluster.add_node(node("arm-1", labels={wk.ARCH: "arm64"}))
    cluster.replace_node(node("node-1", labels={wk.ARCH: "amd64"}))
    cluster.add_daemonset(
        daemonset("gpu-driver", nodeSelector={"accelerator": "nvidia"}, tolerations=[{"operator": "Exists"}])
    )
    cluster.add_daemonset(
        daemonset(
            "amd64-only",
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": wk.ARCH, "operator": "In", "values": ["amd64"]}]}
                        ]
                    }
                }
            },
        )
    )
    cluster.add_daemonset(daemonset("logs"))

    placed = {(p.owner_name, p.node_name) for p in cluster.reconcile_daemonsets()}

    assert placed == {
        ("gpu-driver", "gpu-1"),
        ("amd64-only", "node-1"),
        ("logs", "node-1"),
        ("logs", "node-2"),
        ("logs", "arm-1"),
    }


def test_cordoned_nodes_keep_their_daemons_but_deleting_nodes_get_none(cluster: InMemoryCluster) -> None:
    cluster.cordon("node-1")
    cluster.set_node_deleting("node-2")
    cluster.add_daemonset(daemonset("logs"))

    assert [p.node_name for p in cluster.reconcile_daemonsets()] == ["node-1"]


def test_daemons_that_tolerate_the_disrupted_taint_land_on_cordoned_nodes(cluster: InMemoryCluster) -> None:
    cluster.cordon("node-1", DISRUPTED)
    cluster.add_daemonset(daemonset("picky"))
    cluster.add_daemonset(daemonset("tolerant", tolerations=[{"key": wk.DISRUPTED_TAINT_KEY, "operator": "Exists"}]))

    placed = {(p.owner_name, p.node_name) for p in cluster.reconcile_daemonsets()}

    assert ("picky", "node-1") not in placed
    assert ("tolerant", "node-1") in placed


def test_a_daemon_pod_leaves_a_node_that_no_longer_matches(cluster: InMemoryCluster) -> None:
    cluster.replace_node(node("node-1", labels={"logging": "on"}))
    cluster.add_daemonset(daemonset("logs", nodeSelector={"logging": "on"}))
    cluster.reconcile_daemonsets()
    cluster.replace_node(node("node-1", labels={"logging": "off"}))

    cluster.reconcile_daemonsets()

    assert cluster.pods_on("node-1") == []


def test_removing_a_daemonset_deletes_its_pods_but_not_hand_made_daemon_pods(cluster: InMemoryCluster) -> None:
    cluster.add_daemonset(daemonset("logs"))
    cluster.reconcile_daemonsets()
    cluster.add_pod(pod("kube-proxy-x", node_name="node-1", owner_kind="DaemonSet", owner_name="kube-proxy"))

    cluster.remove_daemonset("kube-system", "logs")
    cluster.reconcile_daemonsets()

    assert [p.name for p in cluster.pods()] == ["kube-proxy-x"]


def test_daemon_pods_on_a_node_are_not_counted_as_lost(cluster: InMemoryCluster) -> None:
    cluster.add_daemonset(daemonset("logs"))
    cluster.reconcile_daemonsets()
    cluster.delete_node("node-1")
    assert cluster.lost_pods() == []


# ---------------------------------------------------------------- calls and error knobs


def test_every_port_call_is_recorded_and_setup_calls_are_not(cluster: InMemoryCluster) -> None:
    web = cluster.add_pod(running("web"))
    cluster.snapshot()
    cluster.get_node("node-1")
    cluster.cordon("node-1", DISRUPTED)
    cluster.evict(web)
    cluster.uncordon("node-1", wk.DISRUPTED_TAINT_KEY)
    cluster.delete_node("node-2")

    assert cluster.calls == [
        Call("snapshot"),
        Call("get_node", "node-1"),
        Call("cordon", "node-1"),
        Call("evict", "default/web"),
        Call("uncordon", "node-1"),
        Call("delete_node", "node-2"),
    ]
    assert cluster.calls_to("evict") == [Call("evict", "default/web")]


def test_an_injected_failure_raises_the_given_number_of_times_without_effect(cluster: InMemoryCluster) -> None:
    web = cluster.add_pod(running("web"))
    cluster.fail_next("evict", times=2)

    for _ in range(2):
        with pytest.raises(SimulatedApiError, match="injected failure in evict") as failure:
            cluster.evict(web)
        assert failure.value.status == 500
    assert cluster.get_pod(web) is not None

    assert cluster.evict(web).outcome == "evicted"
    assert len(cluster.calls_to("evict")) == 3


def test_an_injected_failure_can_be_any_error(cluster: InMemoryCluster) -> None:
    cluster.fail_next("delete_node", error=TimeoutError("apiserver timed out"))

    with pytest.raises(TimeoutError, match="timed out"):
        cluster.delete_node("node-1")

    assert cluster.get_node("node-1") is not None
    cluster.delete_node("node-1")
    assert cluster.get_node("node-1") is None


def test_an_injected_failure_hits_only_its_own_method(cluster: InMemoryCluster) -> None:
    cluster.fail_next("cordon")
    cluster.uncordon("node-1")
    cluster.snapshot()
    with pytest.raises(SimulatedApiError):
        cluster.cordon("node-1")


@pytest.mark.parametrize(
    ("method", "times", "problem"),
    [("add_pod", 1, "port methods"), ("evict", 0, "at least 1")],
    ids=["not-a-port-method", "zero-times"],
)
def test_failure_knobs_reject_nonsense(cluster: InMemoryCluster, method: str, times: int, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        cluster.fail_next(method, times=times)


def test_reset_forgets_calls_and_pending_failures_but_keeps_the_objects(cluster: InMemoryCluster) -> None:
    cluster.snapshot()
    cluster.fail_next("get_node")

    cluster.reset()

    assert cluster.calls == []
    assert cluster.get_node("node-1") is not None
    assert len(cluster.snapshot().nodes) == 2


# ---------------------------------------------------------------- scale


def test_ten_thousand_pods_are_cheap_to_add_bind_snapshot_and_drain(clock: VirtualClock) -> None:
    cluster = InMemoryCluster(clock)
    for i in range(100):
        cluster.add_node(node(f"node-{i:03d}"))
    template = running("template")
    pods = cluster.add_pods(
        replace(template, name=f"web-{i:05d}", node_name=f"node-{i % 100:03d}", labels={"app": f"app-{i % 20}"})
        for i in range(10_000)
    )
    for i in range(20):
        cluster.add_pdb(pdb(f"app-{i}", app=f"app-{i}", maxUnavailable="10%"))
    started = time.perf_counter()

    snapshot = cluster.snapshot()
    outcomes = drain(cluster, cluster.pods_on("node-000"))
    cluster.delete_node("node-000")

    assert len(snapshot.pods) == 10_000
    assert set(outcomes) == {"evicted"}
    assert len(pods) == 10_000
    # Generous: this takes a few milliseconds; a scan per eviction would take seconds.
    assert time.perf_counter() - started < 1.0
