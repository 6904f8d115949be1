"""Reading NodePools and EC2NodeClasses from the cluster, over real HTTP with the real client.

Faked: the Kubernetes API server, by kmock's `KubernetesEmulator` (an in-memory object store
served over HTTP; the `kmock` fixture from its pytest plugin). Observed: the documents and
problems `read_config` returns and the requests the official kubernetes client sent. The client
is synchronous, so it runs in a worker thread while the emulator serves on the event loop.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import kubernetes
import pytest
from kmock import KubernetesEmulator, resource

from nodewright.adapters.kube.crd_config import read_config
from nodewright.config.documents import Loaded
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodepool import NodePool

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

NW_NODEPOOLS = resource("nodewright.io", "v1", "nodepools")
NW_NODECLASSES = resource("nodewright.io", "v1", "ec2nodeclasses")
KARPENTER_NODEPOOLS = resource("karpenter.sh", "v1", "nodepools")

NODEPOOL_SPEC: dict[str, Any] = {
    "template": {
        "spec": {
            "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
        }
    },
    "weight": 10,
}
NODECLASS_SPEC: dict[str, Any] = {
    "amiSelectorTerms": [{"alias": "al2023@latest"}],
    "role": "KarpenterNodeRole-test",
    "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
    "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
}


def cluster_object(name: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """An object as the API server stores it: server-set metadata and a status included."""
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "17", "generation": 1, **metadata},
        "spec": copy.deepcopy(spec),
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


async def read(kmock: KubernetesEmulator, **kwargs: Any) -> Loaded:
    configuration = kubernetes.client.Configuration(host=str(kmock.url).rstrip("/"))
    with kubernetes.client.ApiClient(configuration) as api_client:
        return await asyncio.to_thread(read_config, api_client, **kwargs)


async def test_nodewright_custom_objects_are_read_as_validated_documents(kmock: KubernetesEmulator) -> None:
    kmock.objects[NW_NODEPOOLS, None, "default"] = cluster_object("default", NODEPOOL_SPEC)
    kmock.objects[NW_NODECLASSES, None, "default"] = cluster_object("default", NODECLASS_SPEC)

    loaded = await read(kmock)

    assert loaded.problems == ()
    assert [(d.key, d.api_version, d.source) for d in loaded.documents] == [
        ("NodePool/default", "nodewright.io/v1", "nodepools.nodewright.io/v1"),
        ("EC2NodeClass/default", "nodewright.io/v1", "ec2nodeclasses.nodewright.io/v1"),
    ]
    pool = loaded.documents[0].model
    assert isinstance(pool, NodePool)
    assert pool.weight == 10
    assert pool.resource_version == "17"
    assert isinstance(loaded.documents[1].model, EC2NodeClass)
    assert "status" not in loaded.documents[0].to_manifest()
    # The emulator's root view iterates over every request it served.
    lists = {str(request.url.path): dict(request.params) for request in kmock}
    assert lists["/apis/nodewright.io/v1/nodepools"] == {"limit": "500"}
    assert "/apis/nodewright.io/v1/ec2nodeclasses" in lists


async def test_karpenter_nodepools_are_read_when_their_crd_is_installed(kmock: KubernetesEmulator) -> None:
    kmock.objects[KARPENTER_NODEPOOLS, None, "spot"] = cluster_object("spot", NODEPOOL_SPEC)

    loaded = await read(kmock)

    assert [(d.key, d.api_version) for d in loaded.documents] == [("NodePool/spot", "karpenter.sh/v1")]
    assert loaded.problems == ()


async def test_karpenter_objects_are_skipped_when_asked_to(kmock: KubernetesEmulator) -> None:
    kmock.objects[KARPENTER_NODEPOOLS, None, "spot"] = cluster_object("spot", NODEPOOL_SPEC)

    loaded = await read(kmock, include_karpenter=False)

    assert loaded.documents == ()


async def test_an_invalid_custom_object_is_a_problem_naming_its_field(kmock: KubernetesEmulator) -> None:
    bad = copy.deepcopy(NODEPOOL_SPEC)
    bad["template"]["spec"]["requirements"][0]["operator"] = "Greater"
    kmock.objects[NW_NODEPOOLS, None, "broken"] = cluster_object("broken", bad)
    kmock.objects[NW_NODEPOOLS, None, "fine"] = cluster_object("fine", NODEPOOL_SPEC)

    loaded = await read(kmock)

    assert [str(p) for p in loaded.problems] == [
        'nodepools.nodewright.io/v1: NodePool/broken: spec.template.spec.requirements[0].operator: "Greater" is not '
        "one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte"
    ]
    assert [d.key for d in loaded.documents] == ["NodePool/fine"]


async def test_the_same_nodepool_under_both_groups_is_a_duplicate(kmock: KubernetesEmulator) -> None:
    kmock.objects[NW_NODEPOOLS, None, "default"] = cluster_object("default", NODEPOOL_SPEC)
    kmock.objects[KARPENTER_NODEPOOLS, None, "default"] = cluster_object("default", NODEPOOL_SPEC)

    loaded = await read(kmock)

    assert [p.detail for p in loaded.problems] == [
        "NodePool/default: metadata.name: NodePool/default is defined more than once "
        "(first in nodepools.nodewright.io/v1)"
    ]


async def test_a_cluster_without_any_of_the_crds_has_no_documents(kmock: KubernetesEmulator) -> None:
    loaded = await read(kmock)

    assert loaded == Loaded()
