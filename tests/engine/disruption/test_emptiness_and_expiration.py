"""Emptiness and expiration: empty nodes go first, within the "Empty" budgets and after
consolidateAfter; nodes past expireAfter are replaced forcefully, whatever the budgets say.

Faked: nothing; each case builds a small cluster (`World`) and runs the real `compute_commands`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from nodewright.model import labels as wk
from nodewright.model.nodepool import Budget
from nodewright.model.selectors import LabelSelector
from nodewright.model.workloads import PodDisruptionBudget
from tests.engine.disruption.scenario import HOUR, NOW, World, only, pool


def full(world: World, name: str = "full") -> None:
    """A node nothing else fits on, so consolidation has nothing to do with it."""
    world.node(name, "c5.large")
    world.put(name, 2, cpu="900m", memory="512Mi")


# -- emptiness -----------------------------------------------------------------------------------------


def daemon_only(w: World) -> None:
    w.put("e", 1, cpu="100m", owner_kind="DaemonSet")


def mirror_only(w: World) -> None:
    w.put("e", 1, cpu="100m", mirror=True)


def finished_only(w: World) -> None:
    (finished,) = w.put("e", 1, cpu="100m")
    w.pods[-1] = replace(finished, phase="Succeeded")


EMPTY_CASES: list[tuple[str, Callable[[World], object], bool]] = [
    ("no-pods", lambda w: None, True),
    ("only-a-daemon-pod", daemon_only, True),
    ("only-a-mirror-pod", mirror_only, True),
    ("only-a-finished-pod", finished_only, True),
    ("a-running-pod", lambda w: w.put("e", 1, cpu="100m"), False),
    ("policy-when-empty", lambda w: setattr(w, "pools", [pool(policy="WhenEmpty")]), True),
    ("consolidate-after-passed", lambda w: setattr(w, "pools", [pool(after=30 * 60.0)]), True),
    ("consolidate-after-not-yet", lambda w: setattr(w, "pools", [pool(after=2 * HOUR)]), False),
    ("consolidate-after-never", lambda w: setattr(w, "pools", [pool(after=None)]), False),
    ("empty-budget-zero", lambda w: setattr(w, "pools", [pool(budgets=(Budget("0", reasons=("Empty",)),))]), False),
    (
        "only-other-reasons-blocked",
        lambda w: setattr(w, "pools", [pool(budgets=(Budget("0", reasons=("Drifted", "Underutilized")),))]),
        True,
    ),
]


@pytest.mark.parametrize(("change", "deleted"), [pytest.param(c[1], c[2], id=c[0]) for c in EMPTY_CASES])
def test_empty_nodes_are_deleted_when_policy_timing_and_budget_allow(
    change: Callable[[World], object], deleted: bool
) -> None:
    world = World()
    world.node("e", "m5.large")
    full(world)
    change(world)

    result = world.run()

    emptied = [c for c in result.commands if c.method == "emptiness"]
    assert bool(emptied) is deleted
    if deleted:
        (command,) = emptied
        assert command.candidates == ("e",)
        assert command.reason == "Empty"
        assert command.replacements == ()
        assert command.savings == pytest.approx(0.096)


def test_emptiness_deletes_the_dearest_empty_nodes_the_budget_allows() -> None:
    world = World(pools=[pool(budgets=(Budget("2"),))])
    world.node("small", "m5.large")
    world.node("big", "m5.2xlarge")
    world.node("medium", "m5.xlarge")
    full(world)

    command = only(world.run())

    assert command.method == "emptiness"
    assert command.candidates == ("big", "medium")
    assert "budgets allow no more Empty" in world.run().rejected["small"]


def test_emptiness_wins_over_consolidation() -> None:
    world = World()
    world.node("e", "m5.large")
    world.node("light", "m5.xlarge")
    world.put("light", 1, cpu="100m")
    full(world)

    assert only(world.run()).method == "emptiness"


def test_nodes_disrupting_already_use_up_the_budget() -> None:
    world = World(pools=[pool(budgets=(Budget("1"),))])
    world.node("e", "m5.large")
    world.node("going", "m5.large")

    result = world.run(in_progress=frozenset({"going"}))

    assert result.commands == ()
    assert "budgets allow no more Empty" in result.rejected["e"]


# -- expiration ----------------------------------------------------------------------------------------


def expiring_world() -> World:
    world = World(pools=[pool(expire_after=24 * HOUR)])
    world.node("old", "m5.xlarge", age=25 * HOUR)
    world.put("old", 2, cpu="1", labels={"app": "web"})
    full(world)
    return world


def pdb_refusing(w: World) -> None:
    w.pdbs.append(PodDisruptionBudget("default", "web", LabelSelector((("app", "web"),)), min_available=2))


EXPIRY_CASES: list[tuple[str, Callable[[World], object], dict[str, object], bool]] = [
    ("past-expire-after", lambda w: None, {}, True),
    ("not-yet", lambda w: w.edit_claim("old", created_at=NOW - 23 * HOUR), {}, False),
    ("never-expires", lambda w: setattr(w, "pools", [pool(expire_after=None)]), {}, False),
    (
        "budget-zero-does-not-stop-it",
        lambda w: setattr(w, "pools", [pool(expire_after=24 * HOUR, budgets=(Budget("0"),))]),
        {},
        True,
    ),
    ("pdb-refusing-does-not-stop-it", pdb_refusing, {}, True),
    ("recent-nomination-does-not-stop-it", lambda w: None, {"nominated": {"old": NOW - 1}}, True),
    ("do-not-disrupt-pod-stops-it", lambda w: w.put("old", 1, annotations={wk.DO_NOT_DISRUPT: "true"}), {}, False),
    ("in-progress-stops-it", lambda w: None, {"in_progress": frozenset({"old"})}, False),
]


@pytest.mark.parametrize(
    ("change", "fields", "expired"), [pytest.param(c[1], c[2], c[3], id=c[0]) for c in EXPIRY_CASES]
)
def test_nodes_past_expire_after_are_replaced_forcefully(
    change: Callable[[World], object], fields: dict[str, object], expired: bool
) -> None:
    world = expiring_world()
    world.put("full", 0)
    change(world)

    result = world.run(**fields)

    expirations = [c for c in result.commands if c.method == "expiration"]
    assert bool(expirations) is expired
    if expired:
        (command,) = expirations
        assert command.candidates == ("old",)
        assert command.reason == "Expired"
        assert command.budgeted is False
        # Its pods get somewhere to go before the drain.
        assert sum(len(r.pods) for r in command.replacements) == 2
        assert "reached expireAfter" in command.detail


def test_expiration_wins_over_drift_and_consolidation() -> None:
    world = expiring_world()
    world.node("drifted", "m5.xlarge", claim_fields={"template_hash": "stale"})
    world.put("drifted", 1, cpu="100m")

    assert only(world.run()).method == "expiration"
