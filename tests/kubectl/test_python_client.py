"""The official Python client (`kubernetes`, typed models) against the API emulator.

Real: the client's typed APIs, its model (de)serialisation, its watch helper; the emulator over
HTTP. Faked: the cluster (`InMemoryCluster`). Observed: the typed answers, ApiException statuses
and the cluster after each write.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest
import yaml
from kubernetes.client import ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, PolicyV1Api
from kubernetes.client.exceptions import ApiException

from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.cluster import InMemoryCluster
from tests.inmemory.test_apiserver import populated
from tests.kubectl.conftest import REPO

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster() -> InMemoryCluster:
    return populated()


@pytest.fixture
def client(cluster: InMemoryCluster) -> Iterator[kubernetes.client.ApiClient]:
    with ApiServer(cluster, bookmark_every=0.2) as server:
        configuration = kubernetes.client.Configuration()
        configuration.host = server.url
        with kubernetes.client.ApiClient(configuration) as api_client:
            yield api_client


def test_typed_reads_with_selectors(client: kubernetes.client.ApiClient) -> None:
    core = CoreV1Api(client)
    assert [n.metadata.name for n in core.list_node().items] == ["node-1", "node-2"]
    web = core.list_namespaced_pod("default", label_selector="app=web")
    assert [p.metadata.name for p in web.items] == ["web-1", "web-2"]
    on_node = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=node-2,status.phase=Succeeded")
    assert [p.metadata.name for p in on_node.items] == ["done-1"]
    assert core.read_node("node-2").spec.taints[0].key == "gpu"
    groups = {g.name for g in kubernetes.client.ApisApi(client).get_api_versions().groups}
    assert {"apps", "policy", "events.k8s.io", "apiextensions.k8s.io"} <= groups


def test_typed_writes_reach_the_cluster(client: kubernetes.client.ApiClient, cluster: InMemoryCluster) -> None:
    core = CoreV1Api(client)
    core.patch_node("node-1", {"spec": {"unschedulable": True}, "metadata": {"labels": {"team": "a"}}})
    node = cluster.get_node("node-1")
    assert node is not None
    assert (node.unschedulable, node.labels["team"]) == (True, "a")
    core.patch_node("node-1", [{"op": "remove", "path": "/metadata/labels/team"}])
    assert "team" not in cluster.get_node("node-1").labels  # type: ignore[union-attr]
    with pytest.raises(ApiException) as conflict:
        core.delete_namespaced_pod(
            "web-1", "default", body=kubernetes.client.V1DeleteOptions(preconditions={"uid": "not-its-uid"})
        )
    assert conflict.value.status == 409
    core.delete_namespaced_pod("web-1", "default", grace_period_seconds=30)
    assert cluster.get_pod("default/web-1") is None


def test_an_eviction_a_pdb_holds_is_429(client: kubernetes.client.ApiClient, cluster: InMemoryCluster) -> None:
    policy = PolicyV1Api(client)
    eviction = kubernetes.client.V1Eviction(metadata=kubernetes.client.V1ObjectMeta(name="web-1", namespace="default"))
    policy_core = CoreV1Api(client)
    policy_core.create_namespaced_pod_eviction("web-1", "default", eviction)
    second = kubernetes.client.V1Eviction(metadata=kubernetes.client.V1ObjectMeta(name="web-2", namespace="default"))
    with pytest.raises(ApiException) as held:
        policy_core.create_namespaced_pod_eviction("web-2", "default", second)
    assert held.value.status == 429
    assert cluster.get_pod("default/web-2") is not None
    assert policy.read_namespaced_pod_disruption_budget("web", "default").status.disruptions_allowed == 0


def test_crds_and_custom_objects_through_the_typed_client(client: kubernetes.client.ApiClient) -> None:
    crd = yaml.safe_load((REPO / "deploy" / "crds" / "nodewright.io_nodepools.yaml").read_text())
    created = ApiextensionsV1Api(client).create_custom_resource_definition(crd)
    assert [c.type for c in created.status.conditions] == ["NamesAccepted", "Established"]
    custom = CustomObjectsApi(client)
    pool = {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "d"},
                    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
                }
            }
        },
    }
    stored = custom.create_cluster_custom_object("nodewright.io", "v1", "nodepools", pool)
    assert stored["metadata"]["generation"] == 1
    patched = custom.patch_cluster_custom_object("nodewright.io", "v1", "nodepools", "default", {"spec": {"weight": 5}})
    assert (patched["spec"]["weight"], patched["metadata"]["generation"]) == (5, 2)
    status = custom.patch_cluster_custom_object_status(
        "nodewright.io", "v1", "nodepools", "default", {"status": {"nodes": 3}, "spec": {"weight": 9}}
    )
    assert (status["status"], status["spec"]["weight"]) == ({"nodes": 3}, 5)  # /status changes only the status
    with pytest.raises(ApiException) as invalid:
        custom.patch_cluster_custom_object("nodewright.io", "v1", "nodepools", "default", {"spec": {"weight": 0}})
    assert invalid.value.status == 422
    listed = custom.list_cluster_custom_object("nodewright.io", "v1", "nodepools")
    assert [p["metadata"]["name"] for p in listed["items"]] == ["default"]


def test_a_watch_resumes_from_the_last_resource_version(
    client: kubernetes.client.ApiClient, cluster: InMemoryCluster
) -> None:
    core = CoreV1Api(client)
    version = core.list_node().metadata.resource_version
    cluster.cordon("node-1")
    cluster.uncordon("node-1")
    stream = kubernetes.watch.Watch().stream(core.list_node, resource_version=version, timeout_seconds=1)
    seen = [(e["type"], e["object"].metadata.name, e["object"].spec.unschedulable) for e in stream]
    assert seen == [("MODIFIED", "node-1", True), ("MODIFIED", "node-1", None)]


def test_kubeconfig_files_written_for_kubectl_load_in_the_client(tmp_path: Path) -> None:
    from tests.kubectl.conftest import write_kubeconfig

    with ApiServer(populated()) as server:
        path = write_kubeconfig(tmp_path / "config", server.url)
        api_client = kubernetes.config.new_client_from_config(str(path))
        assert len(CoreV1Api(api_client).list_node().items) == 2
