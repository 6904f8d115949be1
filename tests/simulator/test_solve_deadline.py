"""The provisioner's solve budget in a simulation does not depend on how fast the machine is.

Real: the shipped `limits` scenario through `run_scenario` (the handlers, moto, the in-memory
cluster). Slowed: the wall clock the provisioner would otherwise measure its solve budget by
(`time.monotonic`, read when the provisioner is built), so every solve looks as if it took a
thousand times longer. Observed: the run's summary, which must not change.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import load_scenario
from nodewright.simulator.standins.solveclock import SolveClock

LIMITS = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "limits.yaml"
TIMING = ("wall", "cpu", "self_cost", "bill")


def _plan(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if not any(word in k for word in TIMING)}


def test_the_simulated_plan_is_the_same_when_the_wall_clock_runs_a_thousand_times_slower(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scenario = load_scenario(LIMITS)
    normal = run_scenario(scenario, plots=False).summary
    real = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: real() * 1000.0)
    slowed = run_scenario(scenario, plots=False).summary
    assert _plan(slowed) == _plan(normal)
    assert normal["nodes_launched"] == 2  # what the scenario's limits allow (its own test says why)


def test_the_solve_clock_charges_each_reading_the_same_whatever_the_machine_does() -> None:
    clock = SolveClock(per_reading=0.5)
    first = clock()
    time.sleep(0.01)
    assert (first, clock(), clock()) == (0.5, 1.0, 1.5)
    assert clock.readings == 3
    with pytest.raises(ValueError, match="positive, finite"):
        SolveClock(per_reading=0)
