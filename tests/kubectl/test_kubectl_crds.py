"""kubectl applies the shipped CRDs to the API emulator, then NodePools the functions plan with;
`kubectl get nodeclaims -o wide` shows the mirror's NodeClaims with the CRD's columns.

Real: kubectl (apply, get, patch, explain, delete, server-side apply, validation on the server),
the emulator's apiextensions.k8s.io/v1 and custom-object endpoints, `nodewright plan
--kubeconfig` (the Lambdas' `read_config` over the official client), the NodeClaim mirror
(`ClaimMirror` over `KubeClaimObjects`). Faked: the cluster (`InMemoryCluster`). Observed:
kubectl's output and exit status, the objects the emulator stores, the plan's JSON report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nodewright.adapters.kube.claims import KubeClaimObjects
from nodewright.adapters.kube.client import from_kubeconfig
from nodewright.adapters.kube.cluster import KubeCluster
from nodewright.cli import app
from nodewright.cli import commands as _commands  # noqa: F401 - registers the commands
from nodewright.controllers.mirror import ClaimMirror
from nodewright.controllers.observe import RecordingObserver
from nodewright.engine.disruption.types import DisruptionInput
from nodewright.engine.scheduling import PoolCapacity
from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.claimobjects import InMemoryClaimObjects
from nodewright.inmemory.clock import VirtualClock
from nodewright.inmemory.cluster import InMemoryCluster
from nodewright.model import labels as wk
from nodewright.model.snapshot import ClusterSnapshot
from tests.adapters.kube.test_claims import NOW, claims
from tests.builders import node, node_pool
from tests.kubectl.conftest import REPO, Kubectl

pytestmark = pytest.mark.integration

CRDS = REPO / "deploy" / "crds"
EXAMPLES = REPO / "examples" / "nodepools"
# The nodewright.io CRDs alone (what `kubectl apply -k deploy/` installs beside Karpenter's own);
# Karpenter's kinds from deploy/crds/: tests/kubectl/test_kubectl_karpenter_kinds.py.
NODEWRIGHT_CRDS = tuple(arg for path in sorted(CRDS.glob("nodewright.io_*.yaml")) for arg in ("-f", str(path)))


def nodewright_group(tmp_path: Path) -> Path:
    """examples/nodepools/ under the nodewright.io group, which deploy/crds/ defines (the examples
    are Karpenter's karpenter.sh / karpenter.k8s.aws kinds, served only where Karpenter's CRDs are).
    """
    out = tmp_path / "nodepools"
    out.mkdir()
    for source in sorted(EXAMPLES.glob("*.yaml")):
        text = source.read_text()
        text = re.sub(r"apiVersion: karpenter\.(sh|k8s\.aws)/v1\b", "apiVersion: nodewright.io/v1", text)
        (out / source.name).write_text(text.replace("group: karpenter.k8s.aws", "group: nodewright.io"))
    return out


def test_apply_the_crds_then_nodepools_and_the_functions_plan_with_them(
    kubectl: Kubectl, server: ApiServer, tmp_path: Path
) -> None:
    applied = kubectl.ok("apply", *NODEWRIGHT_CRDS).out.splitlines()
    assert applied == [
        "customresourcedefinition.apiextensions.k8s.io/ec2nodeclasses.nodewright.io created",
        "customresourcedefinition.apiextensions.k8s.io/nodeclaims.nodewright.io created",
        "customresourcedefinition.apiextensions.k8s.io/nodepools.nodewright.io created",
    ]
    assert [row[0] for row in kubectl.ok("get", "crds").lines[1:]] == [
        "ec2nodeclasses.nodewright.io",
        "nodeclaims.nodewright.io",
        "nodepools.nodewright.io",
    ]
    assert "nodepools.nodewright.io" in kubectl.ok("api-resources", "--api-group=nodewright.io", "-o", "name").out

    pools = nodewright_group(tmp_path)
    created = kubectl.ok("apply", "-f", str(pools)).out.splitlines()
    assert "nodepool.nodewright.io/default created" in created
    assert "ec2nodeclass.nodewright.io/gpu created" in created
    table = kubectl.ok("get", "nodepools", "-o", "wide").lines
    assert table[0] == ["NAME", "NODECLASS", "WEIGHT", "AGE"]
    assert {row[0]: row[1] for row in table[1:]} == {"arm64": "default", "default": "default", "gpu": "gpu"}
    again = kubectl.ok("apply", "-f", str(pools)).out.splitlines()
    assert "nodepool.nodewright.io/default unchanged" in again

    kubeconfig = str(kubectl.kubeconfig)
    result = CliRunner().invoke(app, ["plan", "--kubeconfig", kubeconfig, "--output", "json"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["cluster"]["nodepools_from"] == "cluster"
    assert sorted(report["cluster"]["nodepools"]) == ["arm64", "default", "gpu"]
    assert report["cluster"]["config_problems"] == []


def test_the_crds_schema_defaults_validates_and_explains(kubectl: Kubectl, server: ApiServer, tmp_path: Path) -> None:
    kubectl.ok("apply", *NODEWRIGHT_CRDS)
    pools = nodewright_group(tmp_path)
    kubectl.ok("apply", "-f", str(pools / "gpu.yaml"))
    invalid = kubectl("patch", "nodepool", "gpu", "--type=merge", "-p", '{"spec":{"weight":500}}')
    assert invalid.code == 1
    assert 'The NodePool "gpu" is invalid: spec.weight: Invalid value: 500' in invalid.err
    typo = pools / "typo.yaml"
    typo.write_text((pools / "gpu.yaml").read_text().replace("  template:\n", "  tempalte: {}\n  template:\n", 1))
    strict = kubectl("apply", "-f", str(typo))
    assert strict.code == 1
    assert 'unknown field "spec.tempalte"' in strict.err
    explained = kubectl.ok("explain", "nodepools.spec.weight").out
    assert "Priority among NodePools; higher is tried first." in explained
    kubectl.ok("patch", "nodepool", "gpu", "--type=json", "-p", '[{"op":"replace","path":"/spec/weight","value":7}]')
    (gpu,) = [p for p in server.custom_objects("nodewright.io", "v1", "nodepools") if p["metadata"]["name"] == "gpu"]
    assert gpu["spec"]["weight"] == 7
    assert gpu["metadata"]["generation"] == 2
    ssa = kubectl.ok("apply", "--server-side", "-f", str(pools / "default.yaml"))
    assert "nodepool.nodewright.io/default serverside-applied" in ssa.out
    kubectl.ok("delete", "nodepool", "gpu")
    assert [p["metadata"]["name"] for p in server.custom_objects("nodewright.io", "v1", "nodepools")] == ["default"]
    kubectl.ok("delete", *NODEWRIGHT_CRDS)
    assert server.custom_objects("nodewright.io", "v1", "nodepools") == []
    gone = kubectl("get", "nodepools")
    assert gone.code == 1


def test_get_nodeclaims_wide_shows_the_crds_columns_from_the_server(
    kubectl: Kubectl, server: ApiServer, cluster: InMemoryCluster
) -> None:
    server.claims = InMemoryClaimObjects(clock=cluster.clock)
    kubectl.ok("apply", "-f", str(CRDS / "nodewright.io_nodeclaims.yaml"))
    ready, launching = claims()
    registered = node(
        "ip-10-0-0-1",
        labels={wk.NW_NODECLAIM: ready.name, wk.NW_NODEPOOL: "default", wk.NODEPOOL: "default"},
        provider_id=ready.provider_id,
    )
    api_client = from_kubeconfig(str(kubectl.kubeconfig), None)
    mirror = ClaimMirror(
        KubeClaimObjects(KubeCluster.connect(api_client), api_client), VirtualClock(NOW), RecordingObserver()
    )
    inp = DisruptionInput(
        snapshot=ClusterSnapshot(nodes=(registered,)),
        claims=(ready, launching),
        pools=(PoolCapacity(node_pool(), ()),),
        now=NOW,
    )
    mirror.sync(lambda: (inp, []))
    table = kubectl.ok("get", "nodeclaims", "-o", "wide").lines
    assert table[0] == [
        "NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE", "IMAGEID", "ID", "NODEPOOL", "NODECLASS", "DRIFTED",
    ]  # fmt: skip
    rows = {row[0]: row[1:] for row in table[1:]}
    assert rows[ready.name][:5] == [ready.instance_type, ready.capacity_type, ready.zone, "ip-10-0-0-1", "True"]
    # AGE from the emulator's clock; DRIFTED blank until the consolidator judges (an empty cell,
    # as kubectl prints a column whose JSONPath finds nothing).
    assert rows[ready.name][5:] == ["0s", "ami-0123", "aws:///us-east-1a/i-0aaa", "default", "default"]
    assert rows[launching.name][:4] == [launching.instance_type, launching.capacity_type, launching.zone, "False"]
    narrow = kubectl.ok("get", "nodeclaims").lines
    assert narrow[0] == ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"]
