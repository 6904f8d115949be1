"""The world's change feed (nodewright/simulator/world/feed.py): the cluster's change log read
once into typed changes, in order, with a pod's replacement attributed to the node its
predecessor left at that instant; subscribers called in the order they subscribed.
"""

from __future__ import annotations

from nodewright.inmemory.clock import VirtualClock
from nodewright.model.node import Node
from nodewright.model.pod import Pod
from nodewright.model.resources import Resources
from nodewright.simulator.standins.kube import SimulatedCluster
from nodewright.simulator.world.feed import (
    Change,
    ChangeFeed,
    ClusterChanged,
    ClusterChanges,
    NodeGone,
    PodBound,
    PodCreated,
    PodGone,
)


def _node(name: str) -> Node:
    room = Resources({"cpu": 4000, "memory": 8 << 30, "pods": 110})
    return Node(name=name, labels={}, capacity=room, allocatable=room, provider_id=f"aws:///a/{name}", ready=True)


def _pod(name: str) -> Pod:
    return Pod(
        name=name, namespace="default", requests=Resources({"cpu": 100}), owner_kind="ReplicaSet", owner_name="web"
    )


def test_the_cluster_log_becomes_typed_changes_once_with_replacements_attributed() -> None:
    clock = VirtualClock(1_800_000_000.0)
    cluster = SimulatedCluster(clock)
    feed = ChangeFeed()
    seen: list[Change] = []
    for kind in (PodCreated, PodBound, PodGone, NodeGone, ClusterChanged):
        feed.subscribe(kind, seen.append)
    changes = ClusterChanges(cluster, feed)
    cluster.memory.add_node(_node("n1"))
    cluster.memory.add_pod(_pod("p1"))
    cluster.bind("default/p1", "n1")
    changes.read()
    assert [type(c) for c in seen] == [ClusterChanged, PodCreated, PodBound]
    assert seen[1] == PodCreated(clock.now(), "default/p1", None)

    seen.clear()
    changes.read()  # nothing new: nothing published again
    assert seen == []

    clock.advance(10)
    pod = cluster.memory.get_pod("default/p1")
    assert pod is not None
    cluster.remove_pod(pod)  # its owner recreates it, pending, at the same instant
    changes.read()
    gone = [c for c in seen if isinstance(c, PodGone)]
    created = [c for c in seen if isinstance(c, PodCreated)]
    assert gone == [PodGone(clock.now(), "default/p1", "n1")]
    assert [c.replaces_from for c in created] == ["n1"]


def test_subscribers_run_in_the_order_they_subscribed_and_only_for_their_kind() -> None:
    feed = ChangeFeed()
    calls: list[str] = []
    feed.subscribe(NodeGone, lambda c: calls.append(f"first {c.node}"))
    feed.subscribe(PodBound, lambda c: calls.append(f"bound {c.pod}"))
    feed.subscribe(NodeGone, lambda c: calls.append(f"second {c.node}"))
    feed.publish(NodeGone(1.0, "n1", ("default/a",)))
    assert calls == ["first n1", "second n1"]
