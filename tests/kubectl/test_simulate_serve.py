"""`nodewright simulate --serve`: kubectl watches and changes a running simulation, and the
simulated functions react.

Real: the CLI entry point in its own process (the scenario run with moto, the real handlers, the
virtual clock paced at `--speed`), the API emulator it serves, kubectl. Observed: the kubeconfig
it writes, what kubectl prints during and after the run, and the exit status at SIGTERM.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.kubectl.conftest import REPO, Kubectl

pytestmark = pytest.mark.integration

SCENARIO = f"""\
apiVersion: nodewright.io/v1alpha1
kind: Scenario
name: served
duration: 3m
seed: 3
boot_delay: 20s
nodepools:
  - {REPO / "examples" / "nodepools" / "default.yaml"}
workloads:
  - manifest:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: inflate}}
      spec:
        replicas: 0
        selector: {{matchLabels: {{app: inflate}}}}
        template:
          metadata: {{labels: {{app: inflate}}}}
          spec:
            containers:
              - name: inflate
                image: pause
                resources: {{requests: {{cpu: 500m, memory: 512Mi}}}}
    replicas:
      - {{at: 0s, replicas: 30}}
"""


def _wait(condition: object, seconds: float, what: str) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_kubectl_scales_cordons_and_deletes_in_a_served_simulation(binary: str, tmp_path: Path) -> None:
    scenario = tmp_path / "served.yaml"
    scenario.write_text(SCENARIO)
    kubeconfig = tmp_path / "kubeconfig"
    log = (tmp_path / "out.txt").open("w")
    command = [sys.executable, "-c", "from nodewright.cli import main; main()", "simulate", str(scenario)]
    command += ["--serve", "--speed", "20", "--kubeconfig", str(kubeconfig), "--report", str(tmp_path / "report")]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    kubectl = Kubectl(binary, kubeconfig, tmp_path / "cache")
    try:
        _wait(kubeconfig.exists, 120, "the kubeconfig")
        _wait(lambda: "Running" in kubectl("get", "pods").out, 120, "the first pods to run")
        first = kubectl.ok("get", "nodes", "-o", "name").out.split()
        scaled = kubectl.ok("scale", "deployment", "inflate", "--replicas=90")
        assert scaled.out.strip() == "deployment.apps/inflate scaled"
        node = first[0].partition("/")[2]
        assert kubectl.ok("cordon", node).out.strip() == f"node/{node} cordoned"
        victim = kubectl.ok("get", "pods", "--field-selector=status.phase=Running", "-o", "name").out.split()[0]
        kubectl.ok("delete", victim)
        _wait(lambda: "the run is over" in (tmp_path / "out.txt").read_text(), 180, "the end of the run")

        # The provisioner launched nodes for the 60 more pods (and the deleted pod's replacement);
        # none went to the cordoned node, which stays cordoned.
        running = kubectl.ok("get", "pods", "--field-selector=status.phase=Running", "--no-headers").lines
        assert len(running) == 90
        assert len(kubectl.ok("get", "nodes", "--no-headers").lines) > len(first)
        assert kubectl.ok("get", "node", node, "--no-headers").lines[0][1] == "Ready,SchedulingDisabled"
        deployment = kubectl.ok("get", "deployment", "inflate", "--no-headers").lines[0]
        assert deployment[:2] == ["inflate", "90/90"]
        claims = kubectl.ok("get", "nodeclaims", "-o", "name").out.split()
        assert len(claims) == len(kubectl.ok("get", "nodes", "-o", "name").out.split())
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
        log.close()
    assert code == 0, (tmp_path / "out.txt").read_text()[-2000:]


APPLIED_POOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: applied
spec:
  template:
    metadata:
      labels: {pool: applied}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
"""


def test_a_nodepool_applied_with_kubectl_during_the_run_is_read_by_the_functions(binary: str, tmp_path: Path) -> None:
    # The pods ask for a label only the NodePool applied during the run gives its nodes: the
    # scenario's own NodePool cannot place them.
    scenario = tmp_path / "served.yaml"
    scenario.write_text(
        SCENARIO.replace("duration: 3m", "duration: 6m")
        .replace("replicas: 30}", "replicas: 6}")
        .replace(
            "          spec:\n            containers:",
            "          spec:\n            nodeSelector: {pool: applied}\n            containers:",
        )
    )
    pool = tmp_path / "applied.yaml"
    pool.write_text(APPLIED_POOL)
    kubeconfig = tmp_path / "kubeconfig"
    log = (tmp_path / "out.txt").open("w")
    command = [sys.executable, "-c", "from nodewright.cli import main; main()", "simulate", str(scenario)]
    command += ["--serve", "--speed", "20", "--kubeconfig", str(kubeconfig), "--report", str(tmp_path / "report")]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    kubectl = Kubectl(binary, kubeconfig, tmp_path / "cache")
    try:
        _wait(kubeconfig.exists, 120, "the kubeconfig")
        _wait(lambda: kubectl("get", "nodes").code == 0, 60, "the served cluster")
        assert "Pending" in kubectl.ok("get", "pods").out
        kubectl.ok("apply", "-f", str(REPO / "deploy" / "crds"))
        assert kubectl.ok("apply", "-f", str(pool)).out.strip() == "nodepool.karpenter.sh/applied created"
        _wait(lambda: "the run is over" in (tmp_path / "out.txt").read_text(), 180, "the end of the run")

        running = kubectl.ok("get", "pods", "--field-selector=status.phase=Running", "--no-headers").lines
        assert len(running) == 6
        launched = kubectl.ok("get", "nodes", "-l", "pool=applied,karpenter.sh/nodepool=applied", "-o", "name")
        assert launched.out.split()
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
        log.close()
    assert code == 0, (tmp_path / "out.txt").read_text()[-2000:]
