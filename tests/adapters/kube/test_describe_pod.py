"""`kubectl describe pod` for a pod Nodewright launched a node for: its Events, from pending through
the launch to the binding, read over HTTP the way kubectl reads them.

Faked: kube-apiserver (the project's emulator over the in-memory cluster, which also plays
kube-scheduler's part: its FailedScheduling and Scheduled Events), EC2 and the state store (in
memory). Real: the provisioner loop, the Kubernetes adapter writing events.k8s.io/v1 Events
through the official client over HTTP, and the core/v1 list with kubectl's field selector
(`involvedObject.name/namespace/kind/uid`). Observed: the describe-shaped Events table.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from nodewright.adapters.clock import SystemClock
from nodewright.controllers.assembly import build_provisioner
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisionoptions import ProvisionerOptions, StaticConfiguration
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.cloud import FakeCloudProvider
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.inmemory.state import InMemoryStateStore
from nodewright.model import labels as wk
from nodewright.model.node import Node
from nodewright.model.pod import Pod, parse_timestamp
from nodewright.model.resources import Resources
from tests.builders import node_pool, pod
from tests.controllers.test_provisioning import FixedCatalog
from tests.inmemory.test_apiserver import adapter

pytestmark = pytest.mark.integration


@pytest.fixture
def served() -> Iterator[tuple[InMemoryCluster, ApiServer]]:
    cluster = InMemoryCluster(SystemClock())
    with ApiServer(cluster, bookmark_every=0.2) as server:
        yield cluster, server


def describe_events(server: ApiServer, target: Pod) -> list[dict[str, str]]:
    """The Events section of `kubectl describe pod`: core/v1 Events selected as kubectl selects
    them, oldest first, as (Type, Reason, From, Message) rows with the series count.
    """
    selector = ",".join(
        f"involvedObject.{field}={value}"
        for field, value in (
            ("name", target.name),
            ("namespace", target.namespace),
            ("kind", "Pod"),
            ("uid", target.uid),
        )
    )
    query = urllib.parse.urlencode({"fieldSelector": selector})
    with urllib.request.urlopen(f"{server.url}/api/v1/namespaces/{target.namespace}/events?{query}") as response:
        items: list[dict[str, Any]] = json.load(response)["items"]
    items.sort(key=lambda e: parse_timestamp(e.get("eventTime") or e.get("firstTimestamp")))
    return [
        {
            "Type": e["type"],
            "Reason": e["reason"],
            "From": (e.get("source") or {}).get("component") or e["reportingComponent"],
            "Message": e["message"],
            "Count": str((e.get("series") or {}).get("count") or 1),
        }
        for e in items
    ]


def test_describe_pod_shows_pending_nomination_to_the_launched_claim_and_binding(
    served: tuple[InMemoryCluster, ApiServer],
) -> None:
    cluster, server = served
    clock = SystemClock()
    with server.lock:
        # Pending for a minute (the provisioner's last invocation had ended): kube-scheduler
        # found no node for it then; Nodewright reports a nomination of a pod that waited 30 s.
        created = round(clock.now() - 60)
        (waiting,) = cluster.add_pods([replace(pod("web-1", cpu="500m", memory="1Gi"), created_at=created)])
        cluster.mark_unschedulable(waiting)
    kube = adapter(server, page_size=500, reporting_instance="nodewright-provisioner")
    store = InMemoryStateStore()
    provisioner = build_provisioner(
        cluster=kube,
        cloud=FakeCloudProvider(clock),
        store=store,
        clock=clock,
        config=StaticConfiguration((node_pool(),)),
        catalog=FixedCatalog(),
        observer=RecordingObserver(),
        options=ProvisionerOptions(deadline_margin=0.2),
        wait=kube.wait,
    )
    try:
        provisioner.run_for(2.5)
        (claim,) = store.claims()
        assert claim.pods == (waiting.key,)
        # The instance boots and its kubelet registers; kube-scheduler binds the pod there.
        name = f"ip-{claim.instance_id}"
        with server.lock:
            cluster.add_node(
                Node(
                    name=name,
                    labels={wk.HOSTNAME: name, wk.NW_NODEPOOL: claim.nodepool, wk.NW_NODECLAIM: claim.name},
                    capacity=Resources.of(cpu="2", memory="8Gi", pods=29),
                    allocatable=Resources.of(cpu="2", memory="8Gi", pods=29),
                    provider_id=f"aws:///{claim.zone}/{claim.instance_id}",
                    ready=True,
                )
            )
            cluster.bind(waiting, name)
        provisioner.run_for(1.5)  # the claim is registered; nothing more to say about the pod
    finally:
        kube.close()

    events = describe_events(server, waiting)

    assert [(e["Type"], e["Reason"], e["From"]) for e in events] == [
        ("Warning", "FailedScheduling", "default-scheduler"),
        ("Normal", "Nominated", "nodewright"),
        ("Normal", "Scheduled", "default-scheduler"),
    ]
    assert events[1]["Message"] == f"Pod should schedule on: nodeclaim/{claim.name}"
    assert events[2]["Message"] == f"Successfully assigned default/web-1 to {name}"
    served_events = {f"{u.verb} {u.resource}": u.requests for u in server.usage() if u.resource == "events"}
    assert served_events == {"create events": 1, "list events": 1}
