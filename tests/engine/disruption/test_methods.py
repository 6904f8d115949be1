"""The disruption methods as one object each: a registry `validate` looks commands up in."""

from __future__ import annotations

from nodewright.engine.disruption import Command, DisruptionInput, validate
from nodewright.engine.disruption.methods import BY_NAME, METHODS
from nodewright.model.snapshot import ClusterSnapshot

EMPTY = DisruptionInput(snapshot=ClusterSnapshot(), claims=(), pools=(), now=0.0)


def test_every_method_has_its_own_name_and_a_budget_reason() -> None:
    names = [m.name for m in METHODS]
    assert len(set(names)) == len(names)
    assert names == [
        "static-scale-down",
        "static-replace",
        "repair",
        "emptiness",
        "expiration",
        "drift",
        "daemonset-overflow",
        "zone-rebalance",
        "consolidation",
    ]
    assert {m.name: m.reason for m in METHODS} == {
        "static-scale-down": "Overprovisioned",
        "static-replace": "Drifted",
        "repair": "Unhealthy",
        "emptiness": "Empty",
        "expiration": "Expired",
        "drift": "Drifted",
        "daemonset-overflow": "Drifted",
        "consolidation": "Underutilized",
        "zone-rebalance": "Drifted",
    }
    assert [m.name for m in METHODS if not m.budgeted] == ["repair", "expiration"]


def test_validate_finds_a_command_by_its_method() -> None:
    for name, method in BY_NAME.items():
        command = Command(
            method=name, reason=method.reason, candidates=("gone",), replacements=(), savings=0, detail=""
        )
        assert validate(command, EMPTY) == "candidate gone is gone"


def test_a_command_of_an_unknown_method_is_stale() -> None:
    command = Command(method="teleport", reason="Empty", candidates=("n1",), replacements=(), savings=0, detail="")
    stale = validate(command, EMPTY)
    assert stale is not None
    assert "unknown disruption method 'teleport'" in stale
