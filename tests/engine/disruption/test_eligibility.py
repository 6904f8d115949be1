"""Which nodes a pass may touch, and in which order: every reason a node is left alone is reported,
eviction costs follow Karpenter's formula, and candidates go in order of savings per disruption cost.

Faked: nothing; each case builds a small cluster (`World`) and runs the real `compute_commands`.
Observed: `rejected` and `eligible`, and which node a single-node consolidation picks first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nodewright.engine.disruption import eviction_cost
from nodewright.model import labels as wk
from nodewright.model.node import Node
from nodewright.model.selectors import LabelSelector
from nodewright.model.standby import STANDBY_LABEL
from nodewright.model.taints import Taint
from nodewright.model.workloads import PodDisruptionBudget
from tests.builders import pod
from tests.engine.disruption.scenario import HOUR, NOW, World, only, pool


def world_with_node() -> World:
    """One lightly used node `n` (its pod fits on `other`), which consolidation would delete."""
    world = World()
    world.node("n", "m5.xlarge")
    world.put("n", 1, cpu="500m", labels={"app": "web"})
    world.node("other", "m5.xlarge")
    world.put("other", 2, cpu="1", labels={"app": "web"}, annotations={wk.DO_NOT_DISRUPT: "true"})
    return world


def no_claim(w: World) -> None:
    w.claims = [c for c in w.claims if c.node_name != "n"]


def no_pool_label(w: World) -> None:
    labels = {k: v for k, v in w.nodes[0].labels.items() if k not in (wk.NODEPOOL, wk.NW_NODEPOOL)}
    w.edit_node("n", labels=labels)


def pool_gone(w: World) -> None:
    w.edit_claim("n", nodepool="retired")


def pdb(w: World, **fields: Any) -> None:
    w.pdbs.append(PodDisruptionBudget("default", "web", LabelSelector((("app", "web"),)), **fields))


def two_pdbs(w: World) -> None:
    pdb(w, max_unavailable=1)
    w.pdbs.append(PodDisruptionBudget("default", "all", LabelSelector(()), max_unavailable=5))


def pod_do_not_disrupt(w: World) -> None:
    w.put("n", 1, cpu="100m", annotations={wk.DO_NOT_DISRUPT: "true"})


def young_pod(w: World) -> None:
    w.pools = [pool(after=600.0)]
    w.put("n", 1, cpu="100m", created_at=NOW - 60)


CASES: list[tuple[str, Callable[[World], None], dict[str, object], str]] = [
    ("no-claim", no_claim, {}, "not managed by Nodewright"),
    ("no-nodepool-label", no_pool_label, {}, "not managed by Nodewright"),
    ("nodepool-gone", pool_gone, {}, "NodePool retired no longer exists"),
    ("node-deleting", lambda w: w.edit_node("n", deleting=True), {}, "already being deleted"),
    ("claim-deleting", lambda w: w.edit_claim("n", state="deleting"), {}, "already being deleted"),
    ("not-initialized", lambda w: w.edit_claim("n", state="registered"), {}, "not initialized yet"),
    ("not-ready", lambda w: w.edit_node("n", ready=False), {}, "not ready"),
    (
        "standby-warming",
        lambda w: w.edit_node("n", labels={**w.nodes[0].labels, STANDBY_LABEL: "default.warm"}),
        {},
        "a standby instance of CapacityBuffer default.warm",
    ),
    ("in-progress", lambda w: None, {"in_progress": frozenset({"n"})}, "already part of a running"),
    (
        "interruption-cordoned",
        lambda w: w.edit_node("n", taints=(Taint(wk.DISRUPTED_TAINT_KEY, "NoSchedule", wk.DISRUPTED_REPLACE),)),
        {},
        "the interruption function has cordoned it",
    ),
    (
        "node-do-not-disrupt",
        lambda w: w.edit_node("n", annotations={wk.DO_NOT_DISRUPT: "true"}),
        {},
        "node is annotated karpenter.sh/do-not-disrupt",
    ),
    ("pod-do-not-disrupt", pod_do_not_disrupt, {}, "is annotated karpenter.sh/do-not-disrupt"),
    ("nominated-recently", lambda w: None, {"nominated": {"n": NOW - 5}}, "nominated it 5s ago"),
    ("pdb-allows-none", lambda w: pdb(w, min_available=3), {}, "PodDisruptionBudget default/web allows no"),
    ("pdb-reports-none", lambda w: pdb(w, max_unavailable=1, disruptions_allowed=0), {}, "allows no disruption"),
    ("two-pdbs", two_pdbs, {}, "more than one PodDisruptionBudget"),
    ("inside-consolidate-after", young_pod, {}, "consolidateAfter is 10m"),
    ("consolidate-after-never", lambda w: setattr(w, "pools", [pool(after=None)]), {}, "consolidateAfter: Never"),
    (
        "when-empty-policy",
        lambda w: setattr(w, "pools", [pool(policy="WhenEmpty")]),
        {},
        "consolidates only empty nodes",
    ),
]


@pytest.mark.parametrize(("change", "fields", "reason"), [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_a_node_that_may_not_be_disrupted_is_left_alone_with_a_reason(
    change: Callable[[World], None], fields: dict[str, object], reason: str
) -> None:
    world = world_with_node()
    change(world)

    result = world.run(**fields)

    assert all("n" not in c.candidates for c in result.commands)
    assert reason in result.rejected["n"]


def test_the_unchanged_node_is_deleted_and_counted_eligible() -> None:
    result = world_with_node().run()

    assert only(result).candidates == ("n",)
    assert result.eligible == 1  # `other` holds a do-not-disrupt pod
    assert "do-not-disrupt" in result.rejected["other"]


def test_a_nomination_older_than_the_window_does_not_protect_the_node() -> None:
    result = world_with_node().run(nominated={"n": NOW - 30})

    assert only(result).candidates == ("n",)


def test_a_pdb_with_room_lets_the_node_go() -> None:
    world = world_with_node()
    pdb(world, max_unavailable=1)

    assert only(world.run()).candidates == ("n",)


def test_nodes_that_are_not_ours_are_never_candidates() -> None:
    world = world_with_node()
    world.nodes.append(Node("managed-node-group-1", labels={wk.HOSTNAME: "managed-node-group-1"}, ready=True))

    result = world.run()

    assert "not managed" in result.rejected["managed-node-group-1"]


@pytest.mark.parametrize(
    ("annotations", "priority", "cost"),
    [
        pytest.param({}, 0, 1.0, id="plain"),
        pytest.param({"controller.kubernetes.io/pod-deletion-cost": str(2**27)}, 0, 2.0, id="deletion-cost"),
        pytest.param({}, 2**25, 2.0, id="priority"),
        pytest.param({}, 1_000_000_000, 10.0, id="clamped-high"),
        pytest.param({}, -2_000_000_000, -10.0, id="clamped-low"),
        pytest.param({"controller.kubernetes.io/pod-deletion-cost": "lots"}, 0, 1.0, id="malformed-ignored"),
    ],
)
def test_eviction_cost_follows_karpenters_formula(annotations: dict[str, str], priority: int, cost: float) -> None:
    assert eviction_cost(pod(annotations=annotations, priority=priority)) == pytest.approx(cost)


def test_single_node_consolidation_takes_the_most_savings_per_disruption_first() -> None:
    world = World(pools=[pool(budgets=())])
    # Same price, same room needed elsewhere; `cheap-pods` holds pods that cost little to evict.
    for name in ("costly-pods", "cheap-pods"):
        world.node(name, "m5.xlarge")
    world.put("costly-pods", 2, cpu="500m", priority=2**25 * 4)
    world.put("cheap-pods", 2, cpu="500m")
    world.node("full", "m5.xlarge")
    world.put("full", 3, cpu="1")

    command = only(world.run(opts={"many_to_many": False, "max_candidates": 1}))

    assert command.candidates == ("cheap-pods",)
    assert "beyond max_candidates" in world.run(opts={"max_candidates": 1}).rejected["costly-pods"]


def test_a_node_about_to_expire_costs_less_to_disrupt() -> None:
    world = World(pools=[pool(expire_after=100 * HOUR)])
    world.node("young", "m5.xlarge", age=HOUR)
    world.node("old", "m5.xlarge", age=90 * HOUR)
    for name in ("young", "old"):
        world.put(name, 1, cpu="500m")
    world.node("full", "m5.xlarge")
    world.put("full", 3, cpu="1")

    assert only(world.run(opts={"max_candidates": 1})).candidates == ("old",)
