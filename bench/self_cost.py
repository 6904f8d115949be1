"""What Nodewright itself costs a month: its Lambdas, DynamoDB, SQS, logs and metrics.

Run: `python -m bench.self_cost [--quick] [--json FILE]`.

Each row is a simulated run (`nodewright simulate`: the real handlers against moto and the
in-memory cluster) of a cluster held steady at a size: idle (a NodePool and no pods), 1,000 pods
and 10,000 pods (one Deployment of 500m/512Mi pods, scaled at the start and then left alone),
with a function setting: the provisioner's memory, and the economy key `idle_exit`. The run's
`self_cost` block (nodewright.simulator.report.selfcost: what was invoked for how long, which DynamoDB
and SQS calls were made, what was logged and which metrics were emitted, priced at us-east-1
list prices and scaled to a 730-hour month) is the row. `--quick` runs 20-minute days instead of
the default hour (less accurate: the start-up burst weighs more).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from nodewright.simulator.runner import run_scenario
from nodewright.simulator.scenario import load_scenario

SIZES = {"idle": 0, "1,000 pods": 1000, "10,000 pods": 10_000}
# (provisioner memory MB, idle_exit seconds or None): the default, and what measurement allows.
SETTINGS = (
    (1024, None),
    (256, None),
    (256, 0),
)

_SCENARIO = """\
apiVersion: nodewright.io/v1alpha1
kind: Scenario
name: self-cost
duration: {duration}
seed: 1
functions:
  provisioner: {{memory: {memory}{idle_exit}}}
nodepools:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {{name: default}}
    spec:
      template:
        spec:
          nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
          requirements:
            - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
            - {{key: kubernetes.io/arch, operator: In, values: [amd64]}}
            - {{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}}
  - apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata: {{name: default}}
    spec:
      amiSelectorTerms: [{{alias: al2023@latest}}]
      role: KarpenterNodeRole-simulated
      subnetSelectorTerms: [{{tags: {{karpenter.sh/discovery: simulated}}}}]
      securityGroupSelectorTerms: [{{tags: {{karpenter.sh/discovery: simulated}}}}]
workloads:
  - manifest:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: app}}
      spec:
        replicas: 0
        selector: {{matchLabels: {{app: app}}}}
        template:
          metadata: {{labels: {{app: app}}}}
          spec:
            containers:
              - name: app
                image: app:1
                resources: {{requests: {{cpu: 500m, memory: 512Mi}}}}
    replicas:
      - {{at: 0s, replicas: {pods}}}
"""


def run(pods: int, memory: int, idle_exit: float | None, duration: str) -> dict[str, Any]:
    """One row: the run's self_cost block, with the provisioner's pending -> CreateFleet."""
    text = _SCENARIO.format(
        duration=duration,
        memory=memory,
        idle_exit="" if idle_exit is None else f", idle_exit: {idle_exit}s",
        pods=pods,
    )
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "self-cost.yaml"
        path.write_text(text, encoding="utf-8")
        scenario = load_scenario(path)
    started = time.perf_counter()
    summary = run_scenario(scenario, plots=False).summary
    cost = summary["self_cost"]
    return {
        "pods": pods,
        "provisioner_memory_mb": memory,
        "idle_exit": idle_exit,
        "usd_per_month": cost["usd_per_month"],
        "by_item_usd_per_month": cost["by_item_usd_per_month"],
        "lambda_gb_seconds_per_month": cost["lambda_gb_seconds_per_month"],
        "dynamodb_per_month": cost["dynamodb_per_month"],
        "custom_metrics": cost["custom_metrics"],
        "log_gb_per_month": cost["log_gb_per_month"],
        "pending_to_launch_seconds": summary["pending_to_launch_seconds"],
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.self_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20-minute runs instead of an hour")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    duration = "20m" if args.quick else "1h"
    rows = []
    print(f"{'cluster':<12} {'memory':>6} {'idle_exit':>9} {'$/month':>8}  lambda  dynamodb  sqs  logs  metrics")
    for label, pods in SIZES.items():
        for memory, idle_exit in SETTINGS:
            row = run(pods, memory, idle_exit, duration)
            row["cluster"] = label
            rows.append(row)
            items = row["by_item_usd_per_month"]
            print(
                f"{label:<12} {memory:>6} {'-' if idle_exit is None else idle_exit:>9} {row['usd_per_month']:>8.2f}  "
                f"{items['lambda']:6.2f}  {items['dynamodb']:8.2f}  {items['sqs']:4.2f}  {items['logs']:4.2f}  "
                f"{items['metrics']:7.2f}",
                flush=True,
            )
    if args.json:
        machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        Path(args.json).write_text(json.dumps({"machine": machine, "rows": rows}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
