"""The API server emulator (nodewright.inmemory.apiserver) over real local HTTP.

Faked: kube-apiserver, by `ApiServer` serving an `InMemoryCluster` on a virtual clock. Real: the
HTTP, and on one side the project's Kubernetes adapter (`KubeCluster` built with
`from_cluster_info`, as the Lambdas build it). Observed: what the adapter returns compared with
what the in-memory cluster returns when called directly (the contract test), the cluster after
writes, and raw HTTP responses and watch streams (events, resourceVersions, bookmarks, 410s) read
line by line with `http.client`.
"""

from __future__ import annotations

import base64
import http.client
import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from nodewright.adapters.kube.client import from_cluster_info
from nodewright.adapters.kube.cluster import ACTIVE_PODS, RETRIES, KubeApiError, KubeCluster
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import NODE_CORDONED, POD_EVICTED, InMemoryCluster
from nodewright.model import labels as wk
from nodewright.model.cluster import ClusterInfo
from nodewright.model.pod import Pod
from nodewright.model.snapshot import ClusterSnapshot
from nodewright.model.taints import Taint
from nodewright.model.workloads import DaemonSet, PodDisruptionBudget
from nodewright.ports import ApiUsage
from tests.builders import node, pod

pytestmark = pytest.mark.integration

# Only the PEM marker matters: the server speaks plain HTTP, so the CA file is never used.
FAKE_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
START = 1_767_571_200.0  # 2026-01-05T00:00:00Z
DISRUPTED = Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule")


def budget(name: str, app: str, **spec: Any) -> PodDisruptionBudget:
    return PodDisruptionBudget.parse(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}, **spec},
        }
    )


def running(name: str, node_name: str, app: str, **fields: Any) -> Pod:
    return replace(pod(name, labels={"app": app}, node_name=node_name), **fields)


def active(result: object) -> object:
    """`result` without terminal pods: the adapter lists pods with a field selector that drops
    them, the in-memory cluster's `snapshot` and `pods_on` keep them (every reader ignores them).
    """
    if isinstance(result, ClusterSnapshot):
        return replace(result, pods=tuple(p for p in result.pods if not p.terminal))
    if isinstance(result, list) and all(isinstance(p, Pod) for p in result):
        return [p for p in result if not p.terminal]
    return result


def populated() -> InMemoryCluster:
    """Two nodes; bound pods under one, two and no PDBs; a pending pod under a PDB that allows
    nothing; a finished pod; a daemonset.
    """
    cluster = InMemoryCluster(VirtualClock(START))
    cluster.add_node(node("node-1", provider_id="aws:///us-east-1a/i-0001"))
    cluster.add_node(node("node-2", provider_id="aws:///us-east-1b/i-0002", taints=(Taint("gpu", "NoSchedule"),)))
    cluster.add_pods(
        [
            running("web-1", "node-1", "web"),
            running("web-2", "node-1", "web"),
            running("api-1", "node-1", "api"),
            running("solo-1", "node-2", "solo"),
            running("done-1", "node-2", "batch", phase="Succeeded"),
            pod("pending-1", labels={"app": "queue"}),
        ]
    )
    cluster.add_pdb(budget("web", "web", minAvailable=1))
    cluster.add_pdb(budget("api", "api", minAvailable=1))
    cluster.add_pdb(budget("api-too", "api", maxUnavailable=1))
    cluster.add_pdb(budget("queue", "queue", minAvailable=1))
    cluster.add_daemonset(
        DaemonSet.parse(
            {
                "metadata": {"name": "logs", "namespace": "kube-system"},
                "spec": {
                    "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "50m"}}}]}}
                },
            }
        )
    )
    return cluster


def adapter(server: ApiServer, *, token: str = "token", page_size: int = 2, **kwargs: Any) -> KubeCluster:
    info = ClusterInfo("sim", server.url, FAKE_CA, "1.31")
    return KubeCluster.connect(from_cluster_info(info, lambda: token), page_size=page_size, **kwargs)


@pytest.fixture
def cluster() -> InMemoryCluster:
    return populated()


@pytest.fixture
def server(cluster: InMemoryCluster) -> Iterator[ApiServer]:
    with ApiServer(cluster, bookmark_every=0.2) as running_server:
        yield running_server


# ---------------------------------------------------------------------- raw HTTP


@dataclass
class Answer:
    status: int
    body: Any


def call(server: ApiServer, method: str, path: str, body: Any = None, **headers: str) -> Answer:
    connection = http.client.HTTPConnection(urllib.parse.urlsplit(server.url).netloc, timeout=10)
    try:
        payload = None if body is None else json.dumps(body).encode()
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        return Answer(response.status, json.loads(response.read()))
    finally:
        connection.close()


def get(server: ApiServer, path: str, **params: Any) -> Answer:
    query = urllib.parse.urlencode(params)
    return call(server, "GET", f"{path}?{query}" if query else path)


class Watch:
    """A raw watch request whose events are read one line at a time."""

    def __init__(self, server: ApiServer, path: str, **params: Any) -> None:
        self.connection = http.client.HTTPConnection(urllib.parse.urlsplit(server.url).netloc, timeout=10)
        self.connection.request("GET", f"{path}?{urllib.parse.urlencode({'watch': 'true', **params})}")
        self.response = self.connection.getresponse()
        self.status = self.response.status

    def next(self) -> dict[str, Any] | None:
        """The next event, or None once the server ended the stream."""
        line = self.response.readline()
        return json.loads(line) if line.strip() else None

    def rest(self) -> list[dict[str, Any]]:
        """Every event until the server ends the stream."""
        events = []
        while (event := self.next()) is not None:
            events.append(event)
        return events

    def close(self) -> None:
        self.connection.close()


def replayed(server: ApiServer, path: str, **params: Any) -> list[dict[str, Any]]:
    """The events a watch sends before its first bookmark: everything that happened before it
    opened (asked with bookmarks, so no test waits for a watch's timeout).
    """
    watch = Watch(server, path, allowWatchBookmarks="true", timeoutSeconds=10, **params)
    events = []
    try:
        while (event := watch.next()) is not None and event["type"] != "BOOKMARK":
            events.append(event)
    finally:
        watch.close()
    return events


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def names(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


# ---------------------------------------------------------------------- the contract


def _evict(key: str, *, uid: str | None = None) -> Callable[[Any, InMemoryCluster], object]:
    def evict(port: Any, cluster: InMemoryCluster) -> object:
        stored = cluster.get_pod(key)
        namespace, _, name = key.partition("/")
        target = stored or Pod(namespace, name)
        return port.evict(target if uid is None else replace(target, uid=uid))

    return evict


CONTRACT: list[Any] = [
    pytest.param(lambda port, c: port.snapshot(), id="snapshot"),
    pytest.param(lambda port, c: port.pods_on("node-1"), id="pods_on"),
    pytest.param(lambda port, c: port.pods_on("node-2"), id="pods_on-a-node-with-a-finished-pod"),
    pytest.param(lambda port, c: (port.get_node("node-2"), port.get_node("node-9")), id="get_node"),
    pytest.param(lambda port, c: port.node_by_instance("i-0002"), id="node_by_instance"),
    pytest.param(lambda port, c: port.cordon("node-1", DISRUPTED), id="cordon-with-taint"),
    pytest.param(lambda port, c: (port.cordon("node-1"), port.cordon("node-1", DISRUPTED)), id="cordon-twice"),
    pytest.param(lambda port, c: port.cordon("node-9", DISRUPTED), id="cordon-missing-node"),
    pytest.param(
        lambda port, c: (port.cordon("node-2", DISRUPTED), port.uncordon("node-2", DISRUPTED.key)), id="uncordon"
    ),
    pytest.param(lambda port, c: port.uncordon("node-2", "gpu"), id="uncordon-removes-another-taint"),
    pytest.param(lambda port, c: port.uncordon("node-1"), id="uncordon-a-schedulable-node"),
    pytest.param(_evict("default/solo-1"), id="evict-unprotected"),
    pytest.param(
        lambda port, c: [_evict("default/web-1")(port, c), _evict("default/web-2")(port, c)], id="evict-pdb-429"
    ),
    pytest.param(_evict("default/api-1"), id="evict-two-pdbs-500"),
    pytest.param(_evict("default/pending-1"), id="evict-pending-ignores-pdbs"),
    pytest.param(_evict("default/nobody"), id="evict-missing-404"),
    pytest.param(_evict("default/solo-1", uid="uid-other"), id="evict-uid-mismatch-409"),
    pytest.param(lambda port, c: (port.delete_node("node-2"), port.delete_node("node-9")), id="delete_node"),
]


@pytest.mark.parametrize("operation", CONTRACT)
def test_the_adapter_over_http_answers_as_the_in_memory_cluster_does(
    operation: Callable[[Any, InMemoryCluster], object],
) -> None:
    direct = populated()
    expected = operation(direct, direct)

    served = populated()
    with ApiServer(served) as server:
        got = operation(adapter(server), served)
        assert active(got) == active(expected)
        assert served.snapshot() == direct.snapshot()
        assert [(c.kind, c.name, c.node, c.pods, c.message) for c in served.changes] == [
            (c.kind, c.name, c.node, c.pods, c.message) for c in direct.changes
        ]
        # ... and what the server serves is the cluster as it now is.
        assert adapter(server).snapshot() == active(served.snapshot())


def test_a_following_adapter_catches_up_with_every_change_through_watches(
    cluster: InMemoryCluster, server: ApiServer
) -> None:
    kube = adapter(server)
    kube.follow(30)
    try:
        assert kube.snapshot() == active(cluster.snapshot())
        with server.lock:
            cluster.bind("default/pending-1", "node-2")
            cluster.add_pod(pod("pending-2"))
            cluster.set_pod_phase("default/web-1", "Failed")
            cluster.remove_node("node-1")
            cluster.remove_pdb("default", "api-too")
        barrier = {kind: server.latest(kind) for kind in ("nodes", "pods", "daemonsets", "poddisruptionbudgets")}
        assert kube.seen(barrier, timeout=10)
        assert kube.snapshot() == active(cluster.snapshot())
        assert [p.key for p in kube.pending()] == ["default/pending-2"]
    finally:
        kube.close()
    # One LIST per kind (pages of 2: 5 active pods, 4 PDBs), then watches only.
    lists = {u.resource: u.requests for u in server.usage() if u.verb == "list"}
    assert lists == {"daemonsets": 1, "nodes": 1, "poddisruptionbudgets": 2, "pods": 3}


def test_a_following_adapter_converges_while_another_thread_churns_the_cluster_past_the_history() -> None:
    cluster = populated()
    with ApiServer(cluster, history=20, bookmark_every=0.05) as server:
        kube = adapter(server, page_size=50)
        kube.follow(30)
        try:
            kube.pending()  # synced

            def churn() -> None:
                for i in range(300):
                    with server.lock:
                        added = cluster.add_pod(pod(f"churn-{i}"))
                        if i % 3:
                            cluster.bind(added, f"node-{1 + i % 2}")
                        if i % 5 == 0:
                            cluster.remove_pod(added)

            writer = threading.Thread(target=churn)
            writer.start()
            writer.join()
            barrier = {kind: server.latest(kind) for kind in ("nodes", "pods", "daemonsets", "poddisruptionbudgets")}
            assert kube.seen(barrier, timeout=20)
            assert kube.snapshot() == active(cluster.snapshot())
        finally:
            kube.close()


def test_an_error_the_cluster_injects_reaches_the_adapter_as_its_status(
    cluster: InMemoryCluster, server: ApiServer
) -> None:
    # Every attempt fails: a 500 is transient, so the adapter sends it RETRIES more times first.
    cluster.fail_next("delete_node", times=RETRIES + 1)
    with pytest.raises(KubeApiError, match=r"delete node node-1: HTTP 500: SimulatedApiError"):
        adapter(server, sleep=lambda seconds: None).delete_node("node-1")
    assert cluster.get_node("node-1") is not None


def test_a_wrong_bearer_token_is_refused_with_401(cluster: InMemoryCluster) -> None:
    with ApiServer(cluster, tokens={"right"}) as server:
        with pytest.raises(KubeApiError, match="HTTP 401"):
            adapter(server, token="wrong").get_node("node-1")
        assert adapter(server, token="right").get_node("node-1") == cluster.get_node("node-1")
        server.tokens = {"rotated"}
        assert get(server, "/api/v1/nodes").status == 401


# ---------------------------------------------------------------------- lists


def test_objects_that_exist_at_start_are_served_each_with_its_resource_version(server: ApiServer) -> None:
    answer = get(server, "/api/v1/nodes")
    assert answer.status == 200
    assert answer.body["kind"] == "NodeList"
    assert [n["metadata"]["name"] for n in answer.body["items"]] == ["node-1", "node-2"]
    versions = [rv(n) for n in answer.body["items"]]
    assert versions == sorted(set(versions))
    assert rv(answer.body) == server.revision() >= max(versions)
    assert server.latest("node") == server.latest("nodes") > 0


def test_a_paged_list_is_one_consistent_read_at_the_first_pages_revision(
    cluster: InMemoryCluster, server: ApiServer
) -> None:
    first = get(server, "/api/v1/pods", limit=2)
    assert [p["metadata"]["name"] for p in first.body["items"]] == ["api-1", "done-1"]
    assert first.body["metadata"]["remainingItemCount"] == 4
    with server.lock:
        cluster.remove_pod("default/web-2")
        cluster.add_pod(pod("zzz-1"))
    rest = []
    token = first.body["metadata"]["continue"]
    while token:
        page = get(server, "/api/v1/pods", limit=2, **{"continue": token})
        assert rv(page.body) == rv(first.body)
        rest += [p["metadata"]["name"] for p in page.body["items"]]
        token = page.body["metadata"].get("continue")
    assert rest == ["pending-1", "solo-1", "web-1", "web-2"]
    fresh = get(server, "/api/v1/pods")
    assert "continue" not in fresh.body["metadata"]
    assert "zzz-1" in [p["metadata"]["name"] for p in fresh.body["items"]]
    assert rv(fresh.body) > rv(first.body)


def test_a_continue_token_older_than_the_history_answers_410_expired(cluster: InMemoryCluster) -> None:
    with ApiServer(cluster, history=1) as server:
        first = get(server, "/api/v1/pods", limit=2)
        with server.lock:
            cluster.set_pod_phase("default/web-1", "Failed")
            cluster.set_pod_phase("default/web-2", "Failed")
        expired = get(server, "/api/v1/pods", limit=2, **{"continue": first.body["metadata"]["continue"]})
    assert expired.status == 410
    assert (expired.body["kind"], expired.body["reason"], expired.body["code"]) == ("Status", "Expired", 410)


def test_lists_filter_by_field_selector_as_the_api_server_does(server: ApiServer) -> None:
    def listed(**params: Any) -> list[str]:
        return [p["metadata"]["name"] for p in get(server, "/api/v1/pods", **params).body["items"]]

    assert listed(fieldSelector=ACTIVE_PODS) == ["api-1", "pending-1", "solo-1", "web-1", "web-2"]
    assert listed(fieldSelector=f"{ACTIVE_PODS},spec.nodeName=node-2") == ["solo-1"]
    assert listed(fieldSelector="spec.nodeName==node-1,metadata.name!=web-1") == ["api-1", "web-2"]
    assert listed(fieldSelector="spec.nodeName=") == ["pending-1"]
    unsupported = get(server, "/api/v1/pods", fieldSelector="spec.priority=1")
    assert (unsupported.status, unsupported.body["message"]) == (400, "field label not supported: spec.priority")
    namespaced = get(server, "/apis/apps/v1/namespaces/kube-system/daemonsets")
    assert [d["metadata"]["name"] for d in namespaced.body["items"]] == ["logs"]
    assert get(server, "/apis/apps/v1/namespaces/default/daemonsets").body["items"] == []


def test_unknown_paths_answer_a_404_status(server: ApiServer) -> None:
    for path in ("/api/v1/secrets", "/apis/batch/v1/jobs", "/api/v1/nodes/node-1/proxy", "/"):
        answer = get(server, path)
        assert answer.status == 404, path
        assert (answer.body["kind"], answer.body["reason"]) == ("Status", "NotFound")
    missing = get(server, "/api/v1/nodes/node-9")
    assert (missing.status, missing.body["message"]) == (404, 'nodes "node-9" not found')


def test_dress_makes_served_manifests_fuller_without_touching_the_model(cluster: InMemoryCluster) -> None:
    def dress(kind: str, manifest: dict[str, Any]) -> dict[str, Any]:
        manifest["metadata"]["managedFields"] = [{"manager": "kubelet", "operation": "Update"}]
        if kind == "pod":
            manifest["spec"]["containers"][0]["env"] = [{"name": "LOG_LEVEL", "value": "info"}]
        return manifest

    with ApiServer(cluster, dress=dress) as server:
        served = get(server, "/api/v1/namespaces/default/pods/web-1").body
        assert served["metadata"]["managedFields"][0]["manager"] == "kubelet"
        assert served["spec"]["containers"][0]["env"] == [{"name": "LOG_LEVEL", "value": "info"}]
        assert Pod.parse(served) == cluster.get_pod("default/web-1")
        assert adapter(server).snapshot() == active(cluster.snapshot())


# ---------------------------------------------------------------------- watches


def test_a_watch_replays_the_kinds_events_after_a_resource_version_then_ends_at_its_timeout(
    cluster: InMemoryCluster, server: ApiServer
) -> None:
    listed = rv(get(server, "/api/v1/pods").body)
    with server.lock:
        cluster.add_pod(pod("new-1"))
        cluster.bind("default/new-1", "node-2")
        cluster.add_node(node("node-3"))  # another kind: not in this watch
        cluster.remove_pod("default/new-1")
    started = time.monotonic()
    watch = Watch(server, "/api/v1/pods", resourceVersion=listed, timeoutSeconds=1)
    events = watch.rest()
    elapsed = time.monotonic() - started
    assert watch.status == 200
    assert names(events) == [("ADDED", "new-1"), ("MODIFIED", "new-1"), ("DELETED", "new-1")]
    assert events[1]["object"]["spec"]["nodeName"] == "node-2"
    versions = [rv(e["object"]) for e in events]
    assert listed < versions[0] < versions[1] < versions[2] == server.latest("pods")
    assert 0.9 <= elapsed < 5


def test_a_watch_delivers_live_events_as_they_happen(cluster: InMemoryCluster, server: ApiServer) -> None:
    watch = Watch(server, "/api/v1/nodes", resourceVersion=server.revision(), timeoutSeconds=5)

    def later() -> None:
        time.sleep(0.1)
        with server.lock:
            cluster.cordon("node-2", DISRUPTED)

    threading.Thread(target=later).start()
    event = watch.next()
    watch.close()
    assert event is not None
    assert event["type"] == "MODIFIED"
    assert event["object"]["spec"]["unschedulable"] is True
    assert rv(event["object"]) == server.latest("node")


def test_a_watch_without_a_resource_version_starts_with_the_current_objects(server: ApiServer) -> None:
    events = replayed(server, "/apis/policy/v1/poddisruptionbudgets")
    assert names(events) == [("ADDED", "api"), ("ADDED", "api-too"), ("ADDED", "queue"), ("ADDED", "web")]
    assert [e["object"]["status"] for e in events] == [{"disruptionsAllowed": n} for n in (0, 1, 0, 1)]


def test_bookmarks_come_at_the_interval_and_as_the_watch_ends(server: ApiServer) -> None:
    events = Watch(
        server,
        "/apis/apps/v1/daemonsets",
        resourceVersion=server.revision(),
        allowWatchBookmarks="true",
        timeoutSeconds=1,
    ).rest()
    assert len(events) >= 4
    assert {e["type"] for e in events} == {"BOOKMARK"}
    assert events[-1]["object"] == {
        "kind": "DaemonSet",
        "apiVersion": "apps/v1",
        "metadata": {"resourceVersion": str(server.revision())},
    }


def test_a_resource_version_older_than_the_history_answers_200_then_an_expired_error(
    cluster: InMemoryCluster,
) -> None:
    with ApiServer(cluster, history=2, bookmark_every=0.2) as server:
        before = server.revision()
        with server.lock:
            for name in ("web-1", "web-2", "api-1"):
                cluster.set_pod_phase(f"default/{name}", "Failed")
        watch = Watch(server, "/api/v1/pods", resourceVersion=before, timeoutSeconds=5)
        events = watch.rest()
        recent = replayed(server, "/api/v1/pods", resourceVersion=server.latest("pods") - 1)
    assert watch.status == 200
    assert [e["type"] for e in events] == ["ERROR"]
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    assert status["message"].startswith(f"too old resource version: {before} (")
    assert names(recent) == [("MODIFIED", "api-1")]


def test_a_field_selected_watch_sees_deleted_when_a_pod_stops_matching(
    cluster: InMemoryCluster, server: ApiServer
) -> None:
    since = server.revision()
    with server.lock:
        cluster.set_pod_phase("default/web-1", "Succeeded")  # stops matching: DELETED
        cluster.set_pod_phase("default/done-1", "Failed")  # never matched: nothing
        cluster.bind("default/pending-1", "node-1")  # still matches: MODIFIED
        cluster.add_pod(replace(pod("late-1"), phase="Succeeded"))  # never matched: nothing
    watch = Watch(server, "/api/v1/pods", resourceVersion=since, fieldSelector=ACTIVE_PODS, allowWatchBookmarks="true")
    selected = [watch.next(), watch.next(), watch.next()]
    watch.close()
    changes = [e for e in selected if e and e["type"] != "BOOKMARK"]
    assert names(changes) == [("DELETED", "web-1"), ("MODIFIED", "pending-1")]
    assert changes[0]["object"]["status"]["phase"] == "Succeeded"
    # The dropped events are covered by a bookmark at once, so the client's version is the latest.
    bookmark = selected[2]
    assert bookmark is not None
    assert bookmark["type"] == "BOOKMARK"
    assert rv(bookmark["object"]) >= server.latest("pods")

    on_node = replayed(server, "/api/v1/pods", resourceVersion=since, fieldSelector="spec.nodeName=node-1")
    assert names(on_node) == [("MODIFIED", "web-1"), ("ADDED", "pending-1")]


def test_a_pdb_is_modified_when_a_pod_change_moves_its_disruptions_allowed(
    cluster: InMemoryCluster, server: ApiServer
) -> None:
    since = server.revision()
    assert adapter(server).evict(cluster.get_pod("default/web-1") or pod()).outcome == "evicted"
    events = replayed(server, "/apis/policy/v1/poddisruptionbudgets", resourceVersion=since)
    assert [(e["type"], e["object"]["metadata"]["name"], e["object"]["status"]) for e in events] == [
        ("MODIFIED", "web", {"disruptionsAllowed": 0})
    ]
    assert rv(events[0]["object"]) == server.latest("pdb") > server.latest("pod")


def test_stopping_the_server_ends_open_watches(cluster: InMemoryCluster) -> None:
    server = ApiServer(cluster)
    server.start()
    watch = Watch(server, "/api/v1/nodes", resourceVersion=server.revision())
    started = time.monotonic()
    stopper = threading.Timer(0.1, server.stop)
    stopper.start()
    assert watch.rest() == []
    stopper.join()
    assert time.monotonic() - started < 5
    assert cluster.listeners == []


def test_a_watch_whose_client_went_away_ends(server: ApiServer) -> None:
    watch = Watch(server, "/api/v1/nodes", resourceVersion=server.revision(), timeoutSeconds=60)
    assert server.watching == 1
    watch.close()
    end = time.monotonic() + 5
    while server.watching and time.monotonic() < end:
        time.sleep(0.05)
    assert server.watching == 0


# ---------------------------------------------------------------------- writes


def test_a_patch_with_a_stale_resource_version_is_a_conflict(server: ApiServer) -> None:
    current = get(server, "/api/v1/nodes/node-1").body
    stale = {"metadata": {"resourceVersion": str(rv(current) - 1)}, "spec": {"unschedulable": True}}
    conflict = call(server, "PATCH", "/api/v1/nodes/node-1", stale, **{"Content-Type": "application/merge-patch+json"})
    assert (conflict.status, conflict.body["reason"]) == (409, "Conflict")
    fresh = {"metadata": {"resourceVersion": str(rv(current))}, "spec": {"unschedulable": True}}
    patched = call(server, "PATCH", "/api/v1/nodes/node-1", fresh, **{"Content-Type": "application/merge-patch+json"})
    assert patched.status == 200
    assert patched.body["spec"]["unschedulable"] is True
    assert rv(patched.body) > rv(current)
    unknown = call(server, "PATCH", "/api/v1/nodes/node-1", {}, **{"Content-Type": "text/plain"})
    assert (unknown.status, unknown.body["reason"]) == (415, "UnsupportedMediaType")


def test_a_patch_of_labels_and_a_lone_taint_reaches_the_cluster(cluster: InMemoryCluster, server: ApiServer) -> None:
    body = {
        "metadata": {"labels": {"team": "a"}},
        "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}, {"key": "x", "effect": "NoExecute"}]},
    }
    answer = call(server, "PATCH", "/api/v1/nodes/node-2", body, **{"Content-Type": "application/merge-patch+json"})
    assert answer.status == 200
    stored = cluster.get_node("node-2")
    assert stored is not None
    assert stored.taints == (Taint("gpu", "NoSchedule"), Taint("x", "NoExecute"))
    assert stored.labels["team"] == "a"
    assert not stored.unschedulable
    bad = {"spec": {"taints": [{"key": "x", "effect": "Sometimes"}]}}
    refused = call(server, "PATCH", "/api/v1/nodes/node-2", bad, **{"Content-Type": "application/merge-patch+json"})
    assert refused.status == 422


def test_eviction_answers_with_kube_apiserver_statuses(cluster: InMemoryCluster, server: ApiServer) -> None:
    def evict(name: str, uid: str | None = None) -> Answer:
        body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
        if uid is not None:
            body["deleteOptions"] = {"preconditions": {"uid": uid}}
        return call(server, "POST", f"/api/v1/namespaces/default/pods/{name}/eviction", body)

    evicted = evict("web-1")
    assert (evicted.status, evicted.body["status"]) == (201, "Success")
    refused = evict("web-2")
    assert (refused.status, refused.body["reason"]) == (429, "TooManyRequests")
    assert refused.body["message"].startswith("Cannot evict pod as it would violate the pod's disruption budget.")
    assert refused.body["details"]["causes"][0]["reason"] == "DisruptionBudget"
    several = evict("api-1")
    assert (several.status, several.body["reason"]) == (500, "InternalError")
    assert "more than one PodDisruptionBudget" in several.body["message"]
    assert evict("nobody").status == 404
    assert evict("solo-1", uid="uid-other").status == 409
    assert evict("solo-1", uid=(cluster.get_pod("default/solo-1") or pod()).uid).status == 201
    assert [c.name for c in cluster.changes_of(POD_EVICTED)] == ["default/web-1", "default/solo-1"]
    assert call(server, "GET", "/api/v1/namespaces/default/pods/web-1/eviction").status == 405


def test_a_deleted_node_takes_its_pods_with_it_in_the_watch(cluster: InMemoryCluster, server: ApiServer) -> None:
    since = server.revision()
    assert call(server, "DELETE", "/api/v1/nodes/node-2").status == 200
    assert call(server, "DELETE", "/api/v1/nodes/node-2").status == 404
    pods = replayed(server, "/api/v1/pods", resourceVersion=since)
    nodes = replayed(server, "/api/v1/nodes", resourceVersion=since)
    assert names(pods) == [("DELETED", "done-1"), ("DELETED", "solo-1")]
    assert names(nodes) == [("DELETED", "node-2")]
    assert rv(nodes[0]["object"]) > rv(pods[-1]["object"])
    assert cluster.get_node("node-2") is None


def test_cordon_over_http_is_logged_by_the_cluster_as_a_cordon(cluster: InMemoryCluster, server: ApiServer) -> None:
    adapter(server).cordon("node-1", DISRUPTED)
    assert [(c.name, c.message) for c in cluster.changes_of(NODE_CORDONED)] == [("node-1", str(DISRUPTED))]
    assert [c.method for c in cluster.calls] == ["cordon"]


# ---------------------------------------------------------------------- accounting


def test_usage_counts_requests_and_bytes_by_verb_and_resource_watches_included(server: ApiServer) -> None:
    listed = get(server, "/api/v1/nodes")
    got = get(server, "/api/v1/nodes/node-1")
    streamed = Watch(server, "/api/v1/nodes", timeoutSeconds=1).rest()
    usage = {(u.verb, u.resource): u for u in server.usage()}
    assert usage[("list", "nodes")] == ApiUsage("list", "nodes", 1, len(json.dumps(listed.body, separators=(",", ":"))))
    assert usage[("get", "nodes")].requests == 1
    assert usage[("get", "nodes")].bytes == len(json.dumps(got.body, separators=(",", ":")))
    watch = usage[("watch", "nodes")]
    assert watch.requests == 1
    assert watch.bytes == sum(len(json.dumps(e, separators=(",", ":"))) + 1 for e in streamed)
