"""Capacity reservations in the simulator: the simulated EC2's reservations, and the shipped
capacity-reservation scenario end to end.

What is real: the provisioner, consolidator and interruption handlers with their real controllers,
the EC2 adapter's DescribeCapacityReservations selection and reserved launches, against moto plus
`SimulatedReservations` (moto lacks reservations) and the in-memory cluster, on the virtual clock.
What is observed: the DescribeCapacityReservations answers, the instances launched (capacity type,
reservation), what became of the block's nodes at its end, and the run's lost pods and violations
(bench/reservations.py measures the same runs).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from bench.reservations import measure
from nodewright.simulator.scenario import ScenarioError, load_scenario, parse_scenario
from nodewright.simulator.scenario.model import CapacityReservationSpec
from nodewright.simulator.standins.reservations import SimulatedReservations
from tests.simulator.conftest import NODECLASS, nodepool

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
START = datetime(2026, 1, 5, tzinfo=UTC).timestamp()
ODCR = CapacityReservationSpec("cr-0aaaaaaaaaaaaaaa1", "m5.xlarge", "us-east-1a", 2, tags={"team": "ml"})
BLOCK = CapacityReservationSpec(
    "cr-0bbbbbbbbbbbbbbb1", "p5.48xlarge", "us-east-1b", 1, reservation_type="capacity-block", start=600, end=3600
)


def reservations() -> SimulatedReservations:
    return SimulatedReservations([ODCR, BLOCK], start=START, account="123456789012", region="us-east-1")


def ids(answer: dict[str, object]) -> list[str]:
    return [str(r["CapacityReservationId"]) for r in answer["CapacityReservations"]]  # type: ignore[attr-defined]


def test_describe_answers_ec2s_shape_with_the_filters_nodewright_sends() -> None:
    ec2 = reservations()
    active = {"Name": "state", "Values": ["active"]}
    assert ids(ec2.describe({"Filters": [active]}, START)) == [ODCR.id]  # the block is scheduled
    assert ids(ec2.describe({"Filters": [active]}, START + 600)) == [ODCR.id, BLOCK.id]
    assert ids(ec2.describe({"Filters": [active]}, START + 3600)) == [ODCR.id]  # expired
    tagged = [active, {"Name": "tag:team", "Values": ["ml"]}, {"Name": "owner-id", "Values": ["123456789012"]}]
    assert ids(ec2.describe({"Filters": tagged}, START + 900)) == [ODCR.id]
    assert ids(ec2.describe({"Filters": [{"Name": "instance-match-criteria", "Values": ["open"]}]}, START)) == []
    (block,) = ec2.describe({"CapacityReservationIds": [BLOCK.id]}, START + 900)["CapacityReservations"]
    assert (block["ReservationType"], block["AvailableInstanceCount"], block["EndDate"]) == (
        "capacity-block",
        1,
        datetime.fromtimestamp(START + 3600, UTC),
    )
    with pytest.raises(ClientError, match=r"InvalidCapacityReservationId\.NotFound"):
        ec2.describe({"CapacityReservationIds": ["cr-0ffffffffffffffff"]}, START)


def test_a_launch_takes_one_instance_and_a_full_reservation_refuses_the_next() -> None:
    ec2 = reservations()
    now = START + 60
    assert ec2.refusal(ODCR.id, "m5.xlarge", "us-east-1a", now) is None
    ec2.launched("i-1", ODCR.id)
    ec2.launched("i-2", ODCR.id)
    assert ec2.available(ODCR.id) == 0
    assert ec2.refusal(ODCR.id, "m5.xlarge", "us-east-1a", now) == "ReservationCapacityExceeded"
    ec2.released(["i-1"])
    assert ec2.refusal(ODCR.id, "m5.xlarge", "us-east-1a", now) is None
    assert ec2.refusal(ODCR.id, "m5.xlarge", "us-east-1b", now) == "ReservationCapacityExceeded"  # not its zone
    assert ec2.refusal(BLOCK.id, "p5.48xlarge", "us-east-1b", now) == "ReservationCapacityExceeded"  # scheduled


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param(
            "{id: cr-0a, instance_type: m5.large, zone: us-east-1a, count: 1, type: capacity-block}",
            "capacity_reservations[0].until: a capacity block must end",
            id="block-without-end",
        ),
        pytest.param(
            "{id: cr-0a, instance_type: m5.large, zone: us-west-2a, count: 1}",
            "capacity_reservations[0].zone: 'us-west-2a' is not one of zones",
            id="zone",
        ),
        pytest.param(
            "{id: odcr-1, instance_type: m5.large, zone: us-east-1a, count: 1}",
            "capacity_reservations[0].id:",
            id="id",
        ),
    ],
)
def test_a_bad_reservation_entry_is_named(entry: str, expected: str, tmp_path: Path) -> None:
    text = (
        f"name: bad\nduration: 5m\nnodepools:{nodepool()}nodeclasses:{NODECLASS}capacity_reservations:\n  - {entry}\n"
    )
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(text, tmp_path / "bad.yaml")
    assert any(expected in str(p) for p in raised.value.problems), raised.value.problems


def test_the_scenario_reads_the_reservations_and_karpenters_selector_terms() -> None:
    scenario = load_scenario(SCENARIOS / "capacity-reservation.yaml")
    assert [(r.id, r.count, r.reservation_type) for r in scenario.capacity_reservations] == [
        ("cr-0a1b2c3d4e5f60718", 3, "default"),
        ("cr-0b1c2d3e4f5a60719", 2, "capacity-block"),
        ("cr-0c1d2e3f4a5b60720", 5, "default"),
    ]
    terms = scenario.nodeclasses["reserved"].capacity_reservation_selector_terms
    assert [(dict(t.tags), t.id) for t in terms] == [({"team": "ml"}, None), ({}, "cr-0b1c2d3e4f5a60719")]


def test_reserved_capacity_is_used_first_spot_beyond_it_and_the_block_ends_losing_nothing() -> None:
    result = measure(None)
    used, unused = result["with_reservations"], result["without_reservations"]
    # 3 ODCR instances and 2 capacity-block instances: never more than the reservations hold.
    assert used["nodes_on_reserved_capacity"] == 5
    assert used["nodes_launched"]["spot"] >= 1  # the workload outgrew the reservations
    assert unused["nodes_on_reserved_capacity"] == 0
    # The ODCR held outside the cluster for 5 minutes refused a launch, which fell back.
    assert used["capacity_errors"] >= 1
    assert unused["capacity_errors"] == 0
    for run in (used, unused):
        assert (run["pods_lost"], run["pdb_violations"], run["limit_violations"]) == (0, 0, 0)
        assert run["do_not_disrupt_violations"] == 0
        assert run["pods_pending_at_end"] == 0
        assert run["warnings"] == []  # EC2 reclaimed nothing: the block's nodes were drained in time
    assert used["usd_per_hour_block_in_use"] < unused["usd_per_hour_block_in_use"]
    assert used["usd_per_hour_after_block"] < unused["usd_per_hour_after_block"]
    assert result["selected_reservations"] == ["cr-0a1b2c3d4e5f60718", "cr-0b1c2d3e4f5a60719"]
