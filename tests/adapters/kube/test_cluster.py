"""The Kubernetes cluster adapter over real HTTP, with the real kubernetes client.

Faked: the API server, by `ApiServer` (tests/adapters/kube/emulator.py: kmock's emulator plus
paging, field selectors, node resourceVersions, the eviction subresource and bearer tokens).
Observed: what `KubeCluster` returns, the objects the server holds afterwards, and every request
the client sent (path, params, headers, body). The client is synchronous, so each call runs in a
worker thread while the emulator serves on the event loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from kmock import Request

from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import ACTIVE_PODS, KubeApiError, KubeCluster, parse_timestamp
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model.cluster import ClusterInfo
from nodewright.model.pod import Pod
from nodewright.model.taints import Taint
from nodewright.ports import Cluster, Eviction
from tests.adapters.kube.emulator import BUDGET_REFUSES, DAEMONSETS, NODES, PDBS, PODS, ApiServer

pytestmark = [pytest.mark.integration, pytest.mark.asyncio, pytest.mark.kmock(cls=ApiServer)]

T = TypeVar("T")
# A syntactically valid PEM; the emulator speaks plain HTTP, so it is written but never used.
FAKE_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
DISRUPTING = Taint("karpenter.sh/disrupted", "NoSchedule")


class Tokens:
    """A token source stand-in: hands out `tokens` in turn, moving on after each invalidate()."""

    def __init__(self, *tokens: str) -> None:
        self.tokens = list(tokens)
        self.invalidated = 0

    def __call__(self) -> str:
        return self.tokens[min(self.invalidated, len(self.tokens) - 1)]

    def invalidate(self) -> None:
        self.invalidated += 1


def node_manifest(name: str, *, taints: list[dict[str, str]] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "creationTimestamp": "2025-03-01T10:00:00Z",
            "labels": {"kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": "us-east-1a"},
        },
        "spec": {"providerID": f"aws:///us-east-1a/i-{name}", "taints": taints or [], **spec},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "58"},
            "allocatable": {"cpu": "3920m", "memory": "15Gi", "pods": "58"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_manifest(name: str, *, namespace: str = "default", node: str = "", phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": {"app": "web"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-5d8f", "controller": True}],
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "web", "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}}],
        },
        "status": {"phase": phase},
    }


def daemonset_manifest(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"template": {"spec": {"containers": [{"name": name, "resources": {"requests": {"cpu": "50m"}}}]}}},
    }


def pdb_manifest(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"disruptionsAllowed": 1},
    }


def adapter(server: ApiServer, tokens: Tokens | None = None, **kwargs: Any) -> KubeCluster:
    tokens = tokens or Tokens("token-1")
    info = ClusterInfo("test", str(server.url).rstrip("/"), FAKE_CA, "1.31")
    kwargs.setdefault("on_unauthorized", tokens.invalidate)
    return KubeCluster.connect(from_cluster_info(info, tokens), **kwargs)


async def run(call: Callable[[], T]) -> T:
    return await asyncio.to_thread(call)


def sent(server: ApiServer) -> list[Request]:
    return list(server)


def paths(server: ApiServer) -> list[str]:
    return [f"{r.method.value} {r.url.path}" for r in server]


# ---------------------------------------------------------------------- reading


async def test_a_snapshot_reads_nodes_then_pods_then_daemonsets_then_pdbs(kmock: ApiServer) -> None:
    kmock.add(NODES, node_manifest("node-a"))
    kmock.add(PODS, pod_manifest("web-1", node="node-a"))
    kmock.add(PODS, pod_manifest("pending-1", phase="Pending"))
    kmock.add(DAEMONSETS, daemonset_manifest("aws-node"))
    kmock.add(PDBS, pdb_manifest("web"))

    snapshot = await run(adapter(kmock).snapshot)

    assert paths(kmock) == [
        "GET /api/v1/nodes",
        "GET /api/v1/pods",
        "GET /apis/apps/v1/daemonsets",
        "GET /apis/policy/v1/poddisruptionbudgets",
    ]
    (node,) = snapshot.nodes
    assert (node.name, node.ready, node.instance_id) == ("node-a", True, "i-node-a")
    assert node.created_at == parse_timestamp("2025-03-01T10:00:00Z") == 1740823200.0
    assert [(p.key, p.node_name) for p in snapshot.pods] == [("default/pending-1", ""), ("default/web-1", "node-a")]
    assert snapshot.pods[1].requests == Pod.parse(pod_manifest("web-1", node="node-a")).requests
    assert [(d.namespace, d.name) for d in snapshot.daemonsets] == [("kube-system", "aws-node")]
    assert [(b.name, b.disruptions_allowed) for b in snapshot.pdbs] == [("web", 1)]


async def test_pods_are_listed_with_a_field_selector_that_drops_terminal_pods(kmock: ApiServer) -> None:
    kmock.add(PODS, pod_manifest("done", phase="Succeeded"))
    kmock.add(PODS, pod_manifest("crashed", phase="Failed"))
    kmock.add(PODS, pod_manifest("running"))

    snapshot = await run(adapter(kmock).snapshot)

    pod_lists = [r for r in kmock if r.url.path == "/api/v1/pods"]
    assert [r.params.get("fieldSelector") for r in pod_lists] == [ACTIVE_PODS]
    assert ACTIVE_PODS == "status.phase!=Succeeded,status.phase!=Failed"
    assert [p.name for p in snapshot.pods] == ["running"]


async def test_every_list_is_paged_with_limit_and_follows_continue_to_the_end(kmock: ApiServer) -> None:
    for i in range(5):
        kmock.add(PODS, pod_manifest(f"web-{i}"))
    for i in range(3):
        kmock.add(NODES, node_manifest(f"node-{i}"))

    snapshot = await run(adapter(kmock, page_size=2).snapshot)

    assert [p.name for p in snapshot.pods] == [f"web-{i}" for i in range(5)]
    assert [n.name for n in snapshot.nodes] == ["node-0", "node-1", "node-2"]
    pod_pages = [r.params for r in kmock if r.url.path == "/api/v1/pods"]
    assert [p["limit"] for p in pod_pages] == ["2", "2", "2"]
    assert "continue" not in pod_pages[0]
    assert pod_pages[1]["continue"]
    assert pod_pages[2]["continue"] != pod_pages[1]["continue"]
    assert all(p["fieldSelector"] == ACTIVE_PODS for p in pod_pages)
    assert len([r for r in kmock if r.url.path == "/api/v1/nodes"]) == 2


async def test_a_list_whose_continue_token_expired_starts_over_once(kmock: ApiServer) -> None:
    for i in range(3):
        kmock.add(PODS, pod_manifest(f"web-{i}"))
    kmock.expire_continue = 1

    snapshot = await run(adapter(kmock, page_size=2).snapshot)

    assert [p.name for p in snapshot.pods] == ["web-0", "web-1", "web-2"]
    pod_pages = [r.params for r in kmock if r.url.path == "/api/v1/pods"]
    assert ["continue" in p for p in pod_pages] == [False, True, False, True]


async def test_a_list_whose_continue_token_keeps_expiring_raises_naming_the_list(kmock: ApiServer) -> None:
    for i in range(3):
        kmock.add(PODS, pod_manifest(f"web-{i}"))
    kmock.expire_continue = 2

    with pytest.raises(KubeApiError, match="list pods: HTTP 410"):
        await run(adapter(kmock, page_size=2).snapshot)


async def test_an_empty_cluster_has_an_empty_snapshot(kmock: ApiServer) -> None:
    snapshot = await run(adapter(kmock).snapshot)

    assert (snapshot.nodes, snapshot.pods, snapshot.daemonsets, snapshot.pdbs) == ((), (), (), ())


async def test_an_object_the_model_cannot_read_is_named_in_the_error(kmock: ApiServer) -> None:
    broken = pod_manifest("broken")
    broken["spec"]["tolerations"] = [{"key": "a", "operator": "Sometimes"}]
    kmock.add(PODS, broken)

    with pytest.raises(ValueError, match=r"list pods: cannot read default/broken: tolerations\[0\]\.operator"):
        await run(adapter(kmock).snapshot)


async def test_get_node_reads_one_node_and_returns_none_for_a_missing_one(kmock: ApiServer) -> None:
    kmock.add(NODES, node_manifest("node-a", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]))
    cluster = adapter(kmock)

    node = await run(lambda: cluster.get_node("node-a"))
    missing = await run(lambda: cluster.get_node("node-z"))

    assert node is not None
    assert node.taints == (Taint("dedicated", "NoSchedule", "gpu"),)
    assert node.created_at == 1740823200.0
    assert missing is None


async def test_node_by_instance_matches_the_provider_id(kmock: ApiServer) -> None:
    kmock.add(NODES, node_manifest("node-a", providerID="aws:///us-east-1a/i-0aaa"))
    kmock.add(NODES, node_manifest("node-b", providerID="aws:///us-east-1b/i-0bbb"))
    cluster = adapter(kmock)

    found = await run(lambda: cluster.node_by_instance("i-0bbb"))
    missing = await run(lambda: cluster.node_by_instance("i-0ccc"))

    assert found is not None
    assert found.name == "node-b"
    assert missing is None


async def test_pods_on_a_node_are_read_with_a_node_name_field_selector(kmock: ApiServer) -> None:
    kmock.add(PODS, pod_manifest("web-1", node="node-a"))
    kmock.add(PODS, pod_manifest("web-2", node="node-b"))
    kmock.add(PODS, pod_manifest("done", node="node-a", phase="Succeeded"))

    pods = await run(lambda: adapter(kmock).pods_on("node-a"))

    assert [p.name for p in pods] == ["web-1"]
    selectors = [r.params.get("fieldSelector") for r in kmock if r.url.path == "/api/v1/pods"]
    assert selectors == [f"{ACTIVE_PODS},spec.nodeName=node-a"]


# ---------------------------------------------------------------------- authentication


async def test_every_request_carries_the_current_bearer_token(kmock: ApiServer) -> None:
    kmock.tokens = {"token-1"}

    await run(adapter(kmock, Tokens("token-1")).snapshot)

    assert {r.headers["Authorization"] for r in kmock} == {"Bearer token-1"}


async def test_a_401_invalidates_the_token_and_retries_once_with_a_fresh_one(kmock: ApiServer) -> None:
    kmock.add(NODES, node_manifest("node-a"))
    kmock.tokens = {"fresh"}
    tokens = Tokens("stale", "fresh")

    snapshot = await run(adapter(kmock, tokens).snapshot)

    assert [n.name for n in snapshot.nodes] == ["node-a"]
    assert tokens.invalidated == 1
    assert [(r.url.path, r.headers["Authorization"]) for r in kmock][:3] == [
        ("/api/v1/nodes", "Bearer stale"),
        ("/api/v1/nodes", "Bearer fresh"),
        ("/api/v1/pods", "Bearer fresh"),
    ]


async def test_a_401_after_the_retry_raises_naming_the_call(kmock: ApiServer) -> None:
    kmock.tokens = {"never-issued"}
    tokens = Tokens("stale", "also-stale")

    with pytest.raises(KubeApiError, match="list nodes: HTTP 401: Unauthorized") as raised:
        await run(adapter(kmock, tokens).snapshot)

    assert raised.value.status == 401
    assert tokens.invalidated == 1
    assert len(sent(kmock)) == 2


async def test_without_an_unauthorized_callback_a_401_is_not_retried(kmock: ApiServer) -> None:
    kmock.tokens = {"fresh"}

    with pytest.raises(KubeApiError, match="read node node-a: HTTP 401"):
        await run(lambda: adapter(kmock, Tokens("stale"), on_unauthorized=None).get_node("node-a"))

    assert len(sent(kmock)) == 1


async def test_an_unmapped_api_error_raises_with_the_servers_message(kmock: ApiServer) -> None:
    kmock["get /api/v1/nodes"] << 403 << {"kind": "Status", "code": 403, "message": 'nodes is forbidden: no "list"'}

    with pytest.raises(KubeApiError, match='list nodes: HTTP 403: nodes is forbidden: no "list"'):
        await run(adapter(kmock).snapshot)


# ---------------------------------------------------------------------- cordon and uncordon


def patches(server: ApiServer) -> list[Request]:
    return [r for r in server if r.method == "PATCH"]


async def test_cordon_sets_unschedulable_and_adds_the_taint_in_one_guarded_merge_patch(kmock: ApiServer) -> None:
    kmock.add(NODES, node_manifest("node-a", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]))
    before = kmock.stored(NODES, "node-a")
    assert before is not None
    version = before["metadata"]["resourceVersion"]

    await run(lambda: adapter(kmock).cordon("node-a", DISRUPTING))

    (patch,) = patches(kmock)
    assert patch.headers["Content-Type"] == "application/merge-patch+json"
    assert json.loads(patch.body) == {
        "metadata": {"resourceVersion": version},
        "spec": {
            "unschedulable": True,
            "taints": [
                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"},
            ],
        },
    }
    stored = kmock.stored(NODES, "node-a")
    assert stored is not None
    assert stored["spec"]["unschedulable"] is True


async def test_cordon_without_a_taint_only_marks_the_node_unschedulable(kmock: ApiServer) -> None:
    kmock.add(NODES, node_manifest("node-a"))
    cluster = adapter(kmock)

    await run(lambda: cluster.cordon("node-a"))
    node = await run(lambda: cluster.get_node("node-a"))

    assert node is not None
    assert (node.unschedulable, node.taints) == (True, ())


async def test_cordon_replaces_a_taint_with_the_same_key_and_effect(kmock: ApiServer) -> None:
    kmock.add(
        NODES,
        node_manifest("node-a", taints=[{"key": "karpenter.sh/disrupted", "value": "old", "effect": "NoSchedule"}]),
    )

    await run(lambda: adapter(kmock).cordon("node-a", DISRUPTING))

    stored = kmock.stored(NODES, "node-a")
    assert stored is not None
    assert stored["spec"]["taints"] == [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]


async def test_cordoning_a_cordoned_node_sends_no_patch(kmock: ApiServer) -> None:
    kmock.add(NODES, node_manifest("node-a", taints=[DISRUPTING.to_manifest()], unschedulable=True))

    await run(lambda: adapter(kmock).cordon("node-a", DISRUPTING))

    assert paths(kmock) == ["GET /api/v1/nodes/node-a"]


async def test_cordon_recomputes_after_a_concurrent_change_and_keeps_it(kmock: ApiServer) -> None:
    kmock.add(NODES, node_manifest("node-a"))
    other = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}
    kmock.concurrent_patches["node-a"] = [{"spec": {"taints": [other]}}]

    await run(lambda: adapter(kmock).cordon("node-a", DISRUPTING))

    assert paths(kmock) == ["GET /api/v1/nodes/node-a", "PATCH /api/v1/nodes/node-a"] * 2
    stored = kmock.stored(NODES, "node-a")
    assert stored is not None
    assert stored["spec"]["taints"] == [other, DISRUPTING.to_manifest()]


async def test_cordon_and_uncordon_of_a_missing_node_are_no_ops(kmock: ApiServer) -> None:
    cluster = adapter(kmock)

    await run(lambda: cluster.cordon("node-z", DISRUPTING))
    await run(lambda: cluster.uncordon("node-z", DISRUPTING.key))

    assert paths(kmock) == ["GET /api/v1/nodes/node-z"] * 2


async def test_uncordon_removes_every_taint_with_the_key_and_clears_unschedulable(kmock: ApiServer) -> None:
    taints = [
        {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"},
        {"key": "karpenter.sh/disrupted", "effect": "NoExecute"},
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    ]
    kmock.add(NODES, node_manifest("node-a", taints=taints, unschedulable=True))
    cluster = adapter(kmock)

    await run(lambda: cluster.uncordon("node-a", "karpenter.sh/disrupted"))
    node = await run(lambda: cluster.get_node("node-a"))

    assert node is not None
    assert (node.unschedulable, node.taints) == (False, (Taint("dedicated", "NoSchedule", "gpu"),))
    stored = kmock.stored(NODES, "node-a")
    assert stored is not None
    assert "unschedulable" not in stored["spec"]


async def test_uncordoning_a_schedulable_node_without_the_taint_sends_no_patch(kmock: ApiServer) -> None:
    kmock.add(NODES, node_manifest("node-a"))

    await run(lambda: adapter(kmock).uncordon("node-a", "karpenter.sh/disrupted"))

    assert patches(kmock) == []


async def test_cordon_and_uncordon_leave_the_node_as_the_in_memory_cluster_does(kmock: ApiServer) -> None:
    manifest = node_manifest("node-a", taints=[{"key": "karpenter.sh/disrupted", "value": "x", "effect": "NoSchedule"}])
    kmock.add(NODES, json.loads(json.dumps(manifest)))
    kube = adapter(kmock)
    memory = InMemoryCluster()
    kube_node = await run(lambda: kube.get_node("node-a"))
    assert kube_node is not None
    memory.add_node(kube_node)

    def steps(cluster: Cluster) -> list[tuple[bool, tuple[Taint, ...]]]:
        seen = []
        for verb, taint in (
            ("cordon", DISRUPTING),
            ("cordon", DISRUPTING),
            ("uncordon", DISRUPTING),
            ("cordon", None),
            ("uncordon", None),
        ):
            if verb == "cordon":
                cluster.cordon("node-a", taint)
            else:
                cluster.uncordon("node-a", taint.key if taint else None)
            node = cluster.get_node("node-a")
            assert node is not None
            seen.append((node.unschedulable, node.taints))
        return seen

    assert await run(lambda: steps(kube)) == steps(memory)


# ---------------------------------------------------------------------- eviction


@pytest.mark.parametrize(
    ("setup", "uid", "outcome", "message"),
    [
        pytest.param(lambda s: None, "uid-web-1", "evicted", "", id="accepted"),
        pytest.param(
            lambda s: s.blocked.add("default/web-1"), "uid-web-1", "blocked", BUDGET_REFUSES + " (429)", id="pdb-429"
        ),
        pytest.param(
            lambda s: s.multiple_budgets.add("default/web-1"),
            "uid-web-1",
            "blocked",
            "more than one PodDisruptionBudget",
            id="several-pdbs-500",
        ),
        pytest.param(lambda s: None, "uid-of-an-older-pod", "gone", "Precondition failed", id="uid-409"),
    ],
)
async def test_eviction_outcomes_follow_the_api_servers_answer(
    kmock: ApiServer, setup: Callable[[ApiServer], None], uid: str, outcome: str, message: str
) -> None:
    kmock.add(PODS, pod_manifest("web-1", node="node-a"))
    setup(kmock)
    pod = Pod("default", "web-1", uid=uid)

    eviction = await run(lambda: adapter(kmock).evict(pod))

    assert (eviction.pod, eviction.outcome) == ("default/web-1", outcome)
    assert message in eviction.message
    assert (kmock.stored(PODS, "web-1", "default") is None) == (outcome == "evicted")
    (request,) = sent(kmock)
    assert f"{request.method.value} {request.url.path}" == "POST /api/v1/namespaces/default/pods/web-1/eviction"
    assert request.data == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web-1", "namespace": "default"},
        "deleteOptions": {"preconditions": {"uid": uid}},
    }


async def test_evicting_a_pod_that_no_longer_exists_counts_it_as_gone(kmock: ApiServer) -> None:
    eviction = await run(lambda: adapter(kmock).evict(Pod("default", "web-9")))

    assert eviction == Eviction("default/web-9", "gone", 'pods "web-9" not found (404)')
    assert "deleteOptions" not in sent(kmock)[0].data


async def test_an_evicted_pod_is_missing_from_the_next_snapshot(kmock: ApiServer) -> None:
    kmock.add(PODS, pod_manifest("web-1", node="node-a"))
    kmock.add(PODS, pod_manifest("web-2", node="node-a"))
    cluster = adapter(kmock)
    before = await run(cluster.snapshot)

    await run(lambda: cluster.evict(before.pods[0]))

    assert [p.name for p in (await run(cluster.snapshot)).pods] == ["web-2"]


# ---------------------------------------------------------------------- deleting nodes


async def test_delete_node_deletes_it_and_a_missing_node_counts_as_deleted(kmock: ApiServer) -> None:
    kmock.add(NODES, node_manifest("node-a"))
    cluster = adapter(kmock)

    await run(lambda: cluster.delete_node("node-a"))
    await run(lambda: cluster.delete_node("node-a"))

    assert kmock.stored(NODES, "node-a") is None
    assert paths(kmock) == ["DELETE /api/v1/nodes/node-a"] * 2
