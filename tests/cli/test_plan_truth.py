"""`nodewright plan` says what it planned with: no NodePool is said first, every workload kind with
a pod template is planned, and what cannot be planned is warned about, not fatal.

What is real: the CLI entry point over files in a directory, the bundled catalog, `solve()`.
Observed: the JSON report (its first key), the table's first line, stderr warnings.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401  (registers the commands)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CONTAINER = "containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 512Mi}}}]"
APP = f"""
apiVersion: batch/v1
kind: CronJob
metadata: {{name: nightly, namespace: jobs}}
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    spec:
      parallelism: 3
      template:
        spec:
          restartPolicy: Never
          {CONTAINER}
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {{name: shop}}
spec:
  replicas: 4
  strategy: {{canary: {{steps: [{{setWeight: 20}}]}}}}
  template:
    spec:
      {CONTAINER}
---
apiVersion: example.com/v1
kind: Runner
metadata: {{name: ci}}
spec:
  replicas: 2
  template:
    spec:
      {CONTAINER}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data}}
spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 10Gi}}}}}}
---
apiVersion: v1
kind: Gadget
metadata: {{name: x}}
"""


def plan(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["plan", *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_cronjob_a_rollout_and_a_templated_kind_are_planned_and_the_pvc_warned_about(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(APP)
    (tmp_path / "nodepool.yaml").write_text((EXAMPLES / "nodepools" / "default.yaml").read_text())

    code, stdout, stderr = plan("-f", str(tmp_path), "-o", "json")

    assert code == 0, stderr
    report = json.loads(stdout)
    assert "notices" not in report
    planned = sorted(p for claim in report["nodeclaims"] for p in claim["pods"])
    assert planned == sorted(
        [f"jobs/nightly-{i}" for i in range(3)]
        + [f"default/shop-{i}" for i in range(4)]
        + ["default/ci-0", "default/ci-1"]
    )
    warnings = stderr.strip().splitlines()
    assert any("PersistentVolumeClaim/data" in w and "is not planned" in w and "skipped" in w for w in warnings)
    assert any("Runner/ci" in w and "not a built-in workload" in w for w in warnings)
    assert any("Gadget/x" in w and "asks for no pods Nodewright can plan: skipped" in w for w in warnings)


def test_with_no_nodepool_the_plan_says_so_first_in_json_and_in_the_table(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(APP)

    code, stdout, _ = plan("-f", str(tmp_path), "-o", "json")
    report = json.loads(stdout)
    assert code == 0
    assert next(iter(report)) == "notices"
    assert report["notices"][0].startswith("no NodePool in the input: Nodewright would launch nothing")
    assert report["nodeclaims"] == []
    assert len(report["unschedulable"]) == 9

    code, stdout, _ = plan("-f", str(tmp_path))
    assert code == 0
    assert stdout.splitlines()[0].startswith("NOTE: no NodePool in the input")


def test_default_nodepool_plans_with_the_documented_default_and_says_it(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(APP)

    code, stdout, _ = plan("-f", str(tmp_path), "-o", "json", "--default-nodepool")

    report = json.loads(stdout)
    assert code == 0
    assert report["notices"][0].startswith("no NodePool in the input: planned with the default NodePool")
    assert report["unschedulable"] == []
    for claim in report["nodeclaims"]:
        assert claim["capacity_type"] == "on-demand"
        assert claim["instance_type"][0] in "cmr", claim["instance_type"]
        assert not claim["instance_type"].split(".")[0].endswith(("g", "gd", "gn"))  # amd64 only


def test_the_arm64_example_takes_only_pods_that_opt_in(tmp_path: Path) -> None:
    opted = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: graviton}
spec:
  replicas: 2
  template:
    spec:
      nodeSelector: {kubernetes.io/arch: arm64}
      tolerations: [{key: nodewright.io/arch, operator: Equal, value: arm64, effect: NoSchedule}]
      containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 512Mi}}}]
"""
    (tmp_path / "graviton.yaml").write_text(opted)

    code, stdout, stderr = plan(
        "-f", str(EXAMPLES / "nodepools"), "-f", str(EXAMPLES / "workloads"), "-f", str(tmp_path), "-o", "json"
    )

    assert code == 0, stderr
    by_pool: dict[str, list[str]] = {}
    for claim in json.loads(stdout)["nodeclaims"]:
        by_pool.setdefault(claim["nodepool"], []).extend(claim["pods"])
    assert sorted(by_pool["arm64"]) == ["default/graviton-0", "default/graviton-1"]
    assert by_pool["default"]  # everything else


def test_an_offline_plan_in_another_region_plans_in_its_zones_and_says_whose_catalog(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(APP)
    (tmp_path / "nodepool.yaml").write_text((EXAMPLES / "nodepools" / "default.yaml").read_text())

    code, stdout, stderr = plan("-f", str(tmp_path), "--region", "eu-west-1", "-o", "json")

    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["notices"] == [
        "the bundled catalog is us-east-1's: its instance types and estimated prices are assumed offered in "
        "eu-west-1a, eu-west-1b, eu-west-1c"
    ]
    assert report["nodeclaims"]
    assert {claim["zone"] for claim in report["nodeclaims"]} <= {"eu-west-1a", "eu-west-1b", "eu-west-1c"}
    # The same with the zones named, and a refusal naming a zone nothing can stand in for.
    code, stdout, _ = plan("-f", str(tmp_path), "--zones", "eu-west-1b", "-o", "json")
    assert code == 0
    assert {claim["zone"] for claim in json.loads(stdout)["nodeclaims"]} == {"eu-west-1b"}
    code, _, stderr = plan("-f", str(tmp_path), "--zones", "eu-west-1z", "-o", "json")
    assert code != 0
    assert "zone eu-west-1z: the offline catalog (us-east-1) has no zone 'z' to stand in" in stderr
