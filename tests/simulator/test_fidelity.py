"""The fidelity audit of every report: launches against the cheapest override the request allowed,
consolidation replacements against the nodes they replace (summary.json `fidelity`, report.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nodewright.simulator.report.metrics import Recorder
from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import Scenario
from tests.simulator.conftest import NODECLASS, deployment

MIXED_ARCH_ON_DEMAND = """
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: general}
    spec:
      template:
        spec:
          nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
          requirements:
            - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
            - {key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}
            - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
            - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["5"]}
            - {key: karpenter.k8s.aws/instance-size, operator: In, values: [medium, large, xlarge, 2xlarge]}
      disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s}
"""


def test_every_on_demand_launch_of_a_mixed_architecture_pool_is_the_cheapest_allowed(
    scenario: Callable[[str], Scenario], tmp_path: Path
) -> None:
    mixed = scenario(
        "name: mixed\nduration: 3m\nconsolidation: off\n"
        f"nodepools:{MIXED_ARCH_ON_DEMAND}nodeclasses:{NODECLASS}workloads:"
        + deployment("web", 0, cpu="250m", memory="512Mi", schedule="    replicas: [{at: 10s, replicas: 30}]\n")
    )
    result = run_scenario(mixed, tmp_path / "report", plots=False)
    summary = result.summary
    fidelity = summary["fidelity"]
    assert fidelity["launches"] == summary["nodes_launched"] > 0
    assert fidelity["on_demand_not_cheapest"] == 0
    assert fidelity["launches_not_cheapest"] == 0
    world = result.world
    assert world is not None
    audits = world.recorder.fleet_launches
    assert all(a.instance_type == a.cheapest_type and a.strategy == "lowest-price" for a in audits)
    # The plan's cheaper Graviton types came up (one launch-template config per AMI, both searched).
    assert {world.catalog.find(r.instance_type, None).arch for r in world.recorder.instances.values()} == {"arm64"}  # type: ignore[union-attr]
    assert summary["pods_pending_at_end"] == 0
    report = (tmp_path / "report" / "report.md").read_text()
    assert "Fidelity of the simulated EC2" in report
    assert "| on-demand | lowest-price |" in report


def test_consolidation_replacements_come_up_cheaper_and_never_replace_a_type_by_itself(
    scenario: Callable[[str], Scenario], tmp_path: Path
) -> None:
    shrink = scenario(
        "name: shrink\nduration: 9m\nconsolidation: nodewright\n"
        f"nodepools:{MIXED_ARCH_ON_DEMAND}nodeclasses:{NODECLASS}workloads:"
        + deployment(
            "web",
            0,
            cpu="1500m",
            memory="2Gi",
            schedule="    replicas: [{at: 0s, replicas: 0}, {at: 10s, replicas: 10}, {at: 2m, replicas: 2}]\n",
        )
    )
    result = run_scenario(shrink, tmp_path / "report", plots=False)
    summary = result.summary
    fidelity = summary["fidelity"]
    assert summary["pods_lost"] == 0
    assert summary["pdb_violations"] == 0
    assert summary["cost_usd"] < summary["cost_without_consolidation_usd"]
    assert fidelity["on_demand_not_cheapest"] == 0
    assert fidelity["replaces"] >= 1
    assert fidelity["replaces_not_cheaper"] == 0
    assert fidelity["replaces_dearer_than_promised"] == 0
    world = result.world
    assert world is not None
    for replace in world.recorder.replaces:
        assert replace.launched_price < replace.replaced_price
        replaced_types = {r.instance_type for r in world.recorder.instances.values() if r.node in replace.candidates}
        assert not replaced_types & set(replace.launched_types)
    moves = summary["consolidation_moves"]
    evicted = [c for c in world.cluster.memory.changes if c.kind == "pod_evicted"]
    assert moves["pods_moved"] == len(evicted) > 0
    assert moves["pods_moved_per_dollar_saved"] == pytest.approx(moves["pods_moved"] / moves["saved_usd"], rel=0.01)
    report = (tmp_path / "report" / "report.md").read_text()
    assert "pods moved by consolidation" in report
    assert "consolidation commands" in report
    assert "dropped at validation" in report
    assert "(done / dropped)" not in report


def test_a_pod_recreated_under_its_old_name_counts_as_created_each_time() -> None:
    recorder = Recorder(start=0.0)
    recorder.pod_created("db/postgres-0", 10.0)
    recorder.pod_bound("db/postgres-0", 40.0)
    recorder.pod_gone("db/postgres-0")
    recorder.pod_created("db/postgres-0", 300.0)  # the StatefulSet controller recreates it, same name
    recorder.pod_bound("db/postgres-0", 330.0)
    summary = recorder.summary(end=600.0, wall_seconds=1.0)
    assert summary["pods_created"] == 2
    assert summary["pending_seconds"]["count"] == 2
    assert summary["pods_pending_at_end"] == 0
