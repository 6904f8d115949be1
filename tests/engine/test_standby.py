"""Standby capacity's decisions (engine.standby, pure): chunks, refill, which stopped node to start, staleness."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodewright.engine.standby import as_capacity, chunk_pods, match, refill, stale_reason
from nodewright.model import labels as wk
from nodewright.model.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.model.node import Node
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import template_hash
from nodewright.model.standby import STANDBY_CAPACITY, STANDBY_LABEL, STANDBY_TAINT
from tests.builders import node, node_pool, pod

TEMPLATE = PodTemplate("chunk", "default", pod("chunk", cpu="1", memory="2Gi"))
STANDBY = CapacityBuffer("warm", pod_template_ref="chunk", replicas=3, provisioning_strategy=STANDBY_CAPACITY)


def stopped(name: str, cpu: str = "4") -> Node:
    return node(
        name,
        cpu=cpu,
        memory="16Gi",
        labels={STANDBY_LABEL: "default.warm", wk.CAPACITY_TYPE: "on-demand"},
        taints=(STANDBY_TAINT,),
        ready=False,
        unschedulable=True,
    )


def test_a_standby_buffers_chunks_ask_for_on_demand_and_an_active_buffer_has_none() -> None:
    active = CapacityBuffer("room", pod_template_ref="chunk", replicas=2)

    found = chunk_pods([STANDBY, active], [TEMPLATE], [])

    assert [p.name for p in found.pods] == ["warm-buffer-0", "warm-buffer-1", "warm-buffer-2"]
    assert all(p.node_selector[wk.CAPACITY_TYPE] == "on-demand" for p in found.pods)
    assert found.problems == {}


def test_as_capacity_sees_a_stopped_node_ready_schedulable_and_untainted() -> None:
    seen = as_capacity(stopped("s-1"))

    assert seen.ready
    assert not seen.unschedulable
    assert STANDBY_TAINT not in seen.taints
    assert not seen.failed


def test_refill_counts_the_chunks_a_standby_node_holds_and_names_the_surplus() -> None:
    chunks = chunk_pods([replace(STANDBY, replicas=6)], [TEMPLATE], []).pods
    # 4-cpu nodes hold 3 one-cpu chunks each (allocatable is what the builder gives); one node is
    # not enough, and a third would hold nothing.
    one = refill(chunks, [stopped("s-1")], [])
    three = refill(chunks[:3], [stopped("s-1"), stopped("s-2")], [])

    assert len(one.unplaced) == 2
    assert one.surplus == ()
    assert three.unplaced == ()
    assert three.surplus == ("s-2",)


def test_pending_pods_go_to_running_nodes_first_and_start_only_the_stopped_nodes_they_need() -> None:
    running = node("running", cpu="1", memory="4Gi")
    pending = [pod(f"p-{i}", cpu="900m", memory="1Gi") for i in range(3)]

    chosen = match(pending, [running], [stopped("s-1"), stopped("s-2")], [])

    # One pod fits the running node; the other two fit one stopped node: only that one starts.
    assert list(chosen) == ["s-1"]
    assert len(chosen["s-1"]) == 2


def test_pods_fill_the_largest_stopped_node_first_so_the_fewest_start() -> None:
    pending = [pod(f"p-{i}", cpu="1", memory="1Gi") for i in range(2)]

    # The small node is listed (and named) first: first-fit in that order would start both.
    chosen = match(pending, [], [stopped("a-small", cpu="1500m"), stopped("b-large", cpu="4")], [])

    assert list(chosen) == ["b-large"]
    assert len(chosen["b-large"]) == 2


def test_a_pod_that_no_stopped_node_can_take_starts_nothing() -> None:
    spot_only = pod("spot", cpu="1", node_selector={wk.CAPACITY_TYPE: "spot"})
    too_big = pod("big", cpu="8", memory="1Gi")

    assert match([spot_only, too_big], [], [stopped("s-1")], []) == {}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("none", None),
        ("template", "drifted: NodePool default's template changed since the node was launched"),
        ("image", "drifted: EC2NodeClass default no longer resolves to ami-old (now ami-new)"),
        ("expiry", "it reached NodePool default's expireAfter"),
        ("pool-gone", "its NodePool default no longer exists"),
    ],
)
def test_a_stopped_instance_is_stale_when_drifted_expired_or_pool_gone(change: str, expected: str | None) -> None:
    pool = node_pool("default", expire_after=3600.0)
    claim = NodeClaim(
        "c-1", "default", state="standby", template_hash=template_hash(pool), image_id="ami-old", created_at=100.0
    )
    images = {"default": frozenset({"ami-old"})}
    now = 200.0
    if change == "template":
        pool = replace(pool, labels={"team": "web"})
    elif change == "image":
        images = {"default": frozenset({"ami-new"})}
    elif change == "expiry":
        now = 3700.0

    why = stale_reason(stopped("s-1"), claim, None if change == "pool-gone" else pool, images, now)

    assert why == expected
