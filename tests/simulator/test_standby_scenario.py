"""The shipped standby scenario, run by the simulator end to end.

What is real: the three handlers with their real controllers against moto's EC2 (CreateFleet,
StopInstances, StartInstances) and DynamoDB and the in-memory cluster, on the virtual clock,
reading the scenario's CapacityBuffer (strategy nodewright.io/standby-capacity) and PodTemplate.
What is observed: the instances' records (stopped, started, on-demand), when the burst's pods were
bound, the summary's standby block and fidelity audit, and the run's lost pods and violations.
"""

from __future__ import annotations

from pathlib import Path

from bench.harness.scenario_runs import bound_waits, run
from nodewright.model.standby import STANDBY_CAPACITY
from nodewright.simulator.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "standby.yaml"


def test_the_burst_starts_stopped_standby_nodes_instead_of_launching_and_the_buffer_refills() -> None:
    scenario = load_scenario(SCENARIO)
    assert [b.provisioning_strategy for b in scenario.capacitybuffers] == [STANDBY_CAPACITY]

    world, summary = run(scenario)

    waits = bound_waits(world, "default/burst-")
    assert len(waits) == 20
    # Bound once the started nodes are Ready again: the start delay and a pass, not a launch's boot.
    assert max(waits) < scenario.start_delay + 5 < scenario.boot_delay
    standby = summary["standby"]
    assert standby["starts"] == len(standby["nodes_from_standby"]) > 0
    assert standby["start_to_ready_seconds"]["p50"] == scenario.start_delay
    assert summary["fidelity"]["nodes_from_standby"] == standby["nodes_from_standby"]
    # Refilled: as many stopped instances at the end as before the burst.
    assert standby["stopped_at_end"] == standby["starts"]
    stood = [r for r in world.recorder.instances.values() if r.stops]
    assert {r.capacity_type for r in stood} == {"on-demand"}
    assert summary["pods_lost"] == 0
    assert summary["pdb_violations"] == 0
    assert summary["limit_violations"] == 0
    assert summary["pods_pending_at_end"] == 0
