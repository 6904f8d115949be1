"""Real prices: what a Savings Plan NodeOverlay changes in what Nodewright launches and pays.

    python -m bench.savings_plan [--seed N] [--json FILE]

Runs examples/scenarios/savings-plan.yaml twice through the simulator (the real handlers on moto
and the in-memory cluster): as written (a -28% Savings Plan on m7i at weight 10, a -5% enterprise
discount on every on-demand offering at weight 1), and with its NodeOverlay documents left out
(list prices, Karpenter's behaviour without overlays). For each run it prints the cluster's $/h at
the end, priced two ways: at list prices (what the simulated EC2 bills) and at effective prices
(the overlays applied to the same instances, what the discounts make the bill), the instance
types launched, and the run's pods lost, PDB, do-not-disrupt and limit violations.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.harness.scenario_runs import run
from nodewright.engine.overlay import apply_overlays
from nodewright.engine.scheduling import PoolCapacity
from nodewright.simulator.scenario import load_scenario
from nodewright.simulator.scenario.model import Scenario
from nodewright.simulator.world import World

SCENARIO = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "savings-plan.yaml"


def _hourly(world: World, scenario: Scenario) -> tuple[float, float, dict[str, int]]:
    """The instances running at the end: $/h at list prices, at effective prices, and by type."""
    running = [r for r in world.recorder.instances.values() if r.terminated_at is None]
    pools = tuple(
        PoolCapacity(pool, tuple(world.catalog.instance_types(scenario.nodeclasses.get(pool.node_class_ref.name))))
        for pool in scenario.nodepools
    )
    # Effective prices of the scenario as written, whichever run launched the instances.
    overlaid = apply_overlays(pools, scenario.nodeoverlays)
    effective = {
        (pc.nodepool.name, it.name, o.zone, o.capacity_type): o.price
        for pc in overlaid.pools
        for it in pc.instance_types
        for o in it.offerings
    }
    listed = sum(r.price for r in running)
    paid = sum(effective.get((r.nodepool, r.instance_type, r.zone, r.capacity_type), r.price) for r in running)
    return listed, paid, dict(sorted(Counter(r.instance_type for r in running).items()))


def measure(seed: int | None) -> dict[str, Any]:
    """Both runs (see the module docstring)."""
    scenario = load_scenario(SCENARIO)
    if seed is not None:
        scenario = scenario.with_seed(seed)
    out: dict[str, Any] = {"scenario": scenario.name, "seed": scenario.seed}
    for label, variant in (("with_overlays", scenario), ("without_overlays", replace(scenario, nodeoverlays=()))):
        world, summary = run(variant)
        listed, paid, types = _hourly(world, scenario)
        out[label] = {
            "usd_per_hour_list": round(listed, 4),
            "usd_per_hour_effective": round(paid, 4),
            "instance_types_at_end": types,
            "pods_lost": summary["pods_lost"],
            "pdb_violations": summary["pdb_violations"],
            "do_not_disrupt_violations": summary["do_not_disrupt_violations"],
            "limit_violations": summary["limit_violations"],
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run both, print a table (and write JSON with --json)."""
    parser = argparse.ArgumentParser(prog="python -m bench.savings_plan", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None, help="the scenario's seed instead of its own")
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON to FILE")
    args = parser.parse_args(argv)
    result = measure(args.seed)
    for label in ("with_overlays", "without_overlays"):
        run = result[label]
        print(
            f"{label:17} list ${run['usd_per_hour_list']:.4f}/h  effective ${run['usd_per_hour_effective']:.4f}/h  "
            f"types {run['instance_types_at_end']}  lost {run['pods_lost']}  violations "
            f"{run['pdb_violations'] + run['do_not_disrupt_violations'] + run['limit_violations']}"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
