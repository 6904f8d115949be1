"""An interruptible ODCR in the simulator: the scenario key, EC2's answer, and launches into it.

What is real: the provisioner with its real controller, the EC2 adapter's DescribeCapacityReservations
selection and its interruptible launch (market type, `reserved-capacity` fleet), against moto plus
`SimulatedReservations` and the in-memory cluster, on the virtual clock; the scenario is
capacity-reservation-ended.yaml with its ODCR made interruptible and no end.
What is observed: the DescribeCapacityReservations answer, the instances launched (capacity type),
the nodes' reservation labels, and the run's lost pods and violations.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bench.harness.scenario_runs import run
from nodewright.model import labels as wk
from nodewright.simulator.scenario import load_scenario, parse_scenario
from nodewright.simulator.standins.reservations import SimulatedReservations

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "capacity-reservation-ended.yaml"


def test_the_interruptible_key_is_read_and_ec2_reports_it(tmp_path: Path) -> None:
    text = SCENARIO.read_text().replace("until: 20m}", "interruptible: true}")
    scenario = parse_scenario(text, tmp_path / "interruptible.yaml")
    (spec,) = scenario.capacity_reservations
    assert spec.interruptible
    ec2 = SimulatedReservations([spec], start=scenario.start, account="123456789012", region="us-east-1")
    (item,) = ec2.describe({"CapacityReservationIds": [spec.id]}, scenario.start)["CapacityReservations"]
    assert item["Interruptible"] is True


def test_pods_land_on_an_interruptible_reservation_labelled_as_such() -> None:
    scenario = load_scenario(SCENARIO)
    (spec,) = scenario.capacity_reservations
    scenario = replace(
        scenario, duration=10 * 60.0, capacity_reservations=(replace(spec, interruptible=True, end=None),)
    )
    world, summary = run(scenario)
    records = list(world.recorder.instances.values())
    assert [r.capacity_type for r in records] == ["reserved", "reserved"]
    nodes = world.cluster.memory.nodes()
    assert len(nodes) == 2
    for node in nodes:
        assert node.labels[wk.CAPACITY_RESERVATION_ID] == spec.id
        assert node.labels[wk.CAPACITY_RESERVATION_INTERRUPTIBLE] == "true"
    assert (summary["pods_lost"], summary["pdb_violations"], summary["pods_pending_at_end"]) == (0, 0, 0)
