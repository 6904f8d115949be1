"""The following adapter over real HTTP: what it costs the API server, and that nothing is lost
when a watch drops, when its resourceVersion is too old, or when a container starts cold.

Faked: the API server, by the project's emulator (`nodewright.inmemory.apiserver`) over the in-memory
cluster; EC2 and the state store for the provisioner run (in memory). Real: the kubernetes
client, HTTP on 127.0.0.1, the adapter's watch threads, the provisioner loop and its clock.
Observed: the requests the server served (by verb and resource), the watchers' LIST counts, and
the adapter's view against the cluster's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from nodewright.adapters.clock import SystemClock
from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.adapters.kube.store import KINDS
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisionoptions import ProvisionerOptions, StaticConfiguration
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.inmemory.state import InMemoryStateStore
from nodewright.model.cluster import ClusterInfo
from tests.builders import node, node_pool, pod
from tests.controllers.test_provisioning import FixedCatalog
from tests.inmemory.test_apiserver import FAKE_CA, START, active, adapter

pytestmark = pytest.mark.integration


def steady() -> InMemoryCluster:
    # Times on the microsecond grid, as the API server writes them (the wall clock has finer ones).
    cluster = InMemoryCluster(VirtualClock(START))
    for n in range(3):
        cluster.add_node(node(f"node-{n}", cpu="8", memory="32Gi"))
    cluster.add_pods([pod(f"web-{i}", node_name=f"node-{i % 3}") for i in range(30)])
    return cluster


@pytest.fixture
def served() -> Iterator[tuple[InMemoryCluster, ApiServer]]:
    cluster = steady()
    with ApiServer(cluster, bookmark_every=0.2) as server:
        yield cluster, server


def caught_up(kube: KubeCluster, server: ApiServer) -> None:
    assert kube.seen({kind: server.latest(kind) for kind in KINDS}, timeout=10)


def served_calls(server: ApiServer) -> dict[str, int]:
    return {f"{u.verb} {u.resource}": u.requests for u in server.usage()}


def test_a_steady_cluster_costs_one_list_per_kind_then_only_watches_over_many_invocations(
    served: tuple[InMemoryCluster, ApiServer],
) -> None:
    _cluster, server = served
    kube = adapter(server, page_size=500)
    clock = SystemClock()
    provisioner = build_provisioner(
        cluster=kube,
        cloud=FakeCloudProvider(clock),
        store=InMemoryStateStore(),
        clock=clock,
        config=StaticConfiguration((node_pool(),)),
        catalog=FixedCatalog(),
        observer=RecordingObserver(),
        options=ProvisionerOptions(deadline_margin=0.2),
        wait=kube.wait,
    )
    try:
        for _ in range(4):  # four invocations of one warm container
            provisioner.run_for(1.5)
    finally:
        kube.close()
    calls = served_calls(server)
    assert {call: n for call, n in calls.items() if call.startswith("list")} == dict.fromkeys(
        ("list daemonsets", "list nodes", "list poddisruptionbudgets", "list pods"), 1
    )
    assert set(calls) <= {f"{verb} {kind}" for verb in ("list", "watch") for kind in KINDS}
    # A watch ends with the time the invocation asked for, so at most one per kind per invocation.
    assert all(n <= 4 for call, n in calls.items() if call.startswith("watch")), calls


def test_a_dropped_watch_resumes_from_its_version_without_a_list_and_loses_no_pod(
    served: tuple[InMemoryCluster, ApiServer],
) -> None:
    cluster, server = served
    kube = adapter(server, page_size=500)
    kube.follow(30)
    try:
        kube.snapshot()
        # The snapshot is served from the lists; each kind's watch then opens on its own thread,
        # later on a loaded machine: cut them only once all are open.
        deadline = time.monotonic() + 10
        while server.watching < len(KINDS) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.drop_connections() >= len(KINDS)
        with server.lock:
            cluster.add_pod(pod("after-the-drop"))
            cluster.remove_pod("default/web-0")
        caught_up(kube, server)
        assert kube.snapshot() == active(cluster.snapshot())
        assert [p.name for p in kube.pending()] == ["after-the-drop"]
        assert {kind: w.lists for kind, w in kube.watchers().items()} == dict.fromkeys(KINDS, 1)
    finally:
        kube.close()


def test_a_version_older_than_the_servers_history_relists_that_kind_once_and_loses_no_pod() -> None:
    cluster = steady()
    with ApiServer(cluster, history=5, bookmark_every=0.2) as server:
        kube = adapter(server, page_size=500)
        kube.follow(1.0)  # a short invocation: its watches end with it
        try:
            kube.snapshot()
            deadline = time.monotonic() + 10
            while server.watching and time.monotonic() < deadline:
                time.sleep(0.05)
            with server.lock:  # while no one watches, more pod changes than the server keeps
                for i in range(20):
                    cluster.add_pod(pod(f"new-{i}"))
                cluster.replace_pod(replace(cluster.get_pod("default/web-1"), phase="Succeeded"))  # type: ignore[arg-type]
            kube.follow(30)  # the next invocation of the warm container
            caught_up(kube, server)
            assert kube.snapshot() == active(cluster.snapshot())
            assert len(kube.pending()) == 20
            assert {kind: w.lists for kind, w in kube.watchers().items()} == {
                "nodes": 1,
                "pods": 2,
                "daemonsets": 1,
                "poddisruptionbudgets": 1,
            }
        finally:
            kube.close()


def test_a_cold_start_lists_each_kind_once_and_sees_what_the_warm_one_sees(
    served: tuple[InMemoryCluster, ApiServer],
) -> None:
    cluster, server = served
    warm = adapter(server, page_size=500)
    warm.follow(30)
    try:
        warm.snapshot()
        with server.lock:
            cluster.add_pod(pod("while-warm"))
        cold = adapter(server, page_size=500)
        cold.follow(30)
        try:
            caught_up(warm, server)
            caught_up(cold, server)
            assert cold.snapshot() == warm.snapshot() == active(cluster.snapshot())
            assert {kind: w.lists for kind, w in cold.watchers().items()} == dict.fromkeys(KINDS, 1)
        finally:
            cold.close()
    finally:
        warm.close()


def test_a_401_on_a_watch_fetches_a_fresh_token_and_the_watch_goes_on() -> None:
    cluster = steady()
    with ApiServer(cluster, tokens={"first"}, bookmark_every=0.2) as server:
        tokens = ["first"]
        kube = KubeCluster.connect(
            from_cluster_info(ClusterInfo("sim", server.url, FAKE_CA, "1.31"), lambda: tokens[-1]),
            on_unauthorized=lambda: tokens.append("second"),
        )
        kube.follow(30)
        try:
            kube.snapshot()
            server.tokens = {"second"}  # the EKS token expired
            server.drop_connections()  # the watches come back with the old one: 401
            with server.lock:
                cluster.add_pod(pod("after-rotation"))
            caught_up(kube, server)
            assert [p.name for p in kube.pending()] == ["after-rotation"]
            assert tokens[:2] == ["first", "second"]
            assert {kind: w.lists for kind, w in kube.watchers().items()} == dict.fromkeys(KINDS, 1)
        finally:
            kube.close()
