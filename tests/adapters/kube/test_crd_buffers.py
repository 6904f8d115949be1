"""CapacityBuffers and NodeOverlays applied to the cluster (configSource=crd), over real HTTP with
the real client: read as configuration, acted on, and their status written back.

Faked: the Kubernetes API server, by kmock's `KubernetesEmulator` (objects kept in memory, served
over HTTP); for the provisioner's run, EC2, DynamoDB and time as in
tests/controllers/test_capacity_buffers.py. Observed: the documents and problems `read_config`
returns, the instances the provisioner launches, the objects' status as the emulator stores it
after `ConfigStatus` wrote it through `KubeConfigStatus`, and the requests sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import kubernetes
import pytest
from kmock import KubernetesEmulator, resource

from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.adapters.kube.configstatus import KubeConfigStatus
from nodewright.adapters.kube.crd_config import read_config
from nodewright.config.documents import Document, Loaded
from nodewright.controllers.configstatus import ConfigStatus
from nodewright.controllers.configuration import StoredConfiguration
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisionoptions import StaticConfiguration, pool_capacities
from nodewright.inmemory.catalog import FixedCatalog
from nodewright.inmemory.clock import VirtualClock
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay
from nodewright.model.nodepool import NodePool
from tests.adapters.kube.test_crd_config import KARPENTER_NODEPOOLS, NODEPOOL_SPEC, cluster_object
from tests.adapters.kube.test_crd_overlays import KARPENTER_OVERLAYS
from tests.builders import instance_type
from tests.controllers.test_capacity_buffers import BufferWorld
from tests.controllers.test_interruption import BOOT

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

BUFFERS = resource("autoscaling.x-k8s.io", "v1beta1", "capacitybuffers")
ALPHA_BUFFERS = resource("autoscaling.x-k8s.io", "v1alpha1", "capacitybuffers")
PODTEMPLATES = resource("", "v1", "podtemplates")
TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "web", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]},
}


def namespaced(name: str, namespace: str, **body: Any) -> dict[str, Any]:
    """A namespaced object as the API server stores it."""
    metadata = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "7"}
    return {"metadata": metadata, **body}


def apply_buffer(kmock: KubernetesEmulator, replicas: int = 6, kind: Any = BUFFERS) -> None:
    """`kubectl apply` of a buffer for `replicas` chunks of the `chunk` PodTemplate, and the template."""
    spec = {"podTemplateRef": {"name": "chunk"}, "replicas": replicas}
    kmock.objects[kind, "default", "burst"] = namespaced("burst", "default", spec=spec)
    kmock.objects[PODTEMPLATES, "default", "chunk"] = namespaced("chunk", "default", template=TEMPLATE)


@dataclass
class ClusterBuffers:
    """The world's NodePools (its fake cloud's), and the CapacityBuffers configSource=crd reads."""

    pools: StaticConfiguration
    cluster: StoredConfiguration

    def load(self) -> tuple[list[NodePool], dict[str, EC2NodeClass]]:
        self.cluster.load()
        return self.pools.load()

    def overlays(self) -> list[NodeOverlay]:
        return self.pools.overlays()

    def buffers(self) -> tuple[tuple[CapacityBuffer, ...], tuple[PodTemplate, ...]]:
        return self.cluster.buffers()


@dataclass
class ClusterBufferWorld(BufferWorld):
    """tests/controllers/test_capacity_buffers.py's world, its buffers read from the API server
    (made with `buffers=()`: none given directly).
    """

    api_client: kubernetes.client.ApiClient | None = None

    def configuration(self) -> Any:
        def read() -> list[Document]:
            return list(read_config(self.api_client, include_buffers=True).require())

        return ClusterBuffers(super().configuration(), StoredConfiguration(read, self.observer))


@pytest.fixture
def api_client(kmock: KubernetesEmulator) -> Iterator[kubernetes.client.ApiClient]:
    configuration = kubernetes.client.Configuration(host=str(kmock.url).rstrip("/"))
    with kubernetes.client.ApiClient(configuration) as client:
        yield client


async def read(api_client: kubernetes.client.ApiClient, **kwargs: Any) -> Loaded:
    return await asyncio.to_thread(read_config, api_client, **kwargs)


def paths(kmock: KubernetesEmulator, method: str = "GET") -> list[str]:
    return [str(request.url.path) for request in kmock if request.method == method]


async def test_a_buffer_and_the_podtemplate_it_names_are_read_as_validated_documents(
    kmock: KubernetesEmulator, api_client: kubernetes.client.ApiClient
) -> None:
    apply_buffer(kmock)
    kmock.objects[PODTEMPLATES, "other", "unrelated"] = namespaced("unrelated", "other", template=TEMPLATE)

    loaded = await read(api_client, include_buffers=True)

    assert loaded.problems == ()
    assert [(d.key, d.source) for d in loaded.documents] == [
        ("CapacityBuffer/burst", "capacitybuffers.autoscaling.x-k8s.io/v1beta1"),
        ("PodTemplate/chunk", "podtemplates/v1"),
    ]
    buffer, template = (d.model for d in loaded.documents)
    assert isinstance(buffer, CapacityBuffer)
    assert (buffer.namespace, buffer.pod_template_ref, buffer.replicas) == ("default", "chunk", 6)
    assert isinstance(template, PodTemplate)
    assert template.pod.requests["cpu"] == 1000
    assert "/apis/autoscaling.x-k8s.io/v1beta1/capacitybuffers" in paths(kmock)
    assert "/api/v1/podtemplates" in paths(kmock)


async def test_v1alpha1_buffers_are_read_when_the_api_server_serves_only_that_version(
    kmock: KubernetesEmulator, api_client: kubernetes.client.ApiClient
) -> None:
    apply_buffer(kmock, kind=ALPHA_BUFFERS)

    loaded = await read(api_client, include_buffers=True)

    assert [(d.key, d.api_version) for d in loaded.documents] == [
        ("CapacityBuffer/burst", "autoscaling.x-k8s.io/v1alpha1"),
        ("PodTemplate/chunk", "v1"),
    ]


async def test_buffers_of_the_same_name_in_two_namespaces_are_two_buffers(
    kmock: KubernetesEmulator, api_client: kubernetes.client.ApiClient
) -> None:
    for namespace in ("team-a", "team-b"):
        spec = {"podTemplateRef": {"name": "chunk"}, "replicas": 2}
        kmock.objects[BUFFERS, namespace, "buffer"] = namespaced("buffer", namespace, spec=spec)
        kmock.objects[PODTEMPLATES, namespace, "chunk"] = namespaced("chunk", namespace, template=TEMPLATE)

    loaded = await read(api_client, include_buffers=True)

    assert loaded.problems == ()
    found = sorted((type(d.model).__name__, getattr(d.model, "namespace", "")) for d in loaded.documents)
    assert found == [
        ("CapacityBuffer", "team-a"),
        ("CapacityBuffer", "team-b"),
        ("PodTemplate", "team-a"),
        ("PodTemplate", "team-b"),
    ]


async def test_an_invalid_buffer_is_a_problem_naming_the_object_and_field(
    kmock: KubernetesEmulator, api_client: kubernetes.client.ApiClient
) -> None:
    spec = {"podTemplateRef": {"name": "chunk"}, "replicas": -1}
    kmock.objects[BUFFERS, "default", "broken"] = namespaced("broken", "default", spec=spec)

    loaded = await read(api_client, include_buffers=True)

    (problem,) = loaded.problems
    assert str(problem).startswith("capacitybuffers.autoscaling.x-k8s.io/v1beta1: CapacityBuffer/broken: spec.replicas")
    assert loaded.documents == ()


async def test_buffers_are_not_asked_for_by_a_function_that_does_not_use_them_nor_templates_no_buffer_names(
    kmock: KubernetesEmulator, api_client: kubernetes.client.ApiClient
) -> None:
    spec = {"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "web"}, "replicas": 2}
    kmock.objects[BUFFERS, "default", "web"] = namespaced("web", "default", spec=spec)

    without = await read(api_client)
    assert without.documents == ()
    assert not [p for p in paths(kmock) if "capacitybuffers" in p]

    loaded = await read(api_client, include_buffers=True)
    assert [d.key for d in loaded.documents] == ["CapacityBuffer/web"]
    assert "/api/v1/podtemplates" not in paths(kmock)  # no buffer names a PodTemplate


async def test_a_buffer_applied_in_the_cluster_gets_room_launched_and_its_status_written_once(
    kmock: KubernetesEmulator, api_client: kubernetes.client.ApiClient
) -> None:
    apply_buffer(kmock)
    world = BufferWorld(buffers=())
    observer = RecordingObserver()
    from_cluster = StoredConfiguration(lambda: list(read_config(api_client, include_buffers=True).require()), observer)
    config = ClusterBuffers(world.configuration(), from_cluster)
    status = ConfigStatus(KubeConfigStatus(KubeCluster.connect(api_client)), VirtualClock(1_800_000_000.0), observer)

    def provision() -> None:
        p = world.provisioner(config, status)
        p.sleep = lambda s: world.tick(max(1.0, s))
        p.run(world.clock.now() + 30)
        world.tick(BOOT + 5)

    await asyncio.to_thread(provision)

    assert world.cloud.calls_to("launch")
    assert world.room() >= 6000  # six chunks of 1 cpu
    stored = kmock.objects[BUFFERS, "default", "burst"]["status"]
    assert stored["replicas"] == 6
    assert stored["podTemplateRef"] == {"name": "chunk"}
    assert stored["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"
    conditions = {c["type"]: (c["status"], c["reason"]) for c in stored["conditions"]}
    assert conditions == {"ReadyForProvisioning": ("True", "Resolved"), "Provisioning": ("True", "Provisioning")}
    status_path = "/apis/autoscaling.x-k8s.io/v1beta1/namespaces/default/capacitybuffers/burst/status"
    assert paths(kmock, "PATCH").count(status_path) == 1

    await asyncio.to_thread(provision)  # nothing changed: no write
    assert paths(kmock, "PATCH").count(status_path) == 1
    # A cold start: a new writer that knows what the cluster's objects say writes nothing either.
    status = ConfigStatus(status.writes, VirtualClock(1_800_000_600.0), observer, listed=from_cluster.statuses)
    await asyncio.to_thread(provision)
    assert paths(kmock, "PATCH").count(status_path) == 1


async def test_a_buffer_whose_podtemplate_is_missing_says_so_in_its_status(
    kmock: KubernetesEmulator, api_client: kubernetes.client.ApiClient
) -> None:
    spec = {"podTemplateRef": {"name": "missing"}, "replicas": 2}
    kmock.objects[BUFFERS, "default", "orphan"] = namespaced("orphan", "default", spec=spec)
    world = BufferWorld(buffers=())
    from_cluster = StoredConfiguration(
        lambda: list(read_config(api_client, include_buffers=True).require()), world.observer
    )
    config = ClusterBuffers(world.configuration(), from_cluster)
    status = ConfigStatus(KubeConfigStatus(KubeCluster.connect(api_client)), world.clock, world.observer)

    def provision() -> None:
        p = world.provisioner(config, status)
        p.run(world.clock.now() + 10)

    await asyncio.to_thread(provision)

    assert not world.cloud.calls_to("launch")
    stored = kmock.objects[BUFFERS, "default", "orphan"]["status"]
    ready = {c["type"]: c for c in stored["conditions"]}["ReadyForProvisioning"]
    assert (ready["status"], ready["reason"]) == ("False", "NotResolved")
    assert "PodTemplate default/missing" in ready["message"]
    assert stored.get("replicas") is None


async def test_an_overlay_refused_for_a_same_weight_conflict_says_conflict_in_its_status(
    kmock: KubernetesEmulator, api_client: kubernetes.client.ApiClient
) -> None:
    family = [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7i"]}]
    kmock.objects[KARPENTER_NODEPOOLS, None, "spot"] = cluster_object("spot", NODEPOOL_SPEC)
    for name, adjustment in (("plan-a", "-28%"), ("plan-b", "-10%")):
        spec = {"requirements": family, "priceAdjustment": adjustment, "weight": 10}
        kmock.objects[KARPENTER_OVERLAYS, None, name] = cluster_object(name, spec)
    observer = RecordingObserver()
    config = StoredConfiguration(lambda: list(read_config(api_client).require()), observer)
    status = ConfigStatus(KubeConfigStatus(KubeCluster.connect(api_client)), VirtualClock(1_800_000_000.0), observer)
    catalog = FixedCatalog((instance_type("m7i.large", price=0.1008),))

    def plan() -> None:
        nodepools, nodeclasses = config.load()
        pool_capacities(nodepools, nodeclasses, catalog, config.overlays(), observer, status=status)

    await asyncio.to_thread(plan)

    verdicts = {
        name: {
            c["type"]: (c["status"], c["reason"])
            for c in kmock.objects[KARPENTER_OVERLAYS, None, name]["status"]["conditions"]
        }
        for name in ("plan-a", "plan-b")
    }
    refused = {name for name, conditions in verdicts.items() if conditions["Ready"] == ("False", "Conflict")}
    assert len(refused) == 1
    (kept,) = set(verdicts) - refused
    assert verdicts[kept] == {"Ready": ("True", "Ready"), "ValidationSucceeded": ("True", "ValidationSucceeded")}
    assert verdicts[refused.pop()]["ValidationSucceeded"] == ("False", "Conflict")
    assert set(paths(kmock, "PATCH")) == {
        f"/apis/karpenter.sh/v1alpha1/nodeoverlays/{name}/status" for name in ("plan-a", "plan-b")
    }


async def test_the_consolidator_keeps_the_room_of_a_buffer_applied_in_the_cluster_until_it_is_deleted(
    kmock: KubernetesEmulator, api_client: kubernetes.client.ApiClient
) -> None:
    apply_buffer(kmock)
    world = ClusterBufferWorld(buffers=(), api_client=api_client)
    await asyncio.to_thread(world.provision)
    await asyncio.to_thread(world.provision)  # housekeeping marks the claims initialized
    nodes = sorted(n.name for n in world.cluster.nodes())
    assert nodes

    report = await asyncio.to_thread(world.run, 120)

    assert report["decided"] == []
    assert sorted(n.name for n in world.cluster.nodes()) == nodes
    # `kubectl delete capacitybuffer burst`: the empty nodes go.
    kmock.objects[BUFFERS, "default", "burst"].delete()
    await asyncio.to_thread(world.run, 120)
    assert len(world.cluster.nodes()) < len(nodes)


async def test_a_status_the_api_server_refuses_is_reported_and_provisioning_goes_on(
    kmock: KubernetesEmulator, api_client: kubernetes.client.ApiClient
) -> None:
    apply_buffer(kmock)
    world = ClusterBufferWorld(buffers=(), api_client=api_client)
    # The role was applied without `patch capacitybuffers/status`: the API server answers 403.
    kmock["patch", "/apis/autoscaling.x-k8s.io/v1beta1/namespaces/default/capacitybuffers/burst/status"] << 403
    status = ConfigStatus(KubeConfigStatus(KubeCluster.connect(api_client)), world.clock, world.observer)

    def provision() -> None:
        p = world.provisioner(config_status=status)
        p.sleep = lambda s: world.tick(max(1.0, s))
        p.run(world.clock.now() + 30)

    await asyncio.to_thread(provision)

    assert world.cloud.calls_to("launch")  # the room is launched all the same
    (failed,) = world.observer.of("status-write-failed")
    assert failed["object"] == "CapacityBuffer/default/burst"
    assert "403" in str(failed["error"])
    assert world.observer.total("StatusWriteFailures") == 1  # once, not at every check
