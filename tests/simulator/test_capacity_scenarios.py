"""The shipped static-pool and headroom scenarios, run by the simulator end to end.

What is real: the provisioner, consolidator and interruption handlers with their real controllers
against moto's EC2 and DynamoDB and the in-memory cluster, on the virtual clock, reading the
scenario's documents (a static NodePool changed over time; a CapacityBuffer and its PodTemplate).
What is observed: the instances the static pool had over time, where and when the burst's pods
were bound, the cluster's $/h, and the run's lost pods and violations (bench/capacity.py measures
the same way).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.capacity import headroom, static
from nodewright.simulator.scenario import ScenarioError, load_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def test_the_scenarios_read_their_karpenter_and_sig_autoscaling_documents_unchanged() -> None:
    pool = load_scenario(SCENARIOS / "static-pool.yaml")
    assert [p.replicas for p in pool.nodepools if p.name == "reserved"] == [3]
    assert [(c.at, c.nodepool.replicas) for c in pool.nodepool_changes] == [(600.0, 5), (1200.0, 2), (1800.0, 2)]
    buffered = load_scenario(SCENARIOS / "headroom.yaml")
    assert [(b.name, b.pod_template_ref, b.replicas) for b in buffered.capacitybuffers] == [
        ("burst", "burst-chunk", 20)
    ]
    assert [t.name for t in buffered.podtemplates] == ["burst-chunk"]


def test_a_nodepool_change_must_name_a_nodepool_of_the_scenario(tmp_path: Path) -> None:
    text = (
        (SCENARIOS / "static-pool.yaml")
        .read_text()
        .replace(
            "nodepool_changes:\n  - at: 10m\n    manifest:\n      apiVersion: karpenter.sh/v1\n      kind: NodePool\n"
            "      metadata: {name: reserved}",
            "nodepool_changes:\n  - at: 10m\n    manifest:\n      apiVersion: karpenter.sh/v1\n      kind: NodePool\n"
            "      metadata: {name: elsewhere}",
        )
    )
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=r"nodepool_changes\[0\]\.manifest: no NodePool of the scenario is named"):
        load_scenario(path)


def test_a_static_pool_follows_its_replicas_and_is_replaced_within_budgets_losing_nothing() -> None:
    result = static(None)
    phases = [(p["ready_min"], p["ready_max"]) for p in result["ready_nodes_by_phase"]]
    # 3 replicas, then 5, then down to 2 (one node per budget window), then the drift: 2 nodes
    # replaced one at a time, each replacement Ready before its node went (3 for a moment).
    assert phases[0] == (3, 3)
    assert phases[1] == (5, 5)
    assert phases[2][0] == 2
    assert phases[3] == (2, 3)
    assert result["launched"] == 7  # 3 + 2 + 2 replacements
    assert result["instance_types"] == ["m5.xlarge"]
    assert (result["pods_lost"], result["pdb_violations"], result["limit_violations"]) == (0, 0, 0)
    assert result["pods_pending_at_end"] == 0


def test_a_burst_lands_at_once_with_the_buffer_and_waits_for_ec2_without_it() -> None:
    result = headroom(None)
    kept, bare = result["with_buffer"], result["without_buffer"]
    assert kept["burst_pods"] == bare["burst_pods"] == 20
    assert kept["pending_to_bound_p95"] < 5
    assert bare["pending_to_bound_p50"] > 30  # a launch and a 35 s boot
    assert result["buffer_usd_per_hour"] > 0
    for run in (kept, bare):
        assert (run["pods_lost"], run["pdb_violations"], run["limit_violations"]) == (0, 0, 0)
