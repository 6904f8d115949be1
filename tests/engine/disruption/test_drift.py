"""Drift: a changed NodePool template, an AMI the EC2NodeClass no longer resolves to, or a label the
NodePool's requirements no longer allow make a node drifted; drifted nodes are replaced one at a
time (empty ones deleted together) within the "Drifted" budgets. The template hash ignores what
does not make a node stale.

Faked: nothing; each case builds a small cluster (`World`) and runs the real `compute_commands`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from nodewright.model import labels as wk
from nodewright.model.nodepool import Budget, Disruption, NodeClassRef, template_hash
from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.resources import Resources
from nodewright.model.taints import Taint
from tests.engine.disruption.scenario import World, only, pool

# Consolidation would replace these nodes by cheaper spot ones; only drift is under test here.
BASE = pool(policy="WhenEmpty")


def drift_world(claim: dict[str, Any] | None = None, **node: Any) -> World:
    world = World()
    world.node("n", "m5.xlarge", claim_fields={"template_hash": template_hash(BASE), **(claim or {})}, **node)
    world.put("n", 3, cpu="1")
    return world


def requires(w: World, key: str, operator: str, *values: str) -> None:
    w.pools = [replace(BASE, requirements=Requirements([Requirement.new(key, operator, values)]))]


CASES: list[tuple[str, dict[str, Any], Callable[[World], None], dict[str, Any], str | None]] = [
    ("unchanged", {}, lambda w: None, {}, None),
    (
        "template-labels-changed",
        {},
        lambda w: setattr(w, "pools", [replace(BASE, labels={"team": "b"})]),
        {},
        "template changed",
    ),
    (
        "template-taints-changed",
        {},
        lambda w: setattr(w, "pools", [replace(BASE, taints=(Taint("dedicated", "PreferNoSchedule"),))]),
        {},
        "template changed",
    ),
    (
        "claim-without-hash",
        {"template_hash": ""},
        lambda w: setattr(w, "pools", [replace(BASE, labels={"x": "y"})]),
        {},
        None,
    ),
    (
        "ami-still-resolved",
        {"image_id": "ami-1"},
        lambda w: None,
        {"images": {"default": frozenset({"ami-1", "ami-2"})}},
        None,
    ),
    (
        "ami-replaced",
        {"image_id": "ami-1"},
        lambda w: None,
        {"images": {"default": frozenset({"ami-2"})}},
        "no longer resolves to ami-1",
    ),
    ("ami-unknown-on-claim", {}, lambda w: None, {"images": {"default": frozenset({"ami-2"})}}, None),
    ("nodeclass-not-resolved", {"image_id": "ami-1"}, lambda w: None, {}, None),
    (
        "capacity-type-no-longer-allowed",
        {},
        lambda w: requires(w, wk.CAPACITY_TYPE, "In", "spot"),
        {},
        "on-demand no longer meets",
    ),
    ("family-from-instance-type", {}, lambda w: requires(w, wk.INSTANCE_FAMILY, "In", "c5"), {}, "instance-family=m5"),
    ("family-still-allowed", {}, lambda w: requires(w, wk.INSTANCE_FAMILY, "In", "c5", "m5"), {}, None),
    ("zone-excluded", {}, lambda w: requires(w, wk.ZONE, "NotIn", "us-east-1a"), {}, "zone=us-east-1a"),
    ("custom-label-missing", {}, lambda w: requires(w, "team", "In", "a"), {}, "has no team label"),
    ("well-known-label-unknown", {}, lambda w: requires(w, wk.INSTANCE_GPU_COUNT, "In", "1"), {}, None),
]


@pytest.mark.parametrize(
    ("claim", "change", "fields", "why"), [pytest.param(c[1], c[2], c[3], c[4], id=c[0]) for c in CASES]
)
def test_drift_is_detected_from_template_image_and_requirements(
    claim: dict[str, Any], change: Callable[[World], None], fields: dict[str, Any], why: str | None
) -> None:
    world = drift_world(claim)
    change(world)

    result = world.run(**fields)

    drifts = [c for c in result.commands if c.method == "drift"]
    if why is None:
        assert drifts == []
        return
    (command,) = drifts
    assert command.candidates == ("n",)
    assert command.reason == "Drifted"
    assert why in command.detail
    assert sum(len(r.pods) for r in command.replacements) == 3


def test_a_custom_label_the_node_has_satisfies_the_requirement() -> None:
    world = drift_world(labels={"team": "a"})
    requires(world, "team", "In", "a")

    assert world.run().commands == ()


def test_empty_drifted_nodes_are_deleted_together() -> None:
    # consolidateAfter Never: emptiness leaves them, drift does not.
    world = World(pools=[replace(BASE, labels={"team": "b"}, disruption=Disruption(consolidate_after=None))])
    for name in ("e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e10"):
        world.node(name, "m5.large", claim_fields={"template_hash": template_hash(BASE)})

    command = only(world.run())

    assert command.method == "drift"
    assert len(command.candidates) == 1  # the default budget: 10% of 10 nodes
    assert command.replacements == ()


def test_drift_respects_the_drifted_budget() -> None:
    world = drift_world()
    world.pools = [
        replace(
            BASE, labels={"team": "b"}, disruption=Disruption("WhenEmpty", budgets=(Budget("0", reasons=("Drifted",)),))
        )
    ]

    result = world.run()

    assert [c for c in result.commands if c.method == "drift"] == []
    assert "budgets allow no more Drifted" in result.rejected["n"]


def test_a_drifted_node_whose_pods_have_nowhere_to_go_is_kept() -> None:
    world = World(pools=[replace(BASE, labels={"team": "b"})])
    world.node("n", "m5.xlarge", labels={"disk": "ssd"}, claim_fields={"template_hash": template_hash(BASE)})
    world.put("n", 1, cpu="1", node_selector={"disk": "ssd"})

    result = world.run()

    assert result.commands == ()
    assert "nowhere to go" in result.rejected["n"]


@pytest.mark.parametrize(
    ("change", "same"),
    [
        pytest.param({"weight": 50}, True, id="weight"),
        pytest.param({"limits": Resources.of(cpu="100")}, True, id="limits"),
        pytest.param({"disruption": Disruption(consolidate_after=None)}, True, id="disruption"),
        pytest.param({"expire_after": 3600.0}, True, id="expire-after"),
        pytest.param(
            {"requirements": Requirements([Requirement.new(wk.ARCH, "In", ["arm64"])])}, True, id="requirements"
        ),
        pytest.param({"labels": {"team": "a"}}, False, id="labels"),
        pytest.param({"annotations": {"note": "x"}}, False, id="annotations"),
        pytest.param({"taints": (Taint("gpu", "NoSchedule"),)}, False, id="taints"),
        pytest.param({"startup_taints": (Taint("init", "NoSchedule"),)}, False, id="startup-taints"),
        pytest.param({"node_class_ref": NodeClassRef("other")}, False, id="node-class"),
    ],
)
def test_the_template_hash_changes_only_with_what_makes_a_node_stale(change: dict[str, Any], same: bool) -> None:
    assert (template_hash(replace(BASE, **change)) == template_hash(BASE)) is same
    assert template_hash(BASE) == template_hash(pool(policy="WhenEmpty"))  # stable across equal pools
