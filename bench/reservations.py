"""Capacity reservations: what an ODCR and a capacity block save, and what their use costs in pods.

    python -m bench.reservations [--seed N] [--json FILE]

Runs examples/scenarios/capacity-reservation.yaml twice through the simulator (the real handlers
on moto and the in-memory cluster, the simulated EC2 holding the reservations): as written, and
with the EC2NodeClass's capacityReservationSelectorTerms left out (the same reservations exist,
nothing selects them: Karpenter's behaviour without the terms). For each it prints what the run
paid for instances (a reserved instance costs nothing more: its reservation is paid either way),
the mean $/h while the block is in use (15m-50m) and after it ended (62m-80m), the nodes launched
per capacity type and how many ran on reserved capacity, the capacity errors met (EC2's
ReservationCapacityExceeded while the ODCR is held outside the cluster), and the run's pods lost, PDB,
do-not-disrupt and limit violations; and the reservations' own fee at on-demand prices, which
is paid in both runs.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.harness.scenario_runs import emit, mean_price, run, seed_and_json
from nodewright.adapters.aws.reservations import queries
from nodewright.simulator.scenario import load_scenario
from nodewright.simulator.scenario.model import Scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "examples" / "scenarios"
IN_USE = (15 * 60.0, 50 * 60.0)
AFTER_BLOCK = (62 * 60.0, 80 * 60.0)


def _unselected(scenario: Scenario) -> Scenario:
    """The scenario with no NodeClass selecting a reservation."""
    nodeclasses = {
        name: replace(nodeclass, capacity_reservation_selector_terms=())
        for name, nodeclass in scenario.nodeclasses.items()
    }
    return replace(scenario, nodeclasses=nodeclasses)


def measure(seed: int | None) -> dict[str, Any]:
    """Both runs (see the module docstring)."""
    scenario = load_scenario(SCENARIOS / "capacity-reservation.yaml")
    if seed is not None:
        scenario = scenario.with_seed(seed)
    out: dict[str, Any] = {"scenario": scenario.name, "seed": scenario.seed}
    for label, variant in (("with_reservations", scenario), ("without_reservations", _unselected(scenario))):
        world, summary = run(variant)
        records = list(world.recorder.instances.values())
        out[label] = {
            "instance_cost_usd": summary["cost_usd"],
            "usd_per_hour_block_in_use": round(mean_price(world, *IN_USE), 4),
            "usd_per_hour_after_block": round(mean_price(world, *AFTER_BLOCK), 4),
            "nodes_launched": dict(sorted(Counter(r.capacity_type for r in records).items())),
            "nodes_on_reserved_capacity": sum(1 for r in records if r.capacity_type == "reserved"),
            # CreateFleet capacity errors met (the ODCR held outside the cluster for 5 minutes).
            "capacity_errors": summary["capacity_errors"],
            "pods_lost": summary["pods_lost"],
            "pdb_violations": summary["pdb_violations"],
            "do_not_disrupt_violations": summary["do_not_disrupt_violations"],
            "limit_violations": summary["limit_violations"],
            "pods_pending_at_end": summary["pods_pending_at_end"],
            "warnings": summary["warnings"],
        }
    # The fee of the reservations the NodeClasses select (another team's is not ours), asked of
    # the simulated EC2 with the adapter's own queries.
    world, _ = run(replace(scenario, duration=60.0))
    selected: dict[str, float] = {}
    for nodeclass in scenario.nodeclasses.values():
        for query in queries(nodeclass.capacity_reservation_selector_terms):
            for item in world.ec2.describe_capacity_reservations(**query)["CapacityReservations"]:
                price = world.catalog.price(item["InstanceType"], item["AvailabilityZone"], "on-demand", None)
                selected[item["CapacityReservationId"]] = item["TotalInstanceCount"] * price
    out["selected_reservations"] = sorted(selected)
    out["reservation_fee_usd_per_hour_at_on_demand_prices"] = round(sum(selected.values()), 4)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the measurement and print it as JSON (and write it to --json FILE)."""
    parser = argparse.ArgumentParser(prog="python -m bench.reservations", description=__doc__)
    args = seed_and_json(parser).parse_args(argv)
    emit(measure(args.seed), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
