"""`KubeCluster.annotate_pod`: one merge patch of the pod's annotations, through the API emulator.

Real: the adapter (the kubernetes client over HTTP) and the API emulator (`ApiServer`) serving an
in-memory cluster (`populated()`: two nodes, six pods). Observed: what the cluster holds after each
call and what the call returned.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodewright.inmemory.apiserver import ApiServer
from tests.inmemory.test_apiserver import adapter, populated

pytestmark = pytest.mark.integration

COST = "controller.kubernetes.io/pod-deletion-cost"
STEERED = "nodewright.io/deletion-cost"


def test_annotations_are_set_and_removed_and_the_others_kept() -> None:
    cluster = populated()
    web = cluster.get_pod("default/web-1")
    assert web is not None
    cluster.annotate_pod(web, {"team": "payments"})
    with ApiServer(cluster) as server:
        kube = adapter(server)

        assert kube.annotate_pod(web, {COST: "-999998", STEERED: "-999998"})
        stored = cluster.get_pod("default/web-1")
        assert stored is not None
        assert stored.annotations == {"team": "payments", COST: "-999998", STEERED: "-999998"}

        assert kube.annotate_pod(web, {COST: None, STEERED: None})
        assert cluster.get_pod("default/web-1").annotations == {"team": "payments"}  # type: ignore[union-attr]


def test_a_pod_gone_or_replaced_under_its_name_is_not_written() -> None:
    cluster = populated()
    web = cluster.get_pod("default/web-2")
    assert web is not None
    with ApiServer(cluster) as server:
        kube = adapter(server)

        # Another pod of the same name (its uid differs): the immutable uid refuses the patch (422).
        assert not kube.annotate_pod(replace(web, uid="uid-of-an-older-pod"), {COST: "-1"})
        assert COST not in cluster.get_pod("default/web-2").annotations  # type: ignore[union-attr]

        cluster.remove_pod(web)
        assert not kube.annotate_pod(web, {COST: "-1"})
