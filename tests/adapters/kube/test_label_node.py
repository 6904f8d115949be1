"""`KubeCluster.label_node`: one merge patch of the node's labels, None removing a label.

Faked: the API server, by `ApiServer` (tests/adapters/kube/emulator.py), as in test_cluster.py,
whose helpers this reuses. Observed: the PATCH requests sent and the labels the server holds.
"""

from __future__ import annotations

import json

import pytest

from tests.adapters.kube.emulator import NODES, ApiServer
from tests.adapters.kube.test_cluster import adapter, node_manifest, patches, run

pytestmark = [pytest.mark.integration, pytest.mark.asyncio, pytest.mark.kmock(cls=ApiServer)]

RESERVED = {
    "karpenter.sh/capacity-type": "reserved",
    "karpenter.k8s.aws/capacity-reservation-id": "cr-0aaaaaaaaaaaaaaa1",
    "karpenter.k8s.aws/capacity-reservation-type": "default",
}
ENDED = {
    "karpenter.sh/capacity-type": "on-demand",
    "karpenter.k8s.aws/capacity-reservation-id": None,
    "karpenter.k8s.aws/capacity-reservation-type": None,
}


async def test_label_node_sets_and_removes_labels_in_one_merge_patch_then_sends_nothing(kmock: ApiServer) -> None:
    manifest = node_manifest("node-a")
    manifest["metadata"]["labels"].update(RESERVED)
    kmock.add(NODES, manifest)
    cluster = adapter(kmock)

    await run(lambda: cluster.label_node("node-a", ENDED))

    (patch,) = patches(kmock)
    assert patch.headers["Content-Type"] == "application/merge-patch+json"
    assert json.loads(patch.body) == {"metadata": {"labels": ENDED}}
    stored = kmock.stored(NODES, "node-a")
    assert stored is not None
    labels = stored["metadata"]["labels"]
    assert labels["karpenter.sh/capacity-type"] == "on-demand"
    assert "karpenter.k8s.aws/capacity-reservation-id" not in labels
    assert labels["kubernetes.io/arch"] == "amd64"

    await run(lambda: cluster.label_node("node-a", ENDED))  # already so: nothing is written
    assert len(patches(kmock)) == 1


async def test_label_node_on_a_missing_node_is_a_no_op(kmock: ApiServer) -> None:
    await run(lambda: adapter(kmock).label_node("node-gone", ENDED))
    assert patches(kmock) == []
