"""The watch-fed store: events in, the same reads as a LIST snapshot out.

Faked: nothing (the store is plain data). Observed: `snapshot`, `pending`, `version`, `pods_on`.
The reference for every answer is `ClusterSnapshot.pending` over the same objects.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.adapters.kube.store import NODES, PODS, ClusterStore
from nodewright.model import labels as wk
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.taints import Taint
from tests.builders import node, pod


def test_a_replaced_list_and_its_events_read_as_the_snapshot_of_the_same_objects() -> None:
    store = ClusterStore()
    web = pod("web-1", node_name="node-a")
    waiting = pod("web-2")
    store.replace(NODES, {"node-a": node("node-a")})
    store.replace(PODS, {web.key: web, waiting.key: waiting})
    store.put(PODS, "default/web-3", pod("web-3"))
    store.delete(PODS, waiting.key)

    snapshot = store.snapshot()
    assert [p.name for p in snapshot.pods] == ["web-1", "web-3"]
    assert [p.name for p in store.pending()] == ["web-3"]
    assert store.pods_on("node-a") == [web]


def test_version_moves_for_pending_pods_and_not_for_running_ones() -> None:
    store = ClusterStore()
    running = pod("web-1", node_name="node-a")
    store.replace(NODES, {"node-a": node("node-a")})
    store.replace(PODS, {running.key: running})
    before = store.version()

    store.put(PODS, running.key, replace(running, phase="Succeeded"))  # a status change of a bound pod
    assert store.version() == before

    store.put(PODS, "default/new", pod("new"))
    assert store.version() != before


def test_a_draining_node_makes_its_pods_pending_and_an_undrained_one_takes_them_back() -> None:
    store = ClusterStore()
    bound = pod("web-1", node_name="node-a")
    plain = node("node-a")
    store.replace(NODES, {"node-a": plain})
    store.replace(PODS, {bound.key: bound})
    assert store.pending() == []

    version = store.version()
    store.put(NODES, "node-a", replace(plain, deleting=True))
    assert store.pending() == [bound]
    assert store.version() != version

    store.put(NODES, "node-a", plain)
    assert store.pending() == []


def test_a_relist_deletes_what_the_list_no_longer_has() -> None:
    store = ClusterStore()
    store.replace(PODS, {"default/a": pod("a"), "default/b": pod("b")})
    store.replace(PODS, {"default/b": pod("b")})
    assert [p.name for p in store.pending()] == ["b"]


def test_synced_only_once_every_kind_was_listed() -> None:
    store = ClusterStore()
    store.replace(NODES, {})
    assert not store.synced()
    for kind in ("pods", "daemonsets", "poddisruptionbudgets"):
        store.replace(kind, {})
    assert store.synced()


_NODES = ("node-a", "node-b")
_events = st.lists(
    st.one_of(
        st.tuples(
            st.just("pod"),
            st.sampled_from(["a", "b", "c", "d"]),
            st.sampled_from(["", *_NODES]),
            st.sampled_from(["Pending", "Running", "Succeeded"]),
            st.booleans(),
        ),
        st.tuples(st.just("delete-pod"), st.sampled_from(["a", "b", "c", "d"])),
        st.tuples(st.just("node"), st.sampled_from(_NODES), st.sampled_from(["", "deleting", "tainted"])),
        st.tuples(st.just("delete-node"), st.sampled_from(_NODES)),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(_events)
def test_pending_always_equals_the_snapshot_rule_whatever_the_events(events: list[tuple[object, ...]]) -> None:
    store = ClusterStore()
    store.replace(NODES, {})
    store.replace(PODS, {})
    for event in events:
        if event[0] == "pod":
            _, name, on, phase, unschedulable = event
            store.put(
                PODS,
                f"default/{name}",
                replace(pod(str(name)), node_name=str(on), phase=str(phase), unschedulable=bool(unschedulable)),
            )
        elif event[0] == "delete-pod":
            store.delete(PODS, f"default/{event[1]}")
        elif event[0] == "node":
            _, name, state = event
            taints = (Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule"),) if state == "tainted" else ()
            store.put(NODES, str(name), replace(node(str(name)), deleting=state == "deleting", taints=taints))
        else:
            store.delete(NODES, str(event[1]))
        snapshot = store.snapshot()
        expected = ClusterSnapshot(nodes=snapshot.nodes, pods=snapshot.pods).pending()
        assert store.pending() == expected
