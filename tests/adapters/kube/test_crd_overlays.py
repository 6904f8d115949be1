"""NodeOverlays from the cluster (configSource=crd), over real HTTP with the real client, to the
prices the controllers plan with.

Faked: the Kubernetes API server, by kmock's `KubernetesEmulator`. Observed: what
`StoredConfiguration` over `read_config` hands the controllers (`overlays()`), and the prices
`pool_capacities` then gives the NodePool's instance types.
"""

from __future__ import annotations

import asyncio
from typing import Any

import kubernetes
import pytest
from kmock import KubernetesEmulator, resource

from nodewright.adapters.kube.crd_config import read_config
from nodewright.controllers.configuration import StoredConfiguration
from nodewright.controllers.observe import RecordingObserver
from nodewright.controllers.provisionoptions import pool_capacities
from nodewright.inmemory.catalog import FixedCatalog
from tests.adapters.kube.test_crd_config import KARPENTER_NODEPOOLS, NODEPOOL_SPEC, cluster_object
from tests.builders import instance_type

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

KARPENTER_OVERLAYS = resource("karpenter.sh", "v1alpha1", "nodeoverlays")
SAVINGS_PLAN: dict[str, Any] = {
    "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7i"]}],
    "priceAdjustment": "-28%",
    "weight": 10,
}
TYPES = (instance_type("m5.large", price=0.096), instance_type("m7i.large", price=0.1008))


async def test_nodeoverlays_in_the_cluster_price_the_instance_types_the_controllers_plan_with(
    kmock: KubernetesEmulator,
) -> None:
    kmock.objects[KARPENTER_NODEPOOLS, None, "spot"] = cluster_object("spot", NODEPOOL_SPEC)
    kmock.objects[KARPENTER_OVERLAYS, None, "savings-plan"] = cluster_object("savings-plan", SAVINGS_PLAN)
    configuration = kubernetes.client.Configuration(host=str(kmock.url).rstrip("/"))
    observer = RecordingObserver()

    with kubernetes.client.ApiClient(configuration) as api_client:
        config = StoredConfiguration(lambda: list(read_config(api_client).require()), observer)
        nodepools, nodeclasses = await asyncio.to_thread(config.load)

    (overlay,) = config.overlays()
    assert (overlay.name, overlay.weight, str(overlay.price_adjustment)) == ("savings-plan", 10, "-28%")
    (pool,) = pool_capacities(nodepools, nodeclasses, FixedCatalog(TYPES), config.overlays(), observer)
    prices = {it.name: {round(o.price, 5) for o in it.offerings} for it in pool.instance_types}
    assert prices == {"m5.large": {0.096}, "m7i.large": {0.07258}}
    assert "/apis/karpenter.sh/v1alpha1/nodeoverlays" in {str(request.url.path) for request in kmock}
