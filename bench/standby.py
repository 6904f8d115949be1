"""Standby capacity against running headroom and against nothing, on one burst.

    python -m bench.standby [--seed N] [--json FILE]

Runs examples/scenarios/standby.yaml three times through the simulator (the real handlers on
moto and the in-memory cluster; `nodewright simulate`'s runner): as shipped (its CapacityBuffer
keeps room for 20 burst pods as stopped standby instances), with the same buffer as running room
(`buffer.x-k8s.io/active-capacity`: what Karpenter and Cluster Autoscaler do with it, the
pause-pod way), and without the buffer. For the burst's pods (`default/burst-*`) it prints
pending -> bound p50, p95 and max (creation to binding, in virtual seconds); for each run the
cluster's mean $/h over the 10 minutes before the burst (instances at their price while running,
a stopped standby instance at its root volume's price) and that less the no-buffer run's (what
the headroom costs an hour); the nodes started from standby, nodes launched, and the run's pods
lost and PDB / limit violations.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.harness.scenario_runs import burst_figures, emit, run, seed_and_json, violations
from nodewright.model.capacitybuffer import ACTIVE_CAPACITY
from nodewright.simulator.report.metrics import STANDBY_VOLUME_USD_PER_HOUR, InstanceRecord
from nodewright.simulator.scenario import load_scenario
from nodewright.simulator.world import World

SCENARIO = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "standby.yaml"
BURST_AT = 20 * 60.0


def _overlap(start: float, end: float, t0: float, t1: float) -> float:
    return max(0.0, min(end, t1) - max(start, t0))


def cost_between(record: InstanceRecord, t0: float, t1: float) -> float:
    """What `record` cost between `t0` and `t1` (epoch seconds): its price while running, its
    volume while stopped (the intervals from its stops to its next starts).
    """
    end = record.terminated_at if record.terminated_at is not None else t1
    alive = _overlap(record.launched_at, end, t0, t1)
    stopped = sum(
        _overlap(stop, start, t0, t1)
        for stop, start in zip(record.stops, [*record.started_at, end][: len(record.stops)], strict=True)
    )
    return (record.price * (alive - stopped) + STANDBY_VOLUME_USD_PER_HOUR * stopped) / 3600


def mean_usd_per_hour(world: World, start: float, end: float) -> float:
    """The cluster's mean $/h between `start` and `end` (seconds after the scenario's start)."""
    t0, t1 = world.scenario.start + start, world.scenario.start + end
    return sum(cost_between(r, t0, t1) for r in world.recorder.instances.values()) * 3600 / (t1 - t0)


def measure(seed: int | None) -> dict[str, Any]:
    """The three runs (see the module docstring)."""
    scenario = load_scenario(SCENARIO)
    if seed is not None:
        scenario = scenario.with_seed(seed)
    running = tuple(replace(b, provisioning_strategy=ACTIVE_CAPACITY) for b in scenario.capacitybuffers)
    variants = (
        ("standby", scenario),
        ("pause_pods", replace(scenario, capacitybuffers=running)),
        ("nothing", replace(scenario, capacitybuffers=())),
    )
    out: dict[str, Any] = {
        "scenario": scenario.name,
        "seed": scenario.seed,
        "boot_delay": scenario.boot_delay,
        "start_delay": scenario.start_delay,
    }
    for label, variant in variants:
        world, summary = run(variant)
        out[label] = {
            **burst_figures(world, "default/burst-"),
            "usd_per_hour_before_burst": round(mean_usd_per_hour(world, BURST_AT - 600, BURST_AT), 4),
            "nodes_from_standby": len((summary.get("standby") or {}).get("nodes_from_standby", [])),
            "nodes_launched": summary["nodes_launched"],
            "cost_usd": summary["cost_usd"],
            **violations(summary),
        }
    base = out["nothing"]["usd_per_hour_before_burst"]
    for label in ("standby", "pause_pods", "nothing"):
        out[label]["headroom_usd_per_hour"] = round(out[label]["usd_per_hour_before_burst"] - base, 4)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the measurement and print it as JSON (and write it to --json FILE)."""
    args = seed_and_json(argparse.ArgumentParser(prog="python -m bench.standby", description=__doc__)).parse_args(argv)
    emit(measure(args.seed), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
