"""`nodewright plan --algorithm` and `--compare`, driven through the command line.

Real: the shipped examples and a `kubectl get pods -o yaml` List, planned by Nodewright's solver,
the Karpenter reference and the Auto Mode reference (nodewright.cli.plan_algorithms).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401  (registers the commands)
from nodewright.reference.automode import fee_per_hour

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()
KUBECTL_PODS = """\
apiVersion: v1
kind: List
metadata:
  resourceVersion: ""
items:
"""
POD = """\
- apiVersion: v1
  kind: Pod
  metadata:
    name: web-{i}
    namespace: default
    labels: {{app: web}}
    uid: 0000-{i}
    creationTimestamp: "2026-11-01T00:00:00Z"
  spec:
    containers:
    - name: web
      image: nginx
      resources:
        requests: {{cpu: 900m, memory: 1Gi}}
  status:
    phase: Pending
    conditions:
    - type: PodScheduled
      status: "False"
      reason: Unschedulable
"""


def plan(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["plan", *args, "--output", "json"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output)
    return report


@pytest.mark.parametrize("algorithm", ["karpenter", "automode"])
def test_each_algorithm_plans_the_examples_in_the_same_json_shape(algorithm: str) -> None:
    nodewright = plan("-f", str(EXAMPLES))
    report = plan("-f", str(EXAMPLES), "--algorithm", algorithm)
    assert report["algorithm"] == algorithm
    assert set(nodewright) <= set(report)
    assert report["nodeclaims"]
    for claim in report["nodeclaims"]:
        assert set(claim) == set(nodewright["nodeclaims"][0])
        assert claim["instance_type"] == claim["instance_type_options"][0]
        assert len(claim["instance_type_options"]) <= 60
    assert report["total_price_per_hour"] == pytest.approx(sum(c["price_per_hour"] for c in report["nodeclaims"]))
    if algorithm == "automode":  # the fee: per node, a share of its type's on-demand price
        assert report["fee_per_hour"] > 0
        assert report["autoscaler_per_hour"] == 0
    else:
        assert report["fee_per_hour"] == 0
        assert report["autoscaler_per_hour"] > 0  # its controller's two m5.large nodes


def test_compare_plans_kubectl_output_three_ways_side_by_side(tmp_path: Path) -> None:
    pods = tmp_path / "pods.yaml"
    pods.write_text(KUBECTL_PODS + "".join(POD.format(i=i) for i in range(7)), encoding="utf-8")
    both = plan("-f", str(pods), "--compare", "--default-nodepool")
    assert set(both["compare"]) == {"nodewright", "karpenter", "automode"}
    for name, row in both["compare"].items():
        report = both["plans"][name]
        assert row["unschedulable"] == 0
        assert sum(len(c["pods"]) for c in report["nodeclaims"]) == 7
        assert row["total_per_hour"] == pytest.approx(
            row["compute_per_hour"] + row["fee_per_hour"] + row["autoscaler_per_hour"], abs=1e-6
        )
    automode = both["plans"]["automode"]
    # The fee is 12% of each node's on-demand price (these types are not G, P or Trainium).
    assert automode["fee_per_hour"] > 0
    assert fee_per_hour("m5.large", 1.0) == pytest.approx(0.12)
    table = runner.invoke(app, ["plan", "-f", str(pods), "--compare", "--default-nodepool"])
    assert table.exit_code == 0, table.output
    assert "nodewright / karpenter:" in table.output
    assert "automode" in table.output


def test_an_unknown_algorithm_is_refused_by_name() -> None:
    result = runner.invoke(app, ["plan", "-f", str(EXAMPLES), "--algorithm", "cluster-autoscaler"])
    assert result.exit_code == 1
    assert "--algorithm: 'cluster-autoscaler' is not one of nodewright, karpenter, automode" in result.output


def test_compare_without_a_nodepool_says_so_first_in_every_plan(tmp_path: Path) -> None:
    pods = tmp_path / "pods.yaml"
    pods.write_text(KUBECTL_PODS + "".join(POD.format(i=i) for i in range(3)), encoding="utf-8")
    both = plan("-f", str(pods), "--compare")
    for report in both["plans"].values():
        assert next(iter(report)) == "notices"
        assert "NodePool" in report["notices"][0]
    table = runner.invoke(app, ["plan", "-f", str(pods), "--compare"])
    assert table.exit_code == 0, table.output
    assert table.output.lstrip().startswith(both["plans"]["nodewright"]["notices"][0][:40])


def test_preferred_anti_affinity_buys_a_node_per_replica_only_in_the_karpenter_plan(tmp_path: Path) -> None:
    """24 small replicas that prefer separate nodes: Karpenter treats the preference as required (a
    node each); Nodewright keeps it only while it adds at most a quarter to the plan, so they share.
    """
    affinity = (
        "    affinity:\n      podAntiAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n"
        "        - weight: 100\n          podAffinityTerm:\n            labelSelector: {{matchLabels: {{app: web}}}}\n"
        "            topologyKey: kubernetes.io/hostname\n"
    )
    small = POD.replace("900m, memory: 1Gi", "100m, memory: 128Mi").replace("  status:\n", affinity + "  status:\n")
    pods = tmp_path / "pods.yaml"
    pods.write_text(KUBECTL_PODS + "".join(small.format(i=i) for i in range(24)), encoding="utf-8")
    both = plan("-f", str(pods), "--compare", "--default-nodepool")
    rows = both["compare"]
    assert rows["nodewright"]["unschedulable"] == rows["karpenter"]["unschedulable"] == 0
    assert rows["karpenter"]["nodes"] == 24
    assert rows["nodewright"]["nodes"] <= 2
    assert rows["nodewright"]["compute_per_hour"] < rows["karpenter"]["compute_per_hour"] / 5
    placed = [pod for claim in both["plans"]["nodewright"]["nodeclaims"] for pod in claim["pods"]]
    assert len(placed) == 24
