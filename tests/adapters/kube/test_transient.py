"""Transient API failures, over real HTTP: the adapter sends the request again instead of failing
the caller's whole step, and still fails fast on answers that are not transient.

Faked: the API server (the project's emulator over the in-memory cluster), whose `fault` hook
answers chosen requests with an error status or hangs up on them. Real: the kubernetes client,
HTTP on 127.0.0.1, the adapter. Observed: what the cluster holds afterwards, the adapter's
`retried` counts and the waits it asked for (a recording `sleep`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nodewright.adapters.kube.cluster import MAX_RETRY_AFTER, RETRIES, KubeApiError, KubeCluster
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import POD_EVICTED, InMemoryCluster
from tests.builders import node, pod
from tests.inmemory.test_apiserver import START, adapter, budget

pytestmark = pytest.mark.integration


class Failing:
    """The emulator's fault hook: the next `times` requests of (`verb`, `resource`) get `answer`."""

    def __init__(self, verb: str, resource: str, answer: tuple[int, float | None], times: int) -> None:
        self.target = (verb, resource)
        self.answer = answer
        self.left = times
        self.hit = 0

    def __call__(self, verb: str, resource: str) -> tuple[int, float | None] | None:
        if (verb, resource) != self.target or self.left <= 0:
            return None
        self.left -= 1
        self.hit += 1
        return self.answer


@pytest.fixture
def cluster() -> InMemoryCluster:
    cluster = InMemoryCluster(VirtualClock(START))
    cluster.add_node(node("node-a", cpu="8", memory="32Gi"))
    cluster.add_pods([pod(f"web-{i}", node_name="node-a", labels={"app": "web"}) for i in range(3)])
    return cluster


@pytest.fixture
def server(cluster: InMemoryCluster) -> Iterator[ApiServer]:
    with ApiServer(cluster, bookmark_every=0.2) as running:
        yield running


def kube(server: ApiServer, waits: list[float]) -> KubeCluster:
    return adapter(server, sleep=waits.append, jitter=lambda: 0.5)


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        pytest.param((503, None), 503, id="503"),
        pytest.param((500, None), 500, id="500"),
        pytest.param((504, None), 504, id="504"),
        pytest.param((429, 2.0), 429, id="429-retry-after"),
        pytest.param((0, None), 0, id="no-answer"),
    ],
)
def test_a_cordon_meeting_a_transient_failure_is_sent_again_and_lands(
    server: ApiServer, cluster: InMemoryCluster, answer: tuple[int, float | None], status: int
) -> None:
    server.fault = Failing("patch", "nodes", answer, times=2)
    waits: list[float] = []
    adapter_ = kube(server, waits)

    adapter_.cordon("node-a")

    cordoned = cluster.get_node("node-a")
    assert cordoned is not None
    assert cordoned.unschedulable
    assert adapter_.transport.retried[status] == 2
    assert len(waits) == 2
    if answer[1] is not None:
        assert waits == [answer[1], answer[1]]  # Retry-After is honoured
    assert adapter_.transport.retry_seconds == pytest.approx(sum(waits))


def test_an_eviction_meeting_a_503_is_sent_again_and_evicts(server: ApiServer, cluster: InMemoryCluster) -> None:
    server.fault = Failing("create", "pods/eviction", (503, None), times=1)
    waits: list[float] = []
    target = cluster.get_pod("default/web-0")
    assert target is not None

    result = kube(server, waits).evict(target)

    assert result.outcome == "evicted"
    assert [c.name for c in cluster.changes_of(POD_EVICTED)] == ["default/web-0"]
    assert len(waits) == 1


def test_a_pdb_refusal_is_blocked_at_once_not_retried(server: ApiServer, cluster: InMemoryCluster) -> None:
    cluster.add_pdb(budget("web", "web", maxUnavailable=0))
    waits: list[float] = []
    adapter_ = kube(server, waits)
    target = cluster.get_pod("default/web-0")
    assert target is not None

    result = adapter_.evict(target)

    assert result.outcome == "blocked"
    assert waits == []
    assert not adapter_.transport.retried


def test_a_failure_that_outlasts_the_retries_raises_naming_the_call(server: ApiServer) -> None:
    server.fault = Failing("list", "pods", (503, None), times=RETRIES + 1)
    waits: list[float] = []
    adapter_ = kube(server, waits)

    with pytest.raises(KubeApiError, match="list pods: HTTP 503") as raised:
        adapter_.pods_on("node-a")

    assert raised.value.status == 503
    assert len(waits) == RETRIES


def test_a_long_retry_after_is_capped(server: ApiServer, cluster: InMemoryCluster) -> None:
    # A PATCH: urllib3 itself honours Retry-After on GETs (uncapped), never on PATCH or POST.
    server.fault = Failing("patch", "nodes", (429, 600.0), times=1)
    waits: list[float] = []

    kube(server, waits).cordon("node-a")

    assert waits == [MAX_RETRY_AFTER]


def test_an_error_that_is_not_transient_is_not_retried(server: ApiServer) -> None:
    server.fault = Failing("list", "pods", (501, None), times=1)
    waits: list[float] = []

    with pytest.raises(KubeApiError, match="HTTP 501"):
        kube(server, waits).pods_on("node-a")

    assert waits == []
