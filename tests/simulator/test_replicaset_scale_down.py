"""A simulated Deployment scales down as the ReplicaSet controller does.

Real: `Deployments.scale` over `SimulatedCluster` (the in-memory API server), and the API
emulator's pod PATCH for the deletion-cost annotation `kubectl annotate` and the adapter send.
Observed: which pods are gone.
"""

from __future__ import annotations

from dataclasses import replace

from nodewright.inmemory.clock import VirtualClock
from nodewright.simulator.scenario.workload import Workload
from nodewright.simulator.standins.kube import Deployments, SimulatedCluster
from tests.builders import node, pod

NOW = 1_800_000_000.0
COST = "controller.kubernetes.io/pod-deletion-cost"


def _cluster(layout: dict[str, int], *, created: float = NOW - 3600) -> tuple[SimulatedCluster, Workload]:
    """A web Deployment with `layout[node]` pods bound on each node, all created at `created`."""
    cluster = SimulatedCluster(VirtualClock(NOW))
    template = replace(
        pod("web", labels={"app": "web"}, owner_kind="ReplicaSet"), owner_name="web-5d9f", created_at=created
    )
    count = 0
    for name, pods in layout.items():
        cluster.memory.add_node(node(name, cpu="8"))
        for _ in range(pods):
            count += 1
            stored = cluster.memory.add_pod(replace(template, name=f"web-{count}"))
            cluster.bind(stored, name)
    return cluster, Workload("Deployment", "default", "web", template, count)


def _left(cluster: SimulatedCluster, workload: Workload, deployments: Deployments) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in deployments.owned(workload):
        out[p.node_name] = out.get(p.node_name, 0) + 1
    return out


def test_a_scale_down_takes_from_the_nodes_that_hold_the_most_replicas() -> None:
    """Kube ranks "doubled up" pods first (by the count on their node when the sync starts): 3 on
    a, 2 on b, 1 on c; one big step 6 -> 3 takes a's three, while the same in steps of one (as a
    curve or an HPA scales) leaves one on each node, and no node empties.
    """
    cluster, workload = _cluster({"a": 3, "b": 2, "c": 1})
    deployments = Deployments(cluster, [workload])

    assert deployments.scale(workload, 3) == -3
    assert _left(cluster, workload, deployments) == {"b": 2, "c": 1}

    cluster, workload = _cluster({"a": 3, "b": 2, "c": 1})
    deployments = Deployments(cluster, [workload])
    for replicas in (5, 4, 3):
        deployments.scale(workload, replicas)
    assert _left(cluster, workload, deployments) == {"a": 1, "b": 1, "c": 1}


def test_the_pod_deletion_cost_comes_before_the_nodes_replica_counts() -> None:
    """The pods of node c cost -1, the others nothing: a scale 6 -> 5 deletes c's pod, so node c
    empties, though a holds the most replicas.
    """
    cluster, workload = _cluster({"a": 3, "b": 2, "c": 1})
    for p in cluster.memory.pods_on("c"):
        assert cluster.annotate_pod(p, {COST: "-1"})
    deployments = Deployments(cluster, [workload])

    deployments.scale(workload, 5)

    assert _left(cluster, workload, deployments) == {"a": 3, "b": 2}


def test_pending_pods_go_first_and_then_the_younger_by_their_age_bucket() -> None:
    cluster, workload = _cluster({"a": 1, "b": 1})
    young = cluster.memory.add_pod(replace(workload.template, name="web-young", created_at=NOW - 10))
    cluster.bind(young, "a")
    waiting = cluster.memory.add_pod(replace(workload.template, name="web-waiting", created_at=NOW - 7200))
    # a holds 2 (doubled up) and goes first; among a's pods the one 10 s old is younger.
    deployments = Deployments(cluster, [replace(workload, replicas=4)])

    deployments.scale(workload, 2)

    names = {p.name for p in deployments.owned(workload)}
    assert waiting.key.split("/")[1] not in names
    assert names == {"web-1", "web-2"}


def test_a_malformed_deletion_cost_counts_as_none() -> None:
    cluster, workload = _cluster({"a": 1, "b": 2})
    (only,) = cluster.memory.pods_on("a")
    cluster.annotate_pod(only, {COST: "cheap"})
    deployments = Deployments(cluster, [workload])

    deployments.scale(workload, 2)

    assert _left(cluster, workload, deployments) == {"a": 1, "b": 1}
