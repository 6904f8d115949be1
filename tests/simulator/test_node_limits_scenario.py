"""The shipped node-limits scenario, run by the simulator end to end: NodePool `limits.nodes` on a
dynamic (non-static) pool.

What is real: the provisioner, consolidator and interruption handlers with their real controllers
against moto's EC2 and DynamoDB and the in-memory cluster, on the virtual clock, reading the
scenario's unchanged Karpenter NodePools. What is observed: the instances each pool launched,
the run's summary (lost pods, limit violations, pods left pending) and why a pending pod waits.
"""

from __future__ import annotations

from pathlib import Path

from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "node-limits.yaml"


def test_a_pool_capped_at_three_nodes_never_has_a_fourth_and_the_rest_waits_for_limits() -> None:
    scenario = load_scenario(SCENARIO)
    assert [dict(p.limits or {}) for p in scenario.nodepools if p.name == "spot-three-nodes"] == [{"nodes": 3000}]

    result = run_scenario(scenario, None, plots=False)

    world = result.world
    assert world is not None
    summary = result.summary
    assert summary["pods_lost"] == 0
    assert summary["limit_violations"] == 0
    spot = [r for r in world.recorder.instances.values() if r.nodepool == "spot-three-nodes"]
    assert len(spot) == 3
    assert summary["pods_pending_at_end"] > 0
    # Nodewright's word on the pods it left out (kube-scheduler's own FailedScheduling aside).
    told = [e.event.note for e in world.cluster.events() if "nodepool" in e.event.note]
    assert told
    assert all("nodepool spot-three-nodes: limits reached" in note for note in told)
