"""Capacity the configuration asks for without pending pods: static NodePools and CapacityBuffers.

    python -m bench.capacity headroom [--seed N] [--json FILE]
    python -m bench.capacity static [--seed N] [--json FILE]

`headroom` runs examples/scenarios/headroom.yaml twice through the simulator (the real handlers
on moto and the in-memory cluster), with its CapacityBuffer and without it (the same scenario,
the buffer left out), and prints for the burst's pods (`default/burst-*`) pending -> bound p50,
p95 and max, and what the buffer costs: the cluster's mean $/h over the 10 minutes before the
burst, with minus without. `static` runs examples/scenarios/static-pool.yaml and prints the
static pool's Ready node count at each minute, what was launched and terminated in it, and the
run's pods lost and PDB / limit violations; between changes (from 3 minutes after each), the
fewest and most Ready nodes at 1 s steps, from 90 s after each change.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.harness.scenario_runs import burst_figures, emit, mean_price, run, seed_and_json, violations
from nodewright.simulator.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "examples" / "scenarios"


def headroom(seed: int | None) -> dict[str, Any]:
    """The burst with and without the buffer (see the module docstring)."""
    scenario = load_scenario(SCENARIOS / "headroom.yaml")
    if seed is not None:
        scenario = scenario.with_seed(seed)
    burst_at = 20 * 60.0
    out: dict[str, Any] = {"scenario": scenario.name, "seed": scenario.seed}
    for label, variant in (("with_buffer", scenario), ("without_buffer", replace(scenario, capacitybuffers=()))):
        world, summary = run(variant)
        out[label] = {
            **burst_figures(world, "default/burst-"),
            "usd_per_hour_before_burst": round(mean_price(world, burst_at - 600, burst_at), 4),
            "cost_usd": summary["cost_usd"],
            "nodes_launched": summary["nodes_launched"],
            **violations(summary),
        }
    out["buffer_usd_per_hour"] = round(
        out["with_buffer"]["usd_per_hour_before_burst"] - out["without_buffer"]["usd_per_hour_before_burst"], 4
    )
    return out


def static(seed: int | None) -> dict[str, Any]:
    """The static pool's node count over time (see the module docstring)."""
    scenario = load_scenario(SCENARIOS / "static-pool.yaml")
    if seed is not None:
        scenario = scenario.with_seed(seed)
    world, summary = run(scenario)
    pool = "reserved"
    records = [r for r in world.recorder.instances.values() if r.nodepool == pool]

    def ready(t: float) -> int:
        at = scenario.start + t
        return sum(
            1
            for r in records
            if r.ready_at is not None and r.ready_at <= at and (r.terminated_at is None or r.terminated_at > at)
        )

    # Between changes, at 1 s steps from 90 s after each (a launch and a boot): the fewest and most
    # Ready nodes (a drift replacement shows as one node more for a moment, never one fewer).
    edges = [0.0, *(c.at for c in scenario.nodepool_changes), scenario.duration]
    phases = [
        {"from_minute": start / 60, "to_minute": end / 60, "ready_min": min(r), "ready_max": max(r)}
        for start, end in itertools.pairwise(edges)
        for r in [[ready(t) for t in range(int(start) + 90, int(end))]]
        if r
    ]
    return {
        "scenario": scenario.name,
        "seed": scenario.seed,
        "ready_nodes_by_minute": " ".join(str(ready(m * 60.0)) for m in range(int(scenario.duration // 60) + 1)),
        "ready_nodes_by_phase": phases,
        "launched": len(records),
        "terminated": sum(1 for r in records if r.terminated_at is not None),
        "instance_types": sorted({r.instance_type for r in records}),
        **violations(summary),
        "pods_pending_at_end": summary["pods_pending_at_end"],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run one measurement and print it as JSON (and write it to --json FILE)."""
    parser = argparse.ArgumentParser(prog="python -m bench.capacity", description=__doc__)
    parser.add_argument("what", choices=("headroom", "static"))
    args = seed_and_json(parser).parse_args(argv)
    emit(headroom(args.seed) if args.what == "headroom" else static(args.seed), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
