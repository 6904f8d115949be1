"""Kubernetes Events written by the real adapter (`KubeCluster.record`) over real local HTTP.

Faked: kube-apiserver, by the project's API emulator (`nodewright.inmemory.apiserver.ApiServer`)
serving an `InMemoryCluster`. Real: the adapter, the official client, HTTP. Observed: the Events
the API server then holds, read back through both API versions as `kubectl` reads them
(events.k8s.io/v1 and core/v1 with `involvedObject` field selectors), and the adapter's own
request accounting.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model.cluster import ClusterInfo
from nodewright.model.event import NORMAL, WARNING, Event, EventCorrelator, ObjectRef
from tests.builders import node, pod

pytestmark = pytest.mark.integration

FAKE_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
START = 1_767_571_200.0  # 2026-01-05T00:00:00Z
POD = ObjectRef.pod("default/web-1")


@pytest.fixture
def cluster() -> InMemoryCluster:
    served = InMemoryCluster(VirtualClock(START))
    served.add_pod(pod("web-1"))
    return served


@pytest.fixture
def server(cluster: InMemoryCluster) -> Iterator[ApiServer]:
    with ApiServer(cluster) as running:
        yield running


def adapter(server: ApiServer, **kwargs: Any) -> KubeCluster:
    info = ClusterInfo("sim", server.url, FAKE_CA, "1.31")
    return KubeCluster.connect(
        from_cluster_info(info, lambda: "token"), reporting_instance="nodewright-provisioner", **kwargs
    )


def listed(server: ApiServer, path: str, **selector: str) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({"fieldSelector": ",".join(f"{k}={v}" for k, v in selector.items())})
    with urllib.request.urlopen(f"{server.url}{path}?{query}") as response:
        items: list[dict[str, Any]] = json.load(response)["items"]
    return items


def nominated(note: str = "Pod should schedule on: nodeclaim/default-abc") -> Event:
    return Event(POD, NORMAL, "Nominated", note, "Nominate")


def test_first_occurrence_creates_an_event_kubectl_finds_by_its_involved_object(server: ApiServer) -> None:
    kube = adapter(server)

    kube.record(nominated(), START)

    [core] = listed(
        server, "/api/v1/namespaces/default/events", **{"involvedObject.name": "web-1", "involvedObject.kind": "Pod"}
    )
    assert core["reason"] == "Nominated"
    assert core["message"] == "Pod should schedule on: nodeclaim/default-abc"
    assert core["reportingComponent"] == "nodewright"
    assert core["reportingInstance"] == "nodewright-provisioner"
    assert core["eventTime"] == "2026-01-05T00:00:00.000000Z"
    [modern] = listed(server, "/apis/events.k8s.io/v1/namespaces/default/events", **{"regarding.name": "web-1"})
    assert modern["regarding"] == {"kind": "Pod", "name": "web-1", "namespace": "default", "apiVersion": "v1"}
    assert modern["action"] == "Nominate"
    assert "series" not in modern
    assert [(u.verb, u.resource, u.requests) for u in kube.usage()] == [("create", "events", 1)]


def test_repeats_fold_into_one_series_patched_at_most_once_per_window(
    server: ApiServer, cluster: InMemoryCluster
) -> None:
    kube = adapter(server)
    warning = Event(POD, WARNING, "FailedScheduling", "no NodePool can take it", "Provision")

    for second in range(181):  # a provisioner pass every second for three minutes
        kube.record(warning, START + second)

    [stored] = cluster.events(POD)
    assert stored.count == 1  # the repeats are counted in the adapter until the series is patched
    writes = {(u.verb, u.resource): u.requests for u in kube.usage()}
    assert writes == {("create", "events"): 1}  # the next patch is due 5 minutes after the create
    kube.record(warning, START + 300)
    [stored] = cluster.events(POD)
    assert (stored.count, stored.last) == (182, START + 300)
    [modern] = listed(server, "/apis/events.k8s.io/v1/events", reason="FailedScheduling")
    assert modern["series"] == {"count": 182, "lastObservedTime": "2026-01-05T00:05:00.000000Z"}
    assert {(u.verb, u.resource): u.requests for u in kube.usage()} == {("patch", "events"): 1}


def test_a_different_note_or_a_repeat_after_the_window_is_a_new_event(
    server: ApiServer, cluster: InMemoryCluster
) -> None:
    kube = adapter(server)

    kube.record(nominated("Pod should schedule on: nodeclaim/a"), START)
    kube.record(nominated("Pod should schedule on: nodeclaim/a, node/ip-1"), START + 1)
    kube.record(nominated("Pod should schedule on: nodeclaim/a"), START + 1000)  # past the 2-minute window

    assert [(e.event.note, e.count) for e in cluster.events(POD)] == [
        ("Pod should schedule on: nodeclaim/a", 1),
        ("Pod should schedule on: nodeclaim/a, node/ip-1", 1),
        ("Pod should schedule on: nodeclaim/a", 1),
    ]


def test_writes_are_limited_per_object_and_per_invocation(server: ApiServer, cluster: InMemoryCluster) -> None:
    correlator = EventCorrelator(object_burst=2, invocation_budget=3)
    kube = adapter(server)
    kube.events.correlator = correlator
    kube.follow(0)  # an invocation begins

    for i in range(4):  # four distinct events about one pod: the object's burst is 2
        kube.record(nominated(f"Pod should schedule on: nodeclaim/c{i}"), START)
    for name in ("a", "b"):  # the invocation has 1 write left
        kube.record(
            Event(ObjectRef.node(name), NORMAL, "DisruptionTerminating", "Disrupting Node: Empty", "Delete"), START
        )

    assert len(cluster.events(POD)) == 2
    assert [e.event.regarding.name for e in cluster.events() if e.event.regarding.kind == "Node"] == ["a"]
    assert correlator.dropped == 3
    kube.follow(0)  # the next pass has a full budget again
    kube.record(Event(ObjectRef.node("b"), NORMAL, "DisruptionTerminating", "Disrupting Node: Empty", "Delete"), START)
    assert len(cluster.events(ObjectRef.node("b"))) == 1
    kube.close()


def test_a_series_whose_event_is_gone_starts_again_and_failures_never_raise(
    server: ApiServer, cluster: InMemoryCluster
) -> None:
    kube = adapter(server)
    kube.record(nominated(), START)
    [first] = cluster.events(POD)
    # The API server dropped the Event (its TTL): the patch meets 404, the next occurrence creates one.
    assert cluster.expire_events(START + 1) == 1

    kube.record(nominated(), START + 100)  # folded
    kube.record(nominated(), START + 200)  # the series' patch is due: 404
    kube.record(nominated(), START + 201)

    [again] = cluster.events(POD)
    assert again.name != first.name
    assert again.first == START + 201
    assert kube.events.failures == 0
    server.fault = lambda verb, resource: (503, None) if resource == "events" else None
    kube.record(Event(POD, WARNING, "FailedScheduling", "no NodePool can take it", "Provision"), START + 202)
    assert kube.events.failures == 1


def test_the_emulator_refuses_an_event_without_its_required_fields(server: ApiServer) -> None:
    body = json.dumps({"metadata": {"name": "x.1"}, "reason": "Nominated", "type": "Normal"}).encode()
    request = urllib.request.Request(
        f"{server.url}/apis/events.k8s.io/v1/namespaces/default/events",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)
    assert refused.value.code == 422
    assert "eventTime is required" in json.load(refused.value)["message"]


def test_a_nodes_event_carries_the_uid_kubectl_describe_node_selects_by(
    server: ApiServer, cluster: InMemoryCluster
) -> None:
    with server.lock:
        cluster.add_node(replace(node("ip-10-0-0-1"), uid="5f0c-node"))
    kube = adapter(server)
    kube.follow(5)
    try:
        kube.snapshot()  # synced: the watched node has its uid
        kube.record(Event(ObjectRef.node("ip-10-0-0-1"), WARNING, "SpotInterrupted", "warned", "Interrupt"), START)
    finally:
        kube.close()

    selector = {"involvedObject.kind": "Node", "involvedObject.name": "ip-10-0-0-1", "involvedObject.uid": "5f0c-node"}
    [core] = listed(server, "/api/v1/events", **selector)
    assert core["reason"] == "SpotInterrupted"
    assert core["metadata"]["namespace"] == "default"  # a cluster-scoped object's Events live there
