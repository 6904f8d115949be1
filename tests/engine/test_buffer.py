"""How many chunks a CapacityBuffer keeps room for, and its virtual pods (engine.buffer, pure)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodewright.engine.buffer import LOWEST_PRIORITY, buffer_pods, chunks, is_virtual
from nodewright.model.capacitybuffer import BUFFER_LABEL, CapacityBuffer, PodTemplate, ScalableRef
from nodewright.model.resources import Resources
from tests.builders import pod

CHUNK = pod("chunk", cpu="500m", memory="1Gi", labels={"app": "web"})
WORKLOAD = ScalableRef("Deployment", "web", "apps")


@pytest.mark.parametrize(
    ("buffer", "current", "expected"),
    [
        pytest.param(CapacityBuffer("b", pod_template_ref="t", replicas=5), 0, 5, id="replicas"),
        pytest.param(CapacityBuffer("b", scalable_ref=WORKLOAD, percentage=20), 10, 2, id="percentage"),
        pytest.param(CapacityBuffer("b", scalable_ref=WORKLOAD, percentage=20), 11, 3, id="percentage-rounds-up"),
        pytest.param(CapacityBuffer("b", scalable_ref=WORKLOAD, percentage=1), 3, 1, id="percentage-at-least-one"),
        pytest.param(CapacityBuffer("b", scalable_ref=WORKLOAD, percentage=0), 3, 0, id="percentage-zero"),
        pytest.param(
            CapacityBuffer("b", scalable_ref=WORKLOAD, replicas=4, percentage=50), 10, 5, id="both-the-larger"
        ),
        pytest.param(
            CapacityBuffer("b", pod_template_ref="t", replicas=10, limits=Resources.parse({"cpu": "2"})),
            0,
            4,
            id="limits-cap",
        ),
        pytest.param(
            CapacityBuffer("b", pod_template_ref="t", limits=Resources.parse({"cpu": "3", "memory": "2Gi"})),
            0,
            2,
            id="limits-only",
        ),
    ],
)
def test_chunks_follow_the_capacitybuffer_api(buffer: CapacityBuffer, current: int, expected: int) -> None:
    assert chunks(buffer, CHUNK, current) == expected


def test_virtual_pods_copy_the_template_at_the_lowest_priority_and_carry_the_buffer_labels() -> None:
    found = buffer_pods(
        [CapacityBuffer("burst", "default", pod_template_ref="chunk", replicas=2)],
        [PodTemplate("chunk", "default", CHUNK)],
        [],
    )
    assert [p.key for p in found.pods] == ["default/burst-buffer-0", "default/burst-buffer-1"]
    assert all(is_virtual(p) and p.priority == LOWEST_PRIORITY and not p.node_name for p in found.pods)
    assert all(
        p.labels == {"app": "web", BUFFER_LABEL: "burst", "autoscaling.x-k8s.io/buffer-namespace": "default"}
        for p in found.pods
    )
    assert found.pods[0].requests == CHUNK.requests


def test_a_workload_buffer_counts_only_the_workloads_live_pods() -> None:
    mine = [
        replace(
            pod(f"web-abc-{i}", cpu="1", labels={"pod-template-hash": "abc"}),
            owner_kind="ReplicaSet",
            owner_name="web-abc",
        )
        for i in range(4)
    ]
    other = replace(
        pod("webhook-x-0", cpu="1", labels={"pod-template-hash": "x"}), owner_kind="ReplicaSet", owner_name="webhook-x"
    )
    gone = replace(mine[0], name="web-abc-9", deleting=True)
    found = buffer_pods([CapacityBuffer("b", scalable_ref=WORKLOAD, percentage=50)], [], [*mine, other, gone])
    assert len(found.pods) == 2
    assert found.pods[0].requests == mine[0].requests


def test_a_buffer_without_its_template_or_workload_says_why() -> None:
    found = buffer_pods(
        [
            CapacityBuffer("a", pod_template_ref="missing", replicas=1),
            CapacityBuffer("b", scalable_ref=WORKLOAD, replicas=1),
            CapacityBuffer("c", pod_template_ref="t", replicas=1, provisioning_strategy="example.com/other"),
        ],
        [],
        [],
    )
    assert found.pods == ()
    assert dict(found.problems) == {
        "default/a": "PodTemplate default/missing is not in the configuration",
        "default/b": "no live pod of Deployment default/web to take the chunk's shape from",
        "default/c": "provisioningStrategy example.com/other is not Nodewright's to act on",
    }
