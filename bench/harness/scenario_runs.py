"""Scenario runs for the benchmarks and tests that measure a whole simulated day.

Role: run a scenario as `nodewright simulate` does (the real handlers on moto and the in-memory
cluster; `nodewright.simulator.runner.run_scenario`, no report written) and read figures off the
world it leaves: what the cluster paid per hour over a window, how long pods waited to be bound,
the run's losses and violations; and the command line those benchmarks share (`--seed`, `--json`,
the result printed as JSON). `bench.capacity`, `bench.reservations`, `bench.savings_plan` and
`bench.standby` measure with these, and the simulator tests of those scenarios check the same
figures.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nodewright.inmemory import cluster as kinds
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario.model import Scenario
from nodewright.simulator.world import World


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank `q` quantile of `values` (NaN when there are none)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def bound_waits(world: World, prefix: str) -> list[float]:
    """Seconds from creation to binding of each pod whose key starts with `prefix`."""
    created: dict[str, float] = {}
    waits: list[float] = []
    for change in world.cluster.memory.changes:
        if not change.name.startswith(prefix):
            continue
        if change.kind == kinds.POD_CREATED and not change.node:
            created[change.name] = change.at
        elif change.kind == kinds.POD_BOUND and change.name in created:
            waits.append(change.at - created.pop(change.name))
    return waits


def burst_figures(world: World, prefix: str) -> dict[str, Any]:
    """How many pods whose key starts with `prefix` were bound, and their pending -> bound p50,
    p95 and max (virtual seconds; NaN when none was).
    """
    waits = bound_waits(world, prefix)
    return {
        "burst_pods": len(waits),
        "pending_to_bound_p50": percentile(waits, 0.5),
        "pending_to_bound_p95": percentile(waits, 0.95),
        "pending_to_bound_max": max(waits, default=float("nan")),
    }


def violations(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A run's pods lost and PodDisruptionBudget and NodePool limit violations (its summary's)."""
    return {key: summary[key] for key in ("pods_lost", "pdb_violations", "limit_violations")}


def seed_and_json(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of a one-scenario benchmark: `--seed N` (the scenario's own by default) and
    `--json FILE`."""
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    return parser


def emit(result: Mapping[str, Any], path: Path | None) -> None:
    """Print a benchmark's result as JSON, and write it to `path` too when given."""
    text = json.dumps(result, indent=2)
    print(text)
    if path is not None:
        path.write_text(text + "\n", encoding="utf-8")


def mean_price(world: World, start: float, end: float) -> float:
    """The cluster's mean $/h between `start` and `end` (seconds after the scenario's start)."""
    t0, t1 = world.scenario.start + start, world.scenario.start + end
    total = 0.0
    for record in world.recorder.instances.values():
        stop = record.terminated_at if record.terminated_at is not None else t1
        overlap = max(0.0, min(stop, t1) - max(record.launched_at, t0))
        total += record.price * overlap
    return total / (t1 - t0)


def run(scenario: Scenario) -> tuple[World, dict[str, Any]]:
    """Run `scenario` as `nodewright simulate` does (no report, no plots): its world and summary."""
    result = run_scenario(scenario, None, plots=False)
    assert result.world is not None
    return result.world, result.summary
