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
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from nodewright.inmemory import cluster as kinds
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import load_scenario
from nodewright.simulator.scenario.model import Scenario
from nodewright.simulator.world import World

SCENARIOS = Path(__file__).resolve().parents[1] / "examples" / "scenarios"


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _bound_waits(world: World, prefix: str) -> list[float]:
    """Seconds from creation to binding of each pod whose key starts with `prefix`."""
    created: dict[str, float] = {}
    waits: list[float] = []
    for change in world.cluster.changes:
        if not change.name.startswith(prefix):
            continue
        if change.kind == kinds.POD_CREATED and not change.node:
            created[change.name] = change.at
        elif change.kind == kinds.POD_BOUND and change.name in created:
            waits.append(change.at - created.pop(change.name))
    return waits


def _mean_price(world: World, start: float, end: float) -> float:
    """The cluster's mean $/h between `start` and `end` (seconds after the scenario's start)."""
    t0, t1 = world.scenario.start + start, world.scenario.start + end
    total = 0.0
    for record in world.recorder.instances.values():
        stop = record.terminated_at if record.terminated_at is not None else t1
        overlap = max(0.0, min(stop, t1) - max(record.launched_at, t0))
        total += record.price * overlap
    return total / (t1 - t0)


def _run(scenario: Scenario) -> tuple[World, dict[str, Any]]:
    result = run_scenario(scenario, None, plots=False)
    assert result.world is not None
    return result.world, result.summary


def headroom(seed: int | None) -> dict[str, Any]:
    """The burst with and without the buffer (see the module docstring)."""
    scenario = load_scenario(SCENARIOS / "headroom.yaml")
    if seed is not None:
        scenario = scenario.with_seed(seed)
    burst_at = 20 * 60.0
    out: dict[str, Any] = {"scenario": scenario.name, "seed": scenario.seed}
    for label, variant in (("with_buffer", scenario), ("without_buffer", replace(scenario, capacitybuffers=()))):
        world, summary = _run(variant)
        waits = _bound_waits(world, "default/burst-")
        out[label] = {
            "burst_pods": len(waits),
            "pending_to_bound_p50": _percentile(waits, 0.5),
            "pending_to_bound_p95": _percentile(waits, 0.95),
            "pending_to_bound_max": max(waits, default=float("nan")),
            "usd_per_hour_before_burst": round(_mean_price(world, burst_at - 600, burst_at), 4),
            "cost_usd": summary["cost_usd"],
            "nodes_launched": summary["nodes_launched"],
            "pods_lost": summary["pods_lost"],
            "pdb_violations": summary["pdb_violations"],
            "limit_violations": summary["limit_violations"],
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
    world, summary = _run(scenario)
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
        "pods_lost": summary["pods_lost"],
        "pdb_violations": summary["pdb_violations"],
        "limit_violations": summary["limit_violations"],
        "pods_pending_at_end": summary["pods_pending_at_end"],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run one measurement and print it as JSON (and write it to --json FILE)."""
    parser = argparse.ArgumentParser(prog="python -m bench.capacity", description=__doc__)
    parser.add_argument("what", choices=("headroom", "static"))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result = headroom(args.seed) if args.what == "headroom" else static(args.seed)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
