"""Node conditions, the input of node repair: set in the in-memory cluster or over HTTP through the
API emulator as the kubelet and the EKS node monitoring agent write them, and read back by the
real Kubernetes adapter with their transition times.

Faked: kube-apiserver, by `ApiServer` over an `InMemoryCluster` on a virtual clock. Real: HTTP
and `KubeCluster` (the Lambdas' adapter). Observed: the served manifests, the adapter's `Node`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nodewright.inmemory.apiserver import STRATEGIC_MERGE_PATCH, ApiServer
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import NODE_READY, InMemoryCluster
from nodewright.model.manifests import node_manifest
from nodewright.model.node import Node, NodeCondition
from tests.builders import node
from tests.inmemory.test_apiserver import adapter, call

pytestmark = pytest.mark.integration
START = 1_767_571_200.0  # 2026-01-05T00:00:00Z


@pytest.fixture
def cluster() -> InMemoryCluster:
    cluster = InMemoryCluster(VirtualClock(START))
    cluster.add_node(node("n1"))
    return cluster


@pytest.fixture
def server(cluster: InMemoryCluster) -> Iterator[ApiServer]:
    with ApiServer(cluster, bookmark_every=0.2) as running:
        yield running


def test_a_condition_keeps_its_transition_time_until_its_status_changes(cluster: InMemoryCluster) -> None:
    clock = cluster.clock
    cluster.set_node_condition("n1", "KernelReady", "False", "KernelBug")
    assert isinstance(clock, VirtualClock)
    clock.advance(300)
    cluster.set_node_condition("n1", "KernelReady", "False", "KernelBug")
    stored = cluster.get_node("n1")
    assert stored is not None
    assert stored.condition("KernelReady") == NodeCondition("KernelReady", "False", START, "KernelBug")
    cluster.set_node_ready("n1", False)
    clock.advance(60)
    cluster.set_node_condition("n1", "Ready", "Unknown", "NodeStatusUnknown")
    stored = cluster.get_node("n1")
    assert stored is not None
    assert stored.ready is False
    assert stored.condition("Ready") == NodeCondition("Ready", "Unknown", START + 360, "NodeStatusUnknown")
    cluster.set_node_ready("n1")
    assert [c.name for c in cluster.changes_of(NODE_READY)] == ["n1"]
    with pytest.raises(ValueError, match="status 'Maybe' is not True, False or Unknown"):
        cluster.set_node_condition("n1", "KernelReady", "Maybe")


def test_conditions_round_trip_through_the_manifest() -> None:
    sick = Node(
        "n2",
        ready=False,
        conditions=(
            NodeCondition("Ready", "Unknown", START, "NodeStatusUnknown"),
            NodeCondition("StorageReady", "False", START + 1),
        ),
    )
    manifest = node_manifest(sick)
    assert manifest["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-05T00:00:00Z"
    assert Node.parse(manifest) == sick
    plain = Node("n3", ready=True)
    assert Node.parse(node_manifest(plain)) == plain  # no transition time known: none invented


def test_the_monitoring_agents_status_patch_reaches_the_adapter_with_its_time(
    server: ApiServer, cluster: InMemoryCluster
) -> None:
    patch = {"status": {"conditions": [{"type": "NetworkingReady", "status": "False", "reason": "IPAMDNotRunning"}]}}
    answer = call(server, "PATCH", "/api/v1/nodes/n1/status", patch, **{"Content-Type": STRATEGIC_MERGE_PATCH})
    assert answer.status == 200
    served = {c["type"]: c for c in answer.body["status"]["conditions"]}
    assert served["NetworkingReady"]["lastTransitionTime"] == "2026-01-05T00:00:00Z"
    read = adapter(server).get_node("n1")
    assert read is not None
    assert read.condition("NetworkingReady") == NodeCondition("NetworkingReady", "False", START, "IPAMDNotRunning")
    assert read.ready is True


def test_a_bad_status_patch_is_refused_naming_the_entry(server: ApiServer) -> None:
    headers = {"Content-Type": STRATEGIC_MERGE_PATCH}
    untyped = call(
        server, "PATCH", "/api/v1/nodes/n1/status", {"status": {"conditions": [{"status": "False"}]}}, **headers
    )
    assert (untyped.status, untyped.body["message"]) == (422, "status.conditions[0].type: Required value")
    wrong = {"status": {"conditions": [{"type": "KernelReady", "status": "broken"}]}}
    answer = call(server, "PATCH", "/api/v1/nodes/n1/status", wrong, **headers)
    assert answer.status == 422
    assert "status.conditions[0]" in answer.body["message"]
    missing = call(server, "PATCH", "/api/v1/nodes/nope/status", {"status": {"conditions": []}}, **headers)
    assert missing.status == 404
