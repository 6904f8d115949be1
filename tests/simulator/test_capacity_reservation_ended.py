"""The shipped capacity-reservation-ended scenario end to end: an ODCR expires under its nodes.

What is real: the provisioner, consolidator and interruption handlers with their real controllers,
the EC2 adapter's reservation reads (DescribeCapacityReservations, by terms and by id) and
reserved launches, against moto plus `SimulatedReservations` (the ODCR expires at 20m; its
instances keep running, as EC2 leaves them) and the in-memory cluster, on the virtual clock.
What is observed: the provisioner's `reservation-ended` decisions (node, on-demand price), the
instances launched and why they ended, the mean $/h after the reservation ended, and the run's lost
pods and violations.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.scenario_runs import mean_price, run
from nodewright.simulator.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "capacity-reservation-ended.yaml"
M5_2XLARGE_ON_DEMAND = 0.384


def test_nodes_of_an_expired_reservation_become_on_demand_and_are_consolidated_onto_spot() -> None:
    world, summary = run(load_scenario(SCENARIO))
    ended = world.observers["provisioner"].of("reservation-ended")
    assert len(ended) == 2
    assert {d["reservation_id"] for d in ended} == {"cr-0d1e2f3a4b5c60721"}
    assert [d["price"] for d in ended] == [pytest.approx(M5_2XLARGE_ON_DEMAND)] * 2
    records = sorted(world.recorder.instances.values(), key=lambda r: r.launched_at)
    reserved = [r for r in records if r.capacity_type == "reserved"]
    assert len(reserved) == 2
    # Priced as the on-demand nodes they became, they were replaced by cheaper spot capacity.
    assert {r.terminated_by for r in reserved} == {"consolidation"}
    assert all(r.terminated_at is not None and r.terminated_at - world.scenario.start > 20 * 60 for r in reserved)
    live = [r for r in records if r.terminated_at is None]
    assert {r.capacity_type for r in live} == {"spot"}
    assert mean_price(world, 35 * 60.0, 45 * 60.0) < 2 * M5_2XLARGE_ON_DEMAND
    assert (summary["pods_lost"], summary["pdb_violations"], summary["limit_violations"]) == (0, 0, 0)
    assert (summary["do_not_disrupt_violations"], summary["pods_pending_at_end"]) == (0, 0)
    assert summary["warnings"] == []
