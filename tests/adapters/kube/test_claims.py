"""The NodeClaim mirror over real HTTP with the real client, and the objects it leaves.

Faked: the Kubernetes API server, by kmock's `KubernetesEmulator` (objects kept in memory, served
over HTTP). Observed: the objects the emulator stores after the mirror ran through
`KubeClaimObjects`, read back over HTTP and shown with the printer columns of the shipped CRD
(deploy/crds/nodewright.io_nodeclaims.yaml) as `nodewright.cli.columns` renders them, and the
requests the adapter sent. What kubectl itself shows for them (`kubectl get nodeclaims -o wide`,
the columns from the server's Table) is checked with kubectl in tests/kubectl/test_kubectl_crds.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml
from kmock import KubernetesEmulator, resource
from kubernetes.client import CustomObjectsApi

from nodewright.adapters.kube.claims import APPLY_PATCH, FIELD_MANAGER, KubeClaimObjects
from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.cli.columns import get_table
from nodewright.controllers.mirror import ClaimMirror
from nodewright.controllers.observe import RecordingObserver
from nodewright.engine.disruption.types import DisruptionInput
from nodewright.engine.scheduling import PoolCapacity
from nodewright.inmemory.clock import VirtualClock
from nodewright.model import labels as wk
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.requirements import Requirements
from nodewright.model.resources import Resources
from nodewright.model.snapshot import ClusterSnapshot
from tests.builders import node, node_pool

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

NODECLAIMS = resource("nodewright.io", "v1", "nodeclaims")
CRD = yaml.safe_load((Path(__file__).parents[3] / "deploy" / "crds" / "nodewright.io_nodeclaims.yaml").read_text())
NOW = 1_800_000_000.0


def claims() -> tuple[NodeClaim, ...]:
    base = {
        "nodepool": "default",
        "requirements": Requirements.parse([{"key": wk.CAPACITY_TYPE, "operator": "In", "values": ["spot"]}]),
        "instance_type_options": ("m5.large", "m5.xlarge"),
        "requests": Resources.of(cpu="1", memory="2Gi"),
        "pods": ("default/web-0", "default/web-1"),
        "labels": {wk.NODEPOOL: "default", wk.NW_NODEPOOL: "default"},
        "created_at": NOW - 600,
    }
    ready = NodeClaim(
        name="default-aaaa",
        state="initialized",
        instance_type="m5.large",
        capacity_type="spot",
        zone="us-east-1a",
        price=0.04,
        instance_id="i-0aaa",
        provider_id="aws:///us-east-1a/i-0aaa",
        node_name="ip-10-0-0-1",
        image_id="ami-0123",
        launched_at=NOW - 590,
        registered_at=NOW - 560,
        initialized_at=NOW - 550,
        **base,  # type: ignore[arg-type]
    )
    launching = NodeClaim(
        name="default-bbbb",
        state="launched",
        instance_type="m5.xlarge",
        capacity_type="on-demand",
        zone="us-east-1b",
        instance_id="i-0bbb",
        provider_id="aws:///us-east-1b/i-0bbb",
        launched_at=NOW - 20,
        **{**base, "created_at": NOW - 30},  # type: ignore[arg-type]
    )
    return ready, launching


def sync(api_client: Any, claim_set: tuple[NodeClaim, ...]) -> tuple[ClaimMirror, dict[str, Any]]:
    cluster = KubeCluster(api_client)
    objects = KubeClaimObjects(cluster, api_client)
    mirror = ClaimMirror(objects, VirtualClock(NOW), RecordingObserver())
    registered = node(
        "ip-10-0-0-1",
        labels={wk.NW_NODECLAIM: "default-aaaa", wk.NW_NODEPOOL: "default", wk.NODEPOOL: "default"},
        provider_id="aws:///us-east-1a/i-0aaa",
    )
    inp = DisruptionInput(
        snapshot=ClusterSnapshot(nodes=(registered,)),
        claims=claim_set,
        pools=(PoolCapacity(node_pool(), ()),),
        now=NOW,
    )
    report = mirror.sync(lambda: (inp, []))
    usage = {(u.verb, u.resource): u.requests for u in cluster.usage()}
    # Then the consolidator's mirror, which writes the verdicts of initialized claims.
    judge = ClaimMirror(objects, VirtualClock(NOW), RecordingObserver(), judge=True)
    judged = judge.sync(lambda: (inp, []))
    return mirror, {
        "report": report,
        "usage": usage,
        "judged": judged.updated,
        "judge_usage": {(u.verb, u.resource): u.requests for u in cluster.usage()},
    }


async def test_the_mirrored_claims_render_with_the_crds_printer_columns(kmock: KubernetesEmulator) -> None:
    kmock.resources[NODECLAIMS] = kmock.ResourceInfo(kind="NodeClaim", namespaced=False)
    configuration = kubernetes.client.Configuration(host=str(kmock.url).rstrip("/"))
    with kubernetes.client.ApiClient(configuration) as api_client:
        _, first = await asyncio.to_thread(sync, api_client, claims())
        listing = await asyncio.to_thread(
            CustomObjectsApi(api_client).list_cluster_custom_object, "nodewright.io", "v1", "nodeclaims"
        )

    assert first["report"].created == ["default-aaaa", "default-bbbb"]
    # kmock 0.8 answers an apply of a missing object 404 (a real API server creates it): the
    # adapter then creates it.
    assert first["usage"] == {("list", "nodeclaims"): 1, ("patch", "nodeclaims"): 2, ("create", "nodeclaims"): 2}
    applies = [r for r in kmock if r.method == "PATCH" and r.headers.get("Content-Type") == APPLY_PATCH]
    assert len(applies) == 2
    assert all(r.params == {"fieldManager": FIELD_MANAGER, "force": "True"} for r in applies)
    assert first["judged"] == ["default-aaaa"]  # initialized: its verdicts
    assert first["judge_usage"] == {("list", "nodeclaims"): 1, ("patch", "nodeclaims"): 1}
    assert get_table(CRD, listing["items"], now=NOW) == [
        ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"],
        ["default-aaaa", "m5.large", "spot", "us-east-1a", "ip-10-0-0-1", "True", "10m"],
        ["default-bbbb", "m5.xlarge", "on-demand", "us-east-1b", "", "False", "30s"],
    ]
    assert get_table(CRD, listing["items"], now=NOW, wide=True) == [
        [
            *("NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"),
            *("IMAGEID", "ID", "NODEPOOL", "NODECLASS", "DRIFTED"),
        ],
        [
            "default-aaaa",
            "m5.large",
            "spot",
            "us-east-1a",
            "ip-10-0-0-1",
            "True",
            "10m",
            "ami-0123",
            "aws:///us-east-1a/i-0aaa",
            "default",
            "default",
            "False",
        ],
        [
            "default-bbbb",
            "m5.xlarge",
            "on-demand",
            "us-east-1b",
            "",
            "False",
            "30s",
            "",
            "aws:///us-east-1b/i-0bbb",
            "default",
            "default",
            "",
        ],
    ]


async def test_a_second_container_writes_only_what_changed_and_deletes_what_is_gone(kmock: KubernetesEmulator) -> None:
    kmock.resources[NODECLAIMS] = kmock.ResourceInfo(kind="NodeClaim", namespaced=False)
    configuration = kubernetes.client.Configuration(host=str(kmock.url).rstrip("/"))
    ready, launching = claims()
    registered = launching.with_changes(state="registered", node_name="ip-10-0-0-2", registered_at=NOW - 5)
    with kubernetes.client.ApiClient(configuration) as api_client:
        await asyncio.to_thread(sync, api_client, (ready, launching))
        # A new warm container (another function): it lists, then patches one and deletes one.
        _, second = await asyncio.to_thread(sync, api_client, (registered,))
        listing = await asyncio.to_thread(
            CustomObjectsApi(api_client).list_cluster_custom_object, "nodewright.io", "v1", "nodeclaims"
        )

    assert second["report"].updated == ["default-bbbb"]
    assert second["report"].deleted == ["default-aaaa"]
    assert second["usage"] == {("list", "nodeclaims"): 1, ("patch", "nodeclaims"): 1, ("delete", "nodeclaims"): 1}
    assert second["judged"] == []  # registered, not initialized: nothing to judge yet
    (only,) = listing["items"]
    assert only["status"]["nodeName"] == "ip-10-0-0-2"
    assert {c["type"]: c["status"] for c in only["status"]["conditions"]}["Registered"] == "True"


async def test_a_cluster_without_the_crd_turns_the_mirror_off(kmock: KubernetesEmulator) -> None:
    configuration = kubernetes.client.Configuration(host=str(kmock.url).rstrip("/"))
    with kubernetes.client.ApiClient(configuration) as api_client:
        mirror, result = await asyncio.to_thread(sync, api_client, claims())

    assert result["report"].enabled is False
    assert result["usage"] == {("list", "nodeclaims"): 1}
    assert mirror.observer.of("mirror-off")  # type: ignore[attr-defined]


async def test_the_api_emulator_serves_the_mirror_and_a_client_reads_it_back() -> None:
    from nodewright.adapters.kube.client import from_cluster_info
    from nodewright.inmemory.apiserver import ApiServer
    from nodewright.inmemory.claimobjects import InMemoryClaimObjects
    from nodewright.inmemory.cluster import InMemoryCluster
    from nodewright.model.cluster import ClusterInfo
    from nodewright.simulator.standins.kubehttp import _CA

    objects = InMemoryClaimObjects(clock=VirtualClock(NOW))
    server = ApiServer(InMemoryCluster(), tokens=["t0k3n"])
    server.claims = objects
    url = server.start()

    def exercise() -> tuple[Any, ...]:
        api_client = from_cluster_info(ClusterInfo("emulated", url, _CA, "1.31"), lambda: "t0k3n")
        ready, launching = claims()
        _, first = sync(api_client, (ready, launching))
        _, second = sync(api_client, (launching.with_changes(state="registered", node_name="ip-2", registered_at=NOW),))
        listing = CustomObjectsApi(api_client).list_cluster_custom_object("nodewright.io", "v1", "nodeclaims")
        served = {(u.verb, u.resource): u.requests for u in server.usage()}
        return first, second, listing, served

    try:
        first, second, listing, served = await asyncio.to_thread(exercise)
    finally:
        server.stop()

    # The emulator creates on apply, as kube-apiserver does: one request per object written.
    assert first["usage"] == {("list", "nodeclaims"): 1, ("patch", "nodeclaims"): 2}
    assert second["usage"] == {("list", "nodeclaims"): 1, ("patch", "nodeclaims"): 1, ("delete", "nodeclaims"): 1}
    assert served == {("list", "nodeclaims"): 5, ("patch", "nodeclaims"): 4, ("delete", "nodeclaims"): 1}
    assert get_table(CRD, listing["items"], now=NOW + 120) == [
        ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"],
        ["default-bbbb", "m5.xlarge", "on-demand", "us-east-1b", "ip-2", "False", "2m"],
    ]
    assert set(objects.objects) == {"default-bbbb"}


async def test_a_nodepool_status_is_patched_through_its_status_subresource(kmock: KubernetesEmulator) -> None:
    nodepools = resource("nodewright.io", "v1", "nodepools")
    kmock.objects[nodepools, None, "default"] = {"metadata": {"name": "default"}, "spec": {"weight": 10}}
    configuration = kubernetes.client.Configuration(host=str(kmock.url).rstrip("/"))
    with kubernetes.client.ApiClient(configuration) as api_client:
        objects = KubeClaimObjects(KubeCluster(api_client), api_client)
        status = {"resources": {"cpu": "4", "nodes": "2"}}
        held = await asyncio.to_thread(objects.put_nodepool_status, "default", status)
        missing = await asyncio.to_thread(objects.put_nodepool_status, "karpenter-only", status)

    assert held is True
    assert missing is False
    paths = [(request.method, str(request.url.path)) for request in kmock]
    assert ("PATCH", "/apis/nodewright.io/v1/nodepools/default/status") in paths
    assert kmock.objects[nodepools, None, "default"]["status"] == status
