"""Karpenter's manifests unchanged: kubectl applies deploy/crds/ (Karpenter's v1 NodePool and
EC2NodeClass beside Nodewright's kinds), then examples/nodepools/ as they are, and the functions
plan with those NodePools; while a Karpenter controller runs (its leader-election Lease), the
NodePools that are Karpenter's are left to it. Also the emulator's Leases, PUT and dryRun=All as
kubectl uses them.

Real: kubectl (apply, get, replace, apply --dry-run=server, get leases), the emulator's
apiextensions.k8s.io/v1, custom-object, Lease and node endpoints, `nodewright plan --kubeconfig`
(the functions' `read_config` over the official client). Faked: the cluster (`InMemoryCluster`).
Observed: kubectl's output and exit status, the objects the emulator stores, the plan's report.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401 - registers the commands
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model.node import Node
from tests.kubectl.conftest import REPO, Kubectl

pytestmark = pytest.mark.integration

CRDS = REPO / "deploy" / "crds"
EXAMPLES = REPO / "examples" / "nodepools"


def _plan(kubectl: Kubectl) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["plan", "--kubeconfig", str(kubectl.kubeconfig), "--output", "json"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _karpenter_lease(tmp_path: Path, renewed: datetime) -> Path:
    """Karpenter's leader-election Lease as its controller keeps it, renewed at `renewed`."""
    stamp = renewed.strftime("%Y-%m-%dT%H:%M:%S.000000Z")
    path = tmp_path / "lease.yaml"
    path.write_text(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\n"
        "metadata: {name: karpenter-leader-election, namespace: karpenter}\n"
        "spec:\n  holderIdentity: karpenter-7d9f8b6c5-x2x4q_1f2e\n  leaseDurationSeconds: 15\n"
        f"  acquireTime: '{stamp}'\n  renewTime: '{stamp}'\n"
    )
    return path


def test_apply_deploy_crds_then_the_karpenter_examples_unchanged_and_plan_with_them(
    kubectl: Kubectl, server: ApiServer
) -> None:
    created = kubectl.ok("apply", "-f", str(CRDS)).out.splitlines()
    assert created == [
        "customresourcedefinition.apiextensions.k8s.io/ec2nodeclasses.karpenter.k8s.aws created",
        "customresourcedefinition.apiextensions.k8s.io/nodepools.karpenter.sh created",
        "customresourcedefinition.apiextensions.k8s.io/ec2nodeclasses.nodewright.io created",
        "customresourcedefinition.apiextensions.k8s.io/nodeclaims.nodewright.io created",
        "customresourcedefinition.apiextensions.k8s.io/nodepools.nodewright.io created",
    ]
    applied = kubectl.ok("apply", "-f", str(EXAMPLES)).out.splitlines()
    assert "nodepool.karpenter.sh/default created" in applied
    assert "ec2nodeclass.karpenter.k8s.aws/default created" in applied
    assert "nodepool.karpenter.sh/gpu created" in applied
    assert "nodepool.karpenter.sh/default unchanged" in kubectl.ok("apply", "-f", str(EXAMPLES)).out

    # Karpenter's printer columns from the server; -o wide adds the priority-1 ones.
    wide = kubectl.ok("get", "nodepools.karpenter.sh", "-o", "wide").lines
    assert wide[0] == ["NAME", "NODECLASS", "NODES", "READY", "AGE", "WEIGHT", "CPU", "MEMORY"]
    assert [row[0] for row in wide[1:]] == ["arm64", "default", "gpu"]
    assert kubectl.ok("get", "ec2nc").lines[0] == ["NAME", "READY", "AGE"]
    assert kubectl.ok("get", "ec2nc", "-o", "wide").lines[1][-1] == "KarpenterNodeRole-my-cluster"

    # Karpenter's schema defaults, filled in by the server as Karpenter's CRD has it.
    (arm,) = [p for p in server.custom_objects("karpenter.sh", "v1", "nodepools") if p["metadata"]["name"] == "arm64"]
    assert arm["spec"]["template"]["spec"]["expireAfter"] == "720h"
    assert arm["spec"]["disruption"]["budgets"] == [{"nodes": "10%"}]

    report = _plan(kubectl)
    assert report["cluster"]["nodepools_from"] == "cluster"
    assert sorted(report["cluster"]["nodepools"]) == ["arm64", "default", "gpu"]
    assert report["cluster"]["config_problems"] == []


def test_with_karpenter_running_its_nodepools_are_left_to_it(kubectl: Kubectl, tmp_path: Path) -> None:
    kubectl.ok("apply", "-f", str(CRDS))
    kubectl.ok("apply", "-f", str(EXAMPLES))
    # A NodePool handed over to Nodewright during the migration: its nodeClassRef names
    # Nodewright's EC2NodeClass, a kind Karpenter does not serve.
    handed = tmp_path / "handed.yaml"
    handed.write_text(
        (EXAMPLES / "default.yaml")
        .read_text()
        .replace("name: default\n  annotations", "name: batch\n  annotations", 1)
        .replace(
            "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass", "apiVersion: nodewright.io/v1\nkind: EC2NodeClass"
        )
        .replace("group: karpenter.k8s.aws", "group: nodewright.io")
    )
    kubectl.ok("apply", "-f", str(handed))

    kubectl.ok("apply", "-f", str(_karpenter_lease(tmp_path, datetime.now(UTC))))
    leases = kubectl.ok("get", "leases", "-A").lines
    assert leases[0] == ["NAMESPACE", "NAME", "HOLDER", "AGE"]
    assert leases[1][:3] == ["karpenter", "karpenter-leader-election", "karpenter-7d9f8b6c5-x2x4q_1f2e"]

    running = _plan(kubectl)
    assert running["cluster"]["nodepools"] == ["batch"]
    left = running["cluster"]["config_warnings"]
    assert any("NodePool/default: left to Karpenter" in w and "karpenter/karpenter-leader-election" in w for w in left)
    assert any(w.startswith("ec2nodeclasses.karpenter.k8s.aws/v1: warning: EC2NodeClass/default") for w in left)

    # Karpenter scaled to zero: its Lease is no longer renewed, and after ten minutes its
    # NodePools are Nodewright's.
    kubectl.ok("apply", "-f", str(_karpenter_lease(tmp_path, datetime.now(UTC) - timedelta(minutes=11))))
    gone = _plan(kubectl)
    assert sorted(gone["cluster"]["nodepools"]) == ["arm64", "batch", "default", "gpu"]
    assert not any("left to Karpenter" in w for w in gone["cluster"]["config_warnings"])


def test_only_nodewrights_crds_leave_karpenters_kinds_unserved(kubectl: Kubectl) -> None:
    # What `kubectl apply -k deploy/` installs: a cluster where Karpenter's own CRDs are kept.
    kubectl.ok("apply", "-f", str(CRDS / "nodewright.io_nodepools.yaml"))
    refused = kubectl("apply", "-f", str(EXAMPLES / "default.yaml"))
    assert refused.code == 1
    assert 'no matches for kind "NodePool" in version "karpenter.sh/v1"' in refused.err


def test_replace_and_server_dry_run_of_a_nodepool(karpenter_crds: Kubectl, server: ApiServer, tmp_path: Path) -> None:
    kubectl = karpenter_crds
    kubectl.ok("apply", "-f", str(EXAMPLES / "gpu.yaml"))
    before = kubectl.ok("get", "nodepools.karpenter.sh", "gpu", "-o", "json").out

    # --dry-run=server: admitted (defaults, validation) and answered, nothing stored.
    changed = tmp_path / "gpu.yaml"
    changed.write_text(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: gpu}\nspec:\n  weight: 9\n"
        "  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}\n"
        "      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]\n"
    )
    dry = kubectl.ok("apply", "--dry-run=server", "-f", str(changed))
    assert dry.out.strip() == "nodepool.karpenter.sh/gpu configured (server dry run)"
    assert kubectl.ok("get", "nodepools.karpenter.sh", "gpu", "-o", "json").out == before
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text(changed.read_text().replace("weight: 9", "weight: 500"))
    refused = kubectl("apply", "--dry-run=server", "-f", str(invalid))
    assert refused.code == 1
    assert "spec.weight: Invalid value: 500" in refused.err

    # kubectl replace: a PUT of the whole object; fields left out are gone, defaults come back.
    assert kubectl.ok("replace", "-f", str(changed)).out.strip() == "nodepool.karpenter.sh/gpu replaced"
    (gpu,) = server.custom_objects("karpenter.sh", "v1", "nodepools")
    assert gpu["spec"]["weight"] == 9
    assert "taints" not in gpu["spec"]["template"]["spec"]
    assert gpu["spec"]["template"]["spec"]["expireAfter"] == "720h"
    assert gpu["metadata"]["generation"] == 2
    missing = tmp_path / "missing.yaml"
    missing.write_text(changed.read_text().replace("name: gpu}", "name: nothere}", 1))
    absent = kubectl("replace", "-f", str(missing))
    assert absent.code == 1
    assert 'nodepools.karpenter.sh "nothere" not found' in absent.err
    kubectl.ok("delete", "--dry-run=server", "nodepools.karpenter.sh", "gpu")
    assert [p["metadata"]["name"] for p in server.custom_objects("karpenter.sh", "v1", "nodepools")] == ["gpu"]


def test_replace_a_node_and_dry_run_a_cordon(kubectl: Kubectl, cluster: InMemoryCluster) -> None:
    def node(name: str) -> Node:
        (found,) = [n for n in cluster.nodes() if n.name == name]
        return found

    name = sorted(n.name for n in cluster.nodes())[0]
    assert kubectl.ok("cordon", name, "--dry-run=server").out.strip() == f"node/{name} cordoned (server dry run)"
    assert not node(name).unschedulable
    sent = json.loads(kubectl.ok("get", "node", name, "-o", "json").out)
    sent["spec"]["unschedulable"] = True
    sent["metadata"]["labels"]["team"] = "platform"
    replaced = kubectl.ok("replace", "-f", "-", stdin=json.dumps(sent))
    assert replaced.out.strip() == f"node/{name} replaced"
    assert node(name).unschedulable
    assert node(name).labels["team"] == "platform"
    assert kubectl("replace", "-f", "-", stdin=json.dumps(sent)).code == 1  # a stale resourceVersion: 409
