"""Validation: a command computed on one snapshot is re-checked against fresh state before it runs,
and dropped with a reason when anything it relied on changed.

Faked: nothing; a command is computed with the real `compute_commands`, the world is changed the way
a cluster changes in 15 seconds, and the real `validate` judges the command against the new input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from nodewright.engine.disruption import validate
from nodewright.model import labels as wk
from nodewright.model.nodepool import Budget, template_hash
from tests.builders import instance_type
from tests.engine.disruption.scenario import NOW, World, only, pool

ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]


def consolidation_world() -> World:
    """`big` (m5.2xlarge, $0.384/h) is replaced by a c5.large ($0.085/h)."""
    world = World(pools=[pool(requirements=ON_DEMAND)])
    world.node("big", "m5.2xlarge")
    world.put("big", 2, cpu="500m", labels={"app": "web"})
    return world


def add_pod(w: World) -> None:
    w.put("big", 1, cpu="100m")


def remove_pod(w: World) -> None:
    w.pods = w.pods[1:]


def do_not_disrupt(w: World) -> None:
    w.pods = [replace(p, annotations={wk.DO_NOT_DISRUPT: "true"}) if p.name == "big-p0" else p for p in w.pods]


def dearer_catalog(w: World) -> None:
    # The c5.large now costs more than the m5.large: the plan would use an m5.large instead.
    w.types = tuple(
        instance_type("c5.large", cpu="2", memory="4Gi", price=0.2) if t.name == "c5.large" else t for t in w.types
    )


def pricier_than_the_node(w: World) -> None:
    w.types = tuple(
        replace(t, offerings=tuple(replace(o, price=1.0) for o in t.offerings)) if t.name != "m5.2xlarge" else t
        for t in w.types
    )


def budget_zero(w: World) -> None:
    w.pools = [pool(requirements=ON_DEMAND, budgets=(Budget("0"),))]


def policy_when_empty(w: World) -> None:
    w.pools = [pool(requirements=ON_DEMAND, policy="WhenEmpty")]


STALE: list[tuple[str, Callable[[World], None], dict[str, Any], str]] = [
    ("candidate-gone", lambda w: setattr(w, "nodes", []), {}, "candidate big is gone"),
    ("candidate-deleting", lambda w: w.edit_node("big", deleting=True), {}, "already being deleted"),
    ("pod-added", add_pod, {}, "the pods on the candidates changed (added ['default/big-p2']"),
    ("pod-gone", remove_pod, {}, "gone ['default/big-p0']"),
    ("now-nominated", lambda w: None, {"nominated": {"big": NOW + 10}}, "nominated it"),
    ("do-not-disrupt-pod", do_not_disrupt, {}, "karpenter.sh/do-not-disrupt"),
    (
        "do-not-disrupt-node",
        lambda w: w.edit_node("big", annotations={wk.DO_NOT_DISRUPT: "true"}),
        {},
        "do-not-disrupt",
    ),
    ("budget-closed", budget_zero, {}, "budgets allow 0 Underutilized disruption(s) now; the command needs 1"),
    ("policy-changed", policy_when_empty, {}, "no longer consolidates"),
    ("replacement-dearer", dearer_catalog, {}, "the replacement is no longer as cheap"),
    ("no-longer-cheaper", pricier_than_the_node, {}, "no longer worth it"),
    (
        "replacement-offering-blocked",
        lambda w: None,
        {"blocked": frozenset({("on-demand", "c5.large", z) for z in ("us-east-1a", "us-east-1b", "us-east-1c")})},
        "no longer as cheap",
    ),
]


@pytest.mark.parametrize(("change", "fields", "why"), [pytest.param(*c[1:], id=c[0]) for c in STALE])
def test_a_stale_consolidation_command_is_rejected_with_the_reason(
    change: Callable[[World], None], fields: dict[str, Any], why: str
) -> None:
    world = consolidation_world()
    command = only(world.run())
    change(world)

    reason = validate(command, world.input(now=NOW + 15, **fields))

    assert reason is not None
    assert why in reason


def test_an_unchanged_command_is_still_valid_15_seconds_later() -> None:
    world = consolidation_world()
    command = only(world.run())

    assert validate(command, world.input(now=NOW + 15)) is None


def test_the_commands_own_candidates_being_in_progress_do_not_make_it_stale() -> None:
    world = consolidation_world()
    command = only(world.run())

    assert validate(command, world.input(now=NOW + 15, in_progress=frozenset({"big"}))) is None


def test_an_empty_node_that_got_a_pod_is_no_longer_empty() -> None:
    world = World()
    world.node("e", "m5.large")
    command = only(world.run())
    assert command.method == "emptiness"
    world.put("e", 1, cpu="100m")

    assert "the pods on the candidates changed" in (validate(command, world.input(now=NOW + 15)) or "")


def test_a_node_that_is_no_longer_drifted_is_kept() -> None:
    base = pool(policy="WhenEmpty")
    world = World(pools=[replace(base, labels={"team": "b"})])
    world.node("n", "m5.xlarge", claim_fields={"template_hash": template_hash(base)})
    world.put("n", 1, cpu="1")
    command = only(world.run())
    assert command.method == "drift"
    world.pools = [base]

    assert validate(command, world.input(now=NOW + 15)) == "candidate n has not drifted any more"


def test_an_expiration_ignores_budgets_but_not_a_vanished_node() -> None:
    world = World(pools=[pool(expire_after=3600.0, budgets=(Budget("0"),))])
    world.node("old", "m5.xlarge", age=7200)
    world.put("old", 1, cpu="1")
    command = only(world.run())
    assert command.method == "expiration"

    assert validate(command, world.input(now=NOW + 15)) is None
    world.nodes = []
    assert validate(command, world.input(now=NOW + 15)) == "candidate old is gone"


def test_a_blocked_offering_type_is_still_an_offering_for_other_zones() -> None:
    # Blocking one zone of the replacement's type leaves the plan as cheap: still valid.
    world = consolidation_world()
    command = only(world.run())
    blocked = frozenset({("on-demand", "c5.large", "us-east-1b")})

    assert validate(command, world.input(now=NOW + 15, blocked=blocked)) is None
