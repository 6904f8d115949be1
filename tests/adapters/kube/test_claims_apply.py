"""The claims' writer updates a NodeClaim object with one server-side apply and keeps the
consolidator's verdicts: over real HTTP, the real client, the project's API emulator.

Real: `KubeClaimObjects` over `KubeCluster`'s request path, both functions' `ClaimMirror`s, the
emulator (nodewright.inmemory.apiserver) serving `nodeclaims.nodewright.io` with server-side apply.
Observed: the requests each mirror sent (the adapter's meter), the object the emulator holds,
and its printer-column values as `nodewright.cli.columns` renders them (what kubectl itself shows
is checked with kubectl in tests/kubectl/test_kubectl_crds.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes.client import CustomObjectsApi

from nodewright.adapters.kube.claims import KubeClaimObjects
from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.cli.columns import get_table
from nodewright.controllers.mirror import ClaimMirror
from nodewright.controllers.observe import RecordingObserver
from nodewright.engine.disruption.types import DisruptionInput
from nodewright.engine.scheduling import PoolCapacity
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.claimobjects import InMemoryClaimObjects
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model import labels as wk
from nodewright.model.cluster import ClusterInfo
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.simulator.standins.kubehttp import _CA
from tests.adapters.kube.test_claims import CRD, NOW, claims
from tests.builders import node, node_pool

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def _usage(cluster: KubeCluster) -> dict[tuple[str, str], int]:
    return {(u.verb, u.resource): u.requests for u in cluster.usage()}


async def test_an_update_is_one_apply_that_keeps_the_judges_verdicts() -> None:
    objects = InMemoryClaimObjects(clock=VirtualClock(NOW))
    server = ApiServer(InMemoryCluster(), tokens=["t0k3n"])
    server.claims = objects
    url = server.start()
    ready, _ = claims()
    registered = node(
        "ip-10-0-0-1",
        labels={wk.NW_NODECLAIM: ready.name, wk.NW_NODEPOOL: "default", wk.NODEPOOL: "default"},
        provider_id=ready.provider_id,
    )

    def inp(claim: Any) -> DisruptionInput:
        return DisruptionInput(
            snapshot=ClusterSnapshot(nodes=(registered,)),
            claims=(claim,),
            pools=(PoolCapacity(node_pool(), ()),),
            now=NOW,
        )

    def exercise() -> tuple[Any, ...]:
        api_client = from_cluster_info(ClusterInfo("emulated", url, _CA, "1.31"), lambda: "t0k3n")
        writer_cluster, judge_cluster = KubeCluster(api_client), KubeCluster(api_client)
        writer = ClaimMirror(KubeClaimObjects(writer_cluster, api_client), VirtualClock(NOW), RecordingObserver())
        judge = ClaimMirror(
            KubeClaimObjects(judge_cluster, api_client), VirtualClock(NOW), RecordingObserver(), judge=True
        )
        writer.sync(lambda: (inp(ready), []))
        judged = judge.sync(lambda: (inp(ready), []))
        # The claim record changes (a new price recorded): the writer's copy predates the verdicts.
        before = _usage(writer_cluster)
        report = writer.sync(lambda: (inp(ready.with_changes(price=0.05)), []))
        after = _usage(writer_cluster)
        listing = CustomObjectsApi(api_client).list_cluster_custom_object("nodewright.io", "v1", "nodeclaims")
        return judged, report, before, after, listing

    try:
        judged, report, before, after, listing = await asyncio.to_thread(exercise)
    finally:
        server.stop()

    assert judged.updated == [ready.name]
    assert report.updated == [ready.name]
    # One apply, no read first: the server keeps the judge's conditions the apply leaves out.
    assert before == {("list", "nodeclaims"): 1, ("patch", "nodeclaims"): 1}
    assert after == {("patch", "nodeclaims"): 1}  # usage() reports what was sent since it last did
    (stored,) = listing["items"]
    assert stored["metadata"]["annotations"]["nodewright.io/price"] == "0.050000"
    conditions = {c["type"]: c["status"] for c in stored["status"]["conditions"]}
    assert conditions == {
        "Launched": "True",
        "Registered": "True",
        "Initialized": "True",
        "Ready": "True",
        "Drifted": "False",
        "Consolidatable": conditions["Consolidatable"],
    }
    assert get_table(CRD, listing["items"], now=NOW, wide=True)[1][5:] == [
        "True",
        "0s",  # the server stamped creationTimestamp at the first apply
        "ami-0123",
        "aws:///us-east-1a/i-0aaa",
        "default",
        "default",
        "False",
    ]
    assert objects.objects[ready.name]["metadata"]["uid"] == f"uid-{ready.name}"  # created once, kept
