"""`nodewright plan` driven through its command line, on the shipped examples and on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401  (registers the commands)
from nodewright.model.quantity import to_milli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def run_plan(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["plan", *args])
    return result.exit_code, result.output


def plan_json(*paths: Path) -> dict[str, Any]:
    args = [a for p in paths for a in ("-f", str(p))]
    # Inputs without a NodePool plan with the default one (tests/cli/test_plan_truth.py: without the flag, none).
    code, output = run_plan(*args, "--output", "json", "--default-nodepool")
    assert code == 0, output
    return json.loads(output)


def test_plan_of_the_examples_prints_the_documented_shape() -> None:
    report = plan_json(EXAMPLES)
    assert set(report) >= {"nodeclaims", "existing", "unschedulable", "total_price_per_hour", "solve_seconds"}
    assert report["nodeclaims"], "the examples have pending pods"
    for claim in report["nodeclaims"]:
        assert set(claim) >= {
            "nodepool", "instance_type", "capacity_type", "zone", "price_per_hour",
            "instance_type_options", "allocatable", "requests", "pods",
        }  # fmt: skip
        assert claim["instance_type"] == claim["instance_type_options"][0]
        assert len(claim["instance_type_options"]) <= 60
        assert set(claim["allocatable"]) == {"cpu", "memory", "pods"}
    assert report["total_price_per_hour"] == pytest.approx(sum(c["price_per_hour"] for c in report["nodeclaims"]))


def test_every_placed_pod_fits_and_no_pod_is_both_placed_and_unschedulable() -> None:
    report = plan_json(EXAMPLES)
    placed: list[str] = []
    for claim in report["nodeclaims"]:
        placed += claim["pods"]
        for resource in ("cpu", "memory"):
            assert to_milli(claim["requests"][resource]) <= to_milli(claim["allocatable"][resource]), claim
        assert claim["requests"]["pods"] <= claim["allocatable"]["pods"]
    for pods in report["existing"].values():
        placed += pods
    assert len(placed) == len(set(placed))
    assert not set(placed) & {u["pod"] for u in report["unschedulable"]}


def test_simulator_scenarios_beside_the_manifests_are_skipped() -> None:
    """examples/ holds `kind: Scenario` files; planning the whole directory equals planning the manifests."""
    whole = plan_json(EXAMPLES)
    manifests = plan_json(EXAMPLES / "nodepools", EXAMPLES / "workloads", EXAMPLES / "dra")
    assert [c["pods"] for c in whole["nodeclaims"]] == [c["pods"] for c in manifests["nodeclaims"]]
    assert whole["total_price_per_hour"] == manifests["total_price_per_hour"]


def test_workloads_expand_into_pods_named_after_them(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(
        """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  template:
    spec:
      containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
"""
    )
    report = plan_json(tmp_path)
    pods = sorted(p for c in report["nodeclaims"] for p in c["pods"])
    assert pods == ["shop/web-0", "shop/web-1", "shop/web-2"]


def test_pods_bound_to_an_input_node_use_it_before_new_capacity(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(
        """
apiVersion: v1
kind: Node
metadata:
  name: big-node
  labels: {kubernetes.io/hostname: big-node, kubernetes.io/arch: amd64, kubernetes.io/os: linux}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "58"}
---
apiVersion: v1
kind: Pod
metadata: {name: pending-one}
spec:
  containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""
    )
    report = plan_json(tmp_path)
    assert report["existing"] == {"big-node": ["default/pending-one"]}
    assert report["nodeclaims"] == []


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("kind: Pod\nmetadata: {name: x\n", "invalid YAML"),
        (
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: bad}\nspec:\n  template:\n    spec:\n"
            "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"
            "      requirements: [{key: a, operator: Greater, values: ['1']}]\n",
            "NodePool/bad: spec.template.spec.requirements[0].operator",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
            "  containers: [{name: c, resources: {requests: {cpu: lots}}}]\n",
            "Pod/p",
        ),
    ],
    ids=["broken-yaml", "invalid-nodepool", "bad-quantity"],
)
def test_bad_input_names_file_document_and_field_and_plans_nothing(tmp_path: Path, content: str, expected: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    code, output = run_plan("-f", str(bad), "--output", "json")
    assert code != 0
    assert str(bad) in output
    assert expected in output
    assert "nodeclaims" not in output


KUBECTL = Path(__file__).resolve().parents[1] / "config" / "fixtures" / "kubectl"


def test_kubectl_get_output_of_nodepools_nodeclasses_and_deployments_plans() -> None:
    """`kubectl get nodepools -o yaml`, `get ec2nodeclasses -o json` and `get deployments -o json`, as saved."""
    report = plan_json(KUBECTL / "nodepools.yaml", KUBECTL / "ec2nodeclasses.json", KUBECTL / "deployments.json")

    assert report["unschedulable"] == []
    by_pool: dict[str, list[str]] = {}
    for claim in report["nodeclaims"]:
        by_pool.setdefault(claim["nodepool"], []).extend(claim["pods"])
    assert by_pool["gpu"] == ["shop/recommender-0"]
    assert sorted(by_pool["default"]) == [
        "shop/checkout-0", "shop/checkout-1", "shop/storefront-0", "shop/storefront-1", "shop/storefront-2",
        "shop/storefront-3",
    ]  # fmt: skip


def test_a_warning_goes_to_stderr_and_strict_refuses_it(tmp_path: Path) -> None:
    text = (
        (KUBECTL / "nodepools.yaml").read_text().replace("        expireAfter: 720h\n", "        expireAfer: 720h\n", 1)
    )
    (tmp_path / "nodepools.yaml").write_text(text)
    args = ["plan", "-f", str(tmp_path), "-f", str(KUBECTL / "deployments.json"), "--output", "json"]

    relaxed = runner.invoke(app, args)
    strict = runner.invoke(app, [*args, "--strict"])

    assert relaxed.exit_code == 0, relaxed.output
    assert json.loads(relaxed.stdout)["nodeclaims"]
    assert (
        'warning: NodePool/default: spec.template.spec.expireAfer: unknown field, ignored (did you mean "expireAfter"?)'
        in relaxed.stderr
    )
    assert strict.exit_code == 1
    assert "1 problem(s) in the input; nothing was planned" in strict.stderr
    assert f"{tmp_path / 'nodepools.yaml'}:" in strict.stderr
    assert strict.stdout == ""
