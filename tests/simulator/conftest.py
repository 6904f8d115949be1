"""Fixtures for the simulator's tests.

Real: the Lambda handlers, the controllers, the engine, moto (EC2, DynamoDB, SQS, EventBridge,
in-process) and the in-memory cluster, on a virtual clock, exactly as `nodewright simulate` runs
them. Observed: the run's summary (what `summary.json` holds), the report files, and the world
itself (its cluster, recorder and observers) for the finer points.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nodewright.simulator.report import write_report
from nodewright.simulator.runner import RunResult, run_scenario
from nodewright.simulator.scenario import Scenario, load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"

NODECLASS = """
  - apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata: {name: default}
    spec:
      amiSelectorTerms: [{alias: al2023@latest}]
      role: KarpenterNodeRole-simulated
      subnetSelectorTerms: [{tags: {karpenter.sh/discovery: simulated}}]
      securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: simulated}}]
"""


def nodepool(name: str = "default", *, capacity_types: str = "spot, on-demand", extra: str = "") -> str:
    """An inline NodePool document (a YAML list item) for the small nodes tests want."""
    return f"""
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata:
      name: {name}
      annotations: {{nodewright.io/rebalance-policy: ReplaceThenDrain}}
    spec:
      template:
        spec:
          nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
          requirements:
            - {{key: karpenter.sh/capacity-type, operator: In, values: [{capacity_types}]}}
            - {{key: kubernetes.io/arch, operator: In, values: [amd64]}}
            - {{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}}
            - {{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["5"]}}
            - {{key: karpenter.k8s.aws/instance-size, operator: In, values: [large, xlarge, 2xlarge]}}
{extra}"""


def deployment(
    name: str, replicas: int, *, cpu: str = "500m", memory: str = "1Gi", schedule: str = "", zone: str = ""
) -> str:
    """An inline Deployment workload entry (pinned to `zone` when given)."""
    selector = f"            nodeSelector: {{topology.kubernetes.io/zone: {zone}}}\n" if zone else ""
    return f"""
  - manifest:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: {name}}}
      spec:
        replicas: {replicas}
        selector: {{matchLabels: {{app: {name}}}}}
        template:
          metadata: {{labels: {{app: {name}}}}}
          spec:
{selector}            containers:
              - name: {name}
                image: example.com/{name}:1.0
                resources: {{requests: {{cpu: {cpu}, memory: {memory}}}}}
{schedule}"""


@pytest.fixture
def scenario(tmp_path: Path) -> Callable[[str], Scenario]:
    """Write a scenario's YAML to a file and load it."""

    def make(text: str) -> Scenario:
        path = tmp_path / "scenario.yaml"
        path.write_text(text, encoding="utf-8")
        return load_scenario(path)

    return make


@pytest.fixture(scope="session")
def shipped_run() -> Callable[..., RunResult]:
    """The run of a shipped scenario (examples/scenarios/NAME.yaml) as `nodewright simulate` runs it:
    in memory, simulated once per session and shared by the tests that only read it;
    `shipped_run(NAME, DIR)` also writes its report into DIR as the runner would (no plots).

    The tests using it are dealt out to one worker (tests/conftest.py's SHARED), so each scenario
    runs once per suite. A test must not change the run's world or summary.
    """
    runs: dict[str, RunResult] = {}

    def run(name: str, report: Path | None = None) -> RunResult:
        if name not in runs:
            runs[name] = run_scenario(load_scenario(EXAMPLES / f"{name}.yaml"), plots=False)
        result = runs[name]
        if report is not None:
            assert result.world is not None
            write_report(result.world, result.summary, report, plots=False)
        return result

    return run
